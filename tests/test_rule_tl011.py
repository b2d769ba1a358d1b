"""TL011 zero-grad-missing: an optimizer steps in a training loop that never clears gradients."""

import pytest

from conftest import lint

HEADER = """
import torch
from torch.utils.data import DataLoader
"""


def findings(body):
    return [(d.line - HEADER.count("\n"), d.message) for d in lint(HEADER + body) if d.code == "TL011"]


def test_step_without_reset_is_reported_at_the_step():
    found = findings(
        """
def train(model, dataset):
    optimizer = torch.optim.Adam(model.parameters())
    for x, y in DataLoader(dataset):
        model(x).sum().backward()
        optimizer.step()
"""
    )
    assert [line for line, _ in found] == [6]
    assert "optimizer.zero_grad()" in found[0][1] and "sum of every earlier step" in found[0][1]


def test_scaler_step_and_a_step_loop_without_loader():
    found = findings(
        """
def train(model, batches, steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(steps):
        scaler.scale(model(batches[step]).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
"""
    )
    assert [line for line, _ in found] == [7]


def test_step_in_a_helper_called_from_the_loop():
    found = findings(
        """
def step(model, optimizer, x):
    model(x).sum().backward()
    optimizer.step()


def train(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(dataset):
        step(model, optimizer, x)
"""
    )
    assert [line for line, _ in found] == [4]


def test_every_kind_of_reset_counts():
    assert not findings(
        """
def set_to_none(model):
    for p in model.parameters():
        p.grad = None


def reset_in_place(model, optimizer, loader):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
        for p in model.parameters():
            p.grad.zero_()


def through_helper(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(dataset):
        model(x).sum().backward()
        optimizer.step()
        set_to_none(model)


def on_the_model(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(dataset):
        model.zero_grad()
        model(x).sum().backward()
        optimizer.step()
"""
    )


def test_unknown_optimizers_handed_over_optimizers_and_no_backward_are_silent():
    assert not findings(
        """
from project import clip_and_step


def framework(engine, dataset):
    for x in DataLoader(dataset):
        loss = engine(x).sum()
        engine.backward(loss)
        engine.step()


def handed_over(model, dataset):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(dataset):
        model(x).sum().backward()
        clip_and_step(model, optimizer)
        optimizer.step()


def manual_gradients(model, dataset, grads):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(dataset):
        optimizer.step()
"""
    )


def test_tests_and_optimizers_built_per_iteration_are_silent():
    assert not findings(
        """
def test_training_changes_weights(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    for _ in range(2):
        model(torch.ones(1)).sum().backward()
        optimizer.step()


def guide(latents, unet, steps):
    for t in range(steps):
        x = latents.detach().clone().requires_grad_()
        optimizer = torch.optim.SGD([x], lr=0.1)
        unet(x, t).sum().backward()
        optimizer.step()
"""
    )


def test_a_function_named_test_is_an_evaluation_helper_not_a_test():
    assert findings(
        """
def test(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
"""
    )



GAN_LOOP = """
def train(generator, critic, dataset):
    opt_g = torch.optim.Adam(generator.parameters())
    opt_c = torch.optim.Adam(critic.parameters())
    for x in DataLoader(dataset):
        {critic_reset}
        fake = generator(x)
        critic(fake.detach()).mean().backward()
        opt_c.step()
        opt_g.zero_grad()
        critic(fake).mean().backward()
        opt_g.step()
"""


@pytest.mark.parametrize(
    ("critic_reset", "reported"),
    [
        ("pass", [(9, "opt_c")]),  # opt_g.zero_grad() clears only the generator's parameters
        ("critic.zero_grad()", []),  # a module's reset may clear any optimizer's gradients
    ],
)
def test_only_this_optimizers_or_a_modules_reset_clears_its_gradients(critic_reset, reported):
    found = findings(GAN_LOOP.format(critic_reset=critic_reset))
    assert [(line, message.split("'")[1]) for line, message in found] == reported
