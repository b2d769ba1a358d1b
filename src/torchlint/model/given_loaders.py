"""Loaders a function is given, declared as torch DataLoaders (`valid_loader: DataLoader`), whose
batches the code around it treats as host data: a loop of the same class (or, for a function
of the module, of another function of the module) moves to a device what it draws from a loader
it is given the same way. Such code expects its loaders to collate host tensors, as a torch
DataLoader does by default; the one its author forgot to move from is no exception.

Without that evidence a given loader stays unknown: its caller may have built it over data
already on the device, or prepared it with a framework that moves the batches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data
from torchlint.model.names import dotted
from torchlint.model.values.kinds import Place
from torchlint.model.values.placement import receives_move

if TYPE_CHECKING:
    from torchlint.model import Binding, Model


class GivenLoaders:
    def __init__(self, model: Model) -> None:
        self.model = model
        self._moving: dict[cst.CSTNode, bool] = {}  # class or module -> whether it moves given batches

    def host_loader(self, binding: Binding) -> str | None:
        """The DataLoader class a parameter binding is declared as, when the function's class (or
        module) moves the batches of such a loader somewhere; None otherwise."""
        model = self.model
        function = binding.scope
        if binding.how != "param" or not isinstance(function, cst.FunctionDef):
            return None
        group = _group(model, function)
        declared = _declared_loader(model, function, binding.name)
        if group is None or declared is None:
            return None
        if group not in self._moving:
            self._moving[group] = False  # a loop's sources may ask again while this is found
            self._moving[group] = any(_moving_loops(model, group))
        return declared if self._moving[group] else None


def _declared_loader(model: Model, function: cst.FunctionDef, name: str) -> str | None:
    """The torch DataLoader class a parameter's annotation names, if it names one."""
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name and param.annotation is not None:
            qualified = model.qualified_name(param.annotation.annotation)
            return qualified if qualified in data.LOADERS else None
    return None


def _group(model: Model, function: cst.FunctionDef) -> cst.ClassDef | cst.Module | None:
    """The code that shares the function's conventions: its class, or the module for a function
    at the top level; None for a nested function."""
    owner = model.scope(function)
    return owner if isinstance(owner, (cst.ClassDef, cst.Module)) else None


def _moving_loops(model: Model, group: cst.ClassDef | cst.Module) -> Iterator[cst.For]:
    """The for-loops of the group's functions over a declared loader they are given (a parameter,
    or `self.<attr>` the constructor stores one in) that move a name their target binds."""
    stored = _stored_loaders(model, group) if isinstance(group, cst.ClassDef) else frozenset()
    for binding in model.all_bindings():
        loop = binding.statement
        if binding.how != "for" or not isinstance(loop, cst.For):
            continue
        function = model.function_of(loop)
        if not isinstance(function, cst.FunctionDef) or model.scope(function) is not group:
            continue
        if not any(_given_loader(model, function, source, stored) for source in model.loops.iterated_sources(loop.iter)):
            continue
        if any(_moved_to_device(model, read) and _within(model, read, loop.body) for read in model.reads_of(binding)):
            yield loop


def _given_loader(model: Model, function: cst.FunctionDef, source: cst.BaseExpression, stored: frozenset[str]) -> bool:
    key = dotted(source)
    if key in stored:
        return True
    if not isinstance(source, cst.Name):
        return False
    bindings = model.bindings_of(source)
    return (
        bool(bindings)
        and all(b.how == "param" and b.scope is function for b in bindings)
        and _declared_loader(model, function, source.value) is not None
    )


def _stored_loaders(model: Model, classdef: cst.ClassDef) -> frozenset[str]:
    """`self.<attr>` keys the class's constructor assigns a declared loader parameter to."""
    init = model.summaries.method(classdef, "__init__")
    if init is None:
        return frozenset()
    found = set()
    for binding in model.all_bindings():
        source = binding.source
        if binding.scope is classdef and binding.how == "assign" and isinstance(source, cst.Name) and not binding.path:
            if model.function_of(binding.statement) is init and _declared_loader(model, init, source.value) is not None:
                found.add(binding.name)
    return frozenset(found)


def _moved_to_device(model: Model, read: cst.BaseExpression) -> bool:
    """Whether a read is moved to a device that may be an accelerator (`x.to(device)`, not
    `x.cpu()` or `x.to(torch.float16)`)."""
    if not receives_move(model, read):
        return False
    call = model.parent(model.parent(read))
    return isinstance(call, cst.Call) and model.values.placement.move_target(call) is Place.DEVICE


def _within(model: Model, node: cst.CSTNode, block: cst.CSTNode) -> bool:
    return any(ancestor is block for ancestor in model.ancestors(node))
