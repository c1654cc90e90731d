"""Numbers for the overview dashboard: totals and activity over time.

Pure functions over a sqlite3 connection; they return plain dicts and lists.
Two definitions hold everywhere: "messages" are conversation messages, the
rows ``sessions.message_count`` counts (``CONVERSATION``), and "failed" tool
calls are the results the Failures page lists (``failed()``: a failed outcome
or marked as an error, which includes blocked calls).
"""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta

from ..sources.lines import REPAIRED
from ..store import cold_load, derive, units, writer
from .moments import moment_sql
from .obelisk import TOP_LEVEL

ISO_DAY = "'[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*'"
CONVERSATION = derive.CONVERSATION_SQL


INDEXING_NOTES = {
    "load": "A first ingest is still loading: searches miss the messages it has not indexed yet.",
    "reload": "The logs are being read again (a new parser or new redaction rules): searches find nothing "
              "until that ingest ends and indexes every message.",
}


def indexing_note(conn: sqlite3.Connection) -> str | None:
    """What to tell a searcher while an ingest defers its full-text indexing (see ``store.cold_load``)."""
    return INDEXING_NOTES.get(cold_load.running(conn))


def failed(table: str = "") -> str:
    """A tool result the Failures page lists (``table``: an alias to qualify with)."""
    column = f"{table}." if table else ""
    return f"({column}outcome = 'failed' OR {column}is_error = 1)"


def totals(conn: sqlite3.Connection, files: bool = True) -> dict:
    """Sessions (as the session lists count them: no agent whose parent is stored, nor
    an excluded one), conversation messages (agents' too), tool calls and failures
    (``blocked``: how many of them were blocked), overall and by source and project, and the source files:
    how many, how many are gone from disk, their unreadable lines, the lines kept with
    repairs (``repaired_lines``: bytes that are not UTF-8 read as U+FFFD) and when the last
    one was ingested (``files=False``: ``None``, ``source_files`` is not read). A file gone
    from its path whose rows all went to the file there now, kept only by the errors of
    its unreadable lines, is that file: counted once, its unreadable lines still counted."""
    row = conn.execute(
        f"""SELECT
             (SELECT COUNT(*) FROM sessions s WHERE {TOP_LEVEL}) AS sessions,
             (SELECT COALESCE(SUM(message_count), 0) FROM sessions) AS messages,
             (SELECT COUNT(*) FROM tool_calls) AS tool_calls,
             (SELECT COUNT(*) FROM tool_results WHERE {failed()}) AS failures,
             (SELECT COUNT(*) FROM tool_results WHERE {failed()} AND outcome = 'blocked') AS blocked,
             (SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL) AS memories"""
    ).fetchone()
    by_source = _dicts(conn.execute(
        f"""SELECT source, SUM({TOP_LEVEL}) AS sessions, SUM(message_count) AS messages,
                  SUM(input_tokens + output_tokens) AS tokens, MAX(ended_at) AS last_session_at
           FROM sessions s GROUP BY source ORDER BY sessions DESC"""
    ))
    by_project = _dicts(conn.execute(
        f"""SELECT project, source, SUM({TOP_LEVEL}) AS sessions, SUM(message_count) AS messages,
                  MAX(ended_at) AS last_session_at
           FROM sessions s GROUP BY project, source ORDER BY last_session_at DESC"""
    ))
    files = files and conn.execute(
        f"""SELECT COALESCE(SUM(NOT errors_only), 0), COALESCE(SUM(missing AND NOT errors_only), 0),
                  COALESCE(SUM(lines_failed), 0), MAX(ingested_at)
           FROM (SELECT missing, lines_failed, ingested_at,
                        CASE WHEN missing = 0 THEN 0
                             ELSE {units.retired_sql("f")} AND NOT ({writer.holds_read_rows_sql("f")}) END AS errors_only
                 FROM source_files f)"""
    ).fetchone()
    if files:  # lines kept with repairs (bytes that are not UTF-8 read as U+FFFD): stored, and reported
        files = dict(zip(("files", "gone", "bad_lines", "last_ingest_at"), files))
        files["repaired_lines"] = conn.execute(
            "SELECT COUNT(*) FROM ingest_errors WHERE reason GLOB ?", [REPAIRED + "*"]
        ).fetchone()[0]
    return {
        **{key: row[i] for i, key in enumerate(("sessions", "messages", "tool_calls", "failures", "blocked", "memories"))},
        "by_source": by_source,
        "by_project": by_project,
        "files": files or None,
    }


# One pass over the conversation messages (their own index, m044: a scan of messages read
# every text to reach the columns after it): the UTC day of each dated one, NULL for the undated.
MESSAGES_PER_DAY = (
    f"SELECT CASE WHEN timestamp GLOB {ISO_DAY} THEN date(timestamp) END, source, COUNT(*) "
    f"FROM messages WHERE {CONVERSATION} GROUP BY 1, 2"
)


def holdings(conn: sqlite3.Connection) -> dict:
    """``{"sessions": people's sessions, "transcripts": every session, agents' too, "messages": log messages}``."""
    row = conn.execute(
        f"SELECT (SELECT COUNT(*) FROM sessions s WHERE {TOP_LEVEL}), (SELECT COUNT(*) FROM sessions), "
        "(SELECT COUNT(*) FROM messages)"
    ).fetchone()
    return dict(zip(("sessions", "transcripts", "messages"), row))


def activity(conn: sqlite3.Connection, max_buckets: int = 92) -> dict:
    """Sessions started (as ``totals`` counts them) and conversation messages written per day and source.

    Days while the archive spans at most ``max_buckets`` days, else weeks
    (starting Monday), else months, so a long archive still fits one chart.
    Returns ``{"unit", "buckets": [start day...], "sources",
    "sessions": {source: [count per bucket]}, "messages": {...},
    "undated": conversation messages without a date, so not charted}``.
    """
    per_day = conn.execute(MESSAGES_PER_DAY).fetchall()
    undated = sum(count for day_text, _, count in per_day if day_text is None)  # no date, or none SQLite reads
    found = {
        "sessions": conn.execute(
            f"SELECT date(started_at), source, COUNT(*) FROM sessions s "
            f"WHERE {TOP_LEVEL} AND started_at GLOB {ISO_DAY} AND date(started_at) IS NOT NULL GROUP BY 1, 2"
        ).fetchall(),
        "messages": [row for row in per_day if row[0] is not None],
    }
    # Days Python's calendar has and can step past (SQLite also reads year 0000, 9999-12-31, 31 February).
    days = [day for rows in found.values() for day, _, _ in rows if "0001-01-01" <= day <= "9998-12-31" and is_day(day)]
    if not days:
        return {"unit": "day", "buckets": [], "sources": [], "sessions": {}, "messages": {}, "undated": undated}
    first, last = date.fromisoformat(min(days)), date.fromisoformat(max(days))
    unit, bucket_of = _bucketing(first, last, max_buckets)
    buckets = []
    day = bucket_of(first)
    while day <= last:
        buckets.append(day.isoformat())
        day = _next(day, unit)
    index = {b: i for i, b in enumerate(buckets)}
    counts = {kind: {} for kind in found}
    for kind, day_rows in found.items():
        for day_text, source, count in day_rows:
            try:
                bucket = bucket_of(date.fromisoformat(day_text)).isoformat()
            except ValueError:
                continue
            if bucket in index:
                counts[kind].setdefault(source, [0] * len(buckets))[index[bucket]] += count
    sources = sorted(set(counts["sessions"]) | set(counts["messages"]))
    return {
        "unit": unit,
        "buckets": buckets,
        "sources": sources,
        **{kind: {s: per.get(s, [0] * len(buckets)) for s in sources} for kind, per in counts.items()},
        "undated": undated,
    }


def is_day(text: str) -> bool:
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _bucketing(first: date, last: date, max_buckets: int):
    span = (last - first).days + 1
    if span <= max_buckets:
        return "day", lambda d: d
    if span <= max_buckets * 7:
        return "week", lambda d: d - timedelta(days=d.weekday())
    return "month", lambda d: d.replace(day=1)


def _next(day: date, unit: str) -> date:
    if unit == "day":
        return day + timedelta(days=1)
    if unit == "week":
        return day + timedelta(days=7)
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def tool_usage(conn: sqlite3.Connection, limit: int | None = 15) -> list[dict]:
    """The most used tools (all of them with ``limit=None``) with their call and failure (``failed()``) counts."""
    rows = conn.execute(
        f"""SELECT c.name, COUNT(*) AS calls,
                  SUM({failed("r")}) AS failed
           FROM tool_calls c LEFT JOIN tool_results r ON r.tool_use_id = c.id
           GROUP BY c.name ORDER BY calls DESC, c.name LIMIT ?""",
        [-1 if limit is None else limit],
    ).fetchall()
    return [{"name": name, "calls": calls, "failed": failed or 0} for name, calls, failed in rows]


def failures_without_call(conn: sqlite3.Connection) -> int:
    """Failed results (``failed()``) whose call is not in the logs: the failures ``tool_usage`` cannot name a tool for."""
    return conn.execute(
        f"""SELECT COUNT(*) FROM tool_results r
            WHERE {failed("r")} AND NOT EXISTS (SELECT 1 FROM tool_calls c WHERE c.id = r.tool_use_id)"""
    ).fetchone()[0]


def _dicts(cursor) -> list[dict]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def touched_files(conn: sqlite3.Connection, contains: str | None = None, limit: int = 50, offset: int = 0) -> dict:
    """Paths tool calls touched most, optionally those containing ``contains``:
    ``{"files": [{"path", "calls", "sessions", "last_at"}], "total"}``, ``limit`` from ``offset``."""
    where, params = "", []
    if contains:
        # instr, not LIKE: any length, no wildcards to escape; lower() folds ASCII as LIKE would
        where, params = "WHERE instr(lower(f.path), lower(?)) > 0", [contains]
    files = _dicts(
        conn.execute(
            f"""SELECT f.path, COUNT(*) AS calls, COUNT(DISTINCT c.session_id) AS sessions,
                       MAX({moment_sql("c.timestamp")}) AS last_at
                FROM tool_call_files f JOIN tool_calls c ON c.id = f.tool_call_id
                {where} GROUP BY f.path ORDER BY calls DESC, f.path LIMIT ? OFFSET ?""",
            [*params, limit, offset],
        )
    )
    total = conn.execute(
        f"SELECT COUNT(DISTINCT f.path) FROM tool_call_files f JOIN tool_calls c ON c.id = f.tool_call_id {where}", params
    ).fetchone()[0]
    return {"files": files, "total": total}

