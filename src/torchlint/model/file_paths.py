"""Which file a path expression names, as a shape: the text of the path with its computed parts
blanked out (`{}`), so that paths built from one template name the same file
(`"{}.pkl".format(epoch)` and `"{}.pkl".format(best_epoch)`).

A name is read through the one assignment that reaches it, `os.path.join(a, b)` and `a + b` join
the shapes of their parts, a path picked from a folder listing (`glob.glob(pattern)[0]`,
`sorted(glob.glob(pattern))[-1]`) is the pattern, which names every file it matches, and a call of
a function of the file that returns one path expression (`ckpt = lambda epoch: f"ck_{epoch}.pt"`)
is that expression with the strings the call passes in place of its parameters, and the rest
blanked: `ckpt(epoch)` and `ckpt(best)` name files of one template, `ckpt("last")` another.
A value turned into text (`"model_" + str(epoch) + ".pt"`) is a computed part like a format field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import checkpoints
from torchlint.model.tree import children
from torchlint.model.values.calling import builtin_or_qualified

if TYPE_CHECKING:
    from torchlint.model import Model

_JOINS = frozenset({"os.path.join", "posixpath.join"})
_LISTINGS = frozenset({"glob.glob", "glob.iglob"})
_ORDERINGS = frozenset({"sorted", "list"})
_TO_TEXT = frozenset({"str", "repr"})  # a value turned into text is a computed part of the path
_BLANKS = re.compile(r"\{\}|\*|\?")
_NOTHING: Mapping[str, str] = {}
_DEPTH = 3  # names followed back: `path = os.path.join(folder, name)`, `folder = root`, ...


class PathShape:
    """A path's shape, and whether it is a glob pattern (`*` and `?` match any text)."""

    def __init__(self, text: str, pattern: bool = False) -> None:
        self.text = text
        self.pattern = pattern

    def names_same_file(self, other: PathShape) -> bool:
        """Equal shapes; or one is a pattern that the other's shape fits (a blanked part of it
        may be any text). A shape with no text of its own (`{}`: a parameter passed through)
        names no file in particular."""
        if not _BLANKS.sub("", self.text).strip("/") or not _BLANKS.sub("", other.text).strip("/"):
            return False
        if self.text == other.text:
            return True
        glob, path = (self, other) if self.pattern else (other, self)
        return glob.pattern and not path.pattern and _as_regex(glob.text).fullmatch(path.text) is not None


def path_shape(model: Model, path: cst.BaseExpression, depth: int = _DEPTH, given: Mapping[str, str] = _NOTHING) -> PathShape:
    """The shape of ``path``, where a name in ``given`` (a parameter of a function whose returned
    path is read) stands for the text given."""
    if isinstance(path, cst.Call):
        name = model.call_name(path)
        if name in _JOINS and path.args and not any(arg.star for arg in path.args):
            parts = [path_shape(model, arg.value, depth, given) for arg in path.args]
            return PathShape("/".join(part.text for part in parts), any(part.pattern for part in parts))
        if name in _LISTINGS and path.args:
            return PathShape(path_shape(model, path.args[0].value, depth, given).text, pattern=True)
        if builtin_or_qualified(model, path) in _TO_TEXT:
            return PathShape("{}")
        func = path.func
        if isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(func.value, cst.SimpleString):
            return PathShape(str(func.value.evaluated_value))
        template = _returned_path(model, path) if depth > 0 else None
        if template is not None:
            return path_shape(model, template[0], depth - 1, template[1])
    if isinstance(path, cst.BinaryOperation) and isinstance(path.operator, cst.Add):
        left, right = path_shape(model, path.left, depth, given), path_shape(model, path.right, depth, given)
        return PathShape(left.text + right.text, left.pattern or right.pattern)
    listing = _listing(model, path.value) if isinstance(path, cst.Subscript) else None
    if listing is not None:
        return path_shape(model, listing, depth, given)
    if isinstance(path, cst.FormattedString):
        return PathShape("".join(part.value if isinstance(part, cst.FormattedStringText) else "{}" for part in path.parts))
    if isinstance(path, cst.SimpleString):
        return PathShape(str(path.evaluated_value))
    if isinstance(path, cst.Name) and path.value in given:
        return PathShape(given[path.value])
    if isinstance(path, cst.Name) and depth > 0:
        source = _single_source(model, path)
        if source is not None:
            return path_shape(model, source, depth - 1, given)
    return PathShape(" ".join(model.module.code_for_node(path).split()))


def fresh_per_run(model: Model, path: cst.BaseExpression, depth: int = _DEPTH) -> bool:
    """Whether ``path`` is built from a name drawn fresh for each run (`"ck/" + uuid.uuid4().hex
    + ".pt"`, a temporary folder), read through the one assignment that reaches each name."""
    pending = [(path, depth)]
    while pending:
        node, left = pending.pop()
        if isinstance(node, cst.Call) and model.call_name(node) in checkpoints.FRESH_NAMES:
            return True
        if isinstance(node, cst.Name) and left > 0:
            source = _single_source(model, node)
            if source is not None:
                pending.append((source, left - 1))
        pending.extend((child, left) for child in children(node))
    return False


def _returned_path(model: Model, call: cst.Call) -> tuple[cst.BaseExpression, dict[str, str]] | None:
    """The one expression a function of the file returns, for a call of it by name (a lambda
    assigned to the name, or a `def` with a single `return`), and what stands for each of its
    parameters: the string the call passes, else a blank."""
    if not isinstance(call.func, cst.Name) or any(arg.star for arg in call.args):
        return None
    function = model.function(call.func.value)
    if function is not None:
        returned = model.summaries.returns(function)
        if returned is None or len(returned) != 1:
            return None
        body, params = returned[0], function.params
    else:
        source = _single_source(model, call.func)
        if not isinstance(source, cst.Lambda):
            return None
        body, params = source.body, source.params
    names = [p.name.value for p in (*params.posonly_params, *params.params)]
    given = dict.fromkeys([*names, *(p.name.value for p in params.kwonly_params)], "{}")
    for position, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword is not None else names[position] if position < len(names) else None
        if name in given and isinstance(arg.value, cst.SimpleString):
            given[name] = str(arg.value.evaluated_value)
    return body, given


def _single_source(model: Model, name: cst.Name) -> cst.BaseExpression | None:
    binding = model.sole_binding(name)
    if binding is None or binding.how not in ("assign", "annassign") or binding.path:
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


def saving_parameters(model: Model, fn: cst.FunctionDef) -> frozenset[str]:
    """The parameters of ``fn`` that it hands, as they came, to `torch.save` as the file to write:
    a training helper given where to keep the best model (`best_model_save_path=`)."""
    found = set()
    for call in model.summaries.calls_within(fn):
        if model.call_name(call) not in checkpoints.SAVES or len(call.args) < 2 or call.args[1].star:
            continue
        path = call.args[1].value
        bindings = model.reaching(path) if isinstance(path, cst.Name) else []
        if bindings and all(b.how == "param" and b.scope is fn for b in bindings):
            found.add(path.value)
    return frozenset(found)
