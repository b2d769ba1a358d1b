"""The constant values an expression may take on the paths the file shows.

`constants.value` answers one value or UNKNOWN: a function parameter is UNKNOWN there, since it
takes whatever its callers pass. Here a parameter of a same-file function whose call sites are
all visible takes the constant each call passes (its default where a call leaves it out), so
`make_loader(train_set, True)` and `make_loader(val_set, False)` give `shuffle` the values
{True, False}. Anything else is one value from `constants.value`. The answer is None when some
path's value is not a constant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from torchlint.model import constants

if TYPE_CHECKING:
    from torchlint.model import Model

_MAX_DEPTH = 4  # parameters passed on through this many helpers


def possible_values(model: Model, expr: cst.BaseExpression, depth: int = 0) -> list[Any] | None:
    """Every constant ``expr`` may evaluate to, or None when a path gives an unknown value."""
    if isinstance(expr, cst.Name):
        bindings = model.reaching(expr)
        if bindings and all(binding.how == "param" for binding in bindings):
            return _parameter_values(model, bindings, depth)
    found = constants.value(model, expr)
    return None if found is constants.UNKNOWN else [found]


def _parameter_values(model: Model, bindings, depth: int) -> list[Any] | None:
    if depth >= _MAX_DEPTH:
        return None
    functions = model.summaries
    found: list[Any] = []
    for binding in bindings:
        function = binding.scope
        sites = functions.call_sites(function) if isinstance(function, cst.FunctionDef) else None
        if not sites:
            return None
        for call, offset in sites:
            argument = functions.argument(function, call, offset, binding.name)
            values = possible_values(model, argument, depth + 1) if argument is not None else None
            if values is None:
                return None
            found.extend(values)
    return found
