"""Checking in worker processes: the same results in the same order for any number of jobs, no
pool for small runs, a finished run when a worker dies, and profiles gathered from workers."""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path

import libcst as cst
import pytest

from torchlint import engine, profile, runner
from torchlint.config import ConfigResolver
from perf_support import FIXTURES, generate_tree


def check(paths, jobs: int) -> list[tuple[str, list]]:
    options = runner.RunOptions(jobs=jobs, cache=False)
    return [(a.path, a.diagnostics) for a in runner.check_files(list(paths), ConfigResolver(), options)]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> list[Path]:
    return generate_tree(tmp_path_factory.mktemp("generated"), 30)


@pytest.fixture(scope="module")
def serial(tree) -> list[tuple[str, list]]:
    return check(tree, 1)


@pytest.fixture
def pool_spy(monkeypatch):
    """Records the size of each batch sent to a pool."""
    batches: list[int] = []
    real = runner._check_in_pool

    def spy(tasks, jobs):
        batches.append(len(tasks))
        return real(tasks, jobs)

    monkeypatch.setattr(runner, "_check_in_pool", spy)
    return batches


def test_any_number_of_jobs_gives_the_same_results_over_a_generated_tree(tree, serial, pool_spy):
    assert check(tree, 2) == serial
    assert check(tree, 3) == serial
    assert pool_spy == [len(tree), len(tree)]


def test_output_follows_the_input_order(tree, serial):
    order = [*range(1, len(tree), 2), *range(0, len(tree), 2)]
    assert check([tree[i] for i in order], 2) == [serial[i] for i in order]


def test_the_command_line_output_is_the_same_for_any_number_of_jobs(run_cli, pool_spy):
    files = [str(p) for p in FIXTURES]
    outputs = [run_cli("check", "--no-cache", "--format", "json", "-j", jobs, *files).stdout for jobs in ("1", "2")]
    assert outputs[0] == outputs[1]
    assert '"code": "TL00' in outputs[0]
    assert pool_spy == [len(FIXTURES)]


def test_a_single_file_or_a_small_batch_starts_no_pool(tree, pool_spy):
    check(tree[:1], 8)
    check(tree[:3], 8)  # a few small scripts: less work than starting workers
    assert pool_spy == []


def test_a_run_finishes_when_a_worker_dies(tree, serial, monkeypatch):
    parent = os.getpid()
    real = runner._check

    def dies_in_a_worker(task):
        if os.getpid() != parent:
            os._exit(1)
        return real(task)

    monkeypatch.setattr(runner, "_check", dies_in_a_worker)
    assert check(tree, 2) == serial


def test_profiles_of_workers_are_gathered(tree):
    recorded = profile.start()
    try:
        check(tree, 2)
    finally:
        profile.stop()
    torch_files = sum("torch" in path.read_text() for path in tree)
    assert recorded.calls[profile.PARSE] == torch_files
    assert recorded.calls[profile.SKIPPED] == len(tree) - torch_files
    assert any(phase.startswith("rule TL00") for phase in recorded.seconds)
    report = recorded.report(1.0, len(tree), 2)
    assert profile.PARSE in report and profile.MODEL in report


def test_profile_option_prints_phases_and_rules(run_cli, tree):
    files = [str(p) for p in tree[:12]]
    result = run_cli("check", "--no-cache", "--profile", "-j", "2", *files)
    assert result.stdout == run_cli("check", "--no-cache", *files).stdout
    report = result.stderr[result.stderr.index("Profile: 12 files") :]
    for phase in (profile.PARSE, profile.MODEL, profile.SYNTAX, "rule TL001 unused-device", "rule TL008"):
        assert phase in report


def test_no_tree_outlives_the_check_of_its_file(tree):
    """Memory stays flat over a large tree: every parsed module is freed once its file is done."""

    def live_modules() -> int:
        gc.collect()
        return sum(isinstance(o, cst.Module) for o in gc.get_objects())

    before = live_modules()
    check(tree, 1)
    assert live_modules() == before


def test_a_batch_run_hides_trees_from_the_collector_and_then_restores_it(tree):
    """memory.py: while a run goes on, what was alive at its start and each file's tree are
    frozen out of the cycle collector's sight; afterwards the collector is as it was."""
    threshold = gc.get_threshold()
    frozen = [gc.get_freeze_count() for _ in runner.check_files(tree[:6], ConfigResolver(), runner.RunOptions(jobs=1, cache=False))]
    assert len(frozen) == 6 and min(frozen) > 0
    assert gc.get_threshold() == threshold and gc.isenabled() and gc.get_freeze_count() == 0


def test_a_batch_run_frees_each_model_while_it_goes_on(tree, monkeypatch):
    """memory.py: a file's model is built out of the collector's sight too, where its cycles
    would keep it (and its tree) alive to the end of the run; the engine releases it once its
    file is checked, so at most the last one is still alive when the next file is done."""
    built = []

    def model(*args):
        made = original(*args)
        built.append(weakref.ref(made))
        return made

    original = engine.Model
    monkeypatch.setattr(engine, "Model", model)
    alive = [sum(ref() is not None for ref in built) for _ in runner.check_files(tree[:12], ConfigResolver(), runner.RunOptions(jobs=1, cache=False))]
    assert len(built) > 6 and max(alive) <= 2
