"""The compile-time constant evaluator: what it knows, and everything that makes it say UNKNOWN."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.model import Model, constants
from torchlint.model.constants import UNKNOWN


def probe(source: str):
    """The value of the argument of the (last) `probe(...)` call in ``source``."""
    model = Model(cst.parse_module(textwrap.dedent(source)))
    calls = [c for c in model.calls if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    return constants.value(model, calls[-1].args[0].value)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("probe(3e-4)", 3e-4),
        ("probe(1_000)", 1000),
        ("probe(-0.5)", -0.5),
        ("probe(2 ** -3)", 0.125),
        ("probe(0.1 * 8 / 256)", 0.1 * 8 / 256),
        ("probe(7 // 2 + 1 - 1 % 1)", 4),
        ("probe('ab' 'cd')", "abcd"),
        ("probe(float('1e-3'))", 1e-3),
        ("probe(int(2.7))", 2),
        ("probe(max(0.1, 0.2))", 0.2),
        ("probe((1, 2)[1])", 2),
        ("probe(1 if True else 2)", 1),
        ("probe(True)", True),
        ("probe('adam' in ('sgd', 'adam'))", True),
        ("probe(1 < 2 <= 2)", True),
        ("probe(not 0 and 3)", 3),
    ],
)
def test_literals_and_arithmetic(source, expected):
    assert probe(source) == expected


def test_module_constant_read_in_a_function():
    assert probe("LR = 1e-3 * 2\ndef main():\n    probe(LR)\n") == 2e-3


def test_local_name_shadows_module_constant():
    assert probe("LR = 1\ndef main():\n    LR = 2\n    probe(LR)\n") == 2


def test_names_bound_to_different_values_are_unknown():
    assert probe("lr = 0.1\nif big:\n    lr = 10\nprobe(lr)\n") is UNKNOWN


def test_names_bound_twice_to_the_same_value_are_known():
    assert probe("lr = 0.1\nif big:\n    lr = 0.1\nprobe(lr)\n") == 0.1


@pytest.mark.parametrize(
    "source",
    [
        "def f(lr=0.1):\n    probe(lr)\n",  # a parameter of a function never called here
        "def f(lr=0.1):\n    probe(lr)\nf()\nf(lr=2)\n",  # callers that disagree
        "def f(lr=0.1):\n    probe(lr)\nf()\nrun(f)\n",  # handed on: called from elsewhere too
        "def f(lr=0.1):\n    probe(lr)\nf(**cfg)\n",
        "for lr in (0.1, 1):\n    probe(lr)\n",
        "lr = 0.1\nlr *= 2\nprobe(lr)\n",
        "from config import LR\nprobe(LR)\n",
        "probe(undefined_name)\n",
        "probe(f'{1}')\n",
        "probe(1 / 0)\n",
        "probe(10 ** 1000)\n",
        "probe(compute())\n",
        "probe('adam' in ('sgd', opt))\n",  # a tuple with an unknown member cannot answer
        "probe(x == 1 or True)\n",
        "def float(x):\n    return x\nprobe(float(1))\n",  # a shadowed builtin is not the builtin
        "LR = 1e-3\nexec(open('configurator.py').read())\nprobe(LR)\n",  # nanoGPT's override
    ],
)
def test_unknowable_values(source):
    assert probe(source) is UNKNOWN


@pytest.mark.parametrize(
    "calls",
    ["f()", "f(model)\nf(model, 0.1)", "f(model, lr=0.1)\nf(None)", "f(model, LR)"],
)
def test_a_parameter_has_the_value_every_call_passes(calls):
    source = "LR = 0.1\ndef f(model, lr=0.1):\n    probe(lr)\n" + calls + "\n"
    assert probe(source) == 0.1


def test_a_method_parameter_through_its_calls_on_self():
    source = """
        class Trainer:
            def run(self):
                self.make(0.5)
                self.make(lr=0.5)

            def make(self, lr):
                probe(lr)
        """
    assert probe(source) == 0.5


def test_config_dict_entry():
    assert probe("cfg = {'optim': {'lr': 3e-4}, 'epochs': n}\nprobe(cfg['optim']['lr'])\n") == 3e-4


def test_config_dict_get_with_default():
    assert probe("cfg = dict(lr=0.5)\nprobe(cfg.get('wd', 0.01))\n") == 0.01
    assert probe("cfg = dict(lr=0.5)\nprobe(cfg.get('lr', 0.01))\n") == 0.5


@pytest.mark.parametrize(
    "mutation",
    [
        "cfg['lr'] = float(sys.argv[1])",
        "cfg.update(yaml.safe_load(open('c.yaml')))",
        "load_overrides(cfg)",
    ],
)
def test_a_mutated_config_dict_is_unknown(mutation):
    assert probe(f"cfg = {{'lr': 3e-4}}\n{mutation}\nprobe(cfg['lr'])\n") is UNKNOWN


def test_a_config_dict_only_logged_stays_known():
    assert probe("cfg = {'lr': 3e-4}\nprint(cfg)\nwandb.init(config=cfg)\nprobe(cfg['lr'])\n") == 3e-4


ARGPARSE = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('--lr', '--learning-rate', type=float, default=0.1, help='initial lr')
parser.add_argument('--weight-decay', default='1e-4', type=float)
parser.add_argument('--opt', dest='optimizer_name', default='sgd')
parser.add_argument('--amp', action='store_true')
"""


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        ("args.lr", 0.1),
        ("args.weight_decay", 1e-4),  # argparse runs a string default through type=
        ("args.optimizer_name", "sgd"),
        ("args.amp", False),
        ("args.lr * 4", 0.4),
    ],
)
def test_argparse_default_reaches_args(read, expected):
    assert probe(ARGPARSE + f"args = parser.parse_args()\nprobe({read})\n") == expected


def test_argparse_namespace_passed_to_a_worker():
    source = ARGPARSE + "def main_worker(gpu, args):\n    probe(args.lr)\nargs = parser.parse_args()\n"
    assert probe(source) == 0.1


def test_argparse_through_a_parsing_function_and_parse_known_args():
    source = ARGPARSE.replace("\n", "\n    ")
    assert probe(f"def get_args():{source}\n    return parser.parse_args()\nopt = get_args()\nprobe(opt.lr)\n") == 0.1
    assert probe(ARGPARSE + "args, _ = parser.parse_known_args()\nprobe(args.lr)\n") == 0.1
    assert probe(ARGPARSE + "args = parser.parse_known_args()[0]\nprobe(args.lr)\n") == 0.1


def test_set_defaults_overrides_add_argument():
    assert probe(ARGPARSE + "parser.set_defaults(lr=0.5)\nargs = parser.parse_args()\nprobe(args.lr)\n") == 0.5


@pytest.mark.parametrize(
    "override",
    [
        "parser.set_defaults(**yaml.safe_load(open('c.yaml')))",
        "args = parser.parse_args(['--lr', '3'])",
        "vars(args).update(config)",
        "args.__dict__.update(config)",
        "for k, v in config.items():\n    setattr(args, k, v)",
        "args.lr = args.lr * world_size",
    ],
)
def test_argparse_defaults_that_may_not_run_are_unknown(override):
    assert probe(ARGPARSE + f"args = parser.parse_args()\n{override}\nprobe(args.lr)\n") is UNKNOWN


def test_an_object_that_is_not_a_parsed_namespace_gives_no_argparse_default():
    assert probe(ARGPARSE + "args = load_config()\nprobe(args.lr)\n") is UNKNOWN


def test_explicit_attribute_assignment_is_followed():
    assert probe("args = parser.parse_args()\nargs.lr = 0.5\nprobe(args.lr)\n") is UNKNOWN  # --lr unknown here
    assert probe("config = load()\nconfig.lr = 0.5\nprobe(config.lr)\n") == 0.5


def test_dataclass_defaults_and_constructor_keywords():
    source = textwrap.dedent("""
    from dataclasses import dataclass, field

    @dataclass
    class TrainConfig:
        lr: float = 6e-4
        betas: tuple = field(default=(0.9, 0.95))

    cfg = TrainConfig(betas=(0.9, 0.99))
    """)
    assert probe(source + "probe(cfg.lr)\n") == 6e-4
    assert probe(source + "probe(cfg.betas)\n") == (0.9, 0.99)
    assert probe(source + "probe(TrainConfig.lr)\n") == 6e-4
    assert probe(source + "cfg.lr = 1e-3\nprobe(cfg.lr)\n") is UNKNOWN  # flow-insensitive: two values


def test_plain_config_class_but_not_one_with_an_init():
    assert probe("class C:\n    lr = 0.01\nprobe(C().lr)\n") is UNKNOWN  # not bound: no key to follow
    assert probe("class C:\n    lr = 0.01\nc = C()\nprobe(c.lr)\n") == 0.01
    source = "class C:\n    lr = 0.01\n    def __init__(self, lr):\n        self.lr = lr\nc = C(1)\nprobe(c.lr)\n"
    assert probe(source) is UNKNOWN


def test_cycles_and_long_chains_end_in_unknown_not_an_error():
    assert probe("a = b\nb = a\nprobe(a)\n") is UNKNOWN
    assert probe("x = x + 1\nprobe(x)\n") is UNKNOWN
    chain = "v0 = 1\n" + "".join(f"v{i} = v{i - 1} + 1\n" for i in range(1, 3000))
    assert probe(chain + "probe(v2999)\n") in (3000, UNKNOWN)


def test_reachability_under_the_defaults():
    source = textwrap.dedent(
        """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument('--resume', default='')
        p.add_argument('--opt', default='sgd')
        args = p.parse_args()
        if args.resume:
            a = 1
        elif args.opt == 'adam':
            b = 2
        else:
            c = 3
        if unknown_flag:
            d = 4
        """
    )
    model = Model(cst.parse_module(source))
    reached = {
        binding.name: constants.runs_with_defaults(model, binding.statement)
        for binding in model.all_bindings()
        if binding.name in "abcd"
    }
    assert reached == {"a": False, "b": False, "c": True, "d": True}
