"""`torchlint confirm` on a real GPU: no simulation, real CUDA errors, TL008 confirmed by tracing on
CUDA and running the trace on the CPU. CI has no GPU: these tests skip there, with the reason."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch", reason="torchlint confirm runs real torch: install torch==2.13.0")

from test_confirm import confirm_cli  # noqa: E402

pytestmark = [
    pytest.mark.confirm,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def _confirmations(stdout: str) -> dict:
    return {(d["line"], d["code"]): d.get("confirmation") for d in json.loads(stdout)}


def test_a_trace_recorded_on_cuda_fails_on_the_cpu():
    completed = confirm_cli("--format", "json", "fixtures/confirm/trace_cuda.py", real_gpus=True)
    found = _confirmations(completed.stdout)
    assert found[(24, "TL008")]["status"] == "confirmed", completed.stderr
    assert "map_location='cpu'" in found[(24, "TL008")]["evidence"]
    assert "on CUDA" in completed.stderr and "simulated" not in completed.stderr


def test_a_model_left_on_the_cpu_fails_on_real_cuda():
    completed = confirm_cli("--format", "json", "--preview", "fixtures/confirm/unmoved_model.py", real_gpus=True)
    found = _confirmations(completed.stdout)
    assert found[(20, "TL002")]["status"] == "confirmed", completed.stderr
    assert "simulated" not in found[(20, "TL002")]["evidence"]
    assert "Expected all tensors to be on the same device" in completed.stderr


def test_ranks_beyond_the_gpus_of_the_machine_run_on_simulated_cuda():
    """Two torchrun ranks and one GPU: rank 1's set_device(1) would fail before the script did
    anything to observe. With fewer GPUs than processes the ranks run simulated and say why."""
    processes = torch.cuda.device_count() + 1
    completed = confirm_cli(
        "--format", "json", "--nproc-per-node", str(processes), "fixtures/confirm/ddp_sampler.py", real_gpus=True
    )
    found = _confirmations(completed.stdout)
    assert found[(20, "TL006")]["status"] == "confirmed", completed.stderr
    assert found[(23, "TL007")]["status"] == "confirmed", completed.stderr
    assert f"{processes} virtual GPUs: this machine has {processes - 1} GPU" in completed.stderr
    assert "invalid device ordinal" not in completed.stderr
