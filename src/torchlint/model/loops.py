"""Loop structure: batch loops (one step per batch of a loader) and epoch loops (a loop around
batch loops, directly or through a same-file helper called in its body).

A batch loop is:
- a `for` over a loader, also wrapped: `enumerate(loader)`, `tqdm(loader)`, `zip(a, b)`,
  `iter(loader)`, `itertools.cycle(loader)`, `islice(loader, n)`, or an unknown function that
  adapts it (`metric_logger.log_every(loader, 10)`);
- any loop (`while True:`, `for step in range(max_steps):`) whose own body draws batches with
  `next(it)` (or `it.__next__()`) from an iterator over a loader.
"Loader" means a value the model knows to be one: a torch DataLoader (or a same-file subclass),
an iterator over one, or what a framework's `prepare`/`setup_dataloaders` hands back.

An epoch loop starts a new pass over a loader each time round. Besides loops around batch loops,
that is a loop around the creation of an iterator over the loader that the batch loop draws
from: `it = iter(loader)` in the `except StopIteration:` of a step-budget loop (the loop is its
own epoch loop), or at the top of each epoch; and, for a same-file generator over the loader
(`while True: for batch in loader: yield batch`), the generator's loop around its pass. The
batch loop that draws from the iterator decides whether those passes train.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data, modules
from torchlint.model.iteration import drawn_iterator
from torchlint.project.summary import BatchLoopFact, EpochLoopFact
from torchlint.model.values import Kind, Value, builtin_or_qualified
from torchlint.model.walks import Walk

if TYPE_CHECKING:
    from torchlint.model import Model

_LOOPS = (cst.For, cst.While)
_ITERATED = (Kind.LOADER, Kind.ITERATOR, Kind.MANAGED)
_MAX_HELPER_DEPTH = 4


@dataclass(frozen=True)
class BatchLoop:
    # The loop, or for a loop in another module of the project, the call that runs it.
    node: cst.For | cst.While | cst.Call = field(repr=False)
    # What the loop draws batches from: the loader expressions after unwrapping (for `zip`,
    # several), or the iterators that `next()` is called on; for a loop elsewhere, the argument.
    sources: tuple[cst.BaseExpression, ...] = field(repr=False)
    loaders: frozenset[Value]  # their values (LOADER, ITERATOR or MANAGED; may hold UNKNOWN)
    elsewhere: BatchLoopFact | None = None  # the loop in another module, from its summary


@dataclass(frozen=True)
class EpochLoop:
    # The loop, or for an epoch loop a function of another module owns, the call that runs it.
    node: cst.For | cst.While | cst.Call = field(repr=False)
    # (batch loop, the loader values it iterates when reached from this epoch loop): through a
    # helper, a parameter takes the value of the argument this loop passes.
    batch_loops: tuple[tuple[BatchLoop, frozenset[Value]], ...]
    elsewhere: EpochLoopFact | None = None  # the loop in another module, from its summary
    # False for a loop that starts a new pass only on some times round: one re-creating an
    # exhausted iterator (`except StopIteration: it = iter(loader)`) counts steps, not passes
    counts_passes: bool = True

    @property
    def variable(self) -> str | None:
        """The loop's own counter (`epoch` in `for epoch in range(n)`), if it has a usable one
        that counts the passes over the loader."""
        if self.counts_passes and isinstance(self.node, cst.For) and isinstance(self.node.target, cst.Name):
            name = self.node.target.value
            return None if name.startswith("_") else name
        return None


class Loops:
    def __init__(self, model: Model) -> None:
        self.model = model
        self._batch_loops: list[BatchLoop] | None = None
        self._epoch_loops: list[EpochLoop] | None = None
        self._trains: dict[cst.CSTNode, bool] = {}
        # None (the iterable itself) for names that wrap each other in a loop (`a = tqdm(b)`,
        # `b = tqdm(a)`)
        self._sources = Walk(self._find_sources, None)

    def batch_loops(self) -> list[BatchLoop]:
        if self._batch_loops is None:
            self._batch_loops = self._find_batch_loops()
        return self._batch_loops

    def epoch_loops(self) -> list[EpochLoop]:
        if self._epoch_loops is None:
            self._epoch_loops = self._find_epoch_loops()
        return self._epoch_loops

    def trains(self, loop: BatchLoop) -> bool:
        """Whether a batch loop updates weights (`optimizer.step()`, `scaler.step(optimizer)`,
        a DeepSpeed engine's `.step()`) in its body or in a same-file helper it calls, also
        through the project's own step method called on an object the file does not show the
        making of (`model.optimize_parameters()`). A loop that only calls `.backward()` reads
        gradients (saliency, head importance): it analyses, it does not train."""
        if loop.elsewhere is not None:
            return loop.elsewhere.trains
        node = loop.node
        if node not in self._trains:
            calls = self._calls_reached(node)
            self._trains[node] = any(_is_step(call) for call in calls) or any(
                self._project_step(call) for call in calls
            )
        return self._trains[node]

    def _calls_reached(self, node: cst.CSTNode) -> list[cst.Call]:
        summaries = self.model.summaries
        return [call for place in (node, *summaries.reachable(node)) for call in summaries.calls_within(place)]

    def _project_step(self, call: cst.Call) -> bool:
        """Whether ``call`` is `x.name(...)` on an unknown receiver and every method of that name in
        the file's classes takes a training step, or, when the file defines none, the name is
        one by which projects conventionally take a step (`model.optimize_parameters()` on a
        model a builder of another module makes). A torch module method name (`train`, `eval`)
        is the module's, whatever the file defines."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        name = func.attr.value
        if name in modules.SELF_RETURNING_METHODS or name in modules.INERT_METHODS:
            return False
        model = self.model
        methods = [fn for fn in model.functions.get(name, ()) if isinstance(model.scope(fn), cst.ClassDef)]
        if (not methods and name not in data.PROJECT_STEP_METHODS) or model.summaries.targets(call):
            return False
        receiver = model.values.of(func.value)
        if not all(value.kind is Kind.UNKNOWN for value in receiver):
            return False
        return all(any(_is_step(inner) for inner in self._calls_reached(method)) for method in methods)

    def iterated_sources(self, iterable: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
        """The expressions a `for` over ``iterable`` draws items from, through `enumerate`,
        `tqdm`, `zip`, `iter`, `itertools.cycle`..., also bound to a name first (`progress =
        tqdm(loader)`)."""
        found = self._sources(iterable)
        return found if found is not None else (iterable,)

    def _find_sources(self, iterable: cst.BaseExpression) -> tuple[cst.BaseExpression, ...]:
        wrapping = self.model.values.pipeline.wrapping_calls(iterable)
        if wrapping is not None:
            return tuple(source for call in wrapping for source in self.iterated_sources(call))
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
            iterator = drawn_iterator(model, call)
            if iterator is None:
                continue
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
        by_function: dict[cst.CSTNode, list[BatchLoop]] = {}
        for loop in batch_loops:
            by_function.setdefault(model.function_of(loop.node), []).append(loop)
        epochs = []
        enclosing = {
            loop.node: [outer for outer in _enclosing_loops(model, loop.node) if not _picks_the_loader(model, outer, loop)]
            for loop in batch_loops
        }
        candidates = {ancestor for loops in enclosing.values() for ancestor in loops}
        candidates |= self._loops_calling_helpers(by_function)
        restarts, sometimes = self._restarts(batch_loops)
        for node in sorted(candidates | restarts.keys(), key=model.order):
            reached = [(loop, loop.loaders) for loop in batch_loops if node in enclosing[loop.node]]
            reached.extend(self._through_helpers(node, by_function, {}, 0, set()))
            reached.extend(restarts.get(node, ()))
            if reached:
                epochs.append(EpochLoop(node, tuple(reached), counts_passes=node not in sometimes or node in candidates))
        epochs.extend(self._epoch_loops_elsewhere())
        return sorted(epochs, key=lambda epoch: model.order(epoch.node))

    def _epoch_loops_elsewhere(self) -> list[EpochLoop]:
        """Calls of project functions (of another module) that own an epoch loop around a
        training batch loop over one of their parameters and never re-seed it."""
        model = self.model
        summaries = model.summaries
        values = model.values
        found = []
        for call in model.calls:
            for project_call in summaries.imported(call):
                summary = project_call.summary
                for epoch in summary.epoch_loops:
                    reached = []
                    for source in sorted(epoch.trains_on - epoch.seeds):
                        argument = project_call.argument(source)
                        if argument is None:
                            continue
                        loaders = values.of(argument)
                        fact = next(loop for loop in summary.batch_loops if loop.source == source)
                        reached.append((BatchLoop(call, (argument,), loaders, fact), loaders))
                    if reached:
                        found.append(EpochLoop(call, tuple(reached), epoch))
        return found

    def _restarts(self, batch_loops: list[BatchLoop]):
        """Epoch loops of batch loops that draw from iterators: each loop where an iterator over
        a loader is created anew, with (the drawing loop, the loaders it then passes over); and
        those of them that create it only on some times round (on exhaustion)."""
        found: dict[cst.CSTNode, list[tuple[BatchLoop, frozenset[Value]]]] = defaultdict(list)
        sometimes: set[cst.CSTNode] = set()
        for loop in batch_loops:
            passes: dict[cst.CSTNode, set[Value]] = defaultdict(set)
            for value in loop.loaders:
                if value.kind is Kind.ITERATOR and value.origin is not None and isinstance(value.node, cst.Call):
                    for boundary in self._boundaries(value.node, loop.node):
                        passes[boundary].add(value.origin)
                        if not _every_time_round(self.model, value.node, boundary):
                            sometimes.add(boundary)
            for boundary, loaders in passes.items():
                found[boundary].append((loop, frozenset(loaders)))
        return found, sometimes

    def _boundaries(self, creation: cst.Call, drawing: cst.CSTNode) -> list[cst.CSTNode]:
        """The loops that start a new pass of an iterator made by ``creation`` and drawn from in
        ``drawing``: the innermost loop around the creation that is or holds the drawing loop,
        and inside a same-file generator, its loops around a pass over the loader."""
        model = self.model
        drawing_loops = {drawing, *_enclosing_loops(model, drawing)}
        found = [loop for loop in _loops_repeating(model, creation) if loop in drawing_loops][:1]
        summaries = model.summaries
        for generator, _ in summaries.targets(creation):
            if summaries.returns(generator) is None:
                found.extend(self._generator_passes(generator))
        return found

    def _generator_passes(self, generator: cst.FunctionDef) -> list[cst.CSTNode]:
        """Loops of a generator around a pass over a loader: around a batch loop of its own, or
        around `yield from loader`; a batch loop of its own that re-creates its iterator over
        the loader (`it = iter(loader)` on StopIteration) starts each pass itself."""
        model = self.model
        passes = []
        restarting = []
        for loop in self.batch_loops():
            if model.function_of(loop.node) is not generator:
                continue
            restarts = [
                boundary
                for value in loop.loaders
                if value.kind is Kind.ITERATOR and value.origin is not None and isinstance(value.node, cst.Call)
                for boundary in self._boundaries(value.node, loop.node)
            ]
            restarting.extend(boundary for boundary in restarts if boundary not in restarting)
            if not restarts:
                passes.append(loop.node)
        for node in model.returns:
            if isinstance(node, cst.Yield) and isinstance(node.value, cst.From) and model.function_of(node) is generator:
                if any(value.kind in _ITERATED for value in model.values.of(node.value.item)):
                    passes.append(node)
        found = restarting
        for node in passes:
            around = _loops_repeating(model, node)
            if around and around[0] not in found:
                found.append(around[0])
        return found

    def _loops_calling_helpers(self, by_function) -> set[cst.CSTNode]:
        """Loops whose body calls a same-file function that contains (or reaches) a batch loop,
        or a project function of another module that trains over a parameter."""
        model = self.model
        summaries = model.summaries
        helpers = {fn for fn in by_function if isinstance(fn, cst.FunctionDef)}
        found = set()
        for call in model.calls:
            loop = self._enclosing_loop(call)
            if loop is None:
                continue
            if any(project_call.summary.batch_loops for project_call in summaries.imported(call)) or any(
                target in helpers or helpers & summaries.reachable(target) for target, _ in summaries.targets(call)
            ):
                found.add(loop)
                found.update(_enclosing_loops(model, loop))
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
            for project_call in summaries.imported(call):
                for fact in project_call.summary.batch_loops:
                    argument = project_call.argument(fact.source)
                    if argument is None:
                        continue
                    if isinstance(argument, cst.Name) and argument.value in context and _is_param_read(model, argument):
                        loaders = context[argument.value]
                    else:
                        loaders = values.of(argument)
                    reached.append((BatchLoop(call, (argument,), loaders, fact), loaders))
        return reached


def _param_names(fn: cst.FunctionDef) -> list[str]:
    params = fn.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _is_param_read(model: Model, name: cst.Name) -> bool:
    """Whether a name read refers (only) to a parameter of its function."""
    bindings = model.bindings_of(name)
    return bool(bindings) and all(b.how == "param" for b in bindings)


def _is_step(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in data.WEIGHT_UPDATE_METHODS


def _loops_repeating(model: Model, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The loops inside its own function that run ``node`` again each time round, innermost
    first (a `for` header's iterable is evaluated once, so that loop does not)."""
    found = []
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(ancestor, cst.While) or (isinstance(ancestor, cst.For) and child is not ancestor.iter):
            found.append(ancestor)
        child = ancestor
    return found


def _enclosing_loops(model: Model, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The loops around ``node`` inside its own function."""
    found = []
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(ancestor, _LOOPS):
            found.append(ancestor)
    return found


def _picks_the_loader(model: Model, outer: cst.CSTNode, loop: BatchLoop) -> bool:
    """Whether the loop around a batch loop picks which loader it passes over: each time round
    binds the loader the batch loop draws from (`for loader in (train_loader, val_loader):`, or
    `for phase in ("train", "val"):` around `for batch in loaders[phase]:`). Its times round are
    the phases of one epoch, each over another loader, not passes over the same one."""
    if not isinstance(outer, cst.For):
        return False
    for source in loop.sources:
        picked = source
        if isinstance(source, cst.Subscript) and len(source.slice) == 1 and isinstance(source.slice[0].slice, cst.Index):
            picked = source.slice[0].slice.value
        if isinstance(picked, cst.Name) and any(
            binding.how == "for" and binding.statement is outer for binding in model.reaching(picked)
        ):
            return True
    return False


def _every_time_round(model: Model, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
    """Whether ``node``, inside ``loop``, runs once on every time round it: no branch, handler
    or inner loop between them (a node outside the loop, the call of a generator whose loop
    it is, is not asked about)."""
    between = []
    for ancestor in model.ancestors(node):
        if ancestor is loop:
            return not any(isinstance(a, _SOMETIMES) for a in between)
        between.append(ancestor)
    return True


_SOMETIMES = (cst.If, cst.ExceptHandler, cst.For, cst.While, cst.IfExp, cst.BooleanOperation)
