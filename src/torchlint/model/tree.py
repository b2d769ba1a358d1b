"""The child nodes of a LibCST node that carry meaning, in source order, read from its fields.

LibCST's own `CSTNode.children` runs a visitor over the node and rebuilds it to find them, and
includes whitespace and punctuation; the model's walks read the fields directly instead.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterator

import libcst as cst

# Fields whose order in the node class differs from the order in the source.
_SOURCE_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
}
# Fields that hold layout only: whitespace, brackets, commas, comments.
_LAYOUT = frozenset(
    {"lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma", "dot", "semicolon", "colon", "equal",
     "leading_lines", "lines_after_decorators", "header", "footer", "trailing_whitespace", "newline",
     "asynchronous", "relative", "at", "star_tok", "indent", "default_newline", "default_indent"}
)
# node type -> a function returning the values of its meaningful fields, as a tuple
_GETTERS: dict[type, Callable[[cst.CSTNode], tuple]] = {}
_NODE_TYPES: dict[type, bool] = {list: False, tuple: False}
# Node types met so far whose fields can hold no node (names, numbers, strings, operators): a
# walk over a whole tree skips asking for their children (a third of all nodes are names).
LEAVES: set[type] = set()


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes of ``node`` that carry meaning, in source order."""
    getter = _GETTERS.get(type(node))
    if getter is None:
        getter = _getter(type(node), node)
    found: list[cst.CSTNode] = []
    node_types = _NODE_TYPES
    for value in getter(node):
        kind = type(value)
        if kind is list or kind is tuple:
            found.extend(value)  # LibCST's sequence fields hold nodes only
            continue
        is_node = node_types.get(kind)
        if is_node is None:
            is_node = node_types[kind] = issubclass(kind, cst.CSTNode)
        if is_node:
            found.append(value)
    return found


def _getter(kind: type, node: cst.CSTNode) -> Callable[[cst.CSTNode], tuple]:
    fields = _SOURCE_ORDER.get(kind) or tuple(
        f.name
        for f in dataclasses.fields(node)
        if f.name not in _LAYOUT and not f.name.startswith("whitespace") and f.type is not str
    )
    if not fields:
        getter = _no_fields
        LEAVES.add(kind)
    elif len(fields) == 1:
        single = operator.attrgetter(fields[0])
        getter = lambda node: (single(node),)  # noqa: E731 - attrgetter of one name returns no tuple
    else:
        getter = operator.attrgetter(*fields)
    _GETTERS[kind] = getter
    return getter


def _no_fields(node: cst.CSTNode) -> tuple:
    return ()


def ancestors_within(model, node: cst.CSTNode, container: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The ancestors of ``node`` below ``container``, innermost first."""
    for ancestor in model.ancestors(node):
        if ancestor is container:
            return
        yield ancestor
