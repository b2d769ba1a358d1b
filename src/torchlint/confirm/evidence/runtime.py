"""Runtime-only findings: what the run showed that no static finding explains.

TL009 runtime-device-error: an op mixed devices (CUDA raises "Expected all tensors to be on the
same device" there) or a CUDA tensor was read as NumPy. TL010 runtime-loss-diverged: the loss
became NaN/inf or grew a hundredfold in the first steps.
"""

from __future__ import annotations

import os
from collections.abc import Collection

from torchlint.confirm.evidence import CONFIRMED, ranks, real_device_crashes, simulated
from torchlint.confirm.evidence.learning_rate import divergence, first_process_losses
from torchlint.confirm.observations import Run
from torchlint.diagnostics import Diagnostic, Position, Severity

DEVICE_ERROR = "TL009"
LOSS_DIVERGED = "TL010"
# "Orders of magnitude" without a static finding to lean on: a hundredfold.
GROWTH = 100.0


def findings(run: Run, used: Collection[int], display: str) -> list[Diagnostic]:
    return [*_device_errors(run, used, display), *_divergence(run, used, display)]


def _device_errors(run: Run, used: Collection[int], display: str) -> list[Diagnostic]:
    by_place: dict[tuple, list[dict]] = {}
    for event in run.of("mismatch") + run.of("host_copy_error") + real_device_crashes(run):
        if id(event) in used or not event["frames"]:
            continue
        place = (event["frames"][0][0], event["frames"][0][1], event["kind"])
        by_place.setdefault(place, []).append(event)
    diagnostics = []
    for (filename, line, kind), events in by_place.items():
        event = events[0]
        if kind == "mismatch":
            inside = f" in {event['modules'][-1]}.forward" if event["modules"] else ""
            holder = "parameter" if event["parameter"][1] else "tensor"
            message = (
                f"{event['op']}() got a {event['devices'][0]} tensor and a {event['devices'][1]} {holder}{inside}: CUDA "
                "raises 'Expected all tensors to be on the same device' here; put both on the same device"
            )
        elif "numpy" in event["message"]:
            message = f"{event['message'].split('. Use')[0]}: call .cpu() before converting to NumPy"
        else:
            message = f"{event['message']}: put the tensors of this operation on the same device"
        evidence = f"raised at {run.where(event['frames'])}{ranks(run, events)}{simulated(run) if kind != 'crash' else ''}"
        diagnostics.append(_diagnostic(DEVICE_ERROR, message, filename, line, run, display, evidence, Severity.ERROR))
    return diagnostics


def _divergence(run: Run, used: Collection[int], display: str) -> list[Diagnostic]:
    events = first_process_losses(run)
    if not events or any(id(event) in used for event in events):
        return []
    phrase = divergence([float(event["value"]) for event in events], GROWTH)
    if phrase is None or not events[0]["frames"]:
        return []
    filename, line = events[0]["frames"][0][:2]
    message = (
        f"{phrase}: training diverges in its first steps; lower the learning rate, or look for NaN/inf in the "
        "inputs and the loss"
    )
    values = [f"{float(event['value']):.4g}" for event in events]
    shown = ", ".join(values if len(values) <= 6 else [*values[:3], "...", *values[-2:]])
    evidence = f"loss at each backward(){ranks(run, events[:1])}: {shown}"
    return [_diagnostic(LOSS_DIVERGED, message, filename, line, run, display, evidence, Severity.WARNING)]


def _diagnostic(code, message, filename, line, run: Run, display, evidence, severity) -> Diagnostic:
    is_script = os.path.realpath(filename) == str(run.script)
    first, last = _columns(filename, line)
    return Diagnostic(
        code,
        message,
        display if is_script else os.path.relpath(filename),
        Position(line, first),
        Position(line, last),
        severity,
        confirmation={"status": CONFIRMED, "evidence": evidence},
    )


def _columns(filename: str, line: int) -> tuple[int, int]:
    """The first and one-past-last column of the code on a line, to underline the statement."""
    try:
        with open(filename, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if number == line:
                    text = text.rstrip()
                    return len(text) - len(text.lstrip()) + 1, len(text) + 1
    except OSError:
        pass
    return 1, 1
