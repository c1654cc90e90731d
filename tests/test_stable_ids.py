"""A message, tool result or prompt id, once given, names that row and no other: a file read
again (a Gemini chat saved again whole, a parser version replaying its logs, a log back with its
lines moved, a prompt log cut down) deletes its rows and writes them again, and without care
SQLite gives the ids of the last rows deleted to other rows. A row read again the same keeps
its id; one that changed takes a new one."""

import json
import sqlite3

import pytest

from datasette_obelisk.query import obelisk, snapshots
from datasette_obelisk.query.filters import Filters
from datasette_obelisk.store.ingest import ingest
from query_fixtures import connect
from test_session_query import claude_log, inline_agent_log, prompt, reply


def gemini_chat(home, session, *messages):
    """Save (again, whole) the Gemini chat document of ``session``: ``(id, type, text, minute)`` each."""
    chats = home / ".gemini" / "tmp" / "p1" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (chats / f"session-2026-01-16T18-34-{session}.json").write_text(json.dumps({
        "kind": "chat", "sessionId": session, "projectHash": "abc", "startTime": "2026-01-16T18:00:00.000Z",
        "messages": [{"id": i, "type": kind, "content": text, "timestamp": f"2026-01-16T18:{minute:02}:00.000Z"}
                     for i, kind, text, minute in messages],
    }))


def stored(db) -> list[tuple]:
    return sqlite3.connect(db).execute("SELECT id, uuid, text FROM messages ORDER BY id").fetchall()


def fts_ids(db, word: str) -> list[int]:
    rows = sqlite3.connect(db).execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", [word])
    return [row[0] for row in rows]


def test_a_chat_saved_again_gives_no_old_id_to_another_message(tmp_path):
    db = tmp_path / "o.db"
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1), ("m2", "gemini", "bravo", 2), ("m3", "user", "charlie", 3))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert stored(db) == [(1, "gemini:s1:m1", "alpha"), (2, "gemini:s1:m2", "bravo"), (3, "gemini:s1:m3", "charlie")]
    # Gemini CLI saved the chat again without its last two messages (a rewind), and a new one.
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1), ("m4", "user", "delta", 4))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    # The unchanged message keeps its id; ids 2 and 3 name nothing now, and the new message takes 4.
    assert stored(db) == [(1, "gemini:s1:m1", "alpha"), (4, "gemini:s1:m4", "delta")]
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1), ("m5", "gemini", "echo", 5))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert stored(db) == [(1, "gemini:s1:m1", "alpha"), (5, "gemini:s1:m5", "echo")]


def test_a_message_read_again_with_another_text_takes_a_new_id(tmp_path):
    db = tmp_path / "o.db"
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1), ("m2", "gemini", "bravo", 2))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1), ("m2", "gemini", "bravo, said otherwise", 2))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert stored(db) == [(1, "gemini:s1:m1", "alpha"), (3, "gemini:s1:m2", "bravo, said otherwise")]


@pytest.mark.parametrize("cold_load_bytes", [None, 0], ids=["row by row", "reload"])
def test_the_text_index_finds_each_message_read_again_under_its_id(tmp_path, cold_load_bytes):
    db = tmp_path / "o.db"
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1), ("m2", "gemini", "bravo", 2), ("m3", "user", "charlie", 3))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    gemini_chat(tmp_path, "s1", ("m1", "user", "alpha", 1), ("m4", "user", "delta", 4), ("m3", "user", "charlie", 5))
    ingest(db, {"gemini": tmp_path / ".gemini"}, cold_load_bytes=cold_load_bytes)
    assert stored(db) == [(1, "gemini:s1:m1", "alpha"), (4, "gemini:s1:m4", "delta"), (5, "gemini:s1:m3", "charlie")]
    assert [fts_ids(db, word) for word in ("alpha", "bravo", "charlie", "delta")] == [[1], [], [5], [4]]
    sqlite3.connect(db).execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def test_logs_read_again_for_a_new_parser_keep_their_message_ids(tmp_path):
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    claude_log(project, "s1", prompt("u1", "alpha one", "2026-01-01T00:01:00Z"),
               reply("a1", "bravo two", "2026-01-01T00:02:00Z", "u1"))
    claude_log(project, "s2", prompt("v1", "charlie three", "2026-01-02T00:01:00Z"))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    before = stored(db)
    assert [uuid for _, uuid, _ in before] == ["u1", "a1", "v1"]
    with sqlite3.connect(db) as conn:  # (as a parser version bump has it)
        conn.execute("UPDATE source_files SET parser_version = NULL WHERE path LIKE '%s1.jsonl'")
    ingest(db, {"claude": tmp_path / "claude"})
    assert stored(db) == before
    assert [fts_ids(db, word) for word in ("alpha", "bravo", "charlie")] == [[1], [2], [3]]


def test_a_session_list_paged_while_a_chat_is_saved_again_skips_no_session(tmp_path):
    """The pages after the first list the sessions in the order they had then: a session whose
    chat was saved again with a later message since grew, and keeps its place."""
    db = tmp_path / "o.db"
    gemini_chat(tmp_path, "a", ("a1", "user", "oldest", 1))
    gemini_chat(tmp_path, "c", ("c1", "user", "newest", 30))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    gemini_chat(tmp_path, "b", ("b1", "user", "middle", 10), ("b2", "gemini", "middle reply", 11))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    first = obelisk.recent_in(connect(db), Filters.build(), 1)
    assert [s["id"] for s in first["items"]] == ["gemini:c"]
    edge = snapshots.archive_edge(connect(db))
    assert edge == (4, 3)
    gemini_chat(tmp_path, "b", ("b1", "user", "middle", 10), ("b3", "user", "much later", 50))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert snapshots.grown_since(connect(db), *edge) == {"gemini:b"}
    pages = [first]
    while pages[-1]["next_cursor"]:
        pages.append(obelisk.recent_in(connect(db), Filters.build(), 1, pages[-1]["next_cursor"]))
    assert [s["id"] for page in pages for s in page["items"]] == ["gemini:c", "gemini:b", "gemini:a"]


def test_a_line_found_again_at_another_offset_keeps_its_message_id(tmp_path):
    """Messages named after their place in their file (``<session>:<offset>``, as Codex's are):
    a log back with its lines moved on holds the same messages, which keep their ids."""
    from test_ingest import line, run

    root, db = tmp_path / "logs", tmp_path / "o.db"
    root.mkdir()
    path = root / "s1.jsonl"
    one, two = line(text="one", ts="2026-01-01T00:00:01Z"), line(text="two", ts="2026-01-01T00:00:02Z")
    path.write_bytes(one + two)
    run(db, root)
    (root / "s2.jsonl").write_bytes(line(text="other", ts="2026-01-02T00:00:01Z"))
    path.unlink()
    run(db, root)
    assert stored(db) == [(1, "s1:0", "one"), (2, f"s1:{len(one)}", "two"), (3, "s2:0", "other")]
    longer = line(text="one", ts="2026-01-01T00:00:01Z", cwd="/work")
    path.write_bytes(longer + two + line(text="three", ts="2026-01-01T00:00:03Z"))
    run(db, root)
    assert stored(db) == [(1, "s1:0", "one"), (2, f"s1:{len(longer)}", "two"), (3, "s2:0", "other"),
                          (4, f"s1:{len(longer + two)}", "three")]
    assert [fts_ids(db, word) for word in ("one", "two", "three")] == [[1], [2], [4]]


def test_a_session_whose_chat_is_saved_again_keeps_its_place_in_a_paged_list(tmp_path):
    """A chat saved again is read again with its family, whose sessions are stored anew: each
    takes its place (rowid) back, so the pages after the first still count it as listed then,
    and a session new among them comes after every place given."""
    db = tmp_path / "o.db"
    gemini_chat(tmp_path, "a", ("a1", "user", "oldest", 1))
    gemini_chat(tmp_path, "b", ("b1", "user", "middle", 10), ("b2", "gemini", "middle reply", 11))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    gemini_chat(tmp_path, "c", ("c1", "user", "newest", 30))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    places = "SELECT rowid, id FROM sessions ORDER BY rowid"
    assert sqlite3.connect(db).execute(places).fetchall() == [(1, "gemini:a"), (2, "gemini:b"), (3, "gemini:c")]
    first = obelisk.recent_in(connect(db), Filters.build(), 1)
    gemini_chat(tmp_path, "b", ("b1", "user", "middle", 10), ("b3", "user", "much later", 50))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert sqlite3.connect(db).execute(places).fetchall() == [(1, "gemini:a"), (2, "gemini:b"), (3, "gemini:c")]
    pages = [first]
    while pages[-1]["next_cursor"]:
        pages.append(obelisk.recent_in(connect(db), Filters.build(), 1, pages[-1]["next_cursor"]))
    assert [s["id"] for page in pages for s in page["items"]] == ["gemini:c", "gemini:b", "gemini:a"]


def test_a_session_new_in_a_chat_saved_again_takes_no_place_given_before(tmp_path):
    db = tmp_path / "o.db"
    gemini_chat(tmp_path, "a", ("a1", "user", "first", 1))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    gemini_chat(tmp_path, "b", ("b1", "user", "second", 10))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    places = "SELECT rowid, id FROM sessions ORDER BY rowid"
    assert sqlite3.connect(db).execute(places).fetchall() == [(1, "gemini:a"), (2, "gemini:b")]
    # The same file saved again as the chat of another session: b is gone, b2 new.
    chats = tmp_path / ".gemini" / "tmp" / "p1" / "chats"
    document = json.loads((chats / "session-2026-01-16T18-34-b.json").read_text())
    (chats / "session-2026-01-16T18-34-b.json").write_text(json.dumps({**document, "sessionId": "b2"}))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert sqlite3.connect(db).execute(places).fetchall() == [(1, "gemini:a"), (3, "gemini:b2")]


def gemini_tool_chat(home, session, *calls):
    """Save (again, whole) a Gemini chat of one prompt and one reply making ``calls``:
    ``(call id, minute, error or None)`` each, all results at the same time unless told."""
    chats = home / ".gemini" / "tmp" / "p1" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    tool_calls = [{
        "id": call_id, "name": "run_shell_command", "args": {"command": f"make {call_id}"},
        "status": "error" if error else "success", "timestamp": f"2026-01-16T18:{minute:02}:00.000Z",
        "result": [{"functionResponse": {"id": call_id, "name": "run_shell_command",
                                         "response": {"error": error} if error else {"output": "ok"}}}],
    } for call_id, minute, error in calls]
    (chats / f"session-2026-01-16T18-34-{session}.json").write_text(json.dumps({
        "kind": "chat", "sessionId": session, "projectHash": "abc", "startTime": "2026-01-16T18:00:00.000Z",
        "messages": [
            {"id": "u1", "type": "user", "content": "build it", "timestamp": "2026-01-16T18:00:00.000Z"},
            {"id": "g1", "type": "gemini", "content": "", "timestamp": "2026-01-16T18:01:00.000Z",
             "toolCalls": tool_calls},
        ],
    }))


def results(db) -> list[tuple]:
    return sqlite3.connect(db).execute("SELECT id, substr(tool_use_id, 11), outcome FROM tool_results ORDER BY id").fetchall()


def failed_ids(db, word: str) -> list[int]:
    """The ids of the failed results whose output holds ``word`` (``tool_errors_fts``), each as often as found."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)")
    rows = conn.execute("SELECT rowid FROM tool_errors_fts WHERE tool_errors_fts MATCH ? ORDER BY rowid", [word])
    return [row[0] for row in rows]


@pytest.mark.parametrize("cold_load_bytes", [None, 0], ids=["row by row", "reload"])
def test_a_chat_saved_again_keeps_the_ids_of_its_results_and_gives_none_to_another(tmp_path, cold_load_bytes):
    db = tmp_path / "o.db"
    gemini_tool_chat(tmp_path, "s1", ("c1", 1, "boom"), ("c2", 1, "bang"), ("c3", 1, "crash"))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert results(db) == [(1, "c1", "failed"), (2, "c2", "failed"), (3, "c3", "failed")]
    # Saved again without its last two results, then again with a new one.
    gemini_tool_chat(tmp_path, "s1", ("c1", 1, "boom"))
    ingest(db, {"gemini": tmp_path / ".gemini"}, cold_load_bytes=cold_load_bytes)
    gemini_tool_chat(tmp_path, "s1", ("c1", 1, "boom"), ("c4", 1, "again"))
    ingest(db, {"gemini": tmp_path / ".gemini"}, cold_load_bytes=cold_load_bytes)
    # c1 keeps its id; 2 and 3 name nothing now, and c4 takes 4.
    assert results(db) == [(1, "c1", "failed"), (4, "c4", "failed")]
    assert [failed_ids(db, word) for word in ("boom", "bang", "crash", "again")] == [[1], [], [], [4]]


def test_a_result_read_again_changed_takes_a_new_id(tmp_path):
    db = tmp_path / "o.db"
    gemini_tool_chat(tmp_path, "s1", ("c1", 1, "boom"), ("c2", 1, "bang"), ("c3", 1, "crash"))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    # c2 says another error, c3 comes at another time: stored anew, past every id given.
    gemini_tool_chat(tmp_path, "s1", ("c1", 1, "boom"), ("c2", 1, "bang again"), ("c3", 2, "crash"))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert results(db) == [(1, "c1", "failed"), (4, "c2", "failed"), (5, "c3", "failed")]
    assert [failed_ids(db, word) for word in ("boom", "bang", "crash")] == [[1], [4], [5]]


def test_a_result_skipped_as_stored_already_uses_up_no_id(tmp_path):
    """The first result of a batch read again may be one stored already (``INSERT OR IGNORE``):
    the next stored takes the id after every one given, not SQLite's pick."""
    from datasette_obelisk.store.writer import RESULT_INSERT, RESULT_INSERT_ID
    from datasette_obelisk.store.stable_ids import hold_top, insert_past_top

    db = tmp_path / "o.db"
    ingest(db, {"gemini": tmp_path / ".gemini"})  # (an empty store)
    conn = sqlite3.connect(db)

    def row(tool_use_id):
        return (tool_use_id, "m", "s", "", 0, 0, "succeeded", None, None, None, 1, None, None, None, None, None)

    conn.executemany(RESULT_INSERT, [row("a"), row("b"), row("c")])
    hold_top(conn, "tool_results")
    conn.execute("DELETE FROM tool_results WHERE tool_use_id IN ('b', 'c')")
    insert_past_top(conn, "tool_results", RESULT_INSERT, RESULT_INSERT_ID, [row("a"), row("d"), row("e")])
    assert conn.execute("SELECT id, tool_use_id FROM tool_results ORDER BY id").fetchall() == [
        (1, "a"), (4, "d"), (5, "e")]


def test_failures_paged_across_a_chat_saved_again_list_none_twice(tmp_path):
    """Failures at the same time are paged by id: a result read again the same after a first
    page keeps its id, so the pages after it go on from it; one changed takes an id past
    every one given, so they leave it out (as any failure stored since) rather than list it
    again under an id the first page had passed."""
    from datasette_obelisk.query.obelisk import failures_paged

    db = tmp_path / "o.db"
    gemini_tool_chat(tmp_path, "s1", ("c1", 1, "boom"), ("c2", 1, "bang"), ("c3", 1, "crash"))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    pages = [failures_paged(connect(db), {"limit": 1})]
    gemini_tool_chat(tmp_path, "s1", ("c1", 1, "boom"), ("c2", 1, "bang, said otherwise"), ("c3", 1, "crash"))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    while pages[-1]["next_cursor"]:
        pages.append(failures_paged(connect(db), {"limit": 1}, pages[-1]["next_cursor"]))
    listed = [(r["result"]["id"], r["result"]["tool_use_id"]) for page in pages for r in page["items"]]
    assert listed == [(3, "gemini:s1:c3"), (1, "gemini:s1:c1")]  # (not c3 again, as id 2; c2 is new)
    assert results(db) == [(1, "c1", "failed"), (3, "c3", "failed"), (4, "c2", "failed")]


def gemini_logs(home, *prompts):
    """Save (again, whole) a Gemini CLI prompt log: ``(message id, text, minute)`` each."""
    folder = home / ".gemini" / "tmp" / "p1"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "logs.json").write_text(json.dumps([
        {"sessionId": "s1", "messageId": n, "type": "user", "message": text,
         "timestamp": f"2026-01-16T18:{minute:02}:00.000Z"} for n, text, minute in prompts]))


def prompts(db) -> list[tuple]:
    return sqlite3.connect(db).execute("SELECT id, text FROM prompt_log ORDER BY id").fetchall()


def prompt_ids(db, word: str) -> list[int]:
    """The ids of the prompts holding ``word`` (``prompt_log_fts``), each as often as found."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT INTO prompt_log_fts (prompt_log_fts, rank) VALUES ('integrity-check', 1)")
    rows = conn.execute("SELECT rowid FROM prompt_log_fts WHERE prompt_log_fts MATCH ? ORDER BY rowid", [word])
    return [row[0] for row in rows]


def test_a_prompt_log_saved_again_keeps_the_ids_of_its_prompts_and_gives_none_to_another(tmp_path):
    db = tmp_path / "o.db"
    gemini_logs(tmp_path, (0, "alpha", 1), (1, "bravo", 2), (2, "charlie", 3))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert prompts(db) == [(1, "alpha"), (2, "bravo"), (3, "charlie")]
    gemini_logs(tmp_path, (0, "alpha", 1))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    # alpha keeps its id, bravo at another time is stored anew, delta is new: both past every id given.
    gemini_logs(tmp_path, (0, "alpha", 1), (1, "bravo", 5), (2, "delta", 4))
    ingest(db, {"gemini": tmp_path / ".gemini"})
    assert prompts(db) == [(1, "alpha"), (4, "bravo"), (5, "delta")]
    assert [prompt_ids(db, word) for word in ("alpha", "bravo", "charlie", "delta")] == [[1], [4], [], [5]]


def test_a_prompt_log_cut_down_keeps_the_ids_of_the_prompts_it_holds_again(tmp_path):
    """A prompt log cut down and written again is another file, whose lines take over the
    rows of the old one's that they hold again (the rest stay, archived): under their ids."""
    history = tmp_path / ".codex" / "history.jsonl"
    (history.parent / "sessions").mkdir(parents=True)
    said = [{"session_id": "t1", "ts": 1759848400 + n, "text": text} for n, text in enumerate(["alpha", "bravo", "charlie"])]
    history.write_text("".join(json.dumps(line) + "\n" for line in said))
    db = tmp_path / "o.db"
    ingest(db, {"codex": history.parent})
    assert prompts(db) == [(1, "alpha"), (2, "bravo"), (3, "charlie")]
    history.write_text("".join(json.dumps(line) + "\n" for line in said[1:])
                       + json.dumps({"session_id": "t1", "ts": 1759848500, "text": "delta"}) + "\n")
    ingest(db, {"codex": history.parent})
    assert sqlite3.connect(db).execute(
        "SELECT p.id, text, f.path = ? FROM prompt_log p JOIN source_files f ON f.id = p.file_id ORDER BY p.id",
        [str(history)]).fetchall() == [(1, "alpha", 0), (2, "bravo", 1), (3, "charlie", 1), (4, "delta", 1)]
    assert [prompt_ids(db, word) for word in ("alpha", "bravo", "charlie", "delta")] == [[1], [2], [3], [4]]


THREAD = "019c0000-0000-7000-8000-0000000000bb"


def rollout(*calls, cwd="/w") -> bytes:
    """A Codex rollout of one thread making ``calls``: ``(call id, second, output)`` each, the
    output a shell's that exited with 1."""
    def item(second, kind, payload):
        return {"timestamp": f"2026-12-01T10:00:{second:02}.000Z", "type": kind, "payload": payload}

    lines = [item(0, "session_meta", {"id": THREAD, "timestamp": "2026-12-01T10:00:00.000Z", "cwd": cwd,
                                      "cli_version": "0.99.0"})]
    for call_id, second, output in calls:
        lines += [item(second, "response_item", {"type": "function_call", "name": "shell", "call_id": call_id,
                                                 "arguments": json.dumps({"command": ["make", call_id]})}),
                  item(second, "response_item", {"type": "function_call_output", "call_id": call_id,
                                                 "output": f"Exit code: 1\nOutput:\n{output}"})]
    return b"".join((json.dumps(line) + "\n").encode() for line in lines)


@pytest.mark.parametrize("deleted_first", [True, False], ids=["deleted first", "written over"])
def test_a_rollout_back_with_its_lines_moved_keeps_the_ids_of_its_results(tmp_path, deleted_first):
    base = tmp_path / ".codex"
    path = base / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl"
    path.parent.mkdir(parents=True)
    db = tmp_path / "o.db"
    path.write_bytes(rollout(("c1", 1, "boom"), ("c2", 2, "bang")))
    ingest(db, {"codex": base})
    named = "SELECT id, substr(tool_use_id, 44), outcome FROM tool_results ORDER BY id"
    assert sqlite3.connect(db).execute(named).fetchall() == [(1, "c1", "failed"), (2, "c2", "failed")]
    if deleted_first:
        path.unlink()
        ingest(db, {"codex": base})
    # The same calls, each line further on (a longer first line), and a new one.
    path.write_bytes(rollout(("c1", 1, "boom"), ("c2", 2, "bang"), ("c3", 3, "crash"), cwd="/work/longer"))
    ingest(db, {"codex": base})
    assert sqlite3.connect(db).execute(named).fetchall() == [(1, "c1", "failed"), (2, "c2", "failed"),
                                                             (3, "c3", "failed")]
    assert [failed_ids(db, word) for word in ("boom", "bang", "crash")] == [[1], [2], [3]]


@pytest.mark.parametrize("cold_load_bytes", [None, 0], ids=["row by row", "reload"])
def test_logs_read_again_for_a_new_parser_keep_their_result_and_prompt_ids(tmp_path, cold_load_bytes):
    claude = tmp_path / "claude"
    project = claude / "projects" / "-p"
    project.mkdir(parents=True)
    failed = {"type": "user", "uuid": "r1", "parentUuid": "a1", "timestamp": "2026-01-01T00:03:00Z",
              "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}]}}
    call = {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-01T00:02:00Z",
            "message": {"role": "assistant", "id": "m-a1", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]}}
    claude_log(project, "s1", prompt("u1", "alpha one", "2026-01-01T00:01:00Z"), call, failed)
    (claude / "history.jsonl").write_text("".join(json.dumps(
        {"display": text, "pastedContents": {}, "timestamp": 1767225600000 + n, "project": "/p", "sessionId": "s1"}
    ) + "\n" for n, text in enumerate(["alpha one", "bravo two"])))
    db = tmp_path / "o.db"
    ingest(db, {"claude": claude})
    assert (results(db), prompts(db)) == ([(1, "", "failed")], [(1, "alpha one"), (2, "bravo two")])
    with sqlite3.connect(db) as conn:  # (as a parser version bump has it)
        conn.execute("UPDATE source_files SET parser_version = NULL")
    ingest(db, {"claude": claude}, cold_load_bytes=cold_load_bytes)
    assert (results(db), prompts(db)) == ([(1, "", "failed")], [(1, "alpha one"), (2, "bravo two")])
    assert (failed_ids(db, "boom"), prompt_ids(db, "alpha"), prompt_ids(db, "bravo")) == ([1], [1], [2])


def placed(db) -> list[tuple]:
    return sqlite3.connect(db).execute("SELECT id, uuid, session_id FROM messages ORDER BY id").fetchall()


INLINE_AGENT_ROWS = [(1, "s1-u1", "s1"), (2, "s1-a1", "s1"), (3, "s1-x1", "s1:agent-sidechain-s1x1"),
                     (4, "s1-x2", "s1:agent-sidechain-s1x1"), (5, "s1-u2", "s1")]


@pytest.mark.parametrize("cold_load_bytes", [None, 0], ids=["row by row", "reload"])
def test_an_inline_agents_lines_read_again_for_a_new_parser_keep_their_message_ids(tmp_path, cold_load_bytes):
    """An inline agent's lines are written in their parent's session, then moved into the agent's
    own: read again, they are the rows stored before, though those are in the agent's session."""
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    inline_agent_log(project, "s1", "needle")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    assert placed(db) == INLINE_AGENT_ROWS
    with sqlite3.connect(db) as conn:  # (as a parser version bump has it)
        conn.execute("UPDATE source_files SET parser_version = NULL")
    ingest(db, {"claude": tmp_path / "claude"}, cold_load_bytes=cold_load_bytes)
    assert placed(db) == INLINE_AGENT_ROWS
    assert fts_ids(db, "needle") == [2, 3, 4]  # (the call's input is its prompt)


@pytest.mark.parametrize("cold_load_bytes", [None, 0], ids=["row by row", "reload"])
def test_an_inline_agents_line_a_new_parser_reads_otherwise_takes_a_new_id(tmp_path, cold_load_bytes):
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    inline_agent_log(project, "s1", "needle")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    with sqlite3.connect(db) as conn:  # (the parser before read the agent's reply otherwise)
        conn.execute("UPDATE messages SET text = 'Found the thread' WHERE uuid = 's1-x2'")
        conn.execute("UPDATE source_files SET parser_version = NULL")
    ingest(db, {"claude": tmp_path / "claude"}, cold_load_bytes=cold_load_bytes)
    assert placed(db) == [*INLINE_AGENT_ROWS[:3], *INLINE_AGENT_ROWS[4:], (6, "s1-x2", "s1:agent-sidechain-s1x1")]
    assert (fts_ids(db, "needle"), fts_ids(db, "thread")) == ([2, 3, 6], [])


def test_the_corpus_read_again_for_a_new_parser_keeps_every_message_and_result_id(tmp_path, corpus):
    """Real logs of the three agents, every one replayed: the same rows, the messages and
    results under the same ids, and the failures' output indexed once each."""
    from dbsnapshot import diff, snapshot
    from query_fixtures import corpus_roots

    db = tmp_path / "o.db"
    ingest(db, corpus_roots(corpus))
    before = snapshot(db, keep_ids=("sessions", "messages", "tool_calls", "tool_results"))
    assert len(before["messages"]) > 2000 and len(before["tool_results"]) > 100 and before["tool_errors_fts"]
    with sqlite3.connect(db) as conn:  # (as a parser version bump has it)
        conn.execute("UPDATE source_files SET parser_version = NULL")
    ingest(db, corpus_roots(corpus))
    after = snapshot(db, keep_ids=("sessions", "messages", "tool_calls", "tool_results"))
    assert diff(before, after) == []
    assert after == before
