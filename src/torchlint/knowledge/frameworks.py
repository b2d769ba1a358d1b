"""Libraries that own device placement and sampling for the values given to them.

A value passed to one of these (or handed back by one) is "framework-managed": the rules that
the framework takes over (TL002, TL004, TL006) stay silent about it.
"""

from __future__ import annotations

# Objects whose methods take over what they are given (`accelerator.prepare(model, loader)`,
# `fabric.setup(model)`, `trainer.fit(model, loader)`).
FRAMEWORK_CLASSES = frozenset(
    {
        "accelerate.Accelerator",
        "lightning.Fabric",
        "lightning.fabric.Fabric",
        "lightning_fabric.Fabric",
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "pytorch_lightning.Trainer",
        "transformers.Trainer",
        "transformers.Seq2SeqTrainer",
        "trl.SFTTrainer",
        "trl.DPOTrainer",
        "composer.Trainer",
        "ignite.engine.Engine",
    }
)
# Functions that take over what they are given and return managed values.
FRAMEWORK_FUNCTIONS = frozenset(
    {
        "deepspeed.initialize",
        "colossalai.initialize",
        "horovod.torch.DistributedOptimizer",
        "ignite.engine.create_supervised_trainer",
        "ignite.engine.create_supervised_evaluator",
    }
)
