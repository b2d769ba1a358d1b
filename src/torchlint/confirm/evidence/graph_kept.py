"""TL018: what the accumulator held at each optimizer step: autograd history (a grad_fn) that is
still reachable after the next value comes in (the graphs of every step add up), history that is
let go, or plain numbers."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, first_process, plural, ranks
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    samples = [s for s in run.of("accumulator") if s["line"] in target.lines]
    if not samples:
        return Confirmation(
            NOT_REACHED,
            f"the accumulator of line {target.line} was not in a frame of the script at any optimizer step (it is read "
            f"in the frames on the stack at each step): the run {run.ending()}",
        )
    samples = first_process(run, samples)
    name = samples[0]["name"]
    kept = [s for s in samples if s["with_history"]]
    kept_earlier = [s for s in kept if s["kept_earlier"]]
    if kept_earlier:
        first, shown = kept[0], kept_earlier[0]
        return Confirmation(
            CONFIRMED,
            f"at step {shown['step']} of the run{ranks(run, kept_earlier)}, '{name}' took in a new value and the autograd "
            f"history it held at the step before was still reachable from it ({_holding(shown)}); the graph reachable "
            f"from it grew from {first['nodes']} nodes at step {first['step']} to {shown['nodes']}: every step's graph "
            "stays alive",
            used=tuple(id(s) for s in kept_earlier),
        )
    if any(s["accumulated"] for s in kept):
        largest = max(s["nodes"] for s in kept)
        return Confirmation(
            NOT_REPRODUCED,
            f"'{name}' held autograd history ({_holding(kept[0])}) and took in new values, but the graph reachable "
            f"from it stayed at {largest} nodes or fewer across {len(samples)} optimizer step{plural(len(samples))}, "
            "and the history of the step before was no longer reachable: it is let go",
        )
    if kept:
        return Confirmation(
            NOT_REACHED,
            f"'{name}' held the same autograd history ({_holding(kept[0])}) at each of {len(kept)} optimizer "
            f"step{plural(len(kept))}: the statement did not accumulate a second value while the run lasted, "
            f"where graphs would add up (the run {run.ending()})",
        )
    return Confirmation(
        NOT_REPRODUCED,
        f"'{name}' held no autograd history at any of {len(samples)} optimizer step{plural(len(samples))} "
        f"(a {samples[-1]['type']}{_items(samples[-1])})",
    )


def _holding(sample: dict) -> str:
    if sample["items"] is None:
        return f"a tensor with grad_fn {sample['grad_fn']}"
    return f"{sample['with_history']} of its {sample['items']} items with a grad_fn"


def _items(sample: dict) -> str:
    return "" if sample["items"] is None else f" of {sample['items']} items"
