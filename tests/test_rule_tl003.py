"""TL003 to-result-discarded: a tensor conversion used as a statement."""

import json

from conftest import lint

from torchlint import engine
from torchlint.config import Settings
from torchlint.fixes import loop


def findings(source):
    return [(d.line, d.column, d.message) for d in lint(source) if d.code == "TL003"]


def test_discarded_moves_of_batch_tensors_are_reported_at_the_call():
    found = findings(
        """
        import torch
        from torch.utils.data import DataLoader

        def train(model, dataset, device):
            for inputs, target in DataLoader(dataset, batch_size=8):
                inputs.to(device)
                target.cuda()
                model(inputs)
        """
    )
    assert [(line, column) for line, column, _ in found] == [(7, 9), (8, 9)]
    assert "write inputs = inputs.to(device)" in found[0][2]


def test_discarded_dtype_conversion_of_a_created_tensor_is_reported():
    found = findings(
        """
        import numpy as np
        import torch

        features = torch.from_numpy(np.load("x.npy"))
        features.to(torch.float32)
        features.half()
        """
    )
    assert [line for line, _, _ in found] == [6, 7]
    assert "old dtype" in found[0][2]


def test_module_conversions_act_in_place():
    assert not findings(
        """
        import torch
        import torch.nn as nn
        import torchvision

        model = torchvision.models.resnet50()
        model.to("cuda")
        model.half()
        head = nn.Linear(4, 2)
        head.cuda()
        """
    )


def test_receivers_of_unknown_kind_are_not_reported():
    assert not findings(
        """
        from transformers import AutoTokenizer

        def encode(texts, device, pipe, batch):
            tokens = AutoTokenizer.from_pretrained("gpt2")(texts, return_tensors="pt")
            tokens.to(device)      # BatchEncoding.to moves in place
            pipe.to(device)        # a pipeline
            batch.to(device)       # whatever the loader yields
        """
    )


def test_whole_batches_from_a_loader_are_not_known_tensors():
    assert not findings(
        """
        from torch.utils.data import DataLoader

        def run(dataset, device):
            for batch in DataLoader(dataset):
                batch.to(device)
        """
    )


def test_reassigned_conversion_is_fine():
    assert not findings(
        """
        import torch

        x = torch.zeros(3)
        x = x.to("cuda")
        y = x.float()
        """
    )


def test_fix_assigns_the_result_back():
    source = "import torch\n\nx = torch.zeros(3)\nx.to('cuda')  # move\n"
    diagnostics = engine.check_source(source, "t.py", Settings(select=("TL003",)))
    assert diagnostics[0].fix is not None
    result = loop.fix_bytes(source.encode(), "t.py", Settings(select=("TL003",)), unsafe=False)
    assert "x = x.to('cuda')  # move" in result.fixed_text
    assert not [d for d in result.analysis.diagnostics if d.code == "TL003"]


def test_a_receiver_of_unknown_kind_used_in_arithmetic_afterwards_is_a_tensor():
    found = [
        d.line
        for d in lint(
            """
            import torch

            def step(x, w, model, device):
                x.to(device)
                model.to(device)
                w.cuda()
                flag = not w
                return model(x * 2 + 1)
            """
        )
        if d.code == "TL003"
    ]
    assert found == [5]


def test_an_autograd_variable_is_a_tensor():
    found = [
        d.line
        for d in lint(
            """
            import torch
            from torch.autograd import Variable

            hidden = Variable(torch.zeros(1, 4, 8))
            if torch.cuda.is_available():
                hidden.cuda()
            """
        )
        if d.code == "TL003"
    ]
    assert found == [7]


def test_a_conversion_of_a_temporary_is_not_reported():
    # nothing can read the unconverted tensor: the statement is there for the conversion itself
    # (a check that the device works), and no assignment could keep a result
    assert not findings(
        """
        import torch

        device = torch.device("cuda")
        torch.zeros(3).to(device)
        """
    )


def test_a_notebook_cells_last_line_is_displayed_not_discarded():
    def cell(source):
        return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}

    document = json.dumps(
        {
            "cells": [
                cell("import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nm = torch.ones(3)\n"),
                cell("# shows the moved copy; m itself stays on the CPU\nm.to(device)\n"),
                cell("m.to(device)\nprint(m.sum())\n"),
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    found = [(d.cell, d.line) for d in engine.check_source(document, "nb.ipynb", Settings()) if d.code == "TL003"]
    assert found == [(3, 1)]
