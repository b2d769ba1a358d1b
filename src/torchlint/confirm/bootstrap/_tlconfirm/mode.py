"""The TorchFunctionMode every instrumented process runs under.

On real hardware it only watches conversions (TL003). Under simulation it also keeps CUDA data on
the CPU: placement calls and `device=` arguments tag their results with a virtual device, results
inherit their inputs' device, and an op whose inputs sit on two devices raises exactly the error
real CUDA raises there, after recording where it happened.
"""

from __future__ import annotations

import types

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _device

from _tlconfirm import events, sites
from _tlconfirm.devices import CPU, RealDevices, VirtualDevices
from _tlconfirm.placement import Placements

Tensor = torch.Tensor
_DTYPE_METHODS = (Tensor.half, Tensor.float, Tensor.double, Tensor.bfloat16, Tensor.long, Tensor.int, Tensor.bool)
# Ops that legitimately take tensors from different devices on real CUDA (indices may stay on the
# CPU); what they return lives where the tensor they act on lives.
_CROSS_DEVICE = {Tensor.copy_, Tensor.__getitem__, Tensor.__setitem__, Tensor.set_, torch._has_compatible_shallow_copy_type}
# Converting the left-behind tensor again is not a use of it as if converted.
_CONVERSIONS = {Tensor.to, Tensor.cuda, Tensor.cpu, *_DTYPE_METHODS}
# Factory functions: without `device=` they create on the default device (torch.set_default_device).
_CONSTRUCTORS = _device._device_constructors()
# `param.data = t` and `p.grad = g` may cross devices; a storage's tag moves with it by itself.
_CROSS_DEVICE_DESCRIPTORS = (("data", "__set__"), ("grad", "__set__"))


class DeviceMode(TorchFunctionMode):
    def __init__(self, devices: RealDevices | VirtualDevices, placements: Placements, context=list) -> None:
        super().__init__()
        self.devices = devices
        self.placements = placements
        # The modules whose forward is running, for the evidence of a mismatch.
        self.context = context
        self.handlers = {Tensor.to: self._to, Tensor.cuda: self._cuda, Tensor.cpu: self._cpu}
        self.handlers.update(dict.fromkeys(_DTYPE_METHODS, self._dtype_method))
        self.descriptors = {}
        if devices.simulated:
            self.handlers.update(
                {
                    Tensor.get_device: lambda func, args, kwargs: self._index(args[0]),
                    Tensor.numpy: self._to_host_memory,
                    Tensor.__array__: self._to_host_memory,
                    Tensor.pin_memory: lambda func, args, kwargs: args[0],
                    Tensor.is_pinned: lambda func, args, kwargs: False,
                    Tensor.record_stream: lambda func, args, kwargs: None,
                    torch._C._nn._parse_to: self._parse_to,
                }
            )
            self.handlers.update(dict.fromkeys(_CROSS_DEVICE, self._unchecked))
            self.descriptors = {
                ("device", "__get__"): lambda func, args, kwargs: self.devices.of(args[0]),
                ("is_cuda", "__get__"): lambda func, args, kwargs: self.devices.of(args[0]).type == "cuda",
                ("is_cpu", "__get__"): lambda func, args, kwargs: self.devices.of(args[0]).type == "cpu",
                ("grad", "__get__"): self._grad,
                **dict.fromkeys(_CROSS_DEVICE_DESCRIPTORS, self._unchecked),
            }

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = self.handlers.get(func)
        if handler is None and self.descriptors:
            owner = getattr(func, "__self__", None)
            if type(owner) is types.GetSetDescriptorType:
                handler = self.descriptors.get((owner.__name__, func.__name__))
        try:
            if handler is not None:
                result = handler(func, args, kwargs)
            elif self.devices.simulated:
                result = self._simulated(func, args, kwargs)
            else:
                result = func(*args, **kwargs)
        except Exception:
            self._stale_use(func, args, kwargs)  # an op that fails on it has used it too
            raise
        if _computes(result):
            self._stale_use(func, args, kwargs)
        return result

    def _stale_use(self, func, args, kwargs) -> None:
        """A tensor a dropped conversion left behind, used to compute something (TL003)."""
        if len(self.placements.pending) and func not in _CONVERSIONS:
            self.placements.stale(_tensors(args, kwargs), f"{getattr(func, '__name__', 'an op')}()")

    # -- any op under simulation -------------------------------------------------------------

    def _simulated(self, func, args, kwargs):
        target = None
        requested = kwargs.get("device")
        if requested is None and func in _CONSTRUCTORS and _device.CURRENT_DEVICE is not None:
            # A device context (set_default_device("cuda")) may sit below this mode, where it
            # would ask the CPU build for CUDA: place the result here instead.
            default = torch.device(_device.CURRENT_DEVICE)
            requested = default if default.type == "cuda" else None
        if requested is not None and not isinstance(requested, Tensor):
            target = self.devices.resolve(requested)
            if target.type == "cuda":
                kwargs = {**kwargs, "device": CPU}
        else:
            target = self._common_device(func, args, kwargs)
        result = func(*args, **kwargs)
        if target is not None and target.type == "cuda":
            self.devices.tag(result, target)
        return result

    def _common_device(self, func, args, kwargs):
        """The device of the inputs; two devices is the error CUDA raises."""
        found = None
        found_tensor = None
        for tensor in _tensors(args, kwargs):
            device = self.devices.tagged(tensor)
            if device is None or (device is CPU and tensor.dim() == 0):
                continue  # unknown (sparse); or a CPU scalar tensor, which may join CUDA tensors
            if found is None:
                found, found_tensor = device, tensor
            elif device != found:
                self._mismatch(func, (found_tensor, found), (tensor, device))
        return found

    def _mismatch(self, func, first, second):
        (a, device_a), (b, device_b) = sorted((first, second), key=lambda pair: pair[1].type != "cuda")
        name = getattr(func, "__name__", repr(func))
        events.emit(
            "mismatch",
            op=name,
            devices=[str(device_a), str(device_b)],
            parameter=[isinstance(a, torch.nn.Parameter), isinstance(b, torch.nn.Parameter)],
            modules=self.context(),
            stale_lines=self.placements.stale((a, b), f"{name}()"),
            frames=sites.user_frames(limit=6),
        )
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, {device_a} and "
            f"{device_b}! (torchlint confirm: simulated CUDA, in {name})"
        )

    # -- placement ---------------------------------------------------------------------------

    def _to(self, func, args, kwargs):
        source = args[0]
        try:
            device, dtype, non_blocking, copy, memory_format = _parse_to(args[1:], kwargs, self.devices)
        except (TypeError, ValueError):  # a form this parser does not know: torch decides, untracked
            return func(*args, **kwargs)
        before = (self.devices.of(source), source.dtype)
        target = before[0] if device is None else device
        if self.devices.simulated:
            real = CPU if target.type == "cuda" else target
            result = source.to(
                device=real,
                dtype=dtype,
                non_blocking=non_blocking,
                copy=copy or target != before[0],
                memory_format=memory_format,
            )
            self.devices.tag(result, target)
        else:
            result = func(*args, **kwargs)
        self.placements.converted("to", source, result, before, (target, result.dtype))
        return result

    def _cuda(self, func, args, kwargs):
        source = args[0]
        before = (self.devices.of(source), source.dtype)
        if not self.devices.simulated:
            result = func(*args, **kwargs)
            after = (result.device, result.dtype)
        else:
            requested = kwargs.get("device", args[1] if len(args) > 1 else None)
            target = self.devices.resolve(torch.device("cuda") if requested is None else _as_cuda(requested))
            result = source if target == before[0] else source.clone()
            self.devices.tag(result, target)
            after = (target, source.dtype)
        self.placements.converted("cuda", source, result, before, after)
        return result

    def _cpu(self, func, args, kwargs):
        source = args[0]
        before = (self.devices.of(source), source.dtype)
        if self.devices.simulated and before[0].type == "cuda":
            result = source.clone()
        else:
            result = func(*args, **kwargs)
        self.placements.converted("cpu", source, result, before, (CPU, source.dtype))
        return result

    def _dtype_method(self, func, args, kwargs):
        source = args[0]
        device = self.devices.of(source)
        result = self._simulated(func, args, kwargs) if self.devices.simulated else func(*args, **kwargs)
        self.placements.converted(func.__name__, source, result, (device, source.dtype), (device, result.dtype))
        return result

    # -- simulated CUDA details --------------------------------------------------------------

    def _parse_to(self, func, args, kwargs):
        """Module.to's parser: an int device means a CUDA device, which this build cannot parse."""
        args = tuple(_as_cuda(arg) if index == 0 else arg for index, arg in enumerate(args))
        if "device" in kwargs:
            kwargs = {**kwargs, "device": _as_cuda(kwargs["device"])}
        return func(*args, **kwargs)

    def _unchecked(self, func, args, kwargs):
        result = func(*args, **kwargs)
        if args and isinstance(args[0], Tensor):
            device = self.devices.tagged(args[0])
            if device is not None and device.type == "cuda":
                self.devices.tag(result, device)
        return result

    def _grad(self, func, args, kwargs):
        """Autograd allocates gradients in C++, unseen: a gradient lives where its tensor lives."""
        grad = func(*args, **kwargs)
        if grad is not None:
            self.devices.tag(grad, self.devices.of(args[0]))
        return grad

    def _index(self, tensor):
        device = self.devices.of(tensor)
        return device.index if device.type == "cuda" else -1

    def _to_host_memory(self, func, args, kwargs):
        device = self.devices.of(args[0])
        if device.type == "cuda":
            message = (
                f"can't convert {device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                "memory first. (torchlint confirm: simulated CUDA)"
            )
            events.emit("host_copy_error", message=message, frames=sites.user_frames(limit=6))
            raise TypeError(message)
        return func(*args, **kwargs)


def _tensors(args, kwargs):
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, Tensor):
                    yield item


def _computes(result) -> bool:
    """An op computed something from its inputs (not a size, a string, a flag)."""
    if isinstance(result, Tensor):
        return True
    return isinstance(result, (tuple, list)) and any(isinstance(item, Tensor) for item in result)


def _as_cuda(spec):
    if isinstance(spec, int) and not isinstance(spec, bool):
        return torch.device("cuda", spec)
    return spec


def _parse_to(args, kwargs, devices):
    """Tensor.to's three signatures: (device, dtype, ...), (dtype, ...), (other_tensor, ...)."""
    device = kwargs.get("device")
    dtype = kwargs.get("dtype")
    rest = list(args)
    if rest:
        first = rest.pop(0)
        if isinstance(first, Tensor):
            device, dtype = devices.of(first), first.dtype
        elif isinstance(first, torch.dtype):
            dtype = first
        else:
            device = first
            if rest and isinstance(rest[0], torch.dtype):
                dtype = rest.pop(0)
    non_blocking = bool(kwargs.get("non_blocking", rest[0] if rest else False))
    copy = bool(kwargs.get("copy", rest[1] if len(rest) > 1 else False))
    memory_format = kwargs.get("memory_format") or torch.preserve_format
    if device is not None and devices.simulated:
        device = devices.resolve(device)
    elif device is not None:
        device = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
    return device, dtype, non_blocking, copy, memory_format
