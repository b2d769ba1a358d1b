"""The bounds of the run: optimizer steps and passes over loaders, and where to stop.

A pass over a loader (one `for batch in loader`) ends after `--max-steps` optimizer steps, or
after a few batches when it steps less (evaluation, gradient accumulation). A loader that has
had `--max-epochs` passes with training steps in them stops the script when a new pass starts.
Steps taken without a loader batch in between (synthetic data loops) are capped at
max_steps x max_epochs.
"""

from __future__ import annotations

from _tlconfirm import events, process
from _tlconfirm.config import Config


class Progress:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.steps = 0
        self.free_steps = 0
        self.batch_since_step = False
        # Called after each step, with the number of steps so far.
        self.listeners: list = []

    def on_batch(self) -> None:
        self.batch_since_step = True

    def on_step(self) -> None:
        self.steps += 1
        if not self.batch_since_step:
            self.free_steps += 1
        self.batch_since_step = False
        for listener in self.listeners:
            listener(self.steps)
        if self.free_steps >= self.config.max_steps * self.config.max_epochs:
            events.emit("bound", what="steps", steps=self.steps)
            process.stop(
                f"stopped after {self.steps} training steps without a DataLoader "
                f"(--max-steps {self.config.max_steps} x --max-epochs {self.config.max_epochs})"
            )
