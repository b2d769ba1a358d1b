"""Simulated CUDA, API side: `torch.cuda` and `torch.accelerator` answer as if `count` GPUs were
there, and the few torch features that would touch a real GPU (pinned memory, DataParallel's
scatter, DDP's copy streams, checkpoints saved on CUDA) take their CPU path with the same device
semantics.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import types

import torch
from torch.utils import _pytree

from _tlconfirm.devices import VirtualDevices

NAME = "torchlint virtual CUDA device"
_PROPERTIES = types.SimpleNamespace(
    name=NAME, total_memory=80 * 2**30, major=8, minor=0, multi_processor_count=108, is_integrated=False
)


def install(devices: VirtualDevices) -> None:
    # DDP copies inputs to its device on a side stream unless told not to; there is no stream.
    os.environ["PYTORCH_DDP_USE_SIDE_STREAM"] = "0"
    cuda = torch.cuda

    def set_device(device) -> None:
        devices.current = devices.resolve(device).index

    def noop(*args, **kwargs) -> None:
        return None

    replacements = {
        "is_available": lambda: True,
        "device_count": lambda: devices.count,
        "current_device": lambda: devices.current,
        "set_device": set_device,
        "get_device_name": lambda device=None: NAME,
        "get_device_properties": lambda device=None: _PROPERTIES,
        "get_device_capability": lambda device=None: (_PROPERTIES.major, _PROPERTIES.minor),
        "is_bf16_supported": lambda *args, **kwargs: True,
        "synchronize": noop,
        "empty_cache": noop,
        "ipc_collect": noop,
        "reset_peak_memory_stats": noop,
        "memory_allocated": lambda device=None: 0,
        "max_memory_allocated": lambda device=None: 0,
        "memory_reserved": lambda device=None: 0,
        "max_memory_reserved": lambda device=None: 0,
        "device": functools.partial(_DeviceContext, devices),
        "Stream": _Stream,
        "Event": _Event,
        "current_stream": lambda device=None: _Stream(),
        "default_stream": lambda device=None: _Stream(),
        "stream": lambda stream=None: contextlib.nullcontext(stream),
        "is_current_stream_capturing": lambda: False,
    }
    for name, value in replacements.items():
        setattr(cuda, name, value)
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        accelerator.is_available = lambda: True
        accelerator.device_count = lambda: devices.count
        accelerator.current_accelerator = lambda check_available=False: torch.device("cuda")
        accelerator.current_device_index = lambda: devices.current
        accelerator.set_device_index = set_device
        accelerator.synchronize = noop
        accelerator.current_stream = lambda device=None: _Stream()
    _data_parallel_on_one_device()
    _load_cuda_checkpoints_on_cpu(devices)
    _save_cuda_tensors_as_cuda(devices)
    _gradients_where_their_inputs_live(devices)


class _Stream:
    """Work is synchronous on the CPU: a stream has nothing to wait for."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def is_capturing(self) -> bool:
        return False

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record()
        return event


class _Event:
    """Timing events measure wall time, which is what they measure on a synchronous device."""

    def __init__(self, *args, **kwargs) -> None:
        self.at = None

    def record(self, stream=None) -> None:
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        return (end.at - self.at) * 1000.0


class _DeviceContext:
    """`with torch.cuda.device(n):` selects the current device for the block."""

    def __init__(self, devices: VirtualDevices, device) -> None:
        self.devices = devices
        self.index = devices.resolve(device if device is not None else devices.current).index

    def __enter__(self):
        self.previous, self.devices.current = self.devices.current, self.index
        return self

    def __exit__(self, *exc) -> None:
        self.devices.current = self.previous


def _data_parallel_on_one_device() -> None:
    """DataParallel scatters inputs to its GPUs; simulated, it moves them to its first device and
    runs the module once, which is what it does with one GPU."""
    data_parallel = torch.nn.DataParallel

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        target = self.src_device_obj
        inputs, kwargs = _pytree.tree_map_only(torch.Tensor, lambda t: t.to(target), (inputs, kwargs))
        return self.module(*inputs, **kwargs)

    data_parallel.forward = forward


def _load_cuda_checkpoints_on_cpu(devices: VirtualDevices) -> None:
    """A checkpoint saved on CUDA (or loaded with map_location="cuda") loads its storages on the
    CPU, tagged with the device real CUDA would have put them on."""
    original = torch.load

    @functools.wraps(original)
    def load(f, map_location=None, *args, **kwargs):
        if callable(map_location):
            return original(f, map_location, *args, **kwargs)

        def restore(storage, location):
            destination = _destination(map_location, location)
            if destination.type == "cuda":
                devices.tags[storage] = devices.resolve(destination)
            return storage

        return original(f, restore, *args, **kwargs)

    torch.load = load


def _save_cuda_tensors_as_cuda(devices: VirtualDevices) -> None:
    """torch.save records the device each storage is on: a storage on a virtual GPU is saved as
    on that GPU, so the checkpoint is the one real CUDA would write (TL014 reads it back)."""

    def tagger(storage):
        try:
            device = devices.tags.get(storage)
        except TypeError:  # not a storage the tags can hold (a legacy typed storage)
            return None
        return str(device) if device is not None and device.type == "cuda" else None

    # Before torch's own taggers (the CPU's has priority 10); restoring stays with the wrapper above.
    torch.serialization.register_package(0, tagger, lambda storage, location: None)


def _gradients_where_their_inputs_live(devices: VirtualDevices) -> None:
    """torch.autograd.grad allocates its results in C++, out of the mode's sight (a gradient
    penalty, say): each gradient lives on the device of the input it is taken with respect to."""
    original = torch.autograd.grad

    @functools.wraps(original)
    def grad(outputs, inputs, *args, **kwargs):
        gradients = original(outputs, inputs, *args, **kwargs)
        wrt = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
        for gradient, tensor in zip(gradients, wrt):
            if gradient is not None:
                devices.tag(gradient, devices.of(tensor))
        return gradients

    torch.autograd.grad = grad


def _destination(map_location, saved: str) -> torch.device:
    if map_location is None:
        return torch.device(saved)
    if isinstance(map_location, dict):
        return torch.device(map_location.get(saved, saved))
    if isinstance(map_location, int):
        return torch.device("cuda", map_location)
    return torch.device(map_location)
