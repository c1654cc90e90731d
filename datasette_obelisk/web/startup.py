"""What the plugin sets up when Datasette starts. It never writes to a user's database."""

from __future__ import annotations

import sqlite3
import sys

from .browse import apply_browse_defaults
from .config import PLUGIN_NAME, ConfigError, check_memory_roots, settings
from .databases import obelisk_databases
from .stored_queries import QUERIES, register_stored_queries
from .visibility import record_sources


async def configure(datasette) -> None:
    """Check the plugin configuration (a bad one stops Datasette), then for each database with our schema:
    stored queries, what hiding a table hides, and browse defaults."""
    config = settings(datasette)
    check_memory_roots(config)
    if config.database is not None and config.database not in datasette.databases:  # a typo would 404 every page
        served = ", ".join(name for name in datasette.databases if name != "_internal") or "none"
        raise ConfigError(f"{PLUGIN_NAME}: database {config.database!r} is not served (served: {served})")
    for name in await obelisk_databases(datasette):
        try:
            await register_stored_queries(datasette, name)
            await record_sources(datasette, name, QUERIES)
            await apply_browse_defaults(datasette, name)
        except sqlite3.Error as exc:  # a damaged archive must not keep the others from being served
            print(f"{PLUGIN_NAME}: database {name!r} left as Datasette serves it: {exc}", file=sys.stderr)
