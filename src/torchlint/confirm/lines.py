"""Statements of the script by line: a finding and an observation match when they fall in the same
statement (a call spread over several lines is one statement; a compound statement is its header)."""

from __future__ import annotations

import ast
import bisect


class Statements:
    def __init__(self, source: str) -> None:
        self.spans: list[tuple[int, int]] = []
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt):
                self.spans.append((node.lineno, _header_end(node)))
        self.spans.sort()
        self.starts = [start for start, _ in self.spans]

    def span(self, line: int) -> tuple[int, int]:
        """The innermost statement containing `line` (the line itself when none does)."""
        best = (line, line)
        if not self.spans:
            return best
        index = bisect.bisect_right(self.starts, line)
        for start, end in reversed(self.spans[:index]):
            if start <= line <= end:
                if best == (line, line) or (end - start) < (best[1] - best[0]):
                    best = (start, end)
        return best

    def covering(self, first: int, last: int) -> range:
        """Every line of the statements that a finding from `first` to `last` touches."""
        start = min(self.span(first)[0], self.span(last)[0])
        end = max(self.span(first)[1], self.span(last)[1])
        return range(start, end + 1)


def _header_end(node: ast.stmt) -> int:
    """The last line of a statement, or of a compound statement's header (before its body)."""
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        first_child = body[0]
        decorators = getattr(first_child, "decorator_list", None) or []
        first_line = min([first_child.lineno, *(d.lineno for d in decorators)])
        return max(node.lineno, first_line - 1)
    return node.end_lineno or node.lineno
