"""TL019 numpy-in-forward: input data taken out of torch in forward and put back into a tensor."""

from conftest import lint

from torchlint.config import Settings

ONLY_TL019 = Settings(select=("TL019",), preview=True)  # a preview rule: it runs in preview mode


def findings(source):
    return [d for d in lint(source, settings=ONLY_TL019) if d.code == "TL019"]


def test_a_preview_rule_runs_only_in_preview_mode():
    roundtrip = """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return x / x.sum().item()
        """
    assert findings(roundtrip)
    for select in ((), ("TL",), ("ALL",), ("TL01",), ("TL019",)):
        settings = Settings(select=select) if select else Settings()
        assert not [d for d in lint(roundtrip, settings=settings) if d.code == "TL019"], select
        assert [d for d in lint(roundtrip, settings=Settings(select=select or ("TL",), preview=True)) if d.code == "TL019"]


MODEL = """
import numpy as np
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x, lengths):
        h = self.fc(x)
{body}
        return h
"""


def in_forward(body):
    lines = "\n".join("        " + line for line in body.strip().splitlines())
    return findings(MODEL.format(body=lines))


def test_a_number_that_scales_input_data_is_reported_at_the_conversion():
    (found,) = in_forward("scale = h.abs().max().item()\nh = h / scale")
    assert (found.line, found.column) == (14, 17)
    assert "turns 'h.abs().max()', computed from its inputs, into a Python number with .item()" in found.message
    assert "('h / scale')" in found.message


def test_a_numpy_round_trip_is_reported_also_when_detached_and_through_numpy_calls():
    (found,) = in_forward("w = torch.from_numpy(np.exp(h.detach().cpu().numpy()))\nh = h * w")
    assert "turns 'h', computed from its inputs, into a NumPy array with .numpy()" in found.message
    (found,) = in_forward("a = np.asarray(x.cpu())\nh = h + torch.tensor(a.mean(axis=0))")
    assert "np.asarray()" in found.message


def test_a_helper_that_forward_hands_input_data_to_is_followed():
    found = findings(
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return self.norm(x * 2)

            def norm(self, y):
                return y / float(y.sum())
        """
    )
    assert len(found) == 1 and found[0].message.startswith("norm, called by forward, turns 'y.sum()'")


def test_silent_on_sizes_host_arguments_logging_and_parameters():
    assert not in_forward(
        """
        n = int(lengths.max().item())
        pad = torch.zeros(n, h.size(1))
        packed = nn.utils.rnn.pack_padded_sequence(h, lengths.tolist(), batch_first=True)
        print(h.mean().item())
        rows = h.shape[0]
        norm = self.fc.weight.norm().item()
        h = h * norm + torch.tensor(rows)
        """
    )


def test_silent_without_gradients_and_outside_modules():
    assert not in_forward(
        """
        with torch.no_grad():
            scale = h.abs().max().item()
            h = h / scale
        if not self.training:
            h = torch.tensor(h.cpu().numpy())
        """
    )
    assert not findings(
        """
        import torch

        class Helper:
            def forward(self, x):
                return x / x.sum().item()

        def forward(x):
            return x / x.sum().item()
        """
    )
