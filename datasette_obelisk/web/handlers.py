"""The two view shapes every route uses: a JSON read and an HTML page.

Both resolve the database, check that the actor may view it, run the
work on a Datasette read connection, answer 403 if the work read a table
the actor may not view (``visibility.py``) and turn a ``QueryError`` into
the right response. Handlers themselves only parse parameters and call
``query/``. A JSON read, and each read a page makes, stops once its SQL
has run for Datasette's ``sql_time_limit_ms`` (504).
"""

from __future__ import annotations

import sqlite3

from datasette.resources import DatabaseResource
from datasette.utils.asgi import Response

from ..query.errors import QueryError
from ..query.readonly import error_for, set_deadline
from ..store.db import is_current
from .databases import database_for, obelisk_databases
from .live import refresh_if_live
from .params import Params
from .responses import json_error, json_ok, json_page, method_not_allowed
from .template_helpers import TemplateHelpers
from .terminal import without_escapes
from .visibility import guarded, is_visible


async def readable_database(datasette, request):
    db = await database_for(datasette, request)
    if not await datasette.allowed(action="view-database", resource=DatabaseResource(db.name), actor=request.actor):
        raise QueryError("OBELISK_PERMISSION_DENIED", f"you may not view database {db.name!r}")
    return db


def time_limited(work, milliseconds: int):
    """``work(conn)``, interrupted once it has run ``milliseconds``: ``OBELISK_TIMEOUT``.
    A table or column missing from an older database (not migrated yet) is ``OBELISK_NOT_FOUND``.

    Its statements read one snapshot (a read transaction): an ingest that
    commits between two of them cannot hand the second a row the first
    found gone.

    A query layer that names the interruption itself keeps its code
    (the session-query contract's ``SESSION_QUERY_ABORTED``).
    """

    def run(conn):
        set_deadline(conn, milliseconds / 1000)
        snapshot = not conn.in_transaction
        if snapshot:
            conn.execute("BEGIN")
        try:
            return work(conn)
        except sqlite3.OperationalError as exc:
            error = error_for(exc)
            if error.code == "OBELISK_TIMEOUT":
                raise past_limit(error.code, milliseconds) from None
            raise older_schema(conn, str(exc)) or exc from None
        except QueryError as error:
            if error.code in TIMEOUT_CODES:
                raise past_limit(error.code, milliseconds) from None
            # (a helper that translates SQLite's errors itself: sql(), failures())
            raise (error.code == "OBELISK_INVALID_SQL" and older_schema(conn, error.message)) or error from None
        finally:
            if snapshot and conn.in_transaction:
                conn.execute("ROLLBACK")  # it only read
            set_deadline(conn, None)

    return run


def older_schema(conn, message: str) -> QueryError | None:
    """``OBELISK_NOT_FOUND`` for a table or column an older database (not migrated yet) lacks."""
    if message.startswith(("no such table", "no such column")) and not is_current(conn):
        return QueryError(
            "OBELISK_NOT_FOUND",
            f"this database was written by an older datasette-obelisk ({message}): "
            f"run `obelisk ingest --db {database_file_name(conn)}` to bring it up to date",
        )
    return None


def database_file_name(conn) -> str:
    """The name of ``conn``'s database file (not its folder), quoted for a shell."""
    import shlex
    from pathlib import Path

    file = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    return shlex.quote(Path(file).name) if file else "DATABASE"


TIMEOUT_CODES = ("OBELISK_TIMEOUT", "SESSION_QUERY_ABORTED")  # over HTTP only the time limit aborts


def past_limit(code: str, milliseconds: int) -> QueryError:
    """The 504 of a request stopped at the time limit, saying which limit and how to raise it."""
    return QueryError(
        code,
        f"stopped after {milliseconds:,} ms, Datasette's sql_time_limit_ms; a large archive may need "
        f"more: datasette serve --setting sql_time_limit_ms {max(10_000, milliseconds * 10)}",
    )


class TimeLimited:
    """A database whose every ``execute_fn`` stops at ``milliseconds`` (``time_limited``)."""

    def __init__(self, db, milliseconds: int):
        self._db = db
        self._milliseconds = milliseconds

    def __getattr__(self, name):
        return getattr(self._db, name)

    async def execute_fn(self, fn):
        return await self._db.execute_fn(time_limited(fn, self._milliseconds))


def json_view(endpoint):
    """A GET endpoint: ``endpoint.handler(conn, params)`` returns the JSON-able result.

    Parameters the endpoint does not document are refused, so the OpenAPI
    description is the whole truth about what a request may say.
    """
    accepted = {param.name for param in endpoint.params} | {"db"}
    # The session-query contract's endpoints answer a malformed request with its own codes.
    bad_request = "SESSION_QUERY_INVALID_QUERY" if endpoint.tag == "session-query" else "OBELISK_INVALID_ARGUMENT"

    async def view(datasette, request):
        if request.method not in ("GET", "HEAD"):
            return method_not_allowed("GET")
        try:
            unknown = sorted(set(request.args.keys()) - accepted)
            if unknown:
                raise QueryError(
                    bad_request,
                    f"unknown parameter {', '.join(unknown)}; this endpoint takes {', '.join(sorted(accepted))}",
                )
            repeated = sorted(name for name in request.args.keys() if len(request.args.getlist(name)) > 1)
            if repeated:  # which one was meant? (lists are JSON values)
                raise QueryError(bad_request, f"parameter {', '.join(repeated)} given more than once")
            db = await readable_database(datasette, request)
            await refresh_if_live(datasette, db)
            params = Params.from_request(request)
            work = time_limited(lambda conn: endpoint.handler(conn, params), datasette.setting("sql_time_limit_ms"))
            result = await guarded(datasette, request.actor, db, lambda reading: reading.execute_fn(work))
        except QueryError as error:
            return json_error(error)
        return json_page(result, request) if endpoint.paged else json_ok(result)

    return view


def page_view(template: str, build, on_error=None):
    """A GET page: ``await build(datasette, request, db, params)`` returns the template context.

    When it fails, ``on_error(params)`` (if given) adds to the error page's context.
    """

    async def view(datasette, request):
        if request.method not in ("GET", "HEAD"):
            return Response.text("GET only", status=405, headers={"Allow": "GET"})
        return await render_page(datasette, request, template, build, on_error)

    return view


async def render_page(datasette, request, template: str, build, on_error=None, extra=None, status=200) -> Response:
    """The page ``build`` makes, with ``extra`` in its context, or the error page."""
    params = Params.from_request(request)
    limit = datasette.setting("sql_time_limit_ms")
    try:
        db = await readable_database(datasette, request)
        await refresh_if_live(datasette, db)
        context = await guarded(
            datasette, request.actor, db, lambda reading: build(datasette, request, TimeLimited(reading, limit), params)
        )
    except QueryError as error:
        return await error_page(datasette, request, error, on_error(params) if on_error else {})
    if "redirect" in context:  # (a link by an id to where the page shows it now)
        return Response.redirect(context["redirect"])
    context = {
        "database": db.name,
        "db_param": request.args.get("db"),
        "ob": TemplateHelpers(
            datasette, request.args.get("db"),
            not context.get("source_gone") and await is_visible(datasette, request.actor, db.name, "source_files"),
            request,
        ),
        **context,
        **(extra or {}),
    }
    html = await datasette.render_template(template, context, request=request)
    return Response.html(without_escapes(html), status=status)


async def error_page(datasette, request, error: QueryError, extra: dict | None = None) -> Response:
    db = request.args.get("db")
    if db and db not in await obelisk_databases(datasette):  # (its links would all answer this 404 again)
        db = None
    try:  # (the crumbs name the database the page was asked of, as on the page it was reached from)
        database = (await readable_database(datasette, request)).name
    except QueryError:  # (one not served, or not the reader's to view: named nowhere)
        database = None
    html = await datasette.render_template(
        "obelisk/error.html",
        {**(extra or {}), "error": error, "database": database, "db_param": db, "ob": TemplateHelpers(datasette, db),
         "first_page": first_page(request, error)},
        request=request,
    )
    return Response.html(without_escapes(html), status=error.status)


CURSOR_CODES = ("SESSION_QUERY_INVALID_CURSOR", "SESSION_QUERY_STALE_CURSOR")


def first_page(request, error: QueryError) -> str | None:
    """For a page refused its ``cursor`` (the index changed since, or the link was not one it
    gave): the same page without it, as a link relative to the page (``?…``)."""
    if error.code not in CURSOR_CODES or "cursor" not in request.args:
        return None
    from urllib.parse import parse_qsl, urlencode

    kept = [(name, value) for name, value in parse_qsl(request.query_string, keep_blank_values=True) if name != "cursor"]
    return "?" + urlencode(kept)
