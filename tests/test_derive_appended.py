"""Lines appended to a session are derived alone (``derive.plan_appended``) when nothing
before them can change, and the database is the one a fresh ingest of the same files gives."""

import json
import sqlite3

import pytest

from datasette_obelisk.store import derive
from datasette_obelisk.store.ingest import ingest
from dbsnapshot import diff, rows, snapshot

SID = "0b0b0b0b-0000-4000-8000-000000000001"
AGENT = "a0123456789abcdef"


def claude_line(uuid, parent, n, kind="user", **fields):
    """Line ``n`` of session SID: a prompt (``kind`` user), or another kind of line."""
    line = {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/app",
        "sessionId": SID, "version": "2.1.100", "gitBranch": f"branch-{n % 3}",
        "uuid": uuid, "timestamp": f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}.000Z",
    }
    if kind == "user":
        line.update(type="user", message={"role": "user", "content": f"prompt {n}: make the parser faster"})
    line.update(fields)
    return (json.dumps(line) + "\n").encode()


def reply(uuid, parent, n, message_id=None, output_tokens=10, model="claude-opus-4-6", **fields):
    """An assistant line: one content block of API message ``message_id``."""
    content = fields.pop("content", [{"type": "text", "text": f"reply {n} about the cursor"}])
    return claude_line(uuid, parent, n, kind="assistant", type="assistant", requestId=f"req_{message_id or uuid}", message={
        "id": message_id or f"msg_{uuid}", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": output_tokens, "cache_read_input_tokens": 100,
                  "cache_creation_input_tokens": 7},
    }, **fields)


def tool_use(uuid, parent, n, tool_id, name="Read", tool_input=None, **fields):
    return reply(uuid, parent, n, content=[{"type": "tool_use", "id": tool_id, "name": name,
                                            "input": tool_input or {"file_path": "/home/dev/app/parser.py"}}], **fields)


def tool_result(uuid, parent, n, tool_id, text="def parse(): ...", **fields):
    return claude_line(uuid, parent, n, kind="tool", type="user", message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool_id, "content": text}]}, **fields)


def conversation(turns, start=0):
    """``turns`` prompts, each answered, chained: u<i> and a<i>."""
    lines = []
    for i in range(start, start + turns):
        lines.append(claude_line(f"u{i}", f"a{i - 1}" if i else None, 2 * i))
        lines.append(reply(f"a{i}", f"u{i}", 2 * i + 1))
    return b"".join(lines)


@pytest.fixture
def claude(tmp_path):
    path = tmp_path / "live" / ".claude"
    (path / "projects" / "-home-dev-app").mkdir(parents=True)
    return path


def log(claude, name=f"{SID}.jsonl"):
    return claude / "projects" / "-home-dev-app" / name


def append(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as fp:
        fp.write(data)


def plans_of(db, claude):
    """How the sessions of one ingest were planned: (whole, appended)."""
    before = dict(derive.PLANS)
    ingest(db, {"claude": claude})
    return derive.PLANS["whole"] - before.get("whole", 0), derive.PLANS["appended"] - before.get("appended", 0)


def assert_fresh(tmp_path, db, claude):
    """``db`` is what a fresh ingest of the same files gives."""
    fresh = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*.db')))}.db"
    ingest(fresh, {"claude": claude})
    got, expected = snapshot(db), snapshot(fresh)
    assert got == expected, diff(got, expected)


def test_a_plain_append_is_derived_alone(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), conversation(30))
    assert plans_of(db, claude) == (1, 0)  # a first derivation reads every row
    # A turn written as Claude Code writes it: one line per content block of one API
    # message, the later copies with more output; the usage of the last one counts.
    append(log(claude), claude_line("u30", "a29", 60)
           + reply("a30", "u30", 61, message_id="msg_split", output_tokens=5,
                   content=[{"type": "thinking", "thinking": "the cursor", "signature": "x"}])
           + reply("a30b", "a30", 62, message_id="msg_split", output_tokens=40))
    assert plans_of(db, claude) == (0, 1)
    assert_fresh(tmp_path, db, claude)
    # The split message goes on in the next append: its usage is counted again.
    append(log(claude), reply("a30c", "a30b", 63, message_id="msg_split", output_tokens=40, model="claude-sonnet-4-6",
                              cwd="/home/dev/other", gitBranch="", timestamp="2026-02-01T00:00:00Z"))
    assert plans_of(db, claude) == (0, 1)
    assert rows(db, "SELECT uuid FROM messages WHERE api_message_id = 'msg_split' AND usage_counted = 1") == [("a30c",)]
    assert_fresh(tmp_path, db, claude)
    assert rows(db, "SELECT model, git_branch, started_at FROM sessions WHERE id = ?", [SID]) == [
        ("claude-sonnet-4-6", "branch-2", "2026-02-01T00:00:00.000Z")]
    assert plans_of(db, claude) == (0, 0)  # nothing new: nothing derived


def test_a_tool_result_for_an_earlier_tool_use_is_derived_alone(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), conversation(5) + claude_line("u5", "a4", 10) + tool_use("t5", "u5", 11, "toolu_1"))
    assert plans_of(db, claude) == (1, 0)
    append(log(claude), tool_result("r5", "t5", 12, "toolu_1", toolUseResult={"type": "text", "file": {
        "filePath": "/home/dev/app/parser.py"}}) + reply("a5", "r5", 13))
    assert plans_of(db, claude) == (0, 1)
    assert rows(db, "SELECT tool_use_id, message_uuid FROM tool_results") == [("toolu_1", "r5")]
    assert_fresh(tmp_path, db, claude)


def test_a_prompt_sent_again_from_an_earlier_line_derives_the_session_whole(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), conversation(6))
    ingest(db, {"claude": claude})
    # The user rewound to a2 and sent another prompt: u3..a5 are rewound away.
    append(log(claude), claude_line("u3b", "a2", 20) + reply("a3b", "u3b", 21))
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT COUNT(*) FROM messages WHERE visibility = 'inactive'") == [(6,)]
    assert_fresh(tmp_path, db, claude)
    # Carrying on on the new branch is an append again.
    append(log(claude), conversation(1, start=40).replace(b'"parentUuid": null', b'"parentUuid": "a3b"'))
    assert plans_of(db, claude) == (0, 1)
    assert_fresh(tmp_path, db, claude)
    # Going back to the abandoned branch and carrying on there makes it current again.
    append(log(claude), claude_line("u6", "a5", 90))
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT COUNT(*) FROM messages WHERE visibility = 'inactive' AND uuid LIKE 'u3%'") == [(1,)]
    assert rows(db, "SELECT visibility FROM messages WHERE uuid = 'u3b'") == [("inactive",)]
    assert_fresh(tmp_path, db, claude)


def test_a_first_prompt_answered_late_and_edited_derives_the_session_whole(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), claude_line("u0", None, 0) + reply("a0", "u0", 1) + claude_line("v0", None, 2))
    ingest(db, {"claude": claude})
    # v0, the first prompt sent again, gets its answer: the two first prompts are a rewind.
    append(log(claude), reply("b0", "v0", 3))
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT uuid FROM messages WHERE visibility = 'inactive' ORDER BY uuid") == [("a0",), ("u0",)]
    assert_fresh(tmp_path, db, claude)


def test_a_line_naming_an_earlier_line_as_its_child_derives_the_session_whole(tmp_path, claude):
    db = tmp_path / "o.db"
    # u2 names a parent not written yet (lines written out of order); then it comes.
    append(log(claude), conversation(2) + claude_line("u2", "late", 4) + claude_line("u3", "a1", 5))
    ingest(db, {"claude": claude})
    append(log(claude), reply("late", "a1", 6))
    assert plans_of(db, claude) == (1, 0)
    assert_fresh(tmp_path, db, claude)


def test_a_first_prompt_an_earlier_line_answers_derives_the_session_whole(tmp_path, claude):
    db = tmp_path / "o.db"
    # z answers a prompt not written yet (lines written out of order); then it comes,
    # the first prompt sent again: its branch, holding the latest line, goes on.
    append(log(claude), claude_line("u0", None, 0) + reply("a0", "u0", 1) + reply("z", "v0", 9))
    ingest(db, {"claude": claude})
    append(log(claude), claude_line("v0", None, 5))
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT uuid FROM messages WHERE visibility = 'inactive' ORDER BY uuid") == [("a0",), ("u0",)]
    assert_fresh(tmp_path, db, claude)


def compaction(n, parent, kept=()):
    boundary = claude_line(f"k{n}", None, n, kind="system", type="system", subtype="compact_boundary",
                           content="Conversation compacted", level="info", isMeta=False, logicalParentUuid=parent,
                           compactMetadata={"trigger": "auto", "preTokens": 170000,
                                            **({"preservedSegment": {"headUuid": kept[0], "tailUuid": kept[-1],
                                                                     "anchorUuid": parent}} if kept else {})})
    summary = claude_line(f"s{n}", f"k{n}", n + 1, isCompactSummary=True, isVisibleInTranscriptOnly=True,
                          message={"role": "user", "content": "This session is being continued from a previous "
                                   "conversation that ran out of context. The conversation is summarized below:\n\nparser work"})
    return boundary, summary


def test_a_compaction_derives_the_session_whole(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), conversation(6))
    ingest(db, {"claude": claude})
    boundary, summary = compaction(30, "a5")
    append(log(claude), boundary)  # its summary not written yet
    assert plans_of(db, claude) == (1, 0)
    assert_fresh(tmp_path, db, claude)
    append(log(claude), summary + claude_line("u40", "s30", 40))
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT COUNT(*) FROM messages WHERE surface = 'shadowed'") == [(12,)]
    assert_fresh(tmp_path, db, claude)
    append(log(claude), reply("a40", "u40", 41))  # after the compaction: an append again
    assert plans_of(db, claude) == (0, 1)
    assert_fresh(tmp_path, db, claude)


def test_lines_appended_to_an_agents_transcript_are_derived_alone(tmp_path, claude):
    db = tmp_path / "o.db"
    spec = {"description": "Profile the parser", "subagent_type": "Explore", "prompt": "Profile the parser."}
    append(log(claude), conversation(2) + claude_line("u2", "a1", 4) + tool_use("t2", "u2", 5, "toolu_task", "Agent", spec))
    agent = log(claude, f"{SID}/subagents/agent-{AGENT}.jsonl")
    agent_line = {"isSidechain": True, "agentId": AGENT}
    append(agent, claude_line("g0", None, 6, **agent_line, message={"role": "user", "content": "Profile the parser."})
           + reply("f1", "g0", 7, **agent_line) + tool_use("f2", "f1", 8, "toolu_f2", **agent_line)
           + tool_result("f3", "f2", 9, "toolu_f2", **agent_line) + reply("g1", "f3", 7, **agent_line))
    agent.with_suffix(".meta.json").write_text(json.dumps(
        {"agentType": "Explore", "description": "Profile the parser", "toolUseId": "toolu_task"}))
    ingest(db, {"claude": claude})
    child = f"{SID}:agent-{AGENT}"
    assert rows(db, "SELECT parent_tool_use_id FROM subagents WHERE child_session_id = ?", [child]) == [("toolu_task",)]
    append(agent, tool_use("g2", "g1", 8, "toolu_g2", **agent_line) + tool_result("g3", "g2", 9, "toolu_g2", **agent_line)
           + reply("g4", "g3", 10, **agent_line))
    assert plans_of(db, claude) == (0, 1)  # the agent's session alone, derived alone
    assert_fresh(tmp_path, db, claude)
    # Its result in the parent's log: both derived alone.
    append(log(claude), tool_result("r2", "t2", 11, "toolu_task", text="The parser spends its time in json.",
                                    toolUseResult={"status": "completed", "agentId": AGENT, "totalDurationMs": 5000,
                                                   "totalTokens": 1234, "content": []}))
    assert plans_of(db, claude) == (0, 1)
    assert_fresh(tmp_path, db, claude)


def assert_alike(db, other):
    got, expected = snapshot(db), snapshot(other)
    assert got == expected, diff(got, expected)


def test_a_log_rewritten_derives_its_session_whole(tmp_path, claude):
    db, apart = tmp_path / "o.db", tmp_path / "apart.db"
    other = tmp_path / "apart" / ".claude"  # the same log, found gone by a run before it comes back rewritten
    rewritten = (conversation(2) + claude_line("u1b", "a0", 4) + reply("a1b", "u1b", 5)
                 + claude_line("u2", "a1b", 6) + reply("a2", "u2", 7))
    for root, database in ((claude, db), (other, apart)):
        append(log(root), conversation(4))
        ingest(database, {"claude": root})
    log(other).unlink()
    ingest(apart, {"claude": other})
    log(other).write_bytes(rewritten)
    ingest(apart, {"claude": other})
    # Rewritten in place with as many lines, u1 sent again from a0: the old file gone, its rows
    # archived (those of u2 and a2 apart from the new lines of the same ids), the new one's
    # rows under the same ids where its lines are the same.
    log(claude).write_bytes(rewritten)
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT uuid FROM messages WHERE visibility = 'inactive' ORDER BY uuid") == [
        ("a1",), ("a2",), ("a3",), ("u1",), ("u2",), ("u3",)]
    assert_alike(db, apart)
    more = conversation(1, start=3).replace(b'"parentUuid": null', b'"parentUuid": "a2"')
    append(log(claude), more)
    append(log(other), more)
    ingest(apart, {"claude": other})
    assert plans_of(db, claude) == (0, 1)
    assert_alike(db, apart)


def test_a_log_read_again_from_its_start_derives_its_session_whole(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), conversation(2) + claude_line("u1b", "a0", 4) + reply("a1b", "u1b", 5)
           + claude_line("u2", "a1b", 6) + reply("a2", "u2", 7))
    ingest(db, {"claude": claude})
    # Read again from its start (a new parser version): its rows under the same ids.
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.close()
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT uuid FROM messages WHERE visibility = 'inactive' ORDER BY uuid") == [("a1",), ("u1",)]
    assert_fresh(tmp_path, db, claude)
    append(log(claude), conversation(1, start=3).replace(b'"parentUuid": null', b'"parentUuid": "a2"'))
    assert plans_of(db, claude) == (0, 1)
    assert_fresh(tmp_path, db, claude)


def emptied_copy(generated, live) -> dict:
    """A copy of the ``generated`` tree in ``live`` with its logs empty (documents whole),
    and the lines each log is to get back."""
    lines = {}
    for path in sorted(p for p in generated.rglob("*") if p.is_file()):
        target = live / path.relative_to(generated)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".jsonl":
            lines[target] = path.read_bytes().splitlines(keepends=True)
            target.write_bytes(b"")
        else:
            target.write_bytes(path.read_bytes())
    return lines


def grow(lines: dict, step: int, steps: int) -> None:
    """Append to each log its ``step``-th of ``steps`` shares of its lines."""
    for target, all_lines in lines.items():
        done, upto = (len(all_lines) * (step - 1)) // steps, (len(all_lines) * step) // steps
        append(target, b"".join(all_lines[done:upto]))


def test_the_generated_corpus_written_in_steps_gives_a_fresh_ingests_database(tmp_path):
    """Every shape the generator plants (rewinds, compactions, agents, inline sidechains,
    split responses, titles), its files growing a line at a time in steps."""
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "gen", seed=3, target_bytes=400_000, codex=False)
    live = tmp_path / "live"
    lines = emptied_copy(tmp_path / "gen", live)
    db = tmp_path / "o.db"
    steps = 12
    before = dict(derive.PLANS)
    for step in range(1, steps + 1):
        grow(lines, step, steps)
        ingest(db, {"claude": live / ".claude"})
    assert derive.PLANS["appended"] - before.get("appended", 0) > 0
    assert_fresh(tmp_path, db, live / ".claude")


def test_a_line_that_is_no_message_appended_alone_moves_the_end(tmp_path, claude):
    # A prompt queued after the last reply (the session left with it waiting) and a pull request
    # linked later are lines of no message: the session went on to their times all the same.
    db = tmp_path / "o.db"
    append(log(claude), conversation(3))  # the last reply at 10:00:05
    assert plans_of(db, claude) == (1, 0)
    assert rows(db, "SELECT ended_at FROM sessions") == [("2026-03-01T10:00:05.000Z",)]
    queued = {"type": "queue-operation", "operation": "enqueue", "content": "and the tests", "sessionId": SID,
              "timestamp": "2026-03-01T10:00:09.250Z"}
    append(log(claude), (json.dumps(queued) + "\n").encode())
    assert plans_of(db, claude) == (0, 1)
    assert rows(db, "SELECT ended_at FROM sessions") == [("2026-03-01T10:00:09.250Z",)]
    assert_fresh(tmp_path, db, claude)
    linked = {"type": "pr-link", "sessionId": SID, "prNumber": 3, "prUrl": "https://example.invalid/o/r/pull/3",
              "prRepository": "o/r", "timestamp": "2026-03-01T11:30:00+01:00"}  # (10:30:00 UTC)
    append(log(claude), (json.dumps(linked) + "\n").encode())
    assert plans_of(db, claude) == (0, 1)
    assert rows(db, "SELECT ended_at FROM sessions") == [("2026-03-01T10:30:00.000Z",)]
    assert_fresh(tmp_path, db, claude)
    # a reply afterwards, stamped before the link, leaves the end where it was
    append(log(claude), claude_line("u3", "a2", 10) + reply("a3", "u3", 11))
    assert plans_of(db, claude) == (0, 1)
    assert rows(db, "SELECT ended_at, message_count FROM sessions") == [("2026-03-01T10:30:00.000Z", 8)]
    assert_fresh(tmp_path, db, claude)


def test_generated_codex_and_gemini_logs_written_in_steps_give_a_fresh_ingests_database(tmp_path):
    """Codex rollouts (turns completed in lines of their own) and Gemini chats (lastUpdated set
    after each write), their files growing in steps: sessions end where a fresh ingest says."""
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "gen", seed=3, target_bytes=400_000, claude=False, codex=True, gemini=True)
    live = tmp_path / "live"
    lines = emptied_copy(tmp_path / "gen", live)
    folders = {"codex": live / ".codex", "gemini": live / ".gemini"}
    db = tmp_path / "o.db"
    steps = 24
    before = dict(derive.PLANS)
    for step in range(1, steps + 1):
        grow(lines, step, steps)
        ingest(db, folders)
    assert derive.PLANS["appended"] - before.get("appended", 0) > 0
    fresh = tmp_path / "fresh.db"
    ingest(fresh, folders)
    got, expected = snapshot(db), snapshot(fresh)
    assert got == expected, diff(got, expected)
    # (sessions whose logs went on past their last row: a turn's task_complete, a chat's lastUpdated)
    [(past_rows,)] = rows(db, "SELECT COUNT(*) FROM sessions s JOIN derive_tallies t ON t.session_id = s.id "
                              "WHERE s.ended_at > t.ended_at")
    assert past_rows > 0


def test_a_migration_has_every_session_derived_whole_again(tmp_path, claude):
    # (a migration may change stored rows: what the last derivation counted may no longer hold)
    from datasette_obelisk.store.db import open_db

    db = tmp_path / "o.db"
    append(log(claude), conversation(3))
    ingest(db, {"claude": claude})
    assert rows(db, "SELECT session_id, rows FROM derive_tallies") == [(SID, 6)]
    with sqlite3.connect(db) as conn:  # as if m045 were new
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm045_key_ingest_errors_by_line'")
    open_db(db).close()
    assert rows(db, "SELECT COUNT(*) FROM derive_tallies") == [(0,)]
    append(log(claude), conversation(1, start=3))
    assert plans_of(db, claude) == (1, 0)
    assert_fresh(tmp_path, db, claude)


@pytest.mark.parametrize("marked_missing_first", [True, False])
def test_rows_redacted_in_place_derive_their_session_whole(tmp_path, claude, marked_missing_first):
    # New redaction rules redact the rows of a log gone from disk where they are (they
    # cannot be read again): the cwd and branch its session was derived from change in
    # place, and what the last derivation counted of them (derive_tallies) no longer holds.
    secret = "AKIAIOSFODNN7EXAMPLQ"
    db = tmp_path / "o.db"
    append(log(claude), conversation(2).replace(b"/home/dev/app", f"/home/dev/{secret}".encode())
           .replace(b'"branch-', f'"{secret}-'.encode()))
    ingest(db, {"claude": claude}, redact=False)  # (rules that did not know the secret yet)
    assert rows(db, "SELECT project_path FROM sessions") == [(f"/home/dev/{secret}",)]
    log(claude).unlink()  # (Claude Code cleans old logs up: the session stays, archived)
    if marked_missing_first:
        ingest(db, {"claude": claude}, redact=False)
    ingest(db, {"claude": claude})
    assert secret not in str(rows(db, "SELECT cwd, git_branch FROM messages"))
    assert secret not in str(rows(db, "SELECT project_path, project, git_branch, cwd FROM sessions"))
    assert rows(db, "SELECT COUNT(*) FROM derive_tallies") == [(1,)]  # derived whole again, counted anew


def queue(operation, n, content=None, **fields):
    """A ``queue-operation`` line, as Claude Code 2.1 writes them (no uuid; ``remove``
    names the command it takes out, ``enqueue`` and ``dequeue`` none)."""
    line = {"type": "queue-operation", "operation": operation, "sessionId": SID,
            "timestamp": f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}.500Z"}
    if content is not None:
        line["content"] = content
    line.update(fields)
    return (json.dumps(line) + "\n").encode()


def absorbed(uuid, parent, n, prompt, command):
    """A prompt queued while the agent worked, sent on within its turn (a ``queued_command``
    attachment, after ``remove`` with reason ``absorbed_mid_turn``)."""
    return queue("remove", n, prompt, reason="absorbed_mid_turn", commandUuid=command, deliveryId=f"d-{command}") \
        + claude_line(uuid, parent, n, kind="attachment", type="attachment", attachment={
            "type": "queued_command", "prompt": prompt, "source_uuid": command, "delivery_id": f"d-{command}",
            "commandMode": "prompt"})


def found(db, word):
    """The rows a search including meta lines finds (``search`` with ``includeMeta``)."""
    from datasette_obelisk.query import obelisk

    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return sorted(hit["message"]["uuid"] for hit in obelisk.search(conn, word, includeMeta=True))
    finally:
        conn.close()


def queued_rows(db):
    return rows(db, "SELECT text, search_text FROM messages WHERE type = 'queue-operation' ORDER BY seq")


def test_a_prompt_queued_and_sent_is_found_once_also_when_sent_in_a_later_append(tmp_path, claude):
    db = tmp_path / "o.db"
    # u0 asked; "zebra" queued and sent as the next prompt (dequeue, then its user line);
    # "walrus" queued and taken back with Esc (never sent); "heron" queued and sent within
    # the turn (an absorbed queued_command); "puffin" queued twice and sent once.
    append(log(claude), conversation(1)
           + queue("enqueue", 2, "zebra first") + queue("dequeue", 2)
           + claude_line("u1", "a0", 2, message={"role": "user", "content": "zebra first"}) + reply("a1", "u1", 3)
           + queue("enqueue", 4, "walrus second") + queue("remove", 4, "walrus second", reason="cleared_on_cancel")
           + queue("enqueue", 4, "heron third")
           + absorbed("q1", "a1", 5, "heron third", "c1") + reply("a2", "q1", 6)
           + queue("enqueue", 7, "puffin fourth") + queue("enqueue", 7, "puffin fourth") + queue("dequeue", 7)
           + claude_line("u3", "a2", 8, message={"role": "user", "content": "puffin fourth"}))
    assert plans_of(db, claude) == (1, 0)
    assert found(db, "zebra") == ["u1"]
    assert found(db, "heron") == ["q1"]
    assert found(db, "walrus") == [f"{SID}:{rows(db, 'SELECT byte_offset FROM messages WHERE text = ?', ['walrus second'])[0][0]}"]
    assert len(found(db, "puffin")) == 2  # the one sent, and the one queued again and never sent
    assert queued_rows(db) == [("zebra first", ""), ("walrus second", None), ("heron third", ""),
                               ("puffin fourth", ""), ("puffin fourth", None)]
    assert_fresh(tmp_path, db, claude)
    # A prompt queued at the end of one read and sent in the next: the queued row read
    # before stops being searched.
    append(log(claude), reply("a3", "u3", 9) + queue("enqueue", 10, "otter fifth") + queue("enqueue", 10, "ibis sixth"))
    assert plans_of(db, claude) == (0, 1)
    assert len(found(db, "otter")) == len(found(db, "ibis")) == 1
    append(log(claude), queue("dequeue", 11) + claude_line("u4", "a3", 11, message={"role": "user", "content": "otter fifth"})
           + absorbed("q2", "u4", 12, "ibis sixth", "c2") + claude_line("u5", "q2", 13, message={
               "role": "user", "content": "puffin fourth"}))  # (the puffin still queued is sent)
    assert plans_of(db, claude) == (0, 1)
    assert (found(db, "otter"), found(db, "ibis"), found(db, "puffin")) == (["u4"], ["q2"], ["u3", "u5"])
    assert found(db, "walrus") != []  # (never sent)
    assert_fresh(tmp_path, db, claude)


def test_a_queued_prompt_sent_in_a_later_append_is_read_again_alike(tmp_path, claude):
    # The rows read in steps are what one read of the whole log gives, also once the
    # log is read again from its start (its session derived whole again).
    db = tmp_path / "o.db"
    append(log(claude), conversation(2) + queue("enqueue", 5, "gannet later"))
    assert plans_of(db, claude) == (1, 0)
    assert queued_rows(db) == [("gannet later", None)]
    append(log(claude), queue("dequeue", 6) + claude_line("u2", "a1", 6, message={"role": "user", "content": "gannet later"}))
    assert plans_of(db, claude) == (0, 1)
    assert queued_rows(db) == [("gannet later", "")]
    assert found(db, "gannet") == ["u2"]
    assert_fresh(tmp_path, db, claude)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.close()
    assert plans_of(db, claude) == (1, 0)
    assert queued_rows(db) == [("gannet later", "")]
    assert found(db, "gannet") == ["u2"]
    assert_fresh(tmp_path, db, claude)
