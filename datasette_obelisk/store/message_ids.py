"""A message id, once given, never names another message.

``messages.id`` is an INTEGER PRIMARY KEY without AUTOINCREMENT (adding it
means rebuilding the table, minutes for a large archive), so SQLite gives a
new row the greatest id there is plus one: the ids of the last rows deleted
(a file read again deletes its rows first) would go to other messages, and
what holds an id (the FTS index, a search's first page, which saw the
messages up to its greatest id) would then name another one. Before rows
are deleted, ``obelisk_state`` keeps the greatest id given so far
(``TOP_KEY``); the first message written after that takes the id following
it, the rest follow it as SQLite numbers them. Both are a lookup or two a
batch, nothing a row.

A line read again that is the same message as before (its name, and
``SAME``: its session, time, kind and text) takes back its id (``Writer``),
so what named it still does.

    hold_top(conn)
        Before messages are deleted: keep the greatest id given so far.
    first_free(conn) -> int | None
        The id the next new message must take, when SQLite's own pick was
        given before; None when its pick is new.
    held_ids(conn, file_ids) -> {uuid: (session, id, key)}
        The messages files hold, before they are deleted to read them again.
"""

from __future__ import annotations

import json
import sqlite3

TOP_KEY = "message_id_top"
HOLD_TOP = (
    "INSERT INTO obelisk_state (key, value) SELECT ?1, CAST(top AS TEXT) FROM (SELECT MAX(id) AS top FROM messages) "
    "WHERE top IS NOT NULL "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value "
    "WHERE CAST(excluded.value AS INTEGER) > CAST(value AS INTEGER)"
)
FIRST_FREE = (
    "SELECT CAST(value AS INTEGER) + 1 FROM obelisk_state WHERE key = ? "
    "AND CAST(value AS INTEGER) > (SELECT COALESCE(MAX(id), 0) FROM messages)"
)
# What makes a line read again the message stored before, besides its name (``writer._line_key``).
SAME = "session_id, timestamp, type, subtype, role, content_type, text"


def hold_top(conn: sqlite3.Connection) -> None:
    conn.execute(HOLD_TOP, [TOP_KEY])


def first_free(conn: sqlite3.Connection) -> int | None:
    row = conn.execute(FIRST_FREE, [TOP_KEY]).fetchone()
    return None if row is None else row[0]


def held_ids(conn: sqlite3.Connection, file_ids) -> dict[str, tuple[str, int, int]]:
    """``{uuid: (session, id, hash of SAME)}`` of the messages of files about to be read again."""
    return {
        uuid: (same[0], message_id, hash(tuple(same)))
        for uuid, message_id, *same in conn.execute(
            f"SELECT uuid, id, {SAME} FROM messages WHERE file_id IN (SELECT value FROM json_each(?))",
            [json.dumps(sorted(file_ids))],
        )
    }
