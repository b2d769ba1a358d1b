"""TL007 batch-not-divided: in a multi-process script, a loader's per-process `batch_size` is a
value the code itself declares global (its name, its argparse help or a comment says total,
global or across all GPUs), and nothing divides it by the world size on the way; or a global
batch size or gradient-accumulation count is divided by the accelerators of this machine
(`torch.cuda.device_count()`, or the `devices` of a Lightning Trainer or Fabric that also runs
on `num_nodes` machines) in a run whose world size may span several machines."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint.model import Model, distributed, loader_roles, node_devices
from torchlint.model.batch_sizes import (
    HandedBatchSize,
    batch_size,
    handed_to_project_loaders,
    is_global_count,
    loader_batch_sizes,
    steps_counted_per_process,
)
from torchlint.model.distributed_branches import runs_distributed
from torchlint.model.names import dotted
from torchlint.model.testing import is_test_code
from torchlint.model.values import Kind
from torchlint.registry import Finding, Rule


class BatchNotDivided(Rule, code="TL007"):
    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        if is_test_code(model):
            return
        for division, per_node, nodes in node_devices.divisions_by_node_devices(model):
            if is_global_count(model, division.left):
                message, suggestions = _per_node_division_message(model, division, per_node, nodes)
                yield Finding(division, message, suggestions=suggestions)
        if not distributed.is_distributed(model):
            return
        for loader, argument in loader_batch_sizes(model):
            size = batch_size(model, argument.value)
            if not size.undivided_global:
                continue
            if steps_counted_per_process(model, dotted(argument.value)):
                continue  # the code's own step count takes it as one process's batch, whatever its help says
            if not runs_distributed(model, loader) or loader_roles.framework_owned(model, loader):
                continue
            trains = loader_roles.trains(model, loader)
            if trains is False:
                continue  # an evaluation loader: a bigger step changes memory use, not what is learnt
            message, suggestions = _message(model, argument.value, size.declared[0], loader, trains)
            yield Finding(argument, message, suggestions=suggestions)
        for handed in handed_to_project_loaders(model):
            # the size crosses into another module's loader: the same evidence, read on both sides
            if not handed.size.undivided_global or steps_counted_per_process(model, handed.text):
                continue
            if not runs_distributed(model, handed.call) or loader_roles.framework_owned(model, handed.call):
                continue
            if model.values.made(Kind.FRAMEWORK):
                continue  # a framework may take over the returned loader, which the file does not follow
            yield Finding(handed.argument, _handed_message(model, handed))
        if node_devices.spans_machines(model):
            for division, dividend, count in node_devices.divisions_by_local_devices(model):
                if is_global_count(model, dividend) and runs_distributed(model, division):
                    yield Finding(division, _local_division_message(model, division, dividend, count))


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


def _handed_message(model: Model, handed: HandedBatchSize) -> str:
    effect = "each step trains on" if handed.fact.trains else "each step processes"
    world_size = distributed.world_size_text(model, handed.call) or "the number of processes"
    return (
        f"'{handed.text}' is a global batch size ({handed.size.declared[0]}) but reaches the per-process loader "
        f"{handed.builder}() builds ({model.project.where(handed.fact.where)}) undivided: every process loads "
        f"that many samples, so {effect} world_size times the intended batch; divide it by {world_size} "
        f"before the call"
    )


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
