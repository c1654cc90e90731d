"""The session-query contract (``ctx.sessionQuery``) over the archive.

    sq = SessionQuery(conn)             # conn: a read connection
    sq.list_sessions()                  / sq.listSessions()
    sq.read_session(id)                 / sq.readSession(id)
    sq.filter_sessions(filters)         / sq.filterSessions(filters)
    sq.read_title(id)                   / sq.readTitle(id)
    sq.read_title_snapshot(id)          / sq.readTitleSnapshot(id)
    sq.read_title_snapshots(ids)        / sq.readTitleSnapshots(ids)
    sq.list_events(id)                  / sq.listEvents(id)
    sq.filter_events(id, filters)       / sq.filterEvents(id, filters)
    sq.read_surface(id)                 / sq.readSurface(id)
    sq.trace_session(id)                / sq.traceSession(id)
    sq.trace_event(request)             / sq.traceEvent(request)
    sq.read_event(request)              / sq.readEvent(request)
    sq.search_sessions(request)         / sq.searchSessions(request)
    sq.search_events(request)           / sq.searchEvents(request)

Results are plain dicts with the contract's camelCase keys. Every method
accepts ``signal=`` (anything with a true ``aborted`` attribute, or a set
``threading.Event``, cancels with ``SESSION_QUERY_ABORTED``).

How the archive maps onto the contract:

- A *session* is a ``sessions`` row. ``SessionHeader`` is ``{version: 1, id,
  createdAt, cwd?, parentSession?}`` plus ``source`` and, when the session
  has them, ``relationship`` (subagent, workflow, fork, continuation, import, remote)
  and ``agentPreset`` (the agent type). ``createdAt`` is the session's start
  (``sessions.started_at``: its earliest message time, or an earlier start
  its log records) in epoch ms; 0 for a session whose log has no time at all.
- ``live``: the session's source log file still exists; ``persisted``:
  always true, as this archive keeps every session it stored, also once its
  file is gone. The ``availability`` filter's words match those flags.
- An *event* is a ``messages`` row, ``seq`` its position in the session;
  ``type`` is described in query/events.py; ``time`` is epoch ms (a line
  without a usable timestamp has the time of the nearest event before it,
  else after it, else the session's ``createdAt``); ``surface`` is the stored one:
  ``shadowed`` for context a compaction replaced and for branches a rewind
  abandoned, ``log-only`` for structural lines.
- Every event an answer names carries its ``id``, the message's uuid (the
  log line's own, else its session and byte offset): ``SessionEvent.id``,
  and as an extension on event records (``listEvents``, ``filterEvents``,
  ``traceEvent``'s target), search hits, ``traceEvent``'s links (each list
  of seqs with a list of the same events' ids: ``replacementChainIds``,
  ``replacedEventIds``, ``sourceEventIds``, ``derivedEventIds``, and
  ``replacedById``), titles (``eventId``, ``messageIds``) and
  ``readSurface`` (``capturedThroughId``). ``readEvent`` / ``traceEvent``
  take it (``id``, an extension), and ``read_session_page`` goes on after
  it (``after_id``). A seq is a place in the log as it is
  now, and an ingest may renumber a session; an id stays when a log grows
  or is read again, names the same event wherever it now is, or is
  ``SESSION_QUERY_EVENT_NOT_FOUND``. The contract's seq fields keep their
  positional meaning.
- ``traceEvent``: ``replacedBy`` is, for a shadowed event, the event named
  by the row's ``replaced_by`` (the compaction summary, or the prompt that
  replaced a rewound branch); ``replacementChain`` follows those links while
  they lead through shadowed events; ``replacedEventSeqs`` are the shadowed
  events whose ``replaced_by`` names the target (log-only rows are never
  replaced); ``sourceEventSeqs`` are the tool calls a tool result answers, and
  ``derivedEventSeqs`` the results that answer a tool call.
- Titles: ``{title, source, kind, messageSeqs, messageIds, eventSeq, eventId,
  updatedAt}`` where
  ``kind`` is the archive's title kind (custom, ai, name, index, summary,
  first_prompt, subagent) and ``source`` the contract's word for it
  (``user`` for custom titles, ``fallback`` for the first prompt or a
  subagent description, ``provider`` otherwise). Title lines are not events:
  ``eventSeq`` is the first prompt's seq, else the last event at or before
  the title's time.
- Search queries are data, never FTS5 syntax (``mode`` may be ``terms``,
  the default, or ``phrase``); every surface is searched, but only events
  with semantic text (query/events.py): a structural line's text is found
  neither by search nor by a ``text`` scan, though other faces search it;
  hits carry ``snippet`` (plain text) and ``snippetMatches`` (``[start, end)``
  code-point offsets into it).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager

import orjson

from . import search as search_core
from .errors import LONE_SURROGATE, QueryError
from .events import (
    DERIVED_TYPES, SPEAKERS, event_record, event_select, full_event, kind_subtypes, near_subtypes, near_types,
    semantic_text, unknown_kind, unknown_message_type, unknown_subtype,
)
from .filters import EVENT_KINDS, Filters, is_int64
from .search import rows
from .text import literal_pattern, parse_json, to_ms

HEADER_VERSION = 1
READ_WINDOW_MAX = 50
# readSession over HTTP: the most events one whole answer holds (built and encoded at about 40 µs an
# event, so well within a second), and the largest page of the paged read.
READ_SESSION_MAX = 10_000
READ_PAGE_MAX = 1000
# listEvents over HTTP: the most records one answer holds (about 7 µs a record).
LIST_EVENTS_MAX = 50_000
TITLE_SOURCES = {
    "custom": "user",
    "first_prompt": "fallback",
    "subagent": "fallback",
}
NEWEST_FIRST = "ORDER BY (s.started_at IS NULL), s.started_at DESC, s.id"
OLDEST_FIRST = "ORDER BY (s.started_at IS NULL), s.started_at, s.id"


def header(row: dict) -> dict:
    result = {
        "version": HEADER_VERSION,
        "id": row["id"],
        # 0 for a log without a time: the oldest, as newest-first lists and created-at filters have it
        "createdAt": to_ms(row["started_at"]) or 0,
    }
    cwd = row["cwd"] or row["project_path"]
    if cwd:
        result["cwd"] = cwd
    if row["parent_session_id"]:
        result["parentSession"] = row["parent_session_id"]
    result["source"] = row["source"]
    if row["relationship"]:
        result["relationship"] = row["relationship"]
    if row["agent_type"]:
        result["agentPreset"] = row["agent_type"]
    return result


def record(row: dict) -> dict:
    """A ``SessionRecord``.

    ``live`` is the contract's "the id currently exists in ``ctx.sessions``":
    the agent's own session store, which for these agents is the log file;
    while it is on disk the agent can list, resume or extend the session.
    ``persisted`` is "the active persistence backend currently materializes
    the id": this archive is that backend, and a session it lists is a row it
    holds, its events kept after the log file is deleted.
    """
    return {"header": header(row), "live": row["availability"] == "live", "persisted": True}


def _cancelled(signal) -> bool:
    if signal is None:
        return False
    if isinstance(signal, threading.Event):
        return signal.is_set()
    if not hasattr(signal, "aborted"):  # most often options given to a method that takes none
        raise QueryError(
            "SESSION_QUERY_INVALID_QUERY",
            f"signal must be a threading.Event or have an 'aborted' attribute, not {type(signal).__name__}",
        )
    return bool(signal.aborted)


# The contract's request keys, and mode (terms or phrase), an extension.
SEARCH_KEYS = {
    "searchSessions": frozenset({"query", "sessionFilters", "eventFilters", "limit", "cursor", "mode"}),
    "searchEvents": frozenset({"sessionId", "query", "filters", "limit", "cursor", "mode"}),
}


class SessionQuery:
    """The contract's service over one read connection."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        search: bool = True,
        read_window_max: int = READ_WINDOW_MAX,
        default_limit: int = search_core.DEFAULT_LIMIT,
        max_limit: int = search_core.MAX_LIMIT,
    ):
        for name, value in (("read_window_max", read_window_max), ("default_limit", default_limit), ("max_limit", max_limit)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise QueryError("SESSION_QUERY_INVALID_CONFIG", f"{name} must be a positive integer")
        if default_limit > max_limit:
            raise QueryError("SESSION_QUERY_INVALID_CONFIG", "default_limit is larger than max_limit")
        if max_limit > search_core.MAX_LIMIT:
            raise QueryError("SESSION_QUERY_INVALID_CONFIG", f"max_limit is at most {search_core.MAX_LIMIT}, the search's page")
        self.conn = conn
        self.search_enabled = search
        self.read_window_max = read_window_max
        self.default_limit = default_limit
        self.max_limit = max_limit

    # -- plumbing ----------------------------------------------------------

    @contextmanager
    def _reading(self, signal=None, index: bool = False):
        """Cancellation before the work; SQLite failures as contract codes."""
        if _cancelled(signal):
            raise QueryError("SESSION_QUERY_ABORTED", "the operation was cancelled")
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise QueryError("SESSION_QUERY_ABORTED", "the operation was interrupted") from exc
            code = "SESSION_QUERY_INDEX_FAILED" if index else "SESSION_QUERY_PERSISTENCE_FAILED"
            raise QueryError(code, f"reading the archive failed: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            code = "SESSION_QUERY_INDEX_FAILED" if index else "SESSION_QUERY_PERSISTENCE_FAILED"
            raise QueryError(code, f"reading the archive failed: {exc}") from exc
        except UnicodeEncodeError:  # stored text is UTF-8: a string of the request
            raise QueryError("SESSION_QUERY_INVALID_QUERY", f"the request {LONE_SURROGATE}") from None

    def _session(self, session_id) -> dict:
        return search_core.session_row(self.conn, session_id)

    def _events(self, session_id: str, where: str = "1", params=(), text: bool = False) -> list[dict]:
        return rows(
            self.conn,
            f"SELECT {event_select('m', text=text)} FROM messages m "
            f"WHERE m.session_id = ? AND {where} ORDER BY m.seq",
            [session_id, *params],
        )

    def _target(self, session_id: str, seq: int | None, event_id: str | None, text: bool = False) -> list[dict]:
        """The event a request names: by ``id`` when it gives one (an event keeps its id when an
        ingest renumbers its session, its seq does not), else by ``seq``."""
        if event_id is None:
            found = self._events(session_id, "m.seq = ?", [seq], text=text)
            if not found:
                raise QueryError("SESSION_QUERY_EVENT_NOT_FOUND", f"session {session_id!r} has no event {seq}")
            return found
        found = self._events(session_id, "m.uuid = ?", [event_id], text=text)
        if not found:
            elsewhere = self.conn.execute("SELECT session_id FROM messages WHERE uuid = ?", [event_id]).fetchone()
            where = f": it is an event of session {elsewhere[0]!r}" if elsewhere else ""
            raise QueryError("SESSION_QUERY_EVENT_NOT_FOUND", f"session {session_id!r} has no event {event_id!r}{where}")
        return found

    # -- sessions ----------------------------------------------------------

    def list_sessions(self, signal=None) -> list[dict]:
        return self.filter_sessions([], signal)

    def filter_sessions(self, filters, signal=None) -> list[dict]:
        with self._reading(signal):
            where, params = Filters.from_contract(session_filters=filters).session_sql("s")
            found = rows(self.conn, f"SELECT s.* FROM sessions s WHERE {where} {NEWEST_FIRST}", params)
            return [record(row) for row in found]

    def read_session(self, session_id, signal=None) -> dict:
        with self._reading(signal):
            session = self._session(session_id)
            events = self._events(session_id, text=True)
            _check_replay(session, events, self.conn)
            tools = _tools_by_message(self.conn, session_id)
            return {
                "session": header(session),
                "events": [full_event(row, tools.get(row["uuid"])) for row in events],
            }

    def event_count(self, session_id, filters=None, signal=None) -> int:
        """How many events the session holds (``SESSION_QUERY_SESSION_NOT_FOUND`` for none), or
        with ``filters`` how many meet their metadata clauses (a text scan is not counted)."""
        with self._reading(signal):
            self._session(session_id)
            _, metadata = _split_text_clauses(filters or [])
            where, params = _known_types(self.conn, Filters.from_contract(event_filters=metadata)).event_sql("m")
            return self.conn.execute(
                f"SELECT COUNT(*) FROM messages m WHERE m.session_id = ? AND {where}", [session_id, *params]
            ).fetchone()[0]

    def read_session_page(self, session_id, limit: int, cursor=None, signal=None, after_id=None) -> dict:
        """``read_session`` a page at a time (an extension): the header and at most ``limit``
        events in seq order, after the last event of the page whose ``nextCursor`` is
        ``cursor``; ``nextCursor`` while events remain. The pages of one session, in turn,
        are its complete log. The session is replay-checked whole for every page. A cursor
        whose event the session no longer holds (an ingest moved or removed it) is
        ``SESSION_QUERY_STALE_CURSOR``: read the session again from its start.

        ``after_id`` (instead of ``cursor``) is an event's id: the page goes on after that event
        wherever it now stands (``readSurface``'s ``capturedThroughId`` reads what the log
        gained since), or is ``SESSION_QUERY_EVENT_NOT_FOUND`` once the session no longer holds it."""
        from .cursors import decode_cursor, encode_cursor, fingerprint, is_count
        from .snapshots import MAX_ID, log_bound, log_edge

        if type(limit) is not int or not 1 <= limit <= READ_PAGE_MAX:
            raise QueryError("SESSION_QUERY_INVALID_LIMIT", f"limit is an integer from 1 to {READ_PAGE_MAX}")
        if after_id is not None and (cursor is not None or not isinstance(after_id, str) or not after_id):
            raise QueryError("SESSION_QUERY_INVALID_CURSOR", "after_id is an event id, given instead of a cursor")
        with self._reading(signal):
            session = self._session(session_id)
            request = fingerprint({"sessionId": session_id, "limit": limit})
            start, edge, upto = 0, log_edge(self.conn), MAX_ID
            if cursor is not None:
                # [uuid, upto, rewrites]: the events written after the first page are another
                # observation's (``snapshots.log_bound``; [uuid], of earlier versions, reads them)
                position = decode_cursor(self.conn, cursor, "readSession", request, None)
                if not (isinstance(position, list) and len(position) in (1, 3) and isinstance(position[0], str)
                        and all(is_count(v) for v in position[1:])):
                    raise QueryError("SESSION_QUERY_INVALID_CURSOR", "the cursor is not one this service returned")
                if len(position) == 3:
                    edge = position[1:]
                    upto = log_bound(self.conn, edge)
                found = self.conn.execute(
                    "SELECT seq FROM messages WHERE uuid = ? AND session_id = ?", [position[0], session_id]).fetchone()
                if found is None:
                    raise QueryError("SESSION_QUERY_STALE_CURSOR",
                                     f"session {session_id!r} no longer holds the event the cursor goes on after: "
                                     "read the session again from its start")
                start = found[0]
            elif after_id is not None:
                start = self._target(session_id, None, after_id)[0]["seq"]
            _check_whole_log(session, self.conn)
            events = rows(
                self.conn,
                f"SELECT {event_select('m', text=True)} FROM messages m WHERE m.session_id = ? AND m.seq > ? "
                "AND m.id <= ? ORDER BY m.seq LIMIT ?",
                [session_id, start, upto, limit + 1],
            )
            more = len(events) > limit
            events = events[:limit]
            tools = _tools_by_message(self.conn, session_id, [row["uuid"] for row in events])
            result = {
                "session": header(session),
                "events": [full_event(row, tools.get(row["uuid"])) for row in events],
            }
            if more:
                result["nextCursor"] = encode_cursor(self.conn, "readSession", request, None, [events[-1]["uuid"], *edge])
            return result

    # -- titles ------------------------------------------------------------

    def read_title(self, session_id, signal=None) -> dict | None:
        return self.read_title_snapshot(session_id, signal).get("title")

    def read_title_snapshot(self, session_id, signal=None) -> dict:
        with self._reading(signal):
            session = self._session(session_id)
            result = {"session": header(session)}
            title = _title_snapshot(self.conn, session)
            if title is not None:
                result["title"] = title
            return result

    def read_title_snapshots(self, session_ids, signal=None) -> list[dict]:
        if isinstance(session_ids, str) or not hasattr(session_ids, "__iter__"):
            raise QueryError("SESSION_QUERY_INVALID_FILTER", "session ids must be an array")
        session_ids = list(session_ids)
        if not all(isinstance(session_id, str) for session_id in session_ids):
            raise QueryError("SESSION_QUERY_INVALID_FILTER", "session ids must be strings")
        if _cancelled(signal):  # cancellation rejects the whole operation, an empty one too
            raise QueryError("SESSION_QUERY_ABORTED", "the operation was cancelled")
        results = []
        for session_id in dict.fromkeys(session_ids):
            if _cancelled(signal):
                raise QueryError("SESSION_QUERY_ABORTED", "the operation was cancelled")
            try:
                value = self.read_title_snapshot(session_id)
            except QueryError as exc:
                if exc.code == "SESSION_QUERY_ABORTED":  # interrupted (a time limit): cancellation, not one id's failure
                    raise
                results.append({"sessionId": session_id, "status": "rejected", "reason": exc.as_dict()["error"]})
            else:
                results.append({"sessionId": session_id, "status": "fulfilled", "value": value})
        return results

    # -- events ------------------------------------------------------------

    def list_events(self, session_id, signal=None) -> list[dict]:
        with self._reading(signal):
            self._session(session_id)
            return [event_record(row) for row in self._events(session_id)]

    def filter_events(self, session_id, filters, signal=None) -> list[dict]:
        with self._reading(signal):
            self._session(session_id)
            scans, metadata = _split_text_clauses(filters)
            where, params = _known_types(self.conn, Filters.from_contract(event_filters=metadata)).event_sql("m")
            documents = []
            for row in self._events(session_id, where, params, text=True):
                text = semantic_text(row)
                if all(pattern.search(text) for pattern in scans):
                    documents.append({**event_record(row), "text": text})
            return documents

    def read_surface(self, session_id, signal=None) -> dict:
        with self._reading(signal):
            session = self._session(session_id)
            events = self._events(session_id, text=True)
            _check_surface(events)
            tools = _tools_by_message(self.conn, session_id)
            return {
                "session": header(session),
                "capturedThroughSeq": events[-1]["seq"] if events else None,
                "capturedThroughId": events[-1]["uuid"] if events else None,
                "events": [full_event(row, tools.get(row["uuid"])) for row in _model_order(self.conn, session_id, events)],
            }

    def read_event(self, request, signal=None) -> dict:
        with self._reading(signal):
            session_id, seq, event_id = _event_request(request, "readEvent", READ_EVENT_KEYS)
            before = _window_size(request, "before", self.read_window_max)
            after = _window_size(request, "after", self.read_window_max)
            session = self._session(session_id)
            target = self._target(session_id, seq, event_id, text=True)
            seq = target[0]["seq"]
            earlier = rows(
                self.conn,
                f"SELECT {event_select('m', text=True)} FROM messages m WHERE m.session_id = ? AND m.seq < ? "
                "ORDER BY m.seq DESC LIMIT ?",
                [session_id, seq, before],
            )
            later = rows(
                self.conn,
                f"SELECT {event_select('m', text=True)} FROM messages m WHERE m.session_id = ? AND m.seq > ? "
                "ORDER BY m.seq LIMIT ?",
                [session_id, seq, after],
            )
            window = [*reversed(earlier), target[0], *later]
            tools = _tools_by_message(self.conn, session_id, [row["uuid"] for row in window])
            events = [full_event(row, tools.get(row["uuid"])) for row in window]
            return {
                "session": header(session),
                "target": events[len(earlier)],
                "events": events,
                "startSeq": window[0]["seq"],
                "endSeq": window[-1]["seq"],
            }

    # -- lineage -----------------------------------------------------------

    def trace_session(self, session_id, signal=None) -> dict:
        with self._reading(signal):
            target = self._session(session_id)
            ancestors = []
            seen = {target["id"]}
            parent_id = target["parent_session_id"]
            unresolved = None
            while parent_id:
                if parent_id in seen:
                    raise QueryError(
                        "SESSION_QUERY_INVALID_LINEAGE", f"the parents of {session_id!r} form a cycle through {parent_id!r}"
                    )
                seen.add(parent_id)
                found = rows(self.conn, "SELECT * FROM sessions WHERE id = ?", [parent_id])
                if not found:
                    unresolved = parent_id
                    break
                ancestors.append(found[0])
                parent_id = found[0]["parent_session_id"]
            trace = {
                "target": record(target),
                "ancestors": [record(row) for row in ancestors],
                "descendants": self._descendants(target["id"], {target["id"]}),
            }
            if unresolved is None:
                trace.update({"complete": True, "root": record(ancestors[-1] if ancestors else target)})
            else:
                trace.update({"complete": False, "unresolvedParentId": unresolved})
            return trace

    def _descendants(self, session_id: str, seen: set) -> list[dict]:
        """The descendant forest below ``session_id``, built without recursion: a lineage
        may be deeper than Python recurses (a session continued a thousand times)."""
        forest: list[dict] = []
        waiting = [(session_id, forest)]  # a session whose children are still to be read, and where they go
        while waiting:
            parent_id, nodes = waiting.pop()
            children = rows(
                self.conn,
                f"SELECT s.* FROM sessions s WHERE s.parent_session_id = ? {OLDEST_FIRST}",
                [parent_id],
            )
            for child in children:
                if child["id"] in seen:
                    raise QueryError("SESSION_QUERY_INVALID_LINEAGE", f"session {child['id']!r} is its own descendant")
                seen.add(child["id"])
                node = {"session": record(child), "descendants": []}
                nodes.append(node)
                waiting.append((child["id"], node["descendants"]))
        return forest

    def trace_event(self, request, signal=None) -> dict:
        with self._reading(signal):
            session_id, seq, event_id = _event_request(request, "traceEvent", TRACE_EVENT_KEYS)
            session = self._session(session_id)
            # Only the events that name a replacement, and those they name, are
            # read (all of a 300,000-event session took 3-8 s and 500 MB).
            linked = _replacement_links(self.conn, session_id)
            _check_surface(linked)
            by_uuid = {row["uuid"]: row for row in linked}
            target = self._target(session_id, seq, event_id)[0]
            chain = []
            current = _replacer(target, by_uuid)
            while current is not None:
                chain.append((current["seq"], current["uuid"]))
                current = _replacer(current, by_uuid)
            replaced = [
                (row["seq"], row["uuid"])
                for row in linked if row["surface"] == "shadowed" and row["replaced_by"] == target["uuid"]
            ]
            sources, derived = _tool_links(self.conn, session_id, target["uuid"], target["seq"])
            trace = {"session": header(session), "target": event_record(target)}
            for (seqs, ids), links in zip(TRACE_LINKS, (chain, replaced, sources, derived)):
                trace[seqs] = [seq for seq, _ in links]
                trace[ids] = [uuid for _, uuid in links]
            if chain:
                trace["replacedBy"], trace["replacedById"] = chain[0]
            return trace

    # -- search ------------------------------------------------------------

    def _search_options(self, request, scope: str) -> dict:
        if not self.search_enabled:
            raise QueryError("SESSION_QUERY_SEARCH_DISABLED", "full-text search is disabled for this service")
        if not isinstance(request, dict):
            raise QueryError("SESSION_QUERY_INVALID_QUERY", f"{scope} needs a request object")
        unknown = sorted(map(str, set(request) - SEARCH_KEYS[scope]))
        if unknown:
            raise QueryError(
                "SESSION_QUERY_INVALID_QUERY",
                f"{scope} has no {', '.join(unknown)}; its request keys are {', '.join(sorted(SEARCH_KEYS[scope]))}",
            )
        query = request.get("query")
        if not isinstance(query, str):
            raise QueryError("SESSION_QUERY_INVALID_QUERY", "query must be a string")
        mode = request.get("mode", "terms")
        if mode not in ("terms", "phrase"):
            raise QueryError("SESSION_QUERY_INVALID_QUERY", "mode must be terms or phrase: queries are data, never FTS5 syntax")
        limit = request.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= self.max_limit):
            raise QueryError("SESSION_QUERY_INVALID_LIMIT", f"limit must be an integer from 1 to {self.max_limit}")
        return {"query": query, "mode": mode, "limit": limit or self.default_limit, "cursor": request.get("cursor")}

    def search_sessions(self, request, signal=None) -> dict:
        options = self._search_options(request, "searchSessions")
        filters = Filters.from_contract(request.get("sessionFilters"), request.get("eventFilters"), semantic_only=True)
        with self._reading(signal, index=True):
            _known_types(self.conn, filters)
            search_core.check_index_complete(self.conn)
            page = search_core.search_sessions(self.conn, **options, snippets=1, filters=filters)
            result = {
                "items": [
                    {**record(item["session"]), "bestMatch": _hit(item["best"])} for item in page["items"]
                ]
            }
            if page["next_cursor"]:
                result["nextCursor"] = page["next_cursor"]
            return result

    def search_events(self, request, signal=None) -> dict:
        options = self._search_options(request, "searchEvents")
        session_id = request.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise QueryError("SESSION_QUERY_INVALID_QUERY", "searchEvents needs sessionId, a session id")
        filters = Filters.from_contract(event_filters=request.get("filters"), semantic_only=True)
        with self._reading(signal, index=True):
            _known_types(self.conn, filters)
            search_core.check_index_complete(self.conn)
            page = search_core.search_events(self.conn, session_id, **options, filters=filters)
            result = {"session": header(page["session"]), "items": [_hit(hit) for hit in page["items"]]}
            if page["next_cursor"]:
                result["nextCursor"] = page["next_cursor"]
            return result

    # camelCase names of the contract
    listSessions = list_sessions
    readSession = read_session
    filterSessions = filter_sessions
    readTitle = read_title
    readTitleSnapshot = read_title_snapshot
    readTitleSnapshots = read_title_snapshots
    listEvents = list_events
    filterEvents = filter_events
    readSurface = read_surface
    traceSession = trace_session
    traceEvent = trace_event
    readEvent = read_event
    searchSessions = search_sessions
    searchEvents = search_events


# -- helpers -----------------------------------------------------------------


def _hit(hit: dict) -> dict:
    return {
        "sessionId": hit["session_id"],
        "seq": hit["seq"],
        "id": hit["uuid"],
        "type": hit["type"],
        "time": hit["time"],
        "surface": hit["surface"],
        "snippet": hit["snippet"]["text"],
        "snippetMatches": hit["snippet"]["matches"],
    }


def _replacer(row: dict, by_uuid: dict) -> dict | None:
    """The event that replaced ``row`` on the surface: only a shadowed row was.

    A log-only row a rewind took back keeps the stored link to what took it
    back, but it was never surface, so nothing replaced it there.
    """
    return by_uuid.get(row["replaced_by"]) if row["surface"] == "shadowed" else None


# traceEvent's lists of seqs, each with its list of the same events' ids (an extension)
TRACE_LINKS = (("replacementChain", "replacementChainIds"), ("replacedEventSeqs", "replacedEventIds"),
               ("sourceEventSeqs", "sourceEventIds"), ("derivedEventSeqs", "derivedEventIds"))

# ``id`` (an extension): the event's id (``SessionEvent.id``, a search hit's ``id``). An ingest
# may renumber a session (lines moved to another session, or read before those it held), so a
# seq names a place in the log as it is now; an id names the same event after it, wherever it
# now stands, or is SESSION_QUERY_EVENT_NOT_FOUND once the session no longer holds it. Given
# with a seq, the id decides: the seq is where the event was when the reference was made.
TRACE_EVENT_KEYS = frozenset({"sessionId", "seq", "id"})
READ_EVENT_KEYS = TRACE_EVENT_KEYS | {"before", "after"}


def _event_request(request, scope: str, keys: frozenset) -> tuple[str, int | None, str | None]:
    if not isinstance(request, dict):
        raise QueryError("SESSION_QUERY_INVALID_WINDOW", "the request must be an object with sessionId and seq")
    unknown = sorted(map(str, set(request) - keys))
    if unknown:
        raise QueryError(
            "SESSION_QUERY_INVALID_WINDOW", f"{scope} has no {', '.join(unknown)}; its request keys are {', '.join(sorted(keys))}"
        )
    if not isinstance(request.get("sessionId"), str):
        raise QueryError("SESSION_QUERY_INVALID_WINDOW", "sessionId must be a string")
    event_id = request.get("id")
    if event_id is not None and (not isinstance(event_id, str) or not event_id):
        raise QueryError("SESSION_QUERY_INVALID_WINDOW", "id must be an event id, a non-empty string")
    seq = request.get("seq")
    if event_id is not None and seq is None:
        return request.get("sessionId"), None, event_id
    if isinstance(seq, bool) or not isinstance(seq, int) or not is_int64(seq):
        raise QueryError("SESSION_QUERY_INVALID_WINDOW", "seq must be a 64-bit integer")
    return request.get("sessionId"), seq, event_id


def _window_size(request: dict, name: str, maximum: int) -> int:
    value = request.get(name, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise QueryError("SESSION_QUERY_INVALID_WINDOW", f"{name} must be an integer from 0 to {maximum}")
    return value


def _known_types(conn, filters: Filters) -> Filters:
    """``filters``, once every ``type`` value is one an event can have, else
    SESSION_QUERY_INVALID_FILTER rather than a filter matching nothing and saying nothing
    of it: a message of a role no event has (``usr/message``, ``User/message``:
    ``events.unknown_message_type``) names the speakers; a type of a kind no event has
    (``tool/cal``, ``summry``: ``events.unknown_kind``) names the types there are; a subtype
    no event of its kind has (``system/compact_boundry``: ``events.unknown_subtype``) names
    the kind's subtypes when they are the parsers' own. Each offers the types it may have meant."""
    for value in filters.types or ():
        role = unknown_message_type(conn, value)
        if role is not None:
            raise QueryError(
                "SESSION_QUERY_INVALID_FILTER",
                f"type: {value!r} is the message of a role no event has; the roles are {', '.join(SPEAKERS)}"
                + (f": did you mean {role.casefold()}/message?" if role.casefold() in SPEAKERS else ""),
            )
        if unknown_kind(conn, value):
            near = near_types(conn, value)
            raise QueryError(
                "SESSION_QUERY_INVALID_FILTER",
                f"type: {value!r} is of a kind no event has; the types are {', '.join(DERIVED_TYPES)}, "
                "<role>/message, and a log line's <kind>/<subtype> or <kind> of a kind the archive holds"
                + (f": did you mean {' or '.join(near)}?" if near else ""),
            )
        unknown = unknown_subtype(conn, value)
        if unknown is not None:
            kind, subtype = unknown
            named, open_ = kind_subtypes(kind)
            near = near_subtypes(conn, kind, subtype)  # (or a type of a conversation event it spells nearly)
            near = list(dict.fromkeys(
                [*near, *(t for t in near_types(conn, value) if t in DERIVED_TYPES or t.endswith("/message"))]))[:2]
            raise QueryError(
                "SESSION_QUERY_INVALID_FILTER",
                f"type: {value!r} is of a subtype no {kind} event has; "
                + ("its subtypes are those its stored log lines have" if open_
                   else f"its subtypes are {', '.join(sorted(named))}" if named else "it has no subtype")
                + (f": did you mean {' or '.join(near)}?" if near else ""),
            )
    return filters


def _split_text_clauses(filters):
    if filters is None:
        return [], []
    if not isinstance(filters, (list, tuple)):
        raise QueryError("SESSION_QUERY_INVALID_FILTER", "filters must be an array of clauses")
    scans, metadata = [], []
    for clause in filters:
        if isinstance(clause, dict) and clause.get("kind") == "text":
            text = clause.get("text")
            if not isinstance(text, str) or not text.strip():
                raise QueryError("SESSION_QUERY_INVALID_FILTER", "text: a non-blank string is required")
            if set(clause) != {"kind", "text"}:  # as every other clause refuses keys it does not have
                unknown = ", ".join(sorted(map(str, set(clause) - {"kind", "text"})))
                raise QueryError("SESSION_QUERY_INVALID_FILTER", f"filters: a text clause has no {unknown}; its keys are kind, text")
            scans.append(literal_pattern(text))
        else:
            if isinstance(clause, dict) and clause.get("kind") not in EVENT_KINDS:  # (text is one of them here)
                raise QueryError(
                    "SESSION_QUERY_INVALID_FILTER",
                    f"filters: unknown kind {clause.get('kind')!r}; use one of {', '.join((*EVENT_KINDS, 'text'))}",
                )
            metadata.append(clause)
    return scans, metadata


def _check_replay(session: dict, events: list[dict], conn) -> None:
    seqs = [row["seq"] for row in events]
    if any(seq < 1 for seq in seqs) or len(set(seqs)) != len(seqs):
        raise QueryError(
            "SESSION_QUERY_CORRUPT_SESSION", f"session {session['id']!r} has repeated or invalid event seqs"
        )
    sources = {row[0] for row in conn.execute("SELECT DISTINCT source FROM messages WHERE session_id = ?", [session["id"]])}
    if sources - {session["source"]}:
        raise QueryError(
            "SESSION_QUERY_SOURCE_CONFLICT",
            f"session {session['id']!r} is recorded as {session['source']} but has events from {', '.join(sorted(sources))}",
        )


def _check_whole_log(session: dict, conn) -> None:
    """``_check_replay`` in SQL, without reading the events: seqs positive and never repeated,
    and every event of the session's source."""
    bad = conn.execute(
        "SELECT MIN(seq) < 1 OR COUNT(*) != COUNT(DISTINCT seq) FROM messages WHERE session_id = ?", [session["id"]]
    ).fetchone()[0]
    if bad:
        raise QueryError(
            "SESSION_QUERY_CORRUPT_SESSION", f"session {session['id']!r} has repeated or invalid event seqs"
        )
    _check_replay(session, [], conn)


def _model_order(conn, session_id: str, events: list[dict]) -> list[dict]:
    """The current events of ``events`` (all of a session's, by seq) in model-history order.

    That is log order, except after a compaction that kept some events
    verbatim (Claude Code's preserved segment, the messages a Gemini history
    sync kept): the model saw those after the summary that replaced the rest,
    and after whatever the summary's own line wrote with it.
    """
    kept_at = {
        seq: set(orjson.loads(meta).get("preserved_uuids") or ())
        for seq, meta in conn.execute(
            "SELECT seq, meta_json FROM messages WHERE session_id = ? AND subtype = 'compact_boundary' "
            "AND meta_json IS NOT NULL",
            [session_id],
        )
    }
    order = [row for row in events if row["surface"] == "current"]
    if not any(kept_at.values()):
        return order
    line_of = {
        uuid: line for uuid, *line in conn.execute(
            "SELECT uuid, file_id, byte_offset FROM messages WHERE session_id = ?", [session_id]
        )
    }
    kept: set[str] = set()
    for row in events:
        if row["seq"] in kept_at:
            kept = kept_at[row["seq"]]
        elif row["is_compact_summary"] and kept:
            moved = [r for r in order if r["uuid"] in kept]
            rest = [r for r in order if r["uuid"] not in kept]
            same_line = [i for i, r in enumerate(rest) if line_of[r["uuid"]] == line_of[row["uuid"]]]
            if same_line:  # else the summary was replaced in turn, and a later one places them
                after = same_line[-1] + 1
                order = rest[:after] + moved + rest[after:]
            kept = set()
    return order


def _check_surface(events: list[dict]) -> None:
    by_uuid = {row["uuid"]: row for row in events}
    for row in events:
        link = row["replaced_by"]
        if link is None:
            continue
        if row["surface"] == "current" or link not in by_uuid:
            raise QueryError(
                "SESSION_QUERY_INVALID_SURFACE",
                f"event {row['seq']} is {row['surface']} but names {link!r} as its replacement",
            )
    # Each chain is walked once: a walk stops at an event whose chain was found
    # to end already (2,000 compactions each replacing the last summary made
    # every walk 2,000 steps long: quadratic).
    ends: set[str] = set()  # events whose chain of replacements ends
    for row in events:
        seen = {row["uuid"]}
        current = row
        while current["replaced_by"] is not None and current["uuid"] not in ends:
            current = by_uuid[current["replaced_by"]]
            if current["uuid"] in seen:
                raise QueryError("SESSION_QUERY_INVALID_SURFACE", f"event {row['seq']} is replaced in a cycle")
            seen.add(current["uuid"])
        ends |= seen


def _tools_by_message(conn, session_id: str, uuids=None) -> dict[str, dict]:
    """``{message uuid: {"toolCalls": [...], "toolResults": [...]}}`` for a session."""
    limit = ""
    params: list = [session_id]
    if uuids is not None:
        limit = f" AND message_uuid IN ({', '.join('?' * len(uuids))})"
        params += list(uuids)
    tools: dict[str, dict] = {}
    for row in conn.execute(
        f"SELECT message_uuid, id, name, input_json FROM tool_calls WHERE session_id = ?{limit} ORDER BY rowid",
        params,
    ):
        tools.setdefault(row[0], {}).setdefault("toolCalls", []).append(
            {"id": row[1], "name": row[2], "input": parse_json(row[3])}
        )
    for row in conn.execute(
        f"SELECT message_uuid, tool_use_id, outcome, is_error, exit_code FROM tool_results "
        f"WHERE session_id = ?{limit} ORDER BY id",
        params,
    ):
        tools.setdefault(row[0], {}).setdefault("toolResults", []).append(
            {"toolUseId": row[1], "outcome": row[2], "isError": bool(row[3]), "exitCode": row[4]}
        )
    return tools


def _tool_links(conn, session_id: str, uuid: str, seq: int) -> tuple[list[tuple], list[tuple]]:
    """(seq, id) of the calls a result answers, and of the results answering a call,
    among the session's events (``+``: each line found by its uuid, never by
    reading the session's lines)."""
    sources = [
        tuple(row)
        for row in conn.execute(
            "SELECT m.seq, m.uuid FROM tool_results r JOIN tool_calls c ON c.id = r.tool_use_id "
            "JOIN messages m ON m.uuid = c.message_uuid AND +m.session_id = ? "
            "WHERE r.message_uuid = ? AND r.session_id = ? AND m.seq < ? ORDER BY r.id",
            [session_id, uuid, session_id, seq],
        )
    ]
    derived = sorted(
        {
            tuple(row)
            for row in conn.execute(
                "SELECT m.seq, m.uuid FROM tool_calls c JOIN tool_results r ON r.tool_use_id = c.id "
                "JOIN messages m ON m.uuid = r.message_uuid AND +m.session_id = ? "
                "WHERE c.message_uuid = ? AND c.session_id = ? AND m.seq > ?",
                [session_id, uuid, session_id, seq],
            )
        }
    )
    return list(dict.fromkeys(sources)), derived


def _replacement_links(conn, session_id: str) -> list[dict]:
    """The session's events that name a replacement and the events of the session
    they name (uuid, seq, surface, replaced_by), by seq: what ``_check_surface``
    checks, and all a replacement chain walks through."""
    link = "m.uuid, m.seq, m.surface, m.replaced_by"
    naming = rows(conn, f"SELECT {link} FROM messages m WHERE m.session_id = ? AND m.replaced_by IS NOT NULL", [session_id])
    known = {row["uuid"] for row in naming}
    wanted = sorted({row["replaced_by"] for row in naming} - known)
    named = rows(
        conn,
        f"SELECT {link} FROM messages m WHERE m.uuid IN (SELECT value FROM json_each(?)) AND +m.session_id = ?",
        [orjson.dumps(wanted).decode(), session_id],
    ) if wanted else []
    return sorted(naming + named, key=lambda row: row["seq"])


def _title_snapshot(conn, session: dict) -> dict | None:
    title, kind = session["title"], session["title_source"]
    if not title:
        return None
    moment = None
    messages: list[tuple] = []
    if kind == "first_prompt":
        row = conn.execute(
            "SELECT seq, uuid, timestamp FROM messages WHERE session_id = ? AND role = 'user' AND is_meta = 0 "
            "AND is_compact_summary = 0 AND COALESCE(content_type, 'text') IN ('text', 'mixed') ORDER BY seq LIMIT 1",
            [session["id"]],
        ).fetchone() or (None, None, None)
        event = row[:2]
        messages = [event] if row[0] is not None else []
        moment = row[2]
    else:
        found = conn.execute(
            "SELECT timestamp FROM titles WHERE session_id = ? AND kind = ? AND title = ? "
            "ORDER BY id DESC LIMIT 1",
            [session["id"], kind, title],
        ).fetchone()
        moment = found[0] if found else None
        event = conn.execute(
            "SELECT seq, uuid FROM messages WHERE session_id = ? AND (? IS NULL OR timestamp <= ?) "
            "ORDER BY seq DESC LIMIT 1",
            [session["id"], moment, moment],
        ).fetchone() or (None, None)
    return {
        "title": title,
        "messageSeqs": [seq for seq, _ in messages],
        "messageIds": [uuid for _, uuid in messages],
        "source": TITLE_SOURCES.get(kind, "provider"),
        "kind": kind,
        "eventSeq": event[0],
        "eventId": event[1],
        "updatedAt": to_ms(moment),
    }


