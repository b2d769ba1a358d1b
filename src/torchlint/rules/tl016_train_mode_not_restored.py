"""TL016 train-mode-not-restored: a training loop calls a module with dropout or batch norm that
is in evaluation mode because a validation pass left it so: later in the epoch loop (or in the
training loop itself) `eval()` runs for validation, and nothing calls `train()` before the next
training steps; or a validation every k steps runs before the training step of its iteration
and nothing switches back after it. Dropout is off and batch norm's statistics are frozen for the
steps that follow."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.model import Model
from torchlint.model.modes import Mode, ModeAt, event_text
from torchlint.model.training import enclosing_loops, module_callee, within
from torchlint.registry import Finding, Rule


class TrainModeNotRestored(Rule, code="TL016"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        training = model.training
        reported: set[cst.CSTNode] = set()
        for loop in training.step_loops():
            for call, modules in training.module_calls(loop):
                for module in modules:
                    skip = training.no_grad(call) or training.in_test(call) or not model.mode_dependence.mode_dependent(module)
                    # the loop optimises an input against the module (`SGD([patch])`): eval is meant
                    skip = skip or not training.trains_module(loop, module)
                    if loop in reported or skip:
                        continue
                    at = model.modes.mode_at(module, call)
                    if at.mode is Mode.EVAL and _left_by_validation(model, at, call):
                        reported.add(loop)
                        yield _finding(model, call, at)


def _left_by_validation(model: Model, at: ModeAt, call: cst.Call) -> bool:
    """Whether the evaluation mode at ``call`` was set for a validation pass that ran since: on a
    previous iteration, or earlier in an iteration of a loop around the call (a validation every
    k steps). An `eval()` before the loops with no validation after it may freeze batch norm on
    purpose for fine-tuning."""
    if not at.repeated and not any(within(model, at.event, loop) for loop in enclosing_loops(model, call)):
        return False
    return model.modes.evaluates_in(model.modes.between(at))


def _finding(model: Model, call: cst.Call, at: ModeAt) -> Finding:
    name = model.module.code_for_node(module_callee(call))
    event = event_text(model, at.event)
    effect = "so dropout is off and batch norm statistics stay frozen"
    if at.repeated and not model.training.computes_gradients(at.loop):
        return Finding(
            call,
            f"'{name}' trains in evaluation mode when this loop comes round again: '{event}' leaves it in eval mode "
            f"and no {name}.train() runs before the next training steps, {effect}; "
            f"call {name}.train() at the start of each epoch",
        )
    restore = f"{name}.train()"
    return Finding(
        call,
        f"'{name}' trains in evaluation mode after the validation in this loop: '{event}' leaves it in eval mode "
        f"and no {restore} runs before the training steps that follow, {effect}; call {restore} after it",
        suggestions=(restore,),
        suggested_at=at.event,
    )


RULE = TrainModeNotRestored
