"""TL003: the conversion on the finding's line, and whether its receiver was used afterwards as if
the conversion had changed it."""

from __future__ import annotations

from torchlint.confirm.evidence import (
    CONFIRMED,
    NOT_REPRODUCED,
    UNCONFIRMABLE,
    Confirmation,
    Target,
    real_device_crashes,
    simulated,
)
from torchlint.confirm.observations import Run


def confirm(target: Target, run: Run) -> Confirmation:
    stale = [e for e in run.of("stale_use") if e["line"] in target.lines]
    mismatches = [m for m in run.of("mismatch") if set(m["stale_lines"]) & set(target.lines)]
    conversions = [e for e in run.of("convert") if e["line"] in target.lines]
    if stale:
        # A use of the left-behind tensor inside a mixed-device op is recorded as a stale use too.
        use = stale[0]
        text = (
            f".{use['method']}() at line {target.line} returned a new tensor {use['after']} that was dropped; "
            f"the tensor itself stayed {use['before']} and reached {use['use']} at {run.where(use['frames'])}"
        )
        if mismatches:
            text += (
                f"; CUDA raises 'Expected all tensors to be on the same device' in {mismatches[0]['op']}() at "
                f"{run.where(mismatches[0]['frames'])}"
            )
        crashes = real_device_crashes(run)
        return Confirmation(CONFIRMED, text + simulated(run), used=tuple(id(e) for e in [use, *mismatches, *crashes]))
    changed = [c for c in conversions if c["changed"]]
    if changed:
        first = changed[0]
        return Confirmation(
            NOT_REPRODUCED,
            f".{first['method']}() at line {target.line} returned a converted copy {first['after']} that was "
            f"dropped, but the tensor was not used afterwards in the steps that ran",
        )
    if conversions:
        first = conversions[0]
        if not run.cuda and first["after"].startswith("on cpu"):
            return Confirmation(
                UNCONFIRMABLE,
                "needs a CUDA GPU: without one the target device is the CPU and the call changes nothing either way "
                "(simulation is off: --no-simulate)",
            )
        return Confirmation(
            NOT_REPRODUCED,
            f"the tensor was already {first['before']}: .{first['method']}() at line {target.line} changed nothing",
        )
    modules = [e for e in run.of("module_convert") if e["line"] in target.lines]
    if modules:
        return Confirmation(
            NOT_REPRODUCED,
            f"the receiver at line {target.line} is a {modules[0]['module']} module: Module.{modules[0]['method']}() "
            "converts in place",
        )
    return Confirmation(
        NOT_REPRODUCED,
        f"line {target.line} ran but converted no tensor directly (the receiver is not a tensor)",
    )
