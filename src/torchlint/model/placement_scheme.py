"""Whether the placements a piece of code makes land where a device expression names, on the
same machines: the device choice is honoured without the device value.

`torch.cuda.set_device(local_rank)` followed by bare `.cuda()` calls is a complete placement
scheme, and so is `if use_cuda: model.cuda()` under the same availability test a device would
be chosen by. A device computed beside such a scheme names where the data goes already. It
does not when the scheme goes elsewhere: `f"cuda:{local_rank}"` beside `.to("cuda")` with no
`set_device` (every process on the first GPU), a device chosen by availability beside `.cuda()`
calls outside any such test (a machine without CUDA fails), or `torch.device(args.device)`,
a choice of the user that `.cuda()` ignores.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model.values import Kind, Place
from torchlint.model.values.calling import keyword

if TYPE_CHECKING:
    from torchlint.model import Model

# The index the current CUDA device has when nothing sets it.
_DEFAULT_INDEX = "0"
_ACCELERATORS = frozenset({"cuda"})


@dataclass(frozen=True)
class _Spelling:
    """Where a device expression puts data: ``index`` is the source of its accelerator index
    (`local_rank`, `1`), None for the current device; ``test`` is the source of the test that
    chooses between it and the host, None when it is always the accelerator."""

    index: str | None
    test: str | None


# Why a placement does not go where a device names.
OTHER_DEVICE = "another device"  # another GPU, or a device chosen another way
NO_HOST_PATH = "no host path"  # CUDA on every machine, where the device may be the host


def placements_ignoring(
    model: Model, device: cst.BaseExpression, scope: cst.CSTNode
) -> list[tuple[cst.Call, str]] | None:
    """The calls of ``scope`` that place data on a device that may be an accelerator and do not
    go where ``device`` names on the machines where it names one (every such call when its
    spelling is not known), each with why (OTHER_DEVICE, NO_HOST_PATH); None when ``scope``
    places nothing on an accelerator."""
    every = list(_accelerator_moves(model, scope))
    if not every:
        return None
    moves = [(call, target) for call, target in every if not _same_device(model, target, device)]
    spelled = _spelling(model, device)
    current = _current_index(model, scope)
    wanted = None if spelled is None else spelled.index if spelled.index is not None else current
    stray = []
    for call, target in moves:
        if spelled is None or (current if target is None else target) != wanted:
            stray.append((call, OTHER_DEVICE))
        elif spelled.test is not None and not _guarded(model, call, scope, spelled.test):
            stray.append((call, NO_HOST_PATH))
    # moves first: what a reader looks for, before factories and constructors given `device=`
    return sorted(stray, key=lambda found: not _is_move(found[0]))


def made_again_where_placed(model: Model, device: cst.BaseExpression, scope: cst.CSTNode) -> bool:
    """Whether the other functions of the file that place data on an accelerator all go where
    ``device`` names, when ``scope``, which computes it, places nothing: the same choice made
    again where the data is placed (`self.device = torch.device("cuda" if ... else "cpu")` in a
    trainer's constructor), so nothing stays on the CPU for want of this one. A move onto a
    device the function is given (`def to(self, device)`, `.to(x.device)` in a `forward`) goes
    where its caller says."""
    scopes = {model.function_of(call) for call in model.calls} - {scope}
    placing = [stray for other in scopes if (stray := placements_ignoring(model, device, other)) is not None]
    return bool(placing) and all(_decided_by_caller(model, call) for stray in placing for call, _ in stray)


def _decided_by_caller(model: Model, call: cst.Call) -> bool:
    target = next((arg.value for arg in call.args if arg.keyword is None or arg.keyword.value == "device"), None)
    if isinstance(target, cst.Attribute) and target.attr.value == "device":
        target = target.value  # the device of a tensor the function is given
    bindings = model.reaching(target) if isinstance(target, cst.Name) else []
    return bool(bindings) and all(b.how == "param" for b in bindings)


def _is_move(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda")


def _spelling(model: Model, expr: cst.BaseExpression) -> _Spelling | None:
    """`torch.device("cuda", i)`, `"cuda:0" if torch.cuda.is_available() else "cpu"`,
    `f"cuda:{rank}"`, `"cuda"`; None for anything else (a device from the command line)."""
    code = model.module.code_for_node
    if isinstance(expr, cst.Call) and model.call_name(expr) == "torch.device":
        args = [arg.value for arg in expr.args if arg.keyword is None and not arg.star]
        if len(args) == 2:
            inner = _spelling(model, args[0])
            return _Spelling(_text(code(args[1])), inner.test) if inner is not None and inner.index is None else None
        return _spelling(model, args[0]) if len(args) == 1 else None
    if isinstance(expr, cst.IfExp):
        body, orelse = _spelling(model, expr.body), _names_the_host(model, expr.orelse)
        if body is not None and body.test is None and orelse:
            return _Spelling(body.index, _text(code(expr.test)))
        return None
    if isinstance(expr, cst.SimpleString) and isinstance(expr.evaluated_value, str):
        name, _, index = expr.evaluated_value.partition(":")
        return _Spelling(index or None, None) if name in _ACCELERATORS and (not index or index.isdigit()) else None
    if isinstance(expr, cst.FormattedString) and len(expr.parts) == 2:
        head, index = expr.parts
        if isinstance(head, cst.FormattedStringText) and isinstance(index, cst.FormattedStringExpression):
            if head.value.rstrip(":") in _ACCELERATORS and head.value.endswith(":") and index.format_spec is None:
                return _Spelling(_text(code(index.expression)), None)
    return None


def _names_the_host(model: Model, expr: cst.BaseExpression) -> bool:
    found = model.values.of(expr)
    return bool(found) and all(v.kind is Kind.DEVICE and v.host_only for v in found)


def _accelerator_moves(model: Model, scope: cst.CSTNode) -> Iterator[tuple[cst.Call, str | cst.BaseExpression | None]]:
    """Each call of ``scope`` that places data on a device that may be an accelerator, with
    where: None for the current device (`.cuda()`, `.to("cuda")`), the source of an index
    (`.cuda(rank)`, `.to("cuda:1")`), or the device expression it is given."""
    placement = model.values.placement
    for call in model.calls:
        if model.function_of(call) is not scope:
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and model.qualified_name(func) is None and func.attr.value == "cuda":
            args = [arg.value for arg in call.args if arg.keyword is None]
            yield call, (_text(model.module.code_for_node(args[0])) if args else None)
            continue
        target = None
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and placement.move_target(call) is Place.DEVICE:
            target = keyword(call, "device") or next((arg.value for arg in call.args if arg.keyword is None), None)
        elif (name := model.call_name(call) or "") not in devices.PLACEMENT_CALLS and not name.startswith(
            devices.DEVICE_RUNTIME_MODULES
        ):
            given = keyword(call, "device")
            if given is not None and placement.device_place(given) is Place.DEVICE:
                target = given
        if target is not None:
            spelled = _spelling(model, target)
            yield call, (target if spelled is None or spelled.test is not None else spelled.index)


def _current_index(model: Model, scope: cst.CSTNode) -> str | None:
    """The source of the index `torch.cuda.set_device` makes current for ``scope`` (run in it or
    at the top of the script): the default index when nothing sets it, None when calls disagree."""
    chosen = set()
    for call in model.calls_named(devices.DEVICE_SELECTION_CALLS):
        if model.function_of(call) in (scope, model.module):
            args = [arg.value for arg in call.args if not arg.star]
            chosen.add(_text(model.module.code_for_node(args[0])) if args else None)
    if not chosen:
        return _DEFAULT_INDEX
    return chosen.pop() if len(chosen) == 1 else None


def _same_device(model: Model, target: str | cst.BaseExpression | None, device: cst.BaseExpression) -> bool:
    """The device expression itself, recomputed inline or under another name."""
    if not isinstance(target, cst.BaseExpression):
        return False
    text = _text(model.module.code_for_node(device))
    if _text(model.module.code_for_node(target)) == text:
        return True
    made = [v for v in model.values.of(target) if v.kind is Kind.DEVICE and v.node is not None]
    return bool(made) and all(_text(model.module.code_for_node(v.node)) == text for v in made)


def _guarded(model: Model, call: cst.Call, scope: cst.CSTNode, test: str) -> bool:
    """Whether a test around ``call`` in ``scope`` is the device's own (`test`), or asks whether
    an accelerator is present, itself or through a flag set from such a question."""
    for ancestor in model.ancestors(call):
        if ancestor is scope:
            break
        if isinstance(ancestor, (cst.If, cst.IfExp)) and (
            _text(model.module.code_for_node(ancestor.test)) == test or _asks_availability(model, ancestor.test)
        ):
            return True
    return False


def _asks_availability(model: Model, test: cst.BaseExpression, depth: int = 0) -> bool:
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call) and model.call_name(node) in devices.AVAILABILITY_CHECKS:
            return True
        if isinstance(node, (cst.Name, cst.Attribute)) and depth < 2:
            for binding in model.bindings_of(node):
                if binding.value is not None and _asks_availability(model, binding.value, depth + 1):
                    return True
            if isinstance(node, cst.Attribute):
                continue  # `args.cuda` is one flag: its parts are not tests
        stack.extend(node.children)
    return False


def _text(code: str) -> str:
    return "".join(code.split())
