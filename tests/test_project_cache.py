"""The result cache across files: an entry also depends on the project modules whose summaries the
check used, and the summaries themselves are cached, so a warm run after an edit of one module
parses only what changed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import fresh_project

from torchlint import engine, runner
from torchlint.cache import content_digest
from torchlint.config import ConfigResolver
from torchlint.project import index as project_index

SEEDING = "    model.train()\n    loader.sampler.set_epoch(0)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    return fresh_project("loop_in_engine", tmp_path, monkeypatch)


def run(paths, cache_dir: Path) -> list:
    project_index._SHARED = None  # a fresh process: nothing in memory (the fixture restores it)
    options = runner.RunOptions(jobs=1, cache=True, cache_dir=cache_dir)
    return [d for analysis in runner.check_files(paths, ConfigResolver(), options) for d in analysis.diagnostics]


@pytest.fixture
def parsed(monkeypatch):
    """The files LibCST parses, in order."""
    seen: list[str] = []
    real = engine.parse

    def spy(text, path):
        seen.append(Path(path).name)
        return real(text, path)

    monkeypatch.setattr(engine, "parse", spy)
    return seen


def test_editing_an_imported_module_checks_its_importer_again(project):
    train, cache = project / "train.py", project / "cache"
    assert [d.code for d in run([train], cache)] == ["TL006"]
    assert [d.code for d in run([train], cache)] == ["TL006"]  # served from the cache
    engine_py = project / "engine.py"
    engine_py.write_text(engine_py.read_text().replace("    model.train()\n", SEEDING), encoding="utf-8")
    assert run([train], cache) == []


def test_a_warm_run_parses_nothing_and_an_edit_parses_only_the_edited_file(project, parsed):
    train, cache = project / "train.py", project / "cache"
    run([train], cache)
    assert sorted(parsed) == ["engine.py", "train.py"]  # engine.py once, for its summary
    parsed.clear()
    run([train], cache)
    assert parsed == []
    train.write_text(train.read_text() + "\n# tuned the schedule\n", encoding="utf-8")
    assert [d.code for d in run([train], cache)] == ["TL006"]
    assert parsed == ["train.py"]  # engine.py's summary came from the cache


def test_a_module_is_parsed_once_per_process_for_its_importers_and_its_own_check(project, parsed):
    (project / "eval.py").write_text("import torch\nfrom engine import train_one_epoch\n\ntrain_one_epoch\n", encoding="utf-8")
    paths = [project / "train.py", project / "eval.py", project / "engine.py"]
    options = runner.RunOptions(jobs=1, cache=False)
    list(runner.check_files(paths, ConfigResolver(), options))
    assert sorted(parsed) == ["engine.py", "eval.py", "train.py"]


def test_a_process_keeps_the_facts_of_the_latest_contents_of_a_module_only(project):
    # An editor's server lives for hours while a module is saved again and again.
    train, engine_py = project / "train.py", project / "engine.py"
    options = runner.RunOptions(jobs=1, cache=False)
    original = engine_py.read_text()
    for version in range(5):
        engine_py.write_text(original + f"\n# saved {version}\n", encoding="utf-8")
        found = [d.code for a in runner.check_files([train], ConfigResolver(), options) for d in a.diagnostics]
        assert found == ["TL006"]
    digest, facts = project_index.shared()._functions[os.path.abspath(engine_py)]
    assert digest == content_digest(engine_py.read_bytes()) and facts


def test_a_module_that_starts_calling_a_method_checks_the_methods_file_again(tmp_path):
    # TL014 leaves out a load in a method nothing in the project calls: that answer depends on
    # every module of the project, including ones that do not exist yet.
    project = tmp_path / "gan"
    project.mkdir()
    (project / "models.py").write_text(
        "import torch\n\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        "class GAN(object):\n"
        "    def __init__(self):\n"
        "        self.net = torch.nn.Linear(2, 2).to(device)\n\n"
        "    def restore(self, path):\n"
        "        self.net.load_state_dict(torch.load(path))\n",
        encoding="utf-8",
    )
    models, cache = project / "models.py", tmp_path / "cache"
    assert run([models], cache) == []
    (project / "resume.py").write_text("from models import GAN\n\nGAN().restore('g.pt')\n", encoding="utf-8")
    assert [d.code for d in run([models], cache)] == ["TL014"]
    (project / "resume.py").write_text("from models import GAN\n\nGAN()\n", encoding="utf-8")
    assert run([models], cache) == []
