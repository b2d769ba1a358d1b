"""Expressions whose value is a boolean tensor: a mask.

Read off how the value is made: a comparison (`scores > 0.5`, `ranks.ge(k)`), a conversion to
bool (`m.bool()`, `m.to(torch.bool)`), a factory given `dtype=torch.bool`, or a negation or
combination of masks (`~keep`, `a & b`); a name is a mask when every binding that may reach it
assigns one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import tensors
from torchlint.model.values.calling import keyword

if TYPE_CHECKING:
    from torchlint.model import Model

_COMBINATIONS = (cst.BitAnd, cst.BitOr, cst.BitXor)


def is_boolean_tensor(model: Model, expr: cst.BaseExpression, depth: int = 4) -> bool:
    """Whether ``expr`` is known to evaluate to a boolean tensor (followed ``depth`` names back)."""
    if isinstance(expr, cst.Comparison):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return is_boolean_tensor(model, expr.expression, depth)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _COMBINATIONS):
        return is_boolean_tensor(model, expr.left, depth) and is_boolean_tensor(model, expr.right, depth)
    if isinstance(expr, cst.Call):
        return _makes_a_mask(model, expr)
    if isinstance(expr, cst.Name) and depth > 0:
        bindings = model.reaching(expr)
        return bool(bindings) and all(
            b.how in ("assign", "annassign", "walrus") and not b.path and b.source is not None
            and is_boolean_tensor(model, b.source, depth - 1)
            for b in bindings
        )
    return False


def _makes_a_mask(model: Model, call: cst.Call) -> bool:
    dtype = keyword(call, "dtype")
    if dtype is not None:
        return model.qualified_name(dtype) in tensors.BOOL_DTYPES
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else None
    if name in ("to", "type"):
        positional = [arg.value for arg in call.args if arg.keyword is None]
        return bool(positional) and model.qualified_name(positional[0]) in tensors.BOOL_DTYPES
    qualified = model.call_name(call)
    # a tensor's method (`ranks.ge(k)`), or torch's function (`torch.isin`); not NumPy's
    return name in tensors.BOOLEAN_RESULTS and (qualified is None or qualified.startswith("torch."))
