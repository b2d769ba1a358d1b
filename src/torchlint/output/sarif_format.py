"""SARIF 2.1.0, with each rule's metadata taken from its rules/ page."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from torchlint import __version__, pages, registry
from torchlint.diagnostics import Diagnostic

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule_descriptor(code: str, rule) -> dict:
    text = pages.page(code) or ""
    descriptor = {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "helpUri": pages.url(code),
        "defaultConfiguration": {"level": rule.severity.value},
    }
    full = pages.section(text, "What it does")
    if full:
        descriptor["fullDescription"] = {"text": full}
    if text:
        descriptor["help"] = {"text": rule.summary, "markdown": text}
    return descriptor


def _uri(path: str) -> str:
    """A URI reference: relative paths stay relative (to the run's folder), percent-encoded."""
    candidate = Path(path)
    return quote(candidate.as_posix()) if not candidate.is_absolute() else candidate.as_uri()


def _region(start, end) -> dict:
    return {"startLine": start.line, "startColumn": start.column, "endLine": end.line, "endColumn": end.column}


def _result(d: Diagnostic, rule_index: dict[str, int]) -> dict:
    location: dict = {"artifactLocation": {"uri": _uri(d.path)}}
    properties: dict = {}
    if d.cell is None:
        location["region"] = _region(d.start, d.end)
        message = d.message
    else:
        # A region would count lines of the notebook's JSON; the cell position goes in the text.
        message = f"{d.where}: {d.message}"
        properties["cell"] = d.cell
    result = {
        "ruleId": d.code,
        "ruleIndex": rule_index[d.code],
        "level": d.severity.value,
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
    }
    if d.fix is not None and d.fix.edits and d.cell is None:  # a cell's edits count lines of the cell
        result["fixes"] = [
            {
                "description": {"text": d.fix.message},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(d.path)},
                        "replacements": [
                            {"deletedRegion": _region(e.start, e.end), "insertedContent": {"text": e.content}}
                            for e in d.fix.edits
                        ],
                    }
                ],
            }
        ]
    if d.confirmation:
        properties["confirmation"] = d.confirmation
    if properties:
        result["properties"] = properties
    return result


def render(diagnostics: Sequence[Diagnostic]) -> str:
    codes = registry.all_codes()
    # `torchlint confirm` adds runtime-only findings; describe those codes only when they occur.
    codes.update({d.code: registry.RUNTIME_CODES[d.code] for d in diagnostics if d.code in registry.RUNTIME_CODES})
    rule_index = {code: index for index, code in enumerate(codes)}
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchlint",
                        "version": __version__,
                        "informationUri": "https://github.com/torchlint/torchlint",
                        "rules": [_rule_descriptor(code, rule) for code, rule in codes.items()],
                    }
                },
                "results": [_result(d, rule_index) for d in diagnostics],
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"
