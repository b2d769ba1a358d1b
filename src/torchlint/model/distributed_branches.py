"""Which branches of a distributed script run in the distributed run. Code under a test about
distribution runs there only when the test is plainly the distributed case (`if
args.distributed:`, `if dist.is_initialized():`, `if world_size > 1:`); the `else:` of such a
test, `if world_size == 1:` or `if rank == 0:` run in a single process or on one rank."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model import constants, distributed
from torchlint.model.names import dotted

if TYPE_CHECKING:
    from torchlint.model import Model

# Tests of a branch that runs when training is distributed (`if args.distributed:`).
_DISTRIBUTED_FLAGS = frozenset({"distributed", "is_distributed", "ddp", "use_ddp", "multiprocessing_distributed"})
_DISTRIBUTION_WORDS = re.compile(r"distributed|ddp|world_size|rank|ngpus|num_gpus|n_gpu|is_initialized", re.IGNORECASE)


def runs_distributed(model: Model, node: cst.CSTNode) -> bool:
    """False when ``node`` sits in a branch about distribution that is not plainly the
    distributed one (`else:` of `if args.distributed:`, `if world_size == 1:`, `if rank == 0:`)."""
    child: cst.CSTNode = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
            test = ancestor.test
            if _DISTRIBUTION_WORDS.search(model.module.code_for_node(test)):
                if not (child is ancestor.body and _plainly_distributed(model, test)):
                    return False
        child = ancestor
    return True


def _plainly_distributed(model: Model, test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _plainly_distributed(model, test.left) or _plainly_distributed(model, test.right)
    written = dotted(test.func if isinstance(test, cst.Call) else test) or ""
    last = written.rsplit(".", 1)[-1]
    if isinstance(test, cst.Call):
        return last in ("is_initialized", "is_distributed")
    if last in _DISTRIBUTED_FLAGS:
        return True
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        bound = constants.value(model, comparison.comparator)
        if isinstance(comparison.operator, cst.GreaterThan) and bound == 1:
            return distributed.mentions_world_size(model, test.left)
    return False
