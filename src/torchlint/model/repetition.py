"""How often a piece of code runs: once per run of the program (setup), or again and again.

Code runs once when nothing repeats it: no loop or comprehension of its own function runs it
again, and its function runs once itself. That holds for the module body (a script's top level,
its `if __name__ == "__main__":` block), for a class's constructor (the object is built before it
is used, the setup of what it then does many times), and for a function every call of which in
the file runs once (`main()` called from the script's last line). A function the file never
calls, or hands on (a callback, a library's API), may run any number of times: not once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from torchlint.model import Model

_CONSTRUCTOR = "__init__"
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_MAX_CALL_DEPTH = 4


def runs_once(model: Model, node: cst.CSTNode) -> bool:
    """Whether ``node`` runs once per run of the program, as far as the file shows."""
    return _runs_once(model, node, 0, set())


def _runs_once(model: Model, node: cst.CSTNode, depth: int, seen: set[cst.FunctionDef]) -> bool:
    if _repeated_in_function(model, node):
        return False
    function = model.function_of(node)
    if isinstance(function, cst.Module):
        return True
    if function.name.value == _CONSTRUCTOR and isinstance(model.scope(function), cst.ClassDef):
        return True
    if depth >= _MAX_CALL_DEPTH or function in seen:
        return False  # recursion, or a chain of calls too long to follow
    sites = model.summaries.call_sites(function)
    if not sites:
        return False
    seen.add(function)
    return all(_runs_once(model, call, depth + 1, seen) for call, _ in sites)


def _repeated_in_function(model: Model, node: cst.CSTNode) -> bool:
    """Whether a loop, a comprehension or a lambda of ``node``'s own function may run it more
    than once (a `for` header's iterable is evaluated once)."""
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return False
        if isinstance(ancestor, (cst.While, cst.Lambda) + _COMPREHENSIONS):
            return True
        if isinstance(ancestor, cst.For) and child is not ancestor.iter:
            return True
        child = ancestor
    return False
