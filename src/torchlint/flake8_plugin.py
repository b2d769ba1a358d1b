"""The flake8 plugin: flake8's lines -> the engine -> flake8 results.

flake8 owns selection (`--select/--ignore`), `# noqa` and output; the engine owns checking. Rule
options come from `[tool.torchlint]` and may be overridden in flake8's own configuration with
`torchlint-<table>-<option>` (for example `torchlint-lr-adam = 1e-7, 0.1`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from torchlint import __version__, engine, registry
from torchlint.config import ConfigError, ConfigResolver, Settings, settings_from_table


def _option_flags() -> Iterator[tuple[str, str, str, str, Mapping[str, Any]]]:
    """(flag, argparse dest, table, option, schema) for every option of every rule."""
    for rule in registry.all_rules().values():
        if rule.options_table:
            for option, schema in rule.options_schema.items():
                name = f"torchlint-{rule.options_table}-{option}"
                yield f"--{name}", name.replace("-", "_"), rule.options_table, option, schema


def _parse_value(raw: str, schema: Mapping[str, Any]) -> Any:
    """A flake8 option string as the value `[tool.torchlint]` would hold.

    An array is written as flake8 writes lists, comma separated (or as JSON); any other value is
    read as JSON (numbers, booleans) or else kept as a string. The schema validation afterwards
    reports anything still wrong.
    """
    raw = raw.strip()
    if schema.get("type") == "array" and not raw.startswith("["):
        return [_parse_value(item, schema.get("items", {})) for item in raw.split(",") if item.strip()]
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class TorchlintChecker:
    name = "torchlint"
    version = __version__

    # Set once per flake8 run by parse_options, before any file is checked.
    _resolver: ClassVar[ConfigResolver | None] = None
    _overrides: ClassVar[dict[str, dict[str, Any]]] = {}

    # flake8 only runs plugins that take `tree` once the file has parsed; `lines` is what the
    # engine reads, so stdin and flake8's own decoding are respected.
    def __init__(self, tree: object, lines: list[str], filename: str) -> None:
        self._lines = lines
        self._filename = filename

    @classmethod
    def add_options(cls, manager) -> None:
        for flag, dest, table, option, schema in _option_flags():
            manager.add_option(
                flag,
                dest=dest,
                default=None,
                parse_from_config=True,
                help=schema.get("description", f"torchlint option {option!r} of [tool.torchlint.{table}]"),
            )

    @classmethod
    def parse_options(cls, manager, options, filenames) -> None:
        from flake8.exceptions import ExecutionError

        overrides: dict[str, dict[str, Any]] = {}
        for _flag, dest, table, option, schema in _option_flags():
            raw = getattr(options, dest, None)
            if raw is not None:
                overrides.setdefault(table, {})[option] = _parse_value(str(raw), schema)
        try:
            settings_from_table(overrides, None, "flake8 configuration (torchlint-* options)")
        except ConfigError as error:
            raise ExecutionError(str(error)) from None
        cls._overrides = overrides
        cls._resolver = ConfigResolver()

    def _settings(self) -> Settings:
        resolver = type(self)._resolver or ConfigResolver()
        settings = resolver.for_path(Path(self._filename))
        if not self._overrides:
            return settings
        options = {table: {**settings.rule_options.get(table, {}), **values} for table, values in self._overrides.items()}
        return dataclasses.replace(settings, rule_options={**settings.rule_options, **options})

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        try:
            settings = self._settings()
        except ConfigError as error:
            yield 1, 0, f"{engine.CANNOT_CHECK} invalid configuration: {error}", type(self)
            return
        for diagnostic in engine.check_source("".join(self._lines), self._filename, settings):
            # flake8 adds one to the column it is given; the engine's columns are already 1-based.
            yield diagnostic.line, diagnostic.column - 1, f"{diagnostic.code} {diagnostic.message}", type(self)
