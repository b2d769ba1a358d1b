"""Loop structure: batch loops (one step per batch of a loader) and epoch loops (a loop around
batch loops, directly or through a same-file helper called in its body).

A batch loop is:
- a `for` over a loader, also wrapped: `enumerate(loader)`, `tqdm(loader)`, `zip(a, b)`,
  `iter(loader)`, `itertools.cycle(loader)`, `islice(loader, n)`, or an unknown function that
  adapts it (`metric_logger.log_every(loader, 10)`);
- any loop (`while True:`, `for step in range(max_steps):`) whose own body draws batches with
  `next(it)` from an iterator over a loader.
"Loader" means a value the model knows to be one: a torch DataLoader (or a same-file subclass),
an iterator over one, or what a framework's `prepare`/`setup_dataloaders` hands back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data
from torchlint.model.values import Kind, Value, builtin_or_qualified

if TYPE_CHECKING:
    from torchlint.model import Model

_LOOPS = (cst.For, cst.While)
_ITERATED = (Kind.LOADER, Kind.ITERATOR, Kind.MANAGED)
_MAX_HELPER_DEPTH = 4


@dataclass(frozen=True)
class BatchLoop:
    node: cst.For | cst.While = field(repr=False)
    # What the loop draws batches from: the loader expressions after unwrapping (for `zip`,
    # several), or the iterators that `next()` is called on.
    sources: tuple[cst.BaseExpression, ...] = field(repr=False)
    loaders: frozenset[Value]  # their values (LOADER, ITERATOR or MANAGED; may hold UNKNOWN)


@dataclass(frozen=True)
class EpochLoop:
    node: cst.For | cst.While = field(repr=False)
    # (batch loop, the loader values it iterates when reached from this epoch loop): through a
    # helper, a parameter takes the value of the argument this loop passes.
    batch_loops: tuple[tuple[BatchLoop, frozenset[Value]], ...]

    @property
    def variable(self) -> str | None:
        """The loop's own counter (`epoch` in `for epoch in range(n)`), if it has a usable one."""
        if isinstance(self.node, cst.For) and isinstance(self.node.target, cst.Name):
            name = self.node.target.value
            return None if name.startswith("_") else name
        return None


class Loops:
    def __init__(self, model: Model) -> None:
        self.model = model
        self._batch_loops: list[BatchLoop] | None = None
        self._epoch_loops: list[EpochLoop] | None = None
        self._trains: dict[cst.CSTNode, bool] = {}

    def batch_loops(self) -> list[BatchLoop]:
        if self._batch_loops is None:
            self._batch_loops = self._find_batch_loops()
        return self._batch_loops

    def epoch_loops(self) -> list[EpochLoop]:
        if self._epoch_loops is None:
            self._epoch_loops = self._find_epoch_loops()
        return self._epoch_loops

    def trains(self, loop: BatchLoop) -> bool:
        """Whether a batch loop takes training steps (`.backward()`, `.step()`) in its body or in
        a same-file helper it calls."""
        node = loop.node
        if node not in self._trains:
            summaries = self.model.summaries
            places = [node, *summaries.reachable(node)]
            self._trains[node] = any(
                isinstance(call.func, cst.Attribute) and call.func.attr.value in data.TRAINING_STEP_METHODS
                for place in places
                for call in summaries.calls_within(place)
            )
        return self._trains[node]

    def iterated_sources(self, iterable: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
        """The expressions a `for` over ``iterable`` draws items from, through `enumerate`,
        `tqdm`, `zip`, `iter`, `itertools.cycle`..."""
        if isinstance(iterable, cst.Call):
            name = builtin_or_qualified(self.model, iterable)
            args = [arg for arg in iterable.args if arg.keyword is None and not arg.star]
            if name == "zip":
                return tuple(source for arg in args for source in self.iterated_sources(arg.value))
            if name in data.ITERATION_WRAPPERS and len(args) > data.ITERATION_WRAPPERS[name]:
                return self.iterated_sources(args[data.ITERATION_WRAPPERS[name]].value)
            if self.model.values.pipeline.adapted_loaders(iterable):
                return (iterable.args[0].value,)
        return (iterable,)

    # -- finding ------------------------------------------------------------------------------
    def _find_batch_loops(self) -> list[BatchLoop]:
        model = self.model
        values = model.values
        found: dict[cst.CSTNode, BatchLoop] = {}
        for binding in model.all_bindings():
            if binding.how != "for" or binding.statement in found:
                continue
            loop = binding.statement
            sources = self.iterated_sources(loop.iter)
            loaders = frozenset().union(*(values.of(source) for source in sources))
            if any(value.kind in _ITERATED for value in loaders):
                found[loop] = BatchLoop(loop, sources, loaders)
        for call in model.calls:
            if not (isinstance(call.func, cst.Name) and call.func.value == "next" and call.args):
                continue
            if model.bindings_of(call.func):
                continue
            iterator = call.args[0].value
            iterators = values.of(iterator)
            if not any(value.kind is Kind.ITERATOR for value in iterators):
                continue
            loop = self._enclosing_loop(call)
            if loop is not None and loop not in found:
                found[loop] = BatchLoop(loop, (iterator,), iterators)
        return sorted(found.values(), key=lambda loop: model.order(loop.node))

    def _enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        for ancestor in self.model.ancestors(node):
            if isinstance(ancestor, _LOOPS):
                return ancestor
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
        return None

    def _find_epoch_loops(self) -> list[EpochLoop]:
        model = self.model
        batch_loops = self.batch_loops()
        if not batch_loops:
            return []
        by_function: dict[cst.CSTNode, list[BatchLoop]] = {}
        for loop in batch_loops:
            by_function.setdefault(model.function_of(loop.node), []).append(loop)
        epochs = []
        enclosing = {loop.node: _enclosing_loops(model, loop.node) for loop in batch_loops}
        candidates = {ancestor for loops in enclosing.values() for ancestor in loops}
        candidates |= self._loops_calling_helpers(by_function)
        for node in sorted(candidates, key=model.order):
            reached = [(loop, loop.loaders) for loop in batch_loops if node in enclosing[loop.node]]
            reached.extend(self._through_helpers(node, by_function, {}, 0, set()))
            if reached:
                epochs.append(EpochLoop(node, tuple(reached)))
        return epochs

    def _loops_calling_helpers(self, by_function) -> set[cst.CSTNode]:
        """Loops whose body calls a same-file function that contains (or reaches) a batch loop."""
        model = self.model
        summaries = model.summaries
        helpers = {fn for fn in by_function if isinstance(fn, cst.FunctionDef)}
        if not helpers:
            return set()
        found = set()
        for call in model.calls:
            loop = self._enclosing_loop(call)
            if loop is None:
                continue
            for target, _ in summaries.targets(call):
                if target in helpers or helpers & summaries.reachable(target):
                    found.add(loop)
                    found.update(_enclosing_loops(model, loop))
                    break
        return found

    def _through_helpers(self, node, by_function, context, depth, seen):
        """Batch loops in same-file functions called inside ``node``, with the loader values
        they iterate given the arguments passed (``context``: parameter -> values)."""
        if depth >= _MAX_HELPER_DEPTH:
            return []
        model = self.model
        summaries = model.summaries
        values = model.values
        reached = []
        for call in summaries.calls_within(node):
            for target, offset in summaries.targets(call):
                if target in seen:
                    continue
                arguments = {}
                for param in _param_names(target):
                    arg = summaries.argument(target, call, offset, param)
                    if arg is None:
                        continue
                    if isinstance(arg, cst.Name) and arg.value in context and _is_param_read(model, arg):
                        arguments[param] = context[arg.value]
                    else:
                        arguments[param] = values.of(arg)
                for loop in by_function.get(target, ()):
                    loaders = frozenset()
                    for source in loop.sources:
                        if isinstance(source, cst.Name) and source.value in arguments and _is_param_read(model, source):
                            loaders |= arguments[source.value]
                        else:
                            loaders |= values.of(source)
                    reached.append((loop, loaders))
                reached.extend(self._through_helpers(target, by_function, arguments, depth + 1, seen | {target}))
        return reached


def _param_names(fn: cst.FunctionDef) -> list[str]:
    params = fn.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _is_param_read(model: Model, name: cst.Name) -> bool:
    """Whether a name read refers (only) to a parameter of its function."""
    bindings = model.bindings_of(name)
    return bool(bindings) and all(b.how == "param" for b in bindings)


def _enclosing_loops(model: Model, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The loops around ``node`` inside its own function."""
    found = []
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(ancestor, _LOOPS):
            found.append(ancestor)
    return found
