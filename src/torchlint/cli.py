"""The command line: `torchlint [check] PATH...`, `torchlint rules`, `torchlint explain CODE`.

Conventions follow ruff: exit 0 when nothing is found, 1 when something is, 2 for usage errors,
invalid configuration and internal errors.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import sys
from pathlib import Path

import click

from torchlint import ISSUES_URL, __version__, output, registry
from torchlint.config import ConfigError, ConfigResolver
from torchlint.diagnostics import offered

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _DefaultToCheck(click.Group):
    """A group whose default subcommand is `check`, so `torchlint train.py` keeps working."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        elif not args:
            args = ["check"]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        """Run the subcommand; a bug in torchlint ends the run with one clear line and exit 2."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, BrokenPipeError):
            raise  # click reports these itself (a closed pipe, `torchlint . | head`, exits quietly)
        except Exception as error:  # noqa: BLE001 - the one place an unexpected error is reported
            if os.environ.get("TORCHLINT_TRACEBACK"):
                raise
            click.echo(f"error: internal error in torchlint: {type(error).__name__}: {error}", err=True)
            click.echo(
                f"This is a bug: please report it at {ISSUES_URL} with the command and, if you can, the file "
                "(set TORCHLINT_TRACEBACK=1 to print the traceback).",
                err=True,
            )
            ctx.exit(EXIT_ERROR)


class _CannotRun(click.ClickException):
    """An invalid configuration, an unknown rule code or a missing part of the installation:
    `Error: ...` and exit 2 (exit 1 means findings)."""

    exit_code = EXIT_ERROR


def _codes(value: tuple[str, ...]) -> list[str]:
    """Accept `--select TL001,TL002` as well as repeated options."""
    return [code.strip() for item in value for code in item.split(",") if code.strip()]


@click.group(cls=_DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="torchlint", message="%(prog)s %(version)s")
def main() -> None:
    """torchlint: finds the bugs in PyTorch training scripts that never crash.

    Run `torchlint PATH...` (the same as `torchlint check PATH...`).
    """


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the configured set).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--preview/--no-preview", default=None, help="Enable (or disable) preview rules, overriding `preview` in the configuration.")
@click.option(
    "--format",
    "--output-format",
    "fmt",
    type=click.Choice(output.FORMATS),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option("--statistics", is_flag=True, help="Show counts per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit with 0 even when findings are reported.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), help="Configuration file to use instead of discovery.")
@click.option("--stdin-filename", help="The file name to report for source read from `-`.")
@click.option("--force-exclude", is_flag=True, help="Apply exclude settings to files named on the command line too (for pre-commit).")
@click.option("--no-respect-gitignore", is_flag=True, help="Check files that .gitignore excludes.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary or progress.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes  [default: one per CPU]")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="TORCHLINT_CACHE_DIR",
    help="Where to keep the result cache  [default: .torchlint_cache at the project root]",
)
@click.option("--profile", "show_profile", is_flag=True, help="Print the time spent per rule, parsing and model building (stderr).")
@click.option("--fix", is_flag=True, help="Apply safe fixes, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix, --diff) or offer unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing (exit 1 when there is one).")
@click.option("--show-fixes", is_flag=True, help="With --fix or --diff, list the findings fixed per file.")
def check(paths, select, extend_select, ignore, preview, fmt, statistics, exit_zero, config_file, stdin_filename, force_exclude, no_respect_gitignore, quiet, fix, unsafe_fixes, diff, show_fixes, jobs, no_cache, cache_dir, show_profile):
    """Check PATHS (files or folders; `-` reads standard input)."""
    from torchlint.runner import RunOptions, check_files, check_stdin, targets

    overrides = {"extend_select": _codes(extend_select), "ignore": _codes(ignore)}
    if select:
        overrides["select"] = _codes(select)
    if preview is not None:
        overrides["preview"] = preview
    try:
        resolver = ConfigResolver(config_file, overrides)
    except ConfigError as error:
        raise _CannotRun(str(error)) from None
    # Like ruff, --stdin-filename without paths reads standard input too.
    from_stdin = any(str(p) == "-" for p in paths) or (stdin_filename is not None and not paths)
    paths = paths or (Path("."),)
    profiling = _start_profile() if show_profile else None
    excluded = 0  # files the excludes kept out of the run
    try:
        if from_stdin:
            if fix or diff:
                _fix_stdin(stdin_filename or "-", resolver, unsafe_fixes, diff, fmt, exit_zero)
            analyses = [check_stdin(stdin_filename or "-", resolver)]
        else:
            options = RunOptions(respect_gitignore=not no_respect_gitignore, force_exclude=force_exclude, jobs=jobs, cache=not no_cache, cache_dir=cache_dir)
            skipped: list[int] = []
            todo = targets(paths, resolver, options, skipped)
            excluded = sum(skipped)
            if not todo and not quiet:
                more = f" ({excluded} excluded)" if excluded else ""
                click.echo(f"warning: No Python files found under the given path(s){more}", err=True)
            if fix or diff:
                from torchlint.fixes.loop import fix_files  # imports the engine: a warm run needs none of it

                fixed = list(_with_progress(fix_files(todo, resolver, options, unsafe_fixes), len(todo), quiet))
                analyses = [result.analysis for result in fixed]
                _report_fixes(fixed, diff, show_fixes, quiet, exit_zero)
            else:
                analyses = list(_with_progress(check_files(todo, resolver, options), len(todo), quiet))
    except ConfigError as error:
        raise _CannotRun(str(error)) from None
    diagnostics = [d for analysis in analyses for d in analysis.diagnostics]
    if not quiet:
        for warning in sorted(resolver.warnings):
            click.echo(f"warning: {warning}", err=True)
    if statistics:
        click.echo(_statistics(_offered(diagnostics, unsafe_fixes)), nl=False)
    else:
        click.echo(output.render(fmt, _offered(diagnostics, unsafe_fixes) if fmt == "text" else diagnostics), nl=False)
    if not quiet:
        fixed_count = sum(len(result.applied) for result in fixed) if fix else None
        _summary(diagnostics, len(analyses), unsafe_fixes, fixed_count, excluded)
    if profiling is not None:
        _print_profile(profiling, len(analyses), jobs)
    sys.exit(EXIT_CLEAN if exit_zero or not diagnostics else EXIT_FINDINGS)


def _start_profile():
    import time

    from torchlint import profile

    return profile.start(), time.perf_counter()


def _print_profile(profiling, file_count: int, jobs: int | None) -> None:
    import time

    from torchlint import profile
    from torchlint.runner import default_jobs

    recorded, started = profiling
    profile.stop()
    click.echo(recorded.report(time.perf_counter() - started, file_count, jobs or default_jobs()), err=True, nl=False)


def _with_progress(analyses, total: int, quiet: bool):
    if quiet or total < 20 or not sys.stderr.isatty():
        yield from analyses
        return
    with click.progressbar(analyses, length=total, label="Checking", file=sys.stderr) as bar:
        yield from bar


def _summary(
    diagnostics, file_count: int, unsafe_fixes: bool = False, fixed_count: int | None = None, excluded: int = 0
) -> None:
    files = f"{file_count} file{'s' if file_count != 1 else ''}"
    skipped = f", {excluded} excluded" if excluded else ""
    if fixed_count:
        total = fixed_count + len(diagnostics)
        noun = "finding" if total == 1 else "findings"
        click.echo(f"Found {total} {noun} ({fixed_count} fixed, {len(diagnostics)} remaining) in {files}{skipped}.", err=True)
    elif not diagnostics:
        click.echo(f"All checks passed! ({files} checked{skipped})", err=True)
        return
    else:
        noun = "finding" if len(diagnostics) == 1 else "findings"
        click.echo(f"Found {len(diagnostics)} {noun} in {files}{skipped}.", err=True)
    offered = sum(d.fix is not None for d in _offered(diagnostics, unsafe_fixes))
    hidden = sum(d.fix is not None for d in diagnostics) - offered
    hint = f" ({hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option)" if hidden else ""
    option = "`--fix --unsafe-fixes`" if unsafe_fixes else "the `--fix` option"
    if offered:
        click.echo(f"[*] {offered} fixable with {option}{hint}.", err=True)
    elif hidden:
        click.echo(f"No fixes available{hint}.", err=True)


def _offered(diagnostics, unsafe_fixes: bool):
    """The diagnostics with only the fixes this run would apply, for `[*]` marks (ruff's way:
    unsafe fixes are hidden unless --unsafe-fixes; JSON and SARIF still carry them)."""
    return [d if d.fix is None or offered(d, unsafe_fixes) else dataclasses.replace(d, fix=None) for d in diagnostics]


def _report_fixes(results, diff: bool, show_fixes: bool, quiet: bool, exit_zero: bool) -> None:
    """After fixing: write the files (or, with --diff, print the diff and exit), and report
    dropped fixes and, with --show-fixes, what was fixed."""
    from torchlint.fixes import report
    from torchlint.fixes.write import atomic_write

    click.echo(report.dropped_warnings(results), nl=False, err=True)
    if diff:
        click.echo("".join(report.unified_diff(result) for result in results), nl=False)
        if show_fixes and not quiet:
            click.echo(report.fixed_summary(results, "Would fix"), nl=False, err=True)
        elif not quiet:
            count = sum(len(result.applied) for result in results if result.changed)
            click.echo(f"Would fix {count} finding{'s' if count != 1 else ''}.", err=True)
        sys.exit(EXIT_FINDINGS if any(result.changed for result in results) and not exit_zero else EXIT_CLEAN)
    failed = False
    for result in results:
        if result.changed:
            try:
                atomic_write(Path(result.path), result.fixed_bytes())
            except OSError as error:
                click.echo(f"error: cannot write {result.path}: {error.strerror or error}", err=True)
                failed = True
    if show_fixes and not quiet:
        click.echo(report.fixed_summary(results), nl=False, err=True)
    if failed:
        sys.exit(EXIT_ERROR)


def _fix_stdin(filename: str, resolver, unsafe_fixes: bool, diff: bool, fmt: str, exit_zero: bool) -> None:
    """`-` with --fix prints the fixed source on stdout and what remains on stderr (ruff's way);
    with --diff, the diff."""
    from torchlint.fixes import report
    from torchlint.fixes.loop import fix_bytes

    data = sys.stdin.buffer.read()
    result = fix_bytes(data, filename, resolver.for_path(Path(filename)), unsafe_fixes)
    click.echo(report.dropped_warnings([result]), nl=False, err=True)
    if diff:
        click.echo(report.unified_diff(result), nl=False)
        sys.exit(EXIT_FINDINGS if result.changed and not exit_zero else EXIT_CLEAN)
    sys.stdout.buffer.write(result.fixed_bytes() if result.changed else data)
    sys.stdout.buffer.flush()
    remaining = result.analysis.diagnostics
    click.echo(output.render(fmt, remaining), nl=False, err=True)
    sys.exit(EXIT_FINDINGS if remaining and not exit_zero else EXIT_CLEAN)


def _statistics(diagnostics) -> str:
    counts = collections.Counter(d.code for d in diagnostics)
    fixable = {d.code for d in diagnostics if d.fix is not None}
    codes = registry.all_codes()
    return "".join(
        f"{count:>5}\t{code}\t[{'*' if code in fixable else ' '}] {codes[code].name}\n"
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


@main.command()
@click.option("--stdio", is_flag=True, hidden=True, help="Accepted for clients that pass it; stdio is the only transport.")
def lsp(stdio: bool) -> None:
    """Run the language server on stdin/stdout (needs the `lsp` extra: pip install 'torchlint[lsp]')."""
    try:
        # Imported here: pygls is an optional extra and slow to import for every other command.
        from torchlint.lsp.server import serve
    except ImportError as error:
        if error.name not in ("pygls", "lsprotocol"):
            raise
        raise _CannotRun("the language server needs pygls: pip install 'torchlint[lsp]'") from None
    serve()


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
def rules_command(fmt: str) -> None:
    """List every rule."""
    from torchlint import pages  # the rule pages are package resources: no check needs them

    entries = [
        {
            "code": code,
            "name": rule.name,
            "summary": rule.summary,
            "severity": rule.severity.value,
            "fix": rule.fix_applicability.value if rule.fix_applicability else None,
            "url": pages.url(code),
        }
        for code, rule in registry.all_codes().items()
    ]
    if fmt == "json":
        click.echo(json.dumps(entries, indent=2))
        return
    if fmt == "markdown":  # the README's rule table is this output
        click.echo("| code | name | fix | what it finds |\n|---|---|---|---|")
        for e in entries:
            click.echo(f"| [{e['code']}](rules/{e['code']}.md) | {e['name']} | {e['fix'] or ''} | {e['summary']} |")
        return
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        fix = {"safe": "fix", "unsafe": "fix*", None: ""}[e["fix"]]
        click.echo(f"{e['code']}  {e['name']:<{width}}  {fix:<4}  {e['summary']}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation page of rule CODE."""
    code = code.strip().upper()
    if code not in registry.all_codes() and code not in registry.RUNTIME_CODES:
        raise click.UsageError(f"unknown rule code: {code!r} (see `torchlint rules`)")
    from torchlint import pages

    text = pages.page(code)
    if text is None:
        raise _CannotRun(f"the page of {code} is missing from this installation")
    click.echo(text, nl=not text.endswith("\n"))


# `confirm` runs user code: its module imports only click at load time, the run on use.
from torchlint.confirm.command import confirm as _confirm  # noqa: E402

main.add_command(_confirm)


def run() -> None:
    """The command's entry point (the `torchlint` script, `python -m torchlint`): `main`, then the
    process ends without the interpreter's teardown, as mypy ends its runs. After a check the
    process still holds everything imported and what the project index kept for later files
    (module trees, outlines, summaries): the teardown would walk all of it with full collections
    and free it object by object, for nothing the operating system does not do at once: 3% of
    the instructions of a check of 40 library files (callgrind, detectron2/modeling), more of a
    small run. Output is flushed first; `main` called as a function (tests, scripts that wrap it)
    exits the ordinary way."""
    try:
        main()
        code = 0
    except SystemExit as exit:
        code = exit.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # sys.exit("message") prints its message and exits 1
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a reader gone (`torchlint . | head`), or a stream already closed: nothing to keep
    os._exit(code or 0)
