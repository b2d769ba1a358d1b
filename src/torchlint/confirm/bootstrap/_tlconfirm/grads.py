"""TL011/TL012 evidence: what each optimizer's parameters' `.grad` held when backward() added to
it, and which backward passes, with which loss scale, each optimizer step applied.

A tensor hook on every parameter runs just before autograd adds a new gradient to `.grad`. At the
first one after an optimizer step, a `.grad` that is neither None nor zero still holds what that
step applied; unless a later pass finds it cleared (a GAN's generator pass adds to the
discriminator's gradients, which the discriminator clears before its own pass), the next step
applies it again. The backward() calls whose hooks ran between two steps are the passes the step
sums up.
"""

from __future__ import annotations

import itertools
import weakref

import torch

from _tlconfirm import events, sites

# Steps of one optimizer that are checked; its hooks are removed after them.
_CHECKED_STEPS = 8
# Backward passes remembered for the step that follows them.
_KEPT_PASSES = 256
_SCALING_NODES = ("DivBackward0", "DivBackward1", "MulBackward0", "MulBackward1")


class _Watched:
    """One optimizer's parameters between two of its steps."""

    def __init__(self, number: int, optimizer) -> None:
        self.number = number
        self.type = type(optimizer).__name__
        self.steps = 0
        self.handles: list = []
        # Parameter index -> whether its .grad holds a gradient from before the last step, for the
        # parameters that got a gradient since then.
        self.stale: dict[int, bool] = {}
        self.passes: set[int] = set()

    def arrived(self, index: int, parameter, current: int | None) -> None:
        if self.steps:
            with torch._C.DisableTorchFunction():
                grad = parameter.grad if parameter is not None else None
                holds = grad is not None and bool(grad.detach().ne(0).any())
            if not holds:
                self.stale[index] = False  # cleared since the step (or since an earlier pass)
            elif index not in self.stale:
                self.stale[index] = True  # the first gradient since the step lands on the step's own
        if current is not None:
            self.passes.add(current)

    @property
    def held(self) -> int:
        return sum(self.stale.values())

    @property
    def cleared(self) -> int:
        return len(self.stale) - self.held

    def reset(self) -> None:
        self.stale.clear()
        self.passes.clear()


class Gradients:
    def __init__(self, active: bool) -> None:
        # Inactive, nothing is hooked or recorded (the script has no finding these checks serve).
        self.active = active
        self.watched: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.numbers = itertools.count(1)
        self.current: int | None = None
        self.passes: dict[int, dict] = {}  # backward pass number -> where it started, its loss scale
        self.pass_numbers = itertools.count(1)

    def built(self, optimizer) -> None:
        if not self.active:
            return
        watched = _Watched(next(self.numbers), optimizer)
        index = 0
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                if not isinstance(parameter, torch.Tensor) or not parameter.requires_grad:
                    continue
                try:
                    watched.handles.append(parameter.register_hook(self._hook(watched, index, parameter)))
                except RuntimeError:  # a parameter autograd does not let us hook (not a leaf)
                    continue
                index += 1
        self.watched[optimizer] = watched

    def _hook(self, watched: _Watched, index: int, parameter):
        reference = weakref.ref(parameter)
        gradients = self

        def before_accumulation(grad):
            watched.arrived(index, reference(), gradients.current)

        return before_accumulation

    def begin_backward(self, tensor, scaled_by_scaler: bool) -> None:
        if not self.active:
            return
        number = next(self.pass_numbers)
        self.current = number
        with torch._C.DisableTorchFunction():
            scale = loss_scale(tensor, scaled_by_scaler)
        self.passes[number] = {"frames": sites.user_frames(limit=3), "scale": scale}
        if len(self.passes) > _KEPT_PASSES:
            del self.passes[min(self.passes)]

    def end_backward(self) -> None:
        self.current = None

    def before_step(self, optimizer) -> None:
        watched = self.watched.get(optimizer)
        if watched is None or watched.steps >= _CHECKED_STEPS:
            return
        events.emit(
            "grad_check",
            optimizer=watched.number,
            type=watched.type,
            step=watched.steps + 1,
            held=watched.held,
            cleared=watched.cleared,
            backwards=[self.passes[n] for n in sorted(watched.passes) if n in self.passes],
            frames=sites.user_frames(limit=3),
        )

    def after_step(self, optimizer) -> None:
        watched = self.watched.get(optimizer)
        if watched is None:
            return
        watched.steps += 1
        watched.reset()
        if watched.steps >= _CHECKED_STEPS:
            for handle in watched.handles:
                handle.remove()
            watched.handles.clear()


def loss_scale(tensor, scaled_by_scaler: bool) -> float:
    """The constant factor the value backward() starts from was multiplied by last (`loss / 4` is
    0.25), skipping a GradScaler's own factor; 1.0 when it was not scaled."""
    node = tensor.grad_fn
    factor = 1.0
    skip = 1 if scaled_by_scaler else 0
    while node is not None and type(node).__name__ in _SCALING_NODES:
        constant = _constant_operand(node)
        if constant is None:
            break
        divides = type(node).__name__.startswith("Div")
        if skip:
            skip -= 1
        else:
            factor = factor / constant if divides else factor * constant
        node = next((child for child, _ in node.next_functions if child is not None), None)
    return factor


def _constant_operand(node) -> float | None:
    """The operand of a multiplication or division that is a number, not a tensor with history."""
    names = ("_saved_other",) if type(node).__name__.startswith("Div") else ("_saved_other", "_saved_self")
    for name in names:
        try:
            value = getattr(node, name)
        except (AttributeError, RuntimeError):
            continue
        if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.requires_grad:
            number = float(value.detach().float().item())
            if number != 0:
                return number
    return None
