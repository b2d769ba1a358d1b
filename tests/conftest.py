"""Shared helpers for the test suite."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from torchlint import engine
from torchlint.config import Settings


def lint(source: str, path: str = "train.py", settings: Settings | None = None):
    """Diagnostics for a dedented snippet."""
    return engine.check_source(textwrap.dedent(source), path, settings or Settings())


def codes(source: str, **kwargs) -> list[str]:
    return [d.code for d in lint(source, **kwargs)]


@pytest.fixture
def run_cli():
    """Invoke the real CLI in-process; returns click's Result (exit_code, stdout, stderr)."""
    from click.testing import CliRunner

    from torchlint.cli import main

    def invoke(*args: str, input: str | bytes | None = None):
        return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """An empty working directory for the test: relative paths, configuration discovery and the
    result cache all stay inside it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: str, text: str) -> Path:
    """Write a file (and its folders) relative to the working directory."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def reported(result) -> list[tuple[str, str]]:
    """(path, code) of each finding in a text-format CLI result, in output order."""
    pairs = []
    for line in result.stdout.splitlines():
        location, _, rest = line.partition(": ")
        pairs.append((location.split(":", 1)[0], rest.split()[0]))
    return pairs


@pytest.fixture
def probe_rules(monkeypatch):
    """Only the test-only rules TL900 and TL901 (tests/rule_doubles.py) are registered."""
    import rule_doubles

    rule_doubles.install(monkeypatch)


ROOT = Path(__file__).resolve().parents[1]


def copy_checkout(destination: Path) -> Path:
    """Copy every file git tracks or would track (the working tree as it is, whatever is
    committed, without ignored build output and environments) into ``destination``."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not part of it
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def fresh_project(name: str, tmp_path: Path, monkeypatch) -> Path:
    """A copy of the project fixture ``name`` in ``tmp_path``, with no project summaries in
    memory: what a new process checking it would see."""
    from torchlint.project import index as project_index

    copy = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures" / "projects" / name, copy)
    monkeypatch.setattr(project_index, "_SHARED", None)
    return copy
