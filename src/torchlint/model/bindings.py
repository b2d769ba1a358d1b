"""Bindings and reads: where each name (or attribute key such as `self.model`, `args.device`) is
assigned, and where it is read.

The model is flow-insensitive on purpose: a name bound several times has all those bindings, and
a rule that needs "known to be X" asks that every binding agrees. That keeps it a single pass
and makes rules err towards silence.

Keys:
- a plain name is bound in the scope of the function (or module) that assigns it, and a read
  resolves through the enclosing function scopes to the module, as Python does;
- `self.<attr>...` is bound in the class whose method assigns it, so `self.model` set in
  `__init__` is the `self.model` read in `train_step`;
- any other attribute chain (`args.device`, `cfg.train.lr`) is one file-wide key: scripts pass
  their `args` around under the same name.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

Scope = cst.Module | cst.FunctionDef | cst.ClassDef | cst.Lambda


# eq=False: the one pass makes one Binding per bound target node, so equal fields mean the same
# object; comparing by identity keeps hashing out of Python (bindings key the value analysis).
# Not frozen, for the speed of the one pass (see Value): no code assigns to a Binding once made.
@dataclass(eq=False, slots=True)
class Binding:
    """One assignment of ``name`` in ``scope``.

    ``source`` is the expression the value comes from (the right-hand side, the iterable of a
    `for`, the context manager of a `with`, the default of a parameter) and ``path`` the element
    taken from it by unpacking: `a, (b, c) = rhs` binds b with path (1, 0). ``how`` says which
    statement made it: "assign", "annassign", "augassign", "for", "comprehension", "with",
    "walrus", "param", "import", "def", "class", "global-other".
    """

    name: str
    scope: Scope
    how: str
    target: cst.CSTNode
    statement: cst.CSTNode
    source: cst.BaseExpression | None = None
    path: tuple[int, ...] = ()

    @property
    def value(self) -> cst.BaseExpression | None:
        """The bound expression itself when it can be read off the code, else None.

        `a, b = x.to(d), y` gives a the value `x.to(d)`; `a, b = f()` gives None (an element of
        the call's result).
        """
        if self.how not in ("assign", "annassign", "walrus", "param"):
            return None
        node = self.source
        for index in self.path:
            if not isinstance(node, (cst.Tuple, cst.List)):
                return None
            elements = node.elements
            if index >= len(elements) or any(type(e) is cst.StarredElement for e in elements):
                return None
            node = elements[index].value
        return node


_SEQUENCE_TARGETS = frozenset({cst.Tuple, cst.List})


def unpack(target: cst.BaseExpression, path: tuple[int, ...] = ()):
    """Yield (target leaf, path) for an assignment target, through tuples and lists."""
    # exact types: a failing isinstance against a LibCST class (an ABC) costs a Python call
    if type(target) in _SEQUENCE_TARGETS:
        for index, element in enumerate(target.elements):
            value = element.value
            if type(element) is cst.StarredElement:
                yield value, None  # a starred target's value is a list of several elements
                continue
            yield from unpack(value, path + (index,))
    else:
        yield target, path
