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
"""

from __future__ import annotations

import json
import sqlite3

SESSIONS_OF_FILES = (
    "SELECT session_id FROM file_sessions WHERE file_id IN (SELECT value FROM json_each(:ids)) "
    "UNION SELECT session_id FROM messages WHERE file_id IN (SELECT value FROM json_each(:ids))"
)
FILES_OF_SESSIONS = (
    "SELECT file_id FROM file_sessions WHERE session_id IN (SELECT value FROM json_each(:ids)) "
    "UNION SELECT file_id FROM messages WHERE session_id IN (SELECT value FROM json_each(:ids))"
)


def family(conn: sqlite3.Connection, file_id: int) -> tuple[set[int], set[str]]:
    files, sessions = {file_id}, set()
    new_files = {file_id}
    while new_files:
        ids = json.dumps(sorted(new_files))
        new_sessions = {row[0] for row in conn.execute(SESSIONS_OF_FILES, {"ids": ids})} - sessions
        sessions |= new_sessions
        ids = json.dumps(sorted(new_sessions))
        new_files = {row[0] for row in conn.execute(FILES_OF_SESSIONS, {"ids": ids})} - files
        files |= new_files
    return files, sessions
