"""torchlint.positions gives exactly what LibCST's PositionProvider gives, node for node."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from torchlint import positions
from torchlint.model import Model
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


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_statement_by_statement_gives_the_same_positions(name):
    text = SOURCES[name]
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lazy = positions.Positions(module, text, Model(module).parents)
    assert all(lazy[node] == where for node, where in reversed(list(expected.items())))
    assert [lazy.statement_offset(i) for i in range(len(module.body) + 1)] == _statement_offsets(module, text)


def _statement_offsets(module: cst.Module, text: str) -> list[int | None]:
    """Where each top-level statement starts, then where the last ends; all None when LibCST's
    rendering does not reproduce the text."""
    offsets = [len("".join(module.code_for_node(line) for line in module.header))]
    for statement in module.body:
        offsets.append(offsets[-1] + len(module.code_for_node(statement)))
    return offsets if module.code == text else [None] * len(offsets)


def test_only_the_statement_asked_about_is_generated():
    text = "import torch\n\n\n# a comment\ndef f():\n    return 1\n\n\n@decorated\nclass C:\n    x = (1,\n         2)\n"
    module = cst.parse_module(text)
    model = Model(module)
    found = positions.Positions(module, text, model.parents)
    two = module.body[2].body.body[0].body[0].value
    assert found[two] == cst.metadata.CodeRange((11, 9), (12, 10))
    generated = set(found._spans)
    assert two in generated and module.body[0] not in generated and module.body[1] not in generated
    assert found.statement_offset(1) == len("import torch\n")  # its blank lines and comment are its own
    assert found.statement_offset(3) == len(text)


@pytest.mark.parametrize(
    "text",
    [
        "import torch\r\nx = torch.zeros(\r\n    3,\r\n)\r\n",  # CPython and LibCST count lines alike
        "x = 1\n@(\n    deco\n)\ndef f():\n    return 2\n",  # CPython's line is the decorator's, not the @
        "x = 1; y = 2\nif x:\n    pass\n",
        "x = 1\ny = f(\n)",  # no final newline
    ],
)
def test_a_statement_cpython_places_elsewhere_is_generated_with_the_module(text):
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found = positions.Positions(module, text, Model(module).parents)
    last = module.body[-1]
    assert found[last] == expected[last]
    assert all(found[node] == where for node, where in expected.items())


def test_falls_back_to_the_provider_when_libcst_internals_change(monkeypatch):
    module = cst.parse_module("x = 1\n")

    def broken(self, node):
        raise AttributeError("codegen hook renamed")

    monkeypatch.setattr(positions._State, "before_codegen", broken)
    found = positions.positions(module)
    assert found == MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
