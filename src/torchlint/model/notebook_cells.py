"""A notebook's cells in the joined script the model reads. Jupyter displays the value of the
last expression statement of a cell: that value is shown to the reader, not thrown away."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model.constants import per_model

if TYPE_CHECKING:
    from torchlint.model import Model


def displayed(model: Model, expression: cst.Expr) -> bool:
    """Whether an expression statement is the last statement of a notebook cell."""
    line = model.parent(expression)
    return (
        isinstance(line, cst.SimpleStatementLine) and line.body[-1] is expression and line in _cell_endings(model)
    )


@per_model
def _cell_endings(model: Model) -> frozenset[cst.CSTNode]:
    """The top-level statements that end a cell: the next one starts in a later cell."""
    starts = model.cell_starts
    if not starts:
        return frozenset()
    body = model.module.body
    line = 1 + len(model.module.header)
    cells = []
    for statement in body:
        first = line + len(statement.leading_lines)
        cells.append(bisect.bisect_right(starts, first))
        line += model.module.code_for_node(statement).count("\n")
    return frozenset(
        statement
        for index, statement in enumerate(body)
        if index + 1 == len(body) or cells[index + 1] != cells[index]
    )
