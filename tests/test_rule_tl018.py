"""TL018 loss-accumulated-with-graph: running totals that keep every step's graph."""

from conftest import lint

from torchlint import engine
from torchlint.config import Settings
from torchlint.fixes import loop

HEADER = """
import torch
from torch.utils.data import DataLoader
"""

LOOP = """
def train(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total, history = 0.0, []
    for x, y in DataLoader(dataset):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
{accumulate}
    return total, history
"""


def findings(body):
    return [(d.line - HEADER.count("\n"), d.message) for d in lint(HEADER + body) if d.code == "TL018"]


def test_each_accumulation_form_is_reported_at_the_accumulated_value():
    for accumulate in ("        total += loss", "        total = total + loss * x.size(0)",
                       "        history.append(loss)", "        history += [loss.mean()]"):
        found = findings(LOOP.format(accumulate=accumulate))
        assert [line for line, _ in found] == [10], accumulate
        assert "accumulate" in found[0][1] and ".detach()" in found[0][1]


def test_detached_values_are_fine():
    for accumulate in ("        total += loss.item()", "        history.append(loss.detach())",
                       "        total += float(loss)", "        history.append(loss.data)"):
        assert not findings(LOOP.format(accumulate=accumulate)), accumulate


def test_a_list_that_keeps_a_window_of_the_last_steps_is_fine():
    for accumulate in ("        history.append(loss)\n        del history[:-4]", "        history.append(loss)\n        history.pop(0)",
                       "        history.append(loss)\n        if len(history) > 8:\n            history.clear()"):
        assert not findings(LOOP.format(accumulate=accumulate)), accumulate
    bounded = LOOP.replace("total, history = 0.0, []", "total, history = 0.0, collections.deque(maxlen=4)")
    assert not findings("import collections\n" + bounded.format(accumulate="        history.append(loss)"))
    unbounded = LOOP.replace("total, history = 0.0, []", "total, history = 0.0, collections.deque()")
    assert findings("import collections\n" + unbounded.format(accumulate="        history.append(loss)"))


def test_a_total_reset_each_iteration_or_backpropagated_is_fine():
    assert not findings(
        """
def unrolled(model, sequences, optimizer):
    for sequence in DataLoader(sequences):
        loss = 0
        for step in sequence:
            loss = loss + model(step).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def per_step(model, dataset, optimizer):
    for x in DataLoader(dataset):
        step_losses = []
        loss = model(x).sum()
        loss.backward()
        step_losses.append(loss)
        optimizer.step()
        optimizer.zero_grad()
"""
    )


def test_loss_returned_by_a_training_step_helper():
    found = findings(
        """
def step(model, optimizer, x):
    optimizer.zero_grad()
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    return loss


def train(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x in DataLoader(dataset):
        losses.append(step(model, optimizer, x))
    return losses
"""
    )
    assert [line for line, _ in found] == [14]


def test_fix_detaches_the_value():
    source = HEADER + LOOP.format(accumulate="        total += loss * x.size(0)")
    result = loop.fix_bytes(source.encode(), "train.py", Settings(), unsafe=False)
    assert "total += (loss * x.size(0)).detach()" in result.fixed_text
    assert not [d for d in engine.check_source(result.fixed_text, "train.py", Settings()) if d.code == "TL018"]


def test_a_total_reset_at_each_optimizer_step_or_detached_on_the_backward_path_is_fine():
    assert not findings(
        """
def accumulate(model, dataset, optimizer, every):
    running = 0
    for i, x in enumerate(DataLoader(dataset)):
        loss = model(x).sum()
        running += loss
        loss.backward()
        if (i + 1) % every == 0:
            optimizer.step()
            optimizer.zero_grad()
            print(running.item())
            running = 0


def chunks(model, pieces, with_backward):
    losses = []
    for piece in pieces:
        loss = model(piece).sum()
        if with_backward:
            loss.backward()
            loss = loss.detach()
        losses.append(loss)
    return sum(losses)
"""
    )
