"""A JSON list of diagnostic objects (see Diagnostic.to_dict for the fields)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from torchlint.diagnostics import Diagnostic


def render(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps([d.to_dict() for d in diagnostics], indent=2) + "\n"
