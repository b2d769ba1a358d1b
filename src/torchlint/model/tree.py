"""The child nodes of a LibCST node that carry meaning, in source order, read from its fields.

LibCST's own `CSTNode.children` runs a visitor over the node and rebuilds it to find them, and
includes whitespace and punctuation; the model's walks read the fields directly instead.
"""

from __future__ import annotations

import dataclasses

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
_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes of ``node`` that carry meaning, in source order."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _SOURCE_ORDER.get(kind) or tuple(
            f.name for f in dataclasses.fields(node) if f.name not in _LAYOUT and not f.name.startswith("whitespace")
        )
        _FIELDS[kind] = fields
    found: list[cst.CSTNode] = []
    for name in fields:
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            found.extend(item for item in value if _is_node(type(item)))
        elif _is_node(kind):
            found.append(value)
    return found


_NODE_TYPES: dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    found = _NODE_TYPES.get(kind)
    if found is None:
        found = _NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return found
