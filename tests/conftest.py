"""Shared helpers for the test suite."""

from __future__ import annotations

import textwrap

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
def probe_rules(monkeypatch):
    """Only the test-only rules TL900 and TL901 (tests/rule_doubles.py) are registered."""
    import rule_doubles

    rule_doubles.install(monkeypatch)
