"""Engine positions -> LSP positions.

The engine counts 1-based lines and 1-based code-point columns; LSP counts 0-based lines and
columns in the code units negotiated with the client (UTF-16 unless it offers better).
"""

from __future__ import annotations

import re

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from torchlint import pages
from torchlint.diagnostics import Diagnostic, Edit, Fix, Position, Severity

# LSP's line breaks only: str.splitlines also breaks at form feeds and other separators that
# Python source may contain inside a line, which would shift every later line.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

_SEVERITY = {Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning}


class Lines:
    """One version of a document's text, for converting positions into it."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self.text = text
        self.lines = _LINE_BREAK.split(text)
        self._codec = codec

    def _clamp(self, position: Position) -> tuple[int, int]:
        """0-based line and code-point column inside the text (a syntax error can point past it)."""
        line = max(position.line - 1, 0)
        if line >= len(self.lines):
            return len(self.lines) - 1, len(self.lines[-1])
        return line, min(max(position.column - 1, 0), len(self.lines[line]))

    def _to_client(self, line: int, column: int) -> types.Position:
        return types.Position(line=line, character=self._codec.client_num_units(self.lines[line][:column]))

    def range(self, start: Position, end: Position, *, visible: bool = False) -> types.Range:
        """The LSP range between two engine positions; ``visible`` widens an empty range to one
        character so that editors can show it (a syntax error is reported at a point)."""
        start_line, start_column = self._clamp(start)
        end_line, end_column = self._clamp(end)
        if visible and (start_line, start_column) == (end_line, end_column):
            if end_column < len(self.lines[end_line]):
                end_column += 1
            elif start_column > 0:
                start_column -= 1
        return types.Range(start=self._to_client(start_line, start_column), end=self._to_client(end_line, end_column))

    def text_edit(self, edit: Edit) -> types.TextEdit:
        return types.TextEdit(range=self.range(edit.start, edit.end), new_text=edit.content)

    def diagnostic(self, diagnostic: Diagnostic) -> types.Diagnostic:
        return types.Diagnostic(
            range=self.range(diagnostic.start, diagnostic.end, visible=True),
            message=diagnostic.message,
            severity=_SEVERITY[diagnostic.severity],
            code=diagnostic.code,
            code_description=types.CodeDescription(href=pages.url(diagnostic.code)),
            source="torchlint",
        )

    def workspace_edit(self, uri: str, version: int | None, fix: Fix, versioned: bool) -> types.WorkspaceEdit:
        edits = [self.text_edit(edit) for edit in fix.edits]
        if not versioned:
            return types.WorkspaceEdit(changes={uri: edits})
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
