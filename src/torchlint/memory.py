"""The cycle collector in a run over many files (runner.py): kept off LibCST's trees.

A LibCST tree is hundreds of thousands of container objects and holds no reference cycle, so
reference counting frees it once nothing holds it. The semantic model built over it does hold
cycles (its layers point back at it), and is freed by the cycle collector; left alone, every
collection would also walk the nodes of the tree the model holds, again and again while the file
is checked: a tenth of a cold run, and more on large files. So, in a batch run:

- what is alive when the run starts (everything imported) is frozen out of the collector's sight
  (`gc.freeze`), and young objects are collected less often (``THRESHOLD``);
- each checked file's tree is parsed, and its model's one pass built, with the collector off,
  then frozen: no collection walks the tree or the model's tables (every node, its parent, its
  scope...; freezing them halves the collection that frees each file's model). First the
  garbage of the previous file is collected, because garbage frozen is never freed;
- the model then holds cycles the collector cannot free (its layers point back at it, and
  everything a frozen object points to counts as alive): when its file is checked, the engine
  `release`s it, dropping its attributes, so reference counting frees its tables and the tree,
  and the collector its layers.

What else is alive at that moment is frozen too: the models the project index keeps for the
summaries of other modules (up to `_TREE_BYTES` of their source, project/index.py). One the index drops later stays in
memory until the run ends, when everything is unfrozen.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

# With the default threshold (700 allocations) the collector would run thousands of times per
# file for nothing.
THRESHOLD = (10_000, 50, 50)

_T = TypeVar("_T")
_batch = False


@contextmanager
def batch() -> Iterator[None]:
    """A run over many files in this process (and the workers it forks)."""
    global _batch
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*THRESHOLD)
    _batch = True
    try:
        yield
    finally:
        _batch = False
        gc.set_threshold(*threshold)
        gc.unfreeze()


def start_worker() -> None:
    """A worker process of a batch run: what it inherited is never scanned (and its pages stay
    shared with the parent)."""
    global _batch
    gc.freeze()
    gc.set_threshold(*THRESHOLD)
    _batch = True


def frozen(build: Callable[..., _T], *args) -> _T:
    """``build(*args)`` (a file's tree, the model of a file to check) out of the collector's
    sight in a batch run (see above); an ordinary call elsewhere (the language server, flake8)."""
    if not _batch:
        return build(*args)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        return build(*args)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def release(built: object) -> None:
    """Free what `frozen` built once the run is done with it: its attributes are dropped, so
    the cycles through it, which the collector cannot see, are cut."""
    if _batch:
        vars(built).clear()
