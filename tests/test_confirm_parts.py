"""Parts of `torchlint confirm` that need no torch: statement spans, when a launcher is used, and
that no process of a run outlives it."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from torchlint.confirm import launch, processes, report
from torchlint.confirm.observations import Run
from torchlint.confirm.lines import Statements
from torchlint.confirm.options import ConfirmOptions
from torchlint.confirm.processes import Completed

pytestmark = pytest.mark.confirm


def test_a_multi_line_call_is_one_statement_and_a_loop_is_its_header():
    source = textwrap.dedent(
        """\
        loader = DataLoader(
            data,
            batch_size=64,
        )
        for epoch in range(3):
            train(loader)
        """
    )
    statements = Statements(source)
    assert statements.span(3) == (1, 4)
    assert statements.covering(3, 3) == range(1, 5)
    assert statements.span(5) == (5, 5)
    assert statements.span(6) == (6, 6)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch.distributed as dist\ndist.init_process_group('nccl')\n", True),
        ("from torch.distributed import init_process_group\ninit_process_group(backend='gloo')\n", True),
        # the script starts its own workers: it must run as it is
        ("import torch.multiprocessing as mp\ndef work(r):\n    dist.init_process_group('nccl')\nmp.spawn(work, nprocs=2)\n", False),
        ("import torch\nprint(torch.cuda.is_available())\n", False),
        ("def broken(:\n", False),
    ],
)
def test_scripts_that_initialise_a_process_group_run_under_the_launcher(source, expected, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert launch.wants_launcher(source) is expected


def test_inside_a_launcher_the_script_runs_as_it_is(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    assert launch.wants_launcher("import torch.distributed as dist\ndist.init_process_group('nccl')\n") is False


@pytest.mark.parametrize(
    ("gpus", "processes", "no_simulate", "simulated"),
    [
        (0, 2, False, False),  # no GPU: the bootstrap simulates anyway, nothing to hide
        (1, 2, False, True),  # rank 1 would ask for a GPU that is not there
        (2, 2, False, False),
        (8, 2, False, False),
        (1, 2, True, False),  # --no-simulate: the machine as it is
    ],
)
def test_ranks_are_simulated_only_where_the_gpus_are_fewer_than_the_processes(gpus, processes, no_simulate, simulated):
    options = ConfirmOptions(script=Path("train.py"), processes=processes, simulate=not no_simulate)
    assert launch.simulates_ranks(options, gpus) is simulated


def test_hidden_gpus_are_hidden_from_the_script(tmp_path):
    config = tmp_path / "config.json"
    assert launch.environment(config, hide_gpus=True)["CUDA_VISIBLE_DEVICES"] == ""
    assert launch.environment(config).get("CUDA_VISIBLE_DEVICES") == os.environ.get("CUDA_VISIBLE_DEVICES")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the run's processes through /proc")
def test_no_process_of_a_run_outlives_it(tmp_path):
    """A parent that starts a child in a new session (as torchrun does with its workers) and a
    grandchild, then hangs: every one of them is gone when the run returns."""
    pids = tmp_path / "pids"
    script = tmp_path / "tree.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            import subprocess, sys, time
            sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
            child = subprocess.Popen([sys.executable, "-c",
                "import subprocess, sys, time; p = subprocess.Popen(%r); open(%r, 'a').write(f'{{p.pid}}\\\\n'); time.sleep(600)"
                % (sleeper, {str(pids)!r})], start_new_session=True)
            open({str(pids)!r}, "a").write(f"{{child.pid}}\\n")
            time.sleep(600)
            """
        )
    )
    marker = f"TORCHLINT_CONFIRM_TEST={tmp_path}"
    env = dict(os.environ, TORCHLINT_CONFIRM_TEST=str(tmp_path))
    started = time.monotonic()
    completed = processes.run([sys.executable, str(script)], env, marker, 3, tmp_path / "log", show_output=False)
    assert completed.timed_out and completed.returncode is None
    assert time.monotonic() - started < 20
    spawned = [int(pid) for pid in pids.read_text().split()]
    assert len(spawned) == 2
    for pid in spawned:
        assert not _alive(pid), f"process {pid} outlived the run"


def test_a_run_that_finishes_reports_its_status(tmp_path):
    completed = processes.run(
        [sys.executable, "-c", "import sys; sys.exit(3)"], dict(os.environ, X="1"), "X=1-unused", 30, tmp_path / "log", False
    )
    assert (completed.returncode, completed.timed_out) == (3, False)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_script_that_does_not_parse_is_reported_and_not_run(tmp_path, run_cli):
    script = tmp_path / "broken.py"
    script.write_text("import torch\nopen('ran', 'w')\ndef train(:\n    pass\n")
    result = run_cli("confirm", str(script))
    assert result.exit_code == 1
    assert "TL000" in result.stdout and "SyntaxError" in result.stdout
    assert "was not run: it is not valid Python" in result.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    ("processes", "hidden_gpus", "expected"),
    [
        (1, 0, "under torch.distributed.run with 1 process on CUDA,"),
        (2, 0, "under torch.distributed.run with 2 processes on CUDA,"),
        (2, 1, "2 virtual GPUs: this machine has 1 GPU, fewer than the processes, so it was hidden;"),
        (4, 3, "4 virtual GPUs: this machine has 3 GPUs, fewer than the processes, so they were hidden;"),
    ],
)
def test_the_account_of_a_launched_run_counts_its_processes_and_the_gpus_it_hid(processes, hidden_gpus, expected):
    run = Run(script=Path("train.py"), completed=Completed(0, False, 1.0), under_launcher=True, timeout=300)
    run.events.append({"kind": "instrumented", "simulated": bool(hidden_gpus), "real_cuda": not hidden_gpus})
    options = ConfirmOptions(script=Path("train.py"), processes=processes)
    assert expected in report.summary(run, options, "train.py", hidden_gpus)
