"""Settings: `[tool.torchlint]` in the nearest pyproject.toml (or a torchlint.toml), validated.

Selection follows ruff: ``select`` replaces the default set, ``extend-select`` adds to it,
``ignore`` removes; between a selecting and an ignoring prefix the more specific one wins, and on
a tie ``ignore`` wins. Preview rules run only in preview mode (``preview = true`` or
``--preview``), where selectors reach them like any other rule; outside it, selecting one has no
effect and says so. Unknown keys and wrong types are errors, never silently ignored.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchlint import registry
from torchlint.files import RealPaths

if TYPE_CHECKING:
    import jsonschema

DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pytest_cache",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".torchlint_cache",
    ".venv",
    "__pypackages__",
    "__pycache__",
    "_build",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

# Default excludes that name build output. In PyTorch projects `dist` is as often the package of
# distributed-training helpers, so such a folder is skipped only when it holds no Python package
# (see files.holds_package); a name the user's own settings list is excluded as written.
BUILD_OUTPUT: tuple[str, ...] = ("build", "dist")

# In order of precedence within one folder, as ruff orders .ruff.toml, ruff.toml, pyproject.toml.
CONFIG_FILES = (".torchlint.toml", "torchlint.toml", "pyproject.toml")


class ConfigError(Exception):
    """An invalid configuration or an unknown rule code: exit code 2."""


_CODE_LIST = {"type": "array", "items": {"type": "string"}}


def _schema() -> dict[str, Any]:
    properties: dict[str, Any] = {
        "select": _CODE_LIST,
        "ignore": _CODE_LIST,
        "extend-select": _CODE_LIST,
        "exclude": _CODE_LIST,
        "extend-exclude": _CODE_LIST,
        "per-file-ignores": {"type": "object", "additionalProperties": _CODE_LIST},
        "cache-dir": {"type": "string"},
        "preview": {"type": "boolean"},
    }
    for rule in registry.all_rules().values():
        if rule.options_table:
            properties[rule.options_table] = {
                "type": "object",
                "properties": dict(rule.options_schema),
                "additionalProperties": False,
            }
    return {"type": "object", "properties": properties, "additionalProperties": False}


Selection = tuple[tuple[str, ...] | None, tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("TL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    preview: bool = False
    # Raw option tables by name, e.g. {"lr": {"adam": [1e-7, 0.1]}}; see options_for().
    rule_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The folder the configuration came from: patterns are relative to it.
    root: Path | None = None
    cache_dir: str | None = None
    # The command line's (select or None, extend-select, ignore), applied after the configuration.
    command_line: Selection | None = None

    @functools.cached_property
    def enabled_codes(self) -> frozenset[str]:
        layers = [(self.select, self.extend_select, self.ignore)]
        if self.command_line is not None:
            layers.append(self.command_line)
        return resolve_selection(layers, preview=self.preview)

    def selection_warnings(self) -> list[str]:
        """Selectors that enable nothing because they name only preview rules and preview mode
        is off (ruff's wording)."""
        if self.preview:
            return []
        previews = {code for code, rule in registry.all_rules().items() if rule.preview}
        layers = [(self.select, self.extend_select)]
        if self.command_line is not None:
            layers.append(self.command_line[:2])
        selectors = [s for select, extend in layers for s in (*(select or ()), *extend)]
        return [
            f"Selection `{selector}` has no effect because preview is not enabled."
            for selector in dict.fromkeys(selectors)
            if _expand((selector,)) <= previews
        ]

    def options_for(self, rule: type[registry.Rule]) -> dict[str, Any]:
        options = dict(rule.default_options)
        if rule.options_table:
            options.update(self.rule_options.get(rule.options_table, {}))
        return options

    def ignored_for_path(self, path: str) -> frozenset[str]:
        """Codes that per-file-ignores turns off for ``path``."""
        if not self.per_file_ignores:
            return frozenset()
        from torchlint.files import matches_any

        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if matches_any(path, (pattern,), self.root):
                ignored.update(_expand(codes))
        return frozenset(ignored)

    def fingerprint(self) -> str:
        """A stable digest of everything that can change a file's diagnostics (for the cache)."""
        data = {
            "enabled": sorted(self.enabled_codes),
            "per_file_ignores": self.per_file_ignores,
            "options": {rule.code: self.options_for(rule) for rule in registry.all_rules().values()},
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

    def with_overrides(
        self,
        *,
        select: Iterable[str] | None = None,
        extend_select: Iterable[str] = (),
        ignore: Iterable[str] = (),
        preview: bool | None = None,
    ) -> Settings:
        """Apply command-line selection and preview mode on top of the configuration (see
        resolve_selection)."""
        updated = replace(
            self,
            command_line=(tuple(select) if select is not None else None, tuple(extend_select), tuple(ignore)),
            preview=self.preview if preview is None else preview,
        )
        updated.validate()
        return updated

    def validate(self) -> None:
        """Raise ConfigError now for unknown codes, rather than in the middle of a run."""
        _ = self.enabled_codes
        for _pattern, codes in self.per_file_ignores:
            _expand(codes)


def _expand(patterns: Iterable[str]) -> set[str]:
    """Codes matched by code prefixes; an unknown prefix is a ConfigError."""
    codes = registry.all_codes()
    matched: set[str] = set()
    for pattern in patterns:
        prefix = pattern.strip().upper()
        if prefix == "ALL":
            prefix = "TL"
        hits = {code for code in codes if code.startswith(prefix)}
        if not prefix or not hits:
            raise ConfigError(f"unknown rule code or prefix: {pattern!r}")
        matched |= hits
    return matched


def resolve_selection(layers: Iterable[Selection], *, preview: bool = False) -> frozenset[str]:
    """The enabled rules after each (select, extend-select, ignore) layer in turn, as ruff does.

    Within a layer the more specific prefix decides a code, and on a tie ignore wins; a layer
    with a select replaces everything before it, one without only changes the codes it names.
    Preview rules take part only in preview mode.
    """
    enabled: set[str] = set()
    for select, extend_select, ignore in layers:
        selected = tuple(select or ()) + tuple(extend_select)
        _expand(selected), _expand(ignore)  # reject unknown codes in either list
        updates = {}
        for code, rule in registry.all_rules().items():
            if rule.preview and not preview:
                continue
            best_select = max((len(_norm(p)) for p in selected if code.startswith(_norm(p))), default=-1)
            best_ignore = max((len(_norm(p)) for p in ignore if code.startswith(_norm(p))), default=-1)
            if best_select > best_ignore:
                updates[code] = True
            elif best_ignore >= 0:
                updates[code] = False
        if select is not None:
            enabled = {code for code, on in updates.items() if on}
        else:
            enabled |= {code for code, on in updates.items() if on}
            enabled -= {code for code, on in updates.items() if not on}
    return frozenset(enabled)


def _norm(prefix: str) -> str:
    prefix = prefix.strip().upper()
    return "TL" if prefix == "ALL" else prefix


def settings_from_table(table: Mapping[str, Any], root: Path | None, source: str) -> Settings:
    import jsonschema  # only when a configuration file is read: a fifth of the start-up time

    try:
        jsonschema.validate(table, _schema())
    except jsonschema.ValidationError as error:
        where = ".".join(str(p) for p in error.absolute_path)
        raise ConfigError(f"{source}: invalid configuration{' at ' + where if where else ''}: {_describe(error)}") from None
    known_tables = {rule.options_table for rule in registry.all_rules().values() if rule.options_table}
    settings = Settings(
        select=tuple(table.get("select", Settings.select)),
        extend_select=tuple(table.get("extend-select", ())),
        ignore=tuple(table.get("ignore", ())),
        per_file_ignores=tuple((pattern, tuple(codes)) for pattern, codes in table.get("per-file-ignores", {}).items()),
        exclude=tuple(table.get("exclude", DEFAULT_EXCLUDE)),
        extend_exclude=tuple(table.get("extend-exclude", ())),
        rule_options={name: dict(value) for name, value in table.items() if name in known_tables},
        root=root,
        cache_dir=table.get("cache-dir"),
        preview=table.get("preview", False),
    )
    try:
        settings.validate()
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None
    return settings


def _describe(error: jsonschema.ValidationError) -> str:
    """jsonschema's message, except that an unknown key is named with the nearest known one."""
    import difflib
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return error.message
    known = list(error.schema.get("properties", {}))
    unknown = [key for key in error.instance if key not in known]
    described = []
    for key in unknown:
        nearest = difflib.get_close_matches(key, known, n=1)
        described.append(repr(key) + (f" (did you mean {nearest[0]!r}?)" if nearest else ""))
    return f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(described)}"


def load_config_file(path: Path) -> Settings:
    """Settings from a pyproject.toml ([tool.torchlint]) or a torchlint.toml (top level)."""
    return settings_from_table(_read_table(path) or {}, path.parent.resolve(), str(path))


def _read_table(path: Path) -> dict[str, Any] | None:
    """The torchlint table of a configuration file; None for a pyproject.toml without one."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    if path.name == "pyproject.toml" and b"torchlint" not in data:
        return None  # most pyproject.toml files: no need to parse them
    # Imported only here: most runs find no configuration to parse.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    if path.name != "pyproject.toml":
        return document
    tool = document.get("tool")
    table = tool.get("torchlint") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: invalid configuration: tool.torchlint must be a table")
    return table


class ConfigResolver:
    """Finds the settings of each file: the nearest configuration upward, cached per folder."""

    def __init__(self, explicit: Path | None = None, overrides: Mapping[str, Any] | None = None) -> None:
        self._overrides = dict(overrides or {})
        self.warnings: set[str] = set()  # about the selections of the settings handed out
        self._explicit = self._apply(load_config_file(explicit)) if explicit else None
        self._by_folder: dict[Path, Settings] = {}
        self.real_path = RealPaths()  # the paths of one run (or editor session) resolved once
        self._default = self._apply(Settings(root=Path.cwd().resolve()))

    def _apply(self, settings: Settings) -> Settings:
        settings = settings.with_overrides(**self._overrides) if self._overrides else settings
        self.warnings.update(settings.selection_warnings())
        return settings

    def for_path(self, path: Path) -> Settings:
        return self.for_folder(self.real_path(path).parent)

    def for_folder(self, folder: Path) -> Settings:
        """The settings of the files in ``folder``, a real path."""
        if self._explicit is not None:
            return self._explicit
        cached = self._by_folder.get(folder)
        if cached is not None:
            return cached
        settings = None
        for name in CONFIG_FILES:
            candidate = folder / name
            table = _read_table(candidate) if candidate.is_file() else None
            if table is not None:
                settings = self._apply(settings_from_table(table, folder, str(candidate)))
                break
        if settings is None:
            settings = self._default if folder.parent == folder else self.for_folder(folder.parent)
        self._by_folder[folder] = settings
        return settings
