"""DataLoaders and samplers: passes are cut short and counted as epochs (see progress), and each
pass records what TL006 and TL007 need: the sampler's epoch and order, the batch size per rank.
"""

from __future__ import annotations

import itertools
import weakref
import zlib

import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from _tlconfirm import events, process, sites
from _tlconfirm.config import Config
from _tlconfirm.progress import Progress

_ids = itertools.count(1)


class Loaders:
    def __init__(self, config: Config, progress: Progress, simulated: bool) -> None:
        self.config = config
        self.progress = progress
        self.simulated = simulated
        self.loader_ids: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.passes: dict[int, list[int]] = {}  # loader id -> [passes, passes with steps]
        self.sampler_ids: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def install(self) -> None:
        loaders = self
        original_init = DataLoader.__init__
        original_iter = DataLoader.__iter__

        def __init__(loader, *args, **kwargs):
            original_init(loader, *args, **kwargs)
            if loaders.simulated:
                loader.pin_memory = False  # there is no device to pin for
            loaders.built(loader)

        def __iter__(loader):
            identity = loaders.begin_pass(loader)
            return _CutPass(original_iter(loader), loaders, identity)

        DataLoader.__init__ = __init__
        DataLoader.__iter__ = __iter__
        self._watch_distributed_sampler()

    def built(self, loader) -> None:
        identity = next(_ids)
        self.loader_ids[loader] = identity
        self.passes[identity] = [0, 0]
        sampler = _sampler_of(loader)
        events.emit(
            "loader",
            id=identity,
            batch_size=loader.batch_size,
            sampler=type(sampler).__name__ if sampler is not None else None,
            sampler_id=self._sampler_id(sampler),
            frames=sites.user_frames(limit=3),
            **_world(),
        )

    def begin_pass(self, loader) -> int:
        identity = self.loader_ids.get(loader)
        if identity is None:  # built before instrumentation (impossible) or by a subclass skipping __init__
            identity = next(_ids)
            self.loader_ids[loader] = identity
            self.passes[identity] = [0, 0]
        passes, training = self.passes[identity]
        sampler = _sampler_of(loader)
        events.emit(
            "loader_pass",
            id=identity,
            number=passes,
            sampler_id=self._sampler_id(sampler),
            sampler_epoch=getattr(sampler, "epoch", None),
            frames=sites.user_frames(limit=3),
        )
        if training >= self.config.max_epochs:
            process.stop(f"stopped at the start of epoch {training + 1} (--max-epochs {self.config.max_epochs})")
        if passes >= 4 * self.config.max_epochs:
            process.stop(f"stopped at pass {passes + 1} over a loader (--max-epochs {self.config.max_epochs})")
        self.passes[identity][0] += 1
        return identity

    def _sampler_id(self, sampler):
        if sampler is None:
            return None
        try:
            return self.sampler_ids.get(sampler)
        except TypeError:
            return None

    def _watch_distributed_sampler(self) -> None:
        loaders = self
        original_init = DistributedSampler.__init__
        original_iter = DistributedSampler.__iter__

        def __init__(sampler, *args, **kwargs):
            original_init(sampler, *args, **kwargs)
            identity = next(_ids)
            loaders.sampler_ids[sampler] = identity
            events.emit(
                "sampler",
                id=identity,
                type=type(sampler).__name__,
                shuffle=getattr(sampler, "shuffle", None),
                rank=getattr(sampler, "rank", None),
                replicas=getattr(sampler, "num_replicas", None),
                frames=sites.user_frames(limit=3),
            )

        def __iter__(sampler):
            order = list(original_iter(sampler))
            events.emit(
                "sampler_pass",
                id=loaders._sampler_id(sampler),
                epoch=getattr(sampler, "epoch", None),
                rank=getattr(sampler, "rank", None),
                first=order[:8],
                digest=zlib.crc32(repr(order).encode()),
            )
            return iter(order)

        DistributedSampler.__init__ = __init__
        DistributedSampler.__iter__ = __iter__


class _CutPass:
    """One pass over a loader, ended after a few steps or batches."""

    def __init__(self, inner, loaders: Loaders, identity: int) -> None:
        self.inner = inner
        self.loaders = loaders
        self.identity = identity
        self.batches = 0
        self.steps_at_start = loaders.progress.steps
        config = loaders.config
        self.max_batches = config.max_batches if torch.is_grad_enabled() else config.max_steps
        self.counted = False

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.inner)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __next__(self):
        progress = self.loaders.progress
        steps = progress.steps - self.steps_at_start
        if steps and not self.counted:
            self.counted = True
            self.loaders.passes[self.identity][1] += 1
        if steps >= self.loaders.config.max_steps or self.batches >= self.max_batches:
            raise StopIteration
        batch = next(self.inner)
        if self.batches == 0:
            events.emit("batch", id=self.identity, size=_batch_size(batch))
        self.batches += 1
        progress.on_batch()
        return batch


def _sampler_of(loader):
    """The sampler that decides the order: the loader's, or the one inside its batch sampler."""
    batch_sampler = getattr(loader, "batch_sampler", None)
    inner = getattr(batch_sampler, "sampler", None)
    if inner is not None and hasattr(inner, "set_epoch"):
        return inner
    return getattr(loader, "sampler", None)


def _batch_size(batch):
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() else None
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for item in batch:
            size = _batch_size(item)
            if size is not None:
                return size
    return None


def _world() -> dict:
    distributed = torch.distributed
    if distributed.is_available() and distributed.is_initialized():
        return {"rank": distributed.get_rank(), "world_size": distributed.get_world_size()}
    return {"rank": None, "world_size": None}
