"""What a script's backward passes optimise.

A backward pass taken on a bare reduction of an output computed from random inputs only
(`model(torch.rand(20, 10)).sum().backward()`) fits nothing: no data, no target, no loss
function. Scripts whose every backward pass is of that kind show the mechanics of a training
step (tensor or pipeline parallelism, profiling, a smoke test); their step sizes decide nothing
about learning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import tensors, training

if TYPE_CHECKING:
    from torchlint.model import Model

# Reductions that turn an output into a scalar to call backward on.
_REDUCTIONS = frozenset({"sum", "mean"})


def fits_nothing(model: Model) -> bool:
    """Whether the file takes backward passes, and each one is on a bare reduction of the output
    of a call (a module, whatever wraps it) given only tensors made by random factories."""
    passes = model.calls_named(methods=training.BACKWARD_METHOD)
    return bool(passes) and all(_reduces_output_on_noise(model, call.func.value) for call in passes)


def _reduces_output_on_noise(model: Model, loss: cst.BaseExpression) -> bool:
    reduction = _resolved(model, loss)
    if not (
        isinstance(reduction, cst.Call)
        and isinstance(reduction.func, cst.Attribute)
        and reduction.func.attr.value in _REDUCTIONS
        and not reduction.args
    ):
        return False
    output = _resolved(model, reduction.func.value)
    if not isinstance(output, cst.Call) or not output.args:
        return False
    return all(_is_noise(model, arg.value) for arg in output.args)


def _is_noise(model: Model, expr: cst.BaseExpression) -> bool:
    made = _resolved(model, expr)
    return isinstance(made, cst.Call) and model.call_name(made) in tensors.RANDOM_FACTORIES


def _resolved(model: Model, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The expression itself, or the value of the one assignment that reaches a plain name."""
    if not isinstance(expr, cst.Name):
        return expr
    binding = model.sole_binding(expr)
    return binding.value if binding is not None and binding.how in ("assign", "annassign") else None
