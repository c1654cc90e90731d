"""The one place that turns results and ``QueryError``s into HTTP responses."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlencode

from datasette.utils.asgi import Response

from .. import deep_json
from ..query.errors import QueryError

JSON_HEADERS = {"Cache-Control": "no-store"}


def _default(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(value)
    return str(value)


def json_ok(data, status: int = 200, headers=None) -> Response:
    """The result itself (the contract's shape), never wrapped."""
    body = deep_json.dumps(data, default=_default, ensure_ascii=False)  # (a lineage nests deeper than json goes)
    return Response(
        body, status=status, headers={**JSON_HEADERS, **(headers or {})}, content_type="application/json; charset=utf-8"
    )


def json_page(page, request) -> Response:
    """A page of a list: the items as the body, their place in the whole in headers.

    ``X-Total-Count`` is the length of the whole list; while items remain,
    ``Link`` (``rel="next"``) is this request with the next page's offset, or
    for a list that goes on after an item (a thread), with that item
    (``afterUuid``): the same next page after an ingest renumbered the session.
    """
    headers = {"X-Total-Count": str(page.total)}
    if page.remaining:
        args = [(k, v) for k, v in parse_qsl(request.query_string, keep_blank_values=True)
                if k not in ("offset", "afterUuid")]
        if getattr(page, "after", None) is not None:
            args.append(("afterUuid", page.after))
        else:
            args.append(("offset", str(page.offset + len(page.items))))
        headers["Link"] = f'<{request.path}?{urlencode(args)}>; rel="next"'
    return json_ok(page.items, headers=headers)


def json_error(error: QueryError, status: int | None = None, headers=None) -> Response:
    """``{"ok": false, "error": {"code", "message"}}`` with the code's HTTP status (a 503
    with ``Retry-After`` for a failure that passes by itself)."""
    body = json.dumps(error.as_dict(), ensure_ascii=False)
    retry = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}
    return Response(
        body,
        status=status or error.status,
        headers={**JSON_HEADERS, **retry, **(headers or {})},
        content_type="application/json; charset=utf-8",
    )


def method_not_allowed(allowed: str) -> Response:
    error = QueryError("OBELISK_METHOD_NOT_ALLOWED", f"this endpoint accepts {allowed} only")
    return json_error(error, headers={"Allow": allowed})
