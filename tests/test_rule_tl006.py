"""TL006 sampler-set-epoch-missing: a shuffling DistributedSampler never re-seeded per epoch."""

from conftest import lint

HEADER = """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler as DS
from tqdm import tqdm as progress


def step(model, batch, optimizer):
    model(batch).sum().backward()
    optimizer.step()
"""


def findings(body):
    return [(d.line - HEADER.count("\n"), d.message) for d in lint(HEADER + body) if d.code == "TL006"]


def test_sampler_never_reseeded_is_reported_at_its_construction():
    found = findings(
        """
def main(dataset, model, optimizer, epochs):
    train_sampler = DS(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=train_sampler)
    for epoch in range(epochs):
        for batch in loader:
            step(model, batch, optimizer)
"""
    )
    assert [line for line, _ in found] == [3]
    assert "train_sampler.set_epoch(epoch)" in found[0][1] and "same order" in found[0][1]


def test_the_epoch_is_counted_by_the_loop_nearest_the_batches():
    found = findings(
        """
def distil_layer_by_layer(dataset, model, optimizer, layers, epochs):
    train_sampler = DS(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=train_sampler)
    for layer in range(layers):
        for epoch in range(epochs):
            for batch in loader:
                step(model, batch, optimizer)
"""
    )
    assert [line for line, _ in found] == [3]
    assert "train_sampler.set_epoch(epoch)" in found[0][1]


def test_batch_loop_in_a_helper_called_each_epoch():
    found = findings(
        """
def train_one_epoch(model, loader, optimizer):
    for batch in loader:
        step(model, batch, optimizer)


def main(dataset, model, optimizer, epochs):
    loader = DataLoader(dataset, sampler=DS(dataset, shuffle=True))
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer)
"""
    )
    assert [line for line, _ in found] == [8]
    assert "loader.sampler.set_epoch(epoch)" in found[0][1]


def test_set_epoch_once_before_the_loop_is_not_enough():
    assert findings(
        """
def main(dataset, model, optimizer, epochs):
    sampler = DS(dataset)
    sampler.set_epoch(0)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            step(model, batch, optimizer)
"""
    )


def test_reseeding_through_the_loader_under_a_guard_or_in_a_helper():
    assert not findings(
        """
def reseed(loader, epoch):
    if hasattr(loader.sampler, "set_epoch"):
        loader.sampler.set_epoch(epoch)


def direct(dataset, model, optimizer, epochs, distributed):
    sampler = DS(dataset) if distributed else None
    loader = DataLoader(dataset, sampler=sampler, shuffle=sampler is None)
    for epoch in range(epochs):
        if distributed:
            sampler.set_epoch(epoch)
        for batch in loader:
            step(model, batch, optimizer)


def through_loader(dataset, model, optimizer, epochs):
    loader = DataLoader(dataset, sampler=DS(dataset))
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for batch in loader:
            step(model, batch, optimizer)


def through_helper(dataset, model, optimizer, epochs):
    loader = DataLoader(dataset, sampler=DS(dataset))
    for epoch in range(epochs):
        reseed(loader, epoch)
        for batch in loader:
            step(model, batch, optimizer)
"""
    )


def test_evaluation_samplers_and_single_passes_are_fine():
    assert not findings(
        """
def evaluate(model, loader):
    with torch.no_grad():
        return [model(batch) for batch in loader]


def main(dataset, model, optimizer, epochs):
    val_loader = DataLoader(dataset, sampler=DS(dataset, shuffle=False))
    once = DataLoader(dataset, sampler=DS(dataset))
    for batch in once:
        step(model, batch, optimizer)
    for epoch in range(epochs):
        for batch in val_loader:
            step(model, batch, optimizer)
"""
    )


def test_a_framework_owns_the_loader():
    assert not findings(
        """
from accelerate import Accelerator


def main(dataset, model, optimizer, epochs):
    accelerator = Accelerator()
    loader = DataLoader(dataset, sampler=DS(dataset))
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(epochs):
        for batch in loader:
            step(model, batch, optimizer)
"""
    )


def test_a_sampler_handed_to_unknown_code_may_be_reseeded_there():
    assert not findings(
        """
from mylib import EpochHook


def main(dataset, model, optimizer, epochs):
    sampler = DS(dataset)
    hook = EpochHook(sampler)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        hook()
        for batch in loader:
            step(model, batch, optimizer)
"""
    )


def test_fix_reseeds_at_the_top_of_the_epoch_loop():
    from torchlint.config import Settings
    from torchlint.fixes import loop

    source = HEADER + """
def main(dataset, model, optimizer, epochs):
    train_sampler = DS(dataset)
    loader = DataLoader(dataset, sampler=train_sampler)
    for epoch in range(epochs):
        for batch in loader:
            step(model, batch, optimizer)
"""
    result = loop.fix_bytes(source.encode(), "t.py", Settings(select=("TL006",)), unsafe=True)
    assert "    for epoch in range(epochs):\n        train_sampler.set_epoch(epoch)\n        for batch in loader:" in result.fixed_text
    assert not [d for d in result.analysis.diagnostics if d.code == "TL006"]


def test_no_fix_when_the_loop_has_no_counter_or_the_sampler_may_be_none():
    found = lint(HEADER + """
def main(dataset, model, optimizer, epochs, distributed):
    sampler = DS(dataset) if distributed else None
    loader = DataLoader(dataset, sampler=sampler)
    for _ in range(epochs):
        for batch in loader:
            step(model, batch, optimizer)
""")
    assert [d.fix for d in found if d.code == "TL006"] == [None]


def test_fabric_and_lightning_loaders_are_reseeded_by_the_framework():
    assert not findings(
        """
import lightning as L


def with_fabric(dataset, model, optimizer, epochs):
    fabric = L.Fabric()
    loader = fabric.setup_dataloaders(DataLoader(dataset, sampler=DS(dataset)))
    for epoch in range(epochs):
        for batch in loader:
            step(model, batch, optimizer)


def with_trainer(dataset, module):
    loader = DataLoader(dataset, sampler=DS(dataset))
    L.Trainer(max_epochs=10).fit(module, loader)
"""
    )


def test_a_step_loop_restarting_its_iterator_counts_steps_not_epochs():
    # The loader's passes start where the exhausted iterator is re-created, not at each step:
    # neither the step counter nor the outer loop's counter numbers them.
    source = HEADER + """
def main(dataset, model, optimizer, epochs, steps_per_epoch):
    loader = DataLoader(dataset, sampler=DS(dataset))
    batches = iter(loader)
    for epoch in range(epochs):
        for step_index in range(steps_per_epoch):
            try:
                batch = next(batches)
            except StopIteration:
                batches = iter(loader)
                batch = next(batches)
            step(model, batch, optimizer)
"""
    (found,) = [d for d in lint(source) if d.code == "TL006"]
    assert "set_epoch(step_index)" not in found.message and "set_epoch(epoch)" not in found.message
    assert "number of passes so far" in found.message
    assert found.fix is None


def test_a_loader_wrapped_in_a_progress_bar_on_one_rank_only_is_still_iterated():
    found = findings(
        """
def fit_epoch(loader, model, optimizer, rank):
    if rank == 0:
        loader = progress(loader)
    for batch in loader:
        step(model, batch, optimizer)


def main(dataset, model, optimizer, epochs, rank):
    loader = DataLoader(dataset, batch_size=32, sampler=DS(dataset))
    for epoch in range(epochs):
        fit_epoch(loader, model, optimizer, rank)
"""
    )
    assert [line for line, _ in found] == [10]


def test_a_loop_picking_the_loader_each_time_round_is_a_phase_loop_not_an_epoch_loop():
    # `for loader in (train, val)` and `for phase in ...` over `loaders[phase]` choose which loader
    # the batches come from; the epoch loop is the one around them.
    seeded = findings(
        """
def main(dataset, val_set, model, optimizer, epochs):
    sampler = DS(dataset)
    val_loader = DataLoader(val_set)
    loaders = {"train": DataLoader(dataset, sampler=sampler), "val": val_loader}
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for loader in (loaders["train"], val_loader):
            for batch in loader:
                step(model, batch, optimizer)
        for phase in ("train", "val"):
            for batch in loaders[phase]:
                step(model, batch, optimizer)
"""
    )
    assert seeded == []
    (unseeded,) = findings(
        """
def main(dataset, val_set, model, optimizer, epochs):
    sampler = DS(dataset)
    train_loader = DataLoader(dataset, sampler=sampler)
    val_loader = DataLoader(val_set)
    for epoch in range(epochs):
        for loader in (train_loader, val_loader):
            for batch in loader:
                step(model, batch, optimizer)
"""
    )
    assert "sampler.set_epoch(epoch)" in unseeded[1] and "set_epoch(loader)" not in unseeded[1]
