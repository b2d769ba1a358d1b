"""TL015/TL016 evidence: the mode a module is called in from user code (its `training` flag and
that of its dropout and batch-norm layers, the layers whose output depends on it), whether
gradients are being recorded, and how many optimizer steps came before.

A module's calls are recorded afresh each time its state changes (a few calls per call site), so
a module switched to eval mode for validation and called again for training shows up at its
second epoch.
"""

from __future__ import annotations

import collections
import weakref

import torch
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.dropout import _DropoutNd

from _tlconfirm import events, sites
from _tlconfirm.progress import Progress

_MODE_LAYERS = (_DropoutNd, _BatchNorm)
# Calls recorded per call site and phase of a module, and phases recorded per module.
_PER_PHASE = 2
_PHASES = 20


class Modes:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.layers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.recorded = collections.Counter()
        self.states: dict[int, tuple] = {}  # id(module) -> (its last state, how many times it changed)

    def record(self, module, caller) -> None:
        layers = self._layers_of(module)
        training = sum(1 for layer in layers if layer.training)
        grad = torch.is_grad_enabled()
        state = (module.training, training, grad)
        last = self.states.get(id(module))
        if last is None or last[0] != state:
            # A new phase (evaluation after training, training again after it): recorded afresh.
            last = self.states[id(module)] = (state, 0 if last is None else last[1] + 1)
        site = (caller.f_code.co_filename, caller.f_lineno, id(module), last[1])
        if self.recorded[site] >= _PER_PHASE or last[1] > _PHASES:
            return
        self.recorded[site] += 1
        events.emit(
            "mode",
            module=type(module).__name__,
            module_id=id(module),
            training=module.training,
            layers=len(layers),
            layers_training=training,
            layer_types=sorted({type(layer).__name__ for layer in layers}),
            grad=grad,
            inference=torch.is_inference_mode_enabled(),
            step=self.progress.steps,
            frames=sites.user_frames(caller, limit=4),
        )

    def _layers_of(self, module) -> list:
        try:
            found = self.layers.get(module)
        except TypeError:  # a module class that made itself unhashable
            return _mode_layers(module)
        if found is None:
            # Weak references: a layer may be the module itself, which the cache must not keep alive.
            found = self.layers[module] = [weakref.ref(layer) for layer in _mode_layers(module)]
        return [layer for reference in found if (layer := reference()) is not None]


def _mode_layers(module) -> list:
    return [layer for layer in module.modules() if isinstance(layer, _MODE_LAYERS)]
