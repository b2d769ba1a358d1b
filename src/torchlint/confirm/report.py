"""The outcome of a confirm run: every finding with its status, the runtime-only findings, and a
one-paragraph account of the run itself (how it was started, on what, and how it ended)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from torchlint.confirm import evidence
from torchlint.confirm.evidence import runtime
from torchlint.confirm.observations import Run
from torchlint.confirm.options import ConfirmOptions
from torchlint.diagnostics import Diagnostic


@dataclass(frozen=True)
class Report:
    diagnostics: list[Diagnostic]
    summary: str
    # The end of the script's own output, shown when the run did not end well.
    output_tail: str = ""


def merge(static: list[Diagnostic], targets: list[evidence.Target | None], run: Run, display: str) -> list[Diagnostic]:
    used: set[int] = set()
    confirmed = []
    for diagnostic, target in zip(static, targets):
        confirmation = evidence.confirm(target, run) if target is not None else None
        if confirmation is None:
            confirmed.append(diagnostic)
            continue
        if confirmation.status == evidence.CONFIRMED:
            used.update(confirmation.used)
        confirmed.append(dataclasses.replace(diagnostic, confirmation=confirmation.as_dict()))
    found = confirmed + runtime.findings(run, used, display)
    return sorted(found, key=Diagnostic.sort_key)


def summary(run: Run, options: ConfirmOptions, display: str, hidden_gpus: int = 0) -> str:
    ranks = {event["rank"] for event in run.of("process_group")}
    if run.under_launcher:
        how = f"under torch.distributed.run with {options.processes} process{'es' if options.processes > 1 else ''}"
    elif len(ranks) > 1:
        how = f"in {len(ranks)} ranks the script started itself"
    else:
        how = "in 1 process"
    forked = sum(1 for start in run.starts.values() if start["role"] == "forked")
    if forked:
        how += f" (and {forked} forked worker process{'es' if forked > 1 else ''})"
    if run.real_cuda:
        where = "on CUDA"
    elif run.simulated:
        machine = (
            f"this machine has {hidden_gpus} GPU{'s' if hidden_gpus > 1 else ''}, fewer than the processes, "
            f"so {'they were' if hidden_gpus > 1 else 'it was'} hidden"
            if hidden_gpus
            else "this machine has none"
        )
        where = (
            f"on simulated CUDA ({options.processes} virtual GPUs: {machine}; data stays on the CPU, "
            "--no-simulate turns this off)"
        )
    else:
        where = "on the CPU (no CUDA, simulation off)"
    backends = {(e["requested"], e["backend"]) for e in run.of("process_group")}
    if any(requested and "nccl" in requested.lower() and backend == "gloo" for requested, backend in backends):
        where += ", gloo instead of nccl"
    return (
        f"torchlint confirm: ran {display} {how} {where}, at most {options.max_epochs} epochs x "
        f"{options.max_steps} steps: {run.ending()} ({run.completed.seconds:.1f} s)"
    )
