"""The value model: what an expression of the script may be, and where a value goes.

`Values` (flow.py) is the shared flow core: the values an expression may evaluate to, and every
place a value reaches. Three domains read their facts over it, each in its own module and each
reached from the core: `values.placement` (placement.py: devices, moves, where a module's
parameters are), `values.modules` (module_fate.py: what becomes of a module, same-file classes)
and `values.pipeline` (pipeline.py: loaders, samplers, batches). kinds.py holds the value types,
calling.py reads calls' arguments and callees.

A `Value` carries the facts the rules need: a tensor's `place` (made on the host, moved to a
device, unknown), a module's `trainable` (holds parameters or buffers), a device's
`host_only`, a sampler's `shuffles` and `epoch_seeded`, a batch's `origin` (its loader).
"""

from torchlint.model.values.calling import builtin_or_qualified, inspects_only, is_reporting_call
from torchlint.model.values.flow import Values
from torchlint.model.values.kinds import UNKNOWN, Kind, Place, Use, Value
from torchlint.model.values.module_fate import ModuleFate

__all__ = ["Kind", "ModuleFate", "Place", "UNKNOWN", "Use", "Value", "Values", "builtin_or_qualified", "inspects_only", "is_reporting_call"]
