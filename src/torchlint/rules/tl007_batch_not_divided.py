"""TL007 batch-not-divided: in a multi-process script, a loader's per-process `batch_size` is a
value the code itself declares global (its name, its argparse help or a comment says total,
global or across all GPUs), and nothing divides it by the world size on the way; or a global
batch size or gradient-accumulation count is divided by the accelerators of this machine
(`torch.cuda.device_count()`, or the `devices` of a Lightning Trainer or Fabric that also runs
on `num_nodes` machines) in a run whose world size may span several machines."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from torchlint.knowledge import data, devices, frameworks
from torchlint.model import Model, constants, distributed
from torchlint.model.names import dotted
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind
from torchlint.registry import Finding, Rule

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
_PASS_THROUGH = frozenset({"int", "round", "max", "min", "math.ceil", "math.floor"})
# Tests of a branch that runs when training is distributed (`if args.distributed:`).
_DISTRIBUTED_FLAGS = frozenset({"distributed", "is_distributed", "ddp", "use_ddp", "multiprocessing_distributed"})
_DISTRIBUTION_WORDS = re.compile(r"distributed|ddp|world_size|rank|ngpus|num_gpus|n_gpu|is_initialized", re.IGNORECASE)


@dataclass
class _Path:
    """What the code says about a batch-size value on its way to the loader."""

    declared: list[str] = field(default_factory=list)  # why it is global, in words
    divided: bool = False
    per_process: bool = False
    per_node: bool = False  # documented for the devices of one machine
    seen: set[str] = field(default_factory=set)


class BatchNotDivided(Rule, code="TL007"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return
        yield from _divided_by_devices_per_node(model)
        if not distributed.is_distributed(model):
            return
        for call, argument in _batch_size_arguments(model):
            path = _Path()
            _follow(model, argument.value, path)
            if not path.declared or path.divided or path.per_process:
                continue
            if _steps_counted_per_process(model, argument.value):
                continue  # the code's own step count takes it as one process's batch, whatever its help says
            if not _runs_distributed(model, call) or _framework_owned(model, call):
                continue
            trains = _trains(model, call)
            if trains is False:
                continue  # an evaluation loader: a bigger step changes memory use, not what is learnt
            message, suggestions = _message(model, argument.value, path.declared[0], call, trains)
            yield Finding(argument, message, suggestions=suggestions)
        if _reads_world_size(model):
            yield from _divided_by_local_devices(model)


def _divided_by_local_devices(model: Model) -> Iterator[Finding]:
    """`gradient_accumulation_steps //= torch.cuda.device_count()`, `batch_size / ngpus` with
    `ngpus = torch.cuda.device_count()`: a node's count where the run's process count belongs."""
    for count in _local_device_counts(model):
        parent = model.parent(count)
        if isinstance(parent, cst.BinaryOperation) and parent.right is count:
            if not isinstance(parent.operator, (cst.Divide, cst.FloorDivide)):
                continue
            division, dividend = parent, parent.left
        elif isinstance(parent, cst.AugAssign) and parent.value is count:
            if not isinstance(parent.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
                continue
            division, dividend = parent, parent.target
        else:
            continue
        if _is_global_count(model, dividend) and _runs_distributed(model, division):
            yield Finding(division, _local_division_message(model, division, dividend, count))


def _divided_by_devices_per_node(model: Model) -> Iterator[Finding]:
    """`batch_size // args.devices` with `Trainer(devices=args.devices, num_nodes=args.num_nodes)`:
    Lightning and Fabric run devices x num_nodes processes, so the per-process share of a
    global count is divided by both."""
    for call in model.calls:
        layout = frameworks.PROCESS_LAYOUTS.get(model.call_name(call) or "")
        if layout is None:
            continue
        nodes = _keyword(call, (layout.nodes,))
        per_node = _keyword(call, layout.devices)
        if nodes is None or per_node is None or _is_one(nodes):
            continue
        written = dotted(per_node) if isinstance(per_node, (cst.Name, cst.Attribute)) else None
        for read in model.reads_table.get(written or "", ()):
            division = model.parent(read)
            if not (isinstance(division, cst.BinaryOperation) and division.right is read):
                continue
            if isinstance(division.operator, (cst.Divide, cst.FloorDivide)) and _is_global_count(model, division.left):
                message, suggestions = _per_node_division_message(model, division, per_node, nodes)
                yield Finding(division, message, suggestions=suggestions)


def _keyword(call: cst.Call, names: tuple[str, ...]) -> cst.BaseExpression | None:
    return next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value in names), None)


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == 1


def _local_device_counts(model: Model) -> Iterator[cst.BaseExpression]:
    """Each `torch.cuda.device_count()` call and each read of a name bound only to one."""
    for call in model.calls:
        if model.call_name(call) not in devices.LOCAL_DEVICE_COUNTS:
            continue
        yield call
        statement = model.parent(call)
        if isinstance(statement, cst.Assign) and statement.value is call:
            for target in statement.targets:
                for binding in model.bindings_of(target.target) if isinstance(target.target, cst.Name) else ():
                    for read in model.reads_of(binding):
                        if _counts_local_devices(model, read):
                            yield read


def _counts_local_devices(model: Model, expr: cst.BaseExpression, seen: frozenset = frozenset()) -> bool:
    """Whether ``expr`` is this machine's accelerator count, `torch.cuda.device_count()`, or a
    name bound only to it (`ngpus = torch.cuda.device_count()`)."""
    if isinstance(expr, cst.Call):
        return model.call_name(expr) in devices.LOCAL_DEVICE_COUNTS
    written = dotted(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    if written is None or written in seen:
        return False
    bindings = model.bindings_of(expr)
    return bool(bindings) and all(
        binding.how == "assign" and binding.value is not None
        and _counts_local_devices(model, binding.value, seen | {written})
        for binding in bindings
    )


def _reads_world_size(model: Model) -> bool:
    """Whether the script reads the number of processes of the run from the launcher or the
    process group (`os.environ["WORLD_SIZE"]`, `dist.get_world_size()`): then it may span more
    machines than this one."""
    for call in model.calls:
        if (dotted(call.func) or "").endswith("get_world_size") or distributed.env_variable(model, call) == "WORLD_SIZE":
            return True
    return any(
        isinstance(node, cst.Subscript) and distributed.env_variable(model, node) == "WORLD_SIZE" for node in model.nodes
    )


def _is_global_count(model: Model, dividend: cst.BaseExpression) -> bool:
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
    path = _Path()
    for binding in model.bindings_of(dividend):
        _judge_comments(model, binding.statement, path)
    argument = constants.evaluator(model).argparse.argument(dividend)
    if argument is not None:
        _judge_argument(model, argument, path)
    return not path.per_process and not path.per_node


def _batch_size_arguments(model: Model) -> Iterator[tuple[cst.Call, cst.Arg]]:
    """The `batch_size` argument of every torch DataLoader and BatchSampler construction."""
    for call in model.calls:
        name = model.call_name(call)
        if name in data.LOADERS:
            position = data.LOADER_POSITIONAL.index("batch_size")
        elif name in data.BATCH_SAMPLERS:
            position = 1
        else:
            continue
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "batch_size":
                yield call, arg
                break
        else:
            if len(positional) > position and not any(arg.star for arg in call.args):
                yield call, positional[position]


def _framework_owned(model: Model, call: cst.Call) -> bool:
    """A loader handed to accelerate, Fabric, a Trainer or DeepSpeed, or built in a Lightning
    hook: the framework decides how batches are split."""
    for ancestor in model.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef) and ancestor.name.value.endswith("_dataloader"):
            return True
    values = model.values
    for use in values.uses(call):
        if use.how == "argument" and isinstance(use.context, cst.Call):
            receiver = use.context.func.value if isinstance(use.context.func, cst.Attribute) else None
            if any(v.kind is Kind.MANAGED for v in values.of(use.context)) or (
                receiver is not None and any(v.kind is Kind.FRAMEWORK for v in values.of(receiver))
            ):
                return True
    return False


def _trains(model: Model, call: cst.Call) -> bool | None:
    """Whether the loader built by ``call`` feeds training: False when it walks its data in a
    fixed order (a SequentialSampler, a DistributedSampler or the loader itself told
    `shuffle=False`) or every batch loop over it leaves the weights alone (evaluation, analysis);
    True when a loop over it updates weights; None when the file does not show it iterated."""
    values = model.values
    loaders = [v for v in values.of(call) if v.kind is Kind.LOADER and v.node is call]
    if not loaders:
        return None
    loader = loaders[0]
    samplers = values.pipeline.loader_samplers(loader)
    if samplers and all(
        v.kind is Kind.SAMPLER and (v.api in data.ORDERED_SAMPLERS or (v.epoch_seeded and v.shuffles is False))
        for v in samplers
    ):
        return False
    if not samplers and _keyword_is_false(call, "shuffle"):
        return False
    loops = [loop for loop in model.loops.batch_loops() if loader in loop.loaders]
    if not loops:
        return None
    return any(model.loops.trains(loop) for loop in loops)


def _keyword_is_false(call: cst.Call, name: str) -> bool:
    return any(
        arg.keyword is not None and arg.keyword.value == name and isinstance(arg.value, cst.Name)
        and arg.value.value == "False"
        for arg in call.args
    )


def _runs_distributed(model: Model, call: cst.Call) -> bool:
    """False when the loader is built in a branch about distribution that is not plainly the
    distributed one (`else:` of `if args.distributed:`, `if world_size == 1:`, `if rank == 0:`)."""
    child: cst.CSTNode = call
    for ancestor in model.ancestors(call):
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


def _steps_counted_per_process(model: Model, batch: cst.BaseExpression) -> bool:
    """`steps = len(examples) / args.batch_size * epochs`, then `steps // world_size`: the code
    counts the optimizer steps of one process with this batch size, which makes it the batch of
    one process (the run's batch is world_size times it)."""
    key = dotted(batch)
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
def _follow(model: Model, expr: cst.BaseExpression, path: _Path) -> None:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.FloorDivide)):
        if _is_accumulation(model, expr.right):
            _follow(model, expr.left, path)  # split into micro-steps, still not per process
        else:
            path.divided = True
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        if not distributed.mentions_world_size(model, expr, processes_only=True):
            # scaled by local counts (`per_device * jax.local_device_count()`, `* n_gpu` for
            # DataParallel, `* accumulation`): what one process feeds its own devices
            path.per_process = True
    elif isinstance(expr, cst.Call):
        name = model.call_name(expr) or dotted(expr.func)
        if name in _PASS_THROUGH:
            for arg in expr.args:
                _follow(model, arg.value, path)
    elif isinstance(expr, cst.IfExp):
        _follow(model, expr.body, path)
        _follow(model, expr.orelse, path)
    elif isinstance(expr, cst.Subscript):
        _follow_key(model, expr, path)
    elif isinstance(expr, (cst.Name, cst.Attribute)):
        _follow_name(model, expr, path)


def _follow_name(model: Model, expr: cst.Name | cst.Attribute, path: _Path) -> None:
    written = dotted(expr)
    if written is None or written in path.seen:
        return
    path.seen.add(written)
    _judge_name(written.rsplit(".", 1)[-1], path)
    for binding in model.bindings_of(expr):
        _judge_comments(model, binding.statement, path)
        if binding.how == "augassign":
            if isinstance(binding.statement.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
                path.divided = True
        elif binding.how == "param":
            _follow_parameter(model, binding, path)
        elif binding.value is not None:
            _follow(model, binding.value, path)
    argument = constants.evaluator(model).argparse.argument(expr)
    if argument is not None:
        _judge_argument(model, argument, path)


def _follow_key(model: Model, expr: cst.Subscript, path: _Path) -> None:
    """`config["global_batch_size"]`: the key is the name."""
    if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        key = constants.value(model, expr.slice[0].slice.value)
        if isinstance(key, str):
            _judge_name(key, path)


def _follow_parameter(model: Model, binding, path: _Path) -> None:
    function = binding.scope
    if not isinstance(function, cst.FunctionDef):
        return
    summaries = model.summaries
    for call, offset in summaries.call_sites(function) or ():
        passed = summaries.argument(function, call, offset, binding.name)
        if passed is not None:
            _follow(model, passed, path)


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


def _judge_name(name: str, path: _Path) -> None:
    words = _words(name)
    if words & _PER_PROCESS_WORDS:
        path.per_process = True
    elif words & _GLOBAL_WORDS and (words & _BATCH_WORDS or any(w.endswith("batch") for w in words)):
        path.declared.append(f"its name '{name}' says so")


def _judge_text(text: str, where: str, path: _Path) -> None:
    if _PER_NODE_TEXT.search(text):
        path.per_node = True
    if _PER_PROCESS_TEXT.search(text):
        path.per_process = True
    elif _GLOBAL_TEXT.search(text) and not _DERIVATION_TEXT.search(text):
        snippet = " ".join(text.split())
        snippet = snippet if len(snippet) <= 60 else snippet[:57] + "..."
        path.declared.append(f"{where} says '{snippet}'")


def _judge_argument(model: Model, call: cst.Call, path: _Path) -> None:
    for arg in call.args:
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            option = arg.value.evaluated_value
            if isinstance(option, str):
                _judge_name(option.lstrip("-"), path)
        elif arg.keyword is not None and arg.keyword.value == "help":
            text = constants.value(model, arg.value)
            if isinstance(text, str):
                _judge_text(text, "its --help", path)
    _judge_comments(model, model.statement(call), path)


def _judge_comments(model: Model, statement: cst.CSTNode, path: _Path) -> None:
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
        _judge_text(comment.lstrip("#").strip(), "a comment", path)


def _message(
    model: Model, expr: cst.BaseExpression, declared: str, loader: cst.Call, trains: bool | None
) -> tuple[str, tuple[str, ...]]:
    text = " ".join(model.module.code_for_node(expr).split())
    written = text if len(text) <= 40 else "this batch size"
    effect = "each step trains on" if trains else "each step processes"
    head = (
        f"'{written}' is a global batch size ({declared}) but reaches this per-process loader undivided: "
        f"every process loads that many samples, so {effect} world_size times the intended batch; "
    )
    world_size = distributed.world_size_text(model, loader)
    if world_size is None or written != text:
        return head + "divide it by the number of processes", ()
    divided = f"{text} // {world_size}"
    return head + f"pass {divided}", (divided,)


def _local_division_message(
    model: Model, division: cst.CSTNode, dividend: cst.BaseExpression, count: cst.BaseExpression
) -> str:
    code = model.module.code_for_node
    return (
        f"'{code(dividend)}' is divided by '{code(count)}', the accelerators of this machine, not by the "
        f"number of processes of the run: on several machines every step trains on num_nodes times the "
        f"intended batch (and on a smaller one with fewer processes than GPUs); divide by "
        f"{distributed.world_size_text(model, division) or 'the world size'}"
    )


def _per_node_division_message(
    model: Model, division: cst.BinaryOperation, per_node: cst.BaseExpression, nodes: cst.BaseExpression
) -> tuple[str, tuple[str, ...]]:
    code = model.module.code_for_node
    head = (
        f"'{code(division.left)}' is divided by '{code(per_node)}', the devices of one machine, but the run starts "
        f"'{code(per_node)}' processes on each of '{code(nodes)}' machines: with several nodes every step trains on "
        f"num_nodes times the intended batch; "
    )
    names = [code(part) for part in (per_node, nodes)]
    if all(model.visible(name, division) for name in names):
        divided = f"{code(division.left)} {code(division.operator).strip()} ({names[0]} * {names[1]})"
        return head + f"divide by the world size: {divided}", (divided,)
    return head + "divide by the world size (devices x num_nodes)", ()


RULE = BatchNotDivided
