"""Which files a run checks: explicit files always, folders walked with excludes and .gitignore."""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported on first use: a run over files named explicitly needs no pattern
    import pathspec

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")


def matches_any(path: str | Path, patterns: Iterable[str], root: Path | None) -> bool:
    """gitignore-style match of ``path`` (relative to ``root`` when inside it) or its name."""
    patterns = tuple(patterns)
    if not patterns:
        return False
    return _spec(patterns).match_file(_relative(path, root))


def excluded_entry(path: Path, is_dir: bool, patterns: Iterable[str], root: Path | None) -> bool:
    """Whether an exclude pattern names this file or folder itself, by its name or by its path
    relative to ``root``. A match through a folder above it does not count: the walk never
    enters an excluded folder, so such a folder was named on the command line, and, as in ruff,
    `torchlint build` checks what is in build/."""
    patterns = tuple(patterns)
    if not patterns:
        return False
    spec = _spec(patterns)
    slash = "/" if is_dir else ""
    if spec.match_file(path.name + slash):
        return True
    relative = _relative(path, root)
    if not spec.match_file(relative + slash):
        return False
    parent = relative.rpartition("/")[0]
    return not parent or not spec.match_file(parent + "/")


def excluded_anywhere(path: Path, is_dir: bool, patterns: Iterable[str], root: Path | None) -> bool:
    """Whether an exclude pattern names this path or any folder above it (up to ``root``): the
    test for paths named on the command line under --force-exclude."""
    if excluded_entry(path, is_dir, patterns, root):
        return True
    parts = _relative(path, root).split("/")[:-1]
    return any(excluded_entry(Path(*parts[: i + 1]), True, patterns, None) for i in range(len(parts)))


def excluded_build_output(path: Path, is_dir: bool, patterns: Iterable[str], root: Path | None, anywhere: bool) -> bool:
    """Whether a build-output pattern names this folder or, with ``anywhere``, a folder above
    it (up to ``root``), and that folder holds no package: build output, not source."""
    patterns = tuple(patterns)
    if not patterns:
        return False
    folders = [path] if is_dir else []
    if anywhere:
        limit = (root or Path.cwd()).resolve()
        folders += [folder for folder in path.parents if folder.name and limit in folder.resolve().parents]
    return any(excluded_entry(folder, True, patterns, root) and not holds_package(folder) for folder in folders)


def holds_package(folder: Path) -> bool:
    """Whether ``folder`` is Python source rather than build output: a package (it has an
    `__init__.py`), or a folder that a module next to it imports (`from dist import sampler`,
    `from .dist.sampler import ...`)."""
    if (folder / "__init__.py").is_file():
        return True
    try:
        siblings = [entry for entry in folder.parent.iterdir() if entry.suffix == ".py" and entry.is_file()]
    except OSError:
        return False
    return any(folder.name in _imported_segments(sibling) for sibling in siblings)


def _imported_segments(module: Path) -> set[str]:
    """Every name an import of ``module`` uses as a module path segment."""
    try:
        tree = ast.parse(module.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    segments: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            segments.update(part for alias in node.names for part in alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            segments.update((node.module or "").split("."))
            if node.level:  # `from . import dist` names a module of this folder
                segments.update(alias.name for alias in node.names)
    return segments


def python_files_under(folder: Path) -> int:
    return sum(name.endswith(PYTHON_SUFFIXES) for _, _, filenames in os.walk(folder) for name in filenames)


def _relative(path: str | Path, root: Path | None) -> str:
    candidate = Path(path)
    if root is not None:
        try:
            candidate = candidate.resolve().relative_to(root)
        except ValueError:
            pass
    return candidate.as_posix()


@functools.lru_cache(maxsize=None)
def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class _GitIgnores:
    """The .gitignore files met on the way down, each applying to its own folder and below."""

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.PathSpec | None] = {}
        self._roots: dict[Path, bool] = {}  # folder -> whether it is a repository's root

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for folder in path.parents:
            spec = self._load(folder)
            if spec is not None:
                relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                if spec.match_file(relative):
                    return True
            if self._is_root(folder):
                break
        return False

    def _is_root(self, folder: Path) -> bool:
        """Looked up once per folder: every file under it asks."""
        found = self._roots.get(folder)
        if found is None:
            found = self._roots[folder] = (folder / ".git").exists()
        return found

    def _load(self, folder: Path) -> pathspec.PathSpec | None:
        if folder not in self._specs:
            try:
                lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = None
            self._specs[folder] = _spec(tuple(lines)) if lines else None
        return self._specs[folder]


def discover(paths: Iterable[Path], excluded, respect_gitignore: bool = True, skipped: list[int] | None = None) -> Iterator[Path]:
    """Yield files to check, in a stable order.

    ``excluded(path, is_dir)`` says whether the settings of that path exclude it; it decides for
    the paths named explicitly too (they are checked even when excluded unless --force-exclude,
    as in ruff). Missing paths are yielded so the engine can report them. ``skipped`` gets one
    number per excluded file or folder: how many Python files it held (none for one that
    .gitignore ignores too: that was never going to be checked).
    """
    gitignores = _GitIgnores()
    seen: set[Path] = set()

    def ignored(path: Path, is_dir: bool) -> bool:
        return respect_gitignore and gitignores.ignored(path.resolve(), is_dir)

    def count(path: Path, is_dir: bool) -> None:
        if skipped is not None and not ignored(path, is_dir):
            skipped.append(python_files_under(path) if is_dir else int(path.name.endswith(PYTHON_SUFFIXES)))

    for root in paths:
        if excluded(root, root.is_dir()):
            count(root, root.is_dir())
            continue
        if not root.is_dir():
            if root not in seen:
                seen.add(root)
                yield root
            continue
        for folder, dirnames, filenames in os.walk(root):
            base = Path(folder)
            keep = []
            for name in sorted(dirnames):
                child = base / name
                if excluded(child, True):
                    count(child, True)
                    continue
                if ignored(child, True):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(PYTHON_SUFFIXES):
                    continue
                child = base / name
                if child in seen:
                    continue
                if excluded(child, False):
                    count(child, False)
                    continue
                if ignored(child, False):
                    continue
                seen.add(child)
                yield child
