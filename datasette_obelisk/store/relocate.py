"""Files that moved or were compressed: their rows follow the copy still on disk.

Codex moves old rollouts to ``archived_sessions/`` and may compress them;
the copy is read like any new file, and its lines merge into the rows the
first path stored. When the first path is then found gone, ``relocate``
looks among the live files that hold the same sessions for one whose bytes
up to the old cursor hash the same (head and tail, as ``fingerprint``
keeps them) and moves the rows there, so ``raw()`` still finds each line at
its byte offset. Without such a copy the rows stay with the missing file.
Rows another parser version made (the copy was read by a newer one) are not
what the copy's parser makes of it: the copy takes their version, so the
next ingest reads it again.
"""

from __future__ import annotations

import os
import sqlite3

import orjson

from .fingerprint import stream_hashes
from .reader import open_stream
from .writer import FILE_TABLES


def relocate(conn: sqlite3.Connection, gone_id: int, redact=None) -> int | None:
    """Move the rows of a file gone from disk to its copy; the copy's id, or None.
    ``redact``: what the ingest does to a project name (None: nothing)."""
    gone = conn.execute(
        "SELECT source, cursor, head_hash, tail_hash, parser_version, layout, path FROM source_files WHERE id = ?",
        [gone_id],
    ).fetchone()
    if gone is None or gone[2] is None or not gone[1]:
        return None
    candidates = conn.execute(
        """SELECT id, path, compression FROM source_files
           WHERE missing = 0 AND id != :gone AND source = :source AND cursor >= :cursor AND id IN (
               SELECT b.file_id FROM file_sessions a JOIN file_sessions b ON b.session_id = a.session_id
               WHERE a.file_id = :gone)
           ORDER BY id""",
        {"gone": gone_id, "source": gone[0], "cursor": gone[1]},
    ).fetchall()
    for copy_id, path, compression in candidates:
        if gone[5] == "text" and os.path.basename(path) != os.path.basename(gone[6]):
            continue  # (a tool's output saved apart is named after its call: another the same is another's)
        if _hashes(path, compression, gone[1]) == (gone[2], gone[3]):
            _move_rows(conn, gone_id, copy_id)
            _follow_project(conn, gone_id, copy_id, redact or (lambda name: name))
            conn.execute(
                "UPDATE source_files SET parser_version = ? WHERE id = ? AND parser_version IS NOT ?",
                [gone[4], copy_id, gone[4]],
            )
            return copy_id
    return None


def _follow_project(conn: sqlite3.Connection, old: int, new: int, redact) -> None:
    """A file moved to another project folder (the folder renamed): its sessions
    that were named after the old folder take the new one, as a fresh ingest names them."""
    (old_hints,), (new_hints,) = (
        conn.execute("SELECT hints FROM source_files WHERE id = ?", [file_id]).fetchone() for file_id in (old, new)
    )
    before, after = (orjson.loads(h).get("project") if h else None for h in (old_hints, new_hints))
    if before and after and before != after:
        before, after = redact(before), redact(after)
        conn.execute(
            "UPDATE sessions SET project = ? WHERE project = ? AND id IN (SELECT session_id FROM file_sessions "
            "WHERE file_id = ?)",
            [after, before, new],
        )


def _hashes(path: str, compression: str | None, cursor: int):
    import zstandard

    try:
        with open_stream(path, compression) as (_, stream):
            return stream_hashes(stream, cursor)
    except (OSError, zstandard.ZstdError):  # (a compressed copy that is corrupt is no copy)
        return None


def _move_rows(conn: sqlite3.Connection, old: int, new: int) -> None:
    for table in FILE_TABLES:
        conn.execute(f"UPDATE {table} SET file_id = ? WHERE file_id = ?", [new, old])
    conn.execute("UPDATE OR IGNORE message_aliases SET file_id = ? WHERE file_id = ?", [new, old])
    conn.execute("UPDATE OR IGNORE file_sessions SET file_id = ? WHERE file_id = ?", [new, old])
    for table in ("message_aliases", "file_sessions", "ingest_errors"):  # the copy reported its own bad lines
        conn.execute(f"DELETE FROM {table} WHERE file_id = ?", [old])
    stored = conn.execute("SELECT lines_stored FROM source_files WHERE id = ?", [old]).fetchone()[0]
    conn.execute(
        "UPDATE source_files SET lines_stored = lines_stored + ?, lines_merged = MAX(0, lines_merged - ?) WHERE id = ?",
        [stored, stored, new],
    )
    # Its lines are now merged into the copy's rows: read = stored + merged + failed still holds.
    conn.execute("UPDATE source_files SET lines_merged = lines_merged + lines_stored, lines_stored = 0 WHERE id = ?", [old])
