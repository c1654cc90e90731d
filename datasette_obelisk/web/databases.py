"""Which attached databases hold our schema, and which one a request means."""

from __future__ import annotations

from datasette.resources import DatabaseResource

from ..query.errors import QueryError
from ..store.db import has_schema
from .config import settings


async def obelisk_databases(datasette) -> list[str]:
    """Names of attached databases that have our schema, in attach order."""
    names = []
    for name, db in datasette.databases.items():
        if name == "_internal" or db.is_memory:
            continue
        if await db.execute_fn(has_schema):
            names.append(name)
    return names


async def database_for(datasette, request):
    """The database a page or endpoint works on: ``?db=``, the configured one, else the first
    with our schema the reader may view."""
    wanted = request.args.get("db") or settings(datasette).database
    names = await obelisk_databases(datasette)
    if wanted:
        if wanted not in names:
            viewable = await viewable_databases(datasette, request.actor, names)
            known = f"; this instance serves {', '.join(map(repr, viewable))}" if viewable else ""
            raise QueryError("OBELISK_NOT_FOUND", f"no obelisk database named {wanted!r}{known}")
        return datasette.get_database(wanted)
    if not names:
        raise QueryError(
            "OBELISK_NOT_FOUND", "no attached database has the obelisk schema: run `obelisk ingest` first"
        )
    viewable = await viewable_databases(datasette, request.actor, names) if len(names) > 1 else names
    return datasette.get_database((viewable or names)[0])  # (none viewable: the first, which answers 403)


async def viewable_databases(datasette, actor, names: list[str]) -> list[str]:
    """Those of ``names`` (databases with our schema) ``actor`` may view."""
    return [
        name for name in names
        if await datasette.allowed(action="view-database", resource=DatabaseResource(name), actor=actor)
    ]
