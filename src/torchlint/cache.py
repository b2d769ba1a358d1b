"""The result cache: a file's diagnostics, reused while its bytes, its settings and torchlint stay
the same.

Layout, like ruff's: `<cache dir>/.gitignore` (`*`) and `CACHEDIR.TAG`, then `<cache dir>/<build>/`
with one JSON entry per checked file, named by a digest of the file's absolute path. An entry
records the key it was computed for, a digest of the file's bytes, the settings fingerprint and the
codes per-file-ignores turn off for that path; a lookup with any other key is a miss. It also
records the project modules whose summaries the check used (project/index.py), each with the
digest of its contents: an entry is a miss as soon as one of them changed, so editing `engine.py`
checks `train.py` again. Function summaries of project modules are kept too, under
`<build>/summaries/`, one pickled entry per module and summary level, each summary valid while its
module and the modules it was read with are unchanged. `<build>`
digests torchlint's version and its own source files, the versions of LibCST and Python (which
decide what parses) and the sources of rules registered from outside the package: after an
upgrade, or an edit of a rule in a development checkout, no old entry is ever read.

An entry is written to a temporary file in its folder and renamed over the old one, so a reader
sees a whole entry or none, and concurrent runs can share a cache. The cache is best effort: a
folder that cannot be written just means no caching.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

from torchlint import __version__, profile, registry
from torchlint.config import Settings
from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from torchlint.project import layout

DEFAULT_DIRECTORY = ".torchlint_cache"
# Builds of other torchlint versions are deleted once unused for this long; a project that runs
# two versions side by side (a pre-commit environment and a virtualenv) keeps both.
_STALE_BUILD_SECONDS = 7 * 24 * 3600
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by torchlint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def directory_for(settings: Settings, override: Path | None = None) -> Path:
    """Where the cache of files under ``settings`` lives: ``override`` (--cache-dir), the
    configured `cache-dir` (relative to the configuration's folder), or `.torchlint_cache` at the
    project root (the folder of the configuration, else the working directory)."""
    if override is not None:
        return override
    root = settings.root or Path.cwd()
    return root / Path(settings.cache_dir or DEFAULT_DIRECTORY).expanduser()


class Cache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.entries = directory / build_id()
        self._created = False
        self._digests: dict[str, tuple[tuple[int, int] | None, str | None]] = {}
        self._function_entries: dict[tuple[str, int], tuple[str, dict]] = {}

    def key(self, data: bytes, path: str, settings: Settings) -> str:
        ignored = ",".join(sorted(settings.ignored_for_path(path)))
        digest = hashlib.sha256(data)
        digest.update(f"\0{_fingerprint(settings)}\0{ignored}".encode())
        return digest.hexdigest()

    def _entry(self, path: str) -> Path:
        return self.entries / hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:40]

    def load(self, path: str, key: str) -> list[Diagnostic] | None:
        """The diagnostics stored for ``path`` under ``key``, reported under ``path``; None on a
        miss, or when a module whose summary the check used has changed since."""
        with profile.timer(profile.CACHE_LOOKUP):
            try:
                entry = json.loads(self._entry(path).read_bytes())
            except (OSError, ValueError):
                return None
            if not isinstance(entry, dict) or entry.get("key") != key:
                return None
            try:
                if not self._unchanged(entry["used"]):
                    return None
                return [decode(item, path) for item in entry["diagnostics"]]
            except (KeyError, TypeError, ValueError):
                return None  # written by a build with the same id but another layout: recompute

    def store(self, path: str, key: str, diagnostics: Sequence[Diagnostic], used: Mapping[str, str] | None = None) -> None:
        """Keep ``diagnostics`` for ``path`` under ``key``; ``used``: the project modules whose
        summaries they depend on, path -> content digest."""
        with profile.timer(profile.CACHE_STORE):
            entry = {"key": key, "used": sorted((used or {}).items()), "diagnostics": [encode(d) for d in diagnostics]}
            self._write(self._entry(path), json.dumps(entry, separators=(",", ":")).encode())

    def _write(self, target: Path, data: bytes) -> None:
        try:
            self._create()
            target.parent.mkdir(exist_ok=True)
            _write_atomically(target, data)
        except OSError:
            pass  # a read-only checkout still lints, uncached

    def _unchanged(self, used) -> bool:
        return all(self.digest(path) == digest for path, digest in used)

    def digest(self, path: str) -> str | None:
        """The content digest of the file at ``path`` now (None when it cannot be read); read once
        per run and size and modification time. A project folder's listing key (see
        project/layout.py) stands for all of its modules: their listing's digest, read once per run."""
        if path.endswith(os.sep):
            if path not in self._digests:
                modules = layout.project_modules(Path(path))
                self._digests[path] = (None, layout.listing_digest(modules) if modules is not None else None)
            return self._digests[path][1]
        try:
            stat = os.stat(path)
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        known = self._digests.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        try:
            with open(path, "rb") as stream:
                digest = content_digest(stream.read())
        except OSError:
            return None
        self._digests[path] = (stamp, digest)
        return digest

    # -- module summaries (project/index.py) ---------------------------------------------------
    def _summary_entry(self, path: str, kind: str) -> Path:
        name = hashlib.sha256(f"{os.path.abspath(path)}\0{kind}".encode()).hexdigest()[:40]
        return self.entries / "summaries" / name

    def _read_pickle(self, entry: Path):
        import pickle  # summaries of project modules only: most runs read none

        try:
            return pickle.loads(entry.read_bytes())
        except (OSError, ValueError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError):
            return None

    def _functions(self, path: str, digest: str, level: int) -> dict:
        """The function summaries stored for the module at ``path`` with contents ``digest``."""
        key = (path, level)
        known = self._function_entries.get(key)
        if known is None or known[0] != digest:
            found = self._read_pickle(self._summary_entry(path, f"functions {level}"))
            valid = isinstance(found, tuple) and len(found) == 2 and found[0] == digest and isinstance(found[1], dict)
            known = self._function_entries[key] = (digest, found[1] if valid else {})
        return known[1]

    def load_function(self, path: str, digest: str, level: int, name: str):
        """The summary of function ``name`` stored for that module and level, while every module
        it was read with is unchanged; None otherwise."""
        with profile.timer(profile.CACHE_LOOKUP):
            found = self._functions(path, digest, level).get(name)
            return found if found is not None and self._unchanged(found.depends_on) else None

    def store_function(self, path: str, digest: str, level: int, name: str, summary) -> None:
        import pickle

        with profile.timer(profile.CACHE_STORE):
            functions = self._functions(path, digest, level)
            functions[name] = summary
            data = pickle.dumps((digest, functions), pickle.HIGHEST_PROTOCOL)
            self._write(self._summary_entry(path, f"functions {level}"), data)

    def _create(self) -> None:
        if self._created:
            return
        if not self.entries.is_dir():
            self.entries.mkdir(parents=True, exist_ok=True)
            _prune_builds(self.directory, keep=self.entries.name)
        for name, content in ((".gitignore", "# Automatically created by torchlint.\n*\n"), ("CACHEDIR.TAG", _CACHEDIR_TAG)):
            if not (self.directory / name).exists():
                _write_atomically(self.directory / name, content.encode())
        os.utime(self.entries)  # marks this build as in use for _prune_builds
        self._created = True


def _write_atomically(target: Path, data: bytes) -> None:
    import tempfile  # only a run that writes the cache needs it

    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the cache from other users of the tree
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise


def _prune_builds(directory: Path, keep: str) -> None:
    """Delete the builds of other torchlint versions that no run has used for a week."""
    import shutil  # only when a new build starts its folder
    now = time.time()
    with suppress(OSError):
        for child in directory.iterdir():
            if child.is_dir() and child.name != keep and now - child.stat().st_mtime > _STALE_BUILD_SECONDS:
                shutil.rmtree(child, ignore_errors=True)


def content_digest(data: bytes) -> str:
    """The digest that identifies a file's contents in the cache and in module summaries."""
    return hashlib.sha256(data).hexdigest()[:32]


@functools.cache
def build_id() -> str:
    """torchlint's version and a digest of everything in this installation that decides results."""
    digest = hashlib.sha256(f"{sys.version}\0".encode() + _libcst_version())
    package = Path(__file__).resolve().parent
    for source in sorted(package.rglob("*")):
        if source.suffix in (".py", ".json", ".toml") and "__pycache__" not in source.parts:
            digest.update(source.relative_to(package).as_posix().encode() + b"\0" + source.read_bytes())
    return f"{__version__}-{digest.hexdigest()[:16]}"


def _libcst_version() -> bytes:
    """The text of LibCST's version file, read rather than imported: importing LibCST is most of
    what a run answered from the cache would otherwise cost."""
    from importlib.util import find_spec

    spec = find_spec("libcst")
    folders = spec.submodule_search_locations if spec is not None else None
    for folder in folders or ():
        with suppress(OSError):
            return (Path(folder) / "_version.py").read_bytes()
    return b""


_FINGERPRINTS: dict[int, tuple[Settings, str]] = {}


def _fingerprint(settings: Settings) -> str:
    """The settings fingerprint, plus the sources of enabled rules that live outside torchlint
    (plugins, the test suite's probe rule), which build_id does not cover. Computed once per
    Settings object: a run shares a handful of them across all its files."""
    known = _FINGERPRINTS.get(id(settings))
    if known is not None and known[0] is settings:
        return known[1]
    digest = hashlib.sha256(settings.fingerprint().encode())
    rules = registry.all_rules()
    for code in sorted(settings.enabled_codes):
        rule = rules.get(code)
        if isinstance(rule, type) and not rule.__module__.startswith("torchlint."):
            import inspect

            with suppress(OSError, TypeError):
                digest.update(Path(inspect.getfile(rule)).read_bytes())
    if len(_FINGERPRINTS) > 256:  # a long-lived process (the test suite) makes many Settings
        _FINGERPRINTS.clear()
    _FINGERPRINTS[id(settings)] = (settings, digest.hexdigest())
    return _FINGERPRINTS[id(settings)][1]


def encode(diagnostic: Diagnostic) -> list:
    """A diagnostic without its path (the entry belongs to one path; it is restored on load)."""
    fix = diagnostic.fix
    return [
        diagnostic.code,
        diagnostic.message,
        [diagnostic.start.line, diagnostic.start.column, diagnostic.end.line, diagnostic.end.column],
        diagnostic.severity.value,
        None
        if fix is None
        else [
            fix.message,
            fix.applicability.value,
            [[e.start.line, e.start.column, e.end.line, e.end.column, e.content] for e in fix.edits],
        ],
        diagnostic.confirmation,
        diagnostic.cell,
    ]


def decode(item: list, path: str) -> Diagnostic:
    code, message, (line, column, end_line, end_column), severity, fix, confirmation, cell = item
    if fix is not None:
        fix_message, applicability, edits = fix
        fix = Fix(
            fix_message,
            Applicability(applicability),
            tuple(Edit(Position(a, b), Position(c, d), content) for a, b, c, d, content in edits),
        )
    return Diagnostic(
        code,
        message,
        path,
        Position(line, column),
        Position(end_line, end_column),
        Severity(severity),
        fix,
        confirmation,
        cell,
    )
