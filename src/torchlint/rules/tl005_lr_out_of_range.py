"""TL005 lr-out-of-range: a torch.optim optimizer is given a learning rate (literal, module
constant, config dict entry, argparse default...) outside the range its family trains with."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.knowledge.optimizers import (
    DEFAULT_LR_RANGES,
    SOFT_PROMPT_CONFIGS,
    SOFT_PROMPT_HIGHEST_LR,
    LINEAR_MODEL_HIGHEST_LR,
    LR_MULTIPLYING_SCHEDULERS,
    LR_REPLACING_SCHEDULERS,
    LR_SCHEDULER_MODULE,
    MULTIPLIER_CONVENTION,
    Optimizer,
    optimizer_for,
)
from torchlint.model import Binding, Model, constants
from torchlint.model.linear_models import fits_one_linear_map
from torchlint.model.names import dotted
from torchlint.model.objectives import fits_nothing
from torchlint.model.testing import is_test_code
from torchlint.model.tree import children
from torchlint.registry import Finding, Rule

_RESTORING = re.compile(r"checkpoint|resume|restore|load", re.IGNORECASE)


class LrOutOfRange(Rule, code="TL005"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return  # unit tests take a step with any lr that makes a change visible
        if fits_nothing(model):
            return  # every backward pass is on `model(noise).sum()`: a mechanics demo learns nothing
        suspects: list[tuple[Finding, float, float]] = []
        soft_prompts = bool(model.calls_named(SOFT_PROMPT_CONFIGS))
        for call in model.calls:
            optimizer = optimizer_for(_constructed_class(model, call))
            if optimizer is None or _state_restored(model, call):
                continue
            if not _trains_weights(model, _params(call)):
                continue  # optimising an input, latent or image tensor directly: other scales apply
            low, high = sorted(options[optimizer.family])
            if soft_prompts:
                high = max(high, SOFT_PROMPT_HIGHEST_LR)
            range_of = ""
            configured = tuple(sorted(options[optimizer.family])) != tuple(sorted(DEFAULT_LR_RANGES[optimizer.family]))
            if not configured and high < LINEAR_MODEL_HIGHEST_LR and fits_one_linear_map(model, _params(call)):
                high, range_of = LINEAR_MODEL_HIGHEST_LR, " for a model of one linear map"
            for node, expr in _learning_rates(call):
                lr, origin = constants.value(model, expr), _origin(model, expr)
                if lr is constants.UNKNOWN:
                    lr, origin = _parameter_default(model, expr), f" (the default of parameter '{_text(model, expr)}')"
                if not constants.is_number(lr) or lr == 0 or lr == optimizer.default_lr or low <= lr <= high:
                    continue  # unknown, a placeholder set later, the optimizer's default, or fine
                if _documented(model, call, expr):
                    continue  # the code says the rate is meant to be what it is
                finding = Finding(node, _message(optimizer, lr, origin + _branch(model, call), low, high, range_of))
                suspects.append((finding, lr, high))
        if not suspects or _lr_replaced(model):
            return
        multiplied = bool(model.calls_named(LR_MULTIPLYING_SCHEDULERS))
        for finding, lr, high in suspects:
            # under a LambdaLR the lambda may scale any lr up, and an lr up to 1 is a multiplier
            if not multiplied or lr > max(high, MULTIPLIER_CONVENTION):
                yield finding


def _constructed_class(model: Model, call: cst.Call) -> str | None:
    """The qualified class a call constructs, also through a local alias
    (`optimizer_class = torch.optim.AdamW; optimizer_class(params, lr=...)`)."""
    name = model.call_name(call)
    if name is not None or type(call.func) is not cst.Name:
        return name
    targets = {model.qualified_name(b.value) if b.value is not None else None for b in model.bindings_of(call.func)}
    return targets.pop() if len(targets) == 1 else None


def _params(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value == "params":
            return arg.value
    return None


def _trains_weights(model: Model, params: cst.BaseExpression | None, depth: int = 3) -> bool:
    """Whether the optimizer is given a network's weights: the expression (or what the names in
    it are bound to) calls `.parameters()`/`.named_parameters()` or a helper named after
    parameters (`param_groups_weight_decay(model, wd)`). A list of tensors (`[latents]`) is
    test-time optimisation of data, where step sizes follow the data's scale."""
    if params is None or depth == 0:
        return False
    for node in _expressions(params):
        if isinstance(node, cst.Call):
            last = (dotted(node.func) or "").rsplit(".", 1)[-1]
            if last in ("parameters", "named_parameters") or ("param" in last.lower() and last != "Parameter"):
                return True
        elif isinstance(node, (cst.Name, cst.Attribute)):
            if any(
                binding.value is not None and binding.how != "param" and _trains_weights(model, binding.value, depth - 1)
                for binding in model.bindings_of(node)
            ):
                return True
    return False


def _expressions(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (cst.Name, cst.Attribute)):
            stack.extend(children(node))


def _state_restored(model: Model, call: cst.Call) -> bool:
    """Whether the optimizer's state, lr included, is loaded from a checkpoint whenever the
    script runs with its defaults: `opt.load_state_dict(...)`, or the optimizer handed to a
    checkpoint/resume helper (`Checkpointer(model, opt=opt).resume_or_load(...)`)."""
    for binding in _bound_to(model, call):
        for read in model.reads_of(binding):
            parent = model.parent(read)
            if isinstance(parent, cst.Attribute) and parent.attr.value == "load_state_dict":
                user = model.parent(parent)
            elif isinstance(parent, cst.Arg):
                user = model.parent(parent)
                if not isinstance(user, cst.Call) or not _RESTORING.search(dotted(user.func) or ""):
                    continue
            else:
                continue
            if constants.runs_with_defaults(model, user):
                return True
    return False


def _bound_to(model: Model, call: cst.Call) -> list[Binding]:
    """The bindings `optimizer = torch.optim.X(...)` (or `self.optimizer = ...`) makes."""
    statement = model.parent(call)
    if not isinstance(statement, (cst.Assign, cst.AnnAssign)) or statement.value is not call:
        return []
    targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
    return [
        binding
        for target in targets
        if isinstance(target, (cst.Name, cst.Attribute))
        for binding in model.bindings_of(target)
        if binding.statement is statement
    ]


def _learning_rates(call: cst.Call) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression]]:
    """(node to point at, expression) for the optimizer-wide lr (keyword or second positional)
    and each literal parameter group's `"lr"` entry."""
    positional = []
    params = None
    for arg in call.args:
        if arg.star:
            return
        if arg.keyword is None:
            positional.append(arg)
        elif arg.keyword.value == "lr":
            yield arg, arg.value
        elif arg.keyword.value == "params":
            params = arg.value
    if len(positional) >= 2:
        yield positional[1], positional[1].value
    if positional:
        params = positional[0].value
    if isinstance(params, (cst.List, cst.Tuple)):
        for element in params.elements:
            if isinstance(element.value, cst.Dict):
                for entry in element.value.elements:
                    if isinstance(entry, cst.DictElement) and isinstance(entry.key, cst.SimpleString):
                        if entry.key.evaluated_value == "lr":
                            yield entry, entry.value


# A comment that says a rate is chosen on purpose (or says why it is large or small).
_DELIBERATE = re.compile(
    r"\b(intentional|deliberate|on purpose|purposely|by design|not a typo|large|high|big|aggressive|small|tiny|low)\w*",
    re.IGNORECASE,
)


def _documented(model: Model, call: cst.Call, expr: cst.BaseExpression) -> bool:
    """Whether a comment on the optimizer's statement, or on the statement that binds the rate's
    name, says the rate is deliberate (`lr=1.0,  # large on purpose: only the head trains`)."""
    statements = [model.statement(call)]
    if isinstance(expr, (cst.Name, cst.Attribute)):
        statements.extend(binding.statement for binding in model.bindings_of(expr))
    for statement in statements:
        line = model.parent(statement) if not isinstance(statement, cst.BaseCompoundStatement) else None
        text = model.module.code_for_node(line if isinstance(line, cst.SimpleStatementLine) else statement)
        if any(_DELIBERATE.search(comment) for comment in _comments(text)):
            return True
    return False


def _comments(text: str) -> list[str]:
    if "#" not in text:
        return []  # every comment starts with one: tokenizing would find none
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    return [token.string for token in tokens if token.type == tokenize.COMMENT]


def _lr_replaced(model: Model) -> bool:
    """Whether the constructor's lr is replaced before it trains: by OneCycleLR or CyclicLR, by a
    scheduler class of the file's own (its `get_lr` computes the rates: an lr range test starts
    far below any training rate), or by the script writing `param_group["lr"]` itself."""
    own_schedulers = _own_scheduler_classes(model)
    if model.calls_named(LR_REPLACING_SCHEDULERS) or any(
        type(call.func) is cst.Name and call.func.value in own_schedulers for call in model.calls
    ):
        return True
    return any(
        type(node) is cst.Subscript and _is_lr_item(node) and constants.is_store_target(model, node)
        for node in model.nodes
    )


def _own_scheduler_classes(model: Model) -> set[str]:
    return {
        node.name.value
        for node in model.nodes
        if type(node) is cst.ClassDef
        and any((model.qualified_name(base.value) or "").startswith(LR_SCHEDULER_MODULE) for base in node.bases)
    }


def _is_lr_item(target: cst.BaseExpression) -> bool:
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.SimpleString)
        and index.value.evaluated_value in ("lr", "learning_rate")
    )


def _origin(model: Model, expr: cst.BaseExpression) -> str:
    """` (from args.lr)` when the value is not written at the call, so the reader knows where
    to look."""
    if isinstance(expr, (cst.Integer, cst.Float)) or (
        isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float))
    ):
        return ""
    text = _text(model, expr)
    return f" (from {text})" if len(text) <= 40 else ""


def _text(model: Model, expr: cst.CSTNode) -> str:
    return " ".join(model.module.code_for_node(expr).split())


def _parameter_default(model: Model, expr: cst.BaseExpression) -> Any:
    """`def build_optimizer(model, lr=25.0)` called only from other files (or handed on): the
    default is the lr of every caller that leaves it out."""
    if not isinstance(expr, cst.Name):
        return constants.UNKNOWN
    bindings = model.bindings_of(expr)
    if len(bindings) != 1 or bindings[0].how != "param" or bindings[0].value is None:
        return constants.UNKNOWN
    function = bindings[0].scope
    if not isinstance(function, cst.FunctionDef) or model.summaries.call_sites(function):
        return constants.UNKNOWN
    return constants.value(model, bindings[0].value)


def _branch(model: Model, call: cst.Call) -> str:
    """`, when 'args.use_optimizer' is true`: the optimizer is built only on a path the defaults
    skip, and the lr it gets there is still the default, so the user reaches it with one flag."""
    test = constants.skipped_by_defaults(model, call)
    if test is None:
        return ""
    text = _text(model, test)
    branch = model.parent(test)
    reached_when = "true" if branch is not None and branch.body in (call, *model.ancestors(call)) else "false"
    return f" on the path where '{text}' is {reached_when}" if len(text) <= 40 else " on a path the defaults skip"


def _message(optimizer: Optimizer, lr: float, origin: str, low: float, high: float, range_of: str = "") -> str:
    family = optimizer.family
    side = "above" if lr > high else "below"
    where = f"{optimizer.name} learning rate {lr:g}{origin} is {side} the {family} range{range_of} {low:g} to {high:g}"
    if lr > high:
        why = "steps this large make the loss diverge or turn NaN"
    else:
        why = "updates this small leave the weights practically unchanged, so the model does not learn"
    fix = f"use a value in range ({optimizer.name}'s default is {optimizer.default_lr:g}), or widen [tool.torchlint.lr] {family} if intended"
    return f"{where}: {why}; {fix}"


RULE = LrOutOfRange
