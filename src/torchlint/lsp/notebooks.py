"""Notebooks in the editor (LSP 3.17 notebook documents): the cells checked as one notebook.

An editor that syncs notebooks sends each cell as a text document of one notebook. The code cells
are checked together, as `torchlint` checks an `.ipynb` file, so a cell sees what the cells above
it bound, and each finding goes to its own cell's document, in that cell's lines: quick fixes,
noqa suppressions and the hover then work on a cell as on a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from lsprotocol import types
from pygls.workspace import Workspace

from torchlint.diagnostics import Diagnostic

SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(notebook="jupyter-notebook", cells=[types.NotebookCellLanguage("python")])
    ]
)


@dataclass(frozen=True)
class Cells:
    """A notebook as the engine reads it: nbformat JSON of its code cells, and their documents in
    the order the engine numbers them (from 1)."""

    text: str
    uris: tuple[str, ...]


def cells_of(notebook: types.NotebookDocument, workspace: Workspace) -> Cells:
    uris, cells = [], []
    for cell in notebook.cells:
        if cell.kind is types.NotebookCellKind.Code:
            uris.append(cell.document)
            cells.append({"cell_type": "code", "metadata": {}, "source": workspace.get_text_document(cell.document).source})
    return Cells(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), tuple(uris))


def by_cell(diagnostics: list[Diagnostic], cells: Cells) -> dict[str, list[Diagnostic]]:
    """Each cell's diagnostics, positions in the cell's own lines. One about the notebook as a
    whole (an invalid configuration) goes to its first code cell."""
    found: dict[str, list[Diagnostic]] = {uri: [] for uri in cells.uris}
    for diagnostic in diagnostics:
        if diagnostic.cell is not None:
            found[cells.uris[diagnostic.cell - 1]].append(replace(diagnostic, cell=None))
        elif cells.uris:
            found[cells.uris[0]].append(diagnostic)
    return found
