import json
import re
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import toy_source
from processes import ctrl_c_default
from datasette_obelisk.cli import cli


def write_logs(root, bad=False):
    root.mkdir(exist_ok=True)
    lines = [json.dumps({"id": "a", "text": "hello"}), json.dumps({"id": "b", "text": "world"})]
    if bad:
        lines.append("{broken")
    (root / "s.jsonl").write_text("\n".join(lines) + "\n")


def test_ingest_json_summary_and_exit_zero(tmp_path, toy_plugin):
    write_logs(tmp_path / "logs")
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--source", "toy", "--json"], env={"OBELISK_DB": None})
    # The toy source has no default folder, so nothing is found without a folder.
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"] == 0


def test_ingest_exit_one_when_lines_fail(tmp_path, toy_plugin, monkeypatch):
    write_logs(tmp_path / "logs", bad=True)
    monkeypatch.setattr(toy_source.ToySource, "default_root", lambda self, env: tmp_path / "logs")
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--source", "toy", "--json"])
    assert result.exit_code == 1, result.output
    summary = json.loads(result.output)
    assert (summary["files"], summary["lines"], summary["messages"], summary["errors"]) == (1, 3, 2, 1)
    assert summary["error_samples"] == [
        {"path": str(tmp_path / "logs" / "s.jsonl"), "line": 3,
         "reason": "invalid JSON: unexpected character, expected a string key: line 1 column 2 (char 1)"}
    ]
    again = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--source", "toy", "--json"])
    assert again.exit_code == 0
    assert json.loads(again.output)["files_skipped"] == 1


def test_db_defaults_to_obelisk_db_env(tmp_path, toy_plugin, monkeypatch):
    write_logs(tmp_path / "logs")
    monkeypatch.setattr(toy_source.ToySource, "default_root", lambda self, env: tmp_path / "logs")
    monkeypatch.setenv("OBELISK_DB", str(tmp_path / "env.db"))
    result = CliRunner().invoke(cli, ["ingest", "--source", "toy"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "env.db").exists()
    assert "1 files (1 read, 0 unchanged, 0 gone from disk), 2 lines, 1 sessions, 2 messages, 0 errors" in result.output


def test_the_summary_says_how_many_files_were_read_again_from_the_start(tmp_path, toy_plugin, monkeypatch):
    write_logs(tmp_path / "logs")
    monkeypatch.setattr(toy_source.ToySource, "default_root", lambda self, env: tmp_path / "logs")
    db = tmp_path / "o.db"
    assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--source", "toy"]).exit_code == 0
    conn = sqlite3.connect(db)
    conn.execute("UPDATE source_files SET parser_version = NULL")  # as after an upgrade
    conn.commit()
    conn.close()
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--source", "toy"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "1 files (1 read (1 of them again from the start: rewritten, or a new parser, redaction rules or discovery hints), "
        "0 unchanged, 0 gone from disk), 2 lines, 1 sessions, 2 messages, 0 errors in "
    )


def test_the_summary_counts_links_to_a_file_read_under_another_name(tmp_path, toy_plugin, monkeypatch):
    write_logs(tmp_path / "logs")
    (tmp_path / "logs" / "a.jsonl").symlink_to("s.jsonl")
    monkeypatch.setattr(toy_source.ToySource, "default_root", lambda self, env: tmp_path / "logs")
    result = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / "o.db"), "--source", "toy"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "1 files (1 read, 0 unchanged, 0 gone from disk, 1 link to a file read under another name), 2 lines, "
        "1 sessions, 2 messages, 0 errors in "
    )


def test_usage_errors_exit_two(tmp_path):
    runner = CliRunner()
    unknown = runner.invoke(cli, ["ingest", "--db", str(tmp_path / "o.db"), "--source", "nope"])
    assert unknown.exit_code == 2
    assert "unknown source nope" in unknown.output
    missing = runner.invoke(cli, ["ingest", "--db", str(tmp_path / "o.db"), "--claude-dir", str(tmp_path / "absent")])
    assert missing.exit_code == 2
    assert f"Error: OBELISK_INVALID_ARGUMENT: --claude-dir {tmp_path / 'absent'} does not exist\n" in missing.output


def test_a_database_path_that_cannot_be_one_is_a_usage_error(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    garbage = tmp_path / "notes.txt"
    garbage.write_text("not a database")
    (tmp_path / "x#y?z").mkdir()
    other = tmp_path / "x#y?z" / "other.db"  # characters a URI would cut the path at
    sqlite3.connect(other).execute("CREATE TABLE sessions (x)").connection.close()
    migrated = tmp_path / "notes.db"  # another program's, also migrated by sqlite-utils
    from sqlite_utils import Database
    from sqlite_utils.migrations import Migrations

    theirs = Migrations("other_app")

    @theirs()
    def m001_notes(db):
        db["notes"].create({"x": str})

    theirs.apply(Database(migrated))
    Database(migrated)["messages"].insert({"id": 1, "body": "hello"}, pk="id")
    Database(migrated)["messages"].enable_fts(["body"])  # a messages_fts of its own
    other_bytes, migrated_bytes = other.read_bytes(), migrated.read_bytes()
    foreign = "is another program's SQLite database, or a damaged one (no obelisk schema in it)"
    cases = [
        (tmp_path / "missing" / "o.db", "does not exist"),
        (garbage, "is not an SQLite database"),
        (other, foreign),
        (migrated, foreign),
    ]
    for db, message in cases:
        for command in (["ingest", "--claude-dir", str(logs)], ["up", "--no-serve", "--claude-dir", str(logs)]):
            result = CliRunner().invoke(cli, [*command, "--db", str(db)])
            assert result.exit_code == 2 and message in result.output, (command, db, result.output)
    assert garbage.read_text() == "not a database" and other.read_bytes() == other_bytes
    assert migrated.read_bytes() == migrated_bytes and sorted(p.name for p in tmp_path.iterdir()) == [
        "logs", "notes.db", "notes.txt", "x#y?z"]
    (tmp_path / "e%41f").mkdir()
    ours = tmp_path / "e%41f" / "o.db"
    for _ in range(2):  # the second time it is an obelisk database
        assert CliRunner().invoke(cli, ["ingest", "--claude-dir", str(logs), "--db", str(ours)]).exit_code == 0
    # Another ingest creating it: sqlite-utils commits its empty migrations table first.
    starting = tmp_path / "starting.db"
    Migrations("datasette_obelisk").ensure_migrations_table(Database(starting))
    assert CliRunner().invoke(cli, ["ingest", "--claude-dir", str(logs), "--db", str(starting)]).exit_code == 0
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(ours.read_bytes()[:3000])  # a header, then not enough of the file
    result = CliRunner().invoke(cli, ["ingest", "--claude-dir", str(logs), "--db", str(damaged)])
    assert result.exit_code == 2 and foreign in result.output
    unwritten = CliRunner().invoke(cli, ["publish-config", "--db", str(garbage), "-o", str(tmp_path / "no" / "p.yaml")])
    assert unwritten.exit_code == 2 and "does not exist" in unwritten.output


@pytest.mark.parametrize("command", [["datasette", "obelisk", "ingest"], ["sqlite-utils", "obelisk-ingest"]])
def test_ingest_is_also_a_datasette_and_sqlite_utils_command(tmp_path, command):
    # The installed entry points, run as a user would.
    claude = tmp_path / ".claude" / "projects" / "-tmp-p"
    claude.mkdir(parents=True)
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
            "timestamp": "2026-03-01T10:00:00.000Z", "message": {"role": "user", "content": "hello"}}
    (claude / "s1.jsonl").write_text(json.dumps(line) + "\n")
    executable = str(Path(sys.executable).with_name(command[0]))
    result = subprocess.run(
        [executable, *command[1:], "--db", str(tmp_path / "o.db"), "--claude-dir", str(tmp_path / ".claude"), "--json"],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["files"], summary["sessions"], summary["messages"]) == (1, 1, 1)
    refused = subprocess.run(  # a usage error is JSON on stdout here too
        [executable, *command[1:], "--db", str(tmp_path / "o.db"), "--claude-dir", str(tmp_path / "nope"), "--json"],
        capture_output=True, text=True,
    )
    message = f"--claude-dir {tmp_path / 'nope'} does not exist"
    assert (refused.returncode, json.loads(refused.stdout)) == (
        2, {"ok": False, "error": {"code": "OBELISK_INVALID_ARGUMENT", "message": message}})
    assert f"Error: OBELISK_INVALID_ARGUMENT: {message}" in refused.stderr
    unknown = subprocess.run([executable, *command[1:], "--json", "--bogus"], capture_output=True, text=True)
    error = json.loads(unknown.stdout)["error"]  # click's words for it
    assert (unknown.returncode, error["code"], "--bogus" in error["message"]) == (2, "OBELISK_INVALID_ARGUMENT", True)


def test_cli_does_not_import_datasette():
    # Agents script the CLI: each call should not pay for loading the web face.
    code = "import sys, datasette_obelisk.cli; print(sorted(m for m in sys.modules if m.split('.')[0] == 'datasette'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_sources_lists_the_built_ins():
    result = CliRunner().invoke(cli, ["sources"])
    assert result.exit_code == 0
    names = [line.split("\t")[0] for line in result.output.splitlines()]
    assert names[:3] == ["claude", "codex", "gemini"]


def test_sources_as_json(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-file"))
    (tmp_path / ".claude").mkdir()
    (tmp_path / "codex-file").write_text("")
    from datasette_obelisk.plugins import get_sources

    listed = json.loads(CliRunner().invoke(cli, ["sources", "--json"]).stdout)
    version = {name: source.parser_version for name, source in get_sources().items()}
    assert listed[:3] == [
        {"name": "claude", "parser_version": version["claude"], "folder": str(tmp_path / ".claude"), "problem": None},
        {"name": "codex", "parser_version": version["codex"], "folder": None,
         "problem": f"$CODEX_HOME {tmp_path / 'codex-file'} is not a folder"},
        {"name": "gemini", "parser_version": version["gemini"], "folder": None, "problem": "no default folder found"},
    ]


def test_ingest_progress_bar_reports_rate_eta_and_the_last_steps(tmp_path):
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "logs", seed=2, target_bytes=400_000)
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, [
        "ingest", "--db", str(db), "--claude-dir", str(tmp_path / "logs" / ".claude"),
        "--codex-dir", str(tmp_path / "logs" / ".codex"), "--progress",
    ])
    assert result.exit_code == 0, result.output
    updates = result.stderr.split("\r")
    total = sum(p.stat().st_size for p in (tmp_path / "logs").rglob("*.jsonl")) / 1e6
    assert any(u.startswith("100.0%") and f"/ {total:.1f} MB" in u and "MB/s" in u and "ETA" in u for u in updates)
    assert updates[-1].startswith("deriving sessions")
    assert "sessions" in result.stdout


def test_up_without_logs_ingests_a_demo_corpus_into_its_own_database(tmp_path, monkeypatch, isolated_home):
    monkeypatch.chdir(tmp_path)
    (isolated_home / ".claude" / "projects").mkdir(parents=True)  # an agent installed, no session yet
    result = CliRunner().invoke(cli, ["up", "--no-serve"])
    assert result.exit_code == 0, result.output
    assert "No agent logs found: using a generated demo corpus in demo-logs/, in obelisk-demo.db" in result.output
    conn = sqlite3.connect(tmp_path / "obelisk-demo.db")
    sources = dict(conn.execute("SELECT source, count(*) FROM sessions GROUP BY source"))
    errors = conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0]
    # the prompt logs too, with the prompts of sessions whose transcripts were cleaned up
    gone = conn.execute("SELECT source, count(DISTINCT session_id) FROM browse_prompts WHERE in_transcript = 0 "
                        "GROUP BY source ORDER BY source").fetchall()
    conn.close()
    assert gone == [("claude", 3), ("codex", 1)]
    assert set(sources) == {"claude", "codex", "gemini"} and errors == 0
    assert min(sources["claude"], sources["codex"]) >= 5 and sources["gemini"] >= 2
    assert not (tmp_path / "obelisk.db").exists()
    # A second start reads nothing new, and says what the database holds all the same.
    again = CliRunner().invoke(cli, ["up", "--no-serve"])
    conn = sqlite3.connect(tmp_path / "obelisk-demo.db")
    top, every, messages = conn.execute(
        "SELECT (SELECT COUNT(*) FROM sessions WHERE COALESCE(relationship, '') NOT IN ('subagent', 'workflow')), "
        "(SELECT COUNT(*) FROM sessions), "
        "(SELECT COUNT(*) FROM messages)").fetchone()
    conn.close()
    assert ", 0 sessions, 0 messages, 0 errors" in again.output
    assert (f"{tmp_path / 'obelisk-demo.db'} holds {top:,} sessions ({every:,} with agents' transcripts), "
            f"{messages:,} log messages.\n") in again.output

    # Once there are logs, they go to obelisk.db, without the demo sessions.
    project = isolated_home / ".claude" / "projects" / "-tmp-p"
    project.mkdir(parents=True)
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "mine",
            "timestamp": "2026-03-01T10:00:00.000Z", "message": {"role": "user", "content": "hello"}}
    (project / "mine.jsonl").write_text(json.dumps(line) + "\n")
    result = CliRunner().invoke(cli, ["up", "--no-serve"])
    assert result.exit_code == 0, result.output
    assert "demo" not in result.output
    conn = sqlite3.connect(tmp_path / "obelisk.db")
    assert conn.execute("SELECT id FROM sessions").fetchall() == [("mine",)]
    conn.close()


def test_up_serves_the_archive_it_holds_when_the_logs_are_gone(tmp_path, monkeypatch, isolated_home):
    """Logs an agent deleted (Claude Code's cleanupPeriodDays) or left on another machine are the
    archive's point: with none found, a database that holds sessions is served, not the demo."""
    monkeypatch.chdir(tmp_path)
    project = isolated_home / ".claude" / "projects" / "-tmp-p"
    project.mkdir(parents=True)
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "mine",
            "timestamp": "2026-03-01T10:00:00.000Z", "message": {"role": "user", "content": "hello"}}
    (project / "mine.jsonl").write_text(json.dumps(line) + "\n")
    assert CliRunner().invoke(cli, ["up", "--no-serve"]).exit_code == 0
    (project / "mine.jsonl").unlink()
    result = CliRunner().invoke(cli, ["up", "--no-serve"])
    assert result.exit_code == 0, result.output
    assert "demo" not in result.output and not (tmp_path / "demo-logs").exists()
    assert not (tmp_path / "obelisk-demo.db").exists()
    assert "No agent logs found: obelisk.db keeps the sessions it already holds" in result.output  # (--no-serve)
    assert "serving" not in result.output.lower()
    assert f"{tmp_path / 'obelisk.db'} holds 1 session, 1 log message." in result.output
    # A database that holds no session yet still gets the demo beside it.
    (tmp_path / "other.db").touch()
    result = CliRunner().invoke(cli, ["up", "--no-serve", "--db", "other.db"])
    assert result.exit_code == 0, result.output
    assert "using a generated demo corpus in demo-logs/, in other-demo.db" in result.output


def test_up_says_where_it_looked_for_logs_before_using_the_demo(tmp_path, monkeypatch, isolated_home):
    """A $CLAUDE_CONFIG_DIR mistyped, or logs kept elsewhere: the demo's notice names the folders
    read and the sources that had none, so the user sees why and what to give."""
    monkeypatch.chdir(tmp_path)
    (isolated_home / ".codex").mkdir()  # an agent installed, no session yet
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "typo"))
    result = CliRunner().invoke(cli, ["up", "--no-serve"])
    assert result.exit_code == 0, result.output
    assert "No agent logs found: using a generated demo corpus in demo-logs/" in result.output
    assert f"looked in {isolated_home / '.codex'} (codex); no folder for claude, gemini" in result.output
    assert "`obelisk sources` says where each source looks" in result.output


def test_up_keeps_the_demo_apart_from_a_named_database_too(tmp_path, monkeypatch, isolated_home):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["up", "--no-serve", "--db", "mine.db"])
    assert result.exit_code == 0, result.output
    assert "using a generated demo corpus in demo-logs/, in mine-demo.db" in result.output
    assert (tmp_path / "mine-demo.db").exists() and not (tmp_path / "mine.db").exists()


def test_up_refuses_a_port_it_cannot_serve_before_ingesting(tmp_path, monkeypatch, isolated_home):
    import socket

    monkeypatch.chdir(tmp_path)
    for port in ("0", "65536"):
        result = CliRunner().invoke(cli, ["up", "--port", port])
        assert result.exit_code == 2 and "is not in the range 1<=x<=65535" in result.output, result.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["up", "--port", str(port)])
    assert result.exit_code == 2 and f"--port {port}: 127.0.0.1:{port} cannot be served" in result.output
    assert not list(tmp_path.iterdir())  # nothing generated, nothing ingested


def test_dir_gives_a_plugin_source_its_folder(tmp_path, toy_plugin):
    logs = tmp_path / "logs"
    write_logs(logs)
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--dir", f"toy={logs}", "--json"])
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    summary = json.loads(result.stdout)
    assert summary["roots"] == {"toy": str(logs)}  # only the source given a folder is read
    assert (summary["files"], summary["files_read"], summary["lines"], summary["sessions"], summary["messages"],
            summary["errors"], summary["warnings"]) == (1, 1, 2, 1, 2, 0, [])
    again = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--dir", f"toy={logs}"])
    assert again.exit_code == 0, again.output
    assert again.stdout.startswith("1 files (0 read, 1 unchanged, 0 gone from disk), 0 lines, 0 sessions, 0 messages, 0 errors in ")


def test_dir_for_a_built_in_is_its_folder_option(tmp_path, toy_plugin):
    claude = tmp_path / "agent"
    project = claude / "projects" / "-tmp-p"
    project.mkdir(parents=True)
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
            "timestamp": "2026-03-01T10:00:00.000Z", "message": {"role": "user", "content": "hello"}}
    (project / "s1.jsonl").write_text(json.dumps(line) + "\n")
    logs = tmp_path / "logs"
    write_logs(logs)
    summaries = []
    for folder in (["--dir", f"claude={claude}"], ["--claude-dir", str(claude)],
                   ["--claude-dir", str(claude), "--dir", f"claude={claude}/"]):  # the same folder twice
        result = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / f"{len(summaries)}.db"), *folder,
                                          "--dir", f"toy={logs}", "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        summaries.append((summary["roots"], summary["files"], summary["sessions"], summary["messages"]))
    assert summaries == [({"claude": str(claude), "toy": str(logs)}, 2, 2, 3)] * 3


def test_up_watches_a_default_folder_created_after_it_started(tmp_path, monkeypatch, isolated_home):
    """No folder given: the watcher finds each source's folder every pass, so
    an agent used for the first time while serving is picked up."""
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda command, **kwargs: started.append(command))
    monkeypatch.setattr(os, "execvp", lambda file, args: started.append(args))
    home = Path(os.environ["HOME"])
    claude, codex = Path(os.environ["CLAUDE_CONFIG_DIR"]), Path(os.environ["CODEX_HOME"])
    project = claude / "projects" / "-w"
    project.mkdir(parents=True)
    (project / "s1.jsonl").write_text(json.dumps({
        "type": "user", "uuid": "u1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "first words"}}) + "\n")
    assert not codex.exists()
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, ["up", "--db", str(db)])
    assert result.exit_code == 0, result.output
    watcher, _ = started
    assert "--dir" not in watcher and "--source" not in watcher
    rollout = codex / "sessions" / "2026" / "01" / "02" / "rollout-2026-01-02T00-00-00-77777777-7777-4777-8777-777777777777.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps({"timestamp": "2026-01-02T00:00:00Z", "type": "session_meta",
                                   "payload": {"id": "77777777-7777-4777-8777-777777777777", "cwd": str(home)}}) + "\n")
    watched = CliRunner().invoke(cli, watcher[3:] + ["--json"])
    assert watched.exit_code == 0, watched.output
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT id FROM sessions ORDER BY id").fetchall() == [
        ("codex:77777777-7777-4777-8777-777777777777",), ("s1",)
    ]
    conn.close()


def test_up_hands_its_folders_to_the_watcher(tmp_path, toy_plugin, monkeypatch):
    # Serving is replaced by recording what would run: the watcher's command line and Datasette's.
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda command, **kwargs: started.append(command))
    monkeypatch.setattr(os, "execvp", lambda file, args: started.append(args))
    claude, logs = tmp_path / "agent", tmp_path / "logs"
    claude.mkdir()
    write_logs(logs)
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, ["up", "--db", str(db), "--dir", f"toy={logs}", "--claude-dir", str(claude)])
    assert result.exit_code == 0, result.output
    assert "1 files (1 read, 0 unchanged, 0 gone from disk), 2 lines, 1 sessions, 2 messages, 0 errors" in result.stdout
    watcher, server = started
    assert watcher == [
        sys.executable, "-m", "datasette_obelisk", "ingest", "--watch", "--no-progress", "--db", str(db),
        "--parent", str(os.getpid()), "--dir", f"claude={claude}", "--dir", f"toy={logs}",
    ]
    assert server == [sys.executable, "-m", "datasette_obelisk.serve", str(db), "-h", "127.0.0.1", "-p", "8001"]
    # The watcher's line reads those folders (run here, where the toy plugin is installed;
    # its parent is not this process, so it stops after its first pass).
    watched = CliRunner().invoke(cli, watcher[3:] + ["--json"])
    assert watched.exit_code == 0, watched.output
    first = json.loads(watched.stdout.splitlines()[0])
    assert (first["roots"], first["files"], first["files_skipped"]) == ({"claude": str(claude), "toy": str(logs)}, 1, 1)


def test_ctrl_c_stops_the_server_up_starts_with_status_0(tmp_path):
    import signal
    import socket
    import time
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    db = tmp_path / "o.db"
    sqlite3.connect(db).close()
    server = subprocess.Popen([sys.executable, "-m", "datasette_obelisk.serve", str(db), "-h", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_default)
    try:
        for _ in range(300):
            try:
                assert urllib.request.urlopen(f"http://127.0.0.1:{port}/-/versions.json").status == 200
                break
            except OSError:
                time.sleep(0.1)
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 0, err
    assert "Aborted!" not in err
    refused = subprocess.run([sys.executable, "-m", "datasette_obelisk.serve", str(db), "--no-such-option"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "Error: No such option '--no-such-option'" in refused.stderr


@pytest.mark.parametrize("command", [["search", "hello"], ["query", "-c", "return 1"]])
def test_ctrl_c_during_a_query_exits_130_with_a_word(tmp_path, monkeypatch, command):
    from datasette_obelisk import cli_query

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_query, "run_script", interrupted)
    monkeypatch.setattr(cli_query.obelisk, "search", interrupted)
    db = tmp_path / "o.db"
    write_logs(tmp_path / "logs")
    CliRunner().invoke(cli, ["ingest", "--db", str(db), "--claude-dir", str(tmp_path / "logs")])
    result = CliRunner().invoke(cli, [*command, "--db", str(db)])
    assert (result.exit_code, result.stderr) == (130, "\nInterrupted.\n")


@pytest.mark.parametrize("command", [["ingest"], ["up", "--no-serve"]])
def test_ctrl_c_during_an_ingest_stops_with_a_word_and_status_130(tmp_path, monkeypatch, command):
    from datasette_obelisk.store import ingest as ingest_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_module, "ingest", interrupted)
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    (project / "s1.jsonl").write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1",
                                                  "message": {"role": "user", "content": "hi"}}) + "\n")
    result = CliRunner().invoke(cli, [*command, "--db", str(tmp_path / "o.db"), "--claude-dir", str(tmp_path / "claude")])
    assert result.exit_code == 130
    assert "Interrupted: what was read is kept, and the next ingest carries on from there." in result.stderr
    assert "Aborted!" not in result.output


def test_a_given_folder_without_logs_is_a_warning_saying_what_it_should_hold(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "notes.md").write_text("not a log")
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--codex-dir", str(tmp_path / "logs")])
    message = (f"no codex logs found in {tmp_path / 'logs'}: it should hold sessions/YYYY/MM/DD/rollout-*.jsonl[.zst] "
               "or archived_sessions/rollout-* (or a sessions folder itself)")
    assert (result.exit_code, result.stderr) == (0, f"warning: {message}\n")
    as_json = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--codex-dir", str(tmp_path / "logs"), "--json"])
    assert (as_json.stderr, json.loads(as_json.stdout)["warnings"]) == (
        f"warning: {message}\n", [{"source": "codex", "path": str(tmp_path / "logs"), "message": message}])


@pytest.mark.parametrize("module", ["datasette_obelisk", "datasette_obelisk.cli"])
def test_the_cli_runs_as_a_module(module):
    result = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("Usage: obelisk ")
    assert "  search " in result.stdout and "  ingest " in result.stdout  # the query commands are registered too


def test_every_command_s_help_shows_an_example():
    def commands(group, prefix):
        yield prefix, group
        for name, command in getattr(group, "commands", {}).items():
            yield from commands(command, [*prefix, name])

    for path, command in commands(cli, []):
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0 and re.search(r"\n  Examples?:\n", result.output), path


def test_every_option_of_every_command_says_what_it_does():
    import click

    undescribed = [(name, param.opts) for name, command in cli.commands.items() for param in command.params
                   if isinstance(param, click.Option) and not param.hidden and not param.help]
    assert undescribed == []


@pytest.mark.parametrize("command, what", [(["sessions"], "sessions"), (["search", "needle"], "matches")])
def test_a_list_cut_at_the_most_a_call_returns_says_there_may_be_more(tmp_path, toy_plugin, monkeypatch, command, what):
    # One past --limit tells whether rows were left out; at the helpers' maximum there is no
    # one past to ask for, and the list was cut without a word.
    from datasette_obelisk.query import obelisk
    from query_fixtures import ToyLogs, line

    toy = ToyLogs(tmp_path)
    for n in range(5):
        toy.write(f"s{n}", line(f"m{n}", "needle", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    monkeypatch.setattr(obelisk, "MAX_LIMIT", 4)
    at_most = CliRunner().invoke(cli, [*command, "--db", str(toy.db), "--limit", "4"])
    assert at_most.exit_code == 0, at_most.output
    assert at_most.output.splitlines()[-1] == (
        f"(4 shown, the most one call returns; there may be more {what}: narrow the search)"
    )
    below = CliRunner().invoke(cli, [*command, "--db", str(toy.db), "--limit", "3"])
    assert below.output.splitlines()[-1] == f"(3 shown; there are more {what}: raise --limit or narrow the search)"
