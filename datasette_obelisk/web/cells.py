"""Links from the id columns of Datasette's table, row and query pages to the rows they name.

Our tables declare no foreign keys (SQLite adds one only by rebuilding the
table), so Datasette shows a session id, a log file's id or a tool call's id
as bare text. On an obelisk database a cell of one of these columns links to
the row it names, as a foreign key's cell would; JSON and CSV keep the value.
"""

from __future__ import annotations

from datasette.utils import tilde_encode
from markupsafe import Markup

from .visibility import recorded_databases

# column -> the table whose primary key it holds (workflows.run_id is that key itself:
# Datasette links it already)
OWN_KEYS = {("workflows", "run_id")}
REFERENCES = {
    "session_id": "sessions",
    "parent_session_id": "sessions",
    "child_session_id": "sessions",
    "continued_in": "sessions",
    "file_id": "source_files",
    "tool_use_id": "tool_calls",
    "result_id": "tool_results",
    "run_id": "workflows",
}


def linked_cell(datasette, database: str, table: str | None, column: str, value) -> Markup | None:
    """The cell as a link to the row it names, or None to leave it to Datasette."""
    target = REFERENCES.get(column)
    if (target is None or (table, column) in OWN_KEYS or not isinstance(value, (str, int)) or isinstance(value, bool)
            or value == "" or database not in recorded_databases(datasette)):
        return None
    href = datasette.urls.table(database, target) + "/" + tilde_encode(str(value))
    return Markup('<a href="{}">{}</a>').format(href, value)
