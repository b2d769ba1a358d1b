"""TL003 evidence: conversions (`.to`, `.cuda`, `.half`...) made on watched lines, and later uses
of the receiver that the conversion left behind.

Only conversions on watched lines (statements of static findings) are followed, so an ordinary
run keeps no table at all.
"""

from __future__ import annotations

import collections
import os
import sys

import torch
from torch.utils.weak import WeakTensorKeyDictionary

from _tlconfirm import events, sites

_PER_LINE = 3
_HERE = os.path.dirname(os.path.abspath(__file__))
# Frames between the user's call and our handler: the mode machinery and torch's device context.
_PASS_THROUGH = (os.path.join("torch", "overrides.py"), os.path.join("torch", "utils", "_device.py"))


def _passes_through(filename: str) -> bool:
    return filename.startswith(_HERE) or filename.endswith(_PASS_THROUGH)


class Placements:
    def __init__(self, script: str, watched: frozenset, observers=()) -> None:
        self.script = os.path.realpath(script)
        self.watched = watched
        # Called with (line, before, after) for each conversion on a watched line.
        self.observers = tuple(observers)
        self.pending = WeakTensorKeyDictionary()
        self.emitted = collections.Counter()
        self.stale_reported: set[int] = set()

    def direct_user_line(self) -> int | None:
        """The script line that called the conversion directly, when it is a watched line."""
        return direct_user_line(self.script, self.watched)

    def converted(self, method: str, source: torch.Tensor, result, before, after) -> None:
        """`source.method(...)` returned `result`; `before`/`after` are (device, dtype) pairs."""
        line = self.direct_user_line()
        if line is None:
            return
        changed = result is not source and before != after
        for observe in self.observers:
            observe(line, before, after)
        if changed:
            self.pending[source] = (line, method, before, after)
        self._emit(
            "convert",
            line,
            method=method,
            changed=changed,
            before=_describe(before),
            after=_describe(after),
        )

    def module_converted(self, method: str, module) -> None:
        line = self.direct_user_line()
        if line is not None:
            self._emit("module_convert", line, method=method, module=type(module).__name__)

    def stale(self, tensors, use: str) -> list[int]:
        """Report receivers used after a conversion left them behind; returns their lines."""
        if not len(self.pending):
            return []
        lines = []
        for tensor in tensors:
            found = self.pending.get(tensor)
            if found is None:
                continue
            line, method, before, after = found
            lines.append(line)
            if line not in self.stale_reported:
                self.stale_reported.add(line)
                events.emit(
                    "stale_use",
                    line=line,
                    method=method,
                    before=_describe(before),
                    after=_describe(after),
                    use=use,
                    frames=sites.user_frames(limit=3),
                )
        return lines

    def _emit(self, kind: str, line: int, **data) -> None:
        if self.emitted[(kind, line)] < _PER_LINE:
            self.emitted[(kind, line)] += 1
            events.emit(kind, line=line, **data)


def direct_user_line(script: str, lines: frozenset) -> int | None:
    """The line of `script` (a real path) that called the torch function being handled directly,
    when it is one of `lines`."""
    if not lines:
        return None
    frame = sys._getframe(1)
    while frame is not None and _passes_through(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or frame.f_lineno not in lines:
        return None
    if os.path.realpath(frame.f_code.co_filename) != script:
        return None
    return frame.f_lineno


def _describe(pair) -> str:
    device, dtype = pair
    return f"on {device} as {str(dtype).replace('torch.', '')}"
