"""The flow core of the value model: what an expression may be, and where a value goes.

Two directions over the model's tables:

- backward, `Values.of(expr)`: the set of values an expression may evaluate to, following
  assignments, tuple unpacking, attributes (`self.model`, `args.device`), conditional
  expressions, `for` targets and comprehensions, returns of same-file helpers and parameters of
  same-file functions (through their call sites). The set holds `UNKNOWN` wherever some path
  cannot be followed; a rule asks "every value is X" (`Values.all_of`) before it fires;
- forward, `Values.uses(expr)`: every place the value an expression produces reaches: called,
  a method called on it, passed as an argument, formatted into text, stored, returned to
  callers the file does not show... through the same aliases.

The facts of three domains are read over this core by their own modules, which the core also
asks while it evaluates: where data is (`values.placement`, placement.py), what becomes of a
module and what a same-file class is (`values.modules`, module_fate.py), and loaders, samplers
and their batches (`values.pipeline`, pipeline.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data, devices, frameworks, jit, modules, tensors, training
from torchlint.model import constants
from torchlint.model.bindings import Binding
from torchlint.model.iteration import drawn_iterator
from torchlint.model.names import dotted
from torchlint.model.values.calling import argument, builtin_or_qualified, inspects_only, parameter_for
from torchlint.model.values.containers import Containers, constant_key
from torchlint.model.values.kinds import (
    DTYPE_SET, NONE, OTHER, OTHER_SET, UNKNOWN, UNKNOWN_SET, Kind, ModuleFacts, Place, Use, Value,
)
from torchlint.model.values.module_fate import ModuleFates, is_zoo_getattr, is_zoo_table
from torchlint.model.values.pipeline import Pipeline
from torchlint.model.values.placement import Placement, receives_move

from torchlint.project.summary import ARGUMENT

if TYPE_CHECKING:
    from torchlint.model import Model
    from torchlint.project.summary import ReturnFact

_MAX_DEPTH = 40  # evaluation depth beyond which a value is unknown (keeps recursion bounded)
_MAX_ROUNDS = 4  # evaluations of a cycle's head before its last value is taken
# Tuple nesting a use is followed through: a function that returns its own result inside a tuple
# (`return n, walk(n)`) would otherwise nest the value one level deeper on each pass
_MAX_NESTING = 8


class Values:
    """The values expressions may evaluate to and the places values reach, for one file's model;
    ``placement``, ``modules`` and ``pipeline`` answer the questions of each domain."""

    def __init__(self, model: Model) -> None:
        self.model = model
        # evaluation state: final results, the keys being computed (stack order), provisional
        # values inside a cycle (see _solve). An expression or a binding is keyed by itself.
        self._memo: dict[object, frozenset[Value]] = {}
        self._stack: list[object] = []
        self._position: dict[object, int] = {}
        self._approx: dict[object, frozenset[Value]] = {}
        self._tentative: dict[object, tuple[frozenset[Value], int]] = {}
        self._low = 0
        self._made: dict[tuple, Value] = {}
        self._bindings_by_statement: dict[cst.CSTNode, list[Binding]] | None = None  # by statement
        self._constructed: list[Value] | None = None  # what every call of the file constructs
        self._made_of_kinds: dict[tuple[Kind, ...], list[Value]] = {}
        self._tensor_tested: frozenset[str] | None = None  # names a condition tests for a tensor
        self.placement = Placement(self)
        self.modules = ModuleFates(self)
        self.pipeline = Pipeline(self)
        self.containers = Containers(self)

    # ===================================================================== public queries
    def of(self, expr: cst.BaseExpression) -> frozenset[Value]:
        """Every value ``expr`` may evaluate to; contains UNKNOWN where a path is not followed."""
        memo = self._memo.get(expr)
        if memo is not None:
            return memo
        # by exact type: LibCST's concrete node classes have no subclasses, and a failing
        # isinstance against one (an ABC) costs a Python call. The evaluator is what _solve
        # calls: one level less for each of the tens of thousands of questions of a run
        evaluate = _EVALUATORS.get(type(expr))
        if evaluate is None:
            return UNKNOWN_SET
        return self._solve(expr, evaluate, self, expr)

    def _solve(self, key, compute, *args) -> frozenset[Value]:
        """Evaluate with memoisation, to a fixpoint through cycles.

        `x = x.to(d)` makes x's value depend on itself. A key met again while it is being
        computed answers its current approximation (at first: nothing) and marks every frame
        above it as provisional; the cycle's head recomputes until its value stops changing.
        Provisional results are kept only until their head finishes. ``compute(*args)`` gives
        the value (arguments rather than a closure: one is made for every question asked)."""
        memo = self._memo.get(key)
        if memo is not None:
            return memo
        # (plain comparisons rather than min(): tens of thousands of questions per run)
        position = self._position.get(key)
        if position is not None:
            if position < self._low:
                self._low = position
            return self._approx.get(key, frozenset())
        tentative = self._tentative.get(key) if self._tentative else None  # empty outside cycles
        if tentative is not None:
            if tentative[1] < self._low:
                self._low = tentative[1]
            return tentative[0]
        stack = self._stack
        here = len(stack)
        if here > _MAX_DEPTH:
            return UNKNOWN_SET
        stack.append(key)
        self._position[key] = here
        outer_low = self._low
        try:
            for _ in range(_MAX_ROUNDS):
                self._low = here + 1
                result = frozenset(compute(*args))
                if self._low != here or result == self._approx.get(key):
                    break
                self._approx[key] = result  # the head of a cycle: go round again
                if self._tentative:
                    self._forget_tentative(here)
        finally:
            stack.pop()
            del self._position[key]
        if self._approx:  # outside cycles, empty
            self._approx.pop(key, None)
        low = self._low
        if low >= here:
            if self._tentative:  # outside cycles, nearly always empty
                self._forget_tentative(here)
            result = result or UNKNOWN_SET  # nothing found, and not for want of a cycle's value
            self._memo[key] = result
        else:
            self._tentative[key] = (result, low)
        if outer_low < low:
            self._low = outer_low
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

    def defaulted(self, expr: cst.BaseExpression) -> frozenset[Value] | None:
        """The values of ``expr`` where it is a parameter's default: a name (or a `self.<attr>`
        the constructor keeps it in) every binding of which is one parameter, with a default,
        of a function called from where the file does not show (`def __init__(self,
        criterion=nn.CrossEntropyLoss())`). The default is what its author meant it to hold;
        None otherwise."""
        model = self.model
        bindings = model.bindings_of(expr) if type(expr) in (cst.Name, cst.Attribute) else []
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if type(expr) is cst.Attribute:
            if binding.how != "assign" or binding.path or not isinstance(binding.source, cst.Name):
                return None
            return self.defaulted(binding.source)
        function = binding.scope
        if binding.how != "param" or binding.source is None or not isinstance(function, cst.FunctionDef):
            return None
        return self.of(binding.source) if model.summaries.call_sites(function) is None else None

    def kind(self, expr: cst.BaseExpression) -> Kind | None:
        """The kind of ``expr`` when every path agrees on one (None = polymorphic or unknown)."""
        kinds = {value.kind for value in self.of(expr)}
        return kinds.pop() if len(kinds) == 1 and Kind.UNKNOWN not in kinds else None

    def of_binding(self, binding: Binding) -> frozenset[Value]:
        """Every value a binding may give its name."""
        memo = self._memo.get(binding)  # most questions: asked before (as in of)
        if memo is not None:
            return memo
        return self._solve(binding, self._evaluate_binding, binding)

    def made(self, *kinds: Kind) -> list[Value]:
        """Every value of ``kinds`` constructed by a call in the file, in source order."""
        if self._constructed is None:
            self._constructed = self._constructions()
        found = self._made_of_kinds.get(kinds)
        if found is None:
            found = self._made_of_kinds[kinds] = [value for value in self._constructed if value.kind in kinds]
        return list(found)

    def _constructions(self) -> list[Value]:
        found = []
        model = self.model
        for call in model.calls:
            func = call.func
            if model.qualified_name(func) is None and not (
                type(func) in _COMPUTED_CALLEES
                or (type(func) is cst.Name and any(b.how == "class" for b in model.bindings_of(func)))
                or self._names_a_class(func)
                or model.imports.resolve(func, model.imports.relative) is not None
            ):
                continue  # neither a known API, a same-file class nor the project's own: makes nothing
            made = [value for value in self.of(call) if value.node is call]
            loaded = self.loaded_model(call)
            if loaded is not None:
                made.append(loaded)
            made.extend(self.unpacked_loaders(call))
            found.extend(made)
            for value in made:
                # a loader a function of another module returns: the sampler built with it there
                # (not one the call hands it, which is made where the caller builds it)
                found.extend(sampler for sampler in self.returned_samplers(value) or () if sampler.node is call)
        return found

    def passes_through(self, call: cst.Call, argument: cst.CSTNode) -> bool:
        """Whether a function of another module gives back the argument ``argument`` after only
        reading it (`model = restore(model, path)`, which loads a state dict into it): the
        call's result is that value, and nothing else happens to it."""
        if not self.model.imports_torch:
            return False
        found = self.model.summaries.imported(call)
        facts = found[0].summary.returns if len(found) == 1 and found[0].constructor is None else None
        return (
            facts is not None and facts.kind == ARGUMENT and facts.only_read and facts.parameter is not None
            and found[0].argument(facts.parameter) is argument
        )

    def loaded_model(self, call: cst.Call) -> Value | None:
        """The model a loader that returns it inside a tuple builds (`clip.load(name)`)."""
        qualified = self.model.call_name(call)
        return self.make(Kind.MODULE, call, api=qualified) if qualified in modules.TUPLE_MODEL_LOADERS else None

    # ===================================================================== forward: uses
    def uses(self, start: cst.BaseExpression, self_returning: Iterable[str] = (), path: tuple[int, ...] = ()) -> list[Use]:
        """Every place the value produced at ``start`` (or at ``path`` inside it: a tuple's
        element) reaches, through aliases. A method in ``self_returning`` returns the value
        itself (`model.to(d)` is model), so its result is followed too."""
        returning = frozenset(self_returning)
        found: list[Use] = []
        seen: set[tuple[cst.CSTNode, tuple[int, ...]]] = set()
        pending: list[tuple[cst.CSTNode, tuple[int, ...]]] = [(start, path)]
        while pending:
            node, path = pending.pop()
            key = (node, path)
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
            kind = type(parent)  # exact types: see of
            if kind is cst.IfExp and node is not parent.test:
                node = parent
                continue
            if kind is cst.BooleanOperation:
                node = parent
                continue
            if kind is cst.Element:
                container = model.parent(parent)
                if type(container) in _SEQUENCES and len(path) < _MAX_NESTING:
                    index = next(i for i, e in enumerate(container.elements) if e is parent)
                    node, path = container, (index, *path)
                    continue
                found.append(Use("stored", node, container))
                return
            if kind is cst.Arg:
                call = model.parent(parent)
                # a class's base or keyword (`class Wrapped(base):`) keeps the value like a store
                if parent.star or path or not isinstance(call, cst.Call):
                    found.append(Use("stored", node, call))
                    return
                keyword = parent.keyword.value if parent.keyword is not None else None
                found.append(Use("argument", node, call, keyword))
                if model.call_name(call) in modules.ALIASING_CALLS or self.passes_through(call, node):
                    node = call
                    continue
                self._follow_into_parameters(call, parent, pending)
                return
            if kind is cst.Attribute and parent.value is node:
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
            if kind is cst.Call and parent.func is node:
                found.append(Use("called", node, parent))
                return
            if kind in _BINDING_STATEMENTS and parent.value is node:
                bound = [b for b in self._bindings_made_by(parent) if b.path == path and b.source is node]
                if not bound:
                    found.append(Use("stored", node, parent))
                    return
                for binding in bound:
                    found.append(Use("bound", node, parent, binding=binding))
                    pending.extend((read, ()) for read in model.reads_of(binding) if _may_see(model, read, binding))
                return
            if kind is cst.Return:
                function = model.function_of(parent)
                sites = model.summaries.call_sites(function) if isinstance(function, cst.FunctionDef) else None
                if sites is None:
                    found.append(Use("returned", node, parent))
                    return
                pending.extend((call, path) for call, _ in sites)
                return
            if kind is cst.Expr:
                return  # an expression statement: the value is dropped
            if kind in _ITERATING and parent.iter is node:
                found.append(Use("iterated", node, parent))
                return
            if kind is cst.FormattedStringExpression:
                found.append(Use("formatted", node, model.parent(parent)))
                return
            if (
                kind is cst.BinaryOperation
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
            param = parameter_for(target, call, arg, offset)
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
    def _text(self, expr: cst.BaseString) -> Iterable[Value]:
        return (self.placement.device_text(expr) or OTHER,)

    def _either(self, expr: cst.BooleanOperation) -> Iterable[Value]:
        return self.of(expr.left) | self.of(expr.right)

    def _unary(self, expr: cst.UnaryOperation) -> Iterable[Value]:
        operand = self.of(expr.expression)
        return {v for v in operand if v.kind is Kind.TENSOR} or (OTHER_SET if operand else operand)

    def _walrus(self, expr: cst.NamedExpr) -> Iterable[Value]:
        return self.of(expr.value)

    def _plain(self, expr: cst.BaseExpression) -> Iterable[Value]:
        """A number, a container or a comparison: none of the kinds the rules ask about."""
        return OTHER_SET

    def _name(self, expr: cst.Name) -> Iterable[Value]:
        if expr.value == "None":
            return (NONE,)
        if expr.value in ("True", "False"):
            return OTHER_SET
        bindings = self.model.reaching(expr)
        if not bindings:
            return UNKNOWN_SET
        if len(bindings) == 1:
            found = self.of_binding(bindings[0])  # most reads: no set to merge into
        else:
            found = set()
            for binding in bindings:
                found |= self.of_binding(binding)
        if not all(v.kind is Kind.TENSOR for v in found) and self._guarded_as_tensor(expr, bindings):
            return {v for v in found if v.kind is Kind.TENSOR} or {self.make(Kind.TENSOR, expr, tag="guarded")}
        if any(v.kind is Kind.BATCH and v.place is Place.HOST for v in found) and self._mutated(expr):
            # `batch_to_device(batch, device)`, `batch[k] = v.to(device)`: moved in place
            found = {
                self.make(Kind.BATCH, v.node, place=Place.UNKNOWN, origin=v.origin) if v.kind is Kind.BATCH else v
                for v in found
            }
        return found

    def _guarded_as_tensor(self, read: cst.Name, bindings: list[Binding]) -> bool:
        """Whether a read runs only when its name holds a tensor: inside the body of an `if` (or
        a conditional expression) that tests `torch.is_tensor(x)` or `isinstance(x, torch.Tensor)`,
        alone or as one side of an `and`, with no binding of the name inside that body."""
        if read.value not in self._tensor_tested_names():
            return False
        model = self.model
        child: cst.CSTNode = read
        for ancestor in model.ancestors(read):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.body:
                if _tests_tensor(model, ancestor.test, read.value):
                    body = ancestor.body
                    return not any(any(a is body for a in model.ancestors(b.statement)) for b in bindings)
            child = ancestor
        return False

    def _tensor_tested_names(self) -> frozenset[str]:
        """The names some call of the file tests for being a tensor, found in one pass over the
        calls: most reads are of names no condition tests, and need no walk up their ancestors."""
        if self._tensor_tested is None:
            model = self.model
            self._tensor_tested = frozenset(
                call.args[0].value.value
                for call in model.calls
                if call.args and type(call.args[0].value) is cst.Name
                and _tests_tensor(model, call, call.args[0].value.value)
            )
        return self._tensor_tested

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
                call = model.parent(parent)
                mutated = not isinstance(call, cst.Call) or self._may_mutate_argument(call, parent)
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
            parameter_for(fn, call, arg, offset) in model.summaries.moved_params(fn) for fn, offset in targets
        )

    def _attribute(self, expr: cst.Attribute) -> Iterable[Value]:
        qualified = self.model.qualified_name(expr)
        if qualified is not None:
            return DTYPE_SET if qualified in devices.DTYPES else self._class_reference(expr) or UNKNOWN_SET
        bindings = self.model.bindings_of(expr)
        if bindings:
            found: set[Value] = set()
            for binding in bindings:
                found |= UNKNOWN_SET if self._owner_rebound_after(expr, binding) else self.of_binding(binding)
            return found
        name = expr.attr.value
        if name == "dtype":
            return DTYPE_SET  # `.to(x.dtype)` converts, it does not move
        if name == "device":
            return (self.make(Kind.DEVICE, expr, api="device attribute"),)  # `x.device`, `accelerator.device`
        found = set()
        for owner in self.of(expr.value):
            if owner.kind is Kind.LOADER and name == "sampler":
                found |= self.pipeline.loader_samplers(owner) if owner.node is not None else {UNKNOWN}
            elif owner.kind is Kind.SAMPLER and name == "sampler":
                found |= self.pipeline.inner_sampler(owner)
            elif owner.kind is Kind.LOADER and name == "batch_sampler" and isinstance(owner.node, cst.Call):
                arg = argument(owner.node, "batch_sampler", 5)
                found |= self.of(arg) if arg is not None else {UNKNOWN}
            elif owner.kind is Kind.TENSOR and name in tensors.VIEW_ATTRIBUTES:
                found.add(self.make(Kind.TENSOR, expr, place=owner.place))
            elif owner.api == "device attribute" and name == "type":
                found.add(owner)  # `x.device.type`: still wherever x is
            elif owner.kind is Kind.MODULE and name == "module":
                found.add(UNKNOWN)
            else:
                found.add(UNKNOWN)
        return found

    def _owner_rebound_after(self, expr: cst.Attribute, binding: Binding) -> bool:
        """Whether the object owning an attribute is rebound after the attribute was set
        (`data.x = features`, then `data = data.to(device)`): the attribute read later may be
        the new object's, moved or rebuilt with it."""
        owner = expr.value
        if not isinstance(owner, cst.Name):
            return False
        model = self.model
        set_at = model.order(binding.statement)
        return any(
            model.order(rebinding.statement) > set_at and rebinding.how in ("assign", "annassign")
            for rebinding in model.bindings_of(owner)
        )

    def _conditional(self, expr: cst.IfExp) -> Iterable[Value]:
        branches = self.of(expr.body) | self.of(expr.orelse)
        devices_ = [v for v in branches if v.kind is Kind.DEVICE]
        if devices_ and all(v.kind is Kind.DEVICE for v in branches):
            # `"cuda" if torch.cuda.is_available() else "cpu"` is one device choice
            return (self.make(Kind.DEVICE, expr, host_only=all(v.host_only for v in devices_)),)
        return branches

    def _subscript(self, expr: cst.Subscript) -> Iterable[Value]:
        if self.model.qualified_name(expr.value) is not None:
            return UNKNOWN_SET  # os.environ["RANK"], sys.argv[1]
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        if isinstance(index, cst.Index):
            entry = self.containers.entry(expr.value, index.value)
            if entry is None and constant_key(index.value) is None:
                entry = self.containers.chosen_module(expr.value)
            if entry is not None:
                return entry
        return self._unpack(self.of(expr.value), expr)

    def _binary(self, expr: cst.BinaryOperation) -> Iterable[Value]:
        if isinstance(expr.left, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            return OTHER_SET
        left, right = self.of(expr.left), self.of(expr.right)
        if not left or not right:
            return frozenset()  # an operand still being computed (a cycle): nothing yet
        operands = left | right
        tensors_ = [v for v in operands if v.kind is Kind.TENSOR]
        if tensors_ and all(v.kind in (Kind.TENSOR, Kind.OTHER) for v in operands):
            places = {v.place for v in tensors_}
            return (self.make(Kind.TENSOR, expr, place=places.pop() if len(places) == 1 else Place.UNKNOWN),)
        if all(v.kind is Kind.OTHER for v in operands):
            return OTHER_SET
        return UNKNOWN_SET

    # -- bindings -----------------------------------------------------------------------------
    def _evaluate_binding(self, binding: Binding) -> Iterable[Value]:
        how = binding.how
        if how in ("assign", "annassign", "walrus"):
            if binding.source is None:
                return UNKNOWN_SET
            found = self._element(binding.source, binding.path)
            if found == UNKNOWN_SET and (self._run_and_switched_attribute(binding) or self._run_and_switched_name(binding)):
                return (self.make(Kind.MODULE, binding.target, facts=_HANDED_IN_MODULE),)
            # moved and called first: it rules out nearly every name, and the other test may read
            # the summary of another module, which costs that module's parse
            if found == UNKNOWN_SET and self._moved_and_called(binding) and self._built_by_project(binding):
                return (self.make(Kind.MODULE, binding.source, facts=_MOVED_IN_MODULE),)  # `model = build(cfg)`
            return found
        if how in ("for", "comprehension"):
            return self._items(binding.source, binding.path)
        if how == "param":
            return self._parameter(binding)
        if how == "class":
            return (self.make(Kind.CLASS, binding.statement, api=binding.statement.name.value),)
        if how == "import":
            return self._class_reference(binding.target) or OTHER_SET
        if how == "def":
            return OTHER_SET
        return UNKNOWN_SET

    def _class_reference(self, expr: cst.BaseExpression) -> frozenset[Value] | None:
        """An imported class named without being called (`DistributedSampler`, `nn.Linear`), by
        the convention that class names are capitalised."""
        qualified = self.model.qualified_name(expr)
        if qualified is None or not qualified.rsplit(".", 1)[-1][:1].isupper():
            return None
        return frozenset({self.make(Kind.CLASS, expr, api=qualified)})

    def _element(self, expr: cst.BaseExpression, path: tuple[int, ...]) -> Iterable[Value]:
        """The values at ``path`` inside the value of ``expr`` (`a, (b, c) = expr`)."""
        if not path:
            return self.of(expr)
        if isinstance(expr, (cst.Tuple, cst.List)):
            elements = expr.elements
            if path[0] < len(elements) and not any(type(e) is cst.StarredElement for e in elements):
                return self._element(elements[path[0]].value, path[1:])
            return UNKNOWN_SET
        if isinstance(expr, cst.Name):
            return self._solve(("element", expr, path), self._name_element, expr, path)
        if isinstance(expr, cst.Call):
            # solved, not called: a recursive function's `return walk(...)` leads back here
            return self._solve(("element", expr, path), self._call_element, expr, path)
        return self._unpack(self.of(expr), expr)

    def _name_element(self, name: cst.Name, path: tuple[int, ...]) -> Iterable[Value]:
        bindings = self.model.reaching(name)
        if not bindings:
            return UNKNOWN_SET
        found: set[Value] = set()
        for binding in bindings:
            if binding.how in ("assign", "annassign", "walrus") and binding.source is not None:
                found |= set(self._element(binding.source, binding.path + path))
            elif binding.how in ("for", "comprehension"):
                found |= set(self._items(binding.source, binding.path + path))
            elif binding.how == "param":
                found |= set(self._unpack(self.of_binding(binding), name))
            else:
                found.add(UNKNOWN)
        return found

    def _call_element(self, call: cst.Call, path: tuple[int, ...]) -> Iterable[Value]:
        qualified = self.model.call_name(call)
        if qualified in modules.TUPLE_MODEL_LOADERS:
            position, _ = modules.TUPLE_MODEL_LOADERS[qualified]
            return (self.loaded_model(call),) if path == (position,) else UNKNOWN_SET
        if qualified in frameworks.FRAMEWORK_FUNCTIONS:
            return (self.make(Kind.MANAGED, call, api=qualified),)
        if qualified in data.DATASET_WRAPPERS and call.args:
            return self.of(call.args[0].value)  # random_split(ds, ...) -> subsets of ds
        func = call.func
        if isinstance(func, cst.Attribute) and any(v.kind is Kind.FRAMEWORK for v in self.of(func.value)):
            return (self.make(Kind.MANAGED, call, api=func.attr.value),)
        targets = self.model.summaries.targets(call)
        if targets and not _constructs_class(self.model, call):
            found: set[Value] = set()
            for function, _ in targets:
                returns = self.model.summaries.returns(function)
                if returns is None:
                    return UNKNOWN_SET
                for ret in returns:
                    found |= set(self._element(ret, path))
            return found
        placed = [loader for loader in self.unpacked_loaders(call) if (loader.position,) == path]
        return placed or self._unpack(self.of(call), call)

    def _unpack(self, values: frozenset[Value], node: cst.CSTNode) -> Iterable[Value]:
        """Elements of a batch or rows of a tensor. A batch holds tensors when a torch DataLoader
        collates it with the default or a same-file collate function; from anything else its
        elements may be objects of any kind."""
        found: set[Value] = set()
        for value in values:
            if value.kind is Kind.TENSOR or (value.kind is Kind.BATCH and self.pipeline.collates_tensors(value.origin)):
                found.add(self.make(Kind.TENSOR, node, place=value.place, origin=value.origin, tag="element"))
            else:
                found.add(UNKNOWN)
        return found

    def _items(self, iterable: cst.BaseExpression, path: tuple[int, ...]) -> frozenset[Value]:
        """The values of the items a `for` over ``iterable`` binds at ``path``."""
        # solved, not called: names may wrap each other around a loop (`a = tqdm(b)`, `b = iter(a)`)
        return self._solve(("items", iterable, path), self._find_items, iterable, path)

    def _find_items(self, iterable: cst.BaseExpression, path: tuple[int, ...]) -> Iterable[Value]:
        wrapping = self.pipeline.wrapping_calls(iterable)
        if wrapping is not None:
            return frozenset().union(*(self._items(call, path) for call in wrapping))
        if type(iterable) is cst.Call:
            name = builtin_or_qualified(self.model, iterable)
            if name == "zip":
                if not path:
                    return UNKNOWN_SET
                if path[0] < len(iterable.args) and not iterable.args[path[0]].star:
                    return self._items(iterable.args[path[0]].value, path[1:])
                return UNKNOWN_SET
            if name in data.ITERATION_WRAPPERS and iterable.args:
                inner = iterable.args[data.ITERATION_WRAPPERS[name]].value
                if name in data.INDEXING_WRAPPERS:
                    if not path:
                        return UNKNOWN_SET
                    if path[0] == 0:
                        return OTHER_SET
                    return self._items(inner, path[1:])
                return self._items(inner, path)
            if name in ("range",):
                return OTHER_SET
            loaders = self.pipeline.adapted_loaders(iterable)
            if loaders:
                # `metric_logger.log_every(loader, 10)`: the loader's items, wherever the adaptor puts them
                found: set[Value] = set()
                for loader in loaders:
                    batch = self.make(Kind.BATCH, iterable, place=Place.UNKNOWN, origin=loader)
                    found |= set(self._unpack(frozenset({batch}), iterable) if path else {batch})
                return found
        if type(iterable) in (cst.List, cst.Tuple):
            found: set[Value] = set()
            for element in iterable.elements:
                if isinstance(element, cst.StarredElement):
                    return UNKNOWN_SET
                found |= set(self._element(element.value, path))
            return found
        found = set()
        for value in self.of(iterable):
            if value.kind in (Kind.LOADER, Kind.ITERATOR):
                loader = value if value.kind is Kind.LOADER else value.origin
                place = self.pipeline.batch_place(loader) if loader is not None else Place.UNKNOWN
                batch = self.make(Kind.BATCH, iterable, place=place, origin=loader)
                found |= set(self._unpack(frozenset({batch}), iterable) if path else {batch})
            elif value.kind is Kind.TENSOR:
                found.add(self.make(Kind.TENSOR, iterable, place=value.place, tag="row"))
            else:
                found.add(UNKNOWN)
        return found

    def _parameter(self, binding: Binding) -> Iterable[Value]:
        function = binding.scope
        if not isinstance(function, cst.FunctionDef):
            return UNKNOWN_SET
        functions = self.model.summaries
        sites = functions.call_sites(function)
        if sites is None:
            found = self.pipeline.step_batches(function, binding.name, binding.target)
            declared = self.pipeline.given.host_loader(binding) if found == UNKNOWN_SET else None
            if declared is not None:
                return (self.make(Kind.LOADER, binding.target, api=declared),)
            if found == UNKNOWN_SET and self._run_and_switched(binding):
                return (self.make(Kind.MODULE, binding.target, facts=_HANDED_IN_MODULE),)
            if found == UNKNOWN_SET and self._moved_and_called(binding):
                return (self.make(Kind.MODULE, binding.target, facts=_MOVED_IN_MODULE),)
            return found
        found: set[Value] = set()
        for call, offset in sites:
            arg = functions.argument(function, call, offset, binding.name)
            if arg is None:
                return UNKNOWN_SET
            found |= self.of(arg)
        return found

    def _built_by_project(self, binding: Binding) -> bool:
        """Whether a name is bound to what a function of the project returns (of this file or
        another module), not a library's object: a library's wrapper (a detection or diffusion
        pipeline) may be moved and called and still place its inputs itself."""
        source = binding.source
        if binding.path or not isinstance(source, cst.Call):
            return False
        return bool(self.model.summaries.targets(source) or self.model.summaries.imported(source))

    def _moved_and_called(self, binding: Binding) -> bool:
        """Whether a name whose value the file cannot see (a parameter that callers the file does
        not show fill in, what a project function returns) is used as a module: moved to a
        device (`model.to(device)`, `self.model = model.cuda()`) and called, itself or in the
        attribute it is kept in. A tensor is moved but never called, a function called but never
        moved. Only in a file that imports torch (the prefilter's soundness)."""
        model = self.model
        reads = model.reads_of(binding)
        if not model.imports_torch or not any(receives_move(model, read) for read in reads):
            return False
        moved = called = False
        for read in reads:
            for use in self.uses(read, modules.SELF_RETURNING_METHODS):
                called |= use.how == "called"
                moved |= use.how == "method" and self.placement.move_target(use.context) is not None
        return moved and called

    def _run_and_switched(self, binding: Binding) -> bool:
        """Whether a parameter that callers the file does not show fill in is used as a module:
        called, and switched both to evaluation mode and back to training mode, itself or in the
        `self.<attr>` its constructor keeps it in (a `Trainer(model, optimizer)` whose
        `validate()` calls `self.model.eval()` and `train_epoch()` `self.model.train()`); or
        called, switched to training mode and asked for its parameters (to optimise them): a
        `train(model, loader)` that forgets the eval() its test needs. Only in a file that
        imports torch (the prefilter's soundness)."""
        model = self.model
        if not model.imports_torch:
            return False
        reads = list(model.reads_of(binding))
        for read in list(reads):
            statement = model.parent(read)
            if isinstance(statement, cst.Assign) and statement.value is read:
                for target in statement.targets:
                    reads.extend(self._attribute_reads(target.target))
        return self._run_and_switched_reads(reads, trained_counts=True)

    def _run_and_switched_attribute(self, binding: Binding) -> bool:
        """Whether `self.<attr>`, bound here to something the file does not show (a model a
        library loads, `self.net = load_backbone(name)`), is used as a module: called, and
        switched both to evaluation and to training mode in its class (see _run_and_switched)."""
        if not self.model.imports_torch:
            return False
        reads = self._attribute_reads(binding.target)
        return bool(reads) and self._run_and_switched_reads(reads)

    def _run_and_switched_name(self, binding: Binding) -> bool:
        """Whether a name bound to what a call the model does not know builds (`model =
        tx.modules.BERTClassifier(...)`) is used as a module: the reads this binding reaches
        call it, and switch it both to evaluation and to training mode (see
        _run_and_switched_reads)."""
        if not self.model.imports_torch or type(binding.target) is not cst.Name or binding.path:
            return False
        return type(binding.source) is cst.Call and self._run_and_switched_reads(list(self.model.reads_of(binding)))

    def _attribute_reads(self, target: cst.CSTNode) -> list[cst.BaseExpression]:
        """The reads of the `self.<attr>` ``target`` assigns, in the class it belongs to."""
        model = self.model
        key = dotted(target)
        if key is None or not key.startswith("self.") or key.count(".") != 1:
            return []
        scope = model.binding_scope(key, target)
        return [read for read in model.reads_table.get(key, ()) if model.binding_scope(key, read) is scope]

    def _run_and_switched_reads(self, reads: list[cst.BaseExpression], trained_counts: bool = False) -> bool:
        model = self.model
        called = False
        switched: set[str] = set()
        for read in reads:
            parent = model.parent(read)
            if type(parent) is cst.Call and parent.func is read:
                called = True
            elif isinstance(parent, cst.Attribute) and parent.value is read and isinstance(model.parent(parent), cst.Call):
                switched.add(parent.attr.value)
        called |= bool(switched & training.FORWARD_METHODS)  # `self.net.forward(x)` runs it too
        if trained_counts and {training.TRAIN_METHOD, training.PARAMETERS_METHOD} <= switched:
            return called
        return called and {training.EVAL_METHOD, training.TRAIN_METHOD} <= switched

    # -- calls --------------------------------------------------------------------------------
    def _call(self, call: cst.Call) -> Iterable[Value]:
        model = self.model
        func = call.func
        qualified = model.call_name(call)
        if qualified is not None:
            made = self._construct(call, qualified)
            if made is not None:
                return made
            if (qualified in modules.ALIASING_CALLS or qualified in modules.COPYING_CALLS) and call.args:
                return self.of(call.args[0].value)  # the same module, or a copy placed where it is
        kind = type(func)  # exact types: see of
        if kind is cst.Name:
            builtin = func.value
            if builtin in ("iter",) and call.args and not model.bindings_of(func):
                return self._iterator(call)
        if kind is cst.Subscript and is_zoo_table(model, func.value):
            return (self.make(Kind.MODULE, call, api="model zoo"),)
        if kind is cst.Call and is_zoo_getattr(model, func):
            return (self.make(Kind.MODULE, call, api="model zoo"),)
        iterator = drawn_iterator(model, call)
        if iterator is not None and not model.summaries.targets(call):
            return self._next(call, iterator)
        if qualified is None and self._names_a_class(func):
            return self._construct_referenced(call)
        if not model.summaries.targets(call):
            # a class or function a relative import brings from the project (`from .star import STAR`),
            # or a star import does (`from nets import *`)
            api = qualified or model.imports.resolve(func, model.imports.relative) or self._star_imported(func)
            built = self._project_built(call, api) if api is not None else None
            if built is not None:
                return built
        if kind is cst.Attribute:
            if model.summaries.targets(call):
                return self._same_file_call(call)
            if func.attr.value == "get" and len(call.args) == 1 and not call.args[0].keyword:
                entry = self.containers.entry(func.value, call.args[0].value)
                if entry is not None:
                    return entry
            return self._method(call, func.attr.value, self.of(func.value))
        return self._same_file_call(call)

    def _star_imported(self, func: cst.BaseExpression) -> str | None:
        """The name of a callee the file never binds, as written, when a star import of a project
        module binds it to a function or class of that module."""
        if type(func) is not cst.Name or self.model.project is None or self.model.bindings_of(func):
            return None
        return func.value if isinstance(self.model.project.star_imported(func.value), tuple) else None

    def _names_a_class(self, func: cst.BaseExpression) -> bool:
        """Whether a callee is a variable or attribute the file assigns (`Sampler = ...`,
        `self.sampler_cls = ...`) that may hold a class."""
        bindings = self.model.bindings_of(func) if type(func) in _NAMES else ()
        return any(b.how in ("assign", "annassign") for b in bindings) and any(
            v.kind is Kind.CLASS for v in self.of(func)
        )

    def _construct_referenced(self, call: cst.Call) -> Iterable[Value]:
        """What calling a class held in a variable makes: what each class it may hold makes."""
        held = self.of(call.func)
        cuda_type = next((v.api for v in held if v.kind is Kind.CLASS and v.api.startswith(tensors.CUDA_TENSOR_TYPES_PREFIX)), None)
        if cuda_type is not None:
            return {self.make(Kind.TENSOR, call, api=cuda_type, place=Place.UNKNOWN)}
        found: set[Value] = set()
        for value in held:
            classdef = value.node if isinstance(value.node, cst.ClassDef) else None
            if value.kind is not Kind.CLASS:
                found.add(UNKNOWN)
            elif classdef is not None:
                found.add(self._instance(call, classdef))
            else:
                found |= set(self._construct(call, value.api) or UNKNOWN_SET)
        return found

    def _construct(self, call: cst.Call, qualified: str) -> Iterable[Value] | None:
        """The value a call of a known API makes, or None when the API is not known."""
        if qualified in devices.DEVICE_FACTORIES:
            host = bool(call.args) and self.placement.device_place(call.args[0].value) is Place.HOST
            return (self.make(Kind.DEVICE, call, api=qualified, host_only=host),)
        if qualified in data.LOADERS:
            return (self.make(Kind.LOADER, call, api=qualified),)
        if qualified in data.EPOCH_SAMPLERS:
            return (self.make(Kind.SAMPLER, call, api=qualified, epoch_seeded=True,
                               shuffles=self.pipeline.shuffles(call, data.EPOCH_SAMPLERS[qualified])),)
        if qualified.startswith("torch.utils.data.") and qualified.endswith("Sampler"):
            return (self.make(Kind.SAMPLER, call, api=qualified),)
        if qualified in data.TENSOR_DATASETS or qualified in data.DATASET_WRAPPERS:
            return (self.make(Kind.DATASET, call, api=qualified),)
        if qualified in modules.WRAPPERS:
            return (self.make(Kind.MODULE, call, api=qualified),)
        if qualified in tensors.TENSOR_WRAPPERS:
            inner = self.of(call.args[0].value) if call.args else frozenset()
            # `Variable(x)` where x may also be something else (`x.type(Tensor)`): its place is unknown
            places = {v.place if v.kind is Kind.TENSOR else Place.UNKNOWN for v in inner}
            place = places.pop() if len(places) == 1 else Place.UNKNOWN
            return (self.make(Kind.TENSOR, call, api=qualified, place=place),)
        module = self.modules.construction(call, qualified)
        if module is not None:
            return (module,)
        if qualified in tensors.FACTORIES:
            return (self.make(Kind.TENSOR, call, api=qualified, place=self.placement.factory_place(call)),)
        if qualified in tensors.HOST_FACTORIES:
            return (self.make(Kind.TENSOR, call, api=qualified, place=Place.HOST),)
        if qualified in tensors.JOINING_FUNCTIONS:
            return (self.make(Kind.TENSOR, call, api=qualified, place=self._joined_place(call)),)
        if (
            qualified.endswith(tensors.FOLLOWING_FACTORIES_SUFFIX) and qualified.startswith("torch.")
        ) or qualified in tensors.TENSOR_FUNCTIONS or qualified.startswith(tensors.TENSOR_FUNCTION_PREFIXES):
            return (self.make(Kind.TENSOR, call, api=qualified),)
        if qualified in jit.COMPILES:
            return (self.make(Kind.TRACED, call, api=qualified),)
        if qualified in frameworks.FRAMEWORK_CLASSES:
            return (self.make(Kind.FRAMEWORK, call, api=qualified),)
        if qualified in frameworks.FRAMEWORK_FUNCTIONS:
            return (self.make(Kind.MANAGED, call, api=qualified),)
        if qualified.startswith("torch.optim.") and qualified.rsplit(".", 1)[1][:1].isupper():
            if ".lr_scheduler." not in qualified and ".swa_utils." not in qualified:
                return (self.make(Kind.OPTIMIZER, call, api=qualified),)
        return None

    def _joined_place(self, call: cst.Call) -> Place:
        """Where the tensors a joining call (`torch.cat(parts)`) is given are, when they all are
        in one known place: the elements of a list or tuple written out, or of a comprehension,
        also through a name bound once to one and never changed in place."""
        sequence = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
        elements = self._sequence_elements(sequence) if sequence is not None else None
        if not elements:
            return Place.UNKNOWN
        places = set()
        for element in elements:
            found = self.of(element)
            if not found or any(v.kind is not Kind.TENSOR for v in found):
                return Place.UNKNOWN
            places |= {v.place for v in found}
        return places.pop() if len(places) == 1 else Place.UNKNOWN

    def _sequence_elements(self, sequence: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        if isinstance(sequence, (cst.List, cst.Tuple)):
            if any(isinstance(e, cst.StarredElement) for e in sequence.elements):
                return None
            return [e.value for e in sequence.elements]
        if isinstance(sequence, (cst.ListComp, cst.GeneratorExp)):
            return [sequence.elt]
        if isinstance(sequence, cst.Name):
            binding = self.model.sole_binding(sequence)
            if binding is None or binding.how != "assign" or binding.path or self._changed_elsewhere(sequence):
                return None
            source = binding.source
            return self._sequence_elements(source) if isinstance(source, (cst.List, cst.Tuple, cst.ListComp)) else None
        return None

    def _changed_elsewhere(self, read: cst.Name) -> bool:
        """Whether a list other reads of its name may change: an item assigned, a method other
        than a lookup called (`parts.append(x.cuda())`), handed to a call that is not torch's own
        or one that only inspects it."""
        model = self.model
        scope = model.binding_scope(read.value, read)
        for other in model.reads_table.get(read.value, ()):
            if other is read or model.binding_scope(read.value, other) is not scope:
                continue
            parent = model.parent(other)
            if isinstance(parent, cst.Subscript) and parent.value is other:
                if isinstance(model.parent(parent), (cst.AssignTarget, cst.AugAssign, cst.Del)):
                    return True
            elif isinstance(parent, cst.Attribute) and parent.value is other:
                call = model.parent(parent)
                if isinstance(call, cst.Call) and call.func is parent and parent.attr.value not in _LOOKUPS:
                    return True
            elif isinstance(parent, cst.Arg):
                call = model.parent(parent)
                if not isinstance(call, cst.Call):
                    return True  # a class's base: code the file may not show runs with it
                name = model.call_name(call) or ""
                if not (inspects_only(model, call) or name.startswith("torch.")):
                    return True
        return False

    def _method(self, call: cst.Call, name: str, receiver: frozenset[Value]) -> Iterable[Value]:
        found: set[Value] = set()
        # a method of None raises: where the receiver may also be something else, it is that
        for value in {value for value in receiver if value.kind is not Kind.NONE} or receiver:
            kind = value.kind
            if kind is Kind.MODULE:
                found.add(value if name in modules.SELF_RETURNING_METHODS else UNKNOWN)
            elif kind is Kind.TENSOR:
                found.add(self._tensor_method(call, name, value))
            elif kind is Kind.BATCH:
                target = self.placement.move_target(call)
                found.add(self.make(Kind.BATCH, call, place=target, origin=value.origin) if target else UNKNOWN)
            elif kind is Kind.FRAMEWORK:
                found.add(self.make(Kind.MANAGED, call, api=name))
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
        target = self.placement.move_target(call)
        if target is not None:
            return self.make(Kind.TENSOR, call, place=target)
        return self.make(Kind.TENSOR, call, place=tensor.place)

    def _iterator(self, call: cst.Call) -> Iterable[Value]:
        found: set[Value] = set()
        for value in self.of(call.args[0].value):
            if value.kind is Kind.LOADER:
                found.add(self.make(Kind.ITERATOR, call, origin=value))
            elif value.kind is Kind.ITERATOR:
                found.add(value)
            else:
                found.add(UNKNOWN)
        return found

    def _next(self, call: cst.Call, iterator: cst.BaseExpression) -> Iterable[Value]:
        found: set[Value] = set()
        for value in self.of(iterator):
            if value.kind is Kind.ITERATOR and value.origin is not None:
                found.add(self.make(Kind.BATCH, call, place=self.pipeline.batch_place(value.origin), origin=value.origin))
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
            return UNKNOWN_SET
        found: set[Value] = set()
        for function, offset in targets:
            if model.summaries.returns(function) is None:
                found |= self.pipeline.generator_iterator(call, function, offset)
            else:
                found |= self._function_returns(function)
        return found

    def project_returns(self, call: cst.Call) -> ReturnFact | None:
        """What the one function or constructor of another module of the project that ``call``
        runs gives back (`Net()` imported from `models.py`, `build_loader(cfg)` from `data.py`), as
        that module's summary describes it; None when the summaries describe nothing."""
        if not self.model.imports_torch:
            return None  # the prefilter's soundness: kinds come from torch's name in the file
        found = self.model.summaries.imported(call)
        if len(found) != 1 or (found[0].klass is not None and found[0].constructor is not call):
            return None  # a method of an instance may return what its object holds
        return found[0].summary.returns

    def unpacked_loaders(self, call: cst.Call) -> list[Value]:
        """The loaders a function of another module returns inside a tuple that ``call`` unpacks
        (`train_loader, val_loader = build_loaders(cfg)`), by their places in it."""
        parent = self.model.parent(call)
        if type(parent) is not cst.Assign or type(parent.targets[0].target) not in _SEQUENCES:
            return []
        facts = self.project_returns(call)
        if facts is None:
            return []
        qualified = self.model.call_name(call)
        return [
            self.make(Kind.LOADER, call, api=qualified, position=place)
            for place, element in enumerate(facts.elements)
            if element is not None and element.kind == Kind.LOADER.value
        ]

    def returned_facts(self, value: Value) -> ReturnFact | None:
        """What the summary of the function of another module that made ``value`` says of it:
        of the element it is, for one taken out of a tuple that function returns."""
        facts = self.project_returns(value.node)
        if facts is None or value.position is None:
            return facts
        return facts.elements[value.position] if value.position < len(facts.elements) else None

    def _project_built(self, call: cst.Call, qualified: str) -> Iterable[Value] | None:
        """The loader or module a function or class of another module builds; None when the call
        builds nothing the summaries know."""
        facts = self.project_returns(call)
        if facts is not None and facts.kind == Kind.LOADER.value:
            return (self.make(Kind.LOADER, call, api=qualified),)
        if facts is not None and facts.kind == Kind.SAMPLER.value and facts.sampler_seeded:
            return self._project_sampler(call, facts)
        if facts is not None and facts.kind == ARGUMENT and facts.parameter is not None:
            passed = self.model.summaries.imported(call)[0].argument(facts.parameter)
            return self.of(passed) if passed is not None else UNKNOWN_SET
        if facts is not None and facts.kind == Kind.TENSOR.value and facts.parameter is not None:
            return self._followed_tensor(call, qualified, facts.parameter)
        if facts is None or facts.kind != Kind.MODULE.value:
            return None
        known = ModuleFacts(facts.mode_dependent, facts.probabilities, facts.built_training, facts.moved, facts.moves_inputs)
        return (self.make(Kind.MODULE, call, api=qualified, trainable=facts.trainable, facts=known),)

    def _project_sampler(self, call: cst.Call, facts: ReturnFact) -> tuple[Value, ...]:
        """The sampler with set_epoch a function of another module returns (`sampler =
        data_sampler(ds, shuffle=True, distributed=args.distributed)`), shuffling as the argument
        the call passes for its `shuffle=` says; with, when other runs get a sampler without
        set_epoch, that one too."""
        shuffles = facts.sampler_shuffles
        if facts.shuffle_parameter is not None:
            passed = self.model.summaries.imported(call)[0].argument(facts.shuffle_parameter)
            known = constants.value(self.model, passed) if passed is not None else constants.UNKNOWN
            shuffles = bool(known) if known is not constants.UNKNOWN else None
        sampler = self.make(Kind.SAMPLER, call, api=facts.sampler_api, epoch_seeded=True, shuffles=shuffles)
        return (sampler, self.make(Kind.SAMPLER, call, "other")) if facts.sampler_optional else (sampler,)

    def _followed_tensor(self, call: cst.Call, qualified: str, parameter: str) -> frozenset[Value]:
        """The tensor a function of another module computes from the tensor the call passes its
        ``parameter``, where that is (a batch it normalises stays a batch on the host)."""
        passed = self.model.summaries.imported(call)[0].argument(parameter)
        found = self.of(passed) if passed is not None else UNKNOWN_SET
        if not all(v.kind in (Kind.TENSOR, Kind.BATCH) for v in found):
            return UNKNOWN_SET
        places = {v.place for v in found}
        origins = {v.origin for v in found}
        place = places.pop() if len(places) == 1 else Place.UNKNOWN
        origin = origins.pop() if len(origins) == 1 else None
        return frozenset({self.make(Kind.TENSOR, call, api=qualified, place=place, origin=origin)})

    def returned_samplers(self, loader: Value) -> frozenset[Value] | None:
        """The sampler inside a loader a function of another module returns (none when it has
        none), as its summary describes it; None when ``loader`` is not one."""
        call = loader.node
        if loader.kind is not Kind.LOADER or not isinstance(call, cst.Call) or _constructs_project_class(self.model, call):
            return None
        facts = self.returned_facts(loader)
        if facts is None or facts.kind != Kind.LOADER.value:
            return None
        if facts.sampler_parameter is not None:
            # built over the sampler the call hands it: what the call passes (nothing: no sampler)
            passed = self.model.summaries.imported(call)[0].argument(facts.sampler_parameter)
            return frozenset(self.of(passed)) if passed is not None else frozenset()
        if facts.sampler_api is None:
            return frozenset()
        sampler = self.make(Kind.SAMPLER, call, "returned", api=facts.sampler_api, shuffles=facts.sampler_shuffles,
                            epoch_seeded=facts.sampler_seeded, position=loader.position)
        return frozenset({sampler, self.make(Kind.NONE, call, "returned")} if facts.sampler_optional else {sampler})

    def _instance(self, call: cst.Call, classdef: cst.ClassDef) -> Value:
        kind, api = self.modules.class_info(classdef)
        if kind is Kind.MODULE:
            return self.make(kind, call, api=classdef.name.value, trainable=self.modules.holds_state(classdef))
        if kind is Kind.SAMPLER:
            return self.make(kind, call, api=classdef.name.value, epoch_seeded=api in data.EPOCH_SAMPLERS,
                              shuffles=self.pipeline.shuffles(call, data.EPOCH_SAMPLERS.get(api, True)) if api else None)
        return self.make(kind, call, api=classdef.name.value)

    def _function_returns(self, function: cst.FunctionDef) -> frozenset[Value]:
        def compute() -> Iterable[Value]:
            returns = self.model.summaries.returns(function)
            if returns is None:
                return UNKNOWN_SET
            if not returns:
                return (NONE,)
            return frozenset().union(*(self.of(r) for r in returns))

        return self._solve(("returns", function), compute)

    # -- facts --------------------------------------------------------------------------------
    def make(self, kind: Kind, node: cst.CSTNode, tag: str = "", **facts) -> Value:
        """The one value of ``kind`` made at ``node`` with these facts (identity is stable)."""
        # facts are named once each: sorting the pairs compares their names only
        key = (node, kind, tag, *sorted(facts.items())) if facts else (node, kind, tag)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = Value(kind, node, **facts)
        return made


_SEQUENCES = frozenset({cst.Tuple, cst.List})
_NAMES = frozenset({cst.Name, cst.Attribute})
_COMPUTED_CALLEES = frozenset({cst.Subscript, cst.Call})  # `zoo[name](...)`, `getattr(models, name)(...)`
_BINDING_STATEMENTS = frozenset({cst.Assign, cst.AnnAssign, cst.NamedExpr})
_ITERATING = frozenset({cst.For, cst.CompFor})
_EVALUATORS = {
    cst.Name: Values._name,
    cst.Attribute: Values._attribute,
    cst.Call: Values._call,
    cst.IfExp: Values._conditional,
    cst.BooleanOperation: Values._either,
    cst.SimpleString: Values._text,
    cst.FormattedString: Values._text,
    cst.ConcatenatedString: Values._text,
    cst.Subscript: Values._subscript,
    cst.BinaryOperation: Values._binary,
    cst.UnaryOperation: Values._unary,
    cst.NamedExpr: Values._walrus,
    **dict.fromkeys(
        (cst.Integer, cst.Float, cst.Imaginary, cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp,
         cst.SetComp, cst.GeneratorExp, cst.Lambda, cst.Comparison),
        Values._plain,
    ),
}


def _constructs_project_class(model: Model, call: cst.Call) -> bool:
    return any(found.constructor is call for found in model.summaries.imported(call))


def _constructs_class(model: Model, call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Name) and any(b.how == "class" for b in model.bindings_of(func))


# A module handed in and switched between training and evaluation mode by the file: its author
# knows its mode matters.
_HANDED_IN_MODULE = ModuleFacts(mode_dependent=True)
# A module handed in and moved by the file: nothing is known of its layers.
_MOVED_IN_MODULE = ModuleFacts(mode_dependent=False)

_LOOKUPS = frozenset(
    {"items", "keys", "values", "get", "size", "dim", "numel", "__len__", "__getitem__", "float", "long", "half",
     "view", "reshape", "flatten", "unsqueeze", "squeeze", "permute", "transpose", "contiguous", "clone", "detach",
     "numpy", "tolist", "item", "type", "sum", "mean", "max", "min", "argmax", "shape", "copy", "index", "count"}
)


def _tests_tensor(model: Model, test: cst.BaseExpression, name: str) -> bool:
    """Whether a condition holds only when ``name`` is a tensor."""
    # exact types: a failing isinstance against a LibCST class (an ABC) costs a Python call, and
    # the first argument of every call of the file is asked about (see _tensor_tested_names)
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return _tests_tensor(model, test.left, name) or _tests_tensor(model, test.right, name)
    if type(test) is not cst.Call or not test.args or type(test.args[0].value) is not cst.Name:
        return False
    if test.args[0].value.value != name:
        return False
    if model.call_name(test) in tensors.TENSOR_TESTS:
        return True
    if builtin_or_qualified(model, test) != "isinstance" or len(test.args) != 2:
        return False
    classes = test.args[1].value
    options = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    return all(model.qualified_name(option) in tensors.TENSOR_CLASSES for option in options)


def _may_see(model: Model, read: cst.BaseExpression, binding: Binding) -> bool:
    """Whether a read of the name may see this binding: a later rebinding that always runs
    before the read (`model = B()` after the loop that used the first `model`) starts a new value."""
    if not isinstance(read, cst.Name) or model.scope(read) is not binding.scope:
        return True
    return binding in model.reaching(read)
