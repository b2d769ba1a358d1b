"""The command line end to end: paths, stdin, subcommands, selection, flags and exit codes.

Findings come from the test-only rules TL900 (`probe()` calls) and TL901 (`other()` calls; it
fails on files that call `explode()`), see tests/rule_doubles.py.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from torchlint import __version__, registry

from conftest import reported, write

pytestmark = pytest.mark.usefixtures("probe_rules", "in_tmp")


def test_bare_path_is_the_check_command(run_cli):
    write("train.py", "probe()\n")
    bare = run_cli("train.py")
    explicit = run_cli("check", "train.py")
    assert bare.exit_code == explicit.exit_code == 1
    assert bare.stdout == explicit.stdout == "train.py:1:1: TL900 [*] call of probe(): replace it with checked()\n"
    assert "Found 1 finding in 1 file." in bare.stderr


def test_no_path_checks_the_working_directory(run_cli):
    write("a.py", "probe()\n")
    write("pkg/b.py", "other()\n")
    result = run_cli()
    assert reported(result) == [("a.py", "TL900"), (os.path.join("pkg", "b.py"), "TL901")]


def test_folders_are_walked_recursively_for_python_files(run_cli):
    write("proj/top.py", "probe()\n")
    write("proj/deep/er/still.py", "probe()\n")
    write("proj/stubs.pyi", "probe()\n")
    write("proj/notes.txt", "probe()\n")
    write("proj/script", "probe()\n")
    result = run_cli("proj")
    assert sorted(path for path, _ in reported(result)) == [
        os.path.join("proj", "deep", "er", "still.py"),
        os.path.join("proj", "stubs.pyi"),
        os.path.join("proj", "top.py"),
    ]
    assert "in 3 files" in result.stderr


def test_an_explicit_file_is_checked_whatever_its_name(run_cli):
    write("script", "probe()\n")
    assert reported(run_cli("script")) == [("script", "TL900")]


def test_several_paths_and_no_duplicates(run_cli):
    write("a.py", "probe()\n")
    write("sub/b.py", "probe()\n")
    result = run_cli("a.py", "sub", "sub/b.py")
    assert sorted(reported(result)) == [("a.py", "TL900"), (os.path.join("sub", "b.py"), "TL900")]


def test_stdin_with_stdin_filename(run_cli):
    result = run_cli("-", "--stdin-filename", "models/train.py", input="x = 1\nprobe()\n")
    assert result.exit_code == 1
    assert result.stdout.startswith("models/train.py:2:1: TL900")


def test_stdin_filename_selects_the_configuration_of_that_path(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nper-file-ignores = {"tests/*" = ["TL900"]}\n')
    assert run_cli("-", "--stdin-filename", "tests/t.py", input="probe()\n").exit_code == 0
    assert run_cli("-", "--stdin-filename", "src/t.py", input="probe()\n").exit_code == 1


def test_stdin_filename_without_paths_reads_stdin(run_cli):
    write("ignored.py", "other()\n")  # would be found if the folder were checked instead
    result = run_cli("--stdin-filename", "s.py", input="probe()\n")
    assert reported(result) == [("s.py", "TL900")]


def test_stdin_without_a_name_is_reported_as_dash(run_cli):
    result = run_cli("-", input=b"probe()\n")
    assert result.stdout.startswith("-:1:1: TL900")


def test_rules_lists_every_code(run_cli):
    result = run_cli("rules")
    assert result.exit_code == 0
    codes = [line.split()[0] for line in result.stdout.splitlines()]
    assert codes == ["TL000", "TL900", "TL901"]
    assert "could-not-check" in result.stdout and "probe-call" in result.stdout


def test_rules_as_json(run_cli):
    entries = json.loads(run_cli("rules", "--format", "json").stdout)
    assert [entry["code"] for entry in entries] == ["TL000", "TL900", "TL901"]
    probe = entries[1]
    assert probe["name"] == "probe-call" and probe["fix"] == "safe" and probe["url"].endswith("/rules/TL900.md")


def test_explain_prints_the_rule_page(run_cli):
    result = run_cli("explain", "tl000")
    assert result.exit_code == 0
    assert result.stdout.startswith("# TL000: could-not-check\n")
    assert "## What it does" in result.stdout


def test_explain_an_unknown_code_is_a_usage_error(run_cli):
    result = run_cli("explain", "TL999")
    assert result.exit_code == 2
    assert "unknown rule code: 'TL999'" in result.stderr


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], ["TL900", "TL901"]),
        (["--select", "TL900"], ["TL900"]),
        (["--select", "tl901"], ["TL901"]),
        (["--select", "TL90"], ["TL900", "TL901"]),
        (["--select", "ALL"], ["TL900", "TL901"]),
        (["--select", "TL900,TL901"], ["TL900", "TL901"]),
        (["--select", "TL900", "--select", "TL901"], ["TL900", "TL901"]),
        (["--ignore", "TL901"], ["TL900"]),
        (["--ignore", "TL900,TL901"], []),
        (["--ignore", "TL900", "--ignore", "TL901"], []),
        (["--select", "TL90", "--ignore", "TL901"], ["TL900"]),
        # The more specific prefix wins, whichever list it is in (ruff's rule).
        (["--select", "TL901", "--ignore", "TL90"], ["TL901"]),
        (["--ignore", "TL9"], []),
    ],
)
def test_selection_on_the_command_line(run_cli, options, expected):
    write("t.py", "probe()\nother()\n")
    result = run_cli(*options, "t.py")
    assert [code for _, code in reported(result)] == expected
    assert result.exit_code == (1 if expected else 0)


def test_extend_select_adds_to_the_configured_selection(run_cli):
    write("pyproject.toml", '[tool.torchlint]\nselect = ["TL900"]\n')
    write("t.py", "probe()\nother()\n")
    assert [code for _, code in reported(run_cli("t.py"))] == ["TL900"]
    assert [code for _, code in reported(run_cli("--extend-select", "TL901", "t.py"))] == ["TL900", "TL901"]
    # --select replaces the configured selection instead.
    assert [code for _, code in reported(run_cli("--select", "TL901", "t.py"))] == ["TL901"]


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_an_unknown_rule_code_is_exit_2(run_cli, option):
    write("t.py", "probe()\n")
    result = run_cli(option, "TL900,XY12", "t.py")
    assert result.exit_code == 2
    assert "unknown rule code or prefix: 'XY12'" in result.stderr
    assert result.stdout == ""


def test_an_unknown_option_is_exit_2(run_cli):
    result = run_cli("--no-such-option", "t.py")
    assert result.exit_code == 2
    assert "No such option" in result.stderr


def test_exit_zero_keeps_the_findings(run_cli):
    write("t.py", "probe()\n")
    result = run_cli("--exit-zero", "t.py")
    assert result.exit_code == 0
    assert reported(result) == [("t.py", "TL900")]


def test_exit_codes_clean_findings_and_syntax_errors(run_cli):
    write("clean.py", "x = 1\n")
    write("broken.py", "def f(:\n")
    clean = run_cli("clean.py")
    assert clean.exit_code == 0 and clean.stdout == ""
    assert "All checks passed! (1 file checked)" in clean.stderr
    assert run_cli("broken.py").exit_code == 1


def test_statistics_counts_per_rule(run_cli):
    write("a.py", "probe()\nprobe()\nother()\n")
    write("b.py", "probe()\ndef f(:\n")
    result = run_cli("--statistics", "a.py", "b.py")
    assert result.exit_code == 1
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows == [
        ["    2", "TL900", "[*] probe-call"],
        ["    1", "TL000", "[ ] could-not-check"],
        ["    1", "TL901", "[*] other-call"],
    ]


def test_version(run_cli):
    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"torchlint {__version__}\n"


def test_quiet_prints_findings_only(run_cli):
    write("t.py", "probe()\n")
    write("empty/README.md", "nothing to check\n")
    result = run_cli("-q", "t.py")
    assert result.exit_code == 1
    assert reported(result) == [("t.py", "TL900")]
    assert result.stderr == ""
    assert run_cli("-q", "empty").stderr == ""


def test_an_invalid_config_file_is_exit_2(run_cli):
    write("t.py", "probe()\n")
    write("bad.toml", "select = [\n")
    result = run_cli("--config", "bad.toml", "t.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: bad.toml: invalid TOML")
    assert "Usage:" not in result.stderr


def test_an_internal_error_is_one_line_and_exit_2(run_cli, monkeypatch):
    from torchlint import runner

    def broken(*args, **kwargs):
        raise KeyError("lost")

    monkeypatch.setattr(runner, "targets", broken)
    result = run_cli("t.py")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "error: internal error in torchlint: KeyError: 'lost'"
    assert "please report it at https://github.com/torchlint/torchlint/issues" in result.stderr
    assert "Traceback" not in result.stderr


def run_process(*args: str, stdin: str = "", **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], input=stdin, capture_output=True, text=True, timeout=120, **kwargs
    )


def test_the_installed_command_runs_in_a_process(tmp_path):
    write("train.py", "import os\nx = (\n")
    result = run_process("-m", "torchlint", "train.py", "--no-cache")
    assert result.returncode == 1
    assert result.stdout.startswith("train.py:2:5: TL000 SyntaxError")
    assert "Found 1 finding in 1 file." in result.stderr


def test_a_process_that_skips_the_teardown_still_writes_everything_and_its_exit_code(tmp_path):
    """cli.run ends the process without the interpreter's teardown: buffered output to a pipe
    (here more than a pipe's buffer) must all arrive, and each exit status as click sets it."""
    for index in range(300):
        write(f"many/t{index:03}.py", "import os\nx = (\n")
    found = run_process("-m", "torchlint", "many", "--no-cache", "-j", "1", "--format", "json")
    assert found.returncode == 1
    assert len(json.loads(found.stdout)) == 300
    assert run_process("-m", "torchlint", "many/t000.py", "--no-cache", "--exit-zero").returncode == 0
    usage = run_process("-m", "torchlint", "check", "--no-such-option")
    assert usage.returncode == 2 and "No such option" in usage.stderr
    script = "import sys\nfrom torchlint.cli import run\nsys.argv = ['torchlint', '--version']\nrun()\nprint('not reached')\n"
    version = run_process("-c", script)
    assert version.returncode == 0 and version.stdout.startswith("torchlint ") and "not reached" not in version.stdout


def test_an_internal_error_in_a_real_process_prints_no_traceback(tmp_path):
    write("t.py", "x = 1\n")
    script = (
        "import sys, torchlint.runner as runner\n"
        "def broken(*a, **k): raise ZeroDivisionError('division by zero')\n"
        "runner.check_files = broken\n"
        "from torchlint.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    result = run_process("-c", script, "t.py", "--no-cache")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "error: internal error in torchlint: ZeroDivisionError: division by zero"
    assert "Traceback" not in result.stderr
    shown = run_process("-c", script, "t.py", "--no-cache", env={**os.environ, "TORCHLINT_TRACEBACK": "1"})
    assert "Traceback" in shown.stderr


def _stderr_on_a_terminal(*args: str) -> str:
    """Run torchlint with stderr on a pseudo-terminal (stdout a pipe); what the terminal showed."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "torchlint", *args], stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.communicate(timeout=120)
    finally:
        os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_progress_bar_on_a_terminal_for_many_files():
    for index in range(30):
        write(f"many/m{index:02}.py", "x = 1\n")
    shown = _stderr_on_a_terminal("many", "--no-cache")
    assert "Checking" in shown
    assert "All checks passed! (30 files checked)" in shown
    assert "Checking" not in _stderr_on_a_terminal("many", "--no-cache", "-q")
    assert "Checking" not in _stderr_on_a_terminal("many/m00.py", "--no-cache")


def test_no_progress_bar_when_stderr_is_not_a_terminal(run_cli):
    for index in range(30):
        write(f"many/m{index:02}.py", "x = 1\n")
    result = run_cli("many")
    assert "Checking" not in result.stderr


def test_the_probe_rules_are_the_only_rules_here():
    # Guards the premise of this module: real rules never add findings to these expectations.
    assert set(registry.all_rules()) == {"TL900", "TL901"}


def test_explain_without_the_page_is_exit_2(run_cli):
    result = run_cli("explain", "TL900")  # the test-only rule has no page
    assert result.exit_code == 2
    assert result.stderr == "Error: the page of TL900 is missing from this installation\n"


@pytest.fixture
def with_preview_rule(probe_rules, monkeypatch):
    """The test rules and the preview rule TL902 (after probe_rules, which would replace them)."""
    import rule_doubles

    rule_doubles.install_with_preview(monkeypatch)


@pytest.mark.usefixtures("with_preview_rule")
@pytest.mark.parametrize("selection", [(), ("--select", "TL9"), ("--select", "ALL"), ("--extend-select", "TL902")])
def test_a_preview_rule_runs_only_in_preview_mode(run_cli, selection):
    write("train.py", "probe()\nunstable()\n")
    assert reported(run_cli("train.py", "--no-cache", *selection)) == [("train.py", "TL900")]
    assert reported(run_cli("train.py", "--no-cache", "--preview", *selection)) == [
        ("train.py", "TL900"),
        ("train.py", "TL902"),
    ]


@pytest.mark.usefixtures("with_preview_rule")
def test_selecting_only_preview_rules_without_preview_says_it_has_no_effect(run_cli):
    write("train.py", "unstable()\n")
    result = run_cli("train.py", "--no-cache", "--select", "TL902")
    assert result.exit_code == 0
    assert "warning: Selection `TL902` has no effect because preview is not enabled." in result.stderr
    assert "has no effect" not in run_cli("train.py", "--no-cache", "--select", "TL9").stderr
    assert "has no effect" not in run_cli("train.py", "--no-cache", "--select", "TL902", "--preview").stderr


@pytest.mark.usefixtures("with_preview_rule")
def test_preview_mode_from_the_configuration_and_its_command_line_override(run_cli):
    write("pyproject.toml", "[tool.torchlint]\npreview = true\n")
    write("train.py", "unstable()\n")
    assert reported(run_cli("train.py", "--no-cache")) == [("train.py", "TL902")]
    assert reported(run_cli("train.py", "--no-cache", "--no-preview")) == []
