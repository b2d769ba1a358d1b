"""What a confirm run is asked to do (the command-line options, as one value)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MAX_STEPS = 5
DEFAULT_MAX_EPOCHS = 2
DEFAULT_TIMEOUT = 300.0
DEFAULT_PROCESSES = 2


@dataclass(frozen=True)
class ConfirmOptions:
    script: Path
    script_args: tuple[str, ...] = ()
    python: str = field(default_factory=lambda: sys.executable)
    max_steps: int = DEFAULT_MAX_STEPS
    max_epochs: int = DEFAULT_MAX_EPOCHS
    timeout: float = DEFAULT_TIMEOUT
    simulate: bool = True
    # Processes of a distributed run, and GPUs of the simulated machine.
    processes: int = DEFAULT_PROCESSES
    # Pass the script's own output through to stderr instead of keeping it.
    show_output: bool = False
