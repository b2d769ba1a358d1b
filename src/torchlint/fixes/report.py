"""What the CLI prints about fixes: unified diffs, the list of applied fixes, dropped fixes."""

from __future__ import annotations

import collections
import difflib
from collections.abc import Iterable

from torchlint import engine, registry
from torchlint.fixes import cells
from torchlint.fixes.loop import MAX_PASSES, FixResult
from torchlint.fixes.text import split_lines


def unified_diff(result: FixResult) -> str:
    """The change `--fix` would make to one file, as `diff -u` prints it; in a notebook, the change
    to each code cell, named `path:cell N` (ruff's way), rather than to its JSON."""
    if not result.changed:
        return ""
    assert result.source is not None and result.fixed_text is not None
    if not engine.is_notebook(result.path):
        return _diff(result.source.text, result.fixed_text, result.path)
    pairs = zip(cells.code_sources(result.source.text), cells.code_sources(result.fixed_text))
    return "".join(
        _diff(before, after, f"{result.path}:cell {number}")
        for number, (before, after) in enumerate(pairs, start=1)
        if before != after
    )


def _diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(split_lines(before), split_lines(after), name, name)
    out = []
    for line in lines:
        out.append(line)
        if not line.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def fixed_summary(results: Iterable[FixResult], verb: str = "Fixed") -> str:
    """ruff's `--show-fixes` list: per file, how many findings of each rule were fixed."""
    results = [result for result in results if result.applied]
    total = sum(len(result.applied) for result in results)
    if not total:
        return f"No findings {'fixed' if verb == 'Fixed' else 'to fix'}.\n"
    names = registry.all_codes()
    out = [f"{verb} {total} finding{'s' if total != 1 else ''}:\n"]
    for result in results:
        out.append(f"- {result.path}:\n")
        counts = collections.Counter(candidate.code for candidate in result.applied)
        for code, count in sorted(counts.items()):
            out.append(f"    {count} \u00d7 {code} ({names[code].name})\n")
    return "".join(out)


def dropped_warnings(results: Iterable[FixResult]) -> str:
    """One line per fix that was tried and not kept, and per file whose fixes did not settle."""
    out = []
    for result in results:
        for dropped in result.dropped:
            d = dropped.candidate.diagnostic
            out.append(f"warning: {d.path}:{d.line}:{d.column}: {d.code} fix not applied: {dropped.reason}\n")
        if not result.converged:
            out.append(f"warning: {result.path}: fixes did not settle after {MAX_PASSES} passes; the file is fixed partly\n")
    return "".join(out)

