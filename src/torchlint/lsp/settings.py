"""What a document is checked with: the `[tool.torchlint]` found from its path (as the CLI finds
it), with the client's `torchlint.select` / `torchlint.ignore` applied on top as command-line
`--select` / `--ignore` would be."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchlint.config import ConfigError, ConfigResolver, Settings

DEFAULT_DEBOUNCE_MS = 150


def _codes(value: Any) -> tuple[str, ...]:
    """A list of codes, or one comma-separated string of them (what settings UIs make easy)."""
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    return tuple(str(item).strip() for item in items if str(item).strip())


@dataclass(frozen=True)
class ClientSettings:
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    debounce_ms: int = DEFAULT_DEBOUNCE_MS

    @classmethod
    def parse(cls, raw: Any) -> ClientSettings:
        """From initializationOptions or workspace settings: `{"torchlint": {...}}` or the inner object."""
        if isinstance(raw, dict) and isinstance(raw.get("torchlint"), dict):
            raw = raw["torchlint"]
        if not isinstance(raw, dict):
            return cls()
        debounce = raw.get("debounceMs", DEFAULT_DEBOUNCE_MS)
        return cls(
            select=_codes(raw["select"]) if raw.get("select") else None,
            ignore=_codes(raw.get("ignore")),
            debounce_ms=debounce if isinstance(debounce, int) and debounce >= 0 else DEFAULT_DEBOUNCE_MS,
        )

    def overrides(self) -> dict[str, Any]:
        overrides: dict[str, Any] = {"ignore": self.ignore}
        if self.select is not None:
            overrides["select"] = self.select
        return overrides


class WorkspaceSettings:
    """The resolver for the current client settings; rebuilt when either they or a configuration
    file change, so the per-folder cache never outlives what it was read from."""

    def __init__(self) -> None:
        self.client = ClientSettings()
        self._resolver = ConfigResolver()

    def configure(self, client: ClientSettings) -> str | None:
        """Apply new client settings; returns a message for the user when they are invalid."""
        self.client = client
        return self.reload()

    def reload(self) -> str | None:
        try:
            self._resolver = ConfigResolver(None, self.client.overrides())
        except ConfigError as error:
            self._resolver = ConfigResolver()
            return f"torchlint: client settings ignored: {error}"
        return None

    def for_path(self, path: Path) -> Settings | ConfigError:
        try:
            return self._resolver.for_path(path)
        except ConfigError as error:
            return error
