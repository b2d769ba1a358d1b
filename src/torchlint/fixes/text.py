"""A NodeFix as text edits (diagnostics.Fix): what JSON, SARIF and editor code actions carry.

The edits are computed by applying the fix to the tree and comparing texts, so they are exactly
what `--fix` writes for that fix alone. Only the top-level statements the fix changed are
rendered again, and each change is trimmed to the characters that differ, so an editor applies
a small edit rather than rewriting a function.
"""

from __future__ import annotations

import bisect
import difflib
import os
import re
from collections.abc import Callable, Iterable

import libcst as cst

from torchlint.diagnostics import Edit, Fix, Position
from torchlint.fixes.transform import apply
from torchlint.positions import Positions
from torchlint.registry import NodeFix

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Python's own line breaks only: str.splitlines also splits at form feeds and other separators.
# Changed runs of lines closer than this are joined into one edit (see TextFixes._hunks).
_GAP = 3
# How far an insertion may be slid to find its most natural place (see _natural_insertion).
_MAX_SLIDE = 200
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class TextFixes:
    """Converts the NodeFixes of one parsed file; built once per file by the engine.

    ``positions`` is the engine's (PositionProvider's results, computed for the top-level
    statements asked about): it limits each fix's transformer to the subtrees that hold the
    nodes it replaces, and says where each top-level statement starts in the text.
    """

    def __init__(
        self, module: cst.Module, text: str, positions: Positions, parent: Callable[[cst.CSTNode], cst.CSTNode | None]
    ) -> None:
        self.module = module
        self.text = text
        self.positions = positions
        self.parent = parent  # the model's parent lookup
        self._line_starts: list[int] | None = None

    def convert(self, fix: NodeFix | None) -> Fix | None:
        """The fix as text edits, or None when it has none or does not apply to this tree
        (`--fix` tries it anyway and reports why it failed)."""
        if fix is None or not fix.replacements:
            return None
        try:
            for node in fix.replacements:
                self.positions[node]  # noqa: B018 - a KeyError for a node of another tree
            roots = {self.positions.top_level_index(node) for node in fix.replacements}
        except KeyError:  # apply() explains
            roots = None
        try:
            if roots is None:
                updated = apply(self.module, [fix])
            else:
                within = roots if None not in roots else None
                updated = apply(self.module, [fix], _descend(self.parent, fix.replacements), within)
            edits = self.edits(updated)
        except Exception:  # noqa: BLE001 - a broken fix must not cost the user the check
            return None
        return Fix(fix.message, fix.applicability, edits) if edits else None

    def edits(self, updated: cst.Module) -> tuple[Edit, ...]:
        """Text edits that turn this file into ``updated``, a transform of its module."""
        module = self.module
        if not _same(module.header, updated.header) or not _same(module.footer, updated.footer):
            if module.code != self.text:
                raise ValueError("the parser does not reproduce this file's text exactly")
            return self._diff_edits(updated.code)
        old, new_body = module.body, updated.body
        # Untouched statements are the same objects: skip the common ends, then align the rest.
        head = 0
        while head < min(len(old), len(new_body)) and old[head] is new_body[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(new_body)) - head and old[-1 - tail] is new_body[-1 - tail]:
            tail += 1
        old_ids = [id(statement) for statement in old[head : len(old) - tail]]
        new_ids = [id(statement) for statement in new_body[head : len(new_body) - tail]]
        edits = []
        ends_file = not module.has_trailing_newline and not module.footer
        matcher = difflib.SequenceMatcher(None, old_ids, new_ids, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
            start, end = self._offset(i1), min(self._offset(i2), len(self.text))
            new = "".join(updated.code_for_node(statement) for statement in updated.body[j1:j2])
            if ends_file and i2 == len(module.body) and j2 == len(updated.body):
                new = _without_final_newline(new)
            edits.extend(self._hunks(start, self.text[start:end], new))
        return tuple(edits)

    def _offset(self, index: int) -> int:
        offset = self.positions.statement_offset(index)
        if offset is None:
            raise ValueError("the parser does not reproduce this file's text exactly")
        return offset

    def _diff_edits(self, new_text: str) -> tuple[Edit, ...]:
        """Edits from a diff of the whole text: the fallback when statements cannot be rendered
        one by one (a header or footer changed)."""
        return tuple(self._hunks(0, self.text, new_text))

    def _hunks(self, start: int, old: str, new: str) -> list[Edit]:
        """Edits turning ``old`` (found at ``start``) into ``new``: one per run of changed lines,
        so an import added at the top and a change further down stay two small edits. Runs
        less than _GAP unchanged lines apart are one edit: a line diff aligns repeated lines
        arbitrarily (changing the first of two equal lines can read as an insertion before
        and a deletion after), and the character trimming makes the joined edit small again."""
        old_lines, new_lines = split_lines(old), split_lines(new)
        line_starts = [start]
        for line in old_lines:
            line_starts.append(line_starts[-1] + len(line))
        runs: list[list[int]] = []
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            if runs and i1 - runs[-1][1] < _GAP:
                runs[-1][1], runs[-1][3] = i2, j2
            else:
                runs.append([i1, i2, j1, j2])
        edits = [
            self._edit(line_starts[i1], "".join(old_lines[i1:i2]), "".join(new_lines[j1:j2]))
            for i1, i2, j1, j2 in runs
        ]
        return [edit for edit in edits if edit is not None]

    def _edit(self, start: int, old: str, new: str) -> Edit | None:
        """The smallest edit replacing ``old`` (found at ``start``) by ``new``."""
        # Trim the common end first, so that `x.to(d)` -> `x = x.to(d)` inserts `x = ` at the
        # start and an inserted statement is a whole inserted line.
        suffix = min(len(os.path.commonprefix((old[::-1], new[::-1]))), len(old), len(new))
        # Never split a CRLF pair: an editor maps positions by lines.
        if suffix and old[len(old) - suffix - 1 : len(old) - suffix + 1] == "\r\n":
            suffix -= 1
        old, new = old[: len(old) - suffix], new[: len(new) - suffix]
        prefix = len(os.path.commonprefix((old, new)))
        if prefix and old[prefix - 1 : prefix + 1] == "\r\n":
            prefix -= 1
        old, new, start = old[prefix:], new[prefix:], start + prefix
        if not old and not new:
            return None
        if not old:
            start, new = self._natural_insertion(start, new)
        return Edit(self._position(start), self._position(start + len(old)), new)

    def _natural_insertion(self, start: int, new: str) -> tuple[int, str]:
        """An insertion can often slide along the text without changing the result (`Net()` ->
        `Net().to(d)` is `).to(d` before the `)` or `.to(d)` after it); pick the reading a
        person would write: brackets balanced, whole lines at line starts, no leading blank."""
        text = self.text
        while start > 0 and text[start - 1] == new[-1]:
            start, new = start - 1, new[-1] + new[:-1]
        options = [(start, new)]
        while len(options) < _MAX_SLIDE and start < len(text) and text[start] == new[0]:
            start, new = start + 1, new[1:] + new[0]
            options.append((start, new))

        def natural(option: tuple[int, str]) -> tuple[bool, bool, bool]:
            at, content = option
            lines = not _LINE_BREAK.search(content) or (
                content.endswith(("\n", "\r")) and (at == 0 or text[at - 1] in "\r\n")
            )
            return _nested(content), lines, not content[0].isspace()

        return max(options, key=natural)

    def _position(self, offset: int) -> Position:
        if self._line_starts is None:
            self._line_starts = [0] + [match.end() for match in _LINE_BREAK.finditer(self.text)]
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return Position(index + 1, offset - self._line_starts[index] + 1)


def _nested(text: str) -> bool:
    """Whether the brackets in ``text`` open before they close and all close (quotes ignored:
    this only ranks equivalent placements of one insertion)."""
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _descend(parent: Callable[[cst.CSTNode], cst.CSTNode | None], replaced: Iterable[cst.CSTNode]):
    """Whether the transform must enter a node: it holds a replaced node. Read from the model's
    parents, not from positions: asking where each visited node is would generate the code of
    every statement around the fix."""
    holding: set[int] = set()
    for node in replaced:
        while node is not None and id(node) not in holding:
            holding.add(id(node))
            node = parent(node)

    def holds_target(node: cst.CSTNode) -> bool:
        return id(node) in holding

    return holds_target


def _same(old: list[cst.CSTNode] | tuple, new: list[cst.CSTNode] | tuple) -> bool:
    return len(old) == len(new) and all(a is b for a, b in zip(old, new))


def _without_final_newline(text: str) -> str:
    for newline in ("\r\n", "\n", "\r"):
        if text.endswith(newline):
            return text[: -len(newline)]
    return text



def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their line breaks, as Python and LibCST count lines."""
    return _LINE.findall(text)
