"""Libraries that own device placement and sampling for the values given to them.

A value passed to one of these (or handed back by one) is "framework-managed": the rules that
the framework takes over (TL002, TL004, TL006) stay silent about it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        # transformers.Trainer subclasses that train SentenceTransformer models
        "sentence_transformers.SentenceTransformerTrainer",
        "sentence_transformers.trainer.SentenceTransformerTrainer",
        "trl.SFTTrainer",
        "trl.DPOTrainer",
        "composer.Trainer",
        "ignite.engine.Engine",
    }
)
# ... of which these pick the device at run time for the script: the GPU of each process when
# there is one, the host otherwise (`accelerator.device`, `fabric.device`).
DEVICE_CHOOSING_CLASSES = frozenset(
    {"accelerate.Accelerator", "lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric"}
)
# ... unless told to use the host: `Fabric(accelerator="cpu")`, `Accelerator(cpu=True)` (the
# keyword and the literal value that pins them there), or told which accelerator to use
# (`Fabric(accelerator="cuda")` runs only where there is one; "auto" leaves the choice open).
HOST_PINNING_ARGUMENTS = {"accelerator": "cpu", "cpu": True}
ACCELERATOR_ARGUMENT = "accelerator"
UNDECIDED_ACCELERATOR = "auto"
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

# Functions that build an engine running the model over batches it moves to the device it is
# given, and leave the model where it is (ignite: "applies to batches after starting the engine;
# model will not be moved"): moving the model stays the script's job. The value says whether the
# engine trains the model (passed first) or only evaluates it; the device comes as `device=` or,
# in ignite's first releases, as the flag `cuda=`.
BATCH_PLACING_RUNNERS = {
    "ignite.engine.create_supervised_trainer": True,
    "ignite.trainer.create_supervised_trainer": True,
    "ignite.engine.create_supervised_evaluator": False,
    "ignite.evaluator.create_supervised_evaluator": False,
}
CUDA_FLAG_KEYWORD = "cuda"


@dataclass(frozen=True)
class CriterionRunner:
    """A net that computes `criterion(module(X), y)` itself (skorch): where its constructor takes
    the module (a class or an instance) and the criterion (a class or an instance)."""

    module: str = "module"
    module_position: int = 0
    criterion: str = "criterion"


# skorch's nets feed their module's output to the criterion unchanged (the classifier takes the
# log of it first only for NLLLoss, so a softmax is right there and wrong for CrossEntropyLoss).
CRITERION_RUNNERS: dict[str, CriterionRunner] = {
    name: CriterionRunner()
    for name in (
        "skorch.NeuralNet", "skorch.net.NeuralNet", "skorch.NeuralNetClassifier",
        "skorch.classifier.NeuralNetClassifier", "skorch.NeuralNetBinaryClassifier",
        "skorch.classifier.NeuralNetBinaryClassifier", "skorch.NeuralNetRegressor",
        "skorch.regressor.NeuralNetRegressor",
    )
}

# Packages whose functions take over a loader they are given (`prepare_data_loader(loader)`,
# `idist.auto_dataloader`, `pl.MpDeviceLoader`): what they hand back is theirs, not an adapted
# loader whose sampler the script still re-seeds.
LOADER_OWNING_PACKAGES = (
    "accelerate.", "lightning.", "pytorch_lightning.", "lightning_fabric.", "transformers.", "deepspeed.",
    "horovod.", "composer.", "ignite.", "torch_xla.", "colossalai.", "ray.",
)


@dataclass(frozen=True)
class StepConvention:
    """A framework object built around the script's step function and run over a loader: it calls
    the step function once per batch."""

    function: int  # position of the step function among the constructor's arguments
    batch: int  # position of the batch among the step function's parameters
    run: str  # the method that runs it over data
    data: int  # position of the loader among that method's arguments


# ignite: `Engine(process_function)`, `process_function(engine, batch)`, `engine.run(data, ...)`.
STEP_CONVENTIONS: dict[str, StepConvention] = {
    "ignite.engine.Engine": StepConvention(function=0, batch=1, run="run", data=0),
    "ignite.engine.engine.Engine": StepConvention(function=0, batch=1, run="run", data=0),
}


@dataclass(frozen=True)
class ProcessLayout:
    """A launcher that starts `devices` processes on each of `num_nodes` machines: its world size
    is their product, so a global count divided by `devices` alone is per node, not per process."""

    devices: tuple[str, ...]  # keywords naming the processes of one machine (newest first)
    nodes: str  # keyword naming the machines


_LIGHTNING_LAYOUT = ProcessLayout(devices=("devices", "gpus"), nodes="num_nodes")
PROCESS_LAYOUTS: dict[str, ProcessLayout] = {
    name: _LIGHTNING_LAYOUT
    for name in (
        "lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer",
        "lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
    )
}
