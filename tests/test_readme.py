"""The README stays true: its rule table is what `torchlint rules --format markdown` prints, and
the test command CI runs is the one it shows."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rule_table_matches_the_registry(run_cli):
    result = run_cli("rules", "--format", "markdown")
    assert result.exit_code == 0
    table = re.search(r"<!-- rules-table -->\n(.*?)<!-- end-rules-table -->", README, re.DOTALL)
    assert table is not None, "README lost its rule table markers"
    assert table.group(1) == result.output


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- test-command -->" in README and "<!-- test-command -->" in ci
    block = re.search(r"<!-- test-command -->\n```sh\n(.+?)\n```", README, re.DOTALL)
    assert block is not None and "pytest" in block.group(1)
    assert "torch==2.13.0" in block.group(1), "torch must be pinned so pip never resolves CUDA wheels"
