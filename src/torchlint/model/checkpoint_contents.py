"""What a checkpoint load brings back, read from how the loaded value is used: parameters to
restore into a model or optimizer ("state"), a module pickled whole ("module"), a quantized
model's state, which only the host runs ("host state"), or nothing the file shows to hold
tensors (a data file)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import checkpoints
from torchlint.model.names import dotted, target_names
from torchlint.model.tree import children
from torchlint.model.values import Kind

if TYPE_CHECKING:
    from torchlint.model import Model

_MAX_DEPTH = 4  # entries of entries: `ckpt["state"]["model"]`

def restored_contents(model: Model, loaded: cst.BaseExpression, depth: int = 0) -> str | None:
    """What the load returns holds parameters, saved from wherever training ran: "state" when it
    (or an entry of it) reaches `load_state_dict`, "module" when it is used as a module (called,
    asked for its parameters or mode, or given tensors by one of its methods: `policy.act(obs,
    hidden)`); "host state" when the `load_state_dict` is a quantized model's, which only the host
    runs; None when the file shows neither (a data file)."""
    if depth > _MAX_DEPTH:
        return None
    for use in model.values.uses(loaded, checkpoints.PASSING_METHODS):
        if use.how == "argument" and _restores_tensors(model, use.context):
            return "host state" if _into_quantized_model(model, use.context) else "state"
        if use.how == "argument" and use.name == checkpoints.STATE_PARAMETER:
            return "state"  # `Model.from_pretrained(path, state_dict=loaded)`
        if use.how == "argument" and restored_contents(model, use.context, depth + 1) == "state":
            return "state"  # what a helper makes of it is restored: `load_state_dict(renamed(loaded))`
        if use.how == "called" or (use.how == "method" and use.name in checkpoints.MODULE_METHODS):
            return "module"
        if use.how == "method" and use.name not in checkpoints.ENTRY_METHODS and _given_tensors(model, use.context):
            return "module"
        entries = []
        if use.how == "method" and use.name in checkpoints.ENTRY_METHODS:
            entries = [use.context]
        elif use.how == "other" and isinstance(use.context, cst.Subscript) and use.context.value is use.node:
            entries = [use.context]
        elif use.how == "stored" and isinstance(use.context, cst.Assign) and use.context.value is use.node:
            entries = _unpacked_reads(model, use.context)  # `policy, stats = torch.load(path)`
        elif use.how == "method" and use.name in checkpoints.ITEM_METHODS:
            entries = [use.context]
        elif use.how == "iterated":
            entries = _copies(model, use.context)
        for entry in entries:
            found = restored_contents(model, entry, depth + 1)
            if found is not None:
                return found
    return None


def _copies(model: Model, loop: cst.CSTNode) -> list[cst.BaseExpression]:
    """What a loop over a state copies it into, entry by entry (renaming keys on the way): the
    comprehension it is the loop of (`{k[7:]: v for k, v in state.items()}`), or the reads of a
    dict that the body of a `for` fills with what the loop binds (`new[name] = v`)."""
    if isinstance(loop, cst.CompFor):
        comprehension = model.parent(loop)
        while isinstance(comprehension, cst.CompFor):
            comprehension = model.parent(comprehension)
        return [comprehension] if comprehension is not None else []
    if not isinstance(loop, cst.For):
        return []
    bound = {name.value for name in target_names(loop.target)}
    reads = []
    pending: list[cst.CSTNode] = [loop.body]
    while pending:
        node = pending.pop()
        pending.extend(children(node))
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript)):
            continue
        if not (isinstance(node.value, cst.Name) and node.value.value in bound):
            continue
        filled = node.targets[0].target.value
        reads.extend(read for binding in model.bindings_of(filled) for read in model.reads_of(binding))
    return reads


def _unpacked_reads(model: Model, assign: cst.Assign) -> list[cst.BaseExpression]:
    """The reads of the names a tuple target binds to the entries of the assigned value."""
    reads = []
    for target in assign.targets:
        elements = target.target.elements if isinstance(target.target, (cst.Tuple, cst.List)) else ()
        for element in elements:
            if isinstance(element.value, cst.Name):
                for binding in model.bindings_of(element.value):
                    if binding.target is element.value:
                        reads.extend(model.reads_of(binding))
    return reads


def _given_tensors(model: Model, call: cst.CSTNode | None) -> bool:
    """Whether a method call passes a tensor the file made: the object computes on tensors."""
    return isinstance(call, cst.Call) and any(
        not arg.star and any(value.kind is Kind.TENSOR for value in model.values.of(arg.value)) for arg in call.args
    )


def _restores_tensors(model: Model, call: cst.CSTNode | None) -> bool:
    """`model.load_state_dict(...)`, `optimizer.load_state_dict(...)`: what holds tensors. A
    scheduler's or a GradScaler's state is numbers, which load anywhere."""
    func = call.func if isinstance(call, cst.Call) else None
    if not isinstance(func, cst.Attribute) or func.attr.value not in checkpoints.RESTORING_METHODS:
        return False
    receiver = (dotted(func.value) or "").rsplit(".", 1)[-1].lower()
    if receiver.endswith(checkpoints.NUMERIC_STATE_NAMES):
        return False
    return not _receiver_made_by(model, func.value, checkpoints.NUMERIC_STATE_MAKERS)


def _into_quantized_model(model: Model, call: cst.Call) -> bool:
    """`quantized.load_state_dict(state)` where a binding of `quantized` that reaches the call
    (for an attribute: one in the same function) quantizes a model: a quantized model's state has
    its own keys (packed weights), so a state that fits it was saved by a quantized model, on the
    host."""
    receiver = call.func.value
    function = model.function_of(call)
    return any(
        _made_by(model, binding.value, checkpoints.HOST_ONLY_MODEL_MAKERS)
        for binding in model.reaching(receiver)
        if isinstance(receiver, cst.Name) or model.function_of(binding.statement) is function
    )


def _receiver_made_by(model: Model, receiver: cst.BaseExpression, makers) -> bool:
    return any(_made_by(model, value.node, makers) for value in model.values.of(receiver)) or any(
        _made_by(model, binding.value, makers) for binding in model.bindings_of(receiver)
    )


def _made_by(model: Model, node: cst.CSTNode | None, makers) -> bool:
    """Whether ``node`` is a call of one of ``makers`` (qualified names, or prefixes ending in
    "." or "_")."""
    name = model.call_name(node) if isinstance(node, cst.Call) else None
    return name is not None and any(
        name.startswith(maker) if maker.endswith(".") or maker.endswith("_") else name == maker for maker in makers
    )

