"""datasette-obelisk: agent session logs in SQLite, served by Datasette.

This module holds the Datasette hook implementations; each delegates to a
small module under ``web/``.
"""

from datasette import hookimpl


@hookimpl
def register_commands(cli):
    from .cli import cli as obelisk

    cli.add_command(obelisk, name="obelisk")
