"""What a file does as a whole: whether it is a script that runs training code (rather than a
library module whose names other files import), and whether it may run a network at all
(rather than only defining, converting or inspecting networks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model.values import Kind

if TYPE_CHECKING:
    from torchlint.model import Model


def module_is_a_script(model: Model) -> bool:
    """A module that runs training code when it is run, rather than one whose names other files
    import: a notebook, a module with a `__main__` guard or loops at top level, or one whose top
    level calls a function it defines (`main()` with no guard) or runs a module it builds; and that
    reads no global dynamically (`globals()`, `exec`, which config loaders use)."""
    for call in model.calls:
        if isinstance(call.func, cst.Name) and call.func.value in ("globals", "exec", "eval", "vars", "locals"):
            return False
    if model.cell_starts:
        return True  # a notebook's cells run top to bottom; no other file imports them
    for statement in model.module.body:
        if isinstance(statement, (cst.For, cst.While)):
            return True
        if isinstance(statement, cst.If) and "__name__" in model.module.code_for_node(statement.test):
            return True
        if isinstance(statement, cst.SimpleStatementLine) and any(_runs_own_code(model, small) for small in statement.body):
            return True
    return False


def _runs_own_code(model: Model, statement: cst.BaseSmallStatement) -> bool:
    """A top-level `main()` / `train(model, loader)` of a function the file defines, or a call of
    a module it builds (`out = model(x)`): importing the file would run it, so nothing imports it."""
    value = statement.value if isinstance(statement, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Name, cst.Attribute)):
        return False
    if isinstance(statement, cst.Expr) and isinstance(value.func, cst.Name):
        if any(binding.how == "def" for binding in model.bindings_of(value.func)):
            return True
    return model.values.all_of(value.func, Kind.MODULE) is not None


def runs_a_model(model: Model) -> bool:
    """Whether the file may run a network: it iterates a loader, builds an optimizer, calls a
    module it builds, or calls an object some call made (a pipeline, a model of unknown class),
    outside the methods of its own network classes. Otherwise it defines, converts or inspects
    networks, and no computation is left on the CPU."""
    values = model.values
    if model.loops.batch_loops() or values.made(Kind.OPTIMIZER):
        return True
    called = (call for module in values.made(Kind.MODULE) for call in values.modules.fate(module).calls)
    if any(not _in_a_network(model, call) for call in called):
        return True
    return any(_calls_a_made_object(model, call) and not _in_a_network(model, call) for call in model.calls)


def _in_a_network(model: Model, call: cst.Call) -> bool:
    """A call in a method of a torch module class (`self.fc(x)` in `forward`): the network
    calling its own layers, which runs only when something calls the network."""
    classdef = next((node for node in model.ancestors(call) if isinstance(node, cst.ClassDef)), None)
    return classdef is not None and model.values.modules.class_kind(classdef) is Kind.MODULE


def _calls_a_made_object(model: Model, call: cst.Call) -> bool:
    """`pipe(prompt)` where `pipe = Pipeline.from_pretrained(...)`: a call of a name bound to the
    result of another call."""
    if not isinstance(call.func, (cst.Name, cst.Attribute)):
        return isinstance(call.func, cst.Call)  # `build()(x)`
    return any(b.how in ("assign", "annassign") and isinstance(b.value, cst.Call) for b in model.bindings_of(call.func))
