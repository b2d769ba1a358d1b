"""TL007 batch-not-divided: a value the code declares global reaches a DDP loader undivided."""

from __future__ import annotations

import textwrap

import pytest

from conftest import lint

DDP = """\
import argparse
import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
dist.init_process_group("nccl")
world_size = dist.get_world_size()
dataset = make_dataset()
sampler = DistributedSampler(dataset)
"""


def tl007(body: str, header: str = DDP):
    return [d for d in lint(header + textwrap.dedent(body)) if d.code == "TL007"]


@pytest.mark.parametrize(
    "body",
    [
        "global_batch_size = 1024\nloader = DataLoader(dataset, batch_size=global_batch_size, sampler=sampler)\n",
        "totalBatchSize = 1024\nloader = DataLoader(dataset, totalBatchSize, sampler=sampler)\n",  # positional
        "cfg = {'effective_batch_size': 512}\nloader = DataLoader(dataset, batch_size=cfg['effective_batch_size'])\n",
        "BATCH = 2048  # summed over all GPUs\nloader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)\n",
        "# batch size across all processes\nBATCH = 2048\nloader = DataLoader(dataset, batch_size=BATCH)\n",
        "p = argparse.ArgumentParser()\np.add_argument('--batch-size', type=int, default=256, help='total batch size across all GPUs')\n"
        "args = p.parse_args()\nloader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)\n",
        "p = argparse.ArgumentParser()\np.add_argument('--global-batch-size', type=int, default=256)\n"
        "args = p.parse_args()\nbs = args.global_batch_size // args.grad_accum_steps\n"  # micro-steps, still per process
        "loader = DataLoader(dataset, batch_size=bs, sampler=sampler)\n",
        "def build(ds, total_batch_size):\n    return DataLoader(ds, batch_size=total_batch_size, sampler=sampler)\n"
        "loader = build(dataset, 4096)\n",
        "if args.distributed:\n    loader = DataLoader(dataset, batch_size=args.total_batch_size, sampler=sampler)\n",
        "batch_sampler = torch.utils.data.BatchSampler(sampler, batch_size=args.total_batch_size, drop_last=True)\n",
    ],
)
def test_reports_a_declared_global_batch_reaching_a_loader(body):
    assert len(tl007(body)) == 1


def test_points_at_the_batch_size_argument_with_a_one_line_message():
    body = "global_batch_size = 1024\nloader = DataLoader(\n    dataset,\n    batch_size=global_batch_size,\n)\n"
    (finding,) = tl007(body)
    assert (finding.line - DDP.count("\n"), finding.column) == (4, 5)
    assert finding.message == (
        "'global_batch_size' is a global batch size (its name 'global_batch_size' says so) but reaches this "
        "per-process loader undivided: every process loads that many samples, so each step processes world_size "
        "times the intended batch; pass global_batch_size // world_size"
    )


TRAIN_LOOP = """
for epoch in range(10):
    sampler.set_epoch(epoch)
    for batch in loader:
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
"""


def test_a_loader_that_trains_says_so():
    (finding,) = tl007("global_batch_size = 1024\nloader = DataLoader(dataset, global_batch_size, sampler=sampler)\n" + TRAIN_LOOP)
    assert "each step trains on world_size times the intended batch" in finding.message


@pytest.mark.parametrize(
    "loader",
    [
        "DataLoader(dataset, BATCH, sampler=torch.utils.data.SequentialSampler(dataset))",
        "DataLoader(dataset, BATCH, sampler=DistributedSampler(dataset, shuffle=False))",
        "DataLoader(dataset, BATCH, shuffle=False)",
    ],
)
def test_an_ordered_evaluation_loader_is_left_alone(loader):
    assert tl007(f"BATCH = 2048  # summed over all GPUs\nloader = {loader}\n") == []


def test_a_loader_only_read_without_weight_updates_is_left_alone():
    body = "BATCH = 2048  # summed over all GPUs\nloader = DataLoader(dataset, BATCH, sampler=sampler)\n"
    analysis = "for batch in loader:\n    model(batch).sum().backward()\n    print(probe.grad)\n"
    assert tl007(body + analysis) == []


@pytest.mark.parametrize(
    ("header", "suggested"),
    [
        (DDP, "BATCH // world_size"),
        (DDP.replace("world_size = dist.get_world_size()\n", ""), "BATCH // dist.get_world_size()"),
        # a share per process is not the number of processes
        (DDP.replace("world_size = dist.get_world_size()\n", "steps = int(10_000 / dist.get_world_size())\n"), "BATCH // dist.get_world_size()"),
        (
            DDP.replace("world_size = dist.get_world_size()\n", "").replace("import torch.distributed as dist\n", "")
            .replace('dist.init_process_group("nccl")', 'torch.distributed.init_process_group("nccl")'),
            "BATCH // torch.distributed.get_world_size()",
        ),
    ],
)
def test_the_suggested_division_uses_names_bound_in_the_script(header, suggested):
    (finding,) = tl007("BATCH = 2048  # summed over all GPUs\nloader = DataLoader(dataset, BATCH, sampler=sampler)\n", header)
    assert finding.message.endswith(f"pass {suggested}")


def test_the_help_text_is_quoted_as_the_evidence():
    body = (
        "p = argparse.ArgumentParser()\np.add_argument('-b', '--batch-size', type=int, default=256,\n"
        "               help='mini-batch size, this is the total batch size of all GPUs on the current node')\n"
        "args = p.parse_args()\nloader = DataLoader(dataset, batch_size=args.batch_size)\n"
    )
    (finding,) = tl007(body)
    assert "its --help says 'mini-batch size, this is the total batch size of all GPUs...')" in finding.message


@pytest.mark.parametrize(
    "body",
    [
        # divided by the world size, anywhere on the way
        "global_batch_size = 1024\nloader = DataLoader(dataset, batch_size=global_batch_size // world_size)\n",
        "global_batch_size = 1024\nbs = int(global_batch_size / dist.get_world_size())\nloader = DataLoader(dataset, batch_size=bs)\n",
        "p = argparse.ArgumentParser()\np.add_argument('-b', '--batch-size', default=256, help='total batch size of all GPUs on the node')\n"
        "args = p.parse_args()\ndef main_worker(gpu, ngpus_per_node, args):\n"
        "    args.batch_size = int(args.batch_size / ngpus_per_node)\n"
        "    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)\n",
        "total_batch_size = 1024\ntotal_batch_size //= world_size\nloader = DataLoader(dataset, batch_size=total_batch_size)\n",
        # documented per GPU
        "p = argparse.ArgumentParser()\np.add_argument('-b', '--batch-size', default=32, help='images per gpu, the total batch size is $NGPU x batch_size')\n"
        "args = p.parse_args()\nloader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)\n",
        "p = argparse.ArgumentParser()\np.add_argument('--per-device-batch-size', default=8)\n"
        "args = p.parse_args()\nloader = DataLoader(dataset, batch_size=args.per_device_batch_size)\n",
        "BATCH = 64  # the effective batch is BATCH * world_size\nloader = DataLoader(dataset, batch_size=BATCH)\n",
        # nothing says global
        "batch_size = 64\nloader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)\n",
        # the total is computed for logging only
        "batch_size = 64\ntotal_batch_size = batch_size * world_size\nprint(total_batch_size)\n"
        "loader = DataLoader(dataset, batch_size=batch_size)\n",
        # a branch that is not the distributed one, or runs on one rank
        "if args.distributed:\n    bs = args.total_batch_size // world_size\nelse:\n    bs = args.total_batch_size\n"
        "loader = DataLoader(dataset, batch_size=bs)\n",
        "if world_size == 1:\n    loader = DataLoader(dataset, batch_size=args.total_batch_size)\n",
        "if not args.distributed:\n    loader = DataLoader(dataset, batch_size=args.total_batch_size)\n",
        "if dist.get_rank() == 0:\n    val_loader = DataLoader(dataset, batch_size=args.total_batch_size)\n",
        # a framework splits the batch
        "from accelerate import Accelerator\naccelerator = Accelerator(split_batches=True)\n"
        "loader = accelerator.prepare(DataLoader(dataset, batch_size=args.total_batch_size))\n",
    ],
)
def test_silent_when_divided_documented_per_process_or_not_declared(body):
    assert tl007(body) == []


def test_silent_in_a_single_process_script():
    header = "import torch\nfrom torch.utils.data import DataLoader\nmodel = torch.nn.DataParallel(net)\n"
    assert tl007("global_batch_size = 1024\nloader = DataLoader(dataset, batch_size=global_batch_size)\n", header) == []


@pytest.mark.parametrize(
    "evidence",
    [
        "import os\nimport torch.distributed as dist\nlocal_rank = int(os.environ['LOCAL_RANK'])\n",
        "import torch.multiprocessing as mp\nmp.spawn(main_worker, nprocs=8)\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(model)\n",
        "import utils\nutils.init_distributed_mode(args)\n",
    ],
)
def test_distributed_evidence(evidence):
    header = "import torch\nfrom torch.utils.data import DataLoader\n" + evidence
    assert len(tl007("global_batch_size = 1024\nloader = DataLoader(dataset, batch_size=global_batch_size)\n", header)) == 1


def test_launcher_variables_read_for_compatibility_are_not_distribution():
    """JAX and accelerate examples copy `LOCAL_RANK` into args without ever starting DDP."""
    header = "import os\nimport torch\nfrom torch.utils.data import DataLoader\nenv_rank = int(os.environ.get('LOCAL_RANK', -1))\n"
    assert tl007("global_batch_size = 1024\nloader = DataLoader(dataset, batch_size=global_batch_size)\n", header) == []


def test_a_total_scaled_by_local_devices_is_what_one_process_feeds():
    """`per_device * jax.local_device_count()` (pmap) or `* n_gpu` (DataParallel) is the batch one
    process loads for its own devices; scaled by the world size, it is the global batch."""
    local = "total_train_batch_size = args.train_batch_size * jax.local_device_count()\n"
    assert tl007(local + "loader = DataLoader(dataset, batch_size=total_train_batch_size)\n") == []
    world = "total_train_batch_size = args.train_batch_size * dist.get_world_size()\n"
    assert len(tl007(world + "loader = DataLoader(dataset, batch_size=total_train_batch_size)\n")) == 1


def _local_division_findings(body: str) -> list[tuple[int, str]]:
    source = textwrap.dedent(
        """\
        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        """
    ) + textwrap.dedent(body)
    return [(d.line, d.message) for d in lint(source) if d.code == "TL007"]


def test_a_batch_divided_by_this_machines_gpus_is_reported_with_a_bound_world_size():
    found = _local_division_findings(
        """
        def setup(batch_size):
            world_size = dist.get_world_size()
            ngpus = torch.cuda.device_count()
            return int(batch_size / ngpus)
        """
    )
    assert [line for line, _ in found] == [9]
    assert "'batch_size' is divided by 'ngpus'" in found[0][1] and found[0][1].endswith("divide by world_size")


def test_a_division_by_gpus_is_silent_without_a_world_size_or_when_per_node():
    assert not _local_division_findings(
        """
        gradient_accumulation_steps = 8
        gradient_accumulation_steps //= torch.cuda.device_count()
        """
    )
    assert not _local_division_findings(
        """
        world_size = int(os.environ["WORLD_SIZE"])
        node_batch = 512  # the batch of every node, split over its GPUs
        per_gpu = node_batch // torch.cuda.device_count()
        accum_per_gpu = 4
        accum_per_gpu //= torch.cuda.device_count()
        """
    )


def test_a_step_count_divided_by_the_world_size_makes_a_total_batch_per_process():
    help_total = (
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--train_batch_size', type=int, default=32, help='Total batch size for training.')\n"
        "args = p.parse_args()\n"
    )
    per_process = help_total + (
        "steps = int(len(dataset) / args.train_batch_size * 3)\n"
        "steps //= world_size\n"
        "loader = DataLoader(dataset, batch_size=args.train_batch_size, sampler=sampler)\n"
    )
    assert tl007(per_process) == []
    for_the_run = help_total + (
        "steps = int(len(dataset) / args.train_batch_size * 3)\n"
        "loader = DataLoader(dataset, batch_size=args.train_batch_size, sampler=sampler)\n"
    )
    assert len(tl007(for_the_run)) == 1
