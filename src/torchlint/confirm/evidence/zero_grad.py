"""TL011: what the parameters' `.grad` held when the first backward() after an optimizer step added
to it: the gradient that step already applied (nothing cleared it), or nothing."""

from __future__ import annotations

from torchlint.confirm.evidence import CONFIRMED, NOT_REACHED, NOT_REPRODUCED, Confirmation, Target, plural, ranks, touches
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    checks = run.of("grad_check")
    located = [c for c in checks if touches(run, c["frames"], target)] or checks
    later = [c for c in located if c["held"] + c["cleared"]]
    if not later:
        stepped = f"{located[0]['type']} stepped once" if located else "no optimizer stepped"
        return Confirmation(
            NOT_REACHED,
            f"{stepped} near line {target.line}: whether gradients are cleared shows from the second step on; "
            f"the run {run.ending()}",
        )
    held = [c for c in later if c["held"]]
    if held:
        first = held[0]
        return Confirmation(
            CONFIRMED,
            f"at {first['type']} step {first['step']} ({run.where(first['frames'])}{ranks(run, held)}), the .grad of "
            f"{first['held']} of {first['held'] + first['cleared']} parameter{plural(first['held'] + first['cleared'])} "
            f"still held step {first['step'] - 1}'s gradient when backward() added to it: nothing cleared it, so the "
            "step applied both",
            used=tuple(id(c) for c in held),
        )
    return Confirmation(
        NOT_REPRODUCED,
        f"before each of {len(later)} later {later[0]['type']} step{plural(len(later))} "
        f"({run.where(later[0]['frames'])}), every parameter's .grad had been cleared (None or zero) when "
        "backward() added to it",
    )
