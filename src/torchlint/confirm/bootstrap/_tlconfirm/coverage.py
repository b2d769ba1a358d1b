"""Which watched lines of the script ran: a finding on a line that never ran is `not-reached`.

Only frames of the script itself get a line tracer; once every watched line has been seen, the
tracer stops looking at new frames.
"""

from __future__ import annotations

import os
import sys
import threading

from _tlconfirm import events


def watch(script: str, lines: frozenset) -> None:
    if not lines:
        return
    target = os.path.realpath(script)
    pending = set(lines)
    same_file: dict[str, bool] = {}

    def is_script(filename: str) -> bool:
        known = same_file.get(filename)
        if known is None:
            known = same_file[filename] = os.path.realpath(filename) == target
        return known

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno in pending:
            pending.discard(frame.f_lineno)
            events.emit("line", line=frame.f_lineno)
            if not pending:
                sys.settrace(None)
                threading.settrace(None)  # type: ignore[arg-type]
                return None
        return local

    def global_(frame, event, arg):
        if event == "call" and is_script(frame.f_code.co_filename):
            return local
        return None

    sys.settrace(global_)
    threading.settrace(global_)
