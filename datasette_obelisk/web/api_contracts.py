"""``/-/obelisk/api/session-query/...`` and ``/-/obelisk/api/history/...``: the two contracts over HTTP.

Each endpoint builds the contract's request object from the query string
(structured values such as filter arrays are JSON) and calls
``query/session_query.py`` or ``query/history.py``; the answer is the
contract's own shape.
"""

from __future__ import annotations

from ..query.errors import QueryError
from ..query import search as search_core
from ..query.session_query import LIST_EVENTS_MAX, READ_PAGE_MAX, READ_SESSION_MAX, READ_WINDOW_MAX, SessionQuery
from . import schemas as s
from .endpoints import Endpoint, Param

INVALID_LIMIT = "SESSION_QUERY_INVALID_LIMIT"
INVALID_FILTER = "SESSION_QUERY_INVALID_FILTER"
INVALID_WINDOW = "SESSION_QUERY_INVALID_WINDOW"
MAX_TITLE_IDS = 1000  # one request's titles


def search_request(params, *names: str) -> dict:
    """The contract's search request: query, mode, limit, cursor and the named filter arrays."""
    request = {"query": params.text("query", default=""), "limit": params.integer("limit", code=INVALID_LIMIT)}
    for name in ("mode", "cursor", "sessionId"):
        if params.text(name) is not None:
            request[name] = params.text(name)
    for name in names:
        request[name] = params.json(name, code=INVALID_FILTER)
    return {key: value for key, value in request.items() if value is not None}


def search_events(conn, params):
    """searchEvents: ``sessionId`` is required, a bad request (400) when missing."""
    session_id = params.text("sessionId", required=True, code="SESSION_QUERY_INVALID_QUERY")
    return SessionQuery(conn).search_events({**search_request(params, "filters"), "sessionId": session_id})


def event_request(params, **extra) -> dict:
    request = {"sessionId": params.path("session_id"), "seq": params.path_int("seq", code=INVALID_WINDOW), **extra}
    if params.text("id") is not None:
        request["id"] = params.text("id")
    return request


def sessions(conn, params):
    filters = params.json("filters", code=INVALID_FILTER)
    service = SessionQuery(conn)
    return service.filter_sessions(filters) if filters is not None else service.list_sessions()


def too_large(what: str, session_id: str, count: int, most: int, instead: str, meeting: str = "") -> QueryError:
    return QueryError(
        "OBELISK_PAYLOAD_TOO_LARGE",
        f"{what}: session {session_id!r} has {count} events{meeting}, more than the {most} one answer holds: {instead}",
    )


SEQ_RANGES = 'filters with a seq range ([{"kind": "seq", "from": 1, "to": 1000}], then on)'


def session_events(conn, params):
    """listEvents / filterEvents: refused (OBELISK_PAYLOAD_TOO_LARGE) from a count, before any
    event is read, past ``LIST_EVENTS_MAX`` records or ``READ_SESSION_MAX`` documents."""
    filters = params.json("filters", code=INVALID_FILTER)
    service = SessionQuery(conn)
    session_id = params.path("session_id")
    if filters is None:
        if (count := service.event_count(session_id)) > LIST_EVENTS_MAX:
            raise too_large("listEvents", session_id, count, LIST_EVENTS_MAX, "list it in parts with " + SEQ_RANGES)
        return service.list_events(session_id)
    if isinstance(filters, list) and (count := service.event_count(session_id, filters)) > READ_SESSION_MAX:
        raise too_large("filterEvents", session_id, count, READ_SESSION_MAX, "narrow it, or scan it in parts with "
                        + SEQ_RANGES, " meeting the filters' metadata clauses")
    return service.filter_events(session_id, filters)


def read_surface(conn, params):
    """readSurface: the whole surface, refused (OBELISK_PAYLOAD_TOO_LARGE) from a count past
    ``READ_SESSION_MAX`` events: it is folded from the whole log."""
    service = SessionQuery(conn)
    session_id = params.path("session_id")
    if (count := service.event_count(session_id)) > READ_SESSION_MAX:
        raise too_large("readSurface", session_id, count, READ_SESSION_MAX,
                        "read the log in pages (readSession with limit) or by events (readEvent)")
    return service.read_surface(session_id)


def read_session(conn, params):
    """readSession: the whole log, as the contract has it, for a session of at most
    ``READ_SESSION_MAX`` events; a longer one is OBELISK_PAYLOAD_TOO_LARGE (built whole it
    would run far past the time limit). With ``limit`` (an extension) a page of it, and
    ``nextCursor`` for the next while events remain; with ``afterId`` (an event's id) the page
    after that event (of ``limit``, else ``READ_PAGE_MAX``, events)."""
    service = SessionQuery(conn)
    session_id = params.path("session_id")
    limit = params.integer("limit", code=INVALID_LIMIT)
    cursor = params.text("cursor")
    after_id = params.text("afterId")
    if after_id is not None:  # (an extension) a page after the event, wherever it now stands
        return service.read_session_page(session_id, READ_PAGE_MAX if limit is None else limit, cursor, after_id=after_id)
    if limit is not None:
        return service.read_session_page(session_id, limit, cursor)
    if cursor is not None:
        raise QueryError(INVALID_LIMIT, "cursor goes with the limit of the request that returned it")
    count = service.event_count(session_id)
    if count > READ_SESSION_MAX:
        raise QueryError(
            "OBELISK_PAYLOAD_TOO_LARGE",
            f"readSession: session {session_id!r} has {count} events, more than the {READ_SESSION_MAX} one answer "
            f"holds: read it in pages with limit (at most {READ_PAGE_MAX}) and each page's nextCursor",
        )
    return service.read_session(session_id)


def read_event(conn, params):
    window = {
        name: params.integer(name, code=INVALID_WINDOW) for name in ("before", "after") if params.text(name) is not None
    }
    return SessionQuery(conn).read_event(event_request(params, **window))


def title_snapshots(conn, params):
    """readTitleSnapshots: ``ids`` is a JSON array of session ids."""
    ids = params.json("ids", code="SESSION_QUERY_INVALID_FILTER")
    if ids is None:
        raise QueryError("SESSION_QUERY_INVALID_QUERY", "ids is required: a JSON array of session ids")
    if not isinstance(ids, list) or len(ids) > MAX_TITLE_IDS:
        raise QueryError("SESSION_QUERY_INVALID_FILTER", f"ids must be a JSON array of at most {MAX_TITLE_IDS} session ids")
    return SessionQuery(conn).read_title_snapshots(ids)


SESSION_ID = "{session_id}"
FILTERS_JSON = "JSON array of the contract's filter clauses"
QUERY = Param("query", required=True, description="search text: data, never FTS5 syntax")
MODE = Param("mode", description="terms (default) or phrase")
PAGE = (
    Param("limit", "integer", "maximum items in this page", default=search_core.DEFAULT_LIMIT, minimum=1,
          maximum=search_core.MAX_LIMIT),
    Param("cursor", description="nextCursor of the previous page"),
)
WINDOW = tuple(
    Param(name, "integer", f"raw events {where} the target", default=0, minimum=0, maximum=READ_WINDOW_MAX)
    for name, where in (("before", "before"), ("after", "after"))
)
EVENT_ID = Param(
    "id", description="the event's id (the id of an event, event record, search hit or trace link, a title's "
    "eventId, a history entry's sourceIds): the same event after an ingest renumbered its session, "
    "wherever it now is (SESSION_QUERY_EVENT_NOT_FOUND once the session no longer holds it); the seq is then "
    "where it was",
)


def sq(path, handler, summary, params=(), response=None, too_large=False) -> Endpoint:
    return Endpoint("/session-query" + path, handler, summary, "session-query", tuple(params), response or {"type": "object"},
                    too_large=too_large)


SESSION_QUERY_ENDPOINTS = [
    sq("/sessions", sessions, "listSessions / filterSessions: every session, newest first",
       [Param("filters", "json", "SessionResultFilter[] (" + FILTERS_JSON + ")")], s.array(s.SESSION_RECORD)),
    sq("/sessions/search", lambda conn, p: SessionQuery(conn).search_sessions(search_request(p, "sessionFilters", "eventFilters")),
       "searchSessions: sessions grouped by their strongest matching event",
       [QUERY, MODE, Param("sessionFilters", "json", FILTERS_JSON), Param("eventFilters", "json", FILTERS_JSON), *PAGE],
       s.page(s.SESSION_SEARCH_HIT)),
    sq("/events/search", search_events,
       "searchEvents: events of one session",
       [Param("sessionId", required=True), QUERY, MODE, Param("filters", "json", FILTERS_JSON), *PAGE],
       s.EVENT_SEARCH_PAGE),
    sq(f"/session/{SESSION_ID}", read_session,
       f"readSession: the session's complete raw log (OBELISK_PAYLOAD_TOO_LARGE, 413, past {READ_SESSION_MAX} "
       "events), or with limit a page of it",
       [Param("limit", "integer", "a page of at most this many events, with nextCursor while more remain "
              "(default: the whole log)", minimum=1, maximum=READ_PAGE_MAX),
        Param("cursor", description="nextCursor of the previous page (with the same limit)"),
        Param("afterId", description=f"instead of cursor: an event's id (e.g. readSurface's capturedThroughId); "
              f"a page (of limit, default {READ_PAGE_MAX}, events) after that event wherever it now stands, "
              "SESSION_QUERY_EVENT_NOT_FOUND once the session no longer holds it")],
       response=s.LOG_SNAPSHOT, too_large=True),
    sq(f"/session/{SESSION_ID}/surface", read_surface,
       f"readSurface: the current model surface (OBELISK_PAYLOAD_TOO_LARGE, 413, past {READ_SESSION_MAX} events)",
       response=s.SURFACE_SNAPSHOT, too_large=True),
    sq(f"/session/{SESSION_ID}/events", session_events,
       f"listEvents / filterEvents: event records in seq order (OBELISK_PAYLOAD_TOO_LARGE, 413, past "
       f"{LIST_EVENTS_MAX} records, or {READ_SESSION_MAX} documents meeting the filters' metadata clauses)",
       [Param("filters", "json", "SessionEventResultFilter[] (" + FILTERS_JSON + "): each record then has its text")],
       s.array(s.FILTERED_EVENT), too_large=True),
    sq(f"/session/{SESSION_ID}/trace", lambda conn, p: SessionQuery(conn).trace_session(p.path("session_id")),
       "traceSession: ancestors and the descendant forest", response=s.LINEAGE_TRACE),
    sq(f"/session/{SESSION_ID}/title", lambda conn, p: SessionQuery(conn).read_title_snapshot(p.path("session_id")),
       "readTitleSnapshot: the session's header and its latest title (readTitle is its title)",
       response=s.TITLE_OBSERVATION),
    sq("/titles", title_snapshots, "readTitleSnapshots: one fulfilled or rejected result per unique id, in order",
       [Param("ids", "json", "JSON array of session ids", required=True)], s.array(s.TITLE_RESULT)),
    sq(f"/event/{SESSION_ID}/{{seq}}", read_event, "readEvent: one event and a raw-log window",
       [*WINDOW, EVENT_ID], s.EVENT_WINDOW),
    sq(f"/event/{SESSION_ID}/{{seq}}/trace", lambda conn, p: SessionQuery(conn).trace_event(event_request(p)),
       "traceEvent: replacements and cited source events", [EVENT_ID], s.EVENT_TRACE),
]


def contract_endpoints() -> list[Endpoint]:
    from .api_history import HISTORY_ENDPOINTS

    return SESSION_QUERY_ENDPOINTS + HISTORY_ENDPOINTS
