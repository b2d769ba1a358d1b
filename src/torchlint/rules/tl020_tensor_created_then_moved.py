"""TL020 tensor-created-then-moved: a tensor factory's result is moved at once,
`torch.zeros(n).to(device)`, `torch.randn(...).cuda()`. The tensor is allocated and filled in
host memory and then copied, a blocking transfer each time the line runs; `device=` (and
`dtype=`) given to the factory makes it where it is used."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.diagnostics import Applicability
from torchlint.fixes import build
from torchlint.knowledge import devices, tensors
from torchlint.model import Model, constants
from torchlint.model.conversions import Conversion, conversion
from torchlint.model.device_choice import runtime_choices
from torchlint.model.names import dotted
from torchlint.model.repetition import runs_repeatedly
from torchlint.model.tree import children
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind, Place
from torchlint.model.values.calling import keyword
from torchlint.model.values.placement import device_argument
from torchlint.registry import Finding, NodeFix, Rule


class TensorCreatedThenMoved(Rule, code="TL020"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return  # a test's inputs are made once per test: no step pays for the copy
        for call in model.calls:
            func = call.func
            if type(func) is not cst.Attribute or type(func.value) is not cst.Call:
                continue
            factory, filled = _filled_in_place(func.value)
            name = model.call_name(factory)
            if name not in tensors.PLACEABLE_FACTORIES or _placed_on_purpose(model, factory, name):
                continue
            if _holds_no_elements(model, factory, name):
                continue  # nothing to fill on the host, nothing to copy
            if model.values.placement.move_target(call) is not Place.DEVICE or _matches_fresh_host_weights(model, call):
                continue  # a dtype conversion, or a move to the host
            if isinstance(model.parent(call), cst.Expr):
                continue  # moved and thrown away: the copy is the point (a GPU smoke test)
            if not runs_repeatedly(model, call):
                continue  # setup, or run how often the file does not show: one copy is not worth a change
            target = conversion(model, call)
            if target is None or target.device is None:
                continue
            fix = None if filled else _fix(call, factory, name, target)
            yield Finding(call, _message(model, call, factory, name, target), fix)


def _matches_fresh_host_weights(model: Model, call: cst.Call) -> bool:
    """`.to(weights)` in a constructor, where `weights` is computed only from parameters of layers
    that constructor built without a device (`weights = torch.cumsum(self.table.weight.data, 0)`
    after `self.table = nn.Embedding(n, d)`): those are in host memory, so the call matches their
    dtype and copies nothing to a device."""
    function = model.function_of(call)
    if not isinstance(function, cst.FunctionDef) or function.name.value != "__init__":
        return False
    if model.values.placement.context_placement(call) is not None:
        return False  # under `with torch.device("cuda"):` the layers are built there
    target = device_argument(call)
    if keyword(call, "device") is not None or not isinstance(target, cst.Name):
        return False
    layers = _host_layers_built_in(model, function, call)
    reads = _attributes_read(model, target)
    return reads is not None and bool(reads) and all(
        any(read.startswith(f"{layer}.") for layer in layers) for read in reads
    )


def _host_layers_built_in(model: Model, function: cst.FunctionDef, before: cst.CSTNode) -> set[str]:
    """The attributes (`self.table`) ``function`` binds, before ``before``, to a module it builds
    without a device."""
    found = set()
    for binding in model.all_bindings():
        value = binding.value
        if binding.how != "assign" or not isinstance(value, cst.Call) or model.function_of(binding.statement) is not function:
            continue
        if model.order(binding.statement) > model.order(before) or not binding.name.startswith("self."):
            continue
        if any(arg.keyword is not None and arg.keyword.value in devices.MODEL_PLACEMENT_KEYWORDS for arg in value.args):
            continue
        made = model.values.of(value)
        if made and all(v.kind is Kind.MODULE for v in made):
            found.add(binding.name)
    return found


def _attributes_read(model: Model, node: cst.CSTNode, depth: int = 3) -> set[str] | None:
    """The `self.` attribute chains ``node`` is computed from, following local names through the
    one assignment that reaches them; None when it also reads anything else that may hold a
    tensor (a parameter, a global)."""
    if isinstance(node, cst.Attribute) and (dotted(node) or "").startswith("self."):
        return {dotted(node)}
    if isinstance(node, cst.Attribute):
        return _attributes_read(model, node.value, depth)  # `x.sqrt`: what x reads
    if isinstance(node, cst.Arg):
        return _attributes_read(model, node.value, depth)  # `dim=0`: the keyword is no read
    if isinstance(node, cst.Name):
        if node.value in ("self", "None", "True", "False") or model.qualified_name(node) is not None:
            return set()
        binding = model.sole_binding(node)
        if depth == 0 or binding is None or binding.how != "assign" or binding.value is None:
            return None
        return _attributes_read(model, binding.value, depth - 1)
    found: set[str] = set()
    for child in children(node):
        read = _attributes_read(model, child, depth)
        if read is None:
            return None
        found |= read
    return found


def _holds_no_elements(model: Model, factory: cst.Call, name: str) -> bool:
    """A shape with a dimension of size 0 (`torch.zeros([batch, heads, 0, dim])`, the empty start
    of a cache that grows by concatenation): the tensor has no element, so the move copies
    nothing."""
    size = keyword(factory, "size")
    positional = [arg.value for arg in factory.args if arg.keyword is None and not arg.star]
    if size is None:
        size = next((value for value in positional if isinstance(value, (cst.List, cst.Tuple))), None)
    if isinstance(size, (cst.List, cst.Tuple)):
        dimensions = [element.value for element in size.elements]
    elif size is None and name in tensors.VARIADIC_SHAPE_FACTORIES:
        dimensions = positional
    else:
        return False
    return any(constants.value(model, dimension) == 0 for dimension in dimensions)


def _filled_in_place(moved: cst.Call) -> tuple[cst.Call, bool]:
    """`torch.empty(n).normal_()`: the factory under in-place fills of its result (also made in
    host memory), and whether there were any."""
    factory = moved
    while isinstance(factory.func, cst.Attribute) and factory.func.attr.value in tensors.IN_PLACE_FILLS:
        if not isinstance(factory.func.value, cst.Call):
            break
        factory = factory.func.value
    return factory, factory is not moved


def _placed_on_purpose(model: Model, factory: cst.Call, name: str) -> bool:
    """A pinned host tensor is staged for an asynchronous copy. A random draw with a
    `generator=` is made where that generator lives. After the code seeds the generators, a draw
    is made on the host so that it gives the same numbers whichever device the script picks at
    run time; a script pinned to one device gains nothing by it."""
    keywords = {arg.keyword.value for arg in factory.args if arg.keyword is not None}
    if "pin_memory" in keywords:
        return True
    if name not in tensors.RANDOM_FACTORIES:
        return False
    if "generator" in keywords:
        return True
    function = model.function_of(factory)
    return _seeded_in(model, function) and bool(runtime_choices(model)) and not _draws_on_device(model, function)


def _draws_on_device(model: Model, function: cst.CSTNode) -> bool:
    """Whether the function also draws on the device (`torch.randn_like(images)` of a batch it
    moved there): its numbers differ between devices anyway, so a host draw keeps nothing."""
    placement = model.values.placement
    return any(
        model.function_of(call) is function and call.args and placement.may_carry_device_data(call.args[0].value)
        for call in model.calls_named(tensors.RANDOM_LIKE_FACTORIES)
    )


def _seeded_in(model: Model, function: cst.CSTNode) -> bool:
    return any(model.function_of(call) is function for call in model.calls_named(tensors.SEEDING_CALLS))


def _fix(call: cst.Call, factory: cst.Call, name: str, target: Conversion) -> NodeFix | None:
    """`torch.zeros(n).to(device, dtype)` -> `torch.zeros(n, device=device, dtype=dtype)`; a
    dtype the factory may compute differently in stays a conversion after it."""
    if "memory_format" in target.options or any(arg.star == "**" for arg in factory.args):
        return None
    keywords = {"device": target.device}
    kept_dtype = None
    if target.dtype is not None:
        if name in tensors.EXACT_FACTORIES:
            keywords["dtype"] = target.dtype
        else:
            kept_dtype = target.dtype
    random = name in tensors.RANDOM_FACTORIES
    leaf = any(arg.keyword is not None and arg.keyword.value == "requires_grad" for arg in factory.args)
    applicability = Applicability.UNSAFE if random or leaf else Applicability.SAFE
    return build.with_keywords(
        call, factory, keywords, f"to({kept_dtype})" if kept_dtype else None,
        "Create the tensor on the device", applicability,
    )


def _message(model: Model, call: cst.Call, factory: cst.Call, name: str, target: Conversion) -> str:
    code = model.module.code_for_node
    written = code(call)
    if len(written) > 60 or "\n" in written:
        written = f"{code(factory.func)}(...).{call.func.attr.value}(...)"
    keywords = f"device={target.device}"
    if target.dtype is not None and name in tensors.EXACT_FACTORIES:
        keywords += f" and dtype={target.dtype}"
    return (
        f"'{written}' fills the tensor in host memory and then copies it to the device, a blocking copy "
        f"each time this runs; pass {keywords} to {code(factory.func)} to create it there"
    )


RULE = TensorCreatedThenMoved
