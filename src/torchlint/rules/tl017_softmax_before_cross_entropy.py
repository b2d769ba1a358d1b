"""TL017 softmax-before-cross-entropy: `CrossEntropyLoss`/`F.cross_entropy` receives
probabilities (a softmax applied right before the loss, or in the model's `forward`), or
`NLLLoss`/`F.nll_loss` receives probabilities that are not logs. Cross-entropy applies
log_softmax itself: on probabilities it squashes them a second time, the loss barely moves and
learning stalls; NLLLoss on probabilities is not a likelihood at all."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.knowledge import losses
from torchlint.model import Model, criterion_runners, probabilities
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind
from torchlint.registry import Finding, Rule


_LOSS_MODULES = losses.LOGIT_LOSS_MODULES | losses.LOG_PROBABILITY_LOSS_MODULES


class SoftmaxBeforeCrossEntropy(Rule, code="TL017"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return  # a test suite's helpers make a loss to get gradients to check, not to learn
        loss_modules = any(value.api in _LOSS_MODULES for value in model.values.made(Kind.MODULE))
        for call in model.calls:
            scores = _input(call)
            expects = _expected_input(model, call, loss_modules) if scores is not None else None
            if expects is None or model.training.in_test(call):
                continue  # a test takes a step to check behaviour, not to learn
            softmax = probabilities.source(model, scores)
            if softmax is not None:
                yield Finding(scores, _message(model, call, scores, softmax, expects))
        for net, module, criterion in criterion_runners.pairs(model):
            softmax = _softmax_output(model, module) if _criterion_api(model, criterion) in losses.LOGIT_LOSS_MODULES else None
            if softmax is not None:
                yield Finding(softmax, _runner_message(model, net, module, criterion))


def _criterion_api(model: Model, criterion: cst.BaseExpression) -> str | None:
    """The loss class a net is given, as a class (`nn.CrossEntropyLoss`) or an instance."""
    return model.call_name(criterion) if isinstance(criterion, cst.Call) else model.qualified_name(criterion)


def _softmax_output(model: Model, module: cst.BaseExpression) -> cst.CSTNode | None:
    """Where the softmax the output of a module (or module class) given to a net comes from: in
    this file, or the argument itself when the file does not show it."""
    found = model.values.of(module)
    if len(found) != 1:
        return None
    (value,) = found
    if value.kind not in (Kind.MODULE, Kind.CLASS):
        return None
    softmax = probabilities.output_softmax(model, value)
    return None if softmax is None else module if softmax is value.node else softmax


def _runner_message(model: Model, net: cst.Call, module: cst.BaseExpression, criterion: cst.BaseExpression) -> str:
    code = model.module.code_for_node
    return (
        f"{code(net.func)} feeds the output of '{code(module)}', which ends in a softmax, to its criterion "
        f"{code(criterion)}: cross-entropy applies log_softmax itself, so the probabilities are squashed twice, "
        f"gradients shrink and learning stalls; make the module return the logits (drop the softmax)"
    )


def _input(call: cst.Call) -> cst.BaseExpression | None:
    """The loss's input (its first argument, or `input=`); the target is never looked at: soft
    targets are probabilities on purpose."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "input":
            return arg.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


def _expected_input(model: Model, call: cst.Call, loss_modules: bool) -> str | None:
    """"logits" for a cross-entropy call, "log-probabilities" for an NLL one, else None.
    ``loss_modules``: the file constructs a loss module (else no callee can be one)."""
    name = model.call_name(call)
    if name in losses.LOGIT_LOSS_FUNCTIONS:
        return "logits"
    if name in losses.LOG_PROBABILITY_LOSS_FUNCTIONS:
        return "log-probabilities"
    if not loss_modules:
        return None
    callee = probabilities.forward_callee(call.func)
    found = model.values.all_of(callee, Kind.MODULE) or model.values.defaulted(callee)
    apis = {value.api for value in found} if found else set()
    if apis and apis <= losses.LOGIT_LOSS_MODULES:
        return "logits"
    if apis and apis <= losses.LOG_PROBABILITY_LOSS_MODULES:
        return "log-probabilities"
    return None


def _message(model: Model, loss: cst.Call, scores: cst.BaseExpression, softmax: cst.CSTNode, expects: str) -> str:
    code = model.module.code_for_node
    written = " ".join(code(scores).split())
    given = f"'{written}'" if len(written) <= 40 else "its input"
    origin = "the output of a softmax"
    passed = probabilities.passed_modules(model, softmax.func) if isinstance(softmax, cst.Call) else None
    if passed:
        called = model.module.code_for_node(softmax.func)
        function = model.function_of(softmax.func).name.value
        places = ", ".join(sorted({model.project.where(argument.where) for argument in passed}))
        origin = f"the output of '{called}', whose forward ends in a softmax in the model every caller of {function}() passes ({places})"
    elif model.function_of(softmax) is not model.function_of(loss):
        function = model.function_of(softmax)
        if isinstance(function, cst.FunctionDef) and function.name.value == "forward":
            origin = "the output of a model whose forward ends in a softmax"
    loss_name = " ".join(code(loss.func).split())
    if expects == "logits":
        return (
            f"{loss_name} receives {given}, {origin}: cross-entropy applies log_softmax itself, so the "
            f"probabilities are squashed twice, gradients shrink and learning stalls; pass the logits (drop the softmax)"
        )
    return (
        f"{loss_name} receives {given}, {origin}, but NLLLoss expects log-probabilities: the loss is "
        f"not the likelihood and learning stalls; use log_softmax instead of softmax"
    )


RULE = SoftmaxBeforeCrossEntropy
