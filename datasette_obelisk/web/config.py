"""The plugin's configuration, read in one place.

In ``datasette.yaml``::

    plugins:
      datasette-obelisk:
        database: obelisk          # which attached database the pages use (default: the first with our schema)
        read_only: true            # register no write route at all (published instances)
        memory_roots: [~/notes]    # folders remember() may register files from; none = nothing writable
        max_body_bytes: 65536      # cap on a remember/forget request body
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PLUGIN_NAME = "datasette-obelisk"
DEFAULT_MAX_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class Settings:
    database: str | None
    read_only: bool
    memory_roots: tuple[Path, ...]
    max_body_bytes: int


def settings(datasette) -> Settings:
    config = datasette.plugin_config(PLUGIN_NAME) or {}
    roots = config.get("memory_roots") or ()
    if isinstance(roots, str):
        roots = [roots]
    return Settings(
        database=config.get("database"),
        read_only=bool(config.get("read_only", False)),
        memory_roots=tuple(Path(root).expanduser() for root in roots),
        max_body_bytes=int(config.get("max_body_bytes") or DEFAULT_MAX_BODY_BYTES),
    )
