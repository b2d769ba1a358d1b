"""Whether an expression holds probabilities: the output of a softmax (`F.softmax`,
`torch.softmax`, `x.softmax(dim)`, an `nn.Softmax` module), kept through views, reshapes, moves
and dtype changes, through names on every path that reaches them, and through a call of a
same-file model whose `forward` returns probabilities on every path (or an `nn.Sequential` that
ends in `nn.Softmax`). A log of them (`torch.log(p)`, `p.log()`) is not.

`source(model, expr)` answers the softmax node the probabilities come from, or None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import losses
from torchlint.model.values import Kind

if TYPE_CHECKING:
    from torchlint.model import Model

_MAX_DEPTH = 12


def source(model: Model, expr: cst.BaseExpression, depth: int = 0, seen: frozenset = frozenset()) -> cst.CSTNode | None:
    """The softmax (a call, or the `return` of a model's forward) whose output ``expr`` holds on
    every path, or None."""
    if depth > _MAX_DEPTH or expr in seen:
        return None
    seen = seen | {expr}
    if isinstance(expr, cst.Name):
        bindings = model.reaching(expr)
        if not bindings or any(b.how not in ("assign", "annassign", "walrus") or b.source is None or b.path for b in bindings):
            return None
        found = [source(model, b.source, depth + 1, seen) for b in bindings]
        return found[0] if all(found) else None
    if not isinstance(expr, cst.Call):
        return None
    if model.call_name(expr) in losses.SOFTMAX_FUNCTIONS:
        return expr
    func = expr.func
    modules = model.values.all_of(func, Kind.MODULE)
    if modules is not None:
        return _module_output(model, expr, modules, depth, seen) if len(modules) == 1 else None
    if isinstance(func, cst.Attribute) and model.qualified_name(func) is None:
        if func.attr.value in losses.SOFTMAX_METHODS:
            return expr
        if func.attr.value in losses.VALUE_PRESERVING_METHODS:
            return source(model, func.value, depth + 1, seen)
    return None


def _module_output(model: Model, call: cst.Call, modules, depth: int, seen: frozenset) -> cst.CSTNode | None:
    """The softmax a module's output comes from: an `nn.Softmax`, a Sequential ending in one, a
    same-file model whose forward returns probabilities on every path."""
    (module,) = modules
    if module.api in losses.SOFTMAX_MODULES:
        return call
    if module.api in losses.SEQUENTIAL_MODULES and isinstance(module.node, cst.Call):
        layers = [arg.value for arg in module.node.args if arg.keyword is None and not arg.star]
        if layers and any(v.api in losses.SOFTMAX_MODULES for v in model.values.of(layers[-1])):
            return layers[-1]
        return None
    classdef = model.classes.get(module.api or "")
    forward = model.summaries.method(classdef, "forward") if classdef is not None else None
    returns = model.summaries.returns(forward) if forward is not None else None
    if not returns:
        return None
    found = [source(model, value, depth + 1, seen) for value in returns]
    return found[0] if all(found) else None
