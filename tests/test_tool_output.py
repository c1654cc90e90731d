"""Tool output is stored once: a long output that is its message's whole text is clipped in tool_results."""

import json
import sqlite3

import pytest

from datasette_obelisk.query.history import history_read
from datasette_obelisk.query import obelisk
from datasette_obelisk.query.transcript import tool_calls
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.store.tool_output import CLIP_CHARS

SESSION = "5b0e4c1a-0000-4000-8000-000000000001"
LONG = " ".join(f"line{i} output of the build" for i in range(3000))  # 80k characters
FAILED = "Exit code 2\n" + " ".join(f"error{i} in module" for i in range(2000))


def line(uuid, parent, type_, content, ts):
    return {
        "type": type_, "uuid": uuid, "parentUuid": parent, "sessionId": SESSION, "timestamp": ts,
        "cwd": "/work/app", "version": "2.1.0", "isSidechain": False, "userType": "external",
        "message": {"role": type_, "content": content},
    }


def tool_use(uuid, parent, call_id, ts):
    return line(uuid, parent, "assistant", [
        {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "make"}}
    ], ts)


def tool_result(uuid, parent, call_id, output, ts, is_error=False):
    return line(uuid, parent, "user", [
        {"type": "tool_result", "tool_use_id": call_id, "content": output, "is_error": is_error}
    ], ts)


@pytest.fixture
def db(tmp_path):
    project = tmp_path / "claude" / "projects" / "-work-app"
    project.mkdir(parents=True)
    lines = [
        line("u1", None, "user", "build it", "2026-05-01T10:00:00Z"),
        tool_use("a1", "u1", "call-ok", "2026-05-01T10:00:01Z"),
        tool_result("r1", "a1", "call-ok", LONG, "2026-05-01T10:00:02Z"),
        tool_use("a2", "r1", "call-bad", "2026-05-01T10:00:03Z"),
        tool_result("r2", "a2", "call-bad", FAILED, "2026-05-01T10:00:04Z", is_error=True),
        tool_use("a3", "r2", "call-short", "2026-05-01T10:00:05Z"),
        tool_result("r3", "a3", "call-short", "done", "2026-05-01T10:00:06Z"),
        line("a4", "r3", "assistant", [{"type": "text", "text": "All built."}], "2026-05-01T10:00:07Z"),
    ]
    (project / f"{SESSION}.jsonl").write_text("".join(json.dumps(item) + "\n" for item in lines))
    path = tmp_path / "o.db"
    ingest(path, {"claude": tmp_path / "claude"})
    return path


def results(db) -> dict:
    conn = sqlite3.connect(db)
    try:
        return {
            row[0]: row[1:]
            for row in conn.execute("SELECT tool_use_id, content, content_length, outcome FROM tool_results")
        }
    finally:
        conn.close()


def test_long_output_is_clipped_failed_and_short_are_whole(db):
    found = results(db)
    assert found["call-ok"] == (LONG[:CLIP_CHARS], len(LONG), "succeeded")
    assert found["call-bad"] == (FAILED, len(FAILED), "failed")
    assert found["call-short"] == ("done", 4, "succeeded")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT text FROM messages WHERE uuid = 'r1'").fetchone()[0] == LONG


def test_readers_get_the_whole_output(db):
    conn = open_db(db)
    conn.row_factory = sqlite3.Row
    tools = [e for e in history_read(conn, sessionId=SESSION)["entries"] if e["type"] == "tool"]
    assert [(t["id"], len(t["result"])) for t in tools] == [
        ("call-ok", len(LONG)), ("call-bad", len(FAILED)), ("call-short", 4),
    ]
    calls = tool_calls(conn, SESSION, ["a1", "a2", "a3"])
    shown = [call for uuid in ("a1", "a2", "a3") for call in calls[uuid]]
    assert [(c["id"], c["result"][:20], c["result_length"]) for c in shown] == [
        ("call-ok", LONG[:20], len(LONG)), ("call-bad", FAILED[:20], len(FAILED)), ("call-short", "done", 4),
    ]
    assert len(shown[0]["result"]) == 20_000  # the transcript's own clip, past the stored one


def test_failures_clip_the_whole_output(db):
    conn = open_db(db)
    conn.row_factory = sqlite3.Row
    failures = obelisk.failures(conn, SESSION)
    assert [(f["result"]["tool_use_id"], f["result"]["content"]) for f in failures] == [
        ("call-bad", obelisk.clip(FAILED)),
    ]


def test_migration_clips_databases_that_stored_output_twice(db):
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE tool_results SET content = (SELECT text FROM messages WHERE uuid = message_uuid) "
                 "WHERE tool_use_id = 'call-ok'")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm008_clip_stored_tool_output'")
    conn.close()
    assert len(results(db)["call-ok"][0]) == len(LONG)
    open_db(db).close()
    assert results(db)["call-ok"] == (LONG[:CLIP_CHARS], len(LONG), "succeeded")
    assert results(db)["call-bad"][0] == FAILED
