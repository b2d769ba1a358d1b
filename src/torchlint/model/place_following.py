"""Whether a tensor is computed from one parameter of its function by operations that keep data
where it is (`(batch - mean) / std` with `mean = batch.new_tensor(...)`): whatever the callers
pass, the result is on the same device, so a caller's host tensor stays on the host. Asked of a
function's returns (for the summaries of project modules), and of a value a loop computes on its
first pass, before any assignment later in the loop has run.

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
        roots = _Roots(model, fn, None).of(expr, _DEPTH)
        if roots is None:
            return None
        found |= roots
    return found.pop() if len(found) == 1 else None


def returned_parameter(model: Model, fn: cst.FunctionDef) -> str | None:
    """The parameter every return of ``fn`` gives back unchanged (`return model`), if one."""
    returned = model.summaries.returns(fn)
    names = set()
    for expr in returned or ():
        bindings = model.reaching(expr) if isinstance(expr, cst.Name) else []
        if not bindings or any(b.how != "param" or b.scope is not fn for b in bindings):
            return None
        names.add(expr.value)
    return names.pop() if len(names) == 1 else None


def first_pass_parameter(model: Model, expr: cst.BaseExpression) -> str | None:
    """The one parameter of the function around ``expr`` that it is computed from (where that
    data is) on the first pass of the innermost loop around it, before any assignment later in
    the loop has run (`idx_cond = idx[:, -n:]`, with `idx = torch.cat((idx, step))` at the end
    of the loop); None outside a loop or when it is not one parameter's."""
    fn = model.function_of(expr)
    loop = innermost_loop(model, expr)
    if not isinstance(fn, cst.FunctionDef) or loop is None:
        return None
    roots = _Roots(model, fn, loop).of(expr, _DEPTH)
    return next(iter(roots)) if roots is not None and len(roots) == 1 else None


def innermost_loop(model: Model, node: cst.CSTNode) -> cst.For | cst.While | None:
    for ancestor in model.ancestors(node):
        if type(ancestor) in (cst.For, cst.While):
            return ancestor
        if type(ancestor) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            return None
    return None


class _Roots:
    """The parameters of ``fn`` tensor expressions keep the place of; reads inside ``loop`` (if
    any) seen on its first pass."""

    def __init__(self, model: Model, fn: cst.FunctionDef, loop: cst.For | cst.While | None) -> None:
        self.model, self.fn, self.loop = model, fn, loop

    def of(self, expr: cst.BaseExpression, depth: int) -> frozenset[str] | None:
        """The parameters ``expr`` keeps the place of (none for a number); None when part of it
        may be placed anywhere else."""
        if type(expr) in (cst.Integer, cst.Float):
            return _NOTHING
        if isinstance(expr, cst.Name):
            return self._name(expr, depth)
        if isinstance(expr, cst.BinaryOperation):
            return _union(self.of(expr.left, depth), self.of(expr.right, depth))
        if isinstance(expr, cst.UnaryOperation):
            return self.of(expr.expression, depth)
        if isinstance(expr, cst.Subscript):
            return self.of(expr.value, depth)  # `x[mask]`, `x[:, 0]`: where x is
        if isinstance(expr, cst.Attribute) and expr.attr.value in tensors.VIEW_ATTRIBUTES:
            return self.of(expr.value, depth)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method in devices.DEVICE_METHODS or method in tensors.NON_TENSOR_METHODS:
                return None  # a move, or a result that is not a tensor (`x.type(torch.cuda.FloatTensor)`)
            roots = self.of(expr.func.value, depth)
            return roots if roots else None  # a method of a tensor the function was given
        return None

    def _name(self, name: cst.Name, depth: int) -> frozenset[str] | None:
        model, fn = self.model, self.fn
        first_pass = self.loop is not None and innermost_loop(model, name) is self.loop
        bindings = model.reaching(name, first_pass)
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
                found = _union(found, self.of(binding.value, depth - 1))
            else:
                return None
        return found


def _union(left: frozenset[str] | None, right: frozenset[str] | None) -> frozenset[str] | None:
    return None if left is None or right is None else left | right
