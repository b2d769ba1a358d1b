"""Tensor conversions used as statements (`x.to(device)` alone on its line): the conversion
returns a new tensor, which is dropped, and `x` stays as it was. TL003 reports them; a rule that
finds `x` unmoved later asks here whether one of them is the reason, so that one mistake is
reported once, where it was made."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import tensors
from torchlint.model.notebook_cells import displayed
from torchlint.model.values import Kind, Place

if TYPE_CHECKING:
    from torchlint.model import Model


def discarded_conversions(model: Model) -> Iterator[cst.Call]:
    """Every conversion of a tensor whose result the code throws away."""
    for call in model.calls_named(methods=tensors.CONVERSIONS):
        func = call.func
        statement = model.parent(call)
        if type(statement) is not cst.Expr or (func.attr.value == "type" and not call.args):
            continue  # a used result, or `x.type()`, which returns the type name
        if displayed(model, statement):
            continue  # a notebook cell's last line: Jupyter shows the converted tensor
        if _dtype_already(model, call):
            continue  # `.float()` of a float32 tensor returns the tensor itself: nothing is dropped
        if model.values.all_of(func.value, Kind.TENSOR) is not None or _computed_with(model, func.value, call):
            yield call


_ARITHMETIC = (cst.BinaryOperation, cst.UnaryOperation)
# Operators that also apply to flags, sets and format strings (`not x`, `a | b`, `"%s" % x`).
_NOT_ARITHMETIC = (cst.Not, cst.BitInvert, cst.BitOr, cst.BitAnd, cst.BitXor, cst.Modulo)


def _computed_with(model: Model, receiver: cst.BaseExpression, call: cst.Call) -> bool:
    """Whether a receiver of unknown kind is a tensor by what the code does with it after the
    call: it is an operand of arithmetic (`x * scale`, `x @ w`, `-x`), which modules, pipelines
    and tokenizer outputs (whose `.to()` works in place) never are."""
    if not model.imports_torch or not isinstance(receiver, cst.Name):
        return False
    if any(v.kind is not Kind.UNKNOWN for v in model.values.of(receiver)):
        return False
    after = model.order(call)
    for binding in model.bindings_of(receiver):
        for read in model.reads_of(binding):
            parent = model.parent(read)
            if model.order(read) > after and isinstance(parent, _ARITHMETIC):
                if not isinstance(parent.operator, _NOT_ARITHMETIC):
                    return True
    return False


def _dtype_already(model: Model, call: cst.Call) -> bool:
    """Whether a dtype conversion method (`.float()`) is called on a tensor that has that dtype:
    one made with it (`torch.FloatTensor(n, k)`, `torch.zeros(n, dtype=torch.float32)`) and
    passed on only by in-place methods (`scatter_`), which return the tensor itself."""
    wanted = tensors.CONVERSION_DTYPES.get(cst.ensure_type(call.func, cst.Attribute).attr.value)
    node = call.func.value
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _in_place(node.func.attr.value):
        node = node.func.value
    if wanted is None or not isinstance(node, cst.Name):
        return False
    sources = [binding.value for binding in model.reaching(node)]
    return bool(sources) and all(_made_with_dtype(model, source) == wanted for source in sources)


def _in_place(method: str) -> bool:
    return method.endswith("_") and not method.startswith("_")


def _made_with_dtype(model: Model, node: cst.BaseExpression | None) -> str | None:
    """The dtype a tensor factory call gives what it makes, where the call says it."""
    name = model.call_name(node) if isinstance(node, cst.Call) else None
    if name is None:
        return None
    if name in tensors.TYPED_CONSTRUCTOR_DTYPES:
        return tensors.TYPED_CONSTRUCTOR_DTYPES[name]
    dtype = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "dtype"), None)
    if name not in tensors.FACTORIES or dtype is None:
        return None
    return tensors.DTYPE_NAMES.get(model.qualified_name(dtype) or "")


def dropped_move_of(model: Model, expr: cst.BaseExpression, at: cst.CSTNode) -> cst.Call | None:
    """A discarded move to the device of the very value ``expr`` reads at ``at``, made before it
    in the same function: the reason that value is still on the host there."""
    function = model.function_of(at)
    for call in discarded_conversions(model):
        func = cst.ensure_type(call.func, cst.Attribute)
        if (
            model.order(call) < model.order(at)
            and model.function_of(call) is function
            and model.values.placement.move_target(call) is Place.DEVICE
            and _same_value(model, func.value, expr)
        ):
            return call
    return None


def _same_value(model: Model, first: cst.BaseExpression, second: cst.BaseExpression) -> bool:
    """Whether two reads are the same expression of the same binding (`x`, `batch["x"]`)."""
    if model.module.code_for_node(first) != model.module.code_for_node(second):
        return False
    first_head, second_head = _head(first), _head(second)
    if first_head is None or second_head is None:
        return False
    seen = model.reaching(second_head)
    return any(binding is other for binding in model.reaching(first_head) for other in seen)


def _head(expr: cst.BaseExpression) -> cst.Name | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None
