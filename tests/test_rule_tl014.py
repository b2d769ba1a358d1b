"""TL014 load-without-map-location: torch.load of parameters in a script that picks its device at
run time."""

import textwrap

import pytest

from conftest import lint

from torchlint.config import Settings
from torchlint.diagnostics import Applicability
from torchlint.fixes import loop


def findings(source):
    return [d for d in lint(source) if d.code == "TL014"]


def test_a_resumed_state_dict_is_reported_at_the_load_with_the_device_to_map_to():
    source = """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        state = torch.load("last.pt")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state.get("optimizer"))
        """
    (found,) = findings(source)
    assert (found.line, found.column) == (7, 9)
    assert "picks its device at run time" in found.message
    assert found.message.endswith("pass map_location=device")
    assert found.fix.applicability is Applicability.UNSAFE
    result = loop.fix_bytes(textwrap.dedent(source).encode(), "train.py", Settings(select=("TL014",)), True)
    assert 'state = torch.load("last.pt", map_location=device)\n' in result.fixed_text


def test_a_global_device_the_loading_function_never_reads_is_not_offered():
    # `device` is bound under __main__ after the backbone is built: naming it in the function
    # would raise NameError there (and on import), so the advice maps to the host instead.
    (found,) = findings(
        """
        import torch

        def backbone(path):
            net = torch.nn.Linear(4, 2)
            net.load_state_dict(torch.load(path))
            return net

        if __name__ == "__main__":
            net = backbone("hr.pt")
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            net.to(device)
        """
    )
    assert 'pass map_location="cpu"' in found.message
    assert found.fix is None


def test_an_availability_check_that_is_only_shown_decides_nothing():
    assert not findings(
        """
        import torch

        print(torch.cuda.is_available())
        print(f"GPU available: {torch.cuda.is_available()}")
        torch.cuda.is_available()
        torch.cuda.set_device(0)
        model = torch.nn.Linear(4, 2).to("cuda")
        model.load_state_dict(torch.load("best.pt"))
        """
    )


def test_a_pickled_module_and_a_device_from_the_command_line_count():
    (found,) = findings(
        """
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda")
        args = parser.parse_args()
        device = torch.device(args.device)
        with open("model.pt", "rb") as f:
            model = torch.load(f).to(device)
        model.eval()
        """
    )
    assert found.line == 10 and "pass map_location=device" in found.message


@pytest.mark.parametrize(
    "move, named", [("model.to(args.device)", "args.device"), ("device = args.device\nmodel.to(device)", "device")]
)
def test_a_device_option_moved_to_directly_decides_at_run_time(move, named):
    (found,) = findings(
        f"""
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda")
        parser.add_argument("--half", action="store_true")
        args = parser.parse_args()
        model = torch.nn.Linear(4, 2)
        {textwrap.indent(move, "        ").strip()}
        model.load_state_dict(torch.load("weights.pt"))
        """
    )
    assert f"at run time ({named})" in found.message


def test_an_option_that_is_no_device_decides_nothing():
    assert not findings(
        """
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--dtype", default="float16")
        args = parser.parse_args()
        model = torch.nn.Linear(4, 2).to(getattr(torch, args.dtype))
        model.to(args.dtype)
        model.load_state_dict(torch.load("weights.pt"))
        """
    )


def test_each_process_picking_its_gpu_is_the_other_decision():
    (found,) = findings(
        """
        import os
        import torch

        def resume(model, path):
            model.load_state_dict(torch.load(path))

        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        """
    )
    assert "each process picks its own GPU" in found.message
    assert 'pass map_location="cpu" (load_state_dict copies' in found.message
    assert found.fix is None


def test_silent_when_the_load_says_where_or_holds_no_parameters():
    assert not findings(
        """
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = torch.nn.Linear(4, 2).to(device)
        model.load_state_dict(torch.load("a.pt", map_location=device))
        model.load_state_dict(torch.load("b.pt", "cpu"))
        model.load_state_dict(torch.load("c.pt", **{"map_location": "cpu"}))
        features, labels = torch.load("data.pt")
        if torch.cuda.is_available():
            model.load_state_dict(torch.load("d.pt"))
        """
    )


def test_silent_where_the_device_is_not_decided_at_run_time():
    for decision in ("", "model.cuda()", 'model.to("cuda:0")', "assert torch.cuda.is_available()"):
        assert not findings(
            f"""
            import torch

            model = torch.nn.Linear(4, 2)
            {decision}
            model.load_state_dict(torch.load("last.pt"))
            """
        ), decision


def test_silent_where_a_gpu_is_required_on_every_path_despite_a_check():
    assert not findings(
        """
        import torch

        if torch.cuda.is_available():
            torch.cuda.manual_seed(0)
        model = torch.nn.Linear(4, 2).cuda()
        model.load_state_dict(torch.load("last.pt"))
        """
    )


def test_an_accelerator_or_ddp_device_ids_decide_at_run_time():
    found = findings(
        """
        import os
        import torch
        from accelerate import Accelerator
        from torch.nn.parallel import DistributedDataParallel as DDP

        class Trainer:
            def __init__(self, model):
                self.accelerator = Accelerator()
                self.model = model

            def load(self, path):
                self.model.load_state_dict(torch.load(path)["model"])

        def wrap(model):
            rank = int(os.environ["LOCAL_RANK"])
            return DDP(model.to(rank), device_ids=[rank])
        """
    )
    assert len(found) == 1 and "picks its device at run time (Accelerator())" in found[0].message
    (found,) = findings(
        """
        import os
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP

        def resume(model, path):
            rank = int(os.environ["LOCAL_RANK"])
            model = DDP(model.to(rank), device_ids=[rank])
            model.module.load_state_dict(torch.load(path))
        """
    )
    assert "each process picks its own GPU" in found.message


def test_a_framework_told_its_accelerator_decides_nothing_at_run_time():
    source = """
        import lightning as L
        import torch

        def main(pretrained_path, accelerator{default}):
            fabric = L.Fabric(accelerator={accelerator}, devices=1, precision="bf16-mixed")
            model = torch.nn.Linear(4, 2)
            model.load_state_dict(torch.load(pretrained_path))
            return fabric.setup(model)
        """
    assert not findings(source.format(default="", accelerator='"cuda"'))
    (found,) = findings(source.format(default='="auto"', accelerator="accelerator"))
    assert "picks its device at run time (L.Fabric(...))" in found.message


def test_a_file_saved_earlier_in_the_same_run_is_restored_where_it_was_saved():
    assert not findings(
        """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)
        best_epoch = 0
        for epoch in range(10):
            torch.save(model.state_dict(), "{}.pkl".format(epoch))
        model.load_state_dict(torch.load("{}.pkl".format(best_epoch)))

        class RangeTest:
            def __init__(self, model):
                self.model = model
                torch.save(model.state_dict(), "init_params.pt")

            def run(self):
                self.model.load_state_dict(torch.load("init_params.pt"))
        """
    )


@pytest.mark.parametrize(
    ("saved", "loaded", "reported"),
    [
        ('ckpt(epoch)', 'ckpt(best)', False),  # one template, any argument
        ('ckpt("last")', 'ckpt("last")', False),
        ('ckpt("last")', 'ckpt("pretrained")', True),  # the strings passed name other files
        ('name_of(epoch)', 'name_of(best)', True),  # the function returns its argument: no template
    ],
)
def test_a_path_made_by_a_function_of_the_file_is_its_returned_template(saved, loaded, reported):
    source = f"""
        import os
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)
        ckpt = lambda tag: os.path.join("out", "model-" + tag) + ".pt"

        def name_of(tag):
            return tag

        best = 0
        torch.save(model.state_dict(), {saved})
        model.load_state_dict(torch.load({loaded}))
        """
    assert bool(findings(source)) is reported


def test_a_save_later_in_the_loop_wrote_the_file_on_an_earlier_round():
    source = """
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)
        for epoch in range(10):
            if epoch > 5:
                model.load_state_dict(torch.load(f"ep{epoch - 5}.pt"))
            torch.save(model.state_dict(), f"ep{epoch}.pt")
        model.load_state_dict(torch.load("pretrained.pt"))
        """
    assert [d.line for d in findings(source)] == [10]


@pytest.mark.parametrize(("kept", "reported"), [('"best.pt"', False), ('"last.pt"', True)])
def test_a_file_a_helper_was_given_to_save_before_the_reload_is_this_runs(kept, reported):
    source = f"""
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)

        def train(model, epochs, keep_in):
            for epoch in range(epochs):
                torch.save(model.state_dict(), keep_in)

        train(model, 3, keep_in={kept})
        model.load_state_dict(torch.load("best.pt"))
        """
    assert bool(findings(source)) is reported


def test_a_file_the_training_function_saved_before_the_reload_is_this_runs():
    program = """
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--train", action="store_true")
        args = parser.parse_args()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to(device)

        def train():
            for step in range(100):
                pass
            torch.save(model.state_dict(), "best.pt")

        {calls}
        model.load_state_dict(torch.load("best.pt"))
        """
    assert not findings(program.replace("{calls}", "for epoch in range(3):\n            train()"))
    # a call that may be skipped leaves a previous run's file to reload
    assert len(findings(program.replace("{calls}", "if args.train:\n            train()"))) == 1


def test_a_checkpoint_saved_by_another_method_may_come_from_another_run():
    (found,) = findings(
        """
        import torch

        class Trainer:
            def __init__(self, model):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.model = model.to(self.device)

            def save(self, epoch):
                torch.save(self.model.state_dict(), f"ckpt_{epoch}.pt")

            def resume(self, epoch):
                self.model.load_state_dict(torch.load(f"ckpt_{epoch}.pt"))
        """
    )
    assert found.line == 13


HOST_ROLLOUT = """
    import torch
    from agents import make_envs

    envs = make_envs("Pendulum-v1", device="cpu")
    policy, stats = torch.load("policy.pt")
    obs = envs.reset()
    {moved}
    action = policy.act(obs, torch.zeros(1, 8))
    """


def test_a_host_pinned_script_is_reported_for_a_module_pickled_whole():
    (found,) = findings(HOST_ROLLOUT.format(moved=""))
    assert (found.line, found.column) == (6, 17)
    assert "runs on the host (device=\"cpu\")" in found.message
    assert found.message.endswith('pass map_location="cpu"')


def test_a_script_that_names_another_device_anywhere_is_not_pinned_to_the_host():
    for moved in ("policy = policy.to(args.device)", 'obs = obs.to(f"cuda:{gpu}", non_blocking=True)', "obs = obs.cuda()"):
        assert not any("runs on the host" in found.message for found in findings(HOST_ROLLOUT.format(moved=moved))), moved


PER_PROCESS_RESTORE = """
    import os
    import torch
    import torch.distributed as dist
    import utils
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device(f"cuda:{{local_rank}}")
    model = torch.nn.Linear(4, 2).to(device)
    if {guard}:
        model.load_state_dict(torch.load("best.pt"))
    """


@pytest.mark.parametrize(
    "guard",
    [
        "dist.get_rank() == 0",
        "0 == local_rank",
        "local_rank in [-1, 0]",
        "int(os.environ['RANK']) == 0",
        "not local_rank",
        "utils.is_main_process()",
        "os.path.exists('best.pt') and dist.get_rank() == 0",
    ],
)
def test_a_restore_on_the_first_process_only_is_not_reported(guard):
    assert not findings(PER_PROCESS_RESTORE.format(guard=guard))


@pytest.mark.parametrize("guard", ["dist.get_rank() == 1", "local_rank in [0, 1]", "os.path.exists('best.pt')"])
def test_a_restore_on_other_processes_too_is_reported(guard):
    assert len(findings(PER_PROCESS_RESTORE.format(guard=guard))) == 1


def test_a_gpu_index_written_in_the_code_is_no_per_process_choice_and_a_flag_is_one():
    # `self.gpu` is always 0: one process, on the host unless the flag is set.
    source = """
        import torch

        class Sampler:
            def __init__(self, use_cuda):
                self.gpu = 0
                self.net = torch.nn.Linear(4, 2)
                if use_cuda:
                    self.net.cuda(self.gpu)

            def restore(self, path):
                self.net.load_state_dict(torch.load(path))
        """
    (found,) = findings(textwrap.dedent(source))
    assert "picks its device at run time (self.net.cuda(self.gpu))" in found.message
    assert "each process" not in found.message


@pytest.mark.parametrize(
    "device, reported",
    [
        ('f"cuda:0"', False),  # a formatted string with nothing formatted is the literal it reads
        ('f"cuda:{GPU}"', False),  # GPU = 0, written once in the file
        ('f"cuda:{gpu}"', True),  # the caller's argument: each call may pick another GPU
    ],
)
def test_a_formatted_device_string_is_written_in_the_code_when_its_parts_are(device, reported):
    source = f"""
        import torch

        GPU = 0

        def restore(net, path, gpu):
            device = torch.device({device})
            net.to(device)
            net.load_state_dict(torch.load(path))
        """
    assert bool(findings(textwrap.dedent(source))) == reported


def test_no_process_picks_a_gpu_where_its_index_is_none():
    source = """
        import torch

        def resume(net, path, gpu=None):
            if gpu is not None:
                torch.cuda.set_device(gpu)
            criterion = torch.nn.MSELoss().cuda(gpu)
            if gpu is None:
                net.load_state_dict(torch.load(path))
            else:
                net.load_state_dict(torch.load(path, map_location=f"cuda:{gpu}"))
            return criterion
        """
    assert findings(textwrap.dedent(source)) == []
    assert len(findings(textwrap.dedent(source).replace("if gpu is None:", "if path:"))) == 1


@pytest.mark.parametrize(("init_calls", "reported"), [("self.enable_gpu(use_cuda)", True), ("pass", False)])
def test_a_choice_in_a_method_the_constructor_calls_decides_for_the_object(init_calls, reported):
    source = f"""
        import torch
        import torch.nn as nn

        class Critic:
            def __init__(self, use_cuda):
                self.net = nn.Linear(8, 1)
                {init_calls}

            def enable_gpu(self, flag):
                if flag:
                    self.net.cuda(0)

            def restore(self, path):
                self.net.load_state_dict(torch.load(path))
        """
    assert bool(findings(source)) is reported


@pytest.mark.parametrize(
    "guard",
    [
        'if torch.cuda.is_available() and not opt.cuda:\n    print("WARNING: a GPU is there, run with --cuda")',
        'if opt.cuda and not torch.cuda.is_available():\n    raise RuntimeError("no GPU found, run without --cuda")',
        'if opt.cuda and not torch.cuda.is_available():\n    print("no GPU found")\n    sys.exit(1)',
    ],
    ids=["warning", "raise", "exit"],
)
def test_a_check_that_only_gates_a_warning_or_the_end_of_the_run_is_not_named_as_the_decision(guard):
    source = (
        "import argparse\nimport sys\n\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--cuda", action="store_true")\n'
        "opt = parser.parse_args()\n"
        f"{guard}\n"
        "net = torch.nn.Linear(4, 2)\n"
        'net.load_state_dict(torch.load("net.pt"))\n'
        "if opt.cuda:\n"
        "    net.cuda()\n"
    )
    (found,) = findings(source)
    assert "picks its device at run time (opt.cuda)" in found.message


def test_the_flag_whose_refusal_is_the_only_check_is_named_as_the_decision():
    # The move has an `else:`, so it is no flag guard: the availability check, which only refuses
    # --cuda on a machine without a GPU, is what the message would cite, and the flag is its reason.
    source = (
        "import argparse\n\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\n"
        'parser.add_argument("--cuda", action="store_true")\n'
        'parser.add_argument("--weights")\n'
        "opt = parser.parse_args()\n"
        "use_gpu = opt.cuda\n"
        "if use_gpu:\n"
        '    print("on the GPU")\n'
        "    if not torch.cuda.is_available():\n"
        '        raise RuntimeError("no GPU found, run without --cuda")\n'
        'net = torch.load(opt.weights)["model"]\n'
        "x = torch.randn(2, 4)\n"
        "if use_gpu:\n"
        "    net = net.cuda()\n"
        "    x = x.cuda()\n"
        "else:\n"
        "    net = net.cpu()\n"
        "print(net(x))\n"
    )
    (found,) = findings(source)
    assert "picks its device at run time (use_gpu)" in found.message


def test_one_process_choosing_its_gpu_is_not_called_every_process():
    (found,) = findings(
        """
        import argparse
        import torch

        parser = argparse.ArgumentParser()
        parser.add_argument("--gpu", type=int, default=0)
        args = parser.parse_args()
        device = torch.device("cuda:" + str(args.gpu))
        net = torch.nn.Linear(4, 2).to(device)
        net.load_state_dict(torch.load("pretrained.pt"))
        """
    )
    assert "picks which GPU it uses (torch.device(" in found.message
    assert "every process" not in found.message and "machine without one" not in found.message



@pytest.mark.parametrize(
    ("source", "named"),
    [
        # the availability check only picks which generator to seed; the setting compared with a
        # constant decides whether the network goes to the GPU
        (
            """
            import torch

            def fit(settings, weights):
                if torch.cuda.is_available():
                    torch.cuda.manual_seed(0)
                else:
                    torch.manual_seed(0)
                net = torch.nn.Linear(4, 2)
                net.load_state_dict(torch.load(weights))
                if settings.gpus > 0:
                    net = net.cuda()
                return net
            """,
            "settings.gpus > 0",
        ),
        # `model` first names the project module, then the network built from it: its .cuda() is
        # the network's, under the run's flag
        (
            """
            import argparse
            import torch
            import model

            parser = argparse.ArgumentParser()
            parser.add_argument("--cuda", action="store_true")
            args = parser.parse_args()
            if torch.cuda.is_available() and not args.cuda:
                print("WARNING: a GPU is there, run with --cuda")
            model = model.Tagger(10)
            if args.cuda:
                model.cuda()
            with open("tagger.pt", "rb") as f:
                model = torch.load(f)
            model.eval()
            """,
            "args.cuda",
        ),
    ],
)
def test_the_setting_that_guards_the_move_is_named_as_the_decision(source, named):
    (found,) = findings(source)
    assert f"picks its device at run time ({named})" in found.message


def test_the_main_guard_is_no_setting_of_the_run():
    # the move runs whenever the file runs as a script: the file needs a GPU, it decides nothing
    assert not findings(
        """
        import torch

        model = torch.nn.Linear(4, 2)
        if __name__ == "__main__":
            model.cuda()
            model.load_state_dict(torch.load("encoder.pt"))
        """
    )

def test_a_gpu_only_the_command_line_picks_is_one_gpu_for_every_process():
    # An old multi-node recipe: `--gpu` picks one GPU (data parallelism off), `--world-size`
    # starts processes that all read the same option; no worker assigns the index from its rank.
    source = """
        import argparse
        import torch
        import torch.distributed as dist

        parser = argparse.ArgumentParser()
        parser.add_argument("--gpu", type=int, default=None)
        parser.add_argument("--world-size", type=int, default=1)
        parser.add_argument("--resume", default="")
        args = parser.parse_args()
        if args.world_size > 1:
            dist.init_process_group("gloo", init_method="env://", world_size=args.world_size)
        net = torch.nn.Linear(4, 2)
        if args.gpu is not None:
            net = net.cuda(args.gpu)
        else:
            net = torch.nn.parallel.DistributedDataParallel(net.cuda())
        net.load_state_dict(torch.load(args.resume)["state_dict"])
        """
    (found,) = findings(source)
    assert "picks which GPU it uses (net.cuda(args.gpu))" in found.message
    assert "every process" not in found.message
    # code that sets the index for its process (a launcher's local rank) does give each one a GPU
    per_rank = source.replace("import argparse", "import argparse\n        import os").replace(
        "args = parser.parse_args()", 'args = parser.parse_args()\n        args.gpu = int(os.environ["LOCAL_RANK"])'
    )
    (spawned,) = findings(per_rank)
    assert "each process picks its own GPU" in spawned.message
