"""Suppression comments: `# noqa`, `# noqa: TL003,TL004`, and file-wide `# torchlint: noqa`."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator

# `# noqa` alone suppresses everything on the line; `# noqa: CODES` only those codes.
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
# A comment line of its own, anywhere in the file, exempts the file (like `# ruff: noqa`).
_FILE_EXEMPTION = re.compile(
    r"^[ \t]*#[ \t]*torchlint[ \t]*:[ \t]*noqa(?::[ \t]*(?P<codes>[A-Z0-9, \t]+))?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)

ALL = frozenset({"*"})


def file_exemptions(text: str) -> frozenset[str]:
    """Codes exempted for the whole file; ``ALL`` when every code is."""
    codes: set[str] = set()
    matches = list(_FILE_EXEMPTION.finditer(text))
    comment_lines = {line for line, _ in _comments(text)} if matches else set()
    for match in matches:
        if text.count("\n", 0, match.start()) + 1 not in comment_lines:
            continue  # a line inside a multi-line string, not a comment
        if not match.group("codes"):
            return ALL
        codes.update(_split_codes(match.group("codes")))
    return frozenset(codes)


def line_suppressions(text: str) -> dict[int, frozenset[str]]:
    """Map each line carrying a noqa comment to the codes it suppresses (``ALL`` for bare noqa)."""
    result: dict[int, frozenset[str]] = {}
    if "noqa" not in text.lower():
        return result
    for line, comment in _comments(text):
        match = _NOQA.search(comment)
        if match is not None:
            codes = match.group("codes")
            result[line] = frozenset(_split_codes(codes)) if codes else ALL
    return result


def _split_codes(codes: str) -> Iterator[str]:
    return (code.upper() for code in re.split(r"[,\s]+", codes) if code)


def _comments(text: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment, found with the tokenizer so that `# noqa` in a string is
    not one. Text the tokenizer rejects midway yields the comments before that point."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string
    except (tokenize.TokenError, SyntaxError):
        return


def is_suppressed(code: str, lines: Iterable[int], suppressions: dict[int, frozenset[str]]) -> bool:
    for line in lines:
        codes = suppressions.get(line)
        if codes is not None and (codes is ALL or code in codes):
            return True
    return False
