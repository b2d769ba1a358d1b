"""Output formats: text, JSON, SARIF 2.1.0 (validated against the official schema) and GitHub
workflow commands (escaped)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchlint import output
from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from sarif_support import validate_sarif

pytestmark = pytest.mark.usefixtures("probe_rules", "in_tmp")



@pytest.fixture
def project(tmp_path):
    """Files that give a finding with a fix, a finding in a notebook cell and a syntax error."""
    (tmp_path / "src dir").mkdir()
    (tmp_path / "src dir" / "train,v2.py").write_text("import os\nprobe()\nother()\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": ["x = 1\n", "probe()\n"]}]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return tmp_path


def sample(**changes) -> Diagnostic:
    values = dict(
        code="TL900",
        message="call of probe(): replace it with checked()",
        path="train.py",
        start=Position(3, 5),
        end=Position(3, 12),
        severity=Severity.WARNING,
        fix=Fix("Rename to checked()", Applicability.SAFE, (Edit(Position(3, 5), Position(3, 10), "checked"),)),
    )
    values.update(changes)
    return Diagnostic(**values)


def test_text_format_is_one_line_per_finding_like_ruff(run_cli, project):
    result = run_cli(".", "--format", "text")
    assert result.stdout.splitlines() == [
        "broken.py:1:7: TL000 SyntaxError: invalid syntax",
        "nb.ipynb:cell 1:2:1: TL900 [*] call of probe(): replace it with checked()",
        "src dir/train,v2.py:2:1: TL900 [*] call of probe(): replace it with checked()",
        "src dir/train,v2.py:3:1: TL901 [*] call of other(): replace it with checked()",
    ]
    assert result.stderr.splitlines()[-2:] == ["Found 4 findings in 3 files.", "[*] 3 fixable with the `--fix` option."]


def test_text_format_keeps_each_finding_on_one_line():
    quoting = sample(message="'batch.to(\n    device,\n)' discards its result", fix=None)
    assert output.render("text", [quoting]) == "train.py:3:5: TL900 'batch.to( device, )' discards its result\n"


def test_json_format_fields(run_cli, project):
    entries = json.loads(run_cli(".", "--format", "json").stdout)
    assert [(e["path"], e["code"]) for e in entries] == [
        ("broken.py", "TL000"),
        ("nb.ipynb", "TL900"),
        ("src dir/train,v2.py", "TL900"),
        ("src dir/train,v2.py", "TL901"),
    ]
    required = {"code", "message", "path", "line", "column", "end_line", "end_column", "severity", "fix"}
    assert all(required <= entry.keys() for entry in entries)
    syntax, cell, probe, _ = entries
    assert syntax["severity"] == "error" and syntax["fix"] is None and (syntax["line"], syntax["column"]) == (1, 7)
    assert cell["cell"] == 1 and (cell["line"], cell["column"], cell["end_line"], cell["end_column"]) == (2, 1, 2, 8)
    # a fix in a notebook counts lines and columns in its cell, like the finding (ruff's way)
    assert cell["fix"]["edits"] == [{"line": 2, "column": 1, "end_line": 2, "end_column": 6, "content": "checked"}]
    assert "cell" not in probe
    assert probe == {
        "code": "TL900",
        "message": "call of probe(): replace it with checked()",
        "path": "src dir/train,v2.py",
        "line": 2,
        "column": 1,
        "end_line": 2,
        "end_column": 8,
        "severity": "warning",
        "fix": {
            "message": "Rename to checked()",
            "applicability": "safe",
            "edits": [{"line": 2, "column": 1, "end_line": 2, "end_column": 6, "content": "checked"}],
        },
    }


def test_json_of_nothing_is_an_empty_list(run_cli, project):
    assert json.loads(run_cli("--format", "json", "--select", "TL900", "--ignore", "TL900", "src dir").stdout) == []


def test_sarif_is_valid_against_the_official_schema(run_cli, project):
    document = json.loads(run_cli(".", "--format", "sarif").stdout)
    validate_sarif(document)
    run = document["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["TL000", "TL900", "TL900", "TL901"]
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert re.fullmatch(r"[A-Za-z0-9._~%/,:;=!$&'()*+@-]+", uri), uri  # a URI reference: no raw spaces
    assert run["results"][2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src%20dir/train%2Cv2.py"


def test_sarif_rule_metadata_comes_from_the_rule_pages(run_cli, project):
    document = json.loads(run_cli(".", "--format", "sarif").stdout)
    rules = {rule["id"]: rule for rule in document["runs"][0]["tool"]["driver"]["rules"]}
    assert list(rules) == ["TL000", "TL900", "TL901"]
    page = (Path(__file__).resolve().parents[1] / "rules" / "TL000.md").read_text(encoding="utf-8")
    assert rules["TL000"]["help"]["markdown"] == page
    assert rules["TL000"]["fullDescription"]["text"].startswith("Reports a file torchlint could not analyse")
    assert rules["TL000"]["defaultConfiguration"]["level"] == "error"
    assert rules["TL900"]["shortDescription"]["text"] == "a call of a probe function (test-only rule)"
    assert rules["TL900"]["helpUri"].endswith("/rules/TL900.md")


def test_sarif_fixes_and_notebook_cells(run_cli, project):
    results = json.loads(run_cli(".", "--format", "sarif").stdout)["runs"][0]["results"]
    notebook, probe = results[1], results[2]
    assert notebook["message"]["text"] == "cell 1:2:1: call of probe(): replace it with checked()"
    assert notebook["properties"] == {"cell": 1}
    # Lines of a notebook's JSON are not lines of its code: no region, and no fix (whose
    # replacements would need regions).
    assert "region" not in notebook["locations"][0]["physicalLocation"]
    assert "fixes" not in notebook
    assert probe["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 8,
    }
    replacement = probe["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement == {
        "deletedRegion": {"startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 6},
        "insertedContent": {"text": "checked"},
    }


def test_sarif_of_directly_built_diagnostics_is_valid():
    diagnostics = [
        sample(),
        sample(code="TL000", message="SyntaxError: x", fix=None, severity=Severity.ERROR, path="/abs/pa th.py"),
        sample(fix=None, cell=4, path="a b.ipynb"),
        sample(fix=None, confirmation={"status": "confirmed", "evidence": "ran 3 steps"}),
    ]
    document = json.loads(output.render("sarif", diagnostics))
    validate_sarif(document)
    results = document["runs"][0]["results"]
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "file:///abs/pa%20th.py"
    assert results[3]["properties"] == {"confirmation": {"status": "confirmed", "evidence": "ran 3 steps"}}
    validate_sarif(json.loads(output.render("sarif", [])))


def test_github_annotations(run_cli, project):
    lines = run_cli(".", "--format", "github").stdout.splitlines()
    assert lines == [
        "::error file=broken.py,line=1,col=7,endLine=1,endColumn=7,title=torchlint (TL000)::TL000 SyntaxError: invalid syntax",
        "::warning file=nb.ipynb,title=torchlint (TL900)::cell 1:2:1: TL900 call of probe(): replace it with checked()",
        "::warning file=src dir/train%2Cv2.py,line=2,col=1,endLine=2,endColumn=8,title=torchlint (TL900)"
        "::TL900 call of probe(): replace it with checked()",
        "::warning file=src dir/train%2Cv2.py,line=3,col=1,endLine=3,endColumn=8,title=torchlint (TL901)"
        "::TL901 call of other(): replace it with checked()",
    ]


def test_github_escapes_properties_and_data():
    diagnostic = sample(path="dir:a,b%c.py", message="100% sure,\nreally: yes\r", fix=None)
    assert output.render("github", [diagnostic]) == (
        "::warning file=dir%3Aa%2Cb%25c.py,line=3,col=5,endLine=3,endColumn=12,title=torchlint (TL900)"
        "::TL900 100%25 sure,%0Areally: yes%0D\n"
    )


def test_every_format_renders_nothing_as_no_findings():
    assert output.render("text", []) == ""
    assert output.render("github", []) == ""
    assert json.loads(output.render("json", [])) == []
    assert json.loads(output.render("sarif", []))["runs"][0]["results"] == []


def test_output_format_is_an_alias_and_unknown_formats_are_exit_2(run_cli, project):
    assert run_cli("--output-format", "json", "broken.py").stdout.startswith("[")
    result = run_cli("--format", "xml", "broken.py")
    assert result.exit_code == 2
    assert "'xml' is not one of" in result.stderr
