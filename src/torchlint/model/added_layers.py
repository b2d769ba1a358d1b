"""The layers of a container filled after it is built: `net = nn.Sequential()` followed by
`net.add_module("fc", nn.Linear(8, 2))`. A Sequential runs its layers in the order they were
given and added, so the last one added makes its output."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import modules
from torchlint.model.tree import ancestors_within
from torchlint.model.values import Value

if TYPE_CHECKING:
    from torchlint.model import Model

_BRANCHES = (cst.If, cst.For, cst.While, cst.Try, cst.With)


def added_layers(model: Model, container: Value) -> list[tuple[cst.Call, cst.BaseExpression]]:
    """Each `add_module(name, layer)` call on the container, with its layer, in source order."""
    found = []
    for call in model.calls_named(methods=modules.ADD_MODULE_METHODS):
        func = call.func
        layer = _layer_argument(call)
        if layer is not None and container in model.values.of(func.value):
            found.append((call, layer))
    found.sort(key=lambda item: model.order(item[0]))
    return found


def layers(model: Model, container: Value) -> list[cst.BaseExpression]:
    """Every layer of the container: those given when it is built (also those of a list it
    unpacks, `nn.Sequential(*blocks)`), then those added."""
    built = container.node
    given = []
    for arg in built.args if isinstance(built, cst.Call) else ():
        if arg.keyword is None:
            given.extend(_listed(model, arg.value) if arg.star == "*" else [arg.value])
    return given + [layer for _, layer in added_layers(model, container)]


def _listed(model: Model, expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What a list the code builds holds, in no particular order: the elements of the list
    literals its name is bound to and what `append` and `extend` with a literal add to it
    (`blocks = []`, then `blocks.append(nn.Dropout(p))` in a loop). Nothing when the name is
    bound to anything else: what that list holds is not known."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [element.value for element in expr.elements]
    bindings = model.bindings_of(expr) if isinstance(expr, cst.Name) else []
    if not bindings or not all(b.how == "assign" and isinstance(b.value, cst.List) for b in bindings):
        return []
    held = [element.value for b in bindings for element in b.value.elements]
    for call in model.calls_named(methods=("append", "extend")):
        receiver = call.func.value
        if not (isinstance(receiver, cst.Name) and receiver.value == expr.value) or len(call.args) != 1:
            continue
        if model.bindings_of(receiver) != bindings:
            continue  # another function's list of the same name
        added = call.args[0].value
        if call.func.attr.value == "append":
            held.append(added)
        elif isinstance(added, (cst.List, cst.Tuple)):
            held.extend(element.value for element in added.elements)
    return held


def last_layer(model: Model, container: Value) -> cst.BaseExpression | None:
    """The layer that makes a Sequential's output; None when the order the layers are added in
    depends on the run (an `add_module` under a condition or a loop, or in another function
    than the one that builds the container)."""
    built = container.node
    if not isinstance(built, cst.Call) or any(arg.star for arg in built.args):
        return None
    added = added_layers(model, container)
    if not added:
        given = [arg.value for arg in built.args if arg.keyword is None]
        return given[-1] if given else None
    function = model.function_of(built)
    for call, _ in added:
        if model.function_of(call) is not function or model.order(call) < model.order(built):
            return None
        if any(isinstance(ancestor, _BRANCHES) for ancestor in ancestors_within(model, call, function)):
            return None
    return added[-1][1]


def _layer_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The module `add_module(name, module)` adds."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "module":
            return arg.value
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    return positional[1] if len(positional) >= 2 else None

