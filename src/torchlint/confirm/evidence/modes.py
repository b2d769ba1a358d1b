"""TL015, TL016: the mode of a module at each call from the finding's line (its dropout and
batch-norm layers in training or eval mode), whether gradients were recorded, and the optimizer
steps around it."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, plural, ranks, script_lines
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    calls = [m for m in run.of("mode") if _called_at(run, m, target)]
    if not calls:
        return Confirmation(NOT_REACHED, f"no module was called at line {target.line}: the run {run.ending()}")
    return {"TL015": _eval_mode_missing, "TL016": _train_mode_not_restored}[target.code](target, run, calls)


def _eval_mode_missing(target: Target, run: Run, calls: list[dict]) -> Confirmation:
    evaluating = [m for m in calls if not m["grad"]] or calls
    in_training = [m for m in evaluating if m["layers_training"]]
    if in_training:
        first = in_training[0]
        return Confirmation(
            CONFIRMED,
            f"{first['module']} ran {_grad_mode(first)} at line {target.line}{ranks(run, in_training)} with "
            f"{_layers(first, first['layers_training'])} in training mode: "
            f"{_effects(first, {'dropout': 'dropout stays on', 'norm': 'batch norm uses and updates the statistics of the evaluation batches'})}",
            used=tuple(id(m) for m in in_training),
        )
    first = evaluating[0]
    if first["layers"]:
        return Confirmation(
            NOT_REPRODUCED,
            f"{first['module']} ran {_grad_mode(first)} at line {target.line} with its {_layers(first, first['layers'])} "
            "in eval mode",
        )
    return Confirmation(
        NOT_REPRODUCED,
        f"{first['module']} ran {_grad_mode(first)} at line {target.line} in {_mode(first)} mode, but holds no torch "
        "dropout or batch-norm layer whose output depends on it (a forward that reads self.training is not seen)",
    )


def _train_mode_not_restored(target: Target, run: Run, calls: list[dict]) -> Confirmation:
    training = [m for m in calls if m["grad"] and m["layers"]]
    if not training:
        first = calls[0]
        return Confirmation(
            NOT_REPRODUCED,
            f"{first['module']} at line {target.line} holds no torch dropout or batch-norm layer whose output depends "
            "on its mode (a forward that reads self.training is not seen)",
        )
    evaluations = [m for m in run.of("mode") if m["layers"] and not m["layers_training"]]
    stale = [m for m in training if not m["layers_training"] and _step_after(run, m)]
    if stale:
        first = stale[0]
        before = _last_before(evaluations, first)
        after = f"after the evaluation at {run.where(before['frames'])}, " if before else ""
        return Confirmation(
            CONFIRMED,
            f"{after}{first['module']} was called at line {target.line}{ranks(run, stale)} with gradients on and "
            f"{_layers(first, first['layers'])} still in eval mode, and optimizer step {first['step'] + 1} followed: "
            f"training went on with {_effects(first, {'dropout': 'dropout off', 'norm': 'batch-norm statistics frozen'})}",
            used=tuple(id(m) for m in stale),
        )
    restored = [m for m in training if m["layers_training"] and _last_before(evaluations, m)]
    if restored:
        first = restored[0]
        before = _last_before(evaluations, first)
        return Confirmation(
            NOT_REPRODUCED,
            f"after {before['module']} ran in eval mode at {run.where(before['frames'])}, the next training call at line "
            f"{target.line} ran with {_layers(first, first['layers_training'])} in training mode again",
        )
    return Confirmation(
        NOT_REACHED,
        f"no call at line {target.line} followed a call in eval mode (the run ends before training resumes after an "
        f"evaluation): the run {run.ending()}",
    )


def _called_at(run: Run, event: dict, target: Target) -> bool:
    """The module was called from the finding's statement (not from a forward it calls)."""
    frames = event["frames"]
    return bool(frames and script_lines(run, frames[:1]) and frames[0][1] in target.lines)


def _step_after(run: Run, call: dict) -> bool:
    return any(s["pid"] == call["pid"] and s["time"] > call["time"] for s in run.of("step"))


def _last_before(evaluations: list[dict], call: dict) -> dict | None:
    """The last evaluation call (no gradients, every such layer in eval mode) before `call` in its
    process: of the same module, or of any module when that one was never evaluated (a wrapper such
    as DDP may be called for training and its inner module for evaluation)."""
    process = [m for m in evaluations if m["pid"] == call["pid"] and not m["grad"]]
    same = [m for m in process if m["module_id"] == call["module_id"]]
    earlier = [m for m in same or process if m["time"] < call["time"]]
    return earlier[-1] if earlier else None


def _grad_mode(call: dict) -> str:
    if call["inference"]:
        return "under torch.inference_mode()"
    return "with gradients" if call["grad"] else "under torch.no_grad()"


def _mode(call: dict) -> str:
    return "training" if call["training"] else "eval"


def _effects(call: dict, effects: dict[str, str]) -> str:
    """What the wrong mode does to the layers the module holds (dropout, batch norm, or both)."""
    kinds = {"dropout" if "Dropout" in name else "norm" for name in call["layer_types"]}
    return " and ".join(effects[kind] for kind in ("dropout", "norm") if kind in kinds)


def _layers(call: dict, count: int) -> str:
    kinds = "/".join(call["layer_types"])
    return f"{count} of {call['layers']} {kinds} layer{plural(call['layers'])}"
