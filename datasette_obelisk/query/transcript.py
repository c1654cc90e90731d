"""A session as a readable transcript: the page model of the session page.

    transcript(conn, session_id, *, start=1, limit=500, rewound=False, meta=False,
               log=False) -> dict
        ``session``: the sessions row; ``parent``, ``children`` (subagents,
        forks, continuations), ``workflows``; ``entries`` in log order.
        An entry is one of

        - ``{"kind": "message", "message": row}``: a prompt or an answer;
        - ``{"kind": "thinking", "message": row}``;
        - ``{"kind": "tool", "message": row, "calls": [call...]}``: a tool-use
          line with each call's name, input, outcome, result and the
          subagent or workflow it started. The result line is folded into
          it and not listed again;
        - ``{"kind": "compaction", "message": row}``: a compact boundary or
          the summary that replaced the context before it;
        - ``{"kind": "rewound", "count", "first_seq", "last_seq"}``: a run
          of messages a rewind abandoned, folded (``rewound=True`` lists them
          instead, each marked by its ``visibility``).

        ``meta`` adds injected lines (``is_meta``), ``log`` structural ones
        (``surface = 'log-only'``). Entries cover seqs ``start`` .. ``start +
        limit - 1``; ``next_start`` is where the next page begins (None at
        the end). Unknown session: ``OBELISK_NOT_FOUND``.
"""

from __future__ import annotations

import json
import sqlite3

from ..store.tool_output import full_content_sql
from .errors import QueryError

PREVIEW_CHARS = 160
RESULT_CHARS = 20_000
MAX_LIMIT = 5_000
TOOL_USE, TOOL_RESULT = "tool_use", "tool_result"


def transcript(conn: sqlite3.Connection, session_id: str, *, start: int = 1, limit: int = 500,
               rewound: bool = False, meta: bool = False, log: bool = False) -> dict:
    if not 1 <= limit <= MAX_LIMIT:
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"limit must be between 1 and {MAX_LIMIT}")
    session = _one(conn, "SELECT * FROM sessions WHERE id = ?", [session_id])
    if session is None:
        raise QueryError("OBELISK_NOT_FOUND", f"no session {session_id!r}")
    rows = _all(
        conn,
        "SELECT * FROM messages WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
        [session_id, start, limit + 1],
    )
    next_start = rows[limit]["seq"] if len(rows) > limit else None
    rows = rows[:limit]
    calls = tool_calls(conn, session_id, [r["uuid"] for r in rows if r["content_type"] == TOOL_USE])
    folded = {call["result_uuid"] for group in calls.values() for call in group if call["result_uuid"]}
    entries = []
    for row in rows:
        entry = entry_for(row, calls, folded, meta=meta, log=log)
        if entry is None:
            continue
        if row["visibility"] == "inactive" and not rewound:
            fold_rewound(entries, row)
            continue
        entries.append(entry)
    return {
        "session": session,
        "parent": _one(conn, "SELECT id, title, source, relationship FROM sessions WHERE id = ?", [session["parent_session_id"]]),
        "children": _all(
            conn,
            "SELECT id, title, relationship, agent_type, message_count, started_at FROM sessions "
            "WHERE parent_session_id = ? ORDER BY started_at, id",
            [session_id],
        ),
        "workflows": _all(conn, "SELECT * FROM workflows WHERE session_id = ? ORDER BY timestamp", [session_id]),
        "entries": entries,
        "start": start,
        "next_start": next_start,
    }


def entry_for(row: dict, calls: dict, folded: set, *, meta: bool, log: bool) -> dict | None:
    if row["subtype"] == "compact_boundary" or row["is_compact_summary"] or row["type"] == "compacted":
        return {"kind": "compaction", "message": row}
    if row["is_meta"] and not meta:
        return None
    if row["surface"] == "log-only" and not log:
        return None
    if row["content_type"] == TOOL_USE and calls.get(row["uuid"]):
        return {"kind": "tool", "message": row, "calls": calls[row["uuid"]]}
    if row["content_type"] == TOOL_RESULT and row["uuid"] in folded:
        return None
    if row["content_type"] == "thinking":
        return {"kind": "thinking", "message": row}
    return {"kind": "message", "message": row}


def fold_rewound(entries: list, row: dict) -> None:
    last = entries[-1] if entries else None
    if last and last["kind"] == "rewound":
        last["count"] += 1
        last["last_seq"] = row["seq"]
    else:
        entries.append({"kind": "rewound", "count": 1, "first_seq": row["seq"], "last_seq": row["seq"]})


def tool_calls(conn, session_id: str, message_uuids: list[str]) -> dict[str, list[dict]]:
    """The calls each tool-use line made, with result, outcome and any child session."""
    if not message_uuids:
        return {}
    found: dict[str, list[dict]] = {}
    marks = ", ".join("?" * len(message_uuids))
    for row in _all(
        conn,
        f"""SELECT c.id, c.message_uuid, c.name, c.input_json, c.file_path, c.timestamp,
                   r.message_uuid AS result_uuid, r.outcome, r.exit_code,
                   substr({full_content_sql('r')}, 1, {RESULT_CHARS}) AS result, r.content_length AS result_length,
                   sa.child_session_id, sa.agent_type, sa.description AS agent_description,
                   w.run_id AS workflow_run_id, w.workflow_name
            FROM tool_calls c
            LEFT JOIN tool_results r ON r.tool_use_id = c.id
            LEFT JOIN subagents sa ON sa.parent_tool_use_id = c.id AND sa.session_id = c.session_id
            LEFT JOIN workflows w ON w.parent_tool_use_id = c.id
            WHERE c.message_uuid IN ({marks}) ORDER BY c.rowid""",
        message_uuids,
    ):
        row["preview"] = preview(row["input_json"])
        found.setdefault(row["message_uuid"], []).append(row)
    return found


def preview(input_json: str | None) -> str:
    """One line of a call's input: the command, path or pattern when there is one."""
    try:
        data = json.loads(input_json or "null")
    except ValueError:
        data = input_json
    if isinstance(data, dict):
        for key in ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description", "prompt"):
            value = data.get(key)
            if isinstance(value, list):
                value = " ".join(map(str, value))
            if isinstance(value, str) and value.strip():
                return _clip(" ".join(value.split()))
    text = input_json if isinstance(data, (dict, list)) or data is None else str(data)
    return _clip(" ".join((text or "").split()))


def _clip(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _dicts(cursor) -> list[dict]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def _all(conn, sql: str, params) -> list[dict]:
    return _dicts(conn.execute(sql, params))


def _one(conn, sql: str, params) -> dict | None:
    found = _all(conn, sql, params)
    return found[0] if found else None
