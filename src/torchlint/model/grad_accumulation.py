"""Gradient accumulation: a training loop whose optimizer steps only every N iterations
(`if (i + 1) % N == 0:`) while backward() runs every iteration, so that N iterations' gradients
add up in `.grad` before each step; or one whose iteration runs an inner loop of N micro-steps
(`for micro_step in range(N):`), each drawing a new batch and running backward, and steps once
after it.

The update is then the sum of N gradients unless the loss is scaled on its way to backward
(`loss / N`, `loss * (1 / N)`, `loss /= N`, a same-file helper that returns it divided), the
gradients are rescaled before the step (`p.grad.div_(N)`), or the loss is a `reduction="sum"`
loss, whose magnitude is chosen on purpose. A loop that also adds the gradients up across
processes by hand (`dist.all_reduce(p.grad)`, SUM, not averaged) makes its update a sum by design. `with accelerator.accumulate(model):` owns all of it.
The loop accumulates only when nothing clears the gradients outside the step's condition.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model import constants
from torchlint.model.names import dotted
from torchlint.model.training import Backward, Step, enclosing_loops, module_callee, within
from torchlint.model.values import Kind, inspects_only
from torchlint.model.values.calling import builtin_or_qualified

if TYPE_CHECKING:
    from torchlint.model import Model

_MAX_DEPTH = 4
_SCALING = (cst.Divide, cst.Multiply, cst.FloorDivide)
_SCALING_METHODS = frozenset({"div", "div_", "mul", "mul_", "divide", "multiply", "true_divide", "__truediv__", "__mul__"})
_SCALING_FUNCTIONS = frozenset({"torch.div", "torch.mul", "torch.divide", "torch.multiply", "torch.true_divide"})


@dataclass(frozen=True)
class UnscaledBackward:
    backward: Backward
    step: Step
    every: cst.BaseExpression = field(repr=False)  # N in `(i + 1) % N == 0` or `range(N)`
    micro_steps: bool = False  # accumulation by an inner loop of N micro-steps


def unscaled_backwards(model: Model) -> Iterator[UnscaledBackward]:
    training = model.training
    reported: set[cst.Call] = set()
    for step in training.steps():
        if training.in_test(step.call):
            continue
        for loop, anchor in training.training_loops(step.call) or []:
            if training.accumulating_context(anchor):
                continue
            guard = _modulo_guard(model, anchor, loop)
            if guard is None:
                for backward, every in _micro_step_backwards(model, loop, anchor, step):
                    if backward.call not in reported:
                        reported.add(backward.call)
                        yield UnscaledBackward(backward, step, every, micro_steps=True)
                continue
            condition, every = guard
            if constants.value(model, every) == 1:
                continue  # every caller steps each iteration: nothing accumulates
            if _accumulates(model, loop, condition, step) and not _count_used(model, loop, condition.test, every):
                for backward in _unguarded_backwards(model, loop, condition) or ():
                    if backward.call not in reported and not _scaled(model, backward.loss, 0):
                        reported.add(backward.call)
                        yield UnscaledBackward(backward, step, every)


def _modulo_guard(model: Model, anchor: cst.CSTNode, loop: cst.CSTNode) -> tuple[cst.If, cst.BaseExpression] | None:
    """The `if` between ``anchor`` and ``loop`` whose test compares `x % N` (also through a flag
    bound to such a comparison: `is_step = (i + 1) % N == 0`), and N."""
    for ancestor in model.ancestors(anchor):
        if ancestor is loop:
            return None
        if type(ancestor) is cst.If:
            every = _modulus(model, ancestor.test, 0)
            if every is not None:
                return ancestor, every
    return None


def _modulus(model: Model, test: cst.BaseExpression, depth: int) -> cst.BaseExpression | None:
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Comparison):
            for side in (node.left, *(target.comparator for target in node.comparisons)):
                if isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Modulo):
                    return side.right
        if isinstance(node, cst.Name) and depth < 2:
            for binding in model.reaching(node):
                if binding.how in ("assign", "annassign") and binding.source is not None and not binding.path:
                    found = _modulus(model, binding.source, depth + 1)
                    if found is not None:
                        return found
        if isinstance(node, (cst.BooleanOperation, cst.UnaryOperation, cst.Comparison)):
            stack.extend(node.children)
    return None


def _unguarded_backwards(model: Model, loop: cst.CSTNode, condition: cst.If) -> list[Backward] | None:
    """The backward calls the loop runs outside the step's condition; None when some backward
    runs under it (it is not accumulation, e.g. a GAN's generator every n-th step) or in a
    helper, where the file does not say which."""
    training = model.training
    run = set(training.calls_in(loop))
    found = []
    for backward in training.backwards():
        if backward.call not in run:
            continue
        if not within(model, backward.call, loop) or within(model, backward.call, condition):
            return None
        found.append(backward)
    return found


def _accumulates(model: Model, loop: cst.CSTNode, condition: cst.If, step: Step) -> bool:
    """Whether gradients survive from one iteration to the next: every gradient reset of the
    loop is under the step's condition (resets of other optimizers aside), and gradients are
    not rescaled by hand."""
    training = model.training
    if any(not within(model, clear, condition) for clear in training.clears(loop, step.optimizers)):
        return False
    return not training.rescales_gradients(loop) and not training.sums_gradients(loop)


def _count_used(model: Model, loop: cst.CSTNode, test: cst.CSTNode, every: cst.BaseExpression) -> bool:
    """Whether N is handed to a call in the loop (outside the test that counts with it): the
    code that computes the loss may divide by it (`compute_loss(model, batch, accum)`). A
    literal N cannot be told from other numbers and is not looked for."""
    key = dotted(every)
    if key is None:
        return False
    for read in model.reads_table.get(key, ()):
        if within(model, read, loop) and not within(model, read, test) and _passed(model, read):
            return True
    return False


def _micro_step_backwards(
    model: Model, loop: cst.CSTNode, anchor: cst.CSTNode, step: Step
) -> Iterator[tuple[Backward, cst.BaseExpression]]:
    """The unscaled backward calls of an inner `for _ in range(N):` loop of ``loop`` that runs
    every backward of the iteration, steps and clears nothing, and draws a new batch each time
    round (so it is not N losses of one batch, e.g. one per task); the step (``anchor``) runs
    after it."""
    training = model.training
    run = set(training.calls_in(loop))
    backwards = [backward for backward in training.backwards() if backward.call in run]
    inner = {_inner_loop(model, backward.call, loop) for backward in backwards}
    if len(inner) != 1:
        return  # a backward outside an inner loop, or in a helper, or in two loops
    micro = inner.pop()
    every = _range_count(model, micro) if micro is not None else None
    if every is None or within(model, anchor, micro) or constants.value(model, every) == 1:
        return
    if training.steps_in(micro) or training.clears(micro, step.optimizers) or training.rescales_gradients(loop):
        return
    if training.sums_gradients(loop):
        return  # summed over processes too: the update is a sum by design
    if not _draws_new_batches(model, micro) or _count_used(model, micro, micro.iter, every):
        return
    for backward in backwards:
        if not _scaled(model, backward.loss, 0):
            yield backward, every


def _inner_loop(model: Model, call: cst.Call, loop: cst.CSTNode) -> cst.For | None:
    """The `for` directly inside ``loop`` (no loop between them) whose body runs ``call``."""
    loops = enclosing_loops(model, call)
    if len(loops) >= 2 and loops[1] is loop and isinstance(loops[0], cst.For):
        return loops[0]
    return None


def _range_count(model: Model, loop: cst.For) -> cst.BaseExpression | None:
    """N in `for _ in range(N)` (or `range(0, N)`)."""
    call = loop.iter
    if not isinstance(call, cst.Call) or builtin_or_qualified(model, call) != "range":
        return None
    args = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    if len(args) == 1 and len(call.args) == 1:
        return args[0]
    if len(args) == 2 and len(call.args) == 2 and constants.value(model, args[0]) == 0:
        return args[1]
    return None


def _draws_new_batches(model: Model, micro: cst.For) -> bool:
    """Whether a call of something that may be a module (`torch.compile` leaves the model's kind
    open) in the loop reads a name the loop body binds anew (`x, y = get_batch()`, `x =
    chunks[k]`): each micro-step sees other data."""
    for call in model.summaries.calls_within(micro):
        if not any(v.kind is Kind.MODULE for v in model.values.of(module_callee(call))):
            continue
        for arg in call.args:
            for name in _names(arg.value):
                if any(
                    binding.how in ("assign", "annassign", "augassign", "walrus") and within(model, binding.statement, micro.body)
                    for binding in model.bindings_of(name)
                ):
                    return True
    return False


def _names(node: cst.CSTNode) -> Iterator[cst.Name]:
    if isinstance(node, cst.Name):
        yield node
    for child in node.children:
        yield from _names(child)


def _passed(model: Model, read: cst.CSTNode) -> bool:
    """Whether a read is (part of) a call's argument, other than one that only reports it."""
    for ancestor in model.ancestors(read):
        if isinstance(ancestor, cst.Arg):
            call = model.parent(ancestor)
            return isinstance(call, cst.Call) and not inspects_only(model, call)
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
    return False


def _scaled(model: Model, loss: cst.BaseExpression | None, depth: int) -> bool:
    """Whether the loss may be scaled on its way to backward (unknown shapes count as scaled)."""
    if loss is None or depth > _MAX_DEPTH:
        return True
    if isinstance(loss, cst.BinaryOperation):
        if isinstance(loss.operator, _SCALING):
            return True
        return _scaled(model, loss.left, depth + 1) or _scaled(model, loss.right, depth + 1)
    if isinstance(loss, cst.Name):
        bindings = model.reaching(loss)
        if not bindings:
            return True
        return any(_binding_scaled(model, binding, depth) for binding in bindings)
    if isinstance(loss, cst.Call):
        return _call_scaled(model, loss, depth)
    if isinstance(loss, (cst.Attribute, cst.Subscript)):
        return False  # `outputs.loss`, `losses["total"]`: as the model computed it
    return True


def _binding_scaled(model: Model, binding, depth: int) -> bool:
    statement = binding.statement
    if binding.how == "augassign":
        return isinstance(statement.operator, (cst.DivideAssign, cst.MultiplyAssign, cst.FloorDivideAssign))
    if binding.how in ("assign", "annassign", "walrus") and binding.source is not None:
        if binding.path:
            return _call_returns_scaled(model, binding.source, depth) if isinstance(binding.source, cst.Call) else True
        return _scaled(model, binding.source, depth + 1)
    return True  # a parameter, a loop target: made elsewhere


def _call_scaled(model: Model, call: cst.Call, depth: int) -> bool:
    func = call.func
    if model.call_name(call) in _SCALING_FUNCTIONS:
        return True
    if _sum_reduction(model, call):
        return True
    if model.summaries.targets(call) or _forwards(model, call):
        return _call_returns_scaled(model, call, depth)
    if isinstance(func, cst.Attribute):
        if func.attr.value in _SCALING_METHODS:
            return True
        if model.qualified_name(func.value) is not None:
            return False  # a function of an imported package (`F.cross_entropy(...)`), not a method of the loss
        receiver = model.values.of(func.value)
        if any(v.kind is Kind.TENSOR for v in receiver) or not any(v.kind is Kind.MODULE for v in receiver):
            return _scaled(model, func.value, depth + 1) if isinstance(func.value, cst.Name) else False
    return False


def _call_returns_scaled(model: Model, call: cst.Call, depth: int) -> bool:
    functions = [function for function, _ in model.summaries.targets(call)] or _forwards(model, call)
    if not functions:
        return False
    for function in functions:
        returns = model.summaries.returns(function)
        if returns is None or any(_scaled(model, value, depth + 1) for value in returns):
            return True
    return False


def _forwards(model: Model, call: cst.Call) -> list[cst.FunctionDef]:
    """The `forward` of the same-file module classes whose instance ``call`` calls (`criterion(pred,
    target)` with `criterion = DetectionLoss()`): it computes what the call returns."""
    callee = model.values.of(call.func)
    if not callee or not all(v.kind is Kind.MODULE and v.api in model.classes for v in callee):
        return []
    forwards = [model.summaries.method(model.classes[v.api], "forward") for v in callee]
    return forwards if all(forwards) else []


def _sum_reduction(model: Model, call: cst.Call) -> bool:
    """A loss computed with `reduction="sum"`, given here or when the criterion was built."""
    if _reduces_by_sum(call):
        return True
    if isinstance(call.func, cst.Name):
        for binding in model.bindings_of(call.func):
            if isinstance(binding.source, cst.Call) and _reduces_by_sum(binding.source):
                return True
    return False


def _reduces_by_sum(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "reduction":
            value = arg.value
            return not (isinstance(value, cst.SimpleString) and value.evaluated_value == "mean")
    return False
