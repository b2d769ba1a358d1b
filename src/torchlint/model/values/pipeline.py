"""The data pipeline: the loaders a call adapts, the samplers a loader draws from and whether
they shuffle, and whether a loader's batches are collated tensors in host memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data, devices, frameworks
from torchlint.model import constants
from torchlint.model.given_loaders import GivenLoaders
from torchlint.model.iteration import drawn_iterator
from torchlint.model.names import dotted
from torchlint.model.tree import children
from torchlint.model.values.calling import argument, builtin_or_qualified, keyword
from torchlint.model.values.kinds import UNKNOWN, UNKNOWN_SET, Kind, Place, Value
from torchlint.model.values.placement import mentions_placement, places_within
from torchlint.model.walks import Walk

if TYPE_CHECKING:
    from torchlint.model.values.flow import Values


class Pipeline:
    """Loaders, the samplers they draw from, and the batches they yield."""

    def __init__(self, values: Values) -> None:
        self.values = values
        self.model = values.model
        self._batch_places = Walk(self._find_batch_place, Place.UNKNOWN, key=id)
        self.given = GivenLoaders(self.model)

    def adapted_loaders(self, call: cst.Call) -> frozenset[Value]:
        """The loaders an unknown function or method adapts when its first argument is one
        (`metric_logger.log_every(loader, 10)`, `progress(loader)`): iterating the call iterates the
        loader. A class taking a loader (`Prefetcher(loader)`) is a loader of its own, not this."""
        adapted = self.adapted_argument(call)
        found = self.values.of(adapted) if adapted is not None else frozenset()
        if found and all(v.kind is Kind.LOADER for v in found):
            return found
        return frozenset()

    def adapted_argument(self, call: cst.Call) -> cst.BaseExpression | None:
        """The first argument of a call of an unknown function or method, lower-case named, that
        may adapt the iterable it is given (`metric_logger.log_every(data_loader, 10)`); None for
        a same-file function, a variable, a class, or a framework's method."""
        func = call.func
        name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
        if not call.args or call.args[0].keyword is not None or call.args[0].star or not name[:1].islower():
            return None
        if self.model.summaries.targets(call) or (
            isinstance(func, cst.Name) and any(b.how != "import" for b in self.model.bindings_of(func))
        ):
            return None  # a same-file function (or variable): its returns say what it yields
        if (self.model.call_name(call) or "").startswith(frameworks.LOADER_OWNING_PACKAGES) or (
            isinstance(func, cst.Attribute) and any(v.kind is Kind.FRAMEWORK for v in self.values.of(func.value))
        ):
            return None  # a framework takes the loader over
        return call.args[0].value

    def wrapping_calls(self, name: cst.BaseExpression) -> list[cst.Call] | None:
        """The calls a name iterated in a `for` is bound to when every binding reaching it wraps
        an iterable (`progress = tqdm(loader)`, `batches = prefetch(loader)`) or reaches what such
        a call wraps (`if rank == 0: loader = tqdm(loader)`), or is bound to that same expression
        on another branch (`pbar = tqdm(self.loader)` / `else: pbar = self.loader`): iterating
        the name iterates what they wrap. None otherwise."""
        if not isinstance(name, cst.Name):
            return None
        bindings = self.model.reaching(name)
        wrapping = [b for b in bindings if b.how == "assign" and not b.path and isinstance(b.source, cst.Call)]
        if not wrapping:
            return None
        wrapped = set()
        written: set[str] = set()  # the wrapped expressions, as written
        for binding in wrapping:
            call = binding.source
            args = [arg for arg in call.args if arg.keyword is None and not arg.star]
            wrapper = builtin_or_qualified(self.model, call)
            if wrapper in data.ITERATION_WRAPPERS and len(args) > data.ITERATION_WRAPPERS[wrapper]:
                inner = args[data.ITERATION_WRAPPERS[wrapper]].value
            elif self.adapted_loaders(call):
                inner = call.args[0].value
            else:
                return None
            if type(inner) is cst.Name:
                wrapped.update(self.model.reaching(inner))
            written.add(dotted(inner) or "")
        written.discard("")
        covered = wrapped.union(wrapping)
        covered.update(b for b in bindings if b.how == "assign" and not b.path and _written(b.source) in written)
        if any(b not in covered for b in bindings):
            return None
        return [b.source for b in wrapping]

    def loader_samplers(self, loader: Value) -> frozenset[Value]:
        """The samplers a loader draws from: its `sampler=`, and the sampler inside its
        `batch_sampler=`."""
        if loader.kind is not Kind.LOADER or not isinstance(loader.node, cst.Call):
            return frozenset()
        returned = self.values.returned_samplers(loader)
        if returned is not None:
            return returned
        found: set[Value] = set()
        built = self.base_construction(loader) or loader.node
        sampler = self.sampler_argument(loader)
        if sampler is not None:
            found |= self.values.of(sampler)
        batch_sampler = argument(built, "batch_sampler", data.LOADER_POSITIONAL.index("batch_sampler"))
        if batch_sampler is not None:
            for value in self.values.of(batch_sampler):
                found |= self.inner_sampler(value)
        return frozenset(found)

    def sampler_argument(self, loader: Value) -> cst.BaseExpression | None:
        """What the code passes a loader for its `sampler=` (by keyword or position, also through
        its class's base constructor); None when it passes nothing or ``loader`` is built by no
        call."""
        if not isinstance(loader.node, cst.Call):
            return None
        built = self.base_construction(loader) or loader.node
        return argument(built, "sampler", data.LOADER_POSITIONAL.index("sampler"))

    def base_construction(self, loader: Value) -> cst.Call | None:
        """For a loader that a same-file subclass of a loader class builds, the call its
        constructor makes to the base class's (`super().__init__(dataset, sampler=sampler, ...)`
        in `class ShardedLoader(DataLoader)`): that call receives the loader's sampler. None for
        any other loader, or when the constructor does not make exactly one such call."""
        classdef = self.model.classes.get(loader.api or "")
        if classdef is None or not isinstance(loader.node, cst.Call):
            return None
        constructor = self.model.summaries.method(classdef, "__init__")
        if constructor is None:
            return None
        found = [
            call for call in self.model.calls
            if self.model.function_of(call) is constructor and _calls_base_constructor(call)
        ]
        return found[0] if len(found) == 1 else None

    def inner_sampler(self, value: Value) -> frozenset[Value]:
        if value.kind is Kind.SAMPLER and value.api in data.BATCH_SAMPLERS and isinstance(value.node, cst.Call):
            inner = argument(value.node, "sampler", 0)
            return self.values.of(inner) if inner is not None else UNKNOWN_SET
        return frozenset({value}) if value.kind is Kind.SAMPLER else UNKNOWN_SET

    def shuffles(self, call: cst.Call, default: bool) -> bool | None:
        """Whether a sampler shuffles: its `shuffle=` when the constant evaluator knows it, else
        its default (DistributedSampler shuffles unless told otherwise; a value from a config
        file is unknown, not False). None when `**kwargs` may pass it."""
        shuffle = keyword(call, "shuffle")
        if shuffle is None:
            return default if not any(arg.star for arg in call.args) else None
        known = constants.value(self.model, shuffle)
        if known is not constants.UNKNOWN:
            return bool(known)
        return True if default else None

    def collates_tensors(self, loader: Value | None) -> bool:
        if loader is not None and (self._returned_host_batches(loader) or self._given_host_batches(loader)):
            return True
        if loader is None or loader.api not in data.LOADERS or not isinstance(loader.node, cst.Call):
            return False
        collate = argument(loader.node, "collate_fn", data.LOADER_POSITIONAL.index("collate_fn"))
        if collate is None or self.model.qualified_name(collate) in data.HOST_COLLATES:
            return True
        if isinstance(collate, cst.Name):
            bindings = self.model.bindings_of(collate)
            return bool(bindings) and all(b.how == "def" for b in bindings)
        return False

    def batch_place(self, loader: Value) -> Place:
        """Where the batches of ``loader`` are: HOST for a torch DataLoader whose dataset and
        collate function build them in host memory; UNKNOWN otherwise."""
        return self._batch_places(loader)

    def _returned_host_batches(self, loader: Value) -> bool:
        """Whether a loader a function of another module returns collates host tensors, as its
        summary says, and nothing the call passes it is placed (`build_loader(dataset)`)."""
        call = loader.node
        if loader.kind is not Kind.LOADER or not isinstance(call, cst.Call) or loader.api in data.LOADERS:
            return False
        facts = self.values.returned_facts(loader)
        return (
            facts is not None and facts.kind == Kind.LOADER.value and facts.host_batches
            and all(not arg.star and self._host_dataset(arg.value, 0) for arg in call.args)
        )

    def _given_host_batches(self, loader: Value) -> bool:
        """Whether a loader is a parameter declared a DataLoader whose batches the code around
        it treats as host data (model/given_loaders.py)."""
        node = loader.node
        param = self.model.parent(node) if loader.kind is Kind.LOADER and type(node) is cst.Name else None
        if type(param) is not cst.Param or param.name is not node:
            return False
        function = next(a for a in self.model.ancestors(param) if isinstance(a, (cst.FunctionDef, cst.Lambda)))
        bindings = [b for b in self.model.bindings(function, node.value) if b.how == "param"]
        return len(bindings) == 1 and self.given.host_loader(bindings[0]) is not None

    def _find_batch_place(self, loader: Value) -> Place:
        if self._returned_host_batches(loader) or self._given_host_batches(loader):
            return Place.HOST
        call = loader.node
        if loader.api not in data.LOADERS or not isinstance(call, cst.Call) or any(a.star == "*" for a in call.args):
            return Place.UNKNOWN
        collate = argument(call, "collate_fn", data.LOADER_POSITIONAL.index("collate_fn"))
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
        if depth > 4 or mentions_placement(expr) or self._reads_placed_tensor(expr):
            return False
        if isinstance(expr, cst.Name):
            for binding in self.model.bindings_of(expr):
                if binding.source is not None and (
                    mentions_placement(binding.source) or self._reads_placed_tensor(binding.source)
                ):
                    return False
            if self._told_where(expr):
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

    def _reads_placed_tensor(self, expr: cst.BaseExpression) -> bool:
        """Whether a dataset expression hands on tensors the file placed earlier
        (`list(zip(x_train, y_train))` after `x_train = x_train.to(device)`): its items are those
        tensors, and the default collate stacks them where they are. An attribute of a tensor
        (`x.shape[0]`) is no item."""
        # tree.children, not LibCST's `children` (a visitor that rebuilds the node, and lists its
        # whitespace and punctuation); exact types: a failing isinstance against a LibCST class
        # (an ABC) costs a Python call
        stack: list[cst.CSTNode] = [expr]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Name or kind is cst.Attribute:
                if any(v.kind is Kind.TENSOR and v.place is Place.DEVICE for v in self.values.of(node)):
                    return True
                continue
            if kind is not cst.Lambda and kind is not cst.FunctionDef:
                stack.extend(children(node))
        return False

    def _told_where(self, dataset: cst.Name) -> bool:
        """Whether a method of the dataset is given a device (`ds.set_format("torch",
        device="cuda")`): it then yields its tensors there."""
        bindings = self.model.bindings_of(dataset)
        for call in self.model.calls:
            func = call.func
            if (
                type(func) is cst.Attribute
                and type(func.value) is cst.Name
                and func.value.value == dataset.value
                and any(arg.keyword is not None and arg.keyword.value in devices.PLACEMENT_KEYWORDS for arg in call.args)
                and self.model.bindings_of(func.value) == bindings
            ):
                return True
        return False

    def generator_iterator(self, call: cst.Call, generator: cst.FunctionDef, offset: int) -> frozenset[Value]:
        """Calling a same-file generator that yields the items of a loader it is given, unchanged
        (`for batch in loader: yield batch`, `yield from loader`) makes an iterator over the
        loader passed at this call. Any other yield leaves its items unknown."""
        model = self.model
        found: set[Value] = set()
        for node in model.returns:
            if not isinstance(node, cst.Yield) or model.function_of(node) is not generator:
                continue
            param = _yielded_parameter(model, node)
            arg = model.summaries.argument(generator, call, offset, param) if param is not None else None
            if arg is None:
                return UNKNOWN_SET
            for value in self.values.of(arg):
                loader = value if value.kind is Kind.LOADER else value.origin if value.kind is Kind.ITERATOR else None
                found.add(self.values.make(Kind.ITERATOR, call, origin=loader) if loader is not None else UNKNOWN)
        return frozenset(found) or UNKNOWN_SET

    def step_batches(self, function: cst.FunctionDef, param: str, target: cst.CSTNode) -> frozenset[Value]:
        """What a framework passes a step function's batch parameter (`Engine(step).run(loader)`
        in ignite): batches of the loaders it runs over. UNKNOWN also when the function is
        handed anywhere else."""
        model = self.model
        positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
        found: set[Value] = set()
        definitions = [b for b in model.bindings(model.scope(function), function.name.value) if b.statement is function]
        for definition in definitions:
            for read in model.reads_of(definition):
                arg = model.parent(read)
                call = model.parent(arg) if isinstance(arg, cst.Arg) else None
                convention = frameworks.STEP_CONVENTIONS.get(model.call_name(call) or "") if call is not None else None
                if convention is None or _position(call, arg) != convention.function or param not in positional:
                    found.add(UNKNOWN)
                    continue
                if positional.index(param) != convention.batch:
                    continue
                for use in self.values.uses(call):
                    if use.how == "method" and use.name == convention.run:
                        data_arg = argument(use.context, "data", convention.data)
                        for loader in self.values.of(data_arg) if data_arg is not None else UNKNOWN_SET:
                            if loader.kind is Kind.LOADER:
                                place = self.batch_place(loader)
                                found.add(self.values.make(Kind.BATCH, target, place=place, origin=loader))
                            else:
                                found.add(UNKNOWN)
        return frozenset(found) or UNKNOWN_SET


def _position(call: cst.Call, arg: cst.Arg) -> int | None:
    """The position of a positional argument (None for a keyword or after a `*args`)."""
    positional = [a for a in call.args if a.keyword is None]
    index = next((i for i, a in enumerate(positional) if a is arg), None)
    if index is None or any(a.star for a in positional[: index + 1]):
        return None
    return index


def _yielded_parameter(model, node: cst.Yield) -> str | None:
    """The parameter whose items a yield passes on unchanged: `yield from loader`, `yield
    batch` where every binding of `batch` reaching it is `for batch in loader`, or `yield
    next(it)` where every binding of `it` is `it = iter(loader)` (restarted on StopIteration)."""
    if isinstance(node.value, cst.From):
        return _parameter_name(model, node.value.item)
    drawn = drawn_iterator(model, node.value) if isinstance(node.value, cst.Call) else None
    if isinstance(drawn, cst.Name):
        bindings = model.bindings_of(drawn)
        sources = {
            _parameter_name(model, b.value.args[0].value)
            if b.how == "assign" and _is_iter_call(model, b.value) else None
            for b in bindings
        }
        return sources.pop() if len(sources) == 1 else None
    if not isinstance(node.value, cst.Name):
        return None
    bindings = model.reaching(node.value)
    sources = {_parameter_name(model, b.source) if b.how == "for" and not b.path else None for b in bindings}
    return sources.pop() if len(sources) == 1 else None


def _is_iter_call(model, expr: cst.BaseExpression | None) -> bool:
    """`iter(x)` with the builtin `iter`."""
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "iter"
        and len(expr.args) == 1 and not expr.args[0].star and not model.bindings_of(expr.func)
    )


def _parameter_name(model, expr: cst.BaseExpression | None) -> str | None:
    if not isinstance(expr, cst.Name):
        return None
    bindings = model.bindings_of(expr)
    return expr.value if bindings and all(b.how == "param" for b in bindings) else None


def _calls_base_constructor(call: cst.Call) -> bool:
    """`super().__init__(...)`."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


def _written(expr: cst.BaseExpression | None) -> str | None:
    return dotted(expr) if expr is not None else None
