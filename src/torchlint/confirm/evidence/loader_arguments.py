"""TL013: the ValueError DataLoader raises when it gets `shuffle` together with a sampler."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REPRODUCED, Confirmation, Target, ranks, touches
from torchlint.confirm.observations import Run

# The start of the message of DataLoader's ValueError, as torch words it.
_REFUSED = "mutually exclusive with shuffle"


def confirm(target: Target, run: Run) -> Confirmation:
    refused = [c for c in run.of("crash") if _REFUSED in c["message"] and touches(run, c["frames"], target)]
    if refused:
        return Confirmation(
            CONFIRMED,
            f"DataLoader raised ValueError at {run.where(refused[0]['frames'])}{ranks(run, refused)}: "
            f"{refused[0]['message']}",
            used=tuple(id(c) for c in refused),
        )
    built = [loader for loader in run.of("loader") if touches(run, loader["frames"], target)]
    where = f"the DataLoader at line {target.line} was built" if built else f"line {target.line} ran"
    return Confirmation(
        NOT_REPRODUCED,
        f"{where} without a sampler on the path that ran{ranks(run, built)}; the error needs the path that passes "
        "one (a distributed run: confirm runs a script that initialises a process group under torchrun)",
    )
