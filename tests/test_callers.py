"""Callers in other modules (project/callers.py): a function the checked file never calls is
judged by what every call of it in the project passes, and by nothing when one of its callers is
out of sight. The fixture projects caller_passes_* show the finding and its silent twins; these
tests cover what makes the callers unknown, and the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import fresh_project

from torchlint import engine, runner
from torchlint.config import ConfigResolver, Settings
from torchlint.project import index as project_index

CALL = "    fit_epoch(head, batches, optimizer, device)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    return fresh_project("caller_passes_softmax_model", tmp_path, monkeypatch)


def codes(path: Path) -> list[str]:
    project_index._SHARED = None
    return [d.code for d in engine.check_path(path, Settings(preview=True)).diagnostics]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_the_fixture_fires_from_its_one_caller(project):
    assert codes(project / "loops.py") == ["TL017"]


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("handed on as a callback", "from loops import fit_epoch\n\nHOOKS = {'fit': fit_epoch}\n"),
        ("through an import that does not resolve", "from vendored.loops import fit_epoch\n\nfit_epoch(None, [], None, 'cpu')\n"),
        ("with the arguments hidden in *args", "from loops import fit_epoch\n\nARGS = ()\nfit_epoch(*ARGS)\n"),
        ("as a module object handed on", "import loops\n\nRUNNERS = [loops]\nRUNNERS[0].fit_epoch(None, [], None, 'cpu')\n"),
        ("read without a call", "import loops\n\nprint(loops.fit_epoch.__doc__)\n"),
    ],
)
def test_a_caller_out_of_sight_leaves_the_parameter_unknown(project, name, source):
    (project / "other.py").write_text(source, encoding="utf-8")
    assert codes(project / "loops.py") == [], name


def test_a_notebook_naming_the_function_leaves_its_callers_unknown(project):
    (project / "explore.ipynb").write_text('{"cells": [{"cell_type": "code", "source": ["fit_epoch(head)"]}]}', encoding="utf-8")
    assert codes(project / "loops.py") == []


def test_a_caller_passing_a_module_of_unknown_output_leaves_it_silent(project):
    edit(project / "run.py", "head = SentimentHead(64, 3).to(device)", "head = build_head().to(device)")
    assert codes(project / "loops.py") == []


def test_editing_a_caller_checks_the_callee_again(project):
    loops, cache = project / "loops.py", project / "cache"

    def run() -> list[str]:
        project_index._SHARED = None  # a fresh process, so only the cache remembers
        options = runner.RunOptions(jobs=1, cache=True, cache_dir=cache)
        return [d.code for a in runner.check_files([loops], ConfigResolver(None, {"preview": True}), options) for d in a.diagnostics]

    assert run() == ["TL017"]
    assert run() == ["TL017"]  # from the cache
    edit(project / "run.py", "head = SentimentHead(64, 3).to(device)", "head = torch.nn.Linear(64, 3).to(device)")
    assert run() == []


def test_a_caller_checked_first_is_not_parsed_again_for_its_callee(project, monkeypatch):
    parsed: list[str] = []
    real = engine.parse
    monkeypatch.setattr(engine, "parse", lambda text, path: parsed.append(Path(path).name) or real(text, path))
    paths = [project / "run.py", project / "loops.py", project / "heads" / "sentiment.py"]
    analyses = runner.check_files(paths, ConfigResolver(None, {"preview": True}), runner.RunOptions(jobs=1, cache=False))
    assert [d.code for a in analyses for d in a.diagnostics] == ["TL017"]
    assert sorted(parsed) == ["loops.py", "run.py", "sentiment.py"]
