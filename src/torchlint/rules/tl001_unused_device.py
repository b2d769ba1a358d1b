"""TL001 unused-device: the device the code chose is not the one it uses. A device is computed
(`torch.device(...)`, `"cuda" if torch.cuda.is_available() else "cpu"`, `torch.device("cuda",
rank)`) and nothing places anything with it: it is only printed, logged or formatted, or never
read at all; an accelerator flag (`args.cuda = not args.no_cuda and torch.cuda.is_available()`)
is never read while the code moves to CUDA anyway; a device is made in a branch and thrown away (`else: torch.device("cpu")`); or the
accelerator test is never run (`if torch.cuda.is_available:`, a function, always true)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model import Binding, Model, constants
from torchlint.model.placement_scheme import NO_HOST_PATH, placements_ignoring
from torchlint.model.testing import is_test_code
from torchlint.model.tree import children
from torchlint.model.values import Kind, Use, is_reporting_call
from torchlint.registry import Finding, Rule

# What a device computation looks like: `torch.device(...)`, a conditional, a string.
_DEVICE_SHAPES = (cst.Call, cst.IfExp, cst.SimpleString, cst.FormattedString)
# Builtins and string methods that turn a value into text.
_FORMATTING = frozenset({"str", "repr", "format"})


class UnusedDevice(Rule, code="TL001"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return  # a test's unused device is dead code, not a model left on the CPU
        reported: set[tuple[object, str]] = set()
        for binding in model.all_bindings():
            if (binding.scope, binding.name) in reported or not _computes_device(model, binding):
                continue
            reported.add((binding.scope, binding.name))
            if _name_places(model, binding):
                continue  # this binding or a later choice under the same name (a notebook re-choosing it) is used
            if _framework_places(model):
                continue  # a Trainer, Accelerator or Fabric places the model: the device is only informative
            if isinstance(binding.scope, cst.Module) and not _module_is_a_script(model):
                continue  # a library module's device may be imported and used elsewhere
            stray = placements_ignoring(model, binding.value, binding.scope)
            if stray == []:
                continue  # `.cuda()` under the same test, after set_device to its index: the choice is honoured
            other = model.values.placement.placement_in([binding.scope]) if stray is None else None
            if stray is None and other is None and not _runs_a_model(model):
                continue  # nothing runs a network (a weight converter): no computation is left on the CPU
            yield Finding(binding.value, _message(model, binding, model.values.uses(binding.value), stray, other))
        yield from _uncalled_availability_checks(model)
        yield from _unread_accelerator_flags(model)
        yield from _discarded_devices(model)
        yield from _ignored_device_parameters(model)


def _computes_device(model: Model, binding: Binding) -> bool:
    """A plain name assigned a device made right here (not an alias of another device)."""
    value = binding.value
    if binding.how not in ("assign", "annassign") or "." in binding.name or not isinstance(value, _DEVICE_SHAPES):
        return False
    if type(binding.scope) is cst.ClassDef:
        return False  # a class attribute, read as self.<name>
    if type(value) is cst.Call and model.call_name(value) not in devices.DEVICE_FACTORIES:
        return False
    if _reads_placement(model, value):
        return False  # read off where the data already is: nothing is left behind if it goes unused
    made = [v for v in model.values.of(value) if v.kind is Kind.DEVICE and v.node is value]
    if not made or all(v.host_only for v in made):
        return False  # an unused "cpu" device changes nothing: everything is on the host anyway
    if isinstance(value, (cst.SimpleString, cst.FormattedString)):
        return "device" in binding.name.lower()  # a bare "cuda" is a device only by its name
    return True


def _reads_placement(model: Model, value: cst.CSTNode) -> bool:
    """Whether the device is computed from where a tensor or module already is (`"cuda" if
    x.is_cuda else "cpu"`, `torch.device(x.device)`), read in the device call's arguments or a
    conditional's test; `torch.device` itself is the callee, not such a read."""
    pending = [arg.value for arg in value.args] if isinstance(value, cst.Call) else [value]
    while pending:
        node = pending.pop()
        if isinstance(node, cst.Attribute) and (
            node.attr.value in devices.PLACEMENT_QUERIES
            or node.attr.value == devices.DEVICE_ATTRIBUTE
            and model.values.all_of(node.value, Kind.TENSOR, Kind.MODULE, Kind.BATCH) is not None
        ):
            return True
        pending.extend(children(node))
    return False


def _name_places(model: Model, binding: Binding) -> bool:
    """Whether this binding, or a later one of the same name in the same scope, may place
    something: the code's device is the name, chosen again further down (a notebook showing
    several ways to choose it, a function recomputing it, a loop placing on each device in turn:
    `for device in range(torch.cuda.device_count()):`)."""
    here = model.order(binding.statement)
    return any(
        model.order(other.statement) >= here and _places(model, _uses_of_binding(model, other))
        for other in model.bindings(binding.scope, binding.name)
    )


def _uses_of_binding(model: Model, binding: Binding) -> list[Use]:
    """The uses of what a binding assigns; for a `for` target, the uses of its reads in the loop."""
    if binding.value is not None:
        return model.values.uses(binding.value)
    if binding.how != "for" or not isinstance(binding.statement, cst.For):
        return []
    body = binding.statement.body
    return [
        use
        for read in model.reads_of(binding)
        if any(ancestor is body for ancestor in model.ancestors(read))
        for use in model.values.uses(read)
    ]


def _framework_places(model: Model) -> bool:
    return bool(model.values.made(Kind.FRAMEWORK))


def _places(model: Model, uses: Iterable[Use]) -> bool:
    """Whether a use of the device may place something with it (anything but reporting it).

    Text made from the device (`str(device)`, an f-string) places something only when handed to
    a call other than a report; the uses of the text are followed in turn, each maker of text
    once (a loop may remake text from itself: `s = f"{s} {i}"`)."""
    pending = [(use, False) for use in uses]
    followed: set[cst.CSTNode] = set()
    while pending:
        use, text = pending.pop()
        maker = _makes_text(model, use)
        if maker is None:
            if _places_itself(model, use, text):
                return True
        elif maker not in followed:
            followed.add(maker)
            pending.extend((inner, True) for inner in model.values.uses(maker))
    return False


def _makes_text(model: Model, use: Use) -> cst.CSTNode | None:
    """The f-string or formatting call (`str(device)`, `"{}".format(device)`) that turns the used
    value into text, or None."""
    if use.how == "formatted":
        return use.context
    call = use.context
    if use.how == "argument" and not is_reporting_call(model, call) and _is_formatting(model, call, use):
        return call
    return None


def _places_itself(model: Model, use: Use, text: bool) -> bool:
    """``text``: the used value is text made from the device."""
    how = use.how
    if how == "bound":
        # stored on an object (`self.device = device`) whose reads the file may not show
        return "." in use.binding.name and not model.reads_of(use.binding)
    if how == "argument":
        return not is_reporting_call(model, use.context)
    if text:
        return how == "returned"
    return True


def _is_formatting(model: Model, call: cst.Call, use: Use) -> bool:
    func = call.func
    if isinstance(func, cst.Name) and func.value in _FORMATTING and not model.bindings_of(func):
        return True
    # "{}".format(device)
    return isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(
        func.value, (cst.SimpleString, cst.ConcatenatedString)
    )


def _module_is_a_script(model: Model) -> bool:
    """A module that runs training code (a `__main__` guard, or loops at top level) and reads no
    global dynamically (`globals()`, `exec`, which config loaders use)."""
    for call in model.calls:
        if isinstance(call.func, cst.Name) and call.func.value in ("globals", "exec", "eval", "vars", "locals"):
            return False
    for statement in model.module.body:
        if isinstance(statement, (cst.For, cst.While)):
            return True
        if isinstance(statement, cst.If) and "__name__" in model.module.code_for_node(statement.test):
            return True
    return False


def _uncalled_availability_checks(model: Model) -> Iterator[Finding]:
    """`if torch.cuda.is_available:` and the like: the function itself, tested for truth."""
    last_names = {path.rsplit(".", 1)[-1] for path in devices.AVAILABILITY_CHECKS}
    endings = tuple(last_names)
    for key, reads in model.reads_table.items():
        # endswith first: one C call rejects nearly every key of the file
        if not key.endswith(endings) or key.rpartition(".")[2] not in last_names:
            continue
        for read in reads:
            if model.qualified_name(read) in devices.AVAILABILITY_CHECKS and _tested_for_truth(model, read):
                text = model.module.code_for_node(read)
                yield Finding(
                    read,
                    f"'{text}' is not called: a function is always true, so this test says an accelerator is "
                    f"present even on a machine without one; write {text}()",
                )


def _tested_for_truth(model: Model, node: cst.BaseExpression) -> bool:
    parent = model.parent(node)
    if isinstance(parent, (cst.If, cst.IfExp, cst.While, cst.Assert)):
        return parent.test is node
    if isinstance(parent, cst.UnaryOperation):
        return isinstance(parent.operator, cst.Not)
    return isinstance(parent, cst.BooleanOperation)


def _unread_accelerator_flags(model: Model) -> Iterator[Finding]:
    """`use_cuda = torch.cuda.is_available()`, `args.cuda = not args.no_cuda and ...` that
    nothing reads, in a file that calls `.cuda()` outside any test about the device."""
    moves = [call for call in model.calls if _unguarded_cuda_move(model, call)]
    if not moves:
        return
    for call in model.calls:
        if model.call_name(call) not in devices.AVAILABILITY_CHECKS:
            continue
        statement = _flag_assignment(model, call)
        if statement is None:
            continue
        target = statement.targets[0].target
        if _flag_read(model, target):
            continue
        flag = model.module.code_for_node(target)
        choice = f'"cuda" if {flag} else "cpu"'
        torch = _local_name(model, "torch")
        # `from torch.cuda import is_available` binds no `torch`: a device string moves as well
        suggestion = f"device = {torch}.device({choice})" if torch in model.imports.bindings else f"device = {choice}"
        yield Finding(
            target,
            f"'{flag}' says whether to use CUDA but nothing reads it: "
            f"'{model.module.code_for_node(moves[0])}' moves to the GPU on every path, so the flag cannot turn "
            f"CUDA off and a machine without one fails; choose the device from it, "
            f"{suggestion}, and move with .to(device)",
            suggestions=(suggestion,),
        )


def _flag_assignment(model: Model, check: cst.Call) -> cst.Assign | None:
    """The assignment of one name or attribute whose value is the availability check, alone or
    combined with `and`/`or`/`not`."""
    node: cst.CSTNode = check
    parent = model.parent(node)
    while isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
        if isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
            return None
        node, parent = parent, model.parent(parent)
    if not isinstance(parent, cst.Assign) or parent.value is not node or len(parent.targets) != 1:
        return None
    return parent if isinstance(parent.targets[0].target, (cst.Name, cst.Attribute)) else None


def _flag_read(model: Model, target: cst.Name | cst.Attribute) -> bool:
    """Whether anything may read the flag: a read of the name; for an attribute of an argparse
    namespace, any read of that attribute name, or the namespace handed to code the file does
    not show (or read whole, `vars(args)`)."""
    if isinstance(target, cst.Name):
        bindings = [b for b in model.bindings_of(target) if b.target is target]
        if any(isinstance(b.scope, cst.Module) for b in bindings) and not _module_is_a_script(model):
            return True
        return any(model.reads_of(b) for b in bindings)
    if not constants.evaluator(model).argparse.is_namespace(target.value):
        return True  # an object attribute: other files may read it
    attr = target.attr.value
    for key, reads in model.reads_table.items():
        if key == attr or key.endswith("." + attr):
            for read in reads:
                parent = model.parent(read)
                called = isinstance(parent, cst.Call) and parent.func is read  # `x.cuda()`
                if not called and model.qualified_name(read) is None:  # not `torch.cuda`
                    return True
    return any(_namespace_escapes(model, call) for call in model.calls)


def _namespace_escapes(model: Model, call: cst.Call) -> bool:
    """A call that receives an argparse namespace and is not a same-file function or a report."""
    argparse = constants.evaluator(model).argparse
    if not any(argparse.is_namespace(arg.value) for arg in call.args):
        return False
    if isinstance(call.func, cst.Name) and model.function(call.func.value) is not None:
        return False
    return not is_reporting_call(model, call)


def _unguarded_cuda_move(model: Model, call: cst.Call) -> bool:
    """`x.cuda()` outside any `if` whose test is about a device or CUDA."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
        return False
    for ancestor in model.ancestors(call):
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            test = model.module.code_for_node(ancestor.test).lower()
            if any(word in test for word in ("cuda", "gpu", "device")):
                return False
    return True


def _local_name(model: Model, path: str) -> str:
    """The name the file imports ``path`` under (`import torch as th` -> `th`)."""
    return next((local for local, full in model.imports.bindings.items() if full == path), path)


def _ignored_device_parameters(model: Model) -> Iterator[Finding]:
    """`def __init__(self, model, device): self.device = next(model.parameters()).device`: the
    device the caller chose is never read, and the function sets the same name from elsewhere."""
    if not model.imports_torch:
        return
    for parameter in model.all_bindings():
        if parameter.how != "param" or "device" not in parameter.name.lower() or model.reads_of(parameter):
            continue
        function = parameter.scope
        if not isinstance(function, cst.FunctionDef):
            continue
        for binding in model.all_bindings():
            if (
                binding.how == "assign"
                # an attribute recording another device (`self.device = ...`): a local of the
                # parameter's own name overwrites it, which is no record of a device the caller
                # passes (a parameter kept for a signature the function must match)
                and binding.name.startswith("self.")
                and binding.name.rsplit(".", 1)[-1] == parameter.name
                and binding is not parameter
                and model.function_of(binding.statement) is function
                and binding.value is not None
            ):
                code = model.module.code_for_node
                yield Finding(
                    parameter.target,
                    f"parameter '{parameter.name}' is never read: '{binding.name}' is set from "
                    f"'{code(binding.value)}' instead, so {_what_the_record_misleads(model, binding)}; "
                    f"use it: {binding.name} = {parameter.name}",
                )
                break


def _what_the_record_misleads(model: Model, binding: Binding) -> str:
    """What an attribute that records a device the caller did not pass leads the code to do: a
    method that compares the record with a device (`if self.device == device: return self`)
    decides on a device the object's data may not be on."""
    for read in model.reads_of(binding):
        comparison = model.parent(read)
        if isinstance(comparison, cst.Comparison) and all(
            isinstance(target.operator, (cst.Equal, cst.NotEqual)) for target in comparison.comparisons
        ):
            method = model.function_of(read)
            where = f"{method.name.value}()" if isinstance(method, cst.FunctionDef) else "the code"
            return (
                f"every instance records that device whatever device the caller builds it for, and {where} "
                f"decides by '{model.module.code_for_node(comparison)}' on that record"
            )
    return "the device the caller passes is ignored"


def _discarded_devices(model: Model) -> Iterator[Finding]:
    """`else: torch.device("cpu")`: a device made as a statement of its own inside a block and
    thrown away. (At the top of a notebook cell a bare expression is displayed, so only nested
    statements count.)"""
    for call in model.calls:
        statement = model.parent(call)
        if type(statement) is not cst.Expr or model.call_name(call) not in devices.DEVICE_FACTORIES:
            continue
        line = model.parent(statement)
        if line is None or model.parent(line) is model.module:
            continue
        if _checked_for_errors(model, line):
            continue  # `try: torch.device(text)` / `except RuntimeError`: a test that the text names a device
        text = model.module.code_for_node(call)
        name = _device_bound_beside(model, line)
        if name is None:
            why = "nothing can be placed on it"
        else:
            why = f"the other branch binds '{name}', so on this path '{name}' is never set to it"
        yield Finding(call, f"'{text}' makes a device and throws it away: {why}; write {name or 'device'} = {text}")


def _checked_for_errors(model: Model, line: cst.CSTNode) -> bool:
    """Whether a statement sits directly in the body of a `try` that handles errors."""
    block = model.parent(line)
    statement = model.parent(block)
    return isinstance(statement, cst.Try) and statement.body is block and bool(statement.handlers)


def _device_bound_beside(model: Model, line: cst.CSTNode) -> str | None:
    """The name the other branches of the `if` around ``line`` assign a device to."""
    block = model.parent(line)
    branch = model.parent(block)
    chain = branch
    while isinstance(model.parent(chain), (cst.If, cst.Else)):
        chain = model.parent(chain)
    if not isinstance(chain, cst.If):
        return None
    for statement in _branch_statements(chain):
        if statement is line or not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and any(v.kind is Kind.DEVICE for v in model.values.of(small.value))
            ):
                return small.targets[0].target.value
    return None


def _branch_statements(chain: cst.If) -> Iterator[cst.CSTNode]:
    """The statements directly in each branch of an if/elif/else chain."""
    branch: cst.If | cst.Else | None = chain
    while branch is not None:
        yield from branch.body.body
        branch = branch.orelse if isinstance(branch, cst.If) else None


def _runs_a_model(model: Model) -> bool:
    """Whether the file may run a network: it iterates a loader, builds an optimizer, calls a
    module it builds, or calls an object some call made (a pipeline, a model of unknown class),
    outside the methods of its own network classes. Otherwise it defines, converts or inspects
    networks, and no computation is left on the CPU."""
    values = model.values
    if model.loops.batch_loops() or values.made(Kind.OPTIMIZER):
        return True
    called = (call for module in values.made(Kind.MODULE) for call in values.modules.fate(module).calls)
    if any(not _in_a_network(model, call) for call in called):
        return True
    return any(_calls_a_made_object(model, call) and not _in_a_network(model, call) for call in model.calls)


def _in_a_network(model: Model, call: cst.Call) -> bool:
    """A call in a method of a torch module class (`self.fc(x)` in `forward`): the network
    calling its own layers, which runs only when something calls the network."""
    classdef = next((node for node in model.ancestors(call) if isinstance(node, cst.ClassDef)), None)
    return classdef is not None and model.values.modules.class_kind(classdef) is Kind.MODULE


def _calls_a_made_object(model: Model, call: cst.Call) -> bool:
    """`pipe(prompt)` where `pipe = Pipeline.from_pretrained(...)`: a call of a name bound to the
    result of another call."""
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return isinstance(call.func, cst.Call)  # `build()(x)`
    return any(b.how in ("assign", "annassign") and isinstance(b.value, cst.Call) for b in model.bindings_of(call.func))


def _message(
    model: Model, binding: Binding, uses: list[Use], stray: list[tuple[cst.Call, str]] | None, other: cst.Call | None
) -> str:
    name = binding.name
    what = "only printed or logged" if any(use.how != "bound" for use in uses) else "never read"
    if stray:
        move, why = stray[0]
        if any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in move.args):
            return (
                f"device '{name}' is set here but {what}: the placement that reads '{name}' "
                f"('{_short(model, move)}') runs only on another path; place with .to({name}) on this path too"
            )
        where = (
            f"CUDA on every machine, where '{name}' is the CPU on one without a GPU"
            if why == NO_HOST_PATH
            else f"a device other than the one '{name}' names"
        )
        return (
            f"device '{name}' is computed but {what}: the code places data with '{_short(model, move)}' instead, "
            f"which goes to {where}; place with .to({name}), or remove '{name}' if that placement is the one you want"
        )
    if other is not None:
        return (
            f"device '{name}' is computed but {what}: the code places data another way ('{_short(model, other)}'); "
            f"place with .to({name}), or remove '{name}'"
        )
    return (
        f"device '{name}' is computed but {what}: nothing is placed on it, so the model and batches "
        f"stay on the CPU; move them with .to({name})"
    )


def _short(model: Model, call: cst.Call) -> str:
    """A placement call as the message names it: a move by itself (`.to("cuda")`), whatever its
    receiver; any other call whole, or when long, its callee and the argument that places
    (`self._build_cache(..., device=torch.device(i), ...)`)."""
    code = model.module.code_for_node
    func = call.func
    moves = isinstance(func, cst.Attribute) and func.attr.value in devices.DEVICE_METHODS
    text = f".{func.attr.value}({''.join(code(a) for a in call.args)})" if moves else code(call)
    text = " ".join(text.split())
    if len(text) <= 60 or moves:
        return text if len(text) <= 60 else text[:57] + "..."
    callee = " ".join(code(func).split())
    placing = next((a for a in call.args if a.keyword is not None and a.keyword.value in devices.PLACEMENT_KEYWORDS), None)
    if placing is None:
        return f"{callee}(...)"
    return f"{callee}(..., {placing.keyword.value}={' '.join(code(placing.value).split())}, ...)"


RULE = UnusedDevice
