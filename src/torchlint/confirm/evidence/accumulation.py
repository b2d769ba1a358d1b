"""TL012: how many backward passes of the finding's backward() each optimizer step summed, and the
factor the loss of each was scaled by on its way there (`loss / 4` is 0.25): the update is that
sum of scales times the mean gradient of the passes."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, ranks, touches
from torchlint.confirm.observations import Run

# An update at least this many times the mean gradient of its passes is not a scaled accumulation.
TOO_LARGE = 1.5


def confirm(target: Target, run: Run) -> Confirmation:
    steps = [(check, scales) for check in run.of("grad_check") if (scales := _scales(run, check, target))]
    if not steps:
        return Confirmation(NOT_REACHED, f"no optimizer step applied a backward pass of line {target.line}: the run {run.ending()}")
    accumulated = [(check, scales) for check, scales in steps if len(scales) > 1]
    if not accumulated:
        return Confirmation(
            NOT_REPRODUCED,
            f"each of {len(steps)} optimizer steps applied a single backward pass of line {target.line}: nothing accumulated",
        )
    excessive = [(check, scales) for check, scales in accumulated if sum(scales) >= TOO_LARGE]
    if excessive:
        check, scales = excessive[0]
        return Confirmation(
            CONFIRMED,
            f"{check['type']} step {check['step']} ({run.where(check['frames'])}{ranks(run, [c for c, _ in excessive])}) "
            f"applied the sum of {len(scales)} backward passes of line {target.line}, whose loss was {_scaled(scales[0])}: "
            f"the update was {sum(scales):.3g}x the mean gradient of those batches",
        )
    check, scales = accumulated[0]
    return Confirmation(
        NOT_REPRODUCED,
        f"{check['type']} step {check['step']} applied {len(scales)} backward passes of line {target.line}, "
        f"each with the loss {_scaled(scales[0])}: the update was the mean gradient",
    )


def _scales(run: Run, check: dict, target: Target) -> list[float]:
    """The loss scale of each backward pass of the finding's line that the step applied."""
    return [backward["scale"] for backward in check["backwards"] if touches(run, backward["frames"], target)]


def _scaled(scale: float) -> str:
    if abs(scale - 1.0) < 1e-6:
        return "not scaled"
    return f"scaled by {scale:.4g}" + (f" (1/{1 / scale:.3g})" if 0 < scale < 1 else "")
