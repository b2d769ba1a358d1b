"""`--fix` in a notebook: the edits of its cells written into the notebook's JSON, layout kept.

A notebook's JSON is written by Jupyter (one-space indent, keys sorted, non-ASCII kept), by VS
Code or by another tool, each its own way. The edited document is written with the settings of the
`json` module that give back the file as it is, byte for byte; a notebook that none of them
reproduces (edited by hand, numbers spelled otherwise) is not rewritten, so that nothing but the
edited cells ever changes.
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Callable, Iterable

from torchlint import notebook
from torchlint.diagnostics import Diagnostic, Edit

_LINES = re.compile(r"[^\n]*\n|[^\n]+")


class CannotRewrite(Exception):
    """The notebook cannot be rewritten without changing more than its cells' code."""


def apply(text: str, diagnostics: Iterable[Diagnostic]) -> str:
    """The notebook ``text`` with the fixes of ``diagnostics`` (cell-addressed, see
    notebook.NotebookSource.cell_fix) applied to their cells."""
    document = json.loads(text)
    dump = _layout(text, document)
    if dump is None:
        raise CannotRewrite("the notebook's JSON is laid out in a way that rewriting it would not keep")
    edits: dict[int, set[Edit]] = collections.defaultdict(set)  # two fixes adding one line add it once
    for diagnostic in diagnostics:
        assert diagnostic.cell is not None and diagnostic.fix is not None
        edits[diagnostic.cell].update(diagnostic.fix.edits)
    cells, key = notebook.code_cells(document)
    for number, cell_edits in edits.items():
        stored = cells[number - 1][key]
        edited = _edited(_text(stored), cell_edits)
        cells[number - 1][key] = _LINES.findall(edited) if isinstance(stored, list) else edited
    return dump(document)


def code_sources(text: str) -> list[str]:
    """The text of each code cell of the notebook ``text``, in the order cells are numbered."""
    code, key = notebook.code_cells(json.loads(text))
    return [_text(cell[key]) for cell in code]


def _text(stored: str | list[str]) -> str:
    """A cell's text, stored as one string or as a list of lines."""
    return "".join(stored) if isinstance(stored, list) else stored


def _layout(text: str, document: object) -> Callable[[object], str] | None:
    """How the file was serialised: the `json.dumps` settings that reproduce ``text``."""
    second_line = text.split("\n", 2)[1] if text.count("\n") >= 2 else None
    indent = second_line[: len(second_line) - len(second_line.lstrip(" \t"))] if second_line else None
    end = "\n" if text.endswith("\n") else ""
    for ensure_ascii in (False, True):
        for separators in ((",", ": "), (", ", ": "), (",", ":")) if indent is None else ((",", ": "),):

            def dump(value: object, ensure_ascii=ensure_ascii, separators=separators) -> str:
                return json.dumps(value, indent=indent or None, ensure_ascii=ensure_ascii, separators=separators) + end

            if dump(document) == text:
                return dump
    return None


def _edited(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with ``edits`` (1-based lines, columns in characters; end exclusive) applied. A
    cell's last line has no newline in the file, but has one in the text the edits were made on."""
    virtual_newline = not text.endswith("\n")
    if virtual_newline:
        text += "\n"
    starts = [0]
    starts.extend(match.end() for match in re.finditer("\n", text))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    for edit in sorted(edits, key=lambda edit: edit.start, reverse=True):
        start, end = offset(edit.start.line, edit.start.column), offset(edit.end.line, edit.end.column)
        text = text[:start] + edit.content + text[end:]
    return text[:-1] if virtual_newline and text.endswith("\n") else text
