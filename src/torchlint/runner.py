"""Checking many files: discovery, per-file settings and exclusion, the result cache, then the
engine per file, in worker processes when there is enough work to share.

A run first looks every file up in the cache, in this process: a warm run starts no workers.
The misses go to a process pool in chunks, and results come back in input order, so the output
never depends on the number of jobs. Workers return diagnostics only; no tree outlives the check
of its file, so memory stays flat however many files there are.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from torchlint import analysis, files, memory, profile, registry
from torchlint.cache import Cache, directory_for
from torchlint.config import BUILD_OUTPUT, DEFAULT_EXCLUDE, ConfigResolver, Settings
from torchlint.diagnostics import Diagnostic

# Below this much source a pool costs more than it saves (forking and collecting results takes
# tens of milliseconds; LibCST parses roughly 15,000 lines, 500 KB, a second).
_POOL_MIN_BYTES = 64 * 1024
_CHUNK_MAX = 8


@dataclass(frozen=True)
class RunOptions:
    respect_gitignore: bool = True
    jobs: int | None = None  # None: one per available CPU
    cache: bool = True
    cache_dir: Path | None = None  # instead of each project's .torchlint_cache
    # ruff's --force-exclude: excludes apply to files named on the command line too, which is
    # what a pre-commit hook needs (pre-commit names every staged file explicitly).
    force_exclude: bool = False


def default_jobs() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def targets(
    paths: Sequence[Path], resolver: ConfigResolver, options: RunOptions, skipped: list[int] | None = None
) -> list[Path]:
    """The files to check; ``skipped`` gets, per excluded file or folder, how many files it held."""
    explicit = set(paths)

    def excluded(path: Path, real: Path, is_dir: bool) -> bool:
        if path in explicit and not options.force_exclude:
            return False
        settings = resolver.for_folder(real if is_dir else real.parent)
        # The default names of build output skip a folder only when it holds no package.
        build = BUILD_OUTPUT if settings.exclude == DEFAULT_EXCLUDE else ()
        patterns = tuple(p for p in settings.exclude if p not in build) + settings.extend_exclude
        anywhere = path in explicit
        test = files.excluded_anywhere if anywhere else files.excluded_entry
        return test(path, is_dir, patterns, settings.root, real) or files.excluded_build_output(
            path, is_dir, build, settings.root, anywhere
        )

    return list(files.discover(paths, excluded, resolver.real_path, options.respect_gitignore, skipped))


class _Task(NamedTuple):
    path: str
    settings: Settings
    cache: Cache | None


def check_files(
    paths: Sequence[Path], resolver: ConfigResolver, options: RunOptions = RunOptions()
) -> Iterator[analysis.Analysis]:
    """Analyses in input order, each with its diagnostics only (no tree, no source)."""
    caches: dict[Path, Cache] = {}

    def cache_for(settings: Settings) -> Cache | None:
        if not options.cache:
            return None
        directory = directory_for(settings, options.cache_dir)
        if directory not in caches:
            caches[directory] = Cache(directory)
        return caches[directory]

    tasks = []
    for path in paths:
        settings = resolver.for_path(path)
        tasks.append(_Task(os.fspath(path), settings, cache_for(settings)))
    known, work_bytes = _known_results(tasks)
    misses = [task for index, task in enumerate(tasks) if index not in known]
    with memory.batch():
        try:
            computed = _check_all(misses, options.jobs or default_jobs(), work_bytes)
            for index, task in enumerate(tasks):
                diagnostics = known.pop(index) if index in known else next(computed)
                yield analysis.Analysis(task.path, diagnostics)
        finally:
            # the trees this process kept for later files: the run has none (a run whose every
            # result was cached never imported the index)
            project = sys.modules.get("torchlint.project.index")
            if project is not None:
                project.shared().forget_trees()


def _known_results(tasks: Sequence[_Task]) -> tuple[dict[int, list[Diagnostic]], int]:
    """Results that need no analysis (cache hits, unreadable files), and the bytes left to check."""
    known: dict[int, list[Diagnostic]] = {}
    work_bytes = 0
    for index, task in enumerate(tasks):
        if task.cache is None:
            work_bytes += _size(task.path)
            continue
        data = analysis.read(Path(task.path))
        if isinstance(data, Diagnostic):
            known[index] = [data]
            continue
        hit = task.cache.load(task.path, task.cache.key(data, task.path, task.settings))
        if hit is not None:
            known[index] = hit
        else:
            work_bytes += len(data)
    return known, work_bytes


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _check(task: _Task) -> list[Diagnostic]:
    from torchlint import engine  # LibCST, the model and the rules: only a file the cache lacks needs them
    from torchlint.project import index as project_index

    data = analysis.read(Path(task.path))
    if isinstance(data, Diagnostic):
        return [data]
    project_index.shared().store = task.cache  # module summaries are cached with the results
    checked = engine.analyze(data, task.path, task.settings)
    if task.cache is not None:
        # Keyed by the bytes analysed here, not those looked up earlier: an edit in between
        # can never store new results under an old key.
        task.cache.store(task.path, task.cache.key(data, task.path, task.settings), checked.diagnostics, checked.used)
    return checked.diagnostics


def _check_all(tasks: Sequence[_Task], jobs: int, work_bytes: int) -> Iterator[list[Diagnostic]]:
    if jobs <= 1 or len(tasks) < 2 or work_bytes < _POOL_MIN_BYTES:
        return map(_check, tasks)
    return _check_in_pool(tasks, jobs)


def _check_in_pool(tasks: Sequence[_Task], jobs: int) -> Iterator[list[Diagnostic]]:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # Small chunks balance the load (file sizes vary a hundredfold); a few files per chunk
    # amortise the round trip.
    # A forked worker inherits what is imported here: LibCST, the model and the rules, once.
    from torchlint import engine  # noqa: F401

    for rule in registry.all_rules().values():
        rule.load()
    size = max(1, min(_CHUNK_MAX, len(tasks) // (jobs * 8)))
    chunks = [tasks[start : start + size] for start in range(0, len(tasks), size)]
    done = 0
    parent_profile = profile.active()
    try:
        with ProcessPoolExecutor(
            min(jobs, len(chunks)),
            mp_context=_context(),
            initializer=_start_worker,
            initargs=(parent_profile is not None,),
        ) as pool:
            for results, snapshot in pool.map(_check_chunk, chunks):
                if parent_profile is not None:
                    parent_profile.merge(snapshot)
                for diagnostics in results:
                    done += 1
                    yield diagnostics
    except BrokenProcessPool:
        # A worker was killed (out of memory, a signal): finish the run in this process.
        yield from map(_check, tasks[done:])


def _context():
    import multiprocessing

    # fork starts a worker in milliseconds with everything already imported (and the rules the
    # parent registered); elsewhere fork is unsafe and spawn is the default.
    return multiprocessing.get_context("fork" if sys.platform == "linux" else None)


def _start_worker(profiling: bool) -> None:
    memory.start_worker()
    if profiling:
        profile.start()  # a fresh one: a forked worker inherits the parent's
    else:
        profile.stop()


def _check_chunk(tasks: Iterable[_Task]) -> tuple[list[list[Diagnostic]], dict]:
    results = [_check(task) for task in tasks]
    recorded = profile.active()
    if recorded is None:
        return results, {}
    profile.start()
    return results, recorded.snapshot()


def check_stdin(filename: str, resolver: ConfigResolver) -> analysis.Analysis:
    from torchlint import engine

    data = sys.stdin.buffer.read()
    return engine.analyze(data, filename, resolver.for_path(Path(filename)))
