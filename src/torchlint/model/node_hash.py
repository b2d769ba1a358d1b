"""LibCST nodes hashed and compared at C speed.

A LibCST node equals only itself (`CSTNode.__eq__` is `self is other`, "the behavior of
CPython's AST nodes") and hashes to its id (`CSTNode.__hash__` returns `id(self)`), but both are
Python functions, which `CSTNode.__init_subclass__` copies into every node class. So each lookup
of a node in a dict or set calls a Python function, and the model's tables, which are asked about
nodes many times per node, used to key by `id(node)` instead (itself a builtin call and a new int
per question). `object`'s own `__hash__` and `__eq__` mean the same thing (identity) in C: put in
their place once, at import, the tables key by the node itself. The hash values differ from
LibCST's, which nothing may rely on (they are addresses, different in every run).

Node classes defined later (none in LibCST after import; a plugin's own) get them too:
`__init_subclass__` copies whatever `CSTNode` holds when the class is made.
"""

from __future__ import annotations

from libcst._nodes.base import CSTNode

_LIBCST = {"__hash__": CSTNode.__dict__["__hash__"], "__eq__": CSTNode.__dict__["__eq__"]}
_C_SPEED = {"__hash__": object.__hash__, "__eq__": object.__eq__}


def _install() -> None:
    pending = [CSTNode]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        for name, libcst_slot in _LIBCST.items():
            if cls.__dict__.get(name) is libcst_slot:
                setattr(cls, name, _C_SPEED[name])


_install()
