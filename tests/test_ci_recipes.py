"""The CI recipes in the README: each is valid YAML with the documented steps, and its torchlint
commands, run as written in a project with one finding, do what the README says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BUGGY = 'import torch\nx = torch.zeros(3)\nx.to("cuda")\n'


def _documented(marker: str) -> dict:
    block = re.search(rf"<!-- {marker} -->\n```yaml\n(.+?)```", README, re.DOTALL)
    assert block is not None, f"README lost its {marker} block"
    return yaml.safe_load(block.group(1))


def _run_in_project(command: str, project: Path) -> subprocess.CompletedProcess:
    """A step's shell command, run where the installed torchlint is on PATH, as after the
    recipe's install step."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", command], cwd=project, env={**os.environ, "PATH": path},
        capture_output=True, text=True, timeout=120,
    )


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "train.py").write_text(BUGGY)
    return root


def test_the_github_workflow_installs_annotates_and_uploads_sarif(tmp_path):
    workflow = _documented("github-actions-workflow")
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert set(triggers) == {"push", "pull_request"}
    assert workflow["permissions"]["security-events"] == "write"
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    assert [step["uses"].split("@")[0] for step in steps[:2]] == ["actions/checkout", "actions/setup-python"]
    install, check, sarif = (step["run"] for step in steps if "run" in step)
    assert install.startswith("python -m pip install ") and "torchlint" in install
    assert check == "torchlint check --format github ."
    upload = steps[-1]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    sarif_file = sarif.split(" > ", 1)[1]
    assert upload["with"]["sarif_file"] == sarif_file
    # The SARIF is written and uploaded even when the check step failed the job.
    assert all(step.get("if") == "${{ !cancelled() }}" for step in steps[-2:])

    project = _project(tmp_path / "project")
    annotated = _run_in_project(check, project)
    assert annotated.returncode == 1, annotated.stderr
    assert annotated.stdout.startswith("::warning file=train.py,line=3,col=1,endLine=3,endColumn=13,title=torchlint (TL003)::")
    written = _run_in_project(sarif, project)
    assert written.returncode == 0, written.stderr
    log = json.loads((project / sarif_file).read_text())
    assert log["version"] == "2.1.0"
    assert [result["ruleId"] for result in log["runs"][0]["results"]] == ["TL003"]


def test_the_gitlab_job_installs_and_fails_on_findings(tmp_path):
    (job,) = _documented("gitlab-ci-job").values()
    assert job["image"].startswith("python:")
    install, check = job["script"]
    assert install.startswith("python -m pip install ") and "torchlint" in install

    checked = _run_in_project(check, _project(tmp_path / "project"))
    assert checked.returncode == 1
    assert checked.stdout.startswith("train.py:3:1: TL003 ")
