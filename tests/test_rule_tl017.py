"""TL017 softmax-before-cross-entropy: probabilities given to a loss that expects logits or
log-probabilities."""

from conftest import lint


def findings(source):
    return [d for d in lint(source) if d.code == "TL017"]


MODELS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class SoftmaxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return self.softmax(self.fc(x))


class EvalSoftmaxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        out = self.fc(x)
        if self.training:
            return out
        return F.softmax(out, dim=1)


class NamedLogSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, x):
        return self.softmax(self.fc(x))
"""


def test_softmax_before_cross_entropy_in_every_form():
    found = findings(
        MODELS
        + """
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
criterion = nn.CrossEntropyLoss()
a = criterion(SoftmaxNet()(x), y)
probs = F.softmax(EvalSoftmaxNet()(x), dim=1)
b = F.cross_entropy(probs, y)
c = F.cross_entropy(input=torch.softmax(x, -1).view(8, 4), target=y)
d = criterion(nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))(x), y)
"""
    )
    assert [d.line for d in found] == [40, 42, 43, 44]
    assert "a model whose forward ends in a softmax" in found[0].message
    assert "pass the logits (drop the softmax)" in found[1].message


def test_nll_loss_fed_probabilities():
    (found,) = findings(
        MODELS
        + """
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
probs = x.softmax(dim=1)
loss = nn.NLLLoss()(probs, y)
"""
    )
    assert "NLLLoss expects log-probabilities" in found.message
    assert "use log_softmax instead of softmax" in found.message


def test_log_probabilities_logits_metrics_and_soft_targets_are_silent():
    assert not findings(
        MODELS
        + """
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
model = EvalSoftmaxNet()
a = F.cross_entropy(model(x), y)
b = nn.NLLLoss()(NamedLogSoftmax()(x), y)
probs = F.softmax(model(x), dim=1)
c = F.nll_loss(torch.log(probs), y)
d = F.nll_loss(probs.log(), y)
accuracy = (probs.argmax(1) == y).float().mean()
e = F.cross_entropy(model(x), probs)
"""
    )


def test_a_name_that_is_probabilities_on_one_path_only_is_silent():
    assert not findings(
        MODELS
        + """
def loss_of(x, y, calibrated):
    scores = F.softmax(x, dim=1) if calibrated else x
    out = x
    if calibrated:
        out = F.softmax(x, dim=1)
    return F.cross_entropy(scores, y) + F.cross_entropy(out, y)
"""
    )


def test_exp_of_a_log_softmax_and_rows_of_probabilities_are_probabilities():
    found = findings(
        """
import torch
import torch.nn as nn
import torch.nn.functional as F

log_softmax = nn.LogSoftmax(dim=1)
criterion = nn.CrossEntropyLoss()

def losses(scores, targets):
    a = criterion(torch.exp(log_softmax(scores)), targets)
    b = F.cross_entropy(F.log_softmax(scores, 1).exp(), targets)
    total = 0
    for row in torch.softmax(scores, -1):
        total += criterion(row, targets)
    c = F.cross_entropy(torch.exp(scores), targets)
    return a + b + total + c
"""
    )
    assert [d.line for d in found] == [10, 11, 14]


def test_a_test_function_is_not_reported():
    assert not findings(
        """
import torch
import torch.nn.functional as F

def test_one_step_under_mixed_precision():
    logits = torch.randn(2, 3, requires_grad=True)
    loss = F.cross_entropy(F.softmax(logits, dim=1), torch.ones(2, dtype=torch.long))
    loss.backward()
"""
    )


def test_a_test_suites_helper_that_makes_gradients_is_not_reported():
    helper = """
import torch
from torch import nn

def tiny_model_with_grads():
    model = nn.Sequential(nn.Linear(2, 2), nn.Softmax(dim=1))
    nn.CrossEntropyLoss()(model(torch.rand(4, 2)), torch.zeros(4, dtype=torch.long)).backward()
    return model
"""
    assert not [d for d in lint(helper, path="tests/helpers.py") if d.code == "TL017"]
    assert [d.line for d in lint(helper, path="train.py") if d.code == "TL017"] == [7]
