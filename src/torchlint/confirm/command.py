"""The `torchlint confirm` command line. Only click is imported here; the run itself is imported
when the command runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from torchlint import output
from torchlint.confirm.options import DEFAULT_MAX_EPOCHS, DEFAULT_MAX_STEPS, DEFAULT_PROCESSES, DEFAULT_TIMEOUT


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("script", type=click.Path(path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--max-steps", type=click.IntRange(min=1), default=DEFAULT_MAX_STEPS, show_default=True, help="Optimizer steps per pass over a loader (epoch).")
@click.option("--max-epochs", type=click.IntRange(min=1), default=DEFAULT_MAX_EPOCHS, show_default=True, help="Epochs before the script is stopped.")
@click.option("--timeout", type=click.FloatRange(min=1), default=DEFAULT_TIMEOUT, show_default=True, help="Seconds for the whole run.")
@click.option("--no-simulate", is_flag=True, help="Without a GPU, run on the CPU as is instead of simulating CUDA.")
@click.option("--python", "python", type=click.Path(dir_okay=False), help="Interpreter to run the script with (default: this one).")
@click.option("--nproc-per-node", "processes", type=click.IntRange(min=1), default=DEFAULT_PROCESSES, show_default=True, help="Processes for a distributed script (and GPUs of the simulated machine).")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the configured set).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--preview/--no-preview", default=None, help="Enable (or disable) preview rules, overriding `preview` in the configuration.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), help="Configuration file to use instead of discovery.")
@click.option("--format", "--output-format", "fmt", type=click.Choice(output.FORMATS), default="text", show_default=True, help="Output format.")
@click.option("--show-output", is_flag=True, help="Pass the script's own output through to stderr.")
@click.option("--exit-zero", is_flag=True, help="Exit with 0 even when findings are reported.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no account of the run.")
def confirm(script, script_args, max_steps, max_epochs, timeout, no_simulate, python, processes, select, extend_select, ignore, preview, config_file, fmt, show_output, exit_zero, quiet):
    """Run SCRIPT briefly and confirm each finding (`torchlint confirm train.py -- --lr 0.1`).

    The script runs in a child process with the chosen interpreter, for a few steps and epochs, on
    CUDA when there is a GPU and on simulated CUDA otherwise. Each finding gets a status:
    confirmed, not-reproduced, not-reached or unconfirmable, with the evidence.
    """
    from torchlint.cli import _codes
    from torchlint.config import ConfigError, ConfigResolver
    from torchlint.confirm.launch import CannotRun
    from torchlint.confirm.options import ConfirmOptions
    from torchlint.confirm.session import confirm as run_confirm

    overrides = {"extend_select": _codes(extend_select), "ignore": _codes(ignore)}
    if select:
        overrides["select"] = _codes(select)
    if preview is not None:
        overrides["preview"] = preview
    try:
        settings = ConfigResolver(config_file, overrides).for_path(script)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    options = ConfirmOptions(
        script=script,
        script_args=tuple(script_args),
        python=python or sys.executable,
        max_steps=max_steps,
        max_epochs=max_epochs,
        timeout=timeout,
        simulate=not no_simulate,
        processes=processes,
        show_output=show_output,
    )
    try:
        result = run_confirm(options, settings)
    except CannotRun as error:
        click.echo(f"torchlint confirm: error: {error}", err=True)
        sys.exit(2)
    click.echo(output.render(fmt, result.diagnostics), nl=False)
    if not quiet:
        if result.output_tail:
            click.echo(f"--- last lines of the script's output ---\n{result.output_tail}\n---", err=True)
        click.echo(result.summary, err=True)
    sys.exit(0 if exit_zero or not result.diagnostics else 1)

