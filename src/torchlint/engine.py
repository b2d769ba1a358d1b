"""The engine: one file's bytes -> text -> tree -> semantic model -> diagnostics.

Every front end (CLI, flake8, LSP, pre-commit, confirm) calls `analyze` or `check_source`;
nothing else parses or runs rules.
"""

from __future__ import annotations

import os
import symtable
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import libcst as cst

from torchlint import ISSUES_URL, memory, noqa, notebook, parsing, prefilter, profile, registry
from torchlint.analysis import CANNOT_CHECK, Analysis, read  # noqa: F401 - CANNOT_CHECK: the front ends' name for TL000
from torchlint.analysis import cannot_check as _cannot_check
from torchlint.cache import content_digest
from torchlint.config import Settings
from torchlint.diagnostics import Diagnostic, Position
from torchlint.fixes.text import TextFixes
from torchlint.incremental import Reparser
from torchlint.model import Model, nesting_depth
from torchlint.positions import Positions
from torchlint.project import index as project_index
from torchlint.source import SourceText, UndecodableSource, decode

NOTEBOOK_SUFFIX = ".ipynb"
TOO_DEEP = "expression too deeply nested to analyse"
# Syntax trees up to this many levels deep are always analysed (CPython itself stops at 200
# nested brackets). Past it, running out of stack is the file's nesting; below it, a bug.
NESTING_LIMIT = 200
_NOT_A_FILE = "<torchlint>"


def is_notebook(path: str) -> bool:
    return path.endswith(NOTEBOOK_SUFFIX)


def _internal_error(path: str, where: str, what: str) -> Diagnostic:
    return _cannot_check(path, f"internal error in {where}: {what}; please report it at {ISSUES_URL}")


def _rule_failed(path: str, rule: type[registry.Rule], what: str) -> Diagnostic:
    return _internal_error(path, f"rule {rule.code} ({rule.name}) on this file", what)


def _out_of_stack(path: str, module: cst.Module, too_deep: str, where: str, error: RecursionError) -> Diagnostic:
    """A RecursionError is the file's nesting when its tree is deeper than NESTING_LIMIT (measured
    here without recursion), and a bug of torchlint's otherwise."""
    depth = nesting_depth(module)
    if depth > NESTING_LIMIT:
        return _cannot_check(path, f"{too_deep} ({depth} levels; torchlint always analyses up to {NESTING_LIMIT})")
    return _internal_error(path, where, repr(error))


def check_source(data: bytes | str, path: str, settings: Settings | None = None) -> list[Diagnostic]:
    return analyze(data, path, settings).diagnostics


def check_path(path: Path, settings: Settings | None = None) -> Analysis:
    """Read and check one file; an unreadable or missing file is a TL000 diagnostic."""
    data = read(path)
    if isinstance(data, Diagnostic):
        return Analysis(data.path, [data])
    return analyze(data, os.fspath(path), settings)


def parse(text: str, path: str, parse_module: Callable[[str], cst.Module] | None = None) -> cst.Module | Diagnostic:
    """Parse with LibCST, or return the TL000 diagnostic that explains why not.

    CPython's own parser runs first (see `syntax_error`), on the whole text however the tree is
    then made (``parse_module``: a document's `Reparser.parse` may reuse its previous tree);
    LibCST then parses what CPython accepted.
    """
    error = syntax_error(text, path)
    if error is not None:
        return error
    try:
        with profile.timer(profile.PARSE):
            return (parse_module or parsing.parse_module)(text)
    except cst.ParserSyntaxError as error:
        # Python itself accepted the file: this is a limit of LibCST, not an error in the code.
        message = f"Python accepts this code but LibCST, torchlint's parser, does not: {error.message}"
        return _cannot_check(path, message, error.raw_line, error.raw_column + 1)
    except RecursionError:
        return _cannot_check(path, TOO_DEEP)


def syntax_error(text: str, path: str) -> Diagnostic | None:
    """CPython's verdict on the source: it is fast (a sixth of a LibCST parse), bounded for
    pathological nesting, and gives the familiar messages. `symtable` runs CPython's parser
    without turning its tree into Python objects, which costs a third less than `ast.parse`
    (on 3,861 files of public training code both accept and reject exactly the same files)."""
    try:
        with profile.timer(profile.SYNTAX), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes is not ours to report
            # Not the file's name: for an error at the end of the text (a bracket never closed)
            # CPython reads the line from that file, and an editor's unsaved text, or a
            # notebook's cells, are not what is on disk (the column came out clamped to its line).
            symtable.symtable(text, _NOT_A_FILE, "exec")
    except SyntaxError as error:
        return _cannot_check(path, f"SyntaxError: {error.msg}", error.lineno or 1, error.offset or 1)
    except (RecursionError, MemoryError):
        return _cannot_check(path, TOO_DEEP)
    except ValueError as error:  # e.g. "source code string cannot contain null bytes"
        return _cannot_check(path, f"SyntaxError: {error}")
    return None


def analyze(data: bytes | str, path: str, settings: Settings | None = None, reparser: Reparser | None = None) -> Analysis:
    """``reparser``: the document's, when the file was checked before in this process (an editor's
    successive texts): only the statements an edit changed are parsed again."""
    settings = settings or Settings()
    if is_notebook(path):
        return _analyze_notebook(data, path, settings, reparser)
    return _analyze_python(data, path, settings, reparser=reparser)


def _analyze_python(
    data: bytes | str, path: str, settings: Settings, cell_starts: tuple[int, ...] = (), reparser: Reparser | None = None
) -> Analysis:
    result = Analysis(path)
    try:
        source = _source_text(data)
    except UndecodableSource as error:
        result.diagnostics.append(_cannot_check(path, error.message, error.line, error.column))
        return result
    result.source = source
    exempt = noqa.file_exemptions(source.text)
    if exempt is noqa.ALL:
        return result
    codes = settings.enabled_codes - exempt - settings.ignored_for_path(path)
    if not prefilter.can_fire(source.text, codes):
        # No enabled rule can fire here, so a syntax error is all there is to report.
        profile.count(profile.SKIPPED)
        error = syntax_error(source.text, path)
        result.diagnostics.extend([error] if error is not None else [])
        return result
    digest = content_digest(data if isinstance(data, bytes) else data.encode())
    parsed, like = _parse_once(digest, source.text, path, reparser)
    if isinstance(parsed, Diagnostic):
        result.diagnostics.append(parsed)
        return result
    result.module = parsed
    rules = [rule.load() for code, rule in registry.all_rules().items() if code in codes]
    if not rules:
        return result
    _run_rules(result, parsed, rules, settings, cell_starts, None if cell_starts else digest, like)
    return result


def _source_text(data: bytes | str) -> SourceText:
    """The file's text: bytes decoded as Python reads a source file (UndecodableSource when they
    cannot be), or an editor's text as it is."""
    return decode(data) if isinstance(data, bytes) else SourceText(data, "utf-8", False)


def _parse_once(
    digest: str, text: str, path: str, reparser: Reparser | None
) -> tuple[cst.Module | Diagnostic, Model | None]:
    """The file's tree: the one this process parsed for the project summary of the same contents
    that a file importing it needed (taken over, never shared with a later check, with a model
    whose one pass the check's model takes over), else a fresh parse (in a batch run, out of the
    cycle collector's sight: see memory.py)."""
    if not is_notebook(path):
        taken = project_index.shared().take_tree(os.path.abspath(path), digest)
        if taken is not None:
            return taken
    if reparser is not None:
        return parse(text, path, reparser.parse), None
    return memory.frozen(parse, text, path), None


def _analyze_notebook(data: bytes | str, path: str, settings: Settings, reparser: Reparser | None) -> Analysis:
    """A notebook's code cells checked as one script, diagnostics addressed by cell. The tree and
    findings are of the joined cells; the source is the notebook file's text, which `--fix`
    rewrites through the cells (fixes/cells.py)."""
    try:
        source = notebook.load(data)
    except notebook.InvalidNotebook as error:
        return Analysis(path, [_cannot_check(path, error.message, error.line, error.column)])
    if source is None:
        return Analysis(path)
    checked = _analyze_python(source.text, path, settings, tuple(first for first, _ in source.starts), reparser)
    result = Analysis(path, notebook.to_cells(checked.diagnostics, source), module=checked.module, findings=checked.findings)
    try:
        result.source = _source_text(data)
    except UndecodableSource:
        pass  # JSON in UTF-16 or UTF-32: read, but not rewritten
    return result


def _run_rules(
    result: Analysis,
    module: cst.Module,
    rules: Iterable[type[registry.Rule]],
    settings: Settings,
    cell_starts: tuple[int, ...] = (),
    digest: str | None = None,
    like: Model | None = None,
) -> None:
    """``digest``: the file's content digest, when its tree may be kept for the project's later
    checks (not a notebook's joined cells); ``like``: a model of the same tree whose one pass the
    file's model takes over."""
    path = result.path
    try:
        with profile.timer(profile.MODEL):
            model = memory.frozen(Model, module, path, like)
            model.cell_starts = cell_starts
            model.project = project_index.FileView.for_file(project_index.shared(), path, model)
    except RecursionError as error:
        result.diagnostics.append(_out_of_stack(path, module, TOO_DEEP, "the semantic model", error))
        return
    except Exception as error:  # noqa: BLE001 - a bug in the model must not cost the user the run
        result.diagnostics.append(_internal_error(path, "the semantic model", repr(error)))
        return
    try:
        _check_model(result, model, rules, settings, digest)
    finally:
        memory.release(model)


def _check_model(
    result: Analysis, model: Model, rules: Iterable[type[registry.Rule]], settings: Settings, digest: str | None
) -> None:
    path, module = result.path, model.module
    findings: list[tuple[type[registry.Rule], registry.Finding]] = []
    errors: list[Diagnostic] = []
    for rule in rules:
        try:
            with profile.timer(f"rule {rule.code} {rule.name}"):
                findings.extend((rule, finding) for finding in rule().check(model, settings.options_for(rule)))
        except RecursionError as error:
            too_deep = f"expression too deeply nested for rule {rule.code} ({rule.name})"
            errors.append(_out_of_stack(path, module, too_deep, f"rule {rule.code} ({rule.name}) on this file", error))
        except Exception as error:  # noqa: BLE001 - one failing rule must not stop the others
            errors.append(_rule_failed(path, rule, repr(error)))
    result.diagnostics.extend(errors)
    result.used = model.project.used
    if digest is not None:
        # files checked after it may import it (their summaries of it read it) or call into it
        # (their callers do)
        model.project.index.keep_tree(model, digest, result.source.text)
    if not findings:
        return
    # Positions are computed only for the top-level statements that hold findings.
    try:
        with profile.timer(profile.LOCATE):
            positions = Positions(module, result.source.text, model.parent)
            spans = [(rule, finding, positions.get(finding.node)) for rule, finding in findings]
    except RecursionError as error:
        result.diagnostics.append(_out_of_stack(path, module, TOO_DEEP, "finding positions", error))
        return
    text_fixes = TextFixes(module, result.source.text, positions, model.parent)
    suppressions = noqa.line_suppressions(result.source.text)
    located = []
    for rule, finding, span in spans:
        if span is None:
            result.diagnostics.append(_rule_failed(path, rule, "it reported a node that is not part of the file"))
            continue
        start = Position(span.start.line, span.start.column + 1)
        end = Position(span.end.line, span.end.column + 1)
        if suppressions and noqa.is_suppressed(rule.code, _noqa_lines(model, positions, finding.node, span), suppressions):
            continue
        diagnostic = Diagnostic(
            rule.code, finding.message, path, start, end, rule.severity, text_fixes.convert(finding.fix)
        )
        located.append((diagnostic, finding, rule.code))
    located.sort(key=lambda item: item[0].sort_key())
    for diagnostic, finding, code in located:
        result.diagnostics.append(diagnostic)
        result.findings.append((code, finding))
    result.diagnostics.sort(key=Diagnostic.sort_key)


def _noqa_lines(model: Model, positions: Positions, node: cst.CSTNode, span) -> tuple[int, ...]:
    """Lines whose noqa comment covers a finding: the node's own first and last line, and the
    first and last line of the simple statement line around it (a multi-line call, say)."""
    lines = {span.start.line, span.end.line}
    statement = next((n for n in (node, *model.ancestors(node)) if isinstance(n, cst.SimpleStatementLine)), None)
    if statement is not None:
        where = positions[statement]
        if where.start.line <= span.start.line and span.end.line <= where.end.line:
            lines.update((where.start.line, where.end.line))
    return tuple(sorted(lines))
