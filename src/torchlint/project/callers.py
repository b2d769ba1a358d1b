"""The reverse of the summaries' direction: what the project's other modules pass to a function
of the checked file that the file itself never calls (`def fit(model, loader)` in train.py,
called by main.py).

The callers are the modules of the project (the files under its root) that name the function;
each is read with its own semantic model and its own imports, as if it were checked, and its
calls are resolved as its imports resolve. The answer is all or nothing: a module that names the
function but does not parse, a notebook that names it, an import naming it that does not
resolve, a reference that is no call (the function handed on as a callback), a call that hides
the argument behind `*args`, or a function no module calls, all leave the callers unknown, and a
rule asking stays silent. Every module read is recorded in the checked file's view (`used`), so
the result cache checks the file again when one of its callers changes.

Only functions worth it are looked up, and a project with too many modules naming the function,
or too many modules at all, is not searched: the cost stays bounded.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from torchlint import notebook
from torchlint.model import Model, probabilities
from torchlint.model.functions import passed_argument
from torchlint.model.values import Kind
from torchlint.project import imports, layout
from torchlint.project.summarize import depth_first
from torchlint.project.summary import Place

_MAX_CALLERS = 12  # modules naming the function; more leave its callers unknown
_MAX_READ = 100  # modules spelling a method's name that are parsed to tell whether they call it


@dataclass(frozen=True)
class Argument:
    """What one call in another module passes for a parameter."""

    where: Place  # the call
    probabilities: bool  # a module whose output is a softmax's (its forward ends in one)


def arguments(view, function: cst.FunctionDef, parameter: str) -> tuple[Argument, ...] | None:
    """What every call of ``function`` (a top-level function of the file ``view`` checks that
    the file itself never reads) passes for ``parameter``; None when the callers are unknown."""
    model = view.model
    if not view.reverse or model.scope(function) is not model.module or model.summaries.opaquely_decorated(function):
        return None
    name = function.name.value
    bindings = model.bindings(model.module, name)
    if len(bindings) != 1 or bindings[0].statement is not function or model.reads_of(bindings[0]):
        return None
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    keyword_only = [p.name.value for p in function.params.kwonly_params]
    if parameter not in positional and parameter not in keyword_only:
        return None
    return view.index.callers.arguments(view, name, positional, parameter)


class Callers:
    """The reverse call graph of the projects one process checks, built as rules ask for it from
    the modules' contents, kept while their files are unchanged."""

    def __init__(self, index) -> None:
        self.index = index
        self._modules: dict[Path, tuple[tuple[Path, ...] | None, str]] = {}  # folder -> modules, listing digest
        self._contents: dict[Path, tuple[tuple[int, int], bytes]] = {}

    def arguments(self, view, name: str, positional: list[str], parameter: str) -> tuple[Argument, ...] | None:
        used: dict[str, str] = {}
        found = self._arguments(view, name, positional, parameter, used)
        view.used.update(used)
        return found

    def _arguments(self, view, name: str, positional: list[str], parameter: str, used: dict[str, str]):
        folder = layout.project_root(view.path.parent)
        modules = self._project_modules(folder, used) if folder is not None else None
        if modules is None:
            return None
        word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        naming: list[tuple[Path, bytes]] = []
        for path in modules:
            data = self._read(path) if path != view.path else b""
            if data is None:
                return None
            if name.encode() in data and word.search(data):
                if path.suffix != ".py" or len(naming) == _MAX_CALLERS:
                    return None  # a notebook's cells, or too many modules to read
                naming.append((path, data))
        found: list[Argument] = []
        for path, data in naming:
            caller = self.index.calling_module(path, data)
            if caller is None:
                return None
            used[os.fspath(path)] = caller.digest
            calls = _calls(caller.view, caller.text, view.path, name)
            if calls is None:
                return None
            for call, line in calls:
                passed = passed_argument(call, positional, 0, parameter)
                if passed is None:
                    return None
                found.append(_argument(caller.view.model, passed, Place(os.fspath(path), line)))
            used.update(caller.view.used)
        return tuple(found) or None

    def method_named(self, view, name: str) -> bool:
        """Whether a module of the project other than the checked file may call a method
        ``name``: names it as an attribute of anything but a module it imports (`gan.load()`,
        `self.load`, not `torch.load` or `json.load`), or spells it in a string (`getattr(obj,
        "load")`). Unknown (too many modules, a module that does not parse or cannot be read)
        counts as named, and so does any method of a module in a package: a package is imported,
        by code outside the project too (a library's `Trainer.load()` is for its users). Without
        a project root marker the script's own folder is the project: `python train.py` runs
        from there."""
        if layout.is_package(view.path.parent):
            return True
        folder = layout.project_root(view.path.parent) or view.path.parent
        modules = self._project_modules(folder, view.used)
        if modules is None:
            return True
        spelled = re.compile(rb"\.\s*" + re.escape(name.encode()) + rb"\b|['\"]" + re.escape(name.encode()) + rb"['\"]")
        read = 0
        for path in modules:
            if path == view.path:
                continue
            data = self._read(path)
            if data is None:
                return True
            if not spelled.search(data):
                continue
            read += 1
            if read > _MAX_READ or _names_method(data, path.suffix == ".ipynb", name):
                return True
        return False

    def _read(self, path: Path) -> bytes | None:
        try:
            stat = os.stat(path)
            stamp = (stat.st_mtime_ns, stat.st_size)
            known = self._contents.get(path)
            if known is None or known[0] != stamp:
                known = self._contents[path] = (stamp, path.read_bytes())
        except OSError:
            return None
        return known[1]

    def _project_modules(self, folder: Path, used: dict[str, str]) -> tuple[Path, ...] | None:
        """The project's modules, recorded in ``used`` as a dependency of the answer being
        searched: a module that starts or stops naming what was searched for, or a new module,
        changes the answer (the result cache then checks the file again)."""
        if folder not in self._modules:
            modules = layout.project_modules(folder)
            self._modules[folder] = modules, layout.listing_digest(modules) if modules is not None else ""
        modules, digest = self._modules[folder]
        if modules is not None:
            used[layout.listing_key(folder)] = digest
        return modules


def _names_method(data: bytes, is_notebook: bool, name: str) -> bool:
    """Whether a module's code may call a method ``name`` (see Callers.method_named)."""
    try:
        source = notebook.load(data) if is_notebook else None
        tree = ast.parse(source.text if source is not None else data)
    except (SyntaxError, ValueError, RecursionError, notebook.InvalidNotebook):
        return True
    nodes = list(ast.walk(tree))
    modules = {alias.asname or alias.name.split(".")[0] for node in nodes if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    modules -= {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}  # rebound
    return any(
        isinstance(node, ast.Attribute) and node.attr == name and not (isinstance(node.value, ast.Name) and node.value.id in modules)
        or isinstance(node, ast.Constant) and node.value == name
        for node in nodes
    )


def _calls(caller, text: str, callee: Path, name: str) -> list[tuple[cst.Call, int]] | None:
    """Every call of function ``name`` of module ``callee`` in the module ``caller`` views, with
    its line; None when the module reads the function other than by calling it, or names it
    through an import that does not resolve."""
    model = caller.model
    calls: list[cst.Call] = []
    for binding in model.all_bindings():
        if binding.how != "import":
            continue
        spec = imports.spec_of(binding)
        if spec is None:
            return None
        module = caller.resolver.module(spec.module, spec.level)
        for read in model.reads_of(binding):
            chain, node = [], read
            while True:
                found = caller.definition(spec, chain) if module is not None else None
                parent = model.parent(node)
                if found is not None and found[0].path == os.fspath(callee) and found[1] == name:
                    if not (isinstance(parent, cst.Call) and parent.func is node):
                        return None  # handed on: called from where this module does not show
                    calls.append(parent)
                    break
                if not isinstance(parent, cst.Attribute) or parent.value is not node:
                    if found is None and module is not None and _holds(caller, module, spec, chain, callee):
                        return None  # the module itself handed on: `runners = [loops]`
                    break
                chain.append(parent.attr.value)
                node = parent
            if module is None and name in (spec.name, *chain):
                return None  # it may be this function, through a module torchlint cannot find
    lines = _call_lines(model, text, name)
    if lines is None:
        return None
    return [(call, lines[call]) for call in calls]


def _holds(caller, module: Path, spec: imports.ImportSpec, chain: list[str], callee: Path) -> bool:
    """Whether an import and an attribute chain read from it name the module ``callee``, or a
    package it is in."""
    for name in ([spec.name] if spec.name else []) + chain:
        module = caller.resolver.submodule(module, name)
        if module is None:
            return False
    folder = module.parent if module.name == "__init__.py" else module
    return module == callee or folder in callee.parents
def _call_lines(model: Model, text: str, name: str) -> dict[cst.Call, int] | None:
    """Each call of a callee spelled ``name`` (`name(...)`, `x.name(...)`) -> its line, from
    CPython's parse: both parsers list those calls in the same source order."""
    theirs = [node.lineno for node in depth_first(ast.parse(text)) if isinstance(node, ast.Call) and _spelled(node.func, name)]
    ours = sorted((node for node in model.nodes if isinstance(node, cst.Call) and _spelled_cst(node.func, name)), key=model.order)
    return dict(zip(ours, theirs)) if len(ours) == len(theirs) else None


def _spelled(func: ast.expr, name: str) -> bool:
    return isinstance(func, ast.Name) and func.id == name or isinstance(func, ast.Attribute) and func.attr == name


def _spelled_cst(func: cst.BaseExpression, name: str) -> bool:
    return isinstance(func, cst.Name) and func.value == name or isinstance(func, cst.Attribute) and func.attr.value == name


def _argument(model: Model, passed: cst.BaseExpression, where: Place) -> Argument:
    modules = model.values.all_of(passed, Kind.MODULE)
    softmax = modules is not None and len(modules) == 1 and probabilities.returns_probabilities(model, next(iter(modules)))
    return Argument(where, softmax)
