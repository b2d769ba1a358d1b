"""Devices and placement: what makes a device, what moves a value, what only reports it."""

from __future__ import annotations

import re

# Calls whose result is a device.
DEVICE_FACTORIES = frozenset(
    {
        "torch.device",
        "torch.accelerator.current_accelerator",
        "torch.get_default_device",
    }
)

# Calls that seed an accelerator's generators: run when one is there, they place nothing.
ACCELERATOR_SEEDING_CALLS = frozenset({"torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.mps.manual_seed"})

# Functions that tell whether an accelerator is present. Written without the call
# (`if torch.cuda.is_available:`) they are a function object, which is always true.
AVAILABILITY_CHECKS = frozenset(
    {
        "torch.cuda.is_available",
        "torch.backends.mps.is_available",
        "torch.xpu.is_available",
        "torch.accelerator.is_available",
        "torch.backends.cudnn.is_available",
    }
)

# The number of accelerators on this machine (one node), not the number of processes of the run.
LOCAL_DEVICE_COUNTS = frozenset(
    {"torch.cuda.device_count", "torch.xpu.device_count", "torch.accelerator.device_count", "torch.mps.device_count"}
)

# A string naming a device ("cuda", "cuda:0", "cpu", "mps", ...). Only "cpu" is host memory.
DEVICE_STRING = re.compile(r"^(cpu|cuda|mps|xpu|npu|hpu|xla|meta|mtia)(:\d+)?$")
HOST_DEVICES = frozenset({"cpu"})
# A device on which tensors are not really stored: moving there is not a placement.
NON_PLACEMENT_DEVICES = frozenset({"meta"})

# Attributes and methods that tell where a tensor already is. A device computed from them
# (`"cuda" if x.is_cuda else "cpu"`) follows the data instead of choosing for it. `.device` is
# one only on a value known to be a tensor or module (`args.device` is a configured choice).
PLACEMENT_QUERIES = frozenset({"is_cuda", "is_mps", "is_xpu", "is_cpu", "get_device"})
DEVICE_ATTRIBUTE = "device"

# Methods that place a module or tensor on a device. For a module they act in place and return
# the module; for a tensor they return a new tensor and leave the original where it was.
DEVICE_METHODS = frozenset({"to", "cuda", "cpu", "xpu", "mps", "npu", "hpu", "ipu", "to_empty"})
# ... of which these only ever go to the host.
HOST_METHODS = frozenset({"cpu"})

# Calls that place things through a device given as an argument (besides any `device=` keyword).
PLACEMENT_CALLS = frozenset(
    {
        "torch.cuda.set_device",
        "torch.set_default_device",
        "torch.cuda.device",
        "torch.accelerator.set_device_index",
        "torch.xpu.set_device",
    }
)
# Modules whose functions, given `device=`, ask about or manage that device (memory statistics,
# capability, properties, synchronisation) and place no data: `torch.cuda.mem_get_info(device=None)`.
# Those that select a device are PLACEMENT_CALLS.
DEVICE_RUNTIME_MODULES = ("torch.cuda.", "torch.mps.", "torch.xpu.", "torch.accelerator.")
# ... of which these pick the accelerator this process uses (`torch.cuda.set_device(local_rank)`).
DEVICE_SELECTION_CALLS = frozenset(
    {"torch.cuda.set_device", "torch.cuda.device", "torch.accelerator.set_device_index", "torch.xpu.set_device"}
)
# Calls that make later tensor factories allocate on a device: after them, a tensor created
# without `device=` is not known to be on the host.
DEFAULT_DEVICE_CALLS = frozenset(
    {"torch.set_default_device", "torch.set_default_tensor_type", "torch.set_default_dtype_and_device"}
)

# Keyword arguments that carry a placement.
PLACEMENT_KEYWORDS = frozenset({"device", "device_map", "device_id", "device_ids", "output_device", "map_location"})
# Keywords of a model loader that place the model it builds, besides the placement keywords:
# bitsandbytes quantization loads the weights onto the current GPU, and PEFT's
# `PeftModel.from_pretrained(base, path, torch_device=...)` loads the adapter there.
MODEL_PLACEMENT_KEYWORDS = PLACEMENT_KEYWORDS | frozenset({"load_in_8bit", "load_in_4bit", "torch_device"})
# Keywords of a pretrained-model loader that dispatch the model with accelerate: hooks on its
# layers move each input to the device of the layer that takes it, wherever the map puts them.
DISPATCH_KEYWORDS = frozenset({"device_map"})

# Arguments of `.to()` that are not devices: dtypes and memory formats.
DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "float", "float16", "float32", "float64", "half", "double", "bfloat16", "complex64", "complex128",
        "cfloat", "cdouble", "int", "int8", "int16", "int32", "int64", "uint8", "long", "short", "bool",
        "float8_e4m3fn", "float8_e5m2", "channels_last", "channels_last_3d", "contiguous_format",
        "preserve_format",
    )
)

# How code names a device or a dtype it does not show the value of (a parameter of a library
# function, a value imported from elsewhere): `device`, `torch_device`, `self.target_device`;
# `dtype`, `self.weight_dtype`. Read as the last part of a name or attribute chain.
DEVICE_NAME = re.compile(r"(^|_)device$")
DTYPE_NAME = re.compile(r"(^|_)dtype$")
