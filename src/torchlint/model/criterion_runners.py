"""Nets that run the loss themselves (skorch: `NeuralNetClassifier(Module, criterion=
nn.CrossEntropyLoss)` computes `criterion(module(X), y)` in its own training loop): the module and
the criterion a call of one pairs. A project class counts when it derives from one of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import frameworks
from torchlint.model.values.calling import argument, keyword

if TYPE_CHECKING:
    from torchlint.model import Model


def pairs(model: Model) -> Iterator[tuple[cst.Call, cst.BaseExpression, cst.BaseExpression]]:
    """(the net's construction, the module it is given, the criterion it is given)."""
    for call in model.calls:
        runner = _runner(model, call)
        if runner is None:
            continue
        module = argument(call, runner.module, runner.module_position)
        criterion = keyword(call, runner.criterion)
        if module is not None and criterion is not None:
            yield call, module, criterion


def _runner(model: Model, call: cst.Call) -> frameworks.CriterionRunner | None:
    name = model.call_name(call)
    if name in frameworks.CRITERION_RUNNERS:
        return frameworks.CRITERION_RUNNERS[name]
    if model.project is None or not model.summaries.reaches_project or not _may_name_import(model, call.func):
        return None
    found = model.project.project_class(call.func)
    if found is None:
        return None
    bases = sorted(model.project.library_bases(found) & frameworks.CRITERION_RUNNERS.keys())
    return frameworks.CRITERION_RUNNERS[bases[0]] if bases else None


def _may_name_import(model: Model, func: cst.BaseExpression) -> bool:
    """Whether a callee may name what an import brings, as a project class must be: a name or
    attribute chain whose head the file imports somewhere, or any name when it star-imports. Most
    callees (`model(x)`, `loss.backward()`) are local values: no project lookup for them."""
    while type(func) is cst.Attribute:
        func = func.value
    if type(func) is not cst.Name:
        return False
    imports = model.imports
    return func.value in imports.bindings or func.value in imports.relative or bool(imports.stars)
