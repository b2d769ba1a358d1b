"""TL003 to-result-discarded: `t.to(device)`, `t.cuda()`, `t.half()`... as a bare statement on a
tensor. Tensor conversions return a new tensor and leave `t` as it was, so the statement does
nothing; on a module the same methods work in place, which is why the receiver must be known to
be a tensor."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.fixes import build
from torchlint.knowledge import tensors
from torchlint.model import Model
from torchlint.model.discarded import discarded_conversions
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind
from torchlint.registry import Finding, Rule


class ToResultDiscarded(Rule, code="TL003"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        in_tests = is_test_code(model)
        for call in discarded_conversions(model):
            if in_tests and _in_local_class(model, call):
                continue  # a test double's method (its own `to()`), deliberately minimal
            func = cst.ensure_type(call.func, cst.Attribute)
            statement = model.parent(call)
            kept = _converted_variable(model, func.value)
            if kept is None:
                continue  # a temporary converted for the conversion's own effect (a GPU smoke test)
            message, suggestion = _message(model, call, kept)
            yield Finding(call, message, build.reassign(statement, kept, "Assign the converted tensor back"), (suggestion,))


def _in_local_class(model: Model, call: cst.Call) -> bool:
    """Whether a call is in a method of a class defined inside a function (a test's stand-in)."""
    classes = [a for a in model.ancestors(call) if isinstance(a, cst.ClassDef)]
    return bool(classes) and any(isinstance(a, cst.FunctionDef) for a in model.ancestors(classes[0]))


def _converted_variable(model: Model, receiver: cst.BaseExpression) -> cst.BaseExpression | None:
    """The variable (name, attribute or item) whose tensor the statement meant to convert: the
    receiver itself, or the start of a chain of tensor methods on it (`x.float().cuda()` -> x).
    None when the chain starts from a tensor made on the spot (`torch.ones(1).cuda(rank)`): no
    later code can read the unconverted value, so the statement exists for its side effect."""
    node = receiver
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if model.values.all_of(node.func.value, Kind.TENSOR) is None:
            return None
        node = node.func.value
    return node if isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)) else None


def _message(model: Model, call: cst.Call, kept: cst.BaseExpression) -> tuple[str, str]:
    code = model.module.code_for_node
    tensor, written = code(kept), code(call)
    method = call.func.attr.value
    suggestion = f"{tensor} = {written}"
    return (
        f"'{written}' discards its result: Tensor.{method} returns a new tensor and leaves '{tensor}' "
        f"{_unchanged(model, call)}, so the code after it still uses the unconverted tensor; write {suggestion}"
    ), suggestion


def _unchanged(model: Model, call: cst.Call) -> str:
    """What the conversion would have changed, as the state the tensor is left in."""
    method = call.func.attr.value
    if method == "pin_memory":
        return "in pageable memory"
    if method in tensors.DTYPE_CONVERSIONS:
        return "in its old dtype"
    if method != "to" or model.values.placement.move_target(call) is not None:
        return "where it was"
    keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
    if "memory_format" in keywords and "dtype" not in keywords and not any(arg.keyword is None for arg in call.args):
        return "in its old memory format"
    return "in its old dtype"


RULE = ToResultDiscarded
