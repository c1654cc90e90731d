"""The OpenAPI 3.1 description of ``/-/obelisk/api/``, built from the endpoint records.

A test requests every route it lists and checks the answers against it, so
it stays true.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from . import schemas
from .config import settings
from .endpoints import API_ROOT

PARAM_SCHEMAS = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "json": {"type": "string", "contentMediaType": "application/json"},
}
DB_PARAM = {
    "name": "db",
    "in": "query",
    "required": False,
    "description": "which attached obelisk database (default: the configured one, else the first)",
    "schema": {"type": "string"},
}
PATH_PARAM_SCHEMAS = {"seq": {"type": "integer"}}


def error(description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


ERRORS = {
    "400": error("invalid request (code names the problem; a missing required parameter included)"),
    "403": error("OBELISK_PERMISSION_DENIED: the actor may not view the database, or a table the endpoint reads"),
    "404": error("unknown session, event, message or database"),
    "405": error("OBELISK_METHOD_NOT_ALLOWED: a method other than GET or HEAD (the Allow header says GET)"),
}


# The searches that wait for the full-text index an ingest defers (query/search.py check_index_complete).
INDEXED_SEARCHES = ("/session-query/sessions/search", "/session-query/events/search", "/history/search")
INDEXING = {
    **error("SESSION_QUERY_INDEX_FAILED: an ingest defers full-text indexing (a first load, or a reload) and "
            "the index misses messages until it ends; ask again after Retry-After seconds"),
    "headers": {"Retry-After": {"description": "seconds to wait before asking again", "schema": {"type": "integer"}}},
}


def timeout(endpoint) -> dict:
    """504: the request ran out of time, in the code of the endpoint's contract."""
    code = "SESSION_QUERY_ABORTED" if endpoint.tag == "session-query" else "OBELISK_TIMEOUT"
    return error(f"{code}: the request's SQL ran past Datasette's sql_time_limit_ms and was stopped")


FORM_PAGE = "; a form post (no Accept: application/json) gets the memories page showing the refusal, as text/html"


def write_error(description: str) -> dict:
    """A refusal of a write: JSON, or for a form post the memories page at the same status."""
    answer = error(description + FORM_PAGE)
    answer["content"]["text/html"] = {"schema": {"type": "string"}}
    return answer


WRITE_ERRORS = {
    "400": write_error("invalid record, refused path, read-only database, no memory root configured"),
    "403": write_error("OBELISK_PERMISSION_DENIED: the actor lacks the action; or a cross-site request"),
    "404": write_error("unknown memory or session"),
    "405": error("OBELISK_METHOD_NOT_ALLOWED: a method other than POST (the Allow header says POST)"),
    "413": write_error("OBELISK_PAYLOAD_TOO_LARGE: body over the size cap"),
    "415": error("OBELISK_UNSUPPORTED_MEDIA_TYPE: a body that is neither JSON nor a url-encoded form"),
}
FORM_REDIRECT = {
    "description": "a successful form post (url-encoded, without Accept: application/json): the result "
    "becomes a message, and the answer redirects to the memories page",
    "headers": {"Location": {"description": "the memories page", "schema": {"type": "string"}}},
}


def package_version() -> str:
    try:
        return version("datasette-obelisk")
    except PackageNotFoundError:
        return "0"


PAGE_HEADERS = {
    "X-Total-Count": {"description": "how many items the whole list has", "schema": {"type": "integer"}},
    "Link": {"description": 'while items remain: <this request at the next offset>; rel="next"', "schema": {"type": "string"}},
}
TOO_LARGE = error("more than one answer returns: page with limit and offset")


def parameter(param) -> dict:
    bounds = {key: value for key in ("default", "minimum", "maximum") if (value := param.bound(key)) is not None}
    return {
        "name": param.name,
        "in": "query",
        "required": param.required,
        "description": param.description,
        "schema": {**PARAM_SCHEMAS[param.type], **bounds},
    }


def operation(endpoint) -> dict:
    path_params = [
        {"name": name, "in": "path", "required": True, "schema": PATH_PARAM_SCHEMAS.get(name, {"type": "string"})}
        for name in endpoint.path_params
    ]
    return {
        "summary": endpoint.summary,
        "tags": [endpoint.tag],
        "operationId": endpoint.tag + endpoint.path.replace("/", "_").replace("{", "").replace("}", ""),
        "parameters": path_params + [parameter(p) for p in endpoint.params] + [DB_PARAM],
        "responses": responses(endpoint),
    }


def responses(endpoint) -> dict:
    ok = {"description": "the result", "content": {"application/json": {"schema": endpoint.response}}}
    errors = {**ERRORS, "504": timeout(endpoint)}
    if endpoint.path in INDEXED_SEARCHES:
        errors["503"] = INDEXING
    if endpoint.too_large:
        errors["413"] = error("OBELISK_PAYLOAD_TOO_LARGE: too large an answer to build whole: page with limit and "
                              "each page's nextCursor")
    if not endpoint.paged:
        return {"200": ok, **errors}
    return {"200": {**ok, "headers": PAGE_HEADERS}, **errors, "413": TOO_LARGE}


def openapi_document(datasette) -> dict:
    from .api import read_endpoints

    endpoints = list(read_endpoints())
    if not settings(datasette).read_only:
        from .writes import WRITE_ENDPOINTS

        endpoints += WRITE_ENDPOINTS
    paths: dict = {}
    for endpoint in endpoints:
        paths.setdefault(datasette.urls.path(API_ROOT + endpoint.path), {})[endpoint.method] = (
            write_operation(endpoint) if endpoint.method == "post" else operation(endpoint)
        )
    return schemas.resolve({
        "openapi": "3.1.0",
        "info": {
            "title": "datasette-obelisk",
            "version": package_version(),
            "description": "Read-only JSON over agent session logs: the Obelisk helpers, the session-query "
            "contract and the history contract. Parameters are query strings (JSON-encoded where structured). "
            "A success returns the contract's shape as is; an error returns "
            '{"ok": false, "error": {"code", "message"}} with a 4xx status, 504 when the request ran past '
            "Datasette's sql_time_limit_ms, or 503 with Retry-After when a search waits for an ingest's index. "
            "Every event a session-query answer names carries its id (the message's uuid): SessionEvent.id, and as "
            "extensions the id of event records, search hits, titles (eventId, messageIds), readSurface's "
            "capturedThroughId and, beside each list of seqs traceEvent gives, the list of the same events' ids. "
            "An id stays when a log grows or is read again and names the same event after an ingest renumbered its "
            "session, where a seq is only its place in the log as it is now; readEvent and traceEvent take it "
            "(?id=), and history.read's sourceIds are such ids.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas.components(),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "a Datasette API token"}},
        },
    })


def write_operation(endpoint) -> dict:
    body_schema = {"type": "object", "properties": {p.name: PARAM_SCHEMAS[p.type] for p in endpoint.params},
                   "required": [p.name for p in endpoint.params if p.required]}
    return {
        "summary": endpoint.summary,
        "tags": [endpoint.tag],
        "operationId": endpoint.tag + endpoint.path.replace("/", "_"),
        "parameters": [DB_PARAM],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": body_schema},
                "application/x-www-form-urlencoded": {"schema": body_schema},
            },
        },
        "responses": {
            "200": {"description": "the result", "content": {"application/json": {"schema": endpoint.response}}},
            "302": FORM_REDIRECT,
            **WRITE_ERRORS,
        },
        "security": [{"bearer": []}, {}],
    }
