"""Parameters a function uses only to index other tensors.

A tensor that only selects elements (`embeddings[~mask]`, `targets[keep] = 0`) may stay in host
memory while the tensor it indexes is on a GPU: torch accepts index tensors, boolean masks
included, on the CPU for a CUDA tensor. Such a parameter read nowhere else (compared with None at
most: `if mask is not None:`) is no device mismatch when a caller leaves it on the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from torchlint.model import Model


def indexes_only(model: Model, fn: cst.FunctionDef, parameter: str) -> bool:
    """Whether every read of ``parameter`` in ``fn`` indexes a tensor (also negated, `~mask`) or
    tests it against None, and at least one indexes."""
    bindings = [b for b in model.bindings(fn, parameter) if b.how == "param"]
    if len(bindings) != 1 or len(model.bindings(fn, parameter)) != 1:
        return False  # rebound in the function: its reads may see another value
    reads = model.reads_of(bindings[0])
    indexed = False
    for read in reads:
        if _is_index(model, read):
            indexed = True
        elif not _tested_for_none(model, read):
            return False
    return indexed


def _is_index(model: Model, read: cst.CSTNode) -> bool:
    node = read
    parent = model.parent(node)
    while isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.BitInvert):
        node, parent = parent, model.parent(parent)
    if not isinstance(parent, cst.Index) or parent.value is not node:
        return False
    element = model.parent(parent)
    subscript = model.parent(element)
    return isinstance(element, cst.SubscriptElement) and isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1


def _tested_for_none(model: Model, read: cst.CSTNode) -> bool:
    parent = model.parent(read)
    if not isinstance(parent, cst.Comparison) or parent.left is not read or len(parent.comparisons) != 1:
        return False
    target = parent.comparisons[0]
    return (
        isinstance(target.operator, (cst.Is, cst.IsNot))
        and isinstance(target.comparator, cst.Name)
        and target.comparator.value == "None"
    )
