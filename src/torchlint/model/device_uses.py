"""Devices the code computes, and whether anything places with them. A device is a plain name
assigned `torch.device(...)`, a conditional (`"cuda" if torch.cuda.is_available() else "cpu"`)
or a device string; a use places something unless it only reports the device (printed, logged,
formatted into text that is itself only reported)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model.tree import children
from torchlint.model.values import Kind, Use, is_reporting_call

if TYPE_CHECKING:
    from torchlint.model import Binding, Model

# What a device computation looks like: `torch.device(...)`, a conditional, a string.
_DEVICE_SHAPES = (cst.Call, cst.IfExp, cst.SimpleString, cst.FormattedString)
# Builtins and string methods that turn a value into text.
_FORMATTING = frozenset({"str", "repr", "format"})


def computes_device(model: Model, binding: Binding) -> bool:
    """A plain name assigned a device made right here (not an alias of another device)."""
    value = binding.value
    if binding.how not in ("assign", "annassign") or "." in binding.name or type(value) not in _DEVICE_SHAPES:
        return False
    if type(binding.scope) is cst.ClassDef:
        return False  # a class attribute, read as self.<name>
    if type(value) is cst.Call and model.call_name(value) not in devices.DEVICE_FACTORIES:
        return False
    if _reads_placement(model, value):
        return False  # read off where the data already is: nothing is left behind if it goes unused
    made = [v for v in model.values.of(value) if v.kind is Kind.DEVICE and v.node is value]
    if not made or all(v.host_only for v in made):
        return False  # an unused "cpu" device changes nothing: everything is on the host anyway
    if isinstance(value, (cst.SimpleString, cst.FormattedString)):
        return "device" in binding.name.lower()  # a bare "cuda" is a device only by its name
    return True


def _reads_placement(model: Model, value: cst.CSTNode) -> bool:
    """Whether the device is computed from where a tensor or module already is (`"cuda" if
    x.is_cuda else "cpu"`, `torch.device(x.device)`), read in the device call's arguments or a
    conditional's test; `torch.device` itself is the callee, not such a read."""
    pending = [arg.value for arg in value.args] if isinstance(value, cst.Call) else [value]
    while pending:
        node = pending.pop()
        if type(node) is cst.Attribute and (
            node.attr.value in devices.PLACEMENT_QUERIES
            or node.attr.value == devices.DEVICE_ATTRIBUTE
            and model.values.all_of(node.value, Kind.TENSOR, Kind.MODULE, Kind.BATCH) is not None
        ):
            return True
        pending.extend(children(node))
    return False


def name_places(model: Model, binding: Binding) -> bool:
    """Whether this binding, or a later one of the same name in the same scope, may place
    something: the code's device is the name, chosen again further down (a notebook showing
    several ways to choose it, a function recomputing it, a loop placing on each device in turn:
    `for device in range(torch.cuda.device_count()):`)."""
    here = model.order(binding.statement)
    return any(
        model.order(other.statement) >= here and _places(model, _uses_of_binding(model, other))
        for other in model.bindings(binding.scope, binding.name)
    )


def _uses_of_binding(model: Model, binding: Binding) -> list[Use]:
    """The uses of what a binding assigns; for a `for` target, the uses of its reads in the loop."""
    if binding.value is not None:
        return model.values.uses(binding.value)
    if binding.how != "for" or not isinstance(binding.statement, cst.For):
        return []
    body = binding.statement.body
    return [
        use
        for read in model.reads_of(binding)
        if any(ancestor is body for ancestor in model.ancestors(read))
        for use in model.values.uses(read)
    ]


def _places(model: Model, uses: Iterable[Use]) -> bool:
    """Whether a use of the device may place something with it (anything but reporting it).

    Text made from the device (`str(device)`, an f-string) places something only when handed to
    a call other than a report; the uses of the text are followed in turn, each maker of text
    once (a loop may remake text from itself: `s = f"{s} {i}"`)."""
    pending = [(use, False) for use in uses]
    followed: set[cst.CSTNode] = set()
    while pending:
        use, text = pending.pop()
        maker = _makes_text(model, use)
        if maker is None:
            if _places_itself(model, use, text):
                return True
        elif maker not in followed:
            followed.add(maker)
            pending.extend((inner, True) for inner in model.values.uses(maker))
    return False


def _makes_text(model: Model, use: Use) -> cst.CSTNode | None:
    """The f-string or formatting call (`str(device)`, `"{}".format(device)`) that turns the used
    value into text, or None."""
    if use.how == "formatted":
        return use.context
    call = use.context
    if use.how == "argument" and not is_reporting_call(model, call) and _is_formatting(model, call, use):
        return call
    return None


def _places_itself(model: Model, use: Use, text: bool) -> bool:
    """``text``: the used value is text made from the device."""
    how = use.how
    if how == "bound":
        # stored on an object (`self.device = device`) whose reads the file may not show
        return "." in use.binding.name and not model.reads_of(use.binding)
    if how == "argument":
        return not is_reporting_call(model, use.context)
    if text:
        return how == "returned"
    return True


def _is_formatting(model: Model, call: cst.Call, use: Use) -> bool:
    func = call.func
    if isinstance(func, cst.Name) and func.value in _FORMATTING and not model.bindings_of(func):
        return True
    # "{}".format(device)
    return isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(
        func.value, (cst.SimpleString, cst.ConcatenatedString)
    )
