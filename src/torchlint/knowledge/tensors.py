"""Tensors: which calls create one, which keep their input's placement, which convert it."""

from __future__ import annotations

# The legacy type constructors (`torch.FloatTensor(n)`): they make a tensor on the host and refuse
# any other `device=`, so what they make is moved, never made elsewhere.
LEGACY_TYPE_CONSTRUCTORS = frozenset(
    f"torch.{name}"
    for name in ("FloatTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor", "DoubleTensor", "HalfTensor", "Tensor")
)
# Factories that allocate a new tensor on the default device (the host) unless given `device=`.
FACTORIES = LEGACY_TYPE_CONSTRUCTORS | frozenset(
    f"torch.{name}"
    for name in (
        "tensor", "as_tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm",
        "arange", "range", "linspace", "logspace", "eye", "normal", "empty_strided", "sparse_coo_tensor",
    )
)
# Always on the host, whatever `device=` says elsewhere.
HOST_FACTORIES = frozenset({"torch.from_numpy", "torch.frombuffer"})
# Functions that join a sequence of tensors into one (`torch.cat([a, b])`, `pad_sequence(rows)`):
# the result is where the joined tensors are.
JOINING_FUNCTIONS = frozenset(
    {"torch.cat", "torch.concat", "torch.stack", "torch.hstack", "torch.vstack", "torch.nn.utils.rnn.pad_sequence"}
)
# Makers whose tensor cannot be made on a device by passing one: it has to be moved.
DEVICE_REFUSING_FACTORIES = LEGACY_TYPE_CONSTRUCTORS | HOST_FACTORIES | JOINING_FUNCTIONS
# Tensors whose placement follows an input (`zeros_like(x)` is where x is): tensor, place unknown.
FOLLOWING_FACTORIES_SUFFIX = "_like"

# Namespaces whose calls return tensors (placement follows the inputs).
TENSOR_FUNCTION_PREFIXES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
TENSOR_FUNCTIONS = frozenset(
    f"torch.{name}"
    for name in (
        "cat", "concat", "stack", "hstack", "vstack", "where", "matmul", "mm", "bmm", "einsum", "exp", "log",
        "sigmoid", "tanh", "relu", "softmax", "log_softmax", "sum", "mean", "max", "min", "argmax", "argmin",
        "abs", "sqrt", "clamp", "flatten", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "gather",
        "masked_fill", "cumsum", "sort", "topk", "bucketize", "pow", "norm", "outer", "cdist", "erf", "sin",
        "cos", "roll", "flip", "tril", "triu", "chunk", "split", "clone", "nan_to_num",
        # draws from the distribution its tensor argument gives, where that tensor is
        "bernoulli", "multinomial", "poisson",
    )
)
# `nn.Parameter(t)` is a tensor too: `.to()` on it returns a new tensor, as for any tensor.
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Classes that wrap a tensor and are one: `nn.Parameter(t)`, and the old autograd `Variable(t)`
# (a plain tensor since torch 0.4). Where their data is, is where t is.
TENSOR_WRAPPERS = PARAMETER_CLASSES | {"torch.autograd.Variable", "torch.autograd.variable.Variable"}

# Conversions that return a new tensor and leave the receiver unchanged: as a bare statement
# they do nothing (TL003). On a module the same names act in place.
CONVERSIONS = frozenset(
    {
        "to", "cuda", "cpu", "xpu", "mps", "npu", "hpu", "half", "float", "double", "bfloat16", "long",
        "int", "short", "bool", "byte", "char", "type", "pin_memory",
    }
)
# ... of which these change the dtype only, so placement is the receiver's.
DTYPE_CONVERSIONS = frozenset({"half", "float", "double", "bfloat16", "long", "int", "short", "bool", "byte", "char", "type"})
# The dtype a conversion method gives (`t.float()`: float32), by the method's name ...
CONVERSION_DTYPES = {
    "half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16", "long": "int64",
    "int": "int32", "short": "int16", "bool": "bool", "byte": "uint8", "char": "int8",
}
# ... the dtype a legacy typed constructor fixes (`torch.FloatTensor(n, k)`, on the host or CUDA) ...
TYPED_CONSTRUCTOR_DTYPES = {
    f"{package}.{name}Tensor": dtype
    for package in ("torch", "torch.cuda")
    for name, dtype in (
        ("Float", "float32"), ("Double", "float64"), ("Half", "float16"), ("BFloat16", "bfloat16"), ("Long", "int64"),
        ("Int", "int32"), ("Short", "int16"), ("Bool", "bool"), ("Byte", "uint8"), ("Char", "int8"),
    )
}
# ... and the dtype a torch dtype object names (`dtype=torch.long`).
DTYPE_NAMES = {
    **{f"torch.{dtype}": dtype for dtype in set(CONVERSION_DTYPES.values())},
    "torch.float": "float32", "torch.double": "float64", "torch.long": "int64", "torch.int": "int32",
    "torch.short": "int16",
}

# Tensor methods, and torch functions of the same names, whose result is a boolean tensor: a
# mask. A mask is most often an index (`x[mask]`), which torch takes from host memory for a GPU
# tensor.
BOOLEAN_RESULTS = frozenset(
    {
        "bool", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
        "not_equal", "isnan", "isinf", "isfinite", "isin", "logical_not", "logical_and", "logical_or",
        "logical_xor",
    }
)
BOOL_DTYPES = frozenset({"torch.bool"})

# Tensor methods that return a value other than a tensor; every other method called on a tensor
# is taken to return a tensor in the same place (view, reshape, unsqueeze, float, ...).
# Attributes of a tensor that are tensors where it is (`x.T`, `x.data`).
VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "data", "real", "imag"})
NON_TENSOR_METHODS = frozenset(
    {
        "item", "tolist", "numpy", "size", "dim", "numel", "nelement", "element_size", "get_device",
        "is_contiguous", "data_ptr", "stride", "storage", "untyped_storage", "type", "backward", "register_hook",
        "copy_", "set_", "record_stream", "share_memory_", "__len__", "keys", "values", "items", "split",
        "chunk", "unbind", "tensor_split", "max", "min", "sort", "topk", "median", "mode", "kthvalue",
        "all", "any", "equal", "allclose",
    }
)

# Tests that hold only for tensors: inside `if torch.is_tensor(x):` or `isinstance(x, torch.Tensor)`
# the name is a tensor.
TENSOR_TESTS = frozenset({"torch.is_tensor"})
TENSOR_CLASSES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})

# Factories that fill a new tensor themselves and take `device=` and `dtype=` (TL020:
# `torch.zeros(n).to(device)` builds in host memory and copies; `torch.zeros(n, device=device)`
# allocates and fills where the tensor is used). Not listed: `torch.tensor`/`as_tensor`, whose
# values come from Python data in host memory and are copied over either way; the `_like`
# factories, which already make their tensor where their argument is; the legacy type
# constructors (`torch.FloatTensor`), which refuse a device; `bernoulli`, `multinomial`,
# `poisson` and `normal`, which place their result where their tensor arguments are.
PLACEABLE_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "range", "linspace",
        "logspace", "eye", "empty_strided",
    )
)
# ... of which these take the new tensor's shape as their positional arguments, one number per
# dimension (`torch.zeros(b, 0, d)`); every one of them, and `full`, `randint` and
# `empty_strided`, also takes it as one sequence (`torch.zeros([b, 0, d])`, `torch.full((n,), v)`)
# or as `size=`.
VARIADIC_SHAPE_FACTORIES = frozenset(f"torch.{name}" for name in ("zeros", "ones", "empty", "rand", "randn"))
# ... of which these draw random numbers: made on a device, they draw from that device's
# generator, so the numbers differ from the ones drawn on the host (and a host `generator=`
# cannot be used there).
RANDOM_FACTORIES = frozenset(f"torch.{name}" for name in ("rand", "randn", "randint", "randperm"))
# ... and the draws made where a given tensor is (`torch.randn_like(images)`).
RANDOM_LIKE_FACTORIES = frozenset(f"torch.{name}_like" for name in ("rand", "randn", "randint"))
# ... and these fill values that every dtype holds exactly (0, 1, uninitialised): built directly
# in another dtype they hold the same values, where `arange`, `linspace`, `full` or `tensor`
# computed in the target dtype may round differently from a conversion afterwards.
EXACT_FACTORIES = frozenset(f"torch.{name}" for name in ("zeros", "ones", "empty", "eye"))
# In-place fills of a new tensor: `torch.empty(n).normal_()` is filled in host memory as well.
IN_PLACE_FILLS = frozenset(
    {"normal_", "uniform_", "zero_", "fill_", "random_", "bernoulli_", "exponential_", "geometric_", "log_normal_"}
)
# Calls that seed the global random generators: random draws after them are meant to be
# reproducible, and a draw on the host gives the same numbers whichever device runs the code.
SEEDING_CALLS = frozenset(
    {
        "torch.manual_seed", "torch.random.manual_seed", "torch.seed", "transformers.set_seed",
        "transformers.trainer_utils.set_seed", "accelerate.utils.set_seed", "lightning.seed_everything",
        "lightning.pytorch.seed_everything", "pytorch_lightning.seed_everything", "lightning.fabric.seed_everything",
        "lightning_fabric.seed_everything", "lightning_fabric.utilities.seed.seed_everything",
        "transformers.enable_full_determinism", "monai.utils.set_determinism", "monai.utils.misc.set_determinism",
        "detectron2.utils.env.seed_all_rng", "mmengine.runner.set_random_seed", "fairseq.utils.set_torch_seed",
    }
)

# Conversions that take a tensor's values out of torch (TL019): to NumPy, a Python list or a
# Python number. The result has no autograd history, and on an accelerator each one waits for
# the device to finish.
HOST_CONVERSION_METHODS = {"numpy": "a NumPy array", "tolist": "a Python list", "item": "a Python number"}
HOST_CONVERSION_FUNCTIONS = {
    "numpy.array": "a NumPy array", "numpy.asarray": "a NumPy array", "float": "a Python number",
    "int": "a Python number",
}
# What describes a tensor without reading its values: shapes, sizes, devices, dtypes. Code that
# converts these reads no data of the tensor.
METADATA_ATTRIBUTES = frozenset({"shape", "ndim", "device", "dtype", "is_cuda", "requires_grad", "layout", "grad_fn"})
METADATA_METHODS = frozenset(
    {"size", "dim", "numel", "nelement", "element_size", "get_device", "stride", "is_contiguous", "data_ptr",
     "is_floating_point", "is_complex"}
)
# The legacy CUDA tensor types (`torch.cuda.FloatTensor`): a name bound to one of these or a CPU
# type (`Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`) makes tensors where the
# script's own device test says.
CUDA_TENSOR_TYPES_PREFIX = "torch.cuda."
# Keyword arguments that say where or as what a tensor is made, not from which values.
METADATA_KEYWORDS = frozenset({"device", "dtype", "layout", "requires_grad", "pin_memory", "memory_format"})
METADATA_FUNCTIONS = frozenset({"len", "isinstance", "type", "id", "torch.is_tensor", "torch.numel"})
# Calls that make a tensor from the values they are given (the first argument, or `data=`).
VALUE_FACTORIES = frozenset(
    {
        "torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor",
        "torch.DoubleTensor", "torch.HalfTensor", "torch.LongTensor", "torch.IntTensor", "torch.BoolTensor",
        "torch.cuda.FloatTensor", "torch.cuda.LongTensor",
    }
)
# Functions that keep computing on converted values outside torch: a NumPy array or a Python
# number stays one through them (`np.clip(a, 0, 1)`, `abs(v)`, `max(a, b)`).
HOST_MATH_PACKAGES = ("numpy.", "math.")
HOST_MATH_BUILTINS = frozenset({"float", "int", "abs", "round", "min", "max", "sum", "list", "tuple"})

# Arguments torch requires in host memory, by function: (position, keyword). A tensor a module's
# forward passes there is meant to stay on the CPU (`pack_padded_sequence(x, lengths)` refuses
# CUDA lengths).
HOST_ONLY_ARGUMENTS = {
    "torch.nn.utils.rnn.pack_padded_sequence": (1, "lengths"),
}
