"""Code a message suggests is code the user can paste where the finding points: every suggested
statement parses, appears verbatim in the message, and reads only names bound at that place
(a builtin, or a name bound in that scope or an enclosing one). Checked as a property over every
finding that the fixtures and the rule pages' examples produce, and on shapes where the obvious
wording would name something that does not exist."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from torchlint import engine, pages, registry
from torchlint.config import Settings
from torchlint.model import Model

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((ROOT / "fixtures").glob("*.py"))] + [
    (f"{code}-{example.tag}-{index}", example.code)
    for code in registry.all_codes()
    for index, example in enumerate(pages.examples(pages.page(code) or ""))
    if example.tag == "bad"
]


def unbound_names(model: Model, suggestion: str, at) -> list[str]:
    """Names the suggestion reads that are not bound at ``at``; names its own comprehensions
    bind are its own."""
    tree = ast.parse(suggestion)
    own = {
        node.id
        for comprehension in ast.walk(tree)
        if isinstance(comprehension, ast.comprehension)
        for node in ast.walk(comprehension.target)
        if isinstance(node, ast.Name)
    }
    return [
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in own
        and not model.visible(node.id, at)
    ]


def problems(name: str, source: str) -> tuple[list[str], int]:
    analysis = engine.analyze(source, f"{name}.py" if not name.endswith(".py") else name, Settings(preview=True))
    if analysis.module is None or not analysis.findings:
        return [], 0
    model = Model(analysis.module)
    found, count = [], 0
    for code, finding in analysis.findings:
        for suggestion in finding.suggestions:
            count += 1
            where = f"{name}: {code} suggests {suggestion!r}"
            if suggestion not in finding.message:
                found.append(f"{where}, which its message does not show")
                continue
            try:
                missing = unbound_names(model, suggestion, finding.suggested_at or finding.node)
            except SyntaxError:
                found.append(f"{where}, which does not parse")
                continue
            if missing:
                found.append(f"{where}, which reads unbound {missing}")
    return found, count


def test_every_suggestion_in_fixtures_and_pages_parses_and_uses_bound_names():
    found, count = [], 0
    for name, source in SOURCES:
        more, suggested = problems(name, source)
        found += more
        count += suggested
    assert not found, "\n".join(found)
    assert count >= 20  # the property is exercised, not vacuous


SHAPES = {
    # a converted temporary has no variable to assign to: no `torch.ones(1) = ...`
    "temporary": """
        import numpy as np
        import torch
        x = torch.from_numpy(np.zeros(3))
        x.float().cuda()
    """,
    # the epoch loop counts with `_`: no `set_epoch(epoch)`
    "underscore epoch": """
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        def main(dataset, model, optimizer, epochs):
            loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
            for _ in range(epochs):
                for batch in loader:
                    model(batch).sum().backward()
                    optimizer.step()
    """,
    # the code places with a literal and `.cuda()`, no variable named device exists
    "literal device": """
        import torch
        from torch import nn
        def run(loader):
            net = nn.Linear(4, 2)
            for x in loader:
                net(x.to("cuda"))
    """,
    "cuda calls": """
        import torch
        from torch import nn
        def run(loader):
            net = nn.Linear(4, 2)
            for x in loader:
                net(x.cuda())
    """,
    # the module is moved in one function, its inputs come in another: that function's device
    # name is not bound where the input is
    "device of another function": """
        import torch
        from torch import nn
        from torch.utils.data import DataLoader
        def build(device):
            return nn.Linear(4, 2).to(device)
        def evaluate(net, dataset):
            for x in DataLoader(dataset):
                net(x)
        evaluate(build(torch.device("cuda")), [])
    """,
    # no world_size variable: the division names torch.distributed through the script's import
    "no world size": """
        import argparse
        import torch.distributed as dist
        from torch.utils.data import DataLoader, DistributedSampler
        p = argparse.ArgumentParser()
        p.add_argument("--batch-size", type=int, default=256, help="total batch size across all GPUs")
        args = p.parse_args()
        dist.init_process_group("nccl")
        loader = DataLoader(make(), batch_size=args.batch_size, sampler=DistributedSampler(make()))
    """,
}


@pytest.mark.parametrize("shape", SHAPES)
def test_suggestions_on_shapes_with_no_obvious_names(shape):
    found, _ = problems(shape, textwrap.dedent(SHAPES[shape]))
    assert not found, "\n".join(found)


def test_what_is_suggested_in_those_shapes():
    def messages(shape):
        return [f.message for _, f in engine.analyze(textwrap.dedent(SHAPES[shape]), "s.py", Settings(preview=True)).findings]

    assert any("write x = x.float().cuda()" in m for m in messages("temporary"))
    assert any("call its set_epoch with the epoch number" in m for m in messages("underscore epoch"))
    assert any("call net.to(\"cuda\")" in m for m in messages("literal device"))
    assert any("call net.cuda()" in m for m in messages("cuda calls"))
    assert any("move it to the module's device first" in m for m in messages("device of another function"))
    assert any("pass args.batch_size // dist.get_world_size()" in m for m in messages("no world size"))
