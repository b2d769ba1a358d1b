"""The pre-commit hook, run by the real `pre-commit try-repo` against a snapshot of this tree.

pre-commit installs the hook repository with pip into an environment of its own, so this checks
the packaging too. The snapshot (every file git tracks or would track, committed into a fresh
repository) makes the test see the working tree as it is, whatever is committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=torchlint tests", "-c", "user.email=tests@torchlint.invalid", "-c", "commit.gpgsign=false"]


def _git(*args: str, cwd: Path) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


def _snapshot(destination: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not part of it
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    _git("init", "-q", cwd=destination)
    _git("add", "-A", cwd=destination)
    _git("commit", "-q", "-m", "snapshot", cwd=destination)
    return destination


@pytest.mark.slow
def test_the_hook_fails_on_a_buggy_file_and_passes_on_a_clean_one(tmp_path):
    hooks = _snapshot(tmp_path / "torchlint")
    project = tmp_path / "project"
    project.mkdir()
    (project / "buggy.py").write_text("import torch\n\ndef train(model, loader:\n    pass\n")
    (project / "clean.py").write_text("import torch\n\ndef train(model, loader):\n    pass\n")
    (project / "notes.txt").write_text("def broken(:\n")  # not Python: the hook must not see it
    _git("init", "-q", cwd=project)
    _git("add", "-A", cwd=project)

    # try-repo installs the hook into a fresh environment each time; run both checks at once.
    runs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "torchlint", "--files", name, "notes.txt"],
            cwd=project,
            env={**os.environ, "PRE_COMMIT_HOME": str(tmp_path / f"cache-{name}")},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in ("buggy.py", "clean.py")
    }
    output = {name: run.communicate(timeout=600)[0] for name, run in runs.items()}

    assert runs["buggy.py"].returncode == 1, output["buggy.py"]
    assert "torchlint" in output["buggy.py"] and "Failed" in output["buggy.py"]
    assert "buggy.py:3:10: TL000 SyntaxError" in output["buggy.py"]
    assert "notes.txt" not in output["buggy.py"].split("Failed", 1)[1]

    assert runs["clean.py"].returncode == 0, output["clean.py"]
    assert "torchlint" in output["clean.py"] and "Passed" in output["clean.py"]
