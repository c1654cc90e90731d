"""Every route the plugin registers; write routes only when the instance is not read-only.

The last one answers any other path under the API root with a JSON 404.
"""

from __future__ import annotations

from .config import settings


def routes(datasette) -> list:
    from .api import api_fallback, api_routes
    from .pages import page_routes

    found = page_routes() + api_routes()
    if not settings(datasette).read_only:
        from .writes import write_routes

        found += write_routes()
    return found + [api_fallback()]
