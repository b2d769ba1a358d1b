"""Qualified names: what a name or attribute chain refers to, through every import form.

`import torch as T; T.optim.Adam`, `from torch import nn, optim`, `import torch.nn as nn` and
`from torch.utils.data.distributed import DistributedSampler as DS` all resolve to the dotted
path of the thing imported. Scripts rarely rebind an imported name, so imports anywhere in the
file (module level, inside functions, under `try`) count for the whole file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as written, or None when the expression is not a plain attribute chain."""
    parts: list[str] = []
    while type(node) is cst.Attribute:  # not isinstance: a failing check on an ABC costs a Python call
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


@dataclass(frozen=True)
class ImportSpec:
    """What one imported local name stands for, as written: `from ..data import build as b` is
    ImportSpec("data", 2, "build"); `import a.b` (binding `a`) is ImportSpec("a", 0, None)."""

    module: str
    level: int = 0
    name: str | None = None


def target_names(target: cst.CSTNode) -> list[cst.Name]:
    """The names an assignment or loop target binds: `x`, `(k, v)`, `[a, (b, c)]`."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    return []


def import_specs(node: cst.Import | cst.ImportFrom) -> Iterator[tuple[str, ImportSpec]]:
    """(local name, what it stands for) for each name an import statement binds."""
    # exact types: a failing isinstance against a LibCST class (an ABC) costs a Python call
    if type(node) is cst.Import:
        for alias in node.names:
            full = dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias.asname.name.value, ImportSpec(full)
            else:
                head = full.split(".", 1)[0]
                yield head, ImportSpec(head)
        return
    if type(node.names) is cst.ImportStar:
        return
    module = dotted(node.module) if node.module is not None else ""
    if module is None:
        return
    level = len(node.relative)
    for alias in node.names:
        if type(alias.name) is not cst.Name:
            continue
        local = alias.asname.name if alias.asname is not None else alias.name
        if type(local) is cst.Name:
            yield local.value, ImportSpec(module, level, alias.name.value)


class ImportTable:
    def __init__(self) -> None:
        # local name -> dotted path it stands for
        self.bindings: dict[str, str] = {}
        # local name -> its path as a relative import writes it (`.star.STAR`): the project's own
        # code, which no knowledge names
        self.relative: dict[str, str] = {}
        # the modules the file imports every public name of (`from models import *`): what those
        # names are only the project's view of those modules can say (FileView.star_imported)
        self.stars: list[ImportSpec] = []

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if type(node) is cst.ImportFrom and type(node.names) is cst.ImportStar:
            module = dotted(node.module) if node.module is not None else ""
            if module is not None:
                self.stars.append(ImportSpec(module, len(node.relative)))
            return
        for local, spec in import_specs(node):
            path = f"{spec.module}.{spec.name}" if spec.name else spec.module
            if spec.level == 0:
                self.bindings[local] = path
            else:
                self.relative[local] = "." * spec.level + path.lstrip(".")

    def resolve(self, node: cst.BaseExpression, table: dict[str, str] | None = None) -> str | None:
        """The qualified name of an expression built from imported names, else None; with
        ``table`` = `relative`, its relative path instead."""
        head = node
        while type(head) is cst.Attribute:
            head = head.value
        if type(head) is not cst.Name:
            return None
        # most chains start with no imported name: no text is built for them
        target = (self.bindings if table is None else table).get(head.value)
        if target is None:
            return None
        rest = dotted(node).partition(".")[2]
        return f"{target}.{rest}" if rest else target
