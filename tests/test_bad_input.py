"""Bad input gives a clear diagnostic, never a traceback: syntax errors, encodings, binary and
empty files, missing paths, huge and deeply nested files, and a rule that fails."""

from __future__ import annotations

import codecs
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest

from torchlint import engine, registry
from torchlint.config import Settings

import rule_doubles

pytestmark = pytest.mark.usefixtures("in_tmp")


def check(data: bytes | str, path: str = "t.py") -> list[tuple[str, int, int, str]]:
    return [(d.code, d.line, d.column, d.message) for d in engine.check_source(data, path, Settings())]


@pytest.mark.usefixtures("probe_rules")
class TestWithProbeRules:
    def test_a_syntax_error_is_one_tl000_at_the_error_with_the_parser_message(self):
        assert check("probe()\nx = (1,\ny = 2\n") == [("TL000", 2, 5, "SyntaxError: '(' was never closed")]
        assert check("def f(:\n    pass\n") == [("TL000", 1, 7, "SyntaxError: invalid syntax")]
        assert check("if x:\npass\n") == [
            ("TL000", 2, 1, "SyntaxError: expected an indented block after 'if' statement on line 1")
        ]

    def test_a_syntax_error_does_not_stop_the_run(self, run_cli):
        Path("a_broken.py").write_text("def f(:\n")
        Path("b_fine.py").write_text("probe()\n")
        result = run_cli(".")
        assert result.exit_code == 1
        assert result.stdout.splitlines() == [
            "a_broken.py:1:7: TL000 SyntaxError: invalid syntax",
            "b_fine.py:1:1: TL900 [*] call of probe(): replace it with checked()",
        ]

    def test_pep_263_cookie_latin_1(self):
        data = "# -*- coding: latin-1 -*-\nname = 'café'; probe()\n".encode("latin-1")
        assert check(data) == [("TL900", 2, 16, "call of probe(): replace it with checked()")]

    def test_columns_count_characters_not_bytes(self):
        assert [(code, line, column) for code, line, column, _ in check("s = 'ééé'; probe()\n".encode())] == [
            ("TL900", 1, 12)
        ]

    def test_utf8_bom(self):
        assert check(codecs.BOM_UTF8 + b"probe()\n") == [("TL900", 1, 1, "call of probe(): replace it with checked()")]

    def test_utf8_bom_with_a_utf8_cookie(self):
        assert [d[0] for d in check(codecs.BOM_UTF8 + b"# coding: utf-8\nprobe()\n")] == ["TL900"]

    def test_a_bom_contradicting_the_cookie(self):
        assert check(codecs.BOM_UTF8 + b"# coding: latin-1\nprobe()\n") == [
            ("TL000", 1, 1, "invalid encoding declaration: a UTF-8 byte order mark and a coding cookie for another encoding")
        ]

    def test_an_unknown_cookie(self):
        assert check(b"#!/usr/bin/env python\n# vim: set fileencoding=klingon :\nprobe()\n") == [
            ("TL000", 2, 1, "invalid encoding declaration: unknown encoding: klingon")
        ]

    def test_undecodable_first_line_without_a_cookie(self):
        assert check(b"\xff\xfeprobe()\n") == [("TL000", 1, 1, "cannot decode as utf-8: byte 0xff at offset 0")]

    def test_undecodable_bytes_point_at_the_byte(self):
        assert check(b"probe()\nname = 'caf\xe9'\n") == [
            ("TL000", 2, 12, "cannot decode as utf-8: byte 0xe9 at offset 19")
        ]

    def test_undecodable_bytes_in_a_declared_encoding(self):
        data = b"# coding: ascii\nx = '\xc3\xa9'\n"
        assert check(data) == [("TL000", 2, 6, "cannot decode as ascii: byte 0xc3 at offset 21")]

    @pytest.mark.parametrize(
        "data",
        [
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",  # an image named .py
            b"probe()\n\x00\n",
            "probe()\n".encode("utf-16-le"),  # no byte order mark: nothing says it is text
            bytes(range(256)),
        ],
    )
    def test_binary_files(self, data):
        assert check(data) == [("TL000", 1, 1, "binary file (contains NUL bytes), not Python source")]

    @pytest.mark.parametrize(
        ("encoding", "name"), [("utf-16", "UTF-16"), ("utf-16-be", "UTF-16"), ("utf-32", "UTF-32"), ("utf-32-be", "UTF-32")]
    )
    def test_wide_unicode_with_a_byte_order_mark_is_named(self, encoding, name):
        data = "probe()\n".encode(encoding)
        if encoding.endswith("-be"):  # Python's codec writes a mark only for the native order
            data = {"UTF-16": codecs.BOM_UTF16_BE, "UTF-32": codecs.BOM_UTF32_BE}[name] + data
        assert check(data) == [("TL000", 1, 1, f"{name} text (it starts with a {name} byte order mark): save it as UTF-8")]

    @pytest.mark.parametrize("text", ["", "\n", "   \n\n", "# only a comment", "\x0c\n", '"""docstring only"""'])
    def test_empty_and_near_empty_files(self, text):
        assert check(text) == []
        assert check(text.encode()) == []

    @pytest.mark.parametrize(
        ("data", "line"),
        [(b"x = 1\r\ny = 2\r\nprobe()\r\n", 3), (b"x = 1\ry = 2\rprobe()\r", 3), (b"x = 1\n\x0cprobe()\n", 2)],
    )
    def test_line_endings_and_form_feeds(self, data, line):
        assert [(code, at) for code, at, _, _ in check(data)] == [("TL900", line)]

    def test_mixed_tabs_and_spaces(self):
        ((code, line, _, message),) = check("if x:\n        probe()\n\tprobe()\n")
        assert (code, line) == ("TL000", 3)
        assert "inconsistent use of tabs and spaces" in message

    def test_a_missing_path_is_exit_1_with_a_diagnostic(self, run_cli):
        Path("real.py").write_text("x = 1\n")
        result = run_cli("missing.py", "real.py")
        assert result.exit_code == 1
        assert result.stdout == "missing.py:1:1: TL000 No such file or directory\n"

    def test_a_dangling_symlink_named_explicitly(self, run_cli):
        os.symlink("gone.py", "link.py")
        result = run_cli("link.py")
        assert result.exit_code == 1
        assert result.stdout == "link.py:1:1: TL000 No such file or directory\n"

    def test_a_directory_without_python_files(self, run_cli):
        Path("data").mkdir()
        Path("data/train.csv").write_text("a,b\n1,2\n")
        Path("data/empty_subfolder").mkdir()
        result = run_cli("data")
        assert result.exit_code == 0
        assert result.stdout == ""
        assert "warning: No Python files found under the given path(s)" in result.stderr

    def test_a_failing_rule_is_a_tl000_naming_the_rule_and_the_file_and_the_others_still_run(self, run_cli):
        Path("a.py").write_text("probe()\nexplode()\n")
        Path("b.py").write_text("other()\n")
        result = run_cli("a.py", "b.py")
        assert result.exit_code == 1
        assert result.stdout.splitlines() == [
            "a.py:1:1: TL000 internal error in rule TL901 (other-call) on this file: RuntimeError('explode() called'); "
            "please report it at https://github.com/torchlint/torchlint/issues",
            "a.py:1:1: TL900 [*] call of probe(): replace it with checked()",
            "b.py:1:1: TL901 [*] call of other(): replace it with checked()",
        ]

    @pytest.mark.parametrize(
        ("source", "position", "message"),
        [
            ("x = " + "(" * 1000 + "1" + ")" * 1000, (2, 205), "SyntaxError: too many nested parentheses"),
            ("x = " + "[" * 1000 + "]" * 1000, (2, 205), "SyntaxError: too many nested parentheses"),
            ("".join("    " * depth + "if x:\n" for depth in range(120)) + "    " * 120 + "pass",
             (102, 1), "SyntaxError: too many levels of indentation"),
            # Python's own parser gives up on these without saying where: the file is named.
            ("x = " + "-" * 10_000 + "1", (1, 1), "expression too deeply nested to analyse"),
            ("x = " + "+".join(["a"] * 10_000), (1, 1), "expression too deeply nested to analyse"),
            ("x = a" + ".b" * 10_000, (1, 1), "expression too deeply nested to analyse"),
            # Python accepts these; LibCST's tree is too deep to walk.
            ("x = f" + "()" * 5000, (1, 1), "expression too deeply nested to analyse"),
            ("x = " + "1 if a else " * 3000 + "2", (1, 1), "expression too deeply nested to analyse"),
        ],
    )
    def test_deeply_nested_code_is_a_tl000(self, source, position, message):
        assert check("probe()\n" + source + "\n") == [("TL000", *position, message)]

    @pytest.mark.parametrize(
        "source",
        [
            "x = " + "(" * 150 + "probe()" + ")" * 150,
            "x = " + "[" * 150 + "probe()" + "]" * 150,
            "x = " + "lambda: " * 300 + "probe()",
            "x = " + " < ".join(["a"] * 5000) + "\nprobe()",
            "@d\n" * 3000 + "def f(): probe()",
            "x = " + " ".join(['"s"'] * 5000) + "\nprobe()",
        ],
    )
    def test_deep_but_valid_code_never_raises(self, source):
        # Analysed fully, or a TL000 that says why not: either way no exception and sane positions.
        diagnostics = engine.check_source(source + "\n", "t.py", Settings())
        assert diagnostics
        assert {d.code for d in diagnostics} <= {"TL000", "TL900"}
        assert all(d.line >= 1 and d.column >= 1 and d.end >= d.start for d in diagnostics)

    def test_a_rule_reporting_a_node_of_another_tree(self, monkeypatch):
        class Stray(registry.Rule):
            code, name, summary = "TL902", "stray-node", "reports a node that is not in the file"

            def check(self, model, options) -> Iterator[registry.Finding]:
                yield registry.Finding(cst.Name("elsewhere"), "not in this file")

        monkeypatch.setattr(registry, "all_rules", lambda: {**rule_doubles.RULES, "TL902": Stray})
        assert [d[0] for d in check("probe()\n")] == ["TL000", "TL900"]
        assert check("probe()\n")[0][3].startswith("internal error in rule TL902 (stray-node) on this file")

    def test_a_rule_recursing_without_end_on_shallow_code_is_an_internal_error(self, monkeypatch):
        class Bottomless(registry.Rule):
            code, name, summary = "TL902", "bottomless", "recurses forever"

            def check(self, model, options) -> Iterator[registry.Finding]:
                yield from self.check(model, options)

        monkeypatch.setattr(registry, "all_rules", lambda: {**rule_doubles.RULES, "TL902": Bottomless})
        (failed, probe) = check("probe()\n")
        assert failed[:3] == ("TL000", 1, 1)
        assert failed[3].startswith("internal error in rule TL902 (bottomless) on this file: RecursionError(")
        assert failed[3].endswith("please report it at https://github.com/torchlint/torchlint/issues")
        assert probe == ("TL900", 1, 1, "call of probe(): replace it with checked()")

    def test_a_rule_recursing_down_a_tree_deeper_than_the_limit_says_the_file_is_too_deep(self, monkeypatch):
        class Descending(registry.Rule):
            code, name, summary = "TL902", "descending", "walks the tree recursively"

            def check(self, model, options) -> Iterator[registry.Finding]:
                def depth(node: cst.CSTNode) -> int:
                    return 1 + max((depth(child) for child in node.children), default=0)

                depth(model.module)
                yield from ()

        monkeypatch.setattr(registry, "all_rules", lambda: {"TL902": Descending})
        deep = "x = " + "1 if a else " * 600 + "2\n"
        assert check(deep) == [
            ("TL000", 1, 1, "expression too deeply nested for rule TL902 (descending) (604 levels; torchlint always analyses up to 200)"),
        ]
        shallow = "x = " + "1 if a else " * 190 + "2\n"  # 194 levels: within the limit, walked fully
        assert check(shallow) == []


def training_script(lines: int) -> str:
    """A long, plausible, well-documented training module: many small training-step functions."""
    block = '''
def step_{index}(model, batch, optimizer, device):
    """One optimisation step, variant {index}.

    Moves the batch to the device, computes the loss, and updates the parameters.
    Returns the loss as a float for logging.
    """
    # The batch comes from a loader yielding (inputs, targets) pairs.
    inputs, targets = batch
    inputs, targets = inputs.to(device), targets.to(device)
    outputs = model(inputs)
    loss = torch.nn.functional.mse_loss(outputs, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()
'''
    parts = ["import torch\n"]
    count = 1
    while count + block.count("\n") <= lines - 1:
        parts.append(block.format(index=len(parts)))
        count += block.count("\n")
    parts.append("# padding\n" * (lines - 1 - count))
    parts.append("x = 1\n")
    return "".join(parts)


@pytest.mark.slow
def test_a_100000_line_file_with_the_real_rules():
    text = training_script(100_000)
    assert text.count("\n") == 100_000
    Path("big.py").write_text(text)
    analysis = engine.check_path(Path("big.py"), Settings())
    # The real rules are free to report something in it; none of them may fail on it.
    assert [d for d in analysis.diagnostics if d.code == "TL000"] == []
    assert analysis.module is not None
    assert len(analysis.module.body) == text.count("\ndef step_") + 2 > 6000


def test_values_used_as_a_class_base_or_keyword_are_no_internal_error():
    # A class statement's bases and keywords are Arg nodes whose parent is the ClassDef, not a call.
    source = """
import torch
import torch.nn as nn


def wrap(model, device, layers, base):
    class Wrapped(nn.Module, metaclass=model):
        pass

    class Listed(*layers):
        pass

    class Based(base):
        pass

    return Wrapped().to(device), Listed, Based


net = nn.Linear(2, 2)
layers = [nn.Linear(2, 2)]
layers.append(nn.ReLU())
print(wrap(net, torch.device("cuda"), layers, net))
for x in torch.randn(4, 2).to("cuda"):
    net(x)
"""
    found = [(d.code, d.message) for d in engine.check_source(source, "t.py", Settings(preview=True))]
    assert not [message for code, message in found if code == "TL000"]


def _capped_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_a_function_returning_its_own_result_in_a_tuple_is_followed_in_bounded_memory():
    # Each pass through `return n, unwind(n)` nests the value one tuple deeper; following every
    # depth once took all the memory of the machine. Run capped, so a regression fails this test
    # with a MemoryError (a TL000) instead of taking the test run down.
    Path("recursive.py").write_text(
        "import torch\n\n\n"
        "def unwind(n, seen):\n"
        "    return n, unwind(n, seen)\n"
        "    net, device = unwind(n - 1, seen)\n"
        "    return net.to(device), device\n\n\n"
        "first, (second, third) = unwind(seen[n], seen)\n"
    )
    command = [sys.executable, "-m", "torchlint", "check", "--no-cache", "--preview", "--select", "ALL", "recursive.py"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, preexec_fn=_capped_memory)
    assert completed.returncode == 0, completed.stdout + completed.stderr
