"""torchlint confirm: loaded by every Python process of a confirm run (it is first on PYTHONPATH).

Runs the instrumentation's start-up (`_tlconfirm.start`), then hands over to the sitecustomize
this one shadows, so the user's own site customisation still runs.
"""

import os
import sys


def _chain_to_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get("TORCHLINT_CONFIRM_CONFIG"):
    try:
        import _tlconfirm

        _tlconfirm.start()
    except Exception as error:  # noqa: BLE001 - instrumentation must never stop the user's script
        sys.stderr.write(f"torchlint confirm: instrumentation failed to start: {error!r}\n")
_chain_to_shadowed_sitecustomize()
