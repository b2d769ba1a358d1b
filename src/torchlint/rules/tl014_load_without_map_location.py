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
from torchlint.model.checkpoint_contents import restored_contents
from torchlint.model.device_choice import DeviceChoice, choice_reaching, deciding_code, host_pins, replays_saved_placement
from torchlint.model.distributed import is_distributed
from torchlint.model.names import dotted
from torchlint.model.rank_zero import reads_a_rank, runs_on_rank_zero_only
from torchlint.model.same_run_checkpoints import saved_earlier_in_this_run
from torchlint.model.tree import children
from torchlint.model.uncalled import never_called
from torchlint.model.values import Kind
from torchlint.model.values.calling import keyword
from torchlint.registry import Finding, NodeFix, Rule

class LoadWithoutMapLocation(Rule, code="TL014"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        for call in model.calls_named(checkpoints.LOADS):
            if _maps(model, call):
                continue
            if _only_with_accelerator(model, call):
                continue
            if model.training.in_test(call) or saved_earlier_in_this_run(model, call):  # saved and loaded in one run
                continue
            if _path_names_device(model, call):
                continue  # `f"ae_{epoch}_{device}.pt"`: saved from the device this run uses
            restored = restored_contents(model, call)
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
