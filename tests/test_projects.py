"""Multi-file projects under fixtures/projects/<name>/: the findings marked `# expect: TLxxx` in
any of their files are exactly those torchlint reports, whether each file is checked on its own
(as flake8, pre-commit and `torchlint train.py` do) or the whole project at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_fixtures import expected_findings

from torchlint import engine
from torchlint.config import ConfigResolver, Settings
from torchlint.runner import RunOptions, check_files, targets

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "projects"
NAMES = sorted(path.name for path in PROJECTS.iterdir() if path.is_dir())


def project_files(name: str) -> list[Path]:
    return sorted((PROJECTS / name).rglob("*.py"))


def expected(name: str) -> set[tuple[str, int, str]]:
    found = set()
    for path in project_files(name):
        for line, code in expected_findings(path.read_text(encoding="utf-8")):
            found.add((path.relative_to(PROJECTS / name).as_posix(), line, code))
    return found


def as_set(name: str, diagnostics) -> set[tuple[str, int, str]]:
    return {(Path(d.path).resolve().relative_to(PROJECTS / name).as_posix(), d.line, d.code) for d in diagnostics}


@pytest.mark.parametrize("name", NAMES)
def test_each_file_alone_gets_the_expected_findings(name):
    diagnostics = [d for path in project_files(name) for d in engine.check_path(path, Settings(preview=True)).diagnostics]
    assert as_set(name, diagnostics) == expected(name)


@pytest.mark.parametrize("name", NAMES)
def test_the_whole_project_gets_the_same_findings(name):
    resolver = ConfigResolver(None, {"preview": True})
    options = RunOptions(cache=False, jobs=1)
    paths = targets([PROJECTS / name], resolver, options)
    diagnostics = [d for analysis in check_files(paths, resolver, options) for d in analysis.diagnostics]
    assert as_set(name, diagnostics) == expected(name)


def test_every_project_fixture_has_a_silent_twin_or_a_finding():
    assert any(expected(name) for name in NAMES) and any(not expected(name) for name in NAMES)


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("loop_in_engine", "its batches are drawn by the loop in engine.py:7"),
        ("fit_in_package", "the epoch loop in detector/engine/loop.py:8 never calls set_epoch; "
                           "call train_loader.sampler.set_epoch(epoch) at the start of each epoch there"),
        ("trainer_class", "the epoch loop in trainer.py:15 never calls set_epoch"),
        ("model_left_on_cpu", "fit_epoch() in engine.py:6 runs it and places tensors on a device: "
                              "call regressor.to(device)"),
        ("model_left_on_cpu_device_default", "train() in loops.py:6 runs it"),
        ("scorer_from_relative_import", "score_windows() in spotter/windows.py:6 runs it"),
        ("batches_left_on_cpu", "batches of 'test_loader' are still on the CPU when accuracy() in evaluation.py:6 "
                                "feeds them to 'model'"),
        ("global_batch_into_loader_builder", "reaches the per-process loader make_feeds() builds "
                                             "(tagging/feeds.py:11) undivided"),
        ("caller_passes_softmax_model", "the output of 'head', whose forward ends in a softmax in the model every "
                                        "caller of fit_epoch() passes (run.py:15)"),
    ],
)
def test_findings_whose_evidence_is_in_another_file_say_where(name, where):
    messages = [d.message for path in project_files(name) for d in engine.check_path(path, Settings(preview=True)).diagnostics]
    assert len(messages) == 1 and where in messages[0]
