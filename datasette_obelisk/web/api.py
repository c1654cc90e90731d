"""The read-only JSON API under ``/-/obelisk/api/``: routes and the OpenAPI document."""

from __future__ import annotations

from ..query.errors import QueryError
from .endpoints import API_ROOT
from .handlers import json_view
from .responses import json_error, json_ok, method_not_allowed

# Any other path under the API root, but one ending in "/": Datasette
# redirects that to the path without it.
UNKNOWN_PATH = "^" + API_ROOT + "/.*[^/]$"
DESCRIPTION_PATH = "^" + API_ROOT + "(?:/openapi.json)?$"  # the root, too, says what it serves


def read_endpoints() -> list:
    from .api_helpers import HELPER_ENDPOINTS

    from .api_contracts import contract_endpoints

    return HELPER_ENDPOINTS + contract_endpoints()


async def openapi_view(datasette, request):
    from .openapi import openapi_document

    if request.method not in ("GET", "HEAD"):
        return method_not_allowed("GET")
    if not await datasette.allowed(action="view-instance", actor=request.actor):
        # Like Datasette's own pages: a private instance does not say what it serves.
        return json_error(QueryError("OBELISK_PERMISSION_DENIED", "you may not view this instance"))
    return json_ok(openapi_document(datasette))


def api_routes() -> list:
    routes = [(endpoint.regex, json_view(endpoint)) for endpoint in read_endpoints()]
    routes.append((DESCRIPTION_PATH, openapi_view))
    return routes


async def unknown_path_view(datasette, request):
    """A path no endpoint has: the JSON error shape, not Datasette's HTML page."""
    listing = datasette.urls.path(API_ROOT + "/openapi.json")
    return json_error(QueryError("OBELISK_NOT_FOUND", f"no endpoint {request.path}; {listing} lists them"))


def api_fallback() -> tuple:
    """The route for unknown API paths: it must come after every other one."""
    return (UNKNOWN_PATH, unknown_path_view)
