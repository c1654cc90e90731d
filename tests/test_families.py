"""The rows several files share (sessions, agents) come out as one ingest of
those files gives them: after a log is read again from its start, and when the
files arrive one by one in any order."""

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from datasette_obelisk.plugins import get_sources
from datasette_obelisk.query.live import refresh
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import Ingester, ingest
from dbsnapshot import diff, rows, snapshot


def run(db, claude):
    return ingest(db, {"claude": claude}, sources={"claude": get_sources()["claude"]})


def drop_line(path, number):
    """Rewritten where it is (the same inode) without line ``number``."""
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: number - 1] + lines[number:]))


def replaced_without_line(path, number):
    """Replaced by another file (a new inode, renamed over it) without line ``number``."""
    lines = path.read_bytes().splitlines(keepends=True)
    new = path.with_name(path.name + ".tmp")
    new.write_bytes(b"".join(lines[: number - 1] + lines[number:]))
    os.replace(new, path)


def to_read_again(db, path):
    """``path`` is to be read again from its start, as after a new parser version."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL WHERE path = ?", [str(path)])
    conn.close()


@pytest.fixture
def logs(tmp_path, corpus):
    def copy(folder):
        project = tmp_path / ".claude" / "projects" / "p"
        shutil.copytree(corpus / "claude-code" / folder, project)
        return tmp_path / ".claude", project

    return copy


# (corpus folder, file, line dropped, a query, its answer, which only that line gives)
# A log rewritten without the line is the old file gone: the answer stays, archived with it.
CASES = [
    # The only line naming the working folder, branch and version.
    ("kvsankar__agent-history", "claude_forked_session.jsonl", 1,
     "SELECT cwd, git_branch, version, started_at FROM sessions",
     [("/home/testuser/fork-project", "main", "2.0.75", "2025-12-10T09:00:00.000Z")]),
    # The first line with a time.
    ("handgemacht-ai__claude-code-log", "2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl", 2,
     "SELECT started_at FROM sessions WHERE id = '2b4ed4c0-b905-41de-9238-273db3ec737a'",
     [("2026-01-23T17:13:37.849Z",)]),
    # The Task call that typed the agent.
    ("handgemacht-ai__claude-code-log", "eb000000-0000-4000-8000-000000000001.jsonl", 2,
     "SELECT agent_type, parent_session_id FROM sessions WHERE id LIKE '%:agent-cccc333'",
     [("Explore", "eb000000-0000-4000-8000-000000000001")]),
    # The Task call that described a 2.1 agent.
    ("handgemacht-ai__claude-code-log", "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl", 54,
     "SELECT description FROM subagents WHERE agent_id = 'a4ca7529859c158c2'",
     [("Research Claude Code plan mode",)]),
    # The first line of an inline sidechain, which names the agent.
    ("jazzyalex__agent-sessions", "small.jsonl", 1,
     "SELECT agent_id, child_session_id FROM subagents WHERE session_id = 'small' ORDER BY agent_id",
     [("sidechain-sys1", "small:agent-sidechain-sys1")]),
]


@pytest.mark.parametrize("folder, name, number, sql, expected", CASES, ids=[c[1] for c in CASES])
def test_a_log_read_again_with_its_family_gives_a_first_ingests_rows(tmp_path, logs, folder, name, number, sql, expected):
    claude, project = logs(folder)
    run(tmp_path / "again.db", claude)
    to_read_again(tmp_path / "again.db", project / name)
    assert run(tmp_path / "again.db", claude).files_replayed >= 1
    run(tmp_path / "first.db", claude)
    assert rows(tmp_path / "again.db", sql) == expected
    got, first = snapshot(tmp_path / "again.db"), snapshot(tmp_path / "first.db")
    assert got == first, diff(got, first)


@pytest.mark.parametrize("folder, name, number, sql, expected", CASES, ids=[c[1] for c in CASES])
def test_a_log_rewritten_without_a_line_keeps_what_the_line_gave_as_when_it_is_replaced(
        tmp_path, logs, folder, name, number, sql, expected):
    claude, project = logs(folder)
    run(tmp_path / "again.db", claude)
    drop_line(project / name, number)
    summary = run(tmp_path / "again.db", claude)
    assert (summary.files_replayed, summary.files_missing) == (0, 1)
    assert rows(tmp_path / "again.db", sql) == expected
    shutil.rmtree(claude)  # (the same logs again, replaced by another file)
    claude, project = logs(folder)
    run(tmp_path / "replaced.db", claude)
    replaced_without_line(project / name, number)
    run(tmp_path / "replaced.db", claude)
    got, replaced = snapshot(tmp_path / "again.db"), snapshot(tmp_path / "replaced.db")
    assert got == replaced, diff(got, replaced)


@pytest.mark.parametrize("folder, name, number, sql, expected", CASES, ids=[c[1] for c in CASES])
def test_a_live_refresh_of_a_rewritten_log_gives_an_ingests_rows(tmp_path, logs, folder, name, number, sql, expected):
    """A live-preferred answer reads the changed log as an ingest does, with no
    discovery: each file as the ingest that found it read it."""
    claude, project = logs(folder)
    run(tmp_path / "again.db", claude)
    run(tmp_path / "ingested.db", claude)
    drop_line(project / name, number)
    conn = open_db(tmp_path / "again.db")
    refreshed = refresh(conn)
    conn.close()
    assert refreshed == [str(project / name)]
    run(tmp_path / "ingested.db", claude)
    assert rows(tmp_path / "again.db", sql) == expected
    got, ingested = snapshot(tmp_path / "again.db"), snapshot(tmp_path / "ingested.db")
    assert got == ingested, diff(got, ingested)


AGENT_HINTS = ("p/eb000000-0000-4000-8000-000000000001/subagents/agent-cccc333.jsonl", "subagent",
               '{"agent_id":"cccc333","parent_session_id":"eb000000-0000-4000-8000-000000000001","project":"p"}', 1)


def test_each_file_keeps_what_discovery_found_and_an_older_database_gets_it_without_reading(tmp_path, logs):
    claude, project = logs("handgemacht-ai__claude-code-log")
    db = tmp_path / "o.db"
    run(db, claude)
    stored = "SELECT substr(path, ?), kind, hints, priority FROM source_files WHERE path LIKE '%agent-cccc333%'"
    start = len(str(project.parent)) + 2
    assert rows(db, stored.replace("?", str(start))) == [AGENT_HINTS]
    conn = sqlite3.connect(db)
    with conn:  # as stored before m019
        conn.execute("UPDATE source_files SET hints = NULL, priority = NULL")
    conn.close()
    summary = run(db, claude)
    assert (summary.files_read, summary.files_skipped) == (0, 8)
    assert rows(db, stored.replace("?", str(start))) == [AGENT_HINTS]
    assert rows(db, "SELECT COUNT(*), COUNT(hints), SUM(priority) FROM source_files") == [(8, 8, 4)]  # two agent logs (1) and a .meta.json (2)


def test_a_live_refresh_leaves_files_stored_without_hints_to_the_next_ingest(tmp_path, logs):
    # Read without them, the agent's log would be a session of its own (agent-cccc333:agent-cccc333).
    claude, project = logs("handgemacht-ai__claude-code-log")
    db = tmp_path / "o.db"
    run(db, claude)
    sessions = rows(db, "SELECT id, project, parent_session_id FROM sessions ORDER BY id")
    conn = sqlite3.connect(db)
    with conn:  # as stored before m019
        conn.execute("UPDATE source_files SET hints = NULL, priority = NULL")
    conn.close()
    agent = project / "eb000000-0000-4000-8000-000000000001" / "subagents" / "agent-cccc333.jsonl"
    agent.write_bytes(agent.read_bytes())  # rewritten as it was: read again from its start
    os.utime(agent, ns=(1, 1))
    conn = open_db(db)
    assert refresh(conn) == []
    conn.close()
    assert run(db, claude).files_read == 1
    assert rows(db, "SELECT id, project, parent_session_id FROM sessions ORDER BY id") == sessions
    assert rows(db, "SELECT COUNT(*), COUNT(hints) FROM source_files") == [(8, 8)]


def test_the_files_sharing_a_session_are_read_again_with_it(tmp_path, logs):
    claude, project = logs("handgemacht-ai__claude-code-log")
    run(tmp_path / "o.db", claude)
    to_read_again(tmp_path / "o.db", project / "eb000000-0000-4000-8000-000000000001.jsonl")
    summary = run(tmp_path / "o.db", claude)
    # The main log, and its agent's log, which names the main session.
    assert (summary.files, summary.files_read, summary.files_replayed, summary.files_skipped) == (8, 2, 2, 6)
    assert rows(tmp_path / "o.db", "SELECT COUNT(*) FROM sessions") == [(7,)]


def test_a_family_with_a_file_gone_from_disk_keeps_its_rows(tmp_path, logs):
    claude, project = logs("handgemacht-ai__claude-code-log")
    run(tmp_path / "o.db", claude)
    agent = "eb000000-0000-4000-8000-000000000001/subagents/agent-cccc333.jsonl"
    (project / agent).unlink()
    run(tmp_path / "o.db", claude)
    to_read_again(tmp_path / "o.db", project / "eb000000-0000-4000-8000-000000000001.jsonl")
    summary = run(tmp_path / "o.db", claude)
    assert (summary.files_read, summary.files_replayed) == (1, 1)
    # The agent's session is still archived with its type, which its main log gives.
    assert rows(tmp_path / "o.db", "SELECT agent_type, availability FROM sessions WHERE id LIKE '%:agent-cccc333'") == [
        ("Explore", "archived")
    ]


def test_a_session_whose_own_log_is_gone_is_archived_while_its_agents_logs_remain(tmp_path, logs):
    claude, project = logs("handgemacht-ai__claude-code-log")
    run(tmp_path / "o.db", claude)
    (project / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl").unlink()
    run(tmp_path / "o.db", claude)
    assert rows(tmp_path / "o.db", "SELECT id, availability FROM sessions WHERE id LIKE 'ef958aa1%' ORDER BY id") == [
        ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "archived"),
        ("ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2", "live"),
    ]


def test_a_document_read_again_stays_alone(tmp_path, logs):
    claude, project = logs("jazzyalex__agent-sessions")
    run(tmp_path / "o.db", claude)
    meta = project / "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f" / "subagents" / "agent-a0ad4f44468bdf20d.meta.json"
    meta.write_bytes(meta.read_bytes() + b"\n")
    summary = run(tmp_path / "o.db", claude)
    assert (summary.files_read, summary.files_replayed) == (1, 1)


def test_inline_agents_derived_while_their_family_is_read_again_keep_their_parent(tmp_path, logs):
    """While a reader works ahead, the writer derives queued sessions: after a
    parser change, nothing of a family is forgotten until its first file is
    written again, and inline agents' sessions derived between its files
    (forgotten, their lines not read yet) end with their parent."""
    claude, _ = logs("d-kimuson__claude-code-viewer")
    run(tmp_path / "first.db", claude)
    db = tmp_path / "again.db"
    run(db, claude)
    conn = open_db(db)
    conn.execute("UPDATE source_files SET parser_version = NULL")
    ingester = Ingester(conn, {"claude": get_sources()["claude"]}, {"claude": claude})
    units = ingester.discover()
    ingester.with_families([ingester.plan(unit) for unit in units])
    agents = "SELECT COUNT(*) FROM sessions WHERE id LIKE '%:agent-sidechain-%' AND parent_session_id IS NOT NULL"
    assert rows(db, agents) == [(5,)]  # planned: nothing forgotten yet
    ingester.ingest_file(units[0])
    ingester.derive_some(100)
    for unit in units[1:]:
        ingester.ingest_file(unit)
    ingester.flush(force=True)
    ingester.derive_pending()
    assert rows(db, "SELECT COUNT(*), COUNT(parent_session_id), COUNT(agent_type) FROM sessions WHERE relationship = 'subagent'") == [(5, 5, 5)]
    got, first = snapshot(db), snapshot(tmp_path / "first.db")
    assert got == first, diff(got, first)


# A parent's files reach the database in any order (the agent's log is written
# before the main log's result line, its .meta.json at any time).
ORDERS = [
    ("handgemacht-ai__claude-code-log", "eb000000-0000-4000-8000-000000000001:agent-cccc333", "Explore",
     ["eb000000-0000-4000-8000-000000000001/subagents/agent-cccc333.jsonl",
      "eb000000-0000-4000-8000-000000000001.jsonl"]),
    ("jazzyalex__agent-sessions", "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f:agent-a0ad4f44468bdf20d", "general-purpose",
     ["0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl",
      "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl",
      "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.meta.json"]),
]


@pytest.mark.parametrize("folder, agent, agent_type, order", ORDERS, ids=[o[0] for o in ORDERS])
def test_files_arriving_one_by_one_give_the_rows_of_one_ingest(tmp_path, logs, corpus, folder, agent, agent_type, order):
    claude, project = logs(folder)
    run(tmp_path / "whole.db", claude)
    arriving = tmp_path / "arriving" / "projects" / "p"
    for name in order:
        (arriving / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(project / name, arriving / name)
        run(tmp_path / "arriving.db", arriving.parent.parent)
    for path in sorted(project.rglob("*")):  # and the folder's other files
        if path.is_file() and not (arriving / path.relative_to(project)).exists():
            (arriving / path.relative_to(project)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, arriving / path.relative_to(project))
    run(tmp_path / "arriving.db", arriving.parent.parent)
    sql = f"SELECT agent_type FROM sessions WHERE id = '{agent}'"
    assert rows(tmp_path / "arriving.db", sql) == rows(tmp_path / "whole.db", sql) == [(agent_type,)]
    got, whole = snapshot(tmp_path / "arriving.db"), snapshot(tmp_path / "whole.db")
    assert got == whole, diff(got, whole)


# cccc333's Task call says Explore / "Coverage analysis"; the .meta.json these tests add says otherwise.
META = "eb000000-0000-4000-8000-000000000001/subagents/agent-cccc333.meta.json"
DESCRIBED = ("SELECT s.agent_type, sa.agent_type, sa.description, sa.agent_type_source, sa.description_source "
             "FROM sessions s "
             "JOIN subagents sa ON sa.child_session_id = s.id WHERE sa.agent_id = 'cccc333'")


def with_agent_meta(logs):
    claude, project = logs("handgemacht-ai__claude-code-log")
    (project / META).write_text(json.dumps({"agentType": "Plan", "description": "from meta"}))
    return claude, project


def assert_as_one_ingest(tmp_path, expected):
    assert rows(tmp_path / "arriving.db", DESCRIBED) == rows(tmp_path / "whole.db", DESCRIBED) == expected
    got, whole = snapshot(tmp_path / "arriving.db"), snapshot(tmp_path / "whole.db")
    assert got == whole, diff(got, whole)


def test_a_meta_json_arriving_last_outranks_the_spawning_call(tmp_path, logs):
    claude, project = with_agent_meta(logs)
    run(tmp_path / "whole.db", claude)
    arriving = tmp_path / "arriving" / "projects" / "p"
    shutil.copytree(project, arriving, ignore=lambda folder, names: [n for n in names if n == Path(META).name])
    run(tmp_path / "arriving.db", arriving.parent.parent)
    assert rows(tmp_path / "arriving.db", DESCRIBED) == [("Explore", "Explore", "Coverage analysis", "call", "result")]
    shutil.copy(project / META, arriving / META)
    run(tmp_path / "arriving.db", arriving.parent.parent)
    assert_as_one_ingest(tmp_path, [("Plan", "Plan", "from meta", "agent", "agent")])


def test_a_call_s_result_written_after_the_meta_json_does_not_outrank_it(tmp_path, logs):
    # Claude Code writes an agent's .meta.json when it starts, its call's result when it ends.
    claude, project = with_agent_meta(logs)
    parent = project / "eb000000-0000-4000-8000-000000000001.jsonl"
    lines = parent.read_bytes().splitlines(keepends=True)
    result = json.loads(lines[2])
    result["toolUseResult"]["agentType"] = "Explore"  # the result says otherwise
    lines[2] = json.dumps(result).encode() + b"\n"
    parent.write_bytes(b"".join(lines))
    run(tmp_path / "whole.db", claude)
    parent.write_bytes(b"".join(lines[:2]))  # the agent runs
    run(tmp_path / "arriving.db", claude)
    parent.write_bytes(b"".join(lines))  # its result is written
    assert run(tmp_path / "arriving.db", claude).files_replayed == 0
    assert_as_one_ingest(tmp_path, [("Plan", "Plan", "from meta", "agent", "agent")])


def test_each_of_an_agent_s_fields_keeps_its_own_source(tmp_path, logs):
    # The .meta.json types the agent only; its call describes it until its result does better.
    claude, project = logs("handgemacht-ai__claude-code-log")
    (project / META).write_text(json.dumps({"agentType": "Plan", "toolUseId": "tu_Task_async_001"}))
    parent = project / "eb000000-0000-4000-8000-000000000001.jsonl"
    lines = parent.read_bytes().splitlines(keepends=True)
    result = json.loads(lines[2])
    result["toolUseResult"]["description"] = "from result"
    lines[2] = json.dumps(result).encode() + b"\n"
    parent.write_bytes(b"".join(lines))
    run(tmp_path / "whole.db", claude)
    parent.write_bytes(b"".join(lines[:2]))  # the call, not its result yet
    run(tmp_path / "arriving.db", claude)
    assert rows(tmp_path / "arriving.db", DESCRIBED) == [("Plan", "Plan", "Coverage analysis", "agent", "call")]
    parent.write_bytes(b"".join(lines))
    run(tmp_path / "arriving.db", claude)
    assert_as_one_ingest(tmp_path, [("Plan", "Plan", "from result", "agent", "result")])


def test_an_agent_s_file_name_outranks_a_meta_json_whichever_comes_first(tmp_path, logs):
    # agent-acompact-*: the compaction summariser, whatever a .meta.json beside it says.
    claude, project = logs("marot__spotter")
    agent = project / "fa812bfe-b295-4cca-9c2f-fdf01028cb46" / "subagents" / "agent-acompact-70d8e7"
    meta = agent.with_suffix(".meta.json")
    meta.write_text(json.dumps({"agentType": "Plan", "description": "from meta"}))
    log = agent.with_suffix(".jsonl")
    held = log.read_bytes()
    log.unlink()
    run(tmp_path / "arriving.db", claude)  # the .meta.json first
    log.write_bytes(held)
    run(tmp_path / "arriving.db", claude)
    run(tmp_path / "whole.db", claude)
    sql = "SELECT agent_type, agent_type_source, description, description_source FROM subagents WHERE agent_id = 'acompact-70d8e7'"
    assert rows(tmp_path / "arriving.db", sql) == rows(tmp_path / "whole.db", sql) == [
        ("compaction", "name", "from meta", "agent")]
    got, whole = snapshot(tmp_path / "arriving.db"), snapshot(tmp_path / "whole.db")
    assert got == whole, diff(got, whole)


@pytest.mark.parametrize("read_ahead", [None, 0], ids=["inline", "read-ahead"])
def test_an_extended_last_line_reads_the_family_again(tmp_path, logs, read_ahead):
    """A run took an unterminated last line (whole JSON) as read; the writer
    then extended that line, so the file is read again from its start, and
    with it the agent's log that names the same session (which has grown too,
    so it also has a job of its own later in the run)."""
    claude, project = logs("handgemacht-ai__claude-code-log")
    main = project / "eb000000-0000-4000-8000-000000000001.jsonl"
    agent = project / "eb000000-0000-4000-8000-000000000001" / "subagents" / "agent-cccc333.jsonl"
    lines = main.read_bytes().splitlines(keepends=True)
    main.write_bytes(b"".join(lines[:3]).rstrip(b"\n"))  # line 3, naming the agent the Task call types, unterminated
    ingest(tmp_path / "o.db", {"claude": claude}, read_ahead_bytes=read_ahead)
    sql = "SELECT agent_type FROM sessions WHERE id LIKE '%:agent-cccc333'"
    assert rows(tmp_path / "o.db", sql) == [("Explore",)]
    main.write_bytes(b"".join(lines[:3]).rstrip(b"\n") + b" trailing words\n" + b"".join(lines[3:]))
    last = json.loads(agent.read_bytes().splitlines()[-1])
    agent.write_bytes(agent.read_bytes() + json.dumps(last | {"uuid": "agent-line-added", "parentUuid": last["uuid"]}).encode() + b"\n")
    summary = ingest(tmp_path / "o.db", {"claude": claude}, read_ahead_bytes=read_ahead)
    assert (summary.files_read, summary.files_replayed, summary.files_skipped) == (2, 2, 6)
    run(tmp_path / "first.db", claude)
    assert rows(tmp_path / "o.db", sql) == rows(tmp_path / "first.db", sql) == [(None,)]
    got, first = snapshot(tmp_path / "o.db"), snapshot(tmp_path / "first.db")
    assert got == first, diff(got, first)


def test_a_generated_corpus_arriving_in_two_halves_gives_the_rows_of_one_ingest(tmp_path):
    """Every other file first, the rest later (agents before or after their
    parents, Codex forks before their parents), as one ingest gives them."""
    from datasette_obelisk.demo.generator import generate

    whole = tmp_path / "whole"
    generate(whole, seed=11, target_bytes=3_000_000)
    files = sorted(p.relative_to(whole) for p in whole.rglob("*") if p.is_file())
    arriving = tmp_path / "arriving"
    roots = {"claude": arriving / ".claude", "codex": arriving / ".codex"}
    for half in (files[::2], files[1::2]):
        for name in half:
            (arriving / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(whole / name, arriving / name)
        summary = ingest(tmp_path / "arriving.db", roots)
        assert summary.errors == 0
    ingest(tmp_path / "whole.db", roots)
    # Both sources, and sessions with a parent (agents, forks) among them.
    assert rows(tmp_path / "whole.db", "SELECT COUNT(DISTINCT source), SUM(parent_session_id IS NOT NULL) > 5 FROM sessions") == [(2, 1)]
    got, once = snapshot(tmp_path / "arriving.db"), snapshot(tmp_path / "whole.db")
    assert got == once, diff(got, once)


def test_a_resumed_log_replaying_the_one_it_resumed_gives_its_lines_back_whatever_the_names(tmp_path):
    """Claude Code 1.0-2.0 resumed a session into a new file, replaying the
    earlier lines (same uuids). A first ingest reads the older log first, as
    an ingest that saw the files arrive does, so the lines stay its own."""
    project = tmp_path / ".claude" / "projects" / "-w"
    project.mkdir(parents=True)

    def line(uuid, parent, text, second, session):
        return json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session,
                           "timestamp": f"2026-01-01T00:00:{second:02d}Z", "message": {"role": "user", "content": text}})

    original, resumed = "ffffffff-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
    replayed = [("u1", None, "first", 1), ("u2", "u1", "second", 2), ("u3", "u2", "third", 3)]
    (project / f"{original}.jsonl").write_text("\n".join(line(*r, original) for r in replayed) + "\n")
    os.utime(project / f"{original}.jsonl", (1_800_000_000, 1_800_000_000))
    later = [*replayed, ("u4", "u3", "fourth, after the resume", 9)]
    (project / f"{resumed}.jsonl").write_text("\n".join(line(*r, resumed) for r in later) + "\n")
    os.utime(project / f"{resumed}.jsonl", (1_800_000_100, 1_800_000_100))
    run(tmp_path / "first.db", tmp_path / ".claude")
    expected = [(original, 3), (resumed, 1)]
    assert rows(tmp_path / "first.db", "SELECT session_id, COUNT(*) FROM messages GROUP BY 1 ORDER BY 1 DESC") == expected
    # The same two files arriving one at a time, the older first.
    arriving = tmp_path / "arriving" / ".claude" / "projects" / "-w"
    arriving.mkdir(parents=True)
    for name in (original, resumed):
        shutil.copy2(project / f"{name}.jsonl", arriving / f"{name}.jsonl")
        run(tmp_path / "arriving.db", tmp_path / "arriving" / ".claude")
    got, first = snapshot(tmp_path / "arriving.db"), snapshot(tmp_path / "first.db")
    assert got == first, diff(got, first)


def said(uuid, parent, second, session, text=None, **extra) -> str:
    """A Claude Code user line saying ``text`` (else its uuid) at second ``second``."""
    return json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session, **extra,
                       "timestamp": f"2026-01-01T00:00:{second:02d}Z",
                       "message": {"role": "user", "content": text or uuid}})


def each_arrival(tmp_path, logs: dict, orders, older=()):
    """For each of ``orders``: a fresh ``.claude`` folder and database, the ``logs`` (name:
    text) written in that order with an ingest after each, or (None) all at once before one
    ingest; the logs named in ``older`` are written a second older. Yields ``(order, db, project)``."""
    for n, order in enumerate(orders):
        project = tmp_path / str(n) / ".claude" / "projects" / "-w"
        project.mkdir(parents=True)
        db = project.parent.parent.parent / "o.db"
        for name in order or logs:
            (project / f"{name}.jsonl").write_text(logs[name])
            os.utime(project / f"{name}.jsonl", (1_800_000_001 - (name in older),) * 2)
            if order:
                run(db, project.parent.parent)
        run(db, project.parent.parent)
        yield order, db, project


@pytest.mark.parametrize("replayed_as", ["resumed", "original"])
def test_a_resumed_log_is_the_continuation_of_the_session_it_replays(tmp_path, replayed_as):
    """The session a Claude Code 1.0-2.0 resume wrote into a new file goes on
    from the one whose lines it replayed (under its own id or theirs), read
    in one ingest or after it."""
    original, resumed = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    replayed = [("u1", None, 1, None, "first"), ("u2", "u1", 2, None, "second")]
    copy = original if replayed_as == "original" else resumed

    def log(*lines):
        return "\n".join(lines) + "\n"

    logs = {
        original: log(*(said(u, p, t, original, text) for u, p, t, _, text in replayed)),
        resumed: log(json.dumps({"type": "summary", "summary": "First and second", "leafUuid": "u2"}),
                     *(said(u, p, t, copy, text) for u, p, t, _, text in replayed),
                     said("u3", "u2", 9, resumed, "third, after the resume")),
    }
    for order, db, _ in each_arrival(tmp_path, logs, [None, (original, resumed)], older={original}):
        assert rows(db, "SELECT id, parent_session_id, relationship FROM sessions ORDER BY id") == [
            (original, None, None), (resumed, original, "continuation")], order
        assert rows(db, "SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1") == [
            (original, "u1,u2"), (resumed, "u3")], order


@pytest.mark.parametrize("summary", [False, True], ids=["first-line", "summary-line"])
def test_a_resumed_log_read_before_the_one_it_resumed_is_its_continuation(tmp_path, summary):
    """A resumed session whose file does not replay the lines it goes on from (its
    first line names the last of them, a summary line may name it too) is the
    continuation of theirs also when its file is read first, in the same ingest
    or before the other file arrives: the rows are those of reading the other first."""
    original, resumed = "bbbbbbbb-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"
    head = [json.dumps({"type": "summary", "summary": "First and second", "leafUuid": "u2"})] if summary else []
    logs = {
        original: "\n".join([said("u1", None, 1, original), said("u2", "u1", 2, original)]) + "\n",
        resumed: "\n".join([*head, said("u3", "u2", 9, resumed), said("u4", "u3", 10, resumed)]) + "\n",
    }
    got = {}
    for order in ((original, resumed), (resumed, original)):
        arrivals = [None, order]
        for arrival, db, _ in each_arrival(tmp_path / order[0][:2], {n: logs[n] for n in order}, arrivals,
                                           older={order[0]}):
            assert rows(db, "SELECT id, parent_session_id, relationship FROM sessions ORDER BY id") == [
                (resumed, original, "continuation"), (original, None, None)], (order, arrival)
            got[order[0], arrival is None] = snapshot(db)
    first = got[original, True]
    for key, snap in got.items():
        assert snap == first, (key, diff(snap, first))


@pytest.mark.parametrize("copy", ["resumed-as-itself", "resumed-as-original", "branch"])
def test_a_log_copying_another_read_in_an_earlier_ingest_leaves_it_its_lines(tmp_path, copy):
    """A log resumed (Claude Code 1.0-2.0) or branched into a new file copies the
    lines of the one it goes on from; when the copy is read in an ingest before
    the original arrives, the original still keeps them, and the rows are those
    of one ingest of both (or of the original read first)."""
    original, later = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    named = original if copy == "resumed-as-original" else later
    extra = {"forkedFrom": {"sessionId": original, "messageUuid": "u2"}} if copy == "branch" else {}
    logs = {
        original: "\n".join([said("u1", None, 1, original), said("u2", "u1", 2, original)]) + "\n",
        later: "\n".join([json.dumps({"type": "summary", "summary": "First and second", "leafUuid": "u2"}),
                          said("u1", None, 1, named, **extra), said("u2", "u1", 2, named, **extra),
                          said("u3", "u2", 9, later)]) + "\n",
    }
    got = {}
    for order, db, _ in each_arrival(tmp_path, logs, [(original, later), (later, original), None], older={original}):
        assert rows(db, "SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1") == [
            (original, "u1,u2"), (later, "u3")], order
        assert rows(db, "SELECT id, parent_session_id, relationship FROM sessions ORDER BY id") == [
            (original, None, None), (later, original, "fork" if copy == "branch" else "continuation")], order
        got[order] = snapshot(db)
    for order, snap in got.items():
        assert snap == got[None], (order, diff(snap, got[None]))


def test_a_resumed_1_0_log_with_inline_agents_gives_the_rows_of_one_ingest_in_any_order(tmp_path, corpus):
    """A Claude Code 1.0 log whose inline agents' lines a resumed log replays (under
    its own session id): whichever arrives first, and together, the same rows, down to
    the sessions each file names (what is read again with what)."""
    log = corpus / "claude-code" / "d-kimuson__claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    original, resumed = log.stem, "0e5e1c67-0000-4000-8000-000000000002"
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    last = [line for line in lines if line.get("uuid") and not line.get("isSidechain")][-1]
    copy = [json.dumps({**line, "sessionId": resumed} if "sessionId" in line else line) for line in lines]
    copy.append(json.dumps({"type": "user", "uuid": "after-resume", "parentUuid": last["uuid"], "sessionId": resumed,
                            "version": "1.0.98", "timestamp": "2025-09-04T10:00:00.000Z",
                            "message": {"role": "user", "content": "carry on"}}))
    logs = {original: log.read_text(), resumed: "\n".join(copy) + "\n"}
    got = {}
    for order, db, project in each_arrival(tmp_path, logs, [(original, resumed), (resumed, original), None],
                                           older={original}):
        assert rows(db, "SELECT id, parent_session_id FROM sessions WHERE agent_id IS NULL ORDER BY id") == [
            (resumed, original), (original, None)], order
        got[order] = snapshot(db), rows(db, "SELECT substr(f.path, length(?) + 1), fs.session_id FROM file_sessions fs "
                                            "JOIN source_files f ON f.id = fs.file_id ORDER BY 1, 2", [str(project)])
    for order, (snap, named) in got.items():
        assert snap == got[None][0], (order, diff(snap, got[None][0]))
        assert named == got[None][1], order
def test_a_resumed_log_written_to_disk_before_the_one_it_replays_leaves_it_its_lines(tmp_path):
    """Copied without their times (the resumed log copied first), a resumed log
    replaying the one it resumed under its own session id is still read after it:
    it goes on after that one ends. Together or one at a time, the rows are the same."""
    original, resumed = "bbbbbbbb-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"
    replayed = [("u1", None, 1), ("u2", "u1", 2)]
    logs = {resumed: "\n".join([*(said(*r, resumed) for r in replayed), said("u3", "u2", 9, resumed)]) + "\n",
            original: "\n".join(said(*r, original) for r in replayed) + "\n"}
    got = {}
    for order, db, _ in each_arrival(tmp_path, logs, [None, (resumed, original)], older={resumed}):  # the copy's file the older
        assert rows(db, "SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1") == [
            (resumed, "u3"), (original, "u1,u2")], order
        assert rows(db, "SELECT id, parent_session_id, relationship FROM sessions ORDER BY id") == [
            (resumed, original, "continuation"), (original, None, None)], order
        got[order] = snapshot(db)
    assert got[None] == got[(resumed, original)], diff(got[None], got[(resumed, original)])


def test_a_copy_whose_first_line_names_the_original_leaves_it_its_lines_whenever_it_was_written(tmp_path):
    """When the replayed lines keep the session id they were written in, the
    copy is known even though the original was written to after it."""
    project = tmp_path / ".claude" / "projects" / "-w"
    project.mkdir(parents=True)
    original, forked = "00000000-0000-4000-8000-000000000001", "ffffffff-0000-4000-8000-000000000002"

    def line(uuid, parent, second, session):
        return json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session,
                           "timestamp": f"2026-01-01T00:00:{second:02d}Z", "message": {"role": "user", "content": uuid}})

    replayed = [line("u1", None, 1, original), line("u2", "u1", 2, original)]
    (project / f"{forked}.jsonl").write_text("\n".join([*replayed, line("f3", "u2", 10, forked)]) + "\n")
    os.utime(project / f"{forked}.jsonl", (1_800_000_000, 1_800_000_000))
    (project / f"{original}.jsonl").write_text("\n".join([*replayed, line("o3", "u2", 20, original)]) + "\n")
    os.utime(project / f"{original}.jsonl", (1_800_000_100, 1_800_000_100))  # carried on after the fork
    run(tmp_path / "whole.db", tmp_path / ".claude")
    assert rows(tmp_path / "whole.db", "SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1") == [
        (original, "u1,u2,o3"), (forked, "f3")]


def test_a_branch_leaves_the_session_it_copied_its_lines_whenever_it_was_written(tmp_path):
    """A Claude Code branch (``/branch``) copies the session's lines under their
    uuids and times, each saying where it was copied from (``forkedFrom``): read
    first, it must not take them, also when the original went on after it."""
    project = tmp_path / ".claude" / "projects" / "-w"
    project.mkdir(parents=True)
    original, branch = "ffffffff-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"

    def line(uuid, parent, second, session, **extra):
        return json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session, **extra,
                           "timestamp": f"2026-01-01T00:00:{second:02d}Z", "message": {"role": "user", "content": uuid}})

    copied = {"forkedFrom": {"sessionId": original, "messageUuid": "u2"}}
    (project / f"{branch}.jsonl").write_text("\n".join([
        line("u1", None, 1, branch, **copied), line("u2", "u1", 2, branch, **copied), line("b3", "u2", 10, branch)]) + "\n")
    os.utime(project / f"{branch}.jsonl", (1_800_000_000, 1_800_000_000))
    queued = json.dumps({"type": "queue-operation", "operation": "enqueue", "sessionId": original,
                         "timestamp": "2026-01-01T00:00:05Z"})  # (a first line later than the lines after it)
    (project / f"{original}.jsonl").write_text("\n".join([
        queued, line("u1", None, 1, original), line("u2", "u1", 2, original), line("o3", "u2", 20, original)]) + "\n")
    os.utime(project / f"{original}.jsonl", (1_800_000_100, 1_800_000_100))  # resumed after the branch
    run(tmp_path / "whole.db", tmp_path / ".claude")
    assert rows(tmp_path / "whole.db", "SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1") == [
        (branch, "b3"), (original, "u1,u2,o3")]
    assert rows(tmp_path / "whole.db", "SELECT id, parent_session_id, relationship FROM sessions ORDER BY id") == [
        (branch, original, "fork"), (original, None, None)]


def test_a_live_refresh_reading_a_branch_and_its_original_again_reads_them_as_an_ingest_does(tmp_path):
    """Both grew and a newer parser reads both from their start (served before the
    next ingest): the branch still leaves the original its lines."""
    from datasette_obelisk.query.live import refresh

    test_a_branch_leaves_the_session_it_copied_its_lines_whenever_it_was_written(tmp_path)
    db, project = tmp_path / "whole.db", tmp_path / ".claude" / "projects" / "-w"
    for log in project.iterdir():
        session = log.stem
        with open(log, "a") as fp:
            fp.write(json.dumps({"type": "user", "uuid": f"late-{session[:2]}", "parentUuid": None, "sessionId": session,
                                 "timestamp": "2026-01-01T00:01:00Z", "message": {"role": "user", "content": "late"}}) + "\n")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE source_files SET parser_version = parser_version - 1")
    conn.commit()
    assert len(refresh(conn)) == 2
    assert conn.execute("SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1").fetchall() == [
        ("00000000-0000-4000-8000-000000000002", "b3,late-00"), ("ffffffff-0000-4000-8000-000000000001", "u1,u2,o3,late-ff")]
    conn.close()


@pytest.mark.parametrize("prompt_chars", [10, 4_000, 70_000])
def test_a_branch_of_a_branch_is_read_after_the_branch_it_copies(tmp_path, prompt_chars):
    """Each branch copies the lines of the one it branched from, its first line
    as long as the prompt (``forkedFrom`` comes last, past the first 4 or 64 KB)."""
    project = tmp_path / ".claude" / "projects" / "-w"
    project.mkdir(parents=True)
    o, b1, b2 = (f"{n}0000000-0000-4000-8000-00000000000{n}" for n in (9, 5, 1))

    def line(uuid, parent, second, session, source=None):
        text = uuid if uuid != "u1" else "x" * prompt_chars
        fork = {"forkedFrom": {"sessionId": source, "messageUuid": uuid}} if source else {}
        return json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session,  # Claude Code's
                           "message": {"role": "user", "content": text},  # key order: the time after the text
                           "timestamp": f"2026-01-01T00:00:{second:02d}Z", **fork})

    logs = {
        o: [line("u1", None, 1, o), line("u2", "u1", 2, o), line("o3", "u2", 3, o)],
        b1: [line("u1", None, 1, b1, o), line("u2", "u1", 2, b1, o), line("b3", "u2", 10, b1), line("b5", "c4", 30, b1)],
        b2: [line("u1", None, 1, b2, b1), line("u2", "u1", 2, b2, b1), line("b3", "u2", 10, b2, b1), line("c4", "b3", 20, b2)],
    }
    for when, name in enumerate([b2, o, b1]):  # the branch it copies written last
        (project / f"{name}.jsonl").write_text("\n".join(logs[name]) + "\n")
        os.utime(project / f"{name}.jsonl", (1_800_000_000 + when, 1_800_000_000 + when))
    run(tmp_path / "whole.db", tmp_path / ".claude")
    assert rows(tmp_path / "whole.db", "SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1") == [
        (b2, "c4"), (b1, "b3,b5"), (o, "u1,u2,o3")]
    assert rows(tmp_path / "whole.db", "SELECT id, parent_session_id FROM sessions ORDER BY id") == [
        (b2, b1), (b1, o), (o, None)]


def test_an_adopted_agent_read_again_in_a_renamed_folder_names_its_parent_once(tmp_path, corpus):
    """A 2.0.x agent file names its parent by its lines' sessionId, which the
    main file's name is not: adopted once, it stays adopted when its folder moves."""
    project = tmp_path / ".claude" / "projects" / "-home-user-projA"
    project.mkdir(parents=True)
    for name in ("sidechain_main.jsonl", "sidechain_agent.jsonl"):
        shutil.copy2(corpus / "claude-code" / "handgemacht-ai__claude-code-log" / name, project / name)
    run(tmp_path / "moved.db", tmp_path / ".claude")
    project.rename(project.parent / "-home-user-projB")
    run(tmp_path / "moved.db", tmp_path / ".claude")
    run(tmp_path / "fresh.db", tmp_path / ".claude")
    links = "SELECT session_id, agent_id, child_session_id FROM subagents"
    assert rows(tmp_path / "moved.db", links) == rows(tmp_path / "fresh.db", links) == [
        ("sidechain_main", "e1c84ba5", "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358:agent-e1c84ba5")]
    got, once = snapshot(tmp_path / "moved.db"), snapshot(tmp_path / "fresh.db")
    assert got == once, diff(got, once)


def test_a_log_moved_before_a_newer_parser_reads_it_is_read_again_by_the_next_ingest(tmp_path):
    """Its rows follow it from the old path; an older parser made them, so
    the copy takes that parser's version and is read again."""
    project = tmp_path / ".claude" / "projects" / "-w-a"
    project.mkdir(parents=True)
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1", "timestamp": "2026-01-01T00:00:01Z",
         "message": {"role": "user", "content": "<bash-input>git status</bash-input>"}},
        {"type": "user", "uuid": "u2", "parentUuid": "u1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:02Z",
         "message": {"role": "user", "content": "<bash-stdout>On branch main</bash-stdout><bash-stderr></bash-stderr>"}},
        {"type": "user", "uuid": "u3", "parentUuid": "u2", "sessionId": "s1", "timestamp": "2026-01-01T00:00:03Z",
         "message": {"role": "user", "content": "make the number red"}},
    ]
    (project / "s1.jsonl").write_text("".join(json.dumps(obj) + "\n" for obj in lines))
    run(tmp_path / "moved.db", tmp_path / ".claude")
    conn = sqlite3.connect(tmp_path / "moved.db")
    with conn:  # as parser 9 left them
        conn.execute("UPDATE messages SET is_meta = 0 WHERE uuid = 'u2'")
        conn.execute("UPDATE source_files SET parser_version = 9")
    conn.close()
    project.rename(project.parent / "-w-b")
    run(tmp_path / "moved.db", tmp_path / ".claude")
    moved = str(project.parent / "-w-b" / "s1.jsonl")
    assert rows(tmp_path / "moved.db", "SELECT path, missing, parser_version FROM source_files ORDER BY id")[-1] == (
        moved, 0, 9)
    assert run(tmp_path / "moved.db", tmp_path / ".claude").files_read == 1  # read again: the rows are its parser's
    run(tmp_path / "fresh.db", tmp_path / ".claude")
    got, once = snapshot(tmp_path / "moved.db"), snapshot(tmp_path / "fresh.db")
    assert got == once, diff(got, once)
    assert rows(tmp_path / "moved.db", "SELECT uuid, is_meta FROM messages ORDER BY seq") == [("u1", 0), ("u2", 1), ("u3", 0)]


def test_a_parent_log_new_in_the_run_that_reads_its_agents_again_keeps_what_it_said(tmp_path, logs):
    # The agent's log arrived first; its parent's log appears while the agent's
    # is to be read again (a new parser version): the parent's log, read first, names
    # the session the agent's family forgets before it is read again. The parent's
    # log is read again with that family, as one ingest of the files gives it.
    claude, project = logs("handgemacht-ai__claude-code-log")
    main = project / "eb000000-0000-4000-8000-000000000001.jsonl"
    agent = project / "eb000000-0000-4000-8000-000000000001" / "subagents" / "agent-cccc333.jsonl"
    kept = main.read_bytes()
    main.unlink()
    run(tmp_path / "again.db", claude)
    main.write_bytes(kept)
    to_read_again(tmp_path / "again.db", agent)
    run(tmp_path / "again.db", claude)
    assert rows(tmp_path / "again.db", "SELECT id, cwd, version FROM sessions WHERE id LIKE 'eb%' ORDER BY id") == [
        ("eb000000-0000-4000-8000-000000000001", "/home/synthetic/async-fixture", "2.1.34"),
        ("eb000000-0000-4000-8000-000000000001:agent-cccc333", "/home/synthetic/async-fixture", "2.1.34"),
    ]
    run(tmp_path / "first.db", claude)
    got, once = snapshot(tmp_path / "again.db"), snapshot(tmp_path / "first.db")
    assert got == once, diff(got, once)


@pytest.mark.parametrize("read_ahead", [None, 0], ids=["inline", "read-ahead"])
def test_a_touched_file_whose_last_line_has_no_newline_is_not_read_again(tmp_path, logs, read_ahead):
    claude, project = logs("handgemacht-ai__claude-code-log")
    main = project / "eb000000-0000-4000-8000-000000000001.jsonl"
    main.write_bytes(main.read_bytes().rstrip(b"\n"))  # its last line whole, unterminated
    ingest(tmp_path / "o.db", {"claude": claude}, read_ahead_bytes=read_ahead)
    before = snapshot(tmp_path / "o.db")
    os.utime(main)  # touched, nothing written
    summary = ingest(tmp_path / "o.db", {"claude": claude}, read_ahead_bytes=read_ahead)
    assert (summary.files_read, summary.files_replayed) == (1, 0)
    assert snapshot(tmp_path / "o.db") == before
    main.write_bytes(main.read_bytes() + b"\n")  # the line ends now: it was read already
    summary = ingest(tmp_path / "o.db", {"claude": claude}, read_ahead_bytes=read_ahead)
    assert (summary.files_read, summary.files_replayed) == (1, 0)
    assert snapshot(tmp_path / "o.db") == before


def test_a_session_with_thousands_of_agents_is_derived_by_index(tmp_path):
    """Deriving a session looks each of its files and agents up by index: a main
    session whose 5,000 agents' logs all name it took 38 s of CPU to derive again
    after one appended line when SQLite scanned the session's rows for every
    file (and its agents' rows for every agent)."""
    from datasette_obelisk.store import derive

    conn = open_db(tmp_path / "o.db")

    def searches(sql, params):
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params) if row[3].startswith("SEARCH")]

    # Whether a file holds the session's messages: by the file's rows, not the session's.
    by_file = [plan for plan in searches(derive.LAST_SQL, {"s": "p"}) if plan.startswith("SEARCH m ")]
    assert by_file and all("messages_file" in plan for plan in by_file), by_file
    # An agent adopted already: its subagents rows by the agent, not among its parent's.
    agent = [plan for plan in searches(derive.ADOPTED, ["p:agent-a"]) if plan.startswith("SEARCH sa ")]
    assert agent == ["SEARCH sa USING INDEX subagents_child (child_session_id=?)"], agent


def test_an_agents_log_emptied_keeps_its_session_archived_under_its_parent(tmp_path, logs):
    claude, project = logs("handgemacht-ai__claude-code-log")
    run(tmp_path / "o.db", claude)
    agent = "SELECT availability, parent_session_id, message_count FROM sessions WHERE id LIKE '%:agent-cccc333'"
    assert rows(tmp_path / "o.db", agent) == [("live", "eb000000-0000-4000-8000-000000000001", 3)]
    (project / "eb000000-0000-4000-8000-000000000001" / "subagents" / "agent-cccc333.jsonl").write_bytes(b"")
    summary = run(tmp_path / "o.db", claude)
    assert (summary.files_missing, summary.files_replayed, summary.files_read) == (1, 0, 0)
    assert rows(tmp_path / "o.db", agent) == [("archived", "eb000000-0000-4000-8000-000000000001", 3)]
    assert rows(tmp_path / "o.db", "SELECT COUNT(*) FROM messages WHERE session_id LIKE '%:agent-cccc333'") == [(3,)]
    # Its parent's log read again from its start (a new parser version) leaves the agent as it is.
    to_read_again(tmp_path / "o.db", project / "eb000000-0000-4000-8000-000000000001.jsonl")
    summary = run(tmp_path / "o.db", claude)
    assert (summary.files_replayed, summary.files_missing) == (1, 0)
    assert rows(tmp_path / "o.db", agent) == [("archived", "eb000000-0000-4000-8000-000000000001", 3)]


def test_an_agents_document_found_empty_keeps_what_it_held_until_it_reads_again(tmp_path, logs):
    claude, project = logs("jazzyalex__agent-sessions")
    run(tmp_path / "o.db", claude)
    before = snapshot(tmp_path / "o.db")
    meta = project / "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f" / "subagents" / "agent-a0ad4f44468bdf20d.meta.json"
    saved = meta.read_bytes()
    meta.write_bytes(b"")  # caught while it is saved again whole
    summary = run(tmp_path / "o.db", claude)
    assert (summary.files_missing, summary.errors) == (0, 1)
    assert rows(tmp_path / "o.db", "SELECT missing FROM source_files WHERE path = ?", [str(meta)]) == [(0,)]
    meta.write_bytes(saved + b"\n")
    assert run(tmp_path / "o.db", claude).files_replayed == 1
    assert diff(snapshot(tmp_path / "o.db"), before) == []
