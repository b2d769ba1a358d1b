"""How a script draws one item from an iterator: `next(it)`, `next(it, default)`, and the method
spellings `it.__next__()` and Python 2's `it.next()` (still found in old training loops)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from torchlint.model import Model

_NEXT_METHODS = frozenset({"__next__", "next"})


def drawn_iterator(model: Model, call: cst.Call) -> cst.BaseExpression | None:
    """The iterator ``call`` draws the next item from, or None when it draws from none."""
    func = call.func
    if type(func) is cst.Name:  # exact types: LibCST's concrete node classes have no subclasses
        if func.value == "next" and call.args and not call.args[0].star and not model.bindings_of(func):
            return call.args[0].value
        return None
    if type(func) is cst.Attribute and func.attr.value in _NEXT_METHODS and not call.args:
        return func.value
    return None
