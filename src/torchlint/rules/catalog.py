"""Every rule as configuration, selection, the cache, the prefilter and the listings see it: code,
name, summary, whether the prefilter applies to it, fix, preview flag, options. The one place
this is written: a rule class takes its own entry by its code (`class UnusedDevice(Rule,
code="TL001")`), and everything that only needs to know which rules exist reads this module
instead of importing the rules, and with them LibCST (a run answered from the cache never imports
either). An entry's check lives in `rules/<code>_<name>.py` (see registry.RuleEntry.load)."""

from __future__ import annotations

from torchlint.diagnostics import Applicability
from torchlint.knowledge.optimizers import DEFAULT_LR_RANGES
from torchlint.registry import RuleEntry

_LR_RANGE_SCHEMA = {
    "type": "array",
    "items": {"type": "number", "minimum": 0},
    "minItems": 2,
    "maxItems": 2,
    "description": "[lowest, highest] learning rate accepted for this optimizer family",
}

RULES: tuple[RuleEntry, ...] = (
    RuleEntry(
        "TL001",
        "unused-device",
        "a device is computed but nothing is placed on it: it is only printed, logged, or never read",
        prefiltered=True,
    ),
    RuleEntry(
        "TL002",
        "module-not-moved",
        "a module is trained or called where tensors are placed on a device, but is never moved",
        prefiltered=True,
        fix_applicability=Applicability.SAFE,
    ),
    RuleEntry(
        "TL003",
        "to-result-discarded",
        "a tensor conversion such as `x.to(device)` used as a statement: its result is thrown away",
        prefiltered=True,
        fix_applicability=Applicability.SAFE,
    ),
    RuleEntry(
        "TL004",
        "input-not-moved",
        "a moved module is called with a batch or tensor that is still on the CPU",
        prefiltered=True,
        fix_applicability=Applicability.UNSAFE,
    ),
    RuleEntry(
        "TL005",
        "lr-out-of-range",
        "a torch.optim learning rate outside the range its optimizer family trains with",
        prefiltered=True,
        options_table="lr",
        options_schema={family: _LR_RANGE_SCHEMA for family in DEFAULT_LR_RANGES},
        default_options={family: list(bounds) for family, bounds in DEFAULT_LR_RANGES.items()},
    ),
    RuleEntry(
        "TL006",
        "sampler-set-epoch-missing",
        "a shuffling DistributedSampler is never re-seeded with set_epoch inside the epoch loop",
        prefiltered=True,
        fix_applicability=Applicability.UNSAFE,
    ),
    RuleEntry(
        "TL007",
        "batch-not-divided",
        "a batch size the code declares global reaches a per-process loader undivided",
        prefiltered=True,
    ),
    RuleEntry(
        "TL008",
        "jit-trace-device-baked",
        "a module traced on one device (CUDA or CPU) is used on the other",
        prefiltered=True,
    ),
    RuleEntry(
        "TL011",
        "zero-grad-missing",
        "an optimizer steps in a training loop and nothing in that loop clears the gradients",
        prefiltered=True,
    ),
    RuleEntry(
        "TL012",
        "grad-accum-loss-not-scaled",
        "gradients accumulate over N iterations per optimizer step but the loss is not divided by N",
        prefiltered=True,
    ),
    RuleEntry(
        "TL013",
        "sampler-with-shuffle",
        "a DataLoader gets shuffle=True and a sampler that is not None on some path: ValueError at run time",
        prefiltered=True,
        fix_applicability=Applicability.SAFE,
    ),
    RuleEntry(
        "TL014",
        "load-without-map-location",
        "torch.load without map_location in a script that picks its device at run time",
        prefiltered=True,
        fix_applicability=Applicability.UNSAFE,
    ),
    RuleEntry(
        "TL015",
        "eval-mode-missing",
        "an evaluation pass calls a module with dropout or batch norm that is still in training mode",
        prefiltered=True,
    ),
    RuleEntry(
        "TL016",
        "train-mode-not-restored",
        "eval() is called for validation and the next epoch trains without train()",
        prefiltered=True,
    ),
    RuleEntry(
        "TL017",
        "softmax-before-cross-entropy",
        "CrossEntropyLoss is fed softmax probabilities, or NLLLoss probabilities that are not logs",
        prefiltered=True,
    ),
    RuleEntry(
        "TL018",
        "loss-accumulated-with-graph",
        "a loss that requires grad is accumulated across steps without .item() or .detach()",
        prefiltered=True,
        fix_applicability=Applicability.SAFE,
    ),
    RuleEntry(
        "TL019",
        "numpy-in-forward",
        "(preview) forward takes input-derived data out of torch (.numpy(), .item()...) and back into a tensor",
        prefiltered=True,
        # On the corpus its findings were sizes, offsets and counts taken out of torch on purpose.
        preview=True,
    ),
    RuleEntry(
        "TL020",
        "tensor-created-then-moved",
        "a tensor factory's result is moved at once (`torch.zeros(n).to(device)`): pass `device=` to the factory",
        prefiltered=True,
        fix_applicability=Applicability.SAFE,
    ),
)

BY_CODE: dict[str, RuleEntry] = {entry.code: entry for entry in RULES}
