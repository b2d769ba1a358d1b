"""Data loading: loaders, datasets, samplers that re-seed per epoch, batch-sampler wrappers."""

from __future__ import annotations

LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# DataLoader's positional parameters after the dataset (for `DataLoader(ds, 64, True, sampler)`).
LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn")
# Collate functions that build batches on the host.
HOST_COLLATES = frozenset(
    {"torch.utils.data.default_collate", "torch.utils.data.dataloader.default_collate",
     "torch.utils.data._utils.collate.default_collate"}
)

# Samplers with `set_epoch`: qualified name -> whether they shuffle when `shuffle=` is not given.
EPOCH_SAMPLERS: dict[str, bool] = {
    "torch.utils.data.DistributedSampler": True,
    "torch.utils.data.distributed.DistributedSampler": True,
    "torchvision.datasets.samplers.DistributedSampler": False,
    "timm.data.RepeatAugSampler": True,
    "timm.data.distributed_sampler.RepeatAugSampler": True,
}
# Samplers that give each process of a distributed run its own share of the dataset: a loader
# drawing from one builds one process's batches.
PER_RANK_SAMPLERS = frozenset(EPOCH_SAMPLERS)
# Samplers that walk the dataset in a fixed order: what evaluation loaders use.
ORDERED_SAMPLERS = frozenset(
    {"torch.utils.data.SequentialSampler", "torch.utils.data.sampler.SequentialSampler"}
)
# Batch samplers that draw from a sampler given as their first argument (`.sampler` is it).
BATCH_SAMPLERS = frozenset({"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"})

# Datasets that hold exactly the tensors they are given; wrappers that hold another dataset.
TENSOR_DATASETS = frozenset({"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"})
DATASET_WRAPPERS = frozenset(
    {"torch.utils.data.Subset", "torch.utils.data.random_split", "torch.utils.data.ConcatDataset",
     "torch.utils.data.dataset.Subset", "torch.utils.data.dataset.random_split"}
)
DATASET_BASES = frozenset(
    {"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset", "torch.utils.data.IterableDataset"}
)

# Wrappers around an iterable that yield its items (possibly with an index): `for i, b in
# enumerate(loader)` iterates the loader. The value is the position of the iterable argument.
ITERATION_WRAPPERS: dict[str, int] = {
    "enumerate": 0,
    "iter": 0,
    "tqdm.tqdm": 0,
    "tqdm.auto.tqdm": 0,
    "tqdm.notebook.tqdm": 0,
    "tqdm.rich.tqdm": 0,
    "rich.progress.track": 0,
    "itertools.islice": 0,
    "itertools.cycle": 0,
}
# enumerate() puts an index before each item.
INDEXING_WRAPPERS = frozenset({"enumerate"})

# Calls that update weights: a batch loop containing one trains. A backward pass alone does not:
# attribution and head-importance loops call it only to read gradients.
WEIGHT_UPDATE_METHODS = frozenset({"step", "optimizer_step"})
# Methods by which a project's own model or trainer object conventionally takes one training step
# (the pix2pix/CycleGAN and BasicSR family's `model.optimize_parameters()` after
# `model.set_input(batch)`, a trainer's `train_step(batch)`): called on an object built by code
# the file does not show, they train as `optimizer.step()` does.
PROJECT_STEP_METHODS = frozenset({"optimize_parameters", "train_step"})
