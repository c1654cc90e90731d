"""Zero-config search and facets on Datasette's own table and view pages.

Our FTS tables are declared ``content='messages_search'`` (single quotes), which
Datasette's detection does not recognise, and views are never detected. At
startup the plugin adds this table configuration for each obelisk database,
under whatever the user configured: their ``datasette.yaml`` always wins.
The views get no default sort: sorting every match of a common word
would cost more than a page, while unsorted pages stop at the page size.

A facet reads every row the page's filters select, so the default facets
are the cheap ones. On browse_messages each facet reads all messages
(~60-75 ms on 137,000): source and project are shown, role and the date of
timestamp are one click away. The facets of browse_tool_calls take ~25-40 ms
on 33,000 calls (m015 keeps the message lookup out of them).
"""

from __future__ import annotations

import copy

DATE = {"date": "timestamp"}

TABLE_DEFAULTS = {
    "messages": {"fts_table": "messages_fts", "fts_pk": "id"},
    "tool_results": {"fts_table": "tool_errors_fts", "fts_pk": "id"},
    "memories": {"fts_table": "memories_fts", "fts_pk": "pk"},
    "session_digests": {"fts_table": "session_digests_fts", "fts_pk": "id"},
    # The views the indexes read their text from: the same index, keyed as it is.
    "messages_search": {"fts_table": "messages_fts", "fts_pk": "id"},
    "tool_errors_search": {"fts_table": "tool_errors_fts", "fts_pk": "id"},
    "memories_search": {"fts_table": "memories_fts", "fts_pk": "pk"},
    "prompt_log_search": {"fts_table": "prompt_log_fts", "fts_pk": "id"},
    "session_digests_search": {"fts_table": "session_digests_fts", "fts_pk": "id"},
    "sessions": {"label_column": "title", "sort_desc": "ended_at"},
    "pull_requests": {"sort_desc": "timestamp", "facets": ["repository"]},
    "prompt_log": {"fts_table": "prompt_log_fts", "fts_pk": "id", "sort_desc": "timestamp", "facets": ["source"]},
    "browse_prompts": {
        "fts_table": "prompt_log_fts",
        "fts_pk": "id",
        "facets": ["source", "in_transcript", "project"],
    },
    "browse_messages": {
        "fts_table": "messages_fts",
        "fts_pk": "id",
        "facets": ["source", "project"],
    },
    "browse_tool_calls": {
        "fts_table": "tool_errors_fts",
        "fts_pk": "result_id",
        "facets": ["tool_name", "outcome", "source", "project", DATE],
    },
    "derive_queue": {"hidden": True},
    "derive_tallies": {"hidden": True},
    "obelisk_state": {"hidden": True},
    "_sqlite_migrations": {"hidden": True},
}


def with_browse_defaults(config: dict | None, database: str, present: set[str]) -> dict:
    """``config`` plus our defaults for the tables and views ``present`` in ``database``."""
    merged = copy.deepcopy(config or {})
    tables = merged.setdefault("databases", {}).setdefault(database, {}).setdefault("tables", {})
    for name, defaults in TABLE_DEFAULTS.items():
        if name not in present:
            continue
        table = tables.setdefault(name, {})
        for key, value in defaults.items():
            table.setdefault(key, copy.deepcopy(value))
    return merged


async def apply_browse_defaults(datasette, database: str) -> None:
    db = datasette.get_database(database)
    present = set(await db.table_names()) | set(await db.view_names())
    datasette.config = with_browse_defaults(datasette.config, database, present)
