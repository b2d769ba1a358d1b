"""What a module of the project does, as plain data: computed from the module's own tree once,
cached (pickled) with its content digest, and consulted wherever another file calls into it.

A summary says only what the module's code shows. A function that may be called with arguments
it does not show, or whose effect depends on code that did not resolve, records nothing it could
not see; what a summary leaves out is unknown code to its readers, as an unresolved import is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

from torchlint.model.names import ImportSpec


@dataclass(frozen=True)
class Place:
    """A place in the project, for messages that point across files (`engine.py:42`)."""

    path: str  # absolute; messages name it relative to the checked file's project root
    line: int


@dataclass(frozen=True)
class BatchLoopFact:
    """A batch loop over a parameter (or over `self.<attr>` in a method)."""

    source: str  # the parameter's name, or "self.<attr>"
    trains: bool  # takes training steps (`.backward()`, `.step()`) in its body or its helpers
    where: Place


@dataclass(frozen=True)
class EpochLoopFact:
    """An epoch loop a function owns: the loaders its training batch loops iterate, given as the
    parameters (or `self.<attr>`) they come from, and those it re-seeds with `set_epoch`."""

    trains_on: frozenset[str]
    seeds: frozenset[str]
    where: Place
    variable: str | None = None  # its counter (`epoch` in `for epoch in range(n)`), if usable


@dataclass(frozen=True)
class LoaderBatchFact:
    """A per-process loader a function builds (its sampler gives each rank its own share) with a
    batch size its caller passes in, undivided on the way: a parameter, or an attribute of one
    (`args.train_batch_size` from `args`)."""

    parameter: str
    attribute: str | None  # `train_batch_size` when the loader reads `<parameter>.train_batch_size`
    trains: bool | None  # a loop of the function over the loader updates weights (None: not shown)
    where: Place  # the function's `def`


# ReturnFact.kind of a function that gives back one of its parameters unchanged (`return model`)
ARGUMENT = "argument"
# ReturnFact.kind of a function that gives back a tuple it writes out (`return train, val`)
TUPLE = "tuple"


@dataclass(frozen=True)
class ReturnFact:
    """What every return of a function gives back, when it is one kind the model knows, or the
    argument of one parameter."""

    kind: str  # a model Kind's value: "loader", "sampler", "module", "device"..., or ARGUMENT
    api: str | None = None
    moved: bool = False  # a module or tensor placed on a device before it is returned
    accelerator: bool = False  # a device that may be an accelerator (not `cpu`)
    sampler_api: str | None = None  # a loader: the sampler inside it
    sampler_shuffles: bool | None = None
    sampler_seeded: bool = False  # that sampler has set_epoch
    sampler_optional: bool = False  # other paths give the loader no sampler (`sampler=None` unless distributed)
    # a sampler returned with set_epoch whose `shuffle=` is this parameter: the caller's argument decides
    shuffle_parameter: str | None = None
    # a loader built over the sampler this parameter receives (`DataLoader(ds, sampler=sampler)` in
    # `make_loader(ds, sampler)`): the caller's argument is the sampler inside it
    sampler_parameter: str | None = None
    host_batches: bool = False  # a loader: it collates tensors in host memory (a torch DataLoader)
    only_read: bool = False  # ARGUMENT: the function only reads it first (`load_state_dict`)
    # every return is a tuple written out with this many elements (`return train, val`): what
    # each element is, None where it is nothing the model knows; the fact's kind is then TUPLE
    elements: tuple[ReturnFact | None, ...] = ()
    # ARGUMENT: that parameter; a tensor: the parameter it is computed from, on whatever device
    # that is (`(batch - mean) / std`)
    parameter: str | None = None
    # a constructor: the module instance it builds (trainable: it holds parameters or buffers;
    # mode_dependent: it holds dropout or batch norm; probabilities: its forward returns a softmax;
    # built_training: it is in training mode when built, its constructor setting no mode;
    # moves_inputs: its methods place tensors themselves, maybe the inputs of its forward)
    trainable: bool = True
    mode_dependent: bool = False
    probabilities: bool = False
    built_training: bool = False
    moves_inputs: bool = False


@dataclass(frozen=True)
class FunctionFacts:
    """What a function does with what it is given, past its signature and what it returns: the
    facts a FunctionSummary reads only when first asked (the defaults: nothing shown)."""

    moved: frozenset[str] = frozenset()  # parameters placed on a device
    # parameters called or trained as a module and otherwise only read (never moved, handed on,
    # stored or returned)
    drives: frozenset[str] = frozenset()
    # parameters it only reads (attributes, `state_dict()` to save, its mode): it neither moves,
    # runs, trains or hooks them, nor hands them on or keeps them
    inert: frozenset[str] = frozenset()
    places_on: frozenset[str] = frozenset()  # parameters naming a device it places data on
    places_itself: bool = False  # it places data on a device of its own that may be an accelerator
    # (module parameter, loader parameter): a batch loop over the loader calls the module with
    # parts of its batches, and the function places nothing anywhere
    feeds: tuple[tuple[str, str], ...] = ()
    seeded: frozenset[str] = frozenset()  # parameters re-seeded with set_epoch
    saves_to: frozenset[str] = frozenset()  # parameters naming the file it writes a checkpoint to
    batch_loops: tuple[BatchLoopFact, ...] = ()
    epoch_loops: tuple[EpochLoopFact, ...] = ()
    # parameters (or `self.<attr>`) a loop of it runs each time round: called, or a method of them
    # that computes called (a sampler's denoising network, a decoder)
    runs_in_loop: frozenset[str] = frozenset()
    # (parameter, "train" or "eval"): the mode the function always leaves the module it is given
    # for that parameter in (its last `train()`/`eval()` on it runs whatever the path)
    exit_modes: tuple[tuple[str, str], ...] = ()
    device_defaults: tuple[tuple[str, str], ...] = ()  # (parameter, device its default names)
    loader_batch_sizes: tuple[LoaderBatchFact, ...] = ()
    where: Place | None = None  # its `def` line, when it drives a parameter


_FACTS = {fact.name: fact.default for fact in fields(FunctionFacts)}


@dataclass(frozen=True, eq=False)
class FunctionSummary:
    """A function's signature and what it returns, read at once, and its other facts
    (FunctionFacts, attributes of the summary as well) each read when first asked: a call is
    mostly asked only what it gives back (every construction of a project class asks what its
    class's `__init__` builds), and the other facts cost more to read than that."""

    name: str  # `train_one_epoch`, or `Trainer.run` for a method
    params: tuple[str, ...]  # positional parameters in order, `self` included
    keyword_only: tuple[str, ...] = ()
    with_default: frozenset[str] = frozenset()
    variadic: bool = False  # takes *args or **kwargs
    offset: int = 0  # leading parameters a call does not pass (1 for `self`)
    returns: ReturnFact | None = None
    # every module file the facts read so far were read with: (absolute path, content digest)
    depends_on: tuple[tuple[str, str], ...] = ()
    # (this summary, a fact's name) -> (the fact, depends_on once it is read); None when the facts
    # are those of a function that shows none (FunctionFacts' defaults)
    read_fact: Callable[[FunctionSummary, str], tuple[object, tuple[tuple[str, str], ...]]] | None = field(
        default=None, repr=False
    )

    def __getattr__(self, name: str):
        # only reached for a fact not read yet: a read one is an attribute of the instance
        if name not in _FACTS:
            raise AttributeError(name)
        if self.read_fact is None:
            value = _FACTS[name]
        else:
            value, depends_on = self.read_fact(self, name)
            object.__setattr__(self, "depends_on", depends_on)
        object.__setattr__(self, name, value)
        return value

    def __getstate__(self) -> dict:
        """Every fact read (a summary is pickled into the cache whole), and nothing to read them
        with."""
        for name in _FACTS:
            getattr(self, name)
        return {**self.__dict__, "read_fact": None}

    def __eq__(self, other: object) -> bool:
        return self is other or isinstance(other, FunctionSummary) and self.__getstate__() == other.__getstate__()

    def __hash__(self) -> int:
        return hash((self.name, self.params, self.keyword_only, self.offset))

    @property
    def facts_read(self) -> bool:
        """Whether every fact is read, and depends_on thus final."""
        return self.read_fact is None or all(name in self.__dict__ for name in _FACTS)

    def device_default(self, parameter: str) -> str | None:
        """The device a parameter's default names (`"cpu"` for the host), if it names one."""
        return dict(self.device_defaults).get(parameter)

    def parameter_for(self, position: int | None, keyword: str | None) -> str | None:
        """The parameter an argument binds: by keyword, or by position after the offset."""
        if keyword is not None:
            return keyword if keyword in self.params or keyword in self.keyword_only else None
        index = (position or 0) + self.offset
        return self.params[index] if index < len(self.params) else None


@dataclass(frozen=True)
class ClassSummary:
    name: str
    methods: frozenset[str] = frozenset()  # the names of its methods (their facts: FunctionSummary)
    # constructor parameter -> the attribute `__init__` stores it in (`self.loader = loader`)
    stored: tuple[tuple[str, str], ...] = ()
    bases: tuple[str, ...] = ()  # as written (dotted)


@dataclass(frozen=True)
class ModuleSummary:
    """A module's outline: what a lookup of a name in it needs. The facts of each function are
    read when first needed, and kept apart (FunctionSummary)."""

    path: str  # absolute
    digest: str
    functions: frozenset[str] = frozenset()
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    imports: dict[str, tuple[ImportSpec, ...]] = field(default_factory=dict)  # module-level names bound by import
    other_names: frozenset[str] = frozenset()  # module-level names bound otherwise (assignments...)
    stars: tuple[ImportSpec, ...] = ()  # the modules it imports every public name of (`from x import *`)
    # whether its text names sys.path: then importing it may add folders (`import _init_paths`)
    names_sys_path: bool = False
    aliases: dict[str, str] = field(default_factory=dict)  # `Old = New` at the top level, set once
    # the names a literal `__all__` lists; None without one, or when it is computed (then
    # "__all__" is among other_names)
    exports: frozenset[str] | None = None


@dataclass(frozen=True)
class ClassRef:
    """A class of the project as a lookup finds it: the outline of its module, and its own."""

    module: ModuleSummary
    klass: ClassSummary
