"""Whether a function gives back a tensor computed from one of its parameters by operations that
keep data where it is (`(batch - mean) / std` with `mean = batch.new_tensor(...)`): whatever its
callers pass, the result is on the same device, so a caller's host tensor comes back on the host.

Read off the code alone, without the parameter's value (the callers are in other files): names
bound in the function, arithmetic, indexing, and methods of the tensor other than moves and
conversions to non-tensors. Anything else (a call of a function, a move, a value from outside the
function) may put the result elsewhere, and the function follows nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices, tensors

if TYPE_CHECKING:
    from torchlint.model import Model

_DEPTH = 6  # assignments followed back from a returned expression
_NOTHING: frozenset[str] = frozenset()


def followed_parameter(model: Model, fn: cst.FunctionDef) -> str | None:
    """The one parameter every return of ``fn`` is a tensor computed from, where its data is;
    None when a return may be anything else or follows several parameters."""
    returned = model.summaries.returns(fn)
    if not returned:
        return None
    found: set[str] = set()
    for expr in returned:
        roots = _roots(model, fn, expr, _DEPTH)
        if roots is None:
            return None
        found |= roots
    return found.pop() if len(found) == 1 else None


def _roots(model: Model, fn: cst.FunctionDef, expr: cst.BaseExpression, depth: int) -> frozenset[str] | None:
    """The parameters a tensor expression keeps the place of (none for a number); None when part
    of it may be placed anywhere else."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return _NOTHING
    if isinstance(expr, cst.Name):
        return _name_roots(model, fn, expr, depth)
    if isinstance(expr, cst.BinaryOperation):
        return _union(_roots(model, fn, expr.left, depth), _roots(model, fn, expr.right, depth))
    if isinstance(expr, cst.UnaryOperation):
        return _roots(model, fn, expr.expression, depth)
    if isinstance(expr, cst.Subscript):
        return _roots(model, fn, expr.value, depth)  # `x[mask]`, `x[:, 0]`: where x is
    if isinstance(expr, cst.Attribute) and expr.attr.value in tensors.VIEW_ATTRIBUTES:
        return _roots(model, fn, expr.value, depth)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        method = expr.func.attr.value
        if method in devices.DEVICE_METHODS or method in tensors.NON_TENSOR_METHODS:
            return None  # a move, or a result that is not a tensor (`x.type(torch.cuda.FloatTensor)`)
        roots = _roots(model, fn, expr.func.value, depth)
        return roots if roots else None  # a method of a tensor the function was given
    return None


def _name_roots(model: Model, fn: cst.FunctionDef, name: cst.Name, depth: int) -> frozenset[str] | None:
    bindings = model.reaching(name)
    if not bindings or depth == 0:
        return None
    found: frozenset[str] | None = _NOTHING
    for binding in bindings:
        if binding.scope is not fn:
            return None  # a global or a closure's variable: placed anywhere
        if binding.how == "param" and isinstance(binding.source, (cst.Integer, cst.Float)):
            continue  # a number by default (`eps=1e-6`)
        if binding.how == "param":
            found = _union(found, frozenset({binding.name}))
        elif binding.how in ("assign", "annassign") and binding.value is not None:
            found = _union(found, _roots(model, fn, binding.value, depth - 1))
        else:
            return None
    return found


def _union(left: frozenset[str] | None, right: frozenset[str] | None) -> frozenset[str] | None:
    return None if left is None or right is None else left | right
