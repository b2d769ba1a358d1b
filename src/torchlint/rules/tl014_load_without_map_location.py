"""TL014 load-without-map-location: `torch.load` without `map_location` in a script that decides
its device at run time. Each saved tensor is restored onto the device it was saved from: a
checkpoint written by a GPU run fails to load where there is no GPU ("Attempting to deserialize
object on a CUDA device"), and in a run where each process picks its GPU, every process loads
onto the GPU that saved it (usually cuda:0), which then holds every copy."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes import build
from torchlint.knowledge import checkpoints, devices
from torchlint.model import Binding, Model
from torchlint.model.device_choice import (
    DeviceChoice,
    choice_reaching,
    constructor_of_class_of,
    deciding_code,
    host_pins,
    replays_saved_placement,
)
from torchlint.model.distributed import is_distributed
from torchlint.model.file_paths import PathShape, fresh_per_run, path_shape, saving_parameters
from torchlint.model.names import dotted
from torchlint.model.rank_zero import reads_a_rank, runs_on_rank_zero_only
from torchlint.model.tree import children
from torchlint.model.training import ancestors_within
from torchlint.model.uncalled import never_called
from torchlint.model.values import Kind
from torchlint.model.values.calling import keyword
from torchlint.registry import Finding, NodeFix, Rule

_MAX_DEPTH = 4  # entries of entries: `ckpt["state"]["model"]`


class LoadWithoutMapLocation(Rule, code="TL014"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        for call in model.calls_named(checkpoints.LOADS):
            if _maps(model, call):
                continue
            if _only_with_accelerator(model, call):
                continue
            if model.training.in_test(call) or _saved_just_before(model, call):  # saved and loaded in one run
                continue
            if _path_names_device(model, call):
                continue  # `f"ae_{epoch}_{device}.pt"`: saved from the device this run uses
            restored = _restored(model, call)
            if restored is None or restored == "host state":
                continue  # a data file, or a quantized model's state: tensors saved on the host
            choice = choice_reaching(model, call)
            if choice is None and restored == "module":
                # a module pickled whole comes back where it was saved, whatever the host-pinned
                # script then feeds it
                choice = choice_reaching(model, call, host_pins(model))
            if choice is None:
                continue
            if choice.per_process and runs_on_rank_zero_only(model, call):
                continue  # one process loads, on the first GPU, where the first process saved it
            if _other_branch_maps(model, call) or never_called(model, model.function_of(call)):
                continue  # the branch for the machine without one; a method no run of the project calls
            if replays_saved_placement(model, call):
                continue  # placed as the saving run's restored settings say: on the saving machine's kind
            device = _device_name(model, call) if not choice.host else '"cpu"'
            yield Finding(call, _message(model, call, choice, device, restored), _fix(call, device))


def _locates(call: cst.Call, position: int) -> bool:
    """Whether the call says where to restore (or may, through `*args`/`**kwargs`)."""
    if any(arg.star for arg in call.args):
        return True
    positional = [arg for arg in call.args if arg.keyword is None]
    return len(positional) > position or any(
        arg.keyword is not None and arg.keyword.value == "map_location" for arg in call.args
    )


def _restored(model: Model, loaded: cst.BaseExpression, depth: int = 0) -> str | None:
    """What the load returns holds parameters, saved from wherever training ran: "state" when it
    (or an entry of it) reaches `load_state_dict`, "module" when it is used as a module (called,
    asked for its parameters or mode, or given tensors by one of its methods: `policy.act(obs,
    hidden)`); "host state" when the `load_state_dict` is a quantized model's, which only the host
    runs; None when the file shows neither (a data file)."""
    if depth > _MAX_DEPTH:
        return None
    for use in model.values.uses(loaded, checkpoints.PASSING_METHODS):
        if use.how == "argument" and _restores_tensors(model, use.context):
            return "host state" if _into_quantized_model(model, use.context) else "state"
        if use.how == "called" or (use.how == "method" and use.name in checkpoints.MODULE_METHODS):
            return "module"
        if use.how == "method" and use.name not in checkpoints.ENTRY_METHODS and _given_tensors(model, use.context):
            return "module"
        entries = []
        if use.how == "method" and use.name in checkpoints.ENTRY_METHODS:
            entries = [use.context]
        elif use.how == "other" and isinstance(use.context, cst.Subscript) and use.context.value is use.node:
            entries = [use.context]
        elif use.how == "stored" and isinstance(use.context, cst.Assign) and use.context.value is use.node:
            entries = _unpacked_reads(model, use.context)  # `policy, stats = torch.load(path)`
        for entry in entries:
            found = _restored(model, entry, depth + 1)
            if found is not None:
                return found
    return None


def _unpacked_reads(model: Model, assign: cst.Assign) -> list[cst.BaseExpression]:
    """The reads of the names a tuple target binds to the entries of the assigned value."""
    reads = []
    for target in assign.targets:
        elements = target.target.elements if isinstance(target.target, (cst.Tuple, cst.List)) else ()
        for element in elements:
            if isinstance(element.value, cst.Name):
                for binding in model.bindings_of(element.value):
                    if binding.target is element.value:
                        reads.extend(model.reads_of(binding))
    return reads


def _given_tensors(model: Model, call: cst.CSTNode | None) -> bool:
    """Whether a method call passes a tensor the file made: the object computes on tensors."""
    return isinstance(call, cst.Call) and any(
        not arg.star and any(value.kind is Kind.TENSOR for value in model.values.of(arg.value)) for arg in call.args
    )


def _restores_tensors(model: Model, call: cst.CSTNode | None) -> bool:
    """`model.load_state_dict(...)`, `optimizer.load_state_dict(...)`: what holds tensors. A
    scheduler's or a GradScaler's state is numbers, which load anywhere."""
    func = call.func if isinstance(call, cst.Call) else None
    if not isinstance(func, cst.Attribute) or func.attr.value not in checkpoints.RESTORING_METHODS:
        return False
    receiver = (dotted(func.value) or "").rsplit(".", 1)[-1].lower()
    if receiver.endswith(checkpoints.NUMERIC_STATE_NAMES):
        return False
    return not _receiver_made_by(model, func.value, checkpoints.NUMERIC_STATE_MAKERS)


def _into_quantized_model(model: Model, call: cst.Call) -> bool:
    """`quantized.load_state_dict(state)` where a binding of `quantized` that reaches the call
    (for an attribute: one in the same function) quantizes a model: a quantized model's state has
    its own keys (packed weights), so a state that fits it was saved by a quantized model, on the
    host."""
    receiver = call.func.value
    function = model.function_of(call)
    return any(
        _made_by(model, binding.value, checkpoints.HOST_ONLY_MODEL_MAKERS)
        for binding in model.reaching(receiver)
        if isinstance(receiver, cst.Name) or model.function_of(binding.statement) is function
    )


def _receiver_made_by(model: Model, receiver: cst.BaseExpression, makers) -> bool:
    return any(_made_by(model, value.node, makers) for value in model.values.of(receiver)) or any(
        _made_by(model, binding.value, makers) for binding in model.bindings_of(receiver)
    )


def _made_by(model: Model, node: cst.CSTNode | None, makers) -> bool:
    """Whether ``node`` is a call of one of ``makers`` (qualified names, or prefixes ending in
    "." or "_")."""
    name = model.call_name(node) if isinstance(node, cst.Call) else None
    return name is not None and any(
        name.startswith(maker) if maker.endswith(".") or maker.endswith("_") else name == maker for maker in makers
    )


def _saved_just_before(model: Model, load: cst.Call) -> bool:
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
    around_save = {id(node) for node in ancestors_within(model, save, model.function_of(save))}
    return any(
        isinstance(node, (cst.For, cst.While)) and id(node) in around_save
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


def _path_names_device(model: Model, call: cst.Call) -> bool:
    """Whether the file's path is built from a device value of the script: a file per device,
    written by a run on the device this one uses."""
    path = next((arg.value for arg in call.args if arg.keyword is None or arg.keyword.value == "f"), None)
    if path is None:
        return False
    pending = [path]
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.Name, cst.Attribute)):
            found = model.values.of(node)
            if found and all(v.kind is Kind.DEVICE for v in found):
                return True
        pending.extend(children(node))
    return False


def _only_with_accelerator(model: Model, call: cst.Call) -> bool:
    """Inside `if torch.cuda.is_available():` the load runs only where the GPU is."""
    return any(_asks_availability(model, test) for test in model.guards(call))


def _other_branch_maps(model: Model, call: cst.Call) -> bool:
    """`if args.cuda: ckpt = torch.load(f)` / `else: ckpt = torch.load(f, map_location="cpu")`:
    the code restores onto the host on the other branch of a test it wrote for the purpose, so the
    branch without map_location is the one that runs where the accelerator is."""
    return any(_maps_to_host(model, load) and model.in_other_branches(call, load) for load in model.calls)


def _maps(model: Model, call: cst.Call) -> bool:
    position = checkpoints.LOADS.get(model.call_name(call) or "")
    return position is not None and _locates(call, position)


def _maps_to_host(model: Model, call: cst.Call) -> bool:
    """A load given map_location="cpu", torch.device("cpu") or `lambda storage, loc: storage`."""
    if checkpoints.LOADS.get(model.call_name(call) or "") is None:
        return False
    location = keyword(call, "map_location")
    if isinstance(location, cst.Lambda):
        params = location.params.params
        return bool(params) and isinstance(location.body, cst.Name) and location.body.value == params[0].name.value
    if isinstance(location, cst.Call) and model.call_name(location) in devices.DEVICE_FACTORIES and location.args:
        location = location.args[0].value
    return isinstance(location, cst.SimpleString) and location.evaluated_value == "cpu"


def _asks_availability(model: Model, test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.Call):
        return model.call_name(test) in devices.AVAILABILITY_CHECKS
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _asks_availability(model, test.left) or _asks_availability(model, test.right)
    return False


def _device_name(model: Model, at: cst.Call) -> str | None:
    """A name (or `self.` attribute) holding an accelerator-or-host device that the load's code
    reads as that binding: what the checkpoint should be restored onto."""
    function = model.function_of(at)
    for binding in sorted(model.all_bindings(), key=lambda b: model.order(b.statement)):
        if binding.how not in ("assign", "annassign"):
            continue
        key = dotted(binding.target)
        if key is None or model.binding_scope(key, at) is not binding.scope:
            continue
        if binding.scope is function and model.order(binding.statement) > model.order(at):
            continue
        if binding.scope is not function and not _read_in(model, binding, function):
            continue  # a global the function never reads may not exist yet when it runs
        found = model.values.of(binding.target)
        if found and all(v.kind is Kind.DEVICE for v in found) and not all(v.host_only for v in found):
            return key
    return None


def _read_in(model: Model, binding: Binding, function: cst.FunctionDef | cst.Module) -> bool:
    """Whether ``function``'s own code already reads the outer ``binding``: then it is bound
    whenever the function runs (a global set under `__main__` after the call is not)."""
    return isinstance(function, cst.Module) or any(model.function_of(read) is function for read in model.reads_of(binding))


def _fix(call: cst.Call, device: str | None) -> NodeFix | None:
    """Restore onto the device the script chose. Unsafe: where the checkpoint is restored
    changes (what relied on it coming back on the saving GPU no longer does)."""
    if device is None:
        return None
    return build.with_keywords(call, call, {"map_location": device}, None, "Restore onto the chosen device", Applicability.UNSAFE)


def _message(model: Model, call: cst.Call, choice: DeviceChoice, device: str | None, restored: str) -> str:
    code = model.module.code_for_node
    written = " ".join(code(call).split())
    if len(written) > 50:
        written = f"{code(call.func)}(...)"
    deciding = deciding_code(model, choice)
    decided = " ".join(code(deciding).split())
    if len(decided) > 60 and isinstance(deciding, cst.Call):
        decided = f"{code(deciding.func)}(...)"
    where = f" ({decided})" if len(decided) <= 60 else ""
    if device is not None:
        advice = f"pass map_location={device}"
    elif restored == "state":
        advice = 'pass map_location="cpu" (load_state_dict copies the tensors onto the model\'s device)'
    else:
        advice = 'pass map_location="cpu" and move the module to its device'
    if choice.host:
        return (
            f"'{written}' has no map_location while the script runs on the host (device={decided}): a module "
            f"saved by a GPU run comes back on that GPU, next to the script's host tensors, or fails to load "
            f"on a machine without one; {advice}"
        )
    if choice.per_process and not reads_a_rank(model, choice.node) and (
        not is_distributed(model) or _index_set_by_command_line_only(model, choice.node)
    ):
        return (
            f"'{written}' has no map_location while the script picks which GPU it uses{where}: the checkpoint "
            f"is restored first onto the GPU that saved it (usually cuda:0), which may not be the one chosen and "
            f"then holds a second copy; {advice}"
        )
    if choice.per_process:
        return (
            f"'{written}' has no map_location while each process picks its own GPU{where}: every process "
            f"restores the checkpoint onto the GPU that saved it, which then holds every copy; {advice}"
        )
    return (
        f"'{written}' has no map_location while the script picks its device at run time{where}: a checkpoint "
        f"saved on a GPU fails to load on a machine without one; {advice}"
    )


def _index_set_by_command_line_only(model: Model, choice: cst.CSTNode) -> bool:
    """Whether the GPU index a per-process choice reads is an option the code never assigns
    (`model.cuda(args.gpu)` with `--gpu` parsed and nothing like `args.gpu = gpu` in a spawned
    worker): every process reads the same index, so no process has a GPU of its own."""
    if not isinstance(choice, cst.Call):
        return False
    index = next((arg.value for arg in choice.args if not arg.star), None)
    written = dotted(index) if isinstance(index, cst.Attribute) else None
    if written is None:
        return False
    return not any(
        binding.how in ("assign", "annassign", "augassign") and dotted(binding.target) == written
        for binding in model.all_bindings()
        if isinstance(binding.target, cst.Attribute)
    )


RULE = LoadWithoutMapLocation
