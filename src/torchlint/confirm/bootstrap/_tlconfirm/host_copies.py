"""TL020 evidence: how many tensors each finding's line copied from host memory to another device
between two optimizer steps. The conversions themselves (which tensor, from where to where) are
recorded by the placements of the watched lines; this counts them per step, for the first steps.
"""

from __future__ import annotations

import collections

from _tlconfirm import events

_STEPS = 8


class HostCopies:
    def __init__(self, lines: frozenset) -> None:
        self.lines = lines
        self.since_step = collections.Counter()
        self.steps_reported = 0

    def converted(self, line: int, before, after) -> None:
        """A conversion at `line` from `before` to `after`, (device, dtype) pairs."""
        if line in self.lines and before[0].type == "cpu" and after[0] != before[0]:
            self.since_step[line] += 1

    def step(self, steps: int) -> None:
        if self.since_step and self.steps_reported < _STEPS:
            self.steps_reported += 1
            events.emit("host_copies", step=steps, copies=[[line, count] for line, count in sorted(self.since_step.items())])
        self.since_step.clear()
