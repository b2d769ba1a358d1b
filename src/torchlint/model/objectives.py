"""What a script's backward passes optimise.

A backward pass taken on a bare reduction of an output computed from random inputs only
(`model(torch.rand(20, 10)).sum().backward()`) fits nothing: no data, no target, no loss
function. Nor does one on a loss that compares such an output with random targets
(`mse_loss(model(noise), torch.randn(20, 4))`): noise fitted to noise. Scripts whose every
backward pass is of that kind show the mechanics of a training step (tensor or pipeline
parallelism, profiling, a smoke test); their step sizes decide nothing about learning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import tensors, training

if TYPE_CHECKING:
    from torchlint.model import Model

# Reductions that turn an output into a scalar to call backward on.
_REDUCTIONS = frozenset({"sum", "mean"})
# Keywords under which a loss function takes what it compares (`input=`, `target=`); its other
# keywords are settings (`reduction="sum"`).
_OPERANDS = frozenset({"input", "target"})


def fits_nothing(model: Model) -> bool:
    """Whether the file takes backward passes, and each one is on a bare reduction of the output
    of a call (a module, whatever wraps it) given only tensors made by random factories, or on
    a loss given only such outputs and such tensors."""
    passes = model.calls_named(methods=training.BACKWARD_METHOD)
    return bool(passes) and all(_computed_from_noise(model, call.func.value) for call in passes)


def _computed_from_noise(model: Model, loss: cst.BaseExpression) -> bool:
    reduction = _resolved(model, loss)
    if not isinstance(reduction, cst.Call):
        return False
    if isinstance(reduction.func, cst.Attribute) and reduction.func.attr.value in _REDUCTIONS and not reduction.args:
        return _is_output_on_noise(model, reduction.func.value)
    # a loss function or module comparing outputs on noise with noise
    operands = [arg.value for arg in reduction.args if arg.keyword is None or arg.keyword.value in _OPERANDS]
    return any(_is_output_on_noise(model, operand) for operand in operands) and all(
        _is_output_on_noise(model, operand) or _is_noise(model, operand) for operand in operands
    )


def _is_output_on_noise(model: Model, expr: cst.BaseExpression) -> bool:
    output = _resolved(model, expr)
    return isinstance(output, cst.Call) and bool(output.args) and all(_is_noise(model, arg.value) for arg in output.args)


def _is_noise(model: Model, expr: cst.BaseExpression) -> bool:
    """A tensor made by a random factory, also once moved or cast (`torch.randn(8, 4).to(device)`)."""
    made = _resolved(model, expr)
    while (
        isinstance(made, cst.Call)
        and isinstance(made.func, cst.Attribute)
        and made.func.attr.value in tensors.CONVERSIONS
    ):
        made = _resolved(model, made.func.value)
    return isinstance(made, cst.Call) and model.call_name(made) in tensors.RANDOM_FACTORIES


def _resolved(model: Model, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The expression itself, or the value of the one assignment that reaches a plain name."""
    if not isinstance(expr, cst.Name):
        return expr
    binding = model.sole_binding(expr)
    return binding.value if binding is not None and binding.how in ("assign", "annassign") else None
