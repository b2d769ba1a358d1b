"""The value layer: what expressions may be, and where values go (model/values/)."""

import textwrap

import libcst as cst

from torchlint.model import Model
from torchlint.model.values import Kind, Place


def build(source: str) -> Model:
    return Model(cst.parse_module(textwrap.dedent(source)))


def name_read(model: Model, name: str, occurrence: int = -1) -> cst.Name:
    """The ``occurrence``-th read of a plain name, in source order."""
    reads = sorted(model.reads_table[name], key=model.order)
    return reads[occurrence]


def kinds(model: Model, name: str, occurrence: int = -1) -> set[Kind]:
    return {v.kind for v in model.values.of(name_read(model, name, occurrence))}


def test_constructions_through_assignment_unpacking_and_helper_returns():
    model = build(
        """
        import torch
        import torchvision
        from torch.utils.data import DataLoader

        def make(ds):
            return DataLoader(ds, batch_size=4), torchvision.models.resnet18()

        loader, net = make([])
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        print(loader, net, device, opt)
        """
    )
    assert kinds(model, "loader") == {Kind.LOADER}
    assert kinds(model, "net") == {Kind.MODULE}
    assert kinds(model, "device") == {Kind.DEVICE}
    assert kinds(model, "opt") == {Kind.OPTIMIZER}


def test_parameters_take_the_values_their_call_sites_pass():
    model = build(
        """
        import torch.nn as nn

        def train(model, loader):
            print(model)

        def main(loader):
            train(nn.Linear(2, 2), loader)
        """
    )
    assert kinds(model, "model") == {Kind.MODULE}
    # main's own parameter has no call site in the file: unknown
    assert kinds(model, "loader", 0) == {Kind.UNKNOWN}


def test_a_function_handed_on_as_a_callback_has_unknown_parameters():
    model = build(
        """
        import torch.multiprocessing as mp
        import torch.nn as nn

        def worker(rank, model):
            print(model)

        worker(0, nn.Linear(2, 2))
        mp.spawn(worker, args=(nn.Linear(2, 2),))
        """
    )
    assert kinds(model, "model") == {Kind.UNKNOWN}


def test_attributes_of_self_and_conditional_expressions():
    model = build(
        """
        import torch
        from torch.utils.data.distributed import DistributedSampler

        class Trainer:
            def __init__(self, ds, distributed):
                self.sampler = DistributedSampler(ds) if distributed else None
                self.device = "cuda:0"

            def run(self):
                print(self.sampler, self.device)
        """
    )
    run = model.functions["run"][0]
    sampler, device = [arg.value for arg in run.body.body[0].body[0].value.args]
    assert {v.kind for v in model.values.of(sampler)} == {Kind.SAMPLER, Kind.NONE}
    assert {v.kind for v in model.values.of(device)} == {Kind.DEVICE}


def test_batches_and_their_elements_from_a_loader():
    model = build(
        """
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(torch.utils.data.TensorDataset(torch.zeros(8, 2)), batch_size=2)
        for step, (x, y) in enumerate(loader):
            print(x)
        for batch in loader:
            print(batch, batch["x"])
        first = next(iter(loader))
        print(first)
        """
    )
    x = model.values.of(name_read(model, "x"))
    assert {(v.kind, v.place) for v in x} == {(Kind.TENSOR, Place.HOST)}
    assert kinds(model, "batch", 0) == {Kind.BATCH}
    assert kinds(model, "first") == {Kind.BATCH}
    subscript = model.parent(name_read(model, "batch", 1))
    assert {v.kind for v in model.values.of(subscript)} == {Kind.TENSOR}


def test_reassignment_in_the_loop_wins_over_the_loop_target():
    model = build(
        """
        import torch
        from torch.utils.data import DataLoader

        def train(ds, device):
            for x, y in DataLoader(ds):
                x = x.to(device)
                print(x)
            for x, y in DataLoader(ds):
                print(x)
        """
    )
    moved, unmoved = (model.values.of(name_read(model, "x", i)) for i in (1, 2))
    assert {v.place for v in moved} == {Place.DEVICE}
    assert {v.place for v in unmoved} == {Place.HOST}


def test_a_value_that_depends_on_itself_settles():
    model = build(
        """
        import torch

        x = torch.zeros(3)
        for _ in range(3):
            x = x.float()
            x = x + 1
        print(x)
        """
    )
    assert kinds(model, "x") == {Kind.TENSOR}


def test_a_batch_moved_in_place_by_a_helper_is_no_longer_known_on_the_host():
    model = build(
        """
        from torch.utils.data import DataLoader

        def to_device(batch, device):
            for key in batch:
                batch[key] = batch[key].to(device)

        for batch in DataLoader([]):
            to_device(batch, "cuda")
            print(batch)
        """
    )
    assert {v.place for v in model.values.of(name_read(model, "batch"))} == {Place.UNKNOWN}


def test_moves_distinguish_devices_from_dtypes():
    model = build(
        """
        import torch
        t = torch.zeros(2)
        a = t.to("cuda")
        b = t.to(torch.float16)
        c = t.to(t.dtype)
        d = t.cpu()
        e = t.to(0)
        """
    )
    calls = {model.module.code_for_node(c): c for c in model.calls}
    target = model.values.placement.move_target
    assert target(calls['t.to("cuda")']) is Place.DEVICE
    assert target(calls["t.to(torch.float16)"]) is None
    assert target(calls["t.to(t.dtype)"]) is None
    assert target(calls["t.cpu()"]) is Place.HOST
    assert target(calls["t.to(0)"]) is Place.DEVICE


def test_module_fate_follows_aliases_helpers_and_hand_offs():
    model = build(
        """
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        def place(m):
            m.cuda()

        def main(x):
            moved = nn.Linear(2, 2)
            alias = moved
            place(alias)
            wrapped = nn.Linear(2, 2)
            ddp = DDP(wrapped)
            idle = nn.Linear(2, 2)
            idle(x)
        """
    )
    moved, wrapped, idle = [v for v in model.values.made(Kind.MODULE) if v.api == "torch.nn.Linear"]
    assert model.values.modules.fate(moved).moves and model.values.modules.fate(moved).accelerator
    assert model.values.modules.fate(wrapped).handed_off and not model.values.modules.fate(wrapped).moves
    fate = model.values.modules.fate(idle)
    assert not fate.moves and not fate.handed_off and len(fate.calls) == 1


def test_module_place_follows_the_order_of_moves():
    model = build(
        """
        import torch.nn as nn

        def export(x, device):
            net = nn.Linear(2, 2)
            net(x)
            net.to(device)
            net(x)
            net.cpu()
            net(x)
        """
    )
    net = model.values.made(Kind.MODULE)[0]
    calls = sorted(model.values.modules.fate(net).calls, key=model.order)
    assert [model.values.placement.module_place(net, call) for call in calls] == [Place.HOST, Place.DEVICE, Place.HOST]


def test_same_file_module_classes_and_their_state():
    model = build(
        """
        import torch
        import torch.nn as nn

        class Scale(nn.Module):
            def __init__(self, factor):
                super().__init__()
                self.factor = factor

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)

        class Trainer:
            def fit(self):
                pass
        """
    )
    classes = model.classes
    assert model.values.modules.class_kind(classes["Net"]) is Kind.MODULE
    assert model.values.modules.class_kind(classes["Trainer"]) is Kind.INSTANCE
    assert model.values.modules.holds_state(classes["Net"]) and not model.values.modules.holds_state(classes["Scale"])
    assert model.values.modules.plain_class(classes["Trainer"]) and not model.values.modules.plain_class(classes["Net"])


def test_samplers_know_whether_they_shuffle_and_which_loader_they_feed():
    model = build(
        """
        from torch.utils.data import BatchSampler, DataLoader
        from torch.utils.data.distributed import DistributedSampler

        SHUFFLE = False

        def make(dataset, shuffle):
            return DistributedSampler(dataset, shuffle=shuffle)

        train = DistributedSampler([])
        evaluation = DistributedSampler([], shuffle=False)
        unknown = DistributedSampler([], shuffle=flag)
        constant = DistributedSampler([], shuffle=SHUFFLE)
        passed = make([], False)
        spread = DistributedSampler([], **options)
        a = DataLoader([], sampler=train)
        b = DataLoader([], batch_sampler=BatchSampler(evaluation, 4, False))
        """
    )
    samplers = [v for v in model.values.made(Kind.SAMPLER) if v.epoch_seeded]
    assert [v.shuffles for v in samplers] == [False, True, False, True, False, None]
    _, train, evaluation, *_ = samplers
    a, b = model.values.made(Kind.LOADER)
    assert model.values.pipeline.loader_samplers(a) == {train}
    assert evaluation in model.values.pipeline.loader_samplers(b)


def test_a_class_held_in_a_variable_makes_what_the_class_makes():
    model = build(
        """
        from torch import nn
        from torch.utils.data import DistributedSampler, RandomSampler

        class Net(nn.Module):
            pass

        Sampler = RandomSampler if rank == -1 else DistributedSampler
        sampler = Sampler(dataset, shuffle=True)
        Model = Net
        net = Model()
        factory = make_factory()
        other = factory()
        print(sampler, net, other)
        """
    )
    samplers = model.values.of(name_read(model, "sampler"))
    assert {v.api for v in samplers} == {"torch.utils.data.RandomSampler", "torch.utils.data.DistributedSampler"}
    assert {v.kind for v in samplers} == {Kind.SAMPLER}
    assert kinds(model, "net") == {Kind.MODULE}
    assert kinds(model, "other") == {Kind.UNKNOWN}


def test_dict_entries_with_constant_keys():
    model = build(
        """
        from torch.utils.data import DataLoader

        loaders = {"train": DataLoader(a), "val": DataLoader(b)}
        print(loaders["train"], loaders.get("val"), loaders[split])
        cache = {"train": DataLoader(a)}
        cache["train"] = wrap(cache["train"])
        print(cache["train"])
        shared = {"train": DataLoader(a)}
        register(shared)
        print(shared["train"])

        class Runner:
            def __init__(self):
                self.data = {}
                self.data["train"] = DataLoader(a)

            def run(self):
                print(self.data["train"], self.data["test"])
        """
    )
    train, val = model.values.made(Kind.LOADER)[:2]
    prints = [c for c in model.calls if isinstance(c.func, cst.Name) and c.func.value == "print"]
    first = [model.values.of(arg.value) for arg in prints[0].args]
    assert first[:2] == [{train}, {val}] and {v.kind for v in first[2]} == {Kind.UNKNOWN}
    assert {v.kind for v in model.values.of(prints[1].args[0].value)} == {Kind.LOADER, Kind.UNKNOWN}
    assert Kind.UNKNOWN in {v.kind for v in model.values.of(prints[2].args[0].value)}
    entry, missing = (model.values.of(arg.value) for arg in prints[3].args)
    assert {v.kind for v in entry} == {Kind.LOADER} and {v.kind for v in missing} == {Kind.UNKNOWN}


def test_a_same_file_generator_over_a_loader_is_an_iterator_over_it():
    model = build(
        """
        from torch.utils.data import DataLoader

        def forever(loader):
            while True:
                for batch in loader:
                    yield batch

        def repeat(loader):
            while True:
                yield from loader

        def augmented(loader):
            for batch in loader:
                yield flip(batch)

        train, extra = DataLoader(a), DataLoader(b)
        it, more, other = forever(train), repeat(extra), augmented(train)
        batch = next(it)
        print(it, more, other, batch)
        """
    )
    train, extra = model.values.made(Kind.LOADER)
    [it] = model.values.of(name_read(model, "it"))
    [more] = model.values.of(name_read(model, "more"))
    assert (it.kind, it.origin, more.kind, more.origin) == (Kind.ITERATOR, train, Kind.ITERATOR, extra)
    assert kinds(model, "other") == {Kind.UNKNOWN}
    [batch] = model.values.of(name_read(model, "batch"))
    assert batch.kind is Kind.BATCH and batch.origin is train


def test_type_guards_make_a_name_a_tensor_in_their_branch():
    model = build(
        """
        import torch

        def move(value, obj, device):
            if torch.is_tensor(value):
                value.to(device)
            if isinstance(obj, (torch.Tensor, torch.nn.Parameter)) and obj.dim() > 1:
                obj.to(device)
            if isinstance(obj, torch.Tensor):
                obj = convert(obj)
                obj.to(device)
            value.to(device)
        """
    )
    assert [kinds(model, "value", i) for i in (1, 2)] == [{Kind.TENSOR}, {Kind.UNKNOWN}]
    assert kinds(model, "obj", 2) == {Kind.TENSOR}
    assert kinds(model, "obj", -1) == {Kind.UNKNOWN}


def test_names_bound_to_wrappers_iterate_the_loader():
    model = build(
        """
        from torch.utils.data import DataLoader
        from tqdm import tqdm
        from accelerate.data_loader import prepare_data_loader
        from helpers import prefetch

        loader = DataLoader(ds)
        progress = tqdm(loader)
        fast = prefetch(loader, "cuda")
        owned = prepare_data_loader(loader)
        for a in progress:
            print(a)
        for b in fast:
            print(b)
        for c in owned:
            print(c)
        """
    )
    [loader] = model.values.made(Kind.LOADER)
    assert [{v.origin for v in model.values.of(name_read(model, n))} for n in ("a", "b")] == [{loader}, {loader}]
    assert kinds(model, "c") == {Kind.UNKNOWN}
    assert [loop.loaders for loop in model.loops.batch_loops()] == [frozenset({loader})] * 2


def test_ignite_passes_loader_batches_to_the_step_function():
    model = build(
        """
        from ignite.engine import Engine
        from torch.utils.data import DataLoader

        loader = DataLoader(ds)

        def step(engine, batch):
            x, y = batch
            return x

        def evaluate(engine, batch):
            return batch

        Engine(step).run(loader, max_epochs=3)
        evaluator = Engine(evaluate)
        run_later(evaluate)
        """
    )
    [loader] = model.values.made(Kind.LOADER)
    [x] = model.values.of(name_read(model, "x"))
    assert x.kind is Kind.TENSOR and x.origin is loader and x.place is Place.HOST
    assert Kind.UNKNOWN in {v.kind for v in model.values.of(name_read(model, "batch"))}
