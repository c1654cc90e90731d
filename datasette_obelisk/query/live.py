"""Live-preferred answers: tail-ingest logs that grew since the last ingest.

    refresh(conn, session_ids=None, *, enabled=True, sources=None, max_bytes=None,
            fingerprinted=False) -> list[str] | None
        Before answering for ``session_ids`` (every known file when None),
        compare each of their source files' ``os.stat`` size and mtime with
        its ``source_files`` row; a file that changed is ingested again —
        the ingester reads only the bytes after its cursor when the file
        just grew — and the derivations (surfaces, titles, the session index)
        are brought up to date. A log read again from its start (rewritten,
        or read by a newer parser) takes the other files of its sessions
        along, as ``obelisk ingest`` does. Returns the paths re-read; None,
        reading nothing, when that means reading more than ``max_bytes``.
        With ``fingerprinted`` (the web's refresh), only a file in the sources'
        own folders on this machine (``own_folders``), or a regular file whose
        bytes up to its cursor still hash as the ingest recorded
        (``fingerprint_holds``), is read: a database names the paths it read
        and can be made anywhere, by hand too, so serving one must not read
        other files of the machine into it. A log elsewhere that was rewritten
        or a document saved again is then left to ``obelisk ingest`` (and
        ``obelisk up``'s watcher).

``conn`` must be a *write* connection (``store.db.open_db``); everything
else in query/ reads only. A database whose schema is not this version's
(Datasette serving it after an upgrade, before any ingest) is not refreshed. ``enabled=False`` makes this a no-op, for faces
that serve a published read-only copy. If another writer holds the database
longer than ``WAIT_SECONDS`` the refresh is skipped and the answer comes
from what is already stored. Files that are gone are left alone: their
sessions are served from the archive. New files are not discovered here;
that is ``obelisk ingest``'s job.
"""

from __future__ import annotations

import os
import sqlite3
import stat

from ..sources.base import default_root_of, folders_of
from ..sources.lines import load_json, repair_utf8
from ..store.db import BUSY_TIMEOUT_MS, is_current, newer_parsers
from ..store.fingerprint import HASH_BYTES, still_holds
from ..store import cold_load
from ..store.units import in_read_order, unit_of_row

WAIT_SECONDS = 2.0


def changed_files(conn: sqlite3.Connection, session_ids=None) -> list[dict]:
    """``source_files`` rows whose file on disk no longer has the stored size and mtime.

    Files stored before discovery's hints were kept (``hints`` NULL, until an
    ingest fills them in) are left to the next ingest: read without them, an
    agent's log would lose its parent session and project."""
    if session_ids is None:
        sql, params = "SELECT * FROM source_files WHERE missing = 0 AND hints IS NOT NULL", []
    else:
        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        sql = (
            "SELECT * FROM source_files WHERE missing = 0 AND hints IS NOT NULL AND id IN "
            f"(SELECT DISTINCT file_id FROM messages WHERE session_id IN ({marks}))"
        )
        params = ids
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    changed = []
    for values in cursor.fetchall():
        row = dict(zip(names, values))
        try:
            st = os.stat(row["path"])
        except OSError:
            continue  # gone: the archive answers; `obelisk ingest` marks it missing
        if (st.st_size, st.st_mtime_ns) != (row["size"], row["mtime_ns"]):
            changed.append({**row, "size_now": st.st_size})
    return changed


def bytes_to_read(rows: list[dict], parser_versions: dict) -> int:
    """How much reading ``changed_files`` rows takes: the new bytes of a log
    that grew, the whole of any other file (a document is read whole, a
    compressed log from its start, one a newer parser must read again from
    its start, and a rewritten one may be). ``parser_versions``: source -> version."""
    return sum(
        row["size_now"] - row["cursor"] if grew(row, parser_versions) else row["size_now"]
        for row in rows
    )


def grew(row: dict, parser_versions: dict) -> bool:
    plain_log = row["layout"] == "jsonl" and not row["compression"]
    current = parser_versions.get(row["source"]) == row["parser_version"]
    return plain_log and current and row["size_now"] > (row["size"] or 0) >= row["cursor"]


def fingerprint_holds(row: dict) -> bool:
    """Whether ``row``'s file is a regular file whose bytes up to the cursor hash as
    the ingest recorded them (``fingerprint.still_holds``, as ``/api/raw`` checks a line's
    file), its cursor at the end of a line."""
    cursor = row.get("cursor")
    if not (row.get("head_hash") and row.get("tail_hash")) or not isinstance(cursor, int) or cursor < 1:
        return False
    try:
        fd = os.open(row["path"], os.O_RDONLY | os.O_NONBLOCK)  # (a FIFO must not block the open)
    except (OSError, TypeError, ValueError):
        return False
    try:
        with os.fdopen(fd, "rb") as fp:
            if not stat.S_ISREG(os.fstat(fp.fileno()).st_mode):
                return False
            if not row.get("compression") and not ends_a_line(fp.fileno(), cursor):
                return False
            return still_holds(fp, row)
    except OSError:
        return False


def own_folders(sources, environ=os.environ) -> list[str]:
    """The folders the sources read by default on this machine (``~/.claude/projects``, …),
    resolved: their logs are this machine's agents' own, whatever a database names."""
    found = []
    for source in sources.values():
        root = default_root_of(source, environ)[0]
        if root is not None:
            found += [os.path.join(os.path.realpath(folder), "") for folder in folders_of(source, root)]
    return found


def is_inside(path: str, folders: list[str]) -> bool:
    """Whether ``path``, resolved, lies in one of ``folders`` (``own_folders``)."""
    try:
        resolved = os.path.realpath(path)
    except (OSError, TypeError, ValueError):
        return False
    return any(resolved.startswith(folder) for folder in folders)


def ends_a_line(fd: int, cursor: int) -> bool:
    """Whether the ingest's cursor sits where a log line ends: after a line break, or after
    a last line that is whole JSON (one settled without its break). A fingerprint then covers
    at least one whole line, which cannot be guessed the way a first byte (``{``) can."""
    start = max(0, cursor - HASH_BYTES)
    tail = os.pread(fd, cursor - start, start)
    if tail.endswith(b"\n"):
        return True
    line = tail[tail.rfind(b"\n") + 1:]
    if len(line) == len(tail) and start > 0:  # a last line longer than the fingerprint's tail
        return False
    try:
        repaired = repair_utf8(line)  # (as the reader settles such a line: bytes that are not UTF-8
        load_json(repaired[0] if repaired else line)  # read as U+FFFD, an escaped lone surrogate read too)
    except ValueError:
        return False
    return True


def refresh(
    conn: sqlite3.Connection, session_ids=None, *, enabled: bool = True, sources=None, max_bytes: int | None = None,
    fingerprinted: bool = False,
) -> list[str] | None:
    if not enabled:
        return []
    if not is_current(conn):
        return []  # written by another version: answer from what is stored until an ingest migrates it
    if cold_load.active(conn):
        return []  # a first ingest is still loading: answer from what is stored
    rows = changed_files(conn, session_ids)
    if not rows:
        return []
    if sources is None:
        from ..plugins import get_sources

        sources = get_sources()
    versions = {name: source.parser_version for name, source in sources.items()}
    newer = {source for source, _ in newer_parsers(conn, versions)}  # answered from what a newer parser stored
    rows = [row for row in rows if row["source"] in sources and row["source"] not in newer]
    if fingerprinted:
        own = own_folders(sources)
        rows = [row for row in rows if is_inside(row["path"], own) or fingerprint_holds(row)]
    if not rows:
        return []
    if max_bytes is not None and bytes_to_read(rows, versions) > max_bytes:
        return None
    from ..store.ingest import Ingester  # here: most answers need no ingest, and it loads slowly
    from ..store.redacting import record_redactor_for

    previous_factory = conn.row_factory
    conn.execute(f"PRAGMA busy_timeout = {int(WAIT_SECONDS * 1000)}")
    try:
        ingester = Ingester(conn, sources, {}, redact=record_redactor_for(conn))
        ingester.ingest_files(in_read_order(map(unit_of_row, rows)))
        ingester.read_outsiders_again()
        ingester.derive_pending()
        ingester.release()  # one commit for files read again from their start, derivations included
        ingester.flush(force=True)  # the batch the ingester keeps open across files
    except sqlite3.OperationalError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        return []  # another writer is busy: answer from what is stored
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.row_factory = previous_factory
    return [row["path"] for row in rows]

