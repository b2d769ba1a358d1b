"""Which files a run checks: explicit files always, folders walked with excludes and .gitignore."""

from __future__ import annotations

import ast
import functools
import os
import re
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


def excluded_entry(path: Path, is_dir: bool, patterns: Iterable[str], root: Path | None, real: Path | None = None) -> bool:
    """Whether an exclude pattern names this file or folder itself, by its name or by its path
    relative to ``root`` (from its ``real`` path, when the caller has it). A match through a
    folder above it does not count: the walk never enters an excluded folder, so such a folder
    was named on the command line, and, as in ruff, `torchlint build` checks what is in build/."""
    patterns = tuple(patterns)
    if not patterns:
        return False
    names = _plain_names(patterns)
    if names is not None:
        # A plain name matches this entry by its name, or one below a folder of that name,
        # which does not count here: the answer is the entry's name (and pathspec's import is
        # saved, a tenth of a run answered from the cache).
        return path.name in names
    spec = _spec(patterns)
    slash = "/" if is_dir else ""
    if spec.match_file(path.name + slash):
        return True
    relative = _relative(path, root, real)
    if not spec.match_file(relative + slash):
        return False
    parent = relative.rpartition("/")[0]
    return not parent or not spec.match_file(parent + "/")


def excluded_anywhere(path: Path, is_dir: bool, patterns: Iterable[str], root: Path | None, real: Path | None = None) -> bool:
    """Whether an exclude pattern names this path or any folder above it (up to ``root``): the
    test for paths named on the command line under --force-exclude."""
    if excluded_entry(path, is_dir, patterns, root, real):
        return True
    parts = _relative(path, root, real).split("/")[:-1]
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


def _relative(path: str | Path, root: Path | None, real: Path | None = None) -> str:
    candidate = Path(path)
    if root is not None:
        try:
            candidate = (real or candidate.resolve()).relative_to(root)
        except ValueError:
            pass
    return candidate.as_posix()


class RealPaths:
    """Real paths (absolute, without symbolic links) with one resolution per folder: an entry
    that is not itself a link is its folder's real path and its name. Path.resolve looks every
    component of the path up again, for each of the thousands of files of a run."""

    def __init__(self) -> None:
        self._folders: dict[Path, Path] = {}

    def __call__(self, path: Path) -> Path:
        if path.name in ("", "..") or os.path.islink(path):
            return path.resolve()
        folder = self._folders.get(path.parent)
        if folder is None:
            folder = self._folders[path.parent] = path.parent.resolve()
        return folder / path.name


_PLAIN_NAME = re.compile(r"[\w.-]*\w[\w.-]*")


@functools.lru_cache(maxsize=None)
def _plain_names(patterns: tuple[str, ...]) -> frozenset[str] | None:
    """The patterns as a set of names when each is a plain file or folder name (no slash,
    wildcard, negation, escape or space), as the default excludes are."""
    if all(_PLAIN_NAME.fullmatch(pattern) for pattern in patterns):
        return frozenset(patterns)
    return None


@functools.lru_cache(maxsize=None)
def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class _GitIgnores:
    """The .gitignore files met on the way down, each applying to its own folder and below."""

    def __init__(self) -> None:
        self._applying: dict[Path, tuple[tuple[Path, pathspec.PathSpec], ...]] = {}

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for folder, spec in self.applying(path.parent):
            if spec.match_file(path.relative_to(folder).as_posix() + ("/" if is_dir else "")):
                return True
        return False

    def applying(self, folder: Path) -> tuple[tuple[Path, pathspec.PathSpec], ...]:
        """The .gitignore files that apply in ``folder``, each with its own folder: its own and
        those above it up to the repository's root. Looked up once per folder: every file under
        it asks."""
        found = self._applying.get(folder)
        if found is None:
            try:
                lines = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = None
            own = ((folder, _spec(tuple(lines))),) if lines else ()
            top = folder.parent == folder or (folder / ".git").exists()
            found = self._applying[folder] = own + (() if top else self.applying(folder.parent))
        return found


def discover(
    paths: Iterable[Path], excluded, real_path, respect_gitignore: bool = True, skipped: list[int] | None = None
) -> Iterator[Path]:
    """Yield files to check, in a stable order.

    ``excluded(path, real, is_dir)`` says whether the settings of that path (``real``: its real
    path, from ``real_path``, looked up once per entry) exclude it; it decides for the paths
    named explicitly too (they are checked even when excluded unless --force-exclude, as in
    ruff). Missing paths are yielded so the engine can report them. ``skipped`` gets one number
    per excluded file or folder: how many Python files it held (none for one that .gitignore
    ignores too: that was never going to be checked).
    """
    gitignores = _GitIgnores()
    seen: set[Path] = set()

    def ignored(real: Path, is_dir: bool) -> bool:
        return respect_gitignore and gitignores.ignored(real, is_dir)

    def count(path: Path, real: Path, is_dir: bool) -> None:
        if skipped is not None and not ignored(real, is_dir):
            skipped.append(python_files_under(path) if is_dir else int(path.name.endswith(PYTHON_SUFFIXES)))

    for root in paths:
        real, is_dir = real_path(root), root.is_dir()
        if excluded(root, real, is_dir):
            count(root, real, is_dir)
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
                real = real_path(child)
                if excluded(child, real, True):
                    count(child, real, True)
                    continue
                if ignored(real, True):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(PYTHON_SUFFIXES):
                    continue
                child = base / name
                if child in seen:
                    continue
                real = real_path(child)
                if excluded(child, real, False):
                    count(child, real, False)
                    continue
                if ignored(real, False):
                    continue
                seen.add(child)
                yield child
