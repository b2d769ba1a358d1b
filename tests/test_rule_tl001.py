"""TL001 unused-device: a computed device that nothing is placed on."""

import json

from conftest import lint

from torchlint import engine


def findings(source):
    return [(d.line, d.message) for d in lint(source) if d.code == "TL001"]


def test_device_only_printed_is_reported_at_its_computation():
    found = findings(
        """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print(f"Using {device}")
        model = torch.nn.Linear(4, 2)
        for step in range(10):
            model(torch.randn(8, 4)).sum().backward()
        """
    )
    assert [line for line, _ in found] == [3]
    assert "only printed or logged" in found[0][1] and ".to(device)" in found[0][1]


def test_device_only_logged_or_written_to_a_config_is_reported():
    found = findings(
        """
        import json, logging
        import torch
        log = logging.getLogger(__name__)

        def main():
            device = "cuda" if torch.cuda.is_available() else "cpu"
            log.info("training on %s", device)
            json.dump({"device": str(device)}, open("run.json", "w"))
            model = torch.nn.Linear(4, 2)
            model(torch.randn(8, 4))
        """
    )
    assert [line for line, _ in found] == [7]


def test_device_never_read_in_a_function_is_reported():
    found = findings(
        """
        import torch

        def main(rank):
            device = torch.device("cuda", rank)
            model = torch.nn.Linear(4, 2)
            return model(torch.randn(2, 4))
        """
    )
    assert [line for line, _ in found] == [5]
    assert "never read" in found[0][1]


def test_device_passed_to_a_function_is_used():
    assert not findings(
        """
        import torch

        def train(model, device, loader):
            for x, y in loader:
                model(x.to(device))

        def main(loader):
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            print(device)
            train(torch.nn.Linear(4, 2), device, loader)
        """
    )


def test_device_stored_on_args_and_read_for_placement_is_used():
    assert not findings(
        """
        import argparse
        import torch

        def main():
            args = argparse.ArgumentParser().parse_args()
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            args.device = device
            model = torch.nn.Linear(4, 2).to(args.device)
        """
    )


def test_device_placed_through_a_factory_keyword_or_set_device_is_used():
    assert not findings(
        """
        import torch

        def main(rank):
            device = torch.device("cuda", rank)
            torch.cuda.set_device(device)
            noise = torch.randn(4, 4, device=device)
        """
    )


def test_device_inspected_for_its_type_is_not_reported():
    assert not findings(
        """
        import torch

        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            pin = device.type == "cuda"
            return pin
        """
    )


def test_unused_device_beside_a_placement_scheme_that_lands_on_it_is_silent():
    # torch.cuda.set_device + .cuda() is a complete placement scheme: the device variable names
    # the GPU the data goes to, so the choice is honoured and the variable is only dead code
    assert not findings(
        """
        import torch

        def main(local_rank):
            device = f"cuda:{local_rank}"
            torch.cuda.set_device(local_rank)
            model = torch.nn.Linear(4, 2).cuda()
            model(torch.ones(1, 4).cuda())
        """
    )
    # the same index, passed to each move
    assert not findings(
        """
        import torch

        def main(rank):
            device = torch.device("cuda", rank)
            model = torch.nn.Linear(4, 2).cuda(rank)
            model(torch.ones(1, 4).to(f"cuda:{rank}"))
        """
    )


def test_unused_device_beside_moves_to_another_gpu_is_reported_with_the_move():
    found = findings(
        """
        import torch

        def main(local_rank):
            device = torch.device(f"cuda:{local_rank}")
            model = torch.nn.Linear(4, 2).to("cuda")
            model(torch.ones(1, 4).cuda())
        """
    )
    assert [line for line, _ in found] == [5]
    assert "'.to(\"cuda\")'" in found[0][1] and "a device other than the one 'device' names" in found[0][1]
    assert "CPU" not in found[0][1]


def test_unused_availability_device_beside_cuda_under_the_same_test_is_silent():
    assert not findings(
        """
        import torch
        use_gpu = torch.cuda.is_available()
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2)
        if use_gpu:
            model.cuda()
        for step in range(3):
            x = torch.randn(2, 4)
            model(x.cuda() if use_gpu else x).sum().backward()
        """
    )
    assert not findings(
        """
        import argparse
        import torch
        args = argparse.ArgumentParser().parse_args()
        device = "cuda" if args.gpu else "cpu"
        model = torch.nn.Linear(4, 2)
        if args.gpu:
            model.cuda()
        for step in range(3):
            model(torch.randn(2, 4)).sum().backward()
        """
    )


def test_unused_availability_device_beside_unconditional_cuda_is_reported():
    found = findings(
        """
        import torch
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).cuda()
        for step in range(3):
            model(torch.randn(2, 4, device="cuda")).sum().backward()
        """
    )
    assert [line for line, _ in found] == [3]
    assert "CUDA on every machine" in found[0][1]


def test_a_device_from_the_user_ignored_by_cuda_calls_is_reported():
    found = findings(
        """
        import argparse
        import torch
        args = argparse.ArgumentParser().parse_args()
        device = torch.device(args.device)
        model = torch.nn.Linear(4, 2).cuda()
        for step in range(3):
            model(torch.randn(2, 4).cuda()).sum().backward()
        """
    )
    assert [line for line, _ in found] == [5]


def test_the_device_expression_recomputed_where_it_is_placed_is_honoured():
    assert not findings(
        """
        import torch

        def main(rank, build):
            device = torch.device(build.device_name(rank))
            model = torch.nn.Linear(4, 2).to(torch.device(build.device_name(rank)))
            model(torch.ones(1, 4, device=torch.device(build.device_name(rank))))
        """
    )


def test_a_placement_reading_the_name_on_another_path_is_named():
    found = findings(
        """
        import torch

        def place(model, devices, on_npu):
            device = devices[0]
            if on_npu:
                device = f"npu:{device}"
            else:
                model.to(device)
            return model
        """
    )
    assert [line for line, _ in found] == [7]
    assert "runs only on another path" in found[0][1] and "'.to(device)'" in found[0][1]


def test_a_library_module_device_may_be_imported_elsewhere():
    assert not findings(
        """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        """
    )


def test_a_script_that_calls_its_main_without_a_guard_is_a_script():
    found = findings(
        """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print("device:", device)

        def main():
            model = torch.nn.Linear(4, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                opt.zero_grad()
                model(torch.randn(8, 4)).sum().backward()
                opt.step()

        main()
        """
    )
    assert [line for line, _ in found] == [3]


def test_a_module_that_runs_its_model_at_top_level_is_a_script():
    found = findings(
        """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print(f"using {device}")
        model = torch.nn.Linear(4, 2)
        scores = model(torch.randn(8, 4))
        """
    )
    assert [line for line, _ in found] == [3]


def test_a_notebook_device_is_no_library_global():
    cells = [
        "import torch\n",
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nprint(device)\n',
        "def fit(model, steps):\n    for _ in range(steps):\n        model(torch.randn(2, 4)).sum().backward()\n",
        "fit(torch.nn.Linear(4, 1), 3)\n",
    ]
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": [c], "outputs": [], "execution_count": None} for c in cells],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    found = [d for d in engine.check_source(json.dumps(notebook), "explore.ipynb") if d.code == "TL001"]
    assert [(d.cell, d.line) for d in found] == [(2, 1)]


def test_the_same_choice_made_again_where_data_is_placed_leaves_only_dead_code():
    source = """
        import torch

        class Handler:
            def __init__(self, model):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.model = model.to(self.device)

            def to(self, device):
                self.model.to(device)

            def fit(self, batches):
                for x in batches:
                    self.model(x.to(self.device)).sum().backward()

        if __name__ == "__main__":
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            print("device:", device)
            Handler(torch.nn.Linear(4, 1)).fit([torch.randn(2, 4)])
        """
    assert not findings(source)
    # a method that moves to the GPU whatever the machine has does not make the same choice
    assert [line for line, _ in findings(source.replace("x.to(self.device)", "x.cuda()"))] == [17]


def test_a_library_module_calling_its_own_setup_keeps_its_device_for_importers():
    assert not findings(
        """
        import logging
        import torch
        DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def make_logger():
            return logging.getLogger("lib")

        logger = make_logger()
        """
    )


def test_a_config_loaded_with_exec_may_read_any_global():
    assert not findings(
        """
        import torch
        device = "cuda"
        exec(open("configurator.py").read())
        for step in range(3):
            print(step)
        """
    )


def test_a_class_attribute_device_is_read_through_self():
    assert not findings(
        """
        import torch

        class Runner:
            device = torch.device("cuda:0")

            def run(self, model):
                return model.to(self.device)
        """
    )


def test_a_plain_string_is_a_device_only_when_its_name_says_so():
    assert not findings(
        """
        def main():
            backend = "cpu"
            print(backend)
        """
    )
    assert findings(
        """
        import torch

        def main():
            device = "cuda"
            print(device)
            torch.nn.Linear(4, 2)(torch.ones(1, 4))
        """
    )


def test_availability_check_not_called_is_reported_where_tested():
    found = findings(
        """
        import torch
        from torch.cuda import is_available

        device = "cuda" if torch.cuda.is_available else "cpu"
        if not is_available:
            print("CPU only")
        assert torch.cuda.is_available(), "needs a GPU"
        checks = [torch.cuda.is_available]
        model = torch.nn.Linear(4, 2).to(device)
        """
    )
    assert [line for line, _ in found] == [5, 6]
    assert "write torch.cuda.is_available()" in found[0][1]
    assert "write is_available()" in found[1][1]


def test_device_thrown_away_in_a_branch_names_the_other_branch_binding():
    found = findings(
        """
        import torch

        def main(cpu_only):
            if not cpu_only:
                dev = torch.device("cuda", 0)
            else:
                torch.device("cpu")
            return torch.nn.Linear(4, 2).to(dev)
        """
    )
    assert [line for line, _ in found] == [8]
    assert "binds 'dev'" in found[0][1] and found[0][1].endswith('write dev = torch.device("cpu")')


def test_device_displayed_at_the_top_level_is_not_reported():
    assert not findings(
        """
        import torch
        torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2).to("cuda")
        """
    )


def test_cuda_flag_never_read_while_moving_with_cuda_is_reported_at_the_flag():
    found = findings(
        """
        import torch as th

        use_cuda = th.cuda.is_available()
        model = th.nn.Linear(4, 2).cuda()
        for step in range(10):
            model(th.randn(8, 4).cuda()).sum().backward()
        """
    )
    assert [line for line, _ in found] == [4]
    assert found[0][1].endswith('device = th.device("cuda" if use_cuda else "cpu"), and move with .to(device)')


def test_cuda_flag_suggestion_binds_no_name_the_file_lacks():
    found = findings(
        """
        from torch import randn
        from torch.cuda import is_available
        from torch.nn import Linear

        use_cuda = is_available()
        model = Linear(4, 2).cuda()
        for step in range(10):
            model(randn(8, 4).cuda()).sum().backward()
        """
    )
    assert [line for line, _ in found] == [6]
    assert found[0][1].endswith('device = "cuda" if use_cuda else "cpu", and move with .to(device)')


def test_cuda_flag_is_silent_when_read_or_when_moves_are_guarded():
    assert not findings(
        """
        import torch
        use_cuda = torch.cuda.is_available()
        model = torch.nn.Linear(4, 2)
        if use_cuda:
            model.cuda()
        """
    )
    assert not findings(
        """
        import torch
        has_gpu = torch.cuda.is_available()
        model = torch.nn.Linear(4, 2)
        if torch.cuda.device_count() > 0:
            model.cuda()
        """
    )


def test_a_device_parameter_never_read_while_the_same_name_is_set_from_elsewhere():
    found = findings(
        """
        import torch

        class Runner:
            def __init__(self, model, device):
                self.device = next(model.parameters()).device

            def run(self, x, device="cuda"):
                return x
        """
    )
    assert [line for line, _ in found] == [5]
    assert found[0][1].endswith("use it: self.device = device")


def test_text_remade_from_itself_in_a_loop_is_followed_once():
    found = findings(
        """
        import torch
        device = torch.device("cuda")
        status = "{}".format(device)
        for step in range(3):
            status = "{} {}".format(status, step)
            print(status)
        model = torch.nn.Linear(4, 2)
        model(torch.ones(1, 4))
        """
    )
    assert [line for line, _ in found] == [3]
    placed = findings(
        """
        import torch
        device = torch.device("cuda")
        name = str(device)
        for step in range(3):
            name = f"{name}"
        model = torch.nn.Linear(4, 2).to(name)
        """
    )
    assert placed == []


def test_a_script_that_runs_no_network_leaves_nothing_on_the_cpu():
    # a weight converter: no computation runs, so an unused device changes nothing
    assert not findings(
        """
        import torch

        def convert(source, target):
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            print("converting on", device)
            state = torch.load(source, map_location="cpu")
            torch.save({k.replace("module.", ""): v.half() for k, v in state.items()}, target)
        """
    )
    # ... but a pipeline it builds and calls runs a network, on the CPU
    found = findings(
        """
        import torch
        from diffusers import DiffusionPipeline

        def render(prompt):
            device = "cuda" if torch.cuda.is_available() else "cpu"
            pipe = DiffusionPipeline.from_pretrained("some/model")
            return pipe(prompt).images[0]
        """
    )
    assert [line for line, _ in found] == [6]
    assert "stay on the CPU" in found[0][1]


def test_an_ignored_device_parameter_names_the_check_that_trusts_the_record():
    found = findings(
        """
        import torch

        class Anchors:
            def __init__(self, boxes, device):
                self.boxes = boxes
                self.device = torch.device("cpu")

            def to(self, device):
                if self.device == device:
                    return self
                return Anchors(self.boxes.to(device), device)
        """
    )
    assert [line for line, _ in found] == [5]
    assert "every instance records that device" in found[0][1]
    assert "to() decides by 'self.device == device' on that record" in found[0][1]
    assert found[0][1].endswith("use it: self.device = device")


def test_a_device_parameter_a_local_of_its_name_overwrites_is_no_ignored_record():
    # The parameter is kept for the signature the class must match; nothing records another device.
    found = findings(
        """
        import torch

        class Rotary(torch.nn.Module):
            def __init__(self, dim, device=None, config=None):
                super().__init__()
                if config is not None:
                    device = config.device
                self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2) / dim))
        """
    )
    assert found == []


def test_a_long_placement_is_named_by_its_callee_and_the_argument_that_places():
    found = findings(
        """
        import torch

        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            cache = Cache()
            cache.build_tables(sequence_length=4096, device=torch.device("cuda", 1), dtype=torch.float16)
            model = torch.nn.Linear(4, 2)
            model(torch.ones(1, 4))
        """
    )
    assert len(found) == 1
    assert "'cache.build_tables(..., device=torch.device(\"cuda\", 1), ...)'" in found[0][1]


def test_a_question_to_torch_cuda_about_a_device_is_no_placement_the_message_names():
    found = findings(
        """
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        print(torch.cuda.get_device_capability(device=None), torch.cuda.mem_get_info(device=0))
        model = torch.nn.Linear(4, 2)
        for step in range(10):
            model(torch.randn(8, 4)).sum().backward()
        """
    )
    assert [line for line, _ in found] == [3]
    assert "nothing is placed on it" in found[0][1] and "get_device_capability" not in found[0][1]
