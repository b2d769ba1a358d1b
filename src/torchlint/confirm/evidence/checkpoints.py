"""TL014: the devices the tensors of the checkpoint loaded at the finding's line were saved from,
where `torch.load` without `map_location` puts them back."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, ranks
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    storages = [e for e in run.of("checkpoint_storage") if e["line"] in target.lines]
    if not storages:
        return Confirmation(NOT_REACHED, f"no checkpoint tensor was restored at line {target.line}: the run {run.ending()}")
    locations = sorted({e["location"] for e in storages})
    devices = [e for e in storages if not e["location"].startswith("cpu")]
    if not devices:
        return Confirmation(
            NOT_REPRODUCED,
            f"the checkpoint loaded at line {target.line} holds tensors saved on {', '.join(locations)} only: they restore "
            "on every machine",
        )
    saved_on = ", ".join(sorted({e["location"] for e in devices}))
    return Confirmation(
        CONFIRMED,
        f"the checkpoint loaded at line {target.line}{ranks(run, devices)} holds tensors saved on {saved_on}, and without "
        f"map_location torch.load restores them there{_consequence(run)}",
        used=tuple(id(e) for e in devices),
    )


def _consequence(run: Run) -> str:
    if run.simulated:
        return (
            " (simulated CUDA: the run had virtual GPUs; on a machine without CUDA this load raises 'Attempting to "
            "deserialize object on a CUDA device')"
        )
    if not run.cuda:
        return ": this machine has no CUDA, so the load fails"
    return ": every process that loads it puts them on that GPU, whichever one it computes on"
