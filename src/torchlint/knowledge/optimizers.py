"""torch.optim as data: each optimizer's family and default learning rate, the learning-rate range
each family trains with (TL005's defaults, justified on rules/TL005.md), and the schedulers under
which the constructor's lr is not the lr that trains.

Defaults are those of torch 2.13 (`inspect.signature(torch.optim.X).parameters["lr"]`); the
test suite compares them with the installed torch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Optimizer:
    name: str
    family: str
    default_lr: float


OPTIMIZERS: dict[str, Optimizer] = {
    optimizer.name: optimizer
    for optimizer in (
        Optimizer("Adam", "adam", 1e-3),
        Optimizer("AdamW", "adam", 1e-3),
        Optimizer("Adamax", "adam", 2e-3),
        Optimizer("NAdam", "adam", 2e-3),
        Optimizer("RAdam", "adam", 1e-3),
        Optimizer("SparseAdam", "adam", 1e-3),
        Optimizer("RMSprop", "rmsprop", 1e-2),
        Optimizer("Adagrad", "adagrad", 1e-2),
        Optimizer("Adafactor", "adafactor", 1e-2),
        Optimizer("Rprop", "rprop", 1e-2),
        Optimizer("SGD", "sgd", 1e-3),
        Optimizer("ASGD", "sgd", 1e-2),
        Optimizer("Muon", "muon", 1e-3),
        Optimizer("Adadelta", "adadelta", 1.0),
        Optimizer("LBFGS", "lbfgs", 1.0),
    )
}

# family -> (lowest, highest) learning rate that is not almost certainly a mistake.
DEFAULT_LR_RANGES: dict[str, tuple[float, float]] = {
    "adam": (1e-7, 0.1),
    "rmsprop": (1e-7, 0.1),
    "adagrad": (1e-6, 1.0),
    "adafactor": (1e-6, 1.0),
    "rprop": (1e-7, 1.0),
    "sgd": (1e-6, 50.0),
    "muon": (1e-6, 1.0),
    "adadelta": (1e-4, 10.0),
    "lbfgs": (1e-5, 10.0),
}

# Schedulers that scale the constructor's lr by a user function: under the Noam convention the
# constructor gets a multiplier of about 1 (`Adam(params, lr=1)` with a LambdaLR of
# d_model**-0.5 * ...), so a value up to MULTIPLIER_CONVENTION is not the lr that trains.
LR_MULTIPLYING_SCHEDULERS = frozenset(
    f"torch.optim.lr_scheduler.{name}" for name in ("LambdaLR", "MultiplicativeLR")
)
MULTIPLIER_CONVENTION = 1.0
# Schedulers that replace the constructor's lr outright (OneCycleLR's max_lr, CyclicLR's
# base_lr/max_lr).
LR_SCHEDULER_MODULE = "torch.optim.lr_scheduler."
LR_REPLACING_SCHEDULERS = frozenset(f"{LR_SCHEDULER_MODULE}{name}" for name in ("OneCycleLR", "CyclicLR"))


# Soft prompts: under these PEFT configurations only a few virtual-token embeddings train (the
# network is frozen), and they train with rates of 0.3 to 1 (prompt tuning), far above what
# suits a network's weights. A file that builds one is judged against this highest rate.
SOFT_PROMPT_CONFIGS = frozenset(
    f"peft.{name}" for name in ("PromptTuningConfig", "PrefixTuningConfig", "PromptEncoderConfig", "MultitaskPromptTuningConfig")
)
SOFT_PROMPT_HIGHEST_LR = 1.0

# One linear map (a linear or logistic regression, model/linear_models.py): a convex problem with
# no layers to compound a step, tuned with adaptive rates up to a few tenths (SGC: Adam 0.2).
LINEAR_MODEL_HIGHEST_LR = 1.0


def optimizer_for(qualified_name: str | None) -> Optimizer | None:
    """The optimizer a qualified call name constructs: `torch.optim.AdamW`,
    `torch.optim.adamw.AdamW`, `torch.optim.sgd.SGD`."""
    if not qualified_name or not qualified_name.startswith("torch.optim."):
        return None
    return OPTIMIZERS.get(qualified_name.rsplit(".", 1)[1])
