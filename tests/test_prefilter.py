"""The prefilter: files without any evidence word skip LibCST and the rules, and that never
changes a result."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import torchlint
from torchlint import engine, prefilter, registry
from torchlint.config import Settings
from perf_support import corpus

from probe_rule import ProbeRule

SOURCES = corpus()


def _full_check(monkeypatch) -> None:
    monkeypatch.setattr(prefilter, "can_fire", lambda text, codes: True)


def _hidden(text: str) -> str:
    """The source with every evidence word broken up (`torch` -> `t_orch`, `"cuda"` ->
    `"c_uda"`): identifiers stay identifiers and strings stay strings."""
    for word in prefilter.evidence_words():
        text = text.replace(word, f"{word[0]}_{word[1:]}")
    return text


def test_the_words_are_the_ecosystem_packages_and_device_names():
    words = prefilter.evidence_words()
    assert {"torch", "timm", "transformers", "lightning", "cuda", "mps"} <= set(words)
    # Readers such as logging or json would let almost every file through.
    assert not {"logging", "json", "os", "tqdm"} & set(words)


def test_every_package_the_knowledge_names_is_classified():
    roots = prefilter.knowledge_roots()
    covered = {root for root in roots if any(word in root for word in prefilter.evidence_words())}
    assert roots - covered <= prefilter.READERS_ONLY
    assert roots & prefilter.READERS_ONLY, "readers are packages the knowledge names"


def test_qualified_names_in_the_model_and_rules_are_covered_too():
    """Names the model or a rule hard-codes instead of taking them from the knowledge tables."""
    package = Path(torchlint.__file__).parent
    unknown = set()
    for source in [*sorted((package / "model").glob("*.py")), *sorted((package / "rules").glob("*.py"))]:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                unknown.update(
                    (source.name, node.value)
                    for root in prefilter._roots_in(node.value)
                    if root != "self"
                    and root not in prefilter.READERS_ONLY
                    and not any(word in root for word in prefilter.evidence_words())
                )
    assert not unknown, f"packages the prefilter does not know (add evidence to the knowledge, or a reader): {sorted(unknown)}"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_no_rule_fires_once_the_evidence_words_are_gone(name, monkeypatch):
    """The soundness argument, tried on every fixture, rule example and generated script: with
    the words hidden, the full check finds nothing, so skipping it (a syntax check only) gives
    the same result."""
    hidden = _hidden(SOURCES[name])
    assert not prefilter.can_fire(hidden, Settings().enabled_codes)
    skipped = engine.check_source(hidden, name, Settings())
    _full_check(monkeypatch)
    checked = engine.check_source(hidden, name, Settings())
    assert [d for d in checked if d.code != "TL000"] == []
    assert skipped == checked


def test_a_file_without_evidence_is_never_parsed_by_libcst(monkeypatch):
    def fail(text):
        raise AssertionError("parsed")

    monkeypatch.setattr(engine.cst, "parse_module", fail)
    assert engine.check_source("import numpy as np\nprint(np.zeros(3))\n", "util.py", Settings()) == []
    with pytest.raises(AssertionError, match="parsed"):
        engine.check_source("import torch\n", "train.py", Settings())


def test_syntax_errors_are_reported_in_files_without_torch():
    broken = "def f(:\n    pass\n"
    diagnostics = engine.check_source(broken, "util.py", Settings())
    assert [(d.code, d.line, d.column) for d in diagnostics] == [("TL000", 1, 7)]
    # the same diagnostic as where the full check runs
    assert diagnostics[0].message == engine.check_source("import torch\n" + broken, "t.py", Settings())[0].message


def test_undecodable_files_without_torch_are_still_reported():
    diagnostics = engine.check_source(b"# coding: utf-8\nx = '\xff'\n", "util.py", Settings())
    assert [d.code for d in diagnostics] == ["TL000"]


def test_no_rule_selected_means_nothing_to_parse(monkeypatch):
    monkeypatch.setattr(engine.cst, "parse_module", lambda text: pytest.fail("parsed"))
    settings = Settings().with_overrides(ignore=["TL0"])
    assert settings.enabled_codes == frozenset()
    assert engine.check_source("import torch\nx = torch.zeros(3)\n", "train.py", settings) == []


def test_a_rule_the_prefilter_does_not_know_sees_every_file(monkeypatch):
    """A new rule or a plugin is never filtered out: here the test-only probe rule, which
    fires on a call of probe() in a file without torch."""
    rules = {**registry.all_rules(), ProbeRule.code: ProbeRule}
    monkeypatch.setattr(registry, "all_rules", lambda: rules)
    found = engine.check_source("probe()\n", "util.py", Settings())
    assert [d.code for d in found] == [ProbeRule.code]
