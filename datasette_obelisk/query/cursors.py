"""Opaque continuation cursors, bound to a request and to an index generation.

    fingerprint(request) -> str
        A short hash of the canonical JSON of a normalized request.
    current_generation(conn) -> int
        ``obelisk_state.generation``: bumped by every commit that changes data.
    current_rewrites(conn) -> int
        ``obelisk_state.rewrites``: bumped for each message deleted, moved
        (another session or seq) or whose searched text, surface, or place
        among injected or hidden lines changed; messages only added leave it
        as it is.
    rewritten_since(conn, rewrites, upto) -> bool
        Whether a message with an id up to ``upto`` was rewritten since the
        counter was ``rewrites`` (the spans of rewrites, store/db.py's
        ``REWRITE_SPAN``, keep the lowest id each rewrote): a cursor that saw
        the messages up to ``upto`` goes on while only messages written after
        them are moved or rewritten (an ingest moves the inline agents' lines
        it wrote, shadows the history a compaction it read replaced). When
        that cannot be told (the spans since are forgotten), True.
    encode_cursor(conn, scope, request_fingerprint, generation, position) -> str
    decode_cursor(conn, token, scope, request_fingerprint, generation) -> position
    is_count(value) -> bool
        Whether a decoded position part is a count SQLite can bind (callers
        check the shape of what they encoded: a signed cursor is only as
        trustworthy as the secret, which the database's readers can see).
        A cursor is base64url JSON ``{"v", "scope", "fp", "gen", "pos", "mac"}``
        signed with the database's ``cursor_secret``. Garbage, an edited
        cursor, or one from another request or scope raises
        ``SESSION_QUERY_INVALID_CURSOR``; a cursor from an older generation
        raises ``SESSION_QUERY_STALE_CURSOR`` (search again from the start).
        ``generation=None`` skips the staleness check (keyset cursors that
        stay valid while the data grows).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import orjson

from .errors import QueryError

VERSION = 1
MAX_CURSOR_CHARS = 2048
MAX_COUNT = 2**62  # a position plus a page still fits SQLite's 64-bit integers


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(request: dict) -> str:
    return hashlib.sha256(canonical(request).encode()).hexdigest()[:24]


def current_generation(conn) -> int:
    return _counter(conn, "generation")


def current_rewrites(conn) -> int:
    return _counter(conn, "rewrites")


REWRITE_SPAN = "rewrites@"  # (store/db.py)


def rewritten_since(conn, rewrites: int, upto: int) -> bool:
    now = current_rewrites(conn)
    if now == rewrites:
        return False
    spans = []
    for key, low in conn.execute(
        "SELECT key, value FROM obelisk_state WHERE key >= ? AND key < ? ORDER BY key",
        [REWRITE_SPAN, REWRITE_SPAN + "~"],
    ):
        try:
            spans.append((int(key[len(REWRITE_SPAN):]), None if low == "" else int(low)))
        except (TypeError, ValueError):
            return True
    if not spans or spans[0][0] > rewrites or now < rewrites:
        return True
    ends = [since for since, _ in spans[1:]] + [now]
    # A span holds the rewrites counted from its start to the next one's.
    return any(end > rewrites and low is not None and low <= upto for (_, low), end in zip(spans, ends))


def _counter(conn, key: str) -> int:
    """An ``obelisk_state`` counter's value (0 when not set, or not a number)."""
    row = conn.execute("SELECT value FROM obelisk_state WHERE key = ?", [key]).fetchone()
    try:
        return int(row[0]) if row else 0
    except (TypeError, ValueError):
        return 0


def stale() -> QueryError:
    return QueryError(
        "SESSION_QUERY_STALE_CURSOR",
        "the index changed since this cursor was issued: run the search again without a cursor",
    )


def _secret(conn) -> bytes:
    row = conn.execute("SELECT value FROM obelisk_state WHERE key = 'cursor_secret'").fetchone()
    return (row[0] if row and row[0] else "datasette-obelisk").encode()


def _mac(conn, body: dict) -> str:
    return hmac.new(_secret(conn), canonical(body).encode(), hashlib.sha256).hexdigest()[:24]


def encode_cursor(conn, scope: str, request_fingerprint: str, generation, position) -> str:
    body = {"v": VERSION, "scope": scope, "fp": request_fingerprint, "gen": generation, "pos": position}
    body["mac"] = _mac(conn, body)
    return base64.urlsafe_b64encode(canonical(body).encode()).decode().rstrip("=")


def is_count(value) -> bool:
    return type(value) is int and 0 <= value < MAX_COUNT


def invalid(message: str) -> QueryError:
    return QueryError("SESSION_QUERY_INVALID_CURSOR", message)


def decode_cursor(conn, token, scope: str, request_fingerprint: str, generation):
    if not isinstance(token, str) or not token or len(token) > MAX_CURSOR_CHARS:
        raise invalid("the cursor is not one this service returned")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = orjson.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise invalid("the cursor is not one this service returned") from None
    if not isinstance(body, dict) or set(body) != {"v", "scope", "fp", "gen", "pos", "mac"}:
        raise invalid("the cursor is not one this service returned")
    mac = body.pop("mac")
    if not isinstance(mac, str) or not mac.isascii() or not hmac.compare_digest(mac, _mac(conn, body)):
        raise invalid("the cursor was altered")
    if body["v"] != VERSION or body["scope"] != scope:
        raise invalid(f"the cursor belongs to another kind of request, not {scope}")
    if body["fp"] != request_fingerprint:
        raise invalid(
            "the cursor belongs to a different request: send it with the parameters of the request that returned it"
        )
    if generation is not None and body["gen"] != generation:
        raise stale()
    return body["pos"]
