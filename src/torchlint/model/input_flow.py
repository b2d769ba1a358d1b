"""Which values inside a module's `forward` carry the data of its inputs, and where a value
taken out of torch (`.numpy()`, `.tolist()`, `.item()`) goes back into a tensor.

A name carries input data when an expression it is bound from reads a parameter of `forward`
(other than `self`), or another such name, other than through what only describes a tensor
(`x.shape`, `x.size(0)`, `len(x)`, `x.device`, `device=x.device`). A detached copy (`x.detach()`) still carries
the data: `.detach().cpu().numpy()` is what the error on `.numpy()` of a tensor that requires
grad tells code to write, and the round trip then drops the gradient without a word. The same holds in a method of the class that `forward` calls with such
values (`self.decode(h)`), to a few levels. Flow-insensitive, like the rest of the model: a name
bound once from input data carries it everywhere in the function.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from torchlint.knowledge import tensors
from torchlint.model import Model
from torchlint.model.names import target_names

_MAX_CALL_DEPTH = 2  # forward -> helper -> helper
_MAX_READ_DEPTH = 4  # names a converted value is passed through before it reaches a tensor
_BINDING_KINDS = frozenset({"assign", "annassign", "augassign", "for", "with", "walrus", "comprehension"})


@dataclass(frozen=True)
class Conversion:
    """A conversion of input data out of torch: ``call`` converts ``tensor`` (the receiver or
    argument) into ``result`` ("a NumPy array"...) in ``function``, where the names in
    ``carried`` hold input data."""

    call: cst.Call
    tensor: cst.BaseExpression
    result: str
    function: cst.FunctionDef
    carried: frozenset[str]


def forward_conversions(model: Model, classdef: cst.ClassDef) -> Iterator[Conversion]:
    """Every conversion of input data in the class's `forward` and the methods it passes input
    data to."""
    forward = next(
        (s for s in classdef.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None
    )
    if forward is None:
        return
    seeds = {p.name.value for p in _parameters(forward)[1:]}
    pending = [(forward, seeds, 0)]
    done: set[cst.FunctionDef] = set()
    while pending:
        function, names, depth = pending.pop()
        if function in done:
            continue
        done.add(function)
        carried = _carried_names(model, function, names)
        yield from _conversions(model, function, carried)
        if depth < _MAX_CALL_DEPTH:
            pending.extend((callee, params, depth + 1) for callee, params in _helpers(model, classdef, function, carried))


def feeds_a_tensor(model: Model, conversion: Conversion) -> cst.CSTNode | None:
    """Where the converted value, kept outside torch through NumPy and Python arithmetic and
    through names, becomes tensor data again: a value factory given it as data
    (`torch.tensor(a)`, `torch.from_numpy(a)`), or arithmetic with input data (`x / scale`).
    None when it only sizes, indexes, decides or logs."""
    function, carried = conversion.function, conversion.carried
    pending: list[tuple[cst.CSTNode, int]] = [(conversion.call, 0)]
    while pending:
        node, depth = pending.pop()
        while True:
            parent = model.parent(node)
            if isinstance(parent, cst.Arg):
                call = model.parent(parent)
                if parent.keyword is not None and parent.keyword.value != "data" or not isinstance(call, cst.Call):
                    break
                name = model.call_name(call)
                if name in tensors.VALUE_FACTORIES and parent is call.args[0]:
                    return call
                if name is not None and (name.startswith(tensors.HOST_MATH_PACKAGES) or name in tensors.HOST_MATH_BUILTINS):
                    node = call
                    continue
                break
            if isinstance(parent, cst.BinaryOperation):
                other = parent.right if node is parent.left else parent.left
                if _carries(model, other, carried):
                    return parent
                node = parent
                continue
            if isinstance(parent, cst.Attribute) and parent.value is node:
                grand = model.parent(parent)
                if isinstance(grand, cst.Call) and grand.func is parent:
                    node = grand  # a method of the array: `a.astype(np.float32)`, `a.mean()`
                    continue
                break
            if isinstance(parent, cst.Subscript) and parent.value is node:
                node = parent
                continue
            if isinstance(parent, (cst.Element, cst.List, cst.Tuple, cst.UnaryOperation)):
                node = parent
                continue
            if isinstance(parent, (cst.ListComp, cst.GeneratorExp)) and parent.elt is node:
                node = parent  # `[t.numpy() for t in parts]`: the list holds the converted values
                continue
            if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and parent.value is node:
                if depth < _MAX_READ_DEPTH:
                    pending.extend((read, depth + 1) for read in _reads_bound_by(model, parent, function))
                break
            break
    return None


def _parameters(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _carried_names(model: Model, function: cst.FunctionDef, seeds: set[str]) -> frozenset[str]:
    bindings = [
        b for (scope, key), found in model.bindings_table.items() if scope is function and "." not in key for b in found
    ]
    bindings = [b for b in bindings if b.how in _BINDING_KINDS and b.source is not None]
    carried = set(seeds)
    changed = True
    while changed:
        changed = False
        for binding in bindings:
            if binding.name not in carried and _carries(model, binding.source, carried):
                carried.add(binding.name)
                changed = True
    return frozenset(carried)


def _carries(model: Model, expr: cst.CSTNode, names: frozenset[str]) -> bool:
    """Whether ``expr`` computes with the data of one of ``names``."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if node.value in names:
                return True
        elif isinstance(node, cst.Attribute):
            if node.attr.value not in tensors.METADATA_ATTRIBUTES:
                stack.append(node.value)
        elif isinstance(node, cst.Call):
            if not _opaque(model, node):
                stack.append(node.func)
                stack.extend(
                    arg.value for arg in node.args if arg.keyword is None or arg.keyword.value not in tensors.METADATA_KEYWORDS
                )
        elif isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            # `[len(t) for t in targets]` reads sizes only: what counts is the element computed
            if _carries(model, node.elt, names | _comprehension_targets(model, node.for_in, names)):
                return True
        else:
            stack.extend(node.children)
    return False


def _comprehension_targets(model: Model, clause: cst.CompFor | None, names: frozenset[str]) -> frozenset[str]:
    """The names a comprehension's clauses bind from input data."""
    found: set[str] = set()
    while clause is not None:
        if _carries(model, clause.iter, names | found):
            found.update(n.value for n in target_names(clause.target))
        clause = clause.inner_for_in
    return frozenset(found)


def _opaque(model: Model, call: cst.Call) -> bool:
    """A call whose result holds no tensor data of its arguments: metadata, or a value already
    converted out of torch (counted where it is converted)."""
    func = call.func
    if isinstance(func, cst.Attribute) and model.qualified_name(func) is None:
        name = func.attr.value
        return name in tensors.METADATA_METHODS or name in tensors.HOST_CONVERSION_METHODS
    name = model.call_name(call) or (func.value if isinstance(func, cst.Name) else None)
    return name in tensors.METADATA_FUNCTIONS or name in tensors.HOST_CONVERSION_FUNCTIONS


def _conversions(model: Model, function: cst.FunctionDef, carried: frozenset[str]) -> Iterator[Conversion]:
    for call in model.calls:
        if model.function_of(call) is not function:
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and model.qualified_name(func) is None:
            result = tensors.HOST_CONVERSION_METHODS.get(func.attr.value)
            if result is not None and not call.args and _carries(model, func.value, carried):
                yield Conversion(call, func.value, result, function, carried)
            continue
        name = model.call_name(call) or (func.value if isinstance(func, cst.Name) else None)
        result = tensors.HOST_CONVERSION_FUNCTIONS.get(name or "")
        if result is not None and call.args and not call.args[0].star and _carries(model, call.args[0].value, carried):
            yield Conversion(call, call.args[0].value, result, function, carried)


def _helpers(model: Model, classdef: cst.ClassDef, function: cst.FunctionDef, carried: frozenset[str]):
    """Methods of the class that ``function`` calls on `self` with input data, and which of their
    parameters receive it."""
    for call in model.calls:
        func = call.func
        if model.function_of(call) is not function or not isinstance(func, cst.Attribute):
            continue
        if not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            continue
        callee = model.summaries.method(classdef, func.attr.value)
        if callee is None or callee is function:
            continue
        params = {
            p.name.value
            for p in _parameters(callee)[1:]
            if (arg := model.summaries.argument(callee, call, 1, p.name.value)) is not None
            and arg is not p.default
            and _carries(model, arg, carried)
        }
        if params:
            yield callee, params


def _reads_bound_by(model: Model, statement: cst.CSTNode, function: cst.FunctionDef) -> list[cst.CSTNode]:
    reads: list[cst.CSTNode] = []
    targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
    for target in targets:
        if not isinstance(target, cst.Name):
            continue
        for binding in model.bindings(function, target.value):
            if binding.statement is statement:
                reads.extend(
                    r for r in model.reads_of(binding)
                    if model.function_of(r) is function and model.order(r) > model.order(statement)
                )
    return reads
