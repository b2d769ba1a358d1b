"""What the code says about a batch size on its way to a loader: whether it is declared global
(its name, its argparse help or a comment says total, global or across all GPUs), per process
(per GPU, local, micro), for the devices of one machine, or divided on the way. The model reads
the words the code uses and follows the value back through assignments, pass-through calls and
the call sites of the function whose parameter it is."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data
from torchlint.model import constants, distributed
from torchlint.model.constants import per_model
from torchlint.model.names import dotted
from torchlint.project.summary import LoaderBatchFact

if TYPE_CHECKING:
    from torchlint.model import Binding, Model

# Name words: a global batch needs a "global" word and a "batch" word; any per-process word wins.
_GLOBAL_WORDS = frozenset({"global", "total", "effective", "overall", "aggregate"})
_BATCH_WORDS = frozenset({"batch", "bs", "batchsize"})
_PER_PROCESS_WORDS = frozenset(
    {"per", "local", "micro", "gpu", "gpus", "device", "devices", "rank", "proc", "process", "replica", "worker"}
)
# Text (argparse help, comments) that documents a batch size.
_GLOBAL_TEXT = re.compile(
    r"\b(total|global|effective|overall|aggregated?)\b"
    r"|\b(across|over|of|for|on|summed over)\s+(all\s+)?(the\s+)?(\w+\s+)?(gpus|devices|processes|ranks|replicas|workers|nodes)\b"
    r"|\ball\s+(gpus|devices|processes|ranks|replicas)\b",
    re.IGNORECASE,
)
_PER_PROCESS_TEXT = re.compile(
    r"\bper[\s_-]*(gpu|device|process|rank|replica|worker|core|card|accelerator|tpu|xpu)s?\b"
    r"|\b(each|every|one|single|a)\s+(gpu|device|process|rank|replica|worker)\b"
    r"|\blocal\s+batch|\bmicro[\s_-]?batch|/\s*gpu\b|\bngpus?\s*x\b|\$ngpu",
    re.IGNORECASE,
)
# "total batch size of all GPUs on the current node": divided by the node's GPU count on purpose.
_PER_NODE_TEXT = re.compile(r"\b(per|each|every|this|current|one|single)\s+(\w+\s+)?(node|machine|host)\b", re.IGNORECASE)
# "the total batch is $NGPU x this", "effective batch = batch_size * accum": how a total derives
# from this value, so this value is not the total.
_DERIVATION_TEXT = re.compile(r"\*|×|\bx\b|\btimes\b|multipl", re.IGNORECASE)
_ACCUMULATION = re.compile(r"accum|update_freq|grad_steps", re.IGNORECASE)
_BATCHED = data.LOADERS | data.BATCH_SAMPLERS  # the constructions that take a batch_size
_PASS_THROUGH = frozenset({"int", "round", "max", "min", "math.ceil", "math.floor"})


@dataclass
class BatchSize:
    """What the code says about a batch-size value on its way to the loader."""

    declared: list[str] = field(default_factory=list)  # why it is global, in words
    divided: bool = False
    per_process: bool = False
    per_node: bool = False  # documented for the devices of one machine
    seen: set[str] = field(default_factory=set)

    @property
    def undivided_global(self) -> bool:
        """Declared global, and neither divided on the way nor said to be one process's."""
        return bool(self.declared) and not self.divided and not self.per_process


def loader_batch_sizes(model: Model) -> Iterator[tuple[cst.Call, cst.Arg]]:
    """The `batch_size` argument of every torch DataLoader and BatchSampler construction."""
    for call in model.calls_named(_BATCHED):
        name = model.call_name(call)
        # a loader, or a batch sampler (batch_size its second argument)
        position = data.LOADER_POSITIONAL.index("batch_size") if name in data.LOADERS else 1
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "batch_size":
                yield call, arg
                break
        else:
            if len(positional) > position and not any(arg.star for arg in call.args):
                yield call, positional[position]


def batch_size(model: Model, expr: cst.BaseExpression) -> BatchSize:
    """What the code says about the batch size ``expr``, followed back to where it is declared."""
    size = BatchSize()
    _follow(model, expr, size)
    return size


@dataclass(frozen=True)
class HandedBatchSize:
    """A batch size this file hands to a function of another module of the project that builds a
    per-process loader with it (the summary's LoaderBatchFact)."""

    call: cst.Call
    argument: cst.BaseExpression  # what the call passes: the size, or the namespace that holds it
    text: str  # the size as this file would write it: `args.train_batch_size`
    size: BatchSize
    builder: str  # the function's name
    fact: LoaderBatchFact


def handed_to_project_loaders(model: Model) -> Iterator[HandedBatchSize]:
    """`train_loader, val_loader = get_loader(args)` where get_loader, in another module, builds a
    DataLoader over a DistributedSampler with `batch_size=args.train_batch_size`: what this file
    says about `args.train_batch_size`, read where it hands `args` over."""
    summaries = model.summaries
    code = model.module.code_for_node
    for call in model.calls:
        for project_call in summaries.imported(call):
            for fact in project_call.summary.loader_batch_sizes:
                argument = project_call.argument(fact.parameter)
                if argument is None:
                    continue
                if fact.attribute is None:
                    text, size = code(argument), batch_size(model, argument)
                elif isinstance(argument, (cst.Name, cst.Attribute)) and dotted(argument) is not None:
                    text, size = f"{dotted(argument)}.{fact.attribute}", BatchSize()
                    _follow_attribute(model, argument, fact.attribute, size)
                else:
                    continue
                yield HandedBatchSize(call, argument, " ".join(text.split()), size, project_call.summary.name, fact)


def given_batch_sizes(model: Model, function: cst.FunctionDef) -> Iterator[tuple[cst.Call, str, str | None]]:
    """The loaders ``function`` builds with a batch size its caller passes in, which nothing in
    this module divides, calls one process's or calls global: each (loader, parameter, attribute of the
    parameter read, or None for the parameter itself)."""
    for loader, argument in _loader_batch_sizes_by_function(model).get(function, ()):
        given = _given(model, argument.value, function)
        if given is None:
            continue
        size = batch_size(model, argument.value)
        # declared global here, it is reported here (the loader's own batch_size)
        if not (size.divided or size.per_process or size.declared):
            yield loader, *given


@per_model
def _loader_batch_sizes_by_function(model: Model) -> dict[cst.CSTNode, list[tuple[cst.Call, cst.Arg]]]:
    found: dict[cst.CSTNode, list[tuple[cst.Call, cst.Arg]]] = {}
    for loader, argument in loader_batch_sizes(model):
        found.setdefault(model.function_of(loader), []).append((loader, argument))
    return found


def _given(model: Model, expr: cst.BaseExpression, function: cst.FunctionDef) -> tuple[str, str | None] | None:
    """`batch_size` or `args.batch_size` where `batch_size` or `args` is a parameter of ``function``."""
    head, attribute = (expr.value, expr.attr.value) if isinstance(expr, cst.Attribute) else (expr, None)
    if not isinstance(head, cst.Name):
        return None
    bindings = model.bindings_of(head)
    if bindings and all(binding.how == "param" and binding.scope is function for binding in bindings):
        return head.value, attribute
    return None


def is_global_count(model: Model, dividend: cst.BaseExpression) -> bool:
    """A batch size or an accumulation count that nothing documents per process or per node
    (split further first: `batch_size // accumulation // gpus`)."""
    while isinstance(dividend, cst.BinaryOperation) and isinstance(dividend.operator, (cst.Divide, cst.FloorDivide)):
        dividend = dividend.left
    written = dotted(dividend) if isinstance(dividend, (cst.Name, cst.Attribute)) else None
    if written is None:
        return False
    words = _words(written.rsplit(".", 1)[-1])
    if words & _PER_PROCESS_WORDS or not (words & _BATCH_WORDS or _ACCUMULATION.search(written)):
        return False
    size = BatchSize()
    for binding in model.bindings_of(dividend):
        _judge_comments(model, binding.statement, size)
    argument = constants.evaluator(model).argparse.argument(dividend)
    if argument is not None:
        _judge_argument(model, argument, size)
    return not size.per_process and not size.per_node


def steps_counted_per_process(model: Model, key: str | None) -> bool:
    """`steps = len(examples) / args.batch_size * epochs`, then `steps // world_size`: the code
    counts the optimizer steps of one process with the batch size ``key`` (as written), which
    makes it the batch of one process (the run's batch is world_size times it)."""
    if key is None:
        return False
    for node in model.nodes:
        if type(node) is cst.BinaryOperation and isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
            count, divisor = node.left, node.right
        elif type(node) is cst.AugAssign and isinstance(node.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
            count, divisor = node.target, node.value
        else:
            continue
        if distributed.mentions_world_size(model, divisor, processes_only=True) and _divided_by(model, count, key):
            return True
    return False


def _divided_by(model: Model, expr: cst.BaseExpression, key: str, depth: int = 3) -> bool:
    """Whether ``expr``, or what the names in it are bound to, divides something by ``key``."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.BinaryOperation and isinstance(node.operator, (cst.Divide, cst.FloorDivide)):
            if dotted(node.right) == key:
                return True
        if isinstance(node, cst.Name) and depth:
            if any(b.value is not None and _divided_by(model, b.value, key, depth - 1) for b in model.bindings_of(node)):
                return True
        elif not isinstance(node, cst.Attribute):
            stack.extend(node.children)
    return False


# -- following the value back to where it is declared -----------------------------------------
def _follow(model: Model, expr: cst.BaseExpression, size: BatchSize) -> None:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.FloorDivide)):
        if _is_accumulation(model, expr.right):
            _follow(model, expr.left, size)  # split into micro-steps, still not per process
        else:
            size.divided = True
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        if not distributed.mentions_world_size(model, expr, processes_only=True):
            # scaled by local counts (`per_device * jax.local_device_count()`, `* n_gpu` for
            # DataParallel, `* accumulation`): what one process feeds its own devices
            size.per_process = True
    elif isinstance(expr, cst.Call):
        name = model.call_name(expr) or dotted(expr.func)
        if name in _PASS_THROUGH:
            for arg in expr.args:
                _follow(model, arg.value, size)
    elif isinstance(expr, cst.IfExp):
        _follow(model, expr.body, size)
        _follow(model, expr.orelse, size)
    elif isinstance(expr, cst.Subscript):
        _follow_key(model, expr, size)
    elif isinstance(expr, (cst.Name, cst.Attribute)):
        _follow_name(model, expr, size)


def _follow_name(model: Model, expr: cst.Name | cst.Attribute, size: BatchSize) -> None:
    written = dotted(expr)
    if written is None or written in size.seen:
        return
    size.seen.add(written)
    _judge_name(written.rsplit(".", 1)[-1], size)
    _follow_bindings(model, model.bindings_of(expr), size)
    argument = constants.evaluator(model).argparse.argument(expr)
    if argument is not None:
        _judge_argument(model, argument, size)


def _follow_attribute(model: Model, namespace: cst.Name | cst.Attribute, attribute: str, size: BatchSize) -> None:
    """`<namespace>.<attribute>` as this file sees it where ``namespace`` is read: the attribute a
    function of another module reads of the namespace handed to it."""
    written = f"{dotted(namespace)}.{attribute}"
    size.seen.add(written)
    _judge_name(attribute, size)
    _follow_bindings(model, model.bindings(model.binding_scope(written, namespace), written), size)
    argparse = constants.evaluator(model).argparse
    argument = argparse.declaration(attribute) if argparse.is_namespace(namespace) else None
    if argument is not None:
        _judge_argument(model, argument, size)


def _follow_bindings(model: Model, bindings: list[Binding], size: BatchSize) -> None:
    for binding in bindings:
        _judge_comments(model, binding.statement, size)
        if binding.how == "augassign":
            if isinstance(binding.statement.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
                size.divided = True
        elif binding.how == "param":
            _follow_parameter(model, binding, size)
        elif binding.value is not None:
            _follow(model, binding.value, size)


def _follow_key(model: Model, expr: cst.Subscript, size: BatchSize) -> None:
    """`config["global_batch_size"]`: the key is the name."""
    if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        key = constants.value(model, expr.slice[0].slice.value)
        if isinstance(key, str):
            _judge_name(key, size)


def _follow_parameter(model: Model, binding: Binding, size: BatchSize) -> None:
    function = binding.scope
    if not isinstance(function, cst.FunctionDef):
        return
    summaries = model.summaries
    for call, offset in summaries.call_sites(function) or ():
        passed = summaries.argument(function, call, offset, binding.name)
        if passed is not None:
            _follow(model, passed, size)


def _is_accumulation(model: Model, divisor: cst.BaseExpression) -> bool:
    """A divisor made only of gradient-accumulation counts (`args.gradient_accumulation_steps`)."""
    if isinstance(divisor, (cst.Name, cst.Attribute)):
        return bool(_ACCUMULATION.search(dotted(divisor) or ""))
    if isinstance(divisor, cst.BinaryOperation) and isinstance(divisor.operator, cst.Multiply):
        return _is_accumulation(model, divisor.left) and _is_accumulation(model, divisor.right)
    return False


# -- what the code says ----------------------------------------------------------------------
def _words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {word for word in re.split(r"[_\W]+", spaced.lower()) if word}


def _judge_name(name: str, size: BatchSize) -> None:
    words = _words(name)
    if words & _PER_PROCESS_WORDS:
        size.per_process = True
    elif words & _GLOBAL_WORDS and (words & _BATCH_WORDS or any(w.endswith("batch") for w in words)):
        size.declared.append(f"its name '{name}' says so")


def _judge_text(text: str, where: str, size: BatchSize) -> None:
    if _PER_NODE_TEXT.search(text):
        size.per_node = True
    if _PER_PROCESS_TEXT.search(text):
        size.per_process = True
    elif _GLOBAL_TEXT.search(text) and not _DERIVATION_TEXT.search(text):
        snippet = " ".join(text.split())
        snippet = snippet if len(snippet) <= 60 else snippet[:57] + "..."
        size.declared.append(f"{where} says '{snippet}'")


def _judge_argument(model: Model, call: cst.Call, size: BatchSize) -> None:
    for arg in call.args:
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            option = arg.value.evaluated_value
            if isinstance(option, str):
                _judge_name(option.lstrip("-"), size)
        elif arg.keyword is not None and arg.keyword.value == "help":
            text = constants.value(model, arg.value)
            if isinstance(text, str):
                _judge_text(text, "its --help", size)
    _judge_comments(model, model.statement(call), size)


def _judge_comments(model: Model, statement: cst.CSTNode, size: BatchSize) -> None:
    """The comment at the end of the statement's line, and the comment lines just above it that
    talk about a batch (others there are section headings)."""
    line = model.parent(statement)
    if not isinstance(line, cst.SimpleStatementLine):
        return
    comments = []
    if line.trailing_whitespace.comment is not None:
        comments.append(line.trailing_whitespace.comment.value)
    for empty in reversed(line.leading_lines):
        if empty.comment is None:
            break
        if "batch" in empty.comment.value.lower():
            comments.append(empty.comment.value)
    for comment in comments:
        _judge_text(comment.lstrip("#").strip(), "a comment", size)
