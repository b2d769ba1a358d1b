"""TL005: the loss over the first steps, and how far each step moves the parameters."""

from __future__ import annotations

import math

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, first_process
from torchlint.confirm.observations import Run

# A step that moves the parameters by more than their own size, or by less than a millionth of
# it, is a learning rate off by orders of magnitude whatever the loss does.
TOO_LARGE_UPDATE = 1.0
TOO_SMALL_UPDATE = 1e-6
# Growth of the loss over the first steps that TL005 counts as divergence.
GROWTH = 10.0


def confirm(target: Target, run: Run) -> Confirmation:
    loss_events = first_process_losses(run)
    losses = [float(e["value"]) for e in loss_events]
    updates = [e["relative"] for e in run.of("update") if e["relative"] is not None]
    if len(losses) < 2 and not updates:
        return Confirmation(NOT_REACHED, f"fewer than two training steps ran: the run {run.ending()}")
    diverged = divergence(losses, GROWTH)
    if diverged:
        return Confirmation(CONFIRMED, diverged, used=tuple(id(e) for e in loss_events))
    numbers = [float(u) for u in updates]
    if any(math.isnan(u) or u >= TOO_LARGE_UPDATE for u in numbers):
        largest = max(numbers, key=lambda u: math.inf if math.isnan(u) else u)
        return Confirmation(CONFIRMED, f"one optimizer step moved the parameters by {_ratio(largest)} their own size")
    if numbers and max(numbers) <= TOO_SMALL_UPDATE:
        return Confirmation(
            CONFIRMED,
            f"each optimizer step moved the parameters by at most {max(numbers):.1e} of their size: training "
            f"barely moves (loss {_trajectory(losses)})",
        )
    detail = f"the loss went {_trajectory(losses)}" if len(losses) >= 2 else "the loss was not observed"
    if numbers:
        detail += f" and each step moved the parameters by {min(numbers):.1e} to {max(numbers):.1e} of their size"
    return Confirmation(NOT_REPRODUCED, detail)


def first_process_losses(run: Run) -> list[dict]:
    """The loss events of one process (rank 0 when distributed), in order."""
    return first_process(run, run.of("loss"))


def divergence(losses: list[float], growth: float) -> str | None:
    """A phrase for a loss that became NaN/inf or grew by `growth` times, else None."""
    if not losses:
        return None
    for step, value in enumerate(losses):
        if not math.isfinite(value):
            if step == 0:
                return f"the loss was {value} from the first step"
            return f"the loss became {value} at step {step + 1} (it started at {losses[0]:.4g})"
    start = losses[0]
    peak = max(losses)
    if start > 0 and peak / start >= growth:
        return f"the loss grew from {start:.4g} to {peak:.4g} within {losses.index(peak) + 1} steps"
    return None


def _trajectory(losses: list[float]) -> str:
    if not losses:
        return "unobserved"
    return f"from {losses[0]:.4g} to {losses[-1]:.4g} over {len(losses)} steps"


def _ratio(value: float) -> str:
    return "NaN times" if math.isnan(value) else f"{value:.3g} times"
