"""The accelerators of one machine, and the divisions by them: `torch.cuda.device_count()` and
the names bound only to it, and the `devices` of a Lightning Trainer or Fabric that also runs
on `num_nodes` machines. Under a launcher that may span several machines the number of
processes of the run is a multiple of these counts, not one of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices, frameworks
from torchlint.model import distributed
from torchlint.model.names import dotted

if TYPE_CHECKING:
    from torchlint.model import Model

Division = cst.BinaryOperation | cst.AugAssign


def divisions_by_local_devices(model: Model) -> Iterator[tuple[Division, cst.BaseExpression, cst.BaseExpression]]:
    """`gradient_accumulation_steps //= torch.cuda.device_count()`, `batch_size / ngpus` with
    `ngpus = torch.cuda.device_count()`: each (division, dividend, device count)."""
    for count in _local_device_counts(model):
        parent = model.parent(count)
        if isinstance(parent, cst.BinaryOperation) and parent.right is count:
            if isinstance(parent.operator, (cst.Divide, cst.FloorDivide)):
                yield parent, parent.left, count
        elif isinstance(parent, cst.AugAssign) and parent.value is count:
            if isinstance(parent.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
                yield parent, parent.target, count


def divisions_by_node_devices(
    model: Model,
) -> Iterator[tuple[cst.BinaryOperation, cst.BaseExpression, cst.BaseExpression]]:
    """`batch_size // args.devices` with `Trainer(devices=args.devices, num_nodes=args.num_nodes)`:
    Lightning and Fabric run devices x num_nodes processes. Each (division, devices, num_nodes)
    where num_nodes may be more than one."""
    for call in model.calls_named(frameworks.PROCESS_LAYOUTS):
        layout = frameworks.PROCESS_LAYOUTS[model.call_name(call)]
        nodes = _keyword(call, (layout.nodes,))
        per_node = _keyword(call, layout.devices)
        if nodes is None or per_node is None or _is_one(nodes):
            continue
        written = dotted(per_node) if isinstance(per_node, (cst.Name, cst.Attribute)) else None
        for read in model.reads_table.get(written or "", ()):
            division = model.parent(read)
            if not (isinstance(division, cst.BinaryOperation) and division.right is read):
                continue
            if isinstance(division.operator, (cst.Divide, cst.FloorDivide)):
                yield division, per_node, nodes


def spans_machines(model: Model) -> bool:
    """Whether the script reads the number of processes of the run from the launcher or the
    process group (`os.environ["WORLD_SIZE"]`, `dist.get_world_size()`): then it may span more
    machines than this one."""
    for call in model.calls:
        if (dotted(call.func) or "").endswith("get_world_size") or distributed.env_variable(model, call) == "WORLD_SIZE":
            return True
    return any(
        isinstance(node, cst.Subscript) and distributed.env_variable(model, node) == "WORLD_SIZE" for node in model.nodes
    )


def _keyword(call: cst.Call, names: tuple[str, ...]) -> cst.BaseExpression | None:
    return next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value in names), None)


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == 1


def _local_device_counts(model: Model) -> Iterator[cst.BaseExpression]:
    """Each `torch.cuda.device_count()` call and each read of a name bound only to one."""
    for call in model.calls_named(devices.LOCAL_DEVICE_COUNTS):
        yield call
        statement = model.parent(call)
        if isinstance(statement, cst.Assign) and statement.value is call:
            for target in statement.targets:
                for binding in model.bindings_of(target.target) if isinstance(target.target, cst.Name) else ():
                    for read in model.reads_of(binding):
                        if _counts_local_devices(model, read):
                            yield read


def _counts_local_devices(model: Model, expr: cst.BaseExpression, seen: frozenset = frozenset()) -> bool:
    """Whether ``expr`` is this machine's accelerator count, `torch.cuda.device_count()`, or a
    name bound only to it (`ngpus = torch.cuda.device_count()`)."""
    if isinstance(expr, cst.Call):
        return model.call_name(expr) in devices.LOCAL_DEVICE_COUNTS
    written = dotted(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    if written is None or written in seen:
        return False
    bindings = model.bindings_of(expr)
    return bool(bindings) and all(
        binding.how == "assign" and binding.value is not None
        and _counts_local_devices(model, binding.value, seen | {written})
        for binding in bindings
    )
