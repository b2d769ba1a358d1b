"""`path:line:col: CODE message`, the line flake8 and ruff print (`path:cell N:line:col: ...` in a
notebook, as ruff prints it); `[*]` marks a fixable finding."""

from __future__ import annotations

import re
from collections.abc import Sequence

from torchlint.diagnostics import Diagnostic

# A message quoting a multi-line expression keeps its words, joined on one line.
_LINE_BREAKS = re.compile(r"[ \t]*(?:\r\n|\r|\n)[ \t]*")


def line(diagnostic: Diagnostic) -> str:
    """One line, whatever the message holds: tools read this format line by line."""
    marker = " [*]" if diagnostic.fix is not None else ""
    text = f"{diagnostic.path}:{diagnostic.where}: {diagnostic.code}{marker} {diagnostic.message}"
    if diagnostic.confirmation:
        text += f" [{diagnostic.confirmation['status']}: {diagnostic.confirmation['evidence']}]"
    return _LINE_BREAKS.sub(" ", text)


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return "".join(line(d) + "\n" for d in diagnostics)
