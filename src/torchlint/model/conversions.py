"""What a tensor conversion call asks for: `t.to(device, dtype)`, `t.to(other)`, `t.cuda(rank)`.

`Tensor.to` takes a dtype, a device (with an optional dtype after it), or another tensor whose
device and dtype it copies, plus options (`non_blocking`, `copy`, `memory_format`). Which form a
positional argument is comes from its value (model/values.py); where the value is not shown (a
parameter of a library function, a name imported from elsewhere), from how code names devices and
dtypes (`device`, `torch_device`, `self.weight_dtype`). When neither tells, the call is not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model.values import Kind

if TYPE_CHECKING:
    from torchlint.model import Model

_OPTIONS = frozenset({"non_blocking", "copy", "memory_format"})


@dataclass(frozen=True)
class Conversion:
    """The device and dtype a conversion call targets, as code: ``device`` is the expression's
    text (`"cuda"` for a bare `.cuda()`), ``dtype`` the dtype's text or None; ``options`` the
    keyword options given (`non_blocking`, `copy`, `memory_format`)."""

    device: str | None
    dtype: str | None
    options: frozenset[str]


def conversion(model: Model, call: cst.Call) -> Conversion | None:
    """How ``call`` (`x.to(...)`, `x.cuda(...)`, `x.xpu(...)`...) converts its receiver, or None
    when the arguments cannot be read (`*args`, an argument that may be a device or a dtype)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or any(arg.star for arg in call.args):
        return None
    method = func.attr.value
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    positional = [arg.value for arg in call.args if arg.keyword is None]
    options = frozenset(keywords) & _OPTIONS
    code = model.module.code_for_node
    if method == "to":
        return _to(model, keywords, positional, options)
    if method in devices.DEVICE_METHODS and method not in devices.HOST_METHODS and method != "to_empty":
        target = keywords.get("device", positional[0] if positional else None)
        return Conversion(code(target) if target is not None else f'"{method}"', None, options)
    return None


def _to(model: Model, keywords, positional, options) -> Conversion | None:
    code = model.module.code_for_node
    if "device" in keywords:
        dtype = keywords.get("dtype", positional[0] if positional else None)
        return Conversion(code(keywords["device"]), code(dtype) if dtype is not None else None, options)
    if not positional:
        dtype = keywords.get("dtype")
        return Conversion(None, code(dtype), options) if dtype is not None else None
    first = positional[0]
    role = argument_role(model, first)
    if role is Kind.DTYPE:
        return Conversion(None, code(first), options)
    if role is Kind.DEVICE:
        dtype = keywords.get("dtype", positional[1] if len(positional) > 1 else None)
        return Conversion(code(first), code(dtype) if dtype is not None else None, options)
    if role is Kind.TENSOR and isinstance(first, (cst.Name, cst.Attribute)):
        # `.to(other)` takes other's device and dtype; a plain name or attribute can be read twice
        return Conversion(f"{code(first)}.device", f"{code(first)}.dtype", options)
    return None


def argument_role(model: Model, expr: cst.BaseExpression) -> Kind | None:
    """Whether a positional argument of `.to()` is a DEVICE, a DTYPE or a TENSOR, or None."""
    known = {value.kind for value in model.values.of(expr)} - {Kind.UNKNOWN}
    name = _last_name(expr)
    named = (
        Kind.DEVICE if name is not None and devices.DEVICE_NAME.search(name)
        else Kind.DTYPE if name is not None and devices.DTYPE_NAME.search(name)
        else None
    )
    if not known:
        return named
    if len(known) == 1 and known <= {Kind.DEVICE, Kind.DTYPE, Kind.TENSOR} and named in (None, *known):
        return known.pop()
    return None


def _last_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None
