"""TL006 sampler-set-epoch-missing: a shuffling `DistributedSampler` (or another sampler with
`set_epoch`) feeds a loader that a training loop iterates every epoch, and `set_epoch` is never
called on it inside the epoch loop: every epoch then sees the same order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes import build
from torchlint.model import Binding, Model
from torchlint.model.loops import EpochLoop
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind, Value, inspects_only
from torchlint.registry import Finding, Rule


class SamplerSetEpochMissing(Rule, code="TL006"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return  # a test checks a few steps, not what the model learns from the sample order
        values = model.values
        for sampler in values.made(Kind.SAMPLER):
            if not (sampler.epoch_seeded and sampler.shuffles):
                continue
            loaders = [loader for loader in values.made(Kind.LOADER) if sampler in values.pipeline.loader_samplers(loader)]
            if not _only_given_to_loaders(model, sampler, frozenset(loaders)):
                continue
            unseeded = [
                epoch for epoch in _epoch_loops_training_on(model, loaders) if not _seeded_in(model, epoch, sampler, loaders)
            ]
            if unseeded:
                epoch = _innermost(model, unseeded)
                name = _name(model, sampler, loaders, epoch)
                # `DistributedSampler(ds) if distributed else None` (or a RandomSampler): other
                # runs have a sampler without set_epoch
                optional = any(
                    v.kind is Kind.NONE or (v.kind is Kind.SAMPLER and not v.epoch_seeded)
                    for loader in loaders
                    for v in values.pipeline.loader_samplers(loader)
                )
                fix = _fix(model, name, epoch, optional) if name is not None else None
                message, suggestions = _message(model, sampler, loaders, name, epoch, optional)
                yield Finding(sampler.node, message, fix, suggestions, suggested_at=epoch.node)


def _innermost(model: Model, epochs: list[EpochLoop]) -> EpochLoop:
    """The epoch loop nearest the batch loop among the first one and those nested in it: in
    `for layer in ...: for epoch in range(n): for batch in loader:` the epochs are counted by
    the inner loop, and the outer one repeats whole trainings."""
    chosen = epochs[0]
    for other in epochs[1:]:
        if chosen.node in model.ancestors(other.node):
            chosen = other
    return chosen


def _only_given_to_loaders(model: Model, sampler: Value, loaders: frozenset[Value]) -> bool:
    """Whether the sampler only reaches loaders and batch samplers (and inspections): handed to
    code the file does not show, it may be re-seeded there. A sampler inside a loader a function
    of another module returns reaches what that loader, one of ``loaders``, reaches."""
    values = model.values
    for use in values.uses(sampler.node, path=() if sampler.position is None else (sampler.position,)):
        if use.how == "argument":
            made = values.of(use.context)
            if any(v.kind in (Kind.LOADER, Kind.SAMPLER) and v.node is use.context for v in made):
                continue
            if any(values.pipeline.base_construction(loader) is use.context for loader in loaders):
                continue  # `super().__init__(dataset, sampler=sampler)` in the loader class's constructor
            if values.pipeline.adapted_loaders(use.context) & loaders:
                continue  # the loader a function of another module returned with it, iterated (`tqdm(loader)`)
            if _iterated_by_project_loop(model, use):
                continue  # its summary also says whether that function re-seeds it (_seeded_in)
            if not inspects_only(model, use.context):
                return False
        if use.how in ("returned", "stored"):
            return False
    return True


def _iterated_by_project_loop(model: Model, use) -> bool:
    """Whether the use is a loader (holding the sampler) handed to a function of another module
    of the project that iterates it in a batch loop: `do_train(cfg, model, train_loader, ...)`."""
    for project_call in model.summaries.imported(use.context):
        sources = {loop.source for loop in project_call.summary.batch_loops}
        if any(argument is use.node for argument in project_call.arguments(sources)):
            return True
    return False


def _epoch_loops_training_on(model: Model, loaders: list[Value]) -> Iterator[EpochLoop]:
    """Epoch loops in which a training batch loop iterates one of ``loaders`` (itself, not a
    framework's wrapper of it)."""
    loops = model.loops
    for epoch in loops.epoch_loops():
        for batch_loop, iterated in epoch.batch_loops:
            if (
                iterated
                and all(v.kind is Kind.LOADER for v in iterated)
                and any(loader in iterated for loader in loaders)
                and loops.trains(batch_loop)
            ):
                yield epoch
                break


def _seeded_in(model: Model, epoch: EpochLoop, sampler: Value, loaders: list[Value]) -> bool:
    """Whether a `set_epoch` call of the epoch loop may re-seed the sampler: its receiver is the
    sampler, a loader or batch sampler over it, or something the model cannot tell apart from
    them."""
    values = model.values
    for expr in _set_epoch_receivers(model, epoch):
        receiver = values.of(expr)
        if sampler in receiver or any(v in receiver for v in loaders) or any(v.kind is Kind.UNKNOWN for v in receiver):
            return True
    return False


def _set_epoch_receivers(model: Model, epoch: EpochLoop) -> Iterator[cst.BaseExpression]:
    """What `set_epoch` is called on inside the epoch loop (or in a loop drawing from it through a
    generator), or in a same-file function they reach; for the epoch loop of a function of
    another module, the arguments its call hands the parameters that loop re-seeds
    (`fit(model, loader, sampler, ...)`, where fit calls `sampler.set_epoch(epoch)`)."""
    summaries = model.summaries
    # a batch loop outside the epoch loop draws from a generator's passes, and may count them
    drawing = [loop.node for loop, _ in epoch.batch_loops if epoch.node not in model.ancestors(loop.node)]
    places = {epoch.node: None}
    for node in (epoch.node, *drawing):
        places.update(dict.fromkeys((node, *summaries.reachable(node))))
    for place in places:
        for call in summaries.calls_within(place):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
                yield func.value
            yield from summaries.seeded_arguments(call)
    if epoch.elsewhere is not None:
        for project_call in summaries.imported(epoch.node):
            yield from project_call.arguments(epoch.elsewhere.seeds)


def _name(model: Model, sampler: Value, loaders: list[Value], epoch: EpochLoop) -> str | None:
    """How the code can reach the sampler: its variable, `<loader>.sampler`, or the expression
    the epoch loop's batch loop iterates (`loaders["train"].sampler`); None when none reads it."""
    values = model.values
    # a sampler built inside the call that returns its loader, or by the loader class's
    # constructor, is reached through the loader
    inside = any(loader.node is sampler.node for loader in loaders) or _built_by_loader_class(model, sampler, loaders)
    for use in values.uses(sampler.node) if not inside else ():
        if use.how == "bound":
            return use.binding.name
    for loader in loaders:
        for use in values.uses(loader.node):
            if use.how == "bound":
                return f"{use.binding.name}.sampler"
    where = model.function_of(epoch.node)
    for batch_loop, _ in epoch.batch_loops:
        for source in batch_loop.sources:
            if model.function_of(source) is where and _readable(source) and values.of(source) & set(loaders):
                return f"{model.module.code_for_node(source)}.sampler"
    return None


def _built_by_loader_class(model: Model, sampler: Value, loaders: list[Value]) -> bool:
    """Whether the sampler is built in the constructor of a loader's class, which hands it to its
    base class (`super().__init__(dataset, sampler=sampler)`): its names there are the
    constructor's own."""
    function = model.function_of(sampler.node)
    bases = (model.values.pipeline.base_construction(loader) for loader in loaders)
    return any(base is not None and model.function_of(base) is function for base in bases)


def _readable(expr: cst.BaseExpression) -> bool:
    """A name, attribute chain or constant-key entry (`self.loaders["train"]`): reading it again
    at the top of the epoch loop gives the same loader."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Subscript):
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            if not (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)):
                return False
        expr = expr.value
    return isinstance(expr, cst.Name)


def _message(
    model: Model, sampler: Value, loaders: list[Value], name: str | None, epoch: EpochLoop, optional: bool
) -> tuple[str, tuple[str, ...]]:
    """The message and the call it suggests: `<name>.set_epoch(<epoch>)` when both names are
    bound at the epoch loop, words otherwise (`for _ in range(n)` has no epoch variable, a
    `while` loop restarting an iterator counts passes, not epochs). Where some runs give the
    loader no such sampler, the call goes under a `hasattr` test."""
    kind = sampler.api.rsplit(".", 1)[-1] if sampler.api else "sampler"
    called = f"{kind} '{name}'" if name is not None else kind
    elsewhere = epoch.elsewhere
    if elsewhere is not None:
        # the epoch loop is in another module: the call to add belongs there, in its names
        receiver = f"{epoch.batch_loops[0][0].elsewhere.source}.sampler"
        there = f"the epoch loop in {model.project.where(elsewhere.where)} never calls set_epoch"
        if elsewhere.variable is not None:
            return (
                f"{called} is never re-seeded: {there}; call {receiver}.set_epoch({elsewhere.variable}) "
                f"at the start of each epoch there, or every epoch sees the same order"
            ), ()
        return (
            f"{called} is never re-seeded: {there}; where it starts each new pass over the loader, call "
            f"{receiver}.set_epoch with the number of passes so far, or every pass sees the same order"
        ), ()
    drawn = next(
        (
            loop.elsewhere
            for loop, iterated in epoch.batch_loops
            if loop.elsewhere is not None and any(loader in iterated for loader in loaders)
        ),
        None,
    )
    where = f" (its batches are drawn by the loop in {model.project.where(drawn.where)})" if drawn is not None else ""
    if name is None:
        return (
            f"{called} is never re-seeded{where}: call set_epoch on it with the epoch number at the start of each epoch, "
            f"or every epoch sees the same order"
        ), ()
    variable = epoch.variable
    if variable is not None and model.visible(name, epoch.node):
        call = f"{name}.set_epoch({variable})"
        guard = f' (under `if hasattr({name}, "set_epoch"):`, as some runs have no such sampler)' if optional else ""
        return (
            f"{called} is never re-seeded{where}: call {call} at the start of each epoch{guard}, "
            f"or every epoch sees the same order"
        ), (call,)
    if isinstance(epoch.node, cst.For) and epoch.counts_passes:
        return (
            f"{called} is never re-seeded{where}: call its set_epoch with the epoch number at the start of each "
            f"epoch, or every epoch sees the same order"
        ), ()
    return (
        f"{called} is never re-seeded{where}: where the loop starts each new pass over the loader, call "
        f"its set_epoch with the number of passes so far, or every pass sees the same order"
    ), ()


def _fix(model: Model, name: str, epoch: EpochLoop, optional: bool):
    """Insert `<name>.set_epoch(<epoch>)` as the first statement of the epoch loop, when the loop
    counts epochs (`for epoch in range(...)`) and the sampler's name means it there. A name that
    may also hold a sampler without set_epoch, or None (`RandomSampler(ds) if local_rank == -1
    else DistributedSampler(ds)`), or a loader whose sampler is one only on some runs
    (`<loader>.sampler`), gets the call under `if hasattr(<name>, "set_epoch"):`."""
    counter = build.loop_counter(epoch.node) if isinstance(epoch.node, cst.For) and epoch.counts_passes else None
    if counter is None:
        return None
    head = name.split(".", 1)[0]
    probe = [b for b in model.bindings(model.binding_scope(head, epoch.node), head)]
    if not probe or not model.values.of_binding(probe[0]):
        return None
    if not any(_bound_on_every_path(model, binding, epoch.node) for binding in probe):
        return None  # `if args.dist: sampler = ...`: a call at the loop's top would fail where it is unbound
    found = [v for b in probe for v in model.values.of_binding(b)]
    call = f"{name}.set_epoch({counter})"
    if "." in name and any(v.kind in (Kind.NONE, Kind.UNKNOWN) for v in found):
        return None
    if optional or ("." not in name and not all(v.kind is Kind.SAMPLER and v.epoch_seeded for v in found)):
        call = f'if hasattr({name}, "set_epoch"):\n    {call}'
    return build.prepend_to_body(epoch.node, call, f"Call {name}.set_epoch({counter})", Applicability.UNSAFE)


def _bound_on_every_path(model: Model, binding: Binding, loop: cst.CSTNode) -> bool:
    """Whether ``binding`` runs on every path that reaches ``loop``: no `if`, `try` or loop holds
    it without also holding the loop."""
    around_loop = set(model.ancestors(loop))
    for ancestor in model.ancestors(binding.statement):
        if ancestor in around_loop:
            return True
        if isinstance(ancestor, (cst.If, cst.Try, cst.For, cst.While)):
            return False
    return True


RULE = SamplerSetEpochMissing
