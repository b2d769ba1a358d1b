"""TL011 zero-grad-missing: an optimizer steps in a training loop and nothing in that loop clears
the gradients (`zero_grad()` on the optimizer or the model, `p.grad = None`, `p.grad.zero_()`,
also in a helper the loop calls or a closure it hands over). `backward()` adds to `.grad`, so
every step applies the sum of all gradients so far."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from torchlint.model import Model
from torchlint.registry import Finding, Rule


class ZeroGradMissing(Rule, code="TL011"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        training = model.training
        for step in training.steps():
            if training.in_test(step.call):
                continue
            for loop, _ in training.training_loops(step.call) or ():
                if training.clears(loop, step.optimizers) or training.hands_over(loop, step.optimizers):
                    continue
                if training.built_in(step.optimizers, loop):
                    continue
                yield Finding(step.call, _message(model, step.optimizer))
                break


def _message(model: Model, optimizer) -> str:
    name = model.module.code_for_node(optimizer)
    return (
        f"'{name}' steps in this loop but nothing in the loop clears the gradients: backward() adds to .grad, "
        f"so each step applies the sum of every earlier step's gradients; call {name}.zero_grad() once per step "
        f"(before backward)"
    )


RULE = ZeroGradMissing
