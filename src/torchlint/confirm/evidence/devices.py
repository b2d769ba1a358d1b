"""TL001, TL002, TL004: where a module's parameters and its inputs were at each forward call."""

from __future__ import annotations

from torchlint.confirm.evidence import (
    CONFIRMED,
    NOT_REACHED,
    NOT_REPRODUCED,
    Confirmation,
    Target,
    needs_cuda,
    ranks,
    real_device_crashes,
    script_lines,
    simulated,
    touches,
)
from torchlint.confirm.observations import Run

CPU = ["cpu"]


requires = needs_cuda


def confirm(target: Target, run: Run) -> Confirmation:
    return {"TL001": _unused_device, "TL002": _module_not_moved, "TL004": _input_not_moved}[target.code](target, run)


def _unused_device(target: Target, run: Run) -> Confirmation:
    forwards = run.of("forward")
    if not forwards:
        return Confirmation(NOT_REACHED, f"no module ran forward: the run {run.ending()}")
    placed = [f for f in forwards if _off_cpu(f["parameters"]) or _off_cpu(f["inputs"])]
    if placed:
        first = placed[0]
        return Confirmation(
            NOT_REPRODUCED,
            f"{_module(first)} ran forward at {run.where(first['frames'])} with parameters on "
            f"{_list(first['parameters'])}{simulated(run)}: the script reaches the GPU another way",
        )
    first = forwards[0]
    return Confirmation(
        CONFIRMED,
        f"CUDA was available{simulated(run)} but every forward ran on the CPU: {_module(first)} at "
        f"{run.where(first['frames'])} had its parameters and inputs on cpu",
        used=tuple(id(f) for f in forwards),
    )


def _module_not_moved(target: Target, run: Run) -> Confirmation:
    forwards = [f for f in run.of("forward") if f["parameters"]]
    candidates = [f for f in forwards if _built_in(run, f, target) or touches(run, f["frames"], target)]
    if not candidates:
        candidates = [f for f in forwards if f["parameters"] == CPU]
    if not candidates:
        return Confirmation(NOT_REACHED, f"no forward call of the module was observed: the run {run.ending()}")
    stranded = [f for f in candidates if f["parameters"] == CPU]
    if not stranded:
        first = candidates[0]
        return Confirmation(
            NOT_REPRODUCED,
            f"{_module(first)} ran forward at {run.where(first['frames'])} with its parameters on "
            f"{_list(first['parameters'])}{simulated(run)}: it is moved on another path",
        )
    modules = {f["module"] for f in stranded}
    mismatches = [
        m for m in run.of("mismatch") if m["parameter"][1] and m["devices"][1] == "cpu" and modules & set(m["modules"])
    ]
    against = [f for f in stranded if _off_cpu(f["inputs"])]
    if against or mismatches:
        forward = (against or stranded)[0]
        text = (
            f"{_module(forward)} ran forward at {run.where(forward['frames'])} with its parameters on cpu"
            + (f" and its inputs on {_list(forward['inputs'])}" if against else "")
            + f"{ranks(run, [forward])}{simulated(run)}"
        )
        if mismatches:
            text += f"; {_raises(run, mismatches[0])}"
        crashes = real_device_crashes(run)
        return Confirmation(CONFIRMED, text, used=tuple(id(e) for e in [*against, *mismatches, *crashes]))
    first = stranded[0]
    return Confirmation(
        NOT_REPRODUCED,
        f"{_module(first)} ran forward at {run.where(first['frames'])} on the CPU, and so did its inputs: "
        "nothing was placed on the GPU on this path",
    )


def _input_not_moved(target: Target, run: Run) -> Confirmation:
    forwards = [f for f in run.of("forward") if f["parameters"]]
    mismatches = [m for m in run.of("mismatch") if m["parameter"][0] and not m["parameter"][1] and m["devices"][1] == "cpu"]
    candidates = [f for f in forwards if touches(run, f["frames"], target)]
    located = [m for m in mismatches if touches(run, m["frames"], target)]
    if not candidates and not located:
        candidates = [f for f in forwards if _off_cpu(f["parameters"])]
        located = mismatches
    stranded = [f for f in candidates if _off_cpu(f["parameters"]) and "cpu" in f["inputs"]]
    if stranded or located:
        text = (
            f"{_module(stranded[0])} ran forward at {run.where(stranded[0]['frames'])} with parameters on "
            f"{_list(stranded[0]['parameters'])} and inputs on cpu{ranks(run, stranded[:1])}{simulated(run)}"
            if stranded
            else f"an input stayed on the CPU{ranks(run, located[:1])}{simulated(run)}"
        )
        if located:
            text += f"; {_raises(run, located[0])}"
        crashes = real_device_crashes(run)
        return Confirmation(CONFIRMED, text, used=tuple(id(e) for e in [*stranded, *located, *crashes]))
    if not candidates:
        return Confirmation(NOT_REACHED, f"no forward call of the module was observed: the run {run.ending()}")
    first = candidates[0]
    if not _off_cpu(first["parameters"]):
        return Confirmation(
            NOT_REPRODUCED,
            f"{_module(first)} itself ran on the CPU at {run.where(first['frames'])}, so CPU inputs match it",
        )
    return Confirmation(
        NOT_REPRODUCED,
        f"{_module(first)} ran forward at {run.where(first['frames'])} with its inputs on "
        f"{_list(first['inputs'])}{simulated(run)}: they are moved on another path",
    )


def _built_in(run: Run, forward: dict, target: Target) -> bool:
    built = forward.get("built")
    return bool(built) and any(line in target.lines for line in script_lines(run, [built]))


def _off_cpu(devices: list[str]) -> bool:
    return any(device != "cpu" for device in devices)


def _module(forward: dict) -> str:
    return forward["module"]


def _list(devices: list[str]) -> str:
    return " and ".join(devices) if devices else "no device"


def _raises(run: Run, mismatch: dict) -> str:
    return (
        f"CUDA raises 'Expected all tensors to be on the same device' ({mismatch['devices'][0]} and "
        f"{mismatch['devices'][1]}) in {mismatch['op']}() at {run.where(mismatch['frames'])}"
    )
