"""Module summaries: what a function of another module does to its arguments, read off that
module's own tree (outline from CPython's parser, facts from the semantic model), followed through
re-exports and the modules it calls in turn."""

from __future__ import annotations

import pickle
from pathlib import Path

import libcst as cst

import torchlint.model as model_module
from torchlint import engine, runner
from torchlint.config import ConfigResolver
from torchlint.model import Model
from torchlint.project import index as project_index
from torchlint.project.outline import outline
from torchlint.project.summary import ClassRef, FunctionSummary

HELPERS = '''\
import torch
from torch.utils.data import DataLoader, DistributedSampler

from .moves import to_device


def build_loader(dataset, batch_size=32):
    sampler = DistributedSampler(dataset, shuffle=True)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


def prepare(model, device=torch.device("cuda")):
    return to_device(model, device)


def train(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()


def evaluate(model, loader):
    for x, y in loader:
        model(x)


class Runner:
    def __init__(self, model, loader, *, epochs=3):
        self.model = model
        self.loader = loader
        self.epochs = epochs

    def run(self, optimizer):
        for epoch in range(self.epochs):
            for x, y in self.loader:
                self.model(x).sum().backward()
                optimizer.step()


@torch.no_grad()
def score(model, loader, device, keep=print):
    model.eval()
    for x, y in loader:
        keep(model(x.to(device)))
'''

MOVES = "import torch\n\n\ndef to_device(module, device):\n    module.to(device)\n    return module\n"


def view_of(tmp_path: Path, source: str, helpers: str = HELPERS) -> project_index.FileView:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .helpers import build_loader, prepare, train, evaluate, Runner, score\n")
    (tmp_path / "pkg" / "helpers.py").write_text(helpers)
    (tmp_path / "pkg" / "moves.py").write_text(MOVES)
    (tmp_path / "train.py").write_text(source)
    model = Model(cst.parse_module(source))
    view = project_index.FileView.for_file(project_index.Index(), str(tmp_path / "train.py"), model)
    model.project = view
    return view


def _folder(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def looked_up(view: project_index.FileView, name: str):
    call = next(c for c in view.model.calls if cst.Module([]).code_for_node(c.func) == name)
    return view.lookup(call.func)


SOURCE = "import pkg\nfrom pkg import build_loader, prepare, train, evaluate, Runner, score\n" + "".join(
    f"{name}()\n" for name in ("build_loader", "prepare", "train", "evaluate", "Runner", "score", "pkg.train")
)


def test_function_facts_through_a_package_reexport(tmp_path):
    view = view_of(tmp_path, SOURCE)
    train = looked_up(view, "train")
    assert isinstance(train, FunctionSummary) and train.params == ("model", "loader", "optimizer", "epochs")
    assert looked_up(view, "pkg.train") is train
    (epoch,) = train.epoch_loops
    assert epoch.trains_on == {"loader"} and epoch.seeds == {"loader"} and epoch.variable == "epoch"
    assert epoch.where.line == 17 and epoch.where.path.endswith("helpers.py")
    assert [(loop.source, loop.trains) for loop in train.batch_loops] == [("loader", True)]
    assert [(loop.source, loop.trains) for loop in looked_up(view, "evaluate").batch_loops] == [("loader", False)]
    assert train.seeded == {"loader"}


def test_returns_defaults_and_moves_followed_into_the_next_module(tmp_path):
    view = view_of(tmp_path, SOURCE)
    loader = looked_up(view, "build_loader").returns
    assert (loader.kind, loader.sampler_shuffles, loader.sampler_seeded) == ("loader", True, True)
    assert loader.sampler_api.endswith("DistributedSampler")
    prepare = looked_up(view, "prepare")
    assert dict(prepare.device_defaults) == {"device": 'torch.device("cuda")'}
    assert prepare.moved == {"model"}  # through moves.to_device, a module further
    assert {path.rsplit("/", 1)[-1] for path in view.used} == {"__init__.py", "helpers.py", "moves.py"}


def test_a_fact_past_the_returns_is_read_when_first_asked_with_the_modules_it_consults(tmp_path):
    helpers = HELPERS + "\n\ndef place(model, device):\n    to_device(model, device)\n"
    view = view_of(tmp_path, "from pkg.helpers import place\nplace()\n", helpers)
    place = looked_up(view, "place")
    assert place.returns is None and not place.facts_read
    assert not any(path.endswith("moves.py") for path in view.used)
    assert place.moved == {"model"}  # through moves.to_device: read now
    assert any(path.endswith("moves.py") for path in view.used)
    assert pickle.loads(pickle.dumps(place)) == place and place.facts_read


def test_a_module_checked_before_a_file_importing_it_is_not_parsed_again_for_its_summary(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("")
    net = "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(2, 2)\n"
    (tmp_path / "a_net.py").write_text(net)
    (tmp_path / "b_train.py").write_text("import torch\nfrom a_net import Net\n\nmodel = Net()\nmodel(torch.ones(2))\n")
    parsed: list[str] = []
    real = engine.parse
    monkeypatch.setattr(engine, "parse", lambda text, path: parsed.append(Path(path).name) or real(text, path))
    list(runner.check_files([tmp_path / "a_net.py", tmp_path / "b_train.py"], ConfigResolver(), runner.RunOptions(jobs=1, cache=False)))
    assert parsed == ["a_net.py", "b_train.py"]


def test_a_kept_tree_no_summary_read_is_forgotten_before_one_a_summary_read(tmp_path, monkeypatch):
    monkeypatch.setattr(project_index, "_TREE_BYTES", 30)
    index = project_index.Index()
    text = "x = 1\n" * 2
    read, unread, new = (project_index._Module(tmp_path / f"{name}.py", name, text, cst.parse_module(text)) for name in "abc")
    index._keep(read)
    index._reader(read, 0, ())
    index._keep(unread)
    index._keep(new)
    assert list(index._modules) == [str(tmp_path / "a.py"), str(tmp_path / "c.py")]


def test_a_sampler_shuffle_the_caller_passes_in_is_unknown(tmp_path):
    helpers = HELPERS.replace("def build_loader(dataset, batch_size=32):", "def build_loader(dataset, batch_size=32, shuffle=True):")
    view = view_of(tmp_path, SOURCE, helpers.replace("(dataset, shuffle=True)", "(dataset, shuffle=shuffle)"))
    loader = looked_up(view, "build_loader").returns
    assert (loader.kind, loader.sampler_shuffles, loader.sampler_seeded) == ("loader", None, True)


def test_modules_a_function_only_runs_and_where_it_places_data(tmp_path):
    view = view_of(tmp_path, SOURCE)
    score = looked_up(view, "score")  # under a decorator the model knows (torch.no_grad)
    assert score.drives == {"model", "keep"} and score.places_on == {"device"} and not score.places_itself
    assert score.where.line == 44 and not score.feeds  # it moves the batches
    assert looked_up(view, "evaluate").feeds == (("model", "loader"),)
    assert looked_up(view, "train").drives == {"model"} and not looked_up(view, "train").places_on
    assert not looked_up(view, "prepare").drives  # it moves the model
    assert not view.method(looked_up(view, "Runner"), "__init__").drives  # it stores the model


def test_the_mode_a_function_always_leaves_its_module_in(tmp_path):
    view = view_of(tmp_path, SOURCE)
    assert looked_up(view, "score").exit_modes == (("model", "eval"),)
    assert looked_up(view, "train").exit_modes == ()  # it sets no mode
    helpers = HELPERS.replace("    model.eval()\n", "    if keep is print:\n        model.eval()\n")
    assert looked_up(view_of(_folder(tmp_path, "maybe"), SOURCE, helpers), "score").exit_modes == ()  # only on some paths
    helpers = HELPERS.replace("        keep(model(x.to(device)))\n", "        keep(model(x.to(device)))\n    model.train(True)\n")
    assert looked_up(view_of(_folder(tmp_path, "restored"), SOURCE, helpers), "score").exit_modes == (("model", "train"),)


def test_a_class_keeps_what_its_constructor_stores(tmp_path):
    view = view_of(tmp_path, SOURCE)
    runner = looked_up(view, "Runner")
    assert isinstance(runner, ClassRef)
    assert runner.klass.stored == (("model", "self.model"), ("loader", "self.loader"), ("epochs", "self.epochs"))
    run = view.method(runner, "run")
    assert [epoch.trains_on for epoch in run.epoch_loops] == [{"self.loader"}] and run.offset == 1


def test_summaries_are_plain_data(tmp_path):
    view = view_of(tmp_path, SOURCE)
    train = looked_up(view, "train")
    assert pickle.loads(pickle.dumps(train)) == train


def test_an_outline_leaves_out_names_bound_twice():
    text = "from a import f\nf = 1\ndef g(): pass\nclass C:\n    def __init__(self, x):\n        self.x = x\n"
    found = outline(text, "/m.py", "d")
    assert found.functions == {"g"} and set(found.classes) == {"C"} and "f" in found.other_names and not found.imports
    assert found.classes["C"].stored == (("x", "self.x"),)


FOLLOWING = '''\
import torch

SHIFT = torch.zeros(3)


def standardize(images, eps=1e-6):
    mean = images.new_tensor([0.5, 0.5, 0.5]).view(1, -1, 1, 1)
    centred = images.float() / 255.0 - mean
    return centred / (centred.std() + eps)


def moved(images, device):
    return images.to(device) / 255.0


def shifted(images):
    return images - SHIFT


def mixed(images, noise):
    return images + noise


def size_of(images):
    return images.size(0)
'''


def test_a_tensor_returned_where_its_parameter_is(tmp_path):
    names = ("standardize", "moved", "shifted", "mixed", "size_of")
    source = "from pkg.helpers import " + ", ".join(names) + "\n" + "".join(f"{name}()\n" for name in names)
    view = view_of(tmp_path, source, FOLLOWING)
    returns = {name: looked_up(view, name).returns for name in names}
    assert (returns["standardize"].kind, returns["standardize"].parameter) == ("tensor", "images")
    # a move, a tensor from outside the function, two parameters, a number: nothing followed
    assert all(returns[name] is None for name in names[1:])


def test_a_parameter_given_back_unchanged_is_the_callers_argument(tmp_path):
    helpers = "import torch\n\n\ndef restore(model, path):\n    model.load_state_dict(torch.load(path, map_location='cpu'))\n    return model\n"
    view = view_of(tmp_path, "from pkg.helpers import restore\nrestore()\n", helpers)
    returns = looked_up(view, "restore").returns
    assert (returns.kind, returns.parameter, returns.only_read) == ("argument", "model", True)
    moving = helpers.replace("    return model", "    model.cuda()\n    return model")
    (tmp_path / "moving").mkdir()
    assert not looked_up(view_of(tmp_path / "moving", "from pkg.helpers import restore\nrestore()\n", moving), "restore").returns.only_read


def test_a_loader_returned_with_host_batches(tmp_path):
    view = view_of(tmp_path, SOURCE)
    assert looked_up(view, "build_loader").returns.host_batches


PAIR = '''\
from torch.utils.data import DataLoader, DistributedSampler, RandomSampler


def build_pair(train_set, held_out, rank):
    order = RandomSampler(train_set) if rank == -1 else DistributedSampler(train_set)
    return DataLoader(train_set, sampler=order), DataLoader(held_out)


def build_mixed(train_set, rank):
    return DataLoader(train_set), rank + 1
'''


def test_each_loader_of_a_returned_tuple_and_the_sampler_only_distributed_runs_get(tmp_path):
    view = view_of(tmp_path, "from pkg.helpers import build_pair, build_mixed\nbuild_pair()\nbuild_mixed()\n", PAIR)
    pair = looked_up(view, "build_pair").returns
    assert pair.kind == "tuple" and [element.kind for element in pair.elements] == ["loader", "loader"]
    trained, held_out = pair.elements
    # the run without a rank gets a RandomSampler, which has no set_epoch: the sampler that must be
    # re-seeded is the distributed one, and only some runs have it
    assert trained.sampler_api.endswith("DistributedSampler") and trained.sampler_seeded and trained.sampler_optional
    assert held_out.sampler_api is None
    mixed = looked_up(view, "build_mixed").returns
    assert mixed.kind == "tuple" and mixed.elements[0].kind == "loader" and mixed.elements[1] is None


def test_a_returned_sampler_with_set_epoch_and_the_parameter_that_decides_its_shuffle(tmp_path):
    helpers = (
        "from torch.utils.data import DistributedSampler, RandomSampler\n\n\n"
        "def pick(dataset, shuffle, distributed):\n"
        "    if distributed:\n        return DistributedSampler(dataset, shuffle=shuffle)\n"
        "    return RandomSampler(dataset)\n"
    )
    view = view_of(tmp_path, "from pkg.helpers import pick\npick()\n", helpers)
    sampler = looked_up(view, "pick").returns
    assert (sampler.kind, sampler.sampler_seeded, sampler.sampler_optional) == ("sampler", True, True)
    assert sampler.sampler_api.endswith("DistributedSampler") and sampler.shuffle_parameter == "shuffle"


def test_a_per_process_loader_built_from_a_batch_size_the_caller_passes(tmp_path):
    helpers = (
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def per_rank(dataset, cfg, world):\n"
        "    return DataLoader(dataset, batch_size=cfg.batch, sampler=DistributedSampler(dataset))\n\n\n"
        "def split_here(dataset, cfg, world):\n"
        "    return DataLoader(dataset, batch_size=cfg.batch // world, sampler=DistributedSampler(dataset))\n\n\n"
        "def one_process(dataset, cfg):\n"
        "    return DataLoader(dataset, batch_size=cfg.batch, shuffle=True)\n"
    )
    source = "from pkg.helpers import per_rank, split_here, one_process\nper_rank()\nsplit_here()\none_process()\n"
    view = view_of(tmp_path, source, helpers)
    [fact] = looked_up(view, "per_rank").loader_batch_sizes
    assert (fact.parameter, fact.attribute) == ("cfg", "batch") and fact.where.line == 4
    # divided by the helper itself; a loader without a per-rank sampler feeds one process
    assert looked_up(view, "split_here").loader_batch_sizes == looked_up(view, "one_process").loader_batch_sizes == ()


def test_each_tree_is_walked_once_whatever_models_it_gets(tmp_path, monkeypatch):
    """The models of a module the index summarises (one per summary level) and its own check's
    model, which takes its tree over, share the one pass of the first: each tree is walked once."""
    walked = []
    build = model_module._Builder.build
    monkeypatch.setattr(model_module._Builder, "build", lambda builder: (walked.append(builder.model.module), build(builder))[1])
    monkeypatch.setattr(project_index, "_SHARED", None)
    view_of(tmp_path, "import torch\n" + SOURCE)
    walked.clear()
    for name in ("train.py", "pkg/helpers.py"):
        engine.analyze((tmp_path / name).read_bytes(), str(tmp_path / name))
    summarised = project_index.shared()._modules[str(tmp_path / "pkg" / "helpers.py")]
    assert summarised.readers and summarised.handed_over
    assert len(walked) == len({id(tree) for tree in walked}) == 3  # train.py, helpers.py, moves.py


def test_a_model_taking_over_a_pass_has_every_table_the_pass_filled():
    """What the one pass fills is taken over whole (a table left out would be empty there)."""
    built = Model(cst.parse_module(HELPERS))
    taking = Model(built.module, like=built)
    for name, value in vars(built).items():
        assert vars(taking)[name] is value or vars(taking)[name] == value or not value, name


def test_the_index_keeps_trees_by_the_bytes_of_their_source(tmp_path, monkeypatch):
    """Many small modules stay, and a large one pushes out as many of the oldest as it needs."""
    monkeypatch.setattr(project_index, "_TREE_BYTES", 400)
    index = project_index.Index()
    for n in range(40):
        index._module(tmp_path / f"m{n}.py", "x = 1\n", f"small{n}")
    assert len(index._modules) == 40
    index._module(tmp_path / "big.py", "y = 2\n" * 40, "big")
    assert list(index._modules)[-1] == str(tmp_path / "big.py") and len(index._modules) == 27
