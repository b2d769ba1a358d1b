"""Each script in fixtures/ is a realistic training script whose expected findings are marked by
trailing `# expect: TL006` comments (several codes: `# expect: TL003, TL004`) on the line the
finding must point at. torchlint must report exactly those (line, code) pairs: nothing missing,
nothing extra."""

from __future__ import annotations

import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

from torchlint import engine, registry
from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCRIPTS = sorted(FIXTURES.glob("*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>.*)$")
CODE = re.compile(r"TL\d{3}")
# Every rule, preview rules included.
EVERY_RULE = Settings(preview=True)


def expected_findings(source: str) -> set[tuple[int, str]]:
    """(line, code) pairs from `# expect:` comments; tokenize ensures they are real comments."""
    expected = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        match = EXPECT.search(token.string)
        if match is None:
            continue
        codes = [code.strip() for code in match["codes"].split(",")]
        if not codes or not all(CODE.fullmatch(code) for code in codes):
            raise ValueError(f"line {token.start[0]}: malformed expectation {token.string!r}")
        expected.update((token.start[0], code) for code in codes)
    return expected


@functools.cache
def diagnostics(path: Path) -> tuple[Diagnostic, ...]:
    return tuple(engine.check_path(path, EVERY_RULE).diagnostics)


def actual_findings(path: Path) -> set[tuple[int, str]]:
    return {(d.line, d.code) for d in diagnostics(path)}


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_findings_match_expectations(script: Path):
    expected = expected_findings(script.read_text(encoding="utf-8"))
    actual = actual_findings(script)
    missing = sorted(expected - actual)
    extra = sorted(actual - expected)
    assert not missing and not extra, f"{script.name}: missing {missing}, unexpected {extra}"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_no_message_recommends_a_statement_the_same_run_reports(script: Path):
    lines = script.read_text(encoding="utf-8").splitlines()
    found = diagnostics(script)
    for reported in found:
        line = lines[reported.line - 1]
        text = line[reported.column - 1 : reported.end.column - 1] if reported.end.line == reported.line else ""
        if not text or text != line.split("#", 1)[0].strip():
            continue  # not a whole statement
        for other in found:
            starts = [m.start() for m in re.finditer(re.escape(text), other.message)] if other is not reported else []
            # Naming the statement is fine; recommending it is not: only `x = <it>` may show it.
            assert all(other.message[:start].endswith("= ") for start in starts), (other.code, other.message, text)


def test_fixture_set_covers_every_rule():
    covered = {code for script in SCRIPTS for _, code in expected_findings(script.read_text(encoding="utf-8"))}
    assert covered == set(registry.all_rules())
    assert sum(not expected_findings(s.read_text(encoding="utf-8")) for s in SCRIPTS) >= len(SCRIPTS) // 3


def test_quick_start_fixture_has_sampler_and_batch_findings():
    codes = {code for _, code in expected_findings((FIXTURES / "ddp_train.py").read_text(encoding="utf-8"))}
    assert {"TL006", "TL007"} <= codes


def test_expectation_parser_reads_comments_only():
    source = (
        'note = "# expect: TL001"\n'
        "x.to(device)  # expect: TL003, TL004\n"
        "y = 1  # unrelated\n"
    )
    assert expected_findings(source) == {(2, "TL003"), (2, "TL004")}
    with pytest.raises(ValueError):
        expected_findings("z = 2  # expect: TL3\n")
