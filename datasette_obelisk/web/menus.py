"""Menu links and table/row actions that lead from Datasette's pages to ours."""

from __future__ import annotations

from .databases import obelisk_databases, viewable_databases
from .urls import event_url, lineage_url, obelisk_url, session_url

# Which of our pages a table (or browse view) leads to.
TABLE_PAGES = {
    "sessions": ("", "Search sessions in Obelisk"),
    "messages": ("", "Search messages in Obelisk"),
    "browse_messages": ("", "Search messages in Obelisk"),
    "tool_calls": ("/files", "File history in Obelisk"),
    "tool_call_files": ("/files", "File history in Obelisk"),
    "browse_tool_calls": ("/files", "File history in Obelisk"),
    "tool_results": ("/failures", "Failures in Obelisk"),
    "memories": ("/memories", "Memories in Obelisk"),
    "summaries": ("/overview", "Obelisk overview"),
}


def menu_links(datasette, request):
    async def inner():
        actor = request.actor if request is not None else None
        names = await obelisk_databases(datasette)
        viewable = await viewable_databases(datasette, actor, names)  # shown to an actor who may view one
        if not viewable:
            return []
        # The archive being looked at (?db= on our pages, the path on Datasette's), else the first one viewable.
        here = (request.args.get("db") or request.url_vars.get("database")) if request is not None else None
        name = here if here in viewable else viewable[0]
        db = name if name != names[0] else None
        return [
            {"href": obelisk_url(datasette, db=db), "label": "Obelisk: search"},
            {"href": obelisk_url(datasette, "/overview", db=db), "label": "Obelisk: overview"},
        ]

    return inner


def database_actions(datasette, database):
    async def inner():
        if database not in await obelisk_databases(datasette):
            return []
        return [
            {"href": obelisk_url(datasette, db=database), "label": "Search in Obelisk"},
            {"href": obelisk_url(datasette, "/overview", db=database), "label": "Obelisk overview"},
        ]

    return inner


# The column of a table (or view) that names one file: filtered to one path,
# its action opens that file's history.
FILE_COLUMNS = {"tool_calls": "file_path", "browse_tool_calls": "file_path", "tool_call_files": "path"}


def table_actions(datasette, database, table, request=None):
    async def inner():
        if table not in TABLE_PAGES or database not in await obelisk_databases(datasette):
            return []
        path, label = TABLE_PAGES[table]
        args = request.args if request is not None else {}
        query = {}
        if path in ("", "/memories"):  # the search page's text, the memories page's recall
            query["q"] = args.get("_search") or args.get("_search_text")
        elif path == "/files" and table in FILE_COLUMNS:
            column = FILE_COLUMNS[table]
            query["path"] = args.get(column) or args.get(f"{column}__exact")
        return [{"href": obelisk_url(datasette, path, db=database, **query), "label": label}]

    return inner


def row_actions(datasette, database, table, row):
    async def inner():
        if database not in await obelisk_databases(datasette):
            return []
        return row_links(datasette, database, table, dict(row))

    return inner


def row_links(datasette, database: str, table: str, row: dict) -> list[dict]:
    if table == "sessions":
        return [
            {"href": session_url(datasette, row["id"], db=database), "label": "Open transcript"},
            {"href": lineage_url(datasette, row["id"], db=database), "label": "Lineage"},
        ]
    if table in ("messages", "browse_messages") and row.get("session_id") and row.get("seq") is not None:
        return [
            {"href": event_url(datasette, row["session_id"], row["seq"], db=database, id=row.get("uuid")),
             "label": "Open event"},
            {"href": session_url(datasette, row["session_id"], db=database), "label": "Open transcript"},
        ]
    if table in ("tool_calls", "browse_tool_calls", "tool_results", "summaries", "subagents", "workflows",
                 "pull_requests") and row.get(
        "session_id"
    ):
        links = [{"href": session_url(datasette, row["session_id"], db=database), "label": "Open transcript"}]
        if row.get("file_path"):
            links.append({"href": obelisk_url(datasette, "/files", db=database, path=row["file_path"]), "label": "File history"})
        return links
    return []
