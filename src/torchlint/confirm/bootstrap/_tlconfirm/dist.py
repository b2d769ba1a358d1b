"""Process groups and spawned workers.

Records each process group (backend, rank, world size: TL007 needs them); under simulation NCCL
becomes gloo, which runs the same collectives on CPU tensors. A collective waits at most the
run's timeout, so a rank that died cannot leave the others blocked. A script run directly that
calls init_process_group expecting a launcher's environment is stopped and re-run by the parent
under torch.distributed.run.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import os

import torch

from _tlconfirm import events, process, sites
from _tlconfirm.config import Config

_LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR")


def install(config: Config, simulated: bool) -> None:
    distributed = torch.distributed
    if not distributed.is_available():
        return
    from torch.distributed import distributed_c10d

    original = distributed_c10d.init_process_group

    @functools.wraps(original)
    def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, *args, **kwargs):
        explicit = world_size != -1 or rank != -1 or kwargs.get("store") is not None
        by_env = init_method in (None, "env://") and not explicit
        if config.launch == "direct" and by_env and not all(name in os.environ for name in _LAUNCHER_VARIABLES):
            events.emit("needs_launcher", frames=sites.user_frames(limit=3))
            process.stop("the script initialises a process group from a launcher's environment")
        requested = str(backend) if backend is not None else None
        if simulated and (backend is None or "nccl" in str(backend).lower()):
            backend = "gloo"
            kwargs.pop("device_id", None)
        limit = datetime.timedelta(seconds=config.collective_timeout)
        timeout = limit if timeout is None else min(timeout, limit)
        original(backend, init_method, timeout, world_size, rank, *args, **kwargs)
        events.emit(
            "process_group",
            requested=requested,
            backend=str(distributed.get_backend()),
            rank=distributed.get_rank(),
            world_size=distributed.get_world_size(),
            frames=sites.user_frames(limit=3),
        )

    distributed_c10d.init_process_group = init_process_group
    distributed.init_process_group = init_process_group
    _record_spawned_crashes()


def _record_spawned_crashes() -> None:
    """mp.spawn's workers catch their own exceptions (to send the traceback to the parent), so
    the excepthook never sees them: record them on the way."""
    spawn = importlib.import_module("torch.multiprocessing.spawn")  # the package re-exports a function of that name

    original = spawn._wrap

    # wraps() keeps the qualified name, so the function pickles by reference to the child as before.
    @functools.wraps(original)
    def _wrap(fn, i, args, error_file):
        def recorded(*call_args):
            try:
                return fn(*call_args)
            except Exception as error:
                process.record_crash(error, error.__traceback__)
                raise

        return original(recorded, i, args, error_file)

    spawn._wrap = _wrap
