"""Methods that nothing in the project calls.

A method of a class that derives from no outside class, in a script's module (not a package's),
is run only by code that names it: its own class (`self.load()`), another class or script of the
project (`gan.load()`), or a lookup by name (`getattr(gan, "load")`). When none of the project's
modules names it so, no run of the project executes it: it is left over. A class of a package is
imported by code outside the project too (a library's `Trainer.load()` is for its users); a class
deriving from a library class (an `nn.Module`, a Lightning callback, a trainer) may have its
methods called by the library as hooks, and a decorated method may be registered somewhere: those
count as called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from torchlint.model import Model


def never_called(model: Model, function: cst.CSTNode) -> bool:
    """Whether ``function`` is a method of a top-level class of the file, with no outside base,
    that neither the file nor any other module of the project names (see the module's doc)."""
    if not isinstance(function, cst.FunctionDef) or function.decorators or model.project is None:
        return False
    name = function.name.value
    if name.startswith("__") and name.endswith("__"):
        return False  # `__call__`, `__getitem__`: run by the language
    owner = model.parent(model.parent(function))
    if not isinstance(owner, cst.ClassDef) or owner.decorators or model.parent(owner) is not model.module:
        return False
    if not all(_own_base(model, base.value) for base in owner.bases) or owner.keywords:
        return False
    return not _named_in_file(model, name) and not model.project.method_named(name)


def _own_base(model: Model, base: cst.BaseExpression) -> bool:
    """`object`, or a class the file defines."""
    if isinstance(base, cst.Name) and base.value == "object":
        return True
    return isinstance(base, cst.Name) and any(b.how == "class" for b in model.bindings(model.module, base.value))


def _named_in_file(model: Model, name: str) -> bool:
    for node in model.nodes:
        if type(node) is cst.Attribute and node.attr.value == name and model.qualified_name(node) is None:
            return True
        if type(node) is cst.SimpleString and node.evaluated_value == name:
            return True
    return False
