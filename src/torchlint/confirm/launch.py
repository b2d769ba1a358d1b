"""How the script is started: with the user's interpreter, the bootstrap on PYTHONPATH, and under
torch.distributed.run when it initialises a process group that a launcher should set up."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
from pathlib import Path

from torchlint.confirm.options import ConfirmOptions

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap"
CONFIG_VARIABLE = "TORCHLINT_CONFIRM_CONFIG"
# Set by torchrun, SLURM wrappers and friends: the user is already inside a launcher.
_LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")
_SELF_LAUNCHING_CALLS = {"spawn", "start_processes", "Process"}
_PROCESS_GROUP_CALLS = {"init_process_group", "init_device_mesh"}


class CannotRun(Exception):
    """The run cannot start (no interpreter, no torch): exit code 2 with this message."""


def check_interpreter(python: str) -> None:
    probe = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"
    try:
        completed = subprocess.run([python, "-c", probe], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CannotRun(f"cannot run the Python interpreter {python!r}: {error}") from None
    if completed.returncode == 3:
        raise CannotRun(
            f"torch is not installed for {python}: confirm runs the script with real torch. "
            "Install it (e.g. `pip install torch==2.13.0`) or choose another interpreter with --python."
        )
    if completed.returncode != 0:
        raise CannotRun(f"the Python interpreter {python!r} failed: {completed.stderr.decode(errors='replace').strip()}")


def cuda_devices(python: str) -> int:
    """The GPUs the interpreter's torch sees. Importing torch costs seconds, so it is asked only where
    an NVIDIA driver is installed; elsewhere the answer is 0 without a probe."""
    if not (Path("/proc/driver/nvidia").is_dir() or shutil.which("nvidia-smi")):
        return 0
    probe = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    try:
        completed = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
        return int(completed.stdout.strip() or 0)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return 0


def simulates_ranks(options: ConfirmOptions, gpus: int) -> bool:
    """A distributed run on a machine with fewer GPUs than processes: rank 1 of two on one GPU fails
    with "invalid device ordinal" before the script does anything confirm could observe, so the
    ranks run on simulated CUDA with one virtual GPU each instead (the real ones hidden)."""
    return options.simulate and 0 < gpus < options.processes


def wants_launcher(source: str) -> bool:
    """The script sets up a process group (or requires a launcher's variables) and does not start
    its own worker processes."""
    if any(name in os.environ for name in _LAUNCHER_VARIABLES):
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    called = {_called_name(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    if called & _SELF_LAUNCHING_CALLS:
        return False
    return bool(called & _PROCESS_GROUP_CALLS) or any(_requires_launcher_variable(node) for node in ast.walk(tree))


def _requires_launcher_variable(node: ast.AST) -> bool:
    """`os.environ["LOCAL_RANK"]`: a read that fails without a launcher (`.get` does not)."""
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "environ"
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in _LAUNCHER_VARIABLES + ("LOCAL_WORLD_SIZE",)
        and isinstance(node.ctx, ast.Load)
    )


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def command(options: ConfirmOptions, script: Path, under_launcher: bool) -> list[str]:
    if not under_launcher:
        return [options.python, str(script), *options.script_args]
    return [
        options.python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={options.processes}",
        "--max-restarts=0",
        str(script),
        *options.script_args,
    ]


def write_config(results: Path, options: ConfirmOptions, script: Path, targets, under_launcher: bool) -> Path:
    """`targets`: the findings in the script (their code and the lines of their statement)."""
    path = results / "config.json"
    path.write_text(
        json.dumps(
            {
                "results": str(results),
                "script": str(script),
                "max_steps": options.max_steps,
                "max_epochs": options.max_epochs,
                "simulate": options.simulate,
                "watched_lines": sorted({line for target in targets for line in target.lines}),
                "targets": [[target.code, target.lines.start, target.lines.stop - 1] for target in targets],
                "collective_timeout": options.timeout,
                "launch": "launcher" if under_launcher else "direct",
                "simulated_devices": options.processes,
            }
        ),
        encoding="utf-8",
    )
    return path


def environment(config: Path, hide_gpus: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    if hide_gpus:
        env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BOOTSTRAP), env.get("PYTHONPATH")]))
    env[CONFIG_VARIABLE] = str(config)
    # Keep the script's own output unbuffered, so a killed run still shows its last lines.
    env["PYTHONUNBUFFERED"] = "1"
    return env
