"""Whether an expression holds probabilities: the output of a softmax (`F.softmax`,
`torch.softmax`, `x.softmax(dim)`, an `nn.Softmax` module), kept through views, reshapes, moves
and dtype changes, through names on every path that reaches them, and through a call of a
same-file model whose `forward` returns probabilities on every path (or an `nn.Sequential` that
ends in `nn.Softmax`, given last or added last with `add_module`, or a class of another module
of the project whose summary says so), also as the element a caller unpacks from the tuple each
return of that `forward` writes out (`validity, label = disc(x)`). `exp` of a log_softmax is a softmax too. An explicit
`model.forward(x)` is `model(x)`. A log of them (`torch.log(p)`, `p.log()`) is not.

`source(model, expr)` answers the softmax node the probabilities come from, or None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import losses
from torchlint.model.added_layers import last_layer
from torchlint.model.values import Kind, Value

if TYPE_CHECKING:
    from torchlint.model import Model

_MAX_DEPTH = 12


def source(model: Model, expr: cst.BaseExpression, depth: int = 0, seen: frozenset = frozenset()) -> cst.CSTNode | None:
    """The softmax (a call, or the `return` of a model's forward) whose output ``expr`` holds on
    every path, or None."""
    if depth > _MAX_DEPTH or expr in seen:
        return None
    seen = seen | {expr}
    if type(expr) is cst.Name:
        bindings = model.reaching(expr)
        # a row of probabilities is probabilities: `for row in probs:` too
        if not bindings or any(b.how not in ("assign", "annassign", "walrus", "for") or b.source is None for b in bindings):
            return None
        if any(b.path and (b.how != "assign" or len(b.path) != 1) for b in bindings):
            return None
        found = [
            _element_source(model, b.source, b.path[0], depth + 1, seen) if b.path else source(model, b.source, depth + 1, seen)
            for b in bindings
        ]
        return found[0] if all(found) else None
    if not isinstance(expr, cst.Call):
        return None
    if model.call_name(expr) in losses.SOFTMAX_FUNCTIONS:
        return expr
    func = expr.func
    exponentiated = _exp_argument(model, expr)
    if exponentiated is not None and _log_probabilities(model, exponentiated):
        return expr  # `torch.exp(log_softmax(x))` is softmax(x)
    callee = forward_callee(func)
    passed = passed_modules(model, callee)
    if passed is not None:
        return expr if all(argument.probabilities for argument in passed) else None
    modules = model.values.all_of(callee, Kind.MODULE)
    if modules is not None:
        return _module_output(model, expr, modules, depth, seen) if len(modules) == 1 else None
    if isinstance(func, cst.Attribute) and model.qualified_name(func) is None:
        if func.attr.value in losses.SOFTMAX_METHODS:
            return expr
        if func.attr.value in losses.VALUE_PRESERVING_METHODS:
            return source(model, func.value, depth + 1, seen)
    return None


def _element_source(model: Model, expr: cst.BaseExpression, position: int, depth: int, seen: frozenset) -> cst.CSTNode | None:
    """The softmax that element ``position`` of what a same-file model returns comes from, when
    every return of its forward writes out a tuple (`return validity, self.classes(h)`, unpacked
    by the caller as `validity, label = disc(x)`)."""
    if not isinstance(expr, cst.Call):
        return None
    modules = model.values.all_of(forward_callee(expr.func), Kind.MODULE)
    if modules is None or len(modules) != 1:
        return None
    (module,) = modules
    classdef = model.classes.get(module.api or "")
    forward = model.summaries.method(classdef, "forward") if classdef is not None else None
    returns = model.summaries.returns(forward) if forward is not None else None
    if not returns:
        return None
    elements = []
    for returned in returns:
        if not isinstance(returned, cst.Tuple) or len(returned.elements) <= position:
            return None
        if any(isinstance(element, cst.StarredElement) for element in returned.elements[: position + 1]):
            return None
        elements.append(returned.elements[position].value)
    found = [source(model, element, depth + 1, seen) for element in elements]
    return found[0] if all(found) else None


def forward_callee(func: cst.BaseExpression) -> cst.BaseExpression:
    """What a call runs as a module: `model` in `model.forward(x)` (an explicit forward), else
    the callee itself."""
    if type(func) is cst.Attribute and func.attr.value == losses.FORWARD_METHOD:
        return func.value
    return func


def _exp_argument(model: Model, call: cst.Call) -> cst.BaseExpression | None:
    """What `torch.exp(a)` or `a.exp()` exponentiates."""
    if model.call_name(call) in losses.EXP_FUNCTIONS and call.args and not call.args[0].star:
        return call.args[0].value
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in losses.EXP_METHODS and model.qualified_name(func) is None:
        return func.value
    return None


def _log_probabilities(model: Model, expr: cst.BaseExpression) -> bool:
    """A log_softmax written at this place: a call, a method, or an `nn.LogSoftmax` module."""
    if not isinstance(expr, cst.Call):
        return False
    if model.call_name(expr) in losses.LOG_SOFTMAX_FUNCTIONS:
        return True
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in losses.LOG_SOFTMAX_METHODS and model.qualified_name(func) is None:
        return True
    modules = model.values.all_of(func, Kind.MODULE)
    return bool(modules) and all(module.api in losses.LOG_SOFTMAX_MODULES for module in modules)


def passed_modules(model: Model, func: cst.BaseExpression):
    """What the project's other modules pass for the parameter a called name reads, when the
    file never calls its function itself (project/callers.py); None when unknown."""
    if model.project is None or not isinstance(func, cst.Name):
        return None
    binding = model.sole_binding(func)
    if binding is None or binding.how != "param" or not isinstance(binding.scope, cst.FunctionDef):
        return None
    return model.project.arguments(binding.scope, binding.name)


def returns_probabilities(model: Model, module: Value) -> bool:
    """Whether calling ``module`` (a module value of ``model``) returns probabilities."""
    return output_softmax(model, module) is not None


def output_softmax(model: Model, module: Value) -> cst.CSTNode | None:
    """The softmax the output of ``module`` (a module, or a same-file module class whose
    instances are called) comes from on every path, or None."""
    return _module_output(model, module.node or model.module, (module,), 0, frozenset())


def _module_output(model: Model, call: cst.CSTNode, modules, depth: int, seen: frozenset) -> cst.CSTNode | None:
    """The softmax a module's output comes from: an `nn.Softmax`, a Sequential ending in one, a
    same-file model whose forward returns probabilities on every path."""
    (module,) = modules
    if module.api in losses.SOFTMAX_MODULES:
        return call
    if module.api in losses.SEQUENTIAL_MODULES and isinstance(module.node, cst.Call):
        last = last_layer(model, module)
        if last is not None and any(v.api in losses.SOFTMAX_MODULES for v in model.values.of(last)):
            return last
        return None
    if module.facts is not None:
        return call if module.facts.probabilities else None  # a class the file does not show
    classdef = model.classes.get(module.api or "")
    forward = model.summaries.method(classdef, "forward") if classdef is not None else None
    returns = model.summaries.returns(forward) if forward is not None else None
    if not returns:
        return None
    found = [source(model, value, depth + 1, seen) for value in returns]
    return found[0] if all(found) else None
