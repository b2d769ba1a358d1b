"""TL003 to-result-discarded: `t.to(device)`, `t.cuda()`, `t.half()`... as a bare statement on a
tensor. Tensor conversions return a new tensor and leave `t` as it was, so the statement does
nothing; on a module the same methods work in place, which is why the receiver must be known to
be a tensor."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes import build
from torchlint.knowledge import tensors
from torchlint.model import Model
from torchlint.model.discarded import discarded_conversions
from torchlint.registry import Finding, Rule


class ToResultDiscarded(Rule):
    code = "TL003"
    name = "to-result-discarded"
    summary = "a tensor conversion such as `x.to(device)` used as a statement: its result is thrown away"
    fix_applicability = Applicability.SAFE

    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        for call in discarded_conversions(model):
            func = cst.ensure_type(call.func, cst.Attribute)
            statement = model.parent(call)
            message = _message(model, call, func)
            yield Finding(call, message, build.reassign(statement, func.value, "Assign the converted tensor back"))


def _message(model: Model, call: cst.Call, func: cst.Attribute) -> str:
    tensor = model.module.code_for_node(func.value)
    written = model.module.code_for_node(call)
    method = func.attr.value
    if not build.assignable(func.value):  # `torch.zeros(3).to(device)`: nothing keeps the tensor
        return (
            f"'{written}' discards its result: Tensor.{method} returns a new tensor, which this statement "
            "throws away, so it has no effect; assign the result to a name and use that"
        )
    if method in tensors.DTYPE_CONVERSIONS or (method == "to" and model.values.placement.move_target(call) is None):
        effect = f"leaves '{tensor}' in its old dtype, so the code after it still uses the unconverted tensor"
    else:
        effect = f"leaves '{tensor}' where it was, so the code after it still uses the unmoved tensor"
    return f"'{written}' discards its result: Tensor.{method} returns a new tensor and {effect}; write {tensor} = {written}"


RULE = ToResultDiscarded
