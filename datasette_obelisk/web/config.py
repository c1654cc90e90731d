"""The plugin's configuration, read in one place.

In ``datasette.yaml``::

    plugins:
      datasette-obelisk:
        database: obelisk          # which attached database the pages use (default: the first with our schema)
        read_only: true            # register no write route at all (published instances)
        memory_roots: [~/notes]    # existing folders remember() may register .md files from; none = nothing writable
        max_body_bytes: 65536      # cap on a remember/forget request body
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from datasette.utils import StartupError

PLUGIN_NAME = "datasette-obelisk"
DEFAULT_MAX_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class Settings:
    database: str | None
    read_only: bool
    memory_roots: tuple[Path, ...]
    max_body_bytes: int


class ConfigError(StartupError, ValueError):
    """The plugin configuration is invalid; the message names the key. A ``StartupError``:
    ``datasette serve`` prints ``Error: <message>`` and exits 1, with no traceback."""


def settings(datasette) -> Settings:
    """The validated configuration; raises ``ConfigError`` (Datasette then refuses to start)."""
    config = datasette.plugin_config(PLUGIN_NAME) or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{PLUGIN_NAME}: the plugin configuration must be a mapping")
    unknown = sorted(set(config) - {"database", "read_only", "memory_roots", "max_body_bytes"})
    if unknown:
        raise ConfigError(f"{PLUGIN_NAME}: unknown key(s) {', '.join(unknown)}")
    return Settings(
        database=checked(config, "database", str, None, "a database name"),
        read_only=checked(config, "read_only", bool, False, "true or false"),
        memory_roots=tuple(Path(root).expanduser() for root in memory_roots(config.get("memory_roots"))),
        max_body_bytes=max_body_bytes(config.get("max_body_bytes", DEFAULT_MAX_BODY_BYTES)),
    )


def checked(config: dict, key: str, kind: type, default, expected: str):
    value = config.get(key, default)
    if value is not default and (not isinstance(value, kind) or (kind is str and not value)):
        raise ConfigError(f"{PLUGIN_NAME}: {key} must be {expected}, not {value!r}")
    return value


def memory_roots(value) -> list[str]:
    roots = [value] if isinstance(value, str) else value if value is not None else []
    if not isinstance(roots, list) or not all(isinstance(root, str) and root for root in roots):
        raise ConfigError(f"{PLUGIN_NAME}: memory_roots must be a folder or a list of folders, not {value!r}")
    return roots


def check_memory_roots(config: Settings) -> None:
    """Refuse (``ConfigError``) a memory root that does not exist or is not a folder, as
    ``obelisk attune --memory-root`` does. Checked once, when Datasette starts: a root removed
    later only makes ``remember`` refuse its files."""
    for root in config.memory_roots:
        if not root.is_dir():
            why = "is not a folder" if root.exists() else "does not exist"
            raise ConfigError(f"{PLUGIN_NAME}: memory_roots {root} {why}")


def max_body_bytes(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{PLUGIN_NAME}: max_body_bytes must be a whole number of bytes above 0, not {value!r}")
    return value
