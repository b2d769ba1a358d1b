"""GitHub Actions workflow commands: one `::error`/`::warning` annotation per diagnostic."""

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
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("file", d.path),
                ("line", d.line),
                ("col", d.column),
                ("endLine", d.end.line),
                ("endColumn", d.end.column),
                ("title", f"torchlint ({d.code})"),
            )
        )
        lines.append(f"::{d.severity.value} {properties}::{_escape_data(f'{d.code} {d.message}')}\n")
    return "".join(lines)
