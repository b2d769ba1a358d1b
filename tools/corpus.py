"""Run torchlint over a corpus of real training code and report every finding for review.

The corpus lives outside this repository (public code is never committed): by default each
folder under /work/corpus is one repository. Usage:

    .venv/bin/python tools/corpus.py                       # every repo under /work/corpus
    .venv/bin/python tools/corpus.py nanoGPT timm=/src/pytorch-image-models
    .venv/bin/python tools/corpus.py --select TL006 --report /tmp/tl006.md

A folder argument is `NAME=PATH`, a PATH, or the name of a folder under --root. The table of
findings per repository and rule goes to standard output; the report file lists every finding
with its location, message and source line so a rule author can judge each one, plus the
slowest files. Files are checked by the engine exactly as `torchlint check` does (same
discovery, same configuration resolution, same diagnostics as the JSON format).
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from torchlint import __version__, engine, registry
from torchlint.config import ConfigResolver
from torchlint.runner import RunOptions, targets

DEFAULT_ROOT = Path("/work/corpus")
SLOWEST_SHOWN = 10


@dataclass
class RepoResult:
    name: str
    path: Path
    files: int = 0
    seconds: float = 0.0
    diagnostics: list[dict] = field(default_factory=list)
    timings: list[tuple[float, str]] = field(default_factory=list)  # (cpu seconds, file)

    @property
    def cpu_seconds(self) -> float:
        return sum(seconds for seconds, _ in self.timings)


@functools.lru_cache(maxsize=None)
def _resolver(select: tuple[str, ...]) -> ConfigResolver:
    """One resolver per worker process, so configuration lookups are cached across its files."""
    return ConfigResolver(None, {"select": list(select)} if select else None)


def _check_one(job: tuple[str, tuple[str, ...]]) -> tuple[str, list[dict], float]:
    path, select = job
    resolver = _resolver(select)
    # CPU time, not wall time: the corpus often runs beside other work on a small machine.
    start = time.process_time()
    analysis = engine.check_path(Path(path), resolver.for_path(Path(path)))
    return path, [d.to_dict() for d in analysis.diagnostics], time.process_time() - start


def parse_folders(specs: list[str], root: Path) -> list[tuple[str, Path]]:
    if not specs:
        return [(p.name, p) for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    folders = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep:
            folders.append((name, Path(path)))
        elif (root / spec).is_dir():
            folders.append((spec, root / spec))
        else:
            folders.append((Path(spec).name, Path(spec)))
    return folders


def run(folders: list[tuple[str, Path]], select: tuple[str, ...], jobs: int) -> list[RepoResult]:
    resolver = _resolver(select)
    results = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for name, path in folders:
            result = RepoResult(name, path)
            files = [str(p) for p in targets([path], resolver, RunOptions(respect_gitignore=False))]
            start = time.perf_counter()
            for file, diagnostics, seconds in pool.map(_check_one, [(f, select) for f in files], chunksize=8):
                result.diagnostics.extend(diagnostics)
                result.timings.append((seconds, file))
            result.files = len(files)
            result.seconds = time.perf_counter() - start
            results.append(result)
    return results


def table(results: list[RepoResult]) -> str:
    codes = sorted(set(registry.all_codes()) | {d["code"] for r in results for d in r.diagnostics})
    header = ["repo", "files", "wall s", "cpu s", *codes, "total"]
    rows = []
    for r in results:
        counts = collections.Counter(d["code"] for d in r.diagnostics)
        rows.append([
            r.name, str(r.files), f"{r.seconds:.1f}", f"{r.cpu_seconds:.1f}",
            *(str(counts[c]) for c in codes), str(len(r.diagnostics)),
        ])
    totals = collections.Counter(d["code"] for r in results for d in r.diagnostics)
    rows.append([
        "all", str(sum(r.files for r in results)), f"{sum(r.seconds for r in results):.1f}",
        f"{sum(r.cpu_seconds for r in results):.1f}",
        *(str(totals[c]) for c in codes), str(sum(totals.values())),
    ])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells):
        return "| " + " | ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(cells, widths))) + " |"

    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), separator, *(line(row) for row in rows)]) + "\n"


def _source_line(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, text in enumerate(f, 1):
                if number == line:
                    return text.strip()
    except OSError:
        pass
    return ""


def report(results: list[RepoResult], elapsed: float) -> str:
    total_files = sum(r.files for r in results)
    parts = [
        "# torchlint corpus report\n",
        f"torchlint {__version__}, {time.strftime('%Y-%m-%d %H:%M')}, {total_files} files, {elapsed:.1f} s wall\n",
        "## Findings per repository and rule\n",
        table(results),
    ]
    for r in results:
        parts.append(f"\n## {r.name} ({r.path}): {len(r.diagnostics)} findings in {r.files} files\n")
        for d in sorted(r.diagnostics, key=lambda d: (d["code"], d["path"], d["line"], d["column"])):
            relative = os.path.relpath(d["path"], r.path)
            parts.append(f"- `{relative}:{d['line']}:{d['column']}` **{d['code']}** {d['message']}\n")
            source = _source_line(d["path"], d["line"])
            if source:
                parts.append(f"  `{source}`\n")
    slowest = sorted((t for r in results for t in r.timings), reverse=True)[:SLOWEST_SHOWN]
    parts.append("\n## Slowest files (CPU time)\n")
    parts.extend(f"- {seconds * 1000:.0f} ms `{path}`\n" for seconds, path in slowest)
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", help="NAME=PATH, PATH, or a folder name under --root (default: all)")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where the corpus repositories live")
    parser.add_argument("--select", action="append", help="rule codes or prefixes to run (default: all rules)")
    parser.add_argument("--report", type=Path, help="report file (default: ROOT/REPORT.md)")
    parser.add_argument("--json", type=Path, help="also write every diagnostic, with its repo, as JSON here")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    args = parser.parse_args(argv)

    folders = parse_folders(args.folders, args.root)
    missing = [str(path) for _, path in folders if not path.is_dir()]
    if missing:
        parser.error(f"not a folder: {', '.join(missing)}")
    select = [code for item in args.select or [] for code in item.split(",") if code]
    start = time.perf_counter()
    results = run(folders, tuple(select), args.jobs)
    elapsed = time.perf_counter() - start

    report_path = args.report or args.root / "REPORT.md"
    report_path.write_text(report(results, elapsed), encoding="utf-8")
    if args.json:
        rows = [{"repo": r.name, **d} for r in results for d in r.diagnostics]
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    sys.stdout.write(table(results))
    print(f"{sum(r.files for r in results)} files in {elapsed:.1f} s; report: {report_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
