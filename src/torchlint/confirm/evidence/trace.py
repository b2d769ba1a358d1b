"""TL008: a trace recorded on real CUDA, saved, loaded with map_location="cpu" and run on the CPU."""

from __future__ import annotations

from torchlint.confirm.evidence import (
    CONFIRMED,
    NOT_REPRODUCED,
    UNCONFIRMABLE,
    Confirmation,
    Target,
    touches,
)
from torchlint.confirm.observations import Run


def requires(run: Run) -> Confirmation | None:
    if run.real_cuda:
        return None
    reason = "simulation traces on the CPU and cannot bake a device in" if run.simulated else "this machine has none"
    return Confirmation(
        UNCONFIRMABLE, f"needs a CUDA GPU: the trace must be recorded on real CUDA to bake its device in ({reason})"
    )


def confirm(target: Target, run: Run) -> Confirmation:
    traces = run.of("trace_on_cpu")
    located = [t for t in traces if touches(run, t["frames"], target)] or traces
    if not located:
        return Confirmation(NOT_REPRODUCED, f"the trace near line {target.line} was not recorded on CUDA")
    trace = located[0]
    if trace["error"]:
        return Confirmation(
            CONFIRMED,
            f"traced on CUDA at {run.where(trace['frames'])}; saved, loaded with map_location='cpu' and run on CPU "
            f"inputs it failed: {trace['error']}",
        )
    return Confirmation(
        NOT_REPRODUCED,
        f"traced on CUDA at {run.where(trace['frames'])}; saved, loaded with map_location='cpu' it ran on CPU inputs",
    )
