"""One confirm session: check the script, run it (again under a launcher when it asks for one),
match what the run recorded to the findings."""

from __future__ import annotations

import ast
import shutil
import tempfile
from pathlib import Path

from torchlint import engine
from torchlint.config import Settings
from torchlint.confirm import launch, observations, processes, report
from torchlint.confirm.evidence import Target
from torchlint.confirm.lines import Statements
from torchlint.confirm.options import ConfirmOptions

_TAIL_LINES = 20


def confirm(options: ConfirmOptions, settings: Settings) -> report.Report:
    display = str(options.script)
    script = options.script.resolve()
    if not script.is_file():
        raise launch.CannotRun(f"{display}: no such file")
    analysis = engine.check_path(options.script, settings)
    if analysis.source is None or not _parses(analysis.source.text):
        return report.Report(analysis.diagnostics, f"torchlint confirm: {display} was not run: it is not valid Python")
    launch.check_interpreter(options.python)
    statements = Statements(analysis.source.text)
    targets = [
        Target(d.code, d.line, statements.covering(d.start.line, d.end.line)) if d.path == display else None
        for d in analysis.diagnostics
    ]
    located = [target for target in targets if target is not None]
    under_launcher = launch.wants_launcher(analysis.source.text)
    run, tail, hidden_gpus = _execute(options, script, located, under_launcher)
    if not under_launcher and run.of("needs_launcher"):
        run, tail, hidden_gpus = _execute(options, script, located, True)
    return report.Report(
        report.merge(analysis.diagnostics, targets, run, display),
        report.summary(run, options, display, hidden_gpus),
        tail if run.crashed else "",
    )


def _parses(text: str) -> bool:
    """Whether Python would start the script (a `# torchlint: noqa` file is still run)."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _execute(options: ConfirmOptions, script: Path, targets: list[Target], under_launcher: bool):
    """The run, the end of its output, and how many real GPUs it was kept from (0: none hidden)."""
    gpus = launch.cuda_devices(options.python) if under_launcher else 0
    hidden_gpus = gpus if launch.simulates_ranks(options, gpus) else 0
    results = Path(tempfile.mkdtemp(prefix="torchlint-confirm-"))
    try:
        config = launch.write_config(results, options, script, targets, under_launcher)
        env = launch.environment(config, hide_gpus=bool(hidden_gpus))
        log = results / "output.log"
        completed = processes.run(
            launch.command(options, script, under_launcher),
            env,
            f"{launch.CONFIG_VARIABLE}={config}",
            options.timeout,
            log,
            options.show_output,
        )
        run = observations.load(results, script, completed, under_launcher, options.timeout)
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        return run, "\n".join(lines[-_TAIL_LINES:]), hidden_gpus
    finally:
        shutil.rmtree(results, ignore_errors=True)
