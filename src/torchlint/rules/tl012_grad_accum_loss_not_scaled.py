"""TL012 grad-accum-loss-not-scaled: backward() runs every iteration, the optimizer steps only
every N iterations (`if (i + 1) % N == 0:`, or once after an inner loop of N micro-steps that
each run backward on a new batch), and the loss is not divided by N on its way to
backward (nor the gradients rescaled): each update is the sum of N gradients, N times larger
than the learning rate was tuned for, and gradient clipping acts on that sum."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.model import Model
from torchlint.model.grad_accumulation import UnscaledBackward, unscaled_backwards
from torchlint.registry import Finding, Rule


class GradAccumLossNotScaled(Rule, code="TL012"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        for found in unscaled_backwards(model):
            yield Finding(found.backward.call, _message(model, found))


def _message(model: Model, found: UnscaledBackward) -> str:
    every = model.module.code_for_node(found.every)
    optimizer = model.module.code_for_node(found.step.optimizer)
    loss = found.backward.loss
    if isinstance(loss, cst.Name):
        fix = f"write {loss.value} = {loss.value} / {_operand(every, found.every)} before backward()"
    else:
        fix = f"divide the loss by {every} before backward()"
    if found.micro_steps:
        cadence, unit = f"backward() runs in each of {every} micro-steps and '{optimizer}' steps once after them", "micro-steps"
    else:
        cadence, unit = f"backward() runs every iteration but '{optimizer}' steps every {every}", "iterations"
    return (
        f"{cadence}, and the loss is not divided by {every}: the gradients of {every} {unit} add up, so each "
        f"update is {every} times larger (and clipping sees the sum); {fix}"
    )


def _operand(text: str, node: cst.BaseExpression) -> str:
    return text if isinstance(node, (cst.Name, cst.Attribute, cst.Integer, cst.Call, cst.Subscript)) else f"({text})"


RULE = GradAccumLossNotScaled
