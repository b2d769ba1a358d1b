"""The result cache: hits, misses, staleness (content, configuration, version), concurrent runs,
exact round trips, and results identical to uncached runs."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchlint import cache, engine, registry, runner
from torchlint.config import ConfigResolver, Settings
from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from perf_support import FIXTURES, generate_tree
from probe_rule import ProbeRule

# The unit tests use the test-only probe rule (TL900: a call of probe()), so they test the cache
# and not the mission rules; the fixture and tree tests run the real rules.
BUGGY = "import torch\n\nprobe(torch.zeros(3))\n"
FOUND = [ProbeRule.code]


@pytest.fixture
def probe_rule(monkeypatch):
    rules = {**registry.all_rules(), ProbeRule.code: ProbeRule}
    monkeypatch.setattr(registry, "all_rules", lambda: rules)


class Counter:
    """Counts the analyses a run really performs (the serial path runs in this process)."""

    def __init__(self, monkeypatch) -> None:
        self.paths: list[str] = []
        real = engine.analyze

        def counting(data, path, settings=None):
            self.paths.append(path)
            return real(data, path, settings)

        monkeypatch.setattr(engine, "analyze", counting)


def run(paths, cache_dir: Path | None, resolver: ConfigResolver | None = None, cache: bool | None = None):
    """Diagnostics of checking ``paths`` in this process, with ``cache_dir`` as --cache-dir;
    ``cache=True`` without a folder uses the configured location."""
    enabled = cache_dir is not None if cache is None else cache
    options = runner.RunOptions(jobs=1, cache=enabled, cache_dir=cache_dir)
    analyses = runner.check_files([Path(p) for p in paths], resolver or ConfigResolver(), options)
    return [d for analysis in analyses for d in analysis.diagnostics]


@pytest.fixture
def project(tmp_path, probe_rule):
    (tmp_path / "train.py").write_text(BUGGY)
    (tmp_path / "util.py").write_text("import json\n")
    return tmp_path


def test_second_run_is_served_from_the_cache(project, monkeypatch):
    counter = Counter(monkeypatch)
    files = [project / "train.py", project / "util.py"]
    first = run(files, project / "cache")
    assert [d.code for d in first] == FOUND
    assert len(counter.paths) == 2
    second = run(files, project / "cache")
    assert second == first
    assert len(counter.paths) == 2, "a warm run analysed files again"


def test_a_changed_file_is_checked_again(project, monkeypatch):
    counter = Counter(monkeypatch)
    run([project / "train.py"], project / "cache")
    (project / "train.py").write_text(BUGGY.replace("probe(", "checked("))
    assert run([project / "train.py"], project / "cache") == []
    assert len(counter.paths) == 2
    (project / "train.py").write_text(BUGGY)
    assert [d.code for d in run([project / "train.py"], project / "cache")] == FOUND


def test_a_configuration_change_is_never_served_stale(project, monkeypatch):
    counter = Counter(monkeypatch)
    files = [project / "train.py"]
    assert [d.code for d in run(files, project / "cache")] == FOUND
    # a rule option: the probe looks for other names
    (project / "pyproject.toml").write_text('[tool.torchlint.probe]\nnames = ["other"]\n')
    assert run(files, project / "cache") == []
    # the selection, from the command line
    assert run(files, project / "cache", ConfigResolver(None, {"ignore": FOUND})) == []
    # per-file-ignores
    (project / "pyproject.toml").write_text('[tool.torchlint]\nper-file-ignores = {"train.py" = ["TL900"]}\n')
    assert run(files, project / "cache") == []
    (project / "pyproject.toml").unlink()
    assert [d.code for d in run(files, project / "cache")] == FOUND
    assert len(counter.paths) == 5
    # and the latest is then a hit
    assert [d.code for d in run(files, project / "cache")] == FOUND
    assert len(counter.paths) == 5


def test_a_new_torchlint_version_does_not_read_old_entries(project, monkeypatch):
    counter = Counter(monkeypatch)
    run([project / "train.py"], project / "cache")
    monkeypatch.setattr(cache, "__version__", "99.0.0")
    cache.build_id.cache_clear()
    try:
        run([project / "train.py"], project / "cache")
    finally:
        cache.build_id.cache_clear()
    assert len(counter.paths) == 2
    assert len([p for p in (project / "cache").iterdir() if p.is_dir()]) == 2


def test_builds_unused_for_a_week_are_deleted_others_kept(project):
    old, recent = project / "cache" / "0.0.1-old", project / "cache" / "0.0.2-recent"
    for build in (old, recent):
        build.mkdir(parents=True)
        (build / "entry").write_text("{}")
    week_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (week_ago, week_ago))
    run([project / "train.py"], project / "cache")
    assert not old.exists()
    assert recent.is_dir()


def test_the_build_id_changes_with_any_source_file(tmp_path, monkeypatch):
    """An edited rule in a development checkout (same version number) is a new build."""
    package = tmp_path / "torchlint"
    package.mkdir()
    (package / "cache.py").write_text("# stand-in\n")
    (package / "rules.py").write_text("RULE = 1\n")
    monkeypatch.setattr(cache, "__file__", str(package / "cache.py"))
    builds = []
    for content in ("RULE = 1\n", "RULE = 2\n"):
        (package / "rules.py").write_text(content)
        cache.build_id.cache_clear()
        builds.append(cache.build_id())
    cache.build_id.cache_clear()
    assert builds[0] != builds[1]
    assert all(build.startswith(cache.__version__ + "-") for build in builds)


def test_the_cache_folder_ignores_itself_and_is_tagged(project):
    run([project / "train.py"], project / "cache")
    assert (project / "cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (project / "cache" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_default_location_is_the_project_root(project, monkeypatch):
    (project / "pyproject.toml").write_text("[tool.torchlint]\nselect = ['TL']\n")
    (project / "src").mkdir()
    (project / "src" / "train.py").write_text(BUGGY)
    monkeypatch.chdir(project / "src")
    run([Path("train.py")], None, cache=True)
    assert (project / ".torchlint_cache" / ".gitignore").is_file()
    assert not (project / "src" / ".torchlint_cache").exists()


def test_cache_dir_from_the_configuration(project):
    (project / "pyproject.toml").write_text('[tool.torchlint]\ncache-dir = "build/lint-cache"\n')
    run([project / "train.py"], None, cache=True)
    assert (project / "build" / "lint-cache" / ".gitignore").is_file()


def test_no_cache_writes_nothing(project, run_cli, monkeypatch):
    monkeypatch.chdir(project)
    result = run_cli("check", "--no-cache", "train.py")
    assert result.exit_code == 1
    assert not (project / ".torchlint_cache").exists()


def test_cache_dir_option_and_environment_variable(project, run_cli, monkeypatch):
    monkeypatch.chdir(project)
    run_cli("check", "--cache-dir", "from-option", "train.py")
    assert (project / "from-option" / ".gitignore").is_file()
    monkeypatch.setenv("TORCHLINT_CACHE_DIR", str(project / "from-env"))
    run_cli("check", "train.py")
    assert (project / "from-env" / ".gitignore").is_file()
    assert not (project / ".torchlint_cache").exists()


def test_a_damaged_entry_is_a_miss(project, monkeypatch):
    run([project / "train.py"], project / "cache")
    entries = [p for p in (project / "cache").glob("*/*") if p.is_file()]
    assert len(entries) == 1
    key = json.loads(entries[0].read_bytes())["key"]
    other_layout = json.dumps({"key": key, "diagnostics": [["TL900"]]}).encode()
    for damage in (b"", b"{not json", b"[]", b'{"key": "x"}', other_layout):
        entries[0].write_bytes(damage)
        assert [d.code for d in run([project / "train.py"], project / "cache")] == FOUND


def test_an_unwritable_cache_folder_only_means_no_caching(project):
    (project / "a-file").write_text("")
    assert [d.code for d in run([project / "train.py"], project / "a-file" / "cache")] == FOUND


def test_the_same_file_under_another_name_reports_that_name(project, monkeypatch):
    monkeypatch.chdir(project)
    run([project / "train.py"], project / "cache")
    diagnostics = run([Path("train.py")], project / "cache")
    assert [d.path for d in diagnostics] == ["train.py"]


def test_unreadable_files_are_reported_not_cached(project):
    missing = project / "missing.py"
    for _ in range(2):
        assert [d.code for d in run([missing], project / "cache")] == ["TL000"]


def test_diagnostics_round_trip_exactly():
    diagnostic = Diagnostic(
        "TL003",
        "ünïcode message with 'quotes' and \"double\" and \\ backslash",
        "ignored",
        Position(3, 5),
        Position(4, 1),
        Severity.ERROR,
        Fix(
            "Reassign",
            Applicability.UNSAFE,
            (Edit(Position(3, 5), Position(3, 9), "x = x.to(d)\r\n\t"), Edit(Position(1, 1), Position(1, 1), "")),
        ),
        {"status": "confirmed", "evidence": "seen"},
        cell=7,
    )
    for original in (diagnostic, dataclasses.replace(diagnostic, fix=None, confirmation=None, cell=None)):
        stored = json.loads(json.dumps(cache.encode(original)))
        restored = cache.decode(stored, "train.py")
        assert restored == dataclasses.replace(original, path="train.py")
        assert restored.confirmation == original.confirmation


def test_every_field_of_a_diagnostic_is_stored():
    """A new field in Diagnostic, Fix or Edit must be added to the cache's encoding."""
    assert [f.name for f in dataclasses.fields(Diagnostic)] == [
        "code", "message", "path", "start", "end", "severity", "fix", "confirmation", "cell"
    ]
    assert [f.name for f in dataclasses.fields(Fix)] == ["message", "applicability", "edits"]
    assert [f.name for f in dataclasses.fields(Edit)] == ["start", "end", "content"]


def _cli(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "torchlint", "check", "--format", "json", "--exit-zero", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_concurrent_runs_share_a_cache_safely(tmp_path):
    """Three runs at once on the same tree and cache folder each report exactly what an
    uncached run reports, and leave only whole entries behind."""
    generate_tree(tmp_path / "tree", 24)
    reference = _cli("--no-cache", "tree", cwd=tmp_path).communicate()[0]
    runs = [_cli("--cache-dir", "shared", "-j", "2", "tree", cwd=tmp_path) for _ in range(3)]
    outputs = [process.communicate()[0] for process in runs]
    assert all(process.returncode == 0 for process in runs)
    assert all(output == reference for output in outputs)
    assert json.loads(reference), "the generated tree should produce findings"
    entries = [p for p in (tmp_path / "shared").glob("*/*")]
    assert len(entries) == 24
    assert all(json.loads(p.read_bytes())["key"] for p in entries)
    warm = _cli("--cache-dir", "shared", "tree", cwd=tmp_path).communicate()[0]
    assert warm == reference


def test_cached_and_uncached_results_are_identical_over_the_fixtures(tmp_path):
    uncached = run(FIXTURES, None)
    cold = run(FIXTURES, tmp_path / "cache")
    warm = run(FIXTURES, tmp_path / "cache")
    assert uncached == cold == warm
    assert any(d.fix is not None for d in warm), "fix edits must survive the round trip"
    assert os.listdir(tmp_path / "cache")


_REPORT_IMPORTS = (
    "import atexit, sys\n"
    "atexit.register(lambda: print(sorted({m.split('.')[0] for m in sys.modules if m.startswith('libcst')}"
    " | {m for m in sys.modules if m.startswith(('torchlint.rules.tl', 'torchlint.model', 'torchlint.engine'))}),"
    " file=sys.stderr))\n"
    "from torchlint.cli import main\n"
    "main()\n"
)


def test_a_run_answered_from_the_cache_imports_neither_libcst_nor_the_rules(tmp_path):
    generate_tree(tmp_path / "tree", 6)
    (tmp_path / "tree" / "buggy.py").write_text("import torch\n\nx = torch.zeros(3)\nx.to('cuda')\n")
    command = [sys.executable, "-c", _REPORT_IMPORTS, "check", "--cache-dir", "cache", "--exit-zero", "tree"]
    cold, warm = (subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True) for _ in range(2))
    assert "'libcst'" in cold.stderr.splitlines()[-1], "the probe must see what a cold run imports"
    assert warm.stderr.splitlines()[-1] == "[]"
    assert warm.stdout == cold.stdout and "TL003" in cold.stdout


def test_the_build_id_reads_the_libcst_version_without_importing_it():
    from importlib.metadata import version

    assert f"'{version('libcst')}'".encode() in cache._libcst_version()
