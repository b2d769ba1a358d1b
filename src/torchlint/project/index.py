"""The project layer the engine consults: module summaries by file, shared by every file a process
checks, and a per-file view that resolves the file's calls into its project's modules.

Summaries go `LEVELS` imports deep, and deterministically so: the summary a file consults is of
level `LEVELS - 1`, and a summary of level n is computed with the summaries of level n - 1 of the
modules it calls into; level 0 resolves nothing. An import cycle therefore ends like any other
chain, and a module's summary never depends on which file of the run asked for it first (so the
findings do not depend on the order of the files or the number of jobs).

A module parsed for a summary keeps its tree (the modules read last, up to `_TREE_BYTES` of their
source) and the one pass of the first semantic model built over it: the other levels of its
summary, and the engine's own check of the module when it comes later in the run, take both over
instead of parsing and walking the tree again. A checked module keeps its tree and pass likewise,
for the summaries and callers lookups of the files checked after it; a batch run forgets them all
when it ends.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import libcst as cst

from torchlint import prefilter, profile
from torchlint.cache import content_digest
from torchlint.model import Model
from torchlint.model.bindings import Binding
from torchlint.project import callers, imports, layout, syspath
from torchlint.project.outline import outline
from torchlint.project.summarize import Reader, relative_display
from torchlint.project.summary import ClassRef, FunctionFacts, FunctionSummary, ModuleSummary, Place

LEVELS = 2
# The modules whose trees are kept, by the bytes of their source: a tree takes about 70 bytes
# per byte of source, and its models as much again. A byte budget rather than a count keeps many
# small modules and few large ones: a count evicted a library's large modules (diffusers'
# attention_processor.py, 250 kB) before their own check or their next summary, which parsed
# them again.
_TREE_BYTES = 2_000_000
_REEXPORT_HOPS = 8


class _Module:
    """A module this process read: its contents and outline, its tree while it is among the last
    read (see `_TREE_BYTES`), and a reader per summary level."""

    def __init__(self, path: Path, digest: str, text: str, tree: cst.Module | None) -> None:
        self.path, self.digest, self.text, self.tree = path, digest, text, tree
        self.model: Model | None = None  # the first model of the tree, whose one pass the others share
        self.readers: dict[int, tuple[Reader, FileView | None]] = {}
        self.view: FileView | None = None  # as its own check sees it, when it calls a checked file
        self.handed_over = False

    def new_model(self, path: str = "") -> Model:
        """A semantic model of the tree, of its own but for the one pass (see Model's `like`)."""
        model = Model(self.tree, path, like=self.model)
        if self.model is None:
            self.model = model
        return model


class Index:
    """Outlines and function summaries of the project modules one process has read."""

    def __init__(self, store=None) -> None:
        self.store = store  # the result cache (cache.Cache), which keeps summaries too, or None
        self._outlines: dict[str, tuple[tuple[int, int], ModuleSummary | None]] = {}
        self._sys_path_names: dict[str, tuple[tuple[int, int], tuple[str, bool] | None]] = {}
        # module path -> (the digest of the contents read, (level, qualname) -> facts): only the
        # latest contents of each module are kept, so a long editor session saving a module again
        # and again does not pile up the facts of every version
        self._functions: dict[str, tuple[str, dict[tuple[int, str], FunctionSummary | None]]] = {}
        self._modules: OrderedDict[str, _Module] = OrderedDict()
        self._kept_bytes = 0  # the source bytes of the modules in _modules
        self._added_folders: dict[str, tuple[str, tuple[Path, ...]]] = {}  # path -> (digest, folders)
        self._summarizing = 0  # function summaries being read (one asks for those it calls)
        self.callers = callers.Callers(self)

    def take_tree(self, path: str, digest: str) -> tuple[cst.Module, Model | None] | None:
        """The tree parsed from exactly these contents for a summary, handed over once for the
        module's own check (no two checks share a tree: a fix must never meet a node of another
        check; summary models never hand out nodes), with a model of it whose one pass the
        check's model can take over, when one was built."""
        module = self._modules.get(path)
        if module is None or module.digest != digest or module.tree is None or module.handed_over:
            return None
        module.handed_over = True
        return module.tree, module.model

    def keep_tree(self, model: Model, digest: str, text: str) -> None:
        """Keep the tree a check parsed and its model's one pass, for the summaries and callers
        of the module that later files of this process read (the tree is never handed to
        another check)."""
        path = os.fspath(model.project.path)
        if path not in self._modules or self._modules[path].digest != digest:
            module = _Module(Path(path), digest, text, model.module)
            module.handed_over = True
            # a model of its own: the check's is released once the check is done
            module.model = Model(model.module, like=model)
            self._keep(module)
        else:
            self._modules.move_to_end(path)

    def forget_trees(self) -> None:
        """Drop every kept tree (a batch run is over: no later file of it needs one)."""
        self._modules.clear()
        self._kept_bytes = 0

    # -- outlines -----------------------------------------------------------------------------
    def outline(self, path: Path) -> ModuleSummary | None:
        """What the module file at ``path`` defines and imports; None for a namespace folder,
        an unreadable file, or one that does not parse (unknown code)."""
        return _by_stamp(self._outlines, path, self._read_outline)

    def names_sys_path(self, path: Path) -> tuple[str, bool] | None:
        """The digest of the module file at ``path`` and whether it names `sys.path` (as its
        outline would say), without parsing it: a file's imports of its project are asked about
        this first, and most of the modules imported are never asked about anything else; None
        for an unreadable or undecodable file."""
        return _by_stamp(self._sys_path_names, path, _read_sys_path_named)

    def _read_outline(self, path: Path) -> ModuleSummary | None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        digest = content_digest(data)
        text = _decoded(data)
        return outline(text, os.fspath(path), digest) if text is not None else None

    def _module(self, path: Path, text: str, digest: str) -> _Module | None:
        from torchlint import engine

        key = os.fspath(path)
        module = self._modules.get(key)
        if module is not None and module.digest == digest:
            self._modules.move_to_end(key)
            return module
        tree = engine.parse(text, key)
        if not isinstance(tree, cst.Module):
            return None
        module = _Module(path, digest, text, tree)
        self._keep(module)
        return module

    def _keep(self, module: _Module) -> None:
        """Keep ``module`` (replacing one of the same path), then forget modules while the kept
        ones are over `_TREE_BYTES`: first those no summary or callers lookup has read (a checked
        module no file checked since imports), read longest ago, then the others. Plain recency evicted a
        library's much-imported modules (diffusers' attention.py, resnet.py) under the trees of
        checked modules nothing imports, and parsed them again."""
        key = os.fspath(module.path)
        replaced = self._modules.pop(key, None)
        self._kept_bytes += len(module.text) - (len(replaced.text) if replaced is not None else 0)
        self._modules[key] = module
        while self._kept_bytes > _TREE_BYTES and len(self._modules) > 1:
            unread = next(
                (path for path, kept in self._modules.items() if not kept.readers and kept.view is None and kept is not module),
                None,
            )
            forgotten = self._modules.pop(unread) if unread is not None else self._modules.popitem(last=False)[1]
            self._kept_bytes -= len(forgotten.text)

    def _reader(self, module: _Module, level: int, roots: tuple[Path, ...]):
        found = module.readers.get(level)
        if found is None:
            model = module.new_model()
            view = FileView(self, module.path, model, level - 1, roots) if level > 0 else None
            model.project = view
            found = module.readers[level] = (Reader(model, module.text, os.fspath(module.path)), view)
        return found

    def added_folders(self, summary: ModuleSummary) -> tuple[Path, ...]:
        """The folders a module adds to sys.path with literal paths (project/syspath.py)."""
        known = self._added_folders.get(summary.path)
        if known is None or known[0] != summary.digest:
            text = _read(Path(summary.path), summary.digest)
            module = self._module(Path(summary.path), text, summary.digest) if text is not None else None
            folders = syspath.added_folders(module.new_model(summary.path), Path(summary.path)) if module else ()
            known = self._added_folders[summary.path] = (summary.digest, folders)
        return known[1]

    def calling_module(self, path: Path, data: bytes) -> _Module | None:
        """A module that calls a function of a checked file, with the view its own check has
        (its model, its imports resolved at the same level), which looks up no callers itself;
        None when it does not decode or parse."""
        text = _decoded(data)
        module = self._module(path, text, content_digest(data)) if text is not None else None
        if module is not None and module.view is None:
            model = module.new_model()
            module.view = model.project = FileView(self, path, model, LEVELS - 1)
        return module

    # -- function summaries -------------------------------------------------------------------
    def function(self, summary: ModuleSummary, qualname: str, level: int, roots) -> FunctionSummary | None:
        """The facts of function (or method `Class.name`) ``qualname`` of the module ``summary``
        outlines, read with the summaries of level ``level - 1`` of what it calls."""
        digest, known = self._functions.get(summary.path, (None, None))
        if digest != summary.digest:
            known = {}
            self._functions[summary.path] = (summary.digest, known)
        key = (level, qualname)
        if key in known:
            return known[key]
        found = self.store.load_function(summary.path, summary.digest, level, qualname) if self.store else None
        if found is None:
            found = self._read_function(summary, qualname, level, roots)
            if found is not None and self.store is not None:
                self.store.store_function(summary.path, summary.digest, level, qualname, found)
        known[key] = found
        return found

    def _read_function(self, summary: ModuleSummary, qualname: str, level: int, roots) -> FunctionSummary | None:
        found = self._reading(summary, qualname, level, roots, Reader.function)
        if found is None:
            return None

        def read_fact(function: FunctionSummary, name: str):
            fact = self._reading(summary, qualname, level, roots, lambda reader, fn, _: reader.fact(fn, name))
            if fact is None:  # the module changed since, or its analysis ran out of stack
                return getattr(FunctionFacts(), name), function.depends_on
            return fact[0], _merged_dependencies(function.depends_on, fact[1])

        function, view = found
        if function is None:
            return None
        return replace(function, depends_on=_merged_dependencies((), view), read_fact=read_fact)

    def _reading(self, summary: ModuleSummary, qualname: str, level: int, roots, read):
        """``read(reader, definition, qualname)`` on the reader of the module's summaries of
        ``level``, with the view it resolved imports with (None at level 0); None when the module
        no longer has those contents, may have no facts, does not parse, or runs out of stack."""
        path = Path(summary.path)
        text = _read(path, summary.digest)
        if text is None or not _may_have_facts(text):
            return None
        module = self._module(path, text, summary.digest)
        if module is None:
            return None
        # timed once, at the outermost summary: the inner ones run within it
        with profile.timer(profile.SUMMARIES) if not self._summarizing else nullcontext():
            self._summarizing += 1
            try:
                reader, view = self._reader(module, level, roots)
                definition = reader.definition(qualname)
                return (read(reader, definition, qualname) if definition is not None else None), view
            except RecursionError:
                return None
            finally:
                self._summarizing -= 1


def _merged_dependencies(known: tuple[tuple[str, str], ...], view: FileView | None) -> tuple[tuple[str, str], ...]:
    """``known`` with every module ``view`` consulted so far."""
    return tuple(sorted({**dict(known), **view.used}.items())) if view is not None else known


def _by_stamp(known: dict, path: Path, read):
    """``read(path)``, kept in ``known`` while the file's modification time and size stay."""
    key = os.fspath(path)
    try:
        stat = os.stat(key)
    except OSError:
        return None
    stamp = (stat.st_mtime_ns, stat.st_size)
    found = known.get(key)
    if found is not None and found[0] == stamp:
        return found[1]
    answer = read(path)
    known[key] = (stamp, answer)
    return answer


def _read_sys_path_named(path: Path) -> tuple[str, bool] | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    text = _decoded(data)
    return (content_digest(data), "sys.path" in text) if text is not None else None


def _read(path: Path, digest: str) -> str | None:
    """The text of the module at ``path`` if its contents are still those of ``digest``."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return _decoded(data) if content_digest(data) == digest else None


def _decoded(data: bytes) -> str | None:
    from torchlint.source import UndecodableSource, decode

    try:
        return decode(data).text
    except UndecodableSource:
        return None


def _may_have_facts(text: str) -> bool:
    """Whether a function of this module can have a fact worth its parse: one that moves,
    re-seeds or iterates a value of a kind the model knows needs the words the prefilter looks
    for (or `set_epoch` itself). Without them its functions stay unknown code, as before
    project-wide analysis."""
    return "set_epoch" in text or prefilter.can_fire(text, prefilter.PREFILTERED)


class FileView:
    """One file's window on its project: what its imported names resolve to, and every module
    summary consulted (with its digest) for the result cache."""

    def __init__(
        self, index: Index, path: Path, model, level: int, roots: tuple[Path, ...] | None = None, reverse: bool = False
    ) -> None:
        self.index = index
        self.reverse = reverse  # whether the callers of the file's functions are looked up
        self.path = path
        self.model = model
        self.level = level
        added = syspath.added_folders(model, path)
        self.roots = layout.search_roots(path, added) if roots is None else tuple(dict.fromkeys((*added, *roots)))
        root = layout.project_root(path.parent)
        self.display_root = os.fspath(root) if root is not None else os.fspath(path.parent)
        self.resolver = imports.Resolver(path, self.roots)
        self._used: dict[str, str] = {}  # module path -> digest, transitively (see `used`)
        # consulted function summaries with facts still to read, which may consult more modules
        self._pending: dict[int, FunctionSummary] = {}
        if roots is None:
            by_imports = self._added_by_imports()
            if by_imports:
                self.roots = layout.search_roots(path, (*added, *by_imports))
                self.resolver = imports.Resolver(path, self.roots)
        # answers about the file's expressions (keyed by the node: hashed in C, see model/node_hash)
        self._callees: dict[cst.BaseExpression, list] = {}
        self._definitions: dict[cst.BaseExpression, tuple[ModuleSummary, str] | None] = {}
        self._import_modules: dict[Binding, tuple[imports.ImportSpec, Path] | None] = {}  # binding -> its spec, module
        self._arguments: dict[tuple[cst.FunctionDef, str], tuple | None] = {}
        self._stars: dict[str, str | tuple[ModuleSummary, str] | None] = {}
        self._methods: dict[str, bool] = {}

    @classmethod
    def for_file(cls, index: Index, path: str, model) -> FileView:
        return cls(index, Path(os.path.abspath(path)), model, LEVELS - 1, reverse=True)

    def _added_by_imports(self) -> tuple[Path, ...]:
        """The folders the project modules the file imports put on sys.path when imported (`import
        _init_paths` before `from core.trainer import do_train`), in import order."""
        found: list[Path] = []
        for binding in self.model.all_bindings():
            spec = imports.spec_of(binding) if binding.how == "import" else None
            module = self.resolver.module(spec.module, spec.level) if spec is not None else None
            named = self.index.names_sys_path(module) if module is not None and not module.is_dir() else None
            if named is None:
                continue
            # consulted even when it does not parse: an edit that mends it may make it add a folder
            self._used[os.fspath(module)] = named[0]
            summary = self.module_summary(module) if named[1] else None
            if summary is not None and summary.names_sys_path:
                found.extend(self.index.added_folders(summary))
        return tuple(found)

    def imports_project(self) -> bool:
        """Whether the file imports a module of its project (it may call a function of one)."""
        return any(
            binding.how == "import" and (spec := imports.spec_of(binding)) is not None
            and self.resolver.module(spec.module, spec.level) is not None
            for binding in self.model.all_bindings()
        )

    def where(self, place: Place) -> str:
        """A place of the project as messages name it: `engine.py:42`, relative to the root."""
        return f"{relative_display(place.path, self.display_root)}:{place.line}"

    def arguments(self, function: cst.FunctionDef, parameter: str):
        """What the calls of ``function`` in the project's other modules pass for ``parameter``
        (project/callers.py), or None when its callers are unknown."""
        key = (function, parameter)
        if key not in self._arguments:
            self._arguments[key] = callers.arguments(self, function, parameter)
        return self._arguments[key]

    def method_named(self, name: str) -> bool:
        """Whether another module of the project may call a method ``name`` (callers.py);
        always True when callers are not looked up for this file."""
        if not self.reverse:
            return True
        if name not in self._methods:
            self._methods[name] = self.index.callers.method_named(self, name)
        return self._methods[name]

    # -- modules ------------------------------------------------------------------------------
    def module_summary(self, path: Path) -> ModuleSummary | None:
        if path.is_dir():
            return None
        summary = self.index.outline(path)
        if summary is not None:
            self._used[summary.path] = summary.digest
        return summary

    def function(self, summary: ModuleSummary, qualname: str) -> FunctionSummary | None:
        found = self.index.function(summary, qualname, self.level, self.roots)
        if found is not None:
            self._used.update(found.depends_on)
            if not found.facts_read:
                self._pending[id(found)] = found
        return found

    @property
    def used(self) -> dict[str, str]:
        """Every module consulted (path -> digest), transitively: also those the facts of a
        consulted function were read with after its lookup."""
        for key, found in list(self._pending.items()):
            self._used.update(found.depends_on)
            if found.facts_read:
                del self._pending[key]
        return self._used

    def method(self, ref: ClassRef, name: str) -> FunctionSummary | None:
        """The summary of method ``name`` of a project class, defined in the class itself
        (inherited methods are unknown)."""
        return self.function(ref.module, f"{ref.klass.name}.{name}") if name in ref.klass.methods else None

    def lookup(self, expr: cst.BaseExpression) -> FunctionSummary | ClassRef | None:
        """The project function, or class (with the module it is in), a name or attribute chain
        read in the file refers to, when every binding of its head is an import that resolves."""
        if expr in self._callees:
            return self._callees[expr]
        found = self._defined(expr)
        if found is not None:
            summary, name = found
            found = self.function(summary, name) if name in summary.functions else ClassRef(summary, summary.classes[name])
        self._callees[expr] = found
        return found

    def project_class(self, expr: cst.BaseExpression) -> ClassRef | None:
        """The project class ``expr`` refers to, as `lookup` finds it, without reading the facts
        of a function it refers to instead (a function's summary analyses its module: a question
        about classes must not pay for that on every call of the file)."""
        found = self._defined(expr)
        if found is None or found[1] in found[0].functions:
            return None
        summary, name = found
        return ClassRef(summary, summary.classes[name])

    def _defined(self, expr: cst.BaseExpression) -> tuple[ModuleSummary, str] | None:
        """The module, and the name of the top-level function or class in it, ``expr`` refers to."""
        if expr not in self._definitions:
            self._definitions[expr] = self._find_definition(expr)
        return self._definitions[expr]

    def _find_definition(self, expr: cst.BaseExpression) -> tuple[ModuleSummary, str] | None:
        chain: list[str] = []
        node = expr
        while type(node) is cst.Attribute:
            chain.append(node.attr.value)
            node = node.value
        if type(node) is not cst.Name:
            return None
        chain.reverse()
        bindings = self.model.bindings_of(node)
        if not bindings:
            star = self.star_imported(node.value)
            return star if isinstance(star, tuple) and not chain else None
        if any(b.how != "import" for b in bindings):
            return None
        return _one((self._imported_definition(binding, chain) for binding in bindings))

    def _imported_definition(self, binding: Binding, chain: list[str]) -> tuple[ModuleSummary, str] | None:
        """definition() of an import binding's spec: the spec and the module it resolves to are
        found once per binding (every call through `torch.` or `nn.` asks about the same one)."""
        if binding not in self._import_modules:
            spec = imports.spec_of(binding)
            module = self.resolver.module(spec.module, spec.level) if spec is not None else None
            self._import_modules[binding] = (spec, module) if module is not None else None
        found = self._import_modules[binding]
        return self._definition(found[1], found[0], chain, 0) if found is not None else None

    def library_bases(self, ref: ClassRef, hops: int = 0) -> frozenset[str]:
        """The dotted names of the outside classes a project class derives from (`NeuralNet`
        imported from skorch: `skorch.NeuralNet`), also through the project classes it derives
        from; a base the outline cannot follow adds nothing."""
        found: set[str] = set()
        resolver = imports.Resolver(Path(ref.module.path), self.roots)
        for base in ref.klass.bases:
            head, _, rest = base.partition(".")
            if head in ref.module.classes and not rest:
                bases = [(ref.module, head)]
            else:
                bases = []
                for spec in ref.module.imports.get(head, ()):
                    imported = self._imported(resolver, spec, hops)
                    if isinstance(imported, str):
                        found.add(f"{imported}.{rest}" if rest else imported)
                    elif isinstance(imported, tuple) and not rest:
                        bases.append(imported)
            for summary, name in bases:
                if name in summary.classes and hops < _REEXPORT_HOPS:
                    found |= self.library_bases(ClassRef(summary, summary.classes[name]), hops + 1)
        return frozenset(found)

    def definition(self, spec: imports.ImportSpec | None, chain: list[str]) -> tuple[ModuleSummary, str] | None:
        """The module and the top-level function or class of it that an import of the file, and
        an attribute chain read from it, name (without reading the function's facts)."""
        if spec is None:
            return None
        module = self.resolver.module(spec.module, spec.level)
        return self._definition(module, spec, chain, 0) if module is not None else None

    def _definition(self, module: Path, spec: imports.ImportSpec, chain: list[str], hops: int):
        """What ``names`` (an attribute chain) are inside ``module``: a function, a class, or
        (for a package) a submodule followed further."""
        names = ([spec.name] if spec.name else []) + chain
        if not names:
            return None
        name, rest = names[0], names[1:]
        summary = self.module_summary(module)
        if summary is not None:
            if name in summary.functions or name in summary.classes:
                # `Class.method(obj)` is called unbound, with its own `self`: not followed
                return (summary, name) if not rest else None
            if name in summary.imports:
                if hops >= _REEXPORT_HOPS:
                    return None
                resolver = imports.Resolver(Path(summary.path), self.roots)
                return _one(self._reexported(resolver, reexport, rest, hops + 1) for reexport in summary.imports[name])
            if name in summary.aliases and hops < _REEXPORT_HOPS:
                return self._definition(module, imports.ImportSpec(""), [summary.aliases[name], *rest], hops + 1)
            if name in summary.other_names:
                return None
            if summary.stars and hops < _REEXPORT_HOPS:
                # a package's `from .models import *` makes `package.Model` the models' class
                found = self._bound(summary, name, hops)
                if isinstance(found, tuple):
                    return found if not rest else None
        submodule = self.resolver.submodule(module, name)
        return self._definition(submodule, imports.ImportSpec(""), rest, hops) if submodule is not None else None

    def star_imported(self, name: str) -> str | tuple[ModuleSummary, str] | None:
        """What ``name``, which no statement of the file binds, stands for through the file's star
        imports of its project's modules (`from models import *`, where models.py has `import
        torch`): the dotted path of an outside API, or a top-level function or class of the
        project; None when no star import binds it or the model cannot tell which value it has (a
        module with `__all__`, a name bound otherwise, two star imports binding it differently)."""
        if name.startswith("_") or not self.model.imports.stars:
            return None
        if name not in self._stars:
            found = _merged(self._exported(self.resolver, spec, name, 0) for spec in self.model.imports.stars)
            self._stars[name] = None if found is _UNKNOWN else found
        return self._stars[name]

    def _exported(self, resolver: imports.Resolver, star: imports.ImportSpec, name: str, hops: int):
        """What ``name`` is in the project module a star import names: None when it binds no such
        name, _UNKNOWN when it binds one the model cannot follow."""
        module = resolver.module(star.module, star.level)
        if module is None or hops >= _REEXPORT_HOPS:
            return _UNKNOWN  # an outside module's public names are not known to the model
        summary = self.module_summary(module)
        if summary is None or ("__all__" in summary.other_names and summary.exports is None):
            return _UNKNOWN
        if summary.exports is not None and name not in summary.exports:
            return None
        return self._bound(summary, name, hops)

    def _bound(self, summary: ModuleSummary, name: str, hops: int):
        """What ``name`` is at the top level of a project module (bound there, or by its star
        imports): None when nothing binds it, _UNKNOWN when the model cannot follow its value."""
        if name in summary.functions or name in summary.classes:
            return summary, name
        inner = imports.Resolver(Path(summary.path), self.roots)
        if name in summary.imports:
            return _merged(self._imported(inner, spec, hops + 1) for spec in summary.imports[name])
        if name in summary.aliases and hops < _REEXPORT_HOPS:
            return self._bound(summary, summary.aliases[name], hops + 1) or _UNKNOWN
        if name in summary.other_names or name in summary.aliases:
            return _UNKNOWN
        return _merged(self._exported(inner, spec, name, hops + 1) for spec in summary.stars)

    def _imported(self, resolver: imports.Resolver, spec: imports.ImportSpec, hops: int):
        if resolver.module(spec.module, spec.level) is not None:
            return self._reexported(resolver, spec, [], hops) or _UNKNOWN
        if spec.level:
            return _UNKNOWN
        return f"{spec.module}.{spec.name}" if spec.name else spec.module

    def _reexported(self, resolver: imports.Resolver, spec: imports.ImportSpec, chain: list[str], hops: int):
        module = resolver.module(spec.module, spec.level)
        return self._definition(module, spec, chain, hops) if module is not None else None


_UNKNOWN = object()  # a name bound to a value the model cannot follow


def _merged(found):
    """The one value the modules that bind a name agree on (those that do not bind it say None);
    _UNKNOWN when one of them cannot be followed or two disagree."""
    result = None
    for item in found:
        if item is None:
            continue
        if item is _UNKNOWN or (result is not None and not _same(item, result)):
            return _UNKNOWN
        result = item
    return result


def _same(one, other) -> bool:
    if isinstance(one, tuple) and isinstance(other, tuple):
        return one[0] is other[0] and one[1] == other[1]
    return one == other


def _one(found):
    """The one definition every alternative resolves to, else None."""
    result = None
    for item in found:
        if item is None or (result is not None and (item[0] is not result[0] or item[1] != result[1])):
            return None
        result = item
    return result


_SHARED: Index | None = None


def shared() -> Index:
    """The index of this process: every file it checks shares the summaries it computes."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Index()
    return _SHARED
