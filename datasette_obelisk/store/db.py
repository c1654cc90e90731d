"""Opening the database: pragmas for concurrent reading, and migrations."""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

BUSY_TIMEOUT_MS = 30_000
# The last migration in migrations.py (a test keeps them in step). A database
# that has it skips loading sqlite-utils and the migrations: every CLI call
# opens the database, and those imports were a third of a no-op ingest.
LATEST_MIGRATION = "m063_index_spawning_calls"


def default_db_path(environ=os.environ) -> Path:
    """``$OBELISK_DB``, else ``./obelisk.db``."""
    return Path(environ.get("OBELISK_DB") or "obelisk.db")


def connect(path: str | Path) -> sqlite3.Connection:
    """A write connection in WAL mode so readers never wait for the ingester.

    ``isolation_level=None`` leaves transactions to explicit ``BEGIN``.
    """
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # Large pages suit multi-megabyte texts (fewer overflow pages to chain
    # and write); only a new database takes them.
    conn.execute("PRAGMA page_size = 16384")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def database_path(conn: sqlite3.Connection) -> str:
    """The file of the main database; empty for an in-memory one."""
    return next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")


@contextmanager
def transaction(conn: sqlite3.Connection):
    """A write transaction, taken at once (``BEGIN IMMEDIATE``), whose message rewrites
    are counted in a span of their own (``open_rewrite_span``)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        open_rewrite_span(conn)
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


MIGRATION_WAIT_SECONDS = 30.0
# A migration that can run twice (m015 drops and recreates a view) collides
# only on its record (an IntegrityError), which rolls it back with the record.
RACE_SIGNS = (
    "database is locked", "already exists", "duplicate column",
    "UNIQUE constraint failed: _sqlite_migrations",
)


class NewerDatabase(Exception):
    """A database a newer datasette-obelisk has migrated: this one must not write to it."""


def file_uri(path: str | Path, mode: str = "ro") -> str:
    """An SQLite URI for ``path``, whatever bytes its name holds."""
    return "file:" + quote(os.fsencode(Path(path).absolute())) + f"?mode={mode}"


def newer_migrations(conn: sqlite3.Connection) -> list[str]:
    """Migrations ``conn``'s database records that this version does not know."""
    try:
        return [name for (name,) in conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = 'datasette_obelisk' AND name > ? ORDER BY name",
            [LATEST_MIGRATION],
        )]
    except sqlite3.OperationalError:  # no migrations table yet
        return []


def refuse_newer(conn: sqlite3.Connection) -> None:
    newer = newer_migrations(conn)
    if newer:
        raise NewerDatabase(
            f"{database_path(conn) or 'the database'} was made by a newer datasette-obelisk "
            f"(it has migration {newer[-1]}; this one knows up to {LATEST_MIGRATION}): upgrade to write to it"
        )


def newer_parsers(conn: sqlite3.Connection, versions: dict) -> list[tuple[str, int]]:
    """``(source, version)`` of the parsers newer than those of ``versions`` (source ->
    this version's parser) that read some of ``conn``'s logs."""
    return [
        (source, stored)
        for source, stored in conn.execute("SELECT source, MAX(parser_version) FROM source_files GROUP BY source")
        if source in versions and stored is not None and stored > versions[source]
    ]


def refuse_newer_parsers(conn: sqlite3.Connection, versions: dict) -> None:
    """``NewerDatabase`` when a newer version's parser read some of the logs: read
    again with this one, they would lose what it kept."""
    newer = newer_parsers(conn, versions)
    if newer:
        source, stored = newer[0]
        raise NewerDatabase(
            f"{database_path(conn) or 'the database'} was made by a newer datasette-obelisk (its {source} "
            f"logs were read by {source} parser {stored}; this one has parser {versions[source]}): upgrade to write to it"
        )


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the migrations ``conn``'s database lacks (each in a transaction with its record);
    ``NewerDatabase`` when a newer version made it."""
    if is_current(conn):
        return
    refuse_newer(conn)
    import sqlite_utils

    from .migrations import migrations

    # What the last derivations counted (derive.plan_appended) may not hold once a
    # migration has changed rows: every session is derived whole next time.
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'derive_tallies'").fetchone():
        with transaction(conn):
            conn.execute("DELETE FROM derive_tallies")
    migrations.apply(_script_database(sqlite_utils)(conn, execute_plugins=False))


def _script_database(sqlite_utils):
    """``sqlite_utils.Database`` whose ``executescript`` inside a transaction cuts the
    script into statements at its semicolons: sqlite-utils tries the script a
    character at a time, which took two thirds of creating a database."""

    class ScriptDatabase(sqlite_utils.Database):
        def executescript(self, sql: str) -> sqlite3.Cursor:
            if not self.conn.in_transaction:
                return super().executescript(sql)
            cursor = self.conn.cursor()
            for statement in complete_statements(sql):
                cursor.execute(statement)
            return cursor

    return ScriptDatabase


def complete_statements(sql: str):
    """The statements of ``sql``, each ending at the first semicolon that completes
    it (``sqlite3.complete_statement``: not one in a string or inside a trigger's body)."""
    start, at = 0, sql.find(";")
    while at != -1:
        statement = sql[start : at + 1].strip()
        if sqlite3.complete_statement(statement):
            yield statement
            start = at + 1
        at = sql.find(";", at + 1)
    rest = sql[start:].strip()
    if rest:
        yield rest


def is_current(conn: sqlite3.Connection) -> bool:
    """Whether every migration has been applied to ``conn``'s database.

    Migrations are numbered from m001 without gaps, so all are there when
    the latest is and there are as many as its number."""
    try:
        count, latest = conn.execute(
            "SELECT count(*), max(name) FROM _sqlite_migrations WHERE migration_set = 'datasette_obelisk'"
        ).fetchone()
    except sqlite3.OperationalError:  # no migrations table yet
        return False
    return latest == LATEST_MIGRATION and count == int(LATEST_MIGRATION[1:4])


def open_db(path: str | Path) -> sqlite3.Connection:
    """Connect and bring the schema up to date.

    Two processes creating the same database at once (two ``obelisk
    ingest``) collide: switching a new file to WAL, or a migration whose
    objects the other has just committed. The loser starts again until the
    schema is complete, at most ``MIGRATION_WAIT_SECONDS``."""
    deadline = time.monotonic() + MIGRATION_WAIT_SECONDS
    while True:
        conn = None
        try:
            conn = connect(path)
            migrate(conn)
            return conn
        except NewerDatabase:
            conn.close()
            raise
        except (sqlite3.OperationalError, sqlite3.IntegrityError) as exc:
            if conn is not None:
                conn.close()
            if not any(sign in str(exc) for sign in RACE_SIGNS) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def has_schema(conn: sqlite3.Connection) -> bool:
    """Whether ``conn`` holds an obelisk database (not just any database with a
    ``messages_fts`` table: sqlite-utils gives a ``messages`` table that name)."""
    found = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('messages_fts', 'obelisk_state')"
    ).fetchone()[0]
    return found == 2


# Columns that hold a row's text as the FTS tables read it (m036): bookkeeping,
# never part of a row the helpers, the pages or the API show.
INDEXED_FORMS = {"messages": "search_text", "tool_results": "search_content"}


def splits_cjk(conn: sqlite3.Connection) -> bool:
    """Whether ``conn``'s database indexes CJK characters apart (``cjk.py``, m036)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'view' AND name = 'messages_search'").fetchone()
    return found is not None and has_schema(conn)


def get_state(conn: sqlite3.Connection, key: str, default: str | None = None) -> str | None:
    row = conn.execute("SELECT value FROM obelisk_state WHERE key = ?", [key]).fetchone()
    return row[0] if row else default


def set_state(conn: sqlite3.Connection, key: str, value: str | None) -> None:
    conn.execute(
        "INSERT INTO obelisk_state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [key, value],
    )


# ``obelisk_state.rewrites`` counts the messages deleted, moved (another session
# or seq) or whose searched text, surface or place among injected lines changed
# (the triggers ``messages_rewritten_ad`` and ``messages_rewritten_au``). Those
# rewrites fall in spans, each kept under ``REWRITE_SPAN`` and the counter's
# value when it began (19 digits: the keys sort as the numbers do), its value
# the lowest id of a message rewritten in it ('' while none is). A write
# transaction begins a span (when the last one holds a rewrite), so a search
# cursor, which saw the messages up to an id and the counter at one value, finds
# whether any message it could have seen was rewritten since (query/cursors.py):
# the rows an ingest writes and then moves (inline agents' lines) or shadows
# (a compaction, a rewind) were never among those an older cursor saw.
# ``REWRITE_SPANS_KEPT`` spans are kept; a cursor older than all of them is stale.
REWRITE_SPAN = "rewrites@"
REWRITE_SPANS_KEPT = 64
REWRITE_SPAN_KEYS = f"key >= '{REWRITE_SPAN}' AND key < '{REWRITE_SPAN}~'"
OPEN_REWRITE_SPAN = f"""INSERT INTO obelisk_state (key, value)
    SELECT '{REWRITE_SPAN}' || printf('%019d', n), '' FROM (
      SELECT CAST(value AS INTEGER) AS n FROM obelisk_state WHERE key = 'rewrites')
    WHERE '{REWRITE_SPAN}' || printf('%019d', n) > coalesce((SELECT MAX(key) FROM obelisk_state WHERE {REWRITE_SPAN_KEYS}), '')"""
FORGET_OLD_REWRITE_SPANS = f"""DELETE FROM obelisk_state WHERE {REWRITE_SPAN_KEYS} AND key < (
    SELECT key FROM obelisk_state WHERE {REWRITE_SPAN_KEYS} ORDER BY key DESC LIMIT 1 OFFSET {REWRITE_SPANS_KEPT - 1})"""


def open_rewrite_span(conn: sqlite3.Connection) -> None:
    """At the start of a write transaction: count what it rewrites in a new span, unless
    the last span holds no rewrite yet."""
    if conn.execute(OPEN_REWRITE_SPAN).rowcount:
        conn.execute(FORGET_OLD_REWRITE_SPANS)


def count_rewrite_of_every_message(conn: sqlite3.Connection) -> None:
    """Inside a write transaction: one rewrite of every message (a reload, which drops the
    triggers that count them one by one): every search cursor of the archive before it goes stale."""
    conn.execute("UPDATE obelisk_state SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'rewrites'")
    conn.execute(
        f"UPDATE obelisk_state SET value = '0' WHERE key = (SELECT MAX(key) FROM obelisk_state WHERE {REWRITE_SPAN_KEYS})"
    )
