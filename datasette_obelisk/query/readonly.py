"""Read-only access to the database: the connection the query helpers run on.

Three independent locks, so no single mistake opens a write path:

- the file is opened through a ``file:...?mode=ro`` URI;
- ``PRAGMA query_only`` is on and ``ATTACH`` is limited to zero databases;
- a SQLite authorizer allows reading only: SELECT, reads, functions,
  recursive CTEs and a short list of introspection pragmas. Writes, DDL,
  ATTACH/DETACH, transactions, savepoints, VACUUM, ANALYZE and REINDEX
  are refused while the statement is prepared.

``sql()`` runs one statement only: Python's sqlite3 refuses a second one
(a trailing comment or ``;`` is fine). Given any other connection (the
helpers take any sqlite3 connection), it runs that statement under the same
authorizer, removed again afterwards.
"""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path

from ..sources.common import SQLITE_INTEGERS
from ..store.db import BUSY_TIMEOUT_MS, file_uri, has_schema
from .errors import QueryError

MAX_SQL_ROWS = 10_000
PROGRESS_STEPS = 1_000

# Pragmas that only report. The first set takes an argument naming a table
# or index; the second is allowed only in its reading form (no argument).
INTROSPECTION_PRAGMAS = frozenset(
    "table_info table_xinfo table_list index_list index_info index_xinfo "
    "foreign_key_list".split()
)
READING_PRAGMAS = frozenset(
    "data_version user_version schema_version application_id page_count page_size "
    "freelist_count encoding journal_mode database_list collation_list function_list "
    "module_list pragma_list compile_options query_only".split()
)
ALLOWED_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
)
# Virtual tables (FTS5) are connected by an internal UPDATE of the schema
# table; SQLite itself refuses that statement from users.
SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema"})


def authorizer(action, arg1, arg2, db_name, trigger_or_view):
    """Allow what reads; deny everything else."""
    if action in ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in INTROSPECTION_PRAGMAS or (name in READING_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and arg1 in SCHEMA_TABLES:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class ReadOnlyConnection(sqlite3.Connection):
    """A connection ``connect_readonly`` opened: its authorizer stays on."""


def connect_readonly(db_path: str | Path) -> sqlite3.Connection:
    """A read-only connection to an existing obelisk database."""
    path = Path(db_path)
    if path.is_dir():
        raise QueryError("OBELISK_NOT_FOUND", f"{path} is a folder, not a database file")
    if path.exists() and not path.is_file():
        raise QueryError("OBELISK_NOT_FOUND", f"{path} is not a regular file")
    if not path.is_file():
        raise QueryError("OBELISK_NOT_FOUND", f"database not found: {path} (run `obelisk ingest` first)")
    conn = _open(file_uri(path.resolve()))
    try:
        try:
            obelisk = has_schema(conn)
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if code != sqlite3.SQLITE_READONLY and (code != sqlite3.SQLITE_CANTOPEN or os.access(path.parent, os.W_OK)):
                raise
            # A WAL database in a folder this user cannot write (no -shm can be made there; with a
            # -wal left behind, SQLite cannot open it at all): read as the database file holds it
            # (what a writer has not checkpointed is not seen).
            conn.close()
            conn = _open(file_uri(path.resolve()) + "&immutable=1")
            obelisk = has_schema(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise QueryError("OBELISK_NOT_FOUND", f"{path} is not an SQLite database ({exc})") from None
    if not obelisk:
        empty = conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchone()[0] == 0
        conn.close()
        raise QueryError("OBELISK_NOT_FOUND", f"{path} is not an obelisk database " + (
            "(run `obelisk ingest` into it first)" if empty else "but another program's (give --db an obelisk database)"
        ))
    return conn


def _open(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, factory=ReadOnlyConnection)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only = 1")
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.set_authorizer(authorizer)
    conn.row_factory = sqlite3.Row
    return conn


_deadlines: dict = {}  # id(conn) -> (conn, the time.monotonic() its statements stop at)


def set_deadline(conn: sqlite3.Connection, seconds: float | None) -> None:
    """Interrupt any statement still running ``seconds`` from now (None: never)."""
    if seconds is None:
        _deadlines.pop(id(conn), None)
        conn.set_progress_handler(None, 0)
        return
    deadline = time.monotonic() + seconds
    _deadlines[id(conn)] = (conn, deadline)
    conn.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)


def deadline_of(conn: sqlite3.Connection) -> float | None:
    """The ``time.monotonic()`` at which ``set_deadline`` stops ``conn``'s statements, None for never."""
    held = _deadlines.get(id(conn))
    return held[1] if held is not None and held[0] is conn else None


@contextmanager
def stopping_by(conn: sqlite3.Connection, until: float):
    """Statements run within stop at ``until`` (a ``time.monotonic()``), or at the connection's
    own deadline when that is sooner; the connection's deadline holds again after."""
    outer = deadline_of(conn)
    sooner = until if outer is None else min(until, outer)
    conn.set_progress_handler(lambda: time.monotonic() > sooner, PROGRESS_STEPS)
    try:
        yield
    finally:
        if outer is None:
            conn.set_progress_handler(None, 0)
        else:
            conn.set_progress_handler(lambda: time.monotonic() > outer, PROGRESS_STEPS)


@contextmanager
def one_snapshot(conn: sqlite3.Connection):
    """Every statement run within reads the same state of the database (one read
    transaction), as an HTTP answer does: an ingest that commits meanwhile (one following
    the logs) is seen by the next command, never halfway through this one.
    Within a transaction already open, that one's. Only ``BEGIN`` and ``ROLLBACK`` pass
    the authorizer of a ``connect_readonly`` connection, which refuses transactions."""
    if conn.in_transaction:
        yield conn
        return
    unguarded(conn, "BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            try:
                unguarded(conn, "ROLLBACK")  # (it only read)
            except sqlite3.Error:
                pass  # (interrupted at a deadline: closing the connection ends it too)


def unguarded(conn: sqlite3.Connection, statement: str) -> None:
    """``statement`` run past the authorizer ``connect_readonly`` set, which is set again after."""
    guarded = isinstance(conn, ReadOnlyConnection)
    if guarded:
        conn.set_authorizer(None)
    try:
        conn.execute(statement)
    finally:
        if guarded:
            conn.set_authorizer(authorizer)


@contextmanager
def translated_errors():
    """Turn sqlite3 errors into ``QueryError`` with a code from the taxonomy."""
    try:
        yield
    except QueryError:
        raise
    except sqlite3.Error as exc:
        raise error_for(exc) from None


READS = "SELECT, WITH, VALUES, EXPLAIN, a PRAGMA that reads"


def error_for(exc: sqlite3.Error) -> QueryError:
    code = getattr(exc, "sqlite_errorcode", None)
    message = str(exc)
    if "one statement at a time" in message:
        return QueryError("OBELISK_INVALID_SQL", "sql() runs exactly one statement")
    if code == sqlite3.SQLITE_INTERRUPT or message == "interrupted":
        return QueryError("OBELISK_TIMEOUT", "the query ran past its time limit and was stopped")
    # (VACUUM within a script's read transaction is refused before the authorizer sees it)
    if (code in (sqlite3.SQLITE_AUTH, sqlite3.SQLITE_READONLY) or "not authorized" in message
            or "authorization denied" in message or message == "cannot VACUUM from within a transaction"):
        return QueryError("OBELISK_READ_ONLY", f"read-only: only a statement that reads may run ({READS}) ({message})")
    if code is not None and code & 0xFF in FAILED_STORAGE:
        return QueryError("SESSION_QUERY_PERSISTENCE_FAILED", f"reading or writing the archive failed: {message}")
    return QueryError("OBELISK_INVALID_SQL", message)


# SQLite's primary result codes for a file that could not be opened, read or written
# (a failing device, a full disk): no statement is at fault.
FAILED_STORAGE = frozenset((sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN))


def run_sql(conn: sqlite3.Connection, query, params: tuple | dict = ()) -> list[dict]:
    """Rows of one read-only statement as dicts, at most ``MAX_SQL_ROWS``.

    ``params`` binds ``?`` placeholders (a tuple) or ``:name`` ones (a dict).
    """
    if not isinstance(query, str):
        raise QueryError("OBELISK_INVALID_ARGUMENT", "sql() takes the SQL text as its first argument")
    check_bindings(params)
    with translated_errors(), reading_only(conn):
        cursor = conn.execute(query, params)
        if cursor.description is None:  # blank, a comment alone: no statement that reads
            raise QueryError(
                "OBELISK_INVALID_SQL", "sql() runs one statement that reads (SELECT, WITH, VALUES, a PRAGMA): this text holds none"
            )
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchmany(MAX_SQL_ROWS + 1)
    if len(rows) > MAX_SQL_ROWS:
        raise QueryError(
            "OBELISK_PAYLOAD_TOO_LARGE",
            f"sql() returns at most {MAX_SQL_ROWS} rows: add a LIMIT or aggregate in SQL",
        )
    return [dict(zip(columns, row)) for row in rows]


@contextmanager
def reading_only(conn: sqlite3.Connection):
    """The read-only authorizer on ``conn`` inside, if it is not on already.

    A connection from ``connect_readonly`` keeps its authorizer; any other
    gets it for this while only (``query_only`` alone would not do: a
    statement may turn it off, or change the journal mode).
    """
    if isinstance(conn, ReadOnlyConnection):
        yield
        return
    conn.set_authorizer(authorizer)
    try:
        yield
    finally:
        conn.set_authorizer(None)


def check_bindings(params: tuple | dict) -> None:
    """Refuse a value SQLite cannot bind before the statement runs.

    sqlite3 reports such a value with the connection's last error message,
    which is an earlier statement's when the statement comes from its cache.
    """
    named = isinstance(params, dict)
    for key, value in params.items() if named else enumerate(params, 1):
        if not bindable(value):
            kind = "an integer out of SQLite's 64-bit range" if isinstance(value, int) else f"a {type(value).__name__}"
            raise QueryError(
                "OBELISK_INVALID_ARGUMENT",
                f"sql(): binding {':' if named else ''}{key} is {kind}; "
                "SQLite binds None, integers, floats, text and bytes",
            )


def bindable(value) -> bool:
    if isinstance(value, int):
        return value in SQLITE_INTEGERS
    if value is None or isinstance(value, (float, str, bytes, bytearray, memoryview)):
        return True
    return (type(value), sqlite3.PrepareProtocol) in sqlite3.adapters
