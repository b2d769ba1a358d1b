"""The values every layer exchanges: a diagnostic, its location and its optional fix."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"


class Applicability(str, enum.Enum):
    """ruff's meaning: a safe fix keeps behaviour, an unsafe one may change it."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    """1-based line, 1-based column counted in characters (as ruff and flake8 print them)."""

    line: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between two positions (end exclusive) with ``content``."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: Applicability
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    path: str
    start: Position
    end: Position
    severity: Severity = Severity.WARNING
    fix: Fix | None = None
    # Filled by `torchlint confirm`: {"status": ..., "evidence": ...}.
    confirmation: dict | None = field(default=None, compare=False)
    # For a notebook: the 1-based code cell; line and column are then counted within that cell.
    cell: int | None = None

    @property
    def line(self) -> int:
        return self.start.line

    @property
    def column(self) -> int:
        return self.start.column

    @property
    def where(self) -> str:
        """`line:col`, or `cell N:line:col` in a notebook (ruff's notation)."""
        position = f"{self.start.line}:{self.start.column}"
        return position if self.cell is None else f"cell {self.cell}:{position}"

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.start, self.code, self.message)

    def to_dict(self) -> dict:
        data = {
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "line": self.start.line,
            "column": self.start.column,
            "end_line": self.end.line,
            "end_column": self.end.column,
            "severity": self.severity.value,
            "fix": None,
        }
        if self.fix is not None:
            data["fix"] = {
                "message": self.fix.message,
                "applicability": self.fix.applicability.value,
                "edits": [
                    {
                        "line": e.start.line,
                        "column": e.start.column,
                        "end_line": e.end.line,
                        "end_column": e.end.column,
                        "content": e.content,
                    }
                    for e in self.fix.edits
                ],
            }
        if self.confirmation is not None:
            data["confirmation"] = self.confirmation
        if self.cell is not None:
            data["cell"] = self.cell
        return data


def offered(diagnostic: Diagnostic, unsafe: bool) -> bool:
    """Whether this run applies the diagnostic's fix: a safe one always, an unsafe one only with
    --unsafe-fixes (what `[*]` marks)."""
    fix = diagnostic.fix
    return fix is not None and (unsafe or fix.applicability is Applicability.SAFE)
