"""What a loader built in the file is for: whether it feeds training (a loop over it updates
weights) or only evaluation, and whether a framework takes it over (accelerate, Fabric, a
Trainer, DeepSpeed, a Lightning `*_dataloader` hook), deciding itself how batches are split
between processes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data
from torchlint.model.values import Kind

if TYPE_CHECKING:
    from torchlint.model import Model


def framework_owned(model: Model, call: cst.Call) -> bool:
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


def trains(model: Model, call: cst.Call) -> bool | None:
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
