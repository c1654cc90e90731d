"""What the plugin sets up when Datasette starts, and again when a served
database's schema changes (an ingest made a file an archive, or migrated it).
It never writes to a user's database."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import time
from contextvars import ContextVar
from weakref import WeakKeyDictionary

from .browse import apply_browse_defaults
from .config import PLUGIN_NAME, ConfigError, check_memory_roots, settings
from .databases import obelisk_databases
from .descriptions import apply_descriptions
from .stored_queries import QUERIES, configured_names, register_stored_queries
from .visibility import hidden_resources, record_sources, recorded_databases

RECHECK_SECONDS = 1.0  # Datasette reads the schemas again at most once a second too
_seen: WeakKeyDictionary = WeakKeyDictionary()  # Datasette -> {database: schema version set up for}
_stamps: WeakKeyDictionary = WeakKeyDictionary()  # Datasette -> {database: its file's and WAL's (mtime, size)}
_rechecked: WeakKeyDictionary = WeakKeyDictionary()  # Datasette -> [monotonic time of the last full check, lock]
_setting_up = ContextVar("obelisk_setting_up", default=False)  # in the task that holds the lock


async def configure(datasette) -> None:
    """Check the plugin configuration (a bad one stops Datasette), then for each database with our schema:
    stored queries, what hiding a table hides, browse defaults and table descriptions."""
    config = settings(datasette)
    check_memory_roots(config)
    if config.database is not None and config.database not in datasette.databases:  # a typo would 404 every page
        names = ", ".join(name for name in datasette.databases if name != "_internal") or "none"
        raise ConfigError(f"{PLUGIN_NAME}: database {config.database!r} is not served (served: {names})")
    _seen[datasette] = await schema_versions(datasette, served(datasette))
    for name in await obelisk_databases(datasette):
        await set_up(datasette, name)


async def set_up(datasette, name: str) -> None:
    try:
        await register_stored_queries(datasette, name)
        # (a query of one of our names the configuration gives is its own, and served
        # as Datasette serves it: what ours would read says nothing about it)
        mine = configured_names(datasette, name)
        await record_sources(datasette, name, [query for query in QUERIES if query.name not in mine])
        await apply_browse_defaults(datasette, name)
        await apply_descriptions(datasette, name)
    except sqlite3.Error as exc:  # a damaged archive must not keep the others from being served
        print(f"{PLUGIN_NAME}: database {name!r} left as Datasette serves it: {exc}", file=sys.stderr)


async def schema_versions(datasette, names) -> dict[str, int]:
    """``PRAGMA schema_version`` of the served databases ``names`` (one that cannot be read: left out)."""
    versions = {}
    for name in names:
        try:
            versions[name] = (await datasette.databases[name].execute("PRAGMA schema_version")).first()[0]
        except Exception:  # noqa: BLE001 (a permission check must not fail for one unreadable database)
            continue
    return versions


def served(datasette) -> list[str]:
    return [name for name, db in datasette.databases.items() if name != "_internal" and not db.is_memory]


def written_since(datasette, name: str) -> bool:
    """Whether the file of database ``name`` (or its WAL) changed since this was last asked."""
    path = datasette.databases[name].path
    stamp = []
    for file in (path, f"{path}-wal"):
        try:
            st = os.stat(file)
            stamp.append((st.st_mtime_ns, st.st_size))
        except (OSError, TypeError, ValueError):
            stamp.append(None)
    stamps = _stamps.setdefault(datasette, {})
    changed, stamps[name] = stamps.get(name) != stamp, stamp
    return changed


async def keep_current(datasette) -> None:
    """Set up again the databases whose schema changed: at every check those not set
    up yet whose file was written since (an archive made there shows its views at
    once), and all of them at most once every ``RECHECK_SECONDS``.

    Other requests wait while one sets a database up: answered meanwhile,
    they would see it as no archive, with nothing of it hidden."""
    if datasette not in _seen or _setting_up.get():  # (a check made while setting up)
        return
    state = _rechecked.setdefault(datasette, [0.0, asyncio.Lock()])
    async with state[1]:
        token = _setting_up.set(True)
        try:
            await _check(datasette, state)
        finally:
            _setting_up.reset(token)


async def _check(datasette, state: list) -> None:
    due = time.monotonic() - state[0] >= RECHECK_SECONDS
    set_up_already = recorded_databases(datasette)
    names = [name for name in served(datasette)
             if due or (name not in set_up_already and written_since(datasette, name))]
    if not names:
        return
    if due:
        state[0] = time.monotonic()
    versions = await schema_versions(datasette, names)
    changed = {name for name, version in versions.items() if _seen[datasette].get(name) != version}
    _seen[datasette].update(versions)
    for name in await obelisk_databases(datasette) if changed else ():
        if name in changed:
            await set_up(datasette, name)


async def current_hidden_resources(datasette, actor, action):
    """``visibility.hidden_resources`` over what each database holds now."""
    await keep_current(datasette)
    denied = hidden_resources(datasette, actor, action)
    return await denied if denied is not None else None
