"""The fix machinery with throwaway rules (tests/fix_support.py): text edits, the fix loop,
dropped fixes, imports, conflicts, encodings and line endings."""

from __future__ import annotations

import textwrap

import pytest

from torchlint import engine
from torchlint.config import Settings
from torchlint.diagnostics import Applicability
from torchlint.fixes import loop, transform

import fix_support


@pytest.fixture(autouse=True)
def test_rules(monkeypatch):
    fix_support.install(monkeypatch)


def fix(source: str, unsafe: bool = False, **kwargs) -> loop.FixResult:
    data = source.encode() if isinstance(source, str) else source
    return loop.fix_bytes(data, "train.py", Settings(**kwargs), unsafe)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_diagnostic_carries_the_fix_as_small_text_edits():
    source = dedent(
        """
        import os

        def train(x, d):
            x.to(d)
            return x
        """
    )
    (diagnostic,) = engine.check_source(source, "train.py", Settings(select=("TL991",)))
    assert diagnostic.fix.applicability is Applicability.SAFE
    assert diagnostic.fix.message == "Assign the result back"
    assert [(e.start.line, e.start.column, e.end.line, e.end.column, e.content) for e in diagnostic.fix.edits] == [
        (4, 5, 4, 5, "x = ")
    ]
    assert fix_support.apply_edits(source, diagnostic.fix.edits) == source.replace("    x.to(d)", "    x = x.to(d)")


def test_inserted_statement_is_an_inserted_line_and_keeps_indentation():
    source = "for epoch in range(3):\n\t# one epoch\n\tstep()\n"
    (diagnostic,) = engine.check_source(source, "train.py", Settings(select=("TL992",)))
    (edit,) = diagnostic.fix.edits
    assert (edit.start.line, edit.start.column, edit.end.line, edit.end.column) == (2, 1, 2, 1)
    assert edit.content == "\tmarker(epoch)\n"


def test_fix_applies_safe_fixes_only_unless_unsafe():
    source = "for epoch in range(3):\n    x.to(d)\n"
    safe = fix(source, select=("TL991", "TL992"))
    assert safe.fixed_text == "for epoch in range(3):\n    x = x.to(d)\n"
    assert [d.code for d in safe.analysis.diagnostics] == ["TL992"]
    both = fix(source, unsafe=True, select=("TL991", "TL992"))
    assert both.fixed_text == "for epoch in range(3):\n    marker(epoch)\n    x = x.to(d)\n"
    assert both.analysis.diagnostics == []
    assert sorted(c.code for c in both.applied) == ["TL991", "TL992"]


def test_nested_fixes_apply_in_one_pass():
    # The insertion replaces the loop's first statement by [marker, statement]; the fix inside
    # that statement is kept because the insertion embeds the original statement.
    source = "for epoch in range(3):\n    x.to(d)\n"
    analysis = engine.analyze(source, "train.py", Settings(select=("TL991", "TL992")))
    candidates = loop.candidates_of(analysis, unsafe=True)
    module = transform.apply(analysis.module, [c.fix for c in candidates])
    assert module.code == "for epoch in range(3):\n    marker(epoch)\n    x = x.to(d)\n"


def test_loop_without_counter_gets_no_fix():
    source = "for _ in range(3):\n    step()\nfor item in items:\n    step()\n"
    diagnostics = engine.check_source(source, "train.py", Settings(select=("TL992",)))
    assert [d.fix for d in diagnostics] == [None, None]
    assert not fix(source, unsafe=True, select=("TL992",)).changed


def test_one_line_loop_body_gets_a_statement_before_the_first():
    result = fix("for epoch in range(3): step(); x.to(d)\n", unsafe=True, select=("TL991", "TL992"))
    assert result.fixed_text == "for epoch in range(3): marker(epoch); step(); x = x.to(d)\n"


def test_fix_that_does_not_parse_is_dropped_and_reported_other_fixes_kept():
    result = fix("breaker()\nx.to(d)\n", select=("TL991", "TL994"))
    assert result.fixed_text == "breaker()\nx = x.to(d)\n"
    (dropped,) = result.dropped
    assert dropped.candidate.code == "TL994"
    assert "does not parse" in dropped.reason
    assert [d.code for d in result.analysis.diagnostics] == ["TL994"]


def test_fix_that_does_not_remove_its_finding_is_dropped():
    result = fix("stubborn()\n", select=("TL993",))
    assert not result.changed
    assert [d.reason for d in result.dropped] == ["the fixed code still has the finding the fix was meant to remove"]


def test_fix_that_makes_a_rule_fail_is_dropped():
    result = fix("make_boom()\n", select=("TL996", "TL997"))
    assert not result.changed
    (dropped,) = result.dropped
    assert "a rule fails on the fixed code" in dropped.reason


def test_imports_are_added_once_after_docstring_and_imports():
    source = dedent(
        '''
        """Doc."""
        from __future__ import annotations
        import os

        needs_np(a)
        needs_np(b)
        '''
    )
    result = fix(source, select=("TL995",))
    assert result.fixed_text == dedent(
        '''
        """Doc."""
        from __future__ import annotations
        import os
        import numpy as np

        np.asarray(a)
        np.asarray(b)
        '''
    )
    assert len(result.applied) == 2


def test_existing_import_is_not_repeated():
    source = "import numpy as np\nneeds_np(a)\n"
    assert fix(source, select=("TL995",)).fixed_text == "import numpy as np\nnp.asarray(a)\n"


def test_a_fix_that_never_settles_stops_after_the_pass_limit():
    result = fix("count0()\n", select=("TL998",))
    assert not result.converged
    assert len(result.applied) == loop.MAX_PASSES
    assert result.fixed_text == f"count{loop.MAX_PASSES}()\n"


def test_suppressed_finding_is_not_fixed():
    source = "x.to(d)  # noqa: TL991\ny.to(d)\n"
    assert fix(source, select=("TL991",)).fixed_text == "x.to(d)  # noqa: TL991\ny = y.to(d)\n"


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_line_endings_are_kept(newline):
    source = newline.join(["import os", "for epoch in range(3):", "    x.to(d)", ""])
    result = fix(source, unsafe=True, select=("TL991", "TL992", "TL995"))
    expected = newline.join(["import os", "for epoch in range(3):", "    marker(epoch)", "    x = x.to(d)", ""])
    assert result.fixed_text == expected
    assert result.fixed_bytes() == expected.encode()


def test_file_the_parser_cannot_reproduce_is_not_fixed():
    # LibCST drops the final line break of a file with old Mac (`\r`) line endings.
    source = "import os\rx.to(d)\r"
    (diagnostic,) = engine.check_source(source, "train.py", Settings(select=("TL991",)))
    assert diagnostic.fix is None
    result = fix(source, select=("TL991",))
    assert not result.changed
    assert ["round trip" in d.reason for d in result.dropped] == [True]


def test_file_without_final_newline_keeps_it_that_way():
    result = fix("a = 1\nx.to(d)", select=("TL991",))
    assert result.fixed_text == "a = 1\nx = x.to(d)"
    (diagnostic,) = engine.check_source("a = 1\nx.to(d)", "train.py", Settings(select=("TL991",)))
    assert fix_support.apply_edits("a = 1\nx.to(d)", diagnostic.fix.edits) == "a = 1\nx = x.to(d)"


def test_declared_encoding_and_bom_are_kept():
    latin = "# -*- coding: latin-1 -*-\nname = '\u00e9t\u00e9'\nx.to(d)\n"
    result = fix(latin.encode("latin-1"), select=("TL991",))
    assert result.fixed_bytes() == latin.replace("x.to(d)", "x = x.to(d)").encode("latin-1")
    bom = b"\xef\xbb\xbfx.to(d)\n"
    assert fix(bom, select=("TL991",)).fixed_bytes() == b"\xef\xbb\xbfx = x.to(d)\n"


def test_fix_that_cannot_be_encoded_drops_every_fix_of_the_file():
    source = "# -*- coding: ascii -*-\nascii_only()\nx.to(d)\n"
    result = fix(source.encode("ascii"), select=("TL991", "TL999"))
    assert not result.changed
    assert {d.candidate.code for d in result.dropped} == {"TL991", "TL999"}
    assert all("encoding (ascii)" in d.reason for d in result.dropped)
    assert sorted(d.code for d in result.analysis.diagnostics) == ["TL991", "TL999"]


def test_file_that_does_not_parse_is_left_alone():
    result = fix("x.to(d)\ndef broken(:\n", select=("TL991",))
    assert not result.changed and result.fixed_text is None
    assert [d.code for d in result.analysis.diagnostics] == ["TL000"]


def test_fixing_twice_changes_nothing_the_second_time():
    source = "for epoch in range(3):\n    x.to(d); y.cuda()\n    needs_np(x)\n"
    once = fix(source, unsafe=True, select=("TL991", "TL992", "TL995"))
    twice = fix(once.fixed_text, unsafe=True, select=("TL991", "TL992", "TL995"))
    assert once.changed and not twice.changed and not twice.applied


def test_same_node_replaced_by_two_fixes_is_fixed_over_two_passes(monkeypatch):
    class AlsoBareTo(fix_support.BareTo):
        code = "TL990"

    fix_support.install(monkeypatch, AlsoBareTo)
    result = fix("x.to(d)\n", select=("TL990", "TL991"))
    # The first fix removes both findings; the second then has nothing left to fix.
    assert result.fixed_text == "x = x.to(d)\n"
    assert len(result.applied) == 1 and not result.dropped


def test_node_not_in_the_tree_makes_the_fix_inapplicable():
    analysis = engine.analyze("x.to(d)\n", "train.py", Settings(select=("TL991",)))
    stray = engine.analyze("x.to(d)\n", "train.py", Settings(select=("TL991",)))
    (_, finding), (_, other) = analysis.findings[0], stray.findings[0]
    with pytest.raises(transform.FixNotApplicable):
        transform.apply(analysis.module, [other.fix])
    assert transform.apply(analysis.module, [finding.fix]).code == "x = x.to(d)\n"
