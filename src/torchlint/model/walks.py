"""Guards for the model's recursive walks.

The model follows definitions through assignments, returns, calls and class hierarchies, and a
program may make any of them circular (a recursive function, `a = wrap(b)` and `b = wrap(a)` in a
loop, a class named as its own base) or very long. Every such walk goes through a `Walk`: a key
met again while it is being computed, or asked with more computations of the same walk under way
than its bound, gets the walk's unknown answer for that one question, never an exception (the
engine reports a RecursionError as a bug)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

# Nested computations of one walk. Real programs stay far below (a helper calling a helper ten
# deep is rare); the bound keeps the interpreter's stack for the other walks.
DEPTH = 40


class Walk(Generic[K, V]):
    """``compute(key)`` memoised, answering ``unknown`` inside a cycle and past ``depth``.

    An answer cut off by the depth bound is not memoised: asked from nearer, the same key may
    get its full answer. ``key`` maps an argument to what identifies it (``id`` for values whose
    equality is costly)."""

    def __init__(
        self, compute: Callable[[K], V], unknown: V, depth: int = DEPTH, key: Callable[[K], Hashable] | None = None
    ) -> None:
        self._compute = compute
        self._unknown = unknown
        self._depth = depth
        self._key = key
        self._done: dict[Hashable, V] = {}
        self._active: set[Hashable] = set()

    def __call__(self, argument: K) -> V:
        key = argument if self._key is None else self._key(argument)
        if key in self._done:
            return self._done[key]
        if key in self._active or len(self._active) >= self._depth:
            return self._unknown
        self._active.add(key)
        try:
            result = self._compute(argument)
        finally:
            self._active.discard(key)
        self._done[key] = result
        return result
