"""Module fate: what becomes of a module value (moved, called, trained, handed off) read off all
its uses, and what a same-file class is (a module, a loader, a plain object) and whether it
holds state."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import data, devices, frameworks, modules, tensors
from torchlint.model.bindings import Binding
from torchlint.model.values.calling import inspects_only, parameter_for
from torchlint.model.values.kinds import Kind, Place, Use, Value
from torchlint.model.values.placement import is_device_method_call, places_within, receives_move
from torchlint.model.walks import Walk
from torchlint.project.summary import ClassRef

if TYPE_CHECKING:
    from torchlint.model import Model
    from torchlint.model.functions import ProjectCall
    from torchlint.model.values.flow import Values


_MOVED = object()  # a project function of another module moves the module given to it
_READ = object()  # a project function of another module only reads it (`save_checkpoint(model, path)`)


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
    # calls of functions of the project's other modules that call or train it (and do nothing
    # else with it); their summaries say where they place data
    driven_elsewhere: tuple[ProjectCall, ...] = ()


class ModuleFates:
    """What becomes of module values, and what same-file classes are."""

    def __init__(self, values: Values) -> None:
        self.values = values
        self.model = values.model
        self._fates: dict[int, ModuleFate] = {}
        # a class that is its own base, by name: a plain instance, assumed to hold state
        self._class_info = Walk(self._find_class_info, (Kind.INSTANCE, None))
        self._stateful = Walk(self._find_state, True)
        self._plain = Walk(self._find_plain, False)
        self._open: set[int] = set()  # modules whose fate is being found (a wrapper cycle's guard)
        self._self_bindings: dict[cst.ClassDef, list[Binding]] | None = None  # class -> its self.<attr> bindings

    def fate(self, module: Value) -> ModuleFate:
        """Moves, calls and hand-offs of a module value, over every alias of it."""
        key = id(module)
        if key not in self._fates:
            self._open.add(key)
            try:
                self._fates[key] = self._find_fate(module)
            finally:
                self._open.discard(key)
        return self._fates[key]

    def parameter_fate(self, fn: cst.FunctionDef, name: str) -> ModuleFate:
        """What ``fn`` does with its parameter ``name``, read as a module's fate: the parameter's
        reads stand for the module's construction (no class is known: its own methods are
        code the function does not show)."""
        uses = self.parameter_uses(fn, name)
        fate = self._read_uses(uses, None, [], False, {fn}, False)
        # kept in an attribute or a global, it is within reach of code the function does not show
        kept = tuple(
            use
            for use in uses
            if use.how == "bound" and ("." in use.binding.name or isinstance(use.binding.scope, (cst.ClassDef, cst.Module)))
        )
        return replace(fate, handed_off=fate.handed_off + kept) if kept else fate

    def parameter_uses(self, fn: cst.FunctionDef, name: str) -> list[Use]:
        model = self.model
        return [
            use
            for binding in model.bindings(fn, name)
            if binding.how == "param"
            for read in model.reads_of(binding)
            for use in self.values.uses(read, modules.SELF_RETURNING_METHODS)
        ]

    def known_by_use(self) -> list[Value]:
        """The modules the file knows only by how it uses them (moved and called, or run and
        switched between modes; see Values), in source order: held by parameters that callers
        the file does not show fill in, or by names bound to what project functions return.
        Only names the file moves are candidates."""
        model = self.model
        # whether any read of a name receives a move: when none does, none of the reads of its
        # bindings does (they are some of its reads), which are then never sorted by scope
        moved: dict[str, bool] = {}
        found = []
        for binding in model.all_bindings():
            if binding.how not in ("param", "assign"):
                continue
            name = binding.name
            if name not in moved:
                moved[name] = any(receives_move(model, read) for read in model.reads_table.get(name, ()))
            if not moved[name] or not any(receives_move(model, read) for read in model.reads_of(binding)):
                continue
            found.extend(
                value for value in self.values.of_binding(binding)
                if value.kind is Kind.MODULE and value.facts is not None and value.node in (binding.target, binding.source)
            )
        return sorted(set(found), key=lambda value: model.order(value.node))

    def _find_fate(self, module: Value) -> ModuleFate:
        parameter = self.model.parent(module.node) if module.node is not None else None
        if isinstance(parameter, cst.Param):
            # handed in: what the function does with its parameter (code the file does not show
            # may do more before the call, as with any module argument)
            fn = next(a for a in self.model.ancestors(parameter) if isinstance(a, (cst.FunctionDef, cst.Lambda)))
            return self._read_uses(self.parameter_uses(fn, parameter.name.value), None, [], False, {fn}, False)
        moves: list[cst.Call] = []
        accelerator = False
        model = self.model
        functions = model.summaries
        if isinstance(module.node, cst.Call) and any(
            arg.keyword is not None and arg.keyword.value in devices.MODEL_PLACEMENT_KEYWORDS and not _false(arg.value)
            for arg in module.node.args
        ):
            moves.append(module.node)  # `nn.Linear(..., device=d)`, `from_pretrained(..., device_map=...)`
            accelerator |= self.values.placement.move_place(module.node) is not Place.HOST
        elif module.api in modules.TUPLE_MODEL_LOADERS and modules.TUPLE_MODEL_LOADERS[module.api][1]:
            moves.append(module.node)  # `clip.load(name)` picks the accelerator itself
            accelerator = True
        placed_by = self.values.placement.context_placement(module.node)
        if placed_by is not None:
            moves.append(placed_by)  # built under a device context or default device
            accelerator |= self.values.placement.move_place(placed_by) is not Place.HOST
        for base in self._bases(module):
            # a wrapper or adapter built over another module (`PeftModel.from_pretrained(base, path)`)
            # holds the base's parameters: it sits where the base is moved
            base_fate = self.fate(base)
            moves.extend(base_fate.moves)
            accelerator |= base_fate.accelerator
        classdef = model.classes.get(module.api or "")
        init = functions.method(classdef, "__init__") if classdef is not None else None
        # `self.layer = Layer(...).to(device)`; a module a project function built and maybe placed
        self_placed = init is not None and places_within(self.model, init) or module.facts is not None and module.facts.placed
        position = modules.TUPLE_MODEL_LOADERS.get(module.api or "", (None,))[0]
        path = (position,) if position is not None else ()
        uses = self.values.uses(module.node, modules.SELF_RETURNING_METHODS, path)
        return self._read_uses(uses, module.api, moves, accelerator, {model.function_of(module.node)}, self_placed)

    def _read_uses(self, uses, api, moves, accelerator, scopes, self_placed) -> ModuleFate:
        calls: list[cst.Call] = []
        handed: list[Use] = []
        elsewhere: list[ProjectCall] = []
        trained = False
        model = self.model
        functions = model.summaries
        for use in uses:
            scopes.add(model.function_of(use.node))
            context = use.context
            if use.how == "called":
                calls.append(context)
            elif use.how == "method":
                target = self.values.placement.move_target(context)
                if target is not None:
                    moves.append(context)
                    accelerator |= target is Place.DEVICE
                elif use.name == "train":
                    trained = True
                elif use.name == "parameters" or use.name == "named_parameters":
                    trained |= _reaches_optimizer(self.values, context)
                elif use.name not in modules.INERT_METHODS and use.name not in modules.SELF_RETURNING_METHODS:
                    own = functions.method(model.classes[api], use.name) if api in model.classes else None
                    if own is not None and "self" in functions.moved_params(own):
                        moves.append(context)  # a method of its own class that moves it
                        accelerator = True
                    elif own is None and not is_device_method_call(context):
                        handed.append(use)  # a method the file does not show may move or wrap it
            elif use.how == "argument":
                qualified = model.call_name(context)
                if qualified in modules.ALIASING_CALLS or inspects_only(model, context):
                    continue
                if self.values.passes_through(context, use.node):
                    continue  # given back after being read: its further uses are followed
                if qualified in frameworks.BATCH_PLACING_RUNNERS and _is_first_argument(context, use.node):
                    # run where the engine puts the batches; it does not move the model
                    calls.append(context)
                    trained |= frameworks.BATCH_PLACING_RUNNERS[qualified]
                    continue
                targets = functions.targets(context)
                if targets:
                    moved = any(
                        parameter_for(fn, context, _arg_of(model, use.node), offset) in functions.moved_params(fn)
                        for fn, offset in targets
                    )
                    if moved:
                        moves.append(context)
                        accelerator = True
                    continue
                effect = self._project_effect(context, use.node)
                if effect is _READ:
                    continue
                if effect is None:
                    handed.append(use)
                elif effect is _MOVED:
                    moves.append(context)
                    accelerator = True
                else:
                    calls.append(context)
                    elsewhere.append(effect)
            elif use.how == "attribute":
                # `model.fc.to(device)` moves part of it, `model.module` reaches inside a wrapper
                parent = model.parent(use.context)
                if isinstance(parent, cst.Attribute) or isinstance(parent, cst.Call):
                    chain_call = _call_on_chain(model, use.context)
                    if chain_call is not None and self.values.placement.move_target(chain_call) is not None:
                        moves.append(chain_call)
                        accelerator |= self.values.placement.move_target(chain_call) is Place.DEVICE
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
            tuple(sorted(elsewhere, key=lambda project_call: order(project_call.call))),
        )

    def _project_effect(self, call: cst.Call, argument: cst.CSTNode) -> ProjectCall | object | None:
        """What a function of another module of the project does with a module passed to it:
        `_MOVED`, the call (with the function's summary) when it only calls or trains it, `_READ`
        when it only reads it; None when it does something else with it, or the call runs
        nothing of the project."""
        for project_call in self.model.summaries.imported(call):
            summary = project_call.summary
            if any(arg is argument for arg in project_call.arguments(summary.moved)):
                return _MOVED
            if any(arg is argument for arg in project_call.arguments(summary.drives)):
                return project_call
            if any(arg is argument for arg in project_call.arguments(summary.inert)):
                return _READ
        return None

    def _bases(self, module: Value) -> list[Value]:
        """The modules a module is built over: module values among its constructor's arguments."""
        if not isinstance(module.node, cst.Call):
            return []
        return [
            value
            for arg in module.node.args
            if not arg.star
            for value in self.values.of(arg.value)
            if value.kind is Kind.MODULE and value is not module and id(value) not in self._open
        ]

    def dispatched(self, module: Value, seen: frozenset[int] = frozenset()) -> bool:
        """Whether a module is loaded with a device map (`from_pretrained(..., device_map="auto")`),
        or built over one that is: accelerate's hooks then move its inputs to its layers."""
        node = module.node
        if isinstance(node, cst.Call) and any(
            arg.keyword is not None and arg.keyword.value in devices.DISPATCH_KEYWORDS for arg in node.args
        ):
            return True
        seen = seen | {id(module)}
        return any(self.dispatched(base, seen) for base in self._bases(module) if id(base) not in seen)

    def is_submodule(self, module: Value) -> bool:
        """Whether a module is built inside a module class (a submodule: it moves with its
        parent and is called with its parent's inputs)."""
        return any(
            type(ancestor) is cst.ClassDef and self.class_kind(ancestor) is Kind.MODULE
            for ancestor in self.model.ancestors(module.node)
        )

    def class_kind(self, classdef: cst.ClassDef) -> Kind:
        """What instances of a same-file class are: MODULE, LOADER, SAMPLER, DATASET or INSTANCE."""
        return self.class_info(classdef)[0]

    def class_info(self, classdef: cst.ClassDef) -> tuple[Kind, str | None]:
        return self._class_info(classdef)

    def _find_class_info(self, classdef: cst.ClassDef) -> tuple[Kind, str | None]:
        for base in classdef.bases:
            qualified = self.model.qualified_name(base.value)
            if qualified is not None:
                kind = _base_kind(qualified)
                if kind is not None:
                    return (kind, qualified)
            elif isinstance(base.value, cst.Name) and base.value.value in self.model.classes:
                inherited = self.class_info(self.model.classes[base.value.value])
                if inherited[0] is not Kind.INSTANCE:
                    return inherited
                continue
            kind = self._project_base_kind(base.value)
            if kind is not None:
                return (kind, qualified or self.model.module.code_for_node(base.value))
        return (Kind.INSTANCE, None)

    def plain_class(self, classdef: cst.ClassDef) -> bool:
        """Whether a same-file class is known not to be a module: every base is `object` or a
        plain same-file class, and it defines no `forward` (a trainer, not a model)."""
        return self._plain(classdef)

    def _find_plain(self, classdef: cst.ClassDef) -> bool:
        if self.model.summaries.method(classdef, "forward") is not None:
            return False
        for base in classdef.bases:
            value = base.value
            if isinstance(value, cst.Name) and value.value == "object":
                continue
            parent = self.model.classes.get(value.value) if isinstance(value, cst.Name) else None
            if parent is None or not self.plain_class(parent):
                return False
        return True

    def holds_state(self, classdef: cst.ClassDef) -> bool:
        """Whether a same-file module class has parameters or buffers (or may have: a base class
        from elsewhere, an attribute built by code the file does not show)."""
        return self._stateful(classdef)

    def _project_base_kind(self, base: cst.BaseExpression) -> Kind | None:
        """The kind a base class of another module of the project builds, as its constructor's
        summary says (`class JPEGFilter(Processor)`, Processor a torch module of `base.py`)."""
        built = self._project_base_built(base)
        return Kind(built.kind) if built is not None and built.kind in (Kind.MODULE.value, Kind.LOADER.value) else None

    def _stateless_project_base(self, base: cst.BaseExpression) -> bool:
        """Whether a base class is a module class of another module of the project whose
        constructor, by that module's summary, builds no parameters or buffers."""
        built = self._project_base_built(base)
        return built is not None and built.kind == Kind.MODULE.value and not built.trainable

    def _project_base_built(self, base: cst.BaseExpression):
        project = self.model.project
        found = project.lookup(base) if project is not None else None
        init = project.method(found, "__init__") if isinstance(found, ClassRef) else None
        return init.returns if init is not None else None

    def _find_state(self, classdef: cst.ClassDef) -> bool:
        model = self.model
        for base in classdef.bases:
            qualified = model.qualified_name(base.value)
            if self._stateless_project_base(base.value):
                continue  # `class JPEGFilter(Processor)`, Processor a bare nn.Module of the project
            if qualified is not None and qualified not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                if _parameterless_nn_class(qualified):
                    continue  # a loss or an activation made to measure: its own code may add state
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
            module = self.construction(call, qualified)
            return (module is not None and module.trainable) or qualified in tensors.PARAMETER_CLASSES
        if isinstance(call.func, cst.Name):
            classdef = self.model.classes.get(call.func.value)
            return classdef is not None and self.class_kind(classdef) is Kind.MODULE and self.holds_state(classdef)
        return False

    def _attribute_bindings(self, classdef: cst.ClassDef) -> list[Binding]:
        """Bindings of `self.<attr>` keys in a class."""
        if self._self_bindings is None:
            table: dict[cst.ClassDef, list[Binding]] = defaultdict(list)
            for (scope, name), bindings in self.model.bindings_table.items():
                if bindings and type(bindings[0].scope) is cst.ClassDef and name.startswith("self."):
                    table[scope].extend(bindings)
            self._self_bindings = table
        return self._self_bindings.get(classdef, [])

    def places_own_inputs(self, module: Value) -> bool:
        """Whether the module's class (of the file, or of another project module by its summary)
        moves tensors itself outside its constructor (see moves_inputs)."""
        if module.facts is not None:
            return module.facts.moves_inputs
        classdef = self.model.classes.get(module.api or "")
        return classdef is not None and self.moves_inputs(classdef)

    def moves_inputs(self, classdef: cst.ClassDef) -> bool:
        """Whether a same-file module moves tensors itself outside its constructor (its forward
        may place its own inputs)."""
        functions = self.model.summaries
        for statement in classdef.body.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value != "__init__":
                for call in functions.calls_within(statement):
                    if self.values.placement.move_target(call) is not None or is_device_method_call(call):
                        return True
        return False

    def construction(self, call: cst.Call, qualified: str) -> Value | None:
        head, _, last = qualified.rpartition(".")
        if qualified.startswith(modules.NN) and qualified.count(".") == 2:
            if last in modules.NN_NOT_MODULES or not last[:1].isupper():
                return None
            return self.values.make(Kind.MODULE, call, api=qualified, trainable=not _parameterless_nn_class(qualified))
        if qualified in modules.ZOO_FUNCTIONS:
            return self.values.make(Kind.MODULE, call, api=qualified)
        if qualified.startswith(modules.ZOO_NAMESPACES):
            if last in modules.ZOO_NOT_MODELS or last.endswith("_Weights") or last.startswith("_"):
                return None
            return self.values.make(Kind.MODULE, call, api=qualified)
        if last in modules.PRETRAINED_CONSTRUCTORS and head.startswith(modules.PRETRAINED_LIBRARIES):
            class_name = head.rsplit(".", 1)[1]
            if _is_model_class_name(class_name):
                return self.values.make(Kind.MODULE, call, api=qualified)
            return None
        if qualified.startswith(modules.PRETRAINED_LIBRARIES) and _is_model_class_name(last):
            return self.values.make(Kind.MODULE, call, api=qualified)
        return None


def _false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value in ("False", "None")


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
    """Whether a class of a pretrained-model library is a torch model by its name: a model
    marker, no marker of a tokenizer or config, and not a Flax or TensorFlow twin."""
    for prefix in modules.OTHER_FRAMEWORK_PREFIXES:
        if name.startswith(prefix) and name[len(prefix) : len(prefix) + 1].isupper():
            return False
    return any(marker in name for marker in modules.MODEL_CLASS_MARKERS) and not any(
        marker in name for marker in modules.NOT_MODEL_CLASS_MARKERS
    )


def is_zoo_table(model: Model, expr: cst.BaseExpression) -> bool:
    """`torchvision.models.__dict__[name]`."""
    qualified = model.qualified_name(expr)
    return qualified is not None and qualified.endswith(".__dict__") and qualified.startswith(modules.ZOO_NAMESPACES)


def is_zoo_getattr(model: Model, call: cst.Call) -> bool:
    """`getattr(torchvision.models, name)`."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "getattr" and call.args):
        return False
    qualified = model.qualified_name(call.args[0].value)
    return qualified is not None and f"{qualified}.".startswith(modules.ZOO_NAMESPACES)


def _is_first_argument(call: cst.Call, node: cst.CSTNode) -> bool:
    return bool(call.args) and call.args[0].keyword is None and call.args[0].value is node


def _arg_of(model: Model, node: cst.CSTNode) -> cst.Arg | None:
    parent = model.parent(node)
    return parent if isinstance(parent, cst.Arg) else None


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
    built = model.values.project_returns(value)
    if built is not None and built.kind == Kind.MODULE.value and not built.trainable:
        return False  # a module class of another module of the project that holds no parameters or buffers
    func = value.func
    if isinstance(func, cst.Name):
        if func.value in _HARMLESS_BUILTINS:
            return False
        qualified = model.qualified_name(func)
        if qualified is not None and qualified.startswith(_SHOWN_LIBRARIES):
            return False  # `_quadruple(padding)` imported from torch: its layers are known by name
        return not model.bindings_of(func) or qualified is not None
    if isinstance(func, cst.Attribute):
        qualified = model.qualified_name(func)
        return qualified is not None and not qualified.startswith(_SHOWN_LIBRARIES)
    return False


# Libraries whose module classes the model knows by name (torch's layers are state where they are
# built, see _builds_state), so a call of anything else of theirs builds no parameters.
_SHOWN_LIBRARIES = ("torch.", "math.", "numpy.", "np.")


_HARMLESS_BUILTINS = frozenset(
    {"int", "float", "str", "bool", "len", "list", "dict", "tuple", "set", "range", "min", "max", "abs", "round",
     "sum", "sorted", "getattr", "isinstance", "super", "zip", "enumerate", "frozenset", "object", "print"}
)


def _parameterless_nn_class(qualified: str) -> bool:
    """`torch.nn.ReLU`, `torch.nn.CrossEntropyLoss`: a torch.nn class without parameters (a
    loss's optional class weights are left where the caller made them)."""
    head, _, last = qualified.rpartition(".")
    return f"{head}." == modules.NN and (last in modules.NN_PARAMETERLESS or last.endswith("Loss"))
