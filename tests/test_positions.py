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
    "nested_blocks.py": (
        "def main(loader):\n"
        "    for i, batch in enumerate(loader):\n"
        "        try:\n"
        "            x = batch.cuda(); y = 2\n"
        "        except (ValueError, KeyError) as error:\n"
        "          # a comment indented its own way\n"
        "            if x: pass\n"
        "            elif y:\n"
        "                continue\n"
        "            else:\n"
        "                raise\n"
        "        else:\n"
        "            with open(i) as f, g():\n"
        "\n"
        "                @decorate(\n"
        "                    1)\n"
        "                def inner(): return f\n"
        "        finally:\n"
        "            match batch:\n"
        "                case [a, *rest] if a:\n"
        "                    del rest\n"
        "                case _:\n"
        "                    while True:\n"
        "                        break\n"
        "                    else:\n"
        "                        pass\n"
        "    return (lambda: [z for z in loader])\n"
    ),
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
    lazy = positions.Positions(module, text, Model(module).parent)
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
    found = positions.Positions(module, text, model.parent)
    two = module.body[2].body.body[0].body[0].value
    assert found[two] == cst.metadata.CodeRange((11, 9), (12, 10))
    generated = set(found._spans)
    assert two in generated and module.body[0] not in generated and module.body[1] not in generated
    assert found.statement_offset(1) == len("import torch\n")  # its blank lines and comment are its own
    assert found.statement_offset(3) == len(text)


@pytest.mark.parametrize("name", ["nested_blocks.py", *sorted(SOURCES)[:3]])
def test_each_nested_statement_alone_gives_the_same_positions(name):
    """A node asked about first in a fresh mapping: only the statement of its block is generated."""
    text = SOURCES[name]
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    model = Model(module)
    nested = [node for node in model.nodes if type(model.parent(node)) is cst.IndentedBlock]
    assert nested
    for statement in nested:
        found = positions.Positions(module, text, model.parent)
        inside = [node for node in expected if node is statement or statement in model.ancestors(node)]
        assert all(found[node] == expected[node] for node in reversed(inside))
        assert not found._offsets  # the top-level statement around it was not generated


def test_only_the_innermost_statement_of_a_block_is_generated():
    text = "def main():\n    x = 1\n    for i in range(3):\n        y = f(i,\n              2)\n    return x\n"
    module = cst.parse_module(text)
    found = positions.Positions(module, text, Model(module).parent)
    loop = module.body[0].body.body[1]
    call = loop.body.body[0].body[0].value
    assert found[call] == cst.metadata.CodeRange((4, 12), (5, 16))
    generated = set(found._spans)
    assert call in generated and loop not in generated and module.body[0].body.body[0] not in generated


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
    found = positions.Positions(module, text, Model(module).parent)
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
