"""TL001 unused-device: the device the code chose is not the one it uses. A device is computed
(`torch.device(...)`, `"cuda" if torch.cuda.is_available() else "cpu"`, `torch.device("cuda",
rank)`) and nothing places anything with it: it is only printed, logged or formatted, or never
read at all; an accelerator flag (`args.cuda = not args.no_cuda and torch.cuda.is_available()`)
is never read while the code moves to CUDA anyway; a device is made in a branch and thrown away (`else: torch.device("cpu")`); or the
accelerator test is never run (`if torch.cuda.is_available:`, a function, always true)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model import Binding, Model
from torchlint.model.accelerator_checks import uncalled_availability_checks, unread_accelerator_flags
from torchlint.model.device_parameters import ignored_device_parameters, record_comparison
from torchlint.model.device_uses import computes_device, name_places
from torchlint.model.discarded_devices import discarded_devices
from torchlint.model.placement_scheme import NO_HOST_PATH, made_again_where_placed, placements_ignoring
from torchlint.model.scripts import module_is_a_script, runs_a_model
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind, Use
from torchlint.registry import Finding, Rule


class UnusedDevice(Rule, code="TL001"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return  # a test's unused device is dead code, not a model left on the CPU
        reported: set[tuple[object, str]] = set()
        for binding in model.all_bindings():
            if (binding.scope, binding.name) in reported or not computes_device(model, binding):
                continue
            reported.add((binding.scope, binding.name))
            if name_places(model, binding):
                continue  # this binding or a later choice under the same name (a notebook re-choosing it) is used
            if model.values.made(Kind.FRAMEWORK):
                continue  # a Trainer, Accelerator or Fabric places the model: the device is only informative
            if isinstance(binding.scope, cst.Module) and not module_is_a_script(model):
                continue  # a library module's device may be imported and used elsewhere
            stray = placements_ignoring(model, binding.value, binding.scope)
            if stray == []:
                continue  # `.cuda()` under the same test, after set_device to its index: the choice is honoured
            if stray is None and made_again_where_placed(model, binding.value, binding.scope):
                continue  # a trainer class choosing the same device for itself: the unused one is dead code
            other = model.values.placement.placement_in([binding.scope]) if stray is None else None
            if stray is None and other is None and not runs_a_model(model):
                continue  # nothing runs a network (a weight converter): no computation is left on the CPU
            yield Finding(binding.value, _message(model, binding, model.values.uses(binding.value), stray, other))
        for check in uncalled_availability_checks(model):
            text = model.module.code_for_node(check)
            yield Finding(
                check,
                f"'{text}' is not called: a function is always true, so this test says an accelerator is "
                f"present even on a machine without one; write {text}()",
            )
        for flag, move in unread_accelerator_flags(model):
            message, suggestion = _unread_flag_message(model, flag, move)
            yield Finding(flag, message, suggestions=(suggestion,))
        for call, name in discarded_devices(model):
            text = model.module.code_for_node(call)
            if name is None:
                why = "nothing can be placed on it"
            else:
                why = f"the other branch binds '{name}', so on this path '{name}' is never set to it"
            yield Finding(call, f"'{text}' makes a device and throws it away: {why}; write {name or 'device'} = {text}")
        for parameter, record in ignored_device_parameters(model):
            code = model.module.code_for_node
            yield Finding(
                parameter.target,
                f"parameter '{parameter.name}' is never read: '{record.name}' is set from "
                f"'{code(record.value)}' instead, so {_what_the_record_misleads(model, record)}; "
                f"use it: {record.name} = {parameter.name}",
            )


def _unread_flag_message(model: Model, flag: cst.Name | cst.Attribute, move: cst.Call) -> tuple[str, str]:
    text = model.module.code_for_node(flag)
    choice = f'"cuda" if {text} else "cpu"'
    torch = _local_name(model, "torch")
    # `from torch.cuda import is_available` binds no `torch`: a device string moves as well
    suggestion = f"device = {torch}.device({choice})" if torch in model.imports.bindings else f"device = {choice}"
    message = (
        f"'{text}' says whether to use CUDA but nothing reads it: "
        f"'{model.module.code_for_node(move)}' moves to the GPU on every path, so the flag cannot turn "
        f"CUDA off and a machine without one fails; choose the device from it, "
        f"{suggestion}, and move with .to(device)"
    )
    return message, suggestion


def _local_name(model: Model, path: str) -> str:
    """The name the file imports ``path`` under (`import torch as th` -> `th`)."""
    return next((local for local, full in model.imports.bindings.items() if full == path), path)


def _what_the_record_misleads(model: Model, record: Binding) -> str:
    comparison = record_comparison(model, record)
    if comparison is None:
        return "the device the caller passes is ignored"
    method = model.function_of(comparison)
    where = f"{method.name.value}()" if isinstance(method, cst.FunctionDef) else "the code"
    return (
        f"every instance records that device whatever device the caller builds it for, and {where} "
        f"decides by '{model.module.code_for_node(comparison)}' on that record"
    )


def _message(
    model: Model, binding: Binding, uses: list[Use], stray: list[tuple[cst.Call, str]] | None, other: cst.Call | None
) -> str:
    name = binding.name
    what = "only printed or logged" if any(use.how != "bound" for use in uses) else "never read"
    if stray:
        move, why = stray[0]
        if any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in move.args):
            return (
                f"device '{name}' is set here but {what}: the placement that reads '{name}' "
                f"('{_short(model, move)}') runs only on another path; place with .to({name}) on this path too"
            )
        where = (
            f"CUDA on every machine, where '{name}' is the CPU on one without a GPU"
            if why == NO_HOST_PATH
            else f"a device other than the one '{name}' names"
        )
        return (
            f"device '{name}' is computed but {what}: the code places data with '{_short(model, move)}' instead, "
            f"which goes to {where}; place with .to({name}), or remove '{name}' if that placement is the one you want"
        )
    if other is not None:
        return (
            f"device '{name}' is computed but {what}: the code places data another way ('{_short(model, other)}'); "
            f"place with .to({name}), or remove '{name}'"
        )
    return (
        f"device '{name}' is computed but {what}: nothing is placed on it, so the model and batches "
        f"stay on the CPU; move them with .to({name})"
    )


def _short(model: Model, call: cst.Call) -> str:
    """A placement call as the message names it: a move by itself (`.to("cuda")`), whatever its
    receiver; any other call whole, or when long, its callee and the argument that places
    (`self._build_cache(..., device=torch.device(i), ...)`)."""
    code = model.module.code_for_node
    func = call.func
    moves = isinstance(func, cst.Attribute) and func.attr.value in devices.DEVICE_METHODS
    text = f".{func.attr.value}({''.join(code(a) for a in call.args)})" if moves else code(call)
    text = " ".join(text.split())
    if len(text) <= 60 or moves:
        return text if len(text) <= 60 else text[:57] + "..."
    callee = " ".join(code(func).split())
    placing = next((a for a in call.args if a.keyword is not None and a.keyword.value in devices.PLACEMENT_KEYWORDS), None)
    if placing is None:
        return f"{callee}(...)"
    return f"{callee}(..., {placing.keyword.value}={' '.join(code(placing.value).split())}, ...)"


RULE = UnusedDevice
