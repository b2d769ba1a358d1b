"""Code that only the first process of a distributed run executes.

Scripts guard such code with a test of the process's rank against 0 (`if rank == 0:`,
`if dist.get_rank() == 0:`, `if hvd.rank() == 0:`, `if args.local_rank in [-1, 0]:`, where -1
means "not distributed"), or with a helper that says so (`if is_main_process():`,
`if accelerator.is_main_process:`). A rank is recognised by its name, the way the launchers and
libraries spell it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model import constants
from torchlint.model.distributed import env_variable
from torchlint.model.names import dotted
from torchlint.model.tree import children

if TYPE_CHECKING:
    from torchlint.model import Model

_RANK_NAMES = frozenset({"rank", "local_rank", "global_rank", "rank_id", "process_index", "local_process_index"})
_RANK_CALLS = frozenset({"get_rank", "rank", "local_rank", "get_local_rank", "get_global_rank", "get_process_index"})
_MAIN_PROCESS_TESTS = frozenset(
    {"is_main_process", "is_local_main_process", "is_world_process_zero", "is_master", "is_rank_zero", "is_rank_0"}
)
_RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK"})


def runs_on_rank_zero_only(model: Model, node: cst.CSTNode) -> bool:
    """Whether ``node`` sits in the body of an `if` whose test only the first process passes."""
    return any(_first_process_only(model, test) for test in model.guards(node))


def _first_process_only(model: Model, test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _first_process_only(model, test.left) or _first_process_only(model, test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_rank(model, test.expression)  # `not rank`
    if _names_a_main_process_test(test):
        return True
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    left, right = test.left, target.comparator
    if isinstance(target.operator, cst.Equal):
        return (_is_rank(model, left) and constants.value(model, right) == 0) or (
            _is_rank(model, right) and constants.value(model, left) == 0
        )
    if isinstance(target.operator, cst.In) and isinstance(right, (cst.List, cst.Tuple, cst.Set)):
        allowed = {constants.value(model, element.value) for element in right.elements}
        return _is_rank(model, left) and 0 in allowed and allowed <= {0, -1}
    return False


def _names_a_main_process_test(test: cst.BaseExpression) -> bool:
    func = test.func if isinstance(test, cst.Call) else test
    written = dotted(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    return written is not None and written.rsplit(".", 1)[-1] in _MAIN_PROCESS_TESTS


def reads_a_rank(model: Model, node: cst.CSTNode) -> bool:
    """Whether ``node`` reads a process's rank (`set_device(int(os.environ["LOCAL_RANK"]))`,
    `x.cuda(args.local_rank)`): code written for one of several processes."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, cst.BaseExpression) and _is_rank(model, current):
            return True
        pending.extend(children(current))
    return False


def _is_rank(model: Model, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call):
        if env_variable(model, expr) in _RANK_VARIABLES:
            return True
        if dotted(expr.func) in ("int",) and expr.args:
            return _is_rank(model, expr.args[0].value)
        written = dotted(expr.func) or ""
        return written.rsplit(".", 1)[-1] in _RANK_CALLS
    if isinstance(expr, cst.Subscript):
        return env_variable(model, expr) in _RANK_VARIABLES
    written = dotted(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    return written is not None and written.rsplit(".", 1)[-1] in _RANK_NAMES
