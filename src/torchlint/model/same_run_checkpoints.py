"""Whether the file a checkpoint load reads was written earlier in the same run: by a save
before it in its function, by a training helper given the path, by a framework's checkpoint
callback during a `fit()`, or to a path drawn fresh for each run. Such a file was saved on the
device this run uses, so it is restored where it belongs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import checkpoints
from torchlint.model.device_choice import constructor_of_class_of
from torchlint.model.file_paths import PathShape, fresh_per_run, path_shape, saving_parameters
from torchlint.model.tree import ancestors_within

if TYPE_CHECKING:
    from torchlint.model import Model

def saved_earlier_in_this_run(model: Model, load: cst.Call) -> bool:
    """`torch.save(model.state_dict(), "best.pt")` earlier in the same function, or in the
    `__init__` of the loading method's class (an lr finder snapshots the initial weights when it
    is built), then `torch.load("best.pt")`: saved and restored in one run, on one device. Paths
    built from one template (`"{}.pkl".format(epoch)`, `"{}.pkl".format(best_epoch)`) name the
    same file, and so does a listing of the folder saved into whose pattern fits the saved name
    (`glob.glob(os.path.join(out_dir, "best_*"))[0]` after saving to `os.path.join(out_dir,
    f"best_{epoch}.pt")`: a notebook reloading its best epoch). A save later in a loop that also
    runs the load wrote the file on an earlier time round (early stopping reloads the best epoch's
    checkpoint). A path drawn fresh for each run (`"ck/" + uuid.uuid4().hex + ".pt"`) that the file
saves to names a file of this run, wherever the save is; so does a load in a function that the
script's top level calls only after it saved (`test()` after the epoch loop). A save in another method may be a
previous run's: resuming is what TL014 is for."""
    path = load.args[0].value if load.args and not load.args[0].star else None
    if path is None:
        return False
    if _kept_by_callback_of_fit_before(model, load, path):
        return True
    shape = path_shape(model, path)
    function = model.function_of(load)
    if _saved_by_helper_before(model, load, shape):
        return True
    fresh = fresh_per_run(model, path)
    return any(
        model.call_name(save) in checkpoints.SAVES
        and len(save.args) > 1
        and path_shape(model, save.args[1].value).names_same_file(shape)
        and (
            fresh
            or (model.function_of(save) is function and (model.order(save) < model.order(load) or _in_one_loop(model, save, load)))
            or constructor_of_class_of(model, model.function_of(save), function)
            or _run_before(model, model.function_of(save), load)
            or _called_after(model, function, save)
        )
        for save in model.calls
    )


def _in_one_loop(model: Model, save: cst.Call, load: cst.Call) -> bool:
    """Whether a loop of the load's function runs both calls."""
    around_save = set(ancestors_within(model, save, model.function_of(save)))
    return any(
        isinstance(node, (cst.For, cst.While)) and node in around_save
        for node in ancestors_within(model, load, model.function_of(load))
    )


def _run_before(model: Model, saver: cst.CSTNode, load: cst.Call) -> bool:
    """Whether the loading code first calls the function that saves, on every path (`train()`
    in the epoch loop, then the best model is reloaded): the file is this run's."""
    if not isinstance(saver, cst.FunctionDef):
        return False
    return any(
        isinstance(call.func, cst.Name) and model.function(call.func.value) is saver and _always_runs_before(model, call, load)
        for call in model.calls
    )


def _called_after(model: Model, function: cst.CSTNode, save: cst.Call) -> bool:
    """Whether the script's top level saves and only then calls the loading function (`torch.save`
    in the epoch loop, `test()` after it, which reloads the best epoch): each call of it by name is
    at the top level, after the save."""
    if not isinstance(function, cst.FunctionDef) or model.function_of(save) is not model.module:
        return False
    calls = [call for call in model.calls if isinstance(call.func, cst.Name) and model.function(call.func.value) is function]
    return bool(calls) and all(model.function_of(call) is model.module and model.order(call) > model.order(save) for call in calls)


def _saved_by_helper_before(model: Model, load: cst.Call, shape: PathShape) -> bool:
    """Whether the loading code first calls, on every path, a function (of this file or another
    module of the project) that writes a checkpoint to a path it is given, and gives it the
    loaded file (`train(model, ..., best_model_save_path="best.pt")`, then
    `torch.load("best.pt")`: a notebook reloading what its training helper kept)."""
    for call in model.calls:
        given = [arg.value for arg in call.args if not arg.star and path_shape(model, arg.value).names_same_file(shape)]
        if not given or not _always_runs_before(model, call, load):
            continue
        helpers = model.summaries
        saved = [
            helpers.argument(fn, call, offset, parameter)
            for fn, offset in helpers.targets(call)
            for parameter in saving_parameters(model, fn)
        ]
        saved += [argument for project_call in helpers.imported(call) for argument in project_call.arguments(project_call.summary.saves_to)]
        if any(argument is node for argument in saved for node in given):
            return True
    return False


def _kept_by_callback_of_fit_before(model: Model, load: cst.Call, path: cst.BaseExpression) -> bool:
    """`torch.load(keeper.best_model_path)` where `keeper` is a framework's checkpoint callback
    made in this file (or a trainer's own `checkpoint_callback`), after a `fit()` that runs on
    every path: the callback wrote that file during this run's fit, on this machine."""
    if not (isinstance(path, cst.Attribute) and path.attr.value in checkpoints.KEPT_PATHS):
        return False
    keeper = path.value
    if isinstance(keeper, cst.Attribute) and keeper.attr.value == checkpoints.TRAINER_KEEPER:
        made_here = True
    else:
        sources = [binding.source for binding in model.reaching(keeper)] if isinstance(keeper, cst.Name) else []
        made_here = bool(sources) and all(
            isinstance(source, cst.Call) and model.call_name(source) in checkpoints.CHECKPOINT_KEEPERS for source in sources
        )
    return made_here and any(
        _always_runs_before(model, call, load) for call in model.calls_named(methods=checkpoints.FIT_METHODS)
    )


def _always_runs_before(model: Model, call: cst.Call, load: cst.Call) -> bool:
    """Whether ``call`` runs before ``load`` in the same function, on every path: a call under
    an `if` (`if args.do_train: train()`) may be skipped, and the file be a previous run's."""
    function = model.function_of(load)
    return (
        model.function_of(call) is function
        and model.order(call) < model.order(load)
        and not any(isinstance(a, (cst.If, cst.IfExp, cst.While)) for a in ancestors_within(model, call, function))
    )

