"""Where a script decides at run time which device it runs on.

Two decisions matter to code that restores saved tensors (TL014):
- accelerator or host: the script asks whether CUDA is there (`torch.cuda.is_available()`), or
  builds its device from a value it is given (`torch.device(args.device)`, a `--no-cuda` flag
  choosing between `"cuda"` and `"cpu"`, a `device` parameter its code moves things to), or moves to CUDA only when a flag of the run says so
  (`if args.cuda: model.cuda()`). It is meant to run on machines without a GPU too, unless it
  also moves something to CUDA on every path (`model.cuda()` outside any condition, or
  `.to(device)` with `device = torch.device("cuda")`): then it only runs with one.
  An `Accelerator` or a Lightning `Fabric` decides the same way for the script, unless it is
  told which to use (`Fabric(accelerator="cpu")`, `Fabric(accelerator="cuda")`).
- which accelerator: each process picks its GPU (`torch.cuda.set_device(local_rank)`,
  `torch.device("cuda", rank)`, `f"cuda:{rank}"`, `x.cuda(args.gpu)`,
  `DistributedDataParallel(model, device_ids=[local_rank])`).

A device spelled as a literal (`"cuda"`, `torch.device("cuda:0")`, `self.gpu` always set to 0) is
no decision, and a process's GPU taken from a value the code has just tested to be None
(`torch.cuda.set_device(args.gpu)` read where `args.gpu is None`) is none there. A script
that never names an accelerator and hands the host to its work as the device
(`make_envs(..., device="cpu")`) is pinned to the host: what it restores must come back there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import calls, checkpoints, devices, frameworks, tensors
from torchlint.model import constants
from torchlint.model.constants import per_model
from torchlint.model.names import dotted
from torchlint.model.tree import children
from torchlint.model.values import Kind, builtin_or_qualified, is_reporting_call

if TYPE_CHECKING:
    from torchlint.model import Model

_CONDITIONS = (cst.If, cst.IfExp, cst.BooleanOperation, cst.Try, cst.While)
_MAX_DEPTH = 6


@dataclass(frozen=True)
class DeviceChoice:
    """The code that decides: ``node`` is the call or expression, ``per_process`` True when the
    decision is which accelerator each process uses, False when it is accelerator or host;
    ``host`` True when it is no decision but the host, named as the device of a script that
    names no accelerator."""

    node: cst.CSTNode
    per_process: bool
    host: bool = False


@per_model
def runtime_choices(model: Model) -> tuple[DeviceChoice, ...]:
    """Every run-time device decision of the file, accelerator-or-host ones first (none of those
    when something is moved to CUDA on every path)."""
    host_or_accelerator: list[cst.CSTNode] = []
    warned: list[cst.CSTNode] = []  # checks whose answer only gates a warning: cited last
    handed: list[cst.CSTNode] = []  # moves onto a device parameter: the callers' choice, cited after the file's own
    per_process: list[cst.CSTNode] = []
    always_on_cuda = False
    for call in model.calls:
        name = model.call_name(call)
        args = [arg.value for arg in call.args if not arg.star]
        if name in devices.AVAILABILITY_CHECKS:
            if not isinstance(model.statement(call), cst.Assert) and not _only_shown(model, call):
                (warned if _only_warns(model, call) else host_or_accelerator).append(call)  # not `assert torch.cuda.is_available()`
        elif name in devices.DEVICE_FACTORIES and args:
            if len(args) > 1 or _names_an_index(model, args[0]):
                if not _literal(model, args[-1]):
                    per_process.append(call)
            elif not _literal(model, args[0]):
                host_or_accelerator.append(call)
        elif name in devices.DEVICE_SELECTION_CALLS and args and not _literal(model, args[0]):
            per_process.append(call)
        elif _is_method(model, call, "cuda") and args and not _literal(model, args[0]):
            per_process.append(call)
        elif _is_method(model, call, "to") and args and _names_an_index(model, args[0]) and not _literal(model, args[0]):
            per_process.append(call)
        elif _is_method(model, call, "cuda") or (
            _is_method(model, call, "to") and args and _accelerator_literal(model, args[0])
        ):
            # `x.to(device)` with `device = torch.device("cuda")` moves as `.cuda()` does
            if not _conditional(model, call):
                always_on_cuda = True
            elif _flag_guarded(model, call):
                host_or_accelerator.append(call)  # `if args.cuda: model.cuda()`: the host otherwise
        elif _is_method(model, call, "to") and _given_device(model, call):
            handed.append(call)  # `model.to(device)`, `device` a parameter: the caller decides
        elif _is_method(model, call, "to") and args and _device_option(model, args[0]):
            host_or_accelerator.append(args[0])  # `model.to(args.device)`: `--device cpu` on a host
        elif _picks_device_ids(model, call):
            per_process.append(call)
    host_or_accelerator.extend(
        framework.node
        for framework in model.values.made(Kind.FRAMEWORK)
        if framework.api in frameworks.DEVICE_CHOOSING_CLASSES and not _pinned(framework.node)
    )
    host_or_accelerator.extend(_device_conditionals(model))
    host_or_accelerator.extend(warned)
    choices = [] if always_on_cuda else [DeviceChoice(node, per_process=False) for node in host_or_accelerator]
    choices += [DeviceChoice(node, per_process=True) for node in per_process]
    return tuple(choices + ([] if always_on_cuda else [DeviceChoice(node, per_process=False) for node in handed]))


@per_model
def host_pins(model: Model) -> tuple[DeviceChoice, ...]:
    """Each `device=` argument that hands the host to the script's work (`device="cpu"`,
    `device=torch.device("cpu")`), in a file that names no accelerator anywhere (no accelerator
    device string, also formatted, no `.cuda()`, no availability check) and hands nothing any
    other device (`device=args.device`, `.to(args.device)`)."""
    if model.calls_named(devices.AVAILABILITY_CHECKS) or any(
        _is_method(model, call, "cuda") for call in model.calls_named(methods="cuda")
    ):
        return ()
    for node in model.nodes:
        if type(node) in (cst.SimpleString, cst.FormattedStringText):
            text = node.evaluated_value if type(node) is cst.SimpleString else node.value
            if isinstance(text, str) and devices.DEVICE_STRING.match(text.split(":")[0]) and not _names_host(text):
                return ()
    found = []
    for call in model.calls:
        device = call.args[0].value if _is_method(model, call, "to") and call.args and not call.args[0].star else None
        if device is not None and devices.DEVICE_NAME.search((dotted(device) or "").rsplit(".", 1)[-1]) and not _host_literal(
            model, device
        ):
            return ()  # `.to(args.device)`: a device from elsewhere
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "device":
                if not _host_literal(model, arg.value):
                    return ()
                found.append(DeviceChoice(arg.value, per_process=False, host=True))
    return tuple(found)


def _names_host(text: str) -> bool:
    return text.split(":")[0] in devices.HOST_DEVICES


def _host_literal(model: Model, expr: cst.BaseExpression) -> bool:
    """`"cpu"`, `torch.device("cpu")`, or a name every assignment of which is one."""
    named = model.values.of(expr)
    return _literal(model, expr) and bool(named) and all(v.kind is Kind.DEVICE and v.host_only for v in named)


def choice_reaching(model: Model, at: cst.CSTNode, choices: tuple[DeviceChoice, ...] | None = None) -> DeviceChoice | None:
    """The first decision (of ``choices``, by default the file's run-time choices) that governs
    the code at ``at``: made at the top level of the script, in the function that runs ``at``,
    in a function that calls it (also through helpers), or in the `__init__` of its class or a
    method that `__init__` calls (`self.check_cuda(args.cuda)`). A decision made in an unrelated
    method of a library class says nothing about this code."""
    where = model.function_of(at)
    unset = _none_at(model, at)
    for choice in runtime_choices(model) if choices is None else choices:
        if choice.per_process and unset and _reads_any(choice.node, unset):
            continue  # `set_device(args.gpu)`, where `args.gpu is None`: no process picks a GPU there
        if model.in_other_branches(choice.node, at):
            continue  # `if args.train: ... load` / `else: set_device(args.gpu)`: never on one path
        decided_in = model.function_of(choice.node)
        if decided_in is model.module or where is model.module or decided_in is where:
            return choice
        if where in model.summaries.reachable(decided_in) or constructor_of_class_of(model, decided_in, where):
            return choice
        if _run_by_constructor_of_class_of(model, decided_in, where):
            return choice
    return None


def replays_saved_placement(model: Model, at: cst.CSTNode) -> bool:
    """Whether the code before ``at`` in its function moves to an accelerator under a setting it
    has restored from what a run wrote (`for key, value in vars(pickle.load(f)).items():
    vars(cmd_args)[key] = value`, then `if cmd_args.mode == "gpu": model.cuda()`): it goes where
    the saving run went, on its kind of machine, whatever this one has."""
    function = model.function_of(at)
    for call in model.calls_named(methods=("cuda", "to")):
        if not (_is_method(model, call, "cuda") or _is_method(model, call, "to")) or not _flag_guarded(model, call):
            continue
        if model.function_of(call) is not function or model.order(call) > model.order(at):
            continue
        guard = next(a for a in model.ancestors(call) if isinstance(a, cst.If))
        if not _on_the_way(model, guard, at):
            continue
        setting = guard.test.left if isinstance(guard.test, cst.Comparison) else guard.test
        owner = dotted(setting.value) if isinstance(setting, cst.Attribute) else None
        if owner is not None and _restored_before(model, owner, call):
            return True
    return False


def _restored_before(model: Model, owner: str, move: cst.Call) -> bool:
    """Whether the function of ``move`` first replaces the attributes of the settings object
    ``owner`` with those of an object read back from a file: `owner = pickle.load(f)`,
    `vars(owner).update(saved)`, or a loop over the saved items writing `vars(owner)[key]`,
    `owner.__dict__[key]` or `setattr(owner, key, value)`."""
    function = model.function_of(move)
    for node in model.nodes:
        if model.order(node) > model.order(move) or model.function_of(node) is not function or not _on_the_way(model, node, move):
            continue
        if isinstance(node, cst.Assign) and any(dotted(t.target) == owner for t in node.targets):
            if _read_back(model, node.value):
                return True
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "update":
            if _attributes_of(node.func.value) == owner and _read_back(model, node):
                return True
        elif isinstance(node, cst.For) and _read_back(model, node.iter) and _writes_attributes_of(model, node.body, owner):
            return True
    return False


def _on_the_way(model: Model, node: cst.CSTNode, later: cst.CSTNode) -> bool:
    """Whether the statement holding ``node`` sits in a block that also holds ``later``: run on
    the way to it, not in a branch left before (`if args.predict: ...; raise SystemExit`)."""
    statement = model.statement(node)
    if isinstance(statement, cst.BaseSmallStatement):
        statement = model.parent(statement)
    block = model.parent(statement)
    return any(ancestor is block for ancestor in model.ancestors(later))


def _attributes_of(expr: cst.BaseExpression) -> str | None:
    """`vars(x)` or `x.__dict__`: the dotted name of x."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "vars" and len(expr.args) == 1:
        return dotted(expr.args[0].value)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "__dict__":
        return dotted(expr.value)
    return None


def _writes_attributes_of(model: Model, body: cst.CSTNode, owner: str) -> bool:
    pending = [body]
    while pending:
        node = pending.pop()
        pending.extend(children(node))
        if isinstance(node, cst.Subscript) and _attributes_of(node.value) == owner and isinstance(model.parent(node), cst.AssignTarget):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr" and node.args:
            if dotted(node.args[0].value) == owner:
                return True
    return False


def _read_back(model: Model, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether ``expr`` reads an object a settings reader returned, also through the one
    assignment that reaches a name (`saved = pickle.load(f)`)."""
    if isinstance(expr, cst.Call) and model.call_name(expr) in checkpoints.SETTINGS_READERS:
        return True
    if isinstance(expr, cst.Name) and depth < 2:
        value = _sole_value(model, expr)
        return value is not None and _read_back(model, value, depth + 1)
    return any(_read_back(model, child, depth) for child in children(expr))


def _sole_value(model: Model, name: cst.Name) -> cst.BaseExpression | None:
    """The value bound by the one binding that reaches ``name``, if only one does."""
    binding = model.sole_binding(name)
    return binding.value if binding is not None else None


def deciding_code(model: Model, choice: DeviceChoice) -> cst.CSTNode:
    """What to name as the decision: for a move to CUDA made only when a flag of the run says so
    (`if args.cuda: model.cuda()`), the flag; for an availability check that only refuses a flag
    the run was given (`if cuda: if not torch.cuda.is_available(): raise ...`), that flag;
    otherwise the deciding code itself."""
    node = choice.node
    if not isinstance(node, cst.Call):
        return node
    branches = (a for a in model.ancestors(node) if isinstance(a, cst.If))
    if _is_method(model, node, "cuda") and not node.args and _flag_guarded(model, node):
        return next(branches).test
    if model.call_name(node) in devices.AVAILABILITY_CHECKS and _only_warns(model, node):
        next(branches)  # the guard itself
        around = next(branches, None)
        if around is not None and _flag_test(model, around):
            return around.test
    return node


def _run_by_constructor_of_class_of(model: Model, helper: cst.CSTNode, method: cst.CSTNode) -> bool:
    """Whether the `__init__` of the class of ``method`` calls ``helper`` (through helpers)."""
    owner = next((a for a in model.ancestors(method) if isinstance(a, cst.ClassDef)), None)
    init = model.summaries.method(owner, "__init__") if owner is not None else None
    return init is not None and helper in model.summaries.reachable(init)


def _none_at(model: Model, at: cst.CSTNode) -> frozenset[str]:
    """The names (dotted) known to be None where ``at`` runs: tested `is None` by an `if` whose
    body holds it, or `is not None` by one whose `else` (or `elif`) holds it."""
    found = set()
    child = at
    for ancestor in model.ancestors(at):
        if isinstance(ancestor, cst.If) and child in (ancestor.body, ancestor.orelse):
            name = _tested_against_none(ancestor.test, cst.Is if child is ancestor.body else cst.IsNot)
            if name is not None:
                found.add(name)
        child = ancestor
    return frozenset(found)


def _tested_against_none(test: cst.BaseExpression, operator: type) -> str | None:
    """`x is None` (``operator`` Is) or `x is not None` (IsNot): the dotted name of x."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    if type(target.operator) is not operator or not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
        return None
    return dotted(test.left)


def _reads_any(node: cst.CSTNode, names: frozenset[str]) -> bool:
    """Whether ``node`` reads one of the dotted ``names``."""
    if isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) in names:
        return True
    return any(_reads_any(child, names) for child in children(node))


def constructor_of_class_of(model: Model, constructor: cst.CSTNode, method: cst.CSTNode) -> bool:
    """`__init__` decides for the object: `self.accelerator = Accelerator()` governs its methods."""
    if not isinstance(constructor, cst.FunctionDef) or constructor.name.value != "__init__":
        return False
    owner = model.parent(model.parent(constructor))
    return isinstance(owner, cst.ClassDef) and any(ancestor is owner for ancestor in model.ancestors(method))


def _device_conditionals(model: Model):
    """`"cuda" if args.cuda else "cpu"`: a choice between an accelerator and the host."""
    for value in model.values.made(Kind.DEVICE):
        if isinstance(value.node, cst.IfExp) and not value.host_only:
            branches = model.values.of(value.node.body) | model.values.of(value.node.orelse)
            if any(v.host_only for v in branches):
                yield value.node


def _pinned(construction: cst.CSTNode | None) -> bool:
    """`Fabric(accelerator="cpu")`, `Accelerator(cpu=True)`: the framework is told to run on the
    host, whatever the machine has; `Fabric(accelerator="cuda")`: on a GPU, and it fails to start
    without one. Either way the code decides nothing at run time."""
    if not isinstance(construction, cst.Call):
        return False
    for arg in construction.args:
        if (
            arg.keyword is not None
            and arg.keyword.value == frameworks.ACCELERATOR_ARGUMENT
            and isinstance(arg.value, cst.SimpleString)
            and arg.value.evaluated_value != frameworks.UNDECIDED_ACCELERATOR
        ):
            return True
        if arg.keyword is None or arg.keyword.value not in frameworks.HOST_PINNING_ARGUMENTS:
            continue
        wanted = frameworks.HOST_PINNING_ARGUMENTS[arg.keyword.value]
        if isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value == wanted:
            return True
        if isinstance(arg.value, cst.Name) and arg.value.value == str(wanted):
            return True
    return False


def _only_shown(model: Model, call: cst.Call) -> bool:
    """Whether a check's answer is only shown, never acted on: a statement of its own (a
    notebook displays it) or what a report prints (`print(torch.cuda.is_available())`)."""
    parent = model.parent(call)
    if isinstance(parent, cst.Expr):
        return True
    while isinstance(parent, (cst.Arg, cst.FormattedStringExpression, cst.FormattedString)):
        parent = model.parent(parent)
    return isinstance(parent, cst.Call) and parent is not call and is_reporting_call(model, parent)


def _only_warns(model: Model, call: cst.Call) -> bool:
    """Whether a check is the test of an `if` that only reports, seeds or stops the run (`if
    torch.cuda.is_available() and not args.cuda: print("WARNING: ...")`, `if args.cuda and not
    torch.cuda.is_available(): raise ...`): the device is decided elsewhere, by what the script
    acts on, which is the decision worth naming."""
    branch = next((a for a in model.ancestors(call) if isinstance(a, cst.If)), None)
    if branch is None or not (branch.test is call or any(a is branch.test for a in model.ancestors(call))):
        return False
    return _only_bookkeeping(model, branch)


def _only_bookkeeping(model: Model, statement: cst.CSTNode) -> bool:
    """Whether an `if` (with its `else`) runs nothing but reports, seeding calls and what stops
    the run (`raise`, `sys.exit()`): a guard that refuses a setting chooses no device."""
    if isinstance(statement, cst.If):
        return _only_bookkeeping(model, statement.body) and (statement.orelse is None or _only_bookkeeping(model, statement.orelse))
    if isinstance(statement, cst.Else):
        return _only_bookkeeping(model, statement.body)
    if isinstance(statement, cst.IndentedBlock):
        return all(_only_bookkeeping(model, line) for line in statement.body)
    if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return all(
            isinstance(small, cst.Raise)
            or isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and _bookkeeping_call(model, small.value)
            for small in statement.body
        )
    return False


def _bookkeeping_call(model: Model, call: cst.Call) -> bool:
    name = builtin_or_qualified(model, call)
    return (
        is_reporting_call(model, call) or name in tensors.SEEDING_CALLS or name in devices.ACCELERATOR_SEEDING_CALLS
        or name in calls.ABORTING_CALLS
    )


def _given_device(model: Model, move: cst.Call) -> bool:
    """Whether a `.to(...)` moves to the device a parameter of its function holds (`def
    from_pretrained(path, device): ... model.to(device)`), and its callers are not all in the file
    handing it a device written in the code (`device = "cuda"`, then `extract(loader, device)`):
    whoever calls the function decides, at run time, whatever the parameter's default."""
    target = next((arg.value for arg in move.args if arg.keyword is not None and arg.keyword.value == "device"), None)
    if target is None and move.args and move.args[0].keyword is None and not move.args[0].star:
        target = move.args[0].value
    if not isinstance(target, cst.Name) or not devices.DEVICE_NAME.search(target.value):
        return False
    bindings = model.reaching(target)
    if not bindings or not all(binding.how == "param" for binding in bindings):
        return False
    function = model.function_of(move)
    sites = model.summaries.call_sites(function) if isinstance(function, cst.FunctionDef) else None
    if sites is None:
        return True
    passed = [model.summaries.argument(function, call, offset, target.value) for call, offset in sites]
    return any(value is None or not _literal(model, value) for value in passed)


def _picks_device_ids(model: Model, call: cst.Call) -> bool:
    """`DDP(model, device_ids=[local_rank])`: the process's GPU, computed."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device_ids" and isinstance(arg.value, (cst.List, cst.Tuple)):
            return any(not _literal(model, element.value) for element in arg.value.elements)
    return False


def _is_method(model: Model, call: cst.Call, name: str) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == name and (
        model.qualified_name(func) is None or _rebound(model, func.value)
    )


def _rebound(model: Model, receiver: cst.BaseExpression) -> bool:
    """Whether a name that also names an imported module holds, where it is read, a value the
    file assigned (`model = model.RNNModel(...)` after `import model`): its methods are the
    value's, not the module's."""
    if not isinstance(receiver, cst.Name):
        return False
    bindings = model.reaching(receiver)
    return bool(bindings) and all(binding.how in ("assign", "annassign") for binding in bindings)


def _names_an_index(model: Model, expr: cst.BaseExpression, depth: int = 2) -> bool:
    """`f"cuda:{rank}"`, `"cuda:" + str(rank)`: a device string with a computed index, also
    through the one assignment that reaches a name (`gpu = "cuda:" + str(args.gpu)`)."""
    if isinstance(expr, cst.Name) and depth > 0:
        value = _sole_value(model, expr)
        return value is not None and _names_an_index(model, value, depth - 1)
    if isinstance(expr, cst.FormattedString):
        head = expr.parts[0] if expr.parts else None
        return isinstance(head, cst.FormattedStringText) and head.value.endswith(":")
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.left, cst.SimpleString):
        text = expr.left.evaluated_value
        return isinstance(text, str) and text.endswith(":")
    return False


def _device_option(model: Model, expr: cst.BaseExpression) -> bool:
    """A device the command line gives (`args.device` of `--device`, also through the one
    assignment that reaches a name): the run decides it, as `torch.device(args.device)` does. Not
    when the code writes the attribute anywhere (`args.device = torch.device(...)`): the decision
    is that code's, named by its own choice."""
    if isinstance(expr, cst.Name):
        value = _sole_value(model, expr)
        expr = value if isinstance(value, cst.Attribute) else expr
    if constants.evaluator(model).argparse.argument(expr) is None or _attribute_written(model, expr.attr.value):
        return False
    found = model.values.of(expr)
    return bool(found) and all(v.kind is Kind.DEVICE for v in found)


def _attribute_written(model: Model, attr: str) -> bool:
    return any(key.endswith("." + attr) for _, key in model.bindings_table)


def _accelerator_literal(model: Model, expr: cst.BaseExpression) -> bool:
    """A device written in the code that is an accelerator (`"cuda"`, a name every assignment of
    which is `torch.device("cuda")`)."""
    if not _literal(model, expr) or isinstance(expr, cst.Integer):
        return False
    found = model.values.of(expr)
    return bool(found) and all(v.kind is Kind.DEVICE and not v.host_only for v in found)


def _flag_guarded(model: Model, call: cst.Call) -> bool:
    """Whether the innermost `if` around a move to CUDA tests a value of the run (`if args.cuda:`,
    `if self.use_gpu:`) and has no `else:`: the code stays on the host when it is false. A literal
    test decides nothing, and a test of where data already is (`if x.is_cuda:`) follows an
    earlier choice."""
    branch = next((a for a in model.ancestors(call) if isinstance(a, cst.If)), None)
    return branch is not None and _flag_test(model, branch)


def _flag_test(model: Model, branch: cst.If) -> bool:
    """Whether an `if` without `else:` tests a value of the run (see _flag_guarded)."""
    if branch.orelse is not None:
        return False  # with an `else:`, the flag picks between two ways (DataParallel or DDP), not the host
    test = branch.test
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        # `if params.num_gpus > 0:`, `if cfg.mode == "gpu":`: a setting of the run against a constant
        if not isinstance(test.comparisons[0].comparator, (cst.Integer, cst.SimpleString)):
            return False
        test = test.left
        if isinstance(test, cst.Name) and test.value.startswith("__") or model.qualified_name(test) is not None:
            return False  # `__name__ == "__main__"`, `torch.__version__ >= "2"`: not a setting of the run
    if isinstance(test, cst.Name) and test.value in ("True", "False"):
        return False
    return isinstance(test, (cst.Name, cst.Attribute)) and not _literal(model, test) and not (
        isinstance(test, cst.Attribute) and test.attr.value in devices.PLACEMENT_QUERIES
    )


def _conditional(model: Model, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs only on some paths of its function (under a condition, in a `try`)."""
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False
        if isinstance(ancestor, _CONDITIONS):
            return True
    return False


def _literal(model: Model, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """A device written in the code itself: a literal, or a name every assignment of which is
    one. A value from the command line or a parameter is decided at run time, whatever its
    default."""
    if isinstance(expr, (cst.SimpleString, cst.Integer)):
        return True
    if isinstance(expr, cst.FormattedString):  # f"cuda:0", f"cuda:{GPU}" with GPU = 0 written once
        return all(
            isinstance(part, cst.FormattedStringText) or _literal(model, part.expression, depth + 1) for part in expr.parts
        )
    if isinstance(expr, cst.Call) and model.call_name(expr) in devices.DEVICE_FACTORIES:
        return all(_literal(model, arg.value, depth + 1) for arg in expr.args if not arg.star) and not any(
            arg.star for arg in expr.args
        )
    if isinstance(expr, (cst.Name, cst.Attribute)) and depth < _MAX_DEPTH:
        # `self.cuda_index = 0` in the constructor: every assignment of the attribute
        bindings = model.reaching(expr) if isinstance(expr, cst.Name) else model.bindings_of(expr)
        return bool(bindings) and all(
            b.how in ("assign", "annassign") and b.value is not None and _literal(model, b.value, depth + 1)
            for b in bindings
        )
    return False
