"""Tool output is stored once: a long output that is its message's whole text is clipped in tool_results."""

import json
import re
import sqlite3

import pytest

from datasette_obelisk.query.history import history_read, history_search
from datasette_obelisk.query import obelisk
from datasette_obelisk.query.search import search_events, search_sessions
from datasette_obelisk.query.transcript import tool_calls
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.store.tool_output import CLIP_CHARS
from dbsnapshot import diff, snapshot

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


def test_text_beside_a_tool_result_is_a_user_entry_without_the_output(tmp_path):
    """A user line may hold a tool result and text: the output is its call's entry, once."""
    project = tmp_path / "claude" / "projects" / "-work-app"
    project.mkdir(parents=True)
    lines = [
        line("u1", None, "user", "build it", "2026-05-01T10:00:00Z"),
        tool_use("a1", "u1", "call-ok", "2026-05-01T10:00:01Z"),
        line("r1", "a1", "user", [
            {"type": "tool_result", "tool_use_id": "call-ok", "content": "built 3 targets"},
            {"type": "text", "text": "also check the docs folder"},
        ], "2026-05-01T10:00:02Z"),
    ]
    (project / f"{SESSION}.jsonl").write_text("".join(json.dumps(item) + "\n" for item in lines))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    entries = history_read(conn, sessionId=SESSION)["entries"]
    assert [(e["type"], e["id"], e["sourceIds"], e.get("content", e.get("result"))) for e in entries] == [
        ("user", "u1", ["u1"], "build it"),
        ("tool", "call-ok", ["a1", "r1"], "built 3 targets"),
        ("user", "r1", ["r1"], "also check the docs folder"),
    ]
    assert history_search(conn, query="targets docs")["sessions"] == []  # two entries, not one


# -- Claude Code's persisted output (2.x) ---------------------------------------
# A result over 50,000 characters is saved whole to <session>/tool-results/<tool
# use id>.txt and the log holds a note with its first 2 KB (2.1.332, the
# ``<persisted-output>`` block ``xe`` writes). The file comes before the line in
# Claude Code's own writes, but an ingest may see either first.

SAVED_SESSION = "6c1f0d2a-0000-4000-8000-000000000002"
WHOLE = "".join(f"step {i}: compiled module{i} — ok\n" for i in range(3000)) + "zebraquartz only past the preview\n"


def saved_note(path, whole):
    preview = whole[:2000]
    preview = preview[: preview.rfind("\n")]
    return (f"<persisted-output>\nOutput too large ({len(whole) / 1024:.1f}KB). Full output saved to: {path}\n\n"
            f"Preview (first 2KB):\n{preview}\n...\n</persisted-output>")


def saved_log(path, is_error=False) -> list[bytes]:
    def at(item):
        return (json.dumps({**item, "sessionId": SAVED_SESSION}) + "\n").encode()

    note = saved_note(path, WHOLE)
    return [at(item) for item in (
        line("s1", None, "user", "build everything", "2026-05-01T10:00:00Z"),
        tool_use("s2", "s1", "toolu_01Big", "2026-05-01T10:00:01Z"),
        tool_result("s3", "s2", "toolu_01Big", note, "2026-05-01T10:00:02Z", is_error=is_error),
        line("s4", "s3", "assistant", [{"type": "text", "text": "Built."}], "2026-05-01T10:00:03Z"),
    )]


@pytest.fixture
def saved(tmp_path):
    project = tmp_path / "claude" / "projects" / "-work-app"
    output = project / SAVED_SESSION / "tool-results" / "toolu_01Big.txt"
    output.parent.mkdir(parents=True)
    return project / f"{SAVED_SESSION}.jsonl", output


def found(db, word):
    return sqlite3.connect(db).execute(
        "SELECT m.uuid, m.type, m.surface, m.is_meta FROM messages_fts f JOIN messages m ON m.id = f.rowid "
        "WHERE messages_fts MATCH ?", [word]).fetchall()


OUTPUT_UUID = f"{SAVED_SESSION}:tool-results/toolu_01Big.txt"


def assert_whole(db):
    assert results(db)["toolu_01Big"] == (WHOLE[:CLIP_CHARS], len(WHOLE), "succeeded")
    assert found(db, "zebraquartz") == [(OUTPUT_UUID, "tool_output", "log-only", 0)]
    conn = open_db(db)
    conn.row_factory = sqlite3.Row
    [call] = tool_calls(conn, SAVED_SESSION, ["s2"])["s2"]
    assert (call["result"], call["result_length"]) == (WHOLE[:20_000], len(WHOLE))
    assert [tuple(row) for row in conn.execute(
        "SELECT message_count, availability FROM sessions WHERE id = ?", [SAVED_SESSION])] == [(2, "live")]
    assert [hit["message"]["uuid"] for hit in obelisk.search(conn, "zebraquartz")] == [OUTPUT_UUID]
    grouped = search_sessions(conn, "zebraquartz")["items"]
    assert [(item["session"]["id"], [hit["uuid"] for hit in item["hits"]]) for item in grouped] == [
        (SAVED_SESSION, [OUTPUT_UUID])]
    assert [hit["type"] for hit in search_events(conn, SAVED_SESSION, "zebraquartz")["items"]] == ["tool_output"]


@pytest.mark.parametrize("first", ["file", "log", "both"])
def test_a_saved_output_is_the_results_whole_output_whichever_is_read_first(tmp_path, saved, first):
    log, output = saved
    db = tmp_path / "o.db"
    if first in ("file", "both"):
        output.write_text(WHOLE)
    if first in ("log", "both"):
        log.write_bytes(b"".join(saved_log(output)))
    ingest(db, {"claude": tmp_path / "claude"})
    if first == "log":  # the note until the file comes
        note = saved_note(output, WHOLE)
        assert results(db)["toolu_01Big"] == (note, len(note), "succeeded")
        assert found(db, "zebraquartz") == []
        output.write_text(WHOLE)
    elif first == "file":
        log.write_bytes(b"".join(saved_log(output)))
    ingest(db, {"claude": tmp_path / "claude"})
    assert_whole(db)
    before = snapshot(db)
    summary = ingest(db, {"claude": tmp_path / "claude"})
    assert (summary.files, summary.files_skipped, summary.files_read) == (2, 2, 0)  # (stat only)
    assert snapshot(db) == before


def test_a_saved_output_and_its_log_read_as_they_are_written(tmp_path, saved):
    log, output = saved
    db = tmp_path / "o.db"
    lines = saved_log(output)
    encoded = WHOLE.encode()
    steps = [
        lambda: log.write_bytes(lines[0] + lines[1]),
        lambda: output.write_bytes(encoded[: len(encoded) // 2]),  # caught half written
        lambda: log.write_bytes(b"".join(lines[:3]) + lines[3][:10]),
        lambda: output.write_bytes(encoded),
        lambda: log.write_bytes(b"".join(lines)),
    ]
    for step in steps:
        step()
        ingest(db, {"claude": tmp_path / "claude"})
    assert_whole(db)
    whole = tmp_path / "whole.db"
    ingest(whole, {"claude": tmp_path / "claude"})
    # The same rows, but for the place of the output's: where it was read (it shows with the log only).
    assert diff(snapshot(whole), snapshot(db)) == [
        ("messages", 5, 5), {"seq": (5, 3), "key": OUTPUT_UUID}, {"seq": (3, 4), "key": "s3"},
        {"seq": (4, 5), "key": "s4"}]


def test_a_saved_output_claude_code_deleted_is_kept(tmp_path, saved):
    log, output = saved
    db = tmp_path / "o.db"
    output.write_text(WHOLE)
    log.write_bytes(b"".join(saved_log(output)))
    ingest(db, {"claude": tmp_path / "claude"})
    output.unlink()  # its cleanup, after cleanupPeriodDays, while the log stays
    assert ingest(db, {"claude": tmp_path / "claude"}).files_missing == 1
    assert_whole(db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE source_files SET parser_version = NULL")  # its log read again from its start
    conn.close()
    assert ingest(db, {"claude": tmp_path / "claude"}).files_replayed == 1
    assert_whole(db)


def test_history_search_matches_the_saved_output_history_read_returns(tmp_path, saved):
    """The tool entry read returns holds the whole output: search matches all of it,
    alone or with the call's arguments, not only the preview its log line holds."""
    log, output = saved
    db = tmp_path / "o.db"
    output.write_text(WHOLE)
    log.write_bytes(b"".join(saved_log(output)))
    ingest(db, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    [tool] = [e for e in history_read(conn, sessionId=SAVED_SESSION)["entries"] if e["type"] == "tool"]
    assert (tool["id"], tool["result"]) == ("toolu_01Big", WHOLE)
    found = history_search(conn, query="zebraquartz")["sessions"]
    assert [(s["sessionId"], s["snippets"]) for s in found] == [(SAVED_SESSION, [
        "…: compiled module2994 — ok step 2995: compiled module2995 — ok step 2996: compiled module2996 — ok step 2997: "
        "compiled module2997 — ok step 2998: compiled module2998 — ok step 2999: compiled module2999 — ok zebraquartz "
        "only past the preview",
    ])]
    found = history_search(conn, query="make zebraquartz")["sessions"]
    assert [(s["sessionId"], s["snippets"]) for s in found] == [(SAVED_SESSION, [
        "Bash make — ok step 2091: compiled module2091 — ok step 2092: compiled module2092 — ok step 2093: compiled "
        "module2093 — ok step 2094: compiled module2094 — ok step 2095: compiled module2095 — ok step 2096: compiled "
        "module2096 — ok step 2097…",
    ])]
    assert history_search(conn, query="zebraquartz build")["sessions"] == []  # "build" is in another entry


@pytest.mark.parametrize("runs", ["log, then file", "one cold load"])
def test_a_failed_saved_output_is_searched_whole_among_failures(tmp_path, saved, runs):
    log, output = saved
    db = tmp_path / "o.db"
    log.write_bytes(b"".join(saved_log(output, is_error=True)))
    if runs == "one cold load":  # its result indexed late, then given the whole output
        output.write_text(WHOLE)
        ingest(db, {"claude": tmp_path / "claude"}, cold_load_bytes=1)
    else:
        ingest(db, {"claude": tmp_path / "claude"})
        output.write_text(WHOLE)
        ingest(db, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT content = ?, content_length FROM tool_results", [WHOLE]).fetchall() == [(1, len(WHOLE))]
    assert conn.execute("SELECT rowid FROM tool_errors_fts WHERE tool_errors_fts MATCH 'zebraquartz'").fetchall() == [(1,)]
    assert conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)").fetchall() == []


def test_saved_content_blocks_are_their_text(tmp_path, saved):
    log, output = saved
    db = tmp_path / "o.db"
    output = output.with_suffix(".json")  # an MCP tool's blocks, as JSON.stringify(blocks, null, 2)
    blocks = [{"type": "text", "text": WHOLE[:30_000]}, {"type": "text", "text": WHOLE[30_000:]}]
    output.write_text(json.dumps(blocks, indent=2))
    log.write_bytes(b"".join(saved_log(output)))
    ingest(db, {"claude": tmp_path / "claude"})
    joined = WHOLE[:30_000] + "\n" + WHOLE[30_000:]
    assert results(db)["toolu_01Big"] == (joined[:CLIP_CHARS], len(joined), "succeeded")
    assert found(db, "zebraquartz") == [(f"{SAVED_SESSION}:tool-results/toolu_01Big.json", "tool_output", "log-only", 0)]


def test_a_huge_saved_output_is_held_up_to_the_limit_in_bounded_memory(tmp_path, saved, monkeypatch):
    import tracemalloc

    from datasette_obelisk.store import reader

    monkeypatch.setattr(reader, "MAX_TEXT", 1 << 16)
    log, output = saved
    db = tmp_path / "o.db"
    huge = "x" * ((1 << 16) - 1) + "é" + "zebraquartz " * 1_000_000  # 12 MB, the limit inside the é
    output.write_text(huge)
    log.write_bytes(b"".join(saved_log(output)))
    ingest(tmp_path / "warm.db", {"claude": tmp_path / "claude"})  # (what is imported on first use is not counted)
    tracemalloc.start()
    try:
        ingest(db, {"claude": tmp_path / "claude"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT text_length, json_extract(meta_json, '$.length'), json_extract(meta_json, '$.bytes') "
                        "FROM messages WHERE type = 'tool_output'").fetchall() == [((1 << 16) - 1, len(huge), len(huge.encode()))]
    assert results(db)["toolu_01Big"] == (huge[:CLIP_CHARS], len(huge), "succeeded")


def test_a_log_read_again_takes_its_agents_along_though_its_saved_outputs_are_gone(tmp_path, saved):
    # A saved output is in no family: Claude Code deleting it does not leave the session's
    # logs to be read again one by one (which keeps what an older parser merged).
    log, output = saved
    db = tmp_path / "o.db"
    output.write_text(WHOLE)
    log.write_bytes(b"".join(saved_log(output)))
    agent = output.parent.parent / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir()
    agent.write_text(json.dumps({**line("g1", None, "user", "look around", "2026-05-01T10:00:05Z"),
                                 "sessionId": SAVED_SESSION, "isSidechain": True, "agentId": "a1"}) + "\n")
    ingest(db, {"claude": tmp_path / "claude"})
    output.unlink()
    ingest(db, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE source_files SET parser_version = NULL WHERE path = ?", [str(log)])
    conn.close()
    summary = ingest(db, {"claude": tmp_path / "claude"})
    assert (summary.files_replayed, summary.files_missing) == (2, 0)
    assert_whole(db)


def test_a_saved_output_gone_stays_its_own_though_another_says_the_same(tmp_path, saved):
    log, output = saved
    db = tmp_path / "o.db"
    twin = output.with_name("toolu_01Twin.txt")  # the same command run again, the same output
    for path in (output, twin):
        path.write_text(WHOLE)
    log.write_bytes(b"".join(saved_log(output)))
    ingest(db, {"claude": tmp_path / "claude"})
    output.unlink()
    ingest(db, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute("SELECT f.path, f.missing FROM messages m JOIN source_files f ON f.id = m.file_id "
                        "WHERE m.type = 'tool_output' ORDER BY m.uuid").fetchall() == [
        (str(output), 1), (str(twin), 0)]
    conn.execute("UPDATE source_files SET parser_version = NULL")  # the twin read again takes only its own
    conn.close()
    ingest(db, {"claude": tmp_path / "claude"})
    assert results(db)["toolu_01Big"] == (WHOLE[:CLIP_CHARS], len(WHOLE), "succeeded")
    assert sorted(uuid for uuid, *_ in found(db, "zebraquartz")) == [OUTPUT_UUID, f"{SAVED_SESSION}:tool-results/toolu_01Twin.txt"]


@pytest.mark.parametrize("again", ["logs", "every file"])
def test_a_saved_output_stays_after_its_logs_lines_when_they_are_read_again(tmp_path, saved, again):
    # A saved output is in no family: its message stays while the session's logs are
    # cleared and written again (a parser change, new redaction rules, a reload), and
    # then comes after their lines, as in a run that reads every file anew.
    log, output = saved
    db = tmp_path / "o.db"
    output.write_text(WHOLE)
    log.write_bytes(b"".join(saved_log(output)))
    ingest(db, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE source_files SET parser_version = NULL" + (" WHERE layout = 'jsonl'" if again == "logs" else ""))
    conn.close()
    assert ingest(db, {"claude": tmp_path / "claude"}).files_replayed == (1 if again == "logs" else 2)
    assert_whole(db)
    whole = tmp_path / "whole.db"
    ingest(whole, {"claude": tmp_path / "claude"})
    assert diff(snapshot(whole), snapshot(db)) == []
    order = sqlite3.connect(db).execute("SELECT uuid FROM messages ORDER BY seq").fetchall()
    assert [uuid for uuid, in order] == ["s1", "s2", "s3", "s4", OUTPUT_UUID]


def test_a_saved_output_gone_when_new_rules_come_leaves_no_secret_in_its_result(tmp_path, saved):
    # Stored without redaction, the output is deleted by Claude Code, then the rules apply: its
    # log, still there, is read again first and takes the stored output, which is redacted in
    # place only once its file is found gone; the result's copy must follow.
    secret = "ghp_" + "r7Tq2LmX9vKp4WzN8cYb3HdJ6sFg1AeU5oQi"  # (random, in a GitHub token's shape)
    log, output = saved
    db = tmp_path / "o.db"
    whole = WHOLE + f"GITHUB_TOKEN={secret}\n"
    output.write_text(whole)
    log.write_bytes(b"".join(saved_log(output, is_error=True)))
    ingest(db, {"claude": tmp_path / "claude"}, redact=False)
    output.unlink()
    assert ingest(db, {"claude": tmp_path / "claude"}).files_missing == 1
    conn = sqlite3.connect(db)
    [(text, text_length)] = conn.execute("SELECT text, text_length FROM messages WHERE uuid = ?", [OUTPUT_UUID])
    assert secret not in text
    assert conn.execute("SELECT COUNT(*) FROM tool_results WHERE instr(content, ?)", [secret]).fetchone() == (0,)
    assert conn.execute("SELECT content = ?, content_length, outcome FROM tool_results", [text]).fetchall() == [
        (1, len(text), "failed")]
    assert text_length == len(text)  # (what new rules redact in place is measured again)
    word = secret.split("_")[-1]
    assert conn.execute("SELECT rowid FROM tool_errors_fts WHERE tool_errors_fts MATCH ?", [f'"{word}"']).fetchall() == []
    assert conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)").fetchall() == []


@pytest.mark.asyncio
async def test_a_saved_outputs_cut_links_to_the_file_it_was_saved_to(tmp_path, saved):
    # The line of its result holds only the note: "see raw" under the output's first
    # characters opens the whole, the file's text (its own message's raw text).
    from html import unescape
    from urllib.parse import parse_qs, urlsplit

    from web_fixtures import make_datasette

    log, output = saved
    db = tmp_path / "o.db"
    output.write_text(WHOLE)
    log.write_bytes(b"".join(saved_log(output, is_error=True)))
    ingest(db, {"claude": tmp_path / "claude"})
    ds = make_datasette(db)
    await ds.invoke_startup()
    [seq] = sqlite3.connect(db).execute("SELECT seq FROM messages WHERE uuid = 's3'").fetchone()
    for url in (f"/-/obelisk/session/{SAVED_SESSION}", f"/-/obelisk/event/{SAVED_SESSION}/{seq}", "/-/obelisk/failures"):
        html = (await ds.client.get(url)).text
        links = [unescape(href) for href in re.findall(r'more characters \(see <a href="([^"]+)"', html)]
        # (the event page's window shows the saved output's own message too)
        assert links and {uuid for link in links for uuid in parse_qs(urlsplit(link).query)["uuid"]} == {OUTPUT_UUID}, url
        raw = (await ds.client.get(links[0])).json()
        assert raw["text"] == WHOLE
