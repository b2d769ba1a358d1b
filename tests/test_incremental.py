"""torchlint.incremental: after any edit, the spliced tree is the tree a full parse gives, and the
statements an edit did not touch are not parsed again."""

from __future__ import annotations

import warnings

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchlint import engine
from torchlint.config import Settings
from torchlint.incremental import Reparser
from perf_support import FIXTURES, generated_sources

SCRIPTS = [path.read_text(encoding="utf-8") for path in FIXTURES[::6]] + list(generated_sources(6).values())
SCRIPTS += [script.rstrip("\n") for script in SCRIPTS[::8]]  # files without a final newline

# What an editor's user types: code that opens and closes blocks, brackets and strings, lines at
# other indentations, decorators, continuation lines, comments at and below column 0.
SNIPPETS = [
    "\n", "\n\n", "    ", "  ", "\t", "x", ":", "(", ")", "'''", "\\\n", "# note\n", "    # note\n", "@wrapped\n",
    "def helper():\n    return 1\n", "if ready:\n  step = 1\n", "else:\n    pass\n", "class Box:\n\tsize = 2\n",
    "model.to(device)\n", " = 1\n", "pass\n", "    \n", "import torch\n",
]


def _full(text: str) -> cst.Module | None:
    """The full parse of a text the engine would parse: one CPython accepts (else it stops at
    TL000) and LibCST too."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes the edits make
            compile(text, "<edit>", "exec", dont_inherit=True)
        return cst.parse_module(text)
    except (SyntaxError, ValueError, cst.ParserSyntaxError):
        return None


def _assert_same(reparser: Reparser, text: str, full: cst.Module) -> None:
    spliced = reparser.parse(text)
    assert spliced.code == full.code  # == text, but for the rare text LibCST does not give back
    assert spliced.deep_equals(full)


@st.composite
def edits(draw):
    """An edit: a function of the text (a position is a fraction of its length, so that one
    edit applies to any text)."""
    kind = draw(st.sampled_from(["insert", "delete", "replace", "lines", "move", "undo"]))
    where, size = draw(st.floats(0, 1)), draw(st.integers(1, 40))
    snippet = draw(st.sampled_from(SNIPPETS))

    def edit(text: str, before: str) -> str:
        at = int(where * len(text))
        if kind == "insert":
            return text[:at] + snippet + text[at:]
        if kind == "delete":
            return text[:at] + text[at + size :]
        if kind == "replace":
            return text[:at] + snippet + text[at + min(size, 3) :]
        lines = text.split("\n")
        line = int(where * (len(lines) - 1))
        if kind == "lines":  # a whole line (or a few) deleted, as an editor's "delete line" does
            return "\n".join(lines[:line] + lines[line + 1 + size % 3 :])
        if kind == "move":  # a line cut and pasted elsewhere
            moved = lines.pop(line)
            lines.insert(size % (len(lines) + 1), moved)
            return "\n".join(lines)
        return before  # undo: back to the text before the last edit (repairs what it broke)

    return edit


PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.sampled_from(SCRIPTS), st.lists(edits(), min_size=1, max_size=12))
def test_spliced_trees_are_the_full_parse(script, edit_list):
    reparser = Reparser()
    reparser.parse(script)
    text = before = script
    for edit in edit_list:
        text, before = edit(text, before), text
        full = _full(text)
        if full is not None:  # the engine never parses what CPython rejects: the last tree stays
            _assert_same(reparser, text, full)


def _edited(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1
    return text.replace(old, new)


SCRIPT = '''#!/usr/bin/env python
"""Train a small model."""
import torch
from torch import nn


def build(width):
    return nn.Linear(width, width)


def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in loader:
        optimizer.zero_grad()
        model(batch).sum().backward()
        optimizer.step()


if __name__ == "__main__":
    train(build(8), [torch.zeros(8)])
'''


def _reparse(old: str, new: str) -> Reparser:
    reparser = Reparser()
    reparser.parse(old)
    full = _full(new)
    assert full is not None
    _assert_same(reparser, new, full)
    return reparser


@pytest.mark.parametrize(
    ("old", "new", "reparsed"),
    [
        pytest.param("        optimizer.step()\n", "        optimizer.step()  # edited\n", 1, id="inside a function"),
        pytest.param('"""Train a small model."""', '"""Train a model."""', 1, id="header docstring"),
        pytest.param("#!/usr/bin/env python\n", "#!/usr/bin/env python3\n# licence\n", 1, id="header comment"),
        pytest.param("[torch.zeros(8)])\n", "[torch.zeros(8)])\n\n# the end\n", 1, id="footer"),
        pytest.param("\n\ndef train(", "\n\n@torch.no_grad()\ndef train(", 1, id="decorator typed above a function"),
        pytest.param("\n\ndef train(", "\n    # about train\n\ndef train(", 2, id="indented comment joins the block above"),
        pytest.param("        optimizer.step()\n\n\n", "        optimizer.step()\n\n\nx = 1\n", 2, id="statement inserted"),
        pytest.param("\n\ndef build(width):\n    return nn.Linear(width, width)\n", "", 1, id="statement deleted"),
    ],
)
def test_edits_reparse_only_the_statements_they_touch(old, new, reparsed):
    assert _reparse(SCRIPT, _edited(SCRIPT, old, new)).reparsed == reparsed


@pytest.mark.parametrize(
    ("script", "old", "new"),
    [
        # The first block's indentation is the module's default, against which every block is stored.
        pytest.param(SCRIPT, "def build(width):\n    return", "def build(width):\n  return", id="default indentation"),
        pytest.param(SCRIPT.replace("\n", "\r\n"), "optimizer.step()\r\n", "optimizer.step()\n", id="mixed newlines"),
        pytest.param(SCRIPT, "optimizer.step()\n", "optimizer.step()\n\f\n", id="form feed"),
        pytest.param(
            SCRIPT.replace("import torch\n", "import torch\n\\\n"), "step()", "step(1)", id="text LibCST does not give back"
        ),
    ],
)
def test_edits_that_could_change_the_whole_tree_parse_it_whole(script, old, new):
    assert _reparse(script, _edited(script, old, new)).reparsed is None


@pytest.mark.parametrize(
    ("old", "new"),
    [("optimizer.step()\n", "optimizer.step()  # typed\n"), ("[torch.zeros(8)])", "[torch.ones(8)])")],
    ids=["middle", "last line"],
)
def test_a_file_without_a_final_newline_is_spliced_too(old, new):
    script = SCRIPT.rstrip("\n")
    assert _reparse(script, _edited(script, old, new)).reparsed == 1


def test_a_block_moved_to_the_first_indented_place_keeps_the_default_indentation_right():
    # Simple statements replace the function that held the file's first block: the next block
    # (indented by two) now sets the default.
    old = "import os\n\ndef f():\n    return 1\n\nclass A:\n  x = 1\n"
    _reparse(old, old.replace("def f():\n    return 1\n", "f = 1\n"))


def test_checks_with_a_reparser_give_the_diagnostics_of_a_full_check():
    reparser, settings = Reparser(), Settings()
    text = SCRIPT.replace("lr=0.1", "lr=10.0")
    steps = [
        text,
        _edited(text, "optimizer.step()\n", "optimizer.step(\n"),  # broken: TL000, the tree stays
        _edited(text, "optimizer.zero_grad()\n", ""),  # repaired elsewhere
        _edited(text, "def build(width):", "def build(width, width):"),  # LibCST accepts it, CPython not
        text + "\nprobe = torch.zeros(4)\nprobe.to('cuda')\n",
    ]
    for step in steps:
        assert engine.analyze(step, "train.py", settings, reparser).diagnostics == engine.check_source(step, "train.py", settings)
    assert reparser.reparsed is not None
