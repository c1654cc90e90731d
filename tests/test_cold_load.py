"""A cold load (first ingest of many bytes) builds indexes once, at the end, and ends as any other ingest."""

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from dbsnapshot import snapshot
from query_fixtures import CORPUS, corpus_roots

from datasette_obelisk.demo.generator import generate
from datasette_obelisk.store import cold_load, derive
from datasette_obelisk.store.db import get_state, open_db, transaction
from datasette_obelisk.store.ingest import Ingester, ingest
from datasette_obelisk.plugins import get_sources


def schema(db) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cold") / "logs"
    generate(root, seed=5, target_bytes=900_000)
    return {"claude": root / ".claude", "codex": root / ".codex"}


def test_cold_load_equals_a_row_by_row_load(tmp_path, logs):
    ingest(tmp_path / "rows.db", logs, cold_load_bytes=None)
    ingest(tmp_path / "cold.db", logs, cold_load_bytes=0)
    assert snapshot(tmp_path / "cold.db") == snapshot(tmp_path / "rows.db")
    assert schema(tmp_path / "cold.db") == schema(tmp_path / "rows.db")
    conn = open_db(tmp_path / "cold.db")
    assert get_state(conn, cold_load.STATE_KEY) is None
    assert conn.execute("SELECT COUNT(*) FROM tool_errors_fts_docsize").fetchone()[0] == conn.execute(
        "SELECT COUNT(*) FROM tool_results WHERE outcome = 'failed' OR is_error = 1"
    ).fetchone()[0] > 0
    session_docs = conn.execute("SELECT session_id, body_words, meta_words FROM session_docs ORDER BY 1").fetchall()
    assert session_docs == open_db(tmp_path / "rows.db").execute(
        "SELECT session_id, body_words, meta_words FROM session_docs ORDER BY 1"
    ).fetchall()


@pytest.mark.parametrize("corpus_logs", ["generated", "shared"])
def test_derivations_planned_while_indexes_build_equal_those_worked_out_later(
    tmp_path, logs, monkeypatch, corpus_logs
):
    """Every queued session planned before the indexes are built (the builder
    thread otherwise decides how many): the database is the same."""
    if corpus_logs == "shared" and not CORPUS.exists():
        pytest.skip("shared corpus not found")
    roots = logs if corpus_logs == "generated" else corpus_roots()
    planned, used = [], []
    plan_session, derive_sessions = derive.plan_session, derive.derive_sessions

    ahead = []

    def plan_all_then_finish(conn, step):
        ahead.append(True)
        while step():
            pass
        ahead.clear()
        with transaction(conn):
            cold_load.finish(conn)

    def counting_plan(conn, session_id, words=None):
        if ahead:
            planned.append(session_id)
        return plan_session(conn, session_id, words)

    def counting_derive(conn, session_ids, words=None, plans=None, **options):
        before = set(plans or ())
        derived = derive_sessions(conn, session_ids, words, plans, **options)
        used.extend(before - set(plans or ()))
        return derived

    monkeypatch.setattr(cold_load, "finish_alongside", plan_all_then_finish)
    monkeypatch.setattr(derive, "plan_session", counting_plan)
    monkeypatch.setattr(derive, "derive_sessions", counting_derive)
    ingest(tmp_path / "rows.db", roots, cold_load_bytes=None)
    ingest(tmp_path / "cold.db", roots, cold_load_bytes=0, read_ahead_bytes=None)
    conn = open_db(tmp_path / "cold.db")
    sessions = {row[0] for row in conn.execute("SELECT id FROM sessions")}
    # Sessions with inline sidechain lines to regroup are derived later, as
    # are the subagent sessions those lines then make.
    grouped = {
        row[0]
        for row in conn.execute("SELECT DISTINCT session_id FROM messages WHERE session_id LIKE '%:agent-sidechain-%'")
    }
    parents = {child.split(":agent-sidechain-")[0] for child in grouped}
    assert grouped and parents and set(planned).isdisjoint(parents)
    assert len(planned) == len(set(planned))
    assert set(planned) >= sessions - grouped - parents  # (a queued id may have no rows)
    assert sorted(used) == sorted(planned)
    assert snapshot(tmp_path / "cold.db") == snapshot(tmp_path / "rows.db")


def test_a_plan_made_stale_by_new_rows_is_worked_out_again(tmp_path, logs):
    db = tmp_path / "o.db"
    ingest(db, logs)
    conn = open_db(db)
    conn.row_factory = sqlite3.Row
    session_id = conn.execute(
        "SELECT session_id FROM messages GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1"
    ).fetchone()[0]
    plans = {session_id: derive.plan_session(conn, session_id)}
    with transaction(conn):  # a compaction summary arrives before the plan is used
        conn.execute(
            "INSERT INTO messages (uuid, session_id, seq, source, type, role, text, text_length, "
            "is_compact_summary, file_id, line_no, byte_offset, byte_length) "
            "SELECT 'late-summary', session_id, MAX(seq) + 1, source, 'user', 'user', 'summary so far', 14, "
            "1, file_id, MAX(line_no) + 1, MAX(byte_offset) + 1, 1 FROM messages WHERE session_id = ?",
            [session_id],
        )
        derive.derive_sessions(conn, [session_id], plans=plans)
    assert plans == {}
    shadowed = conn.execute(
        "SELECT COUNT(*) FROM messages WHERE session_id = ? AND surface = 'shadowed' AND replaced_by = 'late-summary'",
        [session_id],
    ).fetchone()[0]
    assert shadowed > 0
    assert conn.execute(
        "SELECT messages FROM session_docs WHERE session_id = ?", [session_id]
    ).fetchone()[0] == conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", [session_id]).fetchone()[0]


def test_cold_load_of_the_shared_corpus(tmp_path):
    if not CORPUS.exists():
        pytest.skip("shared corpus not found")
    ingest(tmp_path / "rows.db", corpus_roots(), cold_load_bytes=None)
    ingest(tmp_path / "cold.db", corpus_roots(), cold_load_bytes=0)
    assert snapshot(tmp_path / "cold.db") == snapshot(tmp_path / "rows.db")


def test_small_first_ingest_and_later_runs_are_not_cold(tmp_path, logs):
    db = tmp_path / "o.db"
    conn = open_db(db)
    ingester = Ingester(conn, get_sources(), logs, cold_load_bytes=10 << 20)
    ingester.begin_cold_load(1 << 20)
    assert not cold_load.active(conn)
    ingester.run()
    assert not cold_load.active(conn)
    with_indexes = schema(db)
    # A database that holds messages never starts a cold load again.
    ingester = Ingester(conn, get_sources(), logs, cold_load_bytes=0)
    ingester.begin_cold_load(1 << 40)
    assert not cold_load.active(conn)
    assert schema(db) == with_indexes


def test_during_a_cold_load_indexes_are_dropped_and_text_waits(tmp_path, logs):
    db = tmp_path / "o.db"
    conn = open_db(db)
    full = {row[1] for row in schema(db) if row[0] == "index"}
    triggers = {row[1] for row in schema(db) if row[0] == "trigger"}
    ingester = Ingester(conn, get_sources(), {"claude": logs["claude"]}, cold_load_bytes=0)
    ingester.begin_cold_load(1)
    for unit in ingester.discover():
        ingester.ingest_file(unit)
    ingester.flush(force=True)
    during = {row[1] for row in schema(db) if row[0] == "index"}
    assert full - during == {
        "messages_api_message", "messages_conversation", "messages_cwd", "messages_open_subtypes", "messages_parent",
        "messages_session_rows", "messages_session_time", "messages_timestamp", "tool_call_files_path",
        "tool_calls_name", "tool_calls_session", "tool_calls_timestamp", "tool_results_session",
    }
    assert triggers - {row[1] for row in schema(db) if row[0] == "trigger"} == {"messages_ai", "tool_results_ai"}
    stored = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert stored > 0
    assert conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'the'").fetchone()[0] == 0
    # The next run (here: after a crash) finishes the load before anything else.
    Ingester(conn, get_sources(), {"claude": logs["claude"]}).run()
    assert {row[1] for row in schema(db) if row[0] == "index"} == full
    assert {row[1] for row in schema(db) if row[0] == "trigger"} == triggers
    assert conn.execute("SELECT COUNT(*) FROM messages_fts_docsize").fetchone()[0] == stored
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_a_file_read_again_during_a_cold_load_keeps_the_index_whole(tmp_path, logs):
    """Rows deleted mid-load must be in the FTS index first, or their delete triggers corrupt it."""
    db = tmp_path / "o.db"
    conn = open_db(db)
    ingester = Ingester(conn, get_sources(), {"claude": logs["claude"]}, cold_load_bytes=0)
    ingester.begin_cold_load(1)
    units = ingester.discover()
    for unit in units:
        ingester.ingest_file(unit)
    conn.execute("UPDATE source_files SET parser_version = 0 WHERE path = ?", [str(units[0].path)])
    ingester.ingest_file(units[0])  # replayed: its rows are deleted and read again
    ingester.flush(force=True)
    ingester.finish_cold_load()
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    assert conn.execute("SELECT COUNT(*) FROM messages_fts_docsize").fetchone()[0] == conn.execute(
        "SELECT COUNT(*) FROM messages"
    ).fetchone()[0]


def reread_everything(db) -> list[int]:
    """What a parser change does: every file is read again from its start."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    ids = [row[0] for row in conn.execute("SELECT id FROM source_files ORDER BY id")]
    conn.close()
    return ids


def fts_rows(conn) -> tuple:
    return (
        conn.execute("SELECT COUNT(*) FROM messages_fts_docsize").fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM tool_errors_fts_docsize").fetchone()[0],
    )


def test_a_parser_change_is_read_in_as_a_reload(tmp_path, logs, monkeypatch):
    ingest(tmp_path / "first.db", logs, cold_load_bytes=None)
    db = tmp_path / "o.db"
    ingest(db, logs, cold_load_bytes=None)
    reread_everything(db)
    seen = []
    begin = cold_load.begin
    rewrites = lambda conn: int(get_state(conn, "rewrites"))  # noqa: E731

    def watched_begin(conn, files_read_again=()):
        before = rewrites(conn)
        started = begin(conn, files_read_again)
        seen.append((started, orjson.loads(get_state(conn, cold_load.STATE_KEY)), fts_rows(conn), before, rewrites(conn)))
        return started

    monkeypatch.setattr(cold_load, "begin", watched_begin)
    summary = ingest(db, logs, cold_load_bytes=0)
    [(started, state, emptied, rewrites_before, rewrites_begun)] = seen
    assert (started, state["reload"], state["messages"], state["tool_results"], emptied) == (True, True, 0, 0, (0, 0))
    assert rewrites_begun == rewrites_before + 1  # once for the reload, not once per message it deletes
    dropped = {sql.split()[2] for sql in state["schema"] if sql.startswith("CREATE TRIGGER")}
    assert dropped == {
        "messages_ai", "messages_ad", "messages_au", "tool_results_ai", "tool_results_ad",
        "tool_results_au", "messages_rewritten_ad", "messages_rewritten_au",
    }
    assert summary.files_replayed == summary.files == len(reread_everything(tmp_path / "first.db"))
    assert snapshot(db) == snapshot(tmp_path / "first.db")
    assert schema(db) == schema(tmp_path / "first.db")
    conn = open_db(db)
    assert get_state(conn, cold_load.STATE_KEY) is None
    triggers = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages_rewritten_%' ORDER BY 1"
    assert [name for (name,) in conn.execute(triggers)] == ["messages_rewritten_ad", "messages_rewritten_au"]
    assert rewrites(conn) >= rewrites_begun  # (then the sidechain lines it groups again move, as on any ingest)
    spans = conn.execute("SELECT value FROM obelisk_state WHERE key GLOB 'rewrites@*'").fetchall()
    assert ("0",) in spans  # (its span rewrote every message: every cursor before it is stale)
    assert fts_rows(conn) == fts_rows(open_db(tmp_path / "first.db"))
    assert fts_rows(conn) == (
        conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM tool_results WHERE outcome = 'failed' OR is_error = 1").fetchone()[0],
    )
    # (Without rank: it indexes only the failures, so it never matches its whole content table.)
    conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts) VALUES ('integrity-check')")
    docs = "SELECT session_id, body_words, meta_words FROM session_docs ORDER BY 1"
    assert conn.execute(docs).fetchall() == open_db(tmp_path / "first.db").execute(docs).fetchall()
    counted = rewrites(conn)
    with transaction(conn):  # the triggers count again after the reload
        conn.execute("DELETE FROM messages WHERE id = (SELECT MAX(id) FROM messages)")
    assert rewrites(conn) == counted + 1


def test_a_reload_indexes_the_archived_rows_again(tmp_path, logs):
    """The rows of a file gone from disk are not read again, yet stay searchable."""
    root = tmp_path / "logs"
    shutil.copytree(logs["claude"].parent, root)
    roots = {"claude": root / ".claude", "codex": root / ".codex"}
    db = tmp_path / "o.db"
    ingest(db, roots, cold_load_bytes=None)
    conn = open_db(db)
    gone, message_id, word = conn.execute(
        "SELECT f.path, m.id, m.text FROM messages m JOIN source_files f ON f.id = m.file_id "
        "WHERE m.text GLOB '*[a-z]*' AND f.path LIKE '%.jsonl' ORDER BY m.id LIMIT 1"
    ).fetchone()
    word = next(w for w in word.split() if w.isalpha())
    Path(gone).unlink()
    ingest(db, roots, cold_load_bytes=None)
    reread_everything(db)
    ingest(db, roots, cold_load_bytes=0)
    assert conn.execute("SELECT availability FROM sessions WHERE id = (SELECT session_id FROM messages WHERE id = ?)",
                        [message_id]).fetchone()[0] == "archived"
    found = [row[0] for row in conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", [f'"{word}"'])]
    assert message_id in found
    assert fts_rows(conn)[0] == conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_reading_again_the_files_of_too_few_messages_is_no_reload(tmp_path, logs):
    db = tmp_path / "o.db"
    ingest(db, logs, cold_load_bytes=None)
    conn = open_db(db)
    by_file = conn.execute(
        "SELECT file_id, COUNT(*) FROM messages GROUP BY file_id ORDER BY COUNT(*), file_id"
    ).fetchall()
    total = sum(count for _, count in by_file)
    most, held = [], 0
    for file_id, count in by_file:
        if held + count >= cold_load.RELOAD_SHARE * total:
            break
        most.append(file_id)
        held += count
    assert len(most) > 1
    before = fts_rows(conn)
    with transaction(conn):
        assert not cold_load.begin(conn, most)
        assert not cold_load.begin(conn, [])
    assert fts_rows(conn) == before and get_state(conn, cold_load.STATE_KEY) is None
    with transaction(conn):
        assert cold_load.begin(conn, most + [by_file[len(most)][0]])  # the file that reaches the share
    assert orjson.loads(get_state(conn, cold_load.STATE_KEY))["reload"] is True
    assert fts_rows(conn) == (0, 0)
    with transaction(conn):
        cold_load.finish(conn)
    assert fts_rows(conn) == before
    assert schema(db) == schema_after_ingest(tmp_path, logs)


def schema_after_ingest(tmp_path, logs) -> list:
    ingest(tmp_path / "reference.db", logs, cold_load_bytes=None)
    return schema(tmp_path / "reference.db")


def test_a_cold_load_merges_its_fts_segments_once_at_its_end(tmp_path, logs):
    db = tmp_path / "o.db"
    conn = open_db(db)
    merging = lambda: dict(conn.execute("SELECT k, v FROM messages_fts_config WHERE k IN ('automerge', 'crisismerge')"))  # noqa: E731
    segments = lambda: conn.execute("SELECT COUNT(DISTINCT segid) FROM messages_fts_idx").fetchone()[0]  # noqa: E731
    ingester = Ingester(conn, get_sources(), logs, cold_load_bytes=0)
    units = ingester.discover()
    ingester.begin_cold_load(1)
    assert merging() == cold_load.LOAD_MERGE
    for unit in units:
        ingester.ingest_file(unit)
        ingester.flush(force=True)
        with transaction(conn):
            cold_load.index_pending_text(conn, 20)  # as the writer does while it waits
    assert segments() > 16  # not merged along the way
    with transaction(conn):
        cold_load.finish(conn)
    assert segments() == 1
    assert merging() == cold_load.FTS5_DEFAULTS
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0] == conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_searches_and_the_overview_answer_while_a_cold_load_has_dropped_their_indexes(tmp_path, logs):
    from datasette_obelisk.query import dashboard
    from datasette_obelisk.query.search import search_sessions
    from datasette_obelisk.store.session_index import update_session_documents

    db = tmp_path / "o.db"
    conn = open_db(db)
    ingester = Ingester(conn, get_sources(), {"claude": logs["claude"]}, cold_load_bytes=0)
    ingester.begin_cold_load(1)
    for unit in ingester.discover():
        ingester.ingest_file(unit)
    ingester.flush(force=True)
    with transaction(conn):  # what the ingester does while it waits for its readers, and derivations
        cold_load.index_pending_text(conn)
        update_session_documents(conn, [row[0] for row in conn.execute("SELECT id FROM sessions")])
    assert not {"messages_session_rows", "messages_timestamp"} & {row[1] for row in schema(db) if row[0] == "index"}
    read = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    read.row_factory = sqlite3.Row
    found = search_sessions(read, "the", limit=3)["items"]
    assert len(found) == 3 and all(item["best"] for item in found)
    assert dashboard.activity(read)["buckets"]
    # Finished: the indexes are back and named again.
    Ingester(conn, get_sources(), {"claude": logs["claude"]}).run()
    assert {"messages_session_rows", "messages_timestamp"} <= {row[1] for row in schema(db) if row[0] == "index"}
    assert len(search_sessions(read, "the", limit=3)["items"]) == 3 and dashboard.activity(read)["buckets"]


def test_a_second_connection_that_cannot_open_is_an_error_not_a_hang(tmp_path, monkeypatch):
    conn = open_db(tmp_path / "obelisk.db")
    steps = []

    def refused(path):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(cold_load, "connect", refused)
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        cold_load.finish_alongside(conn, lambda: steps.append(1) and False)
    assert steps == []  # nothing was planned without the write lock held
    conn.close()
