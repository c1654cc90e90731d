"""Secrets never reach the database, its FTS index or its WAL."""

import json
import multiprocessing
import sqlite3

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.store import redacting
from datasette_obelisk.store.ingest import ingest
from secret_samples import labelled_samples


def claude_line(uuid, parent, role, content, **extra):
    return json.dumps({
        "type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
        "timestamp": "2026-03-01T10:00:00Z", "cwd": "/work/app",
        "message": {"role": role, "content": content}, **extra,
    })


def write_session(root, samples):
    """Plant every sample as a prompt, a Bash command and its JSON-escaped output."""
    project = root / "projects" / "-work-app"
    project.mkdir(parents=True, exist_ok=True)
    lines, parent = [], None
    for i, sample in enumerate(samples):
        call = f"toolu_{i:05d}"
        lines.append(claude_line(f"u{i}", parent, "user", sample.text))
        lines.append(claude_line(f"a{i}", f"u{i}", "assistant", [
            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"echo {json.dumps(sample.text)}"}}
        ]))
        lines.append(claude_line(f"r{i}", f"a{i}", "user", [
            {"type": "tool_result", "tool_use_id": call, "content": json.dumps({"stdout": sample.text})}
        ]))
        parent = f"r{i}"
    (project / "s1.jsonl").write_text("\n".join(lines) + "\n")
    return project / "s1.jsonl"


def database_bytes(db):
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*") if not p.name.endswith("redaction-key"))


@pytest.fixture(scope="module")
def samples():
    return labelled_samples(seed=3, per_context=1)


def test_no_planted_secret_reaches_the_database_or_wal(tmp_path, samples):
    write_session(tmp_path / ".claude", samples)
    db = tmp_path / "o.db"
    from datasette_obelisk.store.db import open_db

    reader = open_db(db)  # an open reader keeps the WAL file in place
    reader.execute("SELECT 1 FROM messages").fetchall()
    summary = ingest(db, {"claude": tmp_path / ".claude"})
    assert summary.messages == 3 * len(samples)
    assert (tmp_path / "o.db-wal").stat().st_size > 0
    data = database_bytes(db)
    reader.close()
    leaked = [s for sample in samples for s in sample.secrets if s.encode() in data]
    assert leaked == []
    conn = sqlite3.connect(db)
    markers = conn.execute("SELECT COUNT(*) FROM messages WHERE text LIKE '%[REDACTED:%'").fetchone()[0]
    assert markers == 3 * len(samples)
    # Tool inputs stay valid JSON after redaction.
    for (input_json,) in conn.execute("SELECT input_json FROM tool_calls"):
        json.loads(input_json)


TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_secrets_in_paths_branches_and_project_names_are_redacted_too(tmp_path):
    clone = f"/srv/https-u-{TOKEN}@github.com/o/r"
    project = tmp_path / ".claude" / "projects" / clone.replace("/", "-")
    project.mkdir(parents=True)
    context = {"cwd": clone, "gitBranch": f"fix-{TOKEN}"}
    (project / "s1.jsonl").write_text("\n".join([
        claude_line("u1", None, "user", "read it", **context),
        claude_line("a1", "u1", "assistant", [
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": f"{clone}/x.py"}}
        ], effort=f"high-{TOKEN}", **context),
        claude_line("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 x = 1"}],
                    toolUseResult={"type": "text", "file": {"filePath": f"{clone}/x.py"}}, **context),
        json.dumps({"type": "pr-link", "sessionId": "s1", "prNumber": 3,
                    "prUrl": f"https://github.com/o/r/pull/3?t={TOKEN}", "prRepository": f"o/r-{TOKEN}"}),
    ]) + "\n")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    conn = sqlite3.connect(db)
    assert_token_nowhere(conn)
    [(cwd, branch, project_name, project_path)] = conn.execute(
        "SELECT cwd, git_branch, project, project_path FROM sessions").fetchall()
    assert cwd.startswith("/srv/https-u-[REDACTED:github-pat:") and cwd.endswith("]@github.com/o/r")
    assert branch.startswith("fix-[REDACTED:github-pat:") and project_path == cwd
    assert "[REDACTED:github-pat:" in project_name
    paths = conn.execute("SELECT file_path FROM tool_calls UNION ALL SELECT path FROM tool_call_files "
                         "UNION ALL SELECT file_path FROM tool_results").fetchall()
    assert paths == [(cwd + "/x.py",)] * 3
    assert {row for row in conn.execute("SELECT cwd, git_branch FROM messages")} == {(cwd, branch)}
    [(effort,)] = conn.execute("SELECT reasoning_effort FROM sessions").fetchall()
    assert effort.startswith("high-[REDACTED:github-pat:")
    assert redacting.check(conn) == {}


def assert_token_nowhere(conn):
    """Only where the logs lie keeps it: the host paths of source_files and sessions.jsonl_path."""
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%' "
                                 "AND name NOT IN ('source_files', 'sqlite_stat1')"):
        columns = [c for (c,) in conn.execute(f"SELECT name FROM pragma_table_info('{table}')") if c != "jsonl_path"]
        for column in columns:
            found = conn.execute(f'SELECT COUNT(*) FROM "{table}" WHERE instr("{column}", ?)', [TOKEN]).fetchone()[0]
            assert found == 0, (table, column)


def test_a_secret_in_a_codex_turn_s_reasoning_effort_is_redacted_in_its_answers_too(tmp_path):
    day = tmp_path / ".codex" / "sessions" / "2026" / "03" / "01"
    day.mkdir(parents=True)

    def line(type_, payload):
        return json.dumps({"timestamp": "2026-03-01T10:00:00.000Z", "type": type_, "payload": payload})

    (day / "rollout-2026-03-01T10-00-00-t1.jsonl").write_text("\n".join([
        line("session_meta", {"id": "t1", "cwd": "/w", "cli_version": "0.104.0"}),
        line("event_msg", {"type": "user_message", "message": "go"}),
        line("turn_context", {"cwd": "/w", "model": "gpt-5", "effort": f"high-{TOKEN}"}),
        line("event_msg", {"type": "agent_message", "message": "done"}),
    ]) + "\n")
    db = tmp_path / "o.db"
    ingest(db, {"codex": tmp_path / ".codex"})
    conn = sqlite3.connect(db)
    assert_token_nowhere(conn)
    [(effort, meta_effort)] = conn.execute(
        "SELECT s.reasoning_effort, json_extract(m.meta_json, '$.effort') FROM messages m "
        "JOIN sessions s ON s.id = m.session_id WHERE m.role = 'assistant'").fetchall()
    assert effort.startswith("high-[REDACTED:github-pat:") and meta_effort == effort


def test_secrets_in_an_agent_team_s_names_and_a_worktree_are_redacted_too(tmp_path):
    # A member's name is its lines' agentName, its .meta.json's name, and the
    # teammate_id its messages to the lead name it by (meta_json's ``from``).
    project = tmp_path / ".claude" / "projects" / "-work-app"
    agents = project / "s1" / "subagents"
    agents.mkdir(parents=True)
    member, team, worktree = f"tester-{TOKEN}", f"alpha-{TOKEN}", f"/work/app/.claude/worktrees/{TOKEN}"
    state = {"worktreePath": worktree, "worktreeBranch": f"wt-{TOKEN}", "originalBranch": f"main-{TOKEN}"}
    (project / "s1.jsonl").write_text("\n".join([
        claude_line("u1", None, "user", "Fix it with a team"),
        json.dumps({"type": "worktree-state", "sessionId": "s1", "worktreeSession": state}),
        json.dumps({"type": "relocated", "sessionId": "s1", "relocatedCwd": worktree}),
        claude_line("u2", "u1", "user", f'<teammate-message teammate_id="{member}">\nTests pass\n</teammate-message>'),
    ]) + "\n")
    (project / "s2.jsonl").write_text(claude_line("p1", None, "user", "Write tests", sessionId="s2",
                                                  agentName=member, teamName=team) + "\n")
    (agents / "agent-a1.meta.json").write_text(json.dumps({"agentType": "Explore", "name": member, "teamName": team}))
    (agents / "agent-a1.jsonl").write_text(claude_line("n1", None, "user", "Look", isSidechain=True, agentId="a1") + "\n")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    conn = sqlite3.connect(db)
    assert_token_nowhere(conn)
    [(sender,)] = conn.execute("SELECT json_extract(meta_json, '$.from') FROM messages WHERE uuid = 'u2'").fetchall()
    assert sender.startswith("tester-[REDACTED:github-pat:")
    assert {name for (name,) in conn.execute("SELECT agent_name FROM sessions WHERE agent_name IS NOT NULL")} == {sender}
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE worktree_path LIKE '%[REDACTED:github-pat:%' "
                        "AND relocated_cwd = worktree_path AND project_path = worktree_path").fetchone() == (1,)


def test_same_secret_same_marker_within_a_database(tmp_path, samples):
    write_session(tmp_path / ".claude", samples[:1] * 2)
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    conn = sqlite3.connect(db)
    texts = [t for (t,) in conn.execute("SELECT text FROM messages WHERE type = 'user' AND uuid LIKE 'u%' ORDER BY seq")]
    assert len(texts) == 2 and texts[0] == texts[1] and "[REDACTED:" in texts[0]


def test_key_lives_beside_the_database_not_inside(tmp_path, samples):
    write_session(tmp_path / ".claude", samples[:2])
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    key = redacting.key_path(db)
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert bytes.fromhex(key.read_text().strip()) not in database_bytes(db)


def test_processes_opening_a_new_database_together_agree_on_its_key(tmp_path):
    # A web refresh and a watcher, or two ingests, may each be first to need it.
    context = multiprocessing.get_context("fork")
    for attempt in range(20):
        db = tmp_path / f"{attempt}.db"
        with context.Pool(4) as pool:
            keys = pool.map(redacting.load_key, [db] * 4)
        assert len(set(keys)) == 1 and len(keys[0]) == 32, keys
        assert bytes.fromhex(redacting.key_path(db).read_text()) == keys[0]
        assert oct(redacting.key_path(db).stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.db.redaction-key" for n in range(20))


def test_a_folder_without_hard_links_still_gets_one_key(tmp_path, monkeypatch):
    def no_links(source, target):
        raise PermissionError(1, "Operation not permitted")  # as vfat answers

    monkeypatch.setattr(redacting.os, "link", no_links)
    context = multiprocessing.get_context("fork")
    with context.Pool(4) as pool:
        keys = pool.map(redacting.load_key, [tmp_path / "o.db"] * 4)
    assert len(set(keys)) == 1 and len(keys[0]) == 32
    assert [p.name for p in tmp_path.iterdir()] == ["o.db.redaction-key"]


def test_no_redact_is_recorded_and_publish_refuses(tmp_path, samples):
    write_session(tmp_path / ".claude", samples[:3])
    db = tmp_path / "o.db"
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", "--db", str(db), "--claude-dir", str(tmp_path / ".claude"), "--no-redact"])
    assert result.exit_code == 0, result.output
    assert samples[0].secrets[0].encode() in database_bytes(db)
    check = runner.invoke(cli, ["redact", "--check", "--db", str(db), "--json"])
    assert check.exit_code == 1
    report = json.loads(check.output)
    assert report["messages.text"]["rows"] >= 3
    assert samples[0].secrets[0] not in check.output
    publish = runner.invoke(cli, ["publish-config", "--db", str(db)])
    assert publish.exit_code == 1
    assert f"Error: OBELISK_PERMISSION_DENIED: {db} was ingested with --no-redact" in publish.output


def test_redacted_database_checks_clean_and_publishes(tmp_path, samples):
    write_session(tmp_path / ".claude", samples)
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    runner = CliRunner()
    check = runner.invoke(cli, ["redact", "--check", "--db", str(db)])
    assert (check.exit_code, check.output) == (0, "No secrets found by the current rules.\n")
    publish = runner.invoke(cli, ["publish-config", "--db", str(db), "-o", str(tmp_path / "publish.yaml")])
    assert publish.exit_code == 0, publish.output
    import yaml

    from datasette_obelisk.cli import PUBLISH_HIDDEN_TABLES

    assert yaml.safe_load((tmp_path / "publish.yaml").read_text()) == {
        "settings": {"allow_download": False, "default_allow_sql": False, "allow_signed_tokens": False,
                     "allow_csv_stream": False, "suggest_facets": False},
        "databases": {"o": {"tables": {table: {"allow": False} for table in PUBLISH_HIDDEN_TABLES}}},
        "plugins": {"datasette-obelisk": {"read_only": True}},
    }
    printed = CliRunner().invoke(cli, ["publish-config", "--db", str(db)])
    assert yaml.safe_load(printed.stdout) == yaml.safe_load((tmp_path / "publish.yaml").read_text())
    assert printed.stderr == (f"# save this as publish.yaml (or write it with -o FILE), then serve with: "
                              f"datasette serve --immutable {db} -c publish.yaml\n")


def test_new_rules_replay_live_files_and_redact_archived_rows(tmp_path, samples, monkeypatch):
    from datasette_obelisk.store.redaction import Redactor, load_rules

    github = next(s for s in samples if s.kind.startswith("github"))
    fewer = [r for r in load_rules() if r.id == "jwt"]
    monkeypatch.setattr(redacting, "redactor_for", lambda db: Redactor(key=redacting.load_key(db), rules=fewer))
    write_session(tmp_path / "live" / ".claude", [github])
    gone = write_session(tmp_path / "gone" / ".claude", [github])
    gone.rename(gone.with_name("s2.jsonl"))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "live" / ".claude"})
    # The second file is ingested under another root, then deleted.
    text = gone.with_name("s2.jsonl").read_text().replace('"s1"', '"s2"').replace('"u0"', '"v0"').replace('"a0"', '"b0"').replace('"r0"', '"q0"').replace('toolu_00000', 'toolu_x0000').replace('"parentUuid": "u0"', '"parentUuid": "v0"').replace('"parentUuid": "a0"', '"parentUuid": "b0"')
    gone.with_name("s2.jsonl").write_text(text)
    ingest(db, {"claude": tmp_path / "gone" / ".claude"})
    gone.with_name("s2.jsonl").unlink()
    ingest(db, {"claude": tmp_path / "gone" / ".claude"})
    assert github.secrets[0].encode() in database_bytes(db)

    monkeypatch.undo()
    monkeypatch.setattr(redacting, "RULESET_VERSION", redacting.RULESET_VERSION + 1)
    summary = ingest(db, {"claude": tmp_path / "live" / ".claude"})
    assert summary.files_replayed == 1
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.close()
    assert github.secrets[0].encode() not in database_bytes(db)


def test_a_file_gone_in_the_run_that_brings_new_rules_is_redacted_in_place(tmp_path, samples, monkeypatch):
    from datasette_obelisk.store.redaction import Redactor, load_rules

    github = next(s for s in samples if s.kind.startswith("github"))
    fewer = [r for r in load_rules() if r.id == "jwt"]
    monkeypatch.setattr(redacting, "redactor_for", lambda db: Redactor(key=redacting.load_key(db), rules=fewer))
    path = write_session(tmp_path / ".claude", [github])
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    assert github.secrets[0].encode() in database_bytes(db)
    monkeypatch.undo()
    monkeypatch.setattr(redacting, "RULESET_VERSION", redacting.RULESET_VERSION + 1)
    path.unlink()  # read again for the new rules, it is found gone
    assert ingest(db, {"claude": tmp_path / ".claude"}).files_missing == 1
    conn = sqlite3.connect(db)
    assert redacting.check(conn) == {}
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (3,)  # the archive keeps its rows


def test_a_project_folder_renamed_to_a_name_holding_a_secret_is_stored_redacted(tmp_path):
    projects = tmp_path / ".claude" / "projects"
    (projects / "-tmp-repo").mkdir(parents=True)
    (projects / "-tmp-repo" / "s1.jsonl").write_text(claude_line("u1", None, "user", "hello") + "\n")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    (projects / "-tmp-repo").rename(projects / f"-tmp-{TOKEN}")
    ingest(db, {"claude": tmp_path / ".claude"})
    [(project,)] = sqlite3.connect(db).execute("SELECT project FROM sessions").fetchall()
    assert project.startswith("-tmp-[REDACTED:github-pat:") and TOKEN not in project


def test_raw_lines_reread_from_disk_are_redacted(tmp_path, samples):
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.readonly import connect_readonly

    write_session(tmp_path / ".claude", samples)
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    conn = connect_readonly(db)
    stored = conn.execute("SELECT text FROM messages WHERE uuid = 'u0'").fetchone()[0]
    line = obelisk.raw(conn, "u0", {"limit": 100000})["text"]
    assert samples[0].secrets[0] not in line and "[REDACTED:" in line
    # Same key, same marker as the stored text.
    assert set(redacting.Redactor.marker_re.findall(stored)) <= set(redacting.Redactor.marker_re.findall(line))


def test_a_reply_holding_its_thinking_keeps_where_it_ends_once_redacted(tmp_path):
    from datasette_obelisk.query.text import split_thinking

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    chat = tmp_path / "gemini" / "tmp" / ("0" * 64) / "chats" / "session-2026-05-01T10-00-abcd1234.jsonl"
    chat.parent.mkdir(parents=True)
    records = [{"sessionId": "abcd1234-0000", "projectHash": "0" * 64, "startTime": "2026-05-01T10:00:00.000Z"},
               {"id": "g1", "type": "gemini", "content": "FINAL ANSWER here.",
                "thoughts": [{"subject": "Auth", "description": f"the token {token} is in .env"}]}]
    chat.write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest(tmp_path / "o.db", {"gemini": tmp_path / "gemini"})
    conn = sqlite3.connect(tmp_path / "o.db")
    text, meta = conn.execute("SELECT text, meta_json FROM messages WHERE uuid = 'gemini:abcd1234-0000:g1'").fetchone()
    conn.close()
    thinking, said = split_thinking(text, meta)
    assert token not in text and thinking.startswith("Auth: the token ") and said == "FINAL ANSWER here."


def test_a_live_tail_is_redacted_as_the_latest_ingest_was(tmp_path):
    from datasette_obelisk.query.live import refresh
    from datasette_obelisk.store.db import open_db

    path = tmp_path / ".claude" / "projects" / "-work-app" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(claude_line("u1", None, "user", "hello") + "\n")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"}, redact=False)
    ingest(db, {"claude": tmp_path / ".claude"})  # the latest ingest redacts
    with open(path, "a") as fp:
        fp.write(claude_line("u2", "u1", "user", f"my token is {TOKEN}") + "\n")
    conn = open_db(db)
    assert refresh(conn) == [str(path)]
    assert TOKEN not in conn.execute("SELECT text FROM messages WHERE uuid = 'u2'").fetchone()[0]
    assert redacting.get_state(conn, "unredacted_ingest") == "1"  # (publishing still refuses it)
    ingest(db, {"claude": tmp_path / ".claude"}, redact=False)
    with open(path, "a") as fp:
        fp.write(claude_line("u3", "u2", "user", f"again {TOKEN}") + "\n")
    assert refresh(conn) == [str(path)]
    assert TOKEN in conn.execute("SELECT text FROM messages WHERE uuid = 'u3'").fetchone()[0]


def test_a_secret_deep_in_a_tool_s_json_input_is_redacted_and_costs_no_line(tmp_path):
    """orjson reads 1,024 levels of nesting but writes only 255: a Codex call's
    arguments (JSON text kept verbatim) nested deeper, holding a secret, failed
    the redaction of the file's batch, so none of its lines was stored, run after run."""
    from test_deep_json import codex

    secret = "ghp_mYoQlhdmdVUhf8YZVo8sTqHB3pUcUqWmuwwD"
    name, root = codex(tmp_path, 300, leaf=secret)
    db = tmp_path / "o.db"
    summary = ingest(db, {name: root})
    assert summary.errors == 0, summary.error_samples
    conn = sqlite3.connect(db)
    (stored,) = conn.execute("SELECT input_json FROM tool_calls WHERE name = 'exec_command'").fetchone()
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 4
    conn.close()
    assert secret not in stored and secret[:12] not in stored
    assert stored.startswith('{"cmd":"ls","x":' + "[" * 300 + '"[REDACTED:github-pat:')
    assert secret.encode() not in database_bytes(db)


def test_redacting_json_text_nested_as_deep_as_it_is_read_keeps_it_whole():
    """A stored row redacted again under new rules (or a live tail) goes through the same step."""
    secret = "ghp_mYoQlhdmdVUhf8YZVo8sTqHB3pUcUqWmuwwD"
    redactor = redacting.RecordRedactor(redacting.Redactor(key=b"k" * 32))
    for depth in (254, 300, 1000, 1023):
        text = '{"a":' + "[" * depth + json.dumps(secret) + "," + json.dumps("x \u00e9") + "]" * depth + "}"
        redacted = redactor.redact_json(text)
        assert secret not in redacted
        opening = '{"a":' + "[" * depth + '"[REDACTED:github-pat:'
        assert redacted.startswith(opening), redacted[:60]
        assert redacted.endswith('","x \u00e9"' + "]" * depth + "}")
        unchanged = text.replace(secret, "nothing secret")
        assert redactor.redact_json(unchanged) == unchanged


def test_json_text_skipped_undecoded_is_redacted_as_when_decoded(samples):
    """A document whose text holds no keyword is returned as it is, undecoded: the same
    text, whatever escapes (``\\u``, ``\\/``, ``\\n``) hide or split its secrets, as
    decoding every string and redacting it gives."""
    redactor = redacting.RecordRedactor(redacting.Redactor(key=b"k" * 32))

    def decoded(text):
        value = json.loads(text)
        redacted = redactor.redactor.redact_value(value)
        return text if redacted == value else redacting.dump_json(redacted).decode()

    documents = []
    for sample in samples:
        documents += [
            json.dumps({"command": sample.text}),  # non-ASCII as \u escapes
            json.dumps({"command": sample.text}, ensure_ascii=False),
            json.dumps({"command": sample.text}, ensure_ascii=False).replace("/", "\\/"),
            json.dumps({sample.text: ["line\n" + sample.text + "\tend"]}, ensure_ascii=False),
            # every letter of the secret's text escaped: no keyword left as it is
            '{"command": "' + "".join(f"\\u{ord(c):04x}" for c in sample.text) + '"}',
        ]
    documents += ['{"command": "ls -la", "cwd": "/tmp"}', '{"a": [1, 2.5, null, true]}', "not json at all"]
    redacted = [redactor.redact_json(text) for text in documents]
    assert redacted == [decoded(text) if text != "not json at all" else text for text in documents]
    assert sum(new != old for new, old in zip(redacted, documents)) >= len(samples)
    clean = '{"command": "ls -la", "cwd": "/tmp"}'
    assert redactor.redact_json(clean) is clean
    assert not redactor.redactor.may_change_json(clean)
    assert redactor.redactor.may_change_json('{"c": "\\u0067hp_"}')  # an escaped letter: decoded to be sure
    assert redactor.redactor.may_change_json('{"u": "https:\\/\\/x"}')
