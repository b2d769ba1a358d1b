"""Every rule has a page, and every example on it does what the page says.

`bad` examples must produce the rule's finding, `good` ones must not, and a `fixed` example is
both valid Python and clean for the rule. The examples are also compiled, so a page never shows
code that does not parse.
"""

from __future__ import annotations

import re

import pytest

from torchlint import engine, pages, registry
from torchlint.config import Settings

CODES = list(registry.all_codes())
REQUIRED_SECTIONS = ("What it does", "Why it matters", "Example", "How to fix", "Options", "Known limits")


def _examples():
    for code in CODES:
        text = pages.page(code) or ""
        for index, example in enumerate(pages.examples(text)):
            yield pytest.param(code, example, id=f"{code}-{example.tag}-{index}")


@pytest.mark.parametrize("code", CODES)
def test_every_code_has_a_complete_page(code):
    text = pages.page(code)
    assert text is not None, f"rules/{code}.md is missing"
    rule = registry.all_codes()[code]
    assert text.splitlines()[0] == f"# {code}: {rule.name}"
    for heading in REQUIRED_SECTIONS:
        assert re.search(rf"^## {re.escape(heading)}\b", text, re.MULTILINE), f"{code}: no '## {heading}'"
    tags = [example.tag for example in pages.examples(text)]
    assert "bad" in tags and "good" in tags, f"{code}: needs a bad and a good example"
    if getattr(rule, "fix_applicability", None) is not None:
        assert "fixed" in tags, f"{code} has a fix: its page shows the fixed example"


@pytest.mark.parametrize(("code", "example"), list(_examples()))
def test_page_example_behaves_as_labelled(code, example):
    found = [d.code for d in engine.check_source(example.code, f"{code}_{example.tag}.py", Settings(preview=True))]
    if code == registry.COULD_NOT_CHECK.code:
        assert (code in found) == (example.tag == "bad"), found
        return
    compile(example.code, f"rules/{code}.md", "exec")
    assert "TL000" not in found
    if example.tag == "bad":
        assert code in found, f"the bad example of {code} (page line {example.line}) is not reported"
    else:
        assert code not in found, f"the {example.tag} example of {code} (page line {example.line}) is reported"
