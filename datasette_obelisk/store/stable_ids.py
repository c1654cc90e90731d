"""Ids that name one thing for good: a message's, a tool result's or a
prompt's id, a session's place (rowid).

``messages.id``, ``tool_results.id`` and ``prompt_log.id`` are INTEGER
PRIMARY KEYs without AUTOINCREMENT (adding it means rebuilding the table,
minutes for a large archive), so SQLite gives a new row the greatest id
there is plus one: the ids of the last rows deleted (a file read again
deletes its rows first) would go to other rows, and what holds an id (the
FTS index, a search's first page, which saw the messages up to its greatest
id, a failures page's cursor, a link to a row) would then name another one.
Before rows are deleted, ``obelisk_state`` keeps the greatest id given so
far in the table (its key in ``TOP_KEYS``); the first row stored after that
takes the id following it, the rest follow it as SQLite numbers them. Both
are a lookup or two a batch, nothing a row.

A row read again the same as before takes back its id (``Writer``), so what
named it still does: a message of the same name, session and ``SAME`` (its
time, kind and text; an inline agent's line is written in its parent's
session, the row stored before is in the agent's: ``inline_agent``); a tool
result of the same tool call id and ``RESULT_SAME`` (its time, outcome and
output); a prompt of the same ``PROMPT_SAME`` (its source, session, time and
text: a prompt has no name). One that changed takes a new id, past every one
given.

A session's rowid is its place in the archive: the pages after a first one
leave out the sessions stored since (a rowid past the greatest it saw). The
sessions of a family read again are forgotten and stored anew, at new
places; once the family is written they take their places back, and the
sessions new among them go past every place given (``place_sessions_back``).

    hold_top(conn, *tables)
        Before rows of ``tables`` are deleted: keep the greatest id given so far in each.
    first_free(conn, table) -> int | None
        The id the next new row must take, when SQLite's own pick was
        given before; None when its pick is new.
    insert_past_top(conn, table, insert, insert_with_id, rows)
        Insert ``rows``, the first stored taking ``first_free``'s id.
    inline_agent(session_id, root_uuid) -> (agent id, session id)
        The agent whose inline lines start at ``root_uuid``, and its session.
    held_ids(conn, file_ids) -> Held
        The ids of the rows files hold, before they are deleted to read them again.
    session_places(conn, session_ids) -> ({session: rowid}, greatest rowid)
        Before sessions are forgotten, to be stored again.
    place_sessions_back(conn, places, after)
        Once they are: ``places`` as ``session_places`` gave them, ``after``
        the greatest rowid there was once they were forgotten.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

TOP_KEYS = {"messages": "message_id_top", "tool_results": "tool_result_id_top", "prompt_log": "prompt_id_top"}
HOLD_TOP = (
    "INSERT INTO obelisk_state (key, value) SELECT ?1, CAST(top AS TEXT) FROM (SELECT MAX(id) AS top FROM {}) "
    "WHERE top IS NOT NULL "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value "
    "WHERE CAST(excluded.value AS INTEGER) > CAST(value AS INTEGER)"
)
FIRST_FREE = (
    "SELECT CAST(value AS INTEGER) + 1 FROM obelisk_state WHERE key = ? "
    "AND CAST(value AS INTEGER) > (SELECT COALESCE(MAX(id), 0) FROM {})"
)
# What makes a line read again the message stored before, besides its name and session
# (``writer._line_key``, ``Held.message_id``).
SAME = "timestamp, type, subtype, role, content_type, text"
# An inline agent's session: its parent's, this, then the start of its first line's uuid.
INLINE_AGENT = ":agent-sidechain-"
# What makes a tool result read again the one stored before, besides its tool call id (one
# a table: Codex's and Gemini's name their session). Not its message (a Codex line moved
# names another) nor its session (an inline agent's is set when derived; ``writer.RESULT_KEY``).
RESULT_SAME = "timestamp, outcome, is_error, exit_code, content, content_length"
# What makes a prompt read again the one stored before (``writer.PROMPT_KEY``).
PROMPT_SAME = "source, session_id, timestamp, text"


def inline_agent(session_id: str, root_uuid: str) -> tuple[str, str]:
    agent_id = "sidechain-" + root_uuid.replace("-", "")[:12]
    return agent_id, f"{session_id}:agent-{agent_id}"


def moved_into(stored: str, session_id: str) -> bool:
    """Whether ``stored`` is a session derivation moves inline agent lines of ``session_id`` into."""
    return stored.startswith(session_id + INLINE_AGENT) and ":" not in stored[len(session_id) + len(INLINE_AGENT):]


def hold_top(conn: sqlite3.Connection, *tables: str) -> None:
    for table in tables:
        conn.execute(HOLD_TOP.format(table), [TOP_KEYS[table]])


def first_free(conn: sqlite3.Connection, table: str) -> int | None:
    row = conn.execute(FIRST_FREE.format(table), [TOP_KEYS[table]]).fetchone()
    return None if row is None else row[0]


def insert_past_top(conn: sqlite3.Connection, table: str, insert: str, insert_with_id: str, rows: list) -> None:
    """``insert`` each of ``rows``; while SQLite's pick was given before, rows go in by
    ``insert_with_id`` (the row's values, then its id) until one is stored: a row an
    ``INSERT OR IGNORE`` skips uses up no id, and the next would take SQLite's pick."""
    start = 0
    if rows and (first := first_free(conn, table)) is not None:
        while start < len(rows) and conn.execute(insert_with_id, (*rows[start], first)).rowcount == 0:
            start += 1
        start += 1
    conn.executemany(insert, rows[start:])


@dataclass
class Held:
    """The ids of rows about to be deleted, for the same rows read again to take back
    (each once: a taken id is used up)."""

    messages: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # uuid -> (session, id, hash of SAME)
    results: dict[str, tuple[int, int]] = field(default_factory=dict)  # tool call id -> (id, hash of RESULT_SAME)
    prompts: dict[int, list[int]] = field(default_factory=dict)  # hash of PROMPT_SAME -> ids, the least last

    def __bool__(self) -> bool:
        return bool(self.messages or self.results or self.prompts)

    def hold_results(self, conn: sqlite3.Connection, where: str, values: list) -> None:
        """Hold the ids of the tool results ``where`` (SQL on ``tool_results``) picks."""
        self.results.update(
            (tool_use_id, (result_id, hash(tuple(same))))
            for tool_use_id, result_id, *same in conn.execute(
                f"SELECT tool_use_id, id, {RESULT_SAME} FROM tool_results WHERE {where}", values)
        )

    def message_id(self, uuid: str, session_id: str, sidechain: bool, key: tuple) -> int | None:
        """The id the line ``uuid`` of ``session_id`` and ``key`` (``SAME``'s values) takes back,
        if any; an inline agent's line (``sidechain``) also that of its row moved into the agent's session."""
        held = self.messages.get(uuid)
        if held is None or held[2] != hash(key) or (
                held[0] != session_id and not (sidechain and moved_into(held[0], session_id))):
            return None
        del self.messages[uuid]
        return held[1]

    def result_id(self, tool_use_id: str, key: tuple) -> int | None:
        """The id the result ``tool_use_id`` of ``key`` (``RESULT_SAME``'s values) takes back, if any."""
        held = self.results.get(tool_use_id)
        if held is None or held[1] != hash(key):
            return None
        del self.results[tool_use_id]
        return held[0]

    def prompt_id(self, key: tuple) -> int | None:
        """The id a prompt of ``key`` (``PROMPT_SAME``'s values) takes back, if any."""
        ids = self.prompts.get(hash(key))
        if not ids:
            return None
        return ids.pop()


def held_ids(conn: sqlite3.Connection, file_ids) -> Held:
    """The ids of the messages, tool results and prompts of files about to be read again."""
    files = [json.dumps(sorted(file_ids))]
    of_files = "file_id IN (SELECT value FROM json_each(?))"
    held = Held({
        uuid: (session_id, message_id, hash(tuple(same)))
        for uuid, message_id, session_id, *same in conn.execute(
            f"SELECT uuid, id, session_id, {SAME} FROM messages WHERE {of_files}", files)
    })
    held.hold_results(conn, of_files, files)
    for prompt_id, *same in conn.execute(f"SELECT id, {PROMPT_SAME} FROM prompt_log WHERE {of_files} ORDER BY id DESC",
                                         files):
        held.prompts.setdefault(hash(tuple(same)), []).append(prompt_id)
    return held


def session_places(conn: sqlite3.Connection, session_ids) -> tuple[dict[str, int], int]:
    rowids = dict(conn.execute(
        "SELECT id, rowid FROM sessions WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(sorted(session_ids))]
    ))
    return rowids, greatest_place(conn)


def greatest_place(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM sessions").fetchone()[0]


def place_sessions_back(conn: sqlite3.Connection, places: tuple[dict[str, int], int], after: int) -> None:
    """The sessions stored since they were forgotten (a rowid past ``after``) first go past
    every place given, in their order; then those that had a place take it back (it is free:
    a place up to ``after`` was given to none of them)."""
    rowids, top = places
    stored = conn.execute("SELECT id, rowid FROM sessions WHERE rowid > ? ORDER BY rowid", [after]).fetchall()
    if not stored:
        return
    past = max(top, stored[-1][1])
    conn.executemany("UPDATE sessions SET rowid = ? WHERE id = ?",
                     [(past + n, session_id) for n, (session_id, _) in enumerate(stored, 1)])
    conn.executemany("UPDATE sessions SET rowid = ? WHERE id = ?",
                     [(rowids[session_id], session_id) for session_id, _ in stored if session_id in rowids])
