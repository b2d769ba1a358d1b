"""The data pipeline: the loaders a call adapts, the samplers a loader draws from and whether
they shuffle, and whether a loader's batches are collated tensors in host memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data
from torchlint.model.values.calling import argument, keyword
from torchlint.model.values.kinds import UNKNOWN_SET, Kind, Place, Value
from torchlint.model.values.placement import mentions_placement, places_within

if TYPE_CHECKING:
    from torchlint.model.values.flow import Values


class Pipeline:
    """Loaders, the samplers they draw from, and the batches they yield."""

    def __init__(self, values: Values) -> None:
        self.values = values
        self.model = values.model
        self._batch_places: dict[int, Place] = {}

    def adapted_loaders(self, call: cst.Call) -> frozenset[Value]:
        """The loaders an unknown function or method adapts when its first argument is one
        (`metric_logger.log_every(loader, 10)`, `progress(loader)`): iterating the call iterates the
        loader. A class taking a loader (`Prefetcher(loader)`) is a loader of its own, not this."""
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if not call.args or call.args[0].keyword is not None or call.args[0].star or not name[:1].islower():
            return frozenset()
        if self.model.summaries.targets(call) or (isinstance(func, cst.Name) and self.model.bindings_of(func)):
            return frozenset()  # a same-file function: its returns say what it yields
        found = self.values.of(call.args[0].value)
        if found and all(v.kind is Kind.LOADER for v in found):
            return found
        return frozenset()

    def loader_samplers(self, loader: Value) -> frozenset[Value]:
        """The samplers a loader draws from: its `sampler=`, and the sampler inside its
        `batch_sampler=`."""
        if loader.kind is not Kind.LOADER or not isinstance(loader.node, cst.Call):
            return frozenset()
        found: set[Value] = set()
        sampler = argument(loader.node, "sampler", data.LOADER_POSITIONAL.index("sampler") + 1)
        if sampler is not None:
            found |= self.values.of(sampler)
        batch_sampler = argument(loader.node, "batch_sampler", data.LOADER_POSITIONAL.index("batch_sampler") + 1)
        if batch_sampler is not None:
            for value in self.values.of(batch_sampler):
                found |= self.inner_sampler(value)
        return frozenset(found)

    def inner_sampler(self, value: Value) -> frozenset[Value]:
        if value.kind is Kind.SAMPLER and value.api in data.BATCH_SAMPLERS and isinstance(value.node, cst.Call):
            inner = argument(value.node, "sampler", 0)
            return self.values.of(inner) if inner is not None else UNKNOWN_SET
        return frozenset({value}) if value.kind is Kind.SAMPLER else UNKNOWN_SET

    def shuffles(self, call: cst.Call, default: bool) -> bool | None:
        shuffle = keyword(call, "shuffle")
        if shuffle is None:
            return default if not any(arg.star for arg in call.args) else None
        if isinstance(shuffle, cst.Name) and shuffle.value in ("True", "False"):
            return shuffle.value == "True"
        return None

    def collates_tensors(self, loader: Value | None) -> bool:
        if loader is None or loader.api not in data.LOADERS or not isinstance(loader.node, cst.Call):
            return False
        collate = argument(loader.node, "collate_fn", data.LOADER_POSITIONAL.index("collate_fn") + 1)
        if collate is None or self.model.qualified_name(collate) in data.HOST_COLLATES:
            return True
        if isinstance(collate, cst.Name):
            bindings = self.model.bindings_of(collate)
            return bool(bindings) and all(b.how == "def" for b in bindings)
        return False

    def batch_place(self, loader: Value) -> Place:
        """Where the batches of ``loader`` are: HOST for a torch DataLoader whose dataset and
        collate function build them in host memory; UNKNOWN otherwise."""
        key = id(loader)
        if key not in self._batch_places:
            self._batch_places[key] = Place.UNKNOWN
            self._batch_places[key] = self._find_batch_place(loader)
        return self._batch_places[key]

    def _find_batch_place(self, loader: Value) -> Place:
        call = loader.node
        if loader.api not in data.LOADERS or not isinstance(call, cst.Call) or any(a.star == "*" for a in call.args):
            return Place.UNKNOWN
        collate = argument(call, "collate_fn", data.LOADER_POSITIONAL.index("collate_fn") + 1)
        if collate is not None and not self._host_collate(collate):
            return Place.UNKNOWN
        dataset = argument(call, "dataset", 0)
        if dataset is None or not self._host_dataset(dataset, 0):
            return Place.UNKNOWN
        return Place.HOST

    def _host_collate(self, collate: cst.BaseExpression) -> bool:
        if self.model.qualified_name(collate) in data.HOST_COLLATES:
            return True
        if isinstance(collate, cst.Name):
            bindings = self.model.bindings_of(collate)
            if bindings and all(b.how == "def" for b in bindings):
                return not any(places_within(self.model, b.statement) for b in bindings)
        return False

    def _host_dataset(self, expr: cst.BaseExpression, depth: int) -> bool:
        """Whether a dataset yields host tensors, as far as the file shows: datasets from other
        files are taken to (they almost always do); a TensorDataset of placed tensors, or a
        same-file dataset class that places tensors, does not."""
        if depth > 4 or mentions_placement(expr):
            return False
        if isinstance(expr, cst.Name):
            for binding in self.model.bindings_of(expr):
                if binding.source is not None and mentions_placement(binding.source):
                    return False
        for value in self.values.of(expr):
            node = value.node
            if value.kind is Kind.DATASET and isinstance(node, cst.Call):
                if value.api in data.TENSOR_DATASETS:
                    for arg in node.args:
                        if arg.star or any(v.kind is not Kind.TENSOR or v.place is not Place.HOST for v in self.values.of(arg.value)):
                            return False
                elif value.api in data.DATASET_WRAPPERS:
                    if not node.args or not self._host_dataset(node.args[0].value, depth + 1):
                        return False
                else:
                    classdef = self.model.classes.get(value.api or "")
                    if classdef is not None and places_within(self.model, classdef):
                        return False
        return True
