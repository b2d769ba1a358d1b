"""Dicts with constant keys: `loaders = {"train": DataLoader(...), "val": ...}` (also
`self.loaders`, and entries assigned later: `loaders["train"] = ...`), read back as
`loaders["train"]` or `loaders.get("train")`.

An entry's values are those of the literal dicts the name is bound to and of every item
assignment with that key. Anything else that may change the dict (an item assigned under a key
the code computes, `update`, `pop`, `del`, handing the dict to a call that is not known to only
read it) adds UNKNOWN, and a name bound to anything but dict literals is not followed at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model.names import dotted
from torchlint.model.values.calling import inspects_only
from torchlint.model.values.kinds import UNKNOWN, Kind, Value

if TYPE_CHECKING:
    from torchlint.model.values.flow import Values

# Methods that read a dict without changing it, and expressions that only read what they hold.
_READING_METHODS = frozenset({"get", "items", "keys", "values", "__getitem__", "__contains__", "copy"})
_READING_PARENTS = (cst.For, cst.CompFor, cst.Comparison, cst.ComparisonTarget, cst.FormattedStringExpression, cst.If)


class Containers:
    def __init__(self, values: Values) -> None:
        self.values = values
        self.model = values.model

    def entry(self, container: cst.BaseExpression, key: cst.BaseExpression) -> frozenset[Value] | None:
        """The values of ``container[key]`` when the container is a dict the file builds with
        constant keys and ``key`` is a constant; None when the model does not follow it."""
        wanted = constant_key(key)
        return self._entries(container, wanted) if wanted is not None else None

    def chosen_module(self, container: cst.BaseExpression) -> frozenset[Value] | None:
        """The modules ``container[key]`` may be when the key is computed and the container is a
        table of built models (`resnets = {"resnet18": resnet18(), ...}`, read back as
        `resnets[name]`): every entry, and every item it is given, is one. None otherwise;
        other tables (loaders by phase) are read by their constant keys (see entry)."""
        found = self._entries(container, None)
        return found if found is not None and all(value.kind is Kind.MODULE for value in found) else None

    def _entries(self, container: cst.BaseExpression, wanted: str | None) -> frozenset[Value] | None:
        """The values under key ``wanted`` (under any key for None) of the dict literals the
        container is bound to, and of the items it is given later."""
        bindings = self._literal_bindings(container)
        if bindings is None:
            return None
        found: set[Value] = set()
        for binding in bindings:
            for element in binding.source.elements:
                if not isinstance(element, cst.DictElement):
                    found.add(UNKNOWN)  # `{**base, ...}`
                elif wanted is None or constant_key(element.key) == wanted:
                    found |= self.values.of(element.value)
            for read in self.model.reads_of(binding):
                found |= self._change_through(read, wanted)
        return frozenset(found or {UNKNOWN})

    def _literal_bindings(self, container: cst.BaseExpression) -> list | None:
        """The bindings of a name (or attribute chain) when every one assigns a dict literal."""
        if not isinstance(container, (cst.Name, cst.Attribute)) or dotted(container) is None:
            return None
        model = self.model
        bindings = model.reaching(container) if isinstance(container, cst.Name) else model.bindings_of(container)
        if not bindings or not all(
            b.how in ("assign", "annassign") and isinstance(b.source, cst.Dict) and not b.path for b in bindings
        ):
            return None
        return bindings

    def _change_through(self, read: cst.BaseExpression, wanted: str | None) -> set[Value]:
        """What a read of the dict may put under ``wanted`` (any key for None): an item
        assignment's value, or UNKNOWN when the read may change the dict in a way the model does
        not follow."""
        model = self.model
        parent = model.parent(read)
        if isinstance(parent, cst.Subscript) and parent.value is read:
            holder = model.parent(parent)
            if isinstance(holder, cst.AssignTarget):
                statement = model.parent(holder)
                index = parent.slice[0].slice if len(parent.slice) == 1 else None
                key = constant_key(index.value) if isinstance(index, cst.Index) else None
                if key is None or len(statement.targets) > 1:
                    return {UNKNOWN}
                return set(self.values.of(statement.value)) if wanted is None or key == wanted else set()
            if isinstance(holder, (cst.AugAssign, cst.Del, cst.Element)):
                return {UNKNOWN}
            return set()  # an entry read
        if isinstance(parent, cst.Attribute) and parent.value is read:
            return set() if parent.attr.value in _READING_METHODS else {UNKNOWN}
        if isinstance(parent, cst.Arg):
            call = model.parent(parent)
            return set() if not parent.star and isinstance(call, cst.Call) and inspects_only(model, call) else {UNKNOWN}
        if isinstance(parent, _READING_PARENTS):
            return set()
        return {UNKNOWN}  # an alias, a container holding it, a return: it may change elsewhere


def constant_key(node: cst.BaseExpression | None) -> str | None:
    """A dict key written as a literal string, or None."""
    if isinstance(node, cst.SimpleString):
        key = node.evaluated_value
        return key if isinstance(key, str) else None
    return None
