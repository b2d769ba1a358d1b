"""Throwaway rules with fixes, so the fix machinery is tested independently of the real rules.

- TL991 `bare-to`: `<name>.to(...)` / `.cuda()` as a statement; safe fix `x = x.to(...)`.
- TL992 `loop-no-marker`: a `for <v> in range(...)` loop without `marker(<v>)` in its body;
  unsafe fix that inserts `marker(<v>)` first in the loop.
- TL993 `stubborn`: `stubborn()` calls; its fix renames the call to itself (never removes it).
- TL994 `breaker`: `breaker()` calls; its fix produces code that does not parse.
- TL995 `needs-import`: `needs_np()` calls; safe fix `np.asarray()` that needs `import numpy as np`.
- TL996 `exploder`: never fires itself but crashes on any file that contains `boom`;
  `make_boom()` calls (TL997) are fixed into `boom()`.
- TL998 `counter`: `count<N>()` is fixed into `count<N+1>()`, forever: the loop must give up.
- TL999 `unencodable`: `ascii_only()` calls fixed into `'\u00e9'`.

`install(monkeypatch)` registers them as the only rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from torchlint import registry
from torchlint.diagnostics import Applicability, Position
from torchlint.fixes import build

SAFE, UNSAFE = Applicability.SAFE, Applicability.UNSAFE


def _nodes(module: cst.Module, kind: type) -> list:
    found = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, kind):
                found.append(node)
            return True

    module.visit(Collect())
    return found


def _calls_named(module: cst.Module, pattern: str) -> list[cst.Call]:
    return [
        call
        for call in _nodes(module, cst.Call)
        if isinstance(call.func, cst.Name) and re.fullmatch(pattern, call.func.value)
    ]


class BareTo(registry.Rule):
    code, name, summary = "TL991", "bare-to", "a bare .to() statement (test rule)"
    fix_applicability = SAFE

    def check(self, model, options) -> Iterator[registry.Finding]:
        for statement in _nodes(model.module, cst.Expr):
            call = statement.value
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in ("to", "cuda")
                and isinstance(call.func.value, cst.Name)
            ):
                fix = build.reassign(statement, call.func.value, "Assign the result back")
                yield registry.Finding(call, f"result of {call.func.value.value}.{call.func.attr.value}() is discarded", fix)


class LoopMarker(registry.Rule):
    code, name, summary = "TL992", "loop-no-marker", "a counting loop without marker() (test rule)"
    fix_applicability = UNSAFE

    def check(self, model, options) -> Iterator[registry.Finding]:
        for loop in _nodes(model.module, cst.For):
            if _calls_named(loop.body, "marker"):
                continue
            variable = build.loop_counter(loop)
            if variable is None and not isinstance(loop.target, cst.Name):
                continue
            fix = build.prepend_to_body(loop, f"marker({variable})", "Insert marker()", UNSAFE) if variable else None
            yield registry.Finding(loop.target, "loop without marker()", fix)


class _RenameRule(registry.Rule):
    """Flags calls whose name matches ``pattern`` and renames the callee with ``rename``."""

    pattern = ""
    fix_applicability = SAFE
    rename = staticmethod(lambda old: old)

    def check(self, model, options) -> Iterator[registry.Finding]:
        for call in _calls_named(model.module, self.pattern):
            new = cst.Name(self.rename(call.func.value))
            fix = registry.NodeFix(f"Rewrite {call.func.value}()", SAFE, {call.func: new})
            yield registry.Finding(call, f"call of {call.func.value}()", fix)


class Stubborn(_RenameRule):
    code, name, summary, pattern = "TL993", "stubborn", "stubborn() (test rule)", "stubborn"


class Breaker(_RenameRule):
    code, name, summary, pattern = "TL994", "breaker", "breaker() (test rule)", "breaker"
    rename = staticmethod(lambda old: "class")


class NeedsImport(registry.Rule):
    code, name, summary = "TL995", "needs-import", "needs_np() (test rule)"
    fix_applicability = SAFE

    def check(self, model, options) -> Iterator[registry.Finding]:
        for call in _calls_named(model.module, "needs_np"):
            fix = registry.NodeFix(
                "Use np.asarray", SAFE, {call.func: cst.parse_expression("np.asarray")}, imports=("import numpy as np",)
            )
            yield registry.Finding(call, "call of needs_np()", fix)


class Exploder(registry.Rule):
    code, name, summary = "TL996", "exploder", "crashes on boom (test rule)"

    def check(self, model, options) -> Iterator[registry.Finding]:
        if _calls_named(model.module, "boom"):
            raise RuntimeError("boom")
        return iter(())


class MakeBoom(_RenameRule):
    code, name, summary, pattern = "TL997", "make-boom", "make_boom() (test rule)", "make_boom"
    rename = staticmethod(lambda old: "boom")


class Counter(_RenameRule):
    code, name, summary, pattern = "TL998", "counter", "count<N>() (test rule)", r"count\d+"
    rename = staticmethod(lambda old: f"count{int(old[5:]) + 1}")


class Unencodable(registry.Rule):
    code, name, summary = "TL999", "unencodable", "ascii_only() (test rule)"
    fix_applicability = SAFE

    def check(self, model, options) -> Iterator[registry.Finding]:
        for call in _calls_named(model.module, "ascii_only"):
            fix = registry.NodeFix("Use a non-ASCII string", SAFE, {call: cst.SimpleString("'\u00e9'")})
            yield registry.Finding(call, "call of ascii_only()", fix)


TEST_RULES = (BareTo, LoopMarker, Stubborn, Breaker, NeedsImport, Exploder, MakeBoom, Counter, Unencodable)


def install(monkeypatch, *extra: type[registry.Rule]) -> None:
    """Make the test rules (and ``extra`` ones) the registered rules."""
    rules = {rule.code: rule for rule in (*TEST_RULES, *extra)}
    monkeypatch.setattr(registry, "all_rules", lambda: dict(sorted(rules.items())))


def apply_edits(text: str, edits) -> str:
    """Apply non-overlapping text edits the way an editor does, by line and column."""
    starts = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]

    def offset(position: Position) -> int:
        return starts[position.line - 1] + position.column - 1

    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        text = text[: offset(edit.start)] + edit.content + text[offset(edit.end) :]
    return text

