"""TL005 evidence: each optimizer's learning rates, the loss trajectory (the value each
`backward()` starts from), and for the first steps how far one step moves the parameters relative
to their size. Every optimizer step is recorded and counts towards the run's bounds; steps and
backward passes are also handed to the gradient checks (grads)."""

from __future__ import annotations

import math

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.weak import WeakTensorKeyDictionary

from _tlconfirm import events, sites
from _tlconfirm.grads import Gradients
from _tlconfirm.progress import Progress

_MAX_LOSSES = 200
# Steps whose parameter update is measured (each needs a copy of the parameters).
_MEASURED_STEPS = 3


class Optimizers:
    def __init__(self, progress: Progress, gradients: Gradients) -> None:
        self.progress = progress
        self.gradients = gradients
        self.losses = 0
        self.in_backward = 0
        # Losses multiplied by a GradScaler -> the value before scaling.
        self.unscaled = WeakTensorKeyDictionary()
        self.measured = 0
        self.before: list | None = None
        self.optimizers_built = 0

    def install(self) -> None:
        optimizers = self
        optimizer_class = torch.optim.Optimizer
        original_init = optimizer_class.__init__

        def __init__(optimizer, *args, **kwargs):
            original_init(optimizer, *args, **kwargs)
            optimizers.built(optimizer)

        optimizer_class.__init__ = __init__
        register_optimizer_step_pre_hook(lambda optimizer, args, kwargs: self.before_step(optimizer))
        register_optimizer_step_post_hook(lambda optimizer, args, kwargs: self.stepped(optimizer))
        self._watch_backward()
        self._watch_grad_scaler()

    def built(self, optimizer) -> None:
        self.optimizers_built += 1
        events.emit(
            "optimizer",
            type=type(optimizer).__name__,
            lr=[_number(group.get("lr")) for group in optimizer.param_groups],
            frames=sites.user_frames(limit=3),
        )
        self.gradients.built(optimizer)

    def before_step(self, optimizer) -> None:
        self.gradients.before_step(optimizer)
        self.snapshot(optimizer)

    def snapshot(self, optimizer) -> None:
        if self.measured >= _MEASURED_STEPS:
            return
        with torch._C.DisableTorchFunction():
            self.before = [p.detach().clone() for p in _parameters(optimizer)]

    def stepped(self, optimizer) -> None:
        if self.before is not None:
            with torch._C.DisableTorchFunction():
                params = _parameters(optimizer)
                change = sum(float((p.detach() - b).float().pow(2).sum()) for p, b in zip(params, self.before))
                size = sum(float(b.float().pow(2).sum()) for b in self.before)
            self.before = None
            self.measured += 1
            events.emit(
                "update",
                step=self.progress.steps + 1,
                optimizer=type(optimizer).__name__,
                relative=_number(math.sqrt(change / size)) if size > 0 else None,
            )
        self.gradients.after_step(optimizer)
        events.emit("step", step=self.progress.steps + 1, optimizer=type(optimizer).__name__)
        self.progress.on_step()

    def _watch_backward(self) -> None:
        original = torch.Tensor.backward
        optimizers = self

        def backward(tensor, *args, **kwargs):
            # The torch-function mode calls this again for the same backward: record the outer call.
            outermost = not optimizers.in_backward
            if outermost:
                optimizers.record_loss(tensor)
                optimizers.gradients.begin_backward(tensor, tensor in optimizers.unscaled)
            optimizers.in_backward += 1
            try:
                result = original(tensor, *args, **kwargs)
            finally:
                optimizers.in_backward -= 1
                if outermost:
                    optimizers.gradients.end_backward()
            if not optimizers.in_backward and not optimizers.optimizers_built:
                # Parameters updated by hand (`p.data.add_(p.grad, alpha=-lr)`): a backward is a step.
                optimizers.progress.on_step()
            return result

        torch.Tensor.backward = backward

    def record_loss(self, tensor) -> None:
        if self.losses >= _MAX_LOSSES:
            return
        with torch._C.DisableTorchFunction():
            if tensor.numel() != 1:
                return
            value = self.unscaled.get(tensor)
            if value is None:
                value = float(tensor.detach().float().item())
        self.losses += 1
        events.emit("loss", value=_number(value), step=self.progress.steps, frames=sites.user_frames(limit=3))

    def _watch_grad_scaler(self) -> None:
        scaler_class = getattr(getattr(torch, "amp", None), "GradScaler", None)
        if scaler_class is None:
            return
        original = scaler_class.scale
        optimizers = self

        def scale(scaler, outputs):
            scaled = original(scaler, outputs)
            if isinstance(outputs, torch.Tensor) and isinstance(scaled, torch.Tensor) and scaled is not outputs:
                with torch._C.DisableTorchFunction():
                    if outputs.numel() == 1:
                        optimizers.unscaled[scaled] = float(outputs.detach().float().item())
            return scaled

        scaler_class.scale = scale


def _parameters(optimizer) -> list:
    return [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]


def _number(value):
    """A JSON-safe float: inf and nan as strings."""
    if isinstance(value, torch.Tensor):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
