"""TL017: the rows the cross-entropy or NLL loss of the finding's line received along the class
dimension: probabilities (non-negative, each summing to 1), log-probabilities, or logits."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, ranks, script_lines
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    calls = [c for c in run.of("loss_input") if c["rows"] and _called_at(run, c, target)]
    if not calls:
        return Confirmation(
            NOT_REACHED, f"no cross-entropy or NLL loss was computed on float scores at line {target.line}: the run {run.ending()}"
        )
    wrong = [c for c in calls if c["probabilities"] or (c["expects"] == "log-probabilities" and not c["log_probabilities"])]
    if wrong:
        first = wrong[0]
        return Confirmation(CONFIRMED, f"{_received(target, first)}{ranks(run, wrong)}{_consequence(first)}", used=tuple(id(c) for c in wrong))
    first = calls[0]
    if first["expects"] == "logits":
        return Confirmation(
            NOT_REPRODUCED, f"{_received(target, first)}: the rows are not probabilities, so none is squashed a second time"
        )
    return Confirmation(NOT_REPRODUCED, f"{_received(target, first)}: log-probabilities, as nll_loss expects")


def _called_at(run: Run, call: dict, target: Target) -> bool:
    lines = script_lines(run, call["frames"][:1])
    return bool(lines) and lines[0] in target.lines


def _received(target: Target, call: dict) -> str:
    return (
        f"{call['loss']} at line {target.line} received {call['rows']} row{'s' if call['rows'] != 1 else ''} of "
        f"{call['classes']} classes with values in [{call['low']:.3g}, {call['high']:.3g}], each row summing to "
        f"{_span(call['sum_low'], call['sum_high'])} (exp summing to {_span(call['exp_sum_low'], call['exp_sum_high'])})"
    )


def _consequence(call: dict) -> str:
    if call["expects"] == "logits":
        return ": probabilities, which cross-entropy squashes a second time with its own log_softmax"
    if call["probabilities"]:
        return ": probabilities, not their logs, so NLL minimises -p instead of the negative log-likelihood"
    return ": not log-probabilities, so NLL does not compute the negative log-likelihood"


def _span(low: float, high: float) -> str:
    return f"{low:.4g}" if abs(high - low) < 5e-4 else f"{low:.3g} to {high:.3g}"
