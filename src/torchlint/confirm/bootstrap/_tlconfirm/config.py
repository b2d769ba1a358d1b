"""The run's settings, written by the parent as JSON; the path is in TORCHLINT_CONFIRM_CONFIG."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    results: str
    script: str
    max_steps: int
    max_epochs: int
    simulate: bool
    # Lines of the script (statements of static findings) whose execution is recorded.
    watched_lines: frozenset
    # The findings: (rule code, first line, last line of their statement).
    targets: tuple
    # Seconds before a collective gives up, so a rank that died cannot hang the others for 30 min.
    collective_timeout: float
    # "direct": the script runs as given; "launcher": under torch.distributed.run.
    launch: str
    # GPUs the simulated machine has (the number of processes a distributed run starts).
    simulated_devices: int

    def lines_of(self, code: str) -> frozenset:
        """The lines of the statements of `code`'s findings."""
        return frozenset(line for rule, first, last in self.targets if rule == code for line in range(first, last + 1))

    @property
    def max_batches(self) -> int:
        """Batches one pass over a loader may yield when no optimizer step is seen (evaluation,
        gradient accumulation): a few steps' worth."""
        return self.max_steps * 4


def load() -> Config:
    with open(os.environ["TORCHLINT_CONFIRM_CONFIG"], encoding="utf-8") as handle:
        data = json.load(handle)
    return Config(
        results=data["results"],
        script=data["script"],
        max_steps=int(data["max_steps"]),
        max_epochs=int(data["max_epochs"]),
        simulate=bool(data["simulate"]),
        watched_lines=frozenset(data["watched_lines"]),
        targets=tuple((code, first, last) for code, first, last in data["targets"]),
        collective_timeout=float(data["collective_timeout"]),
        launch=data["launch"],
        simulated_devices=int(data["simulated_devices"]),
    )
