"""TL015 eval-mode-missing: an evaluation pass (a loop under `no_grad`/`inference_mode` that takes
no training step) calls a module with dropout or batch norm while the module is in training
mode: `train()` was called for training steps that ran before the pass, and no `eval()` since;
or the module was built in training mode (as every new module is) and nothing switched it.
Dropout then drops activations of the evaluated model and batch norm normalises with the
evaluation batch and updates its running statistics with it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.model import Model
from torchlint.knowledge.training import TRAIN_METHOD
from torchlint.model.modes import Mode, ModeAt, event_text
from torchlint.model.training import module_callee
from torchlint.model.values import Value
from torchlint.registry import Finding, Rule


class EvalModeMissing(Rule, code="TL015"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        training, modes, dependence = model.training, model.modes, model.mode_dependence
        reported: set[cst.CSTNode] = set()
        # one missing eval() per module and function: a test() that evaluates five splits in five
        # loops needs the one call before them
        named: set[tuple[cst.CSTNode, str]] = set()
        for loop, call, modules in modes.evaluation_passes():
            for module in modules:
                if loop in reported or training.in_test(call) or not dependence.mode_dependent(module):
                    continue
                key = (model.function_of(loop), model.module.code_for_node(module_callee(call)))
                if key in named:
                    continue
                at = modes.mode_at(module, call)
                if at.mode is Mode.UNKNOWN:
                    # callers disagree: report each call that leads into the pass after training
                    for caller in _trained_callers(model, at, module):
                        if caller.anchor not in reported:
                            reported.add(caller.anchor)
                            yield Finding(caller.anchor, _caller_message(model, caller, call))
                    continue
                if at.mode is Mode.TRAIN and training.trains_in(modes.between(at), module):
                    event = at.event
                elif at.mode is None and dependence.built_training(module) and modes.over_batches(loop):
                    # over a loader's batches: a loop over random inputs times or tries out a new
                    # model, whose mode its author may not care about
                    event = None
                else:
                    continue
                reported.add(loop)
                named.add(key)
                yield Finding(call, _message(model, call, event))


def _trained_callers(model: Model, at: ModeAt, module: Value) -> Iterator[ModeAt]:
    """The callers that run the function of the pass with the module in training mode, set by a
    `train()` call on it before training steps there (its name at the call is the receiver of
    that `train()`); not from a test."""
    training = model.training
    for caller in at.by_caller():
        event = caller.event
        if (
            caller.mode is Mode.TRAIN
            and isinstance(event, cst.Call)
            and isinstance(event.func, cst.Attribute)
            and event.func.attr.value == TRAIN_METHOD
            and not training.in_test(caller.anchor)
            and training.trains_in(model.modes.between(caller), module)
        ):
            yield caller


def _caller_message(model: Model, caller: ModeAt, call: cst.Call) -> str:
    """A call that leads into the pass (``call``, in another function) after `name.train()`."""
    code = model.module.code_for_node
    name = code(caller.event.func.value)
    function = model.function_of(call)
    where = f" of {function.name.value}()" if isinstance(function, cst.FunctionDef) else ""
    return (
        f"this call runs the evaluation pass{where} with '{name}' still in training mode "
        f"('{event_text(model, caller.event)}' set it for the training steps before, no eval() since): "
        f"{_EFFECT}; call {name}.eval() before this call and {name}.train() after it"
    )


def _message(model: Model, call: cst.Call, event: cst.Call | None) -> str:
    """``event``: the `train()` (or helper) that set training mode; None for a module built in
    training mode that nothing switched since."""
    name = model.module.code_for_node(module_callee(call))
    if event is None:
        return (
            f"'{name}' is in training mode in this evaluation pass (a new module is, and nothing calls eval() on it): "
            f"{_EFFECT}; call {name}.eval() before the pass"
        )
    return (
        f"'{name}' is still in training mode in this evaluation pass ('{event_text(model, event)}' set it for the "
        f"training steps before, no eval() since): {_EFFECT}; call {name}.eval() before the pass and {name}.train() after it"
    )


_EFFECT = "dropout stays on and batch norm normalises with, and updates its running statistics from, the evaluation batches"

RULE = EvalModeMissing
