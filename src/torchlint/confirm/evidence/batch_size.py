"""TL007: the batch each rank draws from the loader, times the world size."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, touches
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    loaders = run.of("loader")
    candidates = [loader for loader in loaders if touches(run, loader["frames"], target)] or loaders
    if not candidates:
        return Confirmation(NOT_REACHED, f"no DataLoader was built: the run {run.ending()}")
    worlds = {event["pid"]: event["world_size"] for event in run.of("process_group")}
    distributed = [loader for loader in candidates if worlds.get(loader["pid"], 1) > 1]
    if not distributed:
        return Confirmation(
            NOT_REACHED,
            "the script ran as a single process (it initialised no process group), and the batch size is only "
            f"multiplied across processes: the run {run.ending()}",
        )
    loader = distributed[0]
    world = worlds[loader["pid"]]
    declared = loader["batch_size"]
    drawn = _first_batch(run, loader)
    if drawn is None:
        return Confirmation(NOT_REACHED, f"the DataLoader built at {run.where(loader['frames'])} yielded no batch: the run {run.ending()}")
    if declared and drawn * world == declared:
        return Confirmation(
            NOT_REPRODUCED,
            f"each of the {world} ranks drew batches of {drawn}: {declared} samples per optimizer step in total",
        )
    return Confirmation(
        CONFIRMED,
        f"each of the {world} ranks drew batches of {drawn} from the DataLoader built at {run.where(loader['frames'])}: "
        f"{drawn * world} samples per optimizer step, {world}x the global batch size of {declared} the code declares",
        used=(id(loader),),
    )


def _first_batch(run: Run, loader: dict) -> int | None:
    for event in run.of("batch"):
        if event["pid"] == loader["pid"] and event["id"] == loader["id"]:
            return event["size"]
    return None
