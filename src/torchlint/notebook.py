"""Jupyter notebooks (nbformat 4, and 3): the code cells as one Python text, and positions mapped
back to cells.

The code cells are joined in order; IPython syntax that is not Python is neutralised line for
line, so every line keeps its number and column: a line magic (`%time`), a shell escape (`!pip`),
a help query (`torch.nn?`), an assignment from one (`files = !ls`), a one-line cell that IPython
runs as a magic without its `%` (automagic: `pip install timm`, `ls -l data`), and cells run by a
cell magic other than a timing one (`%%bash`, `%%writefile`, also under `%%capture`) are left out. A cell whose first line
is indented loses that indentation on every line that has it, as IPython removes it before running
the cell; positions are mapped back to the columns of the cell as written. Cells are numbered like
ruff and nbQA: 1-based, counting code cells only. A notebook of another language is not checked.

A fix is offered in a notebook when its edits lie in the finding's own cell, on lines that are the
cell's text as written (not a neutralised IPython line, not a dedented cell, not `\r` line ends):
the edits then read the same in the cell as in the joined text (fixes/cells.py writes them).
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from torchlint.diagnostics import Diagnostic, Fix, Position

# Cell magics whose body is Python, run with timing or capture around it.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})

# The line magics a Jupyter kernel has before any extension is loaded: IPython 8's built-in ones
# and default shell aliases (`ls`, `cp`, `mkdir`...), which `%lsmagic` lists, plus the ones
# ipykernel adds. With automagic on (the default) a one-line cell starting with one runs it.
AUTOMAGICS = frozenset(
    """alias alias_magic autoawait autocall automagic bookmark cat cd colors conda config cp debug
    dhist dirs doctest_mode ed edit env gui hist history killbgscripts ldir lf lk ll load load_ext
    loadpy logoff logon logstart logstate logstop ls lsmagic lx macro magic matplotlib mkdir mv
    notebook page pastebin pdb pdef pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch
    psource pushd pwd pycat pylab quickref recall rehashx reload_ext rep rerun reset reset_selective
    rm rmdir run save sc set_env sx system tb time timeit unalias unload_ext who who_ls whos xdel
    xmode autosave clear connect_info less man more qtconsole""".split()
)

_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
_LEADING_INDENT = re.compile(r"[ \t]+")
# What can start an IPython-only logical line: `%magic`, `!shell`, `?help`, `name?`, `x = !cmd`;
# a help query may hold wildcards (`torch.*Tensor?` searches the namespace).
_MAGIC = re.compile(r"[ \t]*(?:[%!?]|[\w.*]+\?{1,2}[ \t]*$)")
_MAGIC_ASSIGNMENT = re.compile(r"(?P<target>[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*)[%!]")
# "on line 126", "(detected at line 93)": a line number inside a message (SyntaxError texts).
_LINE_MENTION = re.compile(r"\b(?P<word>on|at) line (?P<line>\d+)\b")
_CELL_MAGIC = re.compile(r"[ \t]*%%(?P<name>\w+)")
# IPython reads the word before the arguments as `[\w.*]*`, so `ls.x` or `ls*2` is no magic name.
_AUTOMAGIC = re.compile(r"[ \t]*(?P<name>\w+)(?![\w.*])[ \t]*(?P<arguments>.*)")


class InvalidNotebook(Exception):
    """The file is not a readable notebook; the message says why, for a TL000 diagnostic."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


@dataclass(frozen=True)
class NotebookSource:
    text: str
    # For each code cell with lines: (its first line in `text`, its 1-based cell number).
    starts: tuple[tuple[int, int], ...]
    # Lines of `text` whose cell indentation was removed, and how many columns it took.
    dedented: Mapping[int, int] = field(default_factory=dict)
    # Lines of `text` that differ from their cell's line otherwise (IPython syntax neutralised,
    # `\r` line ends).
    rewritten: frozenset[int] = frozenset()

    def locate(self, position: Position) -> tuple[int, Position]:
        """The cell of a position in `text`, and the position within that cell."""
        index = bisect.bisect_right(self.starts, (position.line, float("inf"))) - 1
        first, cell = self.starts[max(index, 0)]
        column = position.column + self.dedented.get(position.line, 0)
        return cell, Position(max(position.line - first + 1, 1), column)

    def cell_fix(self, fix: Fix, cell: int) -> Fix | None:
        """``fix``, whose edits are positions in `text`, as edits of ``cell``'s text; None when
        an edit leaves the cell or touches a line that is not as written there."""
        index = next((index for index, (_, number) in enumerate(self.starts) if number == cell), None)
        if index is None:
            return None
        first = self.starts[index][0]
        # the line after the cell (`text` ends every line with a newline)
        after = self.starts[index + 1][0] if index + 1 < len(self.starts) else self.text.count("\n") + 1
        edits = []
        for edit in fix.edits:
            # an end at the start of a line (exclusive) leaves that line untouched
            last = edit.end.line - 1 if edit.end.column == 1 and edit.end > edit.start else edit.end.line
            touched = range(edit.start.line, last + 1)
            if edit.start.line < first or edit.end.line > after or (edit.end.line == after and edit.end.column > 1):
                return None
            if any(line in self.rewritten or line in self.dedented for line in touched):
                return None
            edits.append(replace(edit, start=_shifted(edit.start, first), end=_shifted(edit.end, first)))
        return replace(fix, edits=tuple(edits))


def _shifted(position: Position, first: int) -> Position:
    return Position(position.line - first + 1, position.column)


def load(data: bytes | str) -> NotebookSource | None:
    """The notebook's Python text, or None for a notebook in another language."""
    try:
        document = json.loads(data)
    except json.JSONDecodeError as error:
        raise InvalidNotebook(f"invalid notebook: not JSON ({error.msg})", error.lineno, error.colno) from None
    except (UnicodeDecodeError, RecursionError, ValueError) as error:
        raise InvalidNotebook(f"invalid notebook: not JSON ({error})") from None
    cells, text_key = _cells(document)
    if not _is_python(document.get("metadata")):
        return None
    lines: list[str] = []
    starts: list[tuple[int, int]] = []
    dedented: dict[int, int] = {}
    rewritten: set[int] = set()
    code_cells = 0
    for index, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise InvalidNotebook(f"invalid notebook: cell {index} is not a cell object")
        if cell["cell_type"] != "code":
            continue
        code_cells += 1
        written = _cell_source(cell, index, text_key)
        cell_lines, indent = _dedent(_LINE_SPLIT.split(written))
        as_written = list(cell_lines) if "\r" not in written else []
        cell_lines = _python_lines(cell_lines)
        if cell_lines:
            dedented.update((len(lines) + 1 + number, width) for number, width in indent.items())
            rewritten.update(
                len(lines) + 1 + number
                for number, line in enumerate(cell_lines)
                if number >= len(as_written) or as_written[number] != line
            )
            starts.append((len(lines) + 1, code_cells))
            lines.extend(cell_lines)
    if not starts:
        starts.append((1, 1))
    return NotebookSource("".join(line + "\n" for line in lines), tuple(starts), dedented, frozenset(rewritten))


def to_cells(diagnostics: list[Diagnostic], source: NotebookSource) -> list[Diagnostic]:
    """Diagnostics on the joined text, re-addressed to cells, with their fixes where the fix can
    be written into the cell (`cell_fix`)."""
    located = []
    for diagnostic in diagnostics:
        cell, start = source.locate(diagnostic.start)
        end_cell, end = source.locate(diagnostic.end)
        message = _LINE_MENTION.sub(lambda found: _in_cells(found, source, cell), diagnostic.message)
        located.append(
            replace(
                diagnostic,
                message=message,
                start=start,
                end=end if end_cell == cell else start,
                fix=diagnostic.fix and source.cell_fix(diagnostic.fix, cell),
                cell=cell,
            )
        )
    return located


def _in_cells(found: re.Match, source: NotebookSource, cell: int) -> str:
    """A line of the joined text that a message names (CPython's "after function definition on
    line 126"), as the line of its cell: "on line 25", or "on line 25 of cell 17" in another."""
    its_cell, position = source.locate(Position(int(found.group("line")), 1))
    where = f"{found.group('word')} line {position.line}"
    return where if its_cell == cell else f"{where} of cell {its_cell}"


def code_cells(document: object) -> tuple[list[dict], str]:
    """The code cells of a loaded notebook, in the order they are numbered, and the key of their
    text."""
    cells, text_key = _cells(document)
    return [cell for cell in cells if isinstance(cell, dict) and cell.get("cell_type") == "code"], text_key


def _is_python(metadata: object) -> bool:
    if not isinstance(metadata, dict):
        return True
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        table = metadata.get(key)
        if isinstance(table, dict) and isinstance(table.get(field), str):
            return table[field].lower() == "python"
    return True


def _cells(document: object) -> tuple[list, str]:
    """The cells in order and the key their text is under. nbformat 4 keeps them in `cells`, with
    the text under `source`; nbformat 3, still common in older repositories, keeps them in the
    `cells` of each of its `worksheets`, a code cell's text under `input`."""
    if isinstance(document, dict) and isinstance(document.get("cells"), list):
        return document["cells"], "source"
    sheets = document.get("worksheets") if isinstance(document, dict) else None
    if isinstance(sheets, list) and all(isinstance(sheet, dict) and isinstance(sheet.get("cells", []), list) for sheet in sheets):
        return [cell for sheet in sheets for cell in sheet.get("cells", [])], "input"
    raise InvalidNotebook("invalid notebook: no list of cells (nbformat 4 `cells`, or nbformat 3 `worksheets`)")


def _cell_source(cell: dict, index: int, key: str) -> str:
    source = cell.get(key, "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise InvalidNotebook(f"invalid notebook: the source of cell {index} is not text")


def _dedent(lines: list[str]) -> tuple[list[str], dict[int, int]]:
    """The cell without the indentation of its first non-blank line, removed from every line
    that starts with it (IPython's leading_indent), and the columns removed per line index."""
    first = next((line for line in lines if line.strip()), "")
    indent = _LEADING_INDENT.match(first)
    if indent is None:
        return lines, {}
    prefix = indent.group()
    removed = {number: len(prefix) for number, line in enumerate(lines) if line.startswith(prefix)}
    return [line[len(prefix) :] if number in removed else line for number, line in enumerate(lines)], removed


def _python_lines(lines: list[str]) -> list[str]:
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []
    cell_magic = _CELL_MAGIC.match(lines[0])
    if cell_magic is not None:
        if cell_magic.group("name") not in PYTHON_CELL_MAGICS:
            return []
        # IPython runs the body as a cell of its own, which may start with a cell magic in turn
        # (`%%capture` over `%%bash`)
        body = _python_lines(lines[1:])
        return ["", *body] if body else []
    if _is_automagic(lines):
        return [*lines[:-1], "pass"]
    result = []
    continued_magic = False
    for line, starts_statement in zip(lines, _statement_starts(lines)):
        if continued_magic:
            result.append("")  # the rest of a magic continued with a backslash
        elif starts_statement and (assignment := _MAGIC_ASSIGNMENT.match(line)):
            result.append(assignment.group("target") + "...")
        elif starts_statement and _MAGIC.match(line):
            result.append(line[: len(line) - len(line.lstrip(" \t"))] + "pass")  # same indentation
        else:
            result.append(line)
            continue
        continued_magic = line.endswith("\\")
    return result


def _is_automagic(lines: list[str]) -> bool:
    """Whether IPython runs the cell as a magic without `%`: it does so only for a cell of one
    line (after blank leading lines) that starts with a magic's name, and the line is taken as
    Python whenever it is Python (`pwd`, `time.sleep(1)`) or an assignment (`ls = ...`)."""
    if any(line.strip() for line in lines[:-1]):
        return False
    match = _AUTOMAGIC.fullmatch(lines[-1])
    if match is None or match.group("name") not in AUTOMAGICS or match.group("arguments").startswith(("=", ",")):
        return False
    return not _parses(lines[-1].strip())


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are still Python
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _statement_starts(lines: list[str]) -> list[bool]:
    """Whether each line begins a logical line: not inside brackets, a string, or after a
    backslash. A `%` or `!` elsewhere (`x = (a\\n % b)`) is Python and must stay."""
    starts = []
    depth = 0
    quote: str | None = None
    continued = False
    for line in lines:
        starts.append(depth == 0 and quote is None and not continued)
        if starts[-1] and _MAGIC.match(line):
            continued = line.endswith("\\")
            continue
        depth, quote = _scan(line, depth, quote)
        continued = line.endswith("\\") and (quote is None or len(quote) == 1)
        if quote is not None and len(quote) == 1 and not line.endswith("\\"):
            quote = None  # an unterminated one-line string: a syntax error the parser reports
    return starts


def _scan(line: str, depth: int, quote: str | None) -> tuple[int, str | None]:
    """Bracket depth and open string after ``line``, a small tokenizer for the two things
    that make the next line a continuation."""
    index = 0
    while index < len(line):
        char = line[index]
        if quote is not None:
            if char == "\\":
                index += 2
                continue
            if line.startswith(quote, index):
                index += len(quote)
                quote = None
                continue
            index += 1
            continue
        if char == "#":
            break
        if char in "'\"":
            quote = char * 3 if line.startswith(char * 3, index) else char
            index += len(quote)
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        index += 1
    return depth, quote
