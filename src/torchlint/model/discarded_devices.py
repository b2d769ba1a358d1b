"""Devices made and thrown away: `else: torch.device("cpu")`, a device made as a statement of its
own inside a block, where the other branch binds a name to its device. (At the top of a notebook
cell a bare expression is displayed, so only nested statements count; in the body of a `try`
that handles errors it tests that the text names a device.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model.values import Kind

if TYPE_CHECKING:
    from torchlint.model import Model


def discarded_devices(model: Model) -> Iterator[tuple[cst.Call, str | None]]:
    """Each device construction thrown away, with the name the other branches of its `if` bind
    a device to (None when there is none)."""
    for call in model.calls_named(devices.DEVICE_FACTORIES):
        statement = model.parent(call)
        if type(statement) is not cst.Expr:
            continue
        line = model.parent(statement)
        if line is None or model.parent(line) is model.module:
            continue
        if _checked_for_errors(model, line):
            continue  # `try: torch.device(text)` / `except RuntimeError`: a test that the text names a device
        yield call, _device_bound_beside(model, line)


def _checked_for_errors(model: Model, line: cst.CSTNode) -> bool:
    """Whether a statement sits directly in the body of a `try` that handles errors."""
    block = model.parent(line)
    statement = model.parent(block)
    return isinstance(statement, cst.Try) and statement.body is block and bool(statement.handlers)


def _device_bound_beside(model: Model, line: cst.CSTNode) -> str | None:
    """The name the other branches of the `if` around ``line`` assign a device to."""
    block = model.parent(line)
    branch = model.parent(block)
    chain = branch
    while isinstance(model.parent(chain), (cst.If, cst.Else)):
        chain = model.parent(chain)
    if not isinstance(chain, cst.If):
        return None
    for statement in _branch_statements(chain):
        if statement is line or not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
                and any(v.kind is Kind.DEVICE for v in model.values.of(small.value))
            ):
                return small.targets[0].target.value
    return None


def _branch_statements(chain: cst.If) -> Iterator[cst.CSTNode]:
    """The statements directly in each branch of an if/elif/else chain."""
    branch: cst.If | cst.Else | None = chain
    while branch is not None:
        yield from branch.body.body
        branch = branch.orelse if isinstance(branch, cst.If) else None
