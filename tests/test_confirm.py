"""`torchlint confirm` end to end: the real CLI runs each script of fixtures/confirm/ with real
torch on the CPU (simulated CUDA), and every finding marked in the script gets its status.

Markers in a fixture: `# confirm: TL003 confirmed` on the line a static finding points at, and
`# runtime: TL009` where a runtime-only finding must be reported. Each fixture is run once, in
one of the output formats, so the formats are covered by the same runs.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
import tokenize
from pathlib import Path

import pytest

from sarif_support import validate_sarif

pytest.importorskip("torch", reason="torchlint confirm runs real torch: install torch==2.13.0")

pytestmark = [pytest.mark.confirm, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "confirm"
STATUSES = {"confirmed", "not-reproduced", "not-reached", "unconfirmable"}
RUNTIME_CODES = {"TL009", "TL010"}
MARKER = re.compile(r"#\s*(?:confirm:\s*(?P<code>TL\d{3})\s+(?P<status>[a-z-]+)|runtime:\s*(?P<runtime>TL\d{3}))\s*$")


def expectations(script: Path) -> dict[tuple[int, str], str]:
    """(line, code) -> expected status, from the markers of a fixture."""
    expected = {}
    for token in tokenize.generate_tokens(io.StringIO(script.read_text(encoding="utf-8")).readline):
        if token.type == tokenize.COMMENT and (match := MARKER.search(token.string)):
            code = match["code"] or match["runtime"]
            status = match["status"] or "confirmed"
            assert status in STATUSES, f"{script.name}:{token.start[0]}: unknown status {status!r}"
            expected[(token.start[0], code)] = status
    return expected


def confirm_cli(*args: str, timeout: float = 300, real_gpus: bool = False) -> subprocess.CompletedProcess:
    """`torchlint confirm` as a user runs it. These tests check the CPU and the simulation, so a
    machine's real GPUs are hidden unless `real_gpus` (the tests of test_confirm_cuda.py)."""
    env = dict(os.environ) if real_gpus else dict(os.environ, CUDA_VISIBLE_DEVICES="")
    return subprocess.run(
        [sys.executable, "-m", "torchlint", "confirm", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
        check=False,
    )


def findings(fmt: str, stdout: str) -> dict[tuple[int, str], dict | None]:
    """(line, code) -> confirmation, read back from the chosen output format."""
    if fmt == "json":
        return {(d["line"], d["code"]): d.get("confirmation") for d in json.loads(stdout)}
    if fmt == "sarif":
        document = json.loads(stdout)
        validate_sarif(document)
        results = document["runs"][0]["results"]
        return {
            (r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"]): r.get("properties", {}).get(
                "confirmation"
            )
            for r in results
        }
    found = {}
    for line in stdout.splitlines():
        match = re.match(r".+?:(?P<line>\d+):\d+: (?P<code>TL\d{3})\b.*?(?: \[(?P<status>[a-z-]+): (?P<evidence>.*)\])?$", line)
        assert match, f"not a text diagnostic: {line!r}"
        status = match["status"]
        found[(int(match["line"]), match["code"])] = {"status": status, "evidence": match["evidence"]} if status else None
    return found


# fixture, output format, phrases the account of the run (stderr) must contain, extra options
CASES = [
    ("discarded_to.py", "json", ["simulated CUDA", "crashed at line 17", "Expected all tensors to be on the same device"], []),
    ("unmoved_model.py", "json", ["simulated CUDA", "crashed at line 15"], ["--preview"]),
    ("unused_device.py", "json", ["stopped after 10 training steps"], []),
    ("lr_too_high.py", "text", ["stopped after 10 training steps"], []),
    ("ddp_sampler.py", "json", ["under torch.distributed.run with 2 processes", "gloo instead of nccl", "stopped at the start of epoch 3"], []),
    ("spawn_workers.py", "json", ["2 ranks the script started itself", "forked worker processes", "gloo instead of nccl"], []),
    ("process_group_in_helper.py", "json", ["under torch.distributed.run with 2 processes", "stopped at the start of epoch 3"], []),
    ("not_reproduced.py", "json", ["stopped after 10 training steps"], []),
    ("not_reached.py", "json", ["called sys.exit(0) at line 19"], []),
    ("crash.py", "json", ["crashed at line 12: RuntimeError: mat1 and mat2 shapes cannot be multiplied", "last lines of the script's output"], []),
    ("trace_cuda.py", "json", ["finished"], []),
    ("ddp_shuffle_with_sampler.py", "json", ["under torch.distributed.run with 2 processes", "crashed at line 19"], []),
    ("runtime_only.py", "sarif", ["simulated CUDA"], []),
    ("gradients.py", "text", ["finished"], ["--max-steps", "10"]),
    ("modes.py", "json", ["finished"], ["--max-steps", "10"]),
    ("losses.py", "text", ["finished"], ["--max-steps", "10"]),
    ("host_values.py", "json", ["finished"], ["--preview"]),
    ("host_copies.py", "text", ["simulated CUDA", "finished"], []),
    ("checkpoints.py", "json", ["simulated CUDA", "finished"], []),
    ("cpu_only.py", "json", ["on the CPU (no CUDA, simulation off)", "crashed at line 14"], ["--no-simulate", "--preview"]),
]


@pytest.mark.parametrize(("name", "fmt", "account", "options"), CASES, ids=[case[0] for case in CASES])
def test_fixture_findings_get_their_status(name, fmt, account, options):
    script = FIXTURES / name
    completed = confirm_cli("--format", fmt, *options, str(script.relative_to(REPO)))
    assert completed.returncode in (0, 1), completed.stderr
    found = findings(fmt, completed.stdout)
    for (line, code), status in expectations(script).items():
        assert (line, code) in found, f"{name}:{line}: no {code} finding; got {sorted(found)}\n{completed.stderr}"
        confirmation = found[(line, code)]
        assert confirmation and confirmation["status"] == status, f"{name}:{line} {code}: {confirmation}"
        assert confirmation["evidence"]
    unexpected = {key for key in found if key[1] in RUNTIME_CODES} - set(expectations(script))
    assert not unexpected, f"{name}: runtime-only findings not marked in the fixture: {unexpected}"
    for key, confirmation in found.items():
        assert confirmation is None or confirmation["status"] in STATUSES, (key, confirmation)
    for phrase in account:
        assert phrase in completed.stderr, f"{name}: {phrase!r} not in\n{completed.stderr}"


def _processes_running(path: Path) -> list[int]:
    """Live processes whose command line names `path` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(path).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="looks for leftover processes in /proc")
def test_hanging_script_is_stopped_at_the_timeout_with_its_worker_processes():
    script = FIXTURES / "hang.py"
    started = time.monotonic()
    completed = confirm_cli("--timeout", "20", str(script))
    assert completed.returncode == 0, completed.stderr
    assert "timed out after 20 s (--timeout)" in completed.stderr
    assert "2 forked worker processes" in completed.stderr
    assert time.monotonic() - started < 60
    assert _processes_running(script) == []


def test_interpreter_without_torch_is_a_clear_error(tmp_path):
    python = tmp_path / "python-without-site-packages"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(0o755)
    completed = confirm_cli("--python", str(python), "fixtures/confirm/crash.py")
    assert completed.returncode == 2
    assert "torch is not installed" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_missing_script_is_a_clear_error():
    completed = confirm_cli("fixtures/confirm/no_such_script.py")
    assert completed.returncode == 2
    assert "no such file" in completed.stderr
    assert "Traceback" not in completed.stderr
