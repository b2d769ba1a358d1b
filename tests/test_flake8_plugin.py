"""The flake8 plugin, driven through the real `flake8` in a subprocess and compared with the CLI.

Runs through tests/probe_rule.py add the test-only rule TL900 so selection, noqa, options and
columns are exercised whatever real rules exist; the comparisons over fixtures/ and the catalog
snippets use the real rules only.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).with_name("probe_rule.py")

# Each snippet is a program the catalog describes; the comparison holds whatever fires on it.
SNIPPETS = {
    "discarded_to.py": 'import torch\nx = torch.zeros(3)\nx.to("cuda")\n',
    "unused_device.py": 'import torch\ndevice = torch.device("cuda")\nprint(device)\n',
    "absurd_lr.py": "import torch\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.Adam(model.parameters(), lr=10.0)\n",
    "unicode.py": 'import torch\nnom = "héllo wörld"; x = torch.zeros(3); x.cuda()\n',
    "crlf.py": "import torch\r\nx = torch.ones(2)\r\nx.half()\r\n",
    "empty.py": "",
    "syntax_error.py": "import torch\ndef train(model, loader:\n    pass\n",
}


def _tool(tool: str, *args: str, cwd: Path, probe: bool = False, stdin: str | None = None):
    command = [sys.executable, str(PROBE), tool] if probe else [sys.executable, "-m", tool]
    return subprocess.run(
        [*command, *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _findings(stdout: str) -> list[str]:
    """`path:line:col: CODE message` lines; the CLI's fixable marker is not part of the finding."""
    return sorted(line.replace(" [*] ", " ") for line in stdout.splitlines() if re.match(r"\S+:\d+:\d+: ", line))


def _flake8(*args: str, cwd: Path, probe: bool = False, stdin: str | None = None) -> list[str]:
    result = _tool("flake8", "--select=TL,E999,E902", *args, cwd=cwd, probe=probe, stdin=stdin)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return _findings(result.stdout)


def _cli(*args: str, cwd: Path, probe: bool = False, stdin: str | None = None) -> list[str]:
    result = _tool("torchlint", "check", "--no-cache", *args, cwd=cwd, probe=probe, stdin=stdin)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return _findings(result.stdout)


def _located(findings: list[str]) -> list[str]:
    """`path:line:col CODE` of each finding."""
    return [re.match(r"(\S+:\d+:\d+): (\w+)", line).expand(r"\1 \2") for line in findings]


def _compiles(path: Path) -> bool:
    try:
        compile(path.read_bytes(), str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _assert_same_as_cli(files: list[Path], cwd: Path) -> None:
    names = [str(path.relative_to(cwd)) for path in files]
    flake8, cli = _flake8(*names, cwd=cwd), _cli(*names, cwd=cwd)
    for path, name in zip(files, names):
        ours = [line for line in flake8 if line.startswith(f"{name}:")]
        theirs = [line for line in cli if line.startswith(f"{name}:")]
        if _compiles(path):
            assert ours == theirs, name
        else:
            # flake8 reports files that do not compile itself (E999/E902) and runs no plugin on them.
            assert ours and all(re.search(r": E9(99|02) ", line) for line in ours), (name, ours)
            assert [where.split()[1] for where in _located(theirs)] == ["TL000"], (name, theirs)


def test_flake8_reports_what_the_cli_reports_on_every_fixture():
    fixtures = sorted((ROOT / "fixtures").rglob("*.py"))
    if fixtures:
        _assert_same_as_cli(fixtures, ROOT)
    # fixtures/ is filled by the rule helpers; the snippets keep the comparison meaningful without it.
    assert (ROOT / "fixtures").is_dir()


def test_flake8_on_one_file_of_a_project_reports_what_a_whole_project_run_reports():
    projects = ROOT / "fixtures" / "projects"
    found = {}
    for project in ("loop_in_engine", "set_epoch_in_engine"):  # a finding, and its silent twin
        name = f"{project}/train.py"
        found[project] = _flake8(name, cwd=projects)
        assert found[project] == [line for line in _cli(project, cwd=projects) if line.startswith(f"{name}:")]
    assert _located(found["loop_in_engine"]) == ["loop_in_engine/train.py:19:15 TL006"]
    assert found["set_epoch_in_engine"] == []


def test_flake8_reports_what_the_cli_reports_on_catalog_snippets(tmp_path):
    for name, text in SNIPPETS.items():
        (tmp_path / name).write_bytes(text.encode())
    _assert_same_as_cli(sorted(tmp_path.glob("*.py")), tmp_path)


def test_columns_match_the_cli_with_non_ascii_text_and_multi_line_calls(tmp_path):
    source = textwrap.dedent(
        """\
        s = "é😀"; probe()
        def f():
        \treturn probe(
                1,
            )
        """
    )
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    flake8 = _flake8("train.py", cwd=tmp_path, probe=True)
    assert flake8 == _cli("train.py", cwd=tmp_path, probe=True)
    assert _located(flake8) == ["train.py:1:11 TL900", "train.py:3:9 TL900"]


def test_stdin_is_checked_through_flake8s_lines(tmp_path):
    source = "import os\nprobe()\n"
    flake8 = _flake8("--stdin-display-name=train.py", "-", cwd=tmp_path, probe=True, stdin=source)
    assert flake8 == ["train.py:2:1: TL900 call of probe(): replace it with checked()"]
    assert flake8 == _cli("--stdin-filename=train.py", "-", cwd=tmp_path, probe=True, stdin=source)


def test_flake8_select_ignore_and_noqa_apply(tmp_path):
    (tmp_path / "train.py").write_text("probe()\nprobe()  # noqa: TL900\nprobe()  # noqa: E501\nprobe()  # noqa\n")
    assert _located(_flake8("train.py", cwd=tmp_path, probe=True)) == ["train.py:1:1 TL900", "train.py:3:1 TL900"]
    ignored = _tool("flake8", "--select=TL", "--ignore=TL900", "train.py", cwd=tmp_path, probe=True)
    assert (ignored.returncode, ignored.stdout) == (0, "")
    extended = _tool("flake8", "--extend-ignore=TL9", "train.py", cwd=tmp_path, probe=True)
    assert "TL900" not in extended.stdout
    not_selected = _tool("flake8", "--select=E", "train.py", cwd=tmp_path, probe=True)
    assert "TL900" not in not_selected.stdout


def test_rule_options_come_from_pyproject_and_flake8_config_overrides_them(tmp_path):
    (tmp_path / "train.py").write_text("probe()\nspy()\nwatch()\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint.probe]\nnames = ["watch"]\n')
    assert _located(_flake8("train.py", cwd=tmp_path, probe=True)) == ["train.py:3:1 TL900"]

    (tmp_path / "setup.cfg").write_text("[flake8]\ntorchlint-probe-names = spy, probe\n")
    assert _located(_flake8("train.py", cwd=tmp_path, probe=True)) == ["train.py:1:1 TL900", "train.py:2:1 TL900"]
    on_command_line = _flake8("--torchlint-probe-names=[\"watch\", \"spy\"]", "train.py", cwd=tmp_path, probe=True)
    assert _located(on_command_line) == ["train.py:2:1 TL900", "train.py:3:1 TL900"]


def test_an_invalid_flake8_option_is_a_clear_error_not_a_traceback(tmp_path):
    (tmp_path / "train.py").write_text("probe()\n")
    result = _tool("flake8", "--torchlint-probe-names=[3]", "train.py", cwd=tmp_path, probe=True)
    assert result.returncode == 1
    assert "invalid configuration at probe.names.0: 3 is not of type 'string'" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_an_invalid_pyproject_is_a_tl000_finding(tmp_path):
    (tmp_path / "train.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = "TL"\n')
    findings = _flake8("train.py", cwd=tmp_path)
    assert len(findings) == 1
    assert findings[0].startswith("train.py:1:1: TL000 invalid configuration: ")
    assert "is not of type 'array'" in findings[0]


def test_tl003_reaches_flake8_at_the_discarded_call(tmp_path):
    # Goes green when TL003 (to-result-discarded) lands.
    (tmp_path / "train.py").write_text(SNIPPETS["discarded_to.py"])
    findings = _flake8("train.py", cwd=tmp_path)
    assert _located(findings) == ["train.py:3:1 TL003"]


def test_tl005_range_can_be_widened_in_flake8s_configuration(tmp_path):
    (tmp_path / "train.py").write_text(SNIPPETS["absurd_lr.py"])
    assert _located(_flake8("train.py", cwd=tmp_path)) == ["train.py:3:44 TL005"]
    (tmp_path / ".flake8").write_text("[flake8]\ntorchlint-lr-adam = 1e-7, 20\n")
    assert _flake8("train.py", cwd=tmp_path) == []
