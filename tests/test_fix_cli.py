"""`--fix`, `--diff`, `--unsafe-fixes` and `--show-fixes` through the real CLI, with the
throwaway rules of tests/fix_support.py; and the atomic write."""

from __future__ import annotations

import json
import os
import stat

import pytest

from torchlint.fixes.write import atomic_write

import fix_support

SOURCE = "import os\n\nfor epoch in range(3):\n    x.to(d)\n"
SAFE_FIXED = "import os\n\nfor epoch in range(3):\n    x = x.to(d)\n"
ALL_FIXED = "import os\n\nfor epoch in range(3):\n    marker(epoch)\n    x = x.to(d)\n"


@pytest.fixture(autouse=True)
def test_rules(monkeypatch):
    fix_support.install(monkeypatch)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    return path


def test_check_marks_only_fixes_it_would_apply(run_cli, script):
    result = run_cli(str(script), "--select", "TL991,TL992")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].endswith("TL992 loop without marker()") and "[*]" not in lines[0]
    assert "TL991 [*] result of x.to() is discarded" in lines[1]
    assert "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in result.stderr
    unsafe = run_cli(str(script), "--select", "TL991,TL992", "--unsafe-fixes")
    assert unsafe.stdout.count("[*]") == 2
    assert "[*] 2 fixable with `--fix --unsafe-fixes`." in unsafe.stderr
    assert script.read_text() == SOURCE


def test_json_carries_unsafe_fixes_with_their_applicability(run_cli, script):
    result = run_cli(str(script), "--select", "TL992", "--format", "json")
    (entry,) = json.loads(result.stdout)
    assert entry["fix"]["applicability"] == "unsafe"
    assert entry["fix"]["edits"] == [
        {"line": 4, "column": 1, "end_line": 4, "end_column": 1, "content": "    marker(epoch)\n"}
    ]


def test_fix_writes_safe_fixes_and_reports_what_remains(run_cli, script):
    script.chmod(0o640)
    result = run_cli(str(script), "--select", "TL991,TL992", "--fix")
    assert script.read_text() == SAFE_FIXED
    assert stat.S_IMODE(script.stat().st_mode) == 0o640
    assert result.exit_code == 1
    assert "TL992 loop without marker()" in result.stdout and "TL991" not in result.stdout
    assert "Found 2 findings (1 fixed, 1 remaining) in 1 file." in result.stderr
    assert [p.name for p in script.parent.iterdir()] == ["train.py"]


def test_unsafe_fixes_with_fix_fixes_everything_and_exits_clean(run_cli, script):
    result = run_cli(str(script), "--select", "TL991,TL992", "--fix", "--unsafe-fixes", "--show-fixes")
    assert result.exit_code == 0, result.output
    assert script.read_text() == ALL_FIXED
    assert result.stdout == ""
    assert "Fixed 2 findings:\n- " in result.stderr
    assert "    1 \u00d7 TL991 (bare-to)\n    1 \u00d7 TL992 (loop-no-marker)\n" in result.stderr
    again = run_cli(str(script), "--select", "TL991,TL992", "--fix", "--unsafe-fixes")
    assert again.exit_code == 0 and script.read_text() == ALL_FIXED


def test_diff_prints_a_unified_diff_and_writes_nothing(run_cli, script):
    before = script.stat().st_mtime_ns
    result = run_cli(str(script), "--select", "TL991,TL992", "--diff")
    assert result.exit_code == 1
    assert result.stdout == (
        f"--- {script}\n+++ {script}\n@@ -1,4 +1,4 @@\n import os\n \n for epoch in range(3):\n-    x.to(d)\n+    x = x.to(d)\n"
    )
    assert "Would fix 1 finding." in result.stderr
    assert script.read_text() == SOURCE and script.stat().st_mtime_ns == before
    clean = run_cli(str(script), "--select", "TL993", "--diff")
    assert clean.exit_code == 0 and clean.stdout == ""


def test_diff_marks_a_missing_final_newline(run_cli, tmp_path):
    path = tmp_path / "t.py"
    path.write_text("x.to(d)")
    result = run_cli(str(path), "--select", "TL991", "--diff")
    assert result.stdout.endswith("-x.to(d)\n\\ No newline at end of file\n+x = x.to(d)\n\\ No newline at end of file\n")


def test_dropped_fix_is_reported_and_the_rest_applied(run_cli, tmp_path):
    path = tmp_path / "t.py"
    path.write_text("breaker()\nx.to(d)\n")
    result = run_cli(str(path), "--select", "TL991,TL994", "--fix")
    assert path.read_text() == "breaker()\nx = x.to(d)\n"
    assert f"warning: {path}:1:1: TL994 fix not applied: the fixed code does not parse" in result.stderr
    assert "TL994" in result.stdout and result.exit_code == 1


def test_file_with_a_syntax_error_is_never_written(run_cli, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("x.to(d)\ndef f(:\n")
    before = path.stat().st_mtime_ns
    result = run_cli(str(path), "--select", "TL991", "--fix")
    assert result.exit_code == 1 and "TL000" in result.stdout
    assert path.read_text() == "x.to(d)\ndef f(:\n" and path.stat().st_mtime_ns == before


def test_symlinked_file_stays_a_link(run_cli, script, tmp_path):
    link = tmp_path / "link.py"
    link.symlink_to(script)
    run_cli(str(link), "--select", "TL991", "--fix")
    assert link.is_symlink() and script.read_text() == SAFE_FIXED


def test_stdin_fix_prints_the_fixed_source(run_cli):
    result = run_cli("-", "--select", "TL991,TL992", "--fix", input=SOURCE)
    assert result.stdout == SAFE_FIXED
    assert "TL992" in result.stderr and result.exit_code == 1
    broken = run_cli("-", "--select", "TL991", "--fix", input="def f(:\n")
    assert broken.stdout == "def f(:\n"


def test_stdin_diff(run_cli):
    result = run_cli("-", "--select", "TL991", "--diff", "--stdin-filename", "t.py", input=SOURCE)
    assert result.exit_code == 1
    assert "-    x.to(d)\n+    x = x.to(d)\n" in result.stdout


def test_atomic_write_replaces_content_and_keeps_mode(tmp_path):
    path = tmp_path / "t.py"
    path.write_bytes(b"old\r\n")
    path.chmod(0o751)
    atomic_write(path, b"new\r\n")
    assert path.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert os.listdir(tmp_path) == ["t.py"]


def test_atomic_write_leaves_the_original_when_writing_fails(tmp_path):
    path = tmp_path / "t.py"
    path.write_bytes(b"old\n")
    with pytest.raises(TypeError):
        atomic_write(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old\n"
    assert os.listdir(tmp_path) == ["t.py"]


def test_atomic_write_keeps_the_owner(tmp_path):
    path = tmp_path / "t.py"
    path.write_bytes(b"old\n")
    if os.geteuid() == 0:
        os.chown(path, 1234, 5678)  # as root, a file of another user: it must stay theirs
    before = path.stat()
    atomic_write(path, b"new\n")
    after = path.stat()
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
