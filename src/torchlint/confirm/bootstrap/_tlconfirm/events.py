"""Observations, one JSON object per line, in `<results>/events-<pid>.jsonl`.

Each line is flushed as it is written: a process that is killed (timeout, a crashed sibling rank)
keeps everything it saw until then.
"""

from __future__ import annotations

import json
import os
import threading
import time

_lock = threading.Lock()
_state = {"pid": None, "handle": None, "folder": None}


def open_for(folder: str) -> None:
    _state["folder"] = folder
    _reopen()


def _reopen() -> None:
    """(Re)open the file of this process; a forked child must not append to its parent's file."""
    _state["pid"] = os.getpid()
    path = os.path.join(_state["folder"], f"events-{os.getpid()}.jsonl")
    _state["handle"] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process


def emit(kind: str, **data) -> None:
    if _state["folder"] is None:
        return
    data["kind"] = kind
    data["time"] = time.monotonic()
    line = json.dumps(data, default=repr) + "\n"
    with _lock:
        if _state["pid"] != os.getpid():
            _reopen()
        try:
            _state["handle"].write(line)
            _state["handle"].flush()
        except (OSError, ValueError):
            pass  # the results folder is gone: the parent has already given up on this run
