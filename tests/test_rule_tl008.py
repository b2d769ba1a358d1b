"""TL008 jit-trace-device-baked: traced on one device (CUDA or CPU), then used on the other."""

from __future__ import annotations

import textwrap

import pytest

from conftest import lint

HEADER = """\
import torch
import torchvision
model = torchvision.models.resnet18()
"""


def tl008(body: str):
    return [d for d in lint(HEADER + textwrap.dedent(body)) if d.code == "TL008"]


@pytest.mark.parametrize(
    "body",
    [
        # saved, then reloaded on CPU by the same script
        "model = model.cuda().eval()\nexample = torch.rand(1, 3, 224, 224).cuda()\n"
        "traced = torch.jit.trace(model, example)\ntraced.save('m.pt')\n"
        "cpu_model = torch.jit.load('m.pt', map_location='cpu')\n",
        # torch.jit.save, a path in a variable, map_location as a torch.device
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nmodel.to(device)\n"
        "path = 'export/model.pt'\ntraced = torch.jit.trace(model, torch.rand(1, 3, 224, 224, device=device))\n"
        "torch.jit.save(traced, path)\nreloaded = torch.jit.load(path, map_location=torch.device('cpu'))\n",
        # moved to CPU after tracing
        "model.cuda()\ntraced = torch.jit.trace(model, torch.rand(1, 3, 224, 224).cuda())\ntraced = traced.cpu()\n",
        # the example alone is on CUDA; a frozen copy is what gets saved
        "x = torch.rand(1, 3, 224, 224, device='cuda')\ntraced = torch.jit.freeze(torch.jit.trace(model.cuda(), x))\n"
        "traced.save('resnet18_cpu.pt')\n",
        # returned by a helper, saved and reloaded on CPU by its caller
        "def export(net, x):\n    net.cuda()\n    return torch.jit.trace(net, x.cuda())\n"
        "traced = export(model, torch.rand(1, 3, 224, 224))\ntraced.save('m.pt')\n"
        "check = torch.jit.load('m.pt', map_location='cpu')\n",
        # called with CPU inputs afterwards
        "traced = torch.jit.trace(model.cuda(), torch.rand(1, 3, 224, 224).cuda())\nout = traced(torch.rand(1, 3, 224, 224))\n",
    ],
)
def test_reports_a_cuda_trace_used_on_cpu(body):
    (finding,) = tl008(body)
    assert "\n" not in finding.message


def test_points_at_the_trace_call():
    body = "model.cuda()\nx = torch.rand(2, 3).cuda()\ntraced = torch.jit.trace(model, x)\ntraced.save('m_cpu.pt')\n"
    (finding,) = tl008(body)
    assert (finding.line - HEADER.count("\n"), finding.column) == (3, 10)
    assert finding.message == (
        "'model' is traced on a CUDA device and it is saved as 'm_cpu.pt': a trace records the devices it sees "
        "as constants (tensors made in forward, .to(x.device) calls) that no later move changes, so on CPU it can "
        "still reach for cuda; "
        "call .cpu() on the model and the example before torch.jit.trace"
    )


@pytest.mark.parametrize(
    "body",
    [
        # traced after moving back to the CPU
        "model.cuda()\ntrain(model)\nmodel.cpu()\ntraced = torch.jit.trace(model, torch.rand(1, 3, 224, 224))\n"
        "traced.save('m.pt')\nreloaded = torch.jit.load('m.pt', map_location='cpu')\n",
        # traced and used only on the GPU
        "model.cuda()\nx = torch.rand(8, 3, 224, 224, device='cuda')\ntraced = torch.jit.trace(model, x)\nout = traced(x)\n",
        # saved with nothing in the file saying where it will run
        "model.cuda()\ntraced = torch.jit.trace(model, torch.rand(1, 3, 224, 224).cuda())\ntraced.save(out_path)\n",
        # reloaded on the GPU
        "model.cuda()\ntraced = torch.jit.trace(model, torch.rand(1, 3, 224, 224).cuda())\ntraced.save('m.pt')\n"
        "reloaded = torch.jit.load('m.pt', map_location='cuda:0')\n",
        # a different file is reloaded on the CPU
        "model.cuda()\ntraced = torch.jit.trace(model, torch.rand(1, 3, 224, 224).cuda())\ntraced.save('a.pt')\n"
        "other = torch.jit.load('b.pt', map_location='cpu')\n",
        # never on a device at all
        "traced = torch.jit.trace(model, torch.rand(1, 3, 224, 224))\ntraced.save('m_cpu.pt')\n",
        # traced on the CPU and reloaded there; the GPU copy is another, untraced module
        "traced = torch.jit.trace(model, torch.rand(1, 3, 224, 224))\ntraced.save('m.pt')\n"
        "served = torch.jit.load('m.pt', map_location='cpu')\ngpu_model = torchvision.models.resnet18().cuda()\n",
        # an example whose place is unknown (a parameter) says nothing about the CPU
        "def export(x):\n    return torch.jit.trace(model, x)\ntraced = export(batch)\ntraced.cuda()\n",
    ],
)
def test_silent_when_traced_where_it_runs_or_no_evidence_of_the_other_device(body):
    assert tl008(body) == []


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("traced = torch.jit.trace(model, torch.rand(1, 3, 224, 224))\ntraced = traced.to('cuda')\n",
         "it is then moved with .to('cuda')"),
        ("traced = torch.jit.trace(model, torch.rand(1, 3, 224, 224))\ntorch.jit.save(traced, 'm.pt')\n"
         "served = torch.jit.load('m.pt', map_location='cuda:0')\n", "it is saved and reloaded with map_location on a GPU"),
        ("traced = torch.jit.trace(model, torch.rand(1, 3, 224, 224))\n"
         "out = traced(torch.rand(8, 3, 224, 224, device='cuda'))\n", "it is then called with CUDA inputs"),
    ],
)
def test_reports_a_cpu_trace_run_on_cuda_and_says_so(body, where):
    (finding,) = tl008(body)
    assert finding.message.startswith(f"'model' is traced on the CPU and {where}")
    assert "move the model and the example to the GPU before torch.jit.trace" in finding.message
