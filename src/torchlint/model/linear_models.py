"""Optimizers that fit one linear map: a linear or logistic regression.

Such a problem is convex and has no stack of layers to compound a large step: an adaptive
optimizer moves each weight by about the learning rate per step, and rates several times those
that suit a deep network (0.2 for SGC on Cora) oscillate at worst. A model counts when it is a
linear layer itself (`nn.Linear`, knowledge/modules.LINEAR_MAPS), or a class of the file, a
direct `nn.Module` subclass, whose `__init__` builds one such layer and nothing else with
parameters, and whose `forward` calls it once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import modules
from torchlint.model.names import dotted
from torchlint.model.values import Kind, Value

if TYPE_CHECKING:
    from torchlint.model import Model

_MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def fits_one_linear_map(model: Model, params: cst.BaseExpression | None) -> bool:
    """Whether ``params`` is `net.parameters()` of a module that is one linear map."""
    if not (
        isinstance(params, cst.Call)
        and isinstance(params.func, cst.Attribute)
        and params.func.attr.value == "parameters"
    ):
        return False
    found = model.values.of(params.func.value)
    return bool(found) and all(value.kind is Kind.MODULE and _is_one_linear_map(model, value) for value in found)


def _is_one_linear_map(model: Model, module: Value) -> bool:
    if module.api in modules.LINEAR_MAPS:
        return True
    classdef = model.classes.get(module.api or "")
    if classdef is None or len(classdef.bases) != 1 or model.qualified_name(classdef.bases[0].value) not in _MODULE_BASES:
        return False
    init = model.summaries.method(classdef, "__init__")
    forward = model.summaries.method(classdef, "forward")
    if init is None or forward is None:
        return False
    layers = [(name, value) for name, value in _attributes_set(model, init) if not _without_parameters(model, value)]
    # a layer handed in (`self.body = body`) is not known to be one
    if len(layers) != 1 or not isinstance(layers[0][1], cst.Call) or model.call_name(layers[0][1]) not in modules.LINEAR_MAPS:
        return False
    return _calls_of_attribute(model, forward, layers[0][0]) == 1


def _attributes_set(model: Model, init: cst.FunctionDef) -> list[tuple[str, cst.BaseExpression]]:
    """`self.<name> = <value>` in ``init``."""
    return [
        (binding.name.removeprefix("self."), binding.value)
        for binding in model.all_bindings()
        if binding.how == "assign"
        and binding.name.startswith("self.")
        and binding.name.count(".") == 1
        and binding.value is not None
        and model.function_of(binding.statement) is init
    ]


def _without_parameters(model: Model, value: cst.BaseExpression) -> bool:
    """A setting (`self.k = 2`) or a module known to hold no parameters (`nn.Dropout(0.5)`)."""
    if not isinstance(value, cst.Call):
        return not isinstance(value, (cst.Name, cst.Attribute, cst.Subscript))  # literals, arithmetic on them
    found = model.values.of(value)
    return bool(found) and all(v.kind is Kind.MODULE and not v.trainable for v in found)


def _calls_of_attribute(model: Model, forward: cst.FunctionDef, name: str) -> int:
    return sum(
        1
        for call in model.calls_named(methods=name)
        if dotted(call.func) == f"self.{name}" and model.function_of(call) is forward
    )
