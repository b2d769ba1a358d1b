"""A module's outline, from CPython's parser (a sixth of a LibCST parse): the functions, classes
and imports at its top level, all that resolving a name through the module needs. Only a module
whose function facts are asked for, and that can have any, is parsed with LibCST."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchlint.model.names import ImportSpec
from torchlint.project.summary import ClassSummary, ModuleSummary


def outline(text: str, path: str, digest: str) -> ModuleSummary | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    classes: dict[str, ClassSummary] = {}
    imported: dict[str, list[ImportSpec]] = {}
    kinds: dict[str, set[str]] = {}  # name -> how the top level binds it
    aliases: dict[str, list[str]] = {}  # `Old = New`: name -> the names it is set to
    bindings_of_all: list[ast.stmt] = []
    stars: list[ImportSpec] = []
    for statement in _top_level(tree.body):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kinds.setdefault(statement.name, set()).add("function")
        elif isinstance(statement, ast.ClassDef):
            kinds.setdefault(statement.name, set()).add("class")
            classes[statement.name] = _class(statement)
        elif isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
            stars.append(ImportSpec(statement.module or "", statement.level))
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for local, spec in _specs(statement):
                kinds.setdefault(local, set()).add("import")
                imported.setdefault(local, []).append(spec)
        elif (alias := _alias(statement)) is not None:
            kinds.setdefault(alias[0], set()).add("alias")
            aliases.setdefault(alias[0], []).append(alias[1])
        else:
            for name in _bound_names(statement):
                kinds.setdefault(name, set()).add("other")
                if name == "__all__":
                    bindings_of_all.append(statement)
    # a name bound in two ways (a def and an assignment, an import and a def) may hold either:
    # it resolves to nothing
    only = {name: how.pop() if len(how) == 1 else "other" for name, how in kinds.items()}
    for name, targets in aliases.items():
        if len(targets) > 1:  # set twice: either value
            only[name] = "other"
    return ModuleSummary(
        path,
        digest,
        frozenset(name for name, how in only.items() if how == "function"),
        {name: klass for name, klass in classes.items() if only[name] == "class"},
        {name: tuple(specs) for name, specs in imported.items() if only[name] == "import"},
        frozenset(name for name, how in only.items() if how == "other"),
        tuple(stars),
        "sys.path" in text,
        {name: targets[0] for name, targets in aliases.items() if only[name] == "alias"},
        _exports(bindings_of_all),
    )


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, through `if`/`try` blocks (`if TYPE_CHECKING:`, optional imports)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _top_level(statement.body)
            yield from _top_level(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, *(handler.body for handler in statement.handlers), statement.orelse):
                yield from _top_level(block)
        else:
            yield statement


def _specs(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, ImportSpec]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname is not None:
                yield alias.asname, ImportSpec(alias.name)
            else:
                head = alias.name.split(".", 1)[0]
                yield head, ImportSpec(head)
        return
    for alias in node.names:
        yield alias.asname or alias.name, ImportSpec(node.module or "", node.level, alias.name)


def _alias(statement: ast.stmt) -> tuple[str, str] | None:
    """`Old = New` at the top level (a name kept for compatibility): the two names."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and isinstance(statement.value, ast.Name)
    ):
        return statement.targets[0].id, statement.value.id
    return None


def _exports(bindings: list[ast.stmt]) -> frozenset[str] | None:
    """The names `__all__` lists, when one assignment sets it to a literal list or tuple of
    strings (what a star import of the module binds)."""
    if len(bindings) != 1:
        return None
    [statement] = bindings
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)):
        return None
    value = statement.value
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    names = [item.value for item in value.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return frozenset(names) if len(names) == len(value.elts) else None


def _bound_names(statement: ast.stmt) -> Iterator[str]:
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id


def _class(classdef: ast.ClassDef) -> ClassSummary:
    methods = {s.name: s for s in classdef.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    init = methods.get("__init__")
    stored: list[tuple[str, str]] = []
    if init is not None:
        params = {a.arg for a in (*init.args.posonlyargs, *init.args.args[1:], *init.args.kwonlyargs)}
        for node in _own_statements(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                        stored.append((node.value.id, f"self.{target.attr}"))
    bases = tuple(name for name in map(_dotted, classdef.bases) if name)
    return ClassSummary(classdef.name, frozenset(methods), tuple(stored), bases)


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``function``'s body in source order, not those of functions or classes nested
    in it."""
    pending: list[ast.AST] = list(reversed(function.body))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(reversed(list(ast.iter_child_nodes(node))))


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
