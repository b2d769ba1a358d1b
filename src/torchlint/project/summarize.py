"""A module's summary, read off its semantic model: the same-file machinery (model/functions.py,
model/loops.py, model/values.py) answers the questions, and this module records the answers about
parameters as plain data (project/summary.py)."""

from __future__ import annotations

import ast
import builtins
import os
import sys
from collections.abc import Iterator

import libcst as cst

from torchlint.knowledge import data, modules
from torchlint.model import Model, loader_roles, probabilities
from torchlint.model.batch_sizes import given_batch_sizes
from torchlint.model.distributed_branches import runs_distributed
from torchlint.model.file_paths import saving_parameters
from torchlint.model.loops import BatchLoop, EpochLoop
from torchlint.model.names import dotted
from torchlint.model.place_following import followed_parameter, returned_parameter
from torchlint.model.repetition import calls_each_round, runner
from torchlint.model.values import Kind, Place as Placement
from torchlint.model.values.calling import keyword, parameter_for
from torchlint.model.values.placement import device_argument, places_within
from torchlint.project.summary import (
    BatchLoopFact,
    EpochLoopFact,
    ARGUMENT,
    TUPLE,
    FunctionFacts,
    FunctionSummary,
    LoaderBatchFact,
    Place,
    ReturnFact,
)

_LOOPS = (cst.For, cst.While)
_RETURNED_KINDS = frozenset({Kind.LOADER, Kind.SAMPLER, Kind.MODULE, Kind.DEVICE})
_DRIVEN = ("drives", "places_on", "places_itself")  # the facts of Reader._modules_driven, in order


def _top_level(body) -> Iterator[cst.CSTNode]:
    """Module-level statements, through `if`/`try` blocks (`if TYPE_CHECKING:`, optional imports)."""
    for statement in body:
        if isinstance(statement, (cst.If, cst.Try)):
            yield from _top_level(statement.body.body)
        else:
            yield statement


class Reader:
    """Reads function summaries off one module's model."""

    def __init__(self, model: Model, text: str, path: str) -> None:
        self.model = model
        self.text = text
        self.path = path
        self._lines: dict[cst.CSTNode, int] | None = None
        self._for_loops: dict[cst.CSTNode, list[cst.For]] = {}
        # facts several others are read from, by function
        self._loops_of: dict[cst.FunctionDef, tuple[tuple[cst.CSTNode, BatchLoopFact], ...]] = {}
        self._driven: dict[cst.FunctionDef, tuple[frozenset[str], frozenset[str], bool]] = {}
        for binding in model.all_bindings():
            if binding.how == "for":
                loops = self._for_loops.setdefault(model.function_of(binding.statement), [])
                if binding.statement not in loops:
                    loops.append(binding.statement)

    def place(self, node: cst.For | cst.While | cst.FunctionDef) -> Place:
        """Where a loop or function is: its line, from CPython's parse of the module (a sixth of
        LibCST's, where LibCST's positions would cost a code generation pass), matched node for
        node in source order; only modules with something to point at pay it."""
        if self._lines is None:
            self._lines = _lines(self.model, self.text)
        return Place(self.path, self._lines.get(node, 0))

    def definition(self, qualname: str) -> cst.FunctionDef | None:
        """The function `name` or method `Class.name` defined at the module's top level."""
        owner, _, name = qualname.rpartition(".")
        for statement in _top_level(self.model.module.body):
            if owner and isinstance(statement, cst.ClassDef) and statement.name.value == owner:
                return next((s for s in statement.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
            if not owner and isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                return statement
        return None

    def function(self, fn: cst.FunctionDef, name: str) -> FunctionSummary:
        """The function's signature and what it returns; its other facts are for `fact`."""
        params = fn.params
        positional = tuple(p.name.value for p in (*params.posonly_params, *params.params))
        keyword_only = tuple(p.name.value for p in params.kwonly_params)
        with_default = frozenset(
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.default is not None
        )
        variadic = isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None
        offset = _offset(self.model, fn)
        if self._opaque_decorated(fn):
            # a decorator the model does not know may change what the function does
            return FunctionSummary(name, positional, keyword_only, with_default, True, offset)
        returns = self._instance(fn) if fn.name.value == "__init__" else self._returns(fn, set(positional) | set(keyword_only))
        return FunctionSummary(name, positional, keyword_only, with_default, variadic, offset, returns)

    def fact(self, fn: cst.FunctionDef, name: str):
        """The fact ``name`` (a field of FunctionFacts) of the function."""
        if self._opaque_decorated(fn):
            return getattr(FunctionFacts(), name)
        model = self.model
        functions = model.summaries
        params = _param_names(fn)
        if name in _DRIVEN:
            return self._modules_driven(fn, params)[_DRIVEN.index(name)]
        if name == "where":
            return self.place(fn) if self._modules_driven(fn, params)[0] else None
        if name == "feeds":
            drives, places_on, places_itself = self._modules_driven(fn, params)
            return tuple(self._feeds(fn, drives, self._batch_loops(fn))) if drives and not (places_on or places_itself) else ()
        if name == "batch_loops":
            return tuple(fact for _, fact in self._batch_loops(fn))
        if name == "epoch_loops":
            return tuple(self._epoch_loops(fn, self._batch_loops(fn)))
        if name == "moved":
            return functions.moved_params(fn)
        if name == "inert":
            return frozenset(name for name in params if name != "self" and self._inert(fn, name))
        if name == "seeded":
            return functions.epoch_seeded_params(fn)
        if name == "saves_to":
            return saving_parameters(model, fn)
        if name == "runs_in_loop":
            return frozenset(self._run_in_loops(fn, set(params)))
        if name == "exit_modes":
            return tuple(model.modes.parameter_exit_modes(fn, tuple(params)))
        if name == "device_defaults":
            return tuple(self._device_defaults(fn))
        if name == "loader_batch_sizes":
            return tuple(self._loader_batch_sizes(fn))
        raise AttributeError(name)

    def _opaque_decorated(self, fn: cst.FunctionDef) -> bool:
        functions = self.model.summaries
        return functions.call_sites(fn) is None and functions.opaquely_decorated(fn)

    # -- loops -------------------------------------------------------------------------------
    def _batch_loops(self, fn: cst.FunctionDef) -> tuple[tuple[cst.CSTNode, BatchLoopFact], ...]:
        if fn not in self._loops_of:
            self._loops_of[fn] = tuple(self._find_batch_loops(fn))
        return self._loops_of[fn]

    def _find_batch_loops(self, fn: cst.FunctionDef) -> Iterator[tuple[cst.CSTNode, BatchLoopFact]]:
        """For-loops of ``fn`` (outside nested functions) over one of its parameters or over
        `self.<attr>`, through wrappers (`enumerate`, `tqdm`...)."""
        model = self.model
        names = set(_param_names(fn))
        for loop in self._for_loops.get(fn, ()):
            for source in model.loops.iterated_sources(loop.iter):
                if type(source) is cst.Call and not _builtin_call(model, source):
                    # `metric_logger.log_every(data_loader, 10)`: what the caller passes decides
                    # whether the adapted argument is a loader (`range(epochs)` counts, it adapts nothing)
                    source = model.values.pipeline.adapted_argument(source) or source
                key = self._parameter_source(source, names)
                if key is not None:
                    trains = model.loops.trains(BatchLoop(loop, (source,), frozenset()))
                    yield loop, BatchLoopFact(key, trains, self.place(loop))
                    break

    def _parameter_source(self, source: cst.BaseExpression, names: set[str]) -> str | None:
        key = dotted(source)
        if key is None:
            return None
        if key in names and all(b.how == "param" for b in self.model.bindings_of(source)):
            return key
        if key.startswith("self.") and key.count(".") == 1:
            return key
        return None

    def _epoch_loops(self, fn: cst.FunctionDef, batch_loops) -> Iterator[EpochLoopFact]:
        """Loops of ``fn`` around its training batch loops over parameters, with the parameters
        (or `self.<attr>`) re-seeded inside them."""
        model = self.model
        for loop_node, fact in batch_loops:
            if not fact.trains:
                continue
            for ancestor in model.ancestors(loop_node):
                if ancestor is fn:
                    break
                if isinstance(ancestor, _LOOPS):
                    seeds = frozenset(self._seeded_in(ancestor))
                    yield EpochLoopFact(frozenset({fact.source}), seeds, self.place(ancestor), EpochLoop(ancestor, ()).variable)
                    break

    def _run_in_loops(self, fn: cst.FunctionDef, params: set[str]) -> Iterator[str]:
        """Parameters or `self.<attr>` that a `for` loop of ``fn`` runs each time round (see
        repetition.runner)."""
        for loop in self._for_loops.get(fn, ()):
            for call in calls_each_round(self.model, loop):
                key = runner(call)
                if key is not None and (key in params or key.count(".") == 1 and key.startswith("self.")):
                    yield key

    def _seeded_in(self, loop: cst.CSTNode) -> Iterator[str]:
        """Parameters or `self.<attr>` on which `set_epoch` is called inside ``loop`` (on the value
        itself, its `.sampler` or `.batch_sampler.sampler`), directly or through a helper."""
        functions = self.model.summaries
        for call in functions.calls_within(loop):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
                yield from _seeded_roots(func.value)
            for target, offset in functions.targets(call):
                for param in functions.epoch_seeded_params(target):
                    argument = functions.argument(target, call, offset, param)
                    if argument is not None:
                        yield from _seeded_roots(argument)

    # -- loaders it builds -------------------------------------------------------------------
    def _loader_batch_sizes(self, fn: cst.FunctionDef) -> Iterator[LoaderBatchFact]:
        """The loaders ``fn`` builds for one process each, from a batch size its caller passes in
        undivided (batch_sizes.given_batch_sizes): over a sampler that gives each rank its share
        of the data, in the distributed branch, handed to no framework that splits batches
        itself, and not only for evaluation."""
        model = self.model
        values = model.values
        for loader, parameter, attribute in given_batch_sizes(model, fn):
            built = [v for v in values.of(loader) if v.kind is Kind.LOADER and v.node is loader]
            samplers = frozenset().union(*(values.pipeline.loader_samplers(v) for v in built))
            if not any(sampler.api in data.PER_RANK_SAMPLERS for sampler in samplers):
                continue
            if not runs_distributed(model, loader) or loader_roles.framework_owned(model, loader):
                continue
            trains = loader_roles.trains(model, loader)
            if trains is not False:
                yield LoaderBatchFact(parameter, attribute, trains, self.place(fn))

    # -- modules given to it ------------------------------------------------------------------
    def _modules_driven(self, fn: cst.FunctionDef, params: list[str]) -> tuple[frozenset[str], frozenset[str], bool]:
        if fn not in self._driven:
            self._driven[fn] = self._find_modules_driven(fn, params)
        return self._driven[fn]

    def _find_modules_driven(self, fn: cst.FunctionDef, params: list[str]):
        """The parameters ``fn`` calls or trains as a module and does nothing else with, and
        where the code that does so places data: on the device a parameter of ``fn`` names, or
        on one of its own. A device that comes from elsewhere (another parameter's helper, an
        attribute) is left out: the caller's argument may be the host."""
        model = self.model
        fates = model.values.modules
        drives = set()
        scopes: set[cst.CSTNode] = set()
        for name in params:
            if name == "self":
                continue
            fate = fates.parameter_fate(fn, name)
            if (fate.calls or fate.trained) and not (fate.moves or fate.handed_off or fate.driven_elsewhere):
                drives.add(name)
                scopes |= fate.scopes
        if not drives:
            return frozenset(), frozenset(), False
        places_on, places_itself = self._placements(fn, scopes)
        return frozenset(drives), places_on, places_itself

    def _feeds(self, fn: cst.FunctionDef, drives: frozenset[str], batch_loops) -> Iterator[tuple[str, str]]:
        """(module parameter, loader parameter) pairs: a batch loop over the loader parameter
        calls the module parameter with its batch or parts of it (`x`, `batch["image"]`,
        `inputs` bound from them), and neither ``fn`` nor a function it reaches places anything."""
        model = self.model
        summaries = model.summaries
        if any(places_within(model, place) for place in (fn, *summaries.reachable(fn))):
            return
        found = []
        for loop, fact in batch_loops:
            if "." in fact.source or not isinstance(loop, cst.For):
                continue
            for call in summaries.calls_within(loop):
                if isinstance(call.func, cst.Name) and call.func.value in drives and call.func.value != fact.source:
                    if any(_from_batch(model, loop, arg.value, 3) for arg in call.args):
                        pair = (call.func.value, fact.source)
                        if pair not in found:
                            found.append(pair)
        yield from found

    def _placements(self, fn: cst.FunctionDef, scopes: set[cst.CSTNode]) -> tuple[frozenset[str], bool]:
        model = self.model
        placement = model.values.placement
        on: set[str] = set()
        itself = False
        for call in model.calls:
            if model.function_of(call) not in scopes or placement.move_target(call) is not Placement.DEVICE:
                continue
            device = device_argument(call) if call.func.attr.value == "to" else None
            if device is None:
                itself = True  # `.cuda()`
            elif isinstance(device, cst.Name) and all(
                b.how == "param" and b.scope is fn for b in model.bindings_of(device)
            ) and model.bindings_of(device):
                on.add(device.value)
            elif not placement.follows_a_tensor(device) and all(
                v.kind is Kind.DEVICE and not v.host_only for v in model.values.of(device)
            ):
                itself = True  # a device of its own (`.to(x.device)` only follows its input)
        return frozenset(on), itself

    def _inert(self, fn: cst.FunctionDef, name: str, depth: int = 3) -> bool:
        """Whether ``fn`` only reads a parameter: its fate has no move, call, training or hand-off,
        no hook is registered on it, and a same-file function it is passed to (``depth`` calls
        deep) does likewise with it."""
        model = self.model
        fate = model.values.modules.parameter_fate(fn, name)
        if fate.moves or fate.calls or fate.trained or fate.handed_off or fate.driven_elsewhere:
            return False
        for use in model.values.modules.parameter_uses(fn, name):
            if use.how == "method" and use.name in modules.HOOK_METHODS:
                return False
            if use.how != "argument":
                continue
            for target, offset in model.summaries.targets(use.context):
                parent = model.parent(use.node)
                parameter = parameter_for(target, use.context, parent if isinstance(parent, cst.Arg) else None, offset)
                if depth == 0 or parameter is None or not self._inert(target, parameter, depth - 1):
                    return False
        return True

    def _only_read(self, fn: cst.FunctionDef, name: str) -> bool:
        """Whether ``fn`` does nothing with a module parameter but read it (inert methods such
        as `load_state_dict`) before giving it back: it neither moves, runs nor hands it on."""
        fate = self.model.values.modules.parameter_fate(fn, name)
        return not (fate.moves or fate.calls or fate.trained or fate.driven_elsewhere) and all(
            use.how == "returned" for use in fate.handed_off
        )

    # -- defaults and returns ----------------------------------------------------------------
    def _device_defaults(self, fn: cst.FunctionDef) -> Iterator[tuple[str, str]]:
        values = self.model.values
        params = fn.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is None:
                continue
            found = values.of(param.default)
            if found and all(v.kind is Kind.DEVICE for v in found):
                place = values.placement.device_place(param.default)
                yield param.name.value, "cpu" if place is Placement.HOST else self.model.module.code_for_node(param.default)

    def _instance(self, fn: cst.FunctionDef) -> ReturnFact | None:
        """What calling the class of constructor ``fn`` builds, when it is a torch module (or a
        DataLoader subclass) that does not place itself (in its constructor): one the importing
        file moves and feeds as it would one of its own classes. A module that places what it is
        given (in its other methods) says so; a DataLoader subclass that does is left unknown."""
        model = self.model
        classdef = model.scope(fn)
        if not isinstance(classdef, cst.ClassDef):
            return None
        fates = model.values.modules
        kind, _ = fates.class_info(classdef)
        if kind not in (Kind.MODULE, Kind.LOADER) or places_within(model, fn) or self._opaque(fn):
            return None
        moves_inputs = fates.moves_inputs(classdef) or self._holds_input_movers(fn)
        if kind is Kind.LOADER:
            # a DataLoader subclass
            return ReturnFact(kind.value, classdef.name.value) if not moves_inputs else None
        forward = model.summaries.method(classdef, "forward")
        returned = model.summaries.returns(forward) if forward is not None else None
        return ReturnFact(
            kind.value, classdef.name.value, trainable=fates.holds_state(classdef),
            mode_dependent=model.mode_dependence.class_dependent(classdef),
            built_training=model.mode_dependence.class_built_training(classdef),
            probabilities=bool(returned) and all(probabilities.source(model, value) is not None for value in returned),
            moves_inputs=moves_inputs,
        )

    def _holds_input_movers(self, init: cst.FunctionDef) -> bool:
        """Whether a constructor builds a module that moves the inputs it is given itself (a
        wrapper's forward hands its inputs on to it)."""
        model = self.model
        fates = model.values.modules
        return any(
            value.kind is Kind.MODULE and fates.places_own_inputs(value)
            for call in model.summaries.calls_within(init)
            for value in model.values.of(call)
        )

    def _opaque(self, init: cst.FunctionDef) -> bool:
        """Whether a constructor runs code the model cannot see into, which may place the module
        (`self.net.initialize(use_gpu=True)`): a call that is not torch's or the standard library's,
        a builtin, a same-file function or class, a module another project module builds without
        placing it, `super().__init__`, one of the module's own
        building methods or methods that change nothing about placement (`self.parameters()` to
        freeze them), or a method of something whose kind the model knows."""
        model = self.model
        values = model.values
        for call in model.summaries.calls_within(init):
            func = call.func
            name = model.call_name(call)
            if name is not None and (name.startswith("torch.") or name.split(".", 1)[0] in sys.stdlib_module_names):
                continue  # torch's own building blocks; the standard library places nothing
            if isinstance(func, cst.Name) and (not model.bindings_of(func) or model.summaries.targets(call)):
                continue  # a builtin, or a same-file function
            if isinstance(func, cst.Name) and all(b.how == "class" for b in model.bindings_of(func)):
                continue
            built = values.project_returns(call)
            if built is not None and built.kind == Kind.MODULE.value and not built.moved:
                continue  # a module another module of the project builds without placing it
            if isinstance(func, cst.Attribute):
                receiver = func.value
                if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
                    continue
                if isinstance(receiver, cst.Name) and receiver.value == "self" and (
                    func.attr.value in modules.BUILDING_METHODS
                    or func.attr.value in modules.INERT_METHODS
                    or model.summaries.targets(call)
                ):
                    continue
                found = values.of(receiver)
                if found and not any(v.kind is Kind.UNKNOWN for v in found):
                    continue
            return True
        return False

    def _returns(self, fn: cst.FunctionDef, params: set[str]) -> ReturnFact | None:
        model = self.model
        returned = model.summaries.returns(fn)
        if not returned:
            return None
        parameter = returned_parameter(model, fn)
        if parameter is not None:  # what the caller passed, whatever it is
            return ReturnFact(ARGUMENT, parameter=parameter, only_read=self._only_read(fn, parameter))
        found = frozenset().union(*(model.values.of(expr) for expr in returned))
        kinds = {value.kind for value in found}
        if len(kinds) != 1 or not kinds <= _RETURNED_KINDS:
            parameter = followed_parameter(model, fn)
            if parameter is not None:
                return ReturnFact(Kind.TENSOR.value, parameter=parameter)
            return self._returned_tuple(fn, returned, params)
        return self._returned_kind(fn, returned, found, kinds.pop(), params)

    def _returned_tuple(self, fn: cst.FunctionDef, returned, params: set[str]) -> ReturnFact | None:
        """What a function whose every return writes out a tuple of one length gives back in each
        place (`return train_loader, val_loader`), for callers that unpack it."""
        if not all(type(expr) is cst.Tuple for expr in returned):
            return None
        lengths = {len(expr.elements) for expr in returned}
        if len(lengths) != 1 or any(type(e) is cst.StarredElement for expr in returned for e in expr.elements):
            return None
        values = self.model.values
        elements = []
        for place in range(lengths.pop()):
            exprs = [expr.elements[place].value for expr in returned]
            found = frozenset().union(*(values.of(expr) for expr in exprs))
            kinds = {value.kind for value in found}
            known = len(kinds) == 1 and kinds <= _RETURNED_KINDS
            elements.append(self._returned_kind(fn, exprs, found, kinds.pop(), params) if known else None)
        return ReturnFact(TUPLE, elements=tuple(elements)) if any(elements) else None

    def _returned_kind(self, fn: cst.FunctionDef, returned, found: frozenset, kind: Kind, params: set[str]) -> ReturnFact | None:
        """What the expressions ``returned`` give back, values ``found`` of the one ``kind``."""
        values = self.model.values
        apis = {value.api for value in found}
        api = apis.pop() if len(apis) == 1 else None
        if kind is Kind.LOADER:
            pipeline = values.pipeline
            host = all(pipeline.batch_place(loader) is Placement.HOST and pipeline.collates_tensors(loader) for loader in found)
            samplers = frozenset().union(*(pipeline.loader_samplers(loader) for loader in found))
            given = frozenset(sampler for sampler in samplers if sampler.kind is not Kind.NONE)
            # `RandomSampler(ds) if rank == -1 else DistributedSampler(ds)`: the one with set_epoch
            # is what the caller must re-seed; the others are runs that have nothing to re-seed
            seeded = frozenset(s for s in given if s.kind is Kind.SAMPLER and s.epoch_seeded)
            if len(found) == 1 and (len(given) == 1 or len(seeded) == 1):
                sampler = next(iter(seeded if len(seeded) == 1 else given))
                if sampler.kind is Kind.SAMPLER:
                    # a `shuffle=` the caller passes in is the caller's to decide
                    shuffle = keyword(sampler.node, "shuffle") if isinstance(sampler.node, cst.Call) else None
                    shuffles = None if shuffle is not None and _reads(shuffle, params) else sampler.shuffles
                    return ReturnFact(
                        kind.value, api, sampler_api=sampler.api, sampler_shuffles=shuffles,
                        sampler_seeded=sampler.epoch_seeded, sampler_optional=samplers != {sampler},
                        host_batches=host,
                    )
            if not samplers:
                return ReturnFact(kind.value, api, host_batches=host)
            passed = pipeline.sampler_argument(next(iter(found))) if len(found) == 1 else None
            if type(passed) is cst.Name and passed.value in params and all(s.kind is Kind.UNKNOWN for s in samplers):
                return ReturnFact(kind.value, api, host_batches=host, sampler_parameter=passed.value)
            return None
        if kind is Kind.SAMPLER:
            return self._returned_sampler(found, api, params)
        if kind is Kind.DEVICE:
            accelerator = any(values.placement.device_place(expr) is not Placement.HOST for expr in returned)
            return ReturnFact(kind.value, accelerator=accelerator)
        if kind is Kind.MODULE:
            return self._returned_module(fn, returned, found, api)
        return ReturnFact(kind.value, api)

    def _returned_sampler(self, found: frozenset, api: str | None, params: set[str]) -> ReturnFact:
        """What a function that returns a sampler gives: the one with set_epoch when it returns one
        (`DistributedSampler(ds, shuffle=shuffle) if distributed else RandomSampler(ds)`), which
        the caller must re-seed, and the parameter that decides whether it shuffles."""
        seeded = [sampler for sampler in found if sampler.epoch_seeded]
        if len(seeded) != 1:
            return ReturnFact(Kind.SAMPLER.value, api)
        sampler = seeded[0]
        shuffle = keyword(sampler.node, "shuffle") if isinstance(sampler.node, cst.Call) else None
        parameter = shuffle.value if type(shuffle) is cst.Name and shuffle.value in params else None
        return ReturnFact(
            Kind.SAMPLER.value, api, sampler_api=sampler.api, sampler_seeded=True,
            sampler_shuffles=None if parameter is not None else sampler.shuffles,
            sampler_optional=len(found) > 1, shuffle_parameter=parameter,
        )

    def _returned_module(self, fn: cst.FunctionDef, returned, found: frozenset, api: str | None) -> ReturnFact | None:
        """What a function that builds and returns a module (`build_model(cfg)`) gives: whether
        the module holds dropout or batch norm, whether it comes back in training mode (built so,
        nothing set its mode since), whether the function (or what it runs) places anything,
        which may be the module, and whether it is of a class of this module that moves its
        inputs itself (as for constructors, see _instance). None when it returns a module it was
        handed."""
        model = self.model
        fates = model.values.modules
        dependence = model.mode_dependence
        if not all(isinstance(v.node, cst.Call) for v in found):
            return None  # a module it was handed, which the caller holds already
        moves_inputs = any(fates.places_own_inputs(v) for v in found)
        placed = any(places_within(model, place) for place in (fn, *model.summaries.reachable(fn)))
        fresh = all(dependence.built_training(v) for v in found) and all(
            model.modes.mode_at(v, expr).mode is None for expr in returned for v in model.values.of(expr)
        )
        return ReturnFact(
            Kind.MODULE.value, api, moved=placed, mode_dependent=any(dependence.mode_dependent(v) for v in found),
            built_training=fresh, moves_inputs=moves_inputs,
        )


def _reads(node: cst.CSTNode, names: set[str]) -> bool:
    """Whether ``node`` mentions one of ``names``."""
    return isinstance(node, cst.Name) and node.value in names or any(_reads(child, names) for child in node.children)


def _lines(model: Model, text: str) -> dict[cst.CSTNode, int]:
    """Each loop and function of the module -> its line (of its `def`). Both parsers list them in
    the same source order (a depth-first walk in field order); a count that differs means no
    lines rather than wrong ones."""
    walk = list(depth_first(ast.parse(text)))
    found: dict[cst.CSTNode, int] = {}
    for ours, theirs in ((_LOOPS, (ast.For, ast.AsyncFor, ast.While)), ((cst.FunctionDef,), (ast.FunctionDef, ast.AsyncFunctionDef))):
        lines = [node.lineno for node in walk if isinstance(node, theirs)]
        nodes = sorted((node for node in model.nodes if isinstance(node, ours)), key=model.order)
        if len(nodes) == len(lines):
            found.update(zip(nodes, lines))
    return found


def depth_first(node: ast.AST) -> Iterator[ast.AST]:
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(reversed(list(ast.iter_child_nodes(current))))


def _from_batch(model: Model, loop: cst.For, expr: cst.BaseExpression, depth: int) -> bool:
    """Whether ``expr`` is the batch ``loop`` draws or a part of it: a name its target binds, an
    item or attribute of one, or a name every binding of which assigns such a part."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    if not isinstance(expr, cst.Name) or depth == 0:
        return False
    bindings = model.bindings_of(expr)
    return bool(bindings) and all(
        (binding.how == "for" and binding.statement is loop)
        or (binding.how == "assign" and binding.value is not None and _from_batch(model, loop, binding.value, depth - 1))
        for binding in bindings
    )


def _seeded_roots(receiver: cst.BaseExpression) -> Iterator[str]:
    """`p`, `p.sampler`, `p.batch_sampler.sampler`, `self.x.sampler` -> `p` / `self.x`."""
    key = dotted(receiver)
    if key is None:
        return
    parts = key.split(".")
    while parts and parts[-1] in ("sampler", "batch_sampler") and len(parts) > 1:
        parts.pop()
    if parts[0] == "self" and len(parts) >= 2:
        yield ".".join(parts[:2])
    elif len(parts) == 1:
        yield parts[0]


def _param_names(fn: cst.FunctionDef) -> list[str]:
    params = fn.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _offset(model: Model, fn: cst.FunctionDef) -> int:
    if not isinstance(model.scope(fn), cst.ClassDef):
        return 0
    names = {dotted(d.decorator) for d in fn.decorators}
    return 0 if "staticmethod" in names else 1


def _builtin_call(model, call: cst.Call) -> bool:
    """`range(epochs)`, `sorted(items)`: a builtin the file does not rebind."""
    func = call.func
    return type(func) is cst.Name and hasattr(builtins, func.value) and not model.bindings_of(func)


def relative_display(path: str, root: str | None) -> str:
    """How messages name a module: relative to the project root when it is inside it."""
    if root is not None:
        relative = os.path.relpath(path, root)
        if not relative.startswith(".."):
            return relative.replace(os.sep, "/")
    return os.path.basename(path)

