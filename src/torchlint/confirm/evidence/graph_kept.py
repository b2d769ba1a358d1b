"""TL018: what the accumulator held at each optimizer step: autograd history (a grad_fn) and a
graph that grows step after step, or plain numbers."""

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
    growing = len(kept) >= 2 and kept[-1]["nodes"] > kept[0]["nodes"]
    if growing:
        first, last = kept[0], kept[-1]
        return Confirmation(
            CONFIRMED,
            f"'{name}' held autograd history at {len(kept)} optimizer steps{ranks(run, kept[:1])} ({_holding(last)}), "
            "and the graph reachable "
            f"from it grew from {first['nodes']} nodes at step {first['step']} of the run to {last['nodes']} at step "
            f"{last['step']}: every step's graph stays alive",
        )
    if kept:
        largest = max(s["nodes"] for s in kept)
        return Confirmation(
            NOT_REPRODUCED,
            f"'{name}' held autograd history ({_holding(kept[0])}), but the graph reachable from it stayed at "
            f"{largest} nodes or fewer across {len(samples)} optimizer step{plural(len(samples))}: one step's graph, "
            "not every step's",
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
