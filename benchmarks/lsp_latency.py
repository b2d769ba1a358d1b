"""Editor latency of `torchlint lsp`: from didChange to the publishDiagnostics of that version.

    python benchmarks/lsp_latency.py [--lines 300 2000] [--edits 30] [--debounce-ms 0]

For each size, a training script of about that many lines is generated (synthetic scripts from
generate_scripts.py joined into one file, with a helper carrying two findings after each), opened in a real server over stdio, and edited
``--edits`` times (a comment typed at the end of a line in the middle, so every edit is a new
text); each edit waits for its diagnostics before the next. The latency is reported as a ratio to
the plain `libcst.parse_module` time of the same text in this process (the floor any check that
parses with LibCST has), and to the engine's own time for the text in this process (so the rest is
what the server adds). ``--debounce-ms`` sets the server's debounce (default here 0, to measure
the server's own work; an editor sees the configured debounce, 150 ms by default, on top).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import libcst
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from torchlint import engine
from torchlint.config import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_scripts import script  # noqa: E402 - a sibling script, not a package


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


def median_time(work, repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


async def edit_latencies(text: str, path: Path, edits: int, debounce_ms: int) -> tuple[list[float], int]:
    """Seconds from each didChange to its publishDiagnostics, and the findings of the last one."""
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
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=path.parent.as_uri(),
            initialization_options={"torchlint": {"debounceMs": debounce_ms}},
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
    latencies = []
    for version in range(2, edits + 2):
        lines[middle] = lines[middle].split("  # edit")[0] + f"  # edit {version}"
        sent = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text="\n".join(lines))],
            )
        )
        await wait(version)
        latencies.append(arrived[version][0] - sent)
    findings = arrived[edits + 1][1]
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[300, 2000])
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--debounce-ms", type=int, default=0)
    args = parser.parse_args()
    print(f"debounce {args.debounce_ms} ms, {args.edits} edits per size, medians (p90)")
    print(f"{'lines':>6} {'findings':>8} {'parse ms':>9} {'engine ms':>9} {'latency ms':>16} {'/ parse':>13} {'/ engine':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for size in args.lines:
            text = training_script(size)
            parse = median_time(lambda: libcst.parse_module(text), repeat=max(args.edits, 10))
            # The same check in this process, without the server: what the server adds is the rest.
            check = median_time(lambda: engine.analyze(text, "train.py", Settings()), repeat=max(args.edits // 2, 5))
            latencies, findings = asyncio.run(edit_latencies(text, Path(folder) / f"train_{size}.py", args.edits, args.debounce_ms))
            median = statistics.median(latencies)
            p90 = statistics.quantiles(latencies, n=10)[-1]
            print(
                f"{text.count(chr(10)):>6} {findings:>8} {parse * 1000:>9.1f} {check * 1000:>9.1f} "
                f"{median * 1000:>7.1f} ({p90 * 1000:>6.1f}) {median / parse:>5.2f} ({p90 / parse:>5.2f}) {median / check:>8.2f}"
            )


if __name__ == "__main__":
    main()
