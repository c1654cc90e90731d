"""The prompt logs' prompts (``prompt_log``): what was typed, also in sessions
whose transcript is stored nowhere (cleaned up before it was ingested).

A prompt whose session's transcript is stored is *held* by it
(``in_transcript``); ``missing`` keeps to the others, what only the prompt
log tells.
"""

from __future__ import annotations

import sqlite3

from . import fts
from .errors import QueryError
from .moments import moment_sql
from ..store.migrations import PROMPT_HELD, SESSION_STORED
from .obelisk import MAX_PATTERN_CHARS  # (SQLite refuses a LIKE pattern over 50,000 bytes)
from .obelisk import near_session_ids, session_not_found
from .readonly import error_for, translated_errors

MAX_LIMIT = 1_000
MAX_OFFSET = 2**62  # an offset plus a limit still fits SQLite's 64-bit integers
# A prompt is held when its session's stored messages reach its time (browse_prompts.in_transcript);
# a session is only the prompt logs' when no message of it is stored.
HELD = PROMPT_HELD
SESSION_HELD = SESSION_STORED
COLUMNS = (
    "p.id, p.source, p.session_id, p.project, p.timestamp, p.text, p.pasted_json, "
    f"CAST({HELD} AS INTEGER) AS in_transcript, f.path AS file_path, p.line_no"
)


def _dicts(conn: sqlite3.Connection, sql: str, params: list) -> list[dict]:
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    with translated_errors():
        return [dict(row) for row in cursor.execute(sql, params)]


def _invalid(message: str) -> QueryError:
    return QueryError("OBELISK_INVALID_ARGUMENT", message)


def _checked_project(helper: str, project: str | None) -> None:
    if project is not None and len(project) > MAX_PATTERN_CHARS:
        raise _invalid(f"{helper}(): project is longer than {MAX_PATTERN_CHARS:,} characters")


def prompts(
    conn: sqlite3.Connection,
    query: str | None = None,
    *,
    session_id: str | None = None,
    project: str | None = None,
    source: str | None = None,
    missing: bool = False,
    limit: int = 50,
    offset: int = 0,
    mode: str = "terms",
) -> list[dict]:
    """Prompts of the prompt logs, newest first (best match first with ``query``, FTS5
    terms as ``obelisk search`` takes them): of one session, of projects matching a SQL
    LIKE pattern, of one source; ``missing`` keeps those no stored transcript holds.
    ``offset`` skips that many of them; ``mode`` is the query's form (terms, phrase, raw).
    Each is a dict of the ``browse_prompts`` columns (``in_transcript`` 0 or 1).
    A blank query, or one over ``fts.MAX_QUERY_CHARS``, is OBELISK_INVALID_ARGUMENT and an
    unknown mode or raw text FTS5 rejects SESSION_QUERY_INVALID_QUERY, as ``search()``'s."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise _invalid(f"prompts(): limit must be between 1 and {MAX_LIMIT}")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < MAX_OFFSET:
        raise _invalid(f"prompts(): offset must be between 0 and {MAX_OFFSET - 1}")
    _checked_project("prompts", project)
    if mode not in fts.MODES:  # ("words", the parser's too, is no mode of prompts)
        raise QueryError("SESSION_QUERY_INVALID_QUERY", f"mode must be one of {', '.join(fts.MODES)}, not {mode!r}")
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):  # (as the helpers)
        raise _invalid("prompts(): sessionId must not be empty or only whitespace")
    clauses, params = [], []
    order = f"{moment_sql('p.timestamp')} DESC, p.id DESC"
    join = ""
    if query is not None:
        parsed = _parsed(query, mode)
        if parsed.matches_nothing:
            return []
        join = "JOIN prompt_log_fts ON prompt_log_fts.rowid = p.id"
        clauses.append("prompt_log_fts MATCH ?")
        params.append(parsed.expression)
        order = f"prompt_log_fts.rank, {order}"
    if session_id is not None:
        clauses.append("p.session_id = ?")
        params.append(session_id)
    if project is not None:
        clauses.append("p.project LIKE ?")
        params.append(project)
    if source not in (None, "all"):
        clauses.append("p.source = ?")
        params.append(source)
    if missing:
        clauses.append(f"NOT {HELD}")
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    sql = (f"SELECT {COLUMNS} FROM prompt_log p {join} LEFT JOIN source_files f ON f.id = p.file_id "
           f"{where} ORDER BY {order} LIMIT ? OFFSET ?")
    return _dicts(conn, sql, [*params, limit, offset])


def _parsed(query, mode: str) -> fts.FtsQuery:
    """``query`` in ``mode``: text that is no search is the caller's argument, the rest the parser's."""
    if isinstance(query, str) and len(query) > fts.MAX_QUERY_CHARS:
        raise _invalid(f"the query is longer than {fts.MAX_QUERY_CHARS} characters")
    if isinstance(query, str) and not fts.normalize_text(query):
        raise _invalid("a search needs a query: the text is blank")
    return fts.parse_query(query, mode)


def unknown_session(conn: sqlite3.Connection, session_id: str) -> QueryError | None:
    """None when the prompt logs or the stored transcripts know session ``session_id``; else
    the error saying it is not known, naming the ids it may have meant: the stored sessions'
    (``obelisk.near_session_ids``), else the prompt logs' own (``codex:<id>`` for the bare id
    of a Codex history line)."""
    known = "SELECT 1 FROM prompt_log WHERE session_id = :id UNION ALL SELECT 1 FROM sessions WHERE id = :id LIMIT 1"
    if conn.execute(known, {"id": session_id}).fetchone() is not None:
        return None
    near = near_session_ids(conn, session_id) or near_session_ids(conn, session_id, "prompt_log", "session_id")
    return session_not_found(session_id, near)


def orphans(conn: sqlite3.Connection, *, source: str | None = None, project: str | None = None,
            limit: int = 50) -> list[dict]:
    """The sessions known only from the prompt logs (no stored transcript holds a
    message of theirs), latest prompt first: ``{session_id, source, project,
    prompts, first_at, last_at, first_prompt}``."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise _invalid(f"orphans(): limit must be between 1 and {MAX_LIMIT}")
    _checked_project("orphans", project)
    clauses, params = ["p.session_id IS NOT NULL", f"NOT {SESSION_HELD}"], []
    if source not in (None, "all"):
        clauses.append("p.source = ?")
        params.append(source)
    if project is not None:
        clauses.append("p.project LIKE ?")
        params.append(project)
    sql = f"""SELECT p.session_id, p.source, max(p.project) AS project, count(*) AS prompts,
                     min(p.timestamp) AS first_at, max(p.timestamp) AS last_at,
                     (SELECT q.text FROM prompt_log q WHERE q.session_id = p.session_id
                      ORDER BY q.timestamp, q.id LIMIT 1) AS first_prompt
              FROM prompt_log p WHERE {' AND '.join(clauses)}
              GROUP BY p.session_id, p.source ORDER BY last_at DESC, p.session_id LIMIT ?"""
    return _dicts(conn, sql, [*params, limit])


def missing_matches(conn: sqlite3.Connection, query: str, mode: str = "terms", source: str | None = None) -> dict:
    """How many prompts match ``query`` (in ``mode``; of ``source`` if given) that no stored transcript holds:
    ``{"count": n, "expression": the FTS5 expression matched}`` (the expression is
    None and the count 0 when the query can match nothing, or on a database
    without prompt logs)."""
    parsed = fts.parse_query(query, mode)
    if parsed.matches_nothing:
        return {"count": 0, "expression": None}
    sql = (f"SELECT count(*) FROM prompt_log p JOIN prompt_log_fts ON prompt_log_fts.rowid = p.id "
           f"WHERE prompt_log_fts MATCH ? AND NOT {HELD}")
    params = [parsed.expression]
    if source not in (None, "all"):
        sql += " AND p.source = ?"
        params.append(source)
    try:
        count = conn.execute(sql, params).fetchone()[0]
    except sqlite3.OperationalError as exc:
        if str(exc).startswith("no such table"):  # (not migrated yet)
            return {"count": 0, "expression": None}
        raise error_for(exc) from None
    return {"count": count, "expression": parsed.expression}


def orphan_count(conn: sqlite3.Connection) -> int:
    """How many sessions only the prompt logs know (0 on a database without them)."""
    try:
        return conn.execute(
            f"SELECT count(DISTINCT p.session_id) FROM prompt_log p WHERE p.session_id IS NOT NULL AND NOT {SESSION_HELD}"
        ).fetchone()[0]
    except sqlite3.OperationalError:  # (not migrated yet)
        return 0
