"""TL012 grad-accum-loss-not-scaled: accumulated gradients of an undivided loss."""

from conftest import lint

HEADER = """
import torch
from torch.utils.data import DataLoader
"""


def findings(body):
    return [(d.line - HEADER.count("\n"), d.message) for d in lint(HEADER + body) if d.code == "TL012"]


LOOP = """
def train(model, dataset, accum):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(DataLoader(dataset)):
        loss = model(x).sum()
{scaling}
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_unscaled_accumulation_is_reported_at_backward():
    found = findings(LOOP.format(scaling="        pass"))
    assert [line for line, _ in found] == [7]
    assert "write loss = loss / accum before backward()" in found[0][1]


def test_each_way_of_scaling_the_loss_counts():
    for scaling in ("        loss = loss / accum", "        loss /= accum", "        loss = loss * (1.0 / accum)",
                    "        loss = loss.div(accum)"):
        assert not findings(LOOP.format(scaling=scaling)), scaling


def test_a_count_every_caller_sets_to_one_accumulates_nothing():
    body = LOOP.format(scaling="        pass") + "\n\ndef main(model, dataset):\n    train(model, dataset, {count})\n"
    assert not findings(body.format(count="1"))
    assert not findings(body.replace("accum):", "accum=1):").format(count="accum=1"))
    assert [line for line, _ in findings(body.format(count="4"))] == [7]


def test_gradients_cleared_every_iteration_do_not_accumulate():
    assert not findings(
        """
def train(model, dataset, every):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(DataLoader(dataset)):
        optimizer.zero_grad()
        model(x).sum().backward()
        if i % every == 0:
            optimizer.step()
"""
    )


def test_gradients_rescaled_before_the_step():
    assert not findings(
        """
def train(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(DataLoader(dataset)):
        model(x).sum().backward()
        if i % 4 == 3:
            for p in model.parameters():
                p.grad.div_(4)
            optimizer.step()
            optimizer.zero_grad()
"""
    )


def test_literal_count_and_a_loss_from_the_model_output():
    found = findings(
        """
def train(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, batch in enumerate(DataLoader(dataset)):
        outputs = model(**batch)
        outputs.loss.backward()
        if i % 4 == 3:
            optimizer.step()
            optimizer.zero_grad()
"""
    )
    assert [line for line, _ in found] == [6]
    assert "divide the loss by 4 before backward()" in found[0][1]
