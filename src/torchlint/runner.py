"""Checking many files: discovery, per-file settings and exclusion, then the engine per file."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from torchlint import engine, files
from torchlint.config import ConfigResolver


@dataclass(frozen=True)
class RunOptions:
    respect_gitignore: bool = True


def targets(paths: Sequence[Path], resolver: ConfigResolver, options: RunOptions) -> list[Path]:
    explicit = set(paths)

    def excluded(path: Path, is_dir: bool) -> bool:
        if path in explicit:
            return False
        settings = resolver.for_path(path / "_" if is_dir else path)
        patterns = settings.exclude + settings.extend_exclude
        return files.matches_any(path, patterns, settings.root) or files.matches_any(path.name, patterns, None)

    return list(files.discover(paths, excluded, options.respect_gitignore))


def check_files(paths: Sequence[Path], resolver: ConfigResolver) -> Iterator[engine.Analysis]:
    """Analyses in input order."""
    for path in paths:
        yield engine.check_path(path, resolver.for_path(path))


def check_stdin(filename: str, resolver: ConfigResolver) -> engine.Analysis:
    data = sys.stdin.buffer.read()
    return engine.analyze(data, filename, resolver.for_path(Path(filename)))
