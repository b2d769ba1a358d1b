"""torchlint.positions gives exactly what LibCST's PositionProvider gives, node for node."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchlint import positions
from perf_support import corpus

ODD = {
    "crlf.py": "import torch\r\nx = torch.zeros(\r\n    3,\r\n)\r\n",
    "cr_only.py": "import torch\rx = 1\r",
    "multiline_string.py": 'doc = """a\nb\n  c"""\nf(doc,\n  x)\n',
    "no_trailing_newline.py": "def f():\n    return (1 +\n            2)",
    "tabs_and_continuation.py": "if x:\n\ty = 1 + \\\n\t\t2\n",
    "decorated.py": "@a.b(c)\nclass C(  Base ):\n    @property\n    def p(self): return 1  # trailing\n",
}


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        return False
    return True


SOURCES = {name: text for name, text in {**corpus(generated=10), **ODD}.items() if _parses(text)}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_same_positions_as_libcst(name):
    module = cst.parse_module(SOURCES[name])
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    fast = positions.positions(module)
    assert len(fast) == len(expected)
    assert all(fast[node] == where for node, where in expected.items())


def test_statement_lines_are_the_simple_statement_lines():
    module = cst.parse_module("import torch\nif x:\n    y = 1; z = 2\n")
    lines = [(where.start.line, where.end.line) for _, where in positions.positions(module).statement_lines()]
    assert sorted(lines) == [(1, 1), (3, 3)]


def test_falls_back_to_the_provider_when_libcst_internals_change(monkeypatch):
    module = cst.parse_module("x = 1\n")

    def broken(self, node):
        raise AttributeError("codegen hook renamed")

    monkeypatch.setattr(positions._State, "before_codegen", broken)
    found = positions.positions(module)
    assert found == MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
