"""Whether a script trains with several processes, and which expressions stand for the number of
processes (the world size).

A script is distributed when it says so in code: `init_process_group`, a DDP or FSDP wrap, a
`DistributedSampler`, `mp.spawn`, DeepSpeed or Horovod initialisation, a helper named like
`init_distributed_mode`, or torchrun's environment variables in a script that imports
torch.distributed. DataParallel alone is one process and does not count.
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.model import constants
from torchlint.model.constants import per_model
from torchlint.model.names import dotted

_DISTRIBUTED_APIS = frozenset(
    {
        "torch.distributed.init_process_group",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "deepspeed.initialize",
        "deepspeed.init_distributed",
        "horovod.torch.init",
    }
)
# torchrun / torch.distributed.launch set these for every process.
LAUNCHER_ENV = frozenset({"WORLD_SIZE", "LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE"})
_SETUP_HELPER = re.compile(r"^(init|setup|initialize)_?(distributed|dist|ddp)|^ddp_setup$")
_SETUP_HELPER_STARTS = ("init", "setup", "ddp_setup")  # what every name _SETUP_HELPER matches starts with

# Names scripts give the number of processes, and the number of devices of one node (the number
# of processes under mp.spawn, but also what one DataParallel or pmap process feeds).
_PROCESS_COUNT_NAMES = frozenset({"world_size", "ws", "ddp_world_size", "num_replicas", "num_processes"})
_LOCAL_DEVICE_NAMES = frozenset(
    {
        "nprocs", "num_procs", "ngpus_per_node", "ngpus", "n_gpu", "n_gpus", "num_gpus", "num_gpu", "gpu_count",
        "gpus", "num_devices", "n_devices", "ndevices", "device_count", "nproc_per_node",
    }
)  # fmt: skip
_PROCESS_COUNT_CALLS = frozenset({"get_world_size", "xrt_world_size"})
_LOCAL_DEVICE_CALLS = frozenset({"device_count", "local_device_count"})


@per_model
def is_distributed(model) -> bool:
    if any(not constants.never_runs(model, call) for call in model.calls_named(_DISTRIBUTED_APIS)):
        return True
    for call in model.calls:
        # the callee's last name first (a plain attribute read), its whole chain only for a helper's name
        func = call.func
        kind = type(func)
        last = func.value if kind is cst.Name else func.attr.value if kind is cst.Attribute else ""
        if (
            last.startswith(_SETUP_HELPER_STARTS) and _SETUP_HELPER.match(last) and dotted(func) is not None
            and not constants.never_runs(model, call)
        ):
            return True
    # Launcher variables alone are also read by single-process scripts for compatibility
    # (`args.local_rank = int(os.environ.get("LOCAL_RANK", -1))` in JAX and accelerate examples):
    # they count when the script also imports torch.distributed.
    if not any(path.startswith(("torch.distributed", "torch.nn.parallel")) for path in model.imports.bindings.values()):
        return False
    # `os.environ["LOCAL_RANK"]`, `"WORLD_SIZE" in os.environ`, also through an alias of os: the
    # literal names are specific enough. The model's parent table holds every node.
    return any(isinstance(node, cst.SimpleString) and node.value[1:-1] in LAUNCHER_ENV for node in model.nodes)


def env_variable(model, node: cst.BaseExpression) -> str | None:
    """The variable an environment read names: `os.environ["WORLD_SIZE"]`,
    `os.environ.get("WORLD_SIZE", 1)`, `os.getenv("WORLD_SIZE")`."""
    if isinstance(node, cst.Call):
        name = model.call_name(node)
        if name not in ("os.environ.get", "os.getenv") or not node.args:
            return None
        key = node.args[0].value
    elif isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        if model.qualified_name(node.value) != "os.environ":
            return None
        key = node.slice[0].slice.value
    else:
        return None
    return key.evaluated_value if isinstance(key, cst.SimpleString) else None


def mentions_world_size(
    model, expr: cst.BaseExpression, *, processes_only: bool = False, _seen: frozenset = frozenset()
) -> bool:
    """Whether ``expr`` is or contains the world size: `dist.get_world_size()`,
    `utils.get_world_size()`, the `WORLD_SIZE` environment variable, a name such as `world_size`
    or `args.world_size`, or a name bound to any of these; unless ``processes_only``, also a
    node's device count (`ngpus_per_node`, `torch.cuda.device_count()`), which is the number of
    processes under mp.spawn."""
    names = _PROCESS_COUNT_NAMES if processes_only else _PROCESS_COUNT_NAMES | _LOCAL_DEVICE_NAMES
    calls = _PROCESS_COUNT_CALLS if processes_only else _PROCESS_COUNT_CALLS | _LOCAL_DEVICE_CALLS
    if isinstance(expr, cst.Call):
        written = dotted(expr.func) or ""
        if written.rsplit(".", 1)[-1] in calls or env_variable(model, expr) == "WORLD_SIZE":
            return True
    if isinstance(expr, cst.Subscript) and env_variable(model, expr) == "WORLD_SIZE":
        return True
    if isinstance(expr, (cst.Name, cst.Attribute)):
        written = dotted(expr)
        if written is None:
            return False
        if written.rsplit(".", 1)[-1] in names:
            return True
        if written in _seen:
            return False
        return any(
            binding.how != "param"
            and binding.value is not None
            and mentions_world_size(model, binding.value, processes_only=processes_only, _seen=_seen | {written})
            for binding in model.bindings_of(expr)
        )
    return any(
        mentions_world_size(model, child, processes_only=processes_only, _seen=_seen) for child in _operands(expr)
    )


def world_size_text(model, at: cst.CSTNode) -> str | None:
    """How code placed at ``at`` can name the number of processes, using only names bound there:
    a variable the script set from the launcher or the process group before it, one it keeps the
    count in (`world_size`, `args.world_size`), else the torch.distributed call through the
    script's own import of it (or of torch), else None."""
    scope = model.scope(at)
    for binding in model.all_bindings():
        if (
            binding.scope is scope
            and binding.how == "assign"
            and "." not in binding.name
            and model.order(binding.statement) < model.order(at)
            and binding.value is not None
            and not _is_share(binding.value)
            and mentions_world_size(model, binding.value, processes_only=True)
        ):
            return binding.name
    for name in sorted(_PROCESS_COUNT_NAMES):
        if model.visible(name, at):
            return name
    for key in sorted(model.reads_table):
        head, _, last = key.rpartition(".")
        if head and last in _PROCESS_COUNT_NAMES and "." not in head and model.visible(head, at):
            return key
    imported = sorted(model.imports.bindings.items())
    for local, path in imported:
        if path == "torch.distributed":
            return f"{local}.get_world_size()"
    for local, path in imported:
        if path == "torch":
            return f"{local}.distributed.get_world_size()"
    return None


def _is_share(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` divides something by a count (`steps // dist.get_world_size()`): it
    holds each process's share, not the number of processes."""
    while isinstance(expr, cst.Call) and dotted(expr.func) in ("int", "math.ceil", "math.floor") and expr.args:
        expr = expr.args[0].value
    return isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.FloorDivide))


def _operands(expr: cst.BaseExpression):
    if isinstance(expr, cst.BinaryOperation):
        return (expr.left, expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return (expr.expression,)
    if isinstance(expr, cst.Call):
        return tuple(arg.value for arg in expr.args)
    if isinstance(expr, cst.IfExp):
        return (expr.body, expr.orelse)
    return ()
