"""Folders a file puts on `sys.path` itself, when the path is spelt out literally:

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    sys.path.append(str(Path(__file__).resolve().parent.parent))
    sys.path.append("../common")

through names assigned once (`lib = osp.join(this_dir, "..", "lib")`) and same-file helpers
(`def add_path(p): sys.path.insert(0, p)`). A path built from anything else (an environment
variable, a command-line argument) adds nothing.
A relative string is relative to the working directory, which the file does not show: it is
taken relative to the file's folder and to the project root, the two places scripts are run from.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import libcst as cst

from torchlint.model.values import calling
from torchlint.project import layout

_ADDERS = frozenset({"sys.path.insert", "sys.path.append"})
_PATH_OF_FILE = frozenset({"os.path.abspath", "os.path.realpath", "os.path.normpath", "os.fspath", "str"})
_PATH_TYPES = frozenset({"pathlib.Path", "pathlib.PurePath"})
_SAME_PATH_METHODS = frozenset({"resolve", "absolute"})


def added_folders(model, path: Path) -> tuple[Path, ...]:
    found: list[Path] = []
    for call in model.calls_named(_ADDERS):
        if not call.args:
            continue
        for value in _passed(model, call.args[-1].value, path):
            found.extend(_folders(value, path))
    return tuple(found)


def _passed(model, expr: cst.BaseExpression, path: Path) -> Iterator[str]:
    """The paths ``expr`` evaluates to: one, or for a parameter of a same-file helper
    (`def add_path(p): sys.path.insert(0, p)`), each path a call of the helper passes."""
    parameter = _parameter(model, expr)
    if parameter is None:
        value = _evaluate(model, expr, path)
        if value is not None:
            yield value
        return
    function, position, name = parameter
    for call in model.calls:
        if isinstance(call.func, cst.Name) and model.function(call.func.value) is function:
            argument = calling.argument(call, name, position)
            value = _evaluate(model, argument, path) if argument is not None else None
            if value is not None:
                yield value


def _parameter(model, expr: cst.BaseExpression) -> tuple[cst.FunctionDef, int, str] | None:
    """(function, position, name) when ``expr`` reads a plain parameter of the function it is in."""
    bindings = model.bindings_of(expr) if isinstance(expr, cst.Name) else []
    if len(bindings) != 1 or bindings[0].how != "param" or not isinstance(bindings[0].scope, cst.FunctionDef):
        return None
    function = bindings[0].scope
    names = [param.name.value for param in function.params.params]
    return (function, names.index(expr.value), expr.value) if expr.value in names else None


def _folders(value: str, path: Path) -> Iterator[Path]:
    """The folders a path put on sys.path names: a relative one from the file's folder and from
    the project root."""
    if os.path.isabs(value):
        yield Path(os.path.normpath(value))
        return
    bases = [path.parent]
    root = layout.project_root(path.parent)
    if root is not None:
        bases.append(root)
    yield from (Path(os.path.normpath(base / value)) for base in bases)


def _evaluate(model, expr: cst.BaseExpression, path: Path) -> str | None:
    """The path ``expr`` evaluates to, or None when it is not spelt out."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.Name) and expr.value == "__file__":
        return os.fspath(path)
    if isinstance(expr, cst.Name):
        # a name assigned once, before it is read (`this_dir = osp.dirname(__file__)`), holds
        # that path
        bindings = model.bindings_of(expr)
        if len(bindings) != 1 or bindings[0].how != "assign" or model.order(bindings[0].statement) > model.order(expr):
            return None
        value = bindings[0].value
        return _evaluate(model, value, path) if value is not None else None
    if isinstance(expr, cst.BinaryOperation):
        left, right = _evaluate(model, expr.left, path), _evaluate(model, expr.right, path)
        if left is None or right is None:
            return None
        if isinstance(expr.operator, cst.Divide):
            return os.path.join(left, right)
        return left + right if isinstance(expr.operator, cst.Add) else None
    if isinstance(expr, cst.Attribute) and expr.attr.value == "parent":
        inner = _evaluate(model, expr.value, path)
        return os.path.dirname(inner) if inner is not None else None
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "parents":
        return _parents(model, expr, path)
    if isinstance(expr, cst.Call):
        return _call(model, expr, path)
    return None


def _parents(model, expr: cst.Subscript, path: Path) -> str | None:
    inner = _evaluate(model, expr.value.value, path)
    index = expr.slice[0].slice if len(expr.slice) == 1 else None
    if inner is None or not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)):
        return None
    for _ in range(int(index.value.value) + 1):
        inner = os.path.dirname(inner)
    return inner


def _call(model, call: cst.Call, path: Path) -> str | None:
    args = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    name = model.qualified_name(call.func) or (call.func.value if isinstance(call.func, cst.Name) else None)
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _SAME_PATH_METHODS and not args:
        return _evaluate(model, call.func.value, path)
    if len(args) != len(call.args):
        return None
    values = [_evaluate(model, arg, path) for arg in args]
    if any(value is None for value in values):
        return None
    if name == "os.path.dirname" and len(values) == 1:
        return os.path.dirname(values[0])
    if name == "os.path.join" and values:
        return os.path.join(*values)
    if (name in _PATH_OF_FILE or name in _PATH_TYPES) and len(values) == 1:
        return values[0]
    return None
