"""The README stays true: its rule table is what `torchlint rules --format markdown` prints, and
the test command CI runs is the one it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_checkout

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


def _quick_start() -> list[str]:
    section = README.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, re.DOTALL)


def test_the_quick_start_is_an_install_command_then_the_test_command():
    install, test = _quick_start()
    assert re.search(r"<!-- install-command -->\n```sh\n" + re.escape(install), README)
    assert re.search(r"<!-- test-command -->\n```sh\n" + re.escape(test), README)


@pytest.mark.slow
def test_the_install_command_makes_its_own_environment_and_leaves_the_python_running_it_alone(tmp_path):
    # The Python that runs the command stands for a system one, which PEP 668 (or a missing pip,
    # as here) forbids installing into: the command must bring its own environment.
    host = tmp_path / "host"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(host)], check=True, capture_output=True)
    host_files = sorted(host.rglob("*"))
    checkout = copy_checkout(tmp_path / "checkout")
    environment = {name: value for name, value in os.environ.items() if name != "VIRTUAL_ENV"}
    environment["PATH"] = f"{host / 'bin'}{os.pathsep}{environment['PATH']}"

    install = _quick_start()[0]
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", install], cwd=checkout, env=environment, capture_output=True, text=True, timeout=600
    )

    assert result.returncode == 1, result.stderr  # torchlint's exit code: the example has findings
    assert "fixtures/ddp_train.py:75:21: TL006 DistributedSampler 'train_sampler' is never re-seeded" in result.stdout
    assert (checkout / ".venv" / "bin" / "torchlint").is_file()
    assert sorted(host.rglob("*")) == host_files
