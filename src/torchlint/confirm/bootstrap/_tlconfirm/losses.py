"""TL017 evidence: what the rows a cross-entropy or NLL loss receives at a finding's line are,
along the class dimension (dim 1, or dim 0 for one unbatched row): probabilities (non-negative,
summing to 1), log-probabilities (their exp sums to 1), or neither (logits).

`nn.CrossEntropyLoss` and `nn.NLLLoss` call the functions of `torch.nn.functional` by attribute,
so wrapping those two functions sees the modules' calls as well.
"""

from __future__ import annotations

import collections
import functools
import os

import torch
import torch.nn.functional as F

from _tlconfirm import events, sites

# How far a row's sum may stray from 1 and still count as a distribution (float32 round-off).
_TOLERANCE = 1e-3
_PER_LINE = 3
_EXPECTED = {"cross_entropy": "logits", "nll_loss": "log-probabilities"}


class LossInputs:
    def __init__(self, script: str, lines: frozenset) -> None:
        self.script = os.path.realpath(script)
        self.lines = lines
        self.recorded = collections.Counter()

    def install(self) -> None:
        for name in _EXPECTED:
            setattr(F, name, self._wrap(name, getattr(F, name)))

    def _wrap(self, name: str, original):
        @functools.wraps(original)
        def loss(input, *args, **kwargs):  # noqa: A002 - torch's own parameter name
            frames = sites.user_frames(limit=3)
            line = frames[0][1] if frames and os.path.realpath(frames[0][0]) == self.script else None
            if line in self.lines and self.recorded[line] < _PER_LINE and isinstance(input, torch.Tensor):
                self.recorded[line] += 1
                events.emit("loss_input", loss=name, expects=_EXPECTED[name], frames=frames, **_rows(input))
            return original(input, *args, **kwargs)

        return loss


def _rows(scores: torch.Tensor) -> dict:
    with torch.no_grad(), torch._C.DisableTorchFunction():
        values = scores.detach().double()
        if values.numel() == 0 or not values.is_floating_point() or not bool(values.isfinite().all()):
            return {"rows": 0}
        dim = 1 if values.dim() >= 2 else 0
        sums = values.sum(dim)
        exp_sums = values.exp().sum(dim)
        low, high = float(values.min()), float(values.max())
        return {
            "rows": sums.numel(),
            "classes": values.shape[dim],
            "low": low,
            "high": high,
            "sum_low": float(sums.min()),
            "sum_high": float(sums.max()),
            "exp_sum_low": float(exp_sums.min()),
            "exp_sum_high": float(exp_sums.max()),
            "probabilities": low >= -_TOLERANCE and float((sums - 1).abs().max()) <= _TOLERANCE,
            "log_probabilities": high <= _TOLERANCE and float((exp_sums - 1).abs().max()) <= _TOLERANCE,
        }
