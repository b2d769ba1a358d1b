"""`# noqa: CODE` comments seen as text to edit: adding a code, and finding the code under the cursor.

(Whether a comment suppresses a finding is decided by torchlint.noqa, inside the engine.)
"""

from __future__ import annotations

import io
import re
import tokenize

from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position

# The codes of a line's `# noqa: A1, B2` or a file's `# torchlint: noqa: A1`.
_DIRECTIVE = re.compile(r"#[^\r\n#]*?\bnoqa[ \t]*:[ \t]*(?P<codes>[A-Z]+[0-9]+(?:[, \t]+[A-Z]+[0-9]+)*)", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


def code_at(line: str, column: int) -> str | None:
    """The code of a noqa directive that the 0-based code-point ``column`` of ``line`` touches."""
    for directive in _DIRECTIVE.finditer(line):
        offset = directive.start("codes")
        for code in _CODE.finditer(directive.group("codes")):
            if offset + code.start() <= column <= offset + code.end():
                return code.group().upper()
    return None


def _line_ends(text: str) -> tuple[set[int], dict[int, tokenize.TokenInfo]]:
    """The lines that end outside a string, and the comments by line."""
    ends: set[int] = set()
    comments: dict[int, tokenize.TokenInfo] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL):
                ends.add(token.start[0])
            elif token.type == tokenize.COMMENT:
                comments[token.start[0]] = token
    except (tokenize.TokenError, SyntaxError):
        pass  # half-typed code: the lines seen so far still serve
    return ends, comments


def suppress_fix(text: str, lines: list[str], diagnostic: Diagnostic) -> Fix:
    """The edit that adds ``diagnostic.code`` to a noqa comment the engine honours for it.

    That is the comment of the finding's first line, or, when that line ends inside a string, of
    the first line after the finding's last line that ends outside one (the statement's end).
    """
    ends, comments = _line_ends(text)
    candidates = [diagnostic.start.line, *range(diagnostic.end.line, len(lines) + 1)]
    line = next((n for n in candidates if n in ends), diagnostic.start.line)
    content = lines[line - 1] if line <= len(lines) else ""
    code = diagnostic.code
    comment = comments.get(line)
    directive = _DIRECTIVE.search(comment.string) if comment else None
    if comment and directive:
        column = comment.start[1] + directive.end("codes")
        edit = Edit(Position(line, column + 1), Position(line, column + 1), f", {code}")
    elif comment:
        column = comment.end[1]
        edit = Edit(Position(line, column + 1), Position(line, column + 1), f"  # noqa: {code}")
    else:
        code_end = len(content.rstrip())
        edit = Edit(Position(line, code_end + 1), Position(line, len(content) + 1), f"  # noqa: {code}")
    return Fix(f"Suppress {code} on this line with # noqa: {code}", Applicability.SAFE, (edit,))
