"""Run the script's process tree with a time limit, and leave no process of it behind.

The script starts in a session of its own, so its process group can be signalled at once. That is
not enough: torch.distributed.run puts each worker in a new session, and daemons may detach. Every
process of the run inherits the run's configuration variable, so on Linux the processes to end
are found by that variable in /proc/<pid>/environ, wherever they went.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# How long processes get to exit on SIGTERM before SIGKILL.
_GRACE_SECONDS = 3.0


@dataclass(frozen=True)
class Completed:
    returncode: int | None  # None when the run was killed at the time limit
    timed_out: bool
    seconds: float


def run(argv: list[str], env: dict[str, str], marker: str, timeout: float, log: Path, show_output: bool) -> Completed:
    """`marker` is a "NAME=value" entry of `env` that no process outside this run carries."""
    tag = marker.encode()
    started = time.monotonic()
    with log.open("wb") as output:
        process = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=None if show_output else output,
            stderr=sys.stderr.fileno() if show_output else subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            returncode, timed_out = None, True
        except BaseException:  # Ctrl-C in the parent: take the whole run down with it
            end_tree(process, tag)
            raise
        end_tree(process, tag)
    return Completed(returncode, timed_out, time.monotonic() - started)


def end_tree(process: subprocess.Popen, marker: bytes) -> None:
    """SIGTERM, a grace period, then SIGKILL for every process of the run still alive."""
    if not _alive_members(process, marker):
        process.poll()
        return
    _signal_all(process, marker, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_SECONDS
    while time.monotonic() < deadline and _alive_members(process, marker):
        time.sleep(0.05)
    for _ in range(20):  # a process may fork while we kill: repeat until nothing is left
        if not _alive_members(process, marker):
            break
        _signal_all(process, marker, signal.SIGKILL)
        time.sleep(0.05)
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _signal_all(process: subprocess.Popen, marker: bytes, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in _marked_processes(marker):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive_members(process: subprocess.Popen, marker: bytes) -> bool:
    if process.poll() is None:
        return True
    try:
        os.killpg(process.pid, 0)
        group_alive = True
    except (ProcessLookupError, PermissionError):
        group_alive = False
    return group_alive or bool(_marked_processes(marker))


def _marked_processes(marker: bytes) -> list[int]:
    """Live processes (not zombies) whose environment holds the run's marker; Linux only."""
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    found = []
    own = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found

