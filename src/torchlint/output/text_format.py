"""`path:line:col: CODE message`, the line flake8 and ruff print (`path:cell N:line:col: ...` in a
notebook, as ruff prints it); `[*]` marks a fixable finding."""

from __future__ import annotations

from collections.abc import Sequence

from torchlint.diagnostics import Diagnostic


def line(diagnostic: Diagnostic) -> str:
    marker = " [*]" if diagnostic.fix is not None else ""
    text = f"{diagnostic.path}:{diagnostic.where}: {diagnostic.code}{marker} {diagnostic.message}"
    if diagnostic.confirmation:
        text += f" [{diagnostic.confirmation['status']}: {diagnostic.confirmation['evidence']}]"
    return text


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return "".join(line(d) + "\n" for d in diagnostics)
