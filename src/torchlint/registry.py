"""The rule registry: what each rule declares, and the list of rules torchlint ships."""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Union

from torchlint.diagnostics import Applicability, Severity

if TYPE_CHECKING:  # libcst is imported by the rules; `torchlint --version` need not wait for it
    import libcst as cst

    from torchlint.model import Model


@dataclass(frozen=True)
class NodeFix:
    """A fix expressed on the tree: each original node is replaced by its new node.

    Keyed on the original node objects, so every fix of a file is applied by one transformer.
    A new node may contain the original node it replaces (`FlattenSentinel([new, original])`
    inserts before it); fixes inside that original are then kept. ``imports`` are module-level
    import statements the new code needs (`"import torch"`), added unless already present.
    See torchlint.fixes.build for helpers that make the common fixes.
    """

    message: str
    applicability: Applicability
    replacements: Mapping[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel] = field(
        default_factory=dict
    )
    imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """What a rule reports: the node to point at (the thing to change), a message, a fix.

    ``suggestions`` are the statements of code the message offers, verbatim: each must parse
    and use only names bound where they go, ``suggested_at`` (by default ``node``; the epoch loop
    for a `set_epoch` call) (tests/test_message_suggestions.py checks it)."""

    node: cst.CSTNode
    message: str
    fix: NodeFix | None = None
    suggestions: tuple[str, ...] = ()
    suggested_at: cst.CSTNode | None = None


class Rule:
    """Base class of every rule. A subclass reads like its rules/ page.

    A rule of torchlint's names its code (`class UnusedDevice(Rule, code="TL001")`) and takes the
    rest of its description from its entry in rules/catalog.py (RuleEntry: the attributes below);
    a rule from elsewhere (the tests' doubles) sets them itself.

    A ``preview`` rule is not precise enough on real code to run by default: as in ruff, it runs
    only in preview mode (`--preview`, `preview = true`).

    ``options_table`` names the ``[tool.torchlint.<table>]`` section the rule reads, and
    ``options_schema`` is the JSON schema of that table's *properties*; ``default_options`` are
    the values used where the user sets nothing.

    A ``prefiltered`` rule fires only on values whose kind the model knows, so a file without
    the prefilter's evidence words cannot give it a finding and is not parsed for it (see
    prefilter.py); any other rule sees every file.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING
    fix_applicability: ClassVar[Applicability | None] = None
    preview: ClassVar[bool] = False
    prefiltered: ClassVar[bool] = False
    options_table: ClassVar[str | None] = None
    options_schema: ClassVar[Mapping[str, Any]] = {}
    default_options: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            from torchlint.rules import catalog

            entry = catalog.BY_CODE[code]
            for described in dataclasses.fields(entry):
                setattr(cls, described.name, getattr(entry, described.name))

    @classmethod
    def load(cls) -> type[Rule]:
        """The rule itself: a class registered directly stands for its own entry (RuleEntry.load)."""
        return cls

    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        raise NotImplementedError


@dataclass(frozen=True)
class RuleEntry:
    """A rule as rules/catalog.py describes it: everything the rule class has but its check,
    which ``load()`` imports from `rules/<code>_<name>.py`."""

    code: str
    name: str
    summary: str
    severity: Severity = Severity.WARNING
    fix_applicability: Applicability | None = None
    preview: bool = False
    prefiltered: bool = False
    options_table: str | None = None
    options_schema: Mapping[str, Any] = field(default_factory=dict)
    default_options: Mapping[str, Any] = field(default_factory=dict)

    def load(self) -> type[Rule]:
        return _rule_class(f"{self.code.lower()}_{self.name.replace('-', '_')}")


@functools.cache
def _rule_class(module_name: str) -> type[Rule]:
    return importlib.import_module(f"torchlint.rules.{module_name}").RULE


# What the registry lists per code: a catalogue entry, or a rule class registered directly
# (tests replace all_rules() with their doubles). Both have a rule's attributes and load().
RuleSpec = Union[RuleEntry, type[Rule]]


@dataclass(frozen=True)
class PseudoRule:
    """A code the engine itself reports (TL000); listed and explained like a rule."""

    code: str
    name: str
    summary: str
    severity: Severity = Severity.ERROR
    fix_applicability: Applicability | None = None
    options_table: str | None = None


COULD_NOT_CHECK = PseudoRule(
    code="TL000",
    name="could-not-check",
    summary="the file could not be read, decoded or parsed, or a rule failed on it",
)

# Findings that only `torchlint confirm` reports, from what it saw the script do; no static rule
# stands behind them, so they are kept out of all_codes() (nothing to select, no static examples).
RUNTIME_CODES: dict[str, PseudoRule] = {
    rule.code: rule
    for rule in (
        PseudoRule(
            code="TL009",
            name="runtime-device-error",
            summary="(confirm) an operation mixed tensors on different devices, or read a CUDA tensor as NumPy",
        ),
        PseudoRule(
            code="TL010",
            name="runtime-loss-diverged",
            summary="(confirm) the loss became NaN/inf or grew a hundredfold in the first training steps",
            severity=Severity.WARNING,
        ),
    )
}


@functools.cache
def all_rules() -> dict[str, RuleSpec]:
    """Every checking rule by code, in code order, without importing any rule (see
    rules/catalog.py); ``load()`` gives a rule's class."""
    from torchlint.rules import catalog

    return {entry.code: entry for entry in sorted(catalog.RULES, key=lambda entry: entry.code)}


def all_codes() -> dict[str, RuleSpec | PseudoRule]:
    """Every code torchlint can report, TL000 included."""
    return {COULD_NOT_CHECK.code: COULD_NOT_CHECK, **all_rules()}
