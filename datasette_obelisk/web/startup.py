"""What the plugin sets up when Datasette starts. It never writes to a user's database."""

from __future__ import annotations

from .browse import apply_browse_defaults
from .databases import obelisk_databases
from .stored_queries import register_stored_queries


async def configure(datasette) -> None:
    """Stored queries and browse defaults for each attached database that has our schema."""
    for name in await obelisk_databases(datasette):
        await register_stored_queries(datasette, name)
        await apply_browse_defaults(datasette, name)
