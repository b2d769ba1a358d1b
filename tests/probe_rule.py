"""A test-only rule, TL900, so the front ends can be driven end to end independently of the real
rules: it flags each call of a function named in its `names` option (default `probe`), points at
the call, and offers a fix that renames the callee to `checked` (unsafe when the call passes
`unsafe=...`, safe otherwise).

Front ends that run in a subprocess (flake8, the CLI, the language server) get the rule by being
started through this file: `python tests/probe_rule.py flake8|torchlint|lsp ARGS...`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import libcst as cst

from torchlint import registry
from torchlint.diagnostics import Applicability

CODE = "TL900"


class ProbeRule(registry.Rule):
    code = CODE
    name = "probe-call"
    summary = "a call of a probe function (test-only rule)"
    fix_applicability = Applicability.SAFE
    options_table = "probe"
    options_schema: Mapping[str, Any] = {"names": {"type": "array", "items": {"type": "string"}}}
    default_options: Mapping[str, Any] = {"names": ["probe"]}

    def check(self, model, options) -> Iterator[registry.Finding]:
        # the model's calls, not a CSTVisitor walk: `Module.visit` rebuilds every node, and LibCST
        # re-validates what it rebuilds, failing on some trees its own parser made (`[t for* s in x]`)
        for call in model.calls:
            if isinstance(call.func, cst.Name) and call.func.value in options["names"]:
                unsafe = any(arg.keyword is not None and arg.keyword.value == "unsafe" for arg in call.args)
                applicability = Applicability.UNSAFE if unsafe else Applicability.SAFE
                fix = registry.NodeFix("Rename to checked()", applicability, {call.func: call.func.with_changes(value="checked")})
                yield registry.Finding(call, f"call of {call.func.value}(): replace it with checked()", fix)


def install() -> None:
    real = registry.all_rules

    def with_probe() -> dict[str, type[registry.Rule]]:
        return {**real(), CODE: ProbeRule}

    registry.all_rules = with_probe


def _main(tool: str, args: list[str]) -> None:
    install()
    if tool == "flake8":
        from flake8.main.cli import main

        sys.exit(main(args))
    if tool == "torchlint":
        from torchlint.cli import main

        main(args)
    if tool == "lsp":
        from torchlint.cli import main

        main(["lsp", *args])
    raise SystemExit(f"unknown tool {tool!r}")


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2:])
