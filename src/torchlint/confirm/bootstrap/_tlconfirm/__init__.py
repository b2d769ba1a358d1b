"""The instrumentation of a `torchlint confirm` run, loaded into every process by sitecustomize.

Self-contained on purpose: the user's interpreter (`--python`) need not have torchlint installed.
Nothing here touches torch until the script imports it.
"""

from __future__ import annotations

from _tlconfirm import config as _config
from _tlconfirm import coverage, events, hook, process


def start() -> None:
    config = _config.load()
    events.open_for(config.results)
    if process.start(config.script) == "launcher":
        return  # torch.distributed.run's agent runs no user code
    coverage.watch(config.script, config.watched_lines)
    hook.after_torch_import(lambda torch: _install_or_report(config))


def _install_or_report(config: _config.Config) -> None:
    try:
        install(config)
    except Exception as error:  # noqa: BLE001 - the script runs on; the report says what is missing
        events.emit("instrumentation_error", error=f"{type(error).__name__}: {error}")


def install(config: _config.Config) -> None:
    import torch

    from _tlconfirm import cuda_api, dist, jit
    from _tlconfirm.accumulators import Accumulators
    from _tlconfirm.checkpoints import Checkpoints
    from _tlconfirm.devices import RealDevices, VirtualDevices
    from _tlconfirm.forward import Forwards
    from _tlconfirm.grads import Gradients
    from _tlconfirm.host_copies import HostCopies
    from _tlconfirm.host_values import HostValues
    from _tlconfirm.loaders import Loaders
    from _tlconfirm.losses import LossInputs
    from _tlconfirm.mode import DeviceMode
    from _tlconfirm.modes import Modes
    from _tlconfirm.optim import Optimizers
    from _tlconfirm.placement import Placements
    from _tlconfirm.progress import Progress

    real_cuda = torch.cuda.is_available()
    simulated = config.simulate and not real_cuda
    devices = VirtualDevices(config.simulated_devices) if simulated else RealDevices()
    copies = HostCopies(config.lines_of("TL020"))
    placements = Placements(config.script, config.watched_lines, observers=[copies.converted])
    progress = Progress(config)
    progress.listeners.append(copies.step)
    progress.listeners.append(Accumulators(config.script, config.lines_of("TL018")).sample)
    # The checks of the newer rules cost a hook call per module call or per gradient: only for
    # scripts with such findings.
    modes = [Modes(progress).record] if config.lines_of("TL015") | config.lines_of("TL016") else []
    forwards = Forwards(devices, placements, observers=modes)
    forwards.install()
    DeviceMode(devices, placements, forwards.active).__enter__()
    if config.lines_of("TL019"):
        HostValues(config.script, config.lines_of("TL019"), forwards.active).__enter__()
    if simulated:
        cuda_api.install(devices)
    Loaders(config, progress, simulated).install()
    if config.lines_of("TL014"):
        Checkpoints(config.script, config.lines_of("TL014")).install()
    if config.lines_of("TL017"):
        LossInputs(config.script, config.lines_of("TL017")).install()
    Optimizers(progress, Gradients(active=bool(config.lines_of("TL011") | config.lines_of("TL012")))).install()
    dist.install(config, simulated)
    jit.install(real_cuda)
    events.emit(
        "instrumented",
        simulated=simulated,
        real_cuda=real_cuda,
        cuda_devices=torch.cuda.device_count() if real_cuda else 0,
        torch=torch.__version__,
    )
