"""The semantic model of one training script: built once per file, queried by every rule."""

from __future__ import annotations

import libcst as cst

from torchlint.model.names import ImportTable


class Model:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.imports = ImportTable()
        module.visit(_Collector(self))

    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        return self.imports.resolve(node)


class _Collector(cst.CSTVisitor):
    def __init__(self, model: Model) -> None:
        self.model = model

    def visit_Import(self, node: cst.Import) -> bool:
        self.model.imports.add(node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.model.imports.add(node)
        return False
