"""TL020: the conversion at the finding's line: whether it copied a tensor from host memory to
another device, and how many such copies the line made between optimizer steps."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REPRODUCED, Confirmation, Target, first_process, needs_cuda, plural, ranks
from torchlint.confirm.observations import Run

# Without a GPU (and without simulation) every device is the host: no copy could show.
requires = needs_cuda


def confirm(target: Target, run: Run) -> Confirmation:
    conversions = [e for e in run.of("convert") if e["line"] in target.lines]
    if not conversions:
        return Confirmation(NOT_REPRODUCED, f"line {target.line} ran but moved no tensor directly")
    copies = [e for e in conversions if e["changed"] and e["before"].startswith("on cpu") and not e["after"].startswith("on cpu")]
    if not copies:
        first = conversions[0]
        return Confirmation(
            NOT_REPRODUCED,
            f".{first['method']}() at line {target.line} left the tensor {first['after']}: the device was host memory "
            "in this run, so nothing was copied",
        )
    first = copies[0]
    return Confirmation(
        CONFIRMED,
        f".{first['method']}() at line {target.line}{ranks(run, copies)} copied a tensor made {first['before']} to "
        f"{first['after'].removeprefix('on ')}{_per_step(run, target)}{_simulated(run)}",
        used=tuple(id(e) for e in copies),
    )


def _per_step(run: Run, target: Target) -> str:
    counts = [
        count
        for event in first_process(run, run.of("host_copies"))
        for line, count in event["copies"]
        if line in target.lines
    ]
    if not counts:
        return ""
    low, high = min(counts), max(counts)
    times = f"{low}" if low == high else f"{low} to {high}"
    return f", {times} cop{'y' if high == 1 else 'ies'} per optimizer step ({len(counts)} step{plural(len(counts))} recorded)"


def _simulated(run: Run) -> str:
    if not run.simulated:
        return ""
    return " (simulated CUDA: here the copy stays in host memory; on a GPU each one is a blocking host-to-device transfer)"
