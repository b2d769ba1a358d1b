"""Rule pages (rules/TLxxx.md): the documentation `torchlint explain` prints and SARIF cites.

A page's fenced examples are tagged after the language: ```` ```python bad ````,
```` ```python good ```` and, for rules with a fix, ```` ```python fixed ```` (what the fix makes
of the bad example just before it). The test suite runs torchlint on every one of them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

PAGE_URL = "https://github.com/torchlint/torchlint/blob/main/rules/{code}.md"

_FENCE = re.compile(r"^```python[ \t]+(?P<tag>bad|good|fixed)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Example:
    tag: str  # "bad", "good" or "fixed"
    code: str
    line: int  # 1-based line of the first code line within the page


def pages_dir() -> Path:
    """The installed pages, or the repository's rules/ folder when running from a checkout.

    The wheel carries rules/ as torchlint/_pages; an editable install or a source checkout has
    only the top-level folder, two levels above this file.
    """
    packaged = resources.files("torchlint") / "_pages"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "rules"


@functools.cache
def page(code: str) -> str | None:
    try:
        return (pages_dir() / f"{code.upper()}.md").read_text(encoding="utf-8")
    except OSError:
        return None


def url(code: str) -> str:
    return PAGE_URL.format(code=code.upper())


def examples(text: str) -> list[Example]:
    return [
        Example(match.group("tag"), match.group("body"), text.count("\n", 0, match.start("body")) + 1)
        for match in _FENCE.finditer(text)
    ]


def section(text: str, heading: str) -> str:
    """The body of a `## heading` section, for SARIF's help text."""
    match = re.search(rf"^## {re.escape(heading)}\s*\n(?P<body>.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    return match.group("body").strip() if match else ""
