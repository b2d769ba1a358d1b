"""Qualified names: what a name or attribute chain refers to, through every import form.

`import torch as T; T.optim.Adam`, `from torch import nn, optim`, `import torch.nn as nn` and
`from torch.utils.data.distributed import DistributedSampler as DS` all resolve to the dotted
path of the thing imported. Scripts rarely rebind an imported name, so imports anywhere in the
file (module level, inside functions, under `try`) count for the whole file.
"""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as written, or None when the expression is not a plain attribute chain."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


class ImportTable:
    def __init__(self) -> None:
        # local name -> dotted path it stands for
        self.bindings: dict[str, str] = {}

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.bindings[alias.asname.name.value] = full
                else:
                    head = full.split(".", 1)[0]
                    self.bindings[head] = head
            return
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = dotted(node.module)
        if base is None:
            return
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else alias.name.value
            self.bindings[local] = f"{base}.{alias.name.value}"

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """The qualified name of an expression built from imported names, else None."""
        written = dotted(node)
        if written is None:
            return None
        head, _, rest = written.partition(".")
        target = self.bindings.get(head)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target
