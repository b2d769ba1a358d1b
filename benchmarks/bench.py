"""How close torchlint runs to the speed limit its parser sets, on a folder given as argument.

    python benchmarks/bench.py FOLDER [--jobs N] [--repeat R] [--tables all,torch]

In one run, over the files `torchlint FOLDER` checks (its own discovery: .gitignore, default
excludes):

- parse-only: read, decode and `libcst.parse_module` every file in one process, nothing else;
- torchlint cold, `--no-cache`, with `-j 1` (one process, the fair comparison with parse-only)
  and with `-j N` (every core);
- torchlint warm: a first run fills a fresh cache folder, the second reads it;

each as a separate process started the same way, measured for wall time, CPU time (user + system,
workers included) and peak resident memory (of the largest single process). Ratios: cold `-j 1`
over parse-only, in CPU time (the goal is <= 1.5), and warm over cold, in wall time (the goal is
<= 0.1).

The prefilter lets torchlint skip the LibCST parse of files in which no rule can fire (no
`torch`), which a bare parse cannot skip, so the all-files ratio flatters torchlint on trees with
many such files. The same measurements are therefore repeated on the torch files only (those
containing one of the prefilter's evidence words, nearly always `torch`), where torchlint must do
everything a parse does and more.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Measure:
    label: str
    wall: float
    cpu: float
    rss_mb: float


def _measured(command: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall, cpu, peak rss MB) of ``command``, best wall of ``repeat`` runs; each run goes
    through a fresh wrapper process so the peak memory is that run's own."""
    best = None
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--measure", "--", *command], capture_output=True, text=True, check=True, env=env
        ).stdout
        wall, cpu, rss = json.loads(out.strip().splitlines()[-1])
        if best is None or wall < best[0]:
            best = (wall, cpu, rss)
    return best


def _measure_child(command: list[str]) -> None:
    started = time.perf_counter()
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        sys.stderr.write(completed.stderr.decode(errors="replace"))
        raise SystemExit(f"{command[:3]}... exited with {completed.returncode}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # ru_maxrss is in KiB on Linux, bytes on macOS
    rss = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    print(json.dumps([wall, usage.ru_utime + usage.ru_stime, rss]))


def _parse_only(list_file: str) -> None:
    """The baseline: what a bare LibCST parse of the same files costs, reading and decoding
    included (torchlint does both too)."""
    import libcst

    from torchlint.source import UndecodableSource, decode

    failed = 0
    for name in Path(list_file).read_text(encoding="utf-8").splitlines():
        try:
            libcst.parse_module(decode(Path(name).read_bytes()).text)
        except (UndecodableSource, libcst.ParserSyntaxError, RecursionError, OSError):
            failed += 1
    if failed:
        print(f"{failed} files did not parse", file=sys.stderr)


def _revision() -> str:
    """The commit of the torchlint checkout measured, when it is one."""
    import torchlint

    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(torchlint.__file__).parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return torchlint.__version__
    return f"{torchlint.__version__} ({described})"


def _discover(folder: Path) -> list[Path]:
    from torchlint.config import ConfigResolver
    from torchlint.runner import RunOptions, targets

    return targets([folder], ConfigResolver(), RunOptions())


def _torch_files(paths: list[Path]) -> list[Path]:
    """The files the prefilter lets through with the default rule selection."""
    from torchlint import prefilter, registry
    from torchlint.source import UndecodableSource, decode

    codes = frozenset(registry.all_rules())
    kept = []
    for path in paths:
        try:
            text = decode(path.read_bytes()).text
        except (UndecodableSource, OSError):
            continue
        if prefilter.can_fire(text, codes):
            kept.append(path)
    return kept


def _lines(paths: list[Path]) -> int:
    return sum(path.read_bytes().count(b"\n") for path in paths)


def _snapshot(work: Path) -> dict[str, str]:
    """An environment that runs a copy of the torchlint package taken now, so that edits made
    while the benchmark runs (a development checkout) change neither the code measured nor the
    cache's build id between the cold and the warm run."""
    import torchlint

    shutil.copytree(Path(torchlint.__file__).parent, work / "snapshot" / "torchlint", ignore=shutil.ignore_patterns("__pycache__"))
    return {**os.environ, "PYTHONPATH": str(work / "snapshot")}


def _table(
    title: str, paths: list[Path], jobs: int, repeat: int, work: Path, env: dict[str, str], folder_arg: list[str] | None
) -> str:
    """Measure one set of files; ``folder_arg`` lets torchlint discover them itself (the real
    command line) instead of receiving the list."""
    list_file = work / f"files-{len(paths)}.txt"
    list_file.write_text("\n".join(str(p) for p in paths) + "\n", encoding="utf-8")
    targets = folder_arg or [str(p) for p in paths]
    torchlint = [sys.executable, "-m", "torchlint", "check", "-q", "--exit-zero"]
    cache = work / f"cache-{len(paths)}"
    shutil.rmtree(cache, ignore_errors=True)
    runs = [
        ("LibCST parse only (1 process)", [sys.executable, __file__, "--parse-only", str(list_file)]),
        ("torchlint cold, -j 1 (no cache)", [*torchlint, "--no-cache", "-j", "1", *targets]),
        (f"torchlint cold, -j {jobs} (no cache)", [*torchlint, "--no-cache", "-j", str(jobs), *targets]),
        (f"torchlint cold, -j {jobs}, filling the cache", [*torchlint, "--cache-dir", str(cache), "-j", str(jobs), *targets]),
        (f"torchlint warm, -j {jobs} (cache)", [*torchlint, "--cache-dir", str(cache), "-j", str(jobs), *targets]),
    ]
    measures = []
    for label, command in runs:
        # The cache-filling run must start cold every time it is repeated.
        times = 1 if "filling" in label else repeat
        if "filling" in label:
            shutil.rmtree(cache, ignore_errors=True)
        measures.append(Measure(label, *_measured(command, times, env)))
        print(f"  {label}: {measures[-1].wall:.2f}s wall", file=sys.stderr)
    lines = _lines(paths)
    parse, cold1, coldn, _, warm = measures
    rows = [
        f"**{title}**: {len(paths)} files, {lines:,} lines",
        "",
        "| run | wall s | CPU s | files/s | lines/s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for m in measures:
        rows.append(
            f"| {m.label} | {m.wall:.2f} | {m.cpu:.2f} | {len(paths) / m.wall:,.0f} | {lines / m.wall:,.0f} | {m.rss_mb:.0f} |"
        )
    rows += [
        "",
        f"- cold -j 1 / parse-only, CPU time: **{cold1.cpu / parse.cpu:.2f}x** (goal <= 1.5); wall: {cold1.wall / parse.wall:.2f}x",
        f"- warm / cold -j {jobs}, wall time: **{warm.wall / coldn.wall:.3f}x** (goal <= 0.1); warm / cold -j 1: {warm.wall / cold1.wall:.3f}x",
        f"- cold -j {jobs} / cold -j 1, wall time: {coldn.wall / cold1.wall:.2f}x",
        "",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--jobs", type=int, default=None, help="workers for the -j N runs (default: CPU count)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement; the best wall time counts")
    parser.add_argument(
        "--tables",
        default="all,torch",
        help="which file sets to measure: all (torchlint discovers the folder), torch (the files with evidence words)",
    )
    args = parser.parse_args()
    from torchlint.runner import default_jobs

    jobs = args.jobs or default_jobs()
    folder = args.folder.resolve()
    paths = _discover(folder)
    torch_paths = _torch_files(paths)
    print(
        f"# {folder.name}: {len(paths)} Python files, {len(torch_paths)} with torch; "
        f"{os.cpu_count()} CPUs ({default_jobs()} available), Python {sys.version.split()[0]}, "
        f"torchlint {_revision()}, load average {os.getloadavg()[0]:.1f} at the start",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="torchlint-bench-") as tmp:
        work = Path(tmp)
        env = _snapshot(work)
        tables = args.tables.split(",")
        if "all" in tables:
            print(_table(f"{folder.name}, all files", paths, jobs, args.repeat, work, env, [str(folder)]), flush=True)
        if "torch" in tables:
            print(_table(f"{folder.name}, torch files only", torch_paths, jobs, args.repeat, work, env, None), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        _measure_child(sys.argv[3:])
    elif sys.argv[1:2] == ["--parse-only"]:
        _parse_only(sys.argv[2])
    else:
        main()
