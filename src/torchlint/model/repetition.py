"""Whether a piece of code runs again and again (every step, every call of a module), as far as
the file shows.

Code repeats when a loop or a comprehension of its own function runs it again, when its function
is one a framework calls once per batch or step (`forward`, an optimizer's `step`, Lightning's
`training_step`...), or when a use of its function repeats (a helper called in the training
loop or from a `forward`, a method handed to `checkpoint` there), unless it comes before a loop
of its function: a function that runs a loop (over the evaluation data, over decoding steps)
sets that loop up once per call, and is called per pass, not per step. Without that evidence the code may run once per run of the program:
a script's top level, a constructor, `main()`, a library function whose callers the file does
not show. Code that fills a cache (`if self.grid is None: self.grid = ...`) runs the first time
only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge.training import PER_STEP_METHODS
from torchlint.model.training import within
from torchlint.model.tree import children

if TYPE_CHECKING:
    from torchlint.model import Model

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_MAX_CALL_DEPTH = 4


def runs_repeatedly(model: Model, node: cst.CSTNode) -> bool:
    """Whether the file shows that ``node`` runs again and again."""
    return not _fills_a_cache(model, node) and _repeats(model, node, 0, set())


def _fills_a_cache(model: Model, node: cst.CSTNode) -> bool:
    """Whether ``node`` sits in `if self.cached is None:` whose body binds `self.cached`: it runs
    the first time only, however often its function does. A local or parameter filled in
    (`if mask is None: mask = ...`) is filled again on every call that leaves it out."""
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, cst.If) and isinstance(unset := _unset_test(ancestor.test), cst.Attribute):
            if any(within(model, binding.statement, ancestor.body) for binding in model.bindings_of(unset)):
                return True
    return False


def _unset_test(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x is None` (`self.x is None`): what is tested for being unset."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        if isinstance(comparison.operator, cst.Is) and isinstance(comparison.comparator, cst.Name):
            if comparison.comparator.value == "None":
                return test.left
    return None


def _repeats(model: Model, node: cst.CSTNode, depth: int, seen: set[cst.FunctionDef]) -> bool:
    if _repeated_in_function(model, node):
        return True
    function = model.function_of(node)
    if isinstance(function, cst.Module):
        return False
    if function.name.value in PER_STEP_METHODS and isinstance(model.scope(function), cst.ClassDef):
        return True
    if depth >= _MAX_CALL_DEPTH or function in seen:
        return False  # recursion, or a chain of calls too long to follow
    if _has_loop(function):
        return False  # outside the function's own loop: that loop's setup, once per pass however often it is called
    seen.add(function)
    return any(_repeats(model, use, depth + 1, seen) for use in _uses(model, function))


def _has_loop(function: cst.FunctionDef) -> bool:
    pending = list(children(function.body))
    while pending:
        node = pending.pop()
        if isinstance(node, (cst.For, cst.While)):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            pending.extend(children(node))
    return False


def _uses(model: Model, function: cst.FunctionDef) -> list[cst.CSTNode]:
    """Where the file calls ``function`` or hands it on (`checkpoint(self._forward, x)` runs it
    where the hand-over is): a use that repeats makes the function's code repeat, whatever other
    callers it may have."""
    owner = model.scope(function)
    name = function.name.value
    if not isinstance(owner, cst.ClassDef):
        return [read for b in model.bindings(owner, name) if b.statement is function for read in model.reads_of(b)]
    on_self = [read for read in model.reads_table.get(f"self.{name}", ()) if within(model, read, owner)]
    return on_self + [call for call, _ in model.summaries.call_sites(function) or ()]


def _repeated_in_function(model: Model, node: cst.CSTNode) -> bool:
    """Whether a loop or a comprehension of ``node``'s own function runs it more than once (a
    `for` header's iterable is evaluated once)."""
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return False
        if isinstance(ancestor, (cst.While,) + _COMPREHENSIONS):
            return True
        if isinstance(ancestor, cst.For) and child is not ancestor.iter:
            return True
        child = ancestor
    return False
