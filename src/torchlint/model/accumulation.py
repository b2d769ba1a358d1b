"""Running totals of a loss across training steps: `total += loss`, `total = total + loss`,
`losses.append(loss)`, `losses += [loss]` inside a training loop (it runs backward and steps a
torch.optim optimizer or calls a known module), into a variable bound before that loop (or an
attribute, which outlives it too).

The accumulated value carries the loss's autograd history when it is built from a loss that
backward() runs on (also through a same-file helper that returns it) by operations that keep
history: arithmetic, indexing, tensor methods such as `.mean()` or `.cpu()`. `.item()`,
`.detach()`, `.data`, `float(...)` and calls the file does not show end it. Accumulating under
`no_grad`, into a total that is itself backpropagated, into one the loop resets (whose
history stops growing there), or into a list that keeps only a window of the last steps (the
loop drops items, or a `deque(maxlen=k)`) is not this; nor are test functions, which run a few
steps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import training
from torchlint.model.bindings import Binding
from torchlint.model.names import dotted
from torchlint.model.training import within
from torchlint.model.tree import children

if TYPE_CHECKING:
    from torchlint.model import Model

_MAX_DEPTH = 4


@dataclass(frozen=True)
class Accumulation:
    accumulator: str  # the total's name as written (`total_loss`, `self.losses`)
    value: cst.BaseExpression = field(repr=False)  # what is added or appended
    # a container kept whole (`outputs.append(out)`): its item backward() ran on, as written
    item: str | None = None
    # the terms a loss is the whole of (`losses` kept, `loss = sum(losses)`): that loss, as written
    term_of: str | None = None


@dataclass(frozen=True)
class _Losses:
    """What backward() runs on: the bindings of the names it is called on (`loss` in
    `loss.backward()`), and those of containers it is called on an item of (`out` in
    `out["loss"].backward()`), each with the item's subscript as written and the backward call."""

    names: frozenset[Binding]
    holders: dict[Binding, tuple[tuple[str, cst.Call], ...]]
    # the bindings of the terms a loss is the whole of, with that loss's name
    terms: dict[Binding, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.names or self.holders)


def accumulations(model: Model) -> Iterator[Accumulation]:
    losses = _loss_bindings(model)
    if not losses:
        return
    backpropagated = _backpropagated_names(model)
    for node, accumulator, value in _candidates(model):
        if accumulator in backpropagated or model.training.no_grad(node) or model.training.in_test(node):
            continue
        loops = [a for a in model.ancestors(node) if isinstance(a, (cst.For, cst.While))]
        if not loops or not _trains(model, loops[0]):
            continue
        if not _outlives(model, node, accumulator, loops[0]) or _reset_in(model, node, accumulator, loops[0]):
            continue
        if _bounded(model, node, accumulator, loops[0]):
            continue
        if _carries(model, value, losses, 0):
            yield Accumulation(accumulator, value, _held_item(model, value, losses))
        elif isinstance(value, cst.Name) and (bindings := model.reaching(value)) and all(b in losses.terms for b in bindings):
            yield Accumulation(accumulator, value, term_of=losses.terms[bindings[0]])


def _candidates(model: Model) -> Iterator[tuple[cst.CSTNode, str, cst.BaseExpression]]:
    """(statement or call, accumulator key, accumulated value) for each accumulation form."""
    for bindings in model.bindings_table.values():
        for binding in bindings:
            statement = binding.statement
            if binding.how == "augassign" and isinstance(statement.operator, cst.AddAssign):
                value = statement.value
                if isinstance(value, (cst.List, cst.Tuple)) and len(value.elements) == 1:
                    value = value.elements[0].value  # `losses += [loss]`
                yield statement, binding.name, value
            elif binding.how == "assign" and type(binding.source) is cst.BinaryOperation and not binding.path:
                source = binding.source
                if isinstance(source.operator, cst.Add) and dotted(source.left) == binding.name:
                    yield statement, binding.name, source.right  # `total = total + loss`
    for call in model.calls_named(methods=training.LIST_ACCUMULATING_METHODS):
        func = call.func
        if call.args and dotted(func.value) is not None:
            value = call.args[-1].value
            if func.attr.value == "extend":
                if not (isinstance(value, (cst.List, cst.Tuple)) and len(value.elements) == 1):
                    continue
                value = value.elements[0].value
            yield call, dotted(func.value), value


def _trains(model: Model, loop: cst.CSTNode) -> bool:
    """Whether the loop takes training steps: it runs backward, and steps a torch.optim optimizer
    or calls a module (so the loss is a tensor, not any object with a `backward` method)."""
    training = model.training
    return training.computes_gradients(loop) and (training.steps_in(loop) or any(training.module_calls(loop)))


def _outlives(model: Model, node: cst.CSTNode, accumulator: str, loop: cst.CSTNode) -> bool:
    """Whether the accumulator holds its value from one iteration of ``loop`` to the next: an
    attribute, or a name also bound outside the loop."""
    if "." in accumulator:
        return True
    bindings = model.bindings(model.binding_scope(accumulator, node), accumulator)
    return any(not within(model, binding.statement, loop) for binding in bindings)


def _reset_in(model: Model, node: cst.CSTNode, accumulator: str, loop: cst.CSTNode) -> bool:
    """Whether the loop also rebinds the accumulator (`running_loss = 0` after each optimizer
    step): the history it holds is dropped there, so it never grows past that point."""
    bindings = model.bindings(model.binding_scope(accumulator, node), accumulator)
    return any(
        binding.how in ("assign", "annassign") and binding.statement is not node and within(model, binding.statement, loop)
        for binding in bindings
    )


def _bounded(model: Model, node: cst.CSTNode, accumulator: str, loop: cst.CSTNode) -> bool:
    """Whether the list keeps only a window of the last steps: the loop also drops items
    (`del losses[:-1]`, `losses.pop(0)`), or it is a `deque(maxlen=k)`. The histories it holds
    stop growing there."""
    for call in model.summaries.calls_within(loop):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in training.LIST_TRIMMING_METHODS and dotted(func.value) == accumulator:
            return True
    if any(_deletes_from(statement, accumulator) for statement in _statements_within(loop)):
        return True
    return any(
        isinstance(made := binding.value, cst.Call)
        and model.call_name(made) in training.BOUNDED_CONTAINERS
        and any(arg.keyword is not None and arg.keyword.value == training.BOUNDING_KEYWORD for arg in made.args)
        for binding in model.bindings(model.binding_scope(accumulator, node), accumulator)
    )


def _deletes_from(statement: cst.CSTNode, accumulator: str) -> bool:
    if not isinstance(statement, cst.Del):
        return False
    target = statement.target
    targets = [element.value for element in target.elements] if isinstance(target, cst.Tuple) else [target]
    return any(isinstance(target, cst.Subscript) and dotted(target.value) == accumulator for target in targets)


def _statements_within(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.BaseSmallStatement):
            yield current
        elif not isinstance(current, (cst.BaseExpression, cst.FunctionDef, cst.ClassDef)):
            pending.extend(children(current))


def _loss_bindings(model: Model) -> _Losses:
    names: set[Binding] = set()
    holders: dict[Binding, tuple[tuple[str, cst.Call], ...]] = {}
    terms: dict[Binding, str] = {}
    for backward in model.training.backwards():
        if model.training.no_grad(backward.call) or _retains_graph(backward.call):
            continue
        loss = backward.loss
        if isinstance(loss, cst.Name):
            reaching = model.reaching(loss)
            names.update(reaching)
            for binding in reaching:
                if binding.how in ("assign", "annassign") and binding.source is not None and not binding.path:
                    for term in _whole_of(model, binding.source):
                        terms.update((found, loss.value) for found in model.reaching(term))
        elif isinstance(loss, cst.Subscript) and isinstance(loss.value, cst.Name):
            item = (_slice_text(model, loss), backward.call)
            for binding in model.reaching(loss.value):
                holders[binding] = (*holders.get(binding, ()), item)
    return _Losses(frozenset(names), holders, {b: name for b, name in terms.items() if b not in names})


def _whole_of(model: Model, expr: cst.BaseExpression) -> Iterator[cst.Name]:
    """The names of terms ``expr`` is the whole of: `losses` in `losses`, `sum(losses)`, `losses.mean()`,
    `torch.stack(losses).sum()` and either branch of `sum(losses) if ... else losses`; not an
    operand of arithmetic, which may be a count or a weight."""
    if isinstance(expr, cst.Name):
        yield expr
        return
    if isinstance(expr, cst.IfExp):
        yield from _whole_of(model, expr.body)
        yield from _whole_of(model, expr.orelse)
        return
    if not isinstance(expr, cst.Call):
        return
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in training.TERM_REDUCING_METHODS and not expr.args:
        inner = func.value
    elif len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star and (
        isinstance(func, cst.Name) and func.value in training.TERM_REDUCING_BUILTINS and not model.bindings_of(func)
        or model.call_name(expr) in training.TERM_REDUCING_FUNCTIONS
    ):
        inner = expr.args[0].value
    else:
        return
    yield from _whole_of(model, inner)


def _held_item(model: Model, value: cst.BaseExpression, losses: _Losses) -> str | None:
    """`out["loss"]` when ``value`` is a container (`out`) kept whole for the item backward() ran on."""
    if not isinstance(value, cst.Name):
        return None
    bindings = model.reaching(value)
    if not bindings or any(binding in losses.names or binding not in losses.holders for binding in bindings):
        return None
    return f"{value.value}[{losses.holders[bindings[0]][0][0]}]"


def _slice_text(model: Model, item: cst.Subscript) -> str:
    return " ".join(model.module.code_for_node(item.slice[0]).split()) if len(item.slice) == 1 else ""


def _holds_loss(model: Model, binding: Binding, key: str | None, at: cst.CSTNode, losses: _Losses) -> bool:
    """Whether the container ``binding`` binds still holds, where ``at`` reads it, an item that
    backward() ran on (the item ``key`` names, or any for the whole container): no assignment
    to that item (`out["loss"] = out["loss"].detach()`) runs between the backward and ``at``."""
    for held, backward in losses.holders.get(binding, ()):
        if key is not None and key != held:
            continue
        start, end = model.order(backward), model.order(at)
        if not any(
            start < model.order(statement) < end for statement in _item_assignments(model, binding, held)
        ):
            return True
    return False


def _item_assignments(model: Model, binding: Binding, key: str) -> Iterator[cst.CSTNode]:
    """The statements of ``binding``'s function that assign item ``key`` of the container it binds."""
    body = binding.scope.body
    for statement in (s for root in (body if isinstance(body, Sequence) else (body,)) for s in _statements_within(root)):
        if not isinstance(statement, cst.Assign):
            continue
        for target in statement.targets:
            item = target.target
            if (
                isinstance(item, cst.Subscript)
                and isinstance(item.value, cst.Name)
                and binding in model.reaching(item.value)
                and _slice_text(model, item) == key
            ):
                yield statement


def _retains_graph(call: cst.Call) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == "retain_graph" for arg in call.args)


def _backpropagated_names(model: Model) -> set[str]:
    """Names read by the expressions backward() runs on, and by what those names are bound to:
    a total that is backpropagated (`torch.stack(losses).mean().backward()`) keeps its graph on
    purpose."""
    found: set[str] = set()
    for backward in model.training.backwards():
        if backward.loss is None:
            continue
        names = _names_in(backward.loss)
        found |= names
        for name in list(names):
            for binding in model.bindings(model.binding_scope(name, backward.call), name):
                if binding.source is not None:
                    found |= _names_in(binding.source)
    return found


def _names_in(expr: cst.CSTNode) -> set[str]:
    found: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        key = dotted(node)  # None unless a name or an attribute chain
        if key is not None:
            found.add(key)
        stack.extend(children(node))
    return found


def _carries(model: Model, expr: cst.BaseExpression, losses: _Losses, depth: int) -> bool:
    """Whether ``expr`` is computed from a backpropagated loss with its history kept, or is a
    container that holds one."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Name):
        # every binding that may reach here must carry it (`loss = loss.detach()` on one path
        # means the history is dropped where backward ran)
        bindings = model.reaching(expr)
        return bool(bindings) and all(
            binding in losses.names
            or _holds_loss(model, binding, None, expr, losses)
            or (
                binding.how in ("assign", "annassign") and binding.source is not None and not binding.path
                and _carries(model, binding.source, losses, depth + 1)
            )
            for binding in bindings
        )
    if isinstance(expr, cst.BinaryOperation):
        return _carries(model, expr.left, losses, depth) or _carries(model, expr.right, losses, depth)
    if isinstance(expr, cst.UnaryOperation):
        return _carries(model, expr.expression, losses, depth)
    if isinstance(expr, cst.Subscript):
        container = expr.value
        if isinstance(container, cst.Name) and any(b in losses.holders for b in model.reaching(container)):
            key = _slice_text(model, expr)
            return all(_holds_loss(model, b, key, expr, losses) for b in model.reaching(container))
        return _carries(model, container, losses, depth)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in training.DETACHING_METHODS:
                return False
            if model.summaries.targets(expr):
                return _returns_carry(model, expr, losses, depth)
            return _carries(model, func.value, losses, depth)
        return _returns_carry(model, expr, losses, depth)
    return False


def _returns_carry(model: Model, call: cst.Call, losses: _Losses, depth: int) -> bool:
    """Whether a same-file function called here returns a backpropagated loss with its history."""
    for function, _ in model.summaries.targets(call):
        returns = model.summaries.returns(function)
        if returns and any(_carries(model, value, losses, depth + 1) for value in returns):
            return True
    return False
