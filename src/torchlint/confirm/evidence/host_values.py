"""TL019: the conversions out of torch at the finding's line, and whether the tensor converted
carried autograd history (it required grad, or was detached on that line from one that did) while
gradients were recorded: the gradient along that value is lost."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, plural, ranks
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    calls = [c for c in run.of("host_value") if c["line"] in target.lines]
    if not calls:
        return Confirmation(NOT_REACHED, f"nothing was taken out of torch at line {target.line}: the run {run.ending()}")
    lost = [c for c in calls if c["had_history"] and c["grad"]]
    if lost:
        first = lost[0]
        return Confirmation(
            CONFIRMED,
            f"{first['how']} at line {target.line}{_inside(first)}{ranks(run, lost)} took a tensor with autograd history "
            f"out of torch while gradients were recorded ({len(lost)} of {len(calls)} call{plural(len(calls))} seen): "
            "no gradient flows back through the value",
            used=tuple(id(c) for c in lost),
        )
    first = calls[0]
    why = "gradients were not recorded" if not first["grad"] else "the tensor had no autograd history (nothing it came from required grad)"
    return Confirmation(
        NOT_REPRODUCED,
        f"at each of the {len(calls)} recorded call{plural(len(calls))} of {first['how']} at line {target.line}"
        f"{_inside(first)}, {why}: no gradient was lost there",
    )


def _inside(call: dict) -> str:
    return f" in {call['modules'][-1]}.forward" if call["modules"] else ""
