"""Suppression comments: `# noqa`, `# noqa: TL003,TL004`, and file-wide `# torchlint: noqa`."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable

# `# noqa` alone suppresses everything on the line; `# noqa: CODES` only those codes.
_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
# A comment line of its own, anywhere in the file, exempts the file (like `# ruff: noqa`).
_FILE_EXEMPTION = re.compile(
    r"^[ \t]*#[ \t]*torchlint[ \t]*:[ \t]*noqa(?::[ \t]*(?P<codes>[A-Z0-9, \t]+))?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)

ALL = frozenset({"*"})


def file_exemptions(text: str) -> frozenset[str]:
    """Codes exempted for the whole file; ``ALL`` when every code is."""
    codes: set[str] = set()
    for match in _FILE_EXEMPTION.finditer(text):
        if not match.group("codes"):
            return ALL
        codes.update(c.upper() for c in re.split(r"[,\s]+", match.group("codes")) if c)
    return frozenset(codes)


def line_suppressions(text: str) -> dict[int, frozenset[str]]:
    """Map each line carrying a noqa comment to the codes it suppresses (``ALL`` for bare noqa).

    Comments are found with the tokenizer, so `# noqa` inside a string is not one.
    """
    result: dict[int, frozenset[str]] = {}
    if "noqa" not in text.lower():
        return result
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.COMMENT:
                continue
            match = _NOQA.search(token.string)
            if match is None:
                continue
            codes = match.group("codes")
            result[token.start[0]] = (
                frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else ALL
            )
    except (tokenize.TokenError, SyntaxError):
        # Only reached for sources LibCST accepted but tokenize rejects; keep what was found.
        pass
    return result


def is_suppressed(code: str, lines: Iterable[int], suppressions: dict[int, frozenset[str]]) -> bool:
    for line in lines:
        codes = suppressions.get(line)
        if codes is not None and (codes is ALL or code in codes):
            return True
    return False
