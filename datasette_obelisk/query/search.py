"""Full-text search: sessions grouped by their best event, and events of one session.

    search_sessions(conn, query, *, mode="terms", prefix=False, limit=20,
                    cursor=None, snippets=3, filters=None, **filter_options) -> dict
        ``{"items": [{"session", "score", "best", "hits"}], "next_cursor",
        "generation"}``: ``session`` is the ``sessions`` row, ``best`` the
        session's strongest matching event and ``hits`` its strongest
        ``snippets`` events (``best`` first), each with a plain-text snippet.
    search_events(conn, session_id, query, *, mode="terms", prefix=False,
                  limit=20, cursor=None, filters=None, **filter_options) -> dict
        ``{"session", "items", "next_cursor", "generation"}``; the session row
        is there even when nothing matches.
    session_row(conn, session_id) -> dict        (SESSION_QUERY_SESSION_NOT_FOUND)
    check_limit(limit, default, maximum) -> int  (SESSION_QUERY_INVALID_LIMIT)

Queries go through ``query.fts.parse_query`` (modes ``terms``, ``phrase``,
``raw``; ``prefix``). Filters — a ``query.filters.Filters`` as ``filters=``
or its keyword arguments (``sources, projects, cwds, session_ids, parents,
availability, created_from/to, time_from/to, seq_from/to, types, roles
(``events.speaker_sql``: a tool's output is ``tool``), surfaces, models,
branches, tools, include_meta``) — are applied before ranking. By default meta and
hidden lines are left out (``include_meta=False``). Limits are 1–100.

An event hit is ``{"id", "uuid", "session_id", "seq", "type", "raw_type",
"role", "content_type", "timestamp", "time", "surface", "visibility",
"is_meta", "score", "snippet": {"text", "matches"}}``. Scores are higher
for better matches; ``matches`` are ``[start, end)`` code-point offsets into
the plain snippet text. Cursors are bound to the request and to the archive
the first page saw: the messages there were (the greatest id, ``upto``), the
weights the terms had (for events: the session's mean message length too),
and for grouped search the sessions there were (the greatest rowid,
``bound``: ``query.snapshots``). Later pages leave out messages and sessions
added since and rank with those weights, so they go on while logs grow (an
agent's own among them) and neither repeat nor skip a result. A session that
grew since ranks anew by its session bag (and a frequent word's bm25 moves
with what every bag holds): a grouped search cursor counts the sessions
ranked before its page and carries an order-free digest of them
(``snapshots.SeenSet``), and a page finds which of the sessions grown since
were among them; the others keep their order, so it goes on after the last
of those. When no such set of sessions has the digest, or too many grew, the
cursor is ``SESSION_QUERY_STALE_CURSOR``. So is a message the first page
could have seen (an id up to ``upto``) deleted, moved, rewritten or shadowed
since (``obelisk_state.rewrites`` and its spans, ``cursors.rewritten_since``:
a file read again, a session renumbered, a rewind read later); messages
written since and then moved (an inline agent's lines) do not. With
``follow_changes=True`` (the search page, while agents write) rewrites do not
make a cursor stale, and the page says how many of the sessions stored since
match (``added``: of the first ``_Candidates.ADDED_MAX`` stored since).

How grouped search stays fast (bench/README.md has the numbers): when the
exact query matches few messages (at most ``EXACT_MAX``), or few pass the
event filters (a frequent word in a seq range), every one of those is scored
(query/ranking.py), and sessions are ranked by their best event, as the
contract says. Ranking every matching message costs time
linear in the matches, so when it matches many, sessions are ranked by bm25
over the session index instead (``session_docs_fts``: one bag of words per
session, store/session_index.py), recency breaking ties; each candidate is
confirmed with ``messages_fts`` inside the session's id range, and one whose
bag promised more than its events hold (terms in different messages, a
phrase broken up, only filtered-out events) is skipped. A page examines at most
``MAX_CANDIDATES`` candidates (``MAX_EMPTY_CANDIDATES`` while it has found none),
then returns what it has with a cursor. Raw
FTS5 expressions cannot be lifted to bags (``NOT`` would exclude wrongly):
they rank every matching message, the slow shape, once per search. FTS5
answers a prefix (``t*``) by merging its terms' doclists over the whole table
in every statement, however few rows it asks for: such an expression's
matches are read once, and candidates confirmed from them.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from bisect import bisect_left, bisect_right
from functools import cached_property

from .cursors import (
    current_generation, current_rewrites, decode_cursor, encode_cursor, fingerprint, invalid, is_count,
    rewritten_since, stale,
)
from .snapshots import SeenSet, archive_edge, grown_since
from .errors import QueryError
from .events import event_select
from .filters import Filters
from .fts import MARK_END, MARK_START, MAX_FIND_STEMS, FtsQuery, parse_query, tokens, unmarked, word_stems
from .indexes import indexed_by
from .ranking import WINDOW_SQL, EventScorer
from .text import SNIPPET_CHARS, approximate_snippet, snippet

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
# Seconds to wait before asking again while an ingest defers full-text indexing (a
# first load of a large archive takes a minute or more; the index is built at its end).
INDEXING_RETRY = 30
MAX_SNIPPETS = 3
MAX_CANDIDATES = 200
MAX_EMPTY_CANDIDATES = 2000  # a page that has found nothing yet goes on this far
EXACT_MAX = 500
FILTERED_SCAN_MAX = 200_000  # matches read to find those a BAGLESS event filter keeps (_few_matches)
# Event filters the session bags know nothing of, each cheap to check on a message (not a
# tool: two lookups a message, which made reading 100,000 matches slower than confirming sessions).
BAGLESS = ("seq_from", "seq_to", "types", "surfaces", "roles", "models", "branches")
SCAN_MAX = 2000
SHORTLIST = 64
# A session's mean message length, as bm25 normalises by it (``d``: its session_docs row).
AVERAGE_LENGTH = "max({0}.chars * 1.0 / max({0}.messages, 1), 1.0)"
MAX_EXPANSIONS = 24


def average_sql(alias: str, upto: int | None) -> str:
    """``AVERAGE_LENGTH`` of a session as it was when its greatest message id was ``upto``:
    the rows its document counted after that left out (read by index, for a session grown since)."""
    if upto is None:
        return AVERAGE_LENGTH.format(alias)
    later = (
        "(SELECT {what} FROM messages x WHERE x.session_id = {a}.session_id AND x.id > {upto} AND x.id <= {a}.last_id)"
    )
    chars = later.format(what="COALESCE(SUM(x.text_length), 0)", a=alias, upto=int(upto))
    count = later.format(what="COUNT(*)", a=alias, upto=int(upto))
    return (
        f"(CASE WHEN {alias}.last_id > {int(upto)} THEN max(({alias}.chars - {chars}) * 1.0 / "
        f"max({alias}.messages - {count}, 1), 1.0) ELSE {AVERAGE_LENGTH.format(alias)} END)"
    )


def ended_sql(upto: int | None) -> str:
    """When session ``s`` (document ``d``) ended, as it was when the greatest message id was
    ``upto``: ranks break ties by it, and a session growing since must not move among its ties."""
    if upto is None:
        return "s.ended_at"
    return (
        f"(CASE WHEN d.last_id > {int(upto)} THEN (SELECT MAX(x.timestamp) FROM messages x "
        f"WHERE x.session_id = s.id AND x.id <= {int(upto)}) ELSE s.ended_at END)"
    )
HIGHLIGHT_MAX_CHARS = 50_000
NEWER_MAX = 10_000  # sessions stored since a search started that its unfiltered next page reads past


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


def check_index_complete(conn: sqlite3.Connection) -> None:
    """SESSION_QUERY_INDEX_FAILED while an ingest defers full-text indexing (``store.cold_load``:
    a first load, or a reload that empties the index): a contract's search would otherwise
    answer from an index missing some or all messages, as if they matched nothing. It passes
    once the ingest ends: over HTTP a 503 with ``Retry-After: INDEXING_RETRY``."""
    from .dashboard import indexing_note

    note = indexing_note(conn)
    if note is not None:
        raise QueryError("SESSION_QUERY_INDEX_FAILED", f"the full-text index is incomplete: {note}", INDEXING_RETRY)


def session_row(conn: sqlite3.Connection, session_id) -> dict:
    if not isinstance(session_id, str) or not session_id:
        raise QueryError("SESSION_QUERY_SESSION_NOT_FOUND", "a session id is required")
    found = rows(conn, "SELECT * FROM sessions WHERE id = ?", [session_id])
    if not found:
        raise QueryError("SESSION_QUERY_SESSION_NOT_FOUND", f"no session {session_id!r}")
    return found[0]


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
    follow_changes: bool = False,
    **filter_options,
) -> dict:
    fts = parse_query(query, mode, prefix)
    limit = check_limit(limit)
    if isinstance(snippets, bool) or not isinstance(snippets, int) or not 0 <= snippets <= MAX_SNIPPETS:
        raise QueryError("SESSION_QUERY_INVALID_LIMIT", f"snippets must be an integer from 0 to {MAX_SNIPPETS}")
    filters = filters or Filters.build(**filter_options)
    generation = current_generation(conn)
    request = fingerprint(
        {"query": fts.normalized(), "filters": filters.normalized(), "limit": limit, "snippets": snippets}
    )
    if cursor is None:
        # The first page ranks the sessions and messages there are before it reads any: those the
        # next pages rank (a session stored, or a message added, while it ranks would shift their places).
        upto, bound = archive_edge(conn)
        state = {"at": 0, "upto": upto, "bound": bound, "rw": None if follow_changes else current_rewrites(conn),
                 "w": None, "seen": SeenSet().digest}
    else:
        state = _session_state(conn, cursor, request, follow_changes)
    page = {"items": [], "next_cursor": None, "generation": generation}
    if follow_changes:
        page["added"] = 0
    if fts.matches_nothing:
        return page
    finder = _finder(conn, fts, filters, upto=state["upto"], bound=state["bound"])
    if state["w"] is not None:
        finder.scorer.weights = state["w"]
    seen, pending, start = finder.resume(state) if cursor is not None else (set(), [], 0)
    items, more, examined = finder.page(start, limit, max(1, snippets), skip=seen, pending=pending)
    if follow_changes and cursor is not None:  # (their messages are past ``upto``: counted by a finder that sees them)
        page["added"] = _finder(conn, fts, filters).added_since(state["bound"])
    by_expression: dict[str, list] = {}  # one snippet statement per expression, not per session
    for item in items:
        item["hits"] = item["hits"][:snippets]
        by_expression.setdefault(item.pop("expression"), []).extend(item["hits"])
    for expression, hits in by_expression.items():
        _finish_hits(conn, expression, fts, hits)
    page["items"] = items
    if more:
        # The next pages rank only the sessions and messages there were when the search started,
        # with the weights it ranked them with, and go on after the sessions ranked so far.
        ranked = SeenSet([*seen, *finder.existing(examined)])
        following = {**state, "at": ranked.count, "w": finder.scorer.weights, "seen": ranked.digest}
        page["next_cursor"] = encode_cursor(conn, "sessions", request, generation, following)
    return page


def _not_returned() -> QueryError:
    return invalid("the cursor is not one this service returned")


SESSION_KEYS = frozenset({"at", "upto", "bound", "rw", "w", "seen"})


def _weights(value) -> bool:
    return value is None or (isinstance(value, list) and all(type(w) in (int, float) for w in value))


def _session_state(conn, cursor, request: str, follow_changes: bool) -> dict:
    """A grouped search cursor's state: ``upto`` and ``bound``, the messages and sessions the
    first page ranked (``query.snapshots``); ``at`` and ``seen``, how many sessions the pages
    so far ranked and their ``SeenSet`` digest; ``w``, the terms' weights the first page
    ranked with; ``rw``, ``obelisk_state.rewrites`` then (None for the search page's,
    ``follow_changes``: a message up to ``upto`` rewritten since makes the others stale).
    Cursors of earlier versions (a position and bounds, or no ``bound``) are stale."""
    position = decode_cursor(conn, cursor, "sessions", request, None)
    if _earlier(position):
        raise stale()
    if not (
        isinstance(position, dict) and set(position) == SESSION_KEYS and is_count(position["at"])
        and is_count(position["upto"]) and is_count(position["bound"])
        and (position["rw"] is None or is_count(position["rw"])) and _weights(position["w"])
        and SeenSet.is_digest(position["seen"])
    ):
        raise _not_returned()
    if not follow_changes and (position["rw"] is None or rewritten_since(conn, position["rw"], position["upto"])):
        raise stale()
    return position


def _earlier(position) -> bool:
    """Whether ``position`` is a grouped search cursor's of an earlier version: the search
    page's (a position; with the sessions' bound; with the messages' and the weights) or
    the contract's (a ``_snapshot``, without the sessions' bound)."""
    if is_count(position) or (isinstance(position, list) and len(position) == 2 and all(map(is_count, position))):
        return True
    if isinstance(position, list) and len(position) == 4:
        return all(map(is_count, position[:3])) and isinstance(position[3], list) and _weights(position[3])
    return isinstance(position, dict) and set(position) == SNAPSHOT_KEYS


SNAPSHOT_KEYS = frozenset({"at", "upto", "rw", "w", "seen", "avg"})


def _snapshot(conn, cursor, scope: str, request: str) -> dict:
    """Where a page of event search starts, and the archive the first page saw.

    ``at``: the position in the ranking; ``upto``: the greatest message id
    there was (messages added since are left out, so that they neither move
    nor repeat results); ``rw``: ``obelisk_state.rewrites`` then (a message
    up to ``upto`` deleted, moved or rewritten since makes the cursor stale); ``w``: the
    terms' weights the first page ranked with; ``avg``: the session's mean
    message length; ``seen`` is unused (None).
    """
    if cursor is None:
        upto = conn.execute("SELECT MAX(id) FROM messages").fetchone()[0] or 0
        return {"at": 0, "upto": upto, "rw": current_rewrites(conn), "w": None, "seen": None, "avg": None}
    position = decode_cursor(conn, cursor, scope, request, None)
    if not isinstance(position, dict) and _earlier(position):  # bound to no snapshot: an earlier version's
        raise stale()
    if not (
        isinstance(position, dict) and set(position) == SNAPSHOT_KEYS and is_count(position["at"])
        and is_count(position["upto"]) and is_count(position["rw"]) and _weights(position["w"])
        and position["seen"] is None and (position["avg"] is None or type(position["avg"]) in (int, float))
    ):
        raise _not_returned()
    if rewritten_since(conn, position["rw"], position["upto"]):
        raise stale()
    return position


def _finder(conn, fts: FtsQuery, filters: Filters, upto: int | None = None,
            bound: int | None = None) -> "_Candidates":
    """``upto``: only messages with ids up to it are found (those added since a first page are not);
    ``bound``: only sessions whose rowid is at most it (``_Candidates.bound``)."""
    finder = _candidates(conn, fts, filters, upto)
    finder.bound = bound
    return finder


def _candidates(conn, fts: FtsQuery, filters: Filters, upto: int | None) -> "_Candidates":
    if fts.candidates is None:
        return _AllMatches(conn, fts, filters, upto)
    if fts.prefix_term is None:
        matches = _few_matches(conn, fts, filters, upto)
        if matches is not None:
            return _FewMatches(conn, fts, filters, matches, upto)
    return _ManyMatches(conn, fts, filters, upto)


def _few_matches(conn, fts: FtsQuery, filters: Filters, upto: int | None = None) -> list[int] | None:
    """The ids of the messages that match under the event filters, when at most
    ``EXACT_MAX`` do; else None.

    A frequent word can match few events under an event filter the session
    bags know nothing of (a seq range, an event type): ranked by the bags,
    every session holding the word was confirmed one by one, each a query,
    before a page could say it had found (nearly) nothing. With such a
    filter (``BAGLESS``) up to ``FILTERED_SCAN_MAX`` matches are read to find
    those it keeps; otherwise only ``EXACT_MAX + 1``, as a count of the
    matches was (a time range has its sessions' spans to narrow the bags).
    (CROSS JOIN: the matches are read as the join needs them, so a word the
    filters keep stops at ``EXACT_MAX + 1``; joined the other way SQLite
    first copies every match.)
    """
    scan = FILTERED_SCAN_MAX if any(getattr(filters, name) is not None for name in BAGLESS) else EXACT_MAX + 1
    where, params = filters.event_sql("m")
    bound = "" if upto is None else f" AND rowid <= {int(upto)}"
    kept = [rowid for (rowid,) in conn.execute(
        f"""SELECT m.id FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?{bound} LIMIT ?) x
            CROSS JOIN messages m ON m.id = x.rowid WHERE {where} LIMIT ?""",
        [fts.expression, scan, *params, EXACT_MAX + 1],
    )]
    if len(kept) > EXACT_MAX:
        return None
    # Every match was read, unless there are more than those.
    beyond = conn.execute(
        f"SELECT COUNT(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?{bound} LIMIT 1 OFFSET ?)",
        [fts.expression, scan],
    ).fetchone()[0]
    return None if beyond else kept


class _Candidates:
    """Candidate sessions in rank order; those with a confirmed hit make the page."""

    batch = 48
    bound: int | None = None  # only sessions whose rowid is at most this (those a search's first page saw)
    ADDED_MAX = 100  # sessions stored since a search started that are looked at, to say how many match

    def __init__(self, conn, fts: FtsQuery, filters: Filters, upto: int | None = None):
        self.conn = conn
        self.fts = fts
        self.filters = filters
        self.upto = upto
        self.scorer = EventScorer(conn, fts)
        self.bag_expression = (
            fts.candidates if filters.include_meta or fts.candidates is None else f"{{body}} : ({fts.candidates})"
        )

    def page(self, position: int, limit: int, per_session: int, skip=frozenset(),
             pending=()) -> tuple[list[dict], bool, list[dict]]:
        """The sessions of a page, whether more may follow, and the candidates it went past:
        ``pending`` first, then the ranking from ``position`` on, leaving out ``skip``."""
        items: list[dict] = []
        passed: list[dict] = []
        examined = 0
        offset = position
        queue = list(pending)
        while True:
            if queue:
                candidates, queue, fetched = queue, [], None
            else:
                candidates = self.candidates(offset, self.batch)
                fetched, offset = len(candidates), offset + len(candidates)
                candidates = [c for c in candidates if c["session_id"] not in skip]
            sessions = _sessions_by_id(self.conn, [c["session_id"] for c in candidates])
            for candidate in candidates:
                if examined >= MAX_CANDIDATES and (items or examined == MAX_EMPTY_CANDIDATES):
                    return items, True, passed
                examined += 1
                expression = self.expression_for(candidate)
                hits = self.best_events(candidate, expression, per_session) if expression else []
                if hits and candidate["session_id"] in sessions:
                    if len(items) == limit:
                        return items, True, passed  # one more session matches: the next page starts there
                    items.append({
                        "session": sessions[candidate["session_id"]],
                        "score": round(-candidate["rank"], 6),
                        "best": hits[0],
                        "hits": hits,
                        "expression": expression,
                    })
                passed.append(candidate)
            if fetched is not None and fetched < self.batch:
                return items, False, passed

    def resume(self, state: dict) -> tuple[set[str], list[dict], int]:
        """Where a cursor's page goes on: ``(seen, pending, position)``, the sessions the pages
        before ranked (``state["at"]`` of them, ``state["seen"]`` their digest), those of the
        sessions grown since that are ranked before ``position`` now but were not then, and the
        place in the ranking now after the last of those ranked before that did not grow (they
        keep their order). Stale when no such sessions are found: the ranking moved otherwise."""
        count = state["at"]
        grown = grown_since(self.conn, state["upto"], self.bound) if count else set()
        if grown is None:
            raise stale()
        grown = self.among(grown)  # (those the ranking holds: the others are nowhere in it)
        ranked = self.candidates(0, count + len(grown)) if count else []
        found = SeenSet.resume([c["session_id"] for c in ranked], count, state["seen"], grown)
        if found is None:
            raise stale()
        seen, cut = found
        pending = [c for c in ranked[:cut] if c["session_id"] not in seen]
        return seen, pending, cut

    def among(self, session_ids: set[str]) -> set[str]:
        """Those of ``session_ids`` the ranking may hold (whose session bag matches)."""
        return bag_holds(self.conn, self.bag_expression, session_ids)

    def existing(self, candidates: list[dict]) -> list[str]:
        """The ids of those of ``candidates`` that held a message up to ``upto`` (all without it)."""
        return [c["session_id"] for c in candidates if self.upto is None or c["first_id"] <= self.upto]

    def expression_for(self, candidate: dict) -> str | None:
        """The exact expression for one session: a prefix becomes the session's own words."""
        if self.fts.prefix_term is None:
            return self.fts.expression
        columns = "body_words || meta_words" if self.filters.include_meta else "body_words"
        words = self.conn.execute(
            f"SELECT {columns} FROM session_docs WHERE session_id = ?", [candidate["session_id"]]
        ).fetchone()
        return self.fts.expanded(prefix_words(words[0] if words else "", self.fts.prefix_term))

    shortlist = SHORTLIST
    matches: list[int] | None = None  # every rowid the expression matches, when read once per search

    def best_events(self, candidate: dict, expression: str, count: int) -> list[dict]:
        last_id = candidate["last_id"] if self.upto is None else min(candidate["last_id"], self.upto)
        if last_id < candidate["first_id"]:
            return []  # a session begun since the first page
        return best_events(
            self.conn, expression, self.scorer, self.filters, candidate["session_id"], candidate["first_id"],
            last_id, candidate["avg_length"], count, self.shortlist, self.matches,
        )

    def session_clause(self) -> tuple[str, list]:
        return bounded(self.filters.session_sql("s"), self.bound)

    def added_since(self, bound: int) -> int:
        """How many sessions stored after ``bound`` match (of the first ``ADDED_MAX`` of them
        the session filters select)."""
        where, params = self.filters.session_sql("s")
        added = rows(
            self.conn,
            f"""SELECT d.session_id, d.first_id, d.last_id, {AVERAGE_LENGTH.format("d")} AS avg_length
                FROM sessions s JOIN session_docs d ON d.session_id = s.id
                WHERE s.rowid > ? AND {where} ORDER BY s.rowid LIMIT ?""",
            [bound, *params, self.ADDED_MAX],
        )
        count = 0
        for candidate in added:
            expression = self.expression_for(candidate)
            count += bool(expression and self.best_events(candidate, expression, 1))
        return count


def bag_holds(conn, bag_expression: str, session_ids: set[str]) -> set[str]:
    """Those of ``session_ids`` whose session bag matches ``bag_expression``."""
    if not session_ids:
        return set()
    return {row[0] for row in conn.execute(
        "SELECT d.session_id FROM session_docs d JOIN session_docs_fts f ON f.rowid = d.id "
        "WHERE d.session_id IN (SELECT value FROM json_each(?)) AND session_docs_fts MATCH ?",
        [json.dumps(sorted(session_ids)), bag_expression],
    )}


def bounded(clause: tuple[str, list], bound: int | None) -> tuple[str, list]:
    """A session clause (alias ``s``) that also keeps only sessions whose rowid is at most ``bound``."""
    where, params = clause
    return (where, params) if bound is None else (f"{where} AND s.rowid <= ?", [*params, bound])


class _ManyMatches(_Candidates):
    """Candidates straight from the session bags, best bm25 first."""

    def candidates(self, offset: int, count: int) -> list[dict]:
        return bag_sessions(self.conn, self.bag_expression, self.filters, offset, count, self.bound, self.upto)


def bag_sessions(conn, bag_expression: str, filters: Filters, offset: int, count: int,
                 bound: int | None = None, upto: int | None = None) -> list[dict]:
    """Sessions whose bag matches ``bag_expression`` under ``filters``, best bm25 then newest first
    (only those whose rowid is at most ``bound``, when given; ranked by their messages up to
    ``upto``, when given: ``average_sql``, ``ended_sql``).

    Each is ``{"session_id", "first_id", "last_id", "avg_length", "rank"}``.
    """
    where, params = filters.session_sql("s")
    ranked, ranked_params = "session_docs_fts f", [bag_expression]
    newer = set() if bound is None or where != "1" else {row[0] for row in conn.execute(
        "SELECT d.id FROM sessions s JOIN session_docs d ON d.session_id = s.id WHERE s.rowid > ? LIMIT ?",
        [bound, NEWER_MAX + 1],
    )}
    if where == "1" and len(newer) <= NEWER_MAX:
        # No session filter: FTS5 sorts by rank itself, fastest when told
        # where to stop. Equal ranks are ordered by recency, so that cut must
        # not fall among them (pages would repeat some sessions and miss
        # others): one row more tells; if it ties, everything is sorted.
        # (Sessions stored past ``bound`` are read too, and left out.)
        cut = offset + count
        top = [row for row in conn.execute(
            "SELECT rowid, rank FROM session_docs_fts WHERE session_docs_fts MATCH ? ORDER BY rank LIMIT ?",
            [bag_expression, cut + len(newer) + 1],
        ) if row[0] not in newer]
        if len(top) <= cut or top[cut][1] != top[cut - 1][1]:
            ranked = "(SELECT json_extract(value, '$[0]') AS rowid, json_extract(value, '$[1]') AS rank FROM json_each(?)) f"
            ranked_params = [json.dumps([tuple(row) for row in top[:cut]])]
    where, params = bounded((where, params), bound)
    if ranked == "session_docs_fts f":  # FTS5 matches and ranks here, under the session filters
        where = f"session_docs_fts MATCH ? AND {where}"
    return rows(
        conn,
        f"""SELECT d.session_id, d.first_id, d.last_id, {average_sql("d", upto)} AS avg_length,
              f.rank AS rank
            FROM {ranked} JOIN session_docs d ON d.id = f.rowid
            JOIN sessions s ON s.id = d.session_id
            WHERE {where}
            ORDER BY f.rank, {ended_sql(upto)} DESC, s.id LIMIT ? OFFSET ?""",
        [*ranked_params, *params, count, offset],
    )


class _FewMatches(_Candidates):
    """The sessions holding the (few) exact matches, ranked by their strongest event.

    Every match is scored, so the ranking and each ``best`` are exact."""

    shortlist = EXACT_MAX

    def __init__(self, conn, fts: FtsQuery, filters: Filters, matches: list[int], upto: int | None = None):
        super().__init__(conn, fts, filters, upto)
        self.matched = json.dumps(matches)  # the ids of the matching messages the filters keep (_few_matches)

    def among(self, session_ids: set[str]) -> set[str]:
        return {row[0] for row in self.conn.execute(
            "SELECT session_id FROM messages WHERE id IN (SELECT value FROM json_each(?))", [self.matched]
        )} & set(session_ids)

    def candidates(self, offset: int, count: int) -> list[dict]:
        where, params = self.session_clause()
        score, score_params = self.scorer.sql(average_sql("d", self.upto), window="m.window")
        return rows(
            self.conn,
            f"""WITH m AS MATERIALIZED (
                  SELECT m.session_id, m.text_length, {WINDOW_SQL.format("m")} AS window
                  FROM messages m WHERE m.id IN (SELECT value FROM json_each(?))
                ),
                best AS (
                  SELECT m.session_id, MAX({score}) AS score FROM m
                  JOIN session_docs d ON d.session_id = m.session_id
                  GROUP BY m.session_id
                )
                SELECT d.session_id, d.first_id, d.last_id, {average_sql("d", self.upto)} AS avg_length,
                  -b.score AS rank
                FROM best b JOIN session_docs d ON d.session_id = b.session_id
                JOIN sessions s ON s.id = b.session_id
                WHERE {where}
                ORDER BY b.score DESC, {ended_sql(self.upto)} DESC, s.id LIMIT ? OFFSET ?""",
            [self.matched, *score_params, *params, count, offset],
        )


class _AllMatches(_Candidates):
    """Raw FTS5: rank every matching message, keep each session's best.

    The ranking is read once per search, and so are the matches of a prefix."""

    def candidates(self, offset: int, count: int) -> list[dict]:
        return self.ranked[offset : offset + count]

    def among(self, session_ids: set[str]) -> set[str]:
        return {c["session_id"] for c in self.ranked} & set(session_ids)

    @cached_property
    def matches(self) -> list[int] | None:
        if not merges_prefixes(self.fts.expression):
            return None  # FTS5 finds a session's matches in its id range quickly
        bound = "" if self.upto is None else f" AND rowid <= {int(self.upto)}"
        return [rowid for (rowid,) in self.conn.execute(
            f"SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?{bound} ORDER BY rowid", [self.fts.expression]
        )]

    @cached_property
    def ranked(self) -> list[dict]:
        where, params = self.session_clause()
        event_where, event_params = self.filters.event_sql("m")
        if self.upto is not None:
            event_where += f" AND m.id <= {int(self.upto)}"
        return rows(
            self.conn,
            f"""WITH hits AS MATERIALIZED (
                  SELECT m.session_id, x.rank AS rank FROM messages_fts x JOIN messages m ON m.id = x.rowid
                  WHERE messages_fts MATCH ? AND {event_where}
                ),
                best AS (SELECT session_id, MIN(rank) AS rank FROM hits GROUP BY session_id)
                SELECT b.session_id, d.first_id, d.last_id, {average_sql("d", self.upto)} AS avg_length,
                  b.rank AS rank
                FROM best b JOIN session_docs d ON d.session_id = b.session_id
                JOIN sessions s ON s.id = b.session_id
                WHERE {where}
                ORDER BY b.rank, {ended_sql(self.upto)} DESC, s.id""",
            [self.fts.expression, *event_params, *params],
        )


def merges_prefixes(expression: str) -> bool:
    """Whether FTS5 may answer ``expression`` by merging the doclists of a prefix's terms
    over the whole table, in every statement and for each rowid of a ``rowid IN``
    (a ``*`` outside quotes: inside, it is no prefix)."""
    return "*" in _QUOTED.sub("", expression)


_QUOTED = re.compile(r'"(?:[^"]|"")*"')


def best_events(conn, expression: str, scorer: EventScorer, filters: Filters, session_id: str,
                first_id: int, last_id: int, avg_length: float, count: int,
                shortlist: int = SHORTLIST, matches: list[int] | None = None) -> list[dict]:
    """The best-scoring matching events of one session.

    Among the first ``SCAN_MAX`` matches of the session's id range (FTS5
    reads a doclist backwards slowly), the ``shortlist`` shortest are scored:
    bm25 favours short messages, and scoring reads the text, which can be
    megabytes. A session with no more matches than that has every one scored:
    exact. ``matches``: every rowid ``expression`` matches, in order, when the
    caller has read them; FTS5 is not asked again.
    """
    if matches is None:
        found = f"""SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?
                    AND rowid BETWEEN ? AND ? LIMIT {SCAN_MAX}"""
        found_params = [expression, first_id, last_id]
    else:
        start = bisect_left(matches, first_id)
        found = "SELECT value AS rowid FROM json_each(?)"
        found_params = [json.dumps(matches[start : min(bisect_right(matches, last_id, start), start + SCAN_MAX)])]
    where, params = filters.event_sql("m")
    score, score_params = scorer.sql("?", [avg_length], window="w.window")
    return rows(
        conn,
        f"""WITH w AS MATERIALIZED (
              SELECT m.id, {WINDOW_SQL.format("m")} AS window FROM messages m WHERE m.id IN (
                SELECT m.id FROM ({found}) x
                JOIN messages m {indexed_by(conn, "messages_session_rows")} ON m.session_id = ? AND m.id = x.rowid
                WHERE {where} ORDER BY m.text_length, m.id DESC LIMIT {int(shortlist)}))
            SELECT {event_select("m")}, m.text_length, {score} AS score FROM w JOIN messages m ON m.id = w.id
            ORDER BY score DESC, m.id DESC LIMIT ?""",
        [*found_params, session_id, *params, *score_params, count],
    )


def average_length(conn, session_id: str) -> float:
    """The mean message length bm25 normalises by: the session index's, as grouped search
    scores it, else (a session whose document is not written yet) its messages'."""
    found = conn.execute(
        f"SELECT {AVERAGE_LENGTH.format('d')} FROM session_docs d WHERE d.session_id = ?", [session_id]
    ).fetchone()
    if found is None:
        found = conn.execute(
            "SELECT max(coalesce(avg(text_length), 1), 1.0) FROM messages WHERE session_id = ?", [session_id]
        ).fetchone()
    return found[0]


NON_ASCII_WORD = re.compile(r'"([^"]*[^\x00-\x7f][^"]*)":(\d+)')


def prefix_words(counts_json: str, prefix: str, limit: int = MAX_EXPANSIONS) -> list[str]:
    """The most frequent words starting with ``prefix`` in a ``{word: count}`` JSON text,
    as FTS5 reads them (``porter unicode61 remove_diacritics 2``).

    Words never hold a quote or a backslash (those split words), so the JSON
    text can be scanned as it is. A word the session index keeps with an
    accent or a separator outside ASCII (it splits words on ASCII ones only)
    is folded and split as FTS5 does: ``cafe`` finds ``café``, ``omega``
    the end of ``alpha—omega``.
    """
    found: dict[str, int] = {}
    folded = fold(prefix)
    for start in dict.fromkeys((prefix, folded)):
        for word, count in re.findall(r'"(' + re.escape(start) + r'[^"]*)":(\d+)', counts_json):
            if word.isascii():  # (the others are read as FTS5 reads them, below)
                found[word] = found.get(word, 0) + int(count)
    for word, count in NON_ASCII_WORD.findall(counts_json):
        for part in tokens(word):  # (as written: FTS5 folds some letters, fold() more)
            if fold(part).startswith(folded):
                found[part] = found.get(part, 0) + int(count)
    return sorted(found, key=lambda w: (-found[w], w))[:limit]


def fold(word: str) -> str:
    """``word`` without its diacritics, as FTS5's ``remove_diacritics 2`` reads it
    (which leaves ligatures and full-width letters as they are: no compatibility folding)."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


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
    scorer = EventScorer(conn, fts)
    generation = current_generation(conn)
    request = fingerprint(
        {"session": session_id, "query": fts.normalized(), "filters": filters.normalized(), "limit": limit}
    )
    position = _snapshot(conn, cursor, "events", request)
    page = {"session": session, "items": [], "next_cursor": None, "generation": generation}
    if fts.matches_nothing:
        return page
    first_id, last_id = conn.execute(
        "SELECT MIN(id), MAX(id) FROM messages WHERE session_id = ?", [session_id]
    ).fetchone()
    if first_id is None:
        return page
    # The events the first page ranked, ranked as it ranked them: the events added since
    # are left out, and the weights and the mean length the scores use are the first page's.
    last_id = min(last_id, position["upto"])
    if position["w"] is not None:
        scorer.weights = position["w"]
    avg = position["avg"] if position["avg"] is not None else average_length(conn, session_id)
    where, params = filters.event_sql("m")
    score, score_params = scorer.sql("?", [avg], window="w.window")
    # FTS5 first (CROSS JOIN): read the other way round, it was asked once per message of the
    # session, and a prefix merges its terms' doclists over the whole table each time.
    found = rows(
        conn,
        f"""WITH w AS MATERIALIZED (
              SELECT m.id, {WINDOW_SQL.format("m")} AS window FROM messages_fts x CROSS JOIN messages m ON m.id = x.rowid
              WHERE messages_fts MATCH ? AND x.rowid BETWEEN ? AND ? AND m.session_id = ? AND {where})
            SELECT {event_select("m")}, m.text_length, {score} AS score FROM w JOIN messages m ON m.id = w.id
            ORDER BY score DESC, m.id DESC LIMIT ? OFFSET ?""",
        [fts.expression, first_id, last_id, session_id, *params, *score_params, limit + 1, position["at"]],
    )
    page["items"] = found[:limit]
    _finish_hits(conn, fts.expression, fts, page["items"])
    if len(found) > limit:
        following = {**position, "at": position["at"] + limit, "w": scorer.weights, "avg": avg}
        page["next_cursor"] = encode_cursor(conn, "events", request, generation, following)
    return page


# -- hits and snippets -----------------------------------------------------


def _finish_hits(conn, expression: str, fts: FtsQuery, hits: list[dict]) -> None:
    snippets = _snippets(conn, expression, fts, hits)
    for hit in hits:
        hit["snippet"] = snippets[hit["id"]]
        hit["raw_type"] = hit.pop("type")
        hit["type"] = hit.pop("event_type")
        hit["time"] = hit.pop("time_ms")
        hit["is_meta"] = bool(hit["is_meta"])
        hit["score"] = round(hit["score"], 6)
        for name in ("subtype", "is_compact_summary", "replaced_by", "parent_uuid", "text_length"):
            hit.pop(name, None)


def _snippets(conn, expression: str, fts: FtsQuery, hits: list[dict]) -> dict[int, dict]:
    """Hit-centred snippets: FTS5 marks the matches, unless the text is huge.

    FTS5 answers ``rowid IN (...)`` one rowid at a time, so a prefix reads
    its matches once instead (``+rowid`` hides the rowids from FTS5).
    """
    found: dict[int, dict] = {}
    small = [hit["id"] for hit in hits if hit["text_length"] <= HIGHLIGHT_MAX_CHARS]
    if small:
        column = "+rowid" if merges_prefixes(expression) else "rowid"
        for rowid, marked, forged in conn.execute(
            "SELECT rowid, highlight(messages_fts, 0, ?1, ?2), instr(text, ?1) OR instr(text, ?2) FROM messages_fts "
            f"WHERE messages_fts MATCH ?3 AND {column} IN ({', '.join('?' * len(small))})",
            [MARK_START, MARK_END, expression, *small],
        ):
            if marked and MARK_START in marked and not forged:  # a text holding the marks is found below
                found[rowid] = snippet(marked)
    for hit in hits:
        if hit["id"] not in found:
            found[hit["id"]] = approximate_snippet(unmarked(_text_around_a_term(conn, hit["id"], fts.words)), fts.words)
    return found


SNIPPET_READ = 200_000  # characters of a huge text read for its snippet


def _text_around_a_term(conn, message_id: int, words) -> str:
    """Up to ``SNIPPET_READ`` characters of a huge text, starting a little before the
    first place SQLite finds one of the words' stems (any case of ASCII letters), so
    that the snippet shows a match however far into the text it is; from the start
    when none is found. Only those characters are read into Python."""
    stems = sorted(word_stems(words))[:MAX_FIND_STEMS]
    at = 0
    if stems:
        found = conn.execute(
            f"SELECT {', '.join('instr(lower(text), ?)' for _ in stems)} FROM messages WHERE id = ?",
            [*stems, message_id],
        ).fetchone()
        at = min((place for place in found or () if place), default=0)
    # Past the snippet's lead before it: the snippet then says the text goes on before.
    start = max(1, at - 3 * SNIPPET_CHARS) if at else 1
    row = conn.execute("SELECT substr(text, ?, ?) FROM messages WHERE id = ?", [start, SNIPPET_READ, message_id]).fetchone()
    return (row[0] if row else "") or ""  # gone since it was found (an ingest read its file again)
