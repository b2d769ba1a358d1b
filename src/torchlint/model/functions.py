"""Same-file functions: which definition a call runs, where a function is called from, what it
does to its parameters.

Resolution is by name and deliberately modest: a plain call resolves through the name's
bindings to a `def` or `class` of this file; a method call resolves when its receiver is `self`
(or `cls`) in a class that defines the method, or an instance of a same-file class. A function
whose name is read other than as a callee (handed to `mp.spawn`, stored as a callback) or that
carries an unknown decorator may be called from places the file does not show: its call sites
are unknown, and so are its parameters' values.

Summaries (per function, cached):
- `moved_params`: parameters the function places on a device (`p.to(...)`, `p.cuda()`, an item
  assignment `p[k] = ... .to(...)`, or passing `p` on to a function that moves it);
- `epoch_seeded_params`: parameters on which it calls `set_epoch` (`p.set_epoch(e)`,
  `p.sampler.set_epoch(e)`, `p.batch_sampler.sampler.set_epoch(e)`), directly or via a helper;
- `calls_within(node)`: the calls inside a loop or function, and `reachable(node)`: the same-file
  functions those calls may run, transitively.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.knowledge import devices
from torchlint.model.names import dotted
from torchlint.model.values import Kind
from torchlint.model.walks import Walk
from torchlint.project.summary import ClassRef, ClassSummary, FunctionSummary

if TYPE_CHECKING:
    from torchlint.model import Model
    from torchlint.project.index import FileView

# Decorators that do not change who calls a function or with what.
_TRANSPARENT_DECORATORS = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "torch.compile",
        "torch.jit.ignore",
        "torch.jit.unused",
        "functools.wraps",
        "functools.lru_cache",
        "functools.cache",
        "staticmethod",
        "classmethod",
        "abstractmethod",
        "abc.abstractmethod",
        "torch.autocast",
        "torch.cuda.amp.autocast",
        "torch.amp.autocast",
    }
)
# Methods Python calls itself: their call sites are never all visible.
_IMPLICIT = frozenset({"forward", "__call__", "__iter__", "__next__", "__getitem__", "__len__", "__enter__", "__exit__"})
_CONTAINERS = frozenset({cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Module})


class Functions:
    def __init__(self, model: Model) -> None:
        self.model = model
        # "may be called from elsewhere" for a function whose call sites lead back to it
        self._call_sites = Walk(self._find_call_sites, None)
        # a recursive cycle contributes nothing more
        self._moved = Walk(lambda fn: frozenset(self._find_moved(fn)), frozenset())
        self._seeded = Walk(lambda fn: frozenset(self._find_seeded(fn)), frozenset())
        self._reachable: dict[cst.CSTNode, frozenset[cst.FunctionDef]] = {}
        # container -> the calls directly in it, and the containers directly in it (loops,
        # functions, classes, the module; see calls_within)
        self._direct_calls: dict[cst.CSTNode, list[cst.Call]] | None = None
        self._children: dict[cst.CSTNode, list[cst.CSTNode]] = defaultdict(list)
        self._returns: dict[cst.CSTNode, list[cst.BaseExpression]] | None = None
        self._generators: set[cst.CSTNode] = set()
        self._imported: dict[cst.Call, list[ProjectCall]] = {}  # call -> imported(call)
        self._stored: dict[cst.FunctionDef, frozenset[str]] = {}

    # -- what a call runs ---------------------------------------------------------------------
    def targets(self, call: cst.Call) -> list[tuple[cst.FunctionDef, int]]:
        """The same-file functions ``call`` may run, each with the number of leading parameters
        the call does not pass (1 for `self` when a method or a class is called)."""
        func = call.func
        model = self.model
        if type(func) is cst.Name:
            bindings = model.bindings_of(func)
            found = []
            for binding in bindings:
                if binding.how == "def":
                    found.append((binding.statement, _offset(binding.statement, model)))
                elif binding.how == "class":
                    init = self.method(binding.statement, "__init__")
                    if init is not None:
                        found.append((init, 1))
                else:
                    return []
            return found
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name not in self._method_names:
                return []  # no class here defines it: whatever the receiver is, not a same-file method
            owner = self._receiver_class(func.value)
            if owner is not None:
                method = self.method(owner, name)
                if method is not None:
                    return [(method, _offset(method, model))]
        return []

    @functools.cached_property
    def _method_names(self) -> frozenset[str]:
        """The names of the functions defined in the bodies of this file's classes."""
        return frozenset(
            b.name for b in self.model.all_bindings() if b.how == "def" and isinstance(b.scope, cst.ClassDef)
        )

    def method(self, classdef: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        """A method defined in ``classdef`` or in a same-file base class of it."""
        seen = set()
        while classdef is not None and classdef not in seen:
            seen.add(classdef)
            for statement in classdef.body.body:
                if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                    return statement
            classdef = self._same_file_base(classdef)
        return None

    def _same_file_base(self, classdef: cst.ClassDef) -> cst.ClassDef | None:
        for base in classdef.bases:
            if isinstance(base.value, cst.Name):
                found = self.model.classes.get(base.value.value)
                if found is not None:
                    return found
        return None

    def _receiver_class(self, receiver: cst.BaseExpression) -> cst.ClassDef | None:
        """The same-file class whose instance ``receiver`` is, when the file says so."""
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            for ancestor in self.model.ancestors(receiver):
                if isinstance(ancestor, cst.ClassDef):
                    return ancestor
            return None
        values = self.model.values.of(receiver)
        classes = {
            self.model.classes.get(value.api or "") for value in values if value.kind in (Kind.INSTANCE, Kind.MODULE)
        }
        if len(classes) == 1 and len(values) == 1:
            return classes.pop()  # None for a module from a library
        return None

    # -- who calls a function -----------------------------------------------------------------
    def call_sites(self, fn: cst.FunctionDef) -> list[tuple[cst.Call, int]] | None:
        """Every call of ``fn`` in the file with its parameter offset, or None when it may also be
        called from where the file does not show."""
        return self._call_sites(fn)

    def _find_call_sites(self, fn: cst.FunctionDef) -> list[tuple[cst.Call, int]] | None:
        model = self.model
        if self.opaquely_decorated(fn):
            return None
        name = fn.name.value
        owner = model.scope(fn)
        if isinstance(owner, cst.ClassDef):
            return self._method_call_sites(fn, owner, name)
        def_bindings = [b for b in model.bindings(owner, name) if b.statement is fn]
        if not def_bindings:
            return None
        sites = []
        for binding in def_bindings:
            for read in model.reads_of(binding):
                if model.function_of(read) is model.module and binding not in model.reaching(read):
                    continue  # top-level code after another def of the name (a notebook redefines a helper)
                parent = model.parent(read)
                if not (isinstance(parent, cst.Call) and parent.func is read):
                    return None  # handed on: called from elsewhere
                sites.append((parent, 0))
        return sites or None

    def _method_call_sites(self, fn: cst.FunctionDef, owner: cst.ClassDef, name: str):
        model = self.model
        if name in _IMPLICIT or (name.startswith("__") and name != "__init__"):
            return None
        offset = _offset(fn, model)
        sites = []
        if name == "__init__":
            class_name = owner.name.value
            for binding in model.bindings(model.scope(owner), class_name):
                if binding.statement is not owner:
                    continue
                for read in model.reads_of(binding):
                    parent = model.parent(read)
                    if not (isinstance(parent, cst.Call) and parent.func is read):
                        return None  # subclassed, or passed as a factory
                    sites.append((parent, 1))
            return sites or None
        for call in model.calls_named(methods=name):
            receiver_class = self._receiver_class(call.func.value)
            if receiver_class is None:
                # `x.name(...)` on something unknown may be this method: its arguments count, but
                # we cannot tell them apart, so the parameters are unknown.
                if not self._known_other(call.func.value):
                    return None
                continue
            if receiver_class is owner or self.method(receiver_class, name) is fn:
                sites.append((call, offset))
        # A bound method read without a call (`callback=self.step`) is called from elsewhere.
        for read in model.reads_table.get(f"self.{name}", ()):
            parent = model.parent(read)
            if not (isinstance(parent, cst.Call) and parent.func is read):
                return None
        return sites or None

    def _known_other(self, receiver: cst.BaseExpression) -> bool:
        values = self.model.values.of(receiver)
        return bool(values) and all(v.kind not in (Kind.UNKNOWN, Kind.INSTANCE) for v in values)

    def opaquely_decorated(self, fn: cst.FunctionDef) -> bool:
        """Whether a decorator the model does not know wraps ``fn``: it may call it from
        anywhere, or change what it does."""
        return any(self._decorator_name(d) not in _TRANSPARENT_DECORATORS for d in fn.decorators)

    def _decorator_name(self, decorator: cst.Decorator) -> str | None:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        return self.model.qualified_name(expr) or dotted(expr)

    def argument(self, fn: cst.FunctionDef, call: cst.Call, offset: int, param: str) -> cst.BaseExpression | None:
        """The expression ``call`` passes for parameter ``param`` of ``fn`` (its default when the
        call leaves it out), or None when that cannot be read off the call."""
        params = fn.params
        positional = [*params.posonly_params, *params.params]
        passed = passed_argument(call, [p.name.value for p in positional], offset, param)
        if passed is not None or any(arg.star for arg in call.args):
            return passed
        declared = next((p for p in (*positional, *params.kwonly_params) if p.name.value == param), None)
        if declared is not None and declared.default is not None:
            return declared.default
        return None

    def stored_arguments(self, call: cst.Call) -> list[cst.BaseExpression]:
        """What a constructor call gives the parameters its class keeps as attributes
        (`self.encoder = encoder`): a class of the file, read from its `__init__`, or of another
        module of the project, by its summary."""
        found = []
        if type(call.func) is cst.Name:
            for init, offset in self.targets(call):
                if init.name.value == "__init__":
                    found.extend(self.argument(init, call, offset, param) for param in sorted(self._stored_params(init)))
        for project_call in self.imported(call):
            if project_call.constructor is call and project_call.klass is not None:
                found.extend(project_call.arguments({attribute for _, attribute in project_call.klass.stored}))
        return [argument for argument in found if argument is not None]

    def _stored_params(self, init: cst.FunctionDef) -> frozenset[str]:
        """The parameters of a constructor it assigns, as they come, to an attribute of `self`."""
        stored = self._stored.get(init)
        if stored is None:
            names = _param_names(init)
            stored = self._stored[init] = frozenset(
                b.source.value
                for b in self.model.all_bindings()
                if b.how == "assign" and not b.path and b.name.startswith("self.")
                and type(b.source) is cst.Name and b.source.value in names and self.model.function_of(b.statement) is init
            )
        return stored

    # -- calls into the project's other modules (project/index.py) ---------------------------
    def imported(self, call: cst.Call) -> list[ProjectCall]:
        """The project function (of another module) ``call`` runs: a function, a class's
        constructor, or a method called on an instance of a project class; empty when the call
        runs nothing of the project that resolves."""
        project = self.model.project
        if project is None or not self.reaches_project:
            return []
        # asked of one call by several analyses (the uses of each value passed to it, its result)
        found = self._imported.get(call)
        if found is None:
            found = self._imported[call] = self._find_imported(call, project)
        return found

    @functools.cached_property
    def reaches_project(self) -> bool:
        """Whether a name of the file may refer to a function or class of another module of the
        project (with the project view attached): every one is reached through an import of a
        project module, or a star import. Most scripts import none: no callee of theirs is
        looked up."""
        return bool(self.model.imports.stars) or self.model.project.imports_project()

    def _find_imported(self, call: cst.Call, project: FileView) -> list[ProjectCall]:
        found = project.lookup(call.func)
        if isinstance(found, FunctionSummary):
            return [ProjectCall(found, call, found.offset)]
        if isinstance(found, ClassRef):
            init = project.method(found, "__init__")
            return [ProjectCall(init, call, 1, found.klass, init, call)] if init is not None else []
        # a method called on an instance of a project class, or the instance called (`__call__`)
        receiver, name = (call.func.value, call.func.attr.value) if isinstance(call.func, cst.Attribute) else (None, None)
        for receiver, name in ((receiver, name), (call.func, "__call__")):
            instance = self._project_instance(receiver) if receiver is not None else None
            if instance is not None:
                klass, constructor = instance
                method = project.method(klass, name)
                if method is not None:
                    init = project.method(klass, "__init__")
                    return [ProjectCall(method, call, method.offset, klass.klass, init, constructor)]
        return []

    def _project_instance(self, receiver: cst.BaseExpression) -> tuple[ClassRef, cst.Call | None] | None:
        """The project class ``receiver`` is an instance of, with the call that built it: the
        receiver is that call, or a name every binding of which assigns it; or an attribute the
        constructor stores a parameter declared as that class in (`self.stopper`, from
        `stopper: EarlyStopping`), built by code the file does not show (no call)."""
        project = self.model.project
        if type(receiver) is cst.Call:
            found = project.project_class(receiver.func)
            return (found, receiver) if found is not None else None
        if type(receiver) is cst.Attribute:
            declared = self._declared_class(receiver)
            return (declared, None) if declared is not None else None
        if type(receiver) is not cst.Name:
            return None
        bindings = self.model.bindings_of(receiver)
        sources = {b.source for b in bindings if b.how == "assign" and not b.path}
        if len(bindings) != 1 or len(sources) != 1:
            return None
        source = sources.pop()
        if isinstance(source, cst.Call):
            found = project.project_class(source.func)
            return (found, source) if found is not None else None
        return None

    def _declared_class(self, attribute: cst.Attribute) -> ClassRef | None:
        """The project class of the constructor parameter that `self.<attr>`, bound only there,
        stores, as the parameter's annotation names it."""
        bindings = self.model.bindings_of(attribute)
        if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].path:
            return None
        source = bindings[0].source
        init = self.model.function_of(bindings[0].statement)
        if not isinstance(source, cst.Name) or not isinstance(init, cst.FunctionDef) or init.name.value != "__init__":
            return None
        params = init.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == source.value and param.annotation is not None:
                return self.model.project.project_class(param.annotation.annotation)
        return None

    def seeded_arguments(self, call: cst.Call) -> list[cst.BaseExpression]:
        """The arguments ``call`` re-seeds with `set_epoch`, through a same-file or project
        function it runs."""
        found = []
        for target, offset in self.targets(call):
            for param in self.epoch_seeded_params(target):
                argument = self.argument(target, call, offset, param)
                if argument is not None:
                    found.append(argument)
        for project_call in self.imported(call):
            found.extend(project_call.arguments(project_call.summary.seeded))
        return found

    # -- summaries ----------------------------------------------------------------------------
    def moved_params(self, fn: cst.FunctionDef) -> frozenset[str]:
        """Parameters ``fn`` places on a device, directly or through another same-file helper."""
        return self._moved(fn)

    def _find_moved(self, fn: cst.FunctionDef) -> Iterator[str]:
        names = _param_names(fn)
        for call in self.calls_within(fn):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in devices.DEVICE_METHODS:
                head = _head(func.value)
                if head in names:
                    yield head
                    continue
                # `batch[k] = batch[k].to(device)` moves the batch in place
                statement = self.model.parent(call)
                if isinstance(statement, cst.Assign):
                    for target in statement.targets:
                        if isinstance(target.target, cst.Subscript) and _head(target.target) in names:
                            yield _head(target.target)
            for target, offset in self.targets(call):
                moved = self.moved_params(target)
                for param in moved:
                    arg = self.argument(target, call, offset, param)
                    if arg is not None and _head(arg) in names:
                        yield _head(arg)
            for project_call in self.imported(call):
                for arg in project_call.arguments(project_call.summary.moved):
                    if _head(arg) in names:
                        yield _head(arg)

    def epoch_seeded_params(self, fn: cst.FunctionDef) -> frozenset[str]:
        """Parameters on which ``fn`` calls `set_epoch` (on the parameter itself or on its
        `.sampler` / `.batch_sampler.sampler`), directly or through a same-file helper."""
        return self._seeded(fn)

    def _find_seeded(self, fn: cst.FunctionDef) -> Iterator[str]:
        names = _param_names(fn)
        for call in self.calls_within(fn):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
                head = _head(func.value)
                if head in names:
                    yield head
            for arg in self.seeded_arguments(call):
                if _head(arg) in names:
                    yield _head(arg)

    # -- what a function returns ------------------------------------------------------------
    def returns(self, fn: cst.FunctionDef) -> list[cst.BaseExpression] | None:
        """The expressions ``fn`` returns (a bare `return` or falling off the end is None); None
        for a generator, whose calls return no value of theirs."""
        if self._returns is None:
            self._index_returns()
        if fn in self._generators:
            return None
        return self._returns.get(fn, [])

    def _index_returns(self) -> None:
        returns: dict[cst.CSTNode, list[cst.BaseExpression]] = defaultdict(list)
        generators: set[cst.CSTNode] = set()
        for node in self.model.returns:
            owner = self.model.function_of(node)
            if not isinstance(owner, cst.FunctionDef):
                continue
            if isinstance(node, cst.Yield):
                generators.add(owner)
            else:
                returns[owner].append(node.value if node.value is not None else _NONE)
        self._returns, self._generators = returns, generators

    # -- calls inside a node and what they reach ---------------------------------------------
    def calls_within(self, node: cst.CSTNode) -> list[cst.Call]:
        """Every call inside ``node`` (a loop, a function, a class or the module), nested
        functions included."""
        self._index_calls()
        found = list(self._direct_calls.get(node, ()))
        stack = list(self._children.get(node, ()))
        while stack:
            child = stack.pop()
            found.extend(self._direct_calls.get(child, ()))
            stack.extend(self._children.get(child, ()))
        return found

    def _index_calls(self) -> None:
        if self._direct_calls is not None:
            return
        direct: dict[cst.CSTNode, list[cst.Call]] = defaultdict(list)
        known: set[cst.CSTNode] = set()
        model = self.model
        for call in model.calls:
            container = model.innermost(call, _CONTAINERS)
            direct[container].append(call)
            # register the chain of containers up to one already known
            child = container
            while child not in known and type(child) is not cst.Module:
                known.add(child)
                parent = model.innermost(child, _CONTAINERS)
                self._children[parent].append(child)
                child = parent
        self._direct_calls = direct

    def reachable(self, node: cst.CSTNode) -> frozenset[cst.FunctionDef]:
        """Same-file functions that calls inside ``node`` may run, transitively."""
        if node in self._reachable:
            return self._reachable[node]
        self._reachable[node] = frozenset()
        found: set[cst.FunctionDef] = set()
        pending = [node]
        while pending:
            current = pending.pop()
            for call in self.calls_within(current):
                for target, _ in self.targets(call):
                    if target not in found:
                        found.add(target)
                        pending.append(target)
        self._reachable[node] = frozenset(found)
        return self._reachable[node]


_NONE = cst.Name("None")


def passed_argument(call: cst.Call, positional: list[str], offset: int, param: str) -> cst.BaseExpression | None:
    """The expression ``call`` passes for ``param`` (by keyword, or by position among the
    ``positional`` parameters after ``offset`` of them), or None when it is not passed or a
    `*args` / `**kwargs` argument hides which it is."""
    args = call.args
    if any(arg.star for arg in args):
        return None
    for arg in args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    index = positional.index(param) if param in positional else None
    passed = [arg for arg in args if arg.keyword is None]
    if index is not None and 0 <= index - offset < len(passed):
        return passed[index - offset].value
    return None


@dataclass(frozen=True)
class ProjectCall:
    """A call that runs a function of another module of the project, read through its summary."""

    summary: FunctionSummary
    call: cst.Call
    offset: int  # leading parameters the call does not pass (`self`)
    klass: ClassSummary | None = None  # a constructor or method: its class,
    init: FunctionSummary | None = None  # its constructor,
    constructor: cst.Call | None = None  # and the call that built the instance

    def argument(self, source: str) -> cst.BaseExpression | None:
        """What the call gives a parameter of the summary, or an attribute `self.<name>` the
        constructor stored a parameter in."""
        if not source.startswith("self."):
            return passed_argument(self.call, list(self.summary.params), self.offset, source)
        if self.klass is None or self.init is None or self.constructor is None:
            return None
        param = next((param for param, attribute in self.klass.stored if attribute == source), None)
        return passed_argument(self.constructor, list(self.init.params), 1, param) if param else None

    def arguments(self, sources) -> list[cst.BaseExpression]:
        found = (self.argument(source) for source in sorted(sources))
        return [argument for argument in found if argument is not None]


def _offset(fn: cst.FunctionDef, model: Model) -> int:
    """1 for a method called on an instance (its `self`), 0 for a function or staticmethod."""
    if not isinstance(model.scope(fn), cst.ClassDef):
        return 0
    for decorator in fn.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value == "staticmethod":
            return 0
    return 1


def _param_names(fn: cst.FunctionDef) -> set[str]:
    params = fn.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}


def _head(expr: cst.BaseExpression) -> str | None:
    """The name an attribute chain or subscript starts from: `batch["x"].y` -> `batch`."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None
