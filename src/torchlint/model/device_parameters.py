"""Device parameters a function ignores: `def __init__(self, model, device): self.device =
next(model.parameters()).device`. The device the caller chose is never read, and the function
records a device of the same name taken from elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from torchlint.model import Binding, Model


def ignored_device_parameters(model: Model) -> Iterator[tuple[Binding, Binding]]:
    """Each (parameter never read, the `self.<parameter>` assignment in its function that records
    another device instead)."""
    if not model.imports_torch:
        return
    for parameter in model.all_bindings():
        if parameter.how != "param" or "device" not in parameter.name.lower() or model.reads_of(parameter):
            continue
        function = parameter.scope
        if not isinstance(function, cst.FunctionDef):
            continue
        for binding in model.all_bindings():
            if (
                binding.how == "assign"
                # an attribute recording another device (`self.device = ...`): a local of the
                # parameter's own name overwrites it, which is no record of a device the caller
                # passes (a parameter kept for a signature the function must match)
                and binding.name.startswith("self.")
                and binding.name.rsplit(".", 1)[-1] == parameter.name
                and binding is not parameter
                and model.function_of(binding.statement) is function
                and binding.value is not None
            ):
                yield parameter, binding
                break


def record_comparison(model: Model, record: Binding) -> cst.Comparison | None:
    """A test of equality between the recorded device and another (`if self.device == device:
    return self`): a method that decides on a device the object's data may not be on."""
    for read in model.reads_of(record):
        comparison = model.parent(read)
        if isinstance(comparison, cst.Comparison) and all(
            isinstance(target.operator, (cst.Equal, cst.NotEqual)) for target in comparison.comparisons
        ):
            return comparison
    return None
