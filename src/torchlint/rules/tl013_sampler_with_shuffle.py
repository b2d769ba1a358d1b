"""TL013 sampler-with-shuffle: a DataLoader gets a truthy `shuffle` together with a `sampler` or
`batch_sampler` that is not None on some path. DataLoader raises ValueError ("sampler option is
mutually exclusive with shuffle") there; the sampler is typically built only in the distributed
branch, so the error shows up on the cluster, not on the laptop."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.knowledge import data
from torchlint.model import Model
from torchlint.model.names import dotted
from torchlint.model.site_constants import possible_values
from torchlint.model.values import Kind
from torchlint.registry import Finding, NodeFix, Rule

_SAMPLER_PARAMETERS = ("sampler", "batch_sampler")
_NAMES_FOLLOWED = 8  # `ddp = args.ddp; shuffle = not ddp`: a chain of names is short


class SamplerWithShuffle(Rule, code="TL013"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        for call in model.calls_named(data.LOADERS):
            shuffle = _argument(call, "shuffle")
            if shuffle is None:
                continue
            shuffles = _truthiness(model, shuffle)
            if shuffles is None:
                continue
            for parameter in _SAMPLER_PARAMETERS:
                sampler = _argument(call, parameter)
                if sampler is None or _mentions(shuffle, model, sampler):
                    continue  # `shuffle=(sampler is None)` and alike decide by the sampler itself
                if _decided_apart(model, shuffle, sampler):
                    continue  # `shuffle=not args.ddp` beside a sampler built only `if args.ddp:`
                given = _sampler_given(model, sampler)
                if given is None or given == "never":
                    continue
                if shuffles == "always" or given == "always":
                    message = _message(model, shuffle, sampler, parameter, given, shuffles)
                    yield Finding(shuffle, message, _fix(shuffle, sampler))
                    break


def _argument(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    position = data.LOADER_POSITIONAL.index(name)
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional[: position + 1]) or position >= len(positional):
        return None
    return positional[position].value


def _truthiness(model: Model, shuffle: cst.BaseExpression) -> str | None:
    """"always" when every path shuffles, "some" when the constants of some paths do, "unknown"
    for a value the file does not show; None when no path shuffles."""
    values = possible_values(model, shuffle)
    if values is None:
        return "unknown"
    truthy = [bool(value) for value in values]
    if all(truthy):
        return "always"
    return "some" if any(truthy) else None


def _sampler_given(model: Model, sampler: cst.BaseExpression) -> str | None:
    """"always" when every path passes a sampler, "some" when a path passes None and another a
    sampler, "never" when all pass None; None when a path is not known."""
    found = model.values.of(sampler)
    kinds = {value.kind for value in found}
    if not kinds or not kinds <= {Kind.SAMPLER, Kind.NONE}:
        return None
    if kinds == {Kind.NONE}:
        return "never"
    return "some" if Kind.NONE in kinds else "always"


def _mentions(shuffle: cst.BaseExpression, model: Model, sampler: cst.BaseExpression) -> bool:
    """Whether the shuffle argument, or what its names are bound to, reads the sampler's name
    (`shuffle=(sampler is None)`, `shuffle = train and sampler is None` earlier)."""
    key = dotted(sampler)
    if key is None:
        return False
    pending: list[cst.CSTNode] = [shuffle]
    seen: set[cst.CSTNode] = set()
    while pending:
        node = pending.pop()
        if node in seen:
            continue
        seen.add(node)
        if isinstance(node, (cst.Name, cst.Attribute)):
            if dotted(node) == key:
                return True
            for binding in model.reaching(node) if isinstance(node, cst.Name) else model.bindings_of(node):
                if binding.source is not None:
                    pending.append(binding.source)
        pending.extend(node.children)
    return False


def _decided_apart(model: Model, shuffle: cst.BaseExpression, sampler: cst.BaseExpression) -> bool:
    """Whether one setting turns the shuffle off wherever the sampler is given: the sampler is
    built under `if args.ddp:` (or `DistributedSampler(ds) if args.ddp else None`) and the flag is
    `not args.ddp`, so no path passes both."""
    flag = _setting(model, shuffle)
    if flag is None or not isinstance(sampler, cst.Name):
        return False
    conditions = []
    for binding in model.reaching(sampler):
        value = binding.value
        if value is None:
            return False
        if {found.kind for found in model.values.of(value)} == {Kind.NONE}:
            continue  # the paths without a sampler may shuffle
        conditions.append(_given_when(model, binding.statement, value))
    key, on = flag
    return bool(conditions) and all(condition == (key, not on) for condition in conditions)


def _given_when(model: Model, statement: cst.CSTNode, value: cst.BaseExpression) -> tuple[str, bool] | None:
    """The setting, and its truth, under which a binding gives a sampler: the test of
    `DistributedSampler(ds) if test else None`, or of the innermost `if` around the statement
    (false in its `else:`); None when the sampler is given unconditionally or the test is no plain
    setting."""
    if isinstance(value, cst.IfExp):
        setting = _setting(model, value.test)
        nones = [{found.kind for found in model.values.of(branch)} == {Kind.NONE} for branch in (value.body, value.orelse)]
        if setting is None or nones[0] == nones[1]:
            return None
        return setting if nones[1] else (setting[0], not setting[1])
    child: cst.CSTNode = statement
    for ancestor in model.ancestors(statement):
        if isinstance(ancestor, cst.If) and child is not ancestor.test:
            setting = _setting(model, ancestor.test)
            if setting is None or child is ancestor.body:
                return setting
            return setting[0], not setting[1]
        child = ancestor
    return None


def _setting(model: Model, expr: cst.BaseExpression, depth: int = _NAMES_FOLLOWED) -> tuple[str, bool] | None:
    """A test that reads one setting: its dotted name and whether the test holds when the
    setting is true (`args.ddp` -> ("args.ddp", True), `not args.ddp` -> ("args.ddp", False)),
    also through a name assigned once from such a test; None for any other expression."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = _setting(model, expr.expression, depth)
        return None if inner is None else (inner[0], not inner[1])
    if isinstance(expr, cst.Name):
        binding = model.sole_binding(expr)
        if binding is not None and binding.how == "assign" and binding.value is not None:
            # `flag = not flag` in a loop reaches itself: follow a few names, never round a cycle
            return _setting(model, binding.value, depth - 1) if depth > 0 else None
    key = dotted(expr)
    return None if key is None else (key, True)


def _guarded(shuffle: cst.BaseExpression, sampler: cst.BaseExpression, code) -> str | None:
    """The shuffle argument that shuffles only where no sampler is given: `sampler is None`, or
    `args.shuffle and sampler is None`; None for a sampler written inline."""
    name = dotted(sampler)
    if name is None:
        return None
    if isinstance(shuffle, cst.Name) and shuffle.value == "True":
        return f"({name} is None)"
    return f"({' '.join(code(shuffle).split())} and {name} is None)"


def _fix(shuffle: cst.BaseExpression, sampler: cst.BaseExpression) -> NodeFix | None:
    """`shuffle=True` with a named sampler -> `shuffle=(sampler is None)`: shuffle where no
    sampler is given, and let the sampler decide the order where one is (the path that raised)."""
    if not (isinstance(shuffle, cst.Name) and shuffle.value == "True"):
        return None
    guard = _guarded(shuffle, sampler, None)
    if guard is None:
        return None
    return NodeFix("Shuffle only when no sampler is given", Applicability.SAFE, {shuffle: cst.parse_expression(guard)})


def _message(
    model: Model, shuffle: cst.BaseExpression, sampler: cst.BaseExpression, parameter: str, given: str, shuffles: str
) -> str:
    code = model.module.code_for_node
    written = " ".join(code(sampler).split())
    named = f"'{written}'" if len(written) <= 40 else "a sampler"
    flag = " ".join(code(shuffle).split())
    if given == "some":
        paired = f"{parameter}={named}, which is not None on some paths"
    else:
        paired = f"{parameter}={named}"
    distributed = any(value.api in data.EPOCH_SAMPLERS for value in model.values.of(sampler))
    where = "when it is built in the distributed run" if distributed and given == "some" else "when it is built"
    if shuffles != "always":
        where += f" with {flag} true"  # a flag or setting the run may leave off
    guard = _guarded(shuffle, sampler, code)
    if guard is not None:
        advice = f"pass shuffle={guard} and let the sampler decide the order"
    else:
        advice = f"drop shuffle={flag} and let the sampler decide the order"
    return (
        f"DataLoader gets shuffle={flag} together with {paired}: DataLoader raises ValueError (sampler "
        f"option is mutually exclusive with shuffle) {where}, so training never starts there; {advice}"
    )


RULE = SamplerWithShuffle
