"""LibCST's parse, without re-validating the nodes its own parser builds.

Every LibCST node validates itself when constructed (`CSTNode.__post_init__` calls `_validate`:
regular expressions over whitespace, balanced parentheses...). That guards trees built by hand;
a tree the parser builds from source that CPython has just accepted is valid by construction, and
LibCST's own source says as much ("would allow us to avoid validating the tree when parsing a
file", libcst/_nodes/base.py). Skipping it makes a parse about an eighth faster; the tree is the
same (the test suite compares them node for node).

The check is switched off only while no other thread runs, for the duration of the parse, so
nodes built anywhere else (a fix, a language-server request, a plugin) are always validated.
"""

from __future__ import annotations

import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_VALIDATING = CSTNode.__post_init__


def _trusted(self: CSTNode) -> None:
    pass


def parse_module(text: str) -> cst.Module:
    if threading.active_count() > 1 or CSTNode.__post_init__ is not _VALIDATING:
        return cst.parse_module(text)
    CSTNode.__post_init__ = _trusted
    try:
        return cst.parse_module(text)
    finally:
        CSTNode.__post_init__ = _VALIDATING
