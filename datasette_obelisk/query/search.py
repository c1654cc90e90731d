"""Full-text search: sessions grouped by their best event, and events of one session.

    search_sessions(conn, query, *, mode="terms", prefix=False, limit=20,
                    cursor=None, snippets=3, **filters) -> dict
        ``{"items": [{"session", "rank", "best", "hits"}], "next_cursor",
        "generation"}``. ``session`` is the ``sessions`` row, ``best`` the
        session's strongest matching event and ``hits`` up to ``snippets``
        strongest events (``best`` first), each with a plain-text snippet.
    search_events(conn, session_id, query, *, mode="terms", prefix=False,
                  limit=20, cursor=None, **filters) -> dict
        ``{"session", "items", "next_cursor", "generation"}`` — the session row
        is returned even when nothing matches.
    session_row(conn, session_id) -> dict        (SESSION_QUERY_SESSION_NOT_FOUND)
    session_generation(conn, session_id) -> str  changes whenever the session does

``filters=`` (a ``query.filters.Filters``) or its keyword arguments
(``sources, projects, cwds, session_ids, parents, availability,
created_from/to, time_from/to, seq_from/to, types, roles, surfaces,
include_meta``) are applied before ranking. By default meta and hidden
lines are left out (``include_meta=False``). Limits are 1–100.

An event hit: ``{"id", "uuid", "session_id", "seq", "type", "raw_type",
"role", "content_type", "timestamp", "time", "surface", "visibility",
"is_meta", "rank", "snippet": {"text", "matches"}}``; ``rank`` is FTS5's
bm25 rank (lower is better), ``matches`` are ``[start, end)`` code-point
offsets into the plain snippet text.

How grouped search stays fast: ranking every matching message costs time
linear in the matches. Instead, sessions are ranked by bm25 over the session
index (``session_chunks_fts``: bags of words per chunk of a session, see
store/session_index.py), best chunk first, recency breaking ties; then each
candidate is confirmed with ``messages_fts`` inside its best chunk's id
range, where its strongest events are ranked with the exact expression and
every event filter. A bag can promise more than the exact query keeps
(terms of a phrase far apart, or only in filtered-out events): such a
candidate is skipped. One page examines at most ``MAX_CANDIDATES`` candidates
and then returns what it found with a cursor, so no page runs away. Raw FTS5
expressions cannot be lifted to bags (``NOT`` would wrongly exclude) and use
the direct shape: rank all matching events and keep each session's best.
"""

from __future__ import annotations

import sqlite3

from .cursors import current_generation, decode_cursor, encode_cursor, fingerprint
from .errors import QueryError
from .events import event_select
from .filters import Filters
from .fts import MARK_END, MARK_START, FtsQuery, parse_query
from .ranking import TF_WINDOW, EventScorer
from .text import approximate_snippet, snippet, to_ms

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MAX_SNIPPETS = 3
MAX_CANDIDATES = 400
HIGHLIGHT_MAX_CHARS = 100_000


def rows(conn: sqlite3.Connection, sql: str, params=()) -> list[dict]:
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def check_limit(limit, default: int = DEFAULT_LIMIT, maximum: int = MAX_LIMIT) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise QueryError("SESSION_QUERY_INVALID_LIMIT", f"limit must be an integer from 1 to {maximum}")
    return limit


def session_row(conn: sqlite3.Connection, session_id) -> dict:
    if not isinstance(session_id, str) or not session_id:
        raise QueryError("SESSION_QUERY_SESSION_NOT_FOUND", "a session id is required")
    found = rows(conn, "SELECT * FROM sessions WHERE id = ?", [session_id])
    if not found:
        raise QueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
    return found[0]


def session_generation(conn: sqlite3.Connection, session_id: str) -> str:
    count, last = conn.execute(
        "SELECT COUNT(*), MAX(id) FROM messages WHERE session_id = ?", [session_id]
    ).fetchone()
    updated = conn.execute("SELECT updated_at FROM sessions WHERE id = ?", [session_id]).fetchone()
    return f"{count}:{last}:{updated[0] if updated else ''}"


# -- grouped search --------------------------------------------------------


def search_sessions(
    conn: sqlite3.Connection,
    query: str,
    *,
    mode: str = "terms",
    prefix: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
    snippets: int = MAX_SNIPPETS,
    filters: Filters | None = None,
    **filter_options,
) -> dict:
    fts = parse_query(query, mode, prefix)
    limit = check_limit(limit)
    if isinstance(snippets, bool) or not isinstance(snippets, int) or not 0 <= snippets <= MAX_SNIPPETS:
        raise QueryError("SESSION_QUERY_INVALID_LIMIT", f"snippets must be an integer from 0 to {MAX_SNIPPETS}")
    filters = filters or Filters.build(**filter_options)
    generation = current_generation(conn)
    request = fingerprint({"query": fts.normalized(), "filters": filters.normalized(), "limit": limit, "snippets": snippets})
    position = _position(conn, cursor, "sessions", request, generation)
    page = {"items": [], "next_cursor": None, "generation": generation}
    if fts.matches_nothing:
        return page
    finder = _RawSessions(conn, fts, filters) if fts.candidates is None else _BaggedSessions(conn, fts, filters)
    items, next_position = finder.page(position, limit, max(1, snippets))
    for item in items:
        _add_snippets(conn, fts, item["hits"][:snippets])
        item["hits"] = item["hits"][:snippets]
    page["items"] = items
    if next_position is not None:
        page["next_cursor"] = encode_cursor(conn, "sessions", request, generation, next_position)
    return page


def _position(conn, cursor, scope: str, request: str, generation) -> int:
    if cursor is None:
        return 0
    position = decode_cursor(conn, cursor, scope, request, generation)
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise QueryError("SESSION_QUERY_INVALID_CURSOR", "the cursor is not one this service returned")
    return position


class _SessionFinder:
    """Walks candidate sessions in rank order and keeps those with a real hit."""

    batch = 64

    def __init__(self, conn, fts: FtsQuery, filters: Filters):
        self.conn = conn
        self.fts = fts
        self.filters = filters
        self.scorer = EventScorer(conn, fts)

    def page(self, position: int, limit: int, per_session: int) -> tuple[list[dict], int | None]:
        items: list[dict] = []
        examined = 0
        offset = position
        while True:
            candidates = self.candidates(offset, self.batch)
            for candidate in candidates:
                if examined == MAX_CANDIDATES:
                    return items, offset
                examined += 1
                hits = self.confirm(candidate, per_session)
                if hits:
                    if len(items) == limit:
                        return items, offset  # one more session matches: the next page starts there
                    items.append({"session": candidate["session"], "score": candidate["score"], "best": hits[0], "hits": hits})
                offset += 1
            if len(candidates) < self.batch:
                return items, None

    def session_clause(self) -> tuple[str, list]:
        return self.filters.session_sql("s")

    def best_events(self, session_id: str, chunk: tuple, count: int) -> list[dict]:
        first_id, last_id, avg_length = chunk
        found = matching_events(self.conn, self.fts, self.filters, session_id, first_id, last_id)
        return self.scorer.rank(found, avg_length, count)


class _BaggedSessions(_SessionFinder):
    def candidates(self, offset: int, count: int) -> list[dict]:
        where, params = self.session_clause()
        expression = self.fts.candidates if self.filters.include_meta else f"{{body}} : ({self.fts.candidates})"
        found = rows(
            self.conn,
            f"""WITH hits AS MATERIALIZED (
                  SELECT c.session_id, c.first_id, c.last_id, c.chars * 1.0 / c.messages AS avg_length,
                    f.rank AS rank
                  FROM session_chunks_fts f JOIN session_chunks c ON c.id = f.rowid
                  WHERE session_chunks_fts MATCH ?
                ),
                best AS (SELECT session_id, MIN(rank) AS rank FROM hits GROUP BY session_id),
                page AS (
                  SELECT b.session_id, b.rank, s.ended_at FROM best b JOIN sessions s ON s.id = b.session_id
                  WHERE {where}
                  ORDER BY b.rank, s.ended_at DESC, s.id LIMIT ? OFFSET ?
                )
                SELECT p.session_id, p.rank AS session_rank, h.first_id, h.last_id, h.avg_length, h.rank
                FROM page p JOIN hits h ON h.session_id = p.session_id
                ORDER BY p.rank, p.ended_at DESC, p.session_id, h.rank""",
            [expression, *params, count, offset],
        )
        return _group_chunks(self.conn, found)

    def confirm(self, candidate: dict, per_session: int) -> list[dict]:
        for chunk in candidate["chunks"]:
            hits = self.best_events(candidate["session"]["id"], chunk, per_session)
            if hits:
                return hits
        return []


class _RawSessions(_SessionFinder):
    def candidates(self, offset: int, count: int) -> list[dict]:
        session_where, session_params = self.session_clause()
        event_where, event_params = self.filters.event_sql("m")
        found = rows(
            self.conn,
            f"""WITH hits AS MATERIALIZED (
                  SELECT m.session_id, f.rank AS rank
                  FROM messages_fts f JOIN messages m ON m.id = f.rowid
                  WHERE messages_fts MATCH ? AND {event_where}
                ),
                best AS (SELECT session_id, MIN(rank) AS rank FROM hits GROUP BY session_id),
                page AS (
                  SELECT b.session_id, b.rank, s.ended_at FROM best b JOIN sessions s ON s.id = b.session_id
                  WHERE {session_where}
                  ORDER BY b.rank, s.ended_at DESC, s.id LIMIT ? OFFSET ?
                )
                SELECT p.session_id, p.rank AS session_rank, MIN(c.first_id) AS first_id,
                  MAX(c.last_id) AS last_id, SUM(c.chars) * 1.0 / SUM(c.messages) AS avg_length
                FROM page p JOIN session_chunks c ON c.session_id = p.session_id
                GROUP BY p.session_id
                ORDER BY p.rank, p.ended_at DESC, p.session_id""",
            [self.fts.expression, *event_params, *session_params, count, offset],
        )
        return _group_chunks(self.conn, found)

    def confirm(self, candidate: dict, per_session: int) -> list[dict]:
        (chunk,) = candidate["chunks"]
        return self.best_events(candidate["session"]["id"], chunk, per_session)


def _group_chunks(conn, found: list[dict]) -> list[dict]:
    """Rows of (session, chunk) in rank order to one candidate per session."""
    order: list[str] = []
    chunks: dict[str, list] = {}
    scores: dict[str, float] = {}
    for row in found:
        session_id = row["session_id"]
        if session_id not in chunks:
            order.append(session_id)
            chunks[session_id] = []
            scores[session_id] = round(-row["session_rank"], 6)
        chunks[session_id].append((row["first_id"], row["last_id"], row["avg_length"] or 1.0))
    sessions = _sessions_by_id(conn, order)
    return [
        {"session": sessions[s], "score": scores[s], "chunks": chunks[s]} for s in order if s in sessions
    ]


def _sessions_by_id(conn, ids: list[str]) -> dict[str, dict]:
    if not ids:
        return {}
    return {
        row["id"]: row
        for row in rows(conn, f"SELECT * FROM sessions WHERE id IN ({', '.join('?' * len(ids))})", ids)
    }


# -- within one session ----------------------------------------------------


def search_events(
    conn: sqlite3.Connection,
    session_id: str,
    query: str,
    *,
    mode: str = "terms",
    prefix: bool = False,
    limit: int | None = None,
    cursor: str | None = None,
    filters: Filters | None = None,
    **filter_options,
) -> dict:
    fts = parse_query(query, mode, prefix)
    limit = check_limit(limit)
    filters = filters or Filters.build(**filter_options)
    session = session_row(conn, session_id)
    generation = session_generation(conn, session_id)
    request = fingerprint({"session": session_id, "query": fts.normalized(), "filters": filters.normalized(), "limit": limit})
    position = _position(conn, cursor, "events", request, generation)
    page = {"session": session, "items": [], "next_cursor": None, "generation": generation}
    if fts.matches_nothing:
        return page
    ranges = conn.execute(
        "SELECT MIN(id), MAX(id), AVG(text_length) FROM messages WHERE session_id = ?", [session_id]
    ).fetchone()
    if ranges[0] is None:
        return page
    first_id, last_id, avg_length = ranges
    found = matching_events(conn, fts, filters, session_id, first_id, last_id)
    ranked = EventScorer(conn, fts).rank(found, avg_length, len(found))
    page["items"] = ranked[position : position + limit]
    _add_snippets(conn, fts, page["items"])
    if len(ranked) > position + limit:
        page["next_cursor"] = encode_cursor(conn, "events", request, generation, position + limit)
    return page


def matching_events(conn, fts: FtsQuery, filters: Filters, session_id: str, first_id: int, last_id: int) -> list[dict]:
    """Events of one session within an id range that match, with their text for scoring."""
    where, params = filters.event_sql("m")
    return rows(
        conn,
        f"""SELECT {event_select("m")}, m.text_length, substr(m.text, 1, {TF_WINDOW}) AS text
            FROM messages_fts f JOIN messages m ON m.id = f.rowid
            WHERE messages_fts MATCH ? AND f.rowid BETWEEN ? AND ? AND m.session_id = ? AND {where}""",
        [fts.expression, first_id, last_id, session_id, *params],
    )


# -- hits and snippets -----------------------------------------------------


def _add_snippets(conn, fts: FtsQuery, hits: list[dict]) -> None:
    for hit in hits:
        hit["snippet"] = _snippet_for(conn, fts, hit)
        hit["raw_type"] = hit.pop("type")
        hit["type"] = hit.pop("event_type")
        hit["time"] = to_ms(hit["timestamp"])
        hit["is_meta"] = bool(hit["is_meta"])
        for name in ("subtype", "is_compact_summary", "replaced_by", "parent_uuid", "text_length"):
            hit.pop(name, None)


def _snippet_for(conn, fts: FtsQuery, hit: dict) -> dict:
    if hit["text_length"] <= HIGHLIGHT_MAX_CHARS:
        row = conn.execute(
            "SELECT highlight(messages_fts, 0, ?, ?) FROM messages_fts "
            "WHERE messages_fts MATCH ? AND rowid = ?",
            [MARK_START, MARK_END, fts.expression, hit["id"]],
        ).fetchone()
        marked = row[0] if row else None
        if marked is not None and marked.count(MARK_START) > 0:
            return snippet(marked)
    text = conn.execute("SELECT text FROM messages WHERE id = ?", [hit["id"]]).fetchone()[0]
    return approximate_snippet(text or "", fts.terms)
