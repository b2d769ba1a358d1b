"""Where a file's own project is, and the folders an absolute import of it is looked up in.

Python looks an absolute import up along `sys.path`. For a checked file that is, in order:
- the file's own folder (`python train.py` puts it first);
- folders the file adds itself with a literal `sys.path.insert(...)` / `sys.path.append(...)`
  (`os.path.dirname(__file__)`, `Path(__file__).resolve().parent.parent`, `".."`...);
- the folder above the file's package (a folder holding `__init__.py` is a package: the code runs
  as `python -m pkg.train` from above it);
- the project root, the nearest folder up holding `pyproject.toml`, `setup.py`, `setup.cfg` or
  `.git`, and its `src/` folder (an installed `src/` layout).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@functools.lru_cache(maxsize=1024)
def project_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` that marks a project root, or None."""
    for candidate in (folder, *folder.parents):
        if any(os.path.exists(candidate / marker) for marker in ROOT_MARKERS):
            return candidate
    return None


@functools.lru_cache(maxsize=1024)
def package_base(folder: Path) -> Path:
    """The folder above the outermost package holding ``folder`` (``folder`` itself when it is no
    package): where `python -m` must run for the package to import."""
    while is_package(folder) and folder.parent != folder:
        folder = folder.parent
    return folder


def is_package(folder: Path) -> bool:
    return os.path.isfile(folder / "__init__.py")


def search_roots(path: Path, added: tuple[Path, ...] = ()) -> tuple[Path, ...]:
    """The folders an absolute import in the file at ``path`` is looked up in, first match first;
    ``added`` are the folders the file puts on `sys.path` itself."""
    folder = path.parent
    found: list[Path] = [folder, *added, package_base(folder)]
    root = project_root(folder)
    if root is not None:
        found.extend((root, root / "src"))
    unique: list[Path] = []
    for candidate in found:
        if candidate not in unique and os.path.isdir(candidate):
            unique.append(candidate)
    return tuple(unique)
