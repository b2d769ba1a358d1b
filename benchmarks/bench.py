"""How close torchlint runs to the speed limit its parser sets: the one way to measure it.

    python benchmarks/bench.py [FOLDER ...] [--dense 1260] [--repeat 3] [--tables all,torch]
                               [--no-lsp] [--no-startup] [--parallel] [--cold-only]

One report, every ratio taken from measurements of the same run:

- each FOLDER, over the files `torchlint FOLDER` checks (its own discovery: .gitignore, default
  excludes); and a tree of ``--dense`` small training scripts generated for the run
  (generate_scripts.py --dense: every file a training loop, the case where the analysis has the
  most work per parsed line). For each: parse-only (read, decode and `libcst.parse_module` every
  file in one process, nothing else), torchlint cold (`--no-cache -j 1`, one process: the fair
  comparison), a run filling a fresh cache and a warm run reading it; with ``--parallel`` also
  cold with one job per core;
- start-up: `python -c "import libcst"` against `torchlint check` of one small file;
- the language server: didChange to publishDiagnostics for a 300- and a 2,000-line script, against
  the file's LibCST parse (lsp_latency.py).

Every command is a separate process started the same way, measured for wall time, CPU time (user
+ system, workers included) and peak resident memory (of the largest single process). The
measurements are taken in ``--repeat`` rounds, each round running every command once in turn, so
that a change in the machine's load hits all of them alike; the table gives the median of each
and each ratio is the median of the rounds' ratios. Ratios are of CPU time: on a shared machine
wall time mostly measures the other jobs. The load average is printed at the start and the end.

The prefilter lets torchlint skip the LibCST parse of files in which no rule can fire (no
`torch`), which a bare parse cannot skip, so the all-files ratio flatters torchlint on trees with
many such files. The same measurements are therefore repeated on the torch files only (those
containing one of the prefilter's evidence words, nearly always `torch`), where torchlint must do
everything a parse does and more.

Several FOLDERs (library trees: pytorch-image-models, diffusers, detectron2) are measured in one
run and the report ends with one line per table; ``--cold-only`` leaves out the two cache runs,
which on a large tree (diffusers: a million lines) are the longest part of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Measure:
    """One command's measurements over the rounds."""

    label: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def _measure(command: list[str], env: dict[str, str], into: Measure) -> None:
    """Run ``command`` once through a fresh wrapper process (so that the peak memory is this
    run's own) and add its wall time, CPU time and peak memory to ``into``."""
    out = subprocess.run(
        [sys.executable, __file__, "--measure", "--", *command], capture_output=True, text=True, check=True, env=env
    ).stdout
    wall, cpu, rss = json.loads(out.strip().splitlines()[-1])
    into.walls.append(wall)
    into.cpus.append(cpu)
    into.rss.append(rss)


def _ratio(numerator: Measure, denominator: Measure) -> float:
    """The median over the rounds of the CPU time ratio."""
    return statistics.median(n / d for n, d in zip(numerator.cpus, denominator.cpus))


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
    cache's build id between the cold and the warm run. The copy's bytecode is compiled first, as
    pip does when it installs a package: otherwise, with PYTHONDONTWRITEBYTECODE set (or a
    read-only checkout), every run would compile torchlint's sources again (a third of the
    start-up)."""
    import compileall

    import torchlint

    package = work / "snapshot" / "torchlint"
    shutil.copytree(Path(torchlint.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(package, quiet=1)
    return {**os.environ, "PYTHONPATH": str(work / "snapshot")}


@dataclass
class Summary:
    """One table's line in the report's closing summary."""

    title: str
    files: int
    parse: float
    cold: float
    ratio: float
    rounds: list[float]


def _table(
    title: str,
    paths: list[Path],
    jobs: int | None,
    repeat: int,
    work: Path,
    env: dict[str, str],
    folder_arg: list[str] | None,
    summaries: list[Summary],
    cold_only: bool = False,
) -> str:
    """Measure one set of files; ``folder_arg`` lets torchlint discover them itself (the real
    command line) instead of receiving the list; ``cold_only`` leaves out the cache runs."""
    list_file = work / f"files-{len(paths)}.txt"
    list_file.write_text("\n".join(str(p) for p in paths) + "\n", encoding="utf-8")
    targets = folder_arg or [str(p) for p in paths]
    torchlint = [sys.executable, "-m", "torchlint", "check", "-q", "--exit-zero"]
    cache = work / f"cache-{len(paths)}"
    runs = [
        ("LibCST parse only (1 process)", [sys.executable, __file__, "--parse-only", str(list_file)]),
        ("torchlint cold, -j 1 (no cache)", [*torchlint, "--no-cache", "-j", "1", *targets]),
    ]
    if not cold_only:
        runs += [
            ("torchlint cold, -j 1, filling the cache", [*torchlint, "--cache-dir", str(cache), "-j", "1", *targets]),
            ("torchlint warm (cache)", [*torchlint, "--cache-dir", str(cache), *targets]),
        ]
    if jobs:
        runs.append((f"torchlint cold, -j {jobs} (no cache)", [*torchlint, "--no-cache", "-j", str(jobs), *targets]))
    measures = [Measure(label) for label, _ in runs]
    for round_ in range(repeat):
        shutil.rmtree(cache, ignore_errors=True)  # the filling run starts cold every round
        for (label, command), measure in zip(runs, measures):
            _measure(command, env, measure)
        print(f"  {title}, round {round_ + 1}: cold/parse {measures[1].cpus[-1] / measures[0].cpus[-1]:.2f}", file=sys.stderr)
    lines = _lines(paths)
    parse, cold = measures[:2]
    rows = [
        f"**{title}**: {len(paths)} files, {lines:,} lines; medians of {repeat} rounds",
        "",
        "| run | wall s | CPU s | files/s (CPU) | lines/s (CPU) | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for m in measures:
        rows.append(
            f"| {m.label} | {m.wall:.2f} | {m.cpu:.2f} | {len(paths) / m.cpu:,.0f} | {lines / m.cpu:,.0f} | {max(m.rss):.0f} |"
        )
    rows += [
        "",
        f"- cold -j 1 / parse-only, CPU time: **{_ratio(cold, parse):.2f}x** (rounds: "
        + ", ".join(f"{c / p:.2f}" for c, p in zip(cold.cpus, parse.cpus))
        + ")",
    ]
    if not cold_only:
        rows.append(f"- warm / cold -j 1, CPU time: **{_ratio(measures[3], cold):.3f}x**")
    if jobs:
        rows.append(f"- cold -j {jobs} / cold -j 1, wall time: {measures[-1].wall / cold.wall:.2f}x")
    rounds = [c / p for c, p in zip(cold.cpus, parse.cpus)]
    summaries.append(Summary(title, len(paths), parse.cpu, cold.cpu, _ratio(cold, parse), rounds))
    return "\n".join(rows) + "\n"


def _summary(summaries: list[Summary]) -> str:
    """Every table's cold/parse ratio in one place, the figure issue 14 sets its targets on."""
    rows = [
        "**Summary**: cold -j 1 / parse-only, CPU time (medians of the rounds)",
        "",
        "| files measured | files | parse-only CPU s | cold -j 1 CPU s | cold / parse | rounds |",
        "|---|---:|---:|---:|---:|---|",
    ]
    rows += [
        f"| {s.title} | {s.files} | {s.parse:.2f} | {s.cold:.2f} | **{s.ratio:.2f}x** | {', '.join(f'{r:.2f}' for r in s.rounds)} |"
        for s in summaries
    ]
    return "\n".join(rows) + "\n"


def _startup(repeat: int, work: Path, env: dict[str, str]) -> str:
    """What a run over one small file costs next to importing LibCST, torchlint's one heavy import."""
    import generate_scripts

    script = work / "startup" / "train.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(generate_scripts.dense_script(0, seed=0), encoding="utf-8")
    runs = [
        ("python -c 'import libcst'", [sys.executable, "-c", "import libcst"]),
        ("torchlint --version", [sys.executable, "-m", "torchlint", "--version"]),
        ("torchlint check --no-cache one_file.py", [sys.executable, "-m", "torchlint", "check", "-q", "--exit-zero", "--no-cache", str(script)]),
    ]
    measures = [Measure(label) for label, _ in runs]
    for _ in range(repeat):
        for (_, command), measure in zip(runs, measures):
            _measure(command, env, measure)
    rows = [f"**Start-up**: medians of {repeat} rounds", "", "| run | wall s | CPU s |", "|---|---:|---:|"]
    rows += [f"| {m.label} | {m.wall:.3f} | {m.cpu:.3f} |" for m in measures]
    rows += ["", f"- one file / import libcst, CPU time: **{_ratio(measures[2], measures[0]):.2f}x**"]
    return "\n".join(rows) + "\n"


def _lsp(repeat: int, work: Path) -> str:
    """didChange -> publishDiagnostics against the file's parse, for a 300- and a 2,000-line script."""
    import lsp_latency

    rows = [
        f"**Language server**: didChange -> publishDiagnostics, default settings, {lsp_latency.EDITS} edits per round, "
        f"medians of {repeat} rounds",
        "",
        "| lines | findings | parse ms | engine ms | latency ms | latency / parse | server CPU / parse CPU |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in (300, 2000):
        results = [lsp_latency.measure(size, work / f"lsp-{size}-{r}") for r in range(repeat)]
        ratio = statistics.median(r.latency / r.parse for r in results)
        middle = sorted(results, key=lambda r: r.latency / r.parse)[len(results) // 2]
        cpus = [r.server_cpu / r.parse_cpu for r in results if r.server_cpu is not None]
        cpu = f"{statistics.median(cpus):.2f}x" if cpus else "unknown"
        rows.append(
            f"| {middle.lines:,} | {middle.findings} | {middle.parse * 1000:.1f} | {middle.engine * 1000:.1f} | "
            f"{middle.latency * 1000:.1f} | **{ratio:.2f}x** | {cpu} |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="*")
    parser.add_argument("--dense", type=int, default=1260, metavar="COUNT", help="generated small training scripts to measure (0: none)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of measurements; medians are reported")
    parser.add_argument(
        "--tables",
        default="all,torch",
        help="which file sets of each FOLDER to measure: all (torchlint discovers the folder), torch (the files with evidence words)",
    )
    parser.add_argument("--parallel", action="store_true", help="also measure a cold run with one job per core")
    parser.add_argument("--cold-only", action="store_true", help="leave out the runs that fill and read a cache")
    parser.add_argument("--no-lsp", dest="lsp", action="store_false", help="leave out the language server's latency")
    parser.add_argument("--no-startup", dest="startup", action="store_false", help="leave out the start-up costs")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from torchlint.runner import default_jobs

    jobs = (default_jobs() if args.parallel else None)
    print(
        f"# torchlint {_revision()}: {os.cpu_count()} CPUs ({default_jobs()} available), Python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.1f} at the start",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="torchlint-bench-") as tmp:
        work = Path(tmp)
        env = _snapshot(work)
        tables = args.tables.split(",")
        summaries: list[Summary] = []
        for folder in (folder.resolve() for folder in args.folders):
            paths = _discover(folder)
            torch_paths = _torch_files(paths)
            print(f"\n## {folder.name}: {len(paths)} Python files, {len(torch_paths)} with torch\n", flush=True)
            if "all" in tables:
                print(_table(f"{folder.name}, all files", paths, jobs, args.repeat, work, env, [str(folder)], summaries, args.cold_only), flush=True)
            if "torch" in tables:
                print(_table(f"{folder.name}, torch files only", torch_paths, jobs, args.repeat, work, env, None, summaries, args.cold_only), flush=True)
        if args.dense:
            import generate_scripts

            dense = work / "dense"
            generate_scripts.generate(dense, args.dense, dense=True)
            title = f"{args.dense:,} dense training scripts (generate_scripts.py --dense)"
            print(f"\n## {title}\n", flush=True)
            print(_table(title, _discover(dense), jobs, args.repeat, work, env, [str(dense)], summaries, args.cold_only), flush=True)
        if summaries:
            print(_summary(summaries), flush=True)
        if args.startup:
            print(_startup(max(args.repeat, 5), work, env), flush=True)
        if args.lsp:
            print(_lsp(args.repeat, work), flush=True)
    print(f"Load average {os.getloadavg()[0]:.1f} at the end.")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        _measure_child(sys.argv[3:])
    elif sys.argv[1:2] == ["--parse-only"]:
        _parse_only(sys.argv[2])
    else:
        main()
