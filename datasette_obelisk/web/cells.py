"""Links from the id columns of Datasette's table, row and query pages to the rows they name.

Our tables declare no foreign keys (SQLite adds one only by rebuilding the
table), so Datasette shows a session id, a log file's id or a tool call's id
as bare text. On an obelisk database a cell of one of these columns links to
the row it names, as a foreign key's cell would; JSON and CSV keep the value.

As Datasette labels an expanded foreign key, the link shows what the row is
called (a session's title, a log file's name, a tool call's tool, a
workflow's name) with the id after it; an id naming no row is left as bare
text, as Datasette leaves one. Labels are read only from a table the actor
may view, and kept for the page: a row naming ids not met before on it has
them read at once, with those of the session it names (its calls, its
agents), never one cell at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from datasette.utils import tilde_encode
from markupsafe import Markup

from .visibility import is_visible, recorded_databases

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
LABEL_LENGTH = 60  # characters of a label shown; the whole of a longer one is the link's title
IDS = "IN (SELECT value FROM json_each(?))"
MISSING = object()  # what an id naming no row is labelled


def basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Labels:
    """How the rows of one table are labelled: ``sql`` reads (id, label) for a JSON array of ids,
    ``session_sql`` for the rows of the session a row of ids names, which its neighbours are likely
    to name too (a page of tool results names one call a row: read each session's calls at once)."""

    sql: str
    session_sql: str | None = None
    shown: Callable[[str], str] = str


LABELS = {
    "sessions": Labels(f"SELECT id, title FROM sessions WHERE id {IDS}",
                       "SELECT id, title FROM sessions WHERE parent_session_id = ?"),  # its agents and forks
    "source_files": Labels(f"SELECT id, path FROM source_files WHERE id {IDS}", shown=basename),
    "tool_calls": Labels(f"SELECT id, name FROM tool_calls WHERE id {IDS}",
                         "SELECT id, name FROM tool_calls WHERE session_id = ?"),
    "workflows": Labels(f"SELECT run_id, workflow_name FROM workflows WHERE run_id {IDS}"),
}


def linked_cell(datasette, database: str, table: str | None, column: str, value, row=None, request=None):
    """The cell as a link to the row it names, None to leave it to Datasette, or an awaitable of either
    when labels must be read first."""
    target = REFERENCES.get(column)
    if (target is None or (table, column) in OWN_KEYS or not isinstance(value, (str, int)) or isinstance(value, bool)
            or value == "" or database not in recorded_databases(datasette)):
        return None
    if target not in LABELS:
        return link(datasette, database, target, value)
    page = request.scope.setdefault("obelisk_labels", {}) if request is not None else {}
    if (database, target) in page:
        labels = page[(database, target)]
        if labels is None:  # a table the actor may not view: no label from it
            return link(datasette, database, target, value)
        if str(value) in labels:
            return known_cell(datasette, database, target, value, labels)
    return labelled_link(datasette, database, table, target, value, row, page, request)


def known_cell(datasette, database: str, target: str, value, labels: dict) -> Markup | None:
    """The cell of an id whose label was read, made once a page (None: it names no row)."""
    key = str(value)
    if not isinstance(labels[key], Markup) and labels[key] is not MISSING:
        labels[key] = link(datasette, database, target, value, labels[key][0])
    return None if labels[key] is MISSING else labels[key]


def link(datasette, database: str, target: str, value, label=None) -> Markup:
    """A link to the row ``value`` names in ``target``, shown as Datasette shows a foreign key's."""
    href = datasette.urls.table(database, target) + "/" + tilde_encode(str(value))
    label = " ".join(LABELS[target].shown(label).split()) if isinstance(label, str) else ""
    if not label or label == str(value):
        return Markup('<a href="{}">{}</a>').format(href, value)
    if len(label) <= LABEL_LENGTH:
        return Markup('<a href="{}">{}</a>&nbsp;<em>{}</em>').format(href, label, value)
    return Markup('<a href="{}" title="{}">{}</a>&nbsp;<em>{}</em>').format(
        href, label, label[:LABEL_LENGTH - 1].rstrip().rstrip("\u200d") + "\u2026", value)


async def labelled_link(datasette, database, table, target, value, row, page, request):
    labels = await page_labels(datasette, database, target, page, request)
    if labels is None:
        return link(datasette, database, target, value)
    if str(value) not in labels:
        await read_labels(datasette, database, table, target, value, row, page, request)
    return known_cell(datasette, database, target, value, labels)


async def page_labels(datasette, database, target, page, request) -> dict | None:
    """What this page read of ``target``: for each id its (label,), its cell once made, or ``MISSING``
    when it names no row; None when the actor may not view ``target``."""
    key = (database, target)
    if key not in page:
        actor = request.actor if request is not None else None
        page[key] = {} if await is_visible(datasette, actor, database, target) else None
    return page[key]


async def read_labels(datasette, database, table, target, value, row, page, request) -> None:
    """Read the labels of ``value`` and of every other id of the row not read yet, in one go."""
    wanted: dict[str, set] = {target: {value}}
    for column, other in row_items(row):
        other_target = REFERENCES.get(column)
        if other_target not in LABELS or (table, column) in OWN_KEYS or not isinstance(other, (str, int)):
            continue
        labels = await page_labels(datasette, database, other_target, page, request)
        if labels is not None and str(other) not in labels:
            wanted.setdefault(other_target, set()).add(other)
    session = dict(row_items(row)).get("session_id")
    sessions_read = page.setdefault((database, "sessions read"), set())
    around = {name: session for name in wanted
              if LABELS[name].session_sql and isinstance(session, str) and (name, session) not in sessions_read}

    def read(conn):
        found = {}
        for name, ids in wanted.items():
            rows = conn.execute(LABELS[name].sql, [json.dumps(sorted(ids, key=str))]).fetchall()
            if name in around:
                rows += conn.execute(LABELS[name].session_sql, [around[name]]).fetchall()
            found[name] = rows
        return found

    for name, rows in (await datasette.get_database(database).execute_fn(read)).items():
        labels = page[(database, name)]
        labels.update((str(key), labels.get(str(key)) or (label,)) for key, label in rows)
        labels.update((str(key), MISSING) for key in wanted[name] if str(key) not in labels)
    sessions_read.update(around.items())


def row_items(row) -> list:
    """(column, value) of a row of results, when it tells its columns."""
    try:
        return list(zip(row.keys(), tuple(row)))
    except (AttributeError, TypeError):
        return []
