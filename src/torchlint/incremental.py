"""Parsing a file again after an edit: only the top-level statements whose text changed.

An editor sends the whole text after every keystroke, and most of it is what was parsed the
keystroke before. A top-level statement starts at the beginning of a line with the tokenizer in
its initial state (no open bracket, string or block), so its tree depends only on its own text,
except through what LibCST decides for the whole file:

- the module's default indentation (the first indented block's) and newline (the first line
  ending's), against which every block and line ending is stored (``None`` means "the default");
- which blank and comment lines belong to which node: a block's trailing lines indented at least
  as deep as its body are its own (``IndentedBlock.footer``), the others lead the next statement;
  the first statement's leading lines are the module's header, lines after the last its footer.

`Reparser.parse` finds the statements the edit touched (by the common prefix and suffix of the
two texts), parses their new text alone, and splices the result between the untouched
statements of the previous tree; it widens the region by a statement when a boundary line could
belong to either side, and parses the whole text whenever a condition below does not hold. The
result is the tree a full parse gives (`code` and `deep_equals` alike: the test suite checks it on
random edits of real-shaped scripts). Statements outside the region are the previous tree's
nodes, shared: trees are immutable. The CPython syntax check is not incremental: the engine runs
it on the whole text first (LibCST accepts code CPython rejects, `def f(a, a)`), and a text it
rejects never reaches the reparser, whose last tree stays the base of the next splice.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import libcst as cst

from torchlint import parsing

# Region parses tried before parsing the whole text: an edit that needs more is not local.
_MAX_WIDENING = 4


class Reparser:
    """The parses of one document's successive texts (one language-server document)."""

    def __init__(self) -> None:
        self._text: str | None = None
        self._module: cst.Module | None = None
        # _cuts[k]: where top-level statement k starts in _text; _cuts[-1]: where the footer starts.
        self._cuts: list[int] | None = None
        # The statements the last `parse` parsed again; None when it parsed the whole text.
        self.reparsed: int | None = None

    def parse(self, text: str) -> cst.Module:
        """The tree of ``text``; raises `libcst.ParserSyntaxError` as `libcst.parse_module` does."""
        spliced = self._splice(text) if self._module is not None else None
        if spliced is None:
            module = parsing.parse_module(text)
            self._text, self._module, self._cuts, self.reparsed = text, module, None, None
            return module
        return spliced

    def prepare(self) -> None:
        """Find where the last tree's statements start now, while the editor is idle, rather than
        at the next edit (a quarter of a parse after a full one)."""
        if self._cuts is None and self._module is not None:
            self._cuts = _cuts(self._module, self._text)

    def _splice(self, text: str) -> cst.Module | None:
        old, module = self._text, self._module
        assert old is not None and module is not None
        if text == old:
            self.reparsed = 0
            return module
        newline = module.default_newline
        if not module.body or not _uniform_newlines(text, newline):
            return None
        self.prepare()
        if not self._cuts:
            return None
        cuts, body = self._cuts, module.body
        count = len(body)
        prefix = _common_prefix(old, text)
        suffix = _common_suffix(old, text, min(len(old), len(text)) - prefix)
        delta = len(text) - len(old)
        # Statements [first, stop) of the old tree overlap the changed text (or hold the insertion).
        first = max(bisect_right(cuts, prefix) - 1, 0)
        stop = max(bisect_left(cuts, len(old) - suffix, 0, count), first)
        for _ in range(_MAX_WIDENING):
            start = 0 if first == 0 else cuts[first]
            end = len(text) if stop == count else cuts[stop] + delta
            region_text = text[start:end]
            if "\f" in region_text:  # a form feed resets the tokenizer's indentation: not worth the risk
                return None
            following = body[stop] if stop < count else None
            region = _parse_region(region_text)
            if region is None:
                # Cut mid-statement (a decorator typed above a function, say): the statement on
                # either side may complete it.
                widen = "right" if following is not None else "left"
            else:
                widen = _boundary(text, start, end, region, first > 0, following, newline)
            if widen is None:
                break
            if widen == "left" and first > 0:
                first -= 1
            elif widen == "right" and stop < count:
                stop += 1
            else:
                return None
        else:
            return None
        if region.default_newline != newline or region.encoding != module.encoding:
            return None
        if not _same_indentation(module, region, first, stop):
            return None
        region_cuts = _cuts(region, region_text)
        if not region_cuts:
            return None
        statements = list(region.body)
        if first > 0:
            # A full parse gives these lines to the statement they lead, not to the header.
            if region.header:
                statements[0] = statements[0].with_changes(leading_lines=region.header)
            region_cuts[0] = 0
        region_cuts = [start + cut for cut in region_cuts]
        spliced = cst.Module(
            body=(*body[:first], *statements, *body[stop:]),
            header=region.header if first == 0 else module.header,
            footer=region.footer if stop == count else module.footer,
            encoding=module.encoding,
            default_indent=module.default_indent,
            default_newline=newline,
            has_trailing_newline=region.has_trailing_newline if stop == count else module.has_trailing_newline,
        )
        self._cuts = [*cuts[:first], *region_cuts, *(cut + delta for cut in cuts[stop + 1 :])]
        self._text, self._module, self.reparsed = text, spliced, len(statements)
        return spliced


def _parse_region(text: str) -> cst.Module | None:
    try:
        return parsing.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return None


def _boundary(
    text: str, start: int, end: int, region: cst.Module, after: bool, following: cst.BaseStatement | None, newline: str
) -> str | None:
    """Which way to widen the region for its edges to be statement boundaries a full parse keeps,
    or None when they are.

    ``after``: statements precede the region; ``following``: the first statement after it, if
    any. Lines between two statements go to the last block of the first one when one of them is
    indented (`IndentedBlock.footer`); lines at column 0 stay with the statement they lead.
    """
    if after:
        if text.endswith("\\" + newline, 0, start):
            return "left"  # a continuation line would join the region to the statement before
        if start < end and (not region.body or not _at_column_0(region.header)):
            return "left"
    if following is not None:
        if start < end and (not text.endswith(newline, start, end) or text.endswith("\\" + newline, start, end)):
            return "right"
        if region.footer or (not region.body and (region.header or not after)):
            return "right"
        if not _at_column_0(following.leading_lines):
            return "right"
    elif not region.body:
        return "left"
    return None


def _at_column_0(lines) -> bool:
    return all(not line.whitespace.value for line in lines)


def _has_block(statement: cst.BaseStatement) -> bool:
    """Whether a top-level statement certainly holds an indented block (its first clause's)."""
    return isinstance(getattr(statement, "body", None), cst.IndentedBlock)


def _same_indentation(module: cst.Module, region: cst.Module, first: int, stop: int) -> bool:
    """Whether the spliced tree's blocks are stored against the default indentation a full parse
    finds: the indentation of the file's first indented block.

    The region's blocks are stored against the default its own parse found, which must be the
    module's. The file's first block is unchanged when it comes before the region (the text there
    is the same); failing that, it is the region's first when the region certainly has one, and
    it stays after the region when neither the old nor the new region could hold one.
    """
    compound = any(not isinstance(statement, cst.SimpleStatementLine) for statement in region.body)
    if compound and region.default_indent != module.default_indent:
        return False
    if any(_has_block(statement) for statement in region.body):
        return True
    if not compound and all(isinstance(statement, cst.SimpleStatementLine) for statement in module.body[first:stop]):
        return True
    return any(_has_block(statement) for statement in module.body[:first])


def _cuts(module: cst.Module, text: str) -> list[int]:
    """Where each top-level statement of ``module`` starts in ``text``, then where the footer
    starts; empty when generating the module does not give back ``text`` (LibCST drops a line
    holding only a backslash, for one), so that no statement boundary is ever guessed."""
    pieces = ["".join(module.code_for_node(line) for line in module.header)]
    pieces.extend(module.code_for_node(statement) for statement in module.body)
    pieces.append("".join(module.code_for_node(line) for line in module.footer))
    if not module.has_trailing_newline:
        # The last statement generates the newline the file does not end with (Module.code
        # drops it): the last cut is one past the text, which no edit reaches.
        text += module.default_newline
    if "".join(pieces) != text:
        return []
    cuts = [len(pieces[0])]
    for piece in pieces[1:-1]:
        cuts.append(cuts[-1] + len(piece))
    return cuts


def _uniform_newlines(text: str, newline: str) -> bool:
    """Whether every line of ``text`` ends with ``newline``, which it has: LibCST splits lines
    at the default newline only, so a region parsed alone could split them elsewhere."""
    if newline == "\n":
        return "\r" not in text and newline in text
    if newline == "\r":
        return "\n" not in text and newline in text
    crlf = text.count("\r\n")
    return crlf > 0 and crlf == text.count("\n") == text.count("\r")


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix, by halving (slice comparisons run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low
