"""The schema, pinned: tables and their columns, FTS tables, triggers and views."""


import subprocess
import sys

import pytest
import sqlite_utils

from datasette_obelisk import cjk
from datasette_obelisk.query.dashboard import failed
from datasette_obelisk.store.db import LATEST_MIGRATION, is_current, open_db
from datasette_obelisk.store.migrations import migrations


@pytest.fixture
def conn(tmp_path):
    return open_db(tmp_path / "schema.db")


def columns(conn, table):
    return [row[1] for row in conn.execute(f"PRAGMA table_info('{table}')")]


def test_migrations_in_order(conn):
    assert [m.name for m in migrations._migrations] == [
        "m001_create_tables",
        "m002_create_fts",
        "m003_create_indexes",
        "m004_create_session_index",
        "m005_create_audit_log",
        "m006_create_browse_views",
        "m007_create_file_sessions",
        "m008_clip_stored_tool_output",
        "m009_index_ungrouped_sidechains",
        "m010_rederive_compaction_boundaries",
        "m011_create_message_aliases",
        "m012_add_agent_totals_to_tool_results",
        "m013_create_session_digests",
        "m014_add_rowid_to_browse_views",
        "m015_look_up_model_in_browse_tool_calls",
        "m016_reread_files_with_renamed_messages",
        "m017_queue_empty_sessions",
        "m018_add_file_sessions_started_at",
        "m019_add_discovery_to_source_files",
        "m020_index_tool_calls_by_timestamp",
        "m021_rederive_conversation_counts",
        "m022_create_pull_requests",
        "m023_add_subagents_sources",
        "m024_add_sessions_reasoning_effort",
        "m025_canonical_session_times",
        "m026_recount_compacted_sessions",
        "m027_mark_interruptions",
        "m028_reread_attachment_details",
        "m029_reread_lone_surrogate_lines",
        "m030_reread_retitled_files",
        "m031_forget_gone_files_never_read",
        "m032_rederive_archived_sessions",
        "m033_refuse_older_parsers",
        "m034_rederive_archived_rewinds",
        "m035_rederive_archived_agents_and_titles",
        "m036_index_cjk_characters_apart",
        "m037_add_session_tags_and_continuations",
        "m038_add_sessions_agent_and_team_names",
        "m039_add_sessions_cost_and_worktree",
        "m040_add_tool_results_output_uuid",
        "m041_merge_tool_result_update_triggers",
        "m042_create_session_links",
        "m043_index_failed_tool_results",
        "m044_index_conversation_messages",
        "m045_key_ingest_errors_by_line",
        "m046_create_derive_tallies",
        "m047_add_source_files_ctime",
        "m048_add_file_sessions_ended_at",
        "m049_index_error_flagged_results",
        "m050_normalise_file_paths",
        "m051_reread_invalid_utf8_lines",
        "m052_count_message_rewrites",
        "m053_record_rewritten_ids",
        "m054_create_prompt_log",
        "m055_add_subagents_remote",
        "m056_hold_prompts_by_time",
        "m057_record_time_order",
        "m058_index_emoji_apart",
        "m059_index_digests_and_memories_apart",
        "m060_index_tool_names_and_odd_roles",
        "m061_index_other_kinds",
        "m062_index_open_subtypes",
        "m063_index_spawning_calls",
    ]
    applied = [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    assert applied == [m.name for m in migrations._migrations]
    assert LATEST_MIGRATION == migrations._migrations[-1].name
    assert [m.name[:4] for m in migrations._migrations] == [f"m{n:03}" for n in range(1, len(migrations._migrations) + 1)]


def test_an_older_database_is_brought_up_to_date(tmp_path):
    path = tmp_path / "old.db"
    migrations.apply(sqlite_utils.Database(path), stop_before=LATEST_MIGRATION)
    older = sqlite_utils.Database(path)
    assert not is_current(older.conn)
    older.close()
    conn = open_db(path)
    assert is_current(conn)
    assert conn.execute("SELECT count(*) FROM _sqlite_migrations").fetchone()[0] == len(migrations._migrations)


def test_opening_a_current_database_loads_no_migrations(tmp_path):
    open_db(tmp_path / "current.db").close()
    code = (
        "import sys; from datasette_obelisk.store.db import open_db; "
        f"open_db({str(tmp_path / 'current.db')!r}); "
        "print(sorted(m for m in sys.modules if m.startswith(('sqlite_utils', 'datasette_obelisk.store.migrations'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_tables_and_columns(conn):
    tables = {
        name: columns(conn, name)
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%' "
            "AND name NOT LIKE 'sqlite_%' AND name != '_sqlite_migrations' ORDER BY name"
        )
    }
    assert tables == EXPECTED_TABLES


def test_fts_tables(conn):
    sql = {
        name: " ".join(sql.split())
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
        )
    }
    assert sql == {
        "memories_fts": "CREATE VIRTUAL TABLE memories_fts USING fts5( path, summary, content='memories_search', content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2' )",
        "messages_fts": "CREATE VIRTUAL TABLE messages_fts USING fts5( text, content='messages_search', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2' )",
        "prompt_log_fts": "CREATE VIRTUAL TABLE prompt_log_fts USING fts5( text, content='prompt_log_search', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2' )",
        "session_docs_fts": "CREATE VIRTUAL TABLE session_docs_fts USING fts5( body, meta, content='', tokenize='porter unicode61 remove_diacritics 2' )",
        "session_digests_fts": "CREATE VIRTUAL TABLE session_digests_fts USING fts5( title, summary, content='session_digests_search', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2' )",
        "tool_errors_fts": "CREATE VIRTUAL TABLE tool_errors_fts USING fts5( content, content='tool_errors_search', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2' )",
    }


def test_triggers(conn):
    triggers = {
        name: (table, " ".join(sql.split()))
        for name, table, sql in conn.execute(
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
        )
    }
    assert {name: table for name, (table, _) in triggers.items()} == {
        "memories_ad": "memories", "memories_ai": "memories", "memories_au": "memories",
        "messages_ad": "messages", "messages_ai": "messages", "messages_au": "messages",
        "messages_rewritten_ad": "messages", "messages_rewritten_au": "messages",
        "prompt_log_ad": "prompt_log", "prompt_log_ai": "prompt_log", "prompt_log_au": "prompt_log",
        "session_digests_ad": "session_digests", "session_digests_ai": "session_digests", "session_digests_au": "session_digests",
        "sessions_digest_ai": "sessions", "sessions_digest_au": "sessions",
        "summaries_digest_ad": "summaries", "summaries_digest_ai": "summaries", "summaries_digest_au": "summaries",
        "tool_results_ad": "tool_results", "tool_results_ai": "tool_results",
        "tool_results_au": "tool_results",
    }
    assert triggers["messages_ai"][1] == (
        "CREATE TRIGGER messages_ai AFTER INSERT ON messages "
        "WHEN NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk') BEGIN "
        "INSERT INTO messages_fts (rowid, text) VALUES (new.id, coalesce(new.search_text, new.text)); END"
    )
    assert triggers["messages_au"][1] == (
        "CREATE TRIGGER messages_au AFTER UPDATE OF text, search_text ON messages BEGIN "
        "INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, coalesce(old.search_text, old.text)); "
        "INSERT INTO messages_fts (rowid, text) VALUES (new.id, coalesce(new.search_text, new.text)); END"
    )
    # tool_errors_fts holds the failures the failures list shows (dashboard.failed): failed or flagged an error.
    assert triggers["tool_results_ai"][1] == (
        "CREATE TRIGGER tool_results_ai AFTER INSERT ON tool_results WHEN (new.outcome = 'failed' OR new.is_error = 1) "
        "AND NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk') BEGIN "
        "INSERT INTO tool_errors_fts (rowid, content) VALUES (new.id, coalesce(new.search_content, new.content)); END"
    )
    assert triggers["tool_results_ad"][1] == (
        "CREATE TRIGGER tool_results_ad AFTER DELETE ON tool_results WHEN old.outcome = 'failed' OR old.is_error = 1 "
        "BEGIN INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content) "
        "VALUES ('delete', old.id, coalesce(old.search_content, old.content)); END"
    )
    assert triggers["tool_results_au"][1] == (
        "CREATE TRIGGER tool_results_au AFTER UPDATE OF content, outcome, is_error, search_content ON tool_results "
        "BEGIN INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content) "
        "SELECT 'delete', old.id, coalesce(old.search_content, old.content) WHERE old.outcome = 'failed' OR old.is_error = 1; "
        "INSERT INTO tool_errors_fts (rowid, content) SELECT new.id, coalesce(new.search_content, new.content) "
        "WHERE new.outcome = 'failed' OR new.is_error = 1; END"
    )


def test_views(conn):
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")] == [
        "browse_messages", "browse_prompts", "browse_tool_calls", "memories_search", "messages_search",
        "prompt_log_search", "session_digests_search", "tool_errors_search",
    ]
    views = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'"))
    assert columns(conn, "browse_prompts") == [
        "id", "source", "session_id", "project", "timestamp", "text", "pasted_json", "in_transcript", "file_path", "line_no",
    ]
    assert " ".join(views["prompt_log_search"].split()) == (
        "CREATE VIEW prompt_log_search AS SELECT id, coalesce(search_text, text) AS text FROM prompt_log"
    )
    assert " ".join(views["memories_search"].split()) == (
        "CREATE VIEW memories_search AS SELECT pk, path, coalesce(search_summary, summary) AS summary FROM memories"
    )
    assert " ".join(views["session_digests_search"].split()) == (
        "CREATE VIEW session_digests_search AS SELECT id, coalesce(search_title, title) AS title, "
        "coalesce(search_summary, summary) AS summary FROM session_digests"
    )
    assert " ".join(views["messages_search"].split()) == (
        "CREATE VIEW messages_search AS SELECT id, coalesce(search_text, text) AS text FROM messages"
    )
    assert " ".join(views["tool_errors_search"].split()) == (
        "CREATE VIEW tool_errors_search AS SELECT id, coalesce(search_content, content) AS content "
        "FROM tool_results WHERE outcome = 'failed' OR is_error = 1"
    )


def test_prompt_log_fts_follows_its_rows(conn):
    conn.execute("INSERT INTO prompt_log (source, session_id, text) VALUES ('codex', 'codex:t', 'zebra crossing')")
    match = "SELECT rowid FROM prompt_log_fts WHERE prompt_log_fts MATCH ?"
    assert conn.execute(match, ["zebra"]).fetchall() == [(1,)]
    conn.execute("UPDATE prompt_log SET text = 'giraffe' WHERE id = 1")
    assert conn.execute(match, ["zebra"]).fetchall() == []
    assert conn.execute(match, ["giraffe"]).fetchall() == [(1,)]
    conn.execute("DELETE FROM prompt_log")
    assert conn.execute(match, ["giraffe"]).fetchall() == []
    conn.execute("INSERT INTO prompt_log_fts (prompt_log_fts, rank) VALUES ('integrity-check', 1)")


def test_triggers_keep_fts_in_step_with_other_writers(conn):
    conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, text, file_id, line_no, byte_offset, byte_length) "
                 "VALUES ('u1', 's', 1, 'x', 'user', 'zebra crossing', 0, 1, 0, 1)")
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'zebra'").fetchall() == [(1,)]
    conn.execute("UPDATE messages SET text = 'giraffe' WHERE uuid = 'u1'")
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'zebra'").fetchall() == []
    conn.execute("DELETE FROM messages")
    assert conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'giraffe'").fetchone() == (0,)
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_rewrites_count_messages_deleted_moved_or_rewritten_not_added(conn):
    """Search cursors go on while messages are only added (query/search.py)."""
    def rewrites():
        return conn.execute("SELECT value FROM obelisk_state WHERE key = 'rewrites'").fetchone()[0]

    assert rewrites() == "0"
    conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, text, file_id, line_no, byte_offset, byte_length) "
                 "VALUES ('u1', 's', 1, 'x', 'user', 'zebra', 0, 1, 0, 1), ('u2', 's', 2, 'x', 'user', 'lion', 0, 2, 1, 1)")
    conn.execute("UPDATE messages SET seq = seq, text = text, surface = surface, visibility = 'inactive', "
                 "replaced_by = 'u9', usage_counted = 0")  # (no rewrite)
    assert rewrites() == "0"
    conn.execute("UPDATE messages SET text = 'giraffe' WHERE uuid = 'u1'")
    conn.execute("UPDATE messages SET seq = 3 WHERE uuid = 'u2'")
    conn.execute("UPDATE messages SET session_id = 't' WHERE uuid = 'u2'")
    assert rewrites() == "3"
    conn.execute("UPDATE messages SET surface = 'shadowed' WHERE uuid = 'u2'")  # a rewind or compaction read later
    conn.execute("UPDATE messages SET is_meta = 1 WHERE uuid = 'u2'")
    conn.execute("UPDATE messages SET visibility = 'hidden' WHERE uuid = 'u1'")
    assert rewrites() == "6"
    conn.execute("DELETE FROM messages")
    assert rewrites() == "8"


def test_rewrites_fall_in_spans_that_keep_the_lowest_id_rewritten(conn):
    """A write transaction opens a span of rewrites when the last one holds one
    (query/cursors.py ``rewritten_since`` reads them); the oldest are forgotten."""
    from datasette_obelisk.store.db import REWRITE_SPANS_KEPT, transaction

    def spans():
        return conn.execute("SELECT key, value FROM obelisk_state WHERE key GLOB 'rewrites@*' ORDER BY key").fetchall()

    assert spans() == [("rewrites@" + "0" * 19, "")]
    conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, text, file_id, line_no, byte_offset, byte_length) "
                 "VALUES ('u1', 's', 1, 'x', 'user', 'a', 0, 1, 0, 1), ('u2', 's', 2, 'x', 'user', 'b', 0, 2, 1, 1), "
                 "('u3', 's', 3, 'x', 'user', 'c', 0, 3, 2, 1)")
    with transaction(conn):
        conn.execute("UPDATE messages SET text = 'z' WHERE uuid IN ('u3', 'u2')")
    with transaction(conn):
        pass  # (no rewrite: no span)
    with transaction(conn):
        conn.execute("DELETE FROM messages WHERE uuid = 'u3'")
    with transaction(conn):
        pass
    assert spans() == [(f"rewrites@{n:019}", low) for n, low in ((0, "2"), (2, "3"), (3, ""))]
    for _ in range(REWRITE_SPANS_KEPT + 5):
        with transaction(conn):
            conn.execute("UPDATE messages SET seq = -seq WHERE uuid = 'u1'")
    kept = spans()
    assert len(kept) == REWRITE_SPANS_KEPT and kept[-1] == (f"rewrites@{REWRITE_SPANS_KEPT + 7:019}", "1")


def test_a_failed_tool_output_updated_in_place_stays_indexed_once(conn):
    """Redaction rewrites stored output in place: the index loses the old words and
    keeps the new, also the words both hold, and a result no longer failed leaves it."""
    conn.execute("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, outcome, file_id) "
                 "VALUES ('t1', 'u1', 's', 'Exit code 1 zebra', 'failed', 0)")

    def matches(word):
        return conn.execute("SELECT rowid FROM tool_errors_fts WHERE tool_errors_fts MATCH ?", [word]).fetchall()

    conn.execute("UPDATE tool_results SET content = 'Exit code 1 giraffe' WHERE tool_use_id = 't1'")
    assert (matches("zebra"), matches("giraffe"), matches("exit")) == ([], [(1,)], [(1,)])
    conn.execute("UPDATE tool_results SET outcome = 'failed' WHERE tool_use_id = 't1'")
    assert matches("exit") == [(1,)]
    conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("UPDATE tool_results SET outcome = 'succeeded' WHERE tool_use_id = 't1'")
    assert matches("exit") == []
    conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)")


def test_a_result_flagged_an_error_is_indexed_whatever_its_outcome(conn):
    """The failures list shows a result failed or flagged an error (a refused or blocked call,
    an interrupted command): tool_errors_fts indexes the same, as its outcome or flag change."""
    conn.execute("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, outcome, is_error, file_id) "
                 "VALUES ('t1', 'u1', 's', 'This command requires approval', 'blocked', 1, 0), "
                 "('t2', 'u2', 's', 'turn aborted zebra', 'succeeded', 0, 0)")

    def matches(word):
        return conn.execute("SELECT rowid FROM tool_errors_fts WHERE tool_errors_fts MATCH ? ORDER BY rowid",
                            [word]).fetchall()

    def listed():
        return conn.execute(f"SELECT id FROM tool_results WHERE {failed()} ORDER BY id").fetchall()

    assert matches("approval") == listed() == [(1,)]
    conn.execute("UPDATE tool_results SET outcome = 'cancelled', is_error = 1 WHERE tool_use_id = 't2'")
    assert matches("zebra") == [(2,)] and listed() == [(1,), (2,)]
    conn.execute("UPDATE tool_results SET is_error = 0 WHERE tool_use_id = 't2'")
    assert matches("zebra") == listed()[1:] == []
    conn.execute("UPDATE tool_results SET content = 'Permission to use Bash denied' WHERE tool_use_id = 't1'")
    assert (matches("approval"), matches("denied")) == ([], [(1,)])
    conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("DELETE FROM tool_results WHERE tool_use_id = 't1'")
    assert matches("denied") == listed() == []
    conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)")


def test_the_text_indexed_sets_cjk_characters_apart_whoever_writes(conn):
    conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, text, search_text, file_id, line_no, "
                 "byte_offset, byte_length) VALUES ('u1', 's', 1, 'x', 'user', '数据库', ?, 0, 1, 0, 1)",
                 [cjk.search_text("数据库")])
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", [cjk.split('"数据"')]).fetchall() == [(1,)]
    conn.execute("UPDATE messages SET text = '迁移', search_text = ? WHERE uuid = 'u1'", [cjk.search_text("迁移")])
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", [cjk.split('"数据"')]).fetchall() == []
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", [cjk.split('"移"')]).fetchall() == [(1,)]
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("DELETE FROM messages")
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == (0,)


EXPECTED_TABLES = {
    'audit_log': [
        'id', 'created_at', 'actor_id', 'actor_json', 'action', 'database_name', 'memory_id',
        'reason', 'detail_json',
    ],
    'message_aliases': ['file_id', 'uuid', 'stored_as'],
    'session_digests': ['id', 'session_id', 'title', 'summary', 'search_title', 'search_summary'],
    'session_links': ['id', 'session_id', 'parent_session_id', 'relationship', 'file_id'],
    'derive_queue': [
        'session_id',
    ],
    'derive_tallies': [
        'session_id', 'last_id', 'last_seq', 'rows', 'started_at', 'ended_at', 'conversation',
        'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_creation_tokens', 'cwds',
        'git_branch', 'model', 'time_ordered',
    ],
    'file_sessions': [
        'file_id', 'session_id', 'started_at', 'ended_at',
    ],
    'ingest_errors': [
        'id', 'file_id', 'path', 'line_no', 'byte_offset', 'byte_length', 'reason', 'created_at',
    ],
    'memories': [
        'pk', 'id', 'session_id', 'project', 'message_start', 'message_end', 'path', 'anchors',
        'summary', 'created_at', 'deleted_at', 'deleted_reason', 'search_summary',
    ],
    'messages': [
        'id', 'uuid', 'session_id', 'seq', 'source', 'type', 'subtype', 'role', 'parent_uuid',
        'logical_parent_uuid', 'timestamp', 'text', 'text_length', 'content_type', 'is_meta',
        'visibility', 'surface', 'replaced_by', 'is_sidechain', 'is_compact_summary', 'agent_id',
        'model', 'cwd', 'git_branch', 'api_message_id', 'request_id', 'input_tokens',
        'output_tokens', 'cache_read_tokens', 'cache_creation_tokens', 'usage_counted',
        'stop_reason', 'turn_duration_ms', 'meta_json', 'file_id', 'line_no', 'byte_offset',
        'byte_length', 'search_text',
    ],
    'obelisk_state': [
        'key', 'value',
    ],
    'prompt_log': [
        'id', 'source', 'session_id', 'project', 'timestamp', 'text', 'search_text', 'pasted_json', 'file_id',
        'line_no', 'byte_offset', 'byte_length',
    ],
    'pull_requests': [
        'id', 'session_id', 'url', 'number', 'repository', 'timestamp', 'file_id',
    ],
    'session_docs': [
        'id', 'session_id', 'first_id', 'last_id', 'messages', 'chars', 'meta_messages',
        'body_words', 'meta_words',
    ],
    'sessions': [
        'id', 'source', 'title', 'title_source', 'project', 'project_path', 'cwd', 'git_branch',
        'git_commit', 'repository', 'version', 'model', 'originator', 'started_at', 'ended_at',
        'message_count', 'parent_session_id', 'relationship', 'agent_id', 'agent_type',
        'is_excluded', 'availability', 'jsonl_path', 'input_tokens', 'output_tokens',
        'cache_read_tokens', 'cache_creation_tokens', 'updated_at', 'project_source', 'reasoning_effort', 'tag', 'continued_in',
        'agent_name', 'team_name', 'cost_usd', 'lines_added', 'lines_removed', 'relocated_cwd', 'worktree_path',
        'worktree_branch', 'worktree_base_branch', 'ended_by_model', 'time_ordered',
    ],
    'source_files': [
        'id', 'path', 'source', 'kind', 'layout', 'compression', 'device', 'inode', 'size',
        'mtime_ns', 'head_hash', 'tail_hash', 'cursor', 'line_no', 'pending_bytes',
        'parser_version', 'parser_state', 'generation', 'missing', 'lines_read', 'lines_stored',
        'lines_merged', 'lines_failed', 'first_seen_at', 'ingested_at', 'last_error', 'hints',
        'priority', 'ctime_ns',
    ],
    'subagents': [
        'id', 'agent_id', 'session_id', 'child_session_id', 'parent_tool_use_id', 'agent_type',
        'description', 'duration_ms', 'total_tokens', 'agent_type_source', 'description_source', 'remote_url',
        'remote_session_id',
    ],
    'summaries': [
        'id', 'session_id', 'timestamp', 'source', 'content', 'visibility', 'message_uuid',
        'file_id',
    ],
    'titles': [
        'id', 'session_id', 'kind', 'title', 'timestamp', 'leaf_uuid', 'file_id',
    ],
    'tool_call_files': [
        'tool_call_id', 'path',
    ],
    'tool_calls': [
        'id', 'message_uuid', 'session_id', 'name', 'presentation', 'input_json', 'file_path',
        'timestamp', 'file_id',
    ],
    'tool_results': [
        'id', 'tool_use_id', 'message_uuid', 'session_id', 'content', 'content_length', 'file_path',
        'is_error', 'outcome', 'exit_code', 'agent_id', 'timestamp', 'file_id', 'agent_duration_ms', 'agent_tokens',
        'search_content', 'output_uuid',
    ],
    'workflow_agents': [
        'agent_id', 'run_id', 'session_id', 'agent_type', 'description', 'phase', 'label', 'model',
        'state', 'duration_ms', 'tokens', 'tool_calls', 'file_id',
    ],
    'workflows': [
        'run_id', 'session_id', 'parent_tool_use_id', 'task_id', 'script', 'result_json',
        'timestamp', 'agent_count', 'duration_ms', 'total_tokens', 'status', 'workflow_name',
        'file_id',
    ],
}


def test_indexes(conn):
    assert [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' "
            "AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name"
        )
    ] == [
        "messages_api_message", "messages_conversation", "messages_cwd", "messages_file", "messages_message_lines",
        "messages_open_subtypes", "messages_other_kind", "messages_other_role", "messages_parent", "messages_session_rows", "messages_session_seq",
        "messages_session_time", "messages_timestamp", "messages_ungrouped_sidechain",
    ]
    # Deriving a session reads only its inline sidechain lines still to group.
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM messages "
        "WHERE session_id = ? AND is_sidechain = 1 AND agent_id IS NULL ORDER BY seq",
        ["s"],
    ).fetchall()
    assert [row[3] for row in plan] == [
        "SEARCH messages USING INDEX messages_ungrouped_sidechain (session_id=?)"
    ]


def test_deriving_a_session_searches_its_agents_by_index(conn):
    # Run once per derived session: a scan of sessions made a first ingest of 50,000 files take 325 s.
    from datasette_obelisk.store.derive import AGENT_TYPE_UPDATE, SPAWN_SPEC_UPDATE

    for sql in (AGENT_TYPE_UPDATE, SPAWN_SPEC_UPDATE):
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, {"s": "x"})]
        assert not [step for step in plan if step.startswith("SCAN")], plan


def test_failures_are_read_from_their_own_index(conn):
    # A scan of tool_results read every output to find the failures (twice a failures page).
    from datasette_obelisk.query import dashboard, obelisk
    from datasette_obelisk.web.stored_queries import QUERIES

    _, where = obelisk._failure_scope(conn, {}, {})
    failures = {
        "failures": f"SELECT tr.id {obelisk.FAILURE_FROM} WHERE {where} "
                    f"ORDER BY {obelisk.moment_sql(obelisk.FAILURE_AT)} DESC, tr.id DESC LIMIT 50",
        "failure_count": f"SELECT COUNT(*) {obelisk.FAILURE_FROM} WHERE {where}",
        "overview": f"SELECT COUNT(*) FROM tool_results WHERE {dashboard.failed()} AND outcome = 'blocked'",
        "stored query": next(q.sql for q in QUERIES if q.name == "obelisk_failures"),
    }
    for name, sql in failures.items():
        params = {p: "" for p in ("session_id", "project", "source", "limit")} if name == "stored query" else where.params
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
        assert any("USING INDEX tool_results_failed" in step for step in plan), (name, plan)
    found = conn.execute(f"SELECT COUNT(*) FROM tool_results r WHERE {dashboard.failed('r')} AND r.session_id = ?", ["s"])
    assert found.fetchone() == (0,)


def test_the_overview_counts_conversation_messages_from_their_own_index(conn):
    # A scan of messages read every text to reach the columns after it (m044).
    from datasette_obelisk.query.dashboard import MESSAGES_PER_DAY

    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + MESSAGES_PER_DAY)]
    assert plan[0] == "SCAN messages USING INDEX messages_conversation", plan


def test_a_tool_output_read_after_its_results_finds_them_by_index(conn):
    from datasette_obelisk.store.writer import RESULTS_OF_OUTPUT

    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + RESULTS_OF_OUTPUT, ["s:tool-results/x.txt"])]
    assert plan == ["SEARCH tool_results USING INDEX tool_results_output (output_uuid=?)"]


def test_two_processes_creating_the_same_database_both_succeed(tmp_path):
    code = "import sys; from datasette_obelisk.store.db import open_db, is_current; print(is_current(open_db(sys.argv[1])))"
    for attempt in range(5):
        db = tmp_path / f"new-{attempt}.db"
        runs = [subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        results = [run.communicate() for run in runs]
        assert [(run.returncode, out.strip()) for run, (out, _) in zip(runs, results)] == [(0, "True"), (0, "True")], results


def test_migration_scripts_are_cut_into_the_statements_sqlite_utils_finds(tmp_path, monkeypatch):
    """Migrations run their scripts statement by statement, cut at the semicolons that
    complete one: the statements sqlite-utils's character-by-character cut gives."""
    from sqlite_utils.db import _iter_complete_sql_statements

    from datasette_obelisk.store import db as store_db

    scripts = []
    cut = store_db.complete_statements
    monkeypatch.setattr(store_db, "complete_statements", lambda sql: scripts.append(sql) or cut(sql))
    tricky = [
        "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; SELECT ';'; END; SELECT 3 -- no semicolon",
        "SELECT 1; -- a comment; with one\n SELECT 2;", " ; ;", "", "SELECT 'a;b'",
    ]
    open_db(tmp_path / "cut.db")
    assert len(scripts) > 20
    for sql in scripts + tricky:
        assert list(cut(sql)) == list(_iter_complete_sql_statements(sql))


def test_a_transcript_page_finds_the_agents_and_workflows_its_calls_started_by_index(conn):
    # Without an index on the calling id, each call read every agent of its session and each
    # page built a throwaway index of every workflow (m063).
    from datasette_obelisk.query.transcript import PAGE_CALLS_SQL

    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + PAGE_CALLS_SQL.format(marks="?"), ["s", "m"])]
    assert "SEARCH sa USING INDEX subagents_tool_call (parent_tool_use_id=?) LEFT-JOIN" in plan, plan
    assert "SEARCH w USING INDEX workflows_tool_call (parent_tool_use_id=?) LEFT-JOIN" in plan, plan
    assert not [step for step in plan if "AUTOMATIC" in step], plan
