"""Loop structure and same-file function summaries (model/loops.py, model/functions.py)."""

import textwrap

import libcst as cst

from torchlint.model import Model
from torchlint.model.values import Kind


def build(source: str) -> Model:
    return Model(cst.parse_module(textwrap.dedent(source)))


def loop_lines(model: Model, loops) -> list[str]:
    return [model.module.code_for_node(loop.node).splitlines()[0].strip() for loop in loops]


def test_batch_loops_through_wrappers_and_next():
    model = build(
        """
        import itertools
        from torch.utils.data import DataLoader
        from tqdm import tqdm

        loader = DataLoader([])
        other = DataLoader([])
        for i, batch in enumerate(loader):
            pass
        for batch in tqdm(loader, desc="train"):
            pass
        for a, b in zip(loader, other):
            pass
        for batch in itertools.cycle(loader):
            break
        it = iter(loader)
        while True:
            batch = next(it)
        for step in range(10):
            batch = next(it)
        for value in [1, 2, 3]:
            pass
        """
    )
    assert loop_lines(model, model.loops.batch_loops()) == [
        "for i, batch in enumerate(loader):",
        'for batch in tqdm(loader, desc="train"):',
        "for a, b in zip(loader, other):",
        "for batch in itertools.cycle(loader):",
        "while True:",
        "for step in range(10):",
    ]
    zipped = model.loops.batch_loops()[2]
    assert {v.kind for v in zipped.loaders} == {Kind.LOADER} and len(zipped.loaders) == 2


def test_a_framework_prepared_loader_is_still_iterated_per_batch():
    model = build(
        """
        from accelerate import Accelerator
        accelerator = Accelerator()
        loader = accelerator.prepare(make_loader())
        for batch in loader:
            pass
        """
    )
    [loop] = model.loops.batch_loops()
    assert {v.kind for v in loop.loaders} == {Kind.MANAGED}


def test_epoch_loops_directly_and_through_helpers_with_the_loader_passed():
    model = build(
        """
        from torch.utils.data import DataLoader

        def run_epoch(model, loader, optimizer):
            for batch in loader:
                model(batch).sum().backward()
                optimizer.step()

        def evaluate(model, loader):
            return [model(batch) for batch in loader]

        def main(model, optimizer):
            train_loader = DataLoader([], shuffle=True)
            val_loader = DataLoader([])
            for epoch in range(10):
                run_epoch(model, train_loader, optimizer)
                for batch in val_loader:
                    model(batch)
        """
    )
    [epoch] = model.loops.epoch_loops()
    assert epoch.variable == "epoch"
    train_loader, val_loader = model.values.made(Kind.LOADER)
    reached = {loop.node: loaders for loop, loaders in epoch.batch_loops}
    assert set(reached.values()) == {frozenset({train_loader}), frozenset({val_loader})}
    trains = {next(iter(loaders)): model.loops.trains(loop) for loop, loaders in epoch.batch_loops}
    assert trains == {train_loader: True, val_loader: False}


def test_a_loop_that_recreates_the_iterator_starts_a_pass_each_time():
    model = build(
        """
        from torch.utils.data import DataLoader

        loader = DataLoader([], shuffle=True)
        it = iter(loader)
        while step < 100:
            try:
                batch = next(it)
            except StopIteration:
                it = iter(loader)
                batch = it.__next__()
        for epoch in range(3):
            fresh = iter(loader)
            for step in range(10):
                batch = next(fresh)
        once = iter(loader)
        for step in range(10):
            batch = next(once)
        for batch in iter(loader):
            pass
        """
    )
    [loader] = model.values.made(Kind.LOADER)
    epochs = {loop_lines(model, [epoch])[0]: epoch for epoch in model.loops.epoch_loops()}
    assert set(epochs) == {"while step < 100:", "for epoch in range(3):"}
    for epoch in epochs.values():
        assert [loaders for _, loaders in epoch.batch_loops if all(v.kind is Kind.LOADER for v in loaders)] == [
            frozenset({loader})
        ]
    assert epochs["while step < 100:"].variable is None


def test_a_loop_trains_through_the_projects_own_step_method():
    model = build(
        """
        from torch.utils.data import DataLoader
        from factory import create_model, create_probe

        class GanModel:
            def optimize_parameters(self):
                self.loss.backward()
                self.optimizer.step()

            def log_stats(self):
                print(self.loss)

        class Probe:
            def log_stats(self):
                self.opt.step()

        loader = DataLoader([])
        model = create_model()
        probe = create_probe()
        for batch in loader:
            model.optimize_parameters()
        for batch in loader:
            model.log_stats()
            probe.train()
        """
    )
    first, second = model.loops.batch_loops()
    assert model.loops.trains(first) and not model.loops.trains(second)


def test_a_loop_without_batches_is_not_an_epoch_loop():
    model = build(
        """
        for i in range(3):
            for j in range(3):
                print(i, j)
        """
    )
    assert model.loops.batch_loops() == [] and model.loops.epoch_loops() == []


def test_call_sites_offsets_and_arguments():
    model = build(
        """
        class Trainer:
            def __init__(self, model, loader):
                self.model = model

            def fit(self, epochs, verbose=False):
                self.step(1)

            def step(self, n):
                pass

        def helper(a, b=2):
            return a

        trainer = Trainer("m", "l")
        trainer.fit(3)
        helper(1)
        helper(1, b=5)
        """
    )
    summaries = model.summaries
    fit = summaries.method(model.classes["Trainer"], "fit")
    [(call, offset)] = summaries.call_sites(fit)
    assert offset == 1 and model.module.code_for_node(summaries.argument(fit, call, offset, "epochs")) == "3"
    assert model.module.code_for_node(summaries.argument(fit, call, offset, "verbose")) == "False"
    helper = model.functions["helper"][0]
    assert [model.module.code_for_node(summaries.argument(helper, c, o, "b")) for c, o in summaries.call_sites(helper)] == [
        "2",
        "5",
    ]
    init = summaries.method(model.classes["Trainer"], "__init__")
    assert len(summaries.call_sites(init)) == 1


def test_unknown_decorators_and_callbacks_hide_call_sites():
    model = build(
        """
        import hydra

        @hydra.main(config_path=".")
        def main(cfg):
            pass

        def worker(rank):
            pass

        main()
        run(worker)
        """
    )
    assert model.summaries.call_sites(model.functions["main"][0]) is None
    assert model.summaries.call_sites(model.functions["worker"][0]) is None


def test_summaries_of_helpers_that_move_or_reseed_their_parameters():
    model = build(
        """
        def to_device(batch, device):
            for k in batch:
                batch[k] = batch[k].to(device)

        def place(module, device):
            module.to(device)

        def place_twice(m, device):
            place(m, device)

        def reseed(loader, sampler, epoch):
            loader.sampler.set_epoch(epoch)
            if sampler is not None:
                sampler.set_epoch(epoch)

        def reseed_through(dl, epoch):
            reseed(dl, None, epoch)
        """
    )
    summaries = model.summaries
    fn = {name: defs[0] for name, defs in model.functions.items()}
    assert summaries.moved_params(fn["to_device"]) == {"batch"}
    assert summaries.moved_params(fn["place_twice"]) == {"m"}
    assert summaries.epoch_seeded_params(fn["reseed"]) == {"loader", "sampler"}
    assert summaries.epoch_seeded_params(fn["reseed_through"]) == {"dl"}


def test_reaching_bindings_are_flow_ordered():
    model = build(
        """
        def f(flag):
            x = 1
            if flag:
                x = 2
            print(x)
            x = 3
            print(x)
            for x in range(3):
                print(x)
        """
    )
    reads = sorted(model.reads_table["x"], key=model.order)
    statements = [[model.module.code_for_node(b.statement).strip() for b in model.reaching(r)] for r in reads]
    assert sorted(statements[0]) == ["x = 1", "x = 2"]
    assert statements[1] == ["x = 3"]
    assert len(statements[2]) == 1 and statements[2][0].startswith("for x in range(3):")
