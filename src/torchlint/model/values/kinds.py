"""What a value of the script is: its kind, where its data is, and the places it reaches.

Values are compared by identity: one `Value` per construction (a call, a loop target), so a
module built once and read through five names is one value.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import libcst as cst

from torchlint.model.bindings import Binding


class Kind(enum.Enum):
    DEVICE = "device"
    MODULE = "module"
    TENSOR = "tensor"
    BATCH = "batch"  # what one step over a loader yields, before unpacking
    OPTIMIZER = "optimizer"
    SAMPLER = "sampler"
    LOADER = "loader"
    DATASET = "dataset"
    ITERATOR = "iterator"  # iter(loader)
    TRACED = "traced module"
    FRAMEWORK = "framework"  # an Accelerator, Fabric or Trainer object
    MANAGED = "framework-managed"  # what a framework or DeepSpeed hands back
    INSTANCE = "instance"  # an object of a class defined in the file (not a module)
    CLASS = "class"  # a class named without being called (`Sampler = DistributedSampler`)
    DTYPE = "dtype"  # a torch dtype or memory format (`.to(torch.float16)` moves nothing)
    NONE = "None"
    OTHER = "other"  # known to be none of the above: a number, a string, a container
    UNKNOWN = "unknown"

    # by identity, as members compare: Enum hashes a member's name in Python, and kinds fill sets
    __hash__ = object.__hash__


class Place(enum.Enum):
    """Where a tensor's (or batch's) data is."""

    HOST = "host"  # made in host memory and not moved
    DEVICE = "device"  # placed on a device that may be an accelerator
    UNKNOWN = "unknown"

    __hash__ = object.__hash__  # see Kind


@dataclass(frozen=True)
class ModuleFacts:
    """What is known of a module whose class the file does not show: one of another module of
    the project or one a function there builds (its summary), or one handed in and switched to
    evaluation mode by the file."""

    mode_dependent: bool  # holds dropout or batch norm
    probabilities: bool = False  # its forward returns a softmax
    built_training: bool = False  # a new instance is in training mode (its constructor sets no mode)
    placed: bool = False  # the code that built it may have placed it on a device
    moves_inputs: bool = False  # its methods place tensors themselves (its forward may place its inputs)


# Not frozen: the value flow makes tens of thousands per run, and a frozen dataclass's __init__
# sets each field through object.__setattr__ (~5x slower); no code assigns to a Value once made.
@dataclass(eq=False, slots=True)
class Value:
    kind: Kind
    node: cst.CSTNode | None = None  # the expression that makes it (a call, a loop target...)
    api: str | None = None  # qualified name or same-file class name of what made it
    place: Place = Place.UNKNOWN  # tensors and batches
    origin: Value | None = None  # batches, elements and iterators: their loader
    trainable: bool = True  # modules: holds parameters or buffers
    facts: ModuleFacts | None = None  # modules the file does not build: what is known of them
    host_only: bool = False  # devices: every spelling names the host ("cpu")
    shuffles: bool | None = None  # samplers with set_epoch: whether they shuffle (None: cannot tell)
    epoch_seeded: bool = False  # samplers: has set_epoch
    # a loader a function of another module returns inside a tuple (`train, val = build(cfg)`),
    # and the sampler inside it: its place there, which picks its facts out of the function's
    # summary and its uses out of the call's
    position: int | None = None

    def __repr__(self) -> str:
        place = f" on {self.place.value}" if self.kind in (Kind.TENSOR, Kind.BATCH) else ""
        return f"<{self.kind.value} {self.api or ''}{place}>"


UNKNOWN = Value(Kind.UNKNOWN)
NONE = Value(Kind.NONE)
OTHER = Value(Kind.OTHER)
UNKNOWN_SET = frozenset({UNKNOWN})
OTHER_SET = frozenset({OTHER})
DTYPE_SET = frozenset({Value(Kind.DTYPE)})


@dataclass(frozen=True)
class Use:
    """One place a value reaches.

    ``how``: "called" (`model(x)`: ``context`` is the call), "method" (`x.to(d)`: ``name`` is
    the method, ``context`` the call), "attribute" (`x.sampler`, not called), "argument" (passed
    to ``context``, a call; ``name`` the keyword if any), "formatted" (into an f-string or
    `"%s" % x`: ``context`` is the text expression), "iterated" (`for ... in x`), "bound"
    (assigned to ``binding``, whose reads are followed), "stored" (into a subscript or a
    container), "returned" (to callers the file does not show), "other" (compared, yielded...).
    """

    how: str
    node: cst.CSTNode = field(repr=False)
    context: cst.CSTNode | None = field(default=None, repr=False)
    name: str | None = None
    binding: Binding | None = field(default=None, repr=False)
