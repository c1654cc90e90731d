"""The read-only JSON API under ``/-/obelisk/api/``: routes and the OpenAPI document."""

from __future__ import annotations

from .endpoints import API_ROOT
from .handlers import json_view
from .responses import json_ok


def read_endpoints() -> list:
    from .api_helpers import HELPER_ENDPOINTS

    from .api_contracts import contract_endpoints

    return HELPER_ENDPOINTS + contract_endpoints()


async def openapi_view(datasette, request):
    from .openapi import openapi_document

    return json_ok(openapi_document(datasette))


def api_routes() -> list:
    routes = [(endpoint.regex, json_view(endpoint)) for endpoint in read_endpoints()]
    routes.append(("^" + API_ROOT + "/openapi.json$", openapi_view))
    return routes
