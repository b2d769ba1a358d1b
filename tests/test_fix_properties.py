"""Property tests of `--fix`: on generated programs, programs derived from the fixtures, and
hypothesmith's arbitrary Python, fixing never breaks code.

For every program: the fixed code compiles; fixing it again changes nothing; every line outside
the text edits of the fixes is kept, in order; and each fix's text edits (what JSON, SARIF and
editors get) produce exactly what the transformer makes of that fix alone.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from torchlint import engine, registry
from torchlint.config import Settings
from torchlint.fixes import loop, transform
from torchlint.fixes.text import split_lines

import fix_support

FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures").glob("*.py"))

# Statements that the throwaway rules fix, or that look like it and must be left alone.
SIMPLE = [
    "x.to(d)",
    "y.cuda()",
    "x.to(d); y.to(d)",
    "(x).to(d)",
    "z = f(x)",
    "marker(epoch)",
    "needs_np(a)",
    "breaker()",
    "stubborn()",
    "pass",
    "print('x.to(d)')",
    "self.w.to(d)",
    "x.to(d)  # noqa: TL991",
    "x.to(\n    d,\n)",
]
HEADERS = [
    "for epoch in range(3):",
    "for e in tqdm(range(n)):",
    "for _ in range(n):",
    "for item in items:",
    "if cond:",
    "while running:",
    "def step(x, d):",
    "with ctx:",
    "class C:",
]
# The safe and unsafe throwaway rules whose fixes terminate (TL998 never does, on purpose).
RULES = ("TL991", "TL992", "TL993", "TL994", "TL995")


@st.composite
def blocks(draw, depth: int = 0):
    """A block as (indent level, text) lines; at least one statement."""
    lines: list[tuple[int, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["simple", "simple", "comment", "blank", "compound", "one-line"]))
        if kind == "comment":
            lines.append((0, "# a comment"))
        elif kind == "blank":
            lines.append((0, ""))
        elif kind == "compound" and depth < 3:
            lines.append((0, draw(st.sampled_from(HEADERS))))
            lines.extend((level + 1, text) for level, text in draw(blocks(depth + 1)))
        elif kind == "one-line":
            lines.append((0, f"{draw(st.sampled_from(HEADERS[:6]))} {draw(st.sampled_from(SIMPLE[:5]))}"))
        else:
            lines.append((0, draw(st.sampled_from(SIMPLE))))
    if all(text in ("", "# a comment") for _, text in lines):
        lines.append((0, "pass"))
    return lines


@st.composite
def programs(draw):
    indent = draw(st.sampled_from(["    ", "\t", "  "]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [indent * level + text if text else "" for level, text in draw(blocks())]
    text = newline.join(lines)
    return text + newline if draw(st.booleans()) else text


def check_fix_properties(source: str, unsafe: bool, settings_: Settings) -> loop.FixResult:
    analysis = engine.analyze(source, "train.py", settings_)
    assume(analysis.module is not None)
    initial = loop.candidates_of(analysis, unsafe)
    for candidate in initial:
        # The text edits are exactly this fix applied alone by the transformer.
        if candidate.diagnostic.fix is not None:
            alone = transform.apply(analysis.module, [candidate.fix]).code
            assert fix_support.apply_edits(source, candidate.diagnostic.fix.edits) == alone
    result = loop.fix_analysis(analysis, settings_, unsafe)
    if not result.changed:
        return result
    fixed = result.fixed_text
    compile(fixed, "fixed.py", "exec")
    again = loop.fix_bytes(fixed.encode(), "train.py", settings_, unsafe)
    assert not again.changed and not again.applied, "fixing twice changed the code again"
    initial_keys = {candidate.key for candidate in initial}
    if all(candidate.key in initial_keys for candidate in result.applied):
        assert_only_fix_lines_changed(source, fixed, initial)
    return result


def assert_only_fix_lines_changed(source: str, fixed: str, candidates: list[loop.Candidate]) -> None:
    """Every original line that no fix's edits touch is still there, in order."""
    touched: set[int] = set()
    for candidate in candidates:
        for edit in candidate.diagnostic.fix.edits if candidate.diagnostic.fix else ():
            last = edit.end.line - 1 if edit.end.column == 1 and edit.end.line > edit.start.line else edit.end.line
            if edit.start == edit.end and edit.start.column == 1 and edit.content.endswith(("\n", "\r")):
                continue  # a whole inserted line touches no existing line
            touched.update(range(edit.start.line, last + 1))
    kept = [line for number, line in enumerate(split_lines(source), 1) if number not in touched]
    new_lines = iter(split_lines(fixed))
    missing = [line for line in kept if not any(line == candidate for candidate in new_lines)]
    assert not missing, "lines outside the fixes changed:\n" + "".join(
        difflib.unified_diff(split_lines(source), split_lines(fixed))
    )


@pytest.fixture(scope="module")
def with_test_rules():
    real = registry.all_rules()
    with pytest.MonkeyPatch.context() as patch:
        fix_support.install(patch, *real.values())
        yield


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs(), unsafe=st.booleans())
def test_generated_programs(with_test_rules, source, unsafe):
    check_fix_properties(source, unsafe, Settings(select=RULES))


def _insert_statements(source: str, choices: list[tuple[int, int, str]]) -> str:
    """Insert statements into the blocks of ``source``: (block number, position, statement)."""
    module = cst.parse_module(source)
    blocks_found: list[cst.CSTNode] = []

    class Blocks(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Module, cst.IndentedBlock)):
                blocks_found.append(node)
            return True

    module.visit(Blocks())
    wanted: dict[int, list[tuple[int, str]]] = {}
    for block, position, statement in choices:
        wanted.setdefault(id(blocks_found[block % len(blocks_found)]), []).append((position, statement))

    class Insert(cst.CSTTransformer):
        def on_leave(self, original, updated):
            for position, statement in wanted.get(id(original), ()):
                body = list(updated.body)
                body.insert(position % (len(body) + 1), cst.parse_statement(statement + "\n"))
                updated = updated.with_changes(body=body)
            return updated

    return module.visit(Insert()).code


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fixture=st.sampled_from(FIXTURES),
    choices=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 50), st.sampled_from(SIMPLE)), max_size=4),
    crlf=st.booleans(),
    unsafe=st.booleans(),
)
def test_fixture_derived_programs(with_test_rules, fixture, choices, crlf, unsafe):
    source = _insert_statements(fixture.read_text(encoding="utf-8"), choices)
    if crlf:
        source = source.replace("\n", "\r\n")
    check_fix_properties(source, unsafe, Settings(select=("TL",)))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(generated=hypothesmith.from_grammar(), tail=programs())
def test_arbitrary_python_with_fixable_code_appended(with_test_rules, generated, tail):
    source = generated.rstrip("\\ \t\r\n") + "\n" + tail
    try:
        compile(source, "generated.py", "exec")
    except (SyntaxError, ValueError):
        assume(False)
    check_fix_properties(source, True, Settings(select=("TL",)))


# How notebooks are saved: Jupyter (one-space indent, sorted keys, non-ASCII kept), two spaces,
# one line.
LAYOUTS = [
    lambda document: json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
    lambda document: json.dumps(document, indent=2),
    json.dumps,
]


def _notebook(sources: list[str], as_lines: bool) -> dict:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s.splitlines(True) if as_lines else s}
        for s in sources
    ]
    cells.insert(1, {"cell_type": "markdown", "metadata": {}, "source": "x.to(d) in prose"})
    return {"cells": cells, "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5}


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=programs(),
    cuts=st.lists(st.integers(0, 50), max_size=4),
    layout=st.sampled_from(LAYOUTS),
    as_lines=st.booleans(),
    unsafe=st.booleans(),
)
def test_notebooks_of_generated_programs(with_test_rules, source, cuts, layout, as_lines, unsafe):
    """A program split into cells: fixing the notebook changes only code cells' text, keeps the
    file's JSON layout, leaves code that compiles, and a second fix changes nothing."""
    lines = source.splitlines(keepends=True)
    starts = [number for number, line in enumerate(lines) if line.strip() and not line[0].isspace()]
    bounds = sorted({0, len(lines), *(starts[cut % len(starts)] for cut in cuts if starts)})
    cells = ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]
    settings_ = Settings(select=RULES)
    result = loop.fix_bytes(layout(_notebook(cells, as_lines)).encode(), "nb.ipynb", settings_, unsafe)
    event(f"fixes applied: {min(len(result.applied), 3)}{' or more' if len(result.applied) >= 3 else ''}")
    if not result.changed:
        return
    fixed = [cell for cell in json.loads(result.fixed_text)["cells"] if cell["cell_type"] == "code"]
    sources = ["".join(cell["source"]) if as_lines else cell["source"] for cell in fixed]
    assert result.fixed_text == layout(_notebook(sources, as_lines))
    compile("".join(s if s.endswith(("\n", "\r")) else s + "\n" for s in sources), "nb.py", "exec")
    again = loop.fix_bytes(result.fixed_text.encode(), "nb.ipynb", settings_, unsafe)
    assert not again.changed and not again.applied, "fixing twice changed the notebook again"
