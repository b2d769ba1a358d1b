"""Which file a path expression names, as a shape: the text of the path with its computed parts
blanked out (`{}`), so that paths built from one template name the same file
(`"{}.pkl".format(epoch)` and `"{}.pkl".format(best_epoch)`).

A name is read through the one assignment that reaches it, `os.path.join(a, b)` joins the shapes
of its parts, and a path picked from a folder listing (`glob.glob(pattern)[0]`,
`sorted(glob.glob(pattern))[-1]`) is the pattern, which names every file it matches.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from torchlint.model import Model

_JOINS = frozenset({"os.path.join", "posixpath.join"})
_LISTINGS = frozenset({"glob.glob", "glob.iglob"})
_ORDERINGS = frozenset({"sorted", "list"})
_DEPTH = 3  # names followed back: `path = os.path.join(folder, name)`, `folder = root`, ...


class PathShape:
    """A path's shape, and whether it is a glob pattern (`*` and `?` match any text)."""

    def __init__(self, text: str, pattern: bool = False) -> None:
        self.text = text
        self.pattern = pattern

    def names_same_file(self, other: PathShape) -> bool:
        """Equal shapes; or one is a pattern that the other's shape fits (a blanked part of it
        may be any text)."""
        if self.text == other.text:
            return True
        glob, path = (self, other) if self.pattern else (other, self)
        return glob.pattern and not path.pattern and _as_regex(glob.text).fullmatch(path.text) is not None


def path_shape(model: Model, path: cst.BaseExpression, depth: int = _DEPTH) -> PathShape:
    if isinstance(path, cst.Call):
        name = model.call_name(path)
        if name in _JOINS and path.args and not any(arg.star for arg in path.args):
            parts = [path_shape(model, arg.value, depth) for arg in path.args]
            return PathShape("/".join(part.text for part in parts), any(part.pattern for part in parts))
        if name in _LISTINGS and path.args:
            return PathShape(path_shape(model, path.args[0].value, depth).text, pattern=True)
        func = path.func
        if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(func.value, cst.SimpleString):
            return PathShape(str(func.value.evaluated_value))
    listing = _listing(model, path.value) if isinstance(path, cst.Subscript) else None
    if listing is not None:
        return path_shape(model, listing, depth)
    if isinstance(path, cst.FormattedString):
        return PathShape("".join(part.value if isinstance(part, cst.FormattedStringText) else "{}" for part in path.parts))
    if isinstance(path, cst.SimpleString):
        return PathShape(str(path.evaluated_value))
    if isinstance(path, cst.Name) and depth > 0:
        source = _single_source(model, path)
        if source is not None:
            return path_shape(model, source, depth - 1)
    return PathShape(" ".join(model.module.code_for_node(path).split()))


def _single_source(model: Model, name: cst.Name) -> cst.BaseExpression | None:
    reaching = model.reaching(name)
    if len(reaching) != 1:
        return None
    binding = reaching[0]
    if binding.how not in ("assign", "annassign") or binding.path or binding.source is None:
        return None
    return binding.source


def _listing(model: Model, expr: cst.BaseExpression) -> cst.Call | None:
    """The `glob.glob(...)` call ``expr`` is, or that `sorted(...)` orders."""
    if not isinstance(expr, cst.Call) or not expr.args:
        return None
    name = model.call_name(expr) or (expr.func.value if isinstance(expr.func, cst.Name) else None)
    if name in _LISTINGS:
        return expr
    if name in _ORDERINGS:
        return _listing(model, expr.args[0].value)
    return None


def _as_regex(pattern: str) -> re.Pattern[str]:
    """A glob pattern whose `*`, `?` and blanked parts (`{}`) match any text."""
    pieces = re.split(r"(\{\}|\*|\?)", pattern)
    return re.compile("".join(".*" if piece in ("{}", "*") else "." if piece == "?" else re.escape(piece) for piece in pieces))
