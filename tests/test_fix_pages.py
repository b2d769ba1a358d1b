"""A rule page's `fixed` example is exactly what `--fix --unsafe-fixes` makes of the `bad`
example before it (with that rule alone selected), and every rule with a fix says on its page
whether the fix is safe."""

from __future__ import annotations

import re

import pytest

from torchlint import pages, registry
from torchlint.config import Settings
from torchlint.fixes import loop

FIXABLE = [code for code, rule in registry.all_rules().items() if rule.fix_applicability is not None]


def _pairs():
    for code in FIXABLE:
        examples = pages.examples(pages.page(code) or "")
        for index, example in enumerate(examples):
            if example.tag == "fixed":
                bad = [e for e in examples[:index] if e.tag == "bad"]
                yield pytest.param(code, bad[-1] if bad else None, example, id=f"{code}-line-{example.line}")


def test_the_fixable_rules_are_the_expected_ones():
    assert {"TL002", "TL003", "TL004", "TL006"} <= set(FIXABLE)


@pytest.mark.parametrize(("code", "bad", "fixed"), list(_pairs()))
def test_fixed_example_is_what_the_fix_makes_of_the_bad_one(code, bad, fixed):
    assert bad is not None, f"{code}: a fixed example needs a bad example before it"
    result = loop.fix_bytes(bad.code.encode(), f"{code}_bad.py", Settings(select=(code,), preview=True), unsafe=True)
    assert [candidate.code for candidate in result.applied] and not result.dropped
    assert result.fixed_text == fixed.code


@pytest.mark.parametrize("code", FIXABLE)
def test_page_says_whether_the_fix_is_safe(code):
    text = pages.page(code) or ""
    how = pages.section(text, "How to fix")
    assert re.search(r"\b(safe|unsafe)\b", how), f"{code}: 'How to fix' must say whether the fix is safe and why"
