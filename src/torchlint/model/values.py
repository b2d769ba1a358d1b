"""Value kinds: what an expression of the script may be, and where a value goes.

Two directions over the model's tables:

- backward, `Values.of(expr)`: the set of values an expression may evaluate to, following
  assignments, tuple unpacking, attributes (`self.model`, `args.device`), conditional
  expressions, `for` targets and comprehensions, returns of same-file helpers and parameters of
  same-file functions (through their call sites). The set holds `UNKNOWN` wherever some path
  cannot be followed; a rule asks "every value is X" (`Values.all_of`) before it fires;
- forward, `Values.uses(expr)`: every place the value an expression produces reaches: called,
  a method called on it, passed as an argument, formatted into text, stored, returned to
  callers the file does not show... through the same aliases.

Values are compared by identity: one `Value` per construction (a call, a loop target), so a
module built once and read through five names is one value.

A `Value` carries the facts the rules need: a tensor's `place` (made on the host, moved to a
device, unknown), a module's `trainable` (holds parameters or buffers), a device's
`host_only`, a sampler's `shuffles` and `epoch_seeded`, a batch's `origin` (its loader).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import calls, data, devices, frameworks, modules, tensors
from torchlint.model.bindings import Binding

if TYPE_CHECKING:
    from torchlint.model import Model

__all__ = ["Kind", "ModuleFate", "Place", "UNKNOWN", "Use", "Value", "Values", "builtin_or_qualified", "inspects_only", "is_reporting_call"]

_MAX_DEPTH = 40  # evaluation depth beyond which a value is unknown (keeps recursion bounded)
_MAX_ROUNDS = 4  # evaluations of a cycle's head before its last value is taken


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
    DTYPE = "dtype"  # a torch dtype or memory format (`.to(torch.float16)` moves nothing)
    NONE = "None"
    OTHER = "other"  # known to be none of the above: a number, a string, a container
    UNKNOWN = "unknown"


class Place(enum.Enum):
    """Where a tensor's (or batch's) data is."""

    HOST = "host"  # made in host memory and not moved
    DEVICE = "device"  # placed on a device that may be an accelerator
    UNKNOWN = "unknown"


@dataclass(frozen=True, eq=False)
class Value:
    kind: Kind
    node: cst.CSTNode | None = None  # the expression that makes it (a call, a loop target...)
    api: str | None = None  # qualified name or same-file class name of what made it
    place: Place = Place.UNKNOWN  # tensors and batches
    origin: Value | None = None  # batches, elements and iterators: their loader
    trainable: bool = True  # modules: holds parameters or buffers
    host_only: bool = False  # devices: every spelling names the host ("cpu")
    shuffles: bool | None = None  # samplers with set_epoch: whether they shuffle (None: cannot tell)
    epoch_seeded: bool = False  # samplers: has set_epoch

    def __repr__(self) -> str:
        place = f" on {self.place.value}" if self.kind in (Kind.TENSOR, Kind.BATCH) else ""
        return f"<{self.kind.value} {self.api or ''}{place}>"

UNKNOWN = Value(Kind.UNKNOWN)
NONE = Value(Kind.NONE)
OTHER = Value(Kind.OTHER)
_UNKNOWN_SET = frozenset({UNKNOWN})
_OTHER_SET = frozenset({OTHER})
_DTYPE_SET = frozenset({Value(Kind.DTYPE)})


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


@dataclass(frozen=True)
class ModuleFate:
    """What happens to a module value, read off all its uses."""

    moves: tuple[cst.Call, ...]  # device moves (`.to(d)`, `.cuda()`, a helper that moves it)
    accelerator: bool  # some move may go to an accelerator
    calls: tuple[cst.Call, ...]  # calls of the module itself
    trained: bool  # its parameters reach an optimizer, or `.train()` is called
    handed_off: tuple[Use, ...]  # given to a wrapper, a framework or code the file does not show
    scopes: frozenset[cst.CSTNode]  # functions (or the module) where it is made or read
    self_placed: bool = False  # its class's constructor places its parts itself


class Values:
    def __init__(self, model: Model) -> None:
        self.model = model
        # evaluation state: final results, the keys being computed (stack order), provisional
        # values inside a cycle (see _solve)
        self._memo: dict[object, frozenset[Value]] = {}
        self._stack: list[object] = []
        self._position: dict[object, int] = {}
        self._approx: dict[object, frozenset[Value]] = {}
        self._tentative: dict[object, tuple[frozenset[Value], int]] = {}
        self._low = 0
        self._made: dict[tuple, Value] = {}
        self._bindings_by_statement: dict[cst.CSTNode, list[Binding]] | None = None
        self._class_kinds: dict[cst.ClassDef, tuple[Kind, str | None]] = {}
        self._stateful: dict[cst.ClassDef, bool] = {}
        self._batch_places: dict[int, Place] = {}
        self._fates: dict[int, ModuleFate] = {}
        self._default_device_changed: bool | None = None
        self._self_bindings: dict[cst.CSTNode, list[Binding]] | None = None

    # ===================================================================== public queries
    def of(self, expr: cst.BaseExpression) -> frozenset[Value]:
        """Every value ``expr`` may evaluate to; contains UNKNOWN where a path is not followed."""
        memo = self._memo.get(expr)
        if memo is not None:
            return memo
        return self._solve(expr, lambda: self._evaluate(expr))

    def _solve(self, key, compute) -> frozenset[Value]:
        """Evaluate with memoisation, to a fixpoint through cycles.

        `x = x.to(d)` makes x's value depend on itself. A key met again while it is being
        computed answers its current approximation (at first: nothing) and marks every frame
        above it as provisional; the cycle's head recomputes until its value stops changing.
        Provisional results are kept only until their head finishes."""
        memo = self._memo.get(key)
        if memo is not None:
            return memo
        position = self._position.get(key)
        if position is not None:
            self._low = min(self._low, position)
            return self._approx.get(key, frozenset())
        tentative = self._tentative.get(key)
        if tentative is not None:
            self._low = min(self._low, tentative[1])
            return tentative[0]
        if len(self._stack) > _MAX_DEPTH:
            return _UNKNOWN_SET
        here = len(self._stack)
        self._stack.append(key)
        self._position[key] = here
        outer_low = self._low
        try:
            for _ in range(_MAX_ROUNDS):
                self._low = here + 1
                result = frozenset(compute())
                if self._low != here or result == self._approx.get(key):
                    break
                self._approx[key] = result  # the head of a cycle: go round again
                self._forget_tentative(here)
        finally:
            self._stack.pop()
            del self._position[key]
        self._approx.pop(key, None)
        if self._low >= here:
            self._forget_tentative(here)
            result = result or _UNKNOWN_SET  # nothing found, and not for want of a cycle's value
            self._memo[key] = result
        else:
            self._tentative[key] = (result, self._low)
        self._low = min(outer_low, self._low)
        return result

    def _forget_tentative(self, head: int) -> None:
        for key in [key for key, (_, low) in self._tentative.items() if low >= head]:
            del self._tentative[key]

    def all_of(self, expr: cst.BaseExpression, *kinds: Kind) -> frozenset[Value] | None:
        """The values of ``expr`` when every one is of one of ``kinds`` (None otherwise)."""
        found = self.of(expr)
        if found and all(value.kind in kinds for value in found):
            return found
        return None

    def kind(self, expr: cst.BaseExpression) -> Kind | None:
        """The kind of ``expr`` when every path agrees on one (None = polymorphic or unknown)."""
        kinds = {value.kind for value in self.of(expr)}
        return kinds.pop() if len(kinds) == 1 and Kind.UNKNOWN not in kinds else None

    def of_binding(self, binding: Binding) -> frozenset[Value]:
        """Every value a binding may give its name."""
        return self._solve(binding, lambda: self._evaluate_binding(binding))

    def made(self, *kinds: Kind) -> list[Value]:
        """Every value of ``kinds`` constructed by a call in the file, in source order."""
        found = []
        model = self.model
        for call in model.calls:
            func = call.func
            if model.qualified_name(func) is None and not (
                isinstance(func, (cst.Subscript, cst.Call))
                or (isinstance(func, cst.Name) and any(b.how == "class" for b in model.bindings_of(func)))
            ):
                continue  # neither a known API nor a same-file class: makes nothing of these kinds
            for value in self.of(call):
                if value.kind in kinds and value.node is call:
                    found.append(value)
        return found

    def device_place(self, expr: cst.BaseExpression | None) -> Place:
        """Where a device argument (`x.to(expr)`, `device=expr`) puts data: HOST only when every
        value is a host device; a dtype or tensor argument is not a device (UNKNOWN)."""
        if expr is None:
            return Place.UNKNOWN
        found = self.of(expr)
        if found and all(v.kind is Kind.DEVICE and v.host_only for v in found):
            return Place.HOST
        if found and all(v.kind is Kind.DTYPE for v in found):
            return Place.UNKNOWN  # a dtype or memory format: not a placement
        if any(v.kind is Kind.TENSOR for v in found):
            places = {v.place for v in found if v.kind is Kind.TENSOR}
            return places.pop() if len(places) == 1 else Place.UNKNOWN
        return Place.DEVICE

    def move_target(self, call: cst.Call) -> Place | None:
        """For a method call `x.to(...)`, `x.cuda()`, `x.cpu()`...: where it places x (HOST, or
        DEVICE when it may be an accelerator); None when the call moves nothing (`.to(dtype)`)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in devices.DEVICE_METHODS:
            return None
        name = func.attr.value
        if name in devices.HOST_METHODS:
            return Place.HOST
        if name not in ("to", "to_empty"):
            return Place.DEVICE
        target = _device_argument(call)
        if target is None:
            return None
        if all(v.kind is Kind.DTYPE for v in self.of(target)):
            return None
        place = self.device_place(target)
        return Place.DEVICE if place is Place.UNKNOWN else place

    def batch_place(self, loader: Value) -> Place:
        """Where the batches of ``loader`` are: HOST for a torch DataLoader whose dataset and
        collate function build them in host memory; UNKNOWN otherwise."""
        key = id(loader)
        if key not in self._batch_places:
            self._batch_places[key] = Place.UNKNOWN
            self._batch_places[key] = self._find_batch_place(loader)
        return self._batch_places[key]

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
        found = self.of(call.args[0].value)
        if found and all(v.kind is Kind.LOADER for v in found):
            return found
        return frozenset()

    def loader_samplers(self, loader: Value) -> frozenset[Value]:
        """The samplers a loader draws from: its `sampler=`, and the sampler inside its
        `batch_sampler=`."""
        if loader.kind is not Kind.LOADER or not isinstance(loader.node, cst.Call):
            return frozenset()
        found: set[Value] = set()
        sampler = _argument(loader.node, "sampler", data.LOADER_POSITIONAL.index("sampler") + 1)
        if sampler is not None:
            found |= self.of(sampler)
        batch_sampler = _argument(loader.node, "batch_sampler", data.LOADER_POSITIONAL.index("batch_sampler") + 1)
        if batch_sampler is not None:
            for value in self.of(batch_sampler):
                found |= self._inner_sampler(value)
        return frozenset(found)

    def fate(self, module: Value) -> ModuleFate:
        """Moves, calls and hand-offs of a module value, over every alias of it."""
        key = id(module)
        if key not in self._fates:
            self._fates[key] = self._find_fate(module)
        return self._fates[key]

    def module_place(self, module: Value, at: cst.CSTNode) -> Place:
        """Where a module's parameters are when the code at ``at`` runs.

        Moves in the same function decide by order: the last one before ``at`` (unless a loop
        around ``at`` also moves it later), or none before it: still where it was built, if no
        other function moves it. Moves only in other functions: DEVICE when every one may go to
        an accelerator. UNKNOWN when moves disagree or the order cannot tell."""
        fate = self.fate(module)
        if fate.self_placed:
            return Place.UNKNOWN
        model = self.model
        where = model.function_of(at)
        here = model.order(at)
        local = [m for m in fate.moves if model.function_of(m) is where]
        elsewhere = [m for m in fate.moves if model.function_of(m) is not where]
        loops = [a for a in model.ancestors(at) if isinstance(a, (cst.For, cst.While))]
        later_in_loop = any(
            model.order(m) > here and any(loop in model.ancestors(m) for loop in loops) for m in local
        )
        before = sorted((m for m in local if model.order(m) < here), key=model.order)
        if later_in_loop:
            return Place.UNKNOWN
        if before:
            return self._move_place(before[-1])
        if local or not elsewhere:
            return Place.HOST if not elsewhere else Place.UNKNOWN
        targets = {self._move_place(m) for m in elsewhere}
        return targets.pop() if len(targets) == 1 else Place.UNKNOWN

    def _move_place(self, move: cst.Call) -> Place:
        """Where a move in ModuleFate.moves puts the module (a construction with `device=`, a
        `.to()`, or a call of a helper that moves it)."""
        if move is not None and isinstance(move.func, cst.Attribute) and move.func.attr.value in devices.DEVICE_METHODS:
            return self.move_target(move) or Place.DEVICE
        device = _keyword(move, "device") if isinstance(move, cst.Call) else None
        return self.device_place(device) if device is not None else Place.DEVICE

    def placement_in(self, scopes: Iterable[cst.CSTNode]) -> cst.Call | None:
        """A call that places data on a device that may be an accelerator, directly in one of
        ``scopes`` (functions, or the module for top-level code): a tensor or module moved there,
        a factory given `device=` such a device, or `torch.cuda.set_device`. None if there is none.
        A device that is only computed is not a placement."""
        model = self.model
        wanted = set(scopes)
        for call in model.calls:
            if model.function_of(call) not in wanted:
                continue
            if model.call_name(call) in devices.PLACEMENT_CALLS:
                return call
            if self.move_target(call) is Place.DEVICE and not self._follows_a_tensor(_device_argument(call)):
                return call
            device = _keyword(call, "device")
            if device is not None and self.device_place(device) is Place.DEVICE and not self._follows_a_tensor(device):
                if any(v.kind is Kind.DEVICE for v in self.of(device)):
                    return call
        return None

    def _follows_a_tensor(self, device: cst.BaseExpression | None) -> bool:
        """`device=x.device`: wherever x is, which says nothing about an accelerator."""
        found = self.of(device) if device is not None else frozenset()
        return bool(found) and all(v.api == "device attribute" for v in found)

    def is_submodule(self, module: Value) -> bool:
        """Whether a module is built inside a module class (a submodule: it moves with its
        parent and is called with its parent's inputs)."""
        return any(
            isinstance(ancestor, cst.ClassDef) and self.class_kind(ancestor) is Kind.MODULE
            for ancestor in self.model.ancestors(module.node)
        )

    def class_kind(self, classdef: cst.ClassDef) -> Kind:
        """What instances of a same-file class are: MODULE, LOADER, SAMPLER, DATASET or INSTANCE."""
        return self._class_info(classdef)[0]

    def plain_class(self, classdef: cst.ClassDef, seen: frozenset = frozenset()) -> bool:
        """Whether a same-file class is known not to be a module: every base is `object` or a
        plain same-file class, and it defines no `forward` (a trainer, not a model)."""
        if self.model.summaries.method(classdef, "forward") is not None:
            return False
        for base in classdef.bases:
            value = base.value
            if isinstance(value, cst.Name) and value.value == "object":
                continue
            parent = self.model.classes.get(value.value) if isinstance(value, cst.Name) else None
            if parent is None or parent in seen or not self.plain_class(parent, seen | {classdef}):
                return False
        return True

    def holds_state(self, classdef: cst.ClassDef) -> bool:
        """Whether a same-file module class has parameters or buffers (or may have: a base class
        from elsewhere, an attribute built by code the file does not show)."""
        if classdef not in self._stateful:
            self._stateful[classdef] = True  # recursion guard: assume state
            self._stateful[classdef] = self._find_state(classdef)
        return self._stateful[classdef]

    def moves_inputs(self, classdef: cst.ClassDef) -> bool:
        """Whether a same-file module moves tensors itself outside its constructor (its forward
        may place its own inputs)."""
        functions = self.model.summaries
        for statement in classdef.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value != "__init__":
                for call in functions.calls_within(statement):
                    if self.move_target(call) is not None or _is_device_method_call(call):
                        return True
        return False

    # ===================================================================== forward: uses
    def uses(self, start: cst.BaseExpression, self_returning: Iterable[str] = ()) -> list[Use]:
        """Every place the value produced at ``start`` reaches, through aliases. A method in
        ``self_returning`` returns the value itself (`model.to(d)` is model), so its result is
        followed too."""
        returning = frozenset(self_returning)
        found: list[Use] = []
        seen: set[tuple[int, tuple[int, ...]]] = set()
        pending: list[tuple[cst.CSTNode, tuple[int, ...]]] = [(start, ())]
        while pending:
            node, path = pending.pop()
            key = (id(node), path)
            if key in seen:
                continue
            seen.add(key)
            self._climb(node, path, returning, found, pending)
        return found

    def _climb(self, node, path, returning, found, pending) -> None:
        model = self.model
        while True:
            parent = model.parent(node)
            if parent is None:
                return
            if isinstance(parent, cst.IfExp) and node is not parent.test:
                node = parent
                continue
            if isinstance(parent, cst.BooleanOperation):
                node = parent
                continue
            if isinstance(parent, cst.Element) and not isinstance(parent, cst.StarredElement):
                container = model.parent(parent)
                if isinstance(container, (cst.Tuple, cst.List)):
                    index = next(i for i, e in enumerate(container.elements) if e is parent)
                    node, path = container, (index, *path)
                    continue
                found.append(Use("stored", node, container))
                return
            if isinstance(parent, cst.Arg):
                call = model.parent(parent)
                if parent.star or path:
                    found.append(Use("stored", node, call))
                    return
                keyword = parent.keyword.value if parent.keyword is not None else None
                found.append(Use("argument", node, call, keyword))
                if model.call_name(call) in modules.ALIASING_CALLS:
                    node = call
                    continue
                self._follow_into_parameters(call, parent, pending)
                return
            if isinstance(parent, cst.Attribute) and parent.value is node:
                grand = model.parent(parent)
                name = parent.attr.value
                if isinstance(grand, cst.Call) and grand.func is parent:
                    found.append(Use("method", node, grand, name))
                    if name in returning:
                        node = grand
                        continue
                    return
                found.append(Use("attribute", node, parent, name))
                return
            if isinstance(parent, cst.Call) and parent.func is node:
                found.append(Use("called", node, parent))
                return
            if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.NamedExpr)) and parent.value is node:
                bound = [b for b in self._bindings_made_by(parent) if b.path == path and b.source is node]
                if not bound:
                    found.append(Use("stored", node, parent))
                    return
                for binding in bound:
                    found.append(Use("bound", node, parent, binding=binding))
                    pending.extend((read, ()) for read in model.reads_of(binding))
                return
            if isinstance(parent, cst.Return):
                function = model.function_of(parent)
                sites = model.summaries.call_sites(function) if isinstance(function, cst.FunctionDef) else None
                if sites is None:
                    found.append(Use("returned", node, parent))
                    return
                pending.extend((call, path) for call, _ in sites)
                return
            if isinstance(parent, cst.Expr):
                return  # an expression statement: the value is dropped
            if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
                found.append(Use("iterated", node, parent))
                return
            if isinstance(parent, cst.FormattedStringExpression):
                found.append(Use("formatted", node, model.parent(parent)))
                return
            if (
                isinstance(parent, cst.BinaryOperation)
                and isinstance(parent.operator, cst.Modulo)
                and parent.right is node
                and isinstance(parent.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
            ):
                found.append(Use("formatted", node, parent))
                return
            found.append(Use("other", node, parent))
            return

    def _follow_into_parameters(self, call: cst.Call, arg: cst.Arg, pending) -> None:
        model = self.model
        functions = model.summaries
        for target, offset in functions.targets(call):
            param = _parameter_for(target, call, arg, offset)
            if param is None:
                continue
            for binding in model.bindings(target, param):
                if binding.how == "param":
                    pending.extend((read, ()) for read in model.reads_of(binding))

    def _bindings_made_by(self, statement: cst.CSTNode) -> list[Binding]:
        if self._bindings_by_statement is None:
            table: dict[cst.CSTNode, list[Binding]] = defaultdict(list)
            for binding in self.model.all_bindings():
                table[binding.statement].append(binding)
            self._bindings_by_statement = table
        return self._bindings_by_statement.get(statement, [])

    # ===================================================================== backward: evaluation
    def _evaluate(self, expr: cst.BaseExpression) -> Iterable[Value]:
        if isinstance(expr, cst.Name):
            return self._name(expr)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr)
        if isinstance(expr, cst.Call):
            return self._call(expr)
        if isinstance(expr, cst.IfExp):
            return self._conditional(expr)
        if isinstance(expr, cst.BooleanOperation):
            return self.of(expr.left) | self.of(expr.right)
        if isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return (self._device_string(expr) or OTHER,)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self._binary(expr)
        if isinstance(expr, cst.UnaryOperation):
            operand = self.of(expr.expression)
            return {v for v in operand if v.kind is Kind.TENSOR} or (_OTHER_SET if operand else operand)
        if isinstance(expr, cst.NamedExpr):
            return self.of(expr.value)
        if isinstance(
            expr,
            (cst.Integer, cst.Float, cst.Imaginary, cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp,
             cst.DictComp, cst.SetComp, cst.GeneratorExp, cst.Lambda, cst.Comparison),
        ):
            return _OTHER_SET
        return _UNKNOWN_SET

    def _name(self, expr: cst.Name) -> Iterable[Value]:
        if expr.value == "None":
            return (NONE,)
        if expr.value in ("True", "False"):
            return _OTHER_SET
        bindings = self.model.reaching(expr)
        if not bindings:
            return _UNKNOWN_SET
        found: set[Value] = set()
        for binding in bindings:
            found |= self.of_binding(binding)
        if any(v.kind is Kind.BATCH and v.place is Place.HOST for v in found) and self._mutated(expr):
            # `batch_to_device(batch, device)`, `batch[k] = v.to(device)`: moved in place
            found = {
                self._make(Kind.BATCH, v.node, place=Place.UNKNOWN, origin=v.origin) if v.kind is Kind.BATCH else v
                for v in found
            }
        return found

    def _mutated(self, name: cst.Name) -> bool:
        """Whether the object a name holds may be changed in place in its scope: an item is
        assigned (`batch[k] = ...`), a method other than a lookup is called on it, or it is handed
        to a function that may move it (any function but a same-file one that does not)."""
        model = self.model
        scope = model.binding_scope(name.value, name)
        key = ("mutated", scope, name.value)
        if key in self._memo:
            return bool(self._memo[key])
        self._memo[key] = frozenset()  # recursion guard: not mutated
        mutated = False
        for read in model.reads_table.get(name.value, ()):
            if model.binding_scope(name.value, read) is not scope:
                continue
            parent = model.parent(read)
            if isinstance(parent, cst.Subscript) and parent.value is read:
                mutated = isinstance(model.parent(parent), (cst.AssignTarget, cst.AugAssign, cst.Del))
            elif isinstance(parent, cst.Attribute) and parent.value is read:
                call = model.parent(parent)
                mutated = isinstance(call, cst.Call) and call.func is parent and parent.attr.value not in _LOOKUPS
            elif isinstance(parent, cst.Arg):
                mutated = self._may_mutate_argument(model.parent(parent), parent)
            if mutated:
                break
        self._memo[key] = frozenset({OTHER}) if mutated else frozenset()
        return mutated

    def _may_mutate_argument(self, call: cst.Call, arg: cst.Arg) -> bool:
        model = self.model
        if inspects_only(model, call) or self.all_of(call.func, Kind.MODULE) is not None:
            return False
        targets = model.summaries.targets(call)
        if not targets:
            return True
        return any(
            _parameter_for(fn, call, arg, offset) in model.summaries.moved_params(fn) for fn, offset in targets
        )

    def _attribute(self, expr: cst.Attribute) -> Iterable[Value]:
        qualified = self.model.qualified_name(expr)
        if qualified is not None:
            return _DTYPE_SET if qualified in devices.DTYPES else _UNKNOWN_SET
        bindings = self.model.bindings_of(expr)
        if bindings:
            found: set[Value] = set()
            for binding in bindings:
                found |= self.of_binding(binding)
            return found
        name = expr.attr.value
        if name == "dtype":
            return _DTYPE_SET  # `.to(x.dtype)` converts, it does not move
        if name == "device":
            return (self._make(Kind.DEVICE, expr, api="device attribute"),)  # `x.device`, `accelerator.device`
        found = set()
        for owner in self.of(expr.value):
            if owner.kind is Kind.LOADER and name == "sampler":
                found |= self.loader_samplers(owner) if owner.node is not None else {UNKNOWN}
            elif owner.kind is Kind.SAMPLER and name == "sampler":
                found |= self._inner_sampler(owner)
            elif owner.kind is Kind.LOADER and name == "batch_sampler" and isinstance(owner.node, cst.Call):
                arg = _argument(owner.node, "batch_sampler", 5)
                found |= self.of(arg) if arg is not None else {UNKNOWN}
            elif owner.kind is Kind.TENSOR and name in ("T", "mT", "H", "data", "real", "imag"):
                found.add(self._make(Kind.TENSOR, expr, place=owner.place))
            elif owner.kind is Kind.MODULE and name == "module":
                found.add(UNKNOWN)
            else:
                found.add(UNKNOWN)
        return found

    def _conditional(self, expr: cst.IfExp) -> Iterable[Value]:
        branches = self.of(expr.body) | self.of(expr.orelse)
        devices_ = [v for v in branches if v.kind is Kind.DEVICE]
        if devices_ and all(v.kind is Kind.DEVICE for v in branches):
            # `"cuda" if torch.cuda.is_available() else "cpu"` is one device choice
            return (self._make(Kind.DEVICE, expr, host_only=all(v.host_only for v in devices_)),)
        return branches

    def _device_string(self, expr: cst.BaseExpression) -> Value | None:
        if isinstance(expr, cst.SimpleString):
            text = expr.evaluated_value
            if isinstance(text, str) and devices.DEVICE_STRING.match(text):
                name = text.split(":", 1)[0]
                if name in devices.NON_PLACEMENT_DEVICES:
                    return None
                return self._make(Kind.DEVICE, expr, host_only=name in devices.HOST_DEVICES)
            return None
        if isinstance(expr, cst.FormattedString) and expr.parts and isinstance(expr.parts[0], cst.FormattedStringText):
            head = expr.parts[0].value
            name = head.split(":", 1)[0]
            if ":" in head and devices.DEVICE_STRING.match(name) and name not in devices.NON_PLACEMENT_DEVICES:
                return self._make(Kind.DEVICE, expr, host_only=name in devices.HOST_DEVICES)
        return None

    def _subscript(self, expr: cst.Subscript) -> Iterable[Value]:
        if self.model.qualified_name(expr.value) is not None:
            return _UNKNOWN_SET  # os.environ["RANK"], sys.argv[1]
        return self._unpack(self.of(expr.value), expr)

    def _binary(self, expr: cst.BinaryOperation) -> Iterable[Value]:
        if isinstance(expr.left, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return _OTHER_SET
        left, right = self.of(expr.left), self.of(expr.right)
        if not left or not right:
            return frozenset()  # an operand still being computed (a cycle): nothing yet
        operands = left | right
        tensors_ = [v for v in operands if v.kind is Kind.TENSOR]
        if tensors_ and all(v.kind in (Kind.TENSOR, Kind.OTHER) for v in operands):
            places = {v.place for v in tensors_}
            return (self._make(Kind.TENSOR, expr, place=places.pop() if len(places) == 1 else Place.UNKNOWN),)
        if all(v.kind is Kind.OTHER for v in operands):
            return _OTHER_SET
        return _UNKNOWN_SET

    # -- bindings -----------------------------------------------------------------------------
    def _evaluate_binding(self, binding: Binding) -> Iterable[Value]:
        how = binding.how
        if how in ("assign", "annassign", "walrus"):
            if binding.source is None:
                return _UNKNOWN_SET
            return self._element(binding.source, binding.path)
        if how in ("for", "comprehension"):
            return self._items(binding.source, binding.path)
        if how == "param":
            return self._parameter(binding)
        if how in ("def", "class", "import"):
            return _OTHER_SET
        return _UNKNOWN_SET

    def _element(self, expr: cst.BaseExpression, path: tuple[int, ...]) -> Iterable[Value]:
        """The values at ``path`` inside the value of ``expr`` (`a, (b, c) = expr`)."""
        if not path:
            return self.of(expr)
        if isinstance(expr, (cst.Tuple, cst.List)):
            elements = expr.elements
            if path[0] < len(elements) and not any(isinstance(e, cst.StarredElement) for e in elements):
                return self._element(elements[path[0]].value, path[1:])
            return _UNKNOWN_SET
        if isinstance(expr, cst.Name):
            return self._solve(("element", expr, path), lambda: self._name_element(expr, path))
        if isinstance(expr, cst.Call):
            return self._call_element(expr, path)
        return self._unpack(self.of(expr), expr)

    def _name_element(self, name: cst.Name, path: tuple[int, ...]) -> Iterable[Value]:
        bindings = self.model.reaching(name)
        if not bindings:
            return _UNKNOWN_SET
        found: set[Value] = set()
        for binding in bindings:
            if binding.how in ("assign", "annassign", "walrus") and binding.source is not None:
                found |= set(self._element(binding.source, binding.path + path))
            elif binding.how in ("for", "comprehension"):
                found |= set(self._items(binding.source, binding.path + path))
            else:
                found.add(UNKNOWN)
        return found

    def _call_element(self, call: cst.Call, path: tuple[int, ...]) -> Iterable[Value]:
        qualified = self.model.call_name(call)
        if qualified in frameworks.FRAMEWORK_FUNCTIONS:
            return (self._make(Kind.MANAGED, call, api=qualified),)
        if qualified in data.DATASET_WRAPPERS and call.args:
            return self.of(call.args[0].value)  # random_split(ds, ...) -> subsets of ds
        func = call.func
        if isinstance(func, cst.Attribute) and any(v.kind is Kind.FRAMEWORK for v in self.of(func.value)):
            return (self._make(Kind.MANAGED, call, api=func.attr.value),)
        targets = self.model.summaries.targets(call)
        if targets and not _constructs_class(self.model, call):
            found: set[Value] = set()
            for function, _ in targets:
                returns = self.model.summaries.returns(function)
                if returns is None:
                    return _UNKNOWN_SET
                for ret in returns:
                    found |= set(self._element(ret, path))
            return found
        return self._unpack(self.of(call), call)

    def _unpack(self, values: frozenset[Value], node: cst.CSTNode) -> Iterable[Value]:
        """Elements of a batch or rows of a tensor. A batch holds tensors when a torch DataLoader
        collates it with the default or a same-file collate function; from anything else its
        elements may be objects of any kind."""
        found: set[Value] = set()
        for value in values:
            if value.kind is Kind.TENSOR or (value.kind is Kind.BATCH and self._collates_tensors(value.origin)):
                found.add(self._make(Kind.TENSOR, node, place=value.place, origin=value.origin, tag="element"))
            else:
                found.add(UNKNOWN)
        return found

    def _collates_tensors(self, loader: Value | None) -> bool:
        if loader is None or loader.api not in data.LOADERS or not isinstance(loader.node, cst.Call):
            return False
        collate = _argument(loader.node, "collate_fn", data.LOADER_POSITIONAL.index("collate_fn") + 1)
        if collate is None or self.model.qualified_name(collate) in data.HOST_COLLATES:
            return True
        if isinstance(collate, cst.Name):
            bindings = self.model.bindings_of(collate)
            return bool(bindings) and all(b.how == "def" for b in bindings)
        return False

    def _items(self, iterable: cst.BaseExpression, path: tuple[int, ...]) -> Iterable[Value]:
        """The values of the items a `for` over ``iterable`` binds at ``path``."""
        if isinstance(iterable, cst.Call):
            name = builtin_or_qualified(self.model, iterable)
            if name == "zip":
                if not path:
                    return _UNKNOWN_SET
                if path[0] < len(iterable.args) and not iterable.args[path[0]].star:
                    return self._items(iterable.args[path[0]].value, path[1:])
                return _UNKNOWN_SET
            if name in data.ITERATION_WRAPPERS and iterable.args:
                inner = iterable.args[data.ITERATION_WRAPPERS[name]].value
                if name in data.INDEXING_WRAPPERS:
                    if not path:
                        return _UNKNOWN_SET
                    if path[0] == 0:
                        return _OTHER_SET
                    return self._items(inner, path[1:])
                return self._items(inner, path)
            if name in ("range",):
                return _OTHER_SET
            loaders = self.adapted_loaders(iterable)
            if loaders:
                # `metric_logger.log_every(loader, 10)`: the loader's items, wherever the adaptor puts them
                found: set[Value] = set()
                for loader in loaders:
                    batch = self._make(Kind.BATCH, iterable, place=Place.UNKNOWN, origin=loader)
                    found |= set(self._unpack(frozenset({batch}), iterable) if path else {batch})
                return found
        if isinstance(iterable, (cst.List, cst.Tuple)):
            found: set[Value] = set()
            for element in iterable.elements:
                if isinstance(element, cst.StarredElement):
                    return _UNKNOWN_SET
                found |= set(self._element(element.value, path))
            return found
        found = set()
        for value in self.of(iterable):
            if value.kind in (Kind.LOADER, Kind.ITERATOR):
                loader = value if value.kind is Kind.LOADER else value.origin
                place = self.batch_place(loader) if loader is not None else Place.UNKNOWN
                batch = self._make(Kind.BATCH, iterable, place=place, origin=loader)
                found |= set(self._unpack(frozenset({batch}), iterable) if path else {batch})
            elif value.kind is Kind.TENSOR:
                found.add(self._make(Kind.TENSOR, iterable, place=value.place, tag="row"))
            else:
                found.add(UNKNOWN)
        return found

    def _parameter(self, binding: Binding) -> Iterable[Value]:
        function = binding.scope
        if not isinstance(function, cst.FunctionDef):
            return _UNKNOWN_SET
        functions = self.model.summaries
        sites = functions.call_sites(function)
        if sites is None:
            return _UNKNOWN_SET
        found: set[Value] = set()
        for call, offset in sites:
            arg = functions.argument(function, call, offset, binding.name)
            if arg is None:
                return _UNKNOWN_SET
            found |= self.of(arg)
        return found

    # -- calls --------------------------------------------------------------------------------
    def _call(self, call: cst.Call) -> Iterable[Value]:
        model = self.model
        func = call.func
        qualified = model.call_name(call)
        if qualified is not None:
            made = self._construct(call, qualified)
            if made is not None:
                return made
            if qualified in modules.ALIASING_CALLS and call.args:
                return self.of(call.args[0].value)
        if isinstance(func, cst.Name):
            builtin = func.value
            if builtin in ("iter",) and call.args and not model.bindings_of(func):
                return self._iterator(call)
            if builtin == "next" and call.args and not model.bindings_of(func):
                return self._next(call)
        if isinstance(func, cst.Subscript) and _is_zoo_table(model, func.value):
            return (self._make(Kind.MODULE, call, api="model zoo"),)
        if isinstance(func, cst.Call) and _is_zoo_getattr(model, func):
            return (self._make(Kind.MODULE, call, api="model zoo"),)
        if isinstance(func, cst.Attribute):
            if model.summaries.targets(call):
                return self._same_file_call(call)
            return self._method(call, func.attr.value, self.of(func.value))
        return self._same_file_call(call)

    def _construct(self, call: cst.Call, qualified: str) -> Iterable[Value] | None:
        """The value a call of a known API makes, or None when the API is not known."""
        if qualified in devices.DEVICE_FACTORIES:
            host = bool(call.args) and self.device_place(call.args[0].value) is Place.HOST
            return (self._make(Kind.DEVICE, call, api=qualified, host_only=host),)
        if qualified in data.LOADERS:
            return (self._make(Kind.LOADER, call, api=qualified),)
        if qualified in data.EPOCH_SAMPLERS:
            return (self._make(Kind.SAMPLER, call, api=qualified, epoch_seeded=True,
                               shuffles=self._shuffles(call, data.EPOCH_SAMPLERS[qualified])),)
        if qualified.startswith("torch.utils.data.") and qualified.endswith("Sampler"):
            return (self._make(Kind.SAMPLER, call, api=qualified),)
        if qualified in data.TENSOR_DATASETS or qualified in data.DATASET_WRAPPERS:
            return (self._make(Kind.DATASET, call, api=qualified),)
        if qualified in modules.WRAPPERS:
            return (self._make(Kind.MODULE, call, api=qualified),)
        if qualified in tensors.PARAMETER_CLASSES:
            inner = self.of(call.args[0].value) if call.args else frozenset()
            places = {v.place for v in inner if v.kind is Kind.TENSOR}
            place = places.pop() if len(places) == 1 else Place.UNKNOWN
            return (self._make(Kind.TENSOR, call, api=qualified, place=place),)
        module = self._module_construction(call, qualified)
        if module is not None:
            return (module,)
        if qualified in tensors.FACTORIES:
            return (self._make(Kind.TENSOR, call, api=qualified, place=self._factory_place(call)),)
        if qualified in tensors.HOST_FACTORIES:
            return (self._make(Kind.TENSOR, call, api=qualified, place=Place.HOST),)
        if (
            qualified.endswith(tensors.FOLLOWING_FACTORIES_SUFFIX) and qualified.startswith("torch.")
        ) or qualified in tensors.TENSOR_FUNCTIONS or qualified.startswith(tensors.TENSOR_FUNCTION_PREFIXES):
            return (self._make(Kind.TENSOR, call, api=qualified),)
        if qualified in ("torch.jit.trace", "torch.jit.trace_module", "torch.jit.script"):
            return (self._make(Kind.TRACED, call, api=qualified),)
        if qualified in frameworks.FRAMEWORK_CLASSES:
            return (self._make(Kind.FRAMEWORK, call, api=qualified),)
        if qualified in frameworks.FRAMEWORK_FUNCTIONS:
            return (self._make(Kind.MANAGED, call, api=qualified),)
        if qualified.startswith("torch.optim.") and qualified.rsplit(".", 1)[1][:1].isupper():
            if ".lr_scheduler." not in qualified and ".swa_utils." not in qualified:
                return (self._make(Kind.OPTIMIZER, call, api=qualified),)
        return None

    def _module_construction(self, call: cst.Call, qualified: str) -> Value | None:
        head, _, last = qualified.rpartition(".")
        if qualified.startswith(modules.NN) and qualified.count(".") == 2:
            if last in modules.NN_NOT_MODULES or not last[:1].isupper():
                return None
            trainable = last not in modules.NN_PARAMETERLESS and not last.endswith("Loss")
            return self._make(Kind.MODULE, call, api=qualified, trainable=trainable)
        if qualified in modules.ZOO_FUNCTIONS:
            return self._make(Kind.MODULE, call, api=qualified)
        if qualified.startswith(modules.ZOO_NAMESPACES):
            if last in modules.ZOO_NOT_MODELS or last.endswith("_Weights") or last.startswith("_"):
                return None
            return self._make(Kind.MODULE, call, api=qualified)
        if last in modules.PRETRAINED_CONSTRUCTORS and head.startswith(modules.PRETRAINED_LIBRARIES):
            class_name = head.rsplit(".", 1)[1]
            if _is_model_class_name(class_name):
                return self._make(Kind.MODULE, call, api=qualified)
            return None
        if qualified.startswith(modules.PRETRAINED_LIBRARIES) and _is_model_class_name(last):
            return self._make(Kind.MODULE, call, api=qualified)
        return None

    def _method(self, call: cst.Call, name: str, receiver: frozenset[Value]) -> Iterable[Value]:
        found: set[Value] = set()
        for value in receiver:
            kind = value.kind
            if kind is Kind.MODULE:
                found.add(value if name in modules.SELF_RETURNING_METHODS else UNKNOWN)
            elif kind is Kind.TENSOR:
                found.add(self._tensor_method(call, name, value))
            elif kind is Kind.BATCH:
                target = self.move_target(call)
                found.add(self._make(Kind.BATCH, call, place=target, origin=value.origin) if target else UNKNOWN)
            elif kind is Kind.FRAMEWORK:
                found.add(self._make(Kind.MANAGED, call, api=name))
            elif kind is Kind.INSTANCE:
                found |= set(self._same_file_call(call))
            elif kind is Kind.OTHER and name in ("format", "join", "replace", "lower", "upper", "strip"):
                found.add(OTHER)
            else:
                found.add(UNKNOWN)
        return found

    def _tensor_method(self, call: cst.Call, name: str, tensor: Value) -> Value:
        if name in tensors.NON_TENSOR_METHODS:
            return UNKNOWN
        target = self.move_target(call)
        if target is not None:
            return self._make(Kind.TENSOR, call, place=target)
        return self._make(Kind.TENSOR, call, place=tensor.place)

    def _iterator(self, call: cst.Call) -> Iterable[Value]:
        found: set[Value] = set()
        for value in self.of(call.args[0].value):
            if value.kind is Kind.LOADER:
                found.add(self._make(Kind.ITERATOR, call, origin=value))
            elif value.kind is Kind.ITERATOR:
                found.add(value)
            else:
                found.add(UNKNOWN)
        return found

    def _next(self, call: cst.Call) -> Iterable[Value]:
        found: set[Value] = set()
        for value in self.of(call.args[0].value):
            if value.kind is Kind.ITERATOR and value.origin is not None:
                found.add(self._make(Kind.BATCH, call, place=self.batch_place(value.origin), origin=value.origin))
            else:
                found.add(UNKNOWN)
        return found

    def _same_file_call(self, call: cst.Call) -> Iterable[Value]:
        model = self.model
        func = call.func
        if isinstance(func, cst.Name):
            bindings = model.bindings_of(func)
            if bindings and all(b.how == "class" for b in bindings):
                return {self._instance(call, b.statement) for b in bindings}
        targets = model.summaries.targets(call)
        if not targets:
            return _UNKNOWN_SET
        found: set[Value] = set()
        for function, _ in targets:
            found |= self._function_returns(function)
        return found

    def _instance(self, call: cst.Call, classdef: cst.ClassDef) -> Value:
        kind, api = self._class_info(classdef)
        if kind is Kind.MODULE:
            return self._make(kind, call, api=classdef.name.value, trainable=self.holds_state(classdef))
        if kind is Kind.SAMPLER:
            return self._make(kind, call, api=classdef.name.value, epoch_seeded=api in data.EPOCH_SAMPLERS,
                              shuffles=self._shuffles(call, data.EPOCH_SAMPLERS.get(api, True)) if api else None)
        return self._make(kind, call, api=classdef.name.value)

    def _function_returns(self, function: cst.FunctionDef) -> frozenset[Value]:
        def compute() -> Iterable[Value]:
            returns = self.model.summaries.returns(function)
            if returns is None:
                return _UNKNOWN_SET
            if not returns:
                return (NONE,)
            return frozenset().union(*(self.of(r) for r in returns))

        return self._solve(("returns", function), compute)

    # -- facts --------------------------------------------------------------------------------
    def _make(self, kind: Kind, node: cst.CSTNode, tag: str = "", **facts) -> Value:
        """The one value of ``kind`` made at ``node`` with these facts (identity is stable)."""
        key = (id(node), kind, tag, *sorted(facts.items(), key=lambda item: item[0]))
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = Value(kind, node, **facts)
        return made

    def _factory_place(self, call: cst.Call) -> Place:
        device = _keyword(call, "device")
        if device is not None:
            return self.device_place(device)
        if self._default_device_changed is None:
            self._default_device_changed = any(
                self.model.call_name(c) in devices.DEFAULT_DEVICE_CALLS
                or (isinstance(c.func, cst.Attribute) and c.func.attr.value == "device" and _in_with(self.model, c))
                for c in self.model.calls
            )
        return Place.UNKNOWN if self._default_device_changed else Place.HOST

    def _shuffles(self, call: cst.Call, default: bool) -> bool | None:
        shuffle = _keyword(call, "shuffle")
        if shuffle is None:
            return default if not any(arg.star for arg in call.args) else None
        if isinstance(shuffle, cst.Name) and shuffle.value in ("True", "False"):
            return shuffle.value == "True"
        return None

    def _inner_sampler(self, value: Value) -> frozenset[Value]:
        if value.kind is Kind.SAMPLER and value.api in data.BATCH_SAMPLERS and isinstance(value.node, cst.Call):
            inner = _argument(value.node, "sampler", 0)
            return self.of(inner) if inner is not None else _UNKNOWN_SET
        return frozenset({value}) if value.kind is Kind.SAMPLER else _UNKNOWN_SET

    def _find_batch_place(self, loader: Value) -> Place:
        call = loader.node
        if loader.api not in data.LOADERS or not isinstance(call, cst.Call) or any(a.star == "*" for a in call.args):
            return Place.UNKNOWN
        collate = _argument(call, "collate_fn", data.LOADER_POSITIONAL.index("collate_fn") + 1)
        if collate is not None and not self._host_collate(collate):
            return Place.UNKNOWN
        dataset = _argument(call, "dataset", 0)
        if dataset is None or not self._host_dataset(dataset, 0):
            return Place.UNKNOWN
        return Place.HOST

    def _host_collate(self, collate: cst.BaseExpression) -> bool:
        if self.model.qualified_name(collate) in data.HOST_COLLATES:
            return True
        if isinstance(collate, cst.Name):
            bindings = self.model.bindings_of(collate)
            if bindings and all(b.how == "def" for b in bindings):
                return not any(self._places(b.statement) for b in bindings)
        return False

    def _places(self, node: cst.CSTNode) -> bool:
        """Whether code inside ``node`` places anything on a device."""
        for call in self.model.summaries.calls_within(node):
            if _is_device_method_call(call) or any(
                arg.keyword is not None and arg.keyword.value in devices.PLACEMENT_KEYWORDS for arg in call.args
            ):
                return True
        return False

    def _host_dataset(self, expr: cst.BaseExpression, depth: int) -> bool:
        """Whether a dataset yields host tensors, as far as the file shows: datasets from other
        files are taken to (they almost always do); a TensorDataset of placed tensors, or a
        same-file dataset class that places tensors, does not."""
        if depth > 4 or _mentions_placement(expr):
            return False
        if isinstance(expr, cst.Name):
            for binding in self.model.bindings_of(expr):
                if binding.source is not None and _mentions_placement(binding.source):
                    return False
        for value in self.of(expr):
            node = value.node
            if value.kind is Kind.DATASET and isinstance(node, cst.Call):
                if value.api in data.TENSOR_DATASETS:
                    for arg in node.args:
                        if arg.star or any(v.kind is not Kind.TENSOR or v.place is not Place.HOST for v in self.of(arg.value)):
                            return False
                elif value.api in data.DATASET_WRAPPERS:
                    if not node.args or not self._host_dataset(node.args[0].value, depth + 1):
                        return False
                else:
                    classdef = self.model.classes.get(value.api or "")
                    if classdef is not None and self._places(classdef):
                        return False
        return True

    def _class_info(self, classdef: cst.ClassDef) -> tuple[Kind, str | None]:
        if classdef in self._class_kinds:
            return self._class_kinds[classdef]
        self._class_kinds[classdef] = (Kind.INSTANCE, None)
        info: tuple[Kind, str | None] = (Kind.INSTANCE, None)
        for base in classdef.bases:
            qualified = self.model.qualified_name(base.value)
            if qualified is not None:
                kind = _base_kind(qualified)
                if kind is not None:
                    info = (kind, qualified)
                    break
            elif isinstance(base.value, cst.Name) and base.value.value in self.model.classes:
                inherited = self._class_info(self.model.classes[base.value.value])
                if inherited[0] is not Kind.INSTANCE:
                    info = inherited
                    break
        self._class_kinds[classdef] = info
        return info

    def _find_state(self, classdef: cst.ClassDef) -> bool:
        model = self.model
        for base in classdef.bases:
            qualified = model.qualified_name(base.value)
            if qualified is not None and qualified not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                return True  # nn.Linear, LightningModule, PreTrainedModel...: has parameters
            if qualified is None and isinstance(base.value, cst.Name):
                parent = model.classes.get(base.value.value)
                if parent is None or self.holds_state(parent):
                    return True
        for call in model.summaries.calls_within(classdef):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in (
                "register_buffer", "register_parameter", "add_module", "register_module"
            ):
                return True
            if self._builds_state(call):
                return True
        # an attribute built by code the file does not show (`self.encoder = build_encoder(cfg)`)
        return any(
            binding.how in ("assign", "annassign") and _unknown_callee(model, binding.value)
            for binding in self._attribute_bindings(classdef)
        )

    def _builds_state(self, call: cst.Call) -> bool:
        """Whether a call builds parameters, judged from its callee alone (no evaluation): a
        trainable module class, `nn.Parameter`, or a same-file module class with state."""
        qualified = self.model.qualified_name(call.func)
        if qualified is not None:
            module = self._module_construction(call, qualified)
            return (module is not None and module.trainable) or qualified in tensors.PARAMETER_CLASSES
        if isinstance(call.func, cst.Name):
            classdef = self.model.classes.get(call.func.value)
            return classdef is not None and self.class_kind(classdef) is Kind.MODULE and self.holds_state(classdef)
        return False

    def _attribute_bindings(self, classdef: cst.ClassDef) -> list[Binding]:
        """Bindings of `self.<attr>` keys in a class."""
        if self._self_bindings is None:
            table: dict[cst.CSTNode, list[Binding]] = defaultdict(list)
            for (scope, name), bindings in self.model.bindings_table.items():
                if isinstance(scope, cst.ClassDef) and name.startswith("self."):
                    table[scope].extend(bindings)
            self._self_bindings = table
        return self._self_bindings.get(classdef, [])

    def _find_fate(self, module: Value) -> ModuleFate:
        moves: list[cst.Call] = []
        calls: list[cst.Call] = []
        handed: list[Use] = []
        trained = accelerator = False
        model = self.model
        scopes = {model.function_of(module.node)}
        functions = model.summaries
        if isinstance(module.node, cst.Call) and any(
            arg.keyword is not None and arg.keyword.value in devices.PLACEMENT_KEYWORDS for arg in module.node.args
        ):
            moves.append(module.node)  # `nn.Linear(..., device=d)`, `from_pretrained(..., device_map=...)`
            accelerator |= self._move_place(module.node) is not Place.HOST
        classdef = model.classes.get(module.api or "")
        init = functions.method(classdef, "__init__") if classdef is not None else None
        self_placed = init is not None and self._places(init)  # `self.layer = Layer(...).to(device)`
        for use in self.uses(module.node, modules.SELF_RETURNING_METHODS):
            scopes.add(model.function_of(use.node))
            context = use.context
            if use.how == "called":
                calls.append(context)
            elif use.how == "method":
                target = self.move_target(context)
                if target is not None:
                    moves.append(context)
                    accelerator |= target is Place.DEVICE
                elif use.name == "train":
                    trained = True
                elif use.name == "parameters" or use.name == "named_parameters":
                    trained |= _reaches_optimizer(self, context)
                elif use.name not in modules.INERT_METHODS and use.name not in modules.SELF_RETURNING_METHODS:
                    own = functions.method(model.classes[module.api], use.name) if module.api in model.classes else None
                    if own is not None and "self" in functions.moved_params(own):
                        moves.append(context)  # a method of its own class that moves it
                        accelerator = True
                    elif own is None and not _is_device_method_call(context):
                        handed.append(use)  # a method the file does not show may move or wrap it
            elif use.how == "argument":
                qualified = model.call_name(context)
                if qualified in modules.ALIASING_CALLS or inspects_only(model, context):
                    continue
                targets = functions.targets(context)
                if targets:
                    moved = any(
                        _parameter_for(fn, context, _arg_of(model, use.node), offset) in functions.moved_params(fn)
                        for fn, offset in targets
                    )
                    if moved:
                        moves.append(context)
                        accelerator = True
                    continue
                handed.append(use)
            elif use.how == "attribute":
                # `model.fc.to(device)` moves part of it, `model.module` reaches inside a wrapper
                parent = model.parent(use.context)
                if isinstance(parent, cst.Attribute) or isinstance(parent, cst.Call):
                    chain_call = _call_on_chain(model, use.context)
                    if chain_call is not None and self.move_target(chain_call) is not None:
                        moves.append(chain_call)
                        accelerator |= self.move_target(chain_call) is Place.DEVICE
            elif use.how in ("returned", "stored", "iterated", "other"):
                if use.how == "other" and isinstance(use.context, (cst.Comparison, cst.If, cst.Assert)):
                    continue
                handed.append(use)
        order = model.order
        return ModuleFate(
            tuple(sorted(moves, key=order)),
            accelerator,
            tuple(sorted(calls, key=order)),
            trained,
            tuple(sorted(handed, key=lambda use: order(use.node))),
            frozenset(scopes),
            self_placed,
        )


# ========================================================================= helpers
def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _argument(call: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    """The argument passed for a parameter by keyword or at a position."""
    found = _keyword(call, name)
    if found is not None:
        return found
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional[: position + 1]):
        return None
    return positional[position].value if position < len(positional) else None


def _device_argument(call: cst.Call) -> cst.BaseExpression | None:
    device = _keyword(call, "device")
    if device is not None:
        return device
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[0].value if positional else None


def _is_device_method_call(call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in devices.DEVICE_METHODS and func.attr.value != "to" or (
        isinstance(func, cst.Attribute) and func.attr.value == "to" and _device_argument(call) is not None
    )


def _mentions_placement(expr: cst.BaseExpression) -> bool:
    """Whether an expression itself contains a device move or a `device=` keyword."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            if _is_device_method_call(node):
                return True
            if any(a.keyword is not None and a.keyword.value in devices.PLACEMENT_KEYWORDS for a in node.args):
                return True
        if isinstance(node, (cst.Lambda, cst.FunctionDef)):
            continue
        stack.extend(node.children)
    return False


def builtin_or_qualified(model: Model, call: cst.Call) -> str | None:
    """A builtin's name (`enumerate`, when not rebound) or the qualified name of the callee."""
    func = call.func
    if isinstance(func, cst.Name) and not model.bindings_of(func):
        return model.qualified_name(func) or func.value
    return model.call_name(call)


def _constructs_class(model: Model, call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Name) and any(b.how == "class" for b in model.bindings_of(func))


def _in_with(model: Model, call: cst.Call) -> bool:
    parent = model.parent(call)
    return isinstance(parent, cst.WithItem)


def _base_kind(qualified: str) -> Kind | None:
    if qualified in modules.MODULE_BASES or (
        qualified.startswith(modules.NN) and qualified.count(".") == 2 and qualified.rsplit(".", 1)[1][:1].isupper()
    ):
        return Kind.MODULE
    if qualified.startswith(modules.PRETRAINED_LIBRARIES) and _is_model_class_name(qualified.rsplit(".", 1)[1]):
        return Kind.MODULE
    if qualified in data.LOADERS:
        return Kind.LOADER
    if qualified in data.EPOCH_SAMPLERS or (qualified.startswith("torch.utils.data.") and qualified.endswith("Sampler")):
        return Kind.SAMPLER
    if qualified in data.DATASET_BASES:
        return Kind.DATASET
    return None


def _is_model_class_name(name: str) -> bool:
    return any(marker in name for marker in modules.MODEL_CLASS_MARKERS) and not any(
        marker in name for marker in modules.NOT_MODEL_CLASS_MARKERS
    )


def _is_zoo_table(model: Model, expr: cst.BaseExpression) -> bool:
    """`torchvision.models.__dict__[name]`."""
    qualified = model.qualified_name(expr)
    return qualified is not None and qualified.endswith(".__dict__") and qualified.startswith(modules.ZOO_NAMESPACES)


def _is_zoo_getattr(model: Model, call: cst.Call) -> bool:
    """`getattr(torchvision.models, name)`."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "getattr" and call.args):
        return False
    qualified = model.qualified_name(call.args[0].value)
    return qualified is not None and f"{qualified}.".startswith(modules.ZOO_NAMESPACES)


def _parameter_for(fn: cst.FunctionDef, call: cst.Call, arg: cst.Arg | None, offset: int) -> str | None:
    """The parameter of ``fn`` that argument ``arg`` of ``call`` binds."""
    if arg is None or arg.star:
        return None
    if arg.keyword is not None:
        return arg.keyword.value
    positional = [a for a in call.args if a.keyword is None]
    index = next((i for i, a in enumerate(positional) if a is arg), None)
    if index is None or any(a.star for a in positional[:index]):
        return None
    params = [*fn.params.posonly_params, *fn.params.params]
    index += offset
    return params[index].name.value if index < len(params) else None


def _arg_of(model: Model, node: cst.CSTNode) -> cst.Arg | None:
    parent = model.parent(node)
    return parent if isinstance(parent, cst.Arg) else None


def is_reporting_call(model: Model, call: cst.Call) -> bool:
    """A call that only prints, logs or writes down its arguments (`print`, `logger.info`,
    `json.dump`, `pbar.set_postfix`...)."""
    func = call.func
    if builtin_or_qualified(model, call) in calls.REPORTING_FUNCTIONS:
        return True
    return isinstance(func, cst.Attribute) and func.attr.value in calls.REPORTING_METHODS


def inspects_only(model: Model, call: cst.Call) -> bool:
    """A call that only looks at its arguments (`len`, `isinstance`, `str`) or reports them."""
    name = builtin_or_qualified(model, call)
    if name in calls.INSPECTING_FUNCTIONS or name in calls.FORMATTING_FUNCTIONS:
        return True
    return is_reporting_call(model, call)


def _reaches_optimizer(values: Values, call: cst.Call) -> bool:
    """Whether `model.parameters()` here is given (perhaps inside a list or dict) to an optimizer."""
    model = values.model
    for ancestor in model.ancestors(call):
        if isinstance(ancestor, cst.Call) and any(v.kind is Kind.OPTIMIZER for v in values.of(ancestor)):
            return True
        if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
    return False


def _call_on_chain(model: Model, attribute: cst.Attribute) -> cst.Call | None:
    """The method call at the end of an attribute chain: `model.fc.to(d)` from `model.fc`."""
    node: cst.CSTNode = attribute
    while True:
        parent = model.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            node = parent
            continue
        if isinstance(parent, cst.Call) and parent.func is node:
            return parent
        return None


def _unknown_callee(model: Model, value: cst.BaseExpression | None) -> bool:
    """Whether ``value`` is a call of a function or class the file does not define or know
    (`self.encoder = build_encoder(cfg)`): what it builds may hold parameters."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Name):
        if func.value in _HARMLESS_BUILTINS:
            return False
        return not model.bindings_of(func) or model.qualified_name(func) is not None
    if isinstance(func, cst.Attribute):
        qualified = model.qualified_name(func)
        return qualified is not None and not qualified.startswith(("torch.", "math.", "numpy.", "np."))
    return False


# Methods of a batch (a dict, list or tensor) that read it without changing it.
_LOOKUPS = frozenset(
    {"items", "keys", "values", "get", "size", "dim", "numel", "__len__", "__getitem__", "float", "long", "half",
     "view", "reshape", "flatten", "unsqueeze", "squeeze", "permute", "transpose", "contiguous", "clone", "detach",
     "numpy", "tolist", "item", "type", "sum", "mean", "max", "min", "argmax", "shape", "copy", "index", "count"}
)

_HARMLESS_BUILTINS = frozenset(
    {"int", "float", "str", "bool", "len", "list", "dict", "tuple", "set", "range", "min", "max", "abs", "round",
     "sum", "sorted", "getattr", "isinstance", "super", "zip", "enumerate", "frozenset", "object", "print"}
)
