"""What one check of one file produces, and the TL000 diagnostic of a file that cannot be read.

Apart from the engine, which imports LibCST, the model and the rules: a run answered from the
cache reads files and hands out analyses without any of them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from torchlint import profile, registry
from torchlint.diagnostics import Diagnostic, Position, Severity

if TYPE_CHECKING:
    import libcst as cst

    from torchlint.source import SourceText

CANNOT_CHECK = registry.COULD_NOT_CHECK.code


@dataclass
class Analysis:
    """Everything one check of one file produced; fixes and the LSP need more than diagnostics."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: SourceText | None = None
    module: cst.Module | None = None
    # (rule code, finding) for each reported, unsuppressed finding, in diagnostic order.
    findings: list[tuple[str, registry.Finding]] = field(default_factory=list)
    # the project modules whose summaries the check used: path -> content digest
    used: dict[str, str] = field(default_factory=dict)


def cannot_check(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    start = Position(max(line, 1), max(column, 1))
    return Diagnostic(CANNOT_CHECK, message, path, start, start, Severity.ERROR)


def read(path: Path) -> bytes | Diagnostic:
    """A file's bytes, or the TL000 diagnostic saying why it cannot be read."""
    display = os.fspath(path)
    try:
        with profile.timer(profile.READ):
            return path.read_bytes()
    except FileNotFoundError:
        return cannot_check(display, "No such file or directory")
    except IsADirectoryError:
        return cannot_check(display, "Is a directory")
    except OSError as error:
        return cannot_check(display, f"cannot read file: {error.strerror or error}")
