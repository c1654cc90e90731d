"""``POST /-/obelisk/api/remember`` and ``/forget``: the only writes, guarded.

In order: POST only; the actor must hold the action on the database
(``obelisk-remember`` / ``obelisk-forget``, denied by default) and may
view the tables an answer shows (``memories``, ``sessions``); the
database must be mutable and have the audit table, and at least one
memory root must be configured (for forget too: no roots, no writes); the body (JSON, or a
form from our memories page) is capped at ``max_body_bytes``, or at Datasette's
``max_post_body_bytes`` when that is smaller. Then
``query/memories.py`` writes, confined to the configured memory roots, and
``query/audit.py`` records who did it. Datasette's CSRF protection runs
before any of this and refuses cross-site browser requests.

A body is JSON or a urlencoded form (anything else: 415
``OBELISK_UNSUPPORTED_MEDIA_TYPE``). A form post from a browser is
answered, on success, with a redirect to the memories page and a message;
on a refusal, with the memories page showing it, at the refusal's status.
Everything else is answered with JSON.
"""

from __future__ import annotations

import json
import sqlite3
from urllib.parse import parse_qsl, urlsplit

import orjson

from datasette.utils.asgi import PayloadTooLarge, Response

from ..query import audit, memories
from ..query.errors import QueryError
from ..store.db import BUSY_TIMEOUT_MS
from . import schemas
from .actions import FORGET, REMEMBER, allowed
from .config import settings
from .databases import database_for
from .endpoints import Endpoint, Param
from .responses import json_error, json_ok, method_not_allowed
from .urls import obelisk_url
from .visibility import ensure_visible

JSON_TYPE = "application/json"
ANSWER_READS = ("memories", "sessions")  # a memory, and the project of the session it names
FORM_TYPE = "application/x-www-form-urlencoded"


def media_type(request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


async def read_record(request, max_bytes: int) -> dict:
    kind = media_type(request) or JSON_TYPE
    if kind not in (JSON_TYPE, FORM_TYPE):
        raise QueryError(
            "OBELISK_UNSUPPORTED_MEDIA_TYPE", f"send {JSON_TYPE} or {FORM_TYPE}, not {kind[:100]}"
        )
    try:
        body = await request.post_body(max_bytes=max_bytes)
    except PayloadTooLarge:
        raise QueryError("OBELISK_PAYLOAD_TOO_LARGE", f"the request body is over {max_bytes} bytes") from None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise QueryError("OBELISK_INVALID_ARGUMENT", "the request body is not UTF-8") from None
    if kind == FORM_TYPE:
        pairs = parse_qsl(text, keep_blank_values=True)
        refuse_repeated(key for key, _ in pairs)
        return {key: value for key, value in pairs if value != ""}
    try:
        record = orjson.loads(text)  # (refuses lone surrogates and deep nesting: ValueError)
    except ValueError:
        raise QueryError("OBELISK_INVALID_ARGUMENT", "the request body must be a JSON object or a form") from None
    if not isinstance(record, dict):
        raise QueryError("OBELISK_INVALID_ARGUMENT", "the request body must be a JSON object")
    if len(record) > 1:  # a key given twice was folded into one: find it
        try:
            json.loads(text, object_pairs_hook=lambda pairs: refuse_repeated(key for key, _ in pairs))
        except RecursionError:  # nested deeper than Python's parser goes (orjson's limit is higher)
            raise QueryError("OBELISK_INVALID_ARGUMENT", "the request body is nested too deeply") from None
    return record


def body_cap(datasette, max_body_bytes: int) -> int:
    """The plugin's cap on a body, or the instance's (``--setting max_post_body_bytes``,
    which caps every POST body Datasette reads; 0 turns it off) when that is smaller."""
    instance = datasette.setting("max_post_body_bytes")
    return min(max_body_bytes, instance) if instance else max_body_bytes


def refuse_repeated(keys) -> dict:
    """A field given twice is refused: which one was meant?"""
    seen: set = set()
    repeated = sorted({key for key in keys if key in seen or seen.add(key)})
    if repeated:
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"field {', '.join(repeated)} given more than once")
    return {}


def refuse_query_parameters(request) -> None:
    """A write reads its fields from the body; the query string may only name the database."""
    unknown = sorted(name for name in request.args.keys() if name != "db")
    if unknown:
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"unknown query parameter {', '.join(unknown)}: send fields in the body")
    if len(request.args.getlist("db")) > 1:
        raise QueryError("OBELISK_INVALID_ARGUMENT", "parameter db given more than once")


def from_our_form(request) -> bool:
    """A browser posting the memories page's form: it is answered with that page, not JSON."""
    return media_type(request) == FORM_TYPE and JSON_TYPE not in request.headers.get("accept", "")


def remember(conn, record, actor, database, roots):
    """Register a memory and its audit row in one transaction."""
    audit.require_audit_table(conn)
    cwd = str(roots[0]) if roots else None
    with memories.write_transaction(conn):
        result = memories.remember(conn, record, memory_roots=roots, cwd=cwd)
        if not result.get("already_registered"):
            detail = {"path": result["path"], "project": result["project"], "session_id": record.get("session_id")}
            audit.record_write(
                conn, actor=actor, action=REMEMBER, database=database, memory_id=result["id"], detail=detail
            )
    return result


def forget(conn, record, actor, database, roots):
    """Archive a memory and write its audit row in one transaction."""
    audit.require_audit_table(conn)
    with memories.write_transaction(conn):
        result = memories.forget(conn, record)
        if not result.get("already_deleted"):
            audit.record_write(
                conn, actor=actor, action=FORGET, database=database, memory_id=result["id"],
                reason=result["deleted_reason"],
            )
    return result


def refused_if_unwritable(perform, conn, *args):
    """``perform(conn, *args)``; a database file SQLite cannot write (read-only
    file or folder, Datasette serving it mutable) is a refusal, not a fault,
    and one another writer keeps locked is a timeout."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")  # as long as the CLI waits for an ingest
    try:
        return perform(conn, *args)
    except sqlite3.OperationalError as error:
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            raise QueryError(
                "OBELISK_TIMEOUT", f"another writer (an ingest) kept the database locked for "
                f"{BUSY_TIMEOUT_MS // 1000} s: nothing was written, try again",
            ) from None
        if code is None or code & 0xFF != sqlite3.SQLITE_READONLY:
            raise
        raise QueryError("OBELISK_READ_ONLY", f"the database file cannot be written: {error}") from None


def write_view(action: str, perform, done: str, already: str | None = None):
    """A POST endpoint; a form post is sent back to the memories page with ``done`` (or,
    when the write had been made before, ``already``) as its message."""
    async def view(datasette, request):
        if request.method != "POST":
            return method_not_allowed("POST")
        config = settings(datasette)
        entered: dict = {}
        try:
            refuse_query_parameters(request)
            db = await database_for(datasette, request)
            if not await allowed(datasette, request.actor, action, db.name):
                raise QueryError("OBELISK_PERMISSION_DENIED", f"{action} is not granted to you on {db.name!r}")
            await ensure_visible(datasette, request.actor, db.name, ANSWER_READS)  # an answer shows them
            if not db.is_mutable:
                raise QueryError("OBELISK_READ_ONLY", f"database {db.name!r} is served immutable")
            if not config.memory_roots:
                raise QueryError("OBELISK_MEMORY_REFUSED", "no memory_roots are configured: nothing is writable")
            record = await read_record(request, body_cap(datasette, config.max_body_bytes))
            entered = {key: value for key, value in record.items() if isinstance(value, str)}
            roots = list(config.memory_roots)
            actor = request.actor
            result = await db.execute_write_fn(
                lambda conn: refused_if_unwritable(perform, conn, record, actor, db.name, roots), transaction=False
            )
        except QueryError as error:
            if from_our_form(request):
                return await memories_with_error(datasette, request, error, entered)
            return json_error(error)
        if from_our_form(request):
            if already and (result.get("already_deleted") or result.get("already_registered")):
                datasette.add_message(request, already.format(**result), datasette.WARNING)
            else:
                datasette.add_message(request, done.format(**result), datasette.INFO)
            return Response.redirect(back_to_memories(datasette, request))
        return json_ok(result)

    return view


def back_to_memories(datasette, request) -> str:
    """The memories page a form was posted from, with its query (a recall filter) kept:
    the ``Referer`` when it names that page, else the page for the database written."""
    page = obelisk_url(datasette, "/memories", db=request.args.get("db"))
    referer = urlsplit(request.headers.get("referer", ""))
    if referer.path == urlsplit(page).path and referer.query:  # (only the path and query: never another site)
        return f"{referer.path}?{referer.query}"
    return page


async def memories_with_error(datasette, request, error: QueryError, entered: dict) -> Response:
    """The memories page again, with the refusal above it and the form as it was sent, at the refusal's status."""
    from .handlers import render_page
    from .pages import memories_page

    return await render_page(
        datasette, request, "obelisk/memories.html", memories_page,
        extra={"write_error": error, "entered": entered}, status=error.status,
    )


WRITE_ENDPOINTS = [
    Endpoint(
        "/remember",
        handler=remember,
        summary="Register a markdown memory file (action obelisk-remember)",
        tag="writes",
        method="post",
        params=(
            Param("path", required=True, description="existing markdown file inside a configured memory root"),
            Param("summary", required=True, description="English retrieval summary"),
            Param("session_id"), Param("message_start"), Param("message_end"), Param("project"),
            Param("anchors", "json", "JSON array of recall anchors"),
        ),
        response=schemas.REMEMBERED,
    ),
    Endpoint(
        "/forget",
        handler=forget,
        summary="Archive a memory (action obelisk-forget)",
        tag="writes",
        method="post",
        params=(Param("id", required=True), Param("reason", required=True)),
        response=schemas.FORGOTTEN,
    ),
]
ACTIONS = {
    "/remember": (REMEMBER, "Remembered {path} as {id}",
                  "{path} was already remembered with these values as {id} ({created_at}): nothing changed"),
    "/forget": (FORGET, "Archived memory {id}",
                "Memory {id} was already archived ({deleted_at}, reason: {deleted_reason}): nothing changed"),
}


def write_routes() -> list:
    return [
        (endpoint.regex, write_view(ACTIONS[endpoint.path][0], endpoint.handler, *ACTIONS[endpoint.path][1:]))
        for endpoint in WRITE_ENDPOINTS
    ]
