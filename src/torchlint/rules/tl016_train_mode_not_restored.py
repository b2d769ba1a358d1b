"""TL016 train-mode-not-restored: a training loop calls a module with dropout or batch norm that
is in evaluation mode when the loop comes round again: later in the epoch loop (or in the
training loop itself) `eval()` runs for validation, and nothing calls `train()` before the next
training steps. From the second epoch on, dropout is off and batch norm's statistics are frozen."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.model import Model
from torchlint.model.training import Mode, event_text, module_callee
from torchlint.registry import Finding, Rule


class TrainModeNotRestored(Rule):
    code = "TL016"
    name = "train-mode-not-restored"
    summary = "eval() is called for validation and the next epoch trains without train()"

    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        training = model.training
        reported: set[cst.CSTNode] = set()
        for loop in training.step_loops():
            for call, modules in training.module_calls(loop):
                for module in modules:
                    skip = training.no_grad(call) or training.in_test(call) or not training.mode_dependent(module)
                    if loop in reported or skip:
                        continue
                    at = training.mode_at(module, call)
                    if at.mode is Mode.EVAL and at.repeated and training.evaluates_in(training.between(at)):
                        reported.add(loop)
                        yield Finding(call, _message(model, call, at.event))


def _message(model: Model, call: cst.Call, event: cst.Call) -> str:
    name = model.module.code_for_node(module_callee(call))
    return (
        f"'{name}' trains in evaluation mode when this loop comes round again: '{event_text(model, event)}' leaves it "
        f"in eval mode and no {name}.train() runs before the next training steps, so dropout is off and batch norm "
        f"statistics stay frozen; call {name}.train() at the start of each epoch"
    )


RULE = TrainModeNotRestored
