"""torch.jit.trace and torch.compile.

TL008 is confirmed the only honest way: a trace recorded on real CUDA is saved, loaded with
map_location="cpu" and run on CPU copies of its example inputs, right after tracing. Simulation
cannot do this (the trace would be recorded on the CPU), so it records nothing here.
torch.compile returns the module unchanged: compiling costs more than the whole bounded run and
does not change where tensors live.
"""

from __future__ import annotations

import functools
import io

import torch
from torch.utils import _pytree

from _tlconfirm import events, sites


def install(real_cuda: bool) -> None:
    torch.compile = _skip_compile(torch.compile)
    if real_cuda:
        torch.jit.trace = _check_trace(torch.jit.trace)


def _skip_compile(original):
    @functools.wraps(original)
    def compile(model=None, *args, **kwargs):
        if model is None:  # used as @torch.compile(...)
            return lambda function: function
        events.emit("compile_skipped", frames=sites.user_frames(limit=2))
        return model

    return compile


def _check_trace(original):
    @functools.wraps(original)
    def trace(func, example_inputs=None, *args, **kwargs):
        traced = original(func, example_inputs, *args, **kwargs)
        if not isinstance(func, torch.nn.Module):
            return traced  # a traced function cannot be saved and loaded on its own
        inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
        tensors = [t for t in _pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)]
        if any(t.is_cuda for t in [*tensors, *func.parameters()]):
            events.emit("trace_on_cpu", error=_run_on_cpu(traced, inputs), frames=sites.user_frames(limit=3))
        return traced

    return trace


def _run_on_cpu(traced, inputs) -> str | None:
    """The error a CUDA trace raises when loaded and run on the CPU, or None when it runs."""
    buffer = io.BytesIO()
    try:
        torch.jit.save(traced, buffer)
        buffer.seek(0)
        loaded = torch.jit.load(buffer, map_location="cpu")
        with torch.no_grad():
            loaded(*_pytree.tree_map_only(torch.Tensor, lambda t: t.cpu(), inputs))
    except Exception as error:  # noqa: BLE001 - the error is the evidence
        return f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300] if str(error).strip() else ''}"
    return None
