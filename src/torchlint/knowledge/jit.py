"""TorchScript: which calls trace a module, which keep a trace, which save and load one."""

from __future__ import annotations

# Calls that record a module's operations with the devices they see as constants.
TRACES = frozenset({"torch.jit.trace", "torch.jit.trace_module"})
# Calls that hand back (a transformed copy of) the traced module they are given.
TRACE_PRESERVING = frozenset({"torch.jit.freeze", "torch.jit.optimize_for_inference"})
# Calls that make a TorchScript module out of a module.
COMPILES = TRACES | {"torch.jit.script"}
SAVE = "torch.jit.save"
LOAD = "torch.jit.load"
