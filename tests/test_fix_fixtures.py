"""Every fixture that `--fix --unsafe-fixes` changes has its expected result in fixtures/fixed/
under the same name, and every file there belongs to such a fixture.

The expected files were made with `torchlint --fix --unsafe-fixes` on a copy of fixtures/ and
each change was read and checked by hand. A fixed fixture compiles, is clean for every rule
whose fix was applied to it, and a second `--fix` leaves it unchanged; fixing with safe fixes
only gives a file that also compiles and settles.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from torchlint import engine
from torchlint.config import Settings
from torchlint.fixes import loop

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXED = FIXTURES / "fixed"
SCRIPTS = sorted(FIXTURES.glob("*.py"))
# Every rule, preview rules included, as the fixtures' expectations are.
EVERY_RULE = Settings(preview=True)


@functools.cache
def _fix(path: Path, unsafe: bool = True) -> loop.FixResult:
    return loop.fix_path(path, EVERY_RULE, unsafe)


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_fixture_fixes_to_its_expected_version(script: Path):
    result = _fix(script)
    expected = FIXED / script.name
    if not result.changed:
        assert not expected.exists(), f"{script.name} has nothing to fix, but fixed/{script.name} exists"
        return
    assert expected.exists(), f"{script.name} is fixable: add fixed/{script.name}"
    assert result.fixed_text == expected.read_text(encoding="utf-8")
    assert not result.dropped and result.converged


@pytest.mark.parametrize("fixed", sorted(FIXED.glob("*.py")), ids=lambda p: p.name)
def test_fixed_fixture_compiles_is_clean_for_the_fixed_rules_and_settles(fixed: Path):
    original = FIXTURES / fixed.name
    assert original.exists(), f"fixed/{fixed.name} has no fixture"
    applied = {candidate.code for candidate in _fix(original).applied}
    assert applied
    compile(fixed.read_text(encoding="utf-8"), str(fixed), "exec")
    remaining = {d.code for d in engine.check_path(fixed, EVERY_RULE).diagnostics}
    assert not applied & remaining, f"still reported after the fix: {sorted(applied & remaining)}"
    again = _fix(fixed)
    assert not again.changed and not again.applied


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_safe_fixes_alone_give_code_that_compiles_and_settles(script: Path):
    result = _fix(script, unsafe=False)
    assert all(candidate.fix.applicability.value == "safe" for candidate in result.applied)
    if result.changed:
        compile(result.fixed_text, script.name, "exec")
        assert not loop.fix_bytes(result.fixed_text.encode(), str(script), EVERY_RULE, False).changed
