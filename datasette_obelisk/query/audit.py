"""The audit trail of writes made through the web face.

    require_audit_table(conn)
        Raise ``OBELISK_READ_ONLY`` when the database predates the
        ``audit_log`` migration: writes are refused rather than unrecorded.
    record_write(conn, *, actor, action, database, memory_id, reason, detail)
        Append one row (actor, time, action, ids, reason): its own
        transaction, or a savepoint of the caller's when one is open.
"""

from __future__ import annotations

import json
import sqlite3

from .errors import QueryError
from .memories import now_iso, write_transaction


def require_audit_table(conn: sqlite3.Connection) -> None:
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_log'").fetchone()
    if found is None:
        raise QueryError(
            "OBELISK_READ_ONLY",
            "this database has no audit_log table, so writes are refused: run `obelisk ingest` to upgrade it",
        )


def record_write(conn, *, actor: dict | None, action: str, database: str, memory_id: str | None,
                 reason: str | None = None, detail: dict | None = None) -> None:
    with write_transaction(conn):
        conn.execute(
            "INSERT INTO audit_log (created_at, actor_id, actor_json, action, database_name, memory_id, reason, "
            "detail_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                now_iso(),
                (actor or {}).get("id"),
                json.dumps(actor, sort_keys=True, default=str) if actor else None,
                action,
                database,
                memory_id,
                reason,
                json.dumps(detail, sort_keys=True, default=str) if detail else None,
            ],
        )
