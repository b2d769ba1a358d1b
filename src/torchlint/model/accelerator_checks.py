"""The code's tests for an accelerator (`torch.cuda.is_available()` and alike): a check written
without its call (`if torch.cuda.is_available:`, a function, always true), and a flag assigned
from a check (`args.cuda = not args.no_cuda and torch.cuda.is_available()`) that nothing reads
while the code moves to CUDA outside any test about the device."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model import constants
from torchlint.model.scripts import module_is_a_script
from torchlint.model.values import is_reporting_call

if TYPE_CHECKING:
    from torchlint.model import Model


def uncalled_availability_checks(model: Model) -> Iterator[cst.BaseExpression]:
    """`if torch.cuda.is_available:` and the like: the function itself, tested for truth."""
    last_names = {path.rsplit(".", 1)[-1] for path in devices.AVAILABILITY_CHECKS}
    endings = tuple(last_names)
    for key, reads in model.reads_table.items():
        # endswith first: one C call rejects nearly every key of the file
        if not key.endswith(endings) or key.rpartition(".")[2] not in last_names:
            continue
        for read in reads:
            if model.qualified_name(read) in devices.AVAILABILITY_CHECKS and _tested_for_truth(model, read):
                yield read


def _tested_for_truth(model: Model, node: cst.BaseExpression) -> bool:
    parent = model.parent(node)
    if isinstance(parent, (cst.If, cst.IfExp, cst.While, cst.Assert)):
        return parent.test is node
    if isinstance(parent, cst.UnaryOperation):
        return isinstance(parent.operator, cst.Not)
    return isinstance(parent, cst.BooleanOperation)


def unread_accelerator_flags(model: Model) -> Iterator[tuple[cst.Name | cst.Attribute, cst.Call]]:
    """`use_cuda = torch.cuda.is_available()`, `args.cuda = not args.no_cuda and ...` that
    nothing reads, in a file that calls `.cuda()` outside any test about the device: each
    (flag, the first such move)."""
    moves = [call for call in model.calls_named(methods="cuda") if _unguarded_cuda_move(model, call)]
    if not moves:
        return
    for call in model.calls_named(devices.AVAILABILITY_CHECKS):
        statement = _flag_assignment(model, call)
        if statement is None:
            continue
        target = statement.targets[0].target
        if not _flag_read(model, target):
            yield target, moves[0]


def _flag_assignment(model: Model, check: cst.Call) -> cst.Assign | None:
    """The assignment of one name or attribute whose value is the availability check, alone or
    combined with `and`/`or`/`not`."""
    node: cst.CSTNode = check
    parent = model.parent(node)
    while isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
        if isinstance(parent, cst.UnaryOperation) and not isinstance(parent.operator, cst.Not):
            return None
        node, parent = parent, model.parent(parent)
    if not isinstance(parent, cst.Assign) or parent.value is not node or len(parent.targets) != 1:
        return None
    return parent if isinstance(parent.targets[0].target, (cst.Name, cst.Attribute)) else None


def _flag_read(model: Model, target: cst.Name | cst.Attribute) -> bool:
    """Whether anything may read the flag: a read of the name; for an attribute of an argparse
    namespace, any read of that attribute name, or the namespace handed to code the file does
    not show (or read whole, `vars(args)`)."""
    if isinstance(target, cst.Name):
        bindings = [b for b in model.bindings_of(target) if b.target is target]
        if any(isinstance(b.scope, cst.Module) for b in bindings) and not module_is_a_script(model):
            return True
        return any(model.reads_of(b) for b in bindings)
    if not constants.evaluator(model).argparse.is_namespace(target.value):
        return True  # an object attribute: other files may read it
    attr = target.attr.value
    for key, reads in model.reads_table.items():
        if key == attr or key.endswith("." + attr):
            for read in reads:
                parent = model.parent(read)
                called = isinstance(parent, cst.Call) and parent.func is read  # `x.cuda()`
                if not called and model.qualified_name(read) is None:  # not `torch.cuda`
                    return True
    return any(_namespace_escapes(model, call) for call in model.calls)


def _namespace_escapes(model: Model, call: cst.Call) -> bool:
    """A call that receives an argparse namespace and is not a same-file function or a report."""
    argparse = constants.evaluator(model).argparse
    if not any(argparse.is_namespace(arg.value) for arg in call.args):
        return False
    if isinstance(call.func, cst.Name) and model.function(call.func.value) is not None:
        return False
    return not is_reporting_call(model, call)


def _unguarded_cuda_move(model: Model, call: cst.Call) -> bool:
    """`x.cuda()` outside any `if` whose test is about a device or CUDA."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value != "cuda":
        return False
    for ancestor in model.ancestors(call):
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            test = model.module.code_for_node(ancestor.test).lower()
            if any(word in test for word in ("cuda", "gpu", "device")):
                return False
    return True
