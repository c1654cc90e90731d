"""tool_errors_fts indexes the tool results the failures list shows: those that
failed and those flagged an error whatever their outcome (a call the user refused
or the permissions blocked, a Codex escalation not granted, a command interrupted),
however they were written: a cold load, a load row by row, a log read as it grows,
a database migrated from before."""

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from dbsnapshot import diff, rows, snapshot
from query_fixtures import CORPUS, corpus_roots

from datasette_obelisk import cjk
from datasette_obelisk.query.dashboard import failed
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.store.tool_output import CLIP_CHARS

LISTED = f"SELECT tool_use_id FROM tool_results WHERE {failed()} ORDER BY tool_use_id"
INDEXED = "SELECT r.tool_use_id FROM tool_errors_fts_docsize d JOIN tool_results r ON r.id = d.id ORDER BY r.tool_use_id"
FLAGGED = "SELECT tool_use_id, outcome FROM tool_results WHERE is_error = 1 AND outcome != 'failed' ORDER BY tool_use_id"
MATCHED = ("SELECT r.tool_use_id FROM tool_errors_fts f JOIN tool_results r ON r.id = f.rowid "
           "WHERE tool_errors_fts MATCH ? ORDER BY r.tool_use_id")

HANDGEMACHT = "claude-code/handgemacht-ai__claude-code-log/2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl"
SMALL = "claude-code/jazzyalex__agent-sessions/small.jsonl"
ESCALATION = "codex/kvsankar__agent-history/codex_with_escalation.jsonl"
# Where each would be written below its source's folder.
LAYOUT = {
    HANDGEMACHT: ("claude", "projects/-tmp-handgemacht/2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl"),
    SMALL: ("claude", "projects/-tmp-small/small.jsonl"),
    ESCALATION: ("codex", "sessions/2025/12/05/rollout-2025-12-05T11-00-00-rejection-codex-001.jsonl"),
}
FLAGGED_IN = {
    HANDGEMACHT: [
        ("toolu_01BthPUJnWMFncBSdCSPRaUG", "blocked"), ("toolu_01EsVvZ4nxzQwcwtQTrueKZu", "blocked"),
        ("toolu_01F4ppjDcUiThU63BZcDVui7", "blocked"), ("toolu_01MLnjng5kzsKDeZhJwTvjfS", "blocked"),
        ("toolu_01WQwUoCeJPGrT5FzxyAM49V", "blocked"), ("toolu_01WWAhL5R6PcKEADr4CKav17", "blocked"),
    ],
    SMALL: [("u2b:0", "blocked")],
    ESCALATION: [("codex:rejection-codex-001:call_esc_002", "blocked"),
                 ("codex:rejection-codex-001:call_esc_004", "blocked")],
}
ALL_FLAGGED = sorted(sum(FLAGGED_IN.values(), []))


def needs_corpus():
    if not CORPUS.exists():
        pytest.skip("shared corpus not found")


def every_corpus_log(base: Path) -> dict:
    """The folders of the shared corpus, each Codex rollout where Codex finds it."""
    roots = corpus_roots()
    sessions = base / "codex" / "sessions" / "2026" / "01" / "01"
    sessions.mkdir(parents=True)
    for n, path in enumerate(sorted((CORPUS / "codex").rglob("*.jsonl"))):
        shutil.copyfile(path, sessions / f"rollout-2026-01-01T00-00-00-{n:08}-0000-4000-8000-{path.stem}.jsonl")
    return roots | {"codex": base / "codex"}


@pytest.fixture(scope="module")
def corpus_dbs(tmp_path_factory):
    needs_corpus()
    base = tmp_path_factory.mktemp("failure-search")
    roots = every_corpus_log(base)
    ingest(base / "rows.db", roots, cold_load_bytes=None)
    ingest(base / "cold.db", roots, cold_load_bytes=0)
    return base / "rows.db", base / "cold.db"


def test_every_failure_listed_is_found_by_its_text(corpus_dbs):
    rows_db, cold_db = corpus_dbs
    for db in corpus_dbs:
        assert rows(db, FLAGGED) == ALL_FLAGGED
        assert rows(db, f"SELECT COUNT(*) FROM tool_results WHERE {failed()}") == [(33,)]
        assert rows(db, INDEXED) == rows(db, LISTED)
        assert rows(db, MATCHED, ["approval"]) == [
            ("toolu_01BthPUJnWMFncBSdCSPRaUG",), ("toolu_01EsVvZ4nxzQwcwtQTrueKZu",),
            ("toolu_01WQwUoCeJPGrT5FzxyAM49V",)]
        assert rows(db, MATCHED, ['"escalation not granted"']) == [
            ("codex:rejection-codex-001:call_esc_002",), ("codex:rejection-codex-001:call_esc_004",)]
        assert rows(db, MATCHED, ['"want to proceed"']) == [("u2b:0",)]
        assert rows(db, "INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)") == []
    assert snapshot(cold_db) == snapshot(rows_db)


@pytest.mark.asyncio
async def test_the_tool_results_page_searches_every_failure(corpus_dbs):
    from datasette.app import Datasette

    ds = Datasette([str(corpus_dbs[1])])
    for path, key in [("/cold/tool_results.json", "tool_use_id"), ("/cold/browse_tool_calls.json", "id")]:
        response = await ds.client.get(path, params={"_search": "approval", "_shape": "objects"})
        assert response.status_code == 200, response.text[:500]
        found = sorted(row[key] for row in response.json()["rows"])
        assert found == ["toolu_01BthPUJnWMFncBSdCSPRaUG", "toolu_01EsVvZ4nxzQwcwtQTrueKZu",
                         "toolu_01WQwUoCeJPGrT5FzxyAM49V"], path


def lay_out(root: Path, relative: str, data: bytes) -> dict:
    source, below = LAYOUT[relative]
    path = root / source / below
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {source: root / source}


@pytest.mark.parametrize("relative", [HANDGEMACHT, SMALL, ESCALATION])
def test_a_log_read_as_it_grows_indexes_the_failures_a_cold_load_does(tmp_path, relative):
    """A log read line by line (Codex's blocked escalations are written once a later line
    follows) ends with the index a cold load and a load row by row of it whole give."""
    needs_corpus()
    lines = (CORPUS / relative).read_bytes().splitlines(keepends=True)
    live = tmp_path / "live.db"
    for n in range(1, len(lines) + 1):
        ingest(live, lay_out(tmp_path / "live", relative, b"".join(lines[:n])))
        assert rows(live, INDEXED) == rows(live, LISTED), n
    ingest(tmp_path / "cold.db", lay_out(tmp_path / "whole", relative, b"".join(lines)), cold_load_bytes=0)
    ingest(tmp_path / "rows.db", lay_out(tmp_path / "whole", relative, b"".join(lines)), cold_load_bytes=None)
    assert rows(live, FLAGGED) == FLAGGED_IN[relative]
    assert {tool_use_id for tool_use_id, _ in FLAGGED_IN[relative]} <= {r[0] for r in rows(live, INDEXED)}
    got, cold, by_rows = snapshot(live), snapshot(tmp_path / "cold.db"), snapshot(tmp_path / "rows.db")
    assert got["tool_errors_fts"] and got == cold == by_rows, diff(got, cold)


# A Bash command the user interrupted, its long output (CJK text among it) flagged an error.
SESSION = "5f0e4c1a-0000-4000-8000-00000000000a"
LONG_OUTPUT = "构建 zebrafault step\n" * 800 + "interrupted by user"


def claude_line(uuid: str, parent: str | None, message: dict, **extra) -> bytes:
    return orjson.dumps({
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/tmp/p", "sessionId": SESSION,
        "version": "2.1.80", "type": message["role"], "message": message, "uuid": uuid,
        "timestamp": f"2026-01-01T00:00:0{len(uuid)}.000Z", **extra,
    }) + b"\n"


def interrupted_log(projects: Path) -> dict:
    """Its log, in the project folder ``-tmp-p`` of ``projects``."""
    path = projects / "-tmp-p" / f"{SESSION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        claude_line("u", None, {"role": "user", "content": "build it"})
        + claude_line("aa", "u", {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_long", "name": "Bash", "input": {"command": "make"}}]})
        + claude_line("uuu", "aa", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_long", "content": LONG_OUTPUT, "is_error": True}]},
            toolUseResult={"stdout": LONG_OUTPUT, "stderr": "", "interrupted": True})
    )
    return {"claude": projects}


def test_a_long_flagged_output_is_kept_whole_and_indexed_as_written(tmp_path):
    db = tmp_path / "o.db"
    ingest(db, interrupted_log(tmp_path / "projects"))
    assert rows(db, "SELECT tool_use_id, outcome, is_error, content = ?, content_length, search_content = ? "
                    "FROM tool_results", [LONG_OUTPUT, cjk.search_text(LONG_OUTPUT)]) == [
        ("toolu_long", "cancelled", 1, 1, len(LONG_OUTPUT), 1)]
    assert len(LONG_OUTPUT) > CLIP_CHARS
    assert rows(db, MATCHED, ["interrupted"]) == rows(db, MATCHED, [cjk.split('"构建"')]) == [("toolu_long",)]


# What the version before made of these rows: the index of failed outcomes alone (m036, m041).
BEFORE = f"""
DROP TRIGGER tool_results_ai;
DROP TRIGGER tool_results_ad;
DROP TRIGGER tool_results_au;
DROP VIEW tool_errors_search;
CREATE VIEW tool_errors_search AS
    SELECT id, coalesce(search_content, content) AS content FROM tool_results WHERE outcome = 'failed';
CREATE TRIGGER tool_results_ai AFTER INSERT ON tool_results
WHEN new.outcome = 'failed'
    AND NOT EXISTS (SELECT 1 FROM obelisk_state WHERE key = 'bulk')
BEGIN
    INSERT INTO tool_errors_fts (rowid, content) VALUES (new.id, coalesce(new.search_content, new.content));
END;
CREATE TRIGGER tool_results_ad AFTER DELETE ON tool_results
WHEN old.outcome = 'failed'
BEGIN
    INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
    VALUES ('delete', old.id, coalesce(old.search_content, old.content));
END;
CREATE TRIGGER tool_results_au AFTER UPDATE OF content, outcome, search_content ON tool_results BEGIN
    INSERT INTO tool_errors_fts (tool_errors_fts, rowid, content)
    SELECT 'delete', old.id, coalesce(old.search_content, old.content) WHERE old.outcome = 'failed';
    INSERT INTO tool_errors_fts (rowid, content)
    SELECT new.id, coalesce(new.search_content, new.content) WHERE new.outcome = 'failed';
END;
UPDATE tool_results SET search_content = NULL WHERE outcome != 'failed';
UPDATE tool_results SET content = substr(content, 1, {CLIP_CHARS})
WHERE content_length > {CLIP_CHARS} AND outcome != 'failed'
  AND content = (SELECT text FROM messages WHERE uuid = tool_results.message_uuid);
INSERT INTO tool_errors_fts (tool_errors_fts) VALUES ('rebuild');
DELETE FROM _sqlite_migrations WHERE name = 'm049_index_error_flagged_results';
"""


def schema(db) -> list:
    return rows(db, "SELECT type, name, sql FROM sqlite_master ORDER BY type, name")


@pytest.mark.parametrize("killed_cold_load", [False, True])
def test_a_database_from_before_is_indexed_as_a_fresh_one(tmp_path, killed_cold_load):
    needs_corpus()
    roots = every_corpus_log(tmp_path)
    shutil.copytree(roots["claude"], tmp_path / "projects")
    roots.update(interrupted_log(tmp_path / "projects"))
    ingest(tmp_path / "fresh.db", roots)
    ingest(tmp_path / "old.db", roots)
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    conn.executescript(BEFORE)
    if killed_cold_load:  # a reload begun by the version before and never finished: its triggers dropped
        from datasette_obelisk.store import cold_load

        conn.execute("BEGIN IMMEDIATE")
        assert cold_load.begin(conn, [file_id for (file_id,) in conn.execute("SELECT id FROM source_files")])
        conn.execute("COMMIT")
        assert rows(tmp_path / "old.db", "SELECT name FROM sqlite_master WHERE name LIKE 'tool_results_a_'") == []
    else:
        assert rows(tmp_path / "old.db", INDEXED) != rows(tmp_path / "old.db", LISTED)
        assert rows(tmp_path / "old.db", "SELECT length(content) FROM tool_results WHERE tool_use_id = 'toolu_long'") == [
            (CLIP_CHARS,)]
    conn.close()
    open_db(tmp_path / "old.db").close()
    old, fresh = snapshot(tmp_path / "old.db"), snapshot(tmp_path / "fresh.db")
    assert old == fresh, diff(old, fresh)
    assert schema(tmp_path / "old.db") == schema(tmp_path / "fresh.db")
    assert rows(tmp_path / "old.db", INDEXED) == rows(tmp_path / "old.db", LISTED)
    assert rows(tmp_path / "old.db", FLAGGED) == sorted(ALL_FLAGGED + [("toolu_long", "cancelled")])
    assert rows(tmp_path / "old.db", MATCHED, [cjk.split('"构建"')]) == [("toolu_long",)]
    assert rows(tmp_path / "old.db", "SELECT key FROM obelisk_state WHERE key = 'cold_load'") == []
