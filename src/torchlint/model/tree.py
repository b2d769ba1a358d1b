"""The child nodes of a LibCST node that carry meaning, in source order, read from its fields.

LibCST's own `CSTNode.children` runs a visitor over the node and rebuilds it to find them, and
includes whitespace and punctuation; the model's walks read the fields directly instead.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import typing
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
# node type -> a function listing its child nodes, generated from its fields (see _extractor)
EXTRACTORS: dict[type, Callable[[cst.CSTNode], list[cst.CSTNode]]] = {}
# types of the values met in fields that may or may not hold a node (`Optional`, a `Union` with
# MaybeSentinel): node types, and the others (lists and tuples among them)
_NODE_TYPES: set[type] = set()
_OTHER_TYPES: set[type] = set()
# Node types met so far whose fields can hold no node (names, numbers, strings, operators): a
# walk over a whole tree skips asking for their children (a third of all nodes are names).
LEAVES: set[type] = set()


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The child nodes of ``node`` that carry meaning, in source order."""
    extract = EXTRACTORS.get(type(node))
    if extract is None:
        extract = _extractor(type(node), node)
    return extract(node)


def _extractor(kind: type, node: cst.CSTNode) -> Callable[[cst.CSTNode], list[cst.CSTNode]]:
    """A function for ``kind`` that reads its meaningful fields by name: a sequence field is
    extended, a field declared as one node type appended, any other tested. Generated, because
    the walk asks it of every node of every tree: a loop over the fields, testing each value,
    costs several times as much."""
    declared = {f.name: f.type for f in dataclasses.fields(node)}
    fields = _SOURCE_ORDER.get(kind) or tuple(
        name for name, annotation in declared.items()
        if name not in _LAYOUT and not name.startswith("whitespace") and annotation is not str
    )
    if not fields:
        LEAVES.add(kind)
    lines = ["def extract(node):", "    found = []"]
    for name in fields:
        annotation = declared[name]
        if typing.get_origin(annotation) is collections.abc.Sequence:
            lines.append(f"    found.extend(node.{name})")  # LibCST's sequence fields hold nodes only
        elif isinstance(annotation, type) and issubclass(annotation, cst.CSTNode):
            lines.append(f"    found.append(node.{name})")
        else:
            lines.append(f"    value = node.{name}")
            lines.append("    kind = type(value)")
            lines.append("    if kind in nodes or (kind not in others and _learn(value)):")
            lines.append("        found.append(value)")
            lines.append("    elif kind is list or kind is tuple:")  # `Union[Sequence[ImportAlias], ImportStar]`
            lines.append("        found.extend(value)")
    lines.append("    return found")
    namespace = {"nodes": _NODE_TYPES, "others": _OTHER_TYPES, "_learn": _learn}
    exec(compile("\n".join(lines), f"<children of {kind.__name__}>", "exec"), namespace)
    extract = EXTRACTORS[kind] = namespace["extract"]
    return extract


def _learn(value: object) -> bool:
    """Whether a field value of a type not met before is a node (and remember its type)."""
    # by the MRO: isinstance against LibCST's abstract base, failing for a type not met before,
    # walks every node class (about 10 ms, once per process)
    is_node = cst.CSTNode in type(value).__mro__
    (_NODE_TYPES if is_node else _OTHER_TYPES).add(type(value))
    return is_node


def ancestors_within(model, node: cst.CSTNode, container: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The ancestors of ``node`` below ``container``, innermost first."""
    for ancestor in model.ancestors(node):
        if ancestor is container:
            return
        yield ancestor
