"""``/-/obelisk/api/history/search`` and ``/read``: the history contract (query/history.py).

Options are query-string parameters under the contract's names;
``attributes`` is JSON (``{"repository": {"contains": "github.com/o/r"}}``).
"""

from __future__ import annotations

from ..query.history import (
    READ_DEFAULT_LIMIT, READ_MAX_LIMIT, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT, history_read, history_search,
)
from . import schemas as s
from .endpoints import Endpoint, Param

LIMIT = "SESSION_QUERY_INVALID_LIMIT"


def search(conn, params):
    options = {
        "query": params.text("query"),
        "attributes": params.json("attributes", code="SESSION_QUERY_INVALID_FILTER"),
        "limit": params.integer("limit", code=LIMIT),
        "cursor": params.text("cursor"),
    }
    return history_search(conn, {key: value for key, value in options.items() if value is not None})


def read(conn, params):
    options = {
        "sessionId": params.text("sessionId"),
        "limit": params.integer("limit", code=LIMIT),
        "cursor": params.text("cursor"),
    }
    return history_read(conn, {key: value for key, value in options.items() if value is not None})


HISTORY_ENDPOINTS = [
    Endpoint(
        "/history/search", search, "history.search: sessions by transcript text and attributes", "history",
        (
            Param("query", description="every term must occur in one entry or in the digest"),
            Param("attributes", "json", 'exact values, or {"contains": text}'),
            Param("limit", "integer", "1-75, default 10", default=SEARCH_DEFAULT_LIMIT, minimum=1, maximum=SEARCH_MAX_LIMIT),
            Param("cursor", description="nextCursor of the previous page"),
        ),
        s.HISTORY_SEARCH,
    ),
    Endpoint(
        "/history/read", read, "history.read: the active flat conversation, in pages", "history",
        (
            Param("sessionId", required=True),
            Param("limit", "integer", "1-100, default 50", default=READ_DEFAULT_LIMIT, minimum=1, maximum=READ_MAX_LIMIT),
            Param("cursor", description="nextCursor of the previous page"),
        ),
        s.HISTORY_READ,
    ),
]
