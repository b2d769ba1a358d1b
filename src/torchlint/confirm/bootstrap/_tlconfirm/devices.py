"""Where a tensor lives: its real device, or under simulation the virtual CUDA device it is tagged with.

Under simulation every tensor's data stays on the CPU; the storage of a tensor that real CUDA
would hold is tagged in a weak table with its virtual device (`cuda:N`). Untagged means CPU.
Tagging storages rather than tensor objects is what CUDA itself does: views, `detach()`,
`nn.Parameter(t)` and `param.data = t` all share a storage and so a device, with no bookkeeping.
torch keeps one Python object per storage alive as long as the storage, so the weak table forgets
a storage exactly when it is freed.
"""

from __future__ import annotations

import weakref

import torch

CPU = torch.device("cpu")


class InvalidDevice(RuntimeError):
    pass


class RealDevices:
    simulated = False

    def of(self, tensor: torch.Tensor) -> torch.device:
        with torch._C.DisableTorchFunction():
            return tensor.device

    def tag(self, value, device: torch.device) -> None:
        """Real tensors carry their device themselves."""


class VirtualDevices:
    simulated = True

    def __init__(self, count: int) -> None:
        self.count = count
        self.current = 0
        self.tags: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def tagged(self, tensor: torch.Tensor) -> torch.device | None:
        """The virtual device, CPU, or None when a layout has no storage to tag (sparse, nested):
        such a tensor's device is not known. Call with torch functions disabled."""
        try:
            return self.tags.get(tensor.untyped_storage(), CPU)
        except (RuntimeError, NotImplementedError):
            return None

    def of(self, tensor: torch.Tensor) -> torch.device:
        with torch._C.DisableTorchFunction():
            return self.tagged(tensor) or CPU

    def tag(self, value, device: torch.device) -> None:
        """Tag every tensor in an op's result (a tensor, or a tuple/list of them)."""
        if isinstance(value, torch.Tensor):
            with torch._C.DisableTorchFunction():
                try:
                    storage = value.untyped_storage()
                except (RuntimeError, NotImplementedError):
                    return
            if device.type == "cuda":
                self.tags[storage] = device
            else:
                self.tags.pop(storage, None)
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, torch.Tensor):
                    self.tag(item, device)

    def resolve(self, spec) -> torch.device:
        """A device argument as CUDA would read it: "cuda" is the current device, an int is cuda:N."""
        if isinstance(spec, int) and not isinstance(spec, bool):
            device = torch.device("cuda", spec)
        else:
            device = spec if isinstance(spec, torch.device) else torch.device(spec)
        if device.type != "cuda":
            return device
        index = self.current if device.index is None else device.index
        if not 0 <= index < self.count:
            raise InvalidDevice(
                f"CUDA error: invalid device ordinal (torchlint confirm: simulated CUDA with {self.count} device"
                f"{'s' if self.count != 1 else ''}, cuda:{index} requested)"
            )
        return torch.device("cuda", index)
