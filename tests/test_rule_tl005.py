"""TL005 lr-out-of-range: where the value comes from, when it is not the lr that trains, options."""

from __future__ import annotations

import inspect
import textwrap
import warnings

import pytest

from torchlint.config import ConfigError, Settings, settings_from_table
from torchlint.knowledge.optimizers import DEFAULT_LR_RANGES, OPTIMIZERS

from conftest import lint

# A network of two layers: one linear map alone is held to a wider range (see test_one_linear_map...).
HEADER = "import argparse\nimport torch\nfrom torch import nn, optim\nmodel = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n"


def tl005(body: str, settings: Settings | None = None):
    source = HEADER + textwrap.dedent(body)
    return [d for d in lint(source, settings=settings) if d.code == "TL005"]


def located(body: str) -> list[tuple[int, int]]:
    """(line within body, column) of each finding."""
    offset = HEADER.count("\n")
    return [(d.line - offset, d.column) for d in tl005(body)]


@pytest.mark.parametrize(
    "body",
    [
        "opt = torch.optim.Adam(model.parameters(), lr=10)\n",
        "opt = optim.AdamW(model.parameters(), 5.0)\n",  # positional
        "LR = 5e3\nopt = torch.optim.SGD(model.parameters(), lr=LR / 10)\n",  # arithmetic, 500
        "opt = torch.optim.RMSprop(model.parameters(), lr=-0.5 * -1)\n",
        "cfg = {'optim': {'lr': 3.0}}\nopt = torch.optim.Adam(model.parameters(), lr=cfg['optim']['lr'])\n",
        "from torch.optim.adamw import AdamW as AW\nopt = AW(model.parameters(), lr=1e-9)\n",
        "cls = torch.optim.NAdam\nopt = cls(model.parameters(), lr=2)\n",
        "opt = torch.optim.SGD([{'params': model.parameters(), 'lr': 100}], lr=0.1)\n",
        "p = argparse.ArgumentParser()\np.add_argument('--lr', type=float, default='3e4')\n"
        "args = p.parse_args()\nopt = torch.optim.Adam(model.parameters(), lr=args.lr)\n",
        "from dataclasses import dataclass\n@dataclass\nclass Cfg:\n    lr: float = 0.5\n"
        "cfg = Cfg()\nopt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)\n",
    ],
)
def test_reports_an_out_of_range_constant(body):
    assert len(tl005(body)) == 1


@pytest.mark.parametrize(
    "params",
    [
        "filter(lambda p: p.requires_grad, model.parameters())",
        "[p for n, p in model.named_parameters() if 'bias' not in n]",
        "timm_utils.param_groups_weight_decay(model, 0.05)",
        "trainable",  # bound below to the model's parameters
    ],
)
def test_weights_reach_the_optimizer_in_many_forms(params):
    body = f"trainable = list(model.parameters())\nopt = torch.optim.AdamW({params}, lr=2.0)\n"
    assert len(tl005(body)) == 1


def test_optimising_data_tensors_directly_is_not_weight_training():
    """Test-time optimisation of latents or images (style transfer, guidance) uses step sizes on
    the data's scale."""
    body = "latents = torch.nn.Parameter(torch.randn(4, 64, 64))\nopt = torch.optim.Adam([latents], lr=0.2)\n"
    assert tl005(body) == []
    assert tl005("def refine(image):\n    return torch.optim.Adam([image.requires_grad_()], lr=0.5)\n") == []


def test_points_at_the_lr_argument_and_says_what_why_and_fix():
    body = "LEARNING_RATE = 5.0\nopt = torch.optim.AdamW(\n    model.parameters(),\n    lr=LEARNING_RATE,\n)\n"
    (finding,) = tl005(body)
    assert (finding.line - HEADER.count("\n"), finding.column) == (4, 5)
    assert finding.message == (
        "AdamW learning rate 5 (from LEARNING_RATE) is above the adam range 1e-07 to 0.1: steps this large "
        "make the loss diverge or turn NaN; use a value in range (AdamW's default is 0.001), or widen "
        "[tool.torchlint.lr] adam if intended"
    )
    assert "\n" not in finding.message


def test_a_too_small_rate_says_the_model_does_not_learn():
    (finding,) = tl005("opt = torch.optim.SGD(model.parameters(), lr=1e-9)\n")
    assert "below the sgd range" in finding.message and "does not learn" in finding.message


def test_positional_lr_and_parameter_groups_are_located_at_the_value():
    assert located("opt = torch.optim.RMSprop(model.parameters(), 0.5)\n") == [(1, 47)]
    assert located("opt = torch.optim.SGD([\n    {'params': model.parameters(), 'lr': 100},\n])\n") == [(2, 36)]


@pytest.mark.parametrize(
    "body",
    [
        "opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n",
        "opt = torch.optim.SGD(model.parameters(), lr=1.6)\n",  # large-batch ImageNet
        "opt = torch.optim.SGD(model.parameters(), lr=30)\n",  # AWD-LSTM language model
        "opt = torch.optim.LBFGS(model.parameters(), lr=1)\n",
        "opt = torch.optim.Adadelta(model.parameters(), lr=1.0)\n",
        "opt = torch.optim.Adam(model.parameters(), lr=3e-4)\n",
        "opt = torch.optim.Adam(model.parameters())\n",
        "opt = torch.optim.Adam(model.parameters(), lr=0)\n",  # placeholder for a schedule
        "def build(lr):\n    return torch.optim.Adam(model.parameters(), lr=lr)\n",
        "import os\nopt = torch.optim.Adam(model.parameters(), lr=float(os.environ['LR']))\n",
        "opt = torch.optim.Adam(model.parameters(), **{'lr': 10})\n",
        "opt = some_lib.Adam(model.parameters(), lr=10)\n",  # not torch.optim
    ],
)
def test_silent_for_normal_default_and_unknown_rates(body):
    assert tl005(body) == []


def test_unit_tests_are_not_training_runs():
    assert tl005("import pytest\ndef test_step():\n    opt = torch.optim.Adam(model.parameters(), lr=1.0)\n") == []


def test_an_lr_that_a_scheduler_or_the_code_replaces_is_not_reported():
    adam = "opt = torch.optim.Adam(model.parameters(), lr=10)\n"
    assert tl005(adam + "s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=100)\n") == []
    assert tl005(adam + "for group in opt.param_groups:\n    group['lr'] = 1e-3\n") == []


def test_lambda_schedules_make_an_lr_up_to_one_a_multiplier():
    scheduler = "from torch.optim.lr_scheduler import LambdaLR\ns = LambdaLR(opt, lambda step: 512 ** -0.5)\n"
    assert tl005("opt = torch.optim.Adam(model.parameters(), lr=1)\n" + scheduler) == []
    assert tl005("opt = torch.optim.Adam(model.parameters(), lr=1e-9)\n" + scheduler) == []
    assert len(tl005("opt = torch.optim.Adam(model.parameters(), lr=5.0)\n" + scheduler)) == 1


def test_an_optimizer_built_under_a_flag_still_gets_the_default_lr_and_the_message_says_when():
    body = """
    p = argparse.ArgumentParser()
    p.add_argument('--lr', type=float, default=20)  # for the manual SGD update
    p.add_argument('--use-optimizer', action='store_true')
    args = p.parse_args()
    if args.use_optimizer:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    """
    (finding,) = tl005(body)
    assert "learning rate 20 (from args.lr) on the path where 'args.use_optimizer' is true" in finding.message
    (finding,) = tl005(body.replace("action='store_true'", "action='store_false'"))
    assert "on the path where" not in finding.message


def test_a_parameter_default_reaches_the_optimizer_when_no_call_in_the_file_passes_it():
    helper = "def build(model, lr=30.0):\n    return torch.optim.Adam(model.parameters(), lr=lr)\n"
    (finding,) = tl005(helper)
    assert "(the default of parameter 'lr')" in finding.message
    assert tl005(helper + "opt = build(model, lr=3e-4)\n") == []


def test_an_optimizer_whose_state_is_restored_is_not_reported():
    restored = "opt = torch.optim.SGD(model.parameters(), 999)\nopt.load_state_dict(torch.load('ckpt.pt')['opt'])\n"
    assert tl005(restored) == []
    helper = "opt = torch.optim.SGD(model.parameters(), 999)\nckpt = Checkpointer(model, opt=opt)\n"
    assert tl005(helper) == []
    resume_flag = """
    p = argparse.ArgumentParser()
    p.add_argument('--resume', default='')
    args = p.parse_args()
    opt = torch.optim.SGD(model.parameters(), 999)
    if args.resume:
        opt.load_state_dict(torch.load(args.resume)['opt'])
    """
    assert len(tl005(resume_flag)) == 1


def test_ranges_are_configurable_per_family():
    body = "opt = torch.optim.SGD(model.parameters(), lr=80)\n"
    assert len(tl005(body)) == 1
    wide = settings_from_table({"lr": {"sgd": [1e-6, 100]}}, None, "pyproject.toml")
    assert tl005(body, settings=wide) == []
    narrow = settings_from_table({"lr": {"adam": [1e-5, 1e-3]}}, None, "pyproject.toml")
    assert len(tl005("opt = torch.optim.Adam(model.parameters(), lr=3e-3)\n", settings=narrow)) == 1
    # the optimizer's own default is never reported, even outside a configured range
    assert tl005("opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n", settings=narrow) == []


@pytest.mark.parametrize("table", [{"sgd": [1e-6]}, {"sgd": ["low", 10]}, {"adamw": [1e-7, 0.1]}, {"sgd": 10}])
def test_invalid_ranges_are_configuration_errors(table):
    with pytest.raises(ConfigError):
        settings_from_table({"lr": table}, None, "pyproject.toml")


def test_every_family_has_a_range_that_contains_its_defaults():
    for optimizer in OPTIMIZERS.values():
        low, high = DEFAULT_LR_RANGES[optimizer.family]
        assert low <= optimizer.default_lr <= high, optimizer


def test_the_knowledge_matches_torch_optim():
    """Every torch.optim optimizer is known, with torch's own default lr."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch.optim

    shipped = {
        name: cls
        for name, cls in vars(torch.optim).items()
        if inspect.isclass(cls) and issubclass(cls, torch.optim.Optimizer) and cls is not torch.optim.Optimizer
    }
    assert set(shipped) == set(OPTIMIZERS)
    for name, cls in shipped.items():
        assert inspect.signature(cls).parameters["lr"].default == OPTIMIZERS[name].default_lr, name


def test_a_rate_documented_as_deliberate_is_left_alone_a_plain_label_is_not():
    assert tl005("opt = optim.Adam(model.parameters(), lr=0.5)  # large on purpose: only a tiny head trains\n") == []
    assert tl005("LR = 0.5  # deliberately high, see the paper's appendix\nopt = optim.Adam(model.parameters(), lr=LR)\n") == []
    assert len(tl005("opt = optim.Adam(model.parameters(), lr=0.5)  # learning rate\n")) == 1


def test_soft_prompts_train_with_rates_up_to_one():
    body = "from peft import PromptTuningConfig\nconfig = PromptTuningConfig(num_virtual_tokens=20)\n"
    assert tl005(body + "opt = optim.AdamW(model.parameters(), lr=0.3)\n") == []
    assert len(tl005(body + "opt = optim.AdamW(model.parameters(), lr=3.0)\n")) == 1


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("tests/optim/check_steps.py", ""),
        ("src/test_steps.py", ""),
        ("src/steps_test.py", ""),
        ("conftest.py", ""),
        ("steps.py", "from .helpers import TestCasePlus\nclass StepCheck(TestCasePlus):\n    pass\n"),
        ("steps.py", "class TestSteps:\n    def test_step(self):\n        pass\n"),
        ("steps.py", "def test_step():\n    pass\n"),
    ],
)
def test_test_code_is_not_checked(path, source, tmp_path):
    from torchlint import engine

    text = HEADER + source + "opt = optim.SGD(model.parameters(), lr=100.0)\n"
    assert [d.code for d in engine.analyze(text, path, Settings()).diagnostics] == []
    assert [d.code for d in engine.analyze(text, "train.py", Settings()).diagnostics if d.code == "TL005"] == (
        [] if source else ["TL005"]
    )


def test_a_demo_whose_backward_passes_fit_nothing_has_no_wrong_lr():
    # every backward pass is on a bare reduction of an output computed from noise alone: the
    # loop shows the mechanics of a step (parallelism, profiling), nothing is learned
    demo = """
        opt = torch.optim.AdamW(model.parameters(), lr=0.25)
        for i in range(10):
            inp = torch.rand(20, 4)
            out = model(inp)
            out.sum().backward()
            opt.step()
        """
    assert tl005(demo) == []
    # a target, or data that is not noise, makes it training again
    fitted = """
        opt = torch.optim.AdamW(model.parameters(), lr=0.25)
        for i in range(10):
            inp = torch.rand(20, 4)
            loss = nn.functional.mse_loss(model(inp), inp[:, :2] * 2)
            loss.backward()
            opt.step()
        """
    assert len(tl005(fitted)) == 1
    on_data = """
        opt = torch.optim.AdamW(model.parameters(), lr=0.25)
        for inp in torch.load("batches.pt"):
            model(inp).sum().backward()
            opt.step()
        """
    assert len(tl005(on_data)) == 1


def test_noise_fitted_to_noise_is_no_training_either():
    # the loss compares an output on noise with another random draw (moved, or by keyword, with
    # settings beside it): still nothing to learn
    for loss in (
        "nn.MSELoss()(model(inp), torch.randn(20, 2).to(device))",
        "nn.functional.mse_loss(input=model(inp), target=goal, reduction='sum')",
    ):
        demo = f"""
            device = "cuda"
            opt = torch.optim.AdamW(model.parameters(), lr=0.25)
            goal = torch.randn(20, 2)
            for i in range(10):
                inp = torch.rand(20, 4).to(device)
                loss = {loss}
                loss.backward()
                opt.step()
            """
        assert tl005(demo) == [], loss
    # a loss of noise alone compares no output of the model: nothing says it is a demo
    no_output = """
        opt = torch.optim.AdamW(model.parameters(), lr=0.25)
        for i in range(10):
            loss = nn.functional.mse_loss(torch.rand(20, 2), torch.rand(20, 2))
            loss.backward()
            opt.step()
        """
    assert len(tl005(no_output)) == 1


def test_one_linear_map_is_held_to_a_wider_range_unless_the_range_is_configured():
    source = "import torch\nprobe = torch.nn.Linear(4, 2)\nopt = torch.optim.Adam(probe.parameters(), lr={lr})\n"
    assert not [d for d in lint(source.format(lr=0.5)) if d.code == "TL005"]
    (found,) = [d for d in lint(source.format(lr=5)) if d.code == "TL005"]
    assert "above the adam range for a model of one linear map 1e-07 to 1:" in found.message
    configured = Settings(rule_options={"lr": {"adam": [1e-7, 0.2]}})
    assert [d.code for d in lint(source.format(lr=0.5), settings=configured) if d.code == "TL005"] == ["TL005"]


def test_a_model_class_whose_one_layer_is_handed_in_is_no_known_linear_map():
    # `self.body = body` holds whatever the caller builds: no call to read a layer kind from
    source = (
        "import torch\n"
        "class Wrapper(torch.nn.Module):\n"
        "    def __init__(self, body):\n"
        "        super().__init__()\n"
        "        self.body = body\n"
        "    def forward(self, x):\n"
        "        return self.body(x)\n"
        "net = Wrapper(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)))\n"
        "opt = torch.optim.Adam(net.parameters(), lr=0.5)\n"
    )
    assert [d.code for d in lint(source)] == ["TL005"]
