"""LibCST's parse, without re-validating the nodes its own parser builds.

Every LibCST node validates itself when constructed (`CSTNode.__post_init__` calls `_validate`:
regular expressions over whitespace, balanced parentheses...). That guards trees built by hand;
a tree the parser builds from source that CPython has just accepted is valid by construction, and
LibCST's own source says as much ("would allow us to avoid validating the tree when parsing a
file", libcst/_nodes/base.py). Skipping it makes a parse about an eighth faster; the tree is the
same (the test suite compares them node for node).

The check is switched off for the duration of one parse at a time, for the nodes of the thread
that parses: nodes built anywhere else (a fix, a language-server request, a plugin) are always
validated. In a process with no other thread, the switch is a no-op function; with other threads
(the language server checks in a worker thread beside its event loop), one that tests which
thread builds the node, which costs about a sixth of what skipping saves.
"""

from __future__ import annotations

import threading

import libcst as cst
from libcst._nodes.base import CSTNode

_VALIDATING = CSTNode.__post_init__
_parsing = threading.Lock()
_parser: int | None = None  # the thread whose parse skips validation, while it runs
_get_ident = threading.get_ident


def _trusted(self: CSTNode) -> None:
    pass


def _trusted_in_parser(self: CSTNode) -> None:
    if _get_ident() != _parser:
        _VALIDATING(self)


def parse_module(text: str) -> cst.Module:
    global _parser
    if CSTNode.__post_init__ is not _VALIDATING or not _parsing.acquire(blocking=False):
        return cst.parse_module(text)  # another parse (or patch) is under way: validated
    try:
        _parser = _get_ident()
        CSTNode.__post_init__ = _trusted if threading.active_count() == 1 else _trusted_in_parser
        return cst.parse_module(text)
    finally:
        CSTNode.__post_init__ = _VALIDATING
        _parser = None
        _parsing.release()
