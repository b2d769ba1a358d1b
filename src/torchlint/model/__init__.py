"""The semantic model of one training script: built once per file, queried by every rule.

One pass over the tree records parents, scopes, imports, bindings, reads, calls and function
definitions. Rules and analyses find the calls they are about by name through one index
(`calls_named`: the imported APIs and the methods they look for) rather than by scanning every
call of the file. Everything else the rules need (value kinds, function summaries, loop structure,
constants) is derived lazily from those tables and cached, so a rule that is not enabled costs
nothing.
"""

from __future__ import annotations

import builtins
import functools
import re
from collections import defaultdict
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model import node_hash  # noqa: F401  (nodes hashed in C from here on)
from torchlint.model.bindings import Binding, Scope, unpack
from torchlint.model.names import ImportTable, dotted
from torchlint.model.tree import EXTRACTORS as _EXTRACTORS
from torchlint.model.tree import LEAVES as _LEAVES
from torchlint.model.tree import children as _children

if TYPE_CHECKING:
    from torchlint.model.functions import Functions
    from torchlint.model.loops import Loops
    from torchlint.model.mode_dependence import ModeDependence
    from torchlint.model.modes import Modes
    from torchlint.model.training import Training
    from torchlint.model.values import Values
    from torchlint.project.index import FileView

__all__ = ["Binding", "Model", "Scope"]

_SCOPES = (cst.Module, cst.FunctionDef, cst.ClassDef, cst.Lambda)
_BUILTINS = frozenset(dir(builtins))
_SCOPE_TYPES = frozenset(_SCOPES)
# Node types compared with `type(node) in ...`: LibCST's concrete node classes have no subclasses,
# and isinstance against them (ABCs) costs a Python-level call whenever it fails.
_BODY_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_BLOCKS = frozenset({cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine, cst.Module})
_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp})
_FUNCTION = frozenset({cst.FunctionDef})
_UNASKED = object()  # what a table of answers gives for a node not asked about yet


# What the one pass fills; nothing changes them after it (see Model's `like`).
_PASS_TABLES = (
    "imports", "_parents", "nodes", "bindings_table", "reads_table", "calls", "_method_calls", "returns",
    "functions", "classes", "declared_global", "_order", "_scopes",
)


class Model:
    def __init__(self, module: cst.Module, path: str = "", like: Model | None = None) -> None:
        """``like``: a model of the same tree whose one pass this one takes over instead of
        walking the tree again (the project index models a module once per summary level);
        every answer derived from the pass is this model's own, since it may depend on the
        project view attached to it."""
        self.module = module
        self.path = path  # the file's path as given to the engine ("" when unknown)
        self.imports = ImportTable()
        # Tables about nodes are keyed by the node itself, hashed in C (see node_hash).
        self._parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.nodes: list[cst.CSTNode] = []  # every node below the module, in source order
        # (scope, key) -> bindings, in source order; key is a name or a dotted attribute chain
        self.bindings_table: dict[tuple[Scope, str], list[Binding]] = defaultdict(list)
        # (scope, key) -> reading Name/Attribute nodes; resolved lazily by bindings_for_read
        self.reads_table: dict[str, list[cst.BaseExpression]] = defaultdict(list)
        self.calls: list[cst.Call] = []
        # the index calls_named reads: method name -> `x.<name>(...)` calls (filled by the pass);
        # qualified name -> calls of that API (filled on first use, see _calls_by_name)
        self._method_calls: dict[str, list[cst.Call]] = defaultdict(list)
        self._api_calls: dict[str, list[cst.Call]] | None = None
        self.returns: list[cst.Return | cst.Yield] = []  # every return and yield, in source order
        self.functions: dict[str, list[cst.FunctionDef]] = defaultdict(list)
        self.classes: dict[str, cst.ClassDef] = {}
        self.declared_global: dict[Scope, set[str]] = defaultdict(set)  # scope -> names
        self._order: dict[cst.CSTNode, int] = {}  # node -> position in the one pass
        self._qualified: dict[cst.CSTNode, str | None] = {}
        self._call_names: dict[cst.Call, str | None] = {}  # call -> qualified_name(call.func)
        self._scopes: dict[cst.CSTNode, Scope] = {}  # node -> its scope (see scope), filled by the pass
        # caches for queries after the build (binding scopes depend on the finished tables)
        self._binding_scopes: dict[tuple[str, Scope], Scope] = {}  # (key, scope) -> scope
        self._reads: dict[tuple[str, Scope], list[cst.BaseExpression]] = {}  # (name, scope) -> reads
        # the answers of bindings_of and reaching per read (rules ask about the same reads many
        # times); like the tables they come from, callers never change them
        self._bindings_of: dict[cst.BaseExpression, list[Binding]] = {}
        self._reaching: tuple[dict[cst.BaseExpression, list[Binding]], ...] = ({}, {})  # by first_pass
        # kinds -> node -> innermost(node, kinds)
        self._innermost: dict[frozenset[type], dict[cst.CSTNode, cst.CSTNode]] = {}
        self._around: dict[Binding, frozenset[cst.CSTNode]] = {}  # binding -> its statement and ancestors
        self._partitioned: set[str] = set()
        # the file's window on its project's other modules (project/index.py), set by the engine
        self.project: FileView | None = None
        # for a notebook's joined cells, the line each code cell starts on (set by the engine)
        self.cell_starts: tuple[int, ...] = ()
        self._built = False
        if like is None:
            _Builder(self).build()
        else:
            vars(self).update({name: getattr(like, name) for name in _PASS_TABLES})
        self._built = True

    # -- derived layers (built on first use) ------------------------------------------------
    @functools.cached_property
    def values(self) -> Values:
        """Value kinds and flows (model/values/)."""
        from torchlint.model.values import Values

        return Values(self)

    @functools.cached_property
    def summaries(self) -> Functions:
        """Same-file call resolution and function summaries (model/functions.py)."""
        from torchlint.model.functions import Functions

        return Functions(self)

    @functools.cached_property
    def loops(self) -> Loops:
        """Batch loops and epoch loops (model/loops.py)."""
        from torchlint.model.loops import Loops

        return Loops(self)

    @functools.cached_property
    def training(self) -> Training:
        """Forward passes and training steps (model/training.py)."""
        from torchlint.model.training import Training

        return Training(self)

    @functools.cached_property
    def modes(self) -> Modes:
        """Which mode (training or evaluation) a module is in where it runs (model/modes.py)."""
        from torchlint.model.modes import Modes

        return Modes(self)

    @functools.cached_property
    def mode_dependence(self) -> ModeDependence:
        """Whether a module's mode matters, and the mode it is built in (model/mode_dependence.py)."""
        from torchlint.model.mode_dependence import ModeDependence

        return ModeDependence(self)

    @functools.cached_property
    def imports_torch(self) -> bool:
        """Whether the file imports anything from torch. Shapes read from what the code does with a
        value of unknown kind (arithmetic after a `.to()`, a `device` parameter) need it: without
        torch in the file, such a value is no tensor or device at all (and the prefilter, which
        looks for torch's name, stays sound)."""
        return any(path == "torch" or path.startswith("torch.") for path in self.imports.bindings.values())

    # -- names -------------------------------------------------------------------------------
    def qualified_name(self, node: cst.BaseExpression) -> str | None:
        """The dotted path of an imported API an expression refers to (`T.optim.Adam` ->
        `torch.optim.Adam`), or None. A name rebound locally to something else still resolves
        through the import: scripts practically never shadow `torch`."""
        # (a sentinel rather than KeyError: the first question about each node would raise)
        found = self._qualified.get(node, _UNASKED)
        if found is not _UNASKED:
            return found
        found = self.imports.resolve(node)
        if found is None and self.imports.stars:
            if self.project is None:
                # not remembered: the project view, attached after the build (whose own
                # set-up asks about the file's calls), may know what a star import binds
                return None
            found = self._star_imported(node)
        self._remember(self._qualified, node, found)
        return found

    def _star_imported(self, node: cst.BaseExpression) -> str | None:
        """The dotted path a name the file never binds has through a star import of a project
        module that imports it (`from models import *` bringing models.py's `torch`)."""
        written = dotted(node)
        if written is None:
            return None
        head, _, rest = written.partition(".")
        if head in self._bound_names:
            return None
        target = self.project.star_imported(head)
        if not isinstance(target, str):
            return None
        return f"{target}.{rest}" if rest else target

    @functools.cached_property
    def _bound_names(self) -> frozenset[str]:
        return frozenset(key for (_, key), bindings in self.bindings_table.items() if bindings)

    def call_name(self, call: cst.Call) -> str | None:
        # every rule scans the file's calls by name: one lookup, kept where qualified_name keeps it
        found = self._call_names.get(call, _UNASKED)
        if found is not _UNASKED:
            return found
        found = self.qualified_name(call.func)
        if call.func in self._qualified:
            self._call_names[call] = found
        return found

    def calls_named(self, apis: str | Collection[str] = (), methods: str | Collection[str] = ()) -> list[cst.Call]:
        """The file's calls, in source order, of the imported APIs named in ``apis`` (qualified
        names, as call_name gives them: `torch.cuda.is_available`) and of the methods named in
        ``methods`` (`x.backward()`, whatever x is). Either may be one name. Like the tables it
        comes from, callers never change the list."""
        found = []
        if apis:
            table = self._calls_by_name()
            found.extend(_lookup(table, apis))
        if methods:
            found.extend(_lookup(self._method_calls, methods))
        if len(found) == 1:
            return found[0]
        if not found:
            return []
        return sorted({call for calls in found for call in calls}, key=self.order)

    def _calls_by_name(self) -> dict[str, list[cst.Call]]:
        table = self._api_calls
        if table is None:
            table = defaultdict(list)
            call_name = self.call_name
            for call in self.calls:
                name = call_name(call)
                if name is not None:
                    table[name].append(call)
            if self.project is not None or not self.imports.stars:
                # a star-imported name resolves only once the project view is attached
                self._api_calls = table
        return table

    def _remember(self, table: dict, node: cst.CSTNode, answer) -> None:
        """Keep an answer about a node of this tree; one about a node built elsewhere (for a fix,
        a suggestion) is not kept: the table would hold it for as long as the model lives."""
        if node in self._order:
            table[node] = answer

    # -- tree navigation ---------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parents = self._parents
        node = parents.get(node)
        while node is not None:
            yield node
            node = parents.get(node)

    def scope(self, node: cst.CSTNode) -> Scope:
        """The function, class or module whose body holds ``node`` (a def's own name,
        decorators and defaults belong to the outer scope); the module for a node outside the
        tree."""
        return self._scopes.get(node, self.module)

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | cst.Module:
        """The innermost function around ``node`` (through classes and lambdas), or the module
        for top-level code."""
        return self.innermost(node, _FUNCTION)

    def innermost(self, node: cst.CSTNode, kinds: frozenset[type]) -> cst.CSTNode:
        """The nearest ancestor of ``node`` of one of ``kinds`` (exact node types), or the
        module when there is none."""
        # Every ancestor passed on the way up has the same answer: kept, it ends later walks
        # from the nodes around (the calls of one statement, the statements of one block).
        known = self._innermost.get(kinds)
        if known is None:
            known = self._innermost[kinds] = {}
        parents = self._parents
        passed = []
        found = self.module
        parent = parents.get(node)
        while parent is not None:
            if type(parent) in kinds:
                found = parent
                break
            answer = known.get(parent)
            if answer is not None:
                found = answer
                break
            passed.append(parent)
            parent = parents.get(parent)
        for parent in passed:
            known[parent] = found
        return found

    def order(self, node: cst.CSTNode) -> int:
        """A source-order key for sorting nodes (their position in the one pass)."""
        return self._order.get(node, -1)

    def statement(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement holding ``node`` (a simple statement, or the compound statement whose
        header holds it)."""
        for ancestor in (node, *self.ancestors(node)):
            if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return ancestor
        return node

    def guards(self, node: cst.CSTNode) -> Iterator[cst.BaseExpression]:
        """The tests of the `if` statements whose body (not their `else`) holds ``node``,
        innermost first: what is true wherever ``node`` runs."""
        child = node
        for ancestor in self.ancestors(node):
            if type(ancestor) is cst.If and child is ancestor.body:
                yield ancestor.test
            child = ancestor

    def in_other_branches(self, one: cst.CSTNode, other: cst.CSTNode) -> bool:
        """Whether ``one`` and ``other`` sit in the two branches of the same `if` (never on one path)."""
        child = one
        for ancestor in self.ancestors(one):
            if isinstance(ancestor, cst.If) and ancestor.orelse is not None:
                opposite = ancestor.orelse if child is ancestor.body else ancestor.body
                if opposite in self.ancestors(other):
                    return True
            child = ancestor
        return False

    # -- bindings and reads ------------------------------------------------------------------
    def binding_scope(self, key: str, at: cst.CSTNode) -> Scope:
        """The scope whose binding of ``key`` a read at ``at`` sees."""
        scope = self.scope(at)
        if self._built:
            cache_key = (key, scope)
            found = self._binding_scopes.get(cache_key)
            if found is None:
                found = self._binding_scopes[cache_key] = self._find_binding_scope(key, scope)
            return found
        return self._find_binding_scope(key, scope)

    def _find_binding_scope(self, key: str, scope: Scope) -> Scope:
        if "." in key:
            if key.startswith("self."):
                for candidate in (scope, *self._outer_scopes(scope)):
                    if isinstance(candidate, cst.ClassDef):
                        return self._binding_class(candidate, key)
            return self.module
        for candidate in (scope, *self._outer_scopes(scope)):
            if type(candidate) is cst.ClassDef and candidate is not scope:
                continue  # class bodies are not enclosing scopes for their methods
            if key in self.declared_global.get(candidate, ()):
                return self.module
            if (candidate, key) in self.bindings_table:
                return candidate
        return self.module

    def _binding_class(self, classdef: cst.ClassDef, key: str, seen: frozenset[str] = frozenset()) -> cst.ClassDef:
        """The class whose methods bind `self.<attr>` for a read in ``classdef``: itself, or when it
        never binds it, the first same-file base class that does (`self.model` set in the base's
        `__init__`, read in the subclass's method)."""
        if (classdef, key) in self.bindings_table:
            return classdef
        for base in classdef.bases:
            name = base.value.value if isinstance(base.value, cst.Name) else None
            parent = self.classes.get(name) if name not in seen else None
            if parent is not None and parent is not classdef:
                found = self._binding_class(parent, key, seen | {name})
                if (found, key) in self.bindings_table:
                    return found
        return classdef

    def _outer_scopes(self, scope: Scope) -> Iterator[Scope]:
        node: cst.CSTNode = scope
        while type(node) is not cst.Module:
            node = self.scope(node)
            yield node

    def bindings_of(self, expr: cst.BaseExpression) -> list[Binding]:
        """Every binding a Name or attribute chain may refer to where it is read."""
        found = self._bindings_of.get(expr)
        if found is None:
            key = dotted(expr)
            found = [] if key is None else self.bindings_table.get((self.binding_scope(key, expr), key), [])
            if self._built:  # the tables are complete
                self._remember(self._bindings_of, expr, found)
        return found

    def reaching(self, read: cst.BaseExpression, first_pass: bool = False) -> list[Binding]:
        """The bindings of a plain name that may reach this read, in structured code: the
        nearest binding that always runs before it (an assignment earlier in the same block or
        an enclosing one, the target of the enclosing `for`, a comprehension's target), plus the
        conditional ones in between and, inside a loop, those later in the loop body (unless
        ``first_pass``: on the first pass of the innermost loop around the read, none of them
        has run yet). Falls back to every binding (bindings_of) when none dominates the read,
        and for a read from a nested function, which sees whatever was bound last."""
        known = self._reaching[bool(first_pass)]
        found = known.get(read)
        if found is None:
            found = self._find_reaching(read, first_pass)
            self._remember(known, read, found)
        return found

    def sole_binding(self, read: cst.BaseExpression) -> Binding | None:
        """The binding that reaches this read (see reaching), when exactly one does: the read
        then holds what that binding gave it."""
        found = self.reaching(read)
        return found[0] if len(found) == 1 else None

    def _find_reaching(self, read: cst.BaseExpression, first_pass: bool) -> list[Binding]:
        candidates = self.bindings_of(read)
        if len(candidates) <= 1 or not isinstance(read, cst.Name):
            return candidates
        scope = candidates[0].scope
        if self.scope(read) is not scope:
            return candidates
        found: list[Binding] = []
        # each candidate with its statement and the statement's ancestors
        enclosing = [(b, self._statement_and_ancestors(b)) for b in candidates]
        node: cst.CSTNode = read
        for ancestor in self.ancestors(read):
            kind = type(ancestor)
            if kind in _BLOCKS:
                siblings = ancestor.body
                index = next((i for i, sibling in enumerate(siblings) if sibling is node), 0)
                for previous in reversed(siblings[:index]):
                    inside = [b for b, around in enclosing if previous in around]
                    found.extend(inside)
                    if any(_always_binds(self, b, previous) for b in inside):
                        return found
            elif kind in _COMPREHENSIONS:
                targets = [b for b, around in enclosing if b.how == "comprehension" and ancestor in around]
                if targets:
                    return targets
            elif kind is cst.For and node is ancestor.body:
                targets = [b for b in candidates if b.statement is ancestor]
                if targets:
                    return found + targets
                if not first_pass:
                    found.extend(b for b, around in enclosing if ancestor.body in around)
                first_pass = False  # an outer loop's later passes run this loop again
            elif kind is cst.While and (node is ancestor.body or node is ancestor.test):
                if not first_pass:
                    found.extend(b for b, around in enclosing if ancestor.body in around)
                first_pass = False
            if ancestor is scope:
                break
            node = ancestor
        params = [b for b in candidates if b.how == "param"]
        return found + params if params else candidates

    def _statement_and_ancestors(self, binding: Binding) -> frozenset[cst.CSTNode]:
        """A binding's statement and the nodes around it: a property of the binding, asked about
        by every read of its name that it may reach."""
        found = self._around.get(binding)
        if found is None:
            statement = binding.statement
            found = self._around[binding] = frozenset((statement, *self.ancestors(statement)))
        return found

    def visible(self, name: str, at: cst.CSTNode) -> bool:
        """Whether code placed at ``at`` may read ``name`` (or the head of a dotted chain such
        as `args.world_size`): it is bound in that scope or an enclosing one, or a builtin. What
        suggested code in a message may use."""
        head = re.match(r"\w*", name).group()
        return bool(self.bindings_table.get((self.binding_scope(head, at), head))) or head in _BUILTINS

    def bindings(self, scope: Scope, key: str) -> list[Binding]:
        return self.bindings_table.get((scope, key), [])

    def reads_of(self, binding: Binding) -> list[cst.BaseExpression]:
        """Every read (Name or attribute chain) that may see ``binding``."""
        name = binding.name
        if name not in self._partitioned:
            # one pass over the name's reads sorts them all by the scope they see
            self._partitioned.add(name)
            for read in self.reads_table.get(name, ()):
                self._reads.setdefault((name, self.binding_scope(name, read)), []).append(read)
        return self._reads.get((name, binding.scope), [])

    def all_bindings(self) -> Iterator[Binding]:
        for bindings in self.bindings_table.values():
            yield from bindings

    def function(self, name: str) -> cst.FunctionDef | None:
        """The same-file function a plain call name refers to, when exactly one is defined."""
        defs = self.functions.get(name, ())
        return defs[0] if len(defs) == 1 else None


def _lookup(table: dict[str, list[cst.Call]], names: str | Collection[str]) -> list[list[cst.Call]]:
    """The non-empty lists of ``table`` under ``names``, going through the smaller of the two."""
    if isinstance(names, str):
        found = table.get(names)
        return [found] if found else []
    if len(names) < len(table):
        return [found for name in names if (found := table.get(name))]
    return [found for name, found in table.items() if found and name in names]


def _always_binds(model: Model, binding: Binding, statement: cst.CSTNode) -> bool:
    """Whether ``statement`` (one statement of a block) binds ``binding`` whenever it runs."""
    if binding.statement is statement:
        return binding.how in ("assign", "annassign", "augassign", "import", "def", "class")
    parent = model.parent(binding.statement)
    if binding.how in ("assign", "annassign", "augassign", "import"):
        return parent is statement
    if binding.how == "with":
        return parent is statement
    return False


def nesting_depth(node: cst.CSTNode) -> int:
    """How many levels deep the tree under ``node`` goes, measured without recursion so that it
    works on trees too deep to walk recursively."""
    deepest = 0
    pending = [(node, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in _children(node))
    return deepest


class _Builder:
    """The one pass. Walks the tree itself and dispatches by node type from a table."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.scope: Scope = model.module  # the scope of the node being recorded
        self.store_targets: set[cst.CSTNode] = set()  # the nodes an assignment binds
        self.not_reads: set[cst.CSTNode] = set()  # names and attributes that read nothing

    def build(self) -> None:
        """Depth first over the nodes that carry meaning, in source order. LibCST's own
        `Module.visit` rebuilds and re-validates every node on the way back up, which costs
        several times the walk itself. Each node's parent and scope are recorded when it is
        pushed: a scope's body is in that scope, everything else in its parent's."""
        model = self.model
        module = model.module
        parents, order, scopes, nodes = model._parents, model._order, model._scopes, model.nodes
        scopes[module] = module
        order[module] = 0
        pending: list[cst.CSTNode] = _children(module)
        pending.reverse()
        for child in pending:
            parents[child] = module
            scopes[child] = module
        handlers, leaves, body_scopes, name_type = _HANDLERS, _LEAVES, _BODY_SCOPES, cst.Name
        extractors = _EXTRACTORS  # tree.children's own table, read here: one call less per node
        store_targets, not_reads, reads = self.store_targets, self.not_reads, model.reads_table
        position = 0
        while pending:
            node = pending.pop()
            position += 1
            order[node] = position
            nodes.append(node)
            kind = type(node)
            if kind is name_type:
                # a third of all nodes, and leaves: a read unless an assignment binds it or it
                # names no value (an attribute, a keyword, a parameter, a def's name, an import)
                if node not in store_targets and node not in not_reads:
                    reads[node.value].append(node)  # a name's key is itself (see dotted)
                continue
            if kind in leaves:
                continue  # no handler is for a leaf
            handler = handlers.get(kind)
            if handler is not None:
                self.scope = scopes[node]
                handler(self, node)
            extract = extractors.get(kind)
            children = extract(node) if extract is not None else _children(node)
            if not children:
                continue
            scope = scopes[node]
            body = node.body if kind in body_scopes else None
            for child in children:
                parents[child] = node
                scopes[child] = node if child is body else scope
            children.reverse()
            pending.extend(children)

    # -- recording ---------------------------------------------------------------------------
    def bind(self, target, statement, how: str, source=None, scope: Scope | None = None) -> None:
        for leaf, path in unpack(target):
            self.store_targets.add(leaf)
            if type(leaf) is cst.StarredElement:
                leaf = leaf.value
            key = dotted(leaf)
            if key is None:
                continue  # subscript targets (`batch[k] = v`) bind no name
            where = scope or self.scope
            binding_scope = self.model.binding_scope(key, statement) if "." in key else where
            if "." not in key and key in self.model.declared_global.get(where, ()):
                binding_scope = self.model.module
            self.model.bindings_table[(binding_scope, key)].append(
                Binding(key, binding_scope, how, leaf, statement, source if path is not None else None, path or ())
            )

    def read(self, node: cst.BaseExpression) -> None:
        key = dotted(node)
        if key is not None:
            self.model.reads_table[key].append(node)


def _assign(builder: _Builder, node: cst.Assign) -> None:
    for target in node.targets:
        builder.bind(target.target, node, "assign", node.value)


def _ann_assign(builder: _Builder, node: cst.AnnAssign) -> None:
    builder.bind(node.target, node, "annassign", node.value)


def _aug_assign(builder: _Builder, node: cst.AugAssign) -> None:
    builder.bind(node.target, node, "augassign", node)
    builder.store_targets.discard(node.target)  # `x += 1` also reads x


def _for(builder: _Builder, node: cst.For) -> None:
    builder.bind(node.target, node, "for", node.iter)


def _comp_for(builder: _Builder, node: cst.CompFor) -> None:
    builder.bind(node.target, node, "comprehension", node.iter)


def _with_item(builder: _Builder, node: cst.WithItem) -> None:
    if node.asname is not None:
        builder.bind(node.asname.name, node, "with", node.item)


def _named_expr(builder: _Builder, node: cst.NamedExpr) -> None:
    builder.bind(node.target, node, "walrus", node.value)


def _function(builder: _Builder, node: cst.FunctionDef) -> None:
    builder.model.functions[node.name.value].append(node)
    builder.bind(node.name, node, "def", None)
    builder.not_reads.add(node.name)
    _parameters(builder, node)


def _parameters(builder: _Builder, owner: cst.FunctionDef | cst.Lambda) -> None:
    """Bind a def's or a lambda's parameters (`*args` and `**kwargs` included) in its own scope."""
    params = owner.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        builder.bind(param.name, param, "param", param.default, scope=owner)
        builder.not_reads.add(param.name)
    for star in (params.star_arg, params.star_kwarg):
        if type(star) is cst.Param:
            builder.bind(star.name, star, "param", None, scope=owner)
            builder.not_reads.add(star.name)


def _class(builder: _Builder, node: cst.ClassDef) -> None:
    builder.model.classes[node.name.value] = node
    builder.bind(node.name, node, "class", None)
    builder.not_reads.add(node.name)


def _import(builder: _Builder, node: cst.Import | cst.ImportFrom) -> None:
    """Binds the imported names. No name or attribute chain of an import reads anything: the
    module's and each alias's chains are marked here, and _attribute passes the mark down each
    chain to its head as the walk reaches it."""
    builder.model.imports.add(node)
    not_reads = builder.not_reads
    if type(node) is cst.ImportFrom and node.module is not None:
        not_reads.add(node.module)
    names = node.names if type(node.names) is not cst.ImportStar else ()
    for alias in names:
        not_reads.add(alias.name)
        if alias.asname is not None:
            not_reads.add(alias.asname.name)
        local = alias.asname.name if alias.asname is not None else alias.name
        if type(node) is cst.Import and alias.asname is None:
            while type(local) is cst.Attribute:
                local = local.value
        if type(local) is cst.Name:
            builder.bind(local, node, "import", None)


def _global(builder: _Builder, node: cst.Global) -> None:
    for item in node.names:
        builder.model.declared_global[builder.scope].add(item.name.value)
        builder.not_reads.add(item.name)


def _call(builder: _Builder, node: cst.Call) -> None:
    builder.model.calls.append(node)
    func = node.func
    if type(func) is cst.Attribute:
        builder.model._method_calls[func.attr.value].append(node)
    for arg in node.args:
        if arg.keyword is not None:
            builder.not_reads.add(arg.keyword)


def _return(builder: _Builder, node: cst.Return | cst.Yield) -> None:
    builder.model.returns.append(node)


def _attribute(builder: _Builder, node: cst.Attribute) -> None:
    builder.not_reads.add(node.attr)
    if node in builder.not_reads:
        builder.not_reads.add(node.value)
        return
    if node in builder.store_targets:
        # `args.device = d` stores args.device but reads `args`
        builder.not_reads.add(node.value)
        _read_chain_head(builder, node.value)
        return
    builder.read(node)


def _read_chain_head(builder: _Builder, node: cst.BaseExpression) -> None:
    if isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) is not None:
        builder.read(node)


_HANDLERS = {
    cst.Assign: _assign,
    cst.AnnAssign: _ann_assign,
    cst.AugAssign: _aug_assign,
    cst.For: _for,
    cst.CompFor: _comp_for,
    cst.WithItem: _with_item,
    cst.NamedExpr: _named_expr,
    cst.FunctionDef: _function,
    cst.Lambda: _parameters,
    cst.ClassDef: _class,
    cst.Import: _import,
    cst.ImportFrom: _import,
    cst.Global: _global,
    cst.Call: _call,
    cst.Return: _return,
    cst.Yield: _return,
    cst.Attribute: _attribute,
}
