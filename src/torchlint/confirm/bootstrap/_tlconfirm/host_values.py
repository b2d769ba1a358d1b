"""TL019 evidence: a tensor taken out of torch (`.numpy()`, `.tolist()`, `.item()`, `float()`,
`np.asarray`) at a finding's line, and whether it carried autograd history while gradients were
recorded: then no gradient flows back through the value.

`.numpy()` refuses a tensor that requires grad, so code detaches first; a tensor detached on the
finding's line from one with history, and what is computed from it there (`h.detach().cpu()`),
is marked as such, and the conversion reads the mark. A mode of its own, above the device mode, sees these calls.
"""

from __future__ import annotations

import collections
import os

import torch
from torch.overrides import TorchFunctionMode

from _tlconfirm import events, sites
from _tlconfirm.placement import direct_user_line

Tensor = torch.Tensor
_TO_HOST = {
    Tensor.numpy: ".numpy()",
    Tensor.tolist: ".tolist()",
    Tensor.item: ".item()",
    Tensor.__array__: "np.asarray()",
    Tensor.__float__: "float()",
    Tensor.__int__: "int()",
}
_MARK = "_tlconfirm_had_history"
_PER_LINE = 3


class HostValues(TorchFunctionMode):
    def __init__(self, script: str, lines: frozenset, active_modules) -> None:
        super().__init__()
        self.script = os.path.realpath(script)
        self.lines = lines
        self.active_modules = active_modules
        self.recorded = collections.Counter()

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        line = direct_user_line(self.script, self.lines)
        if line is None:
            return func(*args, **kwargs)
        source = args[0] if args and isinstance(args[0], Tensor) else None
        carried = source is not None and getattr(source, _MARK, False)
        had_history = source is not None and (source.requires_grad or carried)
        how = _TO_HOST.get(func)
        if how is not None and self.recorded[line] < _PER_LINE:
            self.recorded[line] += 1
            events.emit(
                "host_value",
                line=line,
                how=how,
                had_history=had_history,
                grad=torch.is_grad_enabled(),
                modules=self.active_modules(),
                frames=sites.user_frames(limit=3),
            )
        result = func(*args, **kwargs)
        # Detaching strips the history and keeps the values; moves and copies of such a result
        # keep the mark. A comparison or a count computed from the tensor has no gradient to lose.
        if isinstance(result, Tensor) and not result.requires_grad and (carried or (func is Tensor.detach and had_history)):
            setattr(result, _MARK, True)
        return result
