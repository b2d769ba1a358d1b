"""TL008 jit-trace-device-baked: `torch.jit.trace` runs on a module or example that is on a
device that may be CUDA, and the traced result is then used where CPU is expected: reloaded with
`map_location="cpu"`, moved with `.cpu()`, called with CPU inputs, or saved under a name that says
CPU. The trace records the devices it saw as constants, so it does not become a CPU model."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.model import Model, constants
from torchlint.model.values import Kind, Place
from torchlint.registry import Finding, Rule

_TRACES = frozenset({"torch.jit.trace", "torch.jit.trace_module"})
# Calls that hand back (a transformed copy of) the traced module they are given.
_TRACE_PRESERVING = frozenset({"torch.jit.freeze", "torch.jit.optimize_for_inference"})
_JIT_SAVE = "torch.jit.save"
_JIT_LOAD = "torch.jit.load"
_CPU_NAME = re.compile(r"(^|[^a-z])cpu([^a-z]|$)", re.IGNORECASE)


class JitTraceDeviceBaked(Rule):
    code = "TL008"
    name = "jit-trace-device-baked"
    summary = "a module traced on CUDA is used where CPU is expected"

    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        traces = [call for call in model.calls if model.call_name(call) in _TRACES]
        if not traces or not _mentions_cuda(model):
            return  # nothing traced, or nothing in the file can put a value on CUDA
        for call in traces:
            if not _traced_on_device(model, call):
                continue
            where = _cpu_use(model, call)
            if where is not None:
                yield Finding(call, _message(model, call, where))


def _mentions_cuda(model: Model) -> bool:
    """`"cuda"`, `f"cuda:{rank}"`, `.cuda()`, `torch.cuda...` anywhere in the file."""
    return any(
        isinstance(node, (cst.Name, cst.SimpleString, cst.FormattedStringText)) and "cuda" in node.value
        for node in model.parents
    )


def _traced_on_device(model: Model, call: cst.Call) -> bool:
    """Whether the module or an example input is on a device that may be CUDA when the trace
    runs."""
    args = [arg for arg in call.args if not arg.star]
    if not args:
        return False
    values = model.values
    module, examples = args[0].value, [arg.value for arg in args[1:2]]
    at = args[-1].value  # after any move written inside the call's own arguments
    for value in values.of(module):
        if value.kind is Kind.MODULE and values.placement.module_place(value, at) is Place.DEVICE:
            return True
    return any(_on_device(model, example) for example in examples)


def _on_device(model: Model, expr: cst.BaseExpression) -> bool:
    """An example input on a device: a tensor, or a literal tuple, list or dict holding one."""
    if isinstance(expr, (cst.Tuple, cst.List)):
        return any(_on_device(model, element.value) for element in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(isinstance(e, cst.DictElement) and _on_device(model, e.value) for e in expr.elements)
    return any(
        value.kind in (Kind.TENSOR, Kind.BATCH) and value.place is Place.DEVICE for value in model.values.of(expr)
    )


def _cpu_use(model: Model, trace: cst.Call) -> str | None:
    """How the traced module is used where CPU is expected, in words, or None."""
    values = model.values
    pending: list[cst.BaseExpression] = [trace]
    seen: set[cst.CSTNode] = set()
    while pending:
        start = pending.pop()
        if start in seen:
            continue
        seen.add(start)
        for use in values.uses(start):
            context = use.context
            if use.how == "method" and use.name in ("cpu", "to"):
                if values.placement.move_target(context) is Place.HOST:
                    return "it is then moved with .cpu()"
            elif use.how == "method" and use.name == "save":
                found = _reloaded_on_cpu(model, _argument(context, 0, "f"))
                if found:
                    return found
            elif use.how == "argument" and isinstance(context, cst.Call):
                name = model.call_name(context)
                if name == _JIT_SAVE:
                    found = _reloaded_on_cpu(model, _argument(context, 1, "f"))
                    if found:
                        return found
                elif name in _TRACE_PRESERVING:
                    pending.append(context)
            elif use.how == "called" and any(_on_host(model, arg.value) for arg in context.args):
                return "it is then called with CPU inputs"
    return None


def _reloaded_on_cpu(model: Model, path: cst.BaseExpression | None) -> str | None:
    """Why a trace saved to ``path`` is meant for CPU: the file reloads it with
    `map_location="cpu"`, or the file name says cpu."""
    if path is None:
        return None
    saved = constants.value(model, path)
    if isinstance(saved, str) and _CPU_NAME.search(saved):
        return f"it is saved as '{saved}'"
    written = model.module.code_for_node(path)
    for call in model.calls:
        if model.call_name(call) != _JIT_LOAD:
            continue
        loaded = _argument(call, 0, "f")
        location = _argument(call, 1, "map_location")
        if loaded is None or location is None or model.values.placement.device_place(location) is not Place.HOST:
            continue
        same_value = saved is not constants.UNKNOWN and constants.value(model, loaded) == saved
        if same_value or model.module.code_for_node(loaded) == written:
            return 'it is saved and reloaded with map_location="cpu"'
    return None


def _on_host(model: Model, expr: cst.BaseExpression) -> bool:
    found = model.values.of(expr)
    return bool(found) and all(value.kind is Kind.TENSOR and value.place is Place.HOST for value in found)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None]
    if len(positional) > position and not any(arg.star for arg in positional[: position + 1]):
        return positional[position].value
    return None


def _message(model: Model, call: cst.Call, where: str) -> str:
    traced = " ".join(model.module.code_for_node(call.args[0].value).split())
    traced = f"'{traced}'" if len(traced) <= 40 else "the module"
    return (
        f"{traced} is traced on a CUDA device and {where}: a trace records the devices it sees as "
        f"constants (tensors made in forward, .to(x.device) calls) that no later move changes, so on CPU it can still "
        f"reach for cuda; "
        f"call .cpu() on the model and the example before torch.jit.trace"
    )


RULE = JitTraceDeviceBaked
