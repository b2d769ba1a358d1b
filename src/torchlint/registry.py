"""The rule registry: what each rule declares, and the list of rules torchlint ships."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

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

    A ``preview`` rule is not precise enough on real code to run by default: as in ruff, it runs
    only in preview mode (`--preview`, `preview = true`).

    ``options_table`` names the ``[tool.torchlint.<table>]`` section the rule reads, and
    ``options_schema`` is the JSON schema of that table's *properties*; ``default_options`` are
    the values used where the user sets nothing.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING
    fix_applicability: ClassVar[Applicability | None] = None
    preview: ClassVar[bool] = False
    options_table: ClassVar[str | None] = None
    options_schema: ClassVar[Mapping[str, Any]] = {}
    default_options: ClassVar[Mapping[str, Any]] = {}

    def check(self, model: Model, options: Mapping[str, Any]) -> Iterator[Finding]:
        raise NotImplementedError


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

# One module per rule, listed explicitly: importing is the only registration and the order
# here is the order of `torchlint rules`.
RULE_MODULES: tuple[str, ...] = (
    "tl001_unused_device",
    "tl002_module_not_moved",
    "tl003_to_result_discarded",
    "tl004_input_not_moved",
    "tl005_lr_out_of_range",
    "tl006_sampler_set_epoch_missing",
    "tl007_batch_not_divided",
    "tl008_jit_trace_device_baked",
    "tl011_zero_grad_missing",
    "tl012_grad_accum_loss_not_scaled",
    "tl013_sampler_with_shuffle",
    "tl014_load_without_map_location",
    "tl015_eval_mode_missing",
    "tl016_train_mode_not_restored",
    "tl017_softmax_before_cross_entropy",
    "tl018_loss_accumulated_with_graph",
    "tl019_numpy_in_forward",
    "tl020_tensor_created_then_moved",
)


def _load_rules() -> dict[str, type[Rule]]:
    rules: dict[str, type[Rule]] = {}
    for module_name in RULE_MODULES:
        module = importlib.import_module(f"torchlint.rules.{module_name}")
        rule = module.RULE
        rules[rule.code] = rule
    return rules


@functools.cache
def all_rules() -> dict[str, type[Rule]]:
    """Every checking rule by code, in code order."""
    return dict(sorted(_load_rules().items()))


def all_codes() -> dict[str, type[Rule] | PseudoRule]:
    """Every code torchlint can report, TL000 included."""
    return {COULD_NOT_CHECK.code: COULD_NOT_CHECK, **all_rules()}
