"""TL018 loss-accumulated-with-graph: a loss that backward() runs on (or a tensor computed from it
without `.item()`/`.detach()`) is added to a running total or appended to a list that outlives
the step. The total then carries the autograd history of every step, which keeps growing until
the run is out of memory."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes import build
from torchlint.model import Model
from torchlint.model.accumulation import Accumulation, accumulations
from torchlint.registry import Finding, Rule


class LossAccumulatedWithGraph(Rule, code="TL018"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        for found in accumulations(model):
            if found.term_of is not None:
                yield Finding(found.value, _kept_terms_message(model, found))
            elif found.item is not None:
                yield Finding(found.value, _kept_container_message(model, found))
            else:
                yield Finding(found.value, _message(model, found), _fix(found))


def _kept_container_message(model: Model, found: Accumulation) -> str:
    """A container kept whole: detaching it is no statement (a dict has no detach()); its
    backpropagated item must be replaced before it is kept."""
    value = model.module.code_for_node(found.value)
    return (
        f"'{found.accumulator}' keeps '{value}', whose '{found.item}' backward() ran on: every step's autograd "
        f"graph stays reachable from '{found.accumulator}' and memory grows with each iteration; write "
        f"{found.item} = {found.item}.detach() before keeping it"
    )


def _kept_terms_message(model: Model, found: Accumulation) -> str:
    """Terms the loss is the whole of (`loss = sum(losses)`), which may be a tuple: no `.detach()`
    of the whole to suggest."""
    value = model.module.code_for_node(found.value)
    return (
        f"'{found.accumulator}' keeps '{value}', the terms '{found.term_of}' is made of, which backward() ran "
        f"through: every step's autograd graph stays reachable from '{found.accumulator}' and memory grows with "
        f"each iteration; keep detached terms (each term's .detach() or .item())"
    )


def _message(model: Model, found: Accumulation) -> str:
    value = model.module.code_for_node(found.value)
    return (
        f"'{found.accumulator}' accumulates '{value}', which requires grad: every step's autograd graph stays "
        f"reachable from '{found.accumulator}' and memory grows with each iteration; accumulate "
        f"{_detached(value, found.value)} instead"
    )


def _detached(text: str, node: cst.BaseExpression) -> str:
    return f"{text}.detach()" if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) else f"({text}).detach()"


def _fix(found: Accumulation):
    return build.chain_call(found.value, "detach()", "Detach the accumulated value", Applicability.SAFE)


RULE = LossAccumulatedWithGraph
