"""Overhead of `torchlint confirm`'s instrumentation against a plain run of the same steps.

Each workload is a small training script written to a temporary folder. It trains for exactly
--epochs passes of --steps batches over a DataLoader, then writes how long its training loop took.
It runs three ways with the same interpreter:

  plain       python workload.py                                 (CPU)
  instrumented torchlint confirm --no-simulate workload.py       (CPU, every hook installed)
  simulated   torchlint confirm workload.py                      (simulated CUDA on the CPU)

and the table gives the training-loop time per step (median of --repeat runs) and the wall time of
the whole run, with the ratios to the plain run. The confirm bounds are set to the workload's own
length, so all three runs do the same steps.

    python benchmarks/confirm_overhead.py [--steps 30] [--epochs 2] [--repeat 3] [--python PY]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

WORKLOAD = textwrap.dedent(
    """\
    import json, os, sys, time
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    KIND, STEPS, EPOCHS, BATCH = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), 32
    torch.manual_seed(0)
    torch.set_num_threads(1)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if KIND == "mlp":
        inputs, targets = torch.randn(STEPS * BATCH, 256), torch.randint(0, 10, (STEPS * BATCH,))
        model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    elif KIND == "cnn":
        inputs, targets = torch.randn(STEPS * BATCH, 3, 32, 32), torch.randint(0, 10, (STEPS * BATCH,))
        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 8 * 8, 10),
        )
    else:
        inputs, targets = torch.randint(0, 1000, (STEPS * BATCH, 64)), torch.randint(0, 1000, (STEPS * BATCH, 64))
        layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
        model = nn.Sequential(nn.Embedding(1000, 128), nn.TransformerEncoder(layer, 2), nn.Linear(128, 1000))
    model = model.to(device)
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=BATCH, shuffle=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    steps, started = 0, None
    for epoch in range(EPOCHS):
        for x, y in loader:
            if started is None:
                started = time.perf_counter()  # after the first batch: one-time costs excluded
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
    seconds = time.perf_counter() - started
    with open(os.environ["BENCH_OUT"], "w") as handle:
        json.dump({"steps": steps, "loop_seconds": seconds}, handle)
    """
)

MODES = ("plain", "instrumented", "simulated")


def run_once(mode: str, kind: str, args, folder: Path) -> dict:
    script = folder / "workload.py"
    out = folder / f"{mode}-{kind}.json"
    out.unlink(missing_ok=True)
    workload_args = [kind, str(args.steps), str(args.epochs)]
    if mode == "plain":
        command = [args.python, str(script), *workload_args]
    else:
        command = [
            sys.executable, "-m", "torchlint", "confirm", "-q", "--exit-zero",
            "--python", args.python,
            "--max-steps", str(args.steps), "--max-epochs", str(args.epochs),
            *(["--no-simulate"] if mode == "instrumented" else []),
            str(script), "--", *workload_args,
        ]
    started = time.perf_counter()
    completed = subprocess.run(command, env=dict(os.environ, BENCH_OUT=str(out)), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if not out.exists():
        raise SystemExit(f"{mode} {kind} did not finish:\n{completed.stdout}\n{completed.stderr}")
    result = json.loads(out.read_text())
    expected = args.steps * args.epochs
    if result["steps"] != expected:
        raise SystemExit(f"{mode} {kind}: {result['steps']} steps instead of {expected}")
    return {"per_step": result["loop_seconds"] / (result["steps"] - 1), "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30, help="batches (= optimizer steps) per epoch")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch for the workload")
    parser.add_argument("--workloads", default="mlp,cnn,transformer")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, {args.epochs} epochs x {args.steps} steps, median of {args.repeat} runs")
    print(f"{'workload':<12} {'mode':<13} {'ms/step':>9} {'x plain':>8} {'wall s':>8} {'x plain':>8}")
    with tempfile.TemporaryDirectory(prefix="confirm-bench-") as name:
        folder = Path(name)
        (folder / "workload.py").write_text(WORKLOAD)
        for kind in args.workloads.split(","):
            results = {mode: [] for mode in MODES}
            for _ in range(args.repeat):
                for mode in MODES:  # interleaved, so a change in machine load hits every mode alike
                    results[mode].append(run_once(mode, kind, args, folder))
            base_step = statistics.median(r["per_step"] for r in results["plain"])
            base_wall = statistics.median(r["wall"] for r in results["plain"])
            for mode in MODES:
                step = statistics.median(r["per_step"] for r in results[mode])
                wall = statistics.median(r["wall"] for r in results[mode])
                print(f"{kind:<12} {mode:<13} {step * 1000:9.2f} {step / base_step:8.2f} {wall:8.2f} {wall / base_wall:8.2f}")


if __name__ == "__main__":
    main()
