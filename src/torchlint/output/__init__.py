"""Output formats: each module renders a list of diagnostics to the text printed on stdout."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from torchlint.diagnostics import Diagnostic

FORMATS = ("text", "json", "sarif", "github")


def render(fmt: str, diagnostics: Sequence[Diagnostic]) -> str:
    module = importlib.import_module(f"torchlint.output.{fmt}_format")
    return module.render(diagnostics)
