"""TL002 module-not-moved: a trained or called module never moved, where tensors are placed."""

from conftest import lint

from torchlint.config import Settings

PREVIEW = Settings(preview=True)


def findings(source):
    return [(d.line, d.message) for d in lint(source, settings=PREVIEW) if d.code == "TL002"]


def test_model_never_moved_while_batches_are_is_reported_at_its_construction():
    found = findings(
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                return self.fc(x)

        def main(loader):
            device = torch.device("cuda")
            model = Net()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
        """
    )
    assert [line for line, _ in found] == [15]
    assert "model.to(device)" in found[0][1]


def test_model_built_by_a_trainer_class_is_reported():
    found = findings(
        """
        import torch
        import torch.nn as nn

        class Trainer:
            def __init__(self, loader):
                self.device = torch.device("cuda")
                self.model = nn.Linear(4, 2)
                self.loader = loader

            def step(self):
                for x in self.loader:
                    self.model(x.to(self.device)).sum().backward()
        """
    )
    assert [line for line, _ in found] == [8]
    assert "self.model.to(self.device)" in found[0][1]


def test_module_to_as_a_statement_moves_it():
    assert not findings(
        """
        import torch
        import torch.nn as nn

        def main(loader, device):
            model = nn.Linear(4, 2)
            model.to(device)
            for x in loader:
                model(x.to(device))
        """
    )


def test_a_helper_that_moves_its_argument_moves_it():
    assert not findings(
        """
        import torch
        import torch.nn as nn

        def place(module, device):
            module.cuda()
            return module

        def main(loader, device):
            model = nn.Linear(4, 2)
            place(model, device)
            for x in loader:
                model(x.to(device))
        """
    )


def test_moved_under_a_branch_counts():
    assert not findings(
        """
        import torch
        import torch.nn as nn

        def main(loader, use_cuda):
            model = nn.Linear(4, 2)
            if use_cuda:
                model = model.cuda()
            for x in loader:
                model(x.cuda())
        """
    )


def test_modules_given_to_wrappers_and_frameworks_are_theirs():
    assert not findings(
        """
        import torch
        import torch.nn as nn
        from accelerate import Accelerator
        from torch.nn.parallel import DistributedDataParallel as DDP

        def with_accelerate(loader):
            accelerator = Accelerator()
            model = nn.Linear(4, 2)
            model, loader = accelerator.prepare(model, loader)
            for x in loader:
                model(x.to(accelerator.device))

        def with_ddp(loader, rank):
            model = nn.Linear(4, 2)
            model = DDP(model, device_ids=[rank])
            for x in loader:
                model(x.cuda(rank))
        """
    )


def test_built_with_device_keyword_or_device_map_is_placed():
    assert not findings(
        """
        import torch
        import torch.nn as nn
        from transformers import AutoModelForCausalLM

        def main(loader, device):
            head = nn.Linear(4, 2, device=device)
            lm = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
            for x in loader:
                head(x.to(device))
                lm(x.to(device))
        """
    )


def test_script_that_places_nothing_is_not_reported():
    assert not findings(
        """
        import torch
        import torch.nn as nn

        def main(loader):
            model = nn.Linear(4, 2)
            for x in loader:
                model(x).sum().backward()
        """
    )


def test_submodules_and_parameterless_modules_are_not_reported():
    assert not findings(
        """
        import torch
        import torch.nn as nn
        import torchvision

        class Normalize(nn.Module):
            def __init__(self, mean):
                super().__init__()
                self.mean = mean

            def forward(self, x):
                return x - self.mean

        class MaskedCrossEntropy(nn.CrossEntropyLoss):
            def forward(self, logits, targets, mask):
                self.reduction = "none"
                return (super().forward(logits, targets) * mask).mean()

        def main(loader, device):
            model = torchvision.models.resnet18().to(device)
            model.fc = nn.Linear(512, 10)
            norm = Normalize(torch.zeros(3, device=device))
            criterion = nn.CrossEntropyLoss()
            masked = MaskedCrossEntropy()
            for x, y, m in loader:
                x, y, m = x.to(device), y.to(device), m.to(device)
                criterion(model(norm(x)), y).backward()
                masked(model(x), y, m).backward()
        """
    )


def test_a_module_handed_to_unknown_code_may_be_moved_there():
    assert not findings(
        """
        import torch
        import torch.nn as nn
        from mylib import setup_model

        def main(loader, device):
            model = nn.Linear(4, 2)
            setup_model(model, device)
            for x in loader:
                model(x.to(device))
        """
    )


def test_a_module_whose_constructor_places_its_parts_is_placed():
    # the layers live in a plain list, each moved as it is built
    assert not findings(
        """
        import torch
        import torch.nn as nn

        class Stack(nn.Module):
            def __init__(self, dims, device):
                super().__init__()
                self.layers = [nn.Linear(a, b).to(device) for a, b in zip(dims, dims[1:])]

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x

        def main(x, device):
            net = Stack([4, 8, 2], device)
            return net(x.to(device))
        """
    )


def test_lightning_fabric_and_hf_trainer_own_their_modules():
    assert not findings(
        """
        import torch
        import torch.nn as nn
        import lightning as L
        from transformers import AutoModelForSequenceClassification, Trainer

        def with_fabric(loader):
            fabric = L.Fabric(accelerator="cuda")
            model = nn.Linear(4, 2)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model, optimizer = fabric.setup(model, optimizer)
            for x in loader:
                model(x.to(fabric.device))

        def with_lightning(module, loader):
            net = nn.Linear(4, 2)
            net(torch.zeros(1, 4, device="cuda"))
            L.Trainer(accelerator="gpu").fit(net, loader)

        def with_hf(dataset):
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            model(torch.zeros(1, 8, dtype=torch.long).cuda())
            Trainer(model=model, train_dataset=dataset).train()
        """
    )


def test_a_module_stored_on_self_outside_any_class_is_handed_on():
    found = lint(
        """
        import torch
        device = torch.device("cuda")
        model = torch.nn.Linear(2, 2)
        self.net = model
        for step in range(3):
            model(torch.zeros(2, device=device)).sum().backward()
        """,
        settings=PREVIEW,
    )
    assert [d.code for d in found if d.code in ("TL000", "TL002")] == []


def test_inputs_derived_from_moved_data_are_evidence_and_unplaced_inputs_are_not():
    # The head gets features computed from the moved images: reported. The probe gets a dataset
    # sample nothing places: silent, although the script moves other tensors.
    found = findings(
        """
        import torch
        import torch.nn as nn

        def run(loader, dataset):
            device = torch.device("cuda")
            backbone = nn.Conv2d(3, 8, 3).to(device)
            head = nn.Linear(8, 2)
            probe = nn.Conv2d(3, 4, 3)
            sample, _ = dataset[0]
            print(probe(sample[None]).shape)
            for images, labels in loader:
                images = images.to(device)
                features = backbone(images).mean((2, 3))
                scores = head(features)
                print(scores.argmax(1), labels)
        """
    )
    assert [line for line, _ in found] == [8]


def test_test_code_is_not_reported():
    source = """
        import torch
        from torch import nn

        def test_backward_on_the_gpu():
            x = torch.randn(8, 8, device="cuda")
            model = nn.Sequential(*[nn.Linear(8, 8, device="cuda") for _ in range(3)])
            model(x).sum().backward()
        """
    assert not [d for d in lint(source, path="tests/test_layers.py", settings=PREVIEW) if d.code == "TL002"]


def test_a_module_moved_on_one_branch_of_a_choice_is_placed_by_that_choice():
    assert not findings(
        """
        import torch
        from torch import nn

        def run(batches, gpu):
            if gpu:
                model = nn.Linear(8, 2).to("cuda")
            else:
                model = nn.Linear(8, 2)
            for x in batches:
                if gpu:
                    x = x.to("cuda")
                model(x)
        """
    )


def test_reported_by_default():
    source = """
        import torch
        from torch import nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        teacher = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
        student = nn.Linear(8, 2).to(device)
        optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
        for x in loader:
            x = x.to(device)
            loss = (student(x) - teacher(x)).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        """
    assert [d.line for d in lint(source) if d.code == "TL002"] == [6]


def test_a_module_built_only_in_dead_code_is_not_reported_one_behind_a_flag_is():
    dead = """
        import argparse
        import torch

        def main(loader, args):
            device = torch.device("cuda")
            second_stage = {switch}
            if {test}:
                extra = torch.nn.Linear(4, 2)
            for x, _ in loader:
                x = x.to(device)
                if {test}:
                    print(extra(x))
        """
    assert not findings(dead.format(switch="False", test="second_stage"))
    assert not findings(dead.format(switch="0", test="not not second_stage"))
    flagged = findings(dead.format(switch="args.second_stage", test="second_stage"))
    assert [line for line, _ in flagged] == [9]


def test_a_container_of_helper_built_modules_given_the_device_through_a_partial_is_placed():
    source = """
        from functools import partial
        import torch
        from torch import nn

        def build(factory, sizes):
            return nn.ModuleList([factory(size) for size in sizes])

        def main(loader, device):
            heads = build(partial(nn.Linear, 8, device={device}), [2, 3])
            chain = nn.Sequential(heads)
            for x in loader:
                chain(x.to(device))
        """
    assert not findings(source.format(device="device"))
    assert [line for line, _ in findings(source.format(device='"cpu"'))] == [11]
