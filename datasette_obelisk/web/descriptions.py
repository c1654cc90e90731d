"""What Datasette's table pages say about our tables and columns, with no configuration.

Datasette shows a table's ``description`` above its rows, and lists the
described columns with theirs there too, so only the columns that need it
are described: the units of numbers (milliseconds, tokens, US dollars,
bytes) and the values of coded columns. They are set at startup for each
obelisk database, whatever its file is called, under what the user's
metadata says: a ``description`` given there for a table or column wins,
as does one set through Datasette's API. A description the package wrote
follows the package's text when that changes, also in an ``--internal``
database kept from an earlier start.
"""

from __future__ import annotations

TABLES = {
    "sessions": "One row per session, subagent transcript, fork or continuation; parent_session_id links them.",
    "messages": "Every log line of every session, in order (seq). surface says whether the model still sees it.",
    "tool_calls": "Every tool call an assistant message made, with its input (input_json) and the file it names.",
    "tool_results": "Tool output, one row per result (tool_use_id names its call); search finds failed output.",
    "subagents": "Agents a session started (Task, Agent, spawn calls): their type, task and transcript "
                 "(child_session_id).",
    "workflows": "Workflow runs a session started, with their script, outcome and agent count.",
    "workflow_agents": "The agents of each workflow run (run_id).",
    "summaries": "Away and compaction summaries, by session.",
    "titles": "Every title a log offers for a session; kind says where it comes from "
              "(custom, ai, name, index, summary, first_prompt).",
    "memories": "Markdown files people registered as memories (remember/forget).",
    "audit_log": "Every remember/forget made through the web, with who made it and why.",
    "pull_requests": "Pull requests Claude Code sessions linked (pr-link lines), by session.",
    "prompt_log": "Every prompt the agents' prompt logs kept (history.jsonl, Gemini's logs.json), "
                  "also of sessions whose transcript is gone.",
    "source_files": "Every log file read: its place, fingerprint, read cursor and line counts.",
    "ingest_errors": "Lines that could not be read, or were kept with repairs, with their file, line and byte offset.",
    "file_sessions": "Which log files name which sessions.",
    "session_links": "The parent another file names for a session (Codex's import ledger, cloud agents).",
    "message_aliases": "Message ids a log file repeats, and the stored message each one is.",
    "tool_call_files": "Every path a tool call names, one row per call and path.",
    "session_digests": "Each session's title and summaries, as session search reads them.",
    "session_docs": "Each session's words, as session search ranks them.",
    "browse_messages": "Messages with their session's project and branch and the tool they call or answer, "
                       "for faceting.",
    "browse_tool_calls": "Tool calls with their outcome, exit code, session and model, for faceting.",
    "browse_prompts": "Prompt-log prompts with in_transcript (1 when a stored transcript holds the session), "
                      "for faceting on what only the prompt logs tell.",
    "messages_search": "The message text messages_fts indexes.",
    "tool_errors_search": "The output of failed tool calls tool_errors_fts indexes.",
    "memories_search": "The memory paths and summaries memories_fts indexes.",
    "prompt_log_search": "The prompt text prompt_log_fts indexes.",
    "session_digests_search": "The session titles and summaries session_digests_fts indexes.",
}

COLUMNS = {
    "sessions": {
        "message_count": "Visible prompts and answers of the conversation (no tool calls or results, injected lines, "
                         "reasoning or summaries).",
        "relationship": "How it relates to its parent: subagent, workflow, fork, continuation, import or remote.",
        "availability": "live while a log file holds it, archived once its logs are gone from disk.",
        "title_source": "Where the title comes from (titles.kind).",
        "cost_usd": "Claude Code's estimate of the session's cost, in US dollars, as /cost shows it.",
    },
    "messages": {
        "surface": "current (the model sees it now), shadowed (rewound or compacted away) or log-only (structural).",
        "visibility": "visible, or inactive on an abandoned rewind branch.",
        "is_meta": "1 for text written in the user's name by someone else (hooks, injected context).",
        "usage_counted": "1 on the one line per API response whose token usage counts.",
        "turn_duration_ms": "How long the turn took, in milliseconds.",
    },
    "tool_calls": {"message_uuid": "The assistant message that made the call (messages.uuid)."},
    "tool_results": {
        "content": "The output: its first 10,000 characters, the whole of a failure's.",
        "content_length": "Length of the whole output, in characters.",
        "outcome": "succeeded, failed or blocked.",
        "agent_duration_ms": "How long the agent the call started ran, in milliseconds.",
        "agent_tokens": "Tokens the agent the call started used.",
    },
    "subagents": {
        "duration_ms": "How long it ran, in milliseconds.",
        "total_tokens": "Tokens it used.",
    },
    "workflows": {
        "duration_ms": "How long it ran, in milliseconds.",
        "total_tokens": "Tokens its agents used.",
    },
    "workflow_agents": {
        "duration_ms": "How long it ran, in milliseconds.",
        "tokens": "Tokens it used.",
    },
    "memories": {"anchors": "Recall anchors, a JSON array.",
                 "deleted_at": "When forget archived it (none while active)."},
    "source_files": {
        "size": "Size when last read, in bytes.",
        "mtime_ns": "Modification time when last read, in nanoseconds since 1970.",
        "ctime_ns": "Status-change time when a read last reached its end, in nanoseconds since 1970.",
        "cursor": "How far it has been read, in bytes.",
        "pending_bytes": "Bytes of a last line still being written, left for the next read.",
        "missing": "1 once the file is gone from disk (its rows are kept).",
    },
    "ingest_errors": {
        "byte_offset": "Where the line starts in the log file, in bytes.",
        "byte_length": "Length of the line, in bytes.",
    },
    "browse_prompts": {"in_transcript": "1 when a stored transcript holds the prompt, 0 when only the prompt log does."},
}


# What the package last wrote to each description (column "" for a table's own), so that
# the next start can tell its own text, refreshed when the package's changes, from a
# description someone else wrote since (metadata, datasette.yaml, Datasette's API): theirs stays.
WRITTEN = """CREATE TABLE IF NOT EXISTS obelisk_descriptions (
    database_name TEXT, resource_name TEXT, column_name TEXT, value TEXT,
    PRIMARY KEY (database_name, resource_name, column_name))"""
MINE = "database_name = ? AND resource_name = ? AND column_name = ?"


async def apply_descriptions(datasette, database: str) -> None:
    """Describe the tables, views and columns present in ``database``: those undescribed, and those
    still holding an earlier text of the package's own."""
    db = datasette.get_database(database)
    present = set(await db.table_names()) | set(await db.view_names())
    wanted = [(name, "", text) for name, text in TABLES.items() if name in present]
    for name, described in COLUMNS.items():
        if name in present:
            have = {column for column in await db.table_columns(name)}
            wanted += [(name, column, text) for column, text in described.items() if column in have]

    def write(conn):
        conn.execute(WRITTEN)
        for resource, column, text in wanted:
            write_description(conn, database, resource, column, text)
        kept = {(resource, column) for resource, column, _ in wanted}
        for resource, column, text in conn.execute("SELECT resource_name, column_name, value FROM "
                                                   "obelisk_descriptions WHERE database_name = ?", [database]).fetchall():
            if (resource, column) not in kept:  # a text the package no longer gives, or a table gone
                table, match, key = place(database, resource, column)
                conn.execute(f"DELETE FROM {table} WHERE {match} AND value = ?", (*key, text))
                conn.execute(f"DELETE FROM obelisk_descriptions WHERE {MINE}", (database, resource, column))

    await datasette.get_internal_database().execute_write_fn(write)


def place(database: str, resource: str, column: str) -> tuple[str, str, tuple]:
    """The metadata table holding a description, the condition matching its row, and the condition's values."""
    if column:
        return ("metadata_columns", "database_name = ? AND resource_name = ? AND column_name = ? AND key = 'description'",
                (database, resource, column))
    return "metadata_resources", "database_name = ? AND resource_name = ? AND key = 'description'", (database, resource)


def write_description(conn, database: str, resource: str, column: str, text: str) -> None:
    """Set one description to ``text`` unless someone else wrote it, and remember what was written."""
    table, match, key = place(database, resource, column)
    ours = (database, resource, column)
    current = conn.execute(f"SELECT value FROM {table} WHERE {match}", key).fetchone()
    written = conn.execute(f"SELECT value FROM obelisk_descriptions WHERE {MINE}", ours).fetchone()
    if current is None:
        names = "database_name, resource_name, column_name" if column else "database_name, resource_name"
        conn.execute(f"INSERT INTO {table} ({names}, key, value) VALUES ({', '.join('?' * len(key))}, 'description', ?)",
                     (*key, text))
    elif current[0] != text:
        if written is None or written[0] != current[0]:  # someone else's
            conn.execute(f"DELETE FROM obelisk_descriptions WHERE {MINE}", ours)
            return
        conn.execute(f"UPDATE {table} SET value = ? WHERE {match}", (text, *key))
    conn.execute("INSERT OR REPLACE INTO obelisk_descriptions VALUES (?, ?, ?, ?)", (*ours, text))
