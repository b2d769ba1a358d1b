"""Property tests: generated programs, half-typed code, byte mutations and notebooks go through
the engine with the real rules (plus the probe rule TL900); nothing raises, no rule fails, and
every position is a real place in the file.

Generated programs come from hypothesmith (valid Python from the grammar and from LibCST's node
types), prefixed with `import torch` so that the pre-filter lets every rule run on them.
Mutations start from the realistic training scripts in fixtures/. The example counts below are
sized for the suite's time budget on two cores; see the module constants.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe_rule import ProbeRule
from torchlint import engine, noqa, notebook, registry
from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic, Position

REPO = Path(__file__).resolve().parents[1]
SEEDS = tuple(path.read_bytes() for path in sorted((REPO / "fixtures").rglob("*.py")))

GRAMMAR_PROGRAMS = 300
NODE_PROGRAMS = 40
MUTATIONS = 1000
TRUNCATIONS = 300
RAW_INPUTS = 1000
NOTEBOOK_SPLITS = 100
MAGIC_LOOKALIKES = 300

# hypothesmith compiles candidate programs; their SyntaxWarnings ("'int' object is not callable")
# are about the generated code, not torchlint. `analyze` below turns any warning into an error.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

PROPERTY = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.fixture(scope="module", autouse=True)
def real_rules_and_probe():
    real = registry.all_rules()
    assert len(real) >= 1, "no real rule is registered"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "all_rules", lambda: {**real, ProbeRule.code: ProbeRule})
        yield


def test_there_are_seeds():
    assert len(SEEDS) >= 20, "fixtures/ should hold the realistic training scripts the mutations start from"


def analyze(data: bytes | str, path: str = "t.py") -> list[Diagnostic]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning escaping the engine would reach the user's terminal
        analysis = engine.analyze(data, path, Settings())
    assert_sane(analysis.diagnostics, path, analysis.source.text if analysis.source else None)
    return analysis.diagnostics


def assert_sane(diagnostics: list[Diagnostic], path: str, text: str | None) -> None:
    codes = registry.all_codes()
    lines = python_lines(text) if text is not None else None
    for d in diagnostics:
        assert d.code in codes
        assert d.path == path
        assert "internal error" not in d.message, d.message
        assert d.start.line >= 1 and d.start.column >= 1
        assert d.end >= d.start
        if lines is not None and d.code != engine.CANNOT_CHECK:
            # A finding points into the file: its line exists and its column is on that line.
            assert d.end.line <= len(lines) + 1
            assert d.start.column <= len(lines[d.start.line - 1]) + 1


def python_lines(text: str) -> list[str]:
    """Lines as Python counts them: only \\n, \\r\\n and \\r end one (str.splitlines would also split
    at form feeds and other separators)."""
    return re.split(r"\r\n|\r|\n", text.removesuffix("\n").removesuffix("\r"))


@settings(PROPERTY, max_examples=GRAMMAR_PROGRAMS)
@given(hypothesmith.from_grammar())
def test_programs_from_the_grammar(program):
    analyze("import torch\n" + program)
    assert_unchanged_in_a_cell(program)


@settings(PROPERTY, max_examples=NODE_PROGRAMS)
@given(hypothesmith.from_node())
def test_programs_from_libcst_nodes(program):
    analyze("import torch\n" + program)


INTERESTING = (
    b"(", b")", b"[", b"]", b":", b"\n", b"\r\n", b"\r", b"    ", b"\t", b"\\\n", b"'", b'"""', b",", b"=",
    b"# noqa", b"  # noqa: TL003\n", b"# torchlint: noqa\n", b"\xff", b"\x00", b"\xef\xbb\xbf",
    b"# -*- coding: latin-1 -*-\n", b"lambda: ", b"async ", b"await ", b"yield ", b"\x0c", b"\xc3\xa9",
    b".to(device)", b"model = Net()\n", b"for batch in loader:\n", b"torch.device('cuda')", b"f'{x!r:>{w}}'",
)


@st.composite
def mutated_seed(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(("insert", "insert", "delete", "replace", "duplicate", "truncate")))
        if kind == "insert":
            data[position:position] = draw(st.sampled_from(INTERESTING) | st.binary(min_size=1, max_size=6))
        elif kind == "delete":
            del data[position : position + draw(st.integers(1, 40))]
        elif kind == "replace" and position < len(data):
            data[position] = draw(st.integers(0, 255))
        elif kind == "duplicate":
            start = draw(st.integers(0, len(data)))
            data[position:position] = data[start : start + draw(st.integers(1, 200))]
        else:
            del data[position:]
    return bytes(data)


@settings(PROPERTY, max_examples=MUTATIONS)
@given(mutated_seed())
def test_byte_mutations_of_training_scripts(data):
    analyze(data)


@settings(PROPERTY, max_examples=TRUNCATIONS)
@given(st.sampled_from(SEEDS), st.floats(0, 1), st.floats(0, 1))
def test_half_typed_training_scripts(seed, cut, resume):
    """What an editor sends while someone types: the file up to a point, then the rest of it."""
    text = seed.decode("utf-8")
    start = int(len(text) * cut)
    end = start + int((len(text) - start) * resume * 0.1)
    analyze(text[:start] + text[end:])


@settings(PROPERTY, max_examples=RAW_INPUTS)
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode) | st.text(max_size=400))
def test_arbitrary_bytes_and_text(data):
    analyze(data)
    analyze(data, "nb.ipynb")
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    noqa.file_exemptions(text)
    noqa.line_suppressions(text)


@settings(PROPERTY, max_examples=NOTEBOOK_SPLITS)
@given(st.sampled_from(SEEDS), st.lists(st.floats(0, 1), max_size=6), st.booleans())
def test_a_script_split_into_cells_reports_the_same_findings_in_cells(seed, cuts, crlf):
    """Cells joined give the script back, so each finding of the script appears in its cell."""
    lines = [line + "\n" for line in python_lines(seed.decode("utf-8"))]
    bounds = sorted({0, len(lines), *(int(len(lines) * cut) for cut in cuts)})
    cells = ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]
    sources = [cell.replace("\n", "\r\n") if crlf else cell for cell in cells]
    document = {"cells": [{"cell_type": "code", "metadata": {}, "source": s} for s in sources], "metadata": {}}
    in_notebook = analyze(json.dumps(document), "nb.ipynb")
    as_script = analyze("".join(cells), "nb.py")
    starts = [1]
    for cell in cells[:-1]:
        starts.append(starts[-1] + cell.count("\n"))
    cell_numbers = [n for n, cell in enumerate(cells, start=1) if cell]
    cell_starts = dict(zip(cell_numbers, (s for s, cell in zip(starts, cells) if cell)))
    back = [(d.code, d.message, cell_starts[d.cell] + d.line - 1, d.column) for d in in_notebook]
    assert back == [(d.code, d.message, d.line, d.column) for d in as_script]


# Text for one line of a string literal: no quotes, backslashes, braces (f-strings) or line breaks.
_STRING_LINE = st.text(
    alphabet=st.characters(blacklist_characters="\x00\\'\"{}\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                           blacklist_categories=("Cs",)),
    max_size=20,
)


@st.composite
def python_with_magic_lookalikes(draw) -> str:
    """Valid Python with lines that begin like IPython syntax (`%`, `!`, `?`) inside brackets,
    strings and backslash continuations: the notebook reader must leave them alone."""
    pieces = []
    for _ in range(draw(st.integers(1, 6))):
        inner = draw(_STRING_LINE)
        mark = draw(st.sampled_from("%!?"))
        pieces.append(
            draw(
                st.sampled_from(
                    (
                        "x = (a\n    % b)\n",
                        f's = """\n{mark}{inner}\n"""\n',
                        f"t = '''{inner}\n{mark}{inner}'''\n",
                        "y = a \\\n    % b\n",
                        f"z = [\n    '{inner}',\n]\n",
                        f"w = {{'k': 1,\n    # {mark}{inner}\n}}\n",
                        f"u = '{inner}' # {mark} (\n",
                        "def f():\n    return (1\n        % 2)\n",
                        f"v = f'{{a}}' \\\n    f'{inner}'\n",
                    )
                )
            )
        )
    return "".join(pieces)


@settings(PROPERTY, max_examples=MAGIC_LOOKALIKES)
@given(python_with_magic_lookalikes())
def test_valid_python_in_a_cell_is_left_as_it_is(program):
    assert_unchanged_in_a_cell(program)


def assert_unchanged_in_a_cell(program: str) -> None:
    """The notebook reader neutralises IPython syntax only: valid Python keeps its meaning."""
    loaded = notebook.load(json.dumps({"cells": [{"cell_type": "code", "source": program}]}))
    assert loaded is not None
    assert ast.dump(ast.parse(loaded.text)) == ast.dump(ast.parse(program))


def test_positions_inside_the_file_are_checked():
    # The sanity check itself must catch a position past the end of a line.
    bad = Diagnostic("TL900", "m", "t.py", Position(1, 9), Position(1, 9))
    with pytest.raises(AssertionError):
        assert_sane([bad], "t.py", "x = 1\n")
