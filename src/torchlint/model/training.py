"""The training step: where gradients are computed, applied and cleared, and which mode a module
is in when the code runs.

- `backwards()`: every call that runs backward, with the loss it runs on (`loss.backward()`,
  `scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `torch.autograd.backward(loss)`);
- `steps()`: every step of a torch.optim optimizer (`opt.step()`, `scaler.step(opt)`), also of
  an optimizer the file does not show the making of, known by how the loop uses it;
- `training_loops(node)`: the loops that repeat a step: the innermost loop around ``node`` that
  also computes gradients, or, when its function has none, the loops around that function's
  calls;
- `places(node)`: the code a loop or function runs: itself, the same-file functions it calls
  (transitively) and those it hands over by name (an LBFGS closure);
- `clears(...)`, `rescales_gradients(...)`: gradient resets (`zero_grad`, `p.grad = None`,
  `p.grad.zero_()`) and rescaling;
- `no_grad(node)`: whether ``node`` runs with autograd off;
- `mode_at(module, node)`: whether a module is known to be in training or evaluation mode when
  ``node`` runs, from its `train()`/`eval()` calls in execution order, through helpers (their
  mode on exit), loop back-edges (the previous iteration) and callers;
- `mode_dependent(module)`: whether the module holds dropout or batch norm.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import modules, optimizers, training
from torchlint.model import constants
from torchlint.model.added_layers import layers
from torchlint.model.names import dotted
from torchlint.model.tree import ancestors_within
from torchlint.model.testing import is_test_class
from torchlint.model.values import Kind, Value, inspects_only
from torchlint.model.walks import Walk
from torchlint.project.summary import ClassRef

if TYPE_CHECKING:
    from torchlint.model import Model

_LOOPS = frozenset({cst.For, cst.While})
_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_MAX_DEPTH = 4


@dataclass(frozen=True)
class Backward:
    call: cst.Call = field(repr=False)
    loss: cst.BaseExpression | None = field(repr=False)  # what backward runs on, scaling unwrapped


@dataclass(frozen=True)
class Step:
    call: cst.Call = field(repr=False)
    optimizer: cst.BaseExpression = field(repr=False)  # the optimizer expression
    optimizers: frozenset[Value]  # its values (all OPTIMIZER)


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


class Training:
    def __init__(self, model: Model) -> None:
        self.model = model
        self._backwards: list[Backward] | None = None
        self._steps: list[Step] | None = None
        self._places: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        self._calls_run: dict[cst.CSTNode, frozenset[cst.Call]] = {}
        self._families: dict[Value, frozenset[Value]] = {}
        self._events: dict[tuple[Value, cst.CSTNode], list[tuple[cst.Call, Mode]]] = {}
        self._exit_modes: dict[tuple[cst.FunctionDef, int], Mode | None] = {}
        # not mode-dependent, for modules and classes built in terms of themselves
        self._dependent = Walk(self._find_dependent, False, key=id)
        self._dependent_classes = Walk(self._find_class_dependent, False)
        self._built_training = Walk(self._find_built_training, False, key=id)
        self._classes_built_training = Walk(self._find_class_built_training, False)

    # ===================================================================== gradient steps
    def backwards(self) -> list[Backward]:
        if self._backwards is None:
            candidates = self.model.calls_named(
                training.BACKWARD_FUNCTIONS, methods=(*training.BACKWARD_TAKING_METHODS, training.BACKWARD_METHOD)
            )
            self._backwards = [found for call in candidates if (found := self._backward(call)) is not None]
        return self._backwards

    def _backward(self, call: cst.Call) -> Backward | None:
        func = call.func
        if self.model.call_name(call) in training.BACKWARD_FUNCTIONS:
            return Backward(call, call.args[0].value if call.args else None)
        if not isinstance(func, cst.Attribute):
            return None
        name = func.attr.value
        takes_loss = call.args and call.args[0].keyword is None and not call.args[0].star
        if (
            name in training.BACKWARD_TAKING_METHODS
            and takes_loss
            and not any(v.kind is Kind.TENSOR for v in self.model.values.of(func.value))
        ):
            return Backward(call, call.args[0].value)  # accelerator.backward(loss)
        if name == training.BACKWARD_METHOD:
            return Backward(call, self.unscaled(func.value))
        return None

    def unscaled(self, loss: cst.BaseExpression) -> cst.BaseExpression:
        """`scaler.scale(loss)` -> `loss`."""
        while (
            isinstance(loss, cst.Call)
            and isinstance(loss.func, cst.Attribute)
            and loss.func.attr.value in training.LOSS_SCALING_METHODS
            and loss.args
            and loss.args[0].keyword is None
        ):
            loss = loss.args[0].value
        return loss

    def steps(self) -> list[Step]:
        if self._steps is None:
            candidates = self.model.calls_named(methods=training.STEP_METHOD)
            known = [found for call in candidates if (found := self._step(call)) is not None]
            self._steps = known + [found for call in candidates if (found := self._handed_in_step(call)) is not None]
        return self._steps

    def _handed_in_step(self, call: cst.Call) -> Step | None:
        """`optimizer.step()` on a receiver of unknown kind (a parameter of a `train(model,
        loader, optimizer)` helper, a trainer's `self.optimizer`) that is the only step call of
        a loop running backward (or of a per-batch helper, see _step_scope): every loop that
        trains steps an optimizer, so this is the one.
        Another step call in the loop (a scheduler, `scaler.step(opt)`, `env.step(a)`) leaves
        the optimizer unsaid; a receiver that also runs backward or is called is an engine
        (DeepSpeed's clears in its own step). Only in a file that imports torch: elsewhere the
        object is no torch optimizer (and the prefilter, which looks for torch's name, stays sound)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value != training.STEP_METHOD or call.args:
            return None
        if not self.model.imports_torch or not isinstance(self.model.parent(call), cst.Expr):
            return None
        receiver = func.value
        if not isinstance(receiver, (cst.Name, cst.Attribute)) or not all(
            v.kind is Kind.UNKNOWN for v in self.model.values.of(receiver)
        ):
            return None
        if self._shown_to_be_no_optimizer(receiver):
            return None
        loop = self._step_scope(call)
        if loop is None:
            return None
        text = self.model.module.code_for_node(receiver)
        for other in self.calls_in(loop):
            other_func = other.func
            if other_func is not func and isinstance(other_func, cst.Attribute) and other_func.attr.value == training.STEP_METHOD:
                if not self._lr_scheduler(other_func.value):
                    return None
            callee = other_func.value if isinstance(other_func, cst.Attribute) and other_func.attr.value in training.BACKWARD_TAKING_METHODS else other_func
            if callee is not func and self.model.module.code_for_node(callee) == text:
                return None
        handed_in = self.model.values.make(Kind.OPTIMIZER, self.model.function_of(call), tag="handed in")
        return Step(call, receiver, frozenset({handed_in}))

    def _lr_scheduler(self, receiver: cst.BaseExpression) -> bool:
        """Whether every binding of a step call's receiver builds a torch learning-rate scheduler
        (`scheduler = LambdaLR(optim, ...)`): its step() moves the learning rate, not the
        weights, so it leaves the optimizer of the loop said."""
        bindings = self.model.reaching(receiver) if isinstance(receiver, cst.Name) else self.model.bindings_of(receiver)
        return bool(bindings) and all(
            isinstance(b.source, cst.Call) and not b.path and (self.model.call_name(b.source) or "").startswith(optimizers.LR_SCHEDULER_MODULE)
            for b in bindings
        )

    def _shown_to_be_no_optimizer(self, receiver: cst.BaseExpression) -> bool:
        """Whether the file shows what a local receiver is, and it is no optimizer: every binding
        that reaches it makes an instance of a project class that derives from no outside class
        and has no `zero_grad` of its own (`pruner = tp.pruner.MagnitudePruner(model, ...)`, whose
        step() prunes), or takes a part out of another object (`imp = pruner.importance`, a
        pruner's gradient statistics): not an optimizer handed in to train with."""
        if not isinstance(receiver, cst.Name):
            return False
        sources = [binding.source for binding in self.model.reaching(receiver)]
        return bool(sources) and all(self._makes_no_optimizer(source) for source in sources)

    def _makes_no_optimizer(self, source: cst.BaseExpression | None) -> bool:
        if isinstance(source, cst.Attribute):
            return not (isinstance(source.value, cst.Name) and source.value.value == "self")
        project = self.model.project
        if not isinstance(source, cst.Call) or project is None:
            return False
        found = project.lookup(source.func)
        return (
            isinstance(found, ClassRef)
            and training.CLEARING_NAME not in found.klass.methods
            and not project.library_bases(found)
        )

    def _step_scope(self, call: cst.Call) -> cst.CSTNode | None:
        """Where a step of an optimizer the file does not show is one training step: the innermost
        loop around it that runs backward or, for a step with no loop around it, its function when
        that runs backward (a per-batch helper the training loop calls)."""
        loops = enclosing_loops(self.model, call)
        if loops:
            return next((loop for loop in loops if self.computes_gradients(loop)), None)
        function = self.model.function_of(call)
        return function if isinstance(function, cst.FunctionDef) and self.computes_gradients(function) else None

    def _step(self, call: cst.Call) -> Step | None:
        func = call.func
        if type(func) is not cst.Attribute or func.attr.value != training.STEP_METHOD:
            return None
        values = self.model.values
        receiver = values.all_of(func.value, Kind.OPTIMIZER)
        if receiver is not None:
            return Step(call, func.value, receiver)
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        if positional:
            given = values.all_of(positional[0].value, Kind.OPTIMIZER)
            if given is not None:
                return Step(call, positional[0].value, given)  # scaler.step(optimizer)
            if self._grad_scaler(func.value):
                # an optimizer a method of the model built (`model.configure_optimizers(...)`)
                handed_in = values.make(Kind.OPTIMIZER, self.model.function_of(call), tag="handed in")
                return Step(call, positional[0].value, frozenset({handed_in}))
        return None

    def _grad_scaler(self, receiver: cst.BaseExpression) -> bool:
        """Whether every binding of the receiver is a mixed-precision loss scaler's construction."""
        bindings = self.model.bindings_of(receiver) if isinstance(receiver, (cst.Name, cst.Attribute)) else []
        return bool(bindings) and all(
            isinstance(b.source, cst.Call) and not b.path and self.model.call_name(b.source) in training.GRAD_SCALERS
            for b in bindings
        )

    # ===================================================================== where steps repeat
    def places(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """``node`` and the same-file functions it runs: those it calls, transitively, and those
        it passes by name (`optimizer.step(closure)`)."""
        if node not in self._places:
            summaries = self.model.summaries
            found: list[cst.CSTNode] = [node]
            seen = {node}
            index = 0
            while index < len(found):
                current = found[index]
                index += 1
                for function in (*summaries.reachable(current), *self._handed_functions(current)):
                    if function not in seen:
                        seen.add(function)
                        found.append(function)
            self._places[node] = found
        return self._places[node]

    def _handed_functions(self, node: cst.CSTNode) -> Iterator[cst.FunctionDef]:
        for call in self.model.summaries.calls_within(node):
            for arg in call.args:
                if isinstance(arg.value, cst.Name):
                    for binding in self.model.bindings_of(arg.value):
                        if binding.how == "def":
                            yield binding.statement

    def calls_in(self, node: cst.CSTNode) -> Iterator[cst.Call]:
        """Every call ``node`` runs (see places)."""
        summaries = self.model.summaries
        for place in self.places(node):
            yield from summaries.calls_within(place)

    def _call_set(self, node: cst.CSTNode) -> frozenset[cst.Call]:
        """calls_in as a set, kept per node: loops are asked about once per call inside them."""
        found = self._calls_run.get(node)
        if found is None:
            found = self._calls_run[node] = frozenset(self.calls_in(node))
        return found

    def computes_gradients(self, node: cst.CSTNode) -> bool:
        calls_ = self._call_set(node)
        return any(backward.call in calls_ for backward in self.backwards())

    def training_loops(self, node: cst.CSTNode, depth: int = 0) -> list[tuple[cst.For | cst.While, cst.CSTNode]] | None:
        """The loops that repeat ``node`` (a step), each with its anchor: the node inside the loop
        that runs it (``node`` itself, or the call of the helper that does). The innermost loop
        around it that also computes gradients; when its function has none, the loops around
        its function's calls. None when those calls are not all in view."""
        model = self.model
        for loop in enclosing_loops(model, node):
            if self.computes_gradients(loop):
                return [(loop, node)]
        function = model.function_of(node)
        if not isinstance(function, cst.FunctionDef) or depth >= _MAX_DEPTH:
            return []
        sites = model.summaries.call_sites(function)
        if sites is None:
            return None
        found = []
        for call, _ in sites:
            around = self.training_loops(call, depth + 1)
            if around is None:
                return None
            found.extend(around)
        return found

    # ===================================================================== clearing
    def clears(self, node: cst.CSTNode, optimizers: frozenset[Value]) -> list[cst.CSTNode]:
        """The calls and statements in ``node`` (and what it runs) that may reset the gradients
        ``optimizers`` apply: all resets but another known optimizer's `zero_grad()`, which
        clears only its own parameters (a GAN's discriminator optimizer cleared does not clear
        the generator's)."""
        found: list[cst.CSTNode] = [
            call for call in self.calls_in(node) if self._clears(call) and not self._clears_other(call, optimizers)
        ]
        found.extend(self._grad_writes(self.places(node)))
        return found

    def _clears_other(self, call: cst.Call, optimizers: frozenset[Value]) -> bool:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        cleared = self.model.values.all_of(func.value, Kind.OPTIMIZER)
        return cleared is not None and not cleared & optimizers

    def _clears(self, call: cst.Call) -> bool:
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if training.CLEARING_NAME in name:
            return True
        return name in training.GRAD_RESETTING_METHODS and _on_grad(func)

    def _grad_writes(self, places: list[cst.CSTNode]) -> Iterator[cst.CSTNode]:
        """Assignments to a `.grad` (`p.grad = None`, `p.grad /= n`) inside ``places``; also a
        `zero_grad` handed over uncalled (`callback=optimizer.zero_grad`)."""
        model = self.model
        for (_, key), bindings in model.bindings_table.items():
            if key.rsplit(".", 1)[-1] != training.GRAD_ATTRIBUTE or "." not in key:
                continue
            for binding in bindings:
                if self._inside(binding.statement, places):
                    yield binding.statement
        for key, reads in model.reads_table.items():
            if key.rsplit(".", 1)[-1] == training.CLEARING_NAME:
                for read in reads:
                    if not isinstance(model.parent(read), cst.Call) and self._inside(read, places):
                        yield read

    def rescales_gradients(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` divides or multiplies gradients in place, or writes them."""
        for call in self.calls_in(node):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in training.GRAD_SCALING_METHODS and _on_grad(func):
                return True
        return any(
            isinstance(found, (cst.Assign, cst.AugAssign, cst.AnnAssign)) for found in self._grad_writes(self.places(node))
        )

    def sums_gradients(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` adds up gradients across processes by hand (`dist.all_reduce(p.grad,
        op=dist.ReduceOp.SUM)`, SUM being the default): the script's update is a sum over
        processes by design, and its learning rate is tuned for sums."""
        for call in self.calls_in(node):
            reduction = training.GRAD_REDUCTIONS.get(self.model.call_name(call) or "")
            if reduction is None or not call.args or call.args[0].keyword is not None:
                continue
            tensor = call.args[0].value
            if not (isinstance(tensor, cst.Attribute) and tensor.attr.value == training.GRAD_ATTRIBUTE):
                continue
            keyword_name, position = reduction
            positional = [arg for arg in call.args if arg.keyword is None]
            op = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == keyword_name), None)
            op = op if op is not None else positional[position].value if len(positional) > position else None
            if op is None or (dotted(op) or "").endswith(".SUM"):
                return True
        return False

    def hands_over(self, node: cst.CSTNode, optimizers: frozenset[Value]) -> bool:
        """Whether code in ``node`` gives one of ``optimizers`` to a function the file does not
        show (which may clear or step it)."""
        model = self.model
        values = model.values
        for call in self.calls_in(node):
            if self._step(call) is not None or model.summaries.targets(call) or inspects_only(model, call):
                continue
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in training.OPTIMIZER_READING_METHODS:
                continue
            if any(values.of(arg.value) & optimizers for arg in call.args):
                return True
        return False

    def _inside(self, node: cst.CSTNode, places: list[cst.CSTNode]) -> bool:
        wanted = set(places)
        return node in wanted or any(ancestor in wanted for ancestor in self.model.ancestors(node))

    def in_test(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is inside a test function (`def test_...`) or a test class (`class
        TestX`), whose loops run a few steps to check behaviour rather than train. A `test_...`
        method of a class that is no test class (a trainer's `test_epoch`) is no test: a test
        runner collects only functions and the methods of test classes."""
        model = self.model
        for ancestor in model.ancestors(node):
            kind = type(ancestor)
            if kind is cst.FunctionDef and ancestor.name.value.startswith(training.TEST_FUNCTION_PREFIX):
                owner = model.scope(ancestor)
                if not isinstance(owner, cst.ClassDef) or is_test_class(model, owner):
                    return True
            elif kind is cst.ClassDef and ancestor.name.value.startswith(training.TEST_CLASS_PREFIX):
                return True
        return False

    def built_in(self, optimizers: frozenset[Value], loop: cst.CSTNode) -> bool:
        """Whether an optimizer is built anew in each iteration of ``loop`` (over tensors that may
        be new each time too)."""
        return any(value.node is not None and within(self.model, value.node, loop) for value in optimizers)

    # ===================================================================== autograd off
    def no_grad(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` runs under `torch.no_grad()`/`inference_mode()` (a `with` around it,
        or a decorator of a function around it)."""
        model = self.model
        for ancestor in model.ancestors(node):
            if type(ancestor) is cst.With and any(self._disables_grad(item.item) for item in ancestor.items):
                return True
            if type(ancestor) is cst.FunctionDef and any(
                self._disables_grad(decorator.decorator) for decorator in ancestor.decorators
            ):
                return True
        return False

    def _disables_grad(self, expr: cst.BaseExpression) -> bool:
        target = expr.func if isinstance(expr, cst.Call) else expr
        name = self.model.qualified_name(target)
        if name in training.NO_GRAD:
            return True
        if name in training.GRAD_SWITCH and isinstance(expr, cst.Call) and expr.args:
            value = expr.args[0].value
            return isinstance(value, cst.Name) and value.value == "False"
        return False

    def accumulating_context(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` runs inside `with accelerator.accumulate(model):`, where the framework
        owns accumulation."""
        for ancestor in self.model.ancestors(node):
            if isinstance(ancestor, cst.With):
                for item in ancestor.items:
                    call = item.item
                    if (
                        isinstance(call, cst.Call)
                        and isinstance(call.func, cst.Attribute)
                        and call.func.attr.value in training.ACCUMULATION_CONTEXT_METHODS
                    ):
                        return True
        return False

    # ===================================================================== modes
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
        if not isinstance(function, cst.FunctionDef) or depth >= _MAX_DEPTH:
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

    def trains_in(self, calls_: list[cst.Call], module: Value) -> bool:
        """Whether any of these calls takes a training step of ``module`` (or runs a helper that
        does): a backward or an optimizer step, unless every step they take updates tensors
        that are not the module's (see may_train)."""
        run = {inner for call in calls_ for inner in self._runs(call)}
        steps = [step for step in self.steps() if step.call in run]
        if steps and not any(self.may_train(step, module) for step in steps):
            return False
        return bool(steps) or any(backward.call in run for backward in self.backwards())

    def trains_module(self, loop: cst.CSTNode, module: Value) -> bool:
        """Whether the steps ``loop`` runs may update ``module``."""
        run = self._call_set(loop)
        return any(self.may_train(step, module) for step in self.steps() if step.call in run)

    def may_train(self, step: Step, module: Value) -> bool:
        """Whether a step may update the module's parameters: not when every optimizer it steps
        was built over a list of tensors of which none is the module's (`SGD([patch])`: an
        input optimised against a frozen model, an adversarial patch, an image in style
        transfer)."""
        return not all(self._built_over_other_tensors(optimizer, module) for optimizer in step.optimizers)

    def _built_over_other_tensors(self, optimizer: Value, module: Value) -> bool:
        call = optimizer.node
        if not isinstance(call, cst.Call) or not call.args:
            return False
        params = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "params"), None)
        if params is None and call.args[0].keyword is None and not call.args[0].star:
            params = call.args[0].value
        if not isinstance(params, (cst.List, cst.Tuple)) or not params.elements:
            return False
        family = self._family(module)
        return all(
            not isinstance(element, cst.StarredElement) and self._other_tensor(element.value, family)
            for element in params.elements
        )

    def _other_tensor(self, expr: cst.BaseExpression, family: frozenset[Value]) -> bool:
        """A name or attribute chain, computed by no call here, that is neither the module nor
        reached through it (nor through `self`, which may be the module)."""
        root = expr
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        if not isinstance(root, cst.Name) or root.value == "self":
            return False
        values = self.model.values
        return not any(v.kind is Kind.MODULE or v in family for v in (*values.of(root), *values.of(expr)))

    def evaluates_in(self, calls_: list[cst.Call]) -> bool:
        """Whether any of these calls runs a module under `no_grad`, or in a loop that neither
        computes gradients nor steps (old code evaluates with `volatile=True` inputs), or a helper
        that does."""
        return any(
            (self.called_modules(inner) is not None and (self.no_grad(inner) or self._in_pass(inner)))
            or self._evaluates_given(inner)
            for call in calls_
            for inner in self._runs(call)
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
        return bool(loops) and not self.computes_gradients(loops[0]) and not self.steps_in(loops[0])

    def _runs(self, call: cst.Call) -> Iterator[cst.Call]:
        """The call itself and every call the same-file functions it runs make."""
        yield call
        for target, _ in self.model.summaries.targets(call):
            yield from self.calls_in(target)

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
        family = self._family(module)
        func = call.func
        if isinstance(func, cst.Attribute):
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
                return Mode.UNKNOWN if any(self._calls_mode_method(f) for f in defined) else None
        return Mode.UNKNOWN

    def _calls_mode_method(self, function: cst.CSTNode) -> bool:
        return any(
            isinstance(call.func, cst.Attribute) and call.func.attr.value in (training.TRAIN_METHOD, training.EVAL_METHOD)
            for call in self.calls_in(function)
        )

    def _exit_mode(self, module: Value, function: cst.FunctionDef, depth: int) -> Mode | None:
        """The mode a same-file function leaves the module in: its last mode-setting call, when
        that call always runs (not under a condition or a loop of the function)."""
        key = (function, id(module))
        if key in self._exit_modes:
            return self._exit_modes[key]
        self._exit_modes[key] = None  # recursion guard
        if depth >= _MAX_DEPTH:
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

    def _family(self, module: Value) -> frozenset[Value]:
        """The module and the wrappers around it or inside it (`DDP(model)`, `model.module`): a
        mode set on one is the mode of the others; kept per module (every call of the file asks)."""
        known = self._families.get(module)
        if known is not None:
            return known
        found = {module}
        values = self.model.values
        if module.api in modules.WRAPPERS and isinstance(module.node, cst.Call) and module.node.args:
            found |= values.of(module.node.args[0].value)
        for wrapper in values.made(Kind.MODULE):
            if wrapper.api in modules.WRAPPERS and wrapper.node.args and module in values.of(wrapper.node.args[0].value):
                found.add(wrapper)
        self._families[module] = frozenset(found)
        return self._families[module]

    # ===================================================================== mode-dependent layers
    def mode_dependent(self, module: Value) -> bool:
        """Whether the module holds dropout or batch norm (or a layer built on them): torch.nn
        layers, containers of them, same-file classes that build them or read `self.training`,
        and models from a zoo."""
        return self._dependent(module)

    def _find_dependent(self, module: Value) -> bool:
        if module.facts is not None:  # a module whose class the file does not show
            return module.facts.mode_dependent or any(self.mode_dependent(held) for held in self._held_modules(module))
        api = module.api or ""
        values = self.model.values
        call = module.node if isinstance(module.node, cst.Call) else None
        if api.startswith(modules.NN) and api.count(".") == 2:
            last = api.rsplit(".", 1)[1]
            if last in training.MODE_DEPENDENT_LAYERS:
                return call is None or not self._inert_dropout(call, last)
            if last in training.CONTAINERS and call is not None:
                return any(self._expression_dependent(layer) for layer in layers(self.model, module))
            return False
        if api in modules.WRAPPERS and call is not None and call.args:
            return any(self.mode_dependent(v) for v in values.of(call.args[0].value) if v.kind is Kind.MODULE)
        if api in self.model.classes:
            built = self._classes_built(module)
            return all(self.class_dependent(classdef) for classdef in built) or any(
                self.mode_dependent(held) for held in self._held_modules(module)
            )
        if api == "model zoo" or api in modules.ZOO_FUNCTIONS or api.startswith(modules.ZOO_NAMESPACES):
            return True
        return api.startswith(modules.PRETRAINED_LIBRARIES)

    def _expression_dependent(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(self._expression_dependent(element.value) for element in expr.elements)
        return any(v.kind is Kind.MODULE and self.mode_dependent(v) for v in self.model.values.of(expr))

    def class_dependent(self, classdef: cst.ClassDef) -> bool:
        return self._dependent_classes(classdef)

    def _find_class_dependent(self, classdef: cst.ClassDef) -> bool:
        model = self.model
        found = False
        for base in classdef.bases:
            name = model.qualified_name(base.value)
            if name is not None and name.startswith(modules.NN) and name.rsplit(".", 1)[1] in training.MODE_DEPENDENT_LAYERS:
                found = True
            elif isinstance(base.value, cst.Name) and base.value.value in model.classes:
                found |= self.class_dependent(model.classes[base.value.value])
        if not found:
            found = any(self._builds_dependent(call) for call in model.summaries.calls_within(classdef))
        if not found:
            found = any(
                within(model, read, classdef) for read in model.reads_table.get(f"self.{training.TRAINING_FLAG}", ())
            )
        return found

    def _builds_dependent(self, call: cst.Call) -> bool:
        model = self.model
        name = model.call_name(call)
        if name is not None and name.startswith(modules.NN) and name.count(".") == 2:
            last = name.rsplit(".", 1)[1]
            return last in training.MODE_DEPENDENT_LAYERS and not self._inert_dropout(call, last)
        if name is not None and (name in modules.ZOO_FUNCTIONS or name.startswith(modules.ZOO_NAMESPACES)):
            return True
        if isinstance(call.func, cst.Name) and call.func.value in model.classes:
            return self.class_dependent(model.classes[call.func.value])
        # a module another module of the project builds, by its summary
        built = model.values.project_returns(call)
        return built is not None and built.kind == Kind.MODULE.value and built.mode_dependent

    def _inert_dropout(self, call: cst.Call, layer: str) -> bool:
        """A dropout layer built with p = 0 (a literal, a constant, or a parameter every caller
        and the default leave at 0): it drops nothing in either mode."""
        if layer not in training.DROPOUT_LAYERS:
            return False
        rate = next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == training.DROPOUT_RATE), None)
        if rate is None and call.args and call.args[0].keyword is None and not call.args[0].star:
            rate = call.args[0].value
        return rate is not None and constants.value(self.model, rate) == 0

    # ===================================================================== new modules
    def built_training(self, module: Value) -> bool:
        """Whether the module is in training mode when it is built, as every new torch.nn.Module
        is: a torch.nn layer, a model of torchvision's or timm's, a class of the file (or of
        another module of the project, by its summary) whose constructor sets no mode, or a
        wrapper of such a module. Not a model loaded whole (`torch.load`), from a hub or by
        `from_pretrained`, which come in the mode they were saved or set in."""
        return self._built_training(module)

    def _find_built_training(self, module: Value) -> bool:
        if module.facts is not None:
            return module.facts.built_training and all(
                self.built_training(held) and self.mode_at(held, module.node).mode is None
                for held in self._held_modules(module)
            )
        api = module.api or ""
        call = module.node if isinstance(module.node, cst.Call) else None
        if api in modules.WRAPPERS:
            inner = self.model.values.of(call.args[0].value) if call is not None and call.args else frozenset()
            return bool(inner) and all(v.kind is Kind.MODULE and self.built_training(v) for v in inner)
        if api in self.model.classes:
            return all(self.class_built_training(classdef) for classdef in self._classes_built(module))
        if api.startswith(modules.NN) and api.count(".") == 2:
            return True
        return api == "model zoo" or api in training.TRAINING_MODE_BUILDERS or api.startswith(modules.ZOO_NAMESPACES)

    def _classes_built(self, module: Value) -> list[cst.ClassDef]:
        """The classes of the file an instance may be of: those the name called at its
        construction refers to there (a notebook may define a class twice under one name, the
        second time with dropout), else the last class of that name."""
        call = module.node
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name):
            found = [b.statement for b in self.model.reaching(call.func) if b.how == "class"]
            if found:
                return found
        return [self.model.classes[module.api]]

    def _held_modules(self, module: Value) -> Iterator[Value]:
        """The modules a class is given at construction and keeps as its own
        (`self.encoder = encoder`): their layers are its layers."""
        call = module.node
        if isinstance(call, cst.Call):
            for argument in self.model.summaries.stored_arguments(call):
                yield from (v for v in self.model.values.of(argument) if v.kind is Kind.MODULE)

    def class_built_training(self, classdef: cst.ClassDef) -> bool:
        return self._classes_built_training(classdef)

    def _find_class_built_training(self, classdef: cst.ClassDef) -> bool:
        """Its bases are torch's module classes or such classes of the file, and its constructor
        (and what that runs) calls no `train()`/`eval()`."""
        model = self.model
        for base in classdef.bases:
            name = model.qualified_name(base.value)
            if name is not None and (name in modules.MODULE_BASES or name.startswith(modules.NN)):
                continue
            if not (isinstance(base.value, cst.Name) and base.value.value in model.classes):
                return False
            if not self.class_built_training(model.classes[base.value.value]):
                return False
        init = model.summaries.method(classdef, "__init__")
        return init is None or not self._calls_mode_method(init)

    # ===================================================================== passes
    def module_calls(self, node: cst.CSTNode) -> Iterator[tuple[cst.Call, frozenset[Value]]]:
        """Calls of a module (`model(x)`, `model.generate(...)`, `model.forward(x)`) that ``node``
        runs (see places), with the module values."""
        for call in self.calls_in(node):
            found = self.called_modules(call)
            if found is not None:
                yield call, found

    def called_modules(self, call: cst.Call) -> frozenset[Value] | None:
        """The modules a call runs (see module_callee), when it runs nothing else. An attribute
        that starts as None and holds the module once it is built (`self.net = None` in the
        constructor) is the module wherever it is called."""
        found = self.model.values.all_of(module_callee(call), Kind.MODULE, Kind.NONE)
        modules_ = frozenset(value for value in found if value.kind is Kind.MODULE) if found is not None else None
        return modules_ or None

    def evaluation_passes(self) -> list[tuple[cst.For | cst.While, cst.Call, frozenset[Value]]]:
        """(loop, module call, modules) for each module call in a loop that computes no gradients
        and takes no training step, under `no_grad` or over a loader's batches: an evaluation
        pass over data."""
        found = []
        for call in self.model.calls:
            loops = enclosing_loops(self.model, call)  # first: most calls are in no loop
            if not loops:
                continue
            modules_ = self.called_modules(call)
            if modules_ is None:
                continue
            if not self.computes_gradients(loops[0]) and not self.steps_in(loops[0]) and not _runs_once(loops[0]):
                if self.no_grad(call) or self.over_batches(loops[0]):
                    found.append((loops[0], call, modules_))
        return found

    def over_batches(self, loop: cst.For | cst.While) -> bool:
        """A `for` over a loader's batches: a pass over data (older code evaluated with
        `volatile=True` inputs instead of `no_grad`)."""
        model = self.model
        return isinstance(loop, cst.For) and any(
            v.kind is Kind.LOADER for source in model.loops.iterated_sources(loop.iter) for v in model.values.of(source)
        )

    def step_loops(self) -> list[cst.For | cst.While]:
        """The loops that repeat an optimizer step (see training_loops)."""
        found: dict[cst.CSTNode, None] = {}
        for step in self.steps():
            for loop, _ in self.training_loops(step.call) or ():
                found[loop] = None
        return list(found)

    def steps_in(self, node: cst.CSTNode) -> bool:
        calls_ = self._call_set(node)
        return any(step.call in calls_ for step in self.steps())


def module_callee(call: cst.Call) -> cst.BaseExpression:
    """The module a call runs: `model` in `model(x)` and `model.generate(x)`."""
    func = call.func
    return func.value if isinstance(func, cst.Attribute) and func.attr.value in training.FORWARD_METHODS else func


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


def _on_grad(func: cst.Attribute) -> bool:
    """Whether a method is called on a `.grad` (`p.grad.zero_()`, `p.grad.data.div_(n)`)."""
    node = func.value
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(node, cst.Attribute) and node.attr.value == training.GRAD_ATTRIBUTE:
            return True
        node = node.func if isinstance(node, cst.Call) else node.value
    return False


def _runs_once(loop: cst.For | cst.While) -> bool:
    """Whether the loop's body ends in an unconditional `break`: it runs once, a peek at the first
    batch (its shapes, a sample), not a pass over the data."""
    body = loop.body.body
    last = body[-1] if body else None
    # exact types: a failing isinstance against a LibCST class (an ABC) costs a Python call
    if type(last) is cst.SimpleStatementLine:
        return any(type(small) is cst.Break for small in last.body)
    return type(last) is cst.Break  # `for x in loader: print(x); break` on one line


def enclosing_loops(model: Model, node: cst.CSTNode) -> tuple[cst.For | cst.While, ...]:
    """The loops around ``node`` in its own function, innermost first (a loop whose header holds
    ``node`` does not repeat it)."""
    # The loops around a node are those around its parent, and its parent when the node is that
    # loop's body; each node passed on the way up keeps its answer, which ends later walks from
    # the nodes around it (the calls of one statement, the statements of one block).
    known = _loops_around(model)
    passed: list[tuple[cst.CSTNode, cst.CSTNode | None]] = []  # (node, the loop whose body it is)
    found: tuple[cst.For | cst.While, ...] = ()
    child = node
    while True:
        answer = known.get(id(child))
        if answer is not None:
            found = answer
            break
        parent = model.parent(child)
        kind = type(parent)  # exact types: LibCST's concrete node classes have no subclasses
        if parent is None or kind in _SCOPES:
            break
        passed.append((child, parent if kind in _LOOPS and child is parent.body else None))
        child = parent
    for child, loop in reversed(passed):
        if loop is not None:
            found = (loop, *found)
        known[id(child)] = found
    return found


@constants.per_model
def _loops_around(model: Model) -> dict[int, tuple[cst.For | cst.While, ...]]:
    """id(node) -> enclosing_loops(model, node), filled as the walks pass."""
    return {}


def within(model: Model, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    """Whether ``node`` is ``container`` or inside it."""
    return node is container or any(ancestor is container for ancestor in model.ancestors(node))
