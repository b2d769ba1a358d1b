"""The pre-commit hooks, run by the real pre-commit: the repository's own hooks by `pre-commit
try-repo` against a snapshot of this tree, and the README's `repo: local` hook as documented.

pre-commit installs the hook repository with pip into an environment of its own, so this checks
the packaging too. The snapshot (every file git tracks or would track, committed into a fresh
repository) makes the test see the working tree as it is, whatever is committed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_checkout

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GIT = ["git", "-c", "user.name=torchlint tests", "-c", "user.email=tests@torchlint.invalid", "-c", "commit.gpgsign=false"]


def _git(*args: str, cwd: Path) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


def _snapshot(destination: Path) -> Path:
    copy_checkout(destination)
    _git("init", "-q", cwd=destination)
    _git("add", "-A", cwd=destination)
    _git("commit", "-q", "-m", "snapshot", cwd=destination)
    return destination


def _project(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    _git("init", "-q", cwd=root)
    _git("add", "-A", cwd=root)
    return root


def _notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s} for s in sources]
    document = {"cells": cells, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.Popen:
    # The torchlint installed next to this Python comes first on PATH, as in an activated
    # environment: that is the one a `repo: local` hook runs.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.Popen(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env={**os.environ, "PRE_COMMIT_HOME": str(home), "PATH": path},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.slow
def test_the_hooks_fail_on_a_buggy_file_pass_on_a_clean_one_and_fix_a_fixable_one(tmp_path):
    hooks = _snapshot(tmp_path / "torchlint")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hooks, check=True, capture_output=True, text=True).stdout.strip()
    notes = {"notes.txt": "def broken(:\n"}  # not Python: the hooks must not see it
    buggy = _project(tmp_path / "buggy", {"train.py": "import torch\n\ndef train(model, loader:\n    pass\n", **notes})
    clean = _project(tmp_path / "clean", {"train.py": "import torch\n\ndef train(model, loader):\n    pass\n", **notes})
    # The snippet README.md shows, with arguments passed on to the hook.
    fixable = _project(
        tmp_path / "fixable",
        {
            "train.py": 'import torch\nx = torch.zeros(3)\nx.to("cuda")\n',
            "explore.ipynb": _notebook("import torch\n", 'x = torch.zeros(3)\nx.to("cuda")\nprint(x)'),
            ".pre-commit-config.yaml": f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: torchlint-fix\n"
            "    args: [--unsafe-fixes]\n",
        },
    )

    # Each run installs the hook into a fresh environment with pip; they run at once.
    runs = {
        "buggy": _pre_commit("try-repo", str(hooks), "torchlint", "--all-files", cwd=buggy, home=tmp_path / "home-buggy"),
        "clean": _pre_commit("try-repo", str(hooks), "torchlint", "--all-files", cwd=clean, home=tmp_path / "home-clean"),
        "fixable": _pre_commit("run", "--all-files", cwd=fixable, home=tmp_path / "home-fixable"),
    }
    output = {name: run.communicate(timeout=600)[0] for name, run in runs.items()}

    assert runs["buggy"].returncode == 1, output["buggy"]
    assert "torchlint" in output["buggy"] and "Failed" in output["buggy"]
    assert "train.py:3:10: TL000 SyntaxError" in output["buggy"]
    assert "notes.txt" not in output["buggy"].split("Failed", 1)[1]

    assert runs["clean"].returncode == 0, output["clean"]
    assert "torchlint" in output["clean"] and "Passed" in output["clean"]

    assert runs["fixable"].returncode == 1, output["fixable"]
    assert "files were modified by this hook" in output["fixable"]
    assert (fixable / "train.py").read_text() == 'import torch\nx = torch.zeros(3)\nx = x.to("cuda")\n'
    assert (fixable / "explore.ipynb").read_text() == _notebook("import torch\n", 'x = torch.zeros(3)\nx = x.to("cuda")\nprint(x)')

    # A commit that stages one file of a project: the hook is given that file alone, and still
    # reads the modules it imports (the environment installed for `fixable` is reused).
    example = ROOT / "fixtures" / "projects" / "loop_in_engine"
    project = _project(
        tmp_path / "project",
        {
            "train.py": (example / "train.py").read_text(),
            "engine.py": (example / "engine.py").read_text(),
            ".pre-commit-config.yaml": f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: torchlint\n",
        },
    )
    staged = _pre_commit("run", "--files", "train.py", cwd=project, home=tmp_path / "home-fixable")
    output = staged.communicate(timeout=600)[0]
    assert staged.returncode == 1, output
    assert "train.py:19:15: TL006 DistributedSampler 'sampler' is never re-seeded (its batches are drawn by the loop in engine.py:7)" in output


def test_the_readmes_local_hook_runs_the_installed_torchlint(tmp_path):
    snippet = re.search(r"<!-- pre-commit-local -->\n```yaml\n(.+?)```", README, re.DOTALL)
    assert snippet is not None, "README lost its repo: local pre-commit snippet"
    project = _project(
        tmp_path / "project",
        {
            ".pre-commit-config.yaml": snippet.group(1),
            "pyproject.toml": '[tool.torchlint]\nextend-exclude = ["old_*.py"]\n',
            "train.py": 'import torch\nx = torch.zeros(3)\nx.to("cuda")\n',
            "old_train.py": 'import torch\nx = torch.zeros(3)\nx.cuda()\n',  # excluded by the settings
            "notes.txt": "def broken(:\n",  # not Python: the hook must not see it
        },
    )

    run = _pre_commit("run", "--all-files", cwd=project, home=tmp_path / "home")
    output = run.communicate(timeout=300)[0]

    assert run.returncode == 1, output
    assert "torchlint" in output and "Failed" in output
    report = output.split("Failed", 1)[1]
    assert "train.py:3:1: TL003 [*] 'x.to(\"cuda\")' discards its result" in report
    assert "old_train.py" not in report and "notes.txt" not in report
