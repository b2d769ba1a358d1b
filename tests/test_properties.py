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
import libcst as cst
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from probe_rule import ProbeRule
from torchlint import engine, noqa, notebook, registry
from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic, Position
from torchlint.model import nesting_depth

REPO = Path(__file__).resolve().parents[1]
SEEDS = tuple(path.read_bytes() for path in sorted((REPO / "fixtures").rglob("*.py")))

GRAMMAR_PROGRAMS = 300
NODE_PROGRAMS = 40
MUTATIONS = 1000
TRUNCATIONS = 300
RAW_INPUTS = 1000
NOTEBOOK_SPLITS = 100
MAGIC_LOOKALIKES = 300
RECURSIVE_PROGRAMS = 100
CIRCULAR_PROGRAMS = 100

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
        if lines is not None and d.code != engine.CANNOT_CHECK and d.cell is None:
            # A finding points into the file: its line exists and its column is on that line.
            # (A notebook's findings count lines of cells: a notebook's source is its JSON.)
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
    # Cells start at unindented lines: IPython removes the indentation a cell starts with, so a
    # cell opening inside a block means something else (tests/test_notebook.py checks that).
    unindented = [n for n, line in enumerate(lines) if line.strip() and not line[0].isspace()]
    # (an empty seed has no unindented line: one cell)
    bounds = sorted({0, len(lines), *(unindented[int(cut * (len(unindented) - 1))] for cut in cuts if unindented)})
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
    script_lines = "".join(cells).splitlines()
    ends = [start + cell.count("\n") - 1 for start, cell in zip(starts, cells)]

    def displayed(d):
        """A conversion ending a cell at the top level: Jupyter shows its value, so the notebook
        differs from the script there on purpose (no TL003; the tensor it leaves unmoved may be
        TL004's later). Such splits are left out; tests/test_rule_tl003.py checks that case."""
        if d.code != "TL003" or script_lines[d.line - 1][:1].isspace():
            return False
        cell_end = next(end for end in ends if end >= d.line)
        rest = script_lines[d.end.line : cell_end]
        return all(not line.strip() or line.lstrip().startswith("#") for line in rest)

    assume(not any(displayed(d) for d in as_script))
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
    """The notebook reader neutralises IPython syntax only: valid Python keeps its meaning.

    A cell is a list of lines, so its line endings are \\n; the comparison is with the program
    so written. (CPython accepts a backslash before a final \\r\\n but not before a final \\n,
    so a few generated programs are valid only with their original endings.)"""
    written = "\n".join(python_lines(program))
    try:
        expected = ast.dump(ast.parse(written))
    except SyntaxError:
        assume(False)
    loaded = notebook.load(json.dumps({"cells": [{"cell_type": "code", "source": program}]}))
    assert loaded is not None
    assert ast.dump(ast.parse(loaded.text)) == expected


HELPERS = ("walk", "step", "collect")
CALL_ARGUMENTS = ("n, s", "s[n], s", "n - 1, s", "*s", "n, s=s", "**s")


@st.composite
def recursive_program(draw) -> str:
    """Training code whose values flow through recursion: recursive and mutually recursive
    helpers, their results unpacked into tuples, generators, methods and classes that call each
    other (and a class hierarchy with a cycle, which Python accepts until it runs)."""
    helpers = draw(st.lists(st.sampled_from(HELPERS), min_size=1, max_size=3, unique=True))

    def call() -> str:
        callee = draw(st.sampled_from([*helpers, "self.walk", "Data(n, s).walk", "Data.walk"]))
        return f"{callee}({draw(st.sampled_from(CALL_ARGUMENTS))})"

    def statement(indent: str) -> str:
        return indent + draw(
            st.sampled_from(
                (
                    f"return {call()}",
                    f"return n, {call()}",
                    f"a, b = {call()}\n{indent}return b, a",
                    f"yield {call()}",
                    f"yield from {call()}",
                    f"return {call()}[0]",
                    f"return [x for x in {call()}]",
                    f"x = {call()}\n{indent}return x.to('cuda')",
                    f"for a, b in {call()}:\n{indent}    return a",
                    f"while n:\n{indent}    n, s = {call()}",
                    f"return (yield {call()})",
                    f"lr = {call()}\n{indent}return torch.optim.Adam([], lr=lr)",
                    f"model, device = {call()}\n{indent}return model.to(device), device",
                    f"sampler, loader = {call()}\n{indent}sampler.set_epoch(n)\n{indent}return sampler, loader",
                    f"x, (y, z) = {call()}\n{indent}return (x, y), z",
                )
            )
        )

    lines = ["import torch", ""]
    for helper in helpers:
        lines.append(f"def {helper}(n, s):")
        if draw(st.booleans()):
            lines.append("    if n not in s: return n, s")
        lines.extend(statement("    ") for _ in range(draw(st.integers(1, 2))))
    lines += [
        "class Data(torch.utils.data.Dataset):",
        "    def __init__(self, n, s):",
        f"        self.n, self.s = {call()}",
        "    def __getitem__(self, i):",
        f"        {draw(st.sampled_from(('return self[i - 1], i', 'x, y = self[i]', 'return self.walk(i, {})')))}",
        "    def walk(self, n, s):",
        statement("        "),
        "class Net(torch.nn.Module):",
        "    def forward(self, x):",
        f"        return self.{draw(st.sampled_from(('helper', 'forward')))}(x)",
        "    def helper(self, x):",
        f"        h, y = {draw(st.sampled_from(('self.forward(x), x', 'self.helper(x)', 'self(x)', 'super().forward(x)')))}",
        "        return y, h",
    ]
    if draw(st.booleans()):
        lines += ["class Base(Net):", "    pass", "class Net(Base):", "    pass"]
    lines += ["n, s, cur = 0, {}, None", f"root, cur = {call()}"]
    uses = (
        "device = cur['d'] if cur else 'cpu'",
        f"device = {call()}",
        "model = Net().to(device)",
        f"for a, b in {call()}:\n    model(a)",
        f"first, *rest = {call()}",
        "loader = torch.utils.data.DataLoader(Data(n, s), batch_size=cur)\nfor x, y in loader:\n    model(x)",
        "lr = 0.1\nfor epoch in range(3):\n    lr = lr * cur\n    opt = torch.optim.SGD(model.parameters(), lr=lr)",
        "walk = lambda n, s: walk(n, s)",
    )
    lines.extend(draw(st.lists(st.sampled_from(uses), min_size=1, max_size=5)))
    return "\n".join(lines) + "\n"


@settings(PROPERTY, max_examples=RECURSIVE_PROGRAMS)
@given(recursive_program())
def test_recursion_in_the_program_never_costs_a_check(program):
    module = cst.parse_module(program)  # CPython accepts it too (the engine checks)
    assert nesting_depth(module) < engine.NESTING_LIMIT
    assert [d.message for d in analyze(program) if d.code == engine.CANNOT_CHECK] == []


NAMES = ("a", "b", "c")
# Per walk of the model, definitions it follows a name through (with slots for other names) and
# uses that make a rule ask for the name's value.
WALKS = {
    "iteration": (
        ("tqdm.tqdm({})", "enumerate({})", "iter({})", "zip({}, {})", "itertools.cycle({})", "{}", "same({})"),
        ("for x, y in {}:\n        model(x)", "for x in {}:\n        pass\n    {}.set_epoch(epoch)", "model(next({}))"),
    ),
    "placement": (
        ("{}.to(device)", "{}.cuda()", "{}[0]", "({}, {})", "{}.float()", "same({})", "{} + {}"),
        ("model({})", "torch.jit.trace(model, {}).to('cpu')", "{}.to(device)", "model({}.to(device))"),
    ),
    "loaders": (
        ("DataLoader({}, batch_size=8, sampler={})", "DistributedSampler({})", "{}.sampler", "{}.dataset", "same({})"),
        ("{}.set_epoch(epoch)", "for x, y in {}:\n        model(x)", "DataLoader({}, batch_size=world_size)"),
    ),
    "constants": (
        ("{} * 2", "{} // world_size", "{} if {} else {}", "args.{}", "{}['lr']", "{{'lr': {}}}", "max({}, 1)"),
        ("torch.optim.Adam(model.parameters(), lr={})", "DataLoader(ds, batch_size={})", "range({})"),
    ),
    "text": (
        ("str({})", "f'{{{}}} {{epoch}}'", "'{{}} {{}}'.format({}, epoch)", "repr({})", "{} + '!'"),
        ("print({})", "logging.info({})", "torch.zeros(2).to({})"),
    ),
    "modules": (
        ("Net({})", "{}.module", "torch.nn.DataParallel({})", "{}.to(device)", "copy.deepcopy({})", "{}.eval()"),
        ("{}(x)", "{}.train()", "torch.optim.SGD({}.parameters(), lr=0.1)", "torch.jit.trace({}, x)"),
    ),
}


@st.composite
def circular_program(draw) -> str:
    """Names defined in terms of each other around a loop (`a = tqdm(b)`, `b = iter(a)`): every
    name defined refers to one, so the definitions always close a cycle, made mostly of
    definitions one walk of the model follows; then uses that make the rules follow it."""
    definitions, uses = WALKS[draw(st.sampled_from(sorted(WALKS)))]
    anything = tuple(template for walk in WALKS.values() for template in walk[0])

    def fill(template: str) -> str:
        return template.format(*(draw(st.sampled_from((*NAMES, "device"))) for _ in range(template.count("{}"))))

    lines = [
        "import copy, itertools, logging, tqdm, torch",
        "from torch.utils.data import DataLoader, DistributedSampler",
        "device = torch.device('cuda')",
        "world_size, ds, x = 2, None, torch.zeros(2)",
        "def same(x):",
        "    return same(x) if x else x",
        "class Net(torch.nn.Module):",
        "    def forward(self, x):",
        "        return x",
        "model = Net().to(device)",
        f"for epoch in range({draw(st.sampled_from(NAMES))}):",
    ]
    for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4)):
        template = draw(st.sampled_from(definitions if draw(st.integers(0, 4)) else anything))
        lines.append(f"    {name} = {fill(template)}")
    lines.extend("    " + fill(use) for use in draw(st.lists(st.sampled_from(uses), min_size=1, max_size=3)))
    return "\n".join(lines) + "\n"


@settings(PROPERTY, max_examples=CIRCULAR_PROGRAMS)
@given(circular_program())
def test_names_defined_through_each_other_never_cost_a_check(program):
    compile(program, "<generated>", "exec")
    assert [d.message for d in analyze(program) if d.code == engine.CANNOT_CHECK] == []


def test_positions_inside_the_file_are_checked():
    # The sanity check itself must catch a position past the end of a line.
    bad = Diagnostic("TL900", "m", "t.py", Position(1, 9), Position(1, 9))
    with pytest.raises(AssertionError):
        assert_sane([bad], "t.py", "x = 1\n")
