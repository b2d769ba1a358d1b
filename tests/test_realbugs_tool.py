"""tools/realbugs.py: list parsing, matching, tree extraction and one end-to-end run on a fake mirror."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from mirror_support import commit, drop_blob, mirrored_repo

TOOLS = Path(__file__).resolve().parent.parent / "tools"

ENTRY = """
[[bug]]
id = "{id}"
repo = "someone/project"
fix = "{fix}"
buggy = "{buggy}"
path = "pkg/train.py"
line = 4
also = [20, "pkg/model.py:12"]
rule = "TL003"
kind = "bare x.to(device)"
fixed_silent = {silent}
"""


@pytest.fixture
def tool(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("realbugs")


def finding(code: str, path: str, line: int) -> dict:
    return {"code": code, "path": path, "line": line, "message": "m"}


def test_list_fields_become_anchors_in_their_files(tool):
    [bug] = tool.parse_bugs(ENTRY.format(id="a", fix="f" * 40, buggy="b" * 40, silent="true"))
    assert [str(a) for a in bug.anchors] == ["pkg/train.py:4", "pkg/train.py:20", "pkg/model.py:12"]
    assert bug.buggy_files == ["pkg/model.py", "pkg/train.py"]
    assert bug.fixed_files == ["pkg/model.py", "pkg/train.py"]


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[bug]]\nid = "a"\nrepo = "r"\n', "missing fix"),
        (ENTRY.format(id="a", fix="f", buggy="b", silent="true") + 'color = "red"\n', "unknown field(s) color"),
        (ENTRY.format(id="a", fix="f", buggy="b", silent="true") * 2, "duplicate id"),
        (ENTRY.format(id="a", fix="f", buggy="b", silent="true").replace('"pkg/model.py:12"', '"model.py"'), "'path:line'"),
    ],
)
def test_malformed_lists_name_the_entry_and_field(tool, text, message):
    with pytest.raises(tool.ListError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tool.parse_bugs(text)


def test_a_finding_matches_within_tolerance_of_any_anchor_in_its_own_file(tool):
    [bug] = tool.parse_bugs(ENTRY.format(id="a", fix="f", buggy="b", silent="true"))
    assert tool.matching_finding(bug, [finding("TL003", "pkg/train.py", 4 + tool.TOLERANCE + 1)]) is None
    assert tool.matching_finding(bug, [finding("TL004", "pkg/train.py", 4)]) is None
    # Line 12 is an anchor of model.py only, not of train.py.
    assert tool.matching_finding(bug, [finding("TL003", "pkg/train.py", 12)]) is None
    near, nearest = finding("TL003", "./pkg/train.py", 7), finding("TL003", "pkg/train.py", 21)
    assert tool.matching_finding(bug, [near, nearest]) is nearest
    assert tool.matching_finding(bug, [finding("TL003", "pkg/model.py", 14)]) is not None


def test_fixed_findings_are_false_positives_only_when_the_fix_must_be_silent(tool):
    [silent] = tool.parse_bugs(ENTRY.format(id="a", fix="f", buggy="b", silent="true"))
    [partial] = tool.parse_bugs(ENTRY.format(id="b", fix="f", buggy="b", silent="false"))
    hits = [finding("TL003", "pkg/model.py", 40), finding("TL003", "other.py", 1), finding("TL001", "pkg/train.py", 1)]
    assert tool.fixed_findings(silent, hits) == hits[:1]
    assert tool.Outcome(silent, fixed_hits=hits[:1]).false_positives == hits[:1]
    assert tool.Outcome(partial, fixed_hits=hits[:1]).false_positives == []


BUGGY = """import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.zeros(3)
x.to(device)
print(x.sum())
"""


def test_end_to_end_on_a_fake_mirror_with_a_missing_blob(tool, tmp_path, capsys):
    repo = mirrored_repo(tmp_path / "mirror", "someone/project")
    buggy = commit(repo, {"pkg/train.py": BUGGY, "pkg/model.py": "import torch\n", "data/big.bin": "weights"}, "bug")
    fix = commit(repo, {"pkg/train.py": BUGGY.replace("x.to(device)", "x = x.to(device)")}, "fix")
    # A snapshot may lack its largest blobs: the tree is still extracted, without them.
    drop_blob(repo, buggy, "data/big.bin")
    assert tool.extract_tree(repo / ".git", buggy, tmp_path / "tree") == ["data/big.bin"]
    assert (tmp_path / "tree" / "pkg" / "train.py").read_text() == BUGGY
    assert (tmp_path / "tree" / ".git").is_dir()  # the root of a clone, as torchlint finds it

    listing = tmp_path / "bugs.toml"
    listing.write_text(ENTRY.format(id="fake", fix=fix, buggy=buggy, silent="true"))
    report, rows = tmp_path / "report.md", tmp_path / "out.json"
    args = ["--list", str(listing), "--mirror", str(tmp_path / "mirror"), "--report", str(report), "--json", str(rows)]
    assert tool.main(args) == 0

    [outcome] = json.loads(rows.read_text())
    assert outcome["found"]["line"] == 4 and outcome["fixed_hits"] == [] and outcome["error"] == ""
    assert "| TL003 | 1 | 1 | 100% | 0 | 0 |" in capsys.readouterr().out
    assert "**fake** `pkg/train.py:4` TL003" in report.read_text()
    assert tool.main(["--list", str(listing), "--fetch-list"]) == 0
    assert capsys.readouterr().out.split() == ["someone/project", *sorted([buggy, fix])]
