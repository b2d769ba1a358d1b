"""One process of the run: who it is, how it ends (crash, sys.exit, a confirm bound), forks."""

from __future__ import annotations

import atexit
import os
import sys
import threading

from _tlconfirm import events, sites


class ConfirmStop(SystemExit):
    """Raised where a bound of the run is reached: the script ends as if it called sys.exit(0)."""

    def __init__(self) -> None:
        super().__init__(0)


_stopping = {"reason": None}


def role(script: str) -> str:
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0.replace(os.sep, "/").endswith("torch/distributed/run.py"):
        return "launcher"
    if argv0 and os.path.realpath(argv0) == os.path.realpath(script):
        return "rank" if "TORCHELASTIC_RUN_ID" in os.environ else "script"
    if "--multiprocessing-fork" in sys.argv:
        return "spawned"
    return "other"


def start(script: str) -> str:
    kind = role(script)
    events.emit(
        "start",
        pid=os.getpid(),
        ppid=os.getppid(),
        role=kind,
        argv=sys.argv[:4],
        rank=_int_env("RANK"),
        world_size=_int_env("WORLD_SIZE"),
    )
    _previous_hook = sys.excepthook

    def excepthook(kind_, value, tb):
        record_crash(value, tb)
        _previous_hook(kind_, value, tb)

    sys.excepthook = excepthook
    threading.excepthook = _thread_excepthook(threading.excepthook)
    _wrap_sys_exit()
    atexit.register(lambda: events.emit("exit", stop=_stopping["reason"]))
    os.register_at_fork(after_in_child=_after_fork)
    return kind


def record_crash(value: BaseException, tb) -> None:
    if isinstance(value, SystemExit):
        return
    events.emit(
        "crash",
        type=type(value).__name__,
        message=str(value).strip().splitlines()[0][:500] if str(value).strip() else "",
        frames=sites.user_frames_of_traceback(tb),
    )


def stop(reason: str) -> None:
    """End the script now because a bound (--max-epochs, --max-steps) is reached."""
    if _stopping["reason"] is None:
        _stopping["reason"] = reason
        events.emit("stopped", reason=reason)
    raise ConfirmStop()


def _thread_excepthook(previous):
    def hook(args):
        if args.exc_type is not SystemExit:
            record_crash(args.exc_value, args.exc_traceback)
        previous(args)

    return hook


def _wrap_sys_exit() -> None:
    original = sys.exit

    def exit(status=None):  # noqa: A001 - replaces sys.exit
        frames = sites.user_frames(sys._getframe(1), limit=1)
        if frames:
            events.emit("sys_exit", code=status if isinstance(status, int) or status is None else str(status), frames=frames)
        original(status)

    sys.exit = exit


def _after_fork() -> None:
    events.emit("start", pid=os.getpid(), ppid=os.getppid(), role="forked", argv=[], rank=_int_env("RANK"), world_size=_int_env("WORLD_SIZE"))


def _int_env(name: str):
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None
