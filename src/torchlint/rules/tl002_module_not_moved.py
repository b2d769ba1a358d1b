"""TL002 module-not-moved: a module is trained or called in code that places tensors on a device
(or selects one with `torch.cuda.set_device`), and nothing moves the module: no `.to(...)`, `.cuda()`,
`.to_empty(...)`, `device=` at construction, or same-file helper that moves it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes import build
from torchlint.knowledge import frameworks, modules
from torchlint.model import Binding, Model, constants
from torchlint.model.functions import ProjectCall
from torchlint.model.names import dotted
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind, Place, Value
from torchlint.model.values.module_fate import ModuleFate
from torchlint.registry import Finding, Rule


_COPIES = frozenset({"list", "tuple"})  # a container of the same elements


class ModuleNotMoved(Rule, code="TL002"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return  # a test that runs a module on the wrong device fails: nothing is silent there
        values = model.values
        reported = set()
        for module in values.made(Kind.MODULE):
            if module.node in reported:
                continue  # a class held in a variable (`Net = A if wide else B; Net()`): one construction
            if not module.trainable or module.api in modules.WRAPPERS or _is_part_of_another(model, module):
                continue
            if constants.never_runs(model, module.node):
                continue  # built under `if classify:` with `classify = False`: dead code
            if _holds_callers_modules(model, module):
                continue  # a container of modules the caller passes in: they are where the caller put them
            if _holds_only_stateless_parts(model, module):
                continue  # a pipeline of parameterless layers runs wherever its input is
            fate = values.modules.fate(module)
            if fate.moves or fate.self_placed or fate.handed_off or not fate.calls:
                continue
            if _shares_storage_of_another(model, module):
                continue  # its parameters re-pointed at another module's tensors: it sits where they are
            if _kept_for_its_state(model, module, fate):
                continue  # a memory bank filled with each batch: its calls compute nothing the script uses
            if _moved_on_another_path(model, module, fate):
                continue  # `if gpu: model = Net().cuda() else: model = Net()`: placed by choice
            if all(_given_host_tensors(model, call) for call in fate.calls):
                continue  # only ever run on CPU tensors (a layer tried out, a model fitted on host data): it works there
            if not _may_run_on_device_data(model, fate):
                continue  # nothing says its inputs are on the device: it may run where it is
            if _built_where_the_host_is_chosen(model, module):
                continue
            placing = None
            if values.placement.placement_in(fate.scopes, fate.calls) is None:
                placing = next((call for call in fate.driven_elsewhere if values.placement.places_through(call)), None)
                if placing is None:
                    continue
            name = _bound_name(model, module)
            device, applicability = _device_in_scope(model, module, fate.scopes)
            if device is None and placing is not None:
                device, applicability = _device_passed(model, module, placing), Applicability.SAFE
            reported.add(module.node)
            move = _move_statement(model, module, name, device, fate.scopes)
            message = _message(model, name, move, placing)
            yield Finding(module.node, message, _fix(module, device, applicability), (move,) if move else ())


def _kept_for_its_state(model: Model, module: Value, fate: ModuleFate) -> bool:
    """Whether the module is a store the code fills: never trained, every call of it drops the
    result (`bank(feats, update=True)`), and what it keeps is read (`bank.features`, or the bank
    handed to a function). A batch stored into its buffers is copied from wherever it is, and
    nothing it returns meets the device's tensors. A module run only for its effect and never
    read (a network warmed up, or read through hooks) is not such a store."""
    if fate.trained or not all(isinstance(model.parent(call), cst.Expr) for call in fate.calls):
        return False
    return any(
        use.how == "argument" or (use.how == "attribute" and not isinstance(model.parent(use.context), (cst.Attribute, cst.Call)))
        for use in model.values.uses(module.node)
    )


def _shares_storage_of_another(model: Model, module: Value) -> bool:
    """`cell.weight_hh.data = gru.weight_hh_l0.data` in the function that built the module (a
    step-by-step cell sharing a trained layer's weights): the parameter now holds that tensor, on
    whatever device it lives. A tensor known to be in host memory places nothing."""
    names = {
        use.binding.name for use in model.values.uses(module.node, modules.SELF_RETURNING_METHODS)
        if use.how == "bound" and model.function_of(use.binding.statement) is model.function_of(module.node)
    }
    for binding in model.all_bindings():
        owner, _, attribute = binding.name.rpartition(".")
        if attribute != "data" or binding.how != "assign" or not any(owner.startswith(f"{name}.") for name in names):
            continue
        if model.function_of(binding.statement) is not model.function_of(module.node):
            continue
        found = model.values.of(binding.value) if binding.value is not None else []
        if not (found and all(v.kind is Kind.TENSOR and v.place is Place.HOST for v in found)):
            return True
    return False


def _moved_on_another_path(model: Model, module: Value, fate: ModuleFate) -> bool:
    """Whether a call of the module may also call another module that is moved: the name is
    bound on two branches, one moving what it builds and the other not, so the script places
    the model by a choice it makes (and places the inputs by the same one)."""
    modules_fates = model.values.modules
    return any(
        other is not module and other.kind is Kind.MODULE and modules_fates.fate(other).moves
        for call in fate.calls
        for other in model.values.of(call.func)
    )


def _given_host_tensors(model: Model, call: cst.Call) -> bool:
    """Whether a call of the module is given tensors, every one of them known to be in host
    memory (`conv(torch.randn(1, 3, 8, 8))`)."""
    found = [model.values.of(arg.value) for arg in call.args]
    return bool(found) and all(
        values and all(v.kind in (Kind.TENSOR, Kind.BATCH) and v.place is Place.HOST for v in values)
        for values in found
    )


def _may_run_on_device_data(model: Model, fate: ModuleFate) -> bool:
    """Whether some call of the module may give it data placed on a device, hands it to a
    function of another module that runs it (that function's placement is judged there), or to
    an engine that moves the batches it runs it on (ignite's supervised trainer)."""
    placement = model.values.placement
    elsewhere = {project_call.call for project_call in fate.driven_elsewhere}
    return any(
        call in elsewhere
        or model.call_name(call) in frameworks.BATCH_PLACING_RUNNERS
        or any(placement.may_carry_device_data(arg.value) for arg in call.args)
        for call in fate.calls
    )


def _built_where_the_host_is_chosen(model: Model, module: Value) -> bool:
    """Whether the module is built on a branch that also sets a device to the host (`if
    args.test_mode: model = Net(); device = "cpu"`): on that path there is nothing to move it to."""
    line = model.parent(model.statement(module.node))
    branch = model.parent(line)
    if not isinstance(branch, cst.IndentedBlock) or not isinstance(model.parent(branch), (cst.If, cst.Else)):
        return False
    for line in branch.body:
        for small in line.body if isinstance(line, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign):
                found = model.values.of(small.value)
                if found and all(v.kind is Kind.DEVICE and v.host_only for v in found):
                    return True
    return False


def _holds_callers_modules(model: Model, module: Value) -> bool:
    """Whether a container (`nn.Sequential(backbone, nn.Flatten())`) is built from something a
    function parameter holds (`backbone`, `net.features`, a wrapper built over it), the caller's
    module placed by the caller, or from modules built with a device handed to the call that
    builds them, and otherwise only from parts without parameters."""
    if module.api not in modules.CONTAINERS or not isinstance(module.node, cst.Call):
        return False
    placed = False
    for arg in module.node.args:
        if arg.keyword is not None:
            continue  # options (`return_layers=`), not parts
        if arg.star and _elements_placed(model, arg.value, module.node):
            placed = True
        elif _callers_module(model, arg.value) or _built_with_a_device(model, arg.value):
            placed = True
        elif arg.star or any(v.kind is not Kind.MODULE or v.trainable for v in model.values.of(arg.value)):
            return False  # a part built here with parameters, or one the file cannot tell
    return placed


def _holds_only_stateless_parts(model: Model, module: Value) -> bool:
    """Whether a container (`nn.Sequential(JPEGFilter(10), MedianSmoothing2D(3))`) is built only
    from modules known to hold no parameters or buffers: it has nothing to move."""
    if module.api not in modules.CONTAINERS or not isinstance(module.node, cst.Call):
        return False
    parts = [arg for arg in module.node.args if arg.keyword is None]
    return bool(parts) and all(
        not arg.star and (found := model.values.of(arg.value)) and all(v.kind is Kind.MODULE and not v.trainable for v in found)
        for arg in parts
    )


def _elements_placed(model: Model, expr: cst.BaseExpression, built: cst.CSTNode) -> bool:
    """Whether the modules of a list unpacked into a container (`nn.Sequential(*blocks)`) were
    placed before it is built: made by a call handed a device (`list(Reader(device=d).blocks())`),
    or each moved in place (Module.to moves the module itself) by a loop over the list that runs
    first (`for block in blocks: block.to(d)`, also through `tqdm(blocks)` or `enumerate(blocks)`)."""
    binding = model.sole_binding(expr) if isinstance(expr, cst.Name) else None
    if binding is None or binding.how != "assign" or binding.value is None:
        return False
    source = binding.value
    while isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value in _COPIES and source.args:
        source = source.args[0].value
    while isinstance(source, cst.Call):
        if _built_with_a_device(model, source):
            return True
        source = source.func.value if isinstance(source.func, cst.Attribute) else None
    return _moved_one_by_one(model, binding, built)


def _moved_one_by_one(model: Model, binding: Binding, built: cst.CSTNode) -> bool:
    """Whether a loop between ``binding`` and ``built`` walks the bound list and moves each
    element it names to a device."""
    placement = model.values.placement
    for call in model.calls:
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            continue
        if not model.order(binding.statement) < model.order(call) < model.order(built):
            continue
        if placement.move_target(call) in (None, Place.HOST):
            continue
        loop = next((node for node in model.ancestors(call) if isinstance(node, cst.For)), None)
        if loop is None or not _binds_name(loop.target, func.value.value):
            continue
        walked = [loop.iter, *(arg.value for arg in loop.iter.args)] if isinstance(loop.iter, cst.Call) else [loop.iter]
        if any(isinstance(node, cst.Name) and model.reaching(node) == [binding] for node in walked):
            return True
    return False


def _binds_name(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds_name(element.value, name) for element in target.elements)
    return False


def _callers_module(model: Model, expr: cst.BaseExpression, depth: int = 2) -> bool:
    """A module a function parameter holds (`backbone`, `net.features`), or one wrapped around
    it by a class that adds no parameters of its own (`Normalized(backbone)`)."""
    head = expr
    while isinstance(head, cst.Attribute):
        head = head.value
    bindings = model.reaching(head) if isinstance(head, cst.Name) else []
    if bindings and all(binding.how == "param" for binding in bindings):
        return True
    if depth == 0 or head is not expr or len(bindings) != 1 or not isinstance(bindings[0].value, cst.Call):
        return False
    wrapper = bindings[0].value
    found = model.values.of(wrapper)
    return (
        bool(found)
        and all(v.kind is Kind.MODULE and not v.trainable for v in found)
        and any(_callers_module(model, arg.value, depth - 1) for arg in wrapper.args if not arg.star)
    )


def _built_with_a_device(model: Model, expr: cst.BaseExpression) -> bool:
    """A module a call builds while handed a device that may be an accelerator: as its own
    `device=`, or inside a `functools.partial` of a class it builds from (`make_heads(factory=
    partial(Head, device=device))`): it is placed at construction."""
    call = expr
    if isinstance(expr, cst.Name):
        binding = model.sole_binding(expr)
        call = binding.value if binding is not None and binding.how == "assign" else None
    if not isinstance(call, cst.Call):
        return False
    for arg in call.args:
        given = arg.value
        if isinstance(given, cst.Name):
            binding = model.sole_binding(given)
            given = binding.value if binding is not None and binding.how == "assign" else given
        if arg.keyword is not None and arg.keyword.value == "device" and _may_be_an_accelerator(model, given):
            return True
        if isinstance(given, cst.Call) and model.call_name(given) in modules.PARTIAL_APPLICATIONS:
            device = next((a.value for a in given.args if a.keyword is not None and a.keyword.value == "device"), None)
            if device is not None and _may_be_an_accelerator(model, device):
                return True
    return False


def _may_be_an_accelerator(model: Model, device: cst.BaseExpression) -> bool:
    return model.values.placement.device_place(device) is not Place.HOST


def _is_part_of_another(model: Model, module: Value) -> bool:
    """Built inside a module class (a submodule, moved with its parent), or stored as an
    attribute of something else (`model.fc = nn.Linear(...)`), or of an object that may be a
    module itself (a class with a `forward`, or a base class from another file)."""
    if model.values.modules.is_submodule(module):
        return True
    for use in model.values.uses(module.node, modules.SELF_RETURNING_METHODS):
        binding = use.binding
        if use.how == "bound" and "." in binding.name:
            owner = binding.scope  # a ClassDef, unless `self` is an object the file does not show
            if not binding.name.startswith("self.") or not isinstance(owner, cst.ClassDef):
                return True
            if not model.values.modules.plain_class(owner):
                return True
    return False


def _bound_name(model: Model, module: Value) -> str:
    for use in model.values.uses(module.node, modules.SELF_RETURNING_METHODS):
        if use.how == "bound":
            return use.binding.name
    return model.module.code_for_node(module.node)


def _device_in_scope(
    model: Model, module: Value, scopes: frozenset[cst.CSTNode]
) -> tuple[str | None, Applicability]:
    """How the code around the module names its device (`device`, `self.device`, `args.device`),
    when that name is already bound where the module is built; None if it uses `.cuda()`.
    A module-level name bound only further down is offered as an unsafe fix: a function that
    builds the module sees it when it runs after that line, as scripts' main() usually does."""
    values = model.values
    built = module.node
    later = None
    for call in model.calls:
        if model.function_of(call) not in scopes or values.placement.move_target(call) is not Place.DEVICE:
            continue
        func = call.func
        if func.attr.value != "to":
            continue
        device = call.args[0].value if call.args and call.args[0].keyword is None else None
        if device is None:
            continue
        text = model.module.code_for_node(device)
        if isinstance(device, (cst.Name, cst.Attribute)) and _bound_before(model, device, built):
            return text, Applicability.SAFE
        if later is None and isinstance(device, (cst.Name, cst.Attribute)) and _global_bound_later(model, device, built):
            later = text
    return later, Applicability.UNSAFE


def _device_passed(model: Model, module: Value, placing: ProjectCall) -> str | None:
    """The device a call of another module's function passes it to place data on, when it is
    a name already bound where the module is built."""
    for parameter in sorted(placing.summary.places_on):
        device = placing.argument(parameter)
        if isinstance(device, (cst.Name, cst.Attribute)) and _bound_before(model, device, module.node):
            return model.module.code_for_node(device)
    return None


def _global_bound_later(model: Model, device: cst.BaseExpression, built: cst.CSTNode) -> bool:
    key = dotted(device)
    return (
        model.function_of(built) is not model.module
        and model.binding_scope(key, built) is model.module
        and bool(model.bindings(model.module, key))
    )


def _bound_before(model: Model, device: cst.BaseExpression, built: cst.CSTNode) -> bool:
    """Whether the device name read elsewhere is bound, in the module's own scope, before it is
    built (so `.to(<name>)` can be added there)."""
    key = dotted(device)
    scope = model.binding_scope(key, built)
    return any(model.order(b.statement) < model.order(built) for b in model.bindings(scope, key))


def _move_statement(
    model: Model, module: Value, name: str, device: str | None, scopes: frozenset[cst.CSTNode]
) -> str | None:
    """The statement that moves the module, in the surrounding code's own terms: `.to(<its device
    name>)`, `.cuda()` where the code uses that, `.to("cuda")` where it writes the device as a
    literal. None when the module has no name there or the code's device cannot be named."""
    if not model.visible(name, module.node):
        return None
    if device is not None and model.visible(device, module.node):
        return f"{name}.to({device})"
    placement = model.values.placement.placement_in(scopes)
    if placement is None:
        return None
    func = placement.func
    if (model.call_name(placement) or "").startswith("torch.cuda.") or (
        isinstance(func, cst.Attribute) and func.attr.value == "cuda"
    ):
        return f"{name}.cuda()"  # the current CUDA device, as the code's own moves use it
    target = _device_argument(placement)
    if isinstance(target, cst.SimpleString):
        return f"{name}.to({model.module.code_for_node(target)})"
    return None


def _device_argument(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    func = call.func
    if positional and isinstance(func, cst.Attribute) and func.attr.value == "to":
        return positional[0].value
    return None


def _message(model: Model, name: str, move: str | None, placing: ProjectCall | None) -> str:
    if placing is None:
        where = "the code around it places tensors on a device"
        how = f"call {move}" if move else "move it to the device its inputs are on"
    else:
        summary = placing.summary
        where = f"{summary.name}() in {model.project.where(summary.where)} runs it and places tensors on a device"
        how = f"call {move}" if move else f"move it to the device {summary.name}() uses"
    return (
        f"module '{name}' is never moved, but {where}: {how} "
        f"after building it, or its forward pass fails with a device mismatch (or silently runs on the CPU)"
    )


def _fix(module: Value, device: str | None, applicability: Applicability):
    if device is None:
        return None
    return build.chain_call(module.node, f"to({device})", f"Move the module with .to({device})", applicability)


RULE = ModuleNotMoved
