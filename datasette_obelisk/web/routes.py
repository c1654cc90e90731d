"""Every route the plugin registers; write routes only when the instance is not read-only.

The last one answers any other path under the API root with a JSON 404.
With ``datasette --cors`` every answer carries the CORS headers Datasette's
own do, and a browser's preflight (``OPTIONS``) is answered as Datasette
answers it.
"""

from __future__ import annotations

from datasette.utils import add_cors_headers
from datasette.utils.asgi import Response

from .config import settings


def routes(datasette) -> list:
    from .api import api_fallback, api_routes
    from .pages import page_routes

    found = page_routes() + api_routes()
    if not settings(datasette).read_only:
        from .writes import write_routes

        found += write_routes()
    return [(regex, with_cors(view)) for regex, view in found + [api_fallback()]]


def with_cors(view):
    async def answer(datasette, request):
        if not datasette.cors:
            return await view(datasette, request)
        response = Response.text("ok") if request.method == "OPTIONS" else await view(datasette, request)
        add_cors_headers(response.headers)
        response.headers["Access-Control-Expose-Headers"] = "Link, X-Total-Count"
        return response

    return answer
