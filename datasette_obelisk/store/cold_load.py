"""Cold loads: the first ingest of many bytes into an empty database.

Keeping every secondary index and the full-text index current row by row
costs several times more than building them once at the end, so a cold load
drops the indexes nothing reads while it loads, leaves new rows out of the
FTS tables, and then indexes everything in one pass. It also drops the
insert triggers that keep the FTS tables in step with other writers: a
trigger that reads ``new.text`` costs a copy of every row inserted, even
when its ``WHEN`` clause is false, and the finishing pass indexes every row
past the high-water mark, whoever wrote it.

A run that reads again the files holding at least ``RELOAD_SHARE`` of the
stored messages (a parser change replays every log of its source) is loaded
the same way, as a *reload*: the
FTS tables are emptied and their delete and update triggers dropped too, so
deleting the old rows costs no tokenizing, and the finishing pass indexes
every row, those of files not read again included. Nothing is indexed before
that pass (rows may still be deleted, and no trigger would take them out of
the index). Searches see an empty index until the reload ends.

The deferral is recorded in ``obelisk_state`` (key ``cold_load``: the SQL
to restore and the id up to which the FTS tables are complete) in the same
transaction that drops the indexes, so a run killed half-way is finished by
the next one before it does anything else. While the key exists, every
ingester (also a concurrent tail-ingest) leaves FTS to the finishing pass.

    begin(conn, files_read_again=()) -> bool
        Drop the deferrable indexes and insert triggers of an empty
        database, or begin a reload when the rows of ``files_read_again``
        (``source_files`` ids) hold at least ``RELOAD_SHARE`` of the
        messages; True when done.
    active(conn) -> bool
    running(conn) -> "load" | "reload" | None
    index_pending_text(conn, limit=None) -> bool
        Bring the FTS tables up to date now (before rows are deleted: the
        delete triggers must find what they remove in the index), or only
        the next ``limit`` messages (while the writer waits for the reader);
        True when text is still left for later. A reload does nothing here.
    index_taken_back(conn, table, ids, up_to=None)
        Index messages or tool results written again under ids they had
        (below the mark a pass indexes from): those up to ``up_to``, or up
        to where the FTS tables of the cold load running are complete.
    finish(conn)
        Index the pending text, merge the FTS segments into one, restore
        indexes, triggers and merge settings, clear the key.
    finish_alongside(conn, step)
        The same in a transaction of its own on a second connection, while
        ``step()`` does read-only work on this one (SQLite leaves Python's
        lock while it builds, so both cores work).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Callable, Iterable

import orjson

from .db import connect, count_rewrite_of_every_message, database_path, get_state, set_state, transaction
from .tool_output import FAILURE_SQL

STATE_KEY = "cold_load"
# Kept during the load: the lookups the ingester and the derivations it
# runs meanwhile make (a session's messages in order, a file's rows, the
# tool rows of a message, the result naming an agent or a saved output, the
# inline sidechain lines still to group), and indexes whose keys only grow,
# which cost little to maintain, as do the indexes of the few failed results
# and of the rows with an odd role or kind or a structural "message" line
# (built again at the end, each would read every row of its table).
KEPT = {
    "messages_session_seq", "messages_file", "tool_calls_file", "tool_results_file",
    "tool_results_agent", "tool_calls_message", "tool_results_message",
    "messages_ungrouped_sidechain", "tool_results_output", "tool_results_failed",
    "messages_other_role", "messages_message_lines", "messages_other_kind",
}
TABLES = ("messages", "tool_calls", "tool_results", "tool_call_files")
TRIGGERS = ("messages_ai", "tool_results_ai")
# Dropped as well by a reload, whose FTS tables hold nothing to delete, and
# which counts itself as one rewrite of every message (``obelisk_state.rewrites``:
# search cursors of the archive before it go stale) rather than one per row.
RELOAD_TRIGGERS = (
    "messages_ad", "messages_au", "tool_results_ad", "tool_results_au",
    "messages_rewritten_ad", "messages_rewritten_au",
)
FTS_TABLES = ("messages_fts", "tool_errors_fts")
# From about this share of the messages on, reading files again is faster
# as a reload (measured on the 500 MB benchmark corpus, files read again
# with their families: a quarter of the messages took 13.4 s row by row and
# 11.3 s as a reload; a seventh, 8.0 s and 8.3 s; the Claude Code logs, 45%,
# 38.9 s and 19.5 s).
RELOAD_SHARE = 0.2
# While loading, the FTS tables do not merge their segments as they go (each
# idle step adds one); the finishing pass merges them all once ('optimize'),
# which costs a third less than merging along the way and leaves one segment.
# At most 2,000 segments fit in an FTS5 index, so a crisis merge still runs
# at 500 on one level.
LOAD_MERGE = {"automerge": 0, "crisismerge": 500}
FTS5_DEFAULTS = {"automerge": 4, "crisismerge": 16}


def active(conn: sqlite3.Connection) -> bool:
    return get_state(conn, STATE_KEY) is not None


def running(conn: sqlite3.Connection) -> str | None:
    """``"load"`` or ``"reload"`` while one runs (or was killed and not finished yet), else None."""
    raw = get_state(conn, STATE_KEY)
    return None if raw is None else ("reload" if orjson.loads(raw).get("reload") else "load")


def begin(conn: sqlite3.Connection, files_read_again: Iterable[int] = ()) -> bool:
    """Inside the caller's transaction: start a cold load if the database holds
    no message, or a reload if ``files_read_again`` hold ``RELOAD_SHARE`` of them."""
    if active(conn):
        return False
    reload = conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() is not None
    if reload and not _most_messages_in(conn, list(files_read_again)):
        return False
    triggers = TRIGGERS + (RELOAD_TRIGGERS if reload else ())
    dropped = [
        (kind, name, sql)
        for kind, name, sql in conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND ("
            f"(type = 'index' AND tbl_name IN ({','.join('?' * len(TABLES))})) "
            f"OR (type = 'trigger' AND name IN ({','.join('?' * len(triggers))}))) ORDER BY type, name",
            [*TABLES, *triggers],
        )
        if name not in KEPT
    ]
    state = {"schema": [sql for _, _, sql in dropped], **_high_water(conn), "merge": _merge_settings(conn)}
    if reload:
        state.update(messages=0, tool_results=0, reload=True)
        count_rewrite_of_every_message(conn)
        for table in FTS_TABLES:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
    for table in FTS_TABLES:
        _set_merge(conn, table, LOAD_MERGE)
    set_state(conn, STATE_KEY, orjson.dumps(state).decode())
    for kind, name, _ in dropped:
        conn.execute(f"DROP {kind.upper()} {name}")
    return True


def _merge_settings(conn: sqlite3.Connection) -> dict:
    """Each FTS table's merge settings as they are now (FTS5's defaults unless set)."""
    return {
        table: {**FTS5_DEFAULTS, **dict(conn.execute(
            f"SELECT k, v FROM {table}_config WHERE k IN ({', '.join('?' * len(FTS5_DEFAULTS))})", list(FTS5_DEFAULTS)
        ))}
        for table in FTS_TABLES
    }


def _set_merge(conn: sqlite3.Connection, table: str, settings: dict) -> None:
    for key, value in settings.items():
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES (?, ?)", [key, value])


def _most_messages_in(conn: sqlite3.Connection, file_ids: list[int]) -> bool:
    if not file_ids:
        return False
    (held,) = conn.execute(
        "SELECT COUNT(*) FROM messages WHERE file_id IN (SELECT value FROM json_each(?))",
        [orjson.dumps(file_ids).decode()],
    ).fetchone()
    return held >= RELOAD_SHARE * conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]


def _high_water(conn: sqlite3.Connection) -> dict:
    return {
        "messages": conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0],
        "tool_results": conn.execute("SELECT COALESCE(MAX(id), 0) FROM tool_results").fetchone()[0],
    }


def index_pending_text(conn: sqlite3.Connection, limit: int | None = None) -> bool:
    """Inside the caller's transaction: add the rows the FTS tables miss (a
    reload leaves them all to ``finish``)."""
    raw = get_state(conn, STATE_KEY)
    if raw is None:
        return False
    state = orjson.loads(raw)
    return not state.get("reload") and _index_pending(conn, state, limit)


def _index_pending(conn: sqlite3.Connection, state: dict, limit: int | None) -> bool:
    high = _high_water(conn)
    if limit is not None:
        high["messages"] = min(high["messages"], state["messages"] + limit)
    index_text_after(conn, state["messages"], state["tool_results"], high["messages"])
    left = conn.execute("SELECT 1 FROM messages WHERE id > ?", [high["messages"]]).fetchone() is not None
    state.update(high)
    set_state(conn, STATE_KEY, orjson.dumps(state).decode())
    return left


def index_text_after(conn: sqlite3.Connection, message_id: int, result_id: int, up_to: int = 1 << 62) -> None:
    """Index message text (up to id ``up_to``) and the output of failures (``FAILURE_SQL``) of rows with larger ids."""
    conn.execute(
        "INSERT INTO messages_fts (rowid, text) SELECT id, coalesce(search_text, text) FROM messages "
        "WHERE id > ? AND id <= ?",
        [message_id, up_to],
    )
    conn.execute(
        "INSERT INTO tool_errors_fts (rowid, content) SELECT id, coalesce(search_content, content) FROM tool_results "
        f"WHERE id > ? AND {FAILURE_SQL}",
        [result_id],
    )


# What indexes the rows of a table written again under the ids they had (``index_taken_back``).
TAKEN_BACK = {
    "messages": "INSERT INTO messages_fts (rowid, text) SELECT id, coalesce(search_text, text) FROM messages "
                "WHERE id IN (SELECT value FROM json_each(?)) AND id <= ?",
    "tool_results": "INSERT INTO tool_errors_fts (rowid, content) SELECT id, coalesce(search_content, content) "
                    f"FROM tool_results WHERE id IN (SELECT value FROM json_each(?)) AND id <= ? AND {FAILURE_SQL}",
}


def index_taken_back(conn: sqlite3.Connection, table: str, ids: list[int], up_to: int | None = None) -> None:
    """Index the rows ``ids`` of ``table`` (messages, or tool results: their failures),
    written again under the ids they had (``stable_ids``), those up to id ``up_to`` (a pass
    from a mark on finds the others); with None, up to the id the FTS tables of the cold load
    running are complete to (a reload indexes all at its end)."""
    if up_to is None:
        raw = get_state(conn, STATE_KEY)
        state = orjson.loads(raw) if raw is not None else None
        if state is None or state.get("reload"):
            return
        up_to = state[table]
    conn.execute(TAKEN_BACK[table], [orjson.dumps(ids).decode(), up_to])


def finish(conn: sqlite3.Connection) -> bool:
    """Inside the caller's transaction: end the cold load; False when none was running."""
    raw = get_state(conn, STATE_KEY)
    if raw is None:
        return False
    state = orjson.loads(raw)
    _index_pending(conn, state, None)
    if "merge" in state:  # (not recorded by the cold loads of versions before it)
        for table, settings in state["merge"].items():
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            _set_merge(conn, table, settings)
    for sql in state["schema"]:
        for kind in ("INDEX", "TRIGGER"):
            sql = sql.replace(f"CREATE {kind} ", f"CREATE {kind} IF NOT EXISTS ", 1)
        conn.execute(sql)
    conn.execute("DELETE FROM obelisk_state WHERE key = ?", [STATE_KEY])
    return True


def finish_alongside(conn: sqlite3.Connection, step: Callable[[], bool]) -> None:
    """Finish on a second connection; meanwhile call ``step()`` until it returns False.

    ``conn`` must be outside a transaction and ``step`` must only read. The steps
    start once the second connection holds the write lock, so no other process
    changes what they read. An in-memory database has no second connection: it
    finishes here.
    """
    path = database_path(conn)
    if not path:
        with transaction(conn):
            finish(conn)
        return
    failures: list[BaseException] = []
    locked = threading.Event()

    def build() -> None:
        other = None
        try:
            other = connect(path)
            with transaction(other):
                locked.set()
                finish(other)
        except BaseException as exc:  # raised again in the calling thread
            failures.append(exc)
        finally:
            locked.set()
            if other is not None:
                other.close()

    builder = threading.Thread(target=build, name="obelisk-cold-load", daemon=True)
    builder.start()
    try:
        locked.wait()
        while builder.is_alive() and step():
            pass
    finally:
        builder.join()
    if failures:
        raise failures[0]
