"""Placement: where data is. Which device an argument names, where a move puts its receiver,
where a module's parameters are at a call, and whether a function places anything on an
accelerator at all."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices, frameworks
from torchlint.model import constants
from torchlint.model.tree import children
from torchlint.model.values.calling import keyword
from torchlint.model.values.kinds import Kind, Place, Value

if TYPE_CHECKING:
    from torchlint.model import Model
    from torchlint.model.functions import ProjectCall
    from torchlint.model.values.flow import Values


class Placement:
    """Where values' data is, and where moves put it."""

    def __init__(self, values: Values) -> None:
        self.values = values
        self.model = values.model
        self._default_device_changed: bool | None = None
        self._default_device_setters: list[cst.Call] | None = None  # `torch.set_default_device(...)` calls

    def device_place(self, expr: cst.BaseExpression | None) -> Place:
        """Where a device argument (`x.to(expr)`, `device=expr`) puts data: HOST only when every
        value is a host device; a dtype or tensor argument is not a device (UNKNOWN)."""
        if expr is None:
            return Place.UNKNOWN
        found = self.values.of(expr)
        if found and all(v.kind is Kind.DEVICE and v.host_only for v in found):
            return Place.HOST
        if found and all(v.kind is Kind.DTYPE for v in found):
            return Place.UNKNOWN  # a dtype or memory format: not a placement
        if any(v.kind is Kind.TENSOR for v in found):
            places = {v.place for v in found if v.kind is Kind.TENSOR}
            return places.pop() if len(places) == 1 else Place.UNKNOWN
        return Place.DEVICE

    def move_target(self, call: cst.Call) -> Place | None:
        """For a method call `x.to(...)`, `x.cuda()`, `x.cpu()`...: where it places x (HOST, or
        DEVICE when it may be an accelerator); None when the call moves nothing (`.to(dtype)`)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in devices.DEVICE_METHODS:
            return None
        name = func.attr.value
        if name in devices.HOST_METHODS:
            return Place.HOST
        if name not in ("to", "to_empty"):
            return Place.DEVICE
        target = device_argument(call)
        if target is None:
            return None
        if all(v.kind is Kind.DTYPE for v in self.values.of(target)):
            return None
        if keyword(call, "device") is None and _named_a_dtype(self.model, target):
            return None  # `module.to(dtype)`, a dtype the file does not show by its value
        place = self.device_place(target)
        return Place.DEVICE if place is Place.UNKNOWN else place

    def module_place(self, module: Value, at: cst.CSTNode) -> Place:
        """Where a module's parameters are when the code at ``at`` runs.

        Moves in the same function decide by order: the last one before ``at`` (unless a loop
        around ``at`` also moves it later), or none before it: still where it was built, if no
        other function moves it. Moves only in other functions: DEVICE when every one may go to
        an accelerator. UNKNOWN when moves disagree or the order cannot tell."""
        fate = self.values.modules.fate(module)
        if fate.self_placed:
            return Place.UNKNOWN
        model = self.model
        where = model.function_of(at)
        here = model.order(at)
        local = [m for m in fate.moves if model.function_of(m) is where]
        elsewhere = [m for m in fate.moves if model.function_of(m) is not where]
        loops = [a for a in model.ancestors(at) if type(a) in (cst.For, cst.While)]
        later_in_loop = any(
            model.order(m) > here and any(loop in model.ancestors(m) for loop in loops) for m in local
        )
        before = sorted((m for m in local if model.order(m) < here), key=model.order)
        if later_in_loop:
            return Place.UNKNOWN
        if before:
            return self.move_place(before[-1])
        if local or not elsewhere:
            return Place.HOST if not elsewhere else Place.UNKNOWN
        targets = {self.move_place(m) for m in elsewhere}
        return targets.pop() if len(targets) == 1 else Place.UNKNOWN

    def unmoved_by_shared_guard(self, module: Value, at: cst.CSTNode) -> bool:
        """Whether every move of the module sits under one test (`if args.gpu: net = net.cuda()`,
        in whichever function) and ``at`` runs only where that test fails: in the `else:` (or a
        later `elif`) of an `if` on the same test, or under `if not <test>:`. Moves and placements
        share their condition: there the module is still on the host."""
        moves = self.values.modules.fate(module).moves
        if not moves:
            return False
        shared = set.intersection(*({_text(self.model, test) for test in self.model.guards(m)} for m in moves))
        if not shared:
            return False
        child: cst.CSTNode = at
        for ancestor in self.model.ancestors(at):
            if isinstance(ancestor, cst.If):
                test = ancestor.test
                if child is not ancestor.body and _text(self.model, test) in shared:
                    return True
                negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
                if child is ancestor.body and negated and _text(self.model, test.expression) in shared:
                    return True
            child = ancestor
        return False

    def move_place(self, move: cst.Call) -> Place:
        """Where a move in ModuleFate.moves puts the module (a construction with `device=`, a
        `.to()`, or a call of a helper that moves it)."""
        if move is not None and isinstance(move.func, cst.Attribute) and move.func.attr.value in devices.DEVICE_METHODS:
            return self.move_target(move) or Place.DEVICE
        name = self.model.call_name(move) if isinstance(move, cst.Call) else None
        if name in devices.DEVICE_FACTORIES:
            return self.device_place(move)  # `with torch.device("cuda"):` around the construction
        if name in devices.DEFAULT_DEVICE_CALLS:
            return self.device_place(move.args[0].value) if move.args else Place.UNKNOWN
        device = (keyword(move, "device") or keyword(move, "torch_device")) if isinstance(move, cst.Call) else None
        return self.device_place(device) if device is not None else Place.DEVICE

    def context_placement(self, built: cst.CSTNode) -> cst.Call | None:
        """The call that places what is built at ``built`` without a move: an enclosing
        `with torch.device(...):`, or `torch.set_default_device(...)` run before it (earlier in
        the same function, or anywhere else: a script sets it once before building)."""
        model = self.model
        for ancestor in model.ancestors(built):
            if type(ancestor) is cst.With:
                for item in ancestor.items:
                    if type(item.item) is cst.Call and model.call_name(item.item) in devices.DEVICE_FACTORIES:
                        return item.item
        if self._default_device_setters is None:
            # one pass per file: every module built asks, and scripts nearly never set it
            self._default_device_setters = model.calls_named("torch.set_default_device")
        if not self._default_device_setters:
            return None
        where, here = model.function_of(built), model.order(built)
        for call in self._default_device_setters:
            if model.function_of(call) is not where or model.order(call) < here:
                return call
        return None

    def placement_in(self, scopes: Iterable[cst.CSTNode], uses: Iterable[cst.CSTNode] = ()) -> cst.Call | None:
        """A call that places data on a device that may be an accelerator, directly in one of
        ``scopes`` (functions, or the module for top-level code): a tensor or module moved there,
        a factory given `device=` such a device, or `torch.cuda.set_device`. None if there is none.
        A device that is only computed is not a placement. Given the ``uses`` of a value, a
        placement that runs only after the last of them cannot have placed data for it, and is
        not counted (see `_last_use_statements`)."""
        model = self.model
        wanted = set(scopes)
        last_use = _last_use_statements(model, uses)
        for call in model.calls:
            scope = model.function_of(call)
            if scope not in wanted:
                continue
            if scope in last_use and model.order(_statement_in(model, call, scope)) > last_use[scope]:
                continue  # a later cell or line, once the value's last use has run
            name = model.call_name(call)
            if name in devices.PLACEMENT_CALLS or (name in frameworks.BATCH_PLACING_RUNNERS and _flags_cuda(call)):
                return call
            if self.move_target(call) is Place.DEVICE and not self.follows_a_tensor(device_argument(call)):
                return call
            device = keyword(call, "device")
            if device is not None and self.device_place(device) is Place.DEVICE and not self.follows_a_tensor(device):
                if any(v.kind is Kind.DEVICE for v in self.values.of(device)):
                    return call
        return None

    def places_through(self, project_call: ProjectCall) -> bool:
        """Whether a call of a function of another module places data on a device that may be
        an accelerator: one the function names itself, or the one the call passes it (or, left
        out, its parameter's default)."""
        summary = project_call.summary
        if summary.places_itself:
            return True
        if any(arg.star for arg in project_call.call.args):
            return False  # which parameter an argument binds is hidden
        for parameter in summary.places_on:
            argument = project_call.argument(parameter)
            if argument is None:
                default = summary.device_default(parameter)
                if default is not None and default != "cpu":
                    return True
            elif self.device_place(argument) is Place.DEVICE:
                return True
        return False

    def may_carry_device_data(self, expr: cst.BaseExpression, depth: int = 3) -> bool:
        """Whether an expression may hold data placed on a device that may be an accelerator: a
        tensor or batch known to be there, a move to it written in the expression, or a name
        whose reaching binding is made so (followed ``depth`` assignments back: `x = x.to(d)`,
        then `feats = encode(x)`, then `head(feats)`)."""
        if any(v.kind in (Kind.TENSOR, Kind.BATCH) and v.place is Place.DEVICE for v in self.values.of(expr)):
            return True
        model = self.model
        stack: list[cst.CSTNode] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call) and self._places_on_device(node):
                return True
            if isinstance(node, cst.Name) and depth > 0:
                for binding in model.reaching(node):
                    source = binding.source
                    if source is not None and source is not expr and self.may_carry_device_data(source, depth - 1):
                        return True
            if isinstance(node, cst.Attribute):
                stack.append(node.value)  # `x.shape`: read x, not a name `shape`
            elif isinstance(node, cst.Arg):
                stack.append(node.value)
            elif not isinstance(node, (cst.Lambda, cst.FunctionDef)):
                stack.extend(children(node))
        return False

    def _places_on_device(self, call: cst.Call) -> bool:
        if self.move_target(call) is Place.DEVICE:
            return not self.follows_a_tensor(device_argument(call))  # `.to(next(net.parameters()).device)`
        device = keyword(call, "device")
        return device is not None and self.device_place(device) is Place.DEVICE and not self.follows_a_tensor(device)

    def follows_a_tensor(self, device: cst.BaseExpression | None) -> bool:
        """`device=x.device`: wherever x is, which says nothing about an accelerator."""
        found = self.values.of(device) if device is not None else frozenset()
        return bool(found) and all(v.api == "device attribute" for v in found)

    def factory_place(self, call: cst.Call) -> Place:
        device = keyword(call, "device")
        if device is not None:
            return self.device_place(device)
        if any(arg.star == "**" for arg in call.args):
            return Place.UNKNOWN  # `torch.rand(n, **tkwargs)`: the unpacked keywords may name a device
        if self._default_device_changed is None:
            self._default_device_changed = bool(self.model.calls_named(devices.DEFAULT_DEVICE_CALLS)) or any(
                _in_with(self.model, c) for c in self.model.calls_named(methods="device")
            )
        return Place.UNKNOWN if self._default_device_changed else Place.HOST

    def device_text(self, expr: cst.BaseExpression) -> Value | None:
        if isinstance(expr, cst.SimpleString):
            text = constants.literal(expr.value)
            if isinstance(text, str) and devices.DEVICE_STRING.match(text):
                name = text.split(":", 1)[0]
                if name in devices.NON_PLACEMENT_DEVICES:
                    return None
                return self.values.make(Kind.DEVICE, expr, host_only=name in devices.HOST_DEVICES)
            return None
        if isinstance(expr, cst.FormattedString) and expr.parts and isinstance(expr.parts[0], cst.FormattedStringText):
            head = expr.parts[0].value
            name = head.split(":", 1)[0]
            if ":" in head and devices.DEVICE_STRING.match(name) and name not in devices.NON_PLACEMENT_DEVICES:
                return self.values.make(Kind.DEVICE, expr, host_only=name in devices.HOST_DEVICES)
        return None


def _named_a_dtype(model: Model, expr: cst.BaseExpression) -> bool:
    from torchlint.model.conversions import argument_role  # conversions reads values

    return argument_role(model, expr) is Kind.DTYPE


def device_argument(call: cst.Call) -> cst.BaseExpression | None:
    device = keyword(call, "device")
    if device is not None:
        return device
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[0].value if positional else None


def is_device_method_call(call: cst.Call) -> bool:
    func = call.func
    return type(func) is cst.Attribute and func.attr.value in devices.DEVICE_METHODS and func.attr.value != "to" or (
        type(func) is cst.Attribute and func.attr.value == "to" and device_argument(call) is not None
    )


def receives_move(model: Model, read: cst.BaseExpression) -> bool:
    """Whether a read is the receiver of a device method (`model.to(...)`, `model.cuda()`)."""
    parent = model.parent(read)
    # by exact type: a failing isinstance against a LibCST class (an ABC) costs a Python call
    return type(parent) is cst.Attribute and parent.value is read and parent.attr.value in devices.DEVICE_METHODS


def mentions_placement(expr: cst.BaseExpression) -> bool:
    """Whether an expression itself contains a device move or a `device=` keyword."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call:
            if is_device_method_call(node):
                return True
            if any(a.keyword is not None and a.keyword.value in devices.PLACEMENT_KEYWORDS for a in node.args):
                return True
        if type(node) in (cst.Lambda, cst.FunctionDef):
            continue
        stack.extend(children(node))
    return False


def _in_with(model: Model, call: cst.Call) -> bool:
    parent = model.parent(call)
    return isinstance(parent, cst.WithItem)


def _flags_cuda(call: cst.Call) -> bool:
    """`create_supervised_trainer(..., cuda=flag)`: batches go to CUDA unless the flag is False."""
    flag = keyword(call, frameworks.CUDA_FLAG_KEYWORD)
    return flag is not None and not (isinstance(flag, cst.Name) and flag.value in ("False", "None"))


def places_within(model: Model, node: cst.CSTNode) -> bool:
    """Whether code inside ``node`` places anything on a device."""
    for call in model.summaries.calls_within(node):
        if is_device_method_call(call) or any(
            arg.keyword is not None and arg.keyword.value in devices.PLACEMENT_KEYWORDS for arg in call.args
        ):
            return True
    return False


def _last_use_statements(model: Model, uses: Iterable[cst.CSTNode]) -> dict[cst.CSTNode, int]:
    """For a scope that holds every one of ``uses`` in its own code (not in a nested function,
    which may run later), the source order of the last statement of its body that holds one.
    A statement of that body runs once per run of the scope, in order: one after that statement
    runs after every use (a loop around a use and a later line is one statement of the body)."""
    scopes = {model.function_of(use) for use in uses}
    if len(scopes) != 1:
        return {}
    (scope,) = scopes
    return {scope: max(model.order(_statement_in(model, use, scope)) for use in uses)}


def _statement_in(model: Model, node: cst.CSTNode, scope: cst.CSTNode) -> cst.CSTNode:
    """The statement of ``scope``'s own body (the module's, or the function's) that holds ``node``."""
    body = scope.body if isinstance(scope, cst.Module) else getattr(scope.body, "body", ())
    held = set(body)
    for ancestor in (node, *model.ancestors(node)):
        if ancestor in held:
            return ancestor
    return node


def _text(model: Model, expr: cst.CSTNode) -> str:
    return " ".join(model.module.code_for_node(expr).split())
