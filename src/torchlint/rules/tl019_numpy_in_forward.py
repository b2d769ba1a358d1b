"""TL019 numpy-in-forward: a module's `forward` (or a method it hands its inputs to) takes a
tensor computed from its inputs out of torch (`.numpy()`, `.tolist()`, `.item()`, `np.asarray`,
`float()`) and puts the result back into a tensor. Autograd does not see through the round
trip: the gradient along that path is silently zero (or the value acts as a constant). On a GPU
each conversion also waits for the device to finish everything queued before it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.knowledge import training
from torchlint.model import Model
from torchlint.model.input_flow import Conversion, feeds_a_tensor, forward_conversions
from torchlint.model.values import Kind
from torchlint.registry import Finding, Rule


class NumpyInForward(Rule, code="TL019"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        for classdef in model.classes.values():
            if model.values.modules.class_kind(classdef) is not Kind.MODULE:
                continue
            for conversion in forward_conversions(model, classdef):
                if _without_gradients(model, conversion):
                    continue
                sink = feeds_a_tensor(model, conversion)
                if sink is not None:
                    yield Finding(conversion.call, _message(model, conversion, sink))


def _without_gradients(model: Model, conversion: Conversion) -> bool:
    """Code that records no graph (`with torch.no_grad():`, a decorated function) or runs only in
    evaluation (`if not self.training:`): nothing is lost there."""
    node: cst.CSTNode = conversion.call
    for ancestor in model.ancestors(conversion.call):
        if isinstance(ancestor, cst.With) and any(_no_grad(model, item.item) for item in ancestor.items):
            return True
        if isinstance(ancestor, cst.If) and _evaluation_branch(ancestor, node):
            return True
        if isinstance(ancestor, cst.FunctionDef):
            return any(_no_grad(model, decorator.decorator) for decorator in ancestor.decorators)
        node = ancestor
    return False


def _no_grad(model: Model, expr: cst.BaseExpression) -> bool:
    called = expr.func if isinstance(expr, cst.Call) else expr
    return model.qualified_name(called) in training.NO_GRAD


def _evaluation_branch(statement: cst.If, branch: cst.CSTNode) -> bool:
    """`if not self.training:` (its body) or `if self.training:` (its else)."""
    test = statement.test
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    flag = test.expression if negated else test
    if not (isinstance(flag, cst.Attribute) and flag.attr.value == "training"):
        return False
    return branch is (statement.body if negated else statement.orelse)


def _before_moves(tensor: cst.BaseExpression) -> cst.BaseExpression:
    """`h.detach().cpu()` -> `h`: the tensor whose values are converted."""
    while isinstance(tensor, cst.Call) and isinstance(tensor.func, cst.Attribute) and tensor.func.attr.value in ("cpu", "detach", "contiguous"):
        tensor = tensor.func.value
    return tensor


def _message(model: Model, conversion: Conversion, sink: cst.CSTNode) -> str:
    code = model.module.code_for_node
    tensor = " ".join(code(_before_moves(conversion.tensor)).split())
    tensor = f"'{tensor}'" if len(tensor) <= 40 else "a tensor"
    func = conversion.call.func
    how = f".{func.attr.value}()" if isinstance(func, cst.Attribute) and func.value is conversion.tensor else f"{code(func)}()"
    back = " ".join(code(sink).split())
    back = f" ('{back}')" if len(back) <= 50 else ""
    where = "forward" if conversion.function.name.value == "forward" else f"{conversion.function.name.value}, called by forward,"
    return (
        f"{where} turns {tensor}, computed from its inputs, into {conversion.result} with {how} and back into "
        f"a tensor{back}: no gradient flows through that value, and on a GPU each call waits for the device; "
        f"compute it with torch operations on the tensor"
    )


RULE = NumpyInForward
