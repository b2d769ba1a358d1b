"""What the run's processes recorded, merged: the events of every process, who each process was,
and how the run ended."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from torchlint.confirm.processes import Completed

# Roles of processes that run the user's code (the launcher's agent and unrelated helpers do not).
SCRIPT_ROLES = ("script", "rank", "spawned", "forked")
# What a CPU build of torch says when simulated CUDA did not cover a feature the script used.
_SIMULATION_GAPS = (
    "Torch not compiled with CUDA enabled",
    "Cannot access accelerator device when none is available",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "doesn't have NCCL built in",
    "torch.cuda.",
)


@dataclass
class Run:
    script: Path
    completed: Completed
    under_launcher: bool
    timeout: float
    events: list[dict] = field(default_factory=list)
    starts: dict[int, dict] = field(default_factory=dict)
    ranks: dict[int, int] = field(default_factory=dict)

    def of(self, kind: str) -> list[dict]:
        return [event for event in self.events if event["kind"] == kind]

    @property
    def instrumented(self) -> bool:
        return bool(self.of("instrumented"))

    @property
    def simulated(self) -> bool:
        return any(event["simulated"] for event in self.of("instrumented"))

    @property
    def real_cuda(self) -> bool:
        return any(event["real_cuda"] for event in self.of("instrumented"))

    @property
    def cuda(self) -> bool:
        """Whether the script saw CUDA, real or simulated."""
        return self.real_cuda or self.simulated

    @property
    def lines_run(self) -> set[int]:
        return {event["line"] for event in self.of("line")}

    def rank(self, event: dict) -> int | None:
        return self.ranks.get(event["pid"])

    def where(self, frames: list | None) -> str:
        """`line N` for the script, `file.py:N` for another file."""
        if not frames:
            return "an unknown place"
        filename, line = frames[0][0], frames[0][1]
        if os.path.realpath(filename) == str(self.script):
            return f"line {line}"
        return f"{_display(filename)}:{line}"

    def ending(self) -> str:
        """How the run ended, as a phrase: "crashed: ... at line 31", "stopped after ...", ..."""
        if self.completed.timed_out:
            return f"timed out after {self.timeout:g} s (--timeout)"
        gap = self.simulation_gap
        if gap:
            return (
                f"reached a CUDA feature the simulation does not cover at {self.where(gap['frames'])}"
                f"{_on_rank(self.rank(gap))} ({gap['type']}: {gap['message']})"
            )
        crashes = self._crashes()
        if crashes:
            crash = crashes[0]
            rank = self.rank(crash)
            where = self.where(crash["frames"])
            return f"crashed at {where}{_on_rank(rank)}: {crash['type']}: {crash['message']}"
        stops = self.of("stopped")
        if stops:
            return stops[0]["reason"]
        exits = [event for event in self.of("sys_exit") if self._role(event) in SCRIPT_ROLES]
        if exits:
            code = exits[0]["code"]
            return f"called sys.exit({'' if code is None else code}) at {self.where(exits[0]['frames'])}"
        if self.completed.returncode:
            return f"exited with status {self.completed.returncode}"
        return "finished"

    @property
    def simulation_gap(self) -> dict | None:
        """The crash by which a CPU build refused a CUDA feature simulation does not cover."""
        if not self.simulated:
            return None
        return next((c for c in self._crashes() if any(text in c["message"] for text in _SIMULATION_GAPS)), None)

    def _crashes(self) -> list[dict]:
        return [event for event in self.of("crash") if self._role(event) in SCRIPT_ROLES]

    @property
    def crashed(self) -> bool:
        return self.completed.timed_out or bool(self.completed.returncode) or bool(self.of("crash"))

    def _role(self, event: dict) -> str | None:
        start = self.starts.get(event["pid"])
        return start["role"] if start else None


def load(results: Path, script: Path, completed: Completed, under_launcher: bool, timeout: float) -> Run:
    run = Run(script=script, completed=completed, under_launcher=under_launcher, timeout=timeout)
    for path in sorted(results.glob("events-*.jsonl")):
        pid = int(path.stem.split("-", 1)[1])
        run.events.extend(_read(path, pid))
    run.events.sort(key=lambda event: event["time"])
    for event in run.events:
        if event["kind"] == "start":
            run.starts[event["pid"]] = event
            if event.get("rank") is not None:
                run.ranks[event["pid"]] = event["rank"]
        elif event["kind"] == "process_group":
            run.ranks[event["pid"]] = event["rank"]
    return run


def _read(path: Path, pid: int) -> Iterable[dict]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last line of a killed process may be cut short
            event["pid"] = pid
            yield event


def _on_rank(rank: int | None) -> str:
    return f" on rank {rank}" if rank is not None else ""


def _display(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:
        return filename
