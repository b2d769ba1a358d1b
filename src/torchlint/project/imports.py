"""Import resolution: which file of the project a module name or a relative import names.

A module is a file (`engine.py`, `pkg/__init__.py`) or, for a namespace package (a folder without
`__init__.py`), the folder. Names of the standard library and of the libraries torchlint knows
(torch, torchvision, transformers...) never resolve into the project, even when a folder of the
same name exists: their meaning comes from the knowledge, and a checkout of torch itself must not
turn `torch.optim.Adam` into unknown project code. Anything else that no search root holds stays
unresolved, which the analysis treats as unknown code.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from torchlint.model.names import ImportSpec, import_specs
from torchlint.project import layout


def module_file(folder: Path, parts: list[str]) -> Path | None:
    """The module ``parts`` under ``folder``: `a/b.py`, `a/b/__init__.py`, or the namespace
    folder `a/b`; None when it is not there."""
    base = folder.joinpath(*parts)
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        if os.path.isfile(candidate):
            return candidate
    return base if parts and os.path.isdir(base) else None


@functools.cache
def _never_project() -> frozenset[str]:
    from torchlint import prefilter

    return frozenset(sys.stdlib_module_names) | frozenset(prefilter.knowledge_roots())


class Resolver:
    """Resolves the imports of one file (``path``), looking absolute ones up in ``roots``."""

    def __init__(self, path: Path, roots: tuple[Path, ...]) -> None:
        self.path = path
        self.roots = roots

    def module(self, name: str, level: int = 0) -> Path | None:
        """The file (or namespace folder) of module ``name`` imported with ``level`` leading dots."""
        parts = [part for part in name.split(".") if part]
        if level:
            package = self.path.parent
            for _ in range(level - 1):
                package = package.parent
            if parts:
                return module_file(package, parts)
            return package / "__init__.py" if layout.is_package(package) else package
        if not parts or parts[0] in _never_project():
            return None
        namespace = None
        for root in self.roots:
            top = module_file(root, parts[:1])
            if top is None:
                continue
            if top.is_dir():  # a namespace package: a regular one further down wins
                namespace = namespace or module_file(root, parts)
                continue
            return module_file(root, parts)
        return namespace

    def submodule(self, package: Path, name: str) -> Path | None:
        """Module ``name`` inside the package whose file (or namespace folder) is ``package``."""
        folder = package if package.is_dir() else package.parent
        if not package.is_dir() and package.name != "__init__.py":
            return None  # a plain module has no submodules
        return module_file(folder, [name])


def spec_of(binding) -> ImportSpec | None:
    """What an import binding (`how == "import"`) binds its name to."""
    for local, spec in import_specs(binding.statement):
        if local == binding.name:
            return spec
    return None


