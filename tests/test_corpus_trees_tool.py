"""tools/corpus_trees.py: corpus.md's tables, and rebuilding listed trees from a fake mirror."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from mirror_support import commit, drop_blob, mirrored_repo

TOOLS = Path(__file__).resolve().parent.parent / "tools"

LISTING = """# Development corpus

Each folder lives under `/work/corpus/<folder>/`.

| folder | repository | commit | .py | .ipynb |
|---|---|---|---|---|
| proj | someone/project | `{commit}` | 2 | 1 |

## Unseen sets

Under `/work/corpus2/<folder>` and `/work/corpus3/<folder>`:

| set | folder | repository | commit | .py | .ipynb |
|---|---|---|---|---:|---:|
| corpus3 | other | someone/other | `{other}` | 5 | 0 |
"""


@pytest.fixture
def tool(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    return importlib.import_module("corpus_trees")


def test_every_table_row_gets_the_set_its_section_or_column_names(tool):
    entries = tool.parse_corpus(LISTING.format(commit="a" * 40, other="b" * 40))
    assert [(e.set, e.folder, e.repo, e.commit, e.py, e.ipynb) for e in entries] == [
        ("corpus", "proj", "someone/project", "a" * 40, 2, 1),
        ("corpus3", "other", "someone/other", "b" * 40, 5, 0),
    ]


@pytest.mark.parametrize(
    "row, message",
    [
        ("| proj | someone/project | not-a-commit | 2 | 1 |", "without a set or a commit"),
        ("| proj | someone/project | `abcdef1` | two | 1 |", "not numbers"),
    ],
)
def test_a_malformed_row_is_named_by_its_line(tool, row, message):
    text = "Under `/work/corpus/<folder>/`:\n\n| folder | repository | commit | .py | .ipynb |\n|---|---|---|---|---|\n" + row
    with pytest.raises(tool.ListError, match=f"line 5: .*{message}"):
        tool.parse_corpus(text)


def test_the_listed_commit_is_rebuilt_with_its_sources_only(tool, tmp_path, capsys):
    mirror, base = tmp_path / "mirror", tmp_path / "base"
    repo = mirrored_repo(mirror, "someone/project")
    listed = commit(repo, {
        "train.py": "import torch\n", "pkg/model.py": "x = 1\n", "demo.ipynb": "{}", "pyproject.toml": "",
        "README.md": "text", "weights.bin": "data", "big.py": "# a large file the snapshot left out\n",
    }, "listed")
    commit(repo, {"later.py": "y = 2\n"}, "a later commit, not the listed one")
    drop_blob(repo, listed, "big.py")
    listing = tmp_path / "corpus.md"
    listing.write_text(LISTING.format(commit=listed[:12], other="b" * 40))
    args = ["--list", str(listing), "--mirror", str(mirror), "--base", str(base)]

    assert tool.main([*args, "--fetch-list"]) == 0
    assert capsys.readouterr().out.split() == ["someone/other", "b" * 40]

    assert tool.main([*args, "--set", "corpus"]) == 0
    tree = base / "corpus" / "proj"
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()) == [
        "demo.ipynb", "pkg/model.py", "pyproject.toml", "train.py",
    ]
    assert not (tree / ".git").exists()  # measured without one: the same project root as listed
    assert "1 trees listed, 1 present, 0 with problems" in capsys.readouterr().err

    (tree / "pkg" / "model.py").unlink()
    assert tool.main([*args, "--check"]) == 1
    err = capsys.readouterr().err
    assert "corpus/proj: 1 .py and 1 .ipynb, the list says 2 and 1" in err
    assert "corpus3/other" not in err  # absent trees are not checked

    assert tool.main([*args, "--set", "corpus3"]) == 1
    assert "corpus3/other: someone/other " + "b" * 40 + " is not mirrored" in capsys.readouterr().err
