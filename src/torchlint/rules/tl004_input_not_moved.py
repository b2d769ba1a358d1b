"""TL004 input-not-moved: a module that was moved to a device is called with a batch from a
loader, or a tensor created without `device=`, that was never moved: on a GPU the forward pass
fails with a device mismatch. Also: an if/elif chain whose branches move different tensors
(`images` on one, `target` on another), so on one path an unmoved tensor meets a moved one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.fixes.moves import move_batch_at_loop_top
from torchlint.knowledge import losses, modules, tensors
from torchlint.model import Model
from torchlint.model.boolean_tensors import is_boolean_tensor
from torchlint.model.discarded import dropped_move_of
from torchlint.model.index_only import indexes_only
from torchlint.model.functions import ProjectCall
from torchlint.model.place_following import first_pass_parameter, innermost_loop
from torchlint.model.values import Kind, Place, Use, Value
from torchlint.model.values.calling import argument, keyword, parameter_for
from torchlint.registry import Finding, Rule


class InputNotMoved(Rule, code="TL004"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        values = model.values
        checked: set[cst.Call] = set()  # a call of a name that may hold either of two modules
        callers: set[cst.BaseExpression] = set()  # callers' arguments reported for a first pass
        for built in dict.fromkeys(values.made(Kind.MODULE) + values.modules.known_by_use()):
            if values.modules.is_submodule(built):
                continue  # called in its parent's forward, with its parent's inputs
            for call in values.modules.fate(built).calls:
                moved = _moved_modules(model, call)
                if moved is None or call in checked:
                    continue
                checked.add(call)
                # An input left on the host by a dropped `x.to(device)` is TL003's finding.
                inputs = [
                    arg
                    for arg in call.args
                    if not any(_kept_on_host_by_forward(model, m, call, arg) for m in moved)
                    and not _kept_on_host_beside(model, call, arg)
                    and not _accepted_on_host(moved, call, arg)
                ]
                unmoved = [
                    arg for arg in inputs if _on_host(values.of(arg.value)) and dropped_move_of(model, arg.value, call) is None
                ]
                if unmoved:
                    fix = move_batch_at_loop_top(model, unmoved[0].value, moved[0])
                    message, suggestions = _message(model, call, moved[0], unmoved)
                    yield Finding(unmoved[0].value, message, fix, suggestions)
                for arg in inputs:
                    if not _on_host(values.of(arg.value)):
                        yield from _host_on_first_pass(model, call, moved[0], arg, callers)
            yield from _fed_elsewhere(model, built)
        for chain, moves in _branch_moves(model).items():
            yield from _unmoved_on_a_branch(model, chain, moves)


def _accepted_on_host(moved: tuple[Value, ...], call: cst.Call, arg: cst.Arg) -> bool:
    """Whether a module the call may run takes this argument in host memory (CTCLoss's sequence
    lengths): where the file cannot tell which one runs, the one that accepts it may."""
    positional = [a for a in call.args if a.keyword is None]
    index = positional.index(arg) if arg in positional else None
    keyword_name = arg.keyword.value if arg.keyword is not None else None
    return any(
        index == position or keyword_name == name
        for m in moved
        for position, name in losses.HOST_ARGUMENTS.get(m.api or "", ())
    )


def _host_on_first_pass(
    model: Model, call: cst.Call, module: Value, arg: cst.Arg, reported: set[cst.BaseExpression]
) -> Iterator[Finding]:
    """An argument the loop around the call computes, on its first pass, from a parameter of the
    function (where that data is: `idx_cond = idx[:, -n:]`, with `idx` extended from the model's
    output at the end of each pass): each caller of the function that passes that parameter a
    host tensor makes the first forward pass fail. Reported at the caller's argument."""
    fn = model.function_of(call)
    if not isinstance(fn, cst.FunctionDef) or not _runs_on_every_pass(model, call):
        return
    parameter = first_pass_parameter(model, arg.value)
    for site, offset in (model.summaries.call_sites(fn) or ()) if parameter is not None else ():
        passed = model.summaries.argument(fn, site, offset, parameter)
        holder = model.parent(passed) if passed is not None else None
        if not isinstance(holder, cst.Arg) or passed in reported:
            continue  # left to its default, or already reported
        if _on_host(model.values.of(passed)) and dropped_move_of(model, passed, site) is None:
            reported.add(passed)
            message, suggestions = _message(model, call, module, [holder], through=fn.name.value)
            yield Finding(passed, message, None, suggestions)


def _runs_on_every_pass(model: Model, call: cst.Call) -> bool:
    """Whether a call inside a loop runs on every pass of the innermost loop around it (no
    branch, handler or nested function or comprehension between them)."""
    loop = innermost_loop(model, call)
    child: cst.CSTNode = call
    for ancestor in model.ancestors(call):
        if ancestor is loop:
            return child is loop.body  # not its `else:` nor its test
        if type(ancestor) in _CONDITIONAL:
            return False
        child = ancestor
    return False


# exact types (LibCST's concrete node classes have no subclasses): a failing isinstance against
# one costs a Python call, and every ancestor of every call in a loop is tested
_CONDITIONAL = frozenset({
    cst.If, cst.Else, cst.Try, cst.ExceptHandler, cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.FunctionDef,
    cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
})


def _kept_on_host_by_forward(model: Model, module: Value, call: cst.Call, arg: cst.Arg) -> bool:
    """Whether the module's own forward passes this argument's parameter where torch requires a
    host tensor (`pack_padded_sequence(embedded, lengths)`): it is on the CPU on purpose; or
    only indexes tensors with it (`x[~mask]`), which torch accepts from the CPU for a GPU tensor."""
    classdef = model.classes.get(module.api or "")
    forward = model.summaries.method(classdef, "forward") if classdef is not None else None
    if forward is None:
        return _mask_for_an_unread_forward(model, module, arg)
    parameter = parameter_for(forward, call, arg, 1)
    return parameter is not None and (
        parameter in _host_only_names(model, forward) or indexes_only(model, forward, parameter)
    )


def _mask_for_an_unread_forward(model: Model, module: Value, arg: cst.Arg) -> bool:
    """Whether the argument is a boolean mask given to a module whose forward the file cannot
    read (a library's model class): a mask is most often an index there (`x[mask]`), which torch
    takes from host memory, and the file does not show which use it gets. Torch's own layers are
    known: their masks (`key_padding_mask`) are combined with the scores, on the device."""
    return not (module.api or "").startswith("torch.") and is_boolean_tensor(model, arg.value)


def _kept_on_host_beside(model: Model, call: cst.Call, arg: cst.Arg) -> bool:
    """Whether the function of the call also passes this name where torch requires a host tensor
    (`pack_padded_sequence(captions, lengths)` beside `decoder(features, captions, lengths)`):
    the code keeps it on the CPU on purpose, whatever the module's forward, which another file
    may hold, does with it."""
    return isinstance(arg.value, cst.Name) and arg.value.value in _host_only_names(model, model.function_of(call))


def _host_only_names(model: Model, scope: cst.CSTNode) -> set[str]:
    """The names the code in ``scope`` passes where torch requires a host tensor."""
    names = set()
    for inner in model.calls_named(tensors.HOST_ONLY_ARGUMENTS):
        if not any(node is scope for node in model.ancestors(inner)):
            continue  # not inside the scope
        wanted = tensors.HOST_ONLY_ARGUMENTS[model.call_name(inner)]
        passed = argument(inner, wanted[1], wanted[0])
        if type(passed) is cst.Name:
            names.add(passed.value)
    return names


def _branch_moves(model: Model) -> dict[cst.If, dict[cst.CSTNode, dict[str, cst.Call]]]:
    """For each if/elif/else chain, the tensors each branch moves in place of themselves
    (`x = x.cuda(...)`), by branch and name."""
    chains: dict[cst.If, dict[cst.CSTNode, dict[str, cst.Call]]] = {}
    for call in model.calls:
        statement = model.parent(call)
        func = call.func
        if not (
            type(statement) is cst.Assign
            and statement.value is call
            and len(statement.targets) == 1
            and isinstance(statement.targets[0].target, cst.Name)
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == statement.targets[0].target.value
            and model.values.placement.move_target(call) is Place.DEVICE
        ):
            continue
        block = model.parent(model.parent(statement))  # the branch's IndentedBlock
        branch = model.parent(block)
        if not isinstance(branch, (cst.If, cst.Else)):
            continue
        head = branch
        while isinstance(model.parent(head), (cst.If, cst.Else)):
            head = model.parent(head)
        chains.setdefault(head, {}).setdefault(branch, {}).setdefault(func.value.value, call)
    return {head: branches for head, branches in chains.items() if len(branches) > 1}


def _unmoved_on_a_branch(model: Model, chain: cst.If, moves: dict[cst.CSTNode, dict[str, cst.Call]]) -> Iterator[Finding]:
    """A name another branch moves, used after the chain in a call next to a value this branch
    moved (or computed from one): on this branch's path the two are on different devices."""
    every: dict[str, list[cst.Call]] = {}
    for branch in moves.values():
        for name, call in branch.items():
            every.setdefault(name, []).append(call)
    reported: set[str] = set()
    for branch, moved in moves.items():
        for name in sorted(every.keys() - moved.keys() - reported):
            use = _first_call_with(model, chain, name)
            if use is None or not _meets_moved(model, chain, use, moved.keys()):
                continue
            reported.add(name)
            argument = next(arg for arg in use.args if isinstance(arg.value, cst.Name) and arg.value.value == name)
            methods = {call.func.attr.value for call in moved.values()}
            move = next((c for c in every[name] if c.func.attr.value in methods), every[name][0])
            yield Finding(argument.value, _branch_message(model, branch, name, moved, move))


def _following(model: Model, statement: cst.CSTNode) -> list[cst.CSTNode]:
    block = model.parent(statement)
    body = list(getattr(block, "body", ()))
    return body[body.index(statement) + 1 :] if statement in body else []


def _first_call_with(model: Model, chain: cst.If, name: str) -> cst.Call | None:
    """The first call after the chain (in its block) that takes ``name`` as an argument, unless
    a statement before it rebinds the name (`if cuda: target = target.cuda()` after the chain)."""
    for statement in _following(model, chain):
        nodes = _walk(statement)
        if any(isinstance(node, cst.AssignTarget) and _names(node.target, name) for node in nodes):
            return None
        for node in nodes:
            if isinstance(node, cst.Call) and any(_names(arg.value, name) for arg in node.args):
                return node
    return None


def _names(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, (cst.Tuple, cst.List)):
        return any(_names(element.value, name) for element in node.elements)
    return isinstance(node, cst.Name) and node.value == name


def _meets_moved(model: Model, chain: cst.If, call: cst.Call, moved) -> bool:
    """Whether another argument of ``call`` is a moved name, or a name bound after the chain
    to a call that takes one (`output = model(images)`)."""
    derived = set(moved)
    for statement in _following(model, chain):
        if call in _walk(statement):
            break
        for node in _walk(statement):
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                if any(isinstance(arg.value, cst.Name) and arg.value.value in derived for arg in node.value.args):
                    derived.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
    return any(isinstance(arg.value, cst.Name) and arg.value.value in derived for arg in call.args)


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        if not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(current.children)
    return found


def _branch_message(model: Model, branch: cst.CSTNode, name: str, moved, move: cst.Call) -> str:
    code = model.module.code_for_node
    path = f"when '{' '.join(code(branch.test).split())}' holds" if isinstance(branch, cst.If) else "on the else branch"
    others = ", ".join(f"'{other}'" for other in sorted(moved))
    return (
        f"'{name}' is moved to the device on another branch of this if/elif chain but not {path}, where {others} "
        f"is moved: on that path this call mixes a CPU tensor with a device one and fails; move it there too: "
        f"{name} = {code(move)}"
    )


def _fed_elsewhere(model: Model, module: Value) -> Iterator[Finding]:
    """A moved module handed to a function of another module of the project, with a loader of
    host batches that function's batch loop feeds it without moving them."""
    values = model.values
    for project_call in values.modules.fate(module).driven_elsewhere:
        summary = project_call.summary
        for module_parameter, loader_parameter in summary.feeds:
            passed = project_call.argument(module_parameter)
            loader = project_call.argument(loader_parameter)
            if passed is None or loader is None or module not in values.of(passed):
                continue
            if _moved_modules(model, project_call.call, passed) != (module,):
                continue
            loaders = values.of(loader)
            if loaders and all(v.kind is Kind.LOADER and values.pipeline.batch_place(v) is Place.HOST for v in loaders):
                yield Finding(loader, _fed_message(model, project_call, passed, loader))
                break


def _moved_modules(model: Model, call: cst.Call, module_expr: cst.BaseExpression | None = None) -> tuple[Value, ...] | None:
    """The modules a call may run (or is given as ``module_expr``), in source order, when it is
    a module on every path and each one is on a device that may be an accelerator at that point,
    neither scatters its inputs (DataParallel) nor moves them itself."""
    found = model.values.all_of(call.func if module_expr is None else module_expr, Kind.MODULE)
    if found is None or not all(_runs_on_device(model, module, call) for module in found):
        return None
    return tuple(sorted(found, key=lambda module: model.order(module.node)))


def _runs_on_device(model: Model, module: Value, call: cst.Call) -> bool:
    placement = model.values.placement
    if module.api in modules.WRAPPERS or placement.module_place(module, call) is not Place.DEVICE:
        return False
    if placement.unmoved_by_shared_guard(module, call):
        return False  # `else:` of the `if args.gpu:` that every move of the module is under
    handed_off = model.values.modules.fate(module).handed_off
    if any(_may_hook_forward(model, use) for use in handed_off) or model.values.modules.dispatched(module):
        return False  # given to code that may hook its forward, or loaded with such hooks (a device_map)
    return not model.values.modules.places_own_inputs(module)


def _may_hook_forward(model: Model, use: Use) -> bool:
    """Whether code the file does not show may hook the module's forward where it gets it: any
    hand-off but a method of the module whose result the file uses (`model.encode_text(text)`
    computes; `model.parallelize()` as a statement may reconfigure it)."""
    return use.how != "method" or isinstance(model.parent(use.context), cst.Expr)


def _fed_message(model: Model, project_call: ProjectCall, module: cst.BaseExpression, loader: cst.BaseExpression) -> str:
    code = model.module.code_for_node
    summary = project_call.summary
    return (
        f"batches of '{code(loader)}' are still on the CPU when {summary.name}() in "
        f"{model.project.where(summary.where)} feeds them to '{code(module)}', which was moved to the device: "
        f"on a GPU the forward pass fails with a device mismatch; move each batch to the module's device in that loop"
    )


def _on_host(found: frozenset[Value]) -> bool:
    return bool(found) and all(v.kind in (Kind.TENSOR, Kind.BATCH) and v.place is Place.HOST for v in found)


def _message(
    model: Model, call: cst.Call, module: Value, unmoved: list[cst.Arg], through: str | None = None
) -> tuple[str, tuple[str, ...]]:
    code = model.module.code_for_node
    first = unmoved[0]
    text = code(first.value)
    move = _move_text(model, module, first.value)
    values = model.values.of(first.value)
    batch = any(v.origin is not None or v.kind is Kind.BATCH for v in values)
    # `torch.FloatTensor(n)`, `torch.from_numpy(a)`: no device= to pass, only a move to make; nor
    # where a helper function makes it
    where = model.function_of(first.value)
    placeable = not batch and not any(
        v.api in tensors.DEVICE_REFUSING_FACTORIES or v.node is None or model.function_of(v.node) is not where for v in values
    )
    given = _device_given(values) if placeable else None
    if given is not None:
        placeable = False  # it was: the device it was given is the host here
        what = f"a tensor created with device={code(given)}, which is the CPU here"
    else:
        what = "a DataLoader batch" if batch else "a tensor created without device=" if placeable else "a tensor made on the host"
    more = f" (and {len(unmoved) - 1} more argument{'s' if len(unmoved) > 2 else ''})" if len(unmoved) > 1 else ""
    callee = f"'{code(call.func)}' was moved" if through is None else f"{through}() passes it to '{code(call.func)}', which was moved"
    still = "" if given is not None else ", still on the CPU"
    head = f"'{text}'{more} is {what}{still}, but {callee} to the device: on a GPU the forward pass fails with a device mismatch; "
    if move is None:
        return head + "move it to the module's device first", ()
    if first.star == "**":
        moved = f"{{k: v.{move} for k, v in {text}.items()}}"
    elif first.star == "*":
        moved = f"[t.{move} for t in {text}]"
    else:
        moved = f"{text}.{move}"
    # An assignment, never the bare conversion, which would drop its result (TL003).
    if isinstance(first.value, (cst.Name, cst.Attribute, cst.Subscript)):
        suggestion = f"{text} = {moved}"
        fix = f"move it first: {suggestion}"
    else:
        suggestion = moved
        fix = f"pass {first.star}{moved} instead"
    if placeable:
        device = move[3:-1] if move.startswith("to(") else '"cuda"'
        fix = f"create it with device={device}, or {fix}"
    return head + fix, (suggestion,)


def _device_given(values) -> cst.BaseExpression | None:
    """The `device=` a factory that made the tensor was given (`torch.tensor(x, device=self.device)`
    with a host `self.device`)."""
    for value in values:
        if isinstance(value.node, cst.Call):
            device = keyword(value.node, "device")
            if device is not None:
                return device
    return None


def _move_text(model: Model, module: Value, at: cst.CSTNode) -> str | None:
    """The move the code used for the module, to repeat for its inputs (`to(device)`, `cuda()`),
    when every name in it is bound at ``at``; None otherwise."""
    for move in model.values.modules.fate(module).moves:
        func = move.func
        # `model.to(device)`, or a construction given `device=device`
        device = move.args[0].value if isinstance(func, cst.Attribute) and func.attr.value == "to" and move.args else keyword(move, "device")
        if device is not None and all(model.visible(name, at) for name in _read_names(device)):
            return f"to({model.module.code_for_node(device)})"
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            return "cuda()"
    return None


def _read_names(expr: cst.CSTNode) -> list[str]:
    """The plain names an expression reads (not attribute names or keywords)."""
    found = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            found.append(node.value)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif isinstance(node, cst.Arg):
            stack.append(node.value)
        else:
            stack.extend(node.children)
    return found


RULE = InputNotMoved
