"""TL004's fix: move the batch at the top of the batch loop, `x, y = x.to(device), y.to(device)`.

Offered only where it is plain: the unmoved argument is a name bound by the target of a `for`
over a loader, the batch elements are names known to be tensors, and the module was moved one
way (`.to(device)` with a device name visible at the loop, or `.cuda(...)`). It is always
unsafe: a batch element the model thinks is a tensor may be something `.to` does not take.
"""

from __future__ import annotations

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes import build
from torchlint.model import Model
from torchlint.model.bindings import unpack
from torchlint.model.names import dotted
from torchlint.model.values import Kind, Place, Value
from torchlint.registry import NodeFix


def move_batch_at_loop_top(model: Model, argument: cst.BaseExpression, module: Value) -> NodeFix | None:
    """The fix for an unmoved batch ``argument`` given to the moved ``module``, or None."""
    if not isinstance(argument, cst.Name):
        return None
    # The innermost `for` around the argument that binds its name (a script often reuses the
    # name in another loop: bindings are per scope, not per loop).
    binders = {b.statement for b in model.bindings_of(argument) if b.how == "for"}
    loop = next((node for node in model.ancestors(argument) if node in binders), None)
    if loop is None or not any(batch.node is loop for batch in model.loops.batch_loops()):
        return None
    mover = _mover(model, module, loop)
    if mover is None:
        return None
    names = _unmoved_tensor_names(model, loop)
    if argument.value not in names:
        return None
    return build.prepend_to_body(
        loop,
        build.moved_assignment(names, mover),
        f"Move {', '.join(names)} with .{mover} at the top of the loop",
        Applicability.UNSAFE,
    )


def _unmoved_tensor_names(model: Model, loop: cst.For) -> list[str]:
    """Names the loop's target binds to tensors (not the counter of `enumerate`), leaving out
    those the loop body already moves itself (`y = y.to(device)`)."""
    names = []
    for leaf, path in unpack(loop.target):
        if path is None or not isinstance(leaf, cst.Name) or leaf.value.startswith("_"):
            continue
        scope = model.binding_scope(leaf.value, loop)
        bindings = model.bindings(scope, leaf.value)
        own = [b for b in bindings if b.statement is loop]
        found = [v for b in own for v in model.values.of_binding(b)]
        if not found or any(v.kind is not Kind.TENSOR for v in found):
            continue
        if any(_moves_itself(model, b.value, leaf.value) for b in bindings if loop in model.ancestors(b.statement)):
            continue
        names.append(leaf.value)
    return names


def _moves_itself(model: Model, source: cst.BaseExpression | None, name: str) -> bool:
    """`name.to(device)`, `name.cuda()`... (possibly chained) as the value assigned."""
    while isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute):
        if model.values.placement.move_target(source) is Place.DEVICE and dotted(source.func.value) == name:
            return True
        source = source.func.value
    return False


def _mover(model: Model, module: Value, loop: cst.For) -> str | None:
    """How the module was moved, as the call to append to each tensor: `to(device)` or
    `cuda(...)`; None when it was moved several ways or by a helper, or its device expression
    is not a name visible at the loop."""
    texts = set()
    for move in model.values.modules.fate(module).moves:
        func = move.func
        if not isinstance(func, cst.Attribute):
            return None
        positional = [arg.value for arg in move.args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword.value: arg.value for arg in move.args if arg.keyword is not None}
        if func.attr.value == "to":
            device = positional[0] if positional else keywords.get("device")
            if device is None or not _visible(model, device, loop):
                return None
            texts.add(f"to({model.module.code_for_node(device)})")
        elif func.attr.value == "cuda" and len(move.args) <= 1 and len(positional) == len(move.args):
            if positional and not _visible(model, positional[0], loop):
                return None
            texts.add(f"cuda({model.module.code_for_node(positional[0]) if positional else ''})")
        else:
            return None
    return texts.pop() if len(texts) == 1 else None


def _visible(model: Model, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """A literal, or a name or attribute chain whose head is bound where ``at`` reads it."""
    if isinstance(expr, (cst.SimpleString, cst.Integer)):
        return True
    key = dotted(expr)
    if key is None:
        return False
    head = key.split(".", 1)[0]
    return bool(model.bindings(model.binding_scope(head, at), head))
