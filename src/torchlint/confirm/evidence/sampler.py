"""TL006: the sampler's epoch and order at each pass over its loader, per rank."""

from __future__ import annotations

from torchlint.confirm.evidence import (
    CONFIRMED,
    NOT_REACHED,
    NOT_REPRODUCED,
    Confirmation,
    Target,
    ranks,
    touches,
)
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    samplers = _candidates(target, run)
    if not samplers:
        return Confirmation(NOT_REACHED, f"no shuffling DistributedSampler was built: the run {run.ending()}")
    passes = {key: [p for p in run.of("sampler_pass") if (p["pid"], p["id"]) == key] for key in samplers}
    repeated = {key: pair for key, found in passes.items() if (pair := _same_epoch(found))}
    if repeated:
        key, (first, second) = next(iter(repeated.items()))
        seen_on = [first for first, _ in repeated.values()]
        return Confirmation(
            CONFIRMED,
            f"{_name(run, samplers[key])} yielded the same order in two consecutive epochs{ranks(run, seen_on)}: "
            f"its epoch stayed {first['epoch']} (first indices {first['first']} both times)",
            used=tuple(id(p) for p in (first, second)),
        )
    advanced = {key: found for key, found in passes.items() if len(found) >= 2}
    if advanced:
        key, found = next(iter(advanced.items()))
        epochs = " -> ".join(str(p["epoch"]) for p in found)
        return Confirmation(
            NOT_REPRODUCED,
            f"the epoch of {_name(run, samplers[key])} advanced between passes ({epochs}), so each epoch had a new order",
        )
    key = next(iter(samplers))
    return Confirmation(
        NOT_REACHED,
        f"{_name(run, samplers[key])} was iterated {len(passes[key])} time{'s' if len(passes[key]) != 1 else ''}, "
        f"not over two epochs: the run {run.ending()}",
    )


def _candidates(target: Target, run: Run) -> dict[tuple[int, int], dict]:
    """Shuffling samplers the finding points at (built on its line, or feeding a loader built or
    iterated there); all shuffling samplers when the location names none."""
    samplers = {(s["pid"], s["id"]): s for s in run.of("sampler") if s["shuffle"]}
    pointed = {key for key, s in samplers.items() if touches(run, s["frames"], target)}
    for event in (*run.of("loader"), *run.of("loader_pass")):
        key = (event["pid"], event["sampler_id"])
        if key in samplers and touches(run, event["frames"], target):
            pointed.add(key)
    return {key: samplers[key] for key in pointed} if pointed else samplers


def _same_epoch(passes: list[dict]):
    for first, second in zip(passes, passes[1:]):
        if first["epoch"] == second["epoch"]:
            return first, second
    return None


def _name(run: Run, sampler: dict) -> str:
    return f"{sampler['type']} built at {run.where(sampler['frames'])}"
