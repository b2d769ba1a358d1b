"""Apply NodeFixes to a module: one transformer for all replacements, then the imports they need."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

import libcst as cst

from torchlint.model.names import ImportTable
from torchlint.registry import NodeFix

Replacement = cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel


class FixNotApplicable(Exception):
    """A fix names a node that is not in the module, or two fixes replace the same node."""


class _Replacer(cst.CSTTransformer):
    """Replaces each original node by its new node in one pass.

    ``descend`` prunes the walk to the subtrees that hold a target (untouched subtrees stay the
    same objects, which is what lets text.py re-render only what changed); without it the
    whole tree is walked.
    """

    def __init__(self, replacements: Mapping[cst.CSTNode, Replacement], descend: Callable[[cst.CSTNode], bool] | None):
        super().__init__()
        self.replacements = replacements
        self.descend = descend
        self.replaced: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        return self.descend is None or self.descend(node)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Replacement:
        new = self.replacements.get(original_node)
        if new is None:
            return updated_node
        self.replaced.add(id(original_node))
        if updated_node is not original_node:
            # A fix inside this node already ran: keep it where the new node embeds the original.
            new = _substitute(new, original_node, updated_node)
        return new

    # Attribute-level hooks are never used; skipping CSTTransformer's getattr lookups halves the cost.
    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


class _Substituter(cst.CSTTransformer):
    def __init__(self, old: cst.CSTNode, new: cst.CSTNode) -> None:
        super().__init__()
        self.old, self.new = old, new

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node is not self.old

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:
        return self.new if original_node is self.old else updated_node


def _substitute(replacement: Replacement, old: cst.CSTNode, new: cst.CSTNode) -> Replacement:
    if isinstance(replacement, cst.RemovalSentinel):
        return replacement
    if isinstance(replacement, cst.FlattenSentinel):
        return cst.FlattenSentinel([_substitute(node, old, new) for node in replacement.nodes])
    if replacement is old:
        return new
    return replacement.visit(_Substituter(old, new))


def merged_replacements(fixes: Iterable[NodeFix]) -> dict[cst.CSTNode, Replacement]:
    merged: dict[cst.CSTNode, Replacement] = {}
    for fix in fixes:
        for original, new in fix.replacements.items():
            if original in merged:
                raise FixNotApplicable("two fixes replace the same node")
            merged[original] = new
    return merged


def apply(
    module: cst.Module,
    fixes: Iterable[NodeFix],
    descend: Callable[[cst.CSTNode], bool] | None = None,
    within: Collection[int] | None = None,
) -> cst.Module:
    """The module with every fix applied. Raises FixNotApplicable or LibCST's errors when a fix
    does not fit the tree; callers drop such fixes.

    ``within`` (indices of top-level statements that hold every replaced node) and ``descend``
    (whether a subtree holds one) only make it faster: a file with hundreds of functions is not
    walked once per fix."""
    fixes = list(fixes)
    replacements = merged_replacements(fixes)
    replacer = _Replacer(replacements, descend)
    if within is None:
        updated = module.visit(replacer)
    else:
        body = list(module.body)
        for index in sorted(within, reverse=True):
            result = body[index].visit(replacer)
            if isinstance(result, cst.FlattenSentinel):
                body[index : index + 1] = result.nodes
            elif isinstance(result, cst.RemovalSentinel):
                del body[index]
            else:
                body[index] = result
        updated = module.with_changes(body=body)
    if len(replacer.replaced) != len(replacements):
        raise FixNotApplicable("a fix replaces a node that is not in this file")
    if not isinstance(updated, cst.Module):  # pragma: no cover - a Module is never removed
        raise FixNotApplicable("a fix removed the whole module")
    imports = [statement for fix in fixes for statement in fix.imports]
    return add_imports(updated, imports) if imports else updated


def add_imports(module: cst.Module, statements: Iterable[str]) -> cst.Module:
    """Add each import statement unless the module already binds the same names to the same
    things at its top level. New imports go after the leading docstring, `__future__` imports
    and import block, so the file's header comments and docstring stay first."""
    existing = ImportTable()
    for statement in module.body:
        for small in _imports_of(statement):
            existing.add(small)
    body = list(module.body)
    position = _import_position(body)
    for text in dict.fromkeys(statements):
        node = cst.parse_statement(text.strip() + "\n")
        wanted = ImportTable()
        for small in _imports_of(node):
            wanted.add(small)
        if not wanted.bindings:
            raise FixNotApplicable(f"not an import statement: {text!r}")
        if all(existing.bindings.get(name) == target for name, target in wanted.bindings.items()):
            continue
        body.insert(position, node)
        position += 1
        for small in _imports_of(node):
            existing.add(small)
    return module.with_changes(body=body)


def _imports_of(statement: cst.CSTNode) -> list[cst.Import | cst.ImportFrom]:
    if not isinstance(statement, cst.SimpleStatementLine):
        return []
    return [small for small in statement.body if isinstance(small, (cst.Import, cst.ImportFrom))]


def _import_position(body: list[cst.BaseStatement]) -> int:
    position = 0
    if body and _is_docstring(body[0]):
        position = 1
    while position < len(body) and _is_import_line(body[position]):
        position += 1
    return position


def _is_import_line(statement: cst.BaseStatement) -> bool:
    imports = _imports_of(statement)
    return bool(imports) and len(imports) == len(statement.body)


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
