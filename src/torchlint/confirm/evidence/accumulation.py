"""TL012: how many backward passes each optimizer step summed, and the factor the loss of the
finding's backward() was scaled by on its way there (`loss / 4` is 0.25)."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, ranks, touches
from torchlint.confirm.observations import Run

# An update at least this many times the mean gradient of its passes is not a scaled accumulation.
TOO_LARGE = 1.5


def confirm(target: Target, run: Run) -> Confirmation:
    steps = [
        (check, scale)
        for check in run.of("grad_check")
        for scale in _scales(run, check, target)
    ]
    if not steps:
        return Confirmation(NOT_REACHED, f"no optimizer step applied a backward pass of line {target.line}: the run {run.ending()}")
    accumulated = [(check, scale) for check, scale in steps if check["backward_passes"] > 1]
    if not accumulated:
        return Confirmation(
            NOT_REPRODUCED,
            f"each of {len(steps)} optimizer steps applied a single backward pass of line {target.line}: nothing accumulated",
        )
    excessive = [(check, scale) for check, scale in accumulated if check["backward_passes"] * scale >= TOO_LARGE]
    if excessive:
        check, scale = excessive[0]
        passes = check["backward_passes"]
        return Confirmation(
            CONFIRMED,
            f"{check['type']} step {check['step']} ({run.where(check['frames'])}{ranks(run, [c for c, _ in excessive])}) "
            f"applied the sum of {passes} backward passes of line {target.line}, whose loss was {_scaled(scale)}: "
            f"the update was {passes * scale:.3g}x the mean gradient of those batches",
        )
    check, scale = accumulated[0]
    return Confirmation(
        NOT_REPRODUCED,
        f"{check['type']} step {check['step']} applied {check['backward_passes']} backward passes of line {target.line}, "
        f"each with the loss {_scaled(scale)}: the update was the mean gradient",
    )


def _scales(run: Run, check: dict, target: Target) -> list[float]:
    """The loss scale of the finding's backward passes among those a step applied (one at most)."""
    scales = [backward["scale"] for backward in check["backwards"] if touches(run, backward["frames"], target)]
    return scales[:1]


def _scaled(scale: float) -> str:
    if abs(scale - 1.0) < 1e-6:
        return "not scaled"
    return f"scaled by {scale:.4g}" + (f" (1/{1 / scale:.3g})" if 0 < scale < 1 else "")
