"""GitHub Actions workflow commands: one `::error`/`::warning` annotation per diagnostic.

A notebook diagnostic is annotated on the file with its cell position in the message: the
annotation's line and column would be lines of the notebook's JSON, not of its code.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchlint.diagnostics import Diagnostic


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(diagnostics: Sequence[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        fields: list[tuple[str, object]] = [("file", d.path)]
        message = f"{d.code} {d.message}"
        if d.cell is None:
            fields += [("line", d.line), ("col", d.column), ("endLine", d.end.line), ("endColumn", d.end.column)]
        else:
            message = f"{d.where}: {message}"
        fields.append(("title", f"torchlint ({d.code})"))
        properties = ",".join(f"{key}={_escape_property(str(value))}" for key, value in fields)
        lines.append(f"::{d.severity.value} {properties}::{_escape_data(message)}\n")
    return "".join(lines)
