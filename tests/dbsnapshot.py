"""Compare two databases by content, ignoring row ids and ingest times."""

import sqlite3

VOLATILE = {"id", "file_id", "created_at", "ingested_at", "first_seen_at", "updated_at", "pk",
            "mtime_ns", "inode", "device", "path", "jsonl_path"}
TABLES = {
    "sessions": "id",
    "messages": "uuid",
    "tool_calls": "id",
    "tool_call_files": "tool_call_id, path",
    "tool_results": "tool_use_id",
    "subagents": "session_id, agent_id",
    "summaries": "id",
    "titles": "session_id, kind, title, leaf_uuid",
    "session_links": "session_id, parent_session_id, relationship",
    "ingest_errors": "line_no, byte_offset, reason",
}


def snapshot(db_path, keep_ids=("sessions", "tool_calls")) -> dict:
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    result = {}
    for table, order in TABLES.items():
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
        result[table] = [
            {k: row[k] for k in row.keys() if k not in VOLATILE or (k == "id" and table in keep_ids)}
            for row in rows
        ]
    result["fts"] = conn.execute(
        "SELECT m.uuid FROM messages_fts f JOIN messages m ON m.id = f.rowid ORDER BY m.uuid"
    ).fetchall()
    result["fts_integrity"] = conn.execute(
        "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)"
    ).fetchall()
    # The failed tool output indexed: each result's words, as the index holds them.
    conn.execute("CREATE VIRTUAL TABLE temp.tool_errors_words USING fts5vocab(main, tool_errors_fts, instance)")
    result["tool_errors_fts"] = conn.execute(
        "SELECT r.tool_use_id, w.term, w.offset FROM temp.tool_errors_words w JOIN tool_results r ON r.id = w.doc "
        "ORDER BY r.tool_use_id, w.offset"
    ).fetchall()
    result["tool_errors_fts_integrity"] = conn.execute(
        "INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)"
    ).fetchall()
    conn.close()
    return result


def diff(a: dict, b: dict, limit=5) -> list:
    """The first differing rows, for readable assertion messages."""
    out = []
    for table in a:
        if a[table] != b.get(table):
            rows_a, rows_b = a[table], b.get(table) or []
            out.append((table, len(rows_a), len(rows_b)))
            for x, y in zip(rows_a, rows_b):
                if x != y:
                    if isinstance(x, dict):
                        out.append({k: (x[k], y.get(k)) for k in x if x[k] != y.get(k)} | {"key": next(iter(x.values()))})
                    else:
                        out.append((x, y))
                    if len(out) > limit:
                        return out
    return out


def rows(db, sql, params=()) -> list[tuple]:
    """What ``sql`` selects from the database at ``db``, on a connection of its own."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
