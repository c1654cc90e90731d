"""Families: the files that share sessions, read again together.

A session's ``sessions`` row and its ``subagents`` rows merge what every
file naming it says (a Claude session's main file, its agent files and
their ``.meta.json``; a Codex parent and the rollouts that copy it). One of
those files read again alone cannot take back what it no longer says: an
older parser's agent type, a start time or a working folder from a line
that is gone. So a file read again from its start takes its family along:
the sessions are forgotten and every file naming one of them is read again,
which gives what a first ingest of those files gives.

    family(conn, file_id) -> (file ids, session ids)
        The smallest set of files and sessions holding ``file_id`` in which
        every file of a session and every session of a file belong.
    families_to_read(conn, file_ids, found) -> [({file id: path}, session ids)]
        The files and sessions of each family of ``file_ids`` that can be
        read again whole: every file among the paths ``found`` (on disk).
"""

from __future__ import annotations

import sqlite3
from typing import Iterable

import orjson

SESSIONS_OF_FILES = (
    "SELECT session_id FROM file_sessions WHERE file_id IN (SELECT value FROM json_each(:ids)) "
    "UNION SELECT session_id FROM messages WHERE file_id IN (SELECT value FROM json_each(:ids))"
)
# A text file (a tool's output saved apart) holds a message of its session and
# nothing that merges with what other files say: it is in no family.
FILES_OF_SESSIONS = (
    "SELECT id FROM source_files WHERE layout != 'text' AND id IN ("
    "SELECT file_id FROM file_sessions WHERE session_id IN (SELECT value FROM json_each(:ids)) "
    "UNION SELECT file_id FROM messages WHERE session_id IN (SELECT value FROM json_each(:ids)))"
)


def family(conn: sqlite3.Connection, file_id: int) -> tuple[set[int], set[str]]:
    files, sessions = {file_id}, set()
    new_files = {file_id}
    while new_files:
        new_sessions = {row[0] for row in conn.execute(SESSIONS_OF_FILES, {"ids": as_json(new_files)})} - sessions
        sessions |= new_sessions
        new_files = {row[0] for row in conn.execute(FILES_OF_SESSIONS, {"ids": as_json(new_sessions)})} - files
        files |= new_files
    return files, sessions


def families_to_read(
    conn: sqlite3.Connection, file_ids: Iterable[int], found: set[str]
) -> list[tuple[dict[int, str], set[str]]]:
    seen: set[int] = set()
    whole: list[tuple[dict[int, str], set[str]]] = []
    for file_id in file_ids:
        if file_id in seen:
            continue
        files, named = family(conn, file_id)
        seen |= files
        # Found by this run: on disk, also when a file marked gone has come back.
        stored = dict(conn.execute(
            "SELECT id, path FROM source_files WHERE id IN (SELECT value FROM json_each(?))", [as_json(files)]
        ))
        if len(stored) == len(files) and all(path in found for path in stored.values()):
            whole.append((stored, named))
    return whole


def as_json(values) -> str:
    """``values`` as a JSON array, for ``json_each`` (no limit on how many)."""
    return orjson.dumps(sorted(values)).decode()
