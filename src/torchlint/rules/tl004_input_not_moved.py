"""TL004 input-not-moved: a module that was moved to a device is called with a batch from a
loader, or a tensor created without `device=`, that was never moved: on a GPU the forward pass
fails with a device mismatch."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes.moves import move_batch_at_loop_top
from torchlint.knowledge import modules
from torchlint.model import Model
from torchlint.model.discarded import dropped_move_of
from torchlint.model.values import Kind, Place, Value
from torchlint.registry import Finding, Rule


class InputNotMoved(Rule):
    code = "TL004"
    name = "input-not-moved"
    summary = "a moved module is called with a batch or tensor that is still on the CPU"
    fix_applicability = Applicability.UNSAFE

    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        values = model.values
        for built in values.made(Kind.MODULE):
            if values.modules.is_submodule(built):
                continue  # called in its parent's forward, with its parent's inputs
            for call in values.modules.fate(built).calls:
                module = _moved_module(model, call)
                if module is None:
                    continue
                # An input left on the host by a dropped `x.to(device)` is TL003's finding.
                unmoved = [
                    arg for arg in call.args
                    if _on_host(values.of(arg.value)) and dropped_move_of(model, arg.value, call) is None
                ]
                if unmoved:
                    fix = move_batch_at_loop_top(model, unmoved[0].value, module)
                    yield Finding(unmoved[0].value, _message(model, call, module, unmoved), fix)


def _moved_module(model: Model, call: cst.Call) -> Value | None:
    """The module a call runs, when it is one module, on a device that may be an accelerator at
    that point, that neither scatters its inputs (DataParallel) nor moves them itself."""
    found = model.values.all_of(call.func, Kind.MODULE)
    if found is None or len(found) != 1:
        return None
    module = next(iter(found))
    if module.api in modules.WRAPPERS or model.values.placement.module_place(module, call) is not Place.DEVICE:
        return None
    if model.values.modules.fate(module).handed_off:
        return None  # given to code that may hook its forward (accelerate's dispatch_model, ...)
    classdef = model.classes.get(module.api or "")
    if classdef is not None and model.values.modules.moves_inputs(classdef):
        return None
    return module


def _on_host(found: frozenset[Value]) -> bool:
    return bool(found) and all(v.kind in (Kind.TENSOR, Kind.BATCH) and v.place is Place.HOST for v in found)


def _message(model: Model, call: cst.Call, module: Value, unmoved: list[cst.Arg]) -> str:
    code = model.module.code_for_node
    first = unmoved[0]
    text = code(first.value)
    move = _move_text(model, module)
    if first.star == "**":
        moved = f"{{k: v.{move} for k, v in {text}.items()}}"
    elif first.star == "*":
        moved = f"[t.{move} for t in {text}]"
    else:
        moved = f"{text}.{move}"
    batch = any(v.origin is not None or v.kind is Kind.BATCH for v in model.values.of(first.value))
    what = "a DataLoader batch" if batch else "a tensor created without device="
    more = f" (and {len(unmoved) - 1} more argument{'s' if len(unmoved) > 2 else ''})" if len(unmoved) > 1 else ""
    # An assignment, never the bare conversion, which would drop its result (TL003).
    if isinstance(first.value, (cst.Name, cst.Attribute, cst.Subscript)):
        fix = f"move it first: {text} = {moved}"
    else:
        fix = f"pass {first.star}{moved} instead"
    if not batch:
        device = move[3:-1] if move.startswith("to(") else '"cuda"'
        fix = f"create it with device={device}, or {fix}"
    return (
        f"'{text}'{more} is {what}, still on the CPU, but '{code(call.func)}' was moved to the device: on a GPU "
        f"the forward pass fails with a device mismatch; {fix}"
    )


def _move_text(model: Model, module: Value) -> str:
    """The move the code used for the module, to repeat for its inputs: `to(device)`, `cuda()`."""
    for move in model.values.modules.fate(module).moves:
        func = move.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and move.args:
            return f"to({model.module.code_for_node(move.args[0].value)})"
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            return "cuda()"
    return "to(device)"


RULE = InputNotMoved
