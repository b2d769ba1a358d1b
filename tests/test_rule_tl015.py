"""TL015 eval-mode-missing and TL016 train-mode-not-restored: modes across training and
evaluation passes."""

from conftest import lint

HEADER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
"""


def findings(body, code):
    return [(d.line - HEADER.count("\n"), d.message) for d in lint(HEADER + body) if d.code == code]


TRAIN = """
def fit(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
{validation}


def main(train_set, val_set):
    model = {model}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, optimizer, DataLoader(train_set), DataLoader(val_set), 10)
"""
DROPOUT = "nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))"


def test_evaluation_pass_after_train_is_reported_at_the_module_call():
    source = TRAIN.format(
        validation="""        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))""",
        model=DROPOUT,
    )
    found = findings(source, "TL015")
    assert [line for line, _ in found] == [11]
    assert "'model.train()' set it for the training steps before" in found[0][1] and "call model.eval()" in found[0][1]


def test_one_missing_eval_is_reported_once_for_the_passes_of_one_function():
    source = TRAIN.format(
        validation="""        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))
            for x, y in train_loader:
                print(model(x))""",
        model=DROPOUT,
    )
    assert [line for line, _ in findings(source, "TL015")] == [11]


def test_eval_before_the_pass_or_no_mode_dependent_layer_is_silent():
    evaluated = """        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))"""
    assert not findings(TRAIN.format(validation=evaluated, model=DROPOUT), "TL015")
    plain = """        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))"""
    assert not findings(TRAIN.format(validation=plain, model="nn.Linear(4, 4)"), "TL015")


def test_mode_set_by_unknown_code_is_unknown():
    unknown = """        from project import evaluate
        evaluate(model)
        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))"""
    assert not findings(TRAIN.format(validation=unknown, model=DROPOUT), "TL015")


def test_zoo_models_and_same_file_classes_reading_self_training_count():
    for model in ("torchvision.models.resnet18()", "Noisy()"):
        source = """
import torchvision


class Noisy(nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x) if self.training else x
""" + TRAIN.format(validation="""        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))""", model=model)
        assert len(findings(source, "TL015")) == 1, model


def test_train_mode_set_for_the_pass_itself_is_intended():
    """Re-estimating batch norm statistics: train() right before a no_grad pass, no training
    step in between."""
    source = """
def recalibrate(model, loader):
    model.train()
    with torch.no_grad():
        for x in loader:
            model(x)


recalibrate(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)), DataLoader([]))
"""
    assert not findings(source, "TL015")


def test_eval_left_on_for_the_next_epoch_is_reported_by_tl016():
    source = """
def fit(model, optimizer, train_loader, val_loader, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))


def main(train_set, val_set):
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, optimizer, DataLoader(train_set), DataLoader(val_set), 10)
"""
    found = findings(source, "TL016")
    assert [line for line, _ in found] == [7]
    assert "'model.eval()' leaves it in eval mode" in found[0][1] and "call model.train()" in found[0][1]
    assert not findings(source.replace("    for epoch in range(epochs):\n", "    for epoch in range(epochs):\n        model.train()\n"), "TL016")


def test_conditional_eval_in_a_helper_is_unknown_for_tl016():
    source = """
def maybe_validate(model, loader, enabled):
    if enabled:
        model.eval()


def fit(model, optimizer, train_loader, val_loader, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        maybe_validate(model, val_loader, epoch % 5 == 0)


def main(train_set, val_set):
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, optimizer, DataLoader(train_set), DataLoader(val_set), 10)
"""
    assert not findings(source, "TL016")


def test_validation_before_the_step_of_its_iteration_is_reported_by_tl016_with_where_to_restore():
    source = """
def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(nn.functional.mse_loss(model(x), y).item() for x, y in loader)


def fit(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        model.train()
        for step, (x, y) in enumerate(train_loader):
            if step % 100 == 0:
                validate(model, val_loader)
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()


def main(train_set, val_set):
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    fit(model, optimizer, DataLoader(train_set), DataLoader(val_set), 10)
"""
    found = findings(source, "TL016")
    assert [line for line, _ in found] == [15]
    assert "after the validation in this loop: 'validate(...)' leaves it in eval mode" in found[0][1]
    assert found[0][1].endswith("call model.train() after it")
    restored = source.replace("validate(model, val_loader)\n", "validate(model, val_loader)\n                model.train()\n")
    assert not findings(restored, "TL016")
    # an eval() before the loops may freeze batch norm on purpose, even with a pass after it
    frozen = source.replace("    for epoch in range(epochs):\n        model.train()\n", "    validate(model, val_loader)\n    for epoch in range(epochs):\n")
    frozen = frozen.replace("            if step % 100 == 0:\n                validate(model, val_loader)\n", "")
    assert not findings(frozen, "TL016")


def test_modes_set_through_apply_count_as_train_and_eval():
    source = TRAIN.format(
        validation="""        model.apply(nn.Module.eval)
        with torch.no_grad():
            for x, y in val_loader:
                print(model(x))""",
        model=DROPOUT,
    )
    assert not findings(source, "TL015")
    assert not findings(source.replace("model.apply(nn.Module.eval)", "model.apply(lambda m: m.eval())"), "TL015")
    # a same-file function that switches some layers may leave either mode; one that does not is no event
    freeze = "\n\ndef freeze_norms(m):\n    if isinstance(m, nn.BatchNorm1d):\n        m.eval()\n"
    assert not findings(freeze + source.replace("nn.Module.eval", "freeze_norms"), "TL015")
    init = "\n\ndef init_weights(m):\n    if isinstance(m, nn.Linear):\n        nn.init.zeros_(m.bias)\n"
    assert [line for line, _ in findings(init + source.replace("nn.Module.eval", "init_weights"), "TL015")] == [17]

    evaluated = source.replace("model.apply(nn.Module.eval)", "model.eval()")
    assert not findings(evaluated.replace("model.train()", "model.apply(torch.nn.Module.train)"), "TL016")
    assert [line for line, _ in findings(evaluated.replace("model.train()", "pass"), "TL016")] == [7]
    # a function the file does not show may set either mode
    assert not findings(evaluated.replace("model.train()", "model.apply(configure_layers)"), "TL016")
