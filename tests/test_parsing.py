"""torchlint.parsing: the same trees as libcst.parse_module, and node validation is switched off
only inside a parse, for the nodes of the thread that parses."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import libcst as cst
import pytest
from libcst._nodes.base import CSTNode

from torchlint import parsing
from perf_support import ROOT, corpus

# Run in a fresh interpreter: the test runner's own process has helper threads (pytest-xdist),
# where parsing must keep validating.
SINGLE_THREADED = """
import json, sys
import libcst as cst
from libcst._nodes.base import CSTNode
from torchlint import parsing

real = parsing._VALIDATING
sources = json.load(sys.stdin)
same = []
for text in sources:
    try:
        expected = cst.parse_module(text)
    except cst.ParserSyntaxError:
        continue
    tree = parsing.parse_module(text)
    same.append(tree.deep_equals(expected) and tree.code == text)
try:
    parsing.parse_module("def f(:\\n")
except cst.ParserSyntaxError:
    pass
print(json.dumps({"same": same, "restored": CSTNode.__post_init__ is real}))
"""


def test_same_trees_and_validation_restored_in_a_single_threaded_process():
    sources = list(corpus(generated=10).values())
    completed = subprocess.run(
        [sys.executable, "-c", SINGLE_THREADED],
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    result = json.loads(completed.stdout)
    assert len(result["same"]) >= len(sources) - 2 and all(result["same"])
    assert result["restored"]


@pytest.fixture
def validating(monkeypatch) -> list[bool]:
    """For each LibCST parse, whether node validation was on while it ran."""
    seen: list[bool] = []
    real_parse = cst.parse_module

    def spy(text):
        seen.append(CSTNode.__post_init__ is parsing._VALIDATING)
        return real_parse(text)

    monkeypatch.setattr(cst, "parse_module", spy)
    return seen


def test_validation_is_skipped_during_the_parse_only(validating, monkeypatch):
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    parsing.parse_module("x = 1\n")
    assert validating == [False]
    assert CSTNode.__post_init__ is parsing._VALIDATING


def _validates(value: str) -> bool:
    try:
        cst.Name(value)
    except cst.CSTValidationError:
        return True
    return False


def test_other_threads_keep_validation_on(monkeypatch):
    """With other threads alive (the language server checks beside its event loop), a parse
    still skips validating its own nodes, and a node another thread builds meanwhile is
    validated."""
    seen: dict[str, bool] = {}
    real_parse = cst.parse_module

    def spy(text):
        seen["parser"] = _validates("")
        helper = threading.Thread(target=lambda: seen.__setitem__("other", _validates("")))
        helper.start()
        helper.join()
        return real_parse(text)

    monkeypatch.setattr(cst, "parse_module", spy)
    stop = threading.Event()
    waiting = threading.Thread(target=stop.wait)
    waiting.start()
    try:
        parsing.parse_module("x = 1\n")
    finally:
        stop.set()
        waiting.join()
    assert seen == {"parser": False, "other": True}
    assert CSTNode.__post_init__ is parsing._VALIDATING
    assert _validates("")
