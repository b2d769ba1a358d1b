"""`--profile`: where a run's time goes, per phase (reading, parsing, the model) and per rule.

The engine marks its phases with `timer(...)`; when no profile is active that is a shared no-op
context, so an ordinary run pays one global lookup per phase. Phases are timed in CPU time of the
process (`time.process_time`): on a loaded machine wall time mostly measures the other jobs. Worker processes record into their
own Profile and send its `snapshot()` back with their results; the parent `merge`s them.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field

_NOTHING = nullcontext()

# Phases the engine and runner report; rules appear as "rule TLxxx name".
READ = "read file"
CACHE_LOOKUP = "cache lookup"
CACHE_STORE = "cache store"
SKIPPED = "files the prefilter skips (no rule can fire): CPython syntax check only"
SYNTAX = "syntax check (CPython)"
PARSE = "parse (LibCST)"
MODEL = "semantic model (one pass)"
LOCATE = "positions (files with findings only)"
SUMMARIES = "project summaries (modules other files call into; their parses are also under parse)"


@dataclass
class Profile:
    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def add(self, phase: str, seconds: float, calls: int = 1) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds
        self.calls[phase] = self.calls.get(phase, 0) + calls

    def snapshot(self) -> dict[str, tuple[float, int]]:
        return {phase: (self.seconds[phase], self.calls[phase]) for phase in self.seconds}

    def merge(self, snapshot: dict[str, tuple[float, int]]) -> None:
        for phase, (seconds, calls) in snapshot.items():
            self.add(phase, seconds, calls)

    def report(self, wall: float, files: int, jobs: int) -> str:
        total = sum(self.seconds.values()) or 1e-9
        lines = [
            f"Profile: {files} file{'s' if files != 1 else ''}, {wall:.3f}s wall, {jobs} job{'s' if jobs != 1 else ''}; "
            "CPU seconds, summed over worker processes",
            f"  {'CPU s':>9}  {'share':>6}  {'calls':>7}  phase",
        ]
        for phase in sorted(self.seconds, key=lambda p: -self.seconds[p]):
            seconds = self.seconds[phase]
            lines.append(f"  {seconds:9.3f}  {100 * seconds / total:5.1f}%  {self.calls[phase]:7d}  {phase}")
        lines.append(
            "  (a rule's time includes the model's lazy analyses it is the first to ask for: value kinds, "
            "function summaries, loops, constants, project summaries)"
        )
        return "\n".join(lines) + "\n"


_current: Profile | None = None


def start() -> Profile:
    global _current
    _current = Profile()
    return _current


def stop() -> Profile | None:
    global _current
    profile, _current = _current, None
    return profile


def active() -> Profile | None:
    return _current


class _Timer:
    __slots__ = ("profile", "phase", "started")

    def __init__(self, profile: Profile, phase: str) -> None:
        self.profile = profile
        self.phase = phase

    def __enter__(self) -> None:
        self.started = time.process_time()

    def __exit__(self, *exc_info) -> None:
        self.profile.add(self.phase, time.process_time() - self.started)


def count(phase: str) -> None:
    """Count an event that takes no time of its own (its time is in the phases around it)."""
    if _current is not None:
        _current.add(phase, 0.0)


def timer(phase: str):
    """A context manager that adds its block's time to ``phase`` while a profile is active."""
    return _NOTHING if _current is None else _Timer(_current, phase)
