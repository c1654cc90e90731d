"""``remember`` and ``forget``: the only writes the query vocabulary makes.

A memory registers a human-approved markdown file. The file must be a
regular file reached without any symlink, inside one of the memory roots
the caller configured (none configured: every ``remember`` is refused).
Every path refusal (outside a root, ``..`` out of it, a symlink anywhere, a
FIFO, a directory, a NUL byte, a missing file) raises the same
``OBELISK_MEMORY_REFUSED`` with the same message, so the call cannot be
used to probe the filesystem; nothing is written when it is refused.
The file itself is never opened.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import stat
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

import orjson

from .. import cjk
from ..store.db import newer_migrations
from .errors import QueryError, refusing_unencodable

REFUSED = QueryError(
    "OBELISK_MEMORY_REFUSED",
    "remember(): path refused; it must name an existing regular file, without symlinks, "
    "inside a configured memory root",
)
OPTIONAL_TEXT = ("session_id", "message_start", "message_end", "project")


def refused() -> QueryError:
    return QueryError(REFUSED.code, REFUSED.message)


def invalid(message: str) -> QueryError:
    return QueryError("OBELISK_INVALID_ARGUMENT", message)


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def new_memory_id() -> str:
    return f"mem-{time.time_ns() // 1_000_000}-{secrets.token_hex(4)}"


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def remember(conn: sqlite3.Connection, record, *, memory_roots: Iterable, cwd: str | None = None) -> dict:
    """Register a markdown memory file; returns ``{id, path, project, anchors, created_at}``.

    Registering again exactly what an active memory holds writes nothing and
    returns that memory with ``already_registered: true``.

    A relative ``path`` resolves against the ``project_path`` of
    ``session_id`` when given, else against ``cwd`` (default: the process's).
    A ``session_id`` not stored yet (a live session the next ingest reads)
    is kept as given, and the path resolves against ``cwd``.
    """
    if not isinstance(record, dict):
        raise invalid("remember() takes a dict: {path, summary, session_id?, ...}")
    unknown = set(record) - {"path", "summary", "anchors", *OPTIONAL_TEXT}
    if unknown:
        raise invalid(f"remember(): unknown field(s) {', '.join(sorted(unknown))}")
    summary = record.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise invalid("remember() needs summary: a short English retrieval summary")
    if cjk.holds(summary):  # (Hangul as jamo too, as macOS writes it, and ideographs beyond the BMP)
        raise invalid("remember(): write the summary in English (CJK text found)")
    fields = {name: record.get(name) for name in OPTIONAL_TEXT}
    for name, value in fields.items():
        if value is not None and not isinstance(value, str):
            raise invalid(f"remember(): {name} must be a string")
    anchors = normalise_anchors(record.get("anchors"))
    session = None
    if fields["session_id"]:
        session = conn.execute(
            "SELECT project, project_path FROM sessions WHERE id = ?", [fields["session_id"]]
        ).fetchone()
    base = (session[1] if session and session[1] else None) or cwd or os.getcwd()
    path = confined_path(record.get("path"), base, memory_roots)
    if not path.lower().endswith(".md"):  # checked once confined, so every refusal above stays identical
        raise invalid("remember(): path must name a markdown file (.md)")
    project = fields["project"] or (session[0] if session else None) or project_at(conn, base)
    memory = {
        "id": new_memory_id(),
        "path": path,
        "project": project,
        "anchors": anchors,
        "created_at": now_iso(),
    }
    stored_anchors = None if anchors is None else json.dumps(anchors)
    with write_transaction(conn):
        same = registered(conn, fields, project, path, stored_anchors, summary.strip())
        if same is not None:
            return {**memory, "id": same[0], "created_at": same[1], "already_registered": True}
        conn.execute(
            "INSERT INTO memories (id, session_id, project, message_start, message_end, path, anchors, "
            "summary, search_summary, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                memory["id"], fields["session_id"], project, fields["message_start"], fields["message_end"],
                path, stored_anchors, summary.strip(), cjk.search_text(summary.strip()), memory["created_at"],
            ],
        )
    return memory


def registered(conn, fields: dict, project, path: str, anchors, summary: str):
    """``(id, created_at)`` of an active memory registered with exactly these
    values: a retried ``remember`` (a lost answer, a double click) adds no twin."""
    return conn.execute(
        "SELECT id, created_at FROM memories WHERE deleted_at IS NULL AND path = ? AND summary = ? "
        "AND project IS ? AND session_id IS ? AND message_start IS ? AND message_end IS ? AND anchors IS ? "
        "ORDER BY created_at, id LIMIT 1",
        [path, summary, project, fields["session_id"], fields["message_start"], fields["message_end"], anchors],
    ).fetchone()


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def forget(conn: sqlite3.Connection, record) -> dict:
    """Archive a memory: ``deleted_at`` and ``deleted_reason`` are set, the file is kept."""
    if not isinstance(record, dict):
        raise invalid("forget() takes a dict: {id, reason}")
    unknown = set(record) - {"id", "reason"}
    if unknown:
        raise invalid(f"forget(): unknown field(s) {', '.join(sorted(unknown))}")
    memory_id, reason = record.get("id"), record.get("reason")
    if not isinstance(memory_id, str) or not memory_id:
        raise invalid("forget() needs id: the exact memory id")
    if not isinstance(reason, str) or not reason.strip():
        raise invalid("forget() needs reason: why the memory is archived")
    with write_transaction(conn):
        row = conn.execute(
            "SELECT deleted_at, deleted_reason FROM memories WHERE id = ?", [memory_id]
        ).fetchone()
        if row is None:
            raise QueryError("OBELISK_NOT_FOUND", f"forget(): no memory {memory_id!r}")
        if row[0] is not None:
            return {"id": memory_id, "deleted_at": row[0], "deleted_reason": row[1], "already_deleted": True}
        deleted_at = now_iso()
        conn.execute(
            "UPDATE memories SET deleted_at = ?, deleted_reason = ? WHERE id = ?",
            [deleted_at, reason.strip(), memory_id],
        )
    return {"id": memory_id, "deleted_at": deleted_at, "deleted_reason": reason.strip()}


def normalise_anchors(anchors):
    """None, or a JSON array (given as a list or as JSON text)."""
    if anchors is None:
        return None
    if isinstance(anchors, str):
        try:
            anchors = orjson.loads(anchors)
        except ValueError:
            raise invalid("remember(): anchors must be a list or a JSON array") from None
    if not isinstance(anchors, (list, tuple)):
        raise invalid("remember(): anchors must be a list or a JSON array")
    try:
        json.dumps(anchors)
    except (TypeError, ValueError):
        raise invalid("remember(): anchors must be JSON values") from None
    except RecursionError:
        raise invalid("remember(): anchors are nested too deeply") from None
    return list(anchors)


def project_at(conn, folder: str) -> str | None:
    """The project of the most recent session that ran in ``folder``."""
    row = conn.execute(
        "SELECT project FROM sessions WHERE project_path = ? AND project IS NOT NULL "
        "ORDER BY ended_at DESC LIMIT 1",
        [folder],
    ).fetchone()
    return row[0] if row else None


# -- confinement -------------------------------------------------------------


def confined_path(path, base: str, memory_roots: Iterable) -> str:
    """The real path of ``path`` if it may be registered, else ``REFUSED``."""
    if not isinstance(path, str) or not path or "\x00" in path or "\x00" in base:
        raise refused()
    roots = [str(root) for root in memory_roots or ()]
    if not roots:
        raise QueryError(REFUSED.code, "remember(): no memory root is configured, so no file may be registered "
                         "(obelisk attune --memory-root or $OBELISK_MEMORY_ROOTS; memory_roots for Datasette)")
    if any("\x00" in root for root in roots):
        raise refused()
    candidate = os.path.join(base, path)
    if not os.path.isabs(candidate):
        raise refused()
    given_roots = [os.path.abspath(root) for root in roots]
    try:
        check_no_symlinks(candidate, given_roots)
        mode = os.lstat(candidate).st_mode
        real = os.path.realpath(candidate, strict=True)
        real_roots = [os.path.realpath(root, strict=True) for root in given_roots if os.path.isdir(root)]
    except (OSError, ValueError):
        raise refused() from None
    if not stat.S_ISREG(mode):
        raise refused()
    if not any(real != root and Path(real).is_relative_to(root) for root in real_roots):
        raise refused()
    return real


def check_no_symlinks(candidate: str, given_roots: list[str]) -> None:
    """Raise ``OSError`` if any component of ``candidate`` is a symlink.

    Links in the configured root's own path (``/tmp`` on macOS, a linked
    home) are the configuration's choice and allowed.
    """
    trusted = {str(p) for root in given_roots for p in (Path(root), *Path(root).parents)}
    current = Path(candidate).anchor
    for part in Path(candidate).parts[1:]:
        current = os.path.join(current, part)
        if os.path.islink(current) and current not in trusted:
            raise OSError("symlink in path")


class write_transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error.

    Inside a transaction that is already open it is a savepoint instead, so
    a memory write and its audit row can commit together. A database a newer
    datasette-obelisk made is not written: ``OBELISK_READ_ONLY``.
    """

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.nested = False

    def __enter__(self):
        newer = newer_migrations(self.conn)
        if newer:
            raise QueryError(
                "OBELISK_READ_ONLY",
                f"the database was made by a newer datasette-obelisk (migration {newer[-1]}): upgrade to write to it",
            )
        self.nested = self.conn.in_transaction
        self.conn.execute("SAVEPOINT obelisk_write" if self.nested else "BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if self.nested:
            if exc_type:
                self.conn.execute("ROLLBACK TO obelisk_write")
            self.conn.execute("RELEASE obelisk_write")
        else:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        return False


def stored_sessions(conn: sqlite3.Connection, session_ids) -> set[str]:
    """Which of ``session_ids`` (None left out) are stored sessions: a memory may name
    one that is not, or no longer, in the archive."""
    named = sorted({s for s in session_ids if s})
    return {row[0] for row in conn.execute(
        "SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(named)])}


def active_count(conn: sqlite3.Connection, query: str | None = None) -> int:
    """How many active memories ``obelisk.memories`` lists, its ``limit`` aside: every one,
    or those an English ``query`` recalls (a blank one is none)."""
    from .obelisk import safe_match

    if query is None or not query.strip():
        return conn.execute("SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL").fetchone()[0]
    expression = safe_match(query)
    if expression is None:
        return 0
    return conn.execute(
        "SELECT COUNT(*) FROM memories mem JOIN memories_fts ON memories_fts.rowid = mem.pk "
        "WHERE memories_fts MATCH ? AND mem.deleted_at IS NULL",
        [expression],
    ).fetchone()[0]
