"""Hiding a table hides its data wherever the plugin shows it.

Datasette decides whether an actor may see a table (``view-table``: an
``allow`` block or ``permissions`` under ``databases.<db>.tables.<table>``),
and already hides an FTS index with its content table and denies the
index's shadow tables. The plugin carries the decision further:

* the views of an obelisk database (``browse_messages``), the tables made
  from another's text (``DERIVED``: the session index) and the plugin's
  stored queries (``obelisk_memories``, via ``view-query``) are hidden when
  any table they read is hidden;
* every page and JSON endpoint records the tables it reads
  (``table_reads.py``) and answers 403 when any of them is hidden
  (``BOOKKEEPING`` tables aside: their rows are never shown).

What each view and stored query reads is worked out at startup, by SQLite.
"""

from __future__ import annotations

import json
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from datasette.permissions import PermissionSQL
from datasette.resources import TableResource

from ..query.errors import QueryError
from .table_reads import TableReads, tables_read

# Tables made from other tables' text, hidden with them as views are: the
# session index holds every word of the messages, the digests the summaries
# and each session's title.
DIGESTED = frozenset({"summaries", "sessions", "titles"})
DERIVED = {
    "session_docs": frozenset({"messages"}),
    "session_docs_fts": frozenset({"messages"}),
    "session_digests": DIGESTED,
    "session_digests_fts": DIGESTED,
    # the prompt logs hold what the user typed, which the messages hold too: hidden with them
    "prompt_log": frozenset({"messages"}),
    "prompt_log_fts": frozenset({"messages"}),
}

# Read for the plugin's own bookkeeping (the cursor-signing secret, the
# generation counter) and never shown, so hiding them hides nothing of ours.
BOOKKEEPING = frozenset({"obelisk_state", "derive_queue"})
_checking = ContextVar("obelisk_checking_tables", default=False)
try:  # Datasette's request-scoped cache of permission verdicts
    from datasette.permissions import _permission_check_cache as _request_cache
except ImportError:  # pragma: no cover (a Datasette without one: nothing to keep apart)
    _request_cache = None


@dataclass
class Sources:
    """For one database: the tables behind each view (and ``DERIVED`` table), and behind each stored query."""

    views: dict[str, frozenset[str]] = field(default_factory=dict)
    queries: dict[str, frozenset[str]] = field(default_factory=dict)

    def behind(self, tables) -> set[str]:
        """``tables`` and every table they are made from."""
        found = set(tables)
        for table in tables:
            found |= self.views.get(table, frozenset())
        return found


_sources: WeakKeyDictionary = WeakKeyDictionary()  # Datasette -> {database: Sources}
_viewable: WeakKeyDictionary = WeakKeyDictionary()  # Datasette -> {(database, actor): (expires, {table: viewable})}
VIEWABLE_SECONDS = 5.0
VIEWABLE_ACTORS = 256


def view_sources(conn) -> dict[str, frozenset[str]]:
    """Each view with the tables it reads."""
    views = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'")]
    return {name: frozenset(tables_read(conn, f'SELECT * FROM "{name}"')) for name in views}


async def record_sources(datasette, database: str, queries) -> None:
    """At startup: what the views and the stored ``queries`` of ``database`` read."""

    def load(conn):
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        sources = Sources({**view_sources(conn), **{t: behind for t, behind in DERIVED.items() if t in tables}})
        sources.queries = {query.name: frozenset(sources.behind(tables_read(conn, query.sql))) for query in queries}
        return sources

    _sources.setdefault(datasette, {})[database] = await datasette.get_database(database).execute_fn(load)


def recorded_databases(datasette) -> set[str]:
    """The databases whose sources ``record_sources`` recorded (set up as archives)."""
    return set(_sources.get(datasette, {}))


def sources_for(datasette, database: str) -> Sources:
    return _sources.get(datasette, {}).get(database) or Sources()


async def hidden_among(datasette, actor, database: str, tables) -> set[str]:
    """Those of ``tables`` the actor may not view, by Datasette's rules alone.

    A shadow table (``messages_fts_idx``), which Datasette always denies,
    counts as the index it implements (``messages_fts``). Answers are
    remembered for ``VIEWABLE_SECONDS`` per actor: every endpoint asks about
    every table it read on every request.
    """
    dependencies = await datasette.get_database(database).derived_table_dependencies()
    cache = _viewable.setdefault(datasette, {})
    key = (database, json.dumps(actor, sort_keys=True, default=str))
    now = time.monotonic()
    expires, known = cache.get(key, (0.0, {}))
    if expires <= now:
        if len(cache) >= VIEWABLE_ACTORS:
            cache.clear()
        expires, known = cache[key] = (now + VIEWABLE_SECONDS, {})
    hidden = set()
    token = _checking.set(True)
    # These verdicts leave our own rules out: kept in the request's permission cache,
    # a later check in the same request would find a view over a hidden table allowed
    # (the source of an FTS index: /obelisk.json listed messages_fts with its count).
    cache_token = _request_cache.set({}) if _request_cache is not None else None
    try:
        for table in {logical_table(table, dependencies) for table in tables}:
            if table not in known:
                known[table] = await datasette.allowed(
                    action="view-table", resource=TableResource(database, table), actor=actor
                )
            if not known[table]:
                hidden.add(table)
    finally:
        if cache_token is not None:
            _request_cache.reset(cache_token)
        _checking.reset(token)
    return hidden


async def is_visible(datasette, actor, database: str, table: str) -> bool:
    """Whether a page may read ``table``, for the parts of a page that are optional."""
    return not await hidden_among(datasette, actor, database, {table})


def logical_table(table: str, dependencies: dict) -> str:
    """The table Datasette checks for ``table``: a shadow table's own virtual table."""
    while dependencies.get(table, table) != table and dependencies[table] in dependencies:
        table = dependencies[table]
    return table


async def ensure_visible(datasette, actor, database: str, tables) -> None:
    """Raise ``OBELISK_PERMISSION_DENIED`` when any of ``tables``, or a table behind one, is hidden."""
    shown = sources_for(datasette, database).behind(tables) - BOOKKEEPING
    hidden = await hidden_among(datasette, actor, database, shown)
    if hidden:
        raise QueryError(
            "OBELISK_PERMISSION_DENIED", f"this reads tables you may not view: {', '.join(sorted(hidden))} (database {database!r})"
        )


class RecordingDatabase:
    """A Datasette database whose ``execute_fn`` records the tables each call reads."""

    def __init__(self, db):
        self._db = db
        self.reads = TableReads()

    def __getattr__(self, name):
        return getattr(self._db, name)

    async def execute_fn(self, fn):
        return await self._db.execute_fn(self.reads.recording(fn))


async def guarded(datasette, actor, db, work):
    """``await work(recording_db)``, then 403 if it read a hidden table (that wins over its own error).

    When the actor may view every table of the database (the usual case),
    nothing can be hidden and the work runs unrecorded: recording sets an
    authorizer, which makes SQLite prepare every statement again.
    """
    if not await hidden_among(datasette, actor, db.name, await db.table_names()):
        return await work(db)
    recording = RecordingDatabase(db)
    try:
        return await work(recording)
    finally:
        await ensure_visible(datasette, actor, db.name, recording.reads.tables)


def hidden_resources(datasette, actor, action):
    """The ``permission_resources_sql`` hook: deny rows for views and stored queries over hidden tables."""
    if action not in ("view-table", "view-query") or _checking.get() or datasette not in _sources:
        return None
    return _deny_rows(datasette, actor, action)


async def _deny_rows(datasette, actor, action):
    rows = []
    for database, sources in _sources[datasette].items():
        objects = sources.views if action == "view-table" else sources.queries
        hidden = await hidden_among(datasette, actor, database, set().union(*objects.values()))
        rows += [(database, name, sorted(tables & hidden)) for name, tables in objects.items() if tables & hidden]
    if not rows:
        return None
    selects, params = [], {}
    for i, (database, name, tables) in enumerate(rows):
        selects.append(f"SELECT :obelisk_db_{i} AS parent, :obelisk_child_{i} AS child, 0 AS allow, :obelisk_reason_{i} AS reason")
        params.update({f"obelisk_db_{i}": database, f"obelisk_child_{i}": name,
                       f"obelisk_reason_{i}": f"datasette-obelisk: reads hidden table {', '.join(tables)}"})
    return PermissionSQL(sql=" UNION ALL ".join(selects), params=params)
