"""TL004 input-not-moved: a moved module called with host data."""

from conftest import lint

HEADER = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x, mask=None):
        return self.fc(x)
"""


def findings(body):
    return [(d.line - HEADER.count("\n"), d.message) for d in lint(HEADER + body) if d.code == "TL004"]


def test_unmoved_batch_reaches_the_moved_model():
    found = findings(
        """
def train(dataset, device):
    model = Net().to(device)
    for x, y in DataLoader(dataset, batch_size=8):
        y = y.to(device)
        model(x).sum().backward()
"""
    )
    assert [line for line, _ in found] == [6]
    assert "'x'" in found[0][1] and "x.to(device)" in found[0][1]


def test_unmoved_dict_batch_passed_with_double_star():
    found = findings(
        """
def train(dataset, device):
    model = Net()
    model.to(device)
    for step, batch in enumerate(DataLoader(dataset, batch_size=8)):
        model(**batch)
"""
    )
    assert [line for line, _ in found] == [6]


def test_tensor_created_without_device_reaches_the_moved_model():
    found = findings(
        """
def sample(device):
    generator = Net().cuda()
    noise = torch.randn(16, 4)
    return generator(noise)
"""
    )
    assert [line for line, _ in found] == [5]
    assert "device=" in found[0][1]


def test_a_tensor_whose_maker_refuses_a_device_is_told_to_move_only():
    # torch.FloatTensor(n, device="cuda") raises, and torch.from_numpy takes no device at all.
    found = findings(
        """
def sample(device, array):
    generator = Net().to(device)
    noise = torch.FloatTensor(16, 4)
    codes = torch.from_numpy(array)
    return generator(noise) + generator(codes)
"""
    )
    assert [line for line, _ in found] == [6, 6]
    for _, message in found:
        assert "device=" not in message
        assert "made on the host" in message and ".to(device)" in message


def test_moved_batches_and_tensors_created_on_the_device_are_fine():
    assert not findings(
        """
def train(dataset, device):
    model = Net().to(device)
    for x, y in DataLoader(dataset, batch_size=8):
        x, y = x.to(device, non_blocking=True), y.to(device)
        model(x)
    noise = torch.randn(16, 4, device=device)
    model(noise)
"""
    )


def test_helpers_and_comprehensions_that_move_batches():
    assert not findings(
        """
def to_device(batch, device):
    return {k: v.to(device) for k, v in batch.items()}


def batch_to_device(batch, device):
    for key in batch:
        batch[key] = batch[key].to(device)


def train(dataset, device):
    model = Net().to(device)
    for batch in DataLoader(dataset):
        batch = to_device(batch, device)
        model(**batch)
    for batch in DataLoader(dataset):
        batch_to_device(batch, device)
        model(batch["x"])
    for batch in DataLoader(dataset):
        batch = [t.to(device) for t in batch]
        model(*batch)
"""
    )


def test_frameworks_and_dataparallel_move_or_scatter_the_batches():
    assert not findings(
        """
from accelerate import Accelerator


def with_accelerate(dataset):
    accelerator = Accelerator()
    model = Net().to(accelerator.device)
    loader = accelerator.prepare(DataLoader(dataset))
    for x in loader:
        model(x)


def with_dataparallel(dataset):
    model = nn.DataParallel(Net()).cuda()
    for x in DataLoader(dataset):
        model(x)
"""
    )


def test_model_not_moved_is_left_to_tl002():
    assert not findings(
        """
def train(dataset):
    model = Net()
    for x in DataLoader(dataset):
        model(x)
"""
    )


def test_model_moved_back_to_the_cpu_before_the_call():
    assert not findings(
        """
def export(device):
    model = Net().to(device)
    model.cpu()
    example = torch.rand(1, 4)
    return model(example)
"""
    )


def test_a_dataset_of_tensors_already_on_the_device():
    assert not findings(
        """
def train(x, y, device):
    model = Net().to(device)
    dataset = torch.utils.data.TensorDataset(x.to(device), y.to(device))
    for xb, yb in DataLoader(dataset, batch_size=32):
        model(xb)
"""
    )


def test_a_model_that_moves_its_own_inputs():
    assert not findings(
        """
class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Net()

    def forward(self, x):
        return self.net(x.to(self.net.fc.weight.device))


def run(dataset, device):
    model = Wrapper().to(device)
    for x in DataLoader(dataset):
        model(x)
"""
    )


def test_an_input_left_on_the_host_by_a_dropped_move_is_tl003s_finding_only():
    body = """
def train(dataset, device):
    model = Net().to(device)
    for x, y in DataLoader(dataset, batch_size=8):
        x.to(device)
        y = y.to(device)
        model(x).sum().backward()
"""
    assert not findings(body)
    assert [(d.line - HEADER.count("\n"), d.code) for d in lint(HEADER + body)] == [(5, "TL003")]


def test_a_dropped_move_explains_nothing_after_a_rebinding_or_before_it_is_made():
    found = findings(
        """
def train(dataset, device):
    model = Net().to(device)
    for x, y in DataLoader(dataset, batch_size=8):
        model(y)
        y.to(device)
        x.to(device)
        x = torch.randn(8, 4)
        model(x)
"""
    )
    assert [line for line, _ in found] == [5, 9]


def test_the_recommended_move_is_a_statement_that_keeps_its_result():
    found = findings(
        """
def train(dataset, device):
    model = Net().to(device)
    loader = DataLoader(dataset, batch_size=8)
    for x, batch in loader:
        model(x)
        model(**batch)
    model(next(iter(loader)))
"""
    )
    assert [message.split("; ")[-1] for _, message in found] == [
        "move it first: x = x.to(device)",
        "move it first: batch = {k: v.to(device) for k, v in batch.items()}",
        "pass next(iter(loader)).to(device) instead",
    ]


def test_device_branches_that_move_different_tensors_report_the_one_left_behind():
    source = """
import torch


def step(model, criterion, images, target, gpu):
    if gpu is not None:
        images = images.cuda(gpu)
    elif torch.cuda.is_available():
        target = target.cuda(gpu)
    output = model(images)
    return criterion(output, target)
"""
    found = [(d.line, d.message) for d in lint(source) if d.code == "TL004"]
    assert [line for line, _ in found] == [11]
    assert "not when 'gpu is not None' holds, where 'images' is moved" in found[0][1]
    assert found[0][1].endswith("move it there too: target = target.cuda(gpu)")


def test_lengths_for_pack_padded_sequence_may_stay_on_the_host_but_the_ids_may_not():
    source = """
import torch
from torch import nn

class Reader(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)
        self.rnn = nn.GRU(8, 8, batch_first=True)

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths, batch_first=True)
        return self.rnn(packed)[1]

device = torch.device("cuda")
model = Reader().to(device)
ids = torch.randint(0, 100, (4, 10))
lengths = torch.tensor([10, 8, 5, 2])
print(model(ids, lengths))
"""
    found = [(d.line, d.message) for d in lint(source) if d.code == "TL004"]
    assert [line for line, _ in found] == [19]
    assert found[0][1].startswith("'ids' is")  # not "(and 1 more argument)": the lengths stay


def test_lengths_the_function_itself_passes_to_pack_padded_sequence_stay_on_the_host():
    source = """
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.data import DataLoader
from captioning import decode_packed

class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)

    def forward(self, captions, lengths):
        return decode_packed(self.embed(captions), lengths)

def train(dataset, device):
    decoder = Decoder().to(device)
    for captions, lengths in DataLoader(dataset, batch_size=4):
        captions = captions.to(device)
        targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
        print(decoder(captions, lengths), targets)
"""
    assert not [d for d in lint(source) if d.code == "TL004"]


def test_ctc_loss_takes_its_sequence_lengths_on_the_host():
    source = """
import torch
from torch import nn

device = torch.device("cuda")
model = nn.Linear(16, 30).to(device)
criterion = nn.CTCLoss(zero_infinity=True).to(device)
features = torch.randn(50, 4, 16)
targets = torch.randint(1, 30, (4, 12))
log_probs = model(features.to(device)).log_softmax(2)
input_lengths = torch.full((4,), 50, dtype=torch.long)
target_lengths = torch.full((4,), 12, dtype=torch.long)
loss = criterion(log_probs, targets.to(device), input_lengths, target_lengths=target_lengths)
loss = criterion(log_probs, targets, input_lengths, target_lengths)
"""
    found = [(d.line, d.message) for d in lint(source) if d.code == "TL004"]
    assert [line for line, _ in found] == [14]
    assert found[0][1].startswith("'targets' is")


def test_a_module_handed_in_is_one_when_the_function_moves_it_and_calls_it():
    found = findings(
        """
def predict(model, dataset, device):
    model.to(device)
    return [model(x) for x, _ in DataLoader(dataset, batch_size=8)]


def run(callback, dataset):
    return [callback(x) for x, _ in DataLoader(dataset, batch_size=8)]


class Scorer:
    def __init__(self, head=None, device="cuda"):
        self.device = torch.device(device)
        self.head = Net().to(self.device) if head is None else head.to(self.device)

    def score(self, rows):
        return self.head(torch.tensor(rows))
"""
    )
    assert [line for line, _ in found] == [4, 17]
    assert "'model' was moved" in found[0][1]
    assert "'self.head' was moved" in found[1][1] and "torch.tensor(rows).to(self.device)" in found[1][1]


def test_a_loop_that_starts_from_a_callers_host_tensor_is_reported_at_the_caller():
    found = findings(
        """
def extend(model, x, steps):
    for _ in range(steps):
        y = model(x[:, -4:])
        x = torch.cat([x, torch.multinomial(y.softmax(-1), 1)], dim=1)
    return x


def extend_later(model, x, steps):
    for step in range(steps):
        if step > 0:
            model(x)
        x = torch.cat([x, x[:, -1:]], dim=1).cuda()


def main(device):
    model = Net().to(device)
    extend(model, torch.zeros(1, 4, dtype=torch.long), 8)
    extend(model, torch.zeros(1, 4, dtype=torch.long, device=device), 8)
    extend_later(model, torch.zeros(1, 4), 8)
"""
    )
    assert [line for line, _ in found] == [18]
    assert "but extend() passes it to 'model', which was moved to the device" in found[0][1]


def test_a_module_a_project_function_builds_is_known_by_being_moved_and_called():
    found = findings(
        """
from ultralytics import YOLO


def build(name):
    return {"net": Net}[name]()


def score(dataset, device):
    model = build("net")
    model.to(device)
    detector = YOLO("yolov8n.pt")
    detector.to(device)
    for x, _ in DataLoader(dataset, batch_size=8):
        model(x)
        detector(x)
"""
    )
    assert [line for line, _ in found] == [15]


def test_a_host_mask_the_forward_only_indexes_with_is_no_mismatch():
    source = '''
import torch
from torch import nn


class Selector(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, keep=None):
        h = self.fc(x)
        {body}


model = Selector().to("cuda")
x = torch.randn(3, 4, device="cuda")
keep = torch.ones(3, dtype=torch.bool)
model(x, keep)
'''
    def tl004(body):
        return [d.line for d in lint(source.format(body=body)) if d.code == "TL004"]

    assert tl004("return h if keep is None else h[~keep]") == []
    assert tl004("h[keep] = 0\n        return h") == []
    # any other use needs the mask where h is
    assert tl004("return h * keep.unsqueeze(-1)") == [19]
    assert tl004("return h.masked_fill(keep.unsqueeze(-1), 0)") == [19]


def test_a_factory_given_unpacked_keywords_may_be_on_the_device():
    found = findings(
        """
def check(device):
    options = {"dtype": torch.float64, "device": device}
    model = Net().to(device)
    shared = torch.rand(3, 4, **options)
    plain = torch.rand(3, 4)
    return model(shared), model(plain)
"""
    )
    assert [message.split("'")[1] for _, message in found] == ["plain"]


def test_a_tensor_made_with_a_host_device_says_so():
    source = """
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)

        class Wrapper:
            def __init__(self, model, device):
                self.model = model
                self.device = device

            def predict(self, X):
                features = torch.tensor(X, dtype=torch.float32, device=self.device)
                return self.model(features).argmax(1)

        print(Wrapper(model, device=torch.device("cpu")).predict([[0.0, 1.0, 2.0, 3.0]]))
        """
    [finding] = [d for d in lint(source) if d.code == "TL004"]
    assert "created with device=self.device, which is the CPU here" in finding.message
    assert "without device=" not in finding.message and "create it with" not in finding.message
