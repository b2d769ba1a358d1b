"""Reading calls: the argument given for a parameter, the callee's name, and calls that only
look at their arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import calls

if TYPE_CHECKING:
    from torchlint.model import Model


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def argument(call: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    """The argument passed for a parameter by keyword or at a position."""
    found = keyword(call, name)
    if found is not None:
        return found
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional[: position + 1]):
        return None
    return positional[position].value if position < len(positional) else None


def parameter_for(fn: cst.FunctionDef, call: cst.Call, arg: cst.Arg | None, offset: int) -> str | None:
    """The parameter of ``fn`` that argument ``arg`` of ``call`` binds."""
    if arg is None or arg.star:
        return None
    if arg.keyword is not None:
        return arg.keyword.value
    positional = [a for a in call.args if a.keyword is None]
    index = next((i for i, a in enumerate(positional) if a is arg), None)
    if index is None or any(a.star for a in positional[:index]):
        return None
    params = [*fn.params.posonly_params, *fn.params.params]
    index += offset
    return params[index].name.value if index < len(params) else None


def builtin_or_qualified(model: Model, call: cst.Call) -> str | None:
    """A builtin's name (`enumerate`, when not rebound) or the qualified name of the callee."""
    func = call.func
    if type(func) is cst.Name and not model.bindings_of(func):
        return model.qualified_name(func) or func.value
    return model.call_name(call)


def is_reporting_call(model: Model, call: cst.Call) -> bool:
    """A call that only prints, logs or writes down its arguments (`print`, `logger.info`,
    `json.dump`, `pbar.set_postfix`...)."""
    func = call.func
    if builtin_or_qualified(model, call) in calls.REPORTING_FUNCTIONS:
        return True
    return isinstance(func, cst.Attribute) and func.attr.value in calls.REPORTING_METHODS


def inspects_only(model: Model, call: cst.Call) -> bool:
    """A call that only looks at its arguments (`len`, `isinstance`, `str`) or reports them."""
    name = builtin_or_qualified(model, call)
    if name in calls.INSPECTING_FUNCTIONS or name in calls.FORMATTING_FUNCTIONS:
        return True
    return is_reporting_call(model, call)
