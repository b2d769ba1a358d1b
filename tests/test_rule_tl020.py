"""TL020 tensor-created-then-moved: a factory's result moved at once; the fix passes device=."""

import textwrap

from conftest import lint

from torchlint.config import Settings
from torchlint.diagnostics import Applicability
from torchlint.fixes import loop


def findings(source):
    return [d for d in lint(source) if d.code == "TL020"]


def fixed(source, unsafe=False):
    result = loop.fix_bytes(textwrap.dedent(source).encode(), "train.py", Settings(select=("TL020",)), unsafe)
    assert not result.dropped and result.converged
    return result.fixed_text


def test_each_form_of_move_is_reported_at_the_move_with_the_device_it_names():
    found = findings(
        """
        import torch

        def step(x, device):
            a = torch.zeros(3).to(device)
            b = torch.ones(2, 2).cuda()
            c = torch.arange(2).to(device=x.device)
            d = torch.eye(4).cuda(1)
            return a, b, c, d

        for batch in range(3):
            step(batch, "cuda")
        """
    )
    assert [(d.line, d.column) for d in found] == [(5, 9), (6, 9), (7, 9), (8, 9)]
    assert "pass device=device to torch.zeros" in found[0].message
    assert 'pass device="cuda" to torch.ones' in found[1].message
    assert "pass device=1 to torch.eye" in found[3].message


def test_the_fix_moves_device_and_exact_dtypes_into_the_factory():
    source = """
        import torch

        def step(x, device):
            a = torch.zeros(3).to(device, non_blocking=True)
            b = torch.ones(2).to(device=device, dtype=torch.half)
            c = torch.arange(5).to(device, torch.float16)
            d = torch.zeros(4).to(x.device)
            return a, b, c, d

        for batch in range(3):
            step(batch, "cuda")
        """
    text = fixed(source)
    assert "a = torch.zeros(3, device=device)\n" in text
    assert "b = torch.ones(2, device=device, dtype=torch.half)\n" in text
    # arange computed in float16 may round differently: the conversion stays after the factory
    assert "c = torch.arange(5, device=device).to(torch.float16)\n" in text
    assert "d = torch.zeros(4, device=x.device)\n" in text
    assert fixed(text) == text


def test_a_tensor_argument_gives_its_device_and_dtype():
    text = fixed(
        """
        import torch

        from torch.utils.data import DataLoader

        def train(dataset, device):
            for x, y in DataLoader(dataset):
                x = x.to(device)
                mask = torch.ones(3).to(x)
        """
    )
    assert "mask = torch.ones(3, device=x.device, dtype=x.dtype)\n" in text


def test_multiline_factory_keeps_its_layout():
    text = fixed(
        """
        import torch

        def make(device):
            return torch.zeros(
                3,
                4,
            ).to(device)

        for batch in range(3):
            make("cuda")
        """
    )
    assert "        3,\n        4,\n        device=device,\n    )\n" in text
    compile(text, "train.py", "exec")


def test_random_draws_and_leaf_tensors_get_an_unsafe_fix():
    found = findings(
        """
        import torch

        def step(device):
            noise = torch.randn(4).to(device)
            weight = torch.zeros(4, requires_grad=True).to(device)
            return noise, weight

        for batch in range(3):
            step("cuda")
        """
    )
    assert [d.fix.applicability for d in found] == [Applicability.UNSAFE, Applicability.UNSAFE]


def test_silent_on_pinned_staging_host_factories_dtype_conversions_and_host_moves():
    assert not findings(
        """
        import numpy as np
        import torch

        def step(device, dtype, g):
            a = torch.zeros(8, pin_memory=True).to(device, non_blocking=True)
            b = torch.from_numpy(np.ones(3)).to(device)
            c = torch.zeros(3).to(torch.float16)
            d = torch.zeros(3).to(dtype)
            e = torch.zeros(3).cpu()
            f = torch.zeros(3, device=device)
            h = torch.randn(3, generator=g).to(device)
            i = torch.FloatTensor(3).cuda()
            j = torch.bernoulli(torch.full((3,), 0.5)).to(device)
            k = torch.tensor([1.0, 2.0]).to(device)  # from Python data: copied over either way
            m = torch.ones_like(f).to(device)  # made where f is
            return a, b, c, d, e, f, h, i, j, k, m

        for batch in range(3):
            step("cuda", torch.half, None)
        """
    )


def test_silent_on_seeded_random_draws_and_unreadable_targets():
    assert not findings(
        """
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"

        def reference_output(model, device):
            torch.manual_seed(0)
            x = torch.randn(2, 3).to(device)
            return model(x)

        def convert(values, target, options):
            a = torch.tensor(values).to(target)
            b = torch.tensor(values).to(*options)
            return a, b

        for batch in range(3):
            reference_output(None, "cuda")
            convert([batch], "cuda", ())
        """
    )


def test_a_factory_filled_in_place_then_moved_is_reported_without_a_fix():
    (found,) = findings(
        """
        import torch

        def patch(shape, dtype, device):
            return torch.empty(shape, dtype=dtype).normal_().to(device=device)

        for batch in range(3):
            patch((2,), torch.half, "cuda")
        """
    )
    assert "pass device=device to torch.empty" in found.message and found.fix is None


def test_only_a_move_the_file_shows_to_repeat_is_reported():
    found = findings(
        """
        import torch
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint

        device = torch.device("cuda")
        table = torch.zeros(10).to(device)


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = torch.ones(3).to(device)

            def forward(self, x):
                return checkpoint(self._inner, x)

            def _inner(self, x):
                return x * torch.ones(3).to(x.device)


        def per_batch(x):
            return x + torch.ones(3).to(device)


        def library_helper(n):
            return torch.arange(n).to(device)


        def evaluate(batches):
            total = torch.zeros(1).to(device)
            for batch in batches:
                total += batch.sum()
            return total


        start = torch.eye(3).to(device)
        for batch in [table] * 3:
            per_batch(batch)
            evaluate([batch])
            shift = torch.randn(3).to(device)
        """
    )
    # handed to checkpoint in forward, called per batch, in the loop; not: the module body, a
    # constructor, a function with no caller in the file, the setup of a function's own loop
    assert [d.line for d in found] == [19, 23, 41]


def test_a_branch_run_in_one_time_round_only_does_not_repeat_with_its_loop():
    found = findings(
        """
        import torch

        def first_bad(batches, device):
            for batch in batches:
                if batch.isnan().any():
                    return torch.zeros(3).to(device)
            return None

        def logged(batches, device):
            for i, batch in enumerate(batches):
                if i % 10 == 0:
                    print(batch - torch.ones(3).to(device))
                if 0 == i:
                    print(batch - torch.ones(3).to(device))
        """
    )
    # the early return runs once per call; `i % 10 == 0` is taken again and again, `0 == i` once
    assert [d.line for d in found] == [13]


def test_a_time_round_that_runs_a_decoding_loop_of_a_network_in_eval_mode_is_a_pass():
    found = findings(
        """
        import torch
        from decoders import load_decoder

        device = torch.device("cuda")
        decoder = load_decoder("beam.pt").to(device)
        decoder.eval()
        for image in ["a.png", "b.png"]:
            scores = torch.zeros(5, 1).to(device)
            while scores.max() < 10:
                scores = scores + decoder.step(scores, torch.ones(1).to(device))
            for name in ("a", "b"):
                print(name, decoder.vocab_size, torch.arange(5).to(device))
        """
    )
    # the while loop runs the decoder the file put in eval mode: the image's round is a pass;
    # the loop over names runs no network, and a move inside either loop repeats with it
    assert [d.line for d in found] == [11, 13]


def test_a_time_round_that_builds_a_whole_model_is_a_pass():
    found = findings(
        """
        import torch
        import torch.nn as nn
        import torchvision

        device = torch.device("cuda")
        for name in ["resnet18", "resnet50"]:
            net = torchvision.models.get_model(name).to(device)
            print(net(torch.randn(1, 3, 224, 224).to(device)).shape)
        for width in [16, 32]:
            head = nn.Linear(width, 8).to(device)
            print(head(torch.randn(4, width).to(device)).shape)
        """
    )
    # one whole model per configuration: the input's copy is nothing beside the model's; a
    # single layer is no such evidence
    assert [d.line for d in found] == [12]


def test_a_loop_that_trains_only_every_n_rounds_is_a_step_for_the_moves_outside_that_branch():
    found = findings(
        """
        import torch
        import torch.nn as nn

        policy = nn.Linear(4, 2).to("cuda")
        optimizer = torch.optim.Adam(policy.parameters())

        def update(memory):
            for _ in range(4):
                loss = policy(torch.stack(memory)).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

        memory = []
        for step in range(10000):
            noise = torch.randn(4).to("cuda")
            memory.append(policy(noise))
            if step % 100 == 0:
                weights = torch.ones(4).to("cuda")
                update([m * weights[:2] for m in memory])
        """
    )
    # every environment step draws on the host; the weights are set up once per update
    assert [d.line for d in found] == [17]


def test_a_cache_filled_on_the_first_call_and_a_library_seeded_draw_are_not_reported():
    found = findings(
        """
        import torch
        import torch.nn as nn
        from monai.utils import set_determinism


        class Kernel(nn.Module):
            def __init__(self):
                super().__init__()
                self.positions = None

            def forward(self, x):
                if self.positions is None:
                    self.positions = torch.linspace(-1.0, 1.0, x.shape[-1]).to(x.device)
                grid = torch.linspace(-1.0, 1.0, x.shape[-1]).to(x.device)
                return x * self.positions * self.mask_for(x) + grid

            def mask_for(self, x, mask=None):
                if mask is None:
                    mask = torch.ones(x.shape[0], x.shape[-1]).to(x.device)
                return mask


        def sample(model, count, device):
            set_determinism(42)
            for _ in range(count):
                noise = torch.randn(1, 4, 16, 16).to(device)
                model(noise)

        sample(Kernel(), 4, "cuda" if torch.cuda.is_available() else "cpu")
        """
    )
    # the grid is made anew on every forward, and so is a mask the caller leaves out; the cached
    # positions only the first time
    assert [d.line for d in found] == [15, 20]


def test_a_seeded_draw_is_kept_on_the_host_only_where_the_device_is_picked_at_run_time():
    program = """
        import torch

        def sample(model, count, device):
            torch.manual_seed(0)
            for _ in range(count):
                model(torch.randn(1, 4).to(device))

        sample(torch.nn.Linear(4, 2), 8, {device})
        """
    # the same numbers on the CPU and on a GPU; pinned to CUDA, the host draw buys nothing
    assert not findings(program.replace("{device}", '"cuda" if torch.cuda.is_available() else "cpu"'))
    assert [d.line for d in findings(program.replace("{device}", '"cuda"'))] == [7]
    # nor where the same function draws on the device anyway
    beside = program.replace("model(torch.randn(1, 4).to(device))", "x = torch.ones(1, 4).to(device)\n                model(torch.randn(1, 4).to(device) + torch.randn_like(x))")
    assert [d.line for d in findings(beside.replace("{device}", '"cuda" if torch.cuda.is_available() else "cpu"'))] == [7, 8]


def test_test_code_is_not_reported():
    assert not findings(
        """
        import torch

        def test_runs_on_the_gpu():
            for _ in range(3):
                x = torch.randn(4).cuda()
                assert x.sum().isfinite()
        """
    )


def test_a_gradient_check_of_an_operator_is_test_code():
    source = """
        import torch
        {imports}

        torch.manual_seed(0)

        def check(channels):
            x = torch.rand(2, channels).cuda().double().requires_grad_()
            return gradcheck(torch.sigmoid, (x,))

        for channels in range(4, 20, 4):
            check(channels)
        """
    assert not findings(source.replace("{imports}", "from torch.autograd import gradcheck"))
    assert [d.line for d in findings(source.replace("{imports}", "from checks import gradcheck"))] == [8]


def test_a_tensor_with_a_dimension_of_size_zero_copies_nothing_and_is_not_reported():
    found = findings(
        """
        import torch

        HISTORY = 0

        def step(x, heads):
            empty = torch.zeros(x.size(0), 0, 8).to(x.device)
            keys = torch.empty(size=(x.size(0), heads, HISTORY, 8)).to(x.device)
            labels = torch.full((x.size(0), 0), -100).to(x.device)
            drawn = torch.randint(0, 10, (0,)).to(x.device)
            filled = torch.full((x.size(0), 4), 0).to(x.device)
            counts = torch.randint(0, 10, (3,)).to(x.device)
            return empty, keys, labels, drawn, filled, counts

        for batch in range(3):
            step(batch, 4)
        """
    )
    # `full`'s fill value and `randint`'s lower bound are no dimensions
    assert [d.line for d in found] == [11, 12]
