"""datasette-obelisk: agent session logs in SQLite, served by Datasette.

This module holds the Datasette hook implementations; each delegates to a
small module under ``web/``. The imports are inside the hooks so that the
ingester and the CLI, which import this package too, never load the web face.
The marker is pluggy's own (what ``datasette.hookimpl`` is), so importing
this package does not import Datasette: the CLI starts in a third of the time.
"""

import pluggy

hookimpl = pluggy.HookimplMarker("datasette")


@hookimpl
def register_commands(cli):
    from .cli import cli as obelisk

    cli.add_command(obelisk, name="obelisk")


@hookimpl(trylast=True)  # after Datasette's own, whose escape_fts it replaces
def prepare_connection(conn):
    from .web.connections import tune
    from .web.sql_functions import register_escape_fts, register_functions

    register_functions(conn)
    register_escape_fts(conn)
    tune(conn)


@hookimpl
def startup(datasette):
    from .web.startup import configure

    async def inner():
        await configure(datasette)

    return inner


@hookimpl
def permission_resources_sql(datasette, actor, action):
    from .web.startup import current_hidden_resources

    if action in ("view-table", "view-query"):
        return current_hidden_resources(datasette, actor, action)
    return None


@hookimpl
def register_actions(datasette):
    from .web.actions import write_actions

    return write_actions()


@hookimpl
def register_routes(datasette):
    from .web.routes import routes

    return routes(datasette)


@hookimpl
def menu_links(datasette, actor, request):
    from .web.menus import menu_links

    return menu_links(datasette, request)


@hookimpl
def database_actions(datasette, actor, database, request):
    from .web.menus import database_actions

    return database_actions(datasette, database)


@hookimpl
def table_actions(datasette, actor, database, table, request):
    from .web.menus import table_actions

    return table_actions(datasette, database, table, request)


@hookimpl
def view_actions(datasette, actor, database, view, request):
    from .web.menus import table_actions

    return table_actions(datasette, database, view, request)


@hookimpl
def render_cell(row, value, column, table, database, datasette, request):
    from .web.cells import linked_cell

    return linked_cell(datasette, database, table, column, value, row, request)


@hookimpl
def row_actions(datasette, actor, request, database, table, row):
    from .web.menus import row_actions

    return row_actions(datasette, database, table, row)
