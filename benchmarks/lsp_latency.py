"""Editor latency of `torchlint lsp`: from didChange to the publishDiagnostics of that version.

    python benchmarks/lsp_latency.py [--lines 300 2000] [--edits 30] [--debounce-ms MS]

For each size, a training script of about that many lines is generated (synthetic scripts from
generate_scripts.py joined into one file, with a helper carrying two findings after each), opened in a real server over stdio, and edited
``--edits`` times (a comment typed at the end of a line in the middle, so every edit is a new
text); each edit waits for its diagnostics, then for a pause a little longer than the debounce,
before the next: an edit after a pause is checked at once, while changes that follow one another
within the debounce are a burst the server checks once it pauses. The latency is reported as a ratio to
the plain `libcst.parse_module` time of the same text in this process (the floor any check that
parses with LibCST has), and to the engine's own time for the text in this process (so the rest is
what the server adds). On a machine shared with other jobs wall times mostly measure the load, so
the CPU time the server process spends from each didChange to its publishDiagnostics (all its
threads, from /proc on Linux) is reported too, as a ratio to the CPU time of the same parse.
``--debounce-ms`` sets the server's debounce (default: the server's own
setting, 150 ms, which an edit made after a pause does not wait for). bench.py reports
the same measurement through `measure`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import libcst
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from torchlint import engine
from torchlint.config import Settings
from torchlint.lsp.settings import DEFAULT_DEBOUNCE_MS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_scripts import script  # noqa: E402 - a sibling script, not a package


EDITS = 30

# Two findings (TL003, TL005) per generated part, so that every edit reports some.
_BUGGY_HELPER = """

def debug_step_{index}(model):
    import torch

    probe = torch.zeros(4)
    probe.to("cuda")
    return torch.optim.Adam(model.parameters(), lr=10.0)
"""


def training_script(lines: int) -> str:
    """About ``lines`` lines: generated scripts joined, each `main` renamed, each followed by a
    helper with two findings."""
    parts: list[str] = []
    index = 0
    while sum(part.count("\n") for part in parts) < lines:
        body = script(index, seed=0).replace("\ndef main(", f"\ndef main_{index}(").split("\nif __name__ ==")[0]
        parts.append(body.rstrip("\n") + "\n" + _BUGGY_HELPER.format(index=index))
        index += 1
    return "".join(parts).rstrip("\n") + '\n\n\nif __name__ == "__main__":\n    main_0()\n'


def median_time(work, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``work()``."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def cpu_seconds(pid: int) -> float | None:
    """CPU time of a process, all its threads, in nanosecond resolution (Linux's schedstat);
    None where /proc does not tell."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return sum(int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0]) for task in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        return None


async def edit_latencies(text: str, path: Path, edits: int, debounce_ms: int | None) -> tuple[list[float], list[float], int]:
    """Seconds from each didChange to its publishDiagnostics, the server's CPU seconds over the
    same span (empty where unknown), and the findings of the last one."""
    client = LanguageClient("lsp-latency", "1")
    arrived: dict[int, tuple[float, int]] = {}
    waiting: dict[int, asyncio.Event] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        version = params.version or 0
        arrived[version] = (time.perf_counter(), len(params.diagnostics))
        if version in waiting:
            waiting[version].set()

    async def wait(version: int) -> None:
        waiting[version] = asyncio.Event()
        if version not in arrived:
            await asyncio.wait_for(waiting[version].wait(), timeout=60)

    await client.start_io(sys.executable, "-m", "torchlint", "lsp")
    server = client._server.pid  # pygls keeps the process it started to itself
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=path.parent.as_uri(),
            initialization_options={"torchlint": {} if debounce_ms is None else {"debounceMs": debounce_ms}},
        )
    )
    client.initialized(types.InitializedParams())
    uri = path.as_uri()
    path.write_text(text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await wait(1)
    lines = text.split("\n")
    middle = len(lines) // 2
    latencies, cpus = [], []
    pause = 1.2 * (DEFAULT_DEBOUNCE_MS if debounce_ms is None else debounce_ms) / 1000
    for version in range(2, edits + 2):
        await asyncio.sleep(pause)
        lines[middle] = lines[middle].split("  # edit")[0] + f"  # edit {version}"
        sent, cpu = time.perf_counter(), cpu_seconds(server)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text="\n".join(lines))],
            )
        )
        await wait(version)
        latencies.append(arrived[version][0] - sent)
        spent = cpu_seconds(server)
        if cpu is not None and spent is not None:
            cpus.append(spent - cpu)
    findings = arrived[edits + 1][1]
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies, cpus, findings


@dataclass
class Result:
    lines: int
    findings: int
    parse: float  # seconds, median
    engine: float
    latency: float
    p90: float
    parse_cpu: float
    server_cpu: float | None  # the server's CPU seconds per edit, median


def measure(size: int, folder: Path, edits: int = EDITS, debounce_ms: int | None = None) -> Result:
    """Latency of ``edits`` edits of a script of about ``size`` lines, written under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    text = training_script(size)
    parse, parse_cpu = median_time(lambda: libcst.parse_module(text), repeat=max(edits, 10))
    # The same check in this process, without the server: what the server adds is the rest.
    check, _ = median_time(lambda: engine.analyze(text, "train.py", Settings()), repeat=max(edits // 2, 5))
    latencies, cpus, findings = asyncio.run(edit_latencies(text, folder / f"train_{size}.py", edits, debounce_ms))
    p90 = statistics.quantiles(latencies, n=10)[-1]
    server_cpu = statistics.median(cpus) if cpus else None
    return Result(text.count("\n"), findings, parse, check, statistics.median(latencies), p90, parse_cpu, server_cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[300, 2000])
    parser.add_argument("--edits", type=int, default=EDITS)
    parser.add_argument("--debounce-ms", type=int, default=None)
    args = parser.parse_args()
    debounce = "the server's default debounce" if args.debounce_ms is None else f"debounce {args.debounce_ms} ms"
    print(f"{debounce}, {args.edits} edits per size, medians (p90)")
    print(
        f"{'lines':>6} {'findings':>8} {'parse ms':>9} {'engine ms':>9} {'latency ms':>16} {'/ parse':>13} {'/ engine':>8}"
        f" {'server CPU ms':>13} {'/ parse CPU':>11}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for size in args.lines:
            r = measure(size, Path(folder), args.edits, args.debounce_ms)
            cpu = (
                f"{'unknown':>13} {'':>11}"
                if r.server_cpu is None
                else f"{r.server_cpu * 1000:>13.1f} {r.server_cpu / r.parse_cpu:>11.2f}"
            )
            print(
                f"{r.lines:>6} {r.findings:>8} {r.parse * 1000:>9.1f} {r.engine * 1000:>9.1f} "
                f"{r.latency * 1000:>7.1f} ({r.p90 * 1000:>6.1f}) {r.latency / r.parse:>5.2f} ({r.p90 / r.parse:>5.2f}) "
                f"{r.latency / r.engine:>8.2f} {cpu}"
            )


if __name__ == "__main__":
    main()
