"""TL001/TL002/TL004 evidence: where a module's parameters and its inputs are at each forward call
made from user code, and where each module was built. Other observers of those calls (the modes of
TL015/TL016) are handed each one too.
"""

from __future__ import annotations

import collections
import sys
import threading
import weakref

import torch

from _tlconfirm import events, sites

_PER_SITE = 2
_CONVERSIONS = ("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "to_empty")


class Forwards:
    def __init__(self, devices, placements, observers=()) -> None:
        self.devices = devices
        self.placements = placements
        # Called with (module, calling frame) for each call from user code.
        self.observers = tuple(observers)
        self.built_at: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.recorded = collections.Counter()
        self.local = threading.local()

    def install(self) -> None:
        module_class = torch.nn.Module
        original_call = module_class.__call__
        original_init = module_class.__init__
        forwards = self

        def __call__(module, *args, **kwargs):
            caller = sys._getframe(1)
            if sites.is_user_file(caller.f_code.co_filename):
                forwards.record(module, caller, args, kwargs)
                for observe in forwards.observers:
                    observe(module, caller)
            stack = forwards.stack()
            stack.append(type(module).__name__)
            try:
                return original_call(module, *args, **kwargs)
            finally:
                stack.pop()

        def __init__(module, *args, **kwargs):
            original_init(module, *args, **kwargs)
            try:
                if module not in forwards.built_at:
                    forwards.built_at[module] = _construction_line(module, sys._getframe(1))
            except TypeError:  # a module class that made itself unhashable
                pass

        module_class.__call__ = __call__
        module_class.__init__ = __init__
        for name in _CONVERSIONS:
            self._watch_conversion(module_class, name)

    def stack(self) -> list:
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def active(self) -> list[str]:
        """The modules whose forward is running, outermost first."""
        return list(self.stack())

    def record(self, module, caller, args, kwargs) -> None:
        site = (caller.f_code.co_filename, caller.f_lineno, type(module).__name__)
        seen_enough = self.recorded[site] >= _PER_SITE
        if seen_enough and not len(self.placements.pending):
            return
        inputs = list(_tensors((args, kwargs)))
        self.placements.stale(inputs, f"{type(module).__name__}.forward")
        if seen_enough:
            return
        self.recorded[site] += 1
        with torch._C.DisableTorchFunction():
            params = [*module.parameters(), *module.buffers()]
            events.emit(
                "forward",
                module=type(module).__name__,
                built=self._built_at(module),
                frames=sites.user_frames(caller, limit=4),
                parameters=sorted({str(self.devices.of(p)) for p in params}),
                inputs=sorted({str(self.devices.of(t)) for t in inputs if t.dim() > 0 or self.devices.of(t).type != "cpu"}),
                training=module.training,
            )

    def _built_at(self, module):
        try:
            return self.built_at.get(module)
        except TypeError:
            return None

    def _watch_conversion(self, module_class, name: str) -> None:
        original = getattr(module_class, name)
        placements = self.placements

        def convert(module, *args, **kwargs):
            placements.module_converted(name, module)
            return original(module, *args, **kwargs)

        setattr(module_class, name, convert)


def _construction_line(module, frame) -> list | None:
    """[file, line] of the user code that built `module`: the first user frame that is not the
    module's own (or a base class's) __init__."""
    while frame is not None:
        if frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is module:
            frame = frame.f_back
            continue
        if sites.is_user_file(frame.f_code.co_filename):
            return [frame.f_code.co_filename, frame.f_lineno]
        frame = frame.f_back
    return None


def _tensors(value, depth: int = 0):
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 3 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, depth + 1)
