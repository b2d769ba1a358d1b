"""Write a folder of synthetic PyTorch training scripts for benchmarking (and for tests that
need a tree of varied, realistic files).

    python benchmarks/generate_scripts.py OUT_DIR [--count 3000] [--seed 0] [--dense]

Each script is assembled from randomly chosen parts, the way real ones vary: import style
(`import torch.nn as nn`, `from torch import nn, optim`, `import torch as th`), configuration
(argparse, a dict, constants), a model class of random depth, a dataset class, single-process or
DistributedDataParallel training with or without a DistributedSampler, helpers that move batches,
evaluation, checkpointing and sometimes a JIT trace. Some parts carry the bugs torchlint looks
for (a device only printed, a discarded `.to()`, a sampler never re-seeded, an absurd learning
rate), so the rules do real work. A tenth of the files are plain utilities without torch, as in
any project. With `--dense`, every file is a small training script (about 20 to 50 lines: a
device, a model, a loader, an optimizer and the loop, sometimes an evaluation and a checkpoint),
where a linter has work on every line. Output is deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import random
import textwrap
from pathlib import Path

OPTIMIZERS = [("SGD", ["0.1", "0.01", "1.6", "30.0"]), ("Adam", ["1e-3", "3e-4", "10"]), ("AdamW", ["5e-4", "2e-5"]), ("RMSprop", ["1e-2", "0.5"])]
LAYERS = ["nn.Linear({a}, {b})", "nn.ReLU()", "nn.Dropout(0.{p})", "nn.LayerNorm({b})", "nn.GELU()"]


def _imports(rng: random.Random, distributed: bool) -> tuple[str, str, str]:
    """The import block, and how the script spells `torch` and `torch.optim`."""
    style = rng.randrange(3)
    lines = ["import argparse", "import os", "import time", ""]
    if style == 0:
        lines += ["import torch", "import torch.nn as nn", "import torch.nn.functional as F", "from torch.utils.data import DataLoader, Dataset"]
        torch, optim = "torch", "torch.optim"
    elif style == 1:
        lines += ["import torch", "from torch import nn, optim", "from torch.nn import functional as F", "from torch.utils.data import DataLoader, Dataset"]
        torch, optim = "torch", "optim"
    else:
        lines += ["import torch as th", "import torch.nn as nn", "import torch.nn.functional as F", "from torch.utils import data as tud"]
        torch, optim = "th", "th.optim"
    if distributed:
        lines += [
            f"import {'torch' if torch == 'th' else torch}.distributed as dist",
            "from torch.nn.parallel import DistributedDataParallel as DDP",
            "from torch.utils.data.distributed import DistributedSampler",
        ]
    return "\n".join(lines) + "\n", torch, optim


def _loader_names(torch: str) -> tuple[str, str]:
    return ("tud.DataLoader", "tud.Dataset") if torch == "th" else ("DataLoader", "Dataset")


def _model(rng: random.Random, name: str) -> str:
    width = rng.choice([64, 128, 256, 512])
    layers = []
    for index in range(rng.randint(2, 9)):
        layers.append(rng.choice(LAYERS).format(a=width, b=width, p=rng.randint(1, 5)))
    body = ",\n            ".join(layers)
    extra = ""
    if rng.random() < 0.5:
        extra = textwrap.indent(
            textwrap.dedent(
                f"""
                def init_weights(self):
                    for module in self.modules():
                        if isinstance(module, nn.Linear):
                            nn.init.xavier_uniform_(module.weight)
                            nn.init.zeros_(module.bias)
                """
            ),
            "    ",
        )
    return textwrap.dedent(
        f"""
        class {name}(nn.Module):
            def __init__(self, in_features={width}, classes={rng.choice([2, 10, 100, 1000])}):
                super().__init__()
                self.stem = nn.Linear(in_features, {width})
                self.body = nn.Sequential(
                    BODY
                )
                self.head = nn.Linear({width}, classes)

            def forward(self, x):
                x = F.relu(self.stem(x))
                x = self.body(x)
                return self.head(x)
        """
    ).replace("BODY", body) + extra


def _dataset(rng: random.Random, name: str, torch: str, base: str) -> str:
    return textwrap.dedent(
        f"""
        class {name}({base}):
            def __init__(self, size={rng.choice([1000, 5000, 60000])}, features=64, seed={rng.randint(0, 99)}):
                generator = {torch}.Generator().manual_seed(seed)
                self.x = {torch}.randn(size, features, generator=generator)
                self.y = {torch}.randint(0, 10, (size,), generator=generator)

            def __len__(self):
                return len(self.x)

            def __getitem__(self, index):
                return self.x[index], self.y[index]
        """
    )


def _config(rng: random.Random, optimizer: str, lr: str) -> tuple[str, str, str]:
    """A configuration block, and the expressions for the learning rate and the batch size."""
    style = rng.randrange(3)
    batch = rng.choice([32, 64, 128, 256])
    epochs = rng.randint(2, 90)
    if style == 0:
        return (
            textwrap.dedent(
                f"""
                def parse_args():
                    parser = argparse.ArgumentParser(description="train a classifier")
                    parser.add_argument("--lr", type=float, default={lr}, help="learning rate")
                    parser.add_argument("--batch-size", type=int, default={batch}, help="batch size per GPU")
                    parser.add_argument("--epochs", type=int, default={epochs})
                    parser.add_argument("--workers", type=int, default={rng.randint(0, 8)})
                    parser.add_argument("--out", default="checkpoints")
                    return parser.parse_args()
                """
            ),
            "args.lr",
            "args.batch_size",
        )
    if style == 1:
        return (
            textwrap.dedent(
                f"""
                CONFIG = {{
                    "lr": {lr},
                    "batch_size": {batch},
                    "epochs": {epochs},
                    "optimizer": "{optimizer}",
                    "weight_decay": {rng.choice(["0.0", "1e-4", "0.05"])},
                }}
                """
            ),
            'CONFIG["lr"]',
            'CONFIG["batch_size"]',
        )
    return (
        textwrap.dedent(
            f"""
            LEARNING_RATE = {lr}
            BATCH_SIZE = {batch}
            EPOCHS = {epochs}
            """
        ),
        "LEARNING_RATE",
        "BATCH_SIZE",
    )


def _device(rng: random.Random, torch: str, bug: bool) -> tuple[str, str]:
    """The device block and its name; with ``bug`` the device is only printed."""
    form = rng.randrange(3)
    if form == 0:
        line = f'device = {torch}.device("cuda" if {torch}.cuda.is_available() else "cpu")'
    elif form == 1:
        line = f'device = "cuda" if {torch}.cuda.is_available() else "cpu"'
    else:
        line = f'device = {torch}.device("cuda:0")'
    return line + ('\n    print(f"using {device}")' if bug else ""), "device"


def _train_loop(rng: random.Random, torch: str, discard_bug: bool, set_epoch: bool, distributed: bool) -> str:
    move = (
        "        inputs.to(device)\n        targets = targets.to(device)"
        if discard_bug
        else rng.choice(
            [
                "        inputs, targets = inputs.to(device), targets.to(device)",
                "        inputs = inputs.to(device, non_blocking=True)\n        targets = targets.to(device, non_blocking=True)",
                "        inputs, targets = to_device((inputs, targets), device)",
            ]
        )
    )
    reseed = "    if sampler is not None:\n        sampler.set_epoch(epoch)\n" if set_epoch and distributed else ""
    return (
        "def train_one_epoch(model, loader, optimizer, device, epoch, sampler=None):\n"
        + reseed
        + "    model.train()\n"
        + "    total, count = 0.0, 0\n"
        + "    for step, (inputs, targets) in enumerate(loader):\n"
        + move
        + "\n"
        + "        optimizer.zero_grad(set_to_none=True)\n"
        + "        loss = F.cross_entropy(model(inputs), targets)\n"
        + "        loss.backward()\n"
        + "        optimizer.step()\n"
        + "        total += loss.item()\n"
        + "        count += 1\n"
        + f"        if step % {rng.choice([10, 50, 100])} == 0:\n"
        + '            print(f"epoch {epoch} step {step} loss {total / count:.4f}")\n'
        + "    return total / max(count, 1)\n"
    )


EVALUATE = '''
@{torch}.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct, seen = 0, 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        predictions = model(inputs).argmax(dim=1)
        correct += (predictions == targets).sum().item()
        seen += targets.numel()
    return correct / max(seen, 1)


def to_device(tensors, device):
    return tuple(t.to(device) for t in tensors)


def save_checkpoint(model, optimizer, epoch, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    {torch}.save({{"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}}, path)
'''


def script(index: int, seed: int) -> str:
    rng = random.Random(seed * 1_000_003 + index)
    distributed = rng.random() < 0.35
    imports, torch, optim = _imports(rng, distributed)
    loader_cls, dataset_base = _loader_names(torch)
    optimizer, lrs = rng.choice(OPTIMIZERS)
    lr = rng.choice(lrs)
    config, lr_expr, batch_expr = _config(rng, optimizer, lr)
    model_name = rng.choice(["Net", "Classifier", "MLP", "TabularModel", "ProbeHead"]) + str(index)
    dataset_name = rng.choice(["RandomDataset", "Features", "TensorPairs"]) + str(index)
    device_block, _ = _device(rng, torch, bug=rng.random() < 0.05)
    parts = [
        f'"""Synthetic training script {index} (generated by benchmarks/generate_scripts.py, seed {seed})."""\n',
        imports,
        config,
        _model(rng, model_name),
        _dataset(rng, dataset_name, torch, dataset_base),
        EVALUATE.format(torch=torch),
        "\n",
        _train_loop(rng, torch, discard_bug=rng.random() < 0.05, set_epoch=rng.random() < 0.85, distributed=distributed),
    ]
    args_line = "    args = parse_args()\n" if lr_expr.startswith("args") else ""
    if distributed:
        setup = (
            '    dist.init_process_group("nccl")\n'
            '    local_rank = int(os.environ["LOCAL_RANK"])\n'
            f"    {torch}.cuda.set_device(local_rank)\n"
            f'    device = {torch}.device("cuda", local_rank)\n'
            f"    model = DDP({model_name}().to(device), device_ids=[local_rank])\n"
            f"    dataset = {dataset_name}()\n"
            "    sampler = DistributedSampler(dataset, shuffle=True)\n"
            f"    loader = {loader_cls}(dataset, batch_size={batch_expr}, sampler=sampler, num_workers=2, pin_memory=True)\n"
        )
    else:
        setup = (
            f"    {device_block}\n"
            f"    model = {model_name}()\n"
            "    model.to(device)\n"
            f"    dataset = {dataset_name}()\n"
            "    sampler = None\n"
            f"    loader = {loader_cls}(dataset, batch_size={batch_expr}, shuffle=True)\n"
        )
    epochs = "args.epochs" if args_line else ('CONFIG["epochs"]' if "CONFIG" in lr_expr else "EPOCHS")
    trace = ""
    if rng.random() < 0.1:
        trace = (
            f"    example = {torch}.randn(1, 64, device=device)\n"
            f"    traced = {torch}.jit.trace(model, example)\n"
            '    traced.save("model_traced.pt")\n'
        )
    parts.append(
        "\n\ndef main():\n"
        + args_line
        + setup
        + f"    optimizer = {optim}.{optimizer}(model.parameters(), lr={lr_expr})\n"
        + f"    for epoch in range({epochs}):\n"
        + "        started = time.time()\n"
        + "        loss = train_one_epoch(model, loader, optimizer, device, epoch, sampler)\n"
        + "        accuracy = evaluate(model, loader, device)\n"
        + '        print(f"epoch {epoch}: loss {loss:.4f} accuracy {accuracy:.3f} in {time.time() - started:.1f}s")\n'
        + '        save_checkpoint(model, optimizer, epoch, f"checkpoints/epoch_{epoch}.pt")\n'
        + trace
        + '\n\nif __name__ == "__main__":\n    main()\n'
    )
    return "".join(parts)


DENSE_MODELS = [
    "nn.Sequential(nn.Flatten(), nn.Linear(784, {w}), nn.ReLU(), nn.Linear({w}, 10))",
    "nn.Sequential(nn.Conv2d(1, {c}, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear({c}, 10))",
    "nn.Linear(784, 10)",
    "torchvision.models.resnet18(num_classes=10)",
]


def dense_script(index: int, seed: int) -> str:
    """A small training script (about 12 to 60 lines) of the kind users keep by the dozen: every
    line builds or uses a device, a model, a loader, an optimizer or the training loop."""
    rng = random.Random(seed * 5_000_011 + index)
    model_expr = rng.choice(DENSE_MODELS).format(w=rng.choice([64, 128, 256]), c=rng.choice([8, 16, 32]))
    lines = ['"""Dense training script {index} (benchmarks/generate_scripts.py --dense, seed {seed})."""'.format(index=index, seed=seed)]
    lines += ["import torch", "import torch.nn as nn"]
    if "torchvision" in model_expr:
        lines.append("import torchvision")
    lines.append("from torch.utils.data import DataLoader, TensorDataset")
    shape = "1, 28, 28" if "Conv" in model_expr or "resnet" in model_expr else "784"
    if rng.random() < 0.4:
        lines += ["", "", "class Net(nn.Module):", "    def __init__(self):", "        super().__init__()", f"        self.net = {model_expr}", "",
                  "    def forward(self, x):", "        return self.net(x)"]
        model_expr = "Net()"
        lines.append("")
    lines.append("")
    body = []
    if rng.random() < 0.05:
        body += ['device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'print("device:", device)']
        moved = False
    else:
        body.append(rng.choice(['device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', 'device = "cuda"', 'device = torch.device("cuda:0")']))
        moved = True
    body.append(f"model = {model_expr}" + (".to(device)" if moved and rng.random() < 0.5 else ""))
    if moved and not body[-1].endswith(".to(device)"):
        body.append(rng.choice(["model.to(device)", "model = model.to(device)", "model.cuda()"]))
    size = rng.choice([256, 1024, 4096])
    body += [
        f"data = TensorDataset(torch.randn({size}, {shape}), torch.randint(0, 10, ({size},)))",
        f"loader = DataLoader(data, batch_size={rng.choice([16, 32, 64, 128])}, shuffle=True)",
    ]
    optimizer, lrs = rng.choice(OPTIMIZERS)
    body.append(f"optimizer = torch.optim.{optimizer}(model.parameters(), lr={rng.choice(lrs)})")
    body.append(rng.choice(["criterion = nn.CrossEntropyLoss()", "criterion = nn.NLLLoss()"]))
    body.append(f"for epoch in range({rng.randint(1, 20)}):")
    body.append("    model.train()" if rng.random() < 0.7 else "    running = 0.0")
    body.append("    for inputs, labels in loader:")
    if rng.random() < 0.05:
        body += ["        inputs.to(device)", "        labels = labels.to(device)"]
    else:
        body.append(rng.choice(["        inputs, labels = inputs.to(device), labels.to(device)", "        inputs = inputs.to(device)\n        labels = labels.to(device)"]))
    body += ["        optimizer.zero_grad()", "        loss = criterion(model(inputs), labels)", "        loss.backward()", "        optimizer.step()"]
    if rng.random() < 0.5:
        body.append('    print(f"epoch {epoch}: loss {loss.item():.4f}")')
    if rng.random() < 0.4:
        body += ["    model.eval()", "    with torch.no_grad():", "        correct = 0", "        for inputs, labels in loader:",
                 "            inputs, labels = inputs.to(device), labels.to(device)", "            correct += (model(inputs).argmax(1) == labels).sum().item()",
                 '        print("accuracy", correct / len(data))']
    if rng.random() < 0.3:
        body.append(f'torch.save(model.state_dict(), "model_{index}.pt")')
    if rng.random() < 0.5:
        lines += ["", "def main():", *("    " + line for line in "\n".join(body).split("\n")), "", "", 'if __name__ == "__main__":', "    main()"]
    else:
        lines += body
    return "\n".join(lines) + "\n"


def utility(index: int, seed: int) -> str:
    """A helper module without torch: logging, paths, metrics bookkeeping."""
    rng = random.Random(seed * 7_000_003 + index)
    names = [f"metric_{rng.randint(0, 999)}" for _ in range(rng.randint(3, 12))]
    body = "".join(
        textwrap.dedent(
            f"""

            def {name}(values, weights=None):
                \"\"\"Weighted mean of {name}.\"\"\"
                if weights is None:
                    weights = [1.0] * len(values)
                total = sum(w * v for w, v in zip(weights, values))
                return total / max(sum(weights), {rng.choice(["1e-8", "1e-12", "1.0"])})
            """
        )
        for name in names
    )
    return f'"""Synthetic utility module {index}: metrics bookkeeping."""\n\nimport json\nimport os\nimport sys\n' + body


def generate(out: Path, count: int, seed: int = 0, dense: bool = False) -> list[Path]:
    """``count`` files in project_NNN subfolders: with ``dense``, small training scripts only;
    otherwise larger scripts and, one file in ten, a utility module without torch."""
    written = []
    for index in range(count):
        folder = out / f"project_{index // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        if dense:
            path, text = folder / f"train_{index:05d}.py", dense_script(index, seed)
        elif index % 10 == 9:
            path, text = folder / f"utils_{index:05d}.py", utility(index, seed)
        else:
            path, text = folder / f"train_{index:05d}.py", script(index, seed)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dense", action="store_true", help="small training scripts only (12 to 60 lines, every one a training loop)")
    args = parser.parse_args()
    paths = generate(args.out, args.count, args.seed, args.dense)
    lines = sum(p.read_text(encoding="utf-8").count("\n") for p in paths)
    print(f"wrote {len(paths)} files, {lines} lines, under {args.out}")


if __name__ == "__main__":
    main()
