"""Test-only rules for the engine and front-end tests, so they do not depend on the real rules
(written and changed independently): TL900 from probe_rule.py flags `probe()` calls (option
`names` under `[tool.torchlint.probe]`), TL901 below flags `other()` calls and fails with an
exception on any file that calls `explode()`, standing in for a rule with a bug; TL902 flags
`unstable()` calls and is a preview rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from probe_rule import ProbeRule
from torchlint import registry


class OtherRule(ProbeRule):
    code = "TL901"
    name = "other-call"
    summary = "a call of other() (test-only rule); fails on files that call explode()"
    options_table = None
    default_options: Mapping[str, Any] = {"names": ["other"]}

    def check(self, model, options) -> Iterator[registry.Finding]:
        if "explode(" in model.module.code:
            raise RuntimeError("explode() called")
        yield from super().check(model, options)


class UnstableRule(ProbeRule):
    code = "TL902"
    name = "unstable-call"
    summary = "a call of unstable() (test-only preview rule)"
    preview = True
    options_table = None
    default_options: Mapping[str, Any] = {"names": ["unstable"]}


RULES = {ProbeRule.code: ProbeRule, OtherRule.code: OtherRule}


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make TL900 and TL901 the only rules for the rest of the test."""
    monkeypatch.setattr(registry, "all_rules", lambda: dict(RULES))


def install_with_preview(monkeypatch: pytest.MonkeyPatch) -> None:
    """TL900 and TL901, and the preview rule TL902."""
    monkeypatch.setattr(registry, "all_rules", lambda: {**RULES, UnstableRule.code: UnstableRule})
