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
import hashlib
import os
from pathlib import Path

from torchlint.config import DEFAULT_EXCLUDE

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_MAX_MODULES = 2000  # a project with more modules is not searched
_SKIPPED_FOLDERS = frozenset(DEFAULT_EXCLUDE) | {"site-packages", "node_modules"}


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
    return _folder_roots(path.parent, added)


@functools.lru_cache(maxsize=1024)
def _folder_roots(folder: Path, added: tuple[Path, ...]) -> tuple[Path, ...]:
    # the same for every file of a folder (like project_root, read once per run)
    found: list[Path] = [folder, *added, package_base(folder)]
    root = project_root(folder)
    if root is not None:
        found.extend((root, root / "src"))
    unique: list[Path] = []
    for candidate in found:
        if candidate not in unique and os.path.isdir(candidate):
            unique.append(candidate)
    return tuple(unique)


def project_modules(folder: Path) -> tuple[Path, ...] | None:
    """The Python modules and notebooks under a project folder (not its virtual environments,
    caches or build output); None when there are more than a project-wide search reads."""
    found: list[Path] = []
    for parent, folders, files in os.walk(folder):
        folders[:] = sorted(
            name for name in folders
            if name not in _SKIPPED_FOLDERS and not name.startswith(".")
            and not os.path.exists(os.path.join(parent, name, "pyvenv.cfg"))
        )
        found.extend(Path(parent, name) for name in sorted(files) if name.endswith((".py", ".ipynb")))
        if len(found) > _MAX_MODULES:
            return None
    return tuple(found)


def listing_key(folder: Path) -> str:
    """How a check that searched the whole project records that dependency among the modules
    it used: the folder's path with a trailing separator, which no module's path has."""
    return os.path.join(os.fspath(folder), "")


def listing_digest(modules: tuple[Path, ...]) -> str:
    """A digest of a project's modules (project_modules), their names, sizes and modification
    times: it changes when a module is added, removed or written."""
    digest = hashlib.sha256()
    for path in modules:
        try:
            stat = os.stat(path)
        except OSError:
            continue
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:32]
