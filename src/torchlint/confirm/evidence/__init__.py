"""Evidence per rule: what the run observed, matched to one static finding, as a status.

Each rule module exposes `confirm(target, run) -> Confirmation`, called once the finding's line
is known to have run, and may expose `requires(run) -> Confirmation | None`, which says
`unconfirmable` when the run lacked the hardware the rule needs. A finding and an observation
match by the finding's rule and location (the statement of the construct the rule points at);
when the location does not single out an observation, a rule falls back to the observations that
can only concern it.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field

from torchlint.confirm.observations import Run

CONFIRMED = "confirmed"
NOT_REPRODUCED = "not-reproduced"
NOT_REACHED = "not-reached"
UNCONFIRMABLE = "unconfirmable"

_MODULES = {
    "TL001": "devices",
    "TL002": "devices",
    "TL003": "conversions",
    "TL004": "devices",
    "TL005": "learning_rate",
    "TL006": "sampler",
    "TL007": "batch_size",
    "TL008": "trace",
    "TL011": "zero_grad",
    "TL012": "accumulation",
    "TL013": "loader_arguments",
    "TL014": "checkpoints",
    "TL015": "modes",
    "TL016": "modes",
    "TL017": "loss_inputs",
    "TL018": "graph_kept",
    "TL019": "host_values",
    "TL020": "host_copies",
}


@dataclass(frozen=True)
class Target:
    """A static finding as confirm sees it: its rule and the script lines of its statement."""

    code: str
    line: int
    lines: range


@dataclass(frozen=True)
class Confirmation:
    status: str
    evidence: str
    # Events this evidence rests on, so a runtime-only finding does not repeat them.
    used: tuple[int, ...] = field(default=(), compare=False)

    def as_dict(self) -> dict:
        return {"status": self.status, "evidence": self.evidence}


def confirm(target: Target, run: Run) -> Confirmation | None:
    """The confirmation of one finding, or None for codes confirm has nothing to say about (TL000)."""
    name = _MODULES.get(target.code)
    if name is None:
        return None
    module = importlib.import_module(f"torchlint.confirm.evidence.{name}")
    if not run.instrumented:
        return Confirmation(NOT_REACHED, _never_instrumented(run))
    requires = getattr(module, "requires", None)
    confirmation = (requires and requires(run)) or never_ran(target, run) or module.confirm(target, run)
    if confirmation.status == NOT_REACHED and run.simulation_gap:
        # The script would have got further on a GPU: that is missing hardware, not a dead path.
        return Confirmation(UNCONFIRMABLE, f"needs a CUDA GPU: the run {run.ending()}")
    return confirmation


def _never_instrumented(run: Run) -> str:
    errors = run.of("instrumentation_error")
    if errors:
        return f"torchlint could not instrument torch in this run ({errors[0]['error']}); the run {run.ending()}"
    return f"the script never imported torch: the run {run.ending()}"


# -- helpers shared by the rule modules ---------------------------------------------------------


def script_lines(run: Run, frames) -> list[int]:
    """The script's lines among an event's frames (innermost first)."""
    return [line for filename, line, *_ in frames or () if os.path.realpath(filename) == str(run.script)]


def touches(run: Run, frames, target: Target) -> bool:
    return any(line in target.lines for line in script_lines(run, frames))


def never_ran(target: Target, run: Run) -> Confirmation | None:
    if run.lines_run & set(target.lines):
        return None
    return Confirmation(NOT_REACHED, f"line {target.line} never ran: the run {run.ending()}")


def needs_cuda(run: Run) -> Confirmation | None:
    if run.cuda:
        return None
    return Confirmation(
        UNCONFIRMABLE,
        "needs a CUDA GPU: this machine has none and simulation is off (--no-simulate), so every device is the CPU",
    )


_REAL_DEVICE_ERRORS = ("Expected all tensors to be on the same device", "can't convert cuda")


def real_device_crashes(run: Run) -> list[dict]:
    """Device errors raised by real CUDA (simulated ones are recorded where they happen)."""
    return [
        event
        for event in run.of("crash")
        if any(text in event["message"] for text in _REAL_DEVICE_ERRORS) and "torchlint confirm" not in event["message"]
    ]


def simulated(run: Run) -> str:
    return " (simulated CUDA)" if run.simulated else ""


def ranks(run: Run, events) -> str:
    found = sorted({rank for event in events if (rank := run.rank(event)) is not None})
    if not found:
        return ""
    return f" on rank{'s' if len(found) > 1 else ''} {', '.join(map(str, found))}"


def first_process(run: Run, events: list[dict]) -> list[dict]:
    """The events of one process (rank 0 when distributed), in order."""
    if not events:
        return []
    chosen = min({e["pid"] for e in events}, key=lambda pid: (run.ranks.get(pid, 0), pid))
    return [e for e in events if e["pid"] == chosen]


def plural(count: int) -> str:
    return "" if count == 1 else "s"
