"""Facet counts for a search, and a page of search narrowed by facet values.

    facet_counts(conn, query, *, mode="terms", narrowing=None, per_facet=8,
                 only=None, **filter_options) -> dict
        ``{"facets": {name: [{"value", "count"}]}, "sampled": bool, "uncounted": [name],
        "unmatched": [{"facet", "value", "spelt"}]}``: for
        each facet (source, project, branch, model, role, tool, day; those
        ``only`` names, when given, the others left empty) the
        values found among the matching messages and how many *sessions*
        have a match with that value, most first. At most ``HIT_SAMPLE``
        matches are counted (``sampled`` says the limit was reached). The
        counts of the ``COUNTS_KEPT`` latest searches are kept until the
        database's generation changes, so the next page of a search does
        not count them again. ``until`` stops a count that runs too long:
        its facets are ``uncounted``.
    faceted_search(conn, query, *, mode="terms", narrowing=None, limit=20,
                   cursor=None, per_facet=8, **filter_options) -> dict
        One page of grouped search and the facet counts beside it; its
        cursor outlives an ingest, its pages ranking the sessions there
        were at the first (``follow_changes``). A
        facet with values chosen is counted without its own choice (every
        other filter applies), so its other values stay there to add; that
        second count computes that facet's values alone. The counts take at
        most ``FACET_SECONDS``, and leave ``FACET_RESERVE`` of the request's time:
        the facets of a count stopped then are ``uncounted``, the page is
        answered all the same.
        ``narrowing`` is ``{"branch": [...], "model": [...], "tool": [...]}``
        (values ORed within a facet, facets ANDed): only matches with those
        values count, as event filters (``Filters`` ``branches``, ``models``,
        ``tools``) applied before ranking.

``filter_options`` are those of ``search.search_sessions`` (``Filters.build``).
"""

from __future__ import annotations

import copy
import json
import sqlite3
import threading
import time
from collections import OrderedDict

from .cursors import current_generation
from .readonly import deadline_of, stopping_by
from .events import branch_sql, event_time_sql, speaker_sql, tool_name_sql
from .filters import Filters
from .fts import parse_query

HIT_SAMPLE = 50_000
# How long the counts beside a page may take, at most, and how much of the request's time
# (its deadline) they leave to the rest of the page: a count not done by then is stopped,
# its facets left uncounted.
FACET_SECONDS = 0.6
FACET_RESERVE = 0.15
COUNTS_KEPT = 32
_kept: OrderedDict = OrderedDict()  # (database, generation, statement, params, per_facet) -> result
_kept_lock = threading.Lock()
FACETS = {
    "source": "s.source",
    "project": "s.project",
    "branch": branch_sql("m", "s"),
    "model": "m.model",
    "role": speaker_sql("m"),
    "tool": tool_name_sql("m"),
    # The UTC day of the event's time, as the page's date filter reads it (none for a placeholder).
    "day": f"date({event_time_sql('m')})",
}
NARROWING = {"branch": "branches", "model": "models", "tool": "tools"}  # facet -> Filters field
# The facets whose chosen values no match has are named beside the results: telling whether any
# message at all has a branch or model would read every message (no index holds them), so the
# page is not refused for one, as it is for a tool no call has.
TOLD_UNMATCHED = ("branch", "model")
OWN_OPTIONS = {"source": ("sources",), "project": ("projects",), "role": ("roles",), "day": ("time_from", "time_to")}


def _hits(expression: str, filters: Filters, facets=FACETS) -> tuple[str, list]:
    """The first ``HIT_SAMPLE`` matching messages with the value of each of ``facets``."""
    event_where, event_params = filters.event_sql("m")
    session_where, session_params = filters.session_sql("s")
    columns = ", ".join(f"{FACETS[name]} AS {name}" for name in facets)
    sql = f"""SELECT m.session_id, {columns}
          FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
          WHERE messages_fts MATCH ? AND {event_where} AND {session_where}
          LIMIT {HIT_SAMPLE}"""
    return sql, [expression, *event_params, *session_params]


def narrowed(filter_options: dict, narrowing: dict | None) -> dict:
    """``filter_options`` with the ``narrowing`` facet values as event filters."""
    return {**filter_options, **{NARROWING[name]: list(values) for name, values in (narrowing or {}).items()
                                 if name in NARROWING and values}}


def facet_counts(conn: sqlite3.Connection, query: str, *, mode: str = "terms", narrowing: dict | None = None,
                 per_facet: int = 8, only: tuple[str, ...] | None = None, until: float | None = None,
                 chosen: dict | None = None, **filter_options) -> dict:
    """The counts of every facet, or of those ``only`` names (the others left empty: a facet's
    value can cost a lookup per match, as ``tool``'s does).

    ``chosen`` (``{facet: values}``) asks which of those values no counted match has:
    ``unmatched`` lists them, each with the values found that differ from it in case
    alone (``spelt``); none when the count was cut at ``HIT_SAMPLE``, or found no match.

    With ``until`` (a ``time.monotonic()``), a count still running then is stopped: its
    facets are left empty and named in ``uncounted`` (and nothing is kept of it). The
    connection's own deadline still stops the whole request."""
    fts = parse_query(query, mode)
    result = {"facets": {name: [] for name in FACETS}, "sampled": False, "sessions": 0, "uncounted": [], "unmatched": []}
    if fts.matches_nothing:
        return result
    counted = [name for name in FACETS if only is None or name in only]
    hits_sql, params = _hits(fts.expression, Filters.build(**narrowed(filter_options, narrowing)), counted)
    # Each session's distinct combinations of values, with how many matches have them.
    columns = ", ".join(counted)
    sql = f"SELECT session_id, {columns}, COUNT(*) FROM ({hits_sql}) GROUP BY session_id, {columns}"
    key = (_database(conn), current_generation(conn), sql, json.dumps(params), per_facet, json.dumps(chosen))
    with _kept_lock:
        kept = _kept.get(key)
        if kept is not None:
            _kept.move_to_end(key)
    if kept is not None:
        # Prepared, not run: an authorizer watching what the work reads still sees these tables.
        conn.execute("EXPLAIN " + sql, params).fetchall()
        return copy.deepcopy(kept)
    if until is None:
        rows = conn.execute(sql, params).fetchall()
    else:
        try:
            with stopping_by(conn, until):
                rows = conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            # (stopped: "interrupted", or a failure of the FTS table stopped while it opened)
            now, outer = time.monotonic(), deadline_of(conn)
            if now <= until or (outer is not None and now > outer):
                raise
            result["uncounted"] = counted
            return result
    result["sampled"] = sum(row[-1] for row in rows) >= HIT_SAMPLE
    result["sessions"] = len({row[0] for row in rows})
    for index, name in enumerate(counted, start=1):
        sessions: dict = {}
        for row in rows:
            value = row[index]
            if value not in (None, ""):
                sessions.setdefault(value, set()).add(row[0])
        counted = sorted(((len(ids), value) for value, ids in sessions.items()), key=lambda c: (-c[0], str(c[1])))
        result["facets"][name] = [{"value": value, "count": count} for count, value in counted[:per_facet]]
        if rows and not result["sampled"]:  # (with no match at all, another choice is the cause)
            result["unmatched"] += _unmatched(name, (chosen or {}).get(name, ()), sessions)
    with _kept_lock:
        _kept[key] = copy.deepcopy(result)
        while len(_kept) > COUNTS_KEPT:
            _kept.popitem(last=False)
    return result


def _unmatched(name: str, chosen, found: dict) -> list[dict]:
    """The values of ``chosen`` not among ``found``, each with those found it spells in another case."""
    return [
        {"facet": name, "value": value,
         "spelt": sorted(v for v in found if isinstance(v, str) and v.casefold() == value.casefold())}
        for value in chosen if value not in found
    ]


def _database(conn: sqlite3.Connection) -> tuple:
    """Which database ``conn`` reads: its file and the secret created with it (a file may be replaced)."""
    main = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    secret = conn.execute("SELECT value FROM obelisk_state WHERE key = 'cursor_secret'").fetchone()
    return main, secret[0] if secret else None


def faceted_search(conn: sqlite3.Connection, query: str, *, mode: str = "terms", narrowing: dict | None = None,
                   limit: int = 20, cursor: str | None = None, per_facet: int = 8, **filter_options) -> dict:
    """One page of grouped search (``search.search_sessions``) and the facet counts beside it.

    ``{"page": {"items", "next_cursor", ...}, "facets": {...}, "sampled"}``.
    """
    from .search import search_sessions

    page = search_sessions(
        conn, query, mode=mode, limit=limit, cursor=cursor, follow_changes=True, **narrowed(filter_options, narrowing)
    )
    narrowing = {name: values for name, values in (narrowing or {}).items() if values}
    until = time.monotonic() + FACET_SECONDS
    if (outer := deadline_of(conn)) is not None:
        until = min(until, outer - FACET_RESERVE)
    counts = facet_counts(conn, query, mode=mode, narrowing=narrowing, per_facet=per_facet, until=until,
                          **filter_options)
    for name in FACETS:  # a facet with a choice: its values as if nothing were chosen in it
        # (Counted again for this facet alone: the others' values are those counted above.)
        if name in counts["uncounted"]:
            continue
        if name in narrowing:  # (a branch or model no match has is told apart: no index holds them)
            others = facet_counts(conn, query, mode=mode, per_facet=per_facet, only=(name,), until=until,
                                  chosen={name: narrowing[name]} if name in TOLD_UNMATCHED else None,
                                  **filter_options, narrowing={k: v for k, v in narrowing.items() if k != name})
            counts["unmatched"] += others["unmatched"]
        elif any(filter_options.get(option) for option in OWN_OPTIONS.get(name, ())):
            others = facet_counts(conn, query, mode=mode, narrowing=narrowing, per_facet=per_facet, only=(name,),
                                  until=until, **{k: v for k, v in filter_options.items() if k not in OWN_OPTIONS[name]})
        else:
            continue
        counts["facets"][name] = others["facets"][name]
        counts["uncounted"] += others["uncounted"]
    return {"page": page, **counts}
