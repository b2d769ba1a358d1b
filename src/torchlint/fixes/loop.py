"""`--fix` for one file: apply fixes, re-parse and re-check, keep what works, repeat until stable.

Each pass applies every selected fix whose edits do not touch another's (ruff's rule), with one
transformer, then checks the result; unsafe fixes (with --unsafe-fixes) come only once no safe
fix is left. A pass is kept only when the new code parses, no rule fails on it, and every
applied fix removed its own finding; otherwise the fixes of that pass are tried one at a time
and those that fail on their own are dropped and reported, leaving the code as it was for them.
The loop ends when no fix is left, after at most MAX_PASSES passes.

In a notebook the fixes are the text edits of its cells (fixes/cells.py), offered only where they
can be written into the cell, and each pass re-checks the rewritten notebook.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchlint import engine, registry, runner
from torchlint.config import ConfigResolver, Settings
from torchlint.diagnostics import Applicability, Diagnostic, Edit, offered
from torchlint.fixes import cells
from torchlint.fixes.transform import apply
from torchlint.source import SourceText, encode

MAX_PASSES = 100


@dataclass(frozen=True)
class Candidate:
    """A reported finding with a fix, and its diagnostic (where it is, and its text edits)."""

    code: str
    finding: registry.Finding
    diagnostic: Diagnostic

    @property
    def fix(self) -> registry.NodeFix:
        assert self.finding.fix is not None
        return self.finding.fix

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.code, self.finding.message, self.fix.message)


@dataclass(frozen=True)
class Dropped:
    """A fix that was not applied, and why."""

    candidate: Candidate
    reason: str


@dataclass
class FixResult:
    path: str
    # The last check: what remains to report. Its source is the fixed text.
    analysis: engine.Analysis
    source: SourceText | None = None  # the file as read: its encoding and BOM are kept
    fixed_text: str | None = None
    applied: list[Candidate] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    converged: bool = True

    @property
    def changed(self) -> bool:
        return self.source is not None and self.fixed_text is not None and self.fixed_text != self.source.text

    def fixed_bytes(self) -> bytes:
        assert self.source is not None and self.fixed_text is not None
        return encode(self.source, self.fixed_text)


def fix_path(path: Path, settings: Settings, unsafe: bool) -> FixResult:
    return fix_analysis(engine.check_path(path, settings), settings, unsafe)


def fix_bytes(data: bytes, path: str, settings: Settings, unsafe: bool) -> FixResult:
    return fix_analysis(engine.analyze(data, path, settings), settings, unsafe)


def fix_analysis(analysis: engine.Analysis, settings: Settings, unsafe: bool) -> FixResult:
    """Fix the file ``analysis`` checked. A file that did not parse is returned unchanged."""
    result = FixResult(analysis.path, analysis, analysis.source)
    if analysis.module is None or analysis.source is None:
        return result
    result.fixed_text = analysis.source.text
    _run_passes(result, settings, unsafe)
    if result.changed:
        try:
            result.fixed_bytes()
        except UnicodeEncodeError:
            reason = f"the fixed code cannot be written in the file's encoding ({result.source.encoding})"
            kept = FixResult(analysis.path, analysis, analysis.source, analysis.source.text)
            kept.dropped = [Dropped(candidate, reason) for candidate in result.applied]
            return kept
    return result


def _run_passes(result: FixResult, settings: Settings, unsafe: bool) -> None:
    rejected: set[tuple[str, str, str]] = set()
    for index in range(MAX_PASSES):
        candidates = [c for c in candidates_of(result.analysis, unsafe) if c.key not in rejected]
        if not candidates:
            return
        if (
            index == 0
            and not engine.is_notebook(result.analysis.path)  # rewritten through its cells, not the tree
            and result.analysis.module.code != result.fixed_text
        ):
            # LibCST renders a few rare files differently from how they were read (old Mac `\r`
            # line endings lose the final one): writing its output would change untouched code.
            reason = "this file's text does not survive a round trip through the parser unchanged"
            result.dropped.extend(Dropped(candidate, reason) for candidate in candidates)
            return
        # Safe fixes go first and the file is re-checked before any unsafe one: an unsafe fix
        # whose finding a safe fix already removed is then never applied.
        safe = [c for c in candidates if c.fix.applicability is Applicability.SAFE]
        batch = _compatible(safe or candidates)
        checked, reason = _attempt(result.analysis, batch, settings)
        if checked is None and len(batch) > 1:
            batch, checked = _one_at_a_time(result, batch, settings, rejected)
        elif checked is None:
            result.dropped.append(Dropped(batch[0], reason))
            rejected.add(batch[0].key)
        if checked is not None:
            result.applied.extend(batch)
            result.analysis = checked
            result.fixed_text = checked.source.text
    result.converged = False


def candidates_of(analysis: engine.Analysis, unsafe: bool) -> list[Candidate]:
    """The findings whose fixes this run may apply, in position order.

    The engine lists findings in the order of their diagnostics (TL000 aside), so the two are
    paired by position in those lists; a pair whose code or message disagree is skipped.
    """
    located = [d for d in analysis.diagnostics if d.code != engine.CANNOT_CHECK]
    candidates = []
    for diagnostic, (code, finding) in zip(located, analysis.findings):
        if diagnostic.code != code or diagnostic.message != finding.message or finding.fix is None:
            continue
        if finding.fix.applicability is Applicability.UNSAFE and not unsafe:
            continue
        if diagnostic.cell is not None and diagnostic.fix is None:
            continue  # a notebook fix that cannot be written into its cell
        candidates.append(Candidate(code, finding, diagnostic))
    return candidates


def _compatible(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates, in order, whose edits neither overlap nor touch earlier chosen ones.

    An edit identical to one already chosen is shared, not a conflict: two fixes that add the
    same import add it once. A fix without text edits (its conversion failed) is tried on its
    own so that its failure is reported."""
    chosen: list[Candidate] = []
    taken: set[tuple[int | None, Edit]] = set()  # a notebook's edits are per cell
    for candidate in candidates:
        text_fix = candidate.diagnostic.fix
        if text_fix is None or not text_fix.edits:
            if not chosen:
                return [candidate]
            continue
        cell = candidate.diagnostic.cell
        edits = [(cell, edit) for edit in text_fix.edits if (cell, edit) not in taken]
        if any(
            cell == other_cell and edit.start <= other.end and other.start <= edit.end
            for cell, edit in edits
            for other_cell, other in taken
        ):
            continue
        chosen.append(candidate)
        taken.update(edits)
    return chosen


def _attempt(
    analysis: engine.Analysis, batch: list[Candidate], settings: Settings
) -> tuple[engine.Analysis | None, str]:
    """Apply ``batch`` and re-check; the new analysis, or None and the reason it was refused."""
    assert analysis.module is not None and analysis.source is not None
    try:
        if engine.is_notebook(analysis.path):
            text = cells.apply(analysis.source.text, [candidate.diagnostic for candidate in batch])
        else:
            text = apply(analysis.module, [candidate.fix for candidate in batch]).code
    except cells.CannotRewrite as error:
        return None, str(error)
    except Exception as error:  # noqa: BLE001 - a broken fix is dropped and reported, never fatal
        return None, f"the fix does not apply to this code ({error})"
    checked = engine.analyze(text, analysis.path, settings)
    if checked.module is None:
        problem = checked.diagnostics[0].message if checked.diagnostics else "it could not be read"
        return None, f"the fixed code does not parse ({problem})"
    before_errors = sum(d.code == engine.CANNOT_CHECK for d in analysis.diagnostics)
    errors = [d for d in checked.diagnostics if d.code == engine.CANNOT_CHECK]
    if len(errors) > before_errors:
        return None, f"a rule fails on the fixed code ({errors[0].message})"
    before = collections.Counter((code, finding.message) for code, finding in analysis.findings)
    after = collections.Counter((code, finding.message) for code, finding in checked.findings)
    removed = collections.Counter((candidate.code, candidate.finding.message) for candidate in batch)
    for key, count in removed.items():
        if after[key] > before[key] - count:
            return None, "the fixed code still has the finding the fix was meant to remove"
    return checked, ""


def _one_at_a_time(
    result: FixResult, batch: list[Candidate], settings: Settings, rejected: set
) -> tuple[list[Candidate], engine.Analysis | None]:
    """After a batch failed: drop the fixes that fail alone, apply the first that works alone.
    The others are retried on the next pass, against the new code."""
    for candidate in batch:
        checked, reason = _attempt(result.analysis, [candidate], settings)
        if checked is not None:
            return [candidate], checked
        result.dropped.append(Dropped(candidate, reason))
        rejected.add(candidate.key)
    return [], None


def fix_files(
    paths: Sequence[Path], resolver: ConfigResolver, options: runner.RunOptions, unsafe: bool
) -> Iterator[FixResult]:
    """Results in input order, each file fixed with its own settings.

    The files are first checked the usual way (in parallel, through the result cache); only those
    with a fix this run may apply are read again and fixed."""
    for path, analysis in zip(paths, runner.check_files(paths, resolver, options)):
        if any(offered(diagnostic, unsafe) for diagnostic in analysis.diagnostics):
            yield fix_path(path, resolver.for_path(path), unsafe)
        else:
            yield FixResult(analysis.path, analysis)
