"""The training step: where modules run forward, and where gradients are computed, applied and
cleared.

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
- `module_calls(node)`: the forward passes ``node`` runs, and `trains_in(...)`: whether a step
  among some calls may update a given module.

Which mode a module is in when it runs is model/modes.py's; whether that mode matters,
model/mode_dependence.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import modules, optimizers, training
from torchlint.model import constants
from torchlint.model.names import dotted
from torchlint.model.testing import is_test_class
from torchlint.model.values import Kind, Value, inspects_only
from torchlint.project.summary import ClassRef

if TYPE_CHECKING:
    from torchlint.model import Model

_LOOPS = frozenset({cst.For, cst.While})
_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
# How many callers deep a question about a function is followed up (its callers, theirs...).
CALL_DEPTH = 4


@dataclass(frozen=True)
class Backward:
    call: cst.Call = field(repr=False)
    loss: cst.BaseExpression | None = field(repr=False)  # what backward runs on, scaling unwrapped


@dataclass(frozen=True)
class Step:
    call: cst.Call = field(repr=False)
    optimizer: cst.BaseExpression = field(repr=False)  # the optimizer expression
    optimizers: frozenset[Value]  # its values (all OPTIMIZER)


class Training:
    def __init__(self, model: Model) -> None:
        self.model = model
        self._backwards: list[Backward] | None = None
        self._steps: list[Step] | None = None
        self._places: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        self._calls_run: dict[cst.CSTNode, frozenset[cst.Call]] = {}
        self._families: dict[Value, frozenset[Value]] = {}

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
                if type(arg.value) is cst.Name:
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
        if not isinstance(function, cst.FunctionDef) or depth >= CALL_DEPTH:
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
        name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
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
            if type(ancestor) is cst.With:
                for item in ancestor.items:
                    call = item.item
                    if (
                        isinstance(call, cst.Call)
                        and isinstance(call.func, cst.Attribute)
                        and call.func.attr.value in training.ACCUMULATION_CONTEXT_METHODS
                    ):
                        return True
        return False

    # ===================================================================== which module a step trains
    def trains_in(self, calls_: list[cst.Call], module: Value) -> bool:
        """Whether any of these calls takes a training step of ``module`` (or runs a helper that
        does): a backward or an optimizer step, unless every step they take updates tensors
        that are not the module's (see may_train)."""
        run = {inner for call in calls_ for inner in self.runs(call)}
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
        family = self.family(module)
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

    def runs(self, call: cst.Call) -> Iterator[cst.Call]:
        """The call itself and every call the same-file functions it runs make."""
        yield call
        for target, _ in self.model.summaries.targets(call):
            yield from self.calls_in(target)

    def family(self, module: Value) -> frozenset[Value]:
        """The module and the wrappers around it or inside it (`DDP(model)`, `model.module`): one
        set of parameters, and a mode set on one is the mode of the others; kept per module (every
        call of the file asks)."""
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

    # ===================================================================== forward passes
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
    return func.value if type(func) is cst.Attribute and func.attr.value in training.FORWARD_METHODS else func


def _on_grad(func: cst.Attribute) -> bool:
    """Whether a method is called on a `.grad` (`p.grad.zero_()`, `p.grad.data.div_(n)`)."""
    node = func.value
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(node, cst.Attribute) and node.attr.value == training.GRAD_ATTRIBUTE:
            return True
        node = node.func if isinstance(node, cst.Call) else node.value
    return False


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
        answer = known.get(child)
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
        known[child] = found
    return found


@constants.per_model
def _loops_around(model: Model) -> dict[cst.CSTNode, tuple[cst.For | cst.While, ...]]:
    """node -> enclosing_loops(model, node), filled as the walks pass."""
    return {}


def within(model: Model, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    """Whether ``node`` is ``container`` or inside it."""
    return node is container or any(ancestor is container for ancestor in model.ancestors(node))
