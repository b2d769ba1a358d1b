"""Module modes: whether a module is in training or evaluation mode where the code runs it.

- `mode_at(module, node)`: the mode a module is known to be in when ``node`` runs, from its
  `train()`/`eval()` calls in execution order, through helpers (their mode on exit), loop
  back-edges (the previous iteration) and callers;
- `between(at)`, `evaluates_in(calls)`: what runs between a mode's setting and the point, and
  whether that is an evaluation pass;
- `evaluation_passes()`: the module calls in loops that compute no gradients and take no step;
- `parameter_exit_modes(function, params)`: the mode a helper leaves its module arguments in (for
  the project summaries).

Whether a module's mode matters at all (dropout, batch norm) is model/mode_dependence.py's.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import modules, training
from torchlint.model.tree import ancestors_within
from torchlint.model.training import CALL_DEPTH, enclosing_loops, within
from torchlint.model.values import Kind, Value, inspects_only

if TYPE_CHECKING:
    from torchlint.model import Model


class Mode(enum.Enum):
    TRAIN = "train"
    EVAL = "eval"
    UNKNOWN = "unknown"  # something may have set either


@dataclass(frozen=True)
class ModeAt:
    """A module's mode at a point: ``event`` is the call that set it (a `train()`/`eval()` call,
    or a helper call that leaves the module so); ``anchor`` the node the mode was asked for in
    the event's function (the point itself, or the call that leads to it); ``repeated`` when the
    event comes from later in an enclosing ``loop``, i.e. from the previous iteration. A mode
    that differs between the callers of the function holding the point is UNKNOWN, with each
    caller's mode in ``callers`` (a test() that calls eval() before the pass, a fit() that
    trains and then runs it)."""

    mode: Mode | None  # None: no call sets the mode before this point
    event: cst.Call | None = field(default=None, repr=False)
    anchor: cst.CSTNode | None = field(default=None, repr=False)
    loop: cst.CSTNode | None = field(default=None, repr=False)
    callers: tuple[ModeAt, ...] = field(default=(), repr=False)

    @property
    def repeated(self) -> bool:
        return self.loop is not None

    def by_caller(self) -> Iterator[ModeAt]:
        """The modes the callers bring, down to the callers that agree on one."""
        if not self.callers:
            yield self
        for caller in self.callers:
            yield from caller.by_caller()


class Modes:
    def __init__(self, model: Model) -> None:
        self.model = model
        self.training = model.training
        self._events: dict[tuple[Value, cst.CSTNode], list[tuple[cst.Call, Mode]]] = {}
        self._exit_modes: dict[tuple[cst.FunctionDef, Value], Mode | None] = {}

    def mode_at(self, module: Value, node: cst.CSTNode, depth: int = 0) -> ModeAt:
        """The mode ``module`` is in when ``node`` runs, as far as the file shows."""
        model = self.model
        function = model.function_of(node)
        events = self._mode_events(module, function)
        here = model.order(node)
        loops = enclosing_loops(model, node)
        for loop in loops:
            inside = [event for event in events if within(model, event[0], loop)]
            before = [event for event in inside if model.order(event[0]) < here]
            if before:
                return ModeAt(before[-1][1], before[-1][0], node)
            after = [event for event in inside if model.order(event[0]) > here]
            if after:
                return ModeAt(after[-1][1], after[-1][0], node, loop)
        # an event in the other branch of an `if` that no loop around the node repeats never ran
        outside = [event for event in events if model.order(event[0]) < here and not any(
            within(model, event[0], loop) for loop in loops) and not model.in_other_branches(event[0], node)]
        if outside:
            return ModeAt(outside[-1][1], outside[-1][0], node)
        if not isinstance(function, cst.FunctionDef) or depth >= CALL_DEPTH:
            return self._left_where_built(module)
        built = module.node
        if isinstance(built, cst.Call) and model.order(built) <= here and within(model, built, function):
            return ModeAt(None)  # built here, and nothing set its mode since
        sites = model.summaries.call_sites(function)
        if not sites:
            return ModeAt(Mode.UNKNOWN) if sites is None else self._left_where_built(module)
        found = {self.mode_at(module, call, depth + 1) for call, _ in sites}
        if len({at.mode for at in found}) == 1:
            return min(found, key=lambda at: model.order(at.event) if at.event is not None else -1)
        callers = sorted(found, key=lambda at: model.order(at.anchor) if at.anchor is not None else -1)
        return ModeAt(Mode.UNKNOWN, callers=tuple(callers))

    def _left_where_built(self, module: Value) -> ModeAt:
        """The mode of a module no event on the way to a node set: unknown when the function
        that built it elsewhere may switch it out of training mode afterwards (`self.net = Net()`
        then `self.net.eval()` in `__init__`, and the pass in another method), as that function
        ran first; else the mode it was built in."""
        model = self.model
        built = module.node
        function = model.function_of(built) if isinstance(built, cst.Call) else None
        if isinstance(function, cst.FunctionDef) and any(
            mode is not Mode.TRAIN and model.order(call) > model.order(built)
            for call, mode in self._mode_events(module, function)
        ):
            return ModeAt(Mode.UNKNOWN)
        return ModeAt(None)

    def between(self, at: ModeAt) -> list[cst.Call]:
        """The calls that run after ``at.event`` and before ``at.anchor``, in the event's
        function: in source order between them or, for a mode from the previous iteration, the
        rest of the loop around. The event itself is included (a helper runs after it sets)."""
        model = self.model
        if at.event is None or at.anchor is None:
            return []
        start, end = model.order(at.event), model.order(at.anchor)
        function = model.function_of(at.event)
        found = []
        for call in model.summaries.calls_within(at.loop if at.loop is not None else function):
            if model.function_of(call) is not function:
                continue
            order = model.order(call)
            if (order >= end or order < start) if at.loop is not None else (start <= order < end):
                found.append(call)
        return found

    def evaluates_in(self, calls_: list[cst.Call]) -> bool:
        """Whether any of these calls runs a module under `no_grad`, or in a loop that neither
        computes gradients nor steps (old code evaluates with `volatile=True` inputs), or a helper
        that does."""
        return any(
            (self.training.called_modules(inner) is not None and (self.training.no_grad(inner) or self._in_pass(inner)))
            or self._evaluates_given(inner)
            for call in calls_
            for inner in self.training.runs(call)
        )

    def _evaluates_given(self, call: cst.Call) -> bool:
        """Whether ``call`` runs a function of another project module that switches a module it
        is given to evaluation mode, leaves it so, and runs it: an evaluation pass (`eval_net(net,
        loader)`), by its summary."""
        return any(
            parameter in project_call.summary.drives and mode == Mode.EVAL.value
            for project_call in self.model.summaries.imported(call)
            for parameter, mode in project_call.summary.exit_modes
        )

    def _in_pass(self, call: cst.Call) -> bool:
        loops = enclosing_loops(self.model, call)
        return bool(loops) and not self.training.computes_gradients(loops[0]) and not self.training.steps_in(loops[0])

    def _mode_events(self, module: Value, function: cst.CSTNode) -> list[tuple[cst.Call, Mode]]:
        """Calls directly in ``function`` that set the module's mode (or may), in source order;
        kept per module and function (mode_at asks for every node it is asked about)."""
        known = self._events.get((module, function))
        if known is not None:
            return known
        model = self.model
        found = []
        for call in model.summaries.calls_within(function):
            if model.function_of(call) is not function:
                continue
            mode = self._event(module, call)
            if mode is not None:
                found.append((call, mode))
        found.sort(key=lambda event: model.order(event[0]))
        self._events[(module, function)] = found
        return found

    def _event(self, module: Value, call: cst.Call, depth: int = 0) -> Mode | None:
        """How ``call`` leaves the module's mode: TRAIN, EVAL, UNKNOWN (it may change it), or
        None (it does not touch it)."""
        model = self.model
        values = model.values
        family = self.training.family(module)
        func = call.func
        if type(func) is cst.Attribute:
            receiver = values.of(func.value)
            name = func.attr.value
            if name == training.APPLY_METHOD and receiver & family:
                return self._applied_mode(call)
            if name in (training.TRAIN_METHOD, training.EVAL_METHOD) and (receiver & family or _unknown(receiver)):
                if _unknown(receiver) and not receiver & family:
                    return Mode.UNKNOWN
                return _mode_of_call(call)
            if name in (training.TRAIN_METHOD, training.EVAL_METHOD) and any(self._contains(held, family) for held in receiver):
                return _mode_of_call(call)  # a container sets the mode of every layer it holds
            if receiver & family and name not in modules.INERT_METHODS and name not in modules.SELF_RETURNING_METHODS:
                if not model.summaries.targets(call):
                    return Mode.UNKNOWN  # a method the file does not show
        targets = model.summaries.targets(call)
        if targets:
            modes = {self._exit_mode(module, target, depth) for target, _ in targets}
            modes.discard(None)
            if not modes:
                return None
            return modes.pop() if len(modes) == 1 else Mode.UNKNOWN
        if values.all_of(func, Kind.MODULE) is not None or inspects_only(model, call):
            return None
        name = model.call_name(call)
        if name is not None and name.startswith("torch."):
            return None
        left = self._project_exit_mode(family, call)
        if left is not None:
            return left
        if any(values.of(arg.value) & family for arg in call.args):
            return Mode.UNKNOWN  # handed to code the file does not show
        return None

    def _project_exit_mode(self, family: frozenset[Value], call: cst.Call) -> Mode | None:
        """The mode a function of another project module leaves the module in when ``call`` gives
        it to it (`evaluate(net, loader)` ending with `net.eval()` unconditionally), by its summary."""
        for project_call in self.model.summaries.imported(call):
            for parameter, mode in project_call.summary.exit_modes:
                argument = project_call.argument(parameter)
                if argument is not None and self.model.values.of(argument) & family:
                    return Mode(mode)
        return None

    def parameter_exit_modes(self, function: cst.FunctionDef, params: tuple[str, ...]) -> Iterator[tuple[str, str]]:
        """(parameter, mode) for each parameter of ``function`` whose last `train()`/`eval()`
        call (`net.eval()`, `net.train(False)`) is in the function's own code and runs on every
        path: the mode the function leaves its caller's module in."""
        model = self.model
        last: dict[str, cst.Call] = {}
        for call in model.summaries.calls_within(function):
            func = call.func
            if model.function_of(call) is not function or type(func) is not cst.Attribute or type(func.value) is not cst.Name:
                continue
            name = func.value.value
            if func.attr.value not in (training.TRAIN_METHOD, training.EVAL_METHOD) or name not in params:
                continue
            if not all(b.how == "param" for b in model.bindings_of(func.value)):
                continue
            if name not in last or model.order(call) > model.order(last[name]):
                last[name] = call
        for name, call in sorted(last.items()):
            mode = _mode_of_call(call)
            if mode is not Mode.UNKNOWN and not _conditional(model, call, function):
                yield name, mode.value

    def _applied_mode(self, call: cst.Call) -> Mode | None:
        """How `module.apply(fn)` leaves the module: `nn.Module.eval` / `nn.Module.train` (or a
        lambda that calls one) set that mode; a same-file function that calls `train()`/`eval()`
        (on batch norm layers only, say) may set either; a function the file does not show may."""
        model = self.model
        if not call.args or call.args[0].keyword is not None:
            return None
        fn = call.args[0].value
        unbound = training.UNBOUND_MODE_METHODS.get(model.qualified_name(fn) or "")
        if unbound is not None:
            return Mode.EVAL if unbound == training.EVAL_METHOD else Mode.TRAIN
        if isinstance(fn, cst.Lambda):
            body = fn.body
            if isinstance(body, cst.Call) and isinstance(body.func, cst.Attribute) and body.func.attr.value in (
                training.TRAIN_METHOD,
                training.EVAL_METHOD,
            ):
                return _mode_of_call(body)
            return None
        if isinstance(fn, cst.Name):
            defined = [b.statement for b in model.bindings_of(fn) if b.how == "def"]
            if defined:
                return Mode.UNKNOWN if any(self.calls_mode_method(f) for f in defined) else None
        return Mode.UNKNOWN

    def calls_mode_method(self, function: cst.CSTNode) -> bool:
        """Whether ``function`` (or what it runs) calls `train()`/`eval()` on anything."""
        return any(
            isinstance(call.func, cst.Attribute) and call.func.attr.value in (training.TRAIN_METHOD, training.EVAL_METHOD)
            for call in self.training.calls_in(function)
        )

    def _exit_mode(self, module: Value, function: cst.FunctionDef, depth: int) -> Mode | None:
        """The mode a same-file function leaves the module in: its last mode-setting call, when
        that call always runs (not under a condition or a loop of the function)."""
        key = (function, module)
        if key in self._exit_modes:
            return self._exit_modes[key]
        self._exit_modes[key] = None  # recursion guard
        if depth >= CALL_DEPTH:
            return None
        model = self.model
        events = []
        for call in model.summaries.calls_within(function):
            if model.function_of(call) is function:
                mode = self._event(module, call, depth + 1)
                if mode is not None:
                    events.append((call, mode))
        result: Mode | None = None
        if events:
            last, mode = max(events, key=lambda event: model.order(event[0]))
            result = Mode.UNKNOWN if _conditional(model, last, function) else mode
        self._exit_modes[key] = result
        return result

    def _contains(self, container: Value, family: frozenset[Value]) -> bool:
        """Whether a torch container (`nn.Sequential(normalize, backbone)`) was built holding the
        module: its `train()`/`eval()` reaches the module too."""
        call = container.node
        return (
            container.kind is Kind.MODULE
            and container.api in modules.CONTAINERS
            and isinstance(call, cst.Call)
            and any(not arg.star and self.model.values.of(arg.value) & family for arg in call.args)
        )

    def evaluation_passes(self) -> list[tuple[cst.For | cst.While, cst.Call, frozenset[Value]]]:
        """(loop, module call, modules) for each module call in a loop that computes no gradients
        and takes no training step, under `no_grad` or over a loader's batches: an evaluation
        pass over data."""
        found = []
        for call in self.model.calls:
            loops = enclosing_loops(self.model, call)  # first: most calls are in no loop
            if not loops:
                continue
            modules_ = self.training.called_modules(call)
            if modules_ is None:
                continue
            if not self.training.computes_gradients(loops[0]) and not self.training.steps_in(loops[0]) and not _runs_once(loops[0]):
                if self.training.no_grad(call) or self.over_batches(loops[0]):
                    found.append((loops[0], call, modules_))
        return found

    def over_batches(self, loop: cst.For | cst.While) -> bool:
        """A `for` over a loader's batches: a pass over data (older code evaluated with
        `volatile=True` inputs instead of `no_grad`)."""
        model = self.model
        return isinstance(loop, cst.For) and any(
            v.kind is Kind.LOADER for source in model.loops.iterated_sources(loop.iter) for v in model.values.of(source)
        )



def event_text(model: Model, call: cst.Call) -> str:
    """A mode-setting call as a message quotes it: `model.train()`, `train_one_epoch(...)`."""
    return model.module.code_for_node(call.func) + ("(...)" if call.args else "()")


def _conditional(model: Model, call: cst.Call, function: cst.FunctionDef) -> bool:
    """Whether some paths through ``function`` skip ``call`` (a condition, loop or try around it)."""
    return any(
        isinstance(ancestor, (cst.If, cst.For, cst.While, cst.Try, cst.IfExp, cst.BooleanOperation))
        for ancestor in ancestors_within(model, call, function)
    )


def _mode_of_call(call: cst.Call) -> Mode:
    """`m.train()` / `m.train(True)` -> TRAIN; `m.eval()` / `m.train(False)` -> EVAL; a flag the
    file does not spell -> UNKNOWN."""
    if call.func.attr.value == training.EVAL_METHOD:
        return Mode.EVAL
    if not call.args:
        return Mode.TRAIN
    flag = call.args[0].value
    if isinstance(flag, cst.Name) and flag.value in ("True", "False"):
        return Mode.TRAIN if flag.value == "True" else Mode.EVAL
    return Mode.UNKNOWN


def _unknown(found: frozenset[Value]) -> bool:
    return not found or any(v.kind is Kind.UNKNOWN for v in found)


def _runs_once(loop: cst.For | cst.While) -> bool:
    """Whether the loop's body ends in an unconditional `break`: it runs once, a peek at the first
    batch (its shapes, a sample), not a pass over the data."""
    body = loop.body.body
    last = body[-1] if body else None
    # exact types: a failing isinstance against a LibCST class (an ABC) costs a Python call
    if type(last) is cst.SimpleStatementLine:
        return any(type(small) is cst.Break for small in last.body)
    return type(last) is cst.Break  # `for x in loader: print(x); break` on one line
