"""The command line: `torchlint [check] PATH...`, `torchlint rules`, `torchlint explain CODE`.

Conventions follow ruff: exit 0 when nothing is found, 1 when something is, 2 for usage errors,
invalid configuration and internal errors.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import click

from torchlint import __version__, output, pages, registry
from torchlint.config import ConfigError, ConfigResolver

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _DefaultToCheck(click.Group):
    """A group whose default subcommand is `check`, so `torchlint train.py` keeps working."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        elif not args:
            args = ["check"]
        return super().parse_args(ctx, args)


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
@click.option("--no-respect-gitignore", is_flag=True, help="Check files that .gitignore excludes.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary or progress.")
def check(paths, select, extend_select, ignore, fmt, statistics, exit_zero, config_file, stdin_filename, no_respect_gitignore, quiet):
    """Check PATHS (files or folders; `-` reads standard input)."""
    from torchlint.runner import RunOptions, check_files, check_stdin, targets

    overrides = {"extend_select": _codes(extend_select), "ignore": _codes(ignore)}
    if select:
        overrides["select"] = _codes(select)
    try:
        resolver = ConfigResolver(config_file, overrides)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    paths = paths or (Path("."),)
    try:
        if any(str(p) == "-" for p in paths):
            analyses = [check_stdin(stdin_filename or "-", resolver)]
        else:
            todo = targets(paths, resolver, RunOptions(respect_gitignore=not no_respect_gitignore))
            analyses = list(_with_progress(check_files(todo, resolver), len(todo), quiet))
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    diagnostics = [d for analysis in analyses for d in analysis.diagnostics]
    if statistics:
        click.echo(_statistics(diagnostics), nl=False)
    else:
        click.echo(output.render(fmt, diagnostics), nl=False)
    if not quiet:
        _summary(diagnostics, len(analyses))
    sys.exit(EXIT_CLEAN if exit_zero or not diagnostics else EXIT_FINDINGS)


def _with_progress(analyses, total: int, quiet: bool):
    if quiet or total < 20 or not sys.stderr.isatty():
        yield from analyses
        return
    with click.progressbar(analyses, length=total, label="Checking", file=sys.stderr) as bar:
        yield from bar


def _summary(diagnostics, file_count: int) -> None:
    if not diagnostics:
        click.echo(f"All checks passed! ({file_count} file{'s' if file_count != 1 else ''} checked)", err=True)
        return
    noun = "finding" if len(diagnostics) == 1 else "findings"
    click.echo(f"Found {len(diagnostics)} {noun} in {file_count} file{'s' if file_count != 1 else ''}.", err=True)
    fixable = sum(d.fix is not None for d in diagnostics)
    if fixable:
        click.echo(f"[*] {fixable} fixable with the `--fix` option.", err=True)


def _statistics(diagnostics) -> str:
    counts = collections.Counter(d.code for d in diagnostics)
    fixable = {d.code for d in diagnostics if d.fix is not None}
    codes = registry.all_codes()
    return "".join(
        f"{count:>5}\t{code}\t[{'*' if code in fixable else ' '}] {codes[code].name}\n"
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules_command(fmt: str) -> None:
    """List every rule."""
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
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        fix = {"safe": "fix", "unsafe": "fix*", None: ""}[e["fix"]]
        click.echo(f"{e['code']}  {e['name']:<{width}}  {fix:<4}  {e['summary']}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation page of rule CODE."""
    code = code.strip().upper()
    if code not in registry.all_codes():
        raise click.UsageError(f"unknown rule code: {code!r} (see `torchlint rules`)")
    text = pages.page(code)
    if text is None:
        raise click.ClickException(f"the page of {code} is missing from this installation")
    click.echo(text, nl=not text.endswith("\n"))
