"""Jupyter notebooks: code cells checked as one script, IPython syntax neutralised, diagnostics
addressed as `cell N:line:col`, malformed notebooks reported as TL000, and fixes written into the
cells with the rest of the file kept byte for byte."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from torchlint import engine, notebook
from torchlint.config import Settings
from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position

pytestmark = pytest.mark.usefixtures("probe_rules", "in_tmp")


def code(source, **extra) -> dict:
    return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source, **extra}


def markdown(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def document(*cells: dict, metadata: dict | None = None) -> str:
    return json.dumps({"cells": list(cells), "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5})


def check(data: str | bytes) -> list[tuple[int | None, int, int, str]]:
    return [(d.cell, d.line, d.column, d.code) for d in engine.check_source(data, "nb.ipynb", Settings())]


def python_of(*sources: str) -> str:
    loaded = notebook.load(document(*(code(source) for source in sources)))
    assert loaded is not None
    return loaded.text


def test_diagnostics_are_addressed_by_code_cell():
    data = document(
        markdown("# Training\n"),
        code(["import torch\n", "x = 1\n"]),
        markdown("Now probe."),
        code("y = 2\n\n    \nz = probe(x)"),  # the source as one string, no final newline
        code([]),  # an empty code cell still counts
        code(["if y:\n", "    other()\n"]),
    )
    assert check(data) == [(2, 4, 5, "TL900"), (4, 2, 5, "TL901")]


def test_an_nbformat_3_notebook_is_read_from_its_worksheets():
    """The old format: cells in worksheets, a code cell's text under `input`, headings as cells."""
    sheet = [
        {"cell_type": "heading", "level": 1, "metadata": {}, "source": ["Training"]},
        {"cell_type": "code", "collapsed": False, "input": ["import torch\n", "x = 1"], "language": "python", "outputs": []},
        {"cell_type": "code", "collapsed": False, "input": "probe(x)", "language": "python", "outputs": []},
    ]
    later = [{"cell_type": "code", "input": ["other()\n"], "language": "python", "outputs": []}]
    data = json.dumps({"metadata": {"name": ""}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": sheet}, {"cells": later}]})
    assert check(data) == [(2, 1, 1, "TL900"), (3, 1, 1, "TL901")]
    assert check(json.dumps({"nbformat": 3, "worksheets": []})) == []


def test_cells_are_joined_so_definitions_carry_over():
    data = document(code("def helper():\n    return probe()\n"), code("helper()\nother()\n"))
    assert check(data) == [(1, 2, 12, "TL900"), (2, 2, 1, "TL901")]


def test_text_output_uses_ruffs_cell_notation(run_cli):
    Path("nb.ipynb").write_text(document(markdown("x"), code("x = 1\n"), code("probe()\n")))
    result = run_cli("nb.ipynb")
    assert result.stdout == "nb.ipynb:cell 2:1:1: TL900 [*] call of probe(): replace it with checked()\n"
    assert result.exit_code == 1


def test_notebooks_are_found_in_folders_and_cached_with_their_cells(run_cli):
    Path("nbs").mkdir()
    Path("nbs/explore.ipynb").write_text(document(code("import os\n"), code("x = 1\nprobe()\n")))
    first = run_cli("nbs")
    second = run_cli("nbs")  # served from the result cache
    assert first.stdout == second.stdout == "nbs/explore.ipynb:cell 2:2:1: TL900 [*] call of probe(): replace it with checked()\n"
    assert Path(".torchlint_cache").is_dir()


@pytest.mark.parametrize(
    ("cell", "python"),
    [
        ("%matplotlib inline\nx = 1\n", "pass\nx = 1\n"),
        ("!pip install timm\n", "pass\n"),
        ("files = !ls *.pt\n", "files = ...\n"),
        ("a, b = %sx echo 1 2\n", "a, b = ...\n"),
        ("torch.nn.Linear?\n", "pass\n"),
        ("?torch.nn\n", "pass\n"),
        ("torch.nn.Linear??\n", "pass\n"),
        ("torch.*Tensor?\n", "pass\n"),
        ("if x:\n    %time f()\n", "if x:\n    pass\n"),
        ("!pip install \\\n    timm \\\n    torch\nx = 1\n", "pass\n\n\nx = 1\n"),
        ("%%time\nx = 1\n", "\nx = 1\n"),
        ("%%capture out\nprobe()\n", "\nprobe()\n"),
        ("%%capture\n%time probe()\n", "\npass\n"),
        # Not magics: `%` and `!` inside brackets, strings or after a backslash are Python.
        ("y = (a\n     % b)\n", "y = (a\n     % b)\n"),
        ('s = """\n!not shell\n%not magic\n"""\n', 's = """\n!not shell\n%not magic\n"""\n'),
        ("y = a \\\n    % b\n", "y = a \\\n    % b\n"),
        ("d = {\n  'k': 1}\n!ls\n", "d = {\n  'k': 1}\npass\n"),
        ("x = 'it''s' # (\n%ls\n", "x = 'it''s' # (\npass\n"),
        ("x != y\n", "x != y\n"),
        ("x %= 3\n", "x %= 3\n"),
    ],
)
def test_ipython_syntax_is_neutralised_line_for_line(cell, python):
    assert python_of(cell) == python


@pytest.mark.parametrize(
    "cell",
    ["ls -l data.txt", "pip install timm==0.9.16\n", "  cd ../data", "\n\ncd data # go there\n",
     "time train(model)", "load_ext autoreload", "matplotlib inline", "run -i prepare.py", "mkdir -p runs/exp1"],
)
def test_a_one_line_cell_ipython_runs_as_an_automagic_is_neutralised(cell):
    assert python_of(cell).rstrip("\n").endswith("pass")
    assert check(document(code(cell), code("probe()\n"))) == [(2, 1, 1, "TL900")]


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        # Python wins when the line is Python: a name, a call, an attribute, arithmetic.
        (["pwd", "cd", "time.sleep(1)", "run(model)", "ls-l"], []),
        # IPython runs an automagic only in a one-line cell: elsewhere the line is a syntax error.
        (["x = 1\ncd data"], [(1, 2, 4, "TL000")]),
        (["cd data\n\n"], [(1, 1, 4, "TL000")]),
        # An assignment to a magic's name is Python, and so is a word that is not a magic.
        (["cd = /content"], [(1, 1, 6, "TL000")]),
        (["train model"], [(1, 1, 7, "TL000")]),
    ],
)
def test_lines_ipython_would_not_run_as_automagics_stay_python(cells, expected):
    assert check(document(*(code(cell) for cell in cells))) == expected


def test_a_notebook_with_automagic_shell_lines_is_checked_from_disk(run_cli):
    Path("explore.ipynb").write_text(
        document(
            markdown("# Setup"),
            code(["pip install timm\n"]),
            code("ls -l data/train.csv"),
            code(["import torch\n", "x = torch.ones(2)\n", "probe()\n"]),
            code("pwd"),
            metadata={"kernelspec": {"language": "python", "name": "python3"}},
        )
    )
    result = run_cli("explore.ipynb")
    assert result.stdout == "explore.ipynb:cell 3:3:1: TL900 [*] call of probe(): replace it with checked()\n"


@pytest.mark.parametrize(
    "magic", ["%%bash", "%%writefile train.sh", "%%html", "%%javascript", "  %%script bash", "%%capture\n%%bash"]
)
def test_cells_run_by_other_cell_magics_are_left_out(magic):
    data = document(code(f"{magic}\necho probe()\nfor x in (\n"), code("other()\n"))
    assert check(data) == [(2, 1, 1, "TL901")]


def test_crlf_line_endings_in_cells():
    data = document(code("x = 1\r\n%ls\r\nprobe()\r\n"))
    assert check(data) == [(1, 3, 1, "TL900")]


def test_a_cell_indented_as_a_whole_is_run_as_ipython_dedents_it():
    # IPython removes the first non-blank line's indentation from every line that has it.
    data = document(code("\n  x = 1\n  if x:\n      probe()\nother()\n"), code("\tprobe()\n"))
    assert check(data) == [(1, 4, 7, "TL900"), (1, 5, 1, "TL901"), (2, 1, 2, "TL900")]


def test_a_syntax_error_is_reported_in_its_cell():
    data = document(code("x = 1\n"), code("y = 2\ndef f(:\n    pass\n"), code("probe()\n"))
    assert check(data) == [(2, 2, 7, "TL000")]


def test_noqa_and_file_exemptions_in_cells():
    assert check(document(code("probe()  # noqa: TL900\n"), code("other()\n"))) == [(2, 1, 1, "TL901")]
    assert check(document(code("probe()\n"), code("# torchlint: noqa\nother()\n"))) == []


@pytest.mark.parametrize(
    "metadata",
    [{"kernelspec": {"language": "R", "name": "ir"}}, {"language_info": {"name": "julia"}}],
)
def test_notebooks_of_other_languages_are_not_checked(metadata):
    assert check(document(code("library(probe)\nprobe()\n"), metadata=metadata)) == []


def test_python_notebooks_by_metadata():
    metadata = {"kernelspec": {"language": "python", "name": "python3"}, "language_info": {"name": "python"}}
    assert check(document(code("probe()\n"), metadata=metadata)) == [(1, 1, 1, "TL900")]


def test_a_notebook_without_code_cells():
    assert check(document(markdown("# Only prose"))) == []
    assert check(document()) == []


NO_CELLS = "invalid notebook: no list of cells (nbformat 4 `cells`, or nbformat 3 `worksheets`)"


@pytest.mark.parametrize(
    ("data", "message", "position"),
    [
        ('{"cells": [', "invalid notebook: not JSON (Expecting value)", (1, 12)),
        ("", "invalid notebook: not JSON (Expecting value)", (1, 1)),
        ("[1, 2]", NO_CELLS, (1, 1)),
        ('{"worksheets": {"cells": []}, "nbformat": 3}', NO_CELLS, (1, 1)),
        ('{"worksheets": [{"cells": {}}], "nbformat": 3}', NO_CELLS, (1, 1)),
        ('{"cells": {"a": 1}}', NO_CELLS, (1, 1)),
        ('{"cells": [1]}', "invalid notebook: cell 1 is not a cell object", (1, 1)),
        ('{"cells": [{"source": "x"}]}', "invalid notebook: cell 1 is not a cell object", (1, 1)),
        ('{"cells": [{"cell_type": "code", "source": [1]}]}', "invalid notebook: the source of cell 1 is not text", (1, 1)),
        ('{"cells": [{"cell_type": "code", "source": null}]}', "invalid notebook: the source of cell 1 is not text", (1, 1)),
        ("[" * 100_000 + "]" * 100_000, "invalid notebook: not JSON (maximum recursion depth exceeded while decoding a JSON array from a unicode string)", (1, 1)),
    ],
)
def test_a_malformed_notebook_is_a_tl000(data, message, position):
    diagnostics = engine.check_source(data, "nb.ipynb", Settings())
    assert [(d.code, d.message, (d.line, d.column), d.cell) for d in diagnostics] == [("TL000", message, position, None)]


def test_undecodable_and_binary_notebooks_are_a_tl000():
    for data in (b"\xff\xfe\x00garbage", b'{"cells": "\xe9"}'):
        (diagnostic,) = engine.check_source(data, "nb.ipynb", Settings())
        assert diagnostic.code == "TL000" and diagnostic.message.startswith("invalid notebook: not JSON")


def jupyter(*cells: dict) -> str:
    """A notebook as Jupyter saves it: one-space indent, keys sorted, non-ASCII kept."""
    data = {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(
    "dump",
    [
        lambda data: json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n",  # Jupyter
        lambda data: json.dumps(data, indent=2) + "\n",
        lambda data: json.dumps(data, indent="\t", ensure_ascii=False),
        json.dumps,  # one line
        lambda data: json.dumps(data, separators=(",", ":")),
    ],
)
def test_fix_rewrites_only_the_cell_and_keeps_the_json_layout(run_cli, dump):
    cells = [
        code(["x = 'é'\n", "probe()\n", "y = 2"], metadata={"z": 1, "a": [1.5, None]}),
        markdown("probe() in prose"),
        code("%time probe()\nprobe(1)"),
    ]
    data = {"metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5, "cells": cells}
    Path("nb.ipynb").write_text(dump(data), encoding="utf-8")
    result = run_cli("--fix", "nb.ipynb")
    assert result.exit_code == 0 and "Found 2 findings (2 fixed, 0 remaining)" in result.stderr
    cells[0]["source"] = ["x = 'é'\n", "checked()\n", "y = 2"]  # the text stays a list of lines
    cells[2]["source"] = "%time probe()\nchecked(1)"  # a neutralised line is left as it is
    assert Path("nb.ipynb").read_text(encoding="utf-8") == dump(data)


def test_a_fixed_notebook_has_nothing_left_to_fix(run_cli):
    Path("nb.ipynb").write_text(jupyter(code("probe()\n\nprobe()"), code(["probe()\n", "probe()"])))
    run_cli("--fix", "nb.ipynb")
    fixed = Path("nb.ipynb").read_text()
    assert "probe" not in fixed
    result = run_cli("--fix", "nb.ipynb")
    assert Path("nb.ipynb").read_text() == fixed and result.stdout == ""


def test_diff_of_a_notebook_shows_the_changed_cells_and_writes_nothing(run_cli):
    original = jupyter(code("probe()\n"), code(["x = 1\n", "probe()"]), code("y = 2\n"))
    Path("nb.ipynb").write_text(original)
    result = run_cli("--diff", "nb.ipynb")
    assert result.exit_code == 1 and Path("nb.ipynb").read_text() == original
    assert result.stdout == (
        "--- nb.ipynb:cell 1\n+++ nb.ipynb:cell 1\n@@ -1 +1 @@\n-probe()\n+checked()\n"
        "--- nb.ipynb:cell 2\n+++ nb.ipynb:cell 2\n@@ -1,2 +1,2 @@\n x = 1\n-probe()\n\\ No newline at end of file\n"
        "+checked()\n\\ No newline at end of file\n"
    )


def test_a_notebook_whose_layout_would_change_is_not_rewritten(run_cli):
    original = jupyter(code("probe()\n")).replace('"nbformat": 4', '"nbformat":   4')
    Path("nb.ipynb").write_text(original)
    result = run_cli("--fix", "nb.ipynb")
    assert Path("nb.ipynb").read_text() == original
    assert "TL900 fix not applied: the notebook's JSON is laid out in a way that rewriting it would not keep" in result.stderr
    assert result.stdout == "nb.ipynb:cell 1:1:1: TL900 [*] call of probe(): replace it with checked()\n"


def test_a_fix_is_offered_only_on_lines_as_written_in_its_cell():
    cells = code("!ls\nprobe()\n"), code("  probe()\n  y = 1\n"), code("x = 1\r\nprobe()"), code("z = 1\nprobe()")
    source = notebook.load(document(*cells))
    assert source is not None
    fix = Fix("f", Applicability.SAFE, (Edit(Position(2, 1), Position(2, 6), "checked"),))
    assert source.cell_fix(fix, 1) == Fix("f", Applicability.SAFE, (Edit(Position(2, 1), Position(2, 6), "checked"),))
    on_a_magic = Fix("f", Applicability.SAFE, (Edit(Position(1, 1), Position(2, 6), "checked"),))
    assert source.cell_fix(on_a_magic, 1) is None
    into_the_next_cell = Fix("f", Applicability.SAFE, (Edit(Position(2, 1), Position(3, 2), ""),))
    assert source.cell_fix(into_the_next_cell, 1) is None
    whole_last_line = Fix("f", Applicability.SAFE, (Edit(Position(2, 1), Position(3, 1), ""),))
    assert source.cell_fix(whole_last_line, 1) == whole_last_line
    in_a_later_cell = Fix("f", Applicability.SAFE, (Edit(Position(8, 1), Position(8, 6), "checked"),))
    assert source.cell_fix(in_a_later_cell, 4) == replace(
        in_a_later_cell, edits=(Edit(Position(2, 1), Position(2, 6), "checked"),)
    )
    dedented = Fix("f", Applicability.SAFE, (Edit(Position(3, 1), Position(3, 6), "checked"),))
    assert source.cell_fix(dedented, 2) is None
    carriage_returns = Fix("f", Applicability.SAFE, (Edit(Position(6, 1), Position(6, 6), "checked"),))
    assert source.cell_fix(carriage_returns, 3) is None


def test_unsafe_and_cell_fixes_in_json_output(run_cli):
    Path("nb.ipynb").write_text(jupyter(code("x = 1\n"), code(["y = 2\n", "probe()"])))
    (entry,) = json.loads(run_cli("--format", "json", "nb.ipynb").stdout)
    assert entry["cell"] == 2 and (entry["line"], entry["column"]) == (2, 1)
    assert entry["fix"]["edits"] == [
        {"line": 2, "column": 1, "end_line": 2, "end_column": 6, "content": "checked"}
    ]


def test_an_end_position_in_a_later_cell_is_clamped_to_the_start():
    source = notebook.load(document(code("x = 1\n"), code("y = 2\n")))
    assert source.locate(Position(2, 3)) == (2, Position(1, 3))
    spanning = Diagnostic("TL900", "m", "nb.ipynb", Position(1, 1), Position(2, 4))
    (moved,) = notebook.to_cells([spanning], source)
    assert (moved.cell, moved.start, moved.end) == (1, Position(1, 1), Position(1, 1))


def test_a_line_a_syntax_error_names_is_given_as_the_line_of_its_cell():
    data = document(code("import torch\nx = 1\n"), code("y = 2\n\ndef forward(self):\n"), code("z = 3\n"))
    (error,) = engine.check_source(data, "nb.ipynb", Settings())
    assert error.code == "TL000" and error.cell == 3
    assert error.message.endswith("after function definition on line 3 of cell 2")
