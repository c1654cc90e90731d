"""sqlite-utils hooks: ``sqlite-utils obelisk-ingest`` and the SQL functions."""

import sqlite_utils


@sqlite_utils.hookimpl
def register_commands(cli):
    from .cli import ingest

    cli.add_command(ingest, name="obelisk-ingest")


@sqlite_utils.hookimpl
def prepare_connection(conn):
    from .web.sql_functions import register_functions

    register_functions(conn)
