"""The fixes of the real rules: what each offers, when it is safe, and when it offers nothing."""

from __future__ import annotations

import textwrap

from torchlint import engine
from torchlint.config import Settings
from torchlint.diagnostics import Applicability
from torchlint.fixes import loop

HEADER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.scale = torch.ones(2)

    def forward(self, x):
        return self.fc(x) * self.scale

"""


def script(body: str) -> str:
    return HEADER + textwrap.dedent(body)


def only(code: str, source: str):
    (diagnostic,) = [d for d in engine.check_source(source, "train.py", Settings(preview=True)) if d.code == code]
    return diagnostic


def fixed(source: str, unsafe: bool) -> str:
    result = loop.fix_bytes(source.encode(), "train.py", Settings(preview=True), unsafe)
    assert not result.dropped
    return result.fixed_text


TRAIN_LOOP = """\
    for epoch in range(3):
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            optimizer.step()
"""


def test_tl003_name_is_reassigned_safely():
    source = script(
        """
        def main(device):
            x = torch.randn(8, 4)
            x.to(device)
            return x.sum()
        """
    )
    diagnostic = only("TL003", source)
    assert diagnostic.fix.applicability is Applicability.SAFE
    assert "    x = x.to(device)\n" in fixed(source, unsafe=False)


def test_tl003_attribute_is_reassigned_only_as_unsafe():
    # `self.scale = ...` goes through nn.Module.__setattr__, which refuses a tensor for a
    # registered parameter: the fix is offered, but not applied by plain --fix.
    source = script(
        """
        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(2)

            def forward(self, x):
                self.scale.to(x.device)
                return x * self.scale
        """
    )
    diagnostic = only("TL003", source)
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert fixed(source, unsafe=False) == source
    assert "        self.scale = self.scale.to(x.device)\n" in fixed(source, unsafe=True)


def sampler_script(sampler: str, loop: str = "for epoch in range(3):") -> str:
    return HEADER + (
        "def main(device, local_rank):\n"
        "    dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 2))\n"
        f"    sampler = {sampler}\n"
        "    loader = DataLoader(dataset, batch_size=8, sampler=sampler)\n"
        "    model = Net().to(device)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        f"    {loop}\n"
        "        # one pass over the shard\n"
        "        for x, y in loader:\n"
        "            x, y = x.to(device), y.to(device)\n"
        "            loss = (model(x) - y).pow(2).mean()\n"
        "            loss.backward()\n"
        "            optimizer.step()\n"
    )


def test_tl006_inserts_set_epoch_first_in_the_epoch_loop():
    source = sampler_script("DistributedSampler(dataset)")
    diagnostic = only("TL006", source)
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert fixed(source, unsafe=False) == source
    assert "    for epoch in range(3):\n        sampler.set_epoch(epoch)\n        # one pass" in fixed(source, unsafe=True)


def test_tl006_guards_a_sampler_that_may_not_have_set_epoch():
    source = sampler_script("RandomSampler(dataset) if local_rank == -1 else DistributedSampler(dataset)")
    assert (
        '    for epoch in range(3):\n        if hasattr(sampler, "set_epoch"):\n            sampler.set_epoch(epoch)\n'
        in fixed(source, unsafe=True)
    )


def test_tl006_offers_no_fix_without_an_epoch_counter():
    assert only("TL006", sampler_script("DistributedSampler(dataset)", "for _ in range(3):")).fix is None


def test_tl004_moves_plain_batch_names_at_the_top_of_the_batch_loop():
    source = script(
        """
        def main(device):
            loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 2)), batch_size=8)
            model = Net().to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        """
    ) + TRAIN_LOOP
    diagnostic = only("TL004", source)
    assert diagnostic.fix.applicability is Applicability.UNSAFE
    assert fixed(source, unsafe=False) == source
    assert "        for x, y in loader:\n            x, y = x.to(device), y.to(device)\n" in fixed(source, unsafe=True)


def test_tl004_uses_cuda_when_the_module_was_moved_with_cuda():
    source = script(
        """
        def main():
            loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 2)), batch_size=8)
            model = Net().cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        """
    ) + TRAIN_LOOP
    assert "            x, y = x.cuda(), y.cuda()\n" in fixed(source, unsafe=True)


def test_tl004_offers_no_fix_for_a_dict_batch():
    source = script(
        """
        def main(device, dataset):
            loader = DataLoader(dataset, batch_size=8)
            model = Net().to(device)
            for batch in loader:
                out = model(**batch)
        """
    )
    findings = [d for d in engine.check_source(source, "train.py", Settings()) if d.code == "TL004"]
    assert all(d.fix is None for d in findings)


# A training step after `model` is built: tensors go to `device`, the model is trained.
STEP = """\
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4).to(device)
    model(x).sum().backward()
    optimizer.step()
"""


def test_tl002_moves_at_construction_safely_when_the_device_is_bound_before():
    source = script('def main():\n    device = torch.device("cuda")\n    model = Net()\n') + STEP
    assert only("TL002", source).fix.applicability is Applicability.SAFE
    assert "    model = Net().to(device)\n" in fixed(source, unsafe=False)


def test_tl002_is_unsafe_when_the_device_is_a_global_bound_further_down():
    source = script("def main():\n    model = Net()\n") + STEP + '\n\ndevice = torch.device("cuda")\nmain()\n'
    assert only("TL002", source).fix.applicability is Applicability.UNSAFE
    assert fixed(source, unsafe=False) == source
    assert "    model = Net().to(device)\n" in fixed(source, unsafe=True)


def test_tl002_offers_no_fix_when_the_device_is_local_to_another_function():
    source = script(
        "def make_model():\n    return Net()\n\n\n"
        'def main():\n    device = torch.device("cuda")\n    model = make_model()\n'
    ) + STEP
    assert only("TL002", source).fix is None
