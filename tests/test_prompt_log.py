"""The agents' prompt logs (Claude Code's and Codex's history.jsonl, Gemini CLI's
logs.json): one prompt_log row a prompt, read incrementally, searched, and
marked when a stored transcript holds its session."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.query import prompts as prompt_log
from datasette_obelisk.store.ingest import ingest

SAMPLES = "kvsankar__agent-history"
COLUMNS = "source, session_id, project, timestamp, text, pasted_json, line_no"
CLAUDE_PROJECT = "/home/testuser/telemetry-project"


def rows(db, sql, params=()):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@pytest.fixture
def homes(tmp_path, corpus):
    """The three corpus samples where the agents keep them (copied to a temporary folder)."""
    claude, codex, gemini = tmp_path / ".claude", tmp_path / ".codex", tmp_path / ".gemini"
    (claude / "projects").mkdir(parents=True)
    (codex / "sessions").mkdir(parents=True)
    (gemini / "tmp" / "f00d").mkdir(parents=True)
    shutil.copyfile(corpus / "claude-code" / SAMPLES / "claude_history.jsonl", claude / "history.jsonl")
    shutil.copyfile(corpus / "codex" / SAMPLES / "codex_history.jsonl", codex / "history.jsonl")
    shutil.copyfile(corpus / "gemini" / SAMPLES / "gemini_logs.json", gemini / "tmp" / "f00d" / "logs.json")
    (gemini / "tmp" / "f00d" / ".project_root").write_text("/home/testuser/gemini-project")
    return {"claude": claude, "codex": codex, "gemini": gemini}


@pytest.fixture
def db(tmp_path):
    return tmp_path / "obelisk.db"


def claude_rows():
    def row(ms, text, line):
        return ("claude", "telemetry-claude-001", CLAUDE_PROJECT, ms, text, None, line)
    return [
        row("2025-11-11T14:16:40.000Z", "help me understand the codebase", 1),
        row("2025-11-11T14:16:45.000Z", "read the README.md", 2),
        row("2025-11-11T14:16:54.075Z", "/clear ", 3),
        row("2025-11-11T14:17:00.000Z", "now let's work on a new feature", 4),
        row("2025-11-11T14:17:10.000Z", "implement user authentication", 5),
        row("2025-11-11T14:18:20.000Z", "/clear ", 6),
        row("2025-11-11T14:18:30.000Z", "fresh start - review the auth module", 7),
    ]


def test_claude_history_rows(db, homes):
    summary = ingest(db, {"claude": homes["claude"]})
    assert (summary.files_read, summary.lines, summary.prompts, summary.messages, summary.merged, summary.errors) == (
        1, 7, 7, 0, 7, 0)
    assert rows(db, f"SELECT {COLUMNS} FROM prompt_log ORDER BY id") == claude_rows()
    assert rows(db, "SELECT kind, lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [
        ("prompt_log", 7, 0, 7, 0)]
    assert rows(db, "SELECT count(*) FROM sessions") == [(0,)]  # (a prompt log is no transcript)
    assert summary.as_dict()["prompts"] == 7


def test_codex_history_rows(db, homes):
    summary = ingest(db, {"codex": homes["codex"]})
    assert (summary.lines, summary.prompts, summary.errors) == (5, 5, 0)
    session = "codex:telemetry-codex-001"
    assert rows(db, f"SELECT {COLUMNS} FROM prompt_log ORDER BY id") == [
        ("codex", session, None, "2025-10-07T14:46:40.000Z", "list the project structure", None, 1),
        ("codex", session, None, "2025-10-07T14:46:50.000Z", "explain the main function", None, 2),
        ("codex", session, None, "2025-10-07T14:47:09.000Z", "/clear", None, 3),
        ("codex", session, None, "2025-10-07T14:47:20.000Z", "start fresh with testing", None, 4),
        ("codex", session, None, "2025-10-07T14:48:20.000Z", "run the test suite", None, 5),
    ]


def test_gemini_logs_rows_are_its_user_entries(db, homes):
    summary = ingest(db, {"gemini": homes["gemini"]})
    # ten entries: seven typed by the user, three replies (merged, stored nowhere)
    assert (summary.lines, summary.prompts, summary.merged, summary.errors) == (10, 7, 10, 0)
    project = "/home/testuser/gemini-project"

    def row(session, at, text, item):
        return ("gemini", f"gemini:telemetry-gemini-00{session}", project, at, text, None, item)
    assert rows(db, f"SELECT {COLUMNS} FROM prompt_log ORDER BY id") == [
        row(1, "2025-11-07T11:30:00.000Z", "Help me understand this codebase", 1),
        row(1, "2025-11-07T11:31:00.000Z", "What's in the src folder?", 3),
        row(1, "2025-11-07T11:33:50.000Z", "Let me think about this more", 5),
        row(1, "2025-11-07T11:34:04.247Z", "/clear", 6),
        row(2, "2025-11-07T12:00:00.000Z", "Starting with README.md - fresh context", 7),
        row(2, "2025-11-07T12:30:00.000Z", "/clear", 9),
        row(3, "2025-11-07T12:45:00.000Z", "Third attempt - let's focus on testing", 10),
    ]
    # each item's place in the document is its own: raw bytes of the first item
    offset, length = rows(db, "SELECT byte_offset, byte_length FROM prompt_log WHERE id = 1")[0]
    data = (homes["gemini"] / "tmp" / "f00d" / "logs.json").read_bytes()
    assert json.loads(data[offset:offset + length])["message"] == "Help me understand this codebase"


def test_appended_lines_are_read_from_the_cursor(db, homes):
    history = homes["claude"] / "history.jsonl"
    ingest(db, {"claude": history.parent})
    first = rows(db, "SELECT id, text FROM prompt_log ORDER BY id")
    assert ingest(db, {"claude": history.parent}).files_read == 0  # unchanged: not opened
    with history.open("a") as fp:
        fp.write(json.dumps({"display": "add the login page", "pastedContents": {"1": {"id": 1, "type": "text",
                 "content": "pasted"}}, "timestamp": 1762870800000, "project": CLAUDE_PROJECT,
                 "sessionId": "telemetry-claude-002"}) + "\n")
        fp.write(json.dumps({"display": "an old line without its session", "pastedContents": {},
                             "timestamp": 1762870900000, "project": CLAUDE_PROJECT}) + "\n")
    summary = ingest(db, {"claude": history.parent})
    assert (summary.files_read, summary.lines, summary.prompts, summary.errors) == (1, 2, 2, 0)
    assert rows(db, "SELECT id, text FROM prompt_log ORDER BY id")[:7] == first  # (not read again)
    assert rows(db, f"SELECT {COLUMNS} FROM prompt_log WHERE id > 7 ORDER BY id") == [
        ("claude", "telemetry-claude-002", CLAUDE_PROJECT, "2025-11-11T14:20:00.000Z", "add the login page",
         '{"1":{"id":1,"type":"text","content":"pasted"}}', 8),
        ("claude", None, CLAUDE_PROJECT, "2025-11-11T14:21:40.000Z", "an old line without its session", None, 9),
    ]


def test_malformed_lines_are_reported_with_file_and_line(db, homes):
    history = homes["codex"] / "history.jsonl"
    with history.open("a") as fp:
        fp.write("{not json\n")
        fp.write(json.dumps({"session_id": "telemetry-codex-001", "ts": 1759848600}) + "\n")
        fp.write(json.dumps({"session_id": "telemetry-codex-001", "ts": 1759848700, "text": "still read"}) + "\n")
    summary = ingest(db, {"codex": history.parent})
    assert (summary.lines, summary.prompts, summary.errors) == (8, 6, 2)
    assert [(s[0], s[1]) for s in summary.error_samples] == [(str(history), 6), (str(history), 7)]
    assert rows(db, "SELECT path, line_no, substr(reason, 1, 12) FROM ingest_errors ORDER BY line_no") == [
        (str(history), 6, "invalid JSON"), (str(history), 7, "a prompt log"),
    ]
    assert rows(db, "SELECT lines_read, lines_merged, lines_failed FROM source_files") == [(8, 6, 2)]
    assert rows(db, "SELECT line_no, text FROM prompt_log WHERE line_no > 5") == [(8, "still read")]


def test_a_rewritten_log_keeps_each_prompt_once(db, homes):
    """A prompt log cut down and written again (the agent trimming it) is another file:
    the prompts it holds again are its own, those it dropped stay archived, none twice."""
    history = homes["codex"] / "history.jsonl"
    ingest(db, {"codex": history.parent})
    lines = history.read_text().splitlines(keepends=True)
    history.write_text("".join(lines[3:]) + json.dumps({"session_id": "t2", "ts": 1759849000, "text": "new one"}) + "\n")
    ingest(db, {"codex": history.parent})
    assert rows(db, "SELECT text, f.path = ?, p.line_no FROM prompt_log p JOIN source_files f ON f.id = p.file_id "
                "ORDER BY p.timestamp", [str(history)]) == [
        ("list the project structure", 0, 1), ("explain the main function", 0, 2), ("/clear", 0, 3),
        ("start fresh with testing", 1, 1), ("run the test suite", 1, 2), ("new one", 1, 3),
    ]


def claude_transcript(homes, session="telemetry-claude-001", whole=True):
    """The session's transcript: its first prompt and, ``whole``, its last (the rest is not
    needed: the stored messages reach from the first prompt's time to the last's)."""
    folder = homes["claude"] / "projects" / "-home-testuser-telemetry-project"
    folder.mkdir(parents=True, exist_ok=True)
    prompts = [("u1", None, "2025-11-11T14:16:40.000Z", "help me understand the codebase")]
    if whole:
        prompts.append(("u2", "u1", "2025-11-11T14:18:30.400Z", "fresh start - review the auth module"))
    lines = [{"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": session, "timestamp": timestamp,
              "cwd": CLAUDE_PROJECT, "message": {"role": "user", "content": text}}
             for uuid, parent, timestamp, text in prompts]
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_prompt_its_transcript_holds_is_marked_not_stored_twice(db, homes):
    claude_transcript(homes)
    ingest(db, {"claude": homes["claude"], "codex": homes["codex"]})
    assert rows(db, "SELECT count(*) FROM messages WHERE session_id = 'telemetry-claude-001'") == [(2,)]
    assert rows(db, "SELECT source, in_transcript, count(*) FROM browse_prompts GROUP BY 1, 2 ORDER BY 1") == [
        ("claude", 1, 7), ("codex", 0, 5)]
    # the transcript's message is searched once; the prompt log's row apart
    assert rows(db, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'codebase'") == [(1,)]
    conn = sqlite3.connect(db)
    assert [r["text"] for r in prompt_log.prompts(conn, "codebase")] == ["help me understand the codebase"]
    assert prompt_log.prompts(conn, "codebase", missing=True) == []
    assert [r["session_id"] for r in prompt_log.orphans(conn)] == ["codex:telemetry-codex-001"]
    assert prompt_log.orphan_count(conn) == 1
    # reading the transcript again reads no prompt log again (no family)
    (homes["claude"] / "projects" / "-home-testuser-telemetry-project" / "telemetry-claude-001.jsonl").write_text("")
    claude_transcript(homes)
    assert ingest(db, {"claude": homes["claude"]}).prompts == 0


def test_prompts_are_redacted(db, homes):
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with (homes["claude"] / "history.jsonl").open("a") as fp:
        fp.write(json.dumps({"display": f"use {token} to push", "pastedContents": {"1": {"content": token}},
                             "timestamp": 1762870800000, "project": CLAUDE_PROJECT, "sessionId": "s"}) + "\n")
    ingest(db, {"claude": homes["claude"]})
    text, pasted = rows(db, "SELECT text, pasted_json FROM prompt_log WHERE session_id = 's'")[0]
    assert token not in text and token not in pasted and text.startswith("use ") and text.endswith(" to push")
    assert rows(db, "SELECT count(*) FROM prompt_log_fts WHERE prompt_log_fts MATCH ?", [json.dumps(token)]) == [(0,)]


def test_cli_prompts(db, homes):
    claude_transcript(homes)
    runner = CliRunner()
    result = runner.invoke(cli, ["ingest", "--db", str(db), "--claude-dir", str(homes["claude"]),
                                 "--codex-dir", str(homes["codex"]), "--gemini-dir", str(homes["gemini"])])
    assert result.exit_code == 0, result.output
    assert "2 messages, 19 prompts from prompt logs, 0 errors" in result.output
    result = runner.invoke(cli, ["prompts", "readme", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "2025-11-11T14:16:45.000Z * claude  telemetry-claude-001  read the README.md",
        "2025-11-07T12:00:00.000Z   gemini  gemini:telemetry-gemini-002  Starting with README.md - fresh context",
    ]
    result = runner.invoke(cli, ["prompts", "--db", str(db), "--source", "codex", "--limit", "2"])
    assert result.output.splitlines() == [
        "2025-10-07T14:48:20.000Z   codex   codex:telemetry-codex-001  run the test suite",
        "2025-10-07T14:47:20.000Z   codex   codex:telemetry-codex-001  start fresh with testing",
        "(2 shown; there are more prompts: raise --limit or narrow the search)",
    ]
    result = runner.invoke(cli, ["prompts", "--db", str(db), "--source", "codex", "--limit", "2", "--json"])
    assert [row["text"] for row in json.loads(result.stdout)] == ["run the test suite", "start fresh with testing"]
    assert result.stderr == "(2 shown; there are more prompts: raise --limit or narrow the search)\n"
    result = runner.invoke(cli, ["prompts", "--db", str(db), "--orphans"])
    assert result.output.splitlines() == [
        "2025-11-07T12:45:00.000Z  gemini     1 prompt  gemini:telemetry-gemini-003  Third attempt - let's focus on testing",
        "2025-11-07T12:30:00.000Z  gemini    2 prompts  gemini:telemetry-gemini-002  Starting with README.md - fresh context",
        "2025-11-07T11:34:04.247Z  gemini    4 prompts  gemini:telemetry-gemini-001  Help me understand this codebase",
        "2025-10-07T14:48:20.000Z  codex     5 prompts  codex:telemetry-codex-001  list the project structure",
    ]
    result = runner.invoke(cli, ["prompts", "--db", str(db), "--session", "telemetry-claude-001", "--missing"])
    assert result.output.splitlines() == ["No prompts."]
    result = runner.invoke(cli, ["prompts", "auth", "--db", str(db), "--project", "%telemetry%", "--json"])
    assert [(r["text"], r["in_transcript"], r["line_no"]) for r in json.loads(result.output)] == [
        ("fresh start - review the auth module", 1, 7)]  # (a word, as search takes it: not "authentication")
    result = runner.invoke(cli, ["prompts", "--db", str(db), "--source", "cursor"])
    assert result.exit_code == 2


@pytest.mark.asyncio
async def test_datasette_searches_and_facets_the_prompts(db, homes):
    from web_fixtures import make_datasette

    claude_transcript(homes)
    ingest(db, {"claude": homes["claude"], "codex": homes["codex"], "gemini": homes["gemini"]})
    ds = make_datasette(db)
    table = (await ds.client.get(f"/{db.stem}/prompt_log.json", params={"_search": "readme", "_shape": "array"})).json()
    assert sorted(row["text"] for row in table) == ["Starting with README.md - fresh context", "read the README.md"]
    view = (await ds.client.get(f"/{db.stem}/browse_prompts.json", params={
        "_search": "readme", "in_transcript": "0", "_shape": "objects", "_extra": "facet_results"})).json()
    assert [row["session_id"] for row in view["rows"]] == ["gemini:telemetry-gemini-002"]
    facets = view["facet_results"]["results"]
    assert {f["value"]: f["count"] for f in facets["source"]["results"]} == {"gemini": 1}
    page = await ds.client.get(f"/{db.stem}/browse_prompts")
    assert page.status_code == 200


@pytest.mark.asyncio
async def test_the_overview_counts_the_sessions_only_prompt_logs_know(db, homes):
    from web_fixtures import make_datasette

    claude_transcript(homes)
    ingest(db, {"claude": homes["claude"], "codex": homes["codex"], "gemini": homes["gemini"]})
    html = (await make_datasette(db).client.get("/-/obelisk/overview")).text
    assert "4 sessions</a> known only from the agents' prompt logs" in html
    assert "/browse_prompts?in_transcript=0" in html


def test_cli_search_ends_with_the_prompts_of_gone_transcripts_that_match(db, homes):
    claude_transcript(homes)
    ingest(db, {"claude": homes["claude"], "codex": homes["codex"], "gemini": homes["gemini"]})
    runner = CliRunner()
    result = runner.invoke(cli, ["search", "codebase", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == (
        "Also 1 prompt from sessions whose transcripts are gone matches: obelisk prompts codebase --missing")
    listed = runner.invoke(cli, ["prompts", "codebase", "--missing", "--db", str(db), "--json"])
    assert [r["session_id"] for r in json.loads(listed.output)] == ["gemini:telemetry-gemini-001"]
    # no message matches: the note still says what the prompt logs kept
    result = runner.invoke(cli, ["search", "test suite", "--db", str(db), "--source", "codex"])
    assert result.output.splitlines() == [
        "No matches.",
        "Also 1 prompt from sessions whose transcripts are gone matches: "
        "obelisk prompts 'test suite' --missing --source codex",
    ]
    # narrowed to what the prompt logs cannot say (a session, a time), or JSON: no note
    for narrowed in (["--session", "telemetry-claude-001"], ["--after", "2025-01-01"], ["--json"], ["--mode", "phrase"]):
        result = runner.invoke(cli, ["search", "codebase", "--db", str(db), *narrowed])
        assert "transcripts are gone" not in result.output, narrowed
    assert "transcripts are gone" not in runner.invoke(cli, ["search", "readme", "--db", str(db), "--source", "claude"]).output


def test_the_prompts_command_a_search_ends_with_runs_as_written_for_text_that_starts_with_a_dash(db, homes):
    import shlex

    claude_transcript(homes)
    ingest(db, {"claude": homes["claude"], "codex": homes["codex"], "gemini": homes["gemini"]})
    runner = CliRunner()
    result = runner.invoke(cli, ["search", "--db", str(db), "--source", "codex", "--", "-test suite"])
    assert result.exit_code == 0, result.output
    command = result.output.splitlines()[-1].partition(": ")[2]
    assert command == "obelisk prompts --missing --source codex -- '-test suite'"
    listed = runner.invoke(cli, ["prompts", "--db", str(db), "--json", *shlex.split(command)[2:]])  # as written
    assert listed.exit_code == 0, listed.output
    assert [r["session_id"] for r in json.loads(listed.output)] == ["codex:telemetry-codex-001"]


def test_a_transcript_stored_in_part_holds_the_prompts_its_messages_reach(db, homes):
    """Its first prompt stored, the rest of the file cleaned up before it was read again: the
    prompts typed more than a minute after its last stored message are the prompt log's only."""
    claude_transcript(homes, whole=False)  # (one message, at 14:16:40)
    ingest(db, {"claude": homes["claude"]})
    assert rows(db, "SELECT line_no, timestamp, in_transcript FROM browse_prompts ORDER BY line_no") == [
        (1, "2025-11-11T14:16:40.000Z", 1), (2, "2025-11-11T14:16:45.000Z", 1), (3, "2025-11-11T14:16:54.075Z", 1),
        (4, "2025-11-11T14:17:00.000Z", 1), (5, "2025-11-11T14:17:10.000Z", 1),
        (6, "2025-11-11T14:18:20.000Z", 0), (7, "2025-11-11T14:18:30.000Z", 0)]
    conn = sqlite3.connect(db)
    assert [r["line_no"] for r in prompt_log.prompts(conn, missing=True)] == [7, 6]
    assert [r["line_no"] for r in prompt_log.prompts(conn, "auth module", missing=True)] == [7]
    assert prompt_log.missing_matches(conn, "auth") == {"count": 1, "expression": '"auth"'}
    # the session is stored: no orphan
    assert prompt_log.orphans(conn) == [] and prompt_log.orphan_count(conn) == 0
    # the whole transcript read: every prompt held
    claude_transcript(homes)
    ingest(db, {"claude": homes["claude"]})
    assert rows(db, "SELECT sum(in_transcript), count(*) FROM browse_prompts") == [(7, 7)]
    assert prompt_log.missing_matches(conn, "auth") == {"count": 0, "expression": '"auth"'}


def test_a_prompt_without_a_time_is_held_when_its_session_is_stored(db, homes):
    claude_transcript(homes, whole=False)
    with (homes["claude"] / "history.jsonl").open("a") as fp:
        fp.write(json.dumps({"display": "no time kept", "pastedContents": {}, "project": CLAUDE_PROJECT,
                             "sessionId": "telemetry-claude-001"}) + "\n")
        fp.write(json.dumps({"display": "no time, no transcript", "pastedContents": {}, "project": CLAUDE_PROJECT,
                             "sessionId": "elsewhere"}) + "\n")
    ingest(db, {"claude": homes["claude"]})
    assert rows(db, "SELECT text, timestamp, in_transcript FROM browse_prompts WHERE line_no > 7 ORDER BY line_no") == [
        ("no time kept", None, 1), ("no time, no transcript", None, 0)]


@pytest.mark.parametrize("query, mode, code, message", [
    ("   ", "terms", "OBELISK_INVALID_ARGUMENT", "a search needs a query: the text is blank"),
    ("x" * 1001, "raw", "OBELISK_INVALID_ARGUMENT", "the query is longer than 1000 characters"),
    ("x", "words", "SESSION_QUERY_INVALID_QUERY", "mode must be one of terms, phrase, raw, not 'words'"),
    ("AND", "raw", "SESSION_QUERY_INVALID_QUERY", "invalid FTS5 query 'AND': fts5: syntax error near \"AND\""),
])
def test_prompts_refuse_a_query_with_the_code_search_gives_the_same_mistake(query, mode, code, message):
    with pytest.raises(prompt_log.QueryError) as error:
        prompt_log.prompts(sqlite3.connect(":memory:"), query, mode=mode)
    assert (error.value.code, error.value.message) == (code, message)


def test_cli_prompts_of_a_session_no_log_knows_says_so_and_the_id_it_may_mean(db, homes):
    # A Codex history line names its session without the "codex:" the archive stores it under.
    claude_transcript(homes)
    ingest(db, {name: homes[name] for name in ("claude", "codex", "gemini")})
    runner = CliRunner()
    bare = runner.invoke(cli, ["prompts", "--db", str(db), "--session", "telemetry-codex-001"])
    assert (bare.exit_code, bare.stdout) == (0, "No prompts.\n")
    assert bare.stderr == "Note: no session 'telemetry-codex-001' (did you mean 'codex:telemetry-codex-001'?)\n"
    unknown = runner.invoke(cli, ["prompts", "--db", str(db), "--session", "nope", "--json"])
    assert (unknown.exit_code, unknown.stdout, unknown.stderr) == (0, "[]\n", "Note: no session 'nope'\n")
    # known from the prompt logs only, or from a stored transcript: nothing to say
    for known in ("codex:telemetry-codex-001", "telemetry-claude-001"):
        found = runner.invoke(cli, ["prompts", "--db", str(db), "--session", known, "--limit", "1000"])
        assert found.exit_code == 0 and found.stderr == "" and known in found.stdout.splitlines()[0]


def test_cli_prompts_of_a_project_pattern_no_folder_matches_says_so_and_the_folders_holding_it(db, homes):
    # --project is a LIKE pattern over the folder a prompt was typed in: a folder's name alone matches none.
    ingest(db, {name: homes[name] for name in ("claude", "codex", "gemini")})
    runner = CliRunner()
    note = ("Note: no project matches 'telemetry-project' (--project is a SQL LIKE pattern: "
            "'%telemetry-project%' matches '/home/testuser/telemetry-project')\n")
    for extra in ([], ["--orphans"], ["--json"]):
        bare = runner.invoke(cli, ["prompts", "--db", str(db), "--project", "telemetry-project", *extra])
        assert (bare.exit_code, bare.stderr) == (0, note), extra
    assert runner.invoke(cli, ["prompts", "--db", str(db), "--project", "telemetry-project", "--json"]).stdout == "[]\n"
    whole = runner.invoke(cli, ["prompts", "--db", str(db), "--project", "%/telemetry-project"])
    assert whole.stderr == "" and len(whole.stdout.splitlines()) == 7
