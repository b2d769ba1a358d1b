"""TL008 jit-trace-device-baked: `torch.jit.trace` records the devices it sees as constants, and
the trace is then used on the other side: traced on a device that may be CUDA and then used
where CPU is expected (reloaded with `map_location="cpu"`, moved with `.cpu()`, called with CPU
inputs, saved under a name that says CPU), or traced on the CPU and then run on CUDA (moved with
`.cuda()`/`.to(device)`, reloaded onto a GPU, called with CUDA tensors). No later move changes
those constants."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.knowledge import jit
from torchlint.model import Model, constants
from torchlint.model.values import Kind, Place
from torchlint.registry import Finding, Rule

# A saved file whose name says which device it is meant for.
_NAMED_FOR = {
    Place.HOST: re.compile(r"(^|[^a-z])cpu([^a-z]|$)", re.IGNORECASE),
    Place.DEVICE: re.compile(r"(^|[^a-z])(cuda|gpu)([^a-z]|$)", re.IGNORECASE),
}
_DEVICE_WORDS = {Place.HOST: "the CPU", Place.DEVICE: "a CUDA device"}


class JitTraceDeviceBaked(Rule, code="TL008"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        traces = model.calls_named(jit.TRACES)
        if not traces or not _mentions_cuda(model):
            return  # nothing traced, or nothing in the file can put a value on CUDA
        for call in traces:
            traced_on = _traced_on(model, call)
            if traced_on is Place.UNKNOWN:
                continue
            other = Place.HOST if traced_on is Place.DEVICE else Place.DEVICE
            where = _use_on(model, call, other)
            if where is not None:
                yield Finding(call, _message(model, call, traced_on, where))


def _mentions_cuda(model: Model) -> bool:
    """`"cuda"`, `f"cuda:{rank}"`, `.cuda()`, `torch.cuda...` anywhere in the file."""
    return any(
        isinstance(node, (cst.Name, cst.SimpleString, cst.FormattedStringText)) and "cuda" in node.value
        for node in model.nodes
    )


def _traced_on(model: Model, call: cst.Call) -> Place:
    """DEVICE when the module or an example input is on a device that may be CUDA when the trace
    runs; HOST when the module is known to be on the CPU there and every example is a CPU
    tensor; else UNKNOWN."""
    args = [arg for arg in call.args if not arg.star]
    if not args:
        return Place.UNKNOWN
    values = model.values
    module, examples = args[0].value, [arg.value for arg in args[1:2]]
    at = args[-1].value  # after any move written inside the call's own arguments
    modules = [value for value in values.of(module) if value.kind is Kind.MODULE]
    places = {values.placement.module_place(value, at) for value in modules}
    if Place.DEVICE in places or any(_placed(model, example, Place.DEVICE, every=False) for example in examples):
        return Place.DEVICE
    if modules and places == {Place.HOST} and examples and all(_placed(model, e, Place.HOST) for e in examples):
        return Place.HOST
    return Place.UNKNOWN


def _placed(model: Model, expr: cst.BaseExpression, place: Place, every: bool = True) -> bool:
    """Whether an input (a tensor, or a literal tuple, list or dict of them) is at ``place``:
    all of its tensors when ``every``, else any of them."""
    if isinstance(expr, (cst.Tuple, cst.List, cst.Dict)):
        parts = [e.value for e in expr.elements if isinstance(e, (cst.Element, cst.DictElement))]
        found = [_placed(model, part, place, every) for part in parts]
        return bool(found) and (all(found) if every else any(found))
    values = model.values.of(expr)
    tensors = [v for v in values if v.kind in (Kind.TENSOR, Kind.BATCH)]
    if every:
        return bool(values) and len(tensors) == len(values) and all(v.place is place for v in tensors)
    return any(v.place is place for v in tensors)


def _use_on(model: Model, trace: cst.Call, place: Place) -> str | None:
    """How the traced module is then used at ``place``, in words, or None."""
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
            if use.how == "method" and values.placement.move_target(context) is place:
                written = ", ".join(model.module.code_for_node(arg) for arg in context.args)
                return f"it is then moved with .{use.name}({written})"
            if use.how == "method" and use.name == "save":
                found = _reloaded_on(model, _argument(context, 0, "f"), place)
                if found:
                    return found
            elif use.how == "argument" and isinstance(context, cst.Call):
                name = model.call_name(context)
                if name == jit.SAVE:
                    found = _reloaded_on(model, _argument(context, 1, "f"), place)
                    if found:
                        return found
                elif name in jit.TRACE_PRESERVING:
                    pending.append(context)
            elif use.how == "called" and any(
                _placed(model, arg.value, place, every=place is Place.HOST) for arg in context.args
            ):
                return f"it is then called with {'CPU' if place is Place.HOST else 'CUDA'} inputs"
    return None


def _reloaded_on(model: Model, path: cst.BaseExpression | None, place: Place) -> str | None:
    """Why a trace saved to ``path`` is meant for ``place``: the file name says so, or the file
    reloads it there (`map_location=`, or a move of what `torch.jit.load` returns)."""
    if path is None:
        return None
    saved = constants.value(model, path)
    if isinstance(saved, str) and _NAMED_FOR[place].search(saved):
        return f"it is saved as '{saved}'"
    written = model.module.code_for_node(path)
    placement = model.values.placement
    for call in model.calls_named(jit.LOAD):
        loaded = _argument(call, 0, "f")
        if loaded is None:
            continue
        same_value = saved is not constants.UNKNOWN and constants.value(model, loaded) == saved
        if not same_value and model.module.code_for_node(loaded) != written:
            continue
        location = _argument(call, 1, "map_location")
        if location is not None and placement.device_place(location) is place:
            where = 'map_location="cpu"' if place is Place.HOST else "map_location on a GPU"
            return f"it is saved and reloaded with {where}"
        if any(u.how == "method" and placement.move_target(u.context) is place for u in model.values.uses(call)):
            return f"it is saved, reloaded and moved to {_DEVICE_WORDS[place]}"
    return None


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None]
    if len(positional) > position and not any(arg.star for arg in positional[: position + 1]):
        return positional[position].value
    return None


def _message(model: Model, call: cst.Call, traced_on: Place, where: str) -> str:
    traced = " ".join(model.module.code_for_node(call.args[0].value).split())
    traced = f"'{traced}'" if len(traced) <= 40 else "the module"
    if traced_on is Place.DEVICE:
        effect = "so on CPU it can still reach for cuda"
        fix = "call .cpu() on the model and the example before torch.jit.trace"
    else:
        effect = "so on the GPU it still makes those tensors on the CPU (a device mismatch, or slow copies)"
        fix = "move the model and the example to the GPU before torch.jit.trace, or trace once per device"
    return (
        f"{traced} is traced on {_DEVICE_WORDS[traced_on]} and {where}: a trace records the devices it sees as "
        f"constants (tensors made in forward, .to(x.device) calls) that no later move changes, {effect}; {fix}"
    )


RULE = JitTraceDeviceBaked
