"""Whether a piece of code runs again and again (every step, every call of a module), as far as
the file shows.

Code repeats when a loop or a comprehension of its own function runs it again, when its function
is one a framework calls once per batch or step (`forward`, an optimizer's `step`, Lightning's
`training_step`...), or when a use of its function repeats (a helper called in the training
loop or from a `forward`, a method handed to `checkpoint` there), unless it comes before a loop
of its function: a function that runs a loop (over the evaluation data, over decoding steps)
sets that loop up once per call, and is called per pass, not per step. In the same way a time
round of a loop that runs a loop of steps of its own (an epoch over a loader, a sampling loop
that runs a network) is a pass, not a step, unless the loop trains on a batch each time round;
and a branch taken in one time round only (`if i == 0:`, one ending with `break`) does not
repeat with its loop. Without that evidence the code may run once per run of the program:
a script's top level, a constructor, `main()`, a library function whose callers the file does
not show. Code that fills a cache (`if self.grid is None: self.grid = ...`) runs the first time
only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import modules
from torchlint.knowledge.training import EVAL_METHOD, PER_STEP_METHODS, TRAIN_METHOD
from torchlint.model.names import dotted
from torchlint.model.training import within
from torchlint.model.tree import ancestors_within, children
from torchlint.model.values import Kind

if TYPE_CHECKING:
    from torchlint.model import Model
    from torchlint.model.bindings import Binding

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_MAX_CALL_DEPTH = 4


def runs_repeatedly(model: Model, node: cst.CSTNode) -> bool:
    """Whether the file shows that ``node`` runs again and again."""
    return not _fills_a_cache(model, node) and _repeats(model, node, 0, set())


def _fills_a_cache(model: Model, node: cst.CSTNode) -> bool:
    """Whether ``node`` sits in `if self.cached is None:` whose body binds `self.cached`, or in
    `if len(state) == 0:` (`if not state:`) whose body stores entries of `state` (an optimizer's
    per-parameter state, made on its first step): it runs the first time only, however often its
    function does. A local or parameter filled in (`if mask is None: mask = ...`) is filled again
    on every call that leaves it out."""
    for ancestor in model.ancestors(node):
        if not isinstance(ancestor, cst.If):
            continue
        unset = _unset_test(ancestor.test)
        if isinstance(unset, cst.Attribute):
            if any(within(model, binding.statement, ancestor.body) for binding in model.bindings_of(unset)):
                return True
        if (empty := _empty_test(ancestor.test)) is not None and _stores_entries(model, ancestor.body, empty):
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


def _empty_test(test: cst.BaseExpression) -> str | None:
    """`len(x) == 0` or `not x`: the dotted name of the container tested for being empty."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return dotted(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        size = test.left
        if (
            isinstance(comparison.operator, cst.Equal)
            and isinstance(comparison.comparator, cst.Integer) and comparison.comparator.value == "0"
            and isinstance(size, cst.Call) and isinstance(size.func, cst.Name) and size.func.value == "len"
            and len(size.args) == 1
        ):
            return dotted(size.args[0].value)
    return None


def _stores_entries(model: Model, body: cst.CSTNode, container: str) -> bool:
    """Whether ``body`` assigns entries of ``container`` (`state["exp_avg"] = ...`)."""
    pending = [body]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.AssignTarget) and isinstance(current.target, cst.Subscript):
            if dotted(current.target.value) == container:
                return True
        pending.extend(children(current))
    return False


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
    if _loops_in(function.body):
        return False  # outside the function's own loop: that loop's setup, once per pass however often it is called
    seen.add(function)
    return any(_repeats(model, use, depth + 1, seen) for use in _uses(model, function))


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
    """Whether a loop or a comprehension of ``node``'s own function runs it once per step (a `for`
    header's iterable is evaluated once). A loop does not when ``node`` runs once per run of it
    (see _once_per_run), nor when each time round the loop runs a loop of steps of its own (see
    _runs_passes): ``node`` is then that inner loop's setup, as code before a loop of a function
    is, and an enclosing loop repeats whole passes, not steps."""
    if _is_constructor(model, model.function_of(node)):
        return False  # a constructor's loops build the object (a layer, a buffer each time round): setup
    child = node
    once: _Once = _Once()
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return False
        if isinstance(ancestor, _COMPREHENSIONS):
            if _comprehension_prepares(model, ancestor):
                child = ancestor
                continue
            return True
        if isinstance(ancestor, cst.If) and child is ancestor.body:
            if once.note_branch(ancestor):
                return False  # the branch leaves the function: at most once per call
        elif isinstance(ancestor, (cst.For, cst.While)) and _repeats_part(ancestor, child):
            if once.ends_run(ancestor) or _prepares_the_run(model, ancestor):
                child = ancestor
                continue  # once per run of this loop: beside it, for the loops around it
            return not _runs_passes(model, ancestor, node)
        child = ancestor
    return False


def _prepares_the_run(model: Model, loop: cst.For | cst.While) -> bool:
    """Whether a loop of the script's top level (a notebook cell's), in no other loop, goes over
    items the script writes out and runs no step: no network or backward pass, nor loops that do. Such a loop
    sets the run up (configures each chosen layer) once per run; the top level's steps are its
    training, evaluation and probing loops."""
    if not isinstance(loop, cst.For) or not _outermost_of_top_level(model, loop) or not _written_items(model, loop.iter):
        return False
    return not _runs_steps(model, loop) and not any(_runs_steps(model, inner) for inner in _loops_in(loop.body))


def _outermost_of_top_level(model: Model, node: cst.CSTNode) -> bool:
    """Whether ``node`` is at the script's top level, in no loop or comprehension."""
    return model.function_of(node) is model.module and not any(
        isinstance(ancestor, (cst.For, cst.While, *_COMPREHENSIONS)) for ancestor in model.ancestors(node)
    )


def _written_items(model: Model, iterable: cst.BaseExpression) -> bool:
    """Whether a loop goes over items the script writes out: a list, tuple, set or dict display
    (`[6.0, 8.0]`), a name every binding of which reaching the loop is one (`layers = [2, 4,
    6]`), or `enumerate()` of those. A count (`range(steps)`) may be any number of steps."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "enumerate":
        return bool(iterable.args) and _written_items(model, iterable.args[0].value)
    if isinstance(iterable, cst.Name):
        bindings = model.reaching(iterable)
        return bool(bindings) and all(
            b.value is not None and isinstance(b.value, (cst.List, cst.Tuple, cst.Set, cst.Dict)) for b in bindings
        )
    return isinstance(iterable, (cst.List, cst.Tuple, cst.Set, cst.Dict))


def _comprehension_prepares(model: Model, comprehension: cst.CSTNode) -> bool:
    """Whether a comprehension of the script's top level goes over items the script writes out
    and runs no step (see _prepares_the_run): it calls no network, nor a method of one
    (`[Intervention(rank) for layer in layers]` configures the run)."""
    if not _outermost_of_top_level(model, comprehension):
        return False
    if not all(_written_items(model, node.iter) for node in _comp_fors(comprehension)):
        return False
    pending = [comprehension]
    while pending:
        current = pending.pop()
        pending.extend(children(current))
        if not isinstance(current, cst.Call):
            continue
        if model.training.called_modules(current) is not None:
            return False
        func = current.func
        if isinstance(func, cst.Attribute) and (func.attr.value == "backward" or _holds_network(model, func.value)):
            return False
    return True


def _comp_fors(comprehension: cst.CSTNode) -> list[cst.CompFor]:
    found, current = [], getattr(comprehension, "for_in", None)
    while isinstance(current, cst.CompFor):
        found.append(current)
        current = current.inner_for_in
    return found


def _is_constructor(model: Model, function: cst.CSTNode) -> bool:
    return (
        isinstance(function, cst.FunctionDef)
        and function.name.value == "__init__"
        and isinstance(model.parent(model.parent(function)), cst.ClassDef)
    )


def _repeats_part(loop: cst.For | cst.While, child: cst.CSTNode) -> bool:
    """Whether ``child`` is a part of ``loop`` that runs each time round (its body, a `while`
    test), not its iterable or its `else`."""
    return child is loop.body or (isinstance(loop, cst.While) and child is loop.test)


class _Once:
    """What the branches around a node say about how often it runs in the loop around them: a
    branch that ends with `break` runs in the last time round only; one taken when the loop's own
    variable equals a constant (`if i == 0:`), in one time round only."""

    def __init__(self) -> None:
        self.breaks = False
        self.equal_names: set[str] = set()

    def note_branch(self, branch: cst.If) -> bool:
        """Records ``branch`` (whose body holds the node); whether it ends with `return` or
        `raise`."""
        body = branch.body.body
        last = body[-1] if body else None
        small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) and last.body else None
        if isinstance(small, (cst.Return, cst.Raise)):
            return True
        self.breaks = self.breaks or isinstance(small, cst.Break)
        self.equal_names.update(_equal_to_constant(branch.test))
        return False

    def ends_run(self, loop: cst.For | cst.While) -> bool:
        """Whether the branches recorded make the node run once per run of ``loop`` (the
        innermost loop around them); forgets them, as they say nothing of outer loops."""
        once = self.breaks or (isinstance(loop, cst.For) and bool(self.equal_names & _target_names(loop.target)))
        self.breaks = False
        self.equal_names = set()
        return once


def _equal_to_constant(test: cst.BaseExpression) -> set[str]:
    """`i == 0`, `0 == i`, `name == "x"`: the name compared for equality with a literal."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        if isinstance(comparison.operator, cst.Equal):
            sides = (test.left, comparison.comparator)
            for name, other in (sides, sides[::-1]):
                if isinstance(name, cst.Name) and isinstance(other, (cst.BaseNumber, cst.BaseString)):
                    return {name.value}
    return set()


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _target_names(element.value)}
    return set()


def _runs_passes(model: Model, loop: cst.For | cst.While, node: cst.CSTNode) -> bool:
    """Whether each time round ``loop`` runs a loop of steps (over a loader's batches, or one that
    runs a network or a backward pass each time round: an epoch over the data, a sampling or
    decoding loop), in its body or in the same-file functions it calls, whenever it runs
    ``node``, while ``loop`` itself takes no training step each time round. Such a time round is
    a pass, not a step; a loop that trains on a batch each time round is a step however many
    loops it runs inside, and one that runs such work only in a branch ``node`` is not in (an
    update every n environment steps) is a step when it runs ``node``."""
    training = model.training
    if (_is_batch_loop(model, loop) and training.computes_gradients(loop)) or loop in training.step_loops():
        return False
    inner = [found for found in _loops_in(loop.body) if _runs_with(model, found, node, loop)]
    for call in calls_each_round(model, loop):
        if not _runs_with(model, call, node, loop):
            continue
        if _builds_network(model, call):
            return True  # a model per time round (one per benchmarked configuration): its copy dwarfs the move
        if _hands_network_to_loop(model, call):
            return True  # a sampler of another module given the denoising network
        for target, _ in model.summaries.targets(call):
            for function in (target, *model.summaries.reachable(target)):
                inner.extend(_loops_in(function.body))
    return any(_runs_steps(model, found) for found in inner)


def _runs_with(model: Model, part: cst.CSTNode, node: cst.CSTNode, loop: cst.For | cst.While) -> bool:
    """Whether ``part`` of ``loop``'s body runs whenever ``node`` does: each branch it is in (of an
    `if`, a conditional expression, an `except`) holds ``node`` too."""
    child = part
    for ancestor in ancestors_within(model, part, loop):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test and not within(model, node, child):
            return False
        if isinstance(ancestor, cst.ExceptHandler) and not within(model, node, ancestor):
            return False
        child = ancestor
    return True


def _builds_network(model: Model, call: cst.Call) -> bool:
    """Whether ``call`` builds a whole model: a model-zoo architecture or a pretrained model (a
    small layer built in a loop says nothing of how heavy the time round is)."""
    return any(
        value.kind is Kind.MODULE and value.node is call and _whole_model(value.api or "")
        for value in model.values.of(call)
    )


def _whole_model(api: str) -> bool:
    return (
        api == "model zoo"
        or api in modules.ZOO_FUNCTIONS
        or api.startswith(modules.ZOO_NAMESPACES)
        or api.startswith(modules.PRETRAINED_LIBRARIES)
    )


def _hands_network_to_loop(model: Model, call: cst.Call) -> bool:
    """Whether ``call`` runs a function of another module that runs, each time round a loop of
    its own, a network the call gives it."""
    for project_call in model.summaries.imported(call):
        for source in project_call.summary.runs_in_loop:
            argument = project_call.argument(source)
            if argument is not None and _is_network(model, argument, _switched(model)):
                return True
    return False


def calls_each_round(model: Model, loop: cst.For | cst.While) -> Iterator[cst.Call]:
    """The calls of ``loop`` that run each time round (not those of a `for`'s iterable)."""
    for call in model.summaries.calls_within(loop):
        if not (isinstance(loop, cst.For) and within(model, call, loop.iter)):
            yield call


def runner(call: cst.Call) -> str | None:
    """What ``call`` runs, spelled as a name or attribute chain: `unet` in `unet(x, t)`,
    `decoder` in `decoder.step(h)`, `self.unet` in `self.unet(x)`; None for a method that
    computes nothing with a network (`parameters()`, `to()`...)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        if func.attr.value in modules.NON_COMPUTING_METHODS:
            return None
        whole = dotted(func)
        if whole is not None and whole.count(".") == 1 and whole.startswith("self."):
            return whole
        return dotted(func.value)
    return dotted(func)


def _runs_steps(model: Model, loop: cst.For | cst.While) -> bool:
    training = model.training
    if _is_batch_loop(model, loop) or training.computes_gradients(loop):
        return True
    if any(value.trainable for _, modules in training.module_calls(loop) for value in modules):
        return True
    return _calls_switched_object(model, loop) or _calls_network_method(model, loop)


def _calls_network_method(model: Model, loop: cst.For | cst.While) -> bool:
    """Whether the body of ``loop`` calls a method of a network that computes with it
    (`policy.act(obs, h)`), also of one an object of a class of the file holds
    (`agent.policy.act(obs, h)` where `Agent.__init__` sets `self.policy = Policy(...)`): an
    episode's loop of environment steps runs the policy each time round."""
    for call in calls_each_round(model, loop):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value not in modules.NON_COMPUTING_METHODS:
            if _holds_network(model, func.value):
                return True
    return False


def _holds_network(model: Model, expr: cst.BaseExpression) -> bool:
    if any(value.kind is Kind.MODULE and value.trainable for value in model.values.of(expr)):
        return True
    if not isinstance(expr, cst.Attribute):
        return False
    key = f"self.{expr.attr.value}"
    for owner in model.values.of(expr.value):
        classdef = model.classes.get(owner.api or "") if owner.kind is Kind.INSTANCE else None
        if classdef is None:
            continue
        for binding in model.bindings(classdef, key):
            if any(value.kind is Kind.MODULE and value.trainable for value in model.values.of_binding(binding)):
                return True
        if any(_parameters_read(model, read) for read in model.reads_table.get(key, ()) if within(model, read, classdef)):
            return True  # built by a class the file cannot see (a star import), but it has parameters
    return False


def _parameters_read(model: Model, read: cst.BaseExpression) -> bool:
    """`self.policy.parameters()`: what holds parameters is a network."""
    parent = model.parent(read)
    return (
        isinstance(parent, cst.Attribute)
        and parent.attr.value in ("parameters", "named_parameters")
        and isinstance(model.parent(parent), cst.Call)
    )


def _calls_switched_object(model: Model, loop: cst.For | cst.While) -> bool:
    """Whether the body of ``loop`` runs an object the file switches to evaluation or training
    mode (`decoder.eval()`), or a method of it that computes (not `parameters()`, `to()`...): a
    network the values do not know, read from a checkpoint or built by another project's
    factory."""
    switched = _switched(model)
    if not switched:
        return False
    for call in calls_each_round(model, loop):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in modules.NON_COMPUTING_METHODS:
            continue
        runners = (func, func.value) if isinstance(func, cst.Attribute) else (func,)
        if any(switched.intersection(model.bindings_of(expr)) for expr in runners):
            return True
    return False


def _switched(model: Model) -> set[Binding]:
    """The bindings of the objects the file calls `.eval()` or `.train()` on."""
    return {
        binding
        for call in model.calls_named(methods=(TRAIN_METHOD, EVAL_METHOD))
        for binding in model.bindings_of(call.func.value)
    }


def _is_network(model: Model, expr: cst.BaseExpression, switched: set[Binding]) -> bool:
    """A module holding parameters, or an object the file switches between modes."""
    if any(value.kind is Kind.MODULE and value.trainable for value in model.values.of(expr)):
        return True
    return bool(switched.intersection(model.bindings_of(expr)))


def _is_batch_loop(model: Model, loop: cst.For | cst.While) -> bool:
    return any(batch_loop.node is loop for batch_loop in model.loops.batch_loops())


def _loops_in(node: cst.CSTNode) -> list[cst.For | cst.While]:
    """The loops inside ``node``, not those of functions or classes defined there."""
    found = []
    pending = list(children(node))
    while pending:
        current = pending.pop()
        if isinstance(current, (cst.For, cst.While)):
            found.append(current)
        if not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            pending.extend(children(current))
    return found
