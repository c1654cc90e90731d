"""The history contract: ``history.search`` and ``history.read`` over the archive.

    history_search(conn, options=None, **options) -> {"sessions": [...], "nextCursor"?}
    history_read(conn, options=None, **options) -> {"session", "entries", "nextCursor"?}
    History(conn).search(options) / .read(options)   the same, as ``history.*``

``search({query, attributes, limit, cursor})``
    Every term of ``query`` must occur in one entry ``read`` returns (a
    text entry's content, or a tool entry's name, argument strings and
    result), or in the session's digest (its title and summary). Both
    are matched as FTS5 matches ``messages_fts``: whole tokens, Porter
    stemmed (``edges`` finds "edge", ``cov`` does not find "coverage").
    Sessions whose digest holds every term come first (newest first), then sessions with a matching entry,
    ranked by their session bag (bm25, recency breaking ties). Snippets
    quote matching entries only. ``attributes`` filter before ranking: a
    string must equal the attribute, ``{"contains": s}`` must occur in it
    (case sensitive). No query (or a blank one) and no attributes: the most
    recently updated sessions. ``limit`` 1–75 (default 10). A session carries up to three
    snippets: plain text, with the ``[start, end)`` offsets of the matches
    in each in ``snippetMatches`` (an addition to the contract).
``read({sessionId, limit, cursor})``
    The active flat conversation in transcript order: ``user`` and
    ``assistant`` text entries, and one ``tool`` entry per tool call with
    its result (``outcome`` succeeded | failed | blocked | cancelled,
    ``sourceIds`` = [call message, result message]); a call with no result
    is ``cancelled`` with a ``null`` result. Content a rewind
    abandoned (``visibility = 'inactive'``), meta and hidden lines,
    reasoning, compaction summaries and structural lines are not entries;
    compaction removes nothing. ``limit`` 1–100 (default 50); a page also
    stops before ``READ_BUDGET_BYTES`` of JSON (always at least one entry).
    Only the absence of ``nextCursor`` ends the transcript. An entry whose
    line has no time takes that of the last timestamped entry before it, or
    the session's ``createdAt``.

Descriptors: ``{sessionId, attributes, createdAt, updatedAt, digest?,
snippets}``. ``attributes`` are the session's ``source`` (the agent:
claude, codex, gemini), ``repository``, ``cwd``, ``project``, ``branch``,
``model``, ``relationship`` and ``parent`` when known. ``updatedAt`` is the
last message time. The ``digest`` is the session's own title and its latest
agent-written summary (compaction or away summary), with
``updatedThroughEntryId`` the last entry read returns at or before that
summary's line (the first entry if none precedes it; the last entry without
a summary or when its line is not in the session; "" for a session without
entries). Errors: SESSION_QUERY_INVALID_QUERY / _INVALID_FILTER /
_INVALID_LIMIT / _INVALID_CURSOR / _STALE_CURSOR / _SESSION_NOT_FOUND,
_INDEX_FAILED for a query while an ingest defers full-text indexing, and
OBELISK_INVALID_ARGUMENT for a malformed request.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3

from ..sources.common import strings_in
from ..store.digests import LATEST_SUMMARY
from ..store.tool_output import full_content_sql
from . import search as search_core
from .cursors import current_generation, decode_cursor, encode_cursor, fingerprint, is_count
from .snapshots import MAX_ID, SeenSet, archive_edge, grown_since, log_bound, log_edge, recency_as_of
from .errors import QueryError, refusing_unencodable
from .filters import Filters
from .fts import MAX_QUERY_CHARS, check_encodable, cursor_text, match_documents, normalize_text, parse_query, phrase
from .search import rows
from .text import parse_json, snippet, split_thinking, to_ms

SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 75
READ_DEFAULT_LIMIT = 50
READ_MAX_LIMIT = 100
READ_BUDGET_BYTES = 1 << 20
MAX_PLACE_UUID = 512  # longest line uuid a read cursor carries (a cursor holds at most 2,048 characters)
LONG_UUID = "sha256:"  # a longer one's place is its digest: the prefix, then 64 hex digits


def _place_of(uuid: str) -> str:
    """What a read cursor keeps of the line ``uuid``: the uuid, or the digest of a long one."""
    return uuid if len(uuid) <= MAX_PLACE_UUID else LONG_UUID + hashlib.sha256(uuid.encode()).hexdigest()
MAX_ATTRIBUTES = 32
MAX_ATTRIBUTE_KEY = 64
MAX_ATTRIBUTE_VALUE = 1024
MAX_SESSION_ID = 256
SNIPPETS = 3
CANDIDATE_BATCH = 48
HIT_BATCH = 24


def _options(options, kwargs: dict, allowed: set, name: str) -> dict:
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"history.{name}() takes an options object")
    twice = sorted(set(options) & set(kwargs))
    if twice:  # which one was meant?
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"history.{name}(): {', '.join(map(str, twice))} given twice")
    merged = {**options, **kwargs}
    unknown = set(merged) - allowed
    if unknown:
        raise QueryError(
            "OBELISK_INVALID_ARGUMENT", f"history.{name}(): unknown option {', '.join(sorted(unknown))}"
        )
    return merged


# -- descriptors -----------------------------------------------------------


def attributes_of(session: dict) -> dict:
    values = {
        "source": session["source"],
        "repository": session["repository"],
        "cwd": session["cwd"] or session["project_path"],
        "project": session["project"],
        "branch": session["git_branch"],
        "model": session["model"],
        "relationship": session["relationship"],
        "parent": session["parent_session_id"],
    }
    return {key: value for key, value in values.items() if value}


def descriptor(conn, session: dict, snippets=()) -> dict:
    result = {
        "sessionId": session["id"],
        "attributes": attributes_of(session),
        "createdAt": to_ms(session["started_at"]) or 0,
        "updatedAt": to_ms(session["ended_at"]) or to_ms(session["started_at"]) or 0,
    }
    digest = _digest(conn, session)
    if digest is not None:
        result["digest"] = digest
    result["snippets"] = [s["text"] for s in snippets]
    result["snippetMatches"] = [s["matches"] for s in snippets]
    return result


def _digest(conn, session: dict) -> dict | None:
    summary = conn.execute(LATEST_SUMMARY.format(columns="content, message_uuid", session="?"), [session["id"]]).fetchone()
    if not session["title"] and summary is None:
        return None
    return {
        "title": session["title"] or "",
        "summary": summary[0] if summary is not None else "",
        "updatedThroughEntryId": _covered_through(conn, session["id"], summary[1] if summary is not None else None),
    }


def _covered_through(conn, session_id: str, summary_uuid: str | None) -> str:
    """The id of the last entry a digest covers; "" only when the session has no entry.

    That is the last entry at or before the summary's line, the first entry
    when the summary precedes them all, and the last entry when there is no
    summary or its line is not in this session.
    """
    seq = _seq_of(conn, session_id, summary_uuid)
    through = _last_entry_id(conn, session_id, seq)
    if through is None and seq is not None:
        through = _first_entry_id(conn, session_id)
    return through or ""


DAMAGED = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def reading_the_archive(fn):
    """A damaged archive is ``SESSION_QUERY_PERSISTENCE_FAILED``, as the
    session-query service reports it, never a bare ``sqlite3.DatabaseError``.
    (An ``OperationalError``, such as a read stopped at its time limit, is left
    to the caller.)"""
    @functools.wraps(fn)
    def reading(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) or getattr(exc, "sqlite_errorcode", 0) & 0xFF not in DAMAGED:
                raise
            raise QueryError("SESSION_QUERY_PERSISTENCE_FAILED", f"reading the archive failed: {exc}") from None
    return reading


# -- search ----------------------------------------------------------------


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
@reading_the_archive
def history_search(conn: sqlite3.Connection, options=None, **kwargs) -> dict:
    o = _options(options, kwargs, {"query", "attributes", "limit", "cursor"}, "search")
    query = _check_query(o.get("query"))
    attributes = _check_attributes(o.get("attributes"))
    limit = search_core.check_limit(o.get("limit"), SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT)
    filters = Filters.build(attributes=attributes)
    if query:  # (the most recently updated sessions read no index)
        search_core.check_index_complete(conn)
    generation = current_generation(conn)
    request = fingerprint({"query": cursor_text(normalize_text(query), "words") if query else None, "filters": filters.normalized()})
    upto, bound = archive_edge(conn)
    position = {"after": None, "search": None, "examined": None, "upto": upto, "bound": bound}
    if o.get("cursor") is not None:
        # Not bound to the generation: the archive grows while an agent pages
        # (its own log among others), and a page carries on from its position.
        position = decode_cursor(conn, o["cursor"], "history.search", request, None)
        if isinstance(position, dict) and set(position) == {"after", "search", "examined"}:
            raise QueryError("SESSION_QUERY_STALE_CURSOR", "the cursor is an earlier version's: run the search again")
        if not (isinstance(position, dict) and set(position) == POSITION_KEYS
                and is_count(position["upto"]) and is_count(position["bound"])
                and _is_place(position["after"])
                and (position["search"] is None or is_count(position["search"]))
                and isinstance(position["examined"], str) == (position["search"] is not None)
                and (position["examined"] is None or SeenSet.is_digest(position["examined"]))):
            raise QueryError("SESSION_QUERY_INVALID_CURSOR", "the cursor is not one this service returned")
    if query is None:
        found, next_position = _recent(conn, filters, position, limit)
    else:
        found, next_position = _matching(conn, query, filters, position, limit)
    result = {"sessions": [descriptor(conn, session, snippets) for session, snippets in found]}
    if next_position is not None:
        next_position = {**next_position, "upto": position["upto"], "bound": position["bound"]}
        result["nextCursor"] = encode_cursor(conn, "history.search", request, generation, next_position)
    return result


def _check_query(query) -> str | None:
    """The query text, or None for none: a blank query is no query, as over HTTP."""
    if query is None:
        return None
    if not isinstance(query, str):
        raise QueryError("SESSION_QUERY_INVALID_QUERY", "query must be a string")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError("SESSION_QUERY_INVALID_QUERY", f"query is longer than {MAX_QUERY_CHARS} characters")
    check_encodable(query)
    return query if normalize_text(query) else None


def _check_attributes(attributes) -> dict | None:
    if attributes is None:
        return None
    if not isinstance(attributes, dict) or len(attributes) > MAX_ATTRIBUTES:
        raise QueryError("SESSION_QUERY_INVALID_FILTER", f"attributes must be an object of at most {MAX_ATTRIBUTES} filters")
    for key, value in attributes.items():
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_ATTRIBUTE_KEY:
            raise QueryError("SESSION_QUERY_INVALID_FILTER", f"attribute names are 1 to {MAX_ATTRIBUTE_KEY} characters")
        text = value.get("contains") if isinstance(value, dict) else value
        if not isinstance(text, str) or len(text) > MAX_ATTRIBUTE_VALUE or (isinstance(value, dict) and set(value) != {"contains"}):
            raise QueryError(
                "SESSION_QUERY_INVALID_FILTER",
                f"attribute {key!r}: a string or {{contains: string}} of at most {MAX_ATTRIBUTE_VALUE} characters",
            )
    return attributes


# Newest first by the time a session last changed. Pages go on after the last
# session shown (its time and id), not after a count, and list the sessions
# there were when the first was read, in the order they had then
# (``query.snapshots``): a session stored since is left out, one that grew
# since keeps its place (its last message's time then).
UPDATED = "COALESCE(s.ended_at, s.started_at, '')"
POSITION_KEYS = frozenset({"after", "search", "examined", "upto", "bound"})


def _is_place(after) -> bool:
    return after is None or (isinstance(after, list) and len(after) == 2 and all(isinstance(v, str) for v in after))


def _comes_after(place: list[str], after: list[str]) -> bool:
    """Whether a session at ``place`` is listed after one at ``after`` (older, or as old with a greater id)."""
    return place[0] < after[0] or (place[0] == after[0] and place[1] > after[1])


def _updated_sql(conn, position: dict) -> tuple[str, list]:
    """``UPDATED`` as it was when the first page was read (``query.snapshots``)."""
    if position["after"] is None and position["search"] is None:
        return UPDATED, []  # (the first page)
    grown = grown_since(conn, position["upto"], position["bound"])
    if grown is None:
        raise QueryError("SESSION_QUERY_STALE_CURSOR", "too much was written since the first page: search again")
    return recency_as_of(UPDATED, position["upto"], grown, otherwise="s.started_at, ''")


def _recent(conn, filters: Filters, position: dict, limit: int):
    where, params = filters.session_sql("s")
    after = position["after"]
    updated, updated_params = _updated_sql(conn, position)
    found = rows(
        conn,
        f"SELECT s.*, {updated} AS _updated FROM sessions s WHERE {where} AND s.rowid <= ? "
        + (f"AND ({updated} < ? OR ({updated} = ? AND s.id > ?)) " if after else "")
        + "ORDER BY _updated DESC, s.id LIMIT ?",
        [*updated_params, *params, position["bound"],
         *([*updated_params, after[0], *updated_params, after[0], after[1]] if after else []), limit + 1],
    )
    places = [[session.pop("_updated"), session["id"]] for session in found]
    next_position = {"after": places[limit - 1], "search": None, "examined": None} if len(found) > limit else None
    return [(session, []) for session in found[:limit]], next_position


def _matching(conn, query: str, filters: Filters, position: dict, limit: int):
    """Digest matches first (newest first), then sessions with a matching entry.

    The position is ``{"after": place, "search": m, "examined": digest}``:
    ``place`` is the last digest match shown (see ``_recent``) and ``m``,
    once they are all shown, counts the candidate sessions (best bag rank
    first) already examined, ``digest`` naming which ones they were. A page
    goes on after them only while the first ``m`` candidates are still
    those: ranks move as the archive changes, and going on by count once
    another session ranks among them (or one of them falls behind) would
    show a session again or skip one, so that is
    ``SESSION_QUERY_STALE_CURSOR`` (search again from the start).
    """
    fts = parse_query(query, "words")
    digests = _digest_matches(conn, fts, filters, position)
    places = [[session.pop("_updated"), session["id"]] for session in digests]
    shown, after = 0, position["after"]
    if position["search"] is not None:
        shown = len(digests)
    elif after is not None:
        shown = next((n for n, place in enumerate(places) if _comes_after(place, after)), len(digests))
    found = [(session, _entry_hits(conn, fts, session["id"])) for session in digests[shown : shown + limit]]
    if shown + limit < len(digests):
        return found, {"after": places[shown + limit - 1], "search": None, "examined": None}
    if fts.matches_nothing:
        return found, None
    seen = {session["id"] for session in digests}
    upto, bound = position["upto"], position["bound"]

    def ranked(offset: int, count: int) -> list[dict]:
        return search_core.bag_sessions(conn, fts.candidates, filters, offset, count, bound, upto)

    examined_ids, queue, offset = _examined(conn, position, ranked, fts.candidates)
    examined = 0

    def going_on() -> dict:
        ids = SeenSet(examined_ids)
        return {"after": None, "search": ids.count, "examined": ids.digest}

    while True:
        if queue:
            batch, queue, fetched = queue, [], None
        else:
            batch = ranked(offset, CANDIDATE_BATCH)
            fetched, offset = len(batch), offset + len(batch)
            batch = [row for row in batch if row["session_id"] not in examined_ids]
        for row in batch:
            session_id = row["session_id"]
            if examined >= search_core.MAX_CANDIDATES and found:  # an empty page looks further
                return found, going_on()
            examined += 1
            hits = [] if session_id in seen else _entry_hits(conn, fts, session_id, upto=upto)
            if hits:
                if len(found) == limit:
                    return found, going_on()
                found.append((search_core.session_row(conn, session_id), hits))
            if row["first_id"] <= upto:  # (a session begun since is no session the first page ranked)
                examined_ids.add(session_id)
        if fetched is not None and fetched < CANDIDATE_BATCH:
            return found, None


def _examined(conn, position: dict, ranked, fts_candidates: str) -> tuple[set[str], list[dict], int]:
    """The candidate sessions of the transcript tier the pages before examined (``search``
    of them, ``examined`` their ``SeenSet`` digest), those ranked before the place the page
    goes on from that grew since and were not examined, and that place
    (``search.Candidates.resume``): stale when they cannot be told."""
    count = position["search"] or 0
    if not count:
        return set(), [], 0
    grown = grown_since(conn, position["upto"], position["bound"])
    if grown is None:
        raise _ranked_anew()
    grown = search_core.bag_holds(conn, fts_candidates, grown)  # (the others are nowhere in the ranking)
    rows_now = ranked(0, count + len(grown))
    found = SeenSet.resume([row["session_id"] for row in rows_now], count, position["examined"], grown)
    if found is None:
        raise _ranked_anew()
    examined, cut = found
    return examined, [row for row in rows_now[:cut] if row["session_id"] not in examined], cut


def _ranked_anew() -> QueryError:
    return QueryError(
        "SESSION_QUERY_STALE_CURSOR",
        "the sessions ranked before this page changed since the cursor was issued: "
        "run the search again without a cursor",
    )


def _entry_hits(conn, fts, session_id: str, count: int = SNIPPETS, upto: int | None = None) -> list[dict]:
    """Snippets of up to ``count`` entries read returns that hold every query term
    (``upto``: of the lines whose message id is at most that).

    Candidates (shortest lines first) are the entry lines whose indexed
    text holds every term; each is then matched as the entry read returns.
    """
    if fts.matches_nothing:
        return []
    lines = _candidate_lines(conn, fts, session_id, upto)
    hits: list[dict] = []
    for start in range(0, len(lines), HIT_BATCH):
        batch = _entry_rows(conn, session_id, "m.id IN (SELECT value FROM json_each(?))",
                            [json.dumps(lines[start : start + HIT_BATCH])], CANDIDATE_ORDER)
        entries = [entry for _, _, entry in _entries(conn, session_id, batch)]
        for _, marked in match_documents(fts.expression, [searchable(entry) for entry in entries], fts.words):
            hits.append(snippet("\n".join(column for column in marked if column)))
        if len(hits) >= count:
            break
    return hits[:count]


def searchable(entry: dict) -> tuple[str, str]:
    """What search matches in an entry: its content, or a call's name and arguments and its result."""
    if entry["type"] != "tool":
        return entry["content"], ""
    return "\n".join([entry["name"], *strings_in(entry["arguments"])]), "\n".join(strings_in(entry["result"]))


CANDIDATE_ORDER = "m.text_length, m.seq"  # (shortest first)


def _candidate_lines(conn, fts, session_id: str, upto: int | None = None) -> list[int]:
    """Entry lines holding every term, and call lines whose call, result and saved
    output lines hold them between them: their message ids, in ``CANDIDATE_ORDER``.
    Only ids: the lines are read a batch at a time, as far as the hits go (a common
    word's candidates in a long session are tens of thousands of lines)."""
    first, last = conn.execute(
        "SELECT MIN(id), MAX(id) FROM messages WHERE session_id = ? AND id <= ?", [session_id, MAX_ID if upto is None else upto]
    ).fetchone()
    if first is None:
        return []
    calls = _call_lines(conn, session_id)
    # (an agent's saved output is a message of its root session's: outside this range)
    outside = sorted({output for _, _, output in calls if output is not None and not first <= output <= last})
    holding = [_lines_matching(conn, phrase(piece), first, last, outside) for piece in fts.pieces]
    wanted = set.intersection(*holding) | {
        lines[0] for lines in calls if all(any(line in h for line in lines) for h in holding)
    }
    return [row[0] for row in conn.execute(
        f"SELECT m.id FROM messages m WHERE {ENTRY_WHERE} AND m.id IN (SELECT value FROM json_each(?)) "
        f"AND m.id <= ? ORDER BY {CANDIDATE_ORDER}",
        [session_id, json.dumps(sorted(wanted)), MAX_ID if upto is None else upto],
    )]


def _lines_matching(conn, expression: str, first: int, last: int, outside=()) -> set[int]:
    """The lines from ``first`` to ``last``, and those of ``outside``, that match ``expression``."""
    found = {
        rowid
        for (rowid,) in conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ?",
            [expression, first, last],
        )
    }
    for rowid in outside:
        if conn.execute("SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? AND rowid = ?", [expression, rowid]).fetchone():
            found.add(rowid)
    return found


def _call_lines(conn, session_id: str) -> list[tuple[int, int | None, int | None]]:
    """``(call line, result line, saved output line)`` message ids of the session's tool calls.

    The saved output is the message holding the whole of an output its log
    line holds only the start of (``output_uuid``): a tool entry's result.
    """
    return conn.execute(
        "SELECT cm.id, rm.id, om.id FROM tool_calls c JOIN messages cm ON cm.uuid = c.message_uuid "
        "LEFT JOIN tool_results r ON r.tool_use_id = c.id LEFT JOIN messages rm ON rm.uuid = r.message_uuid "
        "LEFT JOIN messages om ON om.uuid = r.output_uuid "
        "WHERE c.session_id = ?",
        [session_id],
    ).fetchall()


def _digest_matches(conn, fts, filters: Filters, position: dict) -> list[dict]:
    """Sessions whose digest holds every query term, newest first (``_updated``: ``UPDATED``
    as the first page read it; sessions stored since are left out).

    The digest's title and summary are matched as one document in
    ``session_digests_fts``, under the same tokenizer and stemming as
    transcript entries.
    """
    if fts.matches_nothing:
        return []
    where, params = filters.session_sql("s")
    updated, updated_params = _updated_sql(conn, position)
    return rows(
        conn,
        f"SELECT s.*, {updated} AS _updated FROM session_digests_fts f JOIN session_digests d ON d.id = f.rowid "
        f"JOIN sessions s ON s.id = d.session_id WHERE session_digests_fts MATCH ? AND {where} AND s.rowid <= ? "
        "ORDER BY _updated DESC, s.id",
        [*updated_params, fts.expression, *params, position["bound"]],
    )


# -- read --------------------------------------------------------------------


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
@reading_the_archive
def history_read(conn: sqlite3.Connection, options=None, **kwargs) -> dict:
    o = _options(options, kwargs, {"sessionId", "limit", "cursor"}, "read")
    session_id = o.get("sessionId")
    if not isinstance(session_id, str) or not 1 <= len(session_id) <= MAX_SESSION_ID:
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"sessionId must be a string of 1 to {MAX_SESSION_ID} characters")
    limit = search_core.check_limit(o.get("limit"), READ_DEFAULT_LIMIT, READ_MAX_LIMIT)
    session = search_core.session_row(conn, session_id)
    request = fingerprint({"sessionId": session_id})
    after, edge, upto = None, log_edge(conn), MAX_ID
    if o.get("cursor") is not None:
        # [seq, part, uuid, upto, rewrites]: the lines written after the first page are not read
        # (``snapshots.log_bound``; [seq, part, uuid] and [seq, part], of earlier versions, read them)
        after = decode_cursor(conn, o["cursor"], "history.read", request, None)
        if not (isinstance(after, list) and len(after) in (2, 3, 5) and all(is_count(v) for v in after[:2])
                and (len(after) == 2 or isinstance(after[2], str)) and all(is_count(v) for v in after[3:])):
            raise QueryError("SESSION_QUERY_INVALID_CURSOR", "the cursor is not one this service returned")
        if len(after) == 5:
            edge = after[3:]
            upto = log_bound(conn, edge)
        after = _current_place(conn, session_id, after[:3])
    entries, more = _page(conn, session_id, after, limit, READ_BUDGET_BYTES, upto)
    positions = [entry.pop("_position") for entry in entries]
    result = {"session": descriptor(conn, session), "entries": entries}
    if more:
        result["nextCursor"] = encode_cursor(conn, "history.read", request, None, [*positions[-1], *edge])
    return result


ENTRY_WHERE = (
    "m.session_id = ? AND m.visibility = 'visible' AND m.surface != 'log-only' AND m.is_meta = 0 "
    "AND m.is_compact_summary = 0 AND m.role IN ('user', 'assistant') "
    "AND COALESCE(m.content_type, '') NOT IN ('thinking', 'tool_result')"
)
LAST_ENTRY_BATCH = 20


def _entry_rows(conn, session_id: str, condition: str, params, order: str = "m.seq", limit: int = -1) -> list[dict]:
    """The messages that may hold transcript entries (``ENTRY_WHERE``) and meet ``condition``."""
    return rows(
        conn,
        f"SELECT m.id, m.uuid, m.seq, m.role, m.content_type, m.timestamp, m.text, m.meta_json FROM messages m "
        f"WHERE {ENTRY_WHERE} AND {condition} ORDER BY {order} LIMIT ?",
        [session_id, *params, limit],
    )


def _entries(conn, session_id: str, batch: list[dict], clock=None, results_read: bool = True):
    """``(row, index, entry)`` for every entry of the message rows in ``batch``.

    ``clock`` is the time an entry gets when its line has none; each
    timestamped row moves it on. Without ``results_read`` a tool entry's
    ``result`` is None, and ``_result_row`` names the ``tool_results`` row
    ``_read_result`` reads it from (an output can be megabytes: entries
    looked at for their ids or skipped by a page leave it unread).
    """
    tools = _tool_entries(conn, session_id, [row["uuid"] for row in batch], results_read)
    results = _line_results(conn, [row["uuid"] for row in batch if row["content_type"] == "mixed"])
    for row in batch:
        clock = to_ms(row["timestamp"]) or clock
        entries = _message_entries(row, tools.get(row["uuid"], []), clock, results.get(row["uuid"], []))
        for index, entry in enumerate(entries):
            yield row, index, entry


def _page(conn, session_id: str, after, limit: int, budget: int, upto: int = MAX_ID) -> tuple[list[dict], bool]:
    """Up to ``limit`` entries after the ``(seq, part)`` position within ``budget`` bytes,
    of the lines whose message id is at most ``upto``."""
    entries: list[dict] = []
    used = 0
    seq, part = after if after is not None else (0, -1)
    while True:
        batch = _entry_rows(conn, session_id, "m.seq >= ? AND m.id <= ?", [seq, upto], limit=limit + 1)
        if not batch:
            return entries, False
        clock = _clock_before(conn, session_id, batch[0]["seq"])
        for row, index, entry in _entries(conn, session_id, batch, clock, results_read=False):
            if (row["seq"], index) <= (seq, part):
                continue
            if len(entries) == limit:
                return entries, True
            _read_result(conn, entry)
            size = _json_size(entry, budget - used if entries else budget)
            if entries and used + size > budget:
                return entries, True
            used += size
            # (the line's uuid: an ingest that renumbers a session's lines keeps it; one too
            # long for a cursor by its digest)
            entry["_position"] = [row["seq"], index, _place_of(row["uuid"])]
            entries.append(entry)
        seq, part = batch[-1]["seq"], 1 << 30
        if len(batch) <= limit:
            return entries, False


def _current_place(conn, session_id: str, position: list) -> list[int]:
    """The ``(seq, part)`` a read cursor goes on after: the place of the line its last
    entry came from as that line stands now (``[seq, part, uuid]``, the uuid's digest for
    one longer than ``MAX_PLACE_UUID``; a cursor of two numbers, which no page returns
    any more, is taken as it is).

    An ingest may renumber a session's lines: a fork gives up its copy of a log
    that arrived meanwhile, an agent's lines move to a session of their own. Going on
    after the seq the cursor remembers would then skip entries (or end the transcript
    early, with no ``nextCursor``); when that line is gone, where the transcript read
    so far ends is unknown, so the cursor is stale.
    """
    if len(position) == 2:
        return position
    _, part, uuid = position
    found = conn.execute("SELECT seq FROM messages WHERE uuid = ? AND session_id = ?", [uuid, session_id]).fetchone()
    if found is None and uuid.startswith(LONG_UUID) and len(uuid) == len(LONG_UUID) + 64:
        found = next((  # (the digest of a long uuid: among the session's few long ones)
            (seq,) for seq, long in conn.execute(
                "SELECT seq, uuid FROM messages WHERE session_id = ? AND length(uuid) > ?", [session_id, MAX_PLACE_UUID])
            if _place_of(long) == uuid), None)
    if found is None:
        raise QueryError(
            "SESSION_QUERY_STALE_CURSOR",
            "lines of the transcript read before this cursor are gone since it was issued: "
            "read the session again without a cursor",
        )
    return [found[0], part]


def _read_result(conn, entry: dict) -> None:
    """The ``result`` of a tool entry ``_entries`` left unread."""
    if "_result_row" in entry:
        rowid = entry.pop("_result_row")
        if rowid is not None:
            found = conn.execute(f"SELECT {full_content_sql('r')} FROM tool_results r WHERE r.rowid = ?", [rowid]).fetchone()
            entry["result"] = found[0] if found else None


def _json_size(entry: dict, room: int) -> int:
    """The bytes of ``entry`` as JSON (UTF-8, not ASCII-escaped), or, when its text alone
    holds more characters than ``room``, some number above ``room`` (encoding a
    multi-MB output to learn that it does not fit took 140 ms)."""
    lower = sum(len(entry[key]) for key in ("content", "result") if isinstance(entry.get(key), str))
    if lower > room:
        return lower
    return len(json.dumps(entry, ensure_ascii=False).encode())


def _clock_before(conn, session_id: str, seq: int) -> int | None:
    """The time of the last timestamped entry line before ``seq``, else the session's start."""
    for (timestamp,) in conn.execute(
        f"SELECT m.timestamp FROM messages m WHERE {ENTRY_WHERE} AND m.seq < ? AND m.timestamp IS NOT NULL "
        "ORDER BY m.seq DESC",
        [session_id, seq],
    ):
        if to_ms(timestamp) is not None:
            return to_ms(timestamp)
    started = conn.execute("SELECT started_at FROM sessions WHERE id = ?", [session_id]).fetchone()
    return to_ms(started[0]) if started else None


def _message_entries(row: dict, tools: list[dict], clock, results: list[str] = ()) -> list[dict]:
    """A message's text entry (if any text is left) and one entry per tool call.

    ``results`` are the outputs of tool results the line also holds (text
    beside them: they are their calls' entries, not this one's).

    A call without a result is ``cancelled`` with a ``null`` result: the
    contract has no outcome for a call still running, and a result that
    arrives later is ingested into the same entry.
    """
    entries = []
    said = split_thinking(row["text"] or "", row["meta_json"])[1]  # reasoning is no entry
    content = _without_tool_calls(said, tools, results) if row["content_type"] != "tool_use" else ""
    if content:
        entries.append({
            "id": row["uuid"],
            "sourceIds": [row["uuid"]],
            "type": row["role"],
            "timestamp": clock or 0,
            "content": content,
        })
    for tool in tools:
        entries.append({
            "id": tool["id"],
            "sourceIds": list(dict.fromkeys(s for s in (row["uuid"], tool["result_message"]) if s)),  # (a result given on its call's line: once)
            "type": "tool",
            "timestamp": to_ms(tool["timestamp"]) or clock or 0,
            "name": tool["name"],
            "arguments": parse_json(tool["input_json"]),
            "result": tool["content"],
            "outcome": tool["outcome"] or "cancelled",
        })
        if "result_row" in tool:
            entries[-1]["_result_row"] = tool["result_row"]
    return entries


def _without_tool_calls(text: str, tools: list[dict], results=()) -> str:
    """A message's text without the searchable rendering of its tool calls,
    nor the outputs in ``results`` (a user line's tool results, given with text).

    A line holding both prose and tool calls (Claude) stores them as one
    text, its blocks' one line after another; the calls are tool entries of
    their own, so they are cut out (the sources render a call as its name and
    the strings of its input). Each call is cut once, where it stands: on
    lines of its own, the last calls last, so prose that names a tool or
    quotes its input keeps its words.
    """
    end = len(text)
    for tool in reversed(tools):
        arguments = parse_json(tool["input_json"])
        for rendered in (
            "\n".join([tool["name"], *strings_in(arguments)]),
            f"{tool['name']} {tool['input_json']}",
        ):
            at = _last_on_own_lines(text, rendered, end) if rendered else None
            if at is not None:
                before, after = text[:at], text[at + len(rendered):]
                text = (before[:-1] + after) if before.endswith("\n") else before + after.removeprefix("\n")
                end = len(before) - before.endswith("\n")
                break
    end = len(text)
    for output in reversed(results):
        at = _last_on_own_lines(text, output, end) if output else None
        if at is not None:
            before, after = text[:at], text[at + len(output):]
            text = (before[:-1] + after) if before.endswith("\n") else before + after.removeprefix("\n")
            end = len(before) - before.endswith("\n")
    return text.strip()


def _last_on_own_lines(text: str, piece: str, end: int) -> int | None:
    """Where the last ``piece`` ending by ``end`` that is whole lines of ``text`` starts."""
    at = text.rfind(piece, 0, end)
    while at != -1:
        stop = at + len(piece)
        if (at == 0 or text[at - 1] == "\n") and (stop == len(text) or text[stop] == "\n"):
            return at
        at = text.rfind(piece, 0, stop - 1)
    return None


def _line_results(conn, uuids: list[str]) -> dict[str, list[str]]:
    """The outputs of the tool results each of the lines ``uuids`` holds, in order."""
    found: dict[str, list[str]] = {}
    if uuids:
        for uuid, content in conn.execute(
            "SELECT message_uuid, content FROM tool_results WHERE message_uuid IN (SELECT value FROM json_each(?)) "
            "ORDER BY rowid",
            [json.dumps(uuids)],
        ):
            found.setdefault(uuid, []).append(content or "")
    return found


def _tool_entries(conn, session_id: str, uuids: list[str], results_read: bool = True) -> dict[str, list[dict]]:
    """The tool calls of the lines ``uuids``; without ``results_read``, each with its
    result's ``result_row`` instead of its ``content``."""
    marks = ", ".join("?" * len(uuids))
    found: dict[str, list[dict]] = {}
    content = f"{full_content_sql('r')} AS content" if results_read else "NULL AS content, r.rowid AS result_row"
    for row in rows(
        conn,
        f"""SELECT c.message_uuid, c.id, c.name, c.input_json, c.timestamp, {content}, r.outcome,
               r.message_uuid AS result_message
            FROM tool_calls c LEFT JOIN tool_results r ON r.tool_use_id = c.id
            WHERE c.session_id = ? AND c.message_uuid IN ({marks}) ORDER BY c.rowid""",
        [session_id, *uuids],
    ):
        found.setdefault(row["message_uuid"], []).append(row)
    return found


def _seq_of(conn, session_id: str, uuid: str | None) -> int | None:
    row = conn.execute(
        "SELECT seq FROM messages WHERE session_id = ? AND uuid = ?", [session_id, uuid]
    ).fetchone() if uuid else None
    return row[0] if row else None


def _last_entry_id(conn, session_id: str, up_to_seq: int | None = None) -> str | None:
    """The id of the last entry read returns at or before ``up_to_seq`` (None: of all)."""
    before = up_to_seq if up_to_seq is not None else 1 << 62
    while True:
        batch = _entry_rows(conn, session_id, "m.seq <= ?", [before], "m.seq DESC", LAST_ENTRY_BATCH)
        if not batch:
            return None
        entries = [entry for _, _, entry in _entries(conn, session_id, batch[::-1], results_read=False)]
        if entries:
            return entries[-1]["id"]
        before = batch[-1]["seq"] - 1


def _first_entry_id(conn, session_id: str) -> str | None:
    seq = 0
    while True:
        batch = _entry_rows(conn, session_id, "m.seq >= ?", [seq], limit=LAST_ENTRY_BATCH)
        for _, _, entry in _entries(conn, session_id, batch, results_read=False):
            return entry["id"]
        if len(batch) < LAST_ENTRY_BATCH:
            return None
        seq = batch[-1]["seq"] + 1


class History:
    """``history.search`` / ``history.read`` bound to one connection."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def search(self, options=None, **kwargs) -> dict:
        return history_search(self.conn, options, **kwargs)

    def read(self, options=None, **kwargs) -> dict:
        return history_read(self.conn, options, **kwargs)
