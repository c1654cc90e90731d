"""How the CLI refuses what it cannot do: exit codes, messages and JSON error objects.

Exit 1 with a code (OBELISK_NOT_FOUND...) for a query error, exit 2 for a usage
error (with --json also ``{"ok": false, "error": {"code": "OBELISK_INVALID_ARGUMENT", ...}}``).
"""

import json
import sqlite3
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import toy_source
from datasette_obelisk.cli import cli
from datasette_obelisk.hookspecs import hookimpl
from datasette_obelisk.plugins import get_sources, pm
from datasette_obelisk.query import obelisk
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.sources.base import existing_folder, root_location
from datasette_obelisk.store.db import LATEST_MIGRATION, NewerDatabase
from datasette_obelisk.store.ingest import default_roots, ingest as run_ingest

NO_FOLDERS = "No agent log folders found (looked for the sources' default folders).\n"
USAGE = "Error: OBELISK_INVALID_ARGUMENT: "  # a usage error's line on stderr, exit 2
EMPTY_SEARCH = "search() needs query text: it is empty or only whitespace"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def usage_error(command: str, message: str) -> str:
    return f"Usage: cli {command} [OPTIONS]{' TEXT' if command == 'search' else ''}\n" \
           f"Try 'cli {command} --help' for help.\n\n{USAGE}{message}\n"


def json_error(code: str, message: str) -> dict:
    return {"ok": False, "error": {"code": code, "message": message}}


def claude_db(tmp_path):
    """A database holding one Claude session, ``s1``, whose one message says "hello there"."""
    project = tmp_path / "agent" / "projects" / "-w"
    project.mkdir(parents=True)
    line = {"type": "user", "uuid": "u1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "hello there"}}
    (project / "s1.jsonl").write_text(json.dumps(line) + "\n")
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / "agent"})
    return db


# -- a database that is not there, or not ours ---------------------------------------------------


DB_COMMANDS = [["search", "hello"], ["sessions"], ["redact", "--check"], ["publish-config"]]


@pytest.mark.parametrize("command", DB_COMMANDS)
def test_a_missing_database_is_not_found_for_every_command(tmp_path, command):
    db = tmp_path / "nope.db"
    message = f"database not found: {db} (run `obelisk ingest` first)"
    result = invoke(*command, "--db", db)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: OBELISK_NOT_FOUND: {message}\n")
    if command != ["publish-config"]:  # the only one without --json
        as_json = invoke(*command, "--db", db, "--json")
        assert (as_json.exit_code, json.loads(as_json.stdout)) == (1, json_error("OBELISK_NOT_FOUND", message))
    assert list(tmp_path.iterdir()) == []  # nothing created (no database, no redaction key)


@pytest.mark.parametrize("command", DB_COMMANDS)
def test_a_database_that_is_not_obelisk_is_not_found_for_every_command(tmp_path, command):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (a)").connection.close()
    result = invoke(*command, "--db", other)
    message = f"{other} is not an obelisk database but another program's (give --db an obelisk database)"
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: OBELISK_NOT_FOUND: {message}\n")
    # An empty one (made by hand, or by SQLite for a mistyped name) is one to ingest into.
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).execute("PRAGMA user_version = 1").connection.close()
    result = invoke(*command, "--db", empty)
    message = f"{empty} is not an obelisk database (run `obelisk ingest` into it first)"
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: OBELISK_NOT_FOUND: {message}\n")


@pytest.mark.parametrize("command", [*DB_COMMANDS, ["ingest"], ["query", "-c", "return 1"], ["read", "s1"]])
def test_a_database_variable_naming_a_folder_is_refused_as_the_option_is(tmp_path, monkeypatch, command):
    """$OBELISK_DB and --db are one option: a folder is the same usage error, naming where it came from."""
    name = command[0]
    usage = f"Usage: cli {name} [OPTIONS]{' TEXT' if name == 'search' else ' SESSION' if name == 'read' else ' [FILE]' if name == 'query' else ''}\nTry 'cli {name} --help' for help.\n\n"
    given = invoke(*command, "--db", tmp_path)
    assert (given.exit_code, given.stdout, given.stderr) == (
        2, "", f"{usage}{USAGE}Invalid value for '--db' (env var: 'OBELISK_DB'): File '{tmp_path}' is a directory.\n")
    monkeypatch.setenv("OBELISK_DB", str(tmp_path))
    from_variable = invoke(*command)
    assert (from_variable.exit_code, from_variable.stdout, from_variable.stderr) == (given.exit_code, "", given.stderr)


def test_an_empty_database_variable_is_the_default_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OBELISK_DB", "")
    result = invoke("sessions")
    message = "database not found: obelisk.db (run `obelisk ingest` first)"
    assert (result.exit_code, result.stderr) == (1, f"Error: OBELISK_NOT_FOUND: {message}\n")


@pytest.mark.parametrize("command", [["ingest"], ["up", "--no-serve"]])
def test_a_database_path_the_system_cannot_follow_is_a_usage_error_not_a_traceback(tmp_path, command):
    loop = tmp_path / "loop.db"
    loop.symlink_to(tmp_path / "other.db")
    (tmp_path / "other.db").symlink_to(loop)
    long = tmp_path / ("x" * 300 + ".db")
    for db, why in [(loop, "Too many levels of symbolic links"), (long, "File name too long")]:
        message = f"--db {db}: {why}"
        result = invoke(*command, "--db", db, "--claude-dir", tmp_path)
        assert (result.exit_code, result.stdout) == (2, "") and result.stderr.endswith(f"{USAGE}{message}\n")
    as_json = invoke("ingest", "--db", long, "--claude-dir", tmp_path, "--json")
    error = json_error("OBELISK_INVALID_ARGUMENT", f"--db {long}: File name too long")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, error)


def test_a_database_path_that_is_no_regular_file_is_a_usage_error(tmp_path):
    import os

    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    result = invoke("ingest", "--db", fifo, "--claude-dir", tmp_path)  # it would wait for a writer forever
    assert (result.exit_code, result.stderr) == (2, usage_error("ingest", f"--db {fifo} is not a regular file"))
    read = invoke("sessions", "--db", fifo)
    assert (read.exit_code, read.stderr) == (1, f"Error: OBELISK_NOT_FOUND: {fifo} is not a regular file\n")


def damage(db: Path, table: str) -> None:
    """Overwrite the start of ``table``'s root page: SQLite then finds the file malformed
    when a statement reads that table (the schema itself still reads)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", [table]).fetchone()[0]
    conn.close()
    with open(db, "r+b") as fp:
        fp.seek((root - 1) * page_size)
        fp.write(b"\xff" * 64)


MALFORMED = "database disk image is malformed"


@pytest.mark.parametrize("command", [["search", "hello"], ["redact", "--check"]])
def test_a_damaged_database_is_an_error_with_its_code_not_a_traceback(tmp_path, command):
    db = claude_db(tmp_path)
    damage(db, "messages")
    result = invoke(*command, "--db", db)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: OBELISK_INVALID_SQL: {MALFORMED}\n")
    as_json = invoke(*command, "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (1, json_error("OBELISK_INVALID_SQL", MALFORMED))


def test_ingest_into_a_damaged_database_says_so_in_one_line(tmp_path):
    db = claude_db(tmp_path)
    damage(db, "messages")
    line = {"type": "user", "uuid": "u2", "sessionId": "s2", "timestamp": "2026-01-02T00:00:00Z",
            "message": {"role": "user", "content": "a new session"}}
    (tmp_path / "agent" / "projects" / "-w" / "s2.jsonl").write_text(json.dumps(line) + "\n")
    result = invoke("ingest", "--db", db, "--claude-dir", tmp_path / "agent")
    # The code the read commands give a damaged database (OBELISK_INVALID_SQL), not a usage error's.
    assert (result.exit_code, result.stderr) == (1, f"Error: OBELISK_INVALID_SQL: --db {db}: {MALFORMED}\n")
    as_json = invoke("ingest", "--db", db, "--claude-dir", tmp_path / "agent", "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (
        1, json_error("OBELISK_INVALID_SQL", f"--db {db}: {MALFORMED}"))


def test_a_database_whose_name_is_not_utf_8_is_read_and_written(tmp_path):
    db = claude_db(tmp_path)
    odd = tmp_path / "o\udcff.db"  # the byte 0xff, as Python names it
    db.rename(odd)
    for command in (["search", "hello", "--json"], ["sessions", "--json"], ["ingest", "--claude-dir", tmp_path / "agent", "--json"]):
        result = CliRunner().invoke(cli, [*map(str, command), "--db", str(odd)])
        assert result.exit_code == 0, result.output
        if command[0] == "ingest":  # JSON any parser reads: no lone surrogate
            assert orjson.loads(result.stdout)["db"] == str(tmp_path / "o\\xff.db")
    assert [s["id"] for s in json.loads(invoke("sessions", "--db", odd, "--json").stdout)] == ["s1"]


def test_a_database_a_newer_version_made_is_not_written(tmp_path):
    db = claude_db(tmp_path)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('datasette_obelisk', 'm999_future', '')")
    conn.close()
    message = (f"--db {db} was made by a newer datasette-obelisk (it has migration m999_future; "
               f"this one knows up to {LATEST_MIGRATION}): upgrade to write to it")
    result = invoke("ingest", "--db", db, "--claude-dir", tmp_path / "agent")
    assert (result.exit_code, result.stderr) == (2, usage_error("ingest", message))
    with pytest.raises(NewerDatabase):
        run_ingest(db, {"claude": tmp_path / "agent"})
    assert invoke("sessions", "--db", db).exit_code == 0  # read as it is
    assert invoke("redact", "--check", "--db", db).stdout == "No secrets found by the current rules.\n"
    from datasette_obelisk.query.memories import write_transaction  # every memory write (attune, the web)

    conn = sqlite3.connect(db)
    with pytest.raises(QueryError) as refused:
        with write_transaction(conn):
            pass
    assert refused.value.code == "OBELISK_READ_ONLY" and not conn.in_transaction
    conn.close()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT DISTINCT parser_version FROM source_files").fetchall() == [(get_sources()["claude"].parser_version,)]
    conn.close()


@pytest.mark.parametrize("newer", ["migration", "parser"])
def test_up_serves_a_database_a_newer_version_made_read_only(tmp_path, monkeypatch, newer):
    """As the README says: a newer version's database is read as it is and never written.
    `up` serves it (what one asks of `up`), ingesting nothing and starting no watcher."""
    import os
    import subprocess
    import sys

    db = claude_db(tmp_path)
    version = get_sources()["claude"].parser_version
    conn = sqlite3.connect(db)
    with conn:
        if newer == "migration":
            conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                         "VALUES ('datasette_obelisk', 'm999_future', '')")
        else:
            conn.execute("UPDATE source_files SET parser_version = ?", [version + 1])
    conn.close()
    log = next((tmp_path / "agent").rglob("*.jsonl"))
    with open(log, "a") as fp:  # a line an ingest would add
        fp.write(json.dumps({"type": "user", "uuid": "u9", "sessionId": "s1", "timestamp": "2026-01-01T00:01:00Z",
                             "message": {"role": "user", "content": "more"}}) + "\n")
    before = db.read_bytes()
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda command, **kwargs: started.append(command))
    monkeypatch.setattr(os, "execvp", lambda file, args: started.append(args))
    result = CliRunner().invoke(cli, ["up", "--db", str(db), "--claude-dir", str(tmp_path / "agent"), "--port", "8001"])
    assert result.exit_code == 0, result.output
    assert f"--db {db} was made by a newer datasette-obelisk (" in result.stderr
    assert "Serving it as it is, read-only: nothing is ingested into it." in result.stderr
    assert f"{db.resolve()} holds 1 session, 1 log message." in result.stderr
    assert started == [[sys.executable, "-m", "datasette_obelisk.serve", str(db), "-h", "127.0.0.1", "-p", "8001"]]
    assert db.read_bytes() == before
    without = CliRunner().invoke(cli, ["up", "--no-serve", "--db", str(db), "--claude-dir", str(tmp_path / "agent")])
    assert without.exit_code == 0, without.output
    assert "Left as it is: nothing is ingested into it." in without.stderr and "Serving" not in without.stderr
    assert db.read_bytes() == before
    assert invoke("ingest", "--db", db, "--claude-dir", tmp_path / "agent").exit_code == 2  # still refused


def test_redact_check_reads_a_database_as_it_is(tmp_path):
    import hashlib

    db = claude_db(tmp_path)
    Path(f"{db}.redaction-key").unlink(missing_ok=True)
    change = sqlite3.connect(db)
    with change:  # as a version from before the latest migration left it
        change.execute("DELETE FROM _sqlite_migrations WHERE name = ?", [LATEST_MIGRATION])
        for column in ("cost_usd", "lines_added", "lines_removed", "relocated_cwd", "worktree_path", "worktree_branch",
                       "worktree_base_branch", "ended_by_model"):  # (m039's)
            change.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    change.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    change.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    result = invoke("redact", "--check", "--db", db)
    assert (result.exit_code, result.stdout) == (0, "No secrets found by the current rules.\n")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before and not Path(f"{db}.redaction-key").exists()


def test_publish_config_checks_its_output_folder_before_the_database(tmp_path):
    result = invoke("publish-config", "--db", tmp_path / "nope.db", "-o", tmp_path / "no" / "p.yaml")
    assert result.exit_code == 2
    assert result.stderr.endswith(f"{USAGE}--output {tmp_path / 'no' / 'p.yaml'}: the folder {tmp_path / 'no'} does not exist\n")


# -- --source --------------------------------------------------------------------------------------


SOURCE_COMMANDS = [["search", "hello"], ["sessions"], ["failures"], ["files", "/w/a.py"]]
HELPER_OF = {"search": "search", "sessions": "sessions", "failures": "failures", "files": "fileHistory"}


@pytest.mark.parametrize("command", SOURCE_COMMANDS)
def test_an_unknown_source_is_a_usage_error_naming_the_installed_ones(tmp_path, command):
    db = claude_db(tmp_path)
    message = f"{HELPER_OF[command[0]]}(): unknown source bogus; installed: claude, codex, gemini"
    result = invoke(*command, "--source", "bogus", "--db", db)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.endswith(f"\n{USAGE}{message}\n")
    as_json = invoke(*command, "--source", "bogus", "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))
    assert invoke(*command, "--source", "gemini", "--db", db, "--json").stdout == "[]\n"  # installed, none stored


@pytest.mark.parametrize("command", [*SOURCE_COMMANDS, ["prompts"], ["prompts", "--orphans"]])
def test_a_source_is_named_in_any_case(tmp_path, command):
    db = claude_db(tmp_path)
    exact = invoke(*command, "--source", "claude", "--db", db, "--json")
    assert exact.exit_code == 0, exact.output
    for spelling in ["Claude", "CLAUDE", "cLaUdE"]:
        assert invoke(*command, "--source", spelling, "--db", db, "--json").stdout == exact.stdout
    assert invoke(*command, "--source", "ALL", "--db", db, "--json").stdout == \
        invoke(*command, "--db", db, "--json").stdout
    assert invoke(*command, "--source", "CODEX", "--db", db, "--json").stdout == "[]\n"


def test_search_by_a_source_in_capitals_finds_its_messages(tmp_path):
    result = invoke("search", "hello", "--source", "Claude", "--db", claude_db(tmp_path))
    assert (result.exit_code, result.stdout) == (0, "1. hello there  s1  [claude] -w\n   2026-01-01T00:00:00Z  user  u1\n   hello there\n")


def test_ingest_names_a_source_in_any_case(tmp_path):
    logs = tmp_path / "agent" / "projects" / "-w"
    logs.mkdir(parents=True)
    (logs / "s1.jsonl").write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1",
                                               "message": {"role": "user", "content": "hi"}}) + "\n")
    for args in (["--source", "CLAUDE", "--claude-dir", tmp_path / "agent"], ["--dir", f"Claude={tmp_path / 'agent'}"]):
        result = invoke("ingest", "--db", tmp_path / "o.db", *args, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["roots"] == {"claude": str(tmp_path / "agent")}


def test_a_source_no_longer_installed_is_accepted_while_the_database_holds_its_sessions(tmp_path):
    logs = tmp_path / "toy-logs"
    logs.mkdir()
    (logs / "t1.jsonl").write_text(json.dumps({"id": "a", "text": "hello toy"}) + "\n")
    db = claude_db(tmp_path)
    pm.register(toy_source, "toy-cli-errors")
    try:
        run_ingest(db, {"toy": logs})
    finally:
        pm.unregister(toy_source)
    found = invoke("sessions", "--source", "toy", "--db", db, "--json")
    assert found.exit_code == 0, found.output
    assert [row["id"] for row in json.loads(found.stdout)] == ["t1"]
    hits = invoke("search", "hello", "--source", "toy", "--db", db, "--json")
    assert [hit["message"]["uuid"] for hit in json.loads(hits.stdout)] == ["a"]
    refused = invoke("sessions", "--source", "bogus", "--db", db, "--json")
    message = "sessions(): unknown source bogus; installed: claude, codex, gemini; also in the database: toy"
    assert (refused.exit_code, json.loads(refused.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))


def test_ingest_refuses_an_unknown_source_with_the_same_message(tmp_path):
    result = invoke("ingest", "--db", tmp_path / "o.db", "--source", "bogus", "--json")
    message = "unknown source bogus; installed: claude, codex, gemini"
    assert (result.exit_code, json.loads(result.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))
    assert not (tmp_path / "o.db").exists()


# -- agent folders: options and environment variables ----------------------------------------------


@pytest.mark.parametrize("command", ["ingest", "up"])
@pytest.mark.parametrize("name", ["claude", "codex", "gemini"])
def test_an_agent_folder_option_that_is_not_a_folder_is_a_usage_error(tmp_path, command, name):
    afile = tmp_path / "afile"
    afile.write_text("")
    extra = ["--no-serve"] if command == "up" else []
    for path, why in ((afile, "is not a folder"), (tmp_path / "absent", "does not exist")):
        result = invoke(command, *extra, "--db", tmp_path / "o.db", f"--{name}-dir", path)
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr == usage_error(command, f"--{name}-dir {path} {why}")
    as_json = invoke("ingest", "--db", tmp_path / "o.db", f"--{name}-dir", afile, "--json")
    error = json_error("OBELISK_INVALID_ARGUMENT", f"--{name}-dir {afile} is not a folder")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, error)
    assert not (tmp_path / "o.db").exists()


def dir_errors(tmp_path):
    """``--dir`` (and ``--X-dir``) arguments each refused, with the message."""
    afile, absent, folder, other = tmp_path / "afile", tmp_path / "absent", tmp_path / "folder", tmp_path / "other"
    afile.write_text("")
    folder.mkdir()
    other.mkdir()
    return [
        (["--dir", f"bogus={folder}"], "unknown source bogus; installed: claude, codex, gemini, toy"),
        (["--dir", "toy"], "--dir toy is not NAME=PATH"),
        (["--dir", f"={folder}"], f"--dir ={folder} is not NAME=PATH"),
        (["--dir", "toy="], "--dir toy= is not NAME=PATH"),
        (["--dir", f"toy={afile}"], f"--dir toy={afile} is not a folder"),
        (["--dir", f"toy={absent}"], f"--dir toy={absent} does not exist"),
        (["--dir", f"claude={afile}"], f"--dir claude={afile} is not a folder"),
        (["--dir", f"toy={folder}", "--dir", f"toy={other}"],
         f"--dir toy={folder} and --dir toy={other} give the toy source two folders"),
        (["--dir", f"claude={other}", "--claude-dir", folder],
         f"--claude-dir {folder} and --dir claude={other} give the claude source two folders"),
    ]


@pytest.mark.parametrize("command", ["ingest", "up"])
def test_a_dir_option_that_is_not_an_installed_source_and_a_folder_is_a_usage_error(tmp_path, command, toy_plugin):
    extra = ["--no-serve"] if command == "up" else []
    db = tmp_path / "o.db"
    for arguments, message in dir_errors(tmp_path):
        result = invoke(command, *extra, "--db", db, *arguments)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", usage_error(command, message)), arguments
        if command == "ingest":  # up has no --json
            as_json = invoke(command, "--db", db, *arguments, "--json")
            assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))
    assert not db.exists()


def test_a_link_and_its_target_are_one_folder(tmp_path):
    target, link = tmp_path / "claude", tmp_path / "link"
    target.mkdir()
    link.symlink_to(target)
    result = invoke("ingest", "--db", tmp_path / "o.db", "--dir", f"claude={link}", "--claude-dir", target, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["roots"] == {"claude": str(target)}


def test_a_folder_for_a_source_that_source_leaves_out_is_a_usage_error(tmp_path, toy_plugin):
    folder, db = tmp_path / "folder", tmp_path / "o.db"
    folder.mkdir()
    for arguments, message in [
        (["--source", "claude", "--dir", f"toy={folder}"], f"--dir toy={folder} gives a folder to toy, which --source leaves out"),
        (["--source", "toy", "--codex-dir", folder], f"--codex-dir {folder} gives a folder to codex, which --source leaves out"),
    ]:
        result = invoke("ingest", "--db", db, *arguments)
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", usage_error("ingest", message)), arguments
    assert not db.exists()
    both = invoke("ingest", "--db", db, "--source", "toy", "--source", "claude", "--dir", f"toy={folder}", "--json")
    assert both.exit_code == 0 and json.loads(both.stdout)["roots"]["toy"] == str(folder)


@pytest.mark.parametrize("name, variable", [("claude", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME")])
def test_an_agent_folder_variable_naming_a_file_is_a_usage_error(tmp_path, monkeypatch, name, variable):
    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv(variable, str(afile))
    message = f"${variable} {afile} is not a folder"
    result = invoke("ingest", "--db", tmp_path / "o.db")
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", usage_error("ingest", message))
    as_json = invoke("ingest", "--db", tmp_path / "o.db", "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))
    up = invoke("up", "--no-serve", "--db", tmp_path / "o.db")
    assert (up.exit_code, up.stderr) == (2, usage_error("up", message))
    assert not (tmp_path / "o.db").exists()
    sources = invoke("sources")
    assert f"{name}\tparser v" in sources.stdout and sources.stdout.count(f"\t({message})\n") == 1
    # The variable does not matter when its source is not read, or read from an option.
    assert invoke("ingest", "--db", tmp_path / "o.db", "--source", "gemini").exit_code == 0
    folder = tmp_path / "folder"
    folder.mkdir()
    assert invoke("ingest", "--db", tmp_path / "o.db", f"--{name}-dir", folder).exit_code == 0


@pytest.mark.parametrize("variable", ["CLAUDE_CONFIG_DIR", "CODEX_HOME"])
def test_an_agent_folder_variable_naming_nothing_yet_is_a_folder_to_come(tmp_path, monkeypatch, variable):
    monkeypatch.setenv(variable, str(tmp_path / "later"))  # the agent creates it on its first run
    result = invoke("ingest", "--db", tmp_path / "o.db")
    assert result.exit_code == 0
    assert result.stderr == NO_FOLDERS
    # With --json too: a warning on stderr and in the summary.
    result = invoke("ingest", "--db", tmp_path / "o.db", "--json")
    assert (result.exit_code, result.stderr) == (0, "warning: " + NO_FOLDERS)
    assert json.loads(result.stdout)["warnings"] == [{"source": None, "path": None, "message": NO_FOLDERS.strip()}]


class ToyHomeSource(toy_source.ToySource):
    """The toy source with a folder of its own: ``$TOY_HOME``, else ``~/.toy``."""

    root_variable = "TOY_HOME"
    home_folder = ".toy"

    def default_root(self, environ):
        return existing_folder(root_location(self, environ))


class ToyHomePlugin:
    @hookimpl
    def obelisk_sources(self):
        return [ToyHomeSource()]


@pytest.fixture
def toy_home_plugin(monkeypatch):
    monkeypatch.delenv("TOY_HOME", raising=False)
    plugin = ToyHomePlugin()
    pm.register(plugin, "toy-home")
    yield
    pm.unregister(plugin)


def test_the_built_in_sources_declare_their_folder():
    sources = get_sources()
    declared = {name: (sources[name].root_variable, sources[name].home_folder) for name in ("claude", "codex", "gemini")}
    assert declared == {"claude": ("CLAUDE_CONFIG_DIR", ".claude"), "codex": ("CODEX_HOME", ".codex"), "gemini": (None, ".gemini")}


def test_a_plugin_source_variable_naming_a_file_is_a_usage_error(tmp_path, monkeypatch, toy_home_plugin):
    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv("TOY_HOME", str(afile))
    message = f"$TOY_HOME {afile} is not a folder"
    result = invoke("ingest", "--db", tmp_path / "o.db")
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", usage_error("ingest", message))
    as_json = invoke("ingest", "--db", tmp_path / "o.db", "--source", "toy", "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))
    assert not (tmp_path / "o.db").exists()
    assert f"toy\tparser v1\t({message})\n" in invoke("sources").stdout
    # A folder it names is read.
    logs = tmp_path / "toy"
    logs.mkdir()
    (logs / "t1.jsonl").write_text(json.dumps({"id": "m1", "text": "hi"}) + "\n")
    monkeypatch.setenv("TOY_HOME", str(logs))
    read = invoke("ingest", "--db", tmp_path / "o.db", "--source", "toy", "--json")
    assert (read.exit_code, read.stderr) == (0, "")
    summary = json.loads(read.stdout)
    assert (summary["roots"], summary["files"], summary["messages"], summary["warnings"]) == ({"toy": str(logs)}, 1, 1, [])
    assert f"toy\tparser v1\t{logs}\n" in invoke("sources").stdout


def test_a_default_folder_that_is_a_file_is_a_warning_and_the_other_sources_are_ingested(
    tmp_path, monkeypatch, isolated_home, toy_home_plugin
):
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.delenv("CODEX_HOME")
    (isolated_home / ".codex").write_text("not a folder")
    (isolated_home / ".toy").write_text("not a folder either")
    claude_db(isolated_home / "logs")
    (isolated_home / "logs" / "agent").rename(isolated_home / ".claude")
    codex, toy = isolated_home / ".codex", isolated_home / ".toy"
    warnings = [
        {"source": "codex", "path": str(codex), "message": f"the codex source's default folder {codex} is not a folder; codex not ingested"},
        {"source": "toy", "path": str(toy), "message": f"the toy source's default folder {toy} is not a folder; toy not ingested"},
    ]
    stderr = "".join(f"warning: {w['message']}\n" for w in warnings)
    db = tmp_path / "o.db"
    result = invoke("ingest", "--db", db)
    assert (result.exit_code, result.stderr) == (0, stderr)
    assert result.stdout.startswith("1 files (1 read, 0 unchanged, 0 gone from disk), 1 lines, 1 sessions, 1 messages, 0 errors in ")
    as_json = invoke("ingest", "--db", tmp_path / "j.db", "--json")
    assert (as_json.exit_code, as_json.stderr) == (0, stderr)
    summary = json.loads(as_json.stdout)
    assert (summary["roots"], summary["warnings"]) == ({"claude": str(isolated_home / ".claude")}, warnings)
    assert (summary["files"], summary["lines"], summary["sessions"], summary["messages"], summary["errors"]) == (1, 1, 1, 1, 0)
    # Only the sources read are warned about; a folder option replaces the default folder.
    only = invoke("ingest", "--db", db, "--source", "codex")
    assert (only.exit_code, only.stderr) == (0, stderr.splitlines(keepends=True)[0] + NO_FOLDERS)
    folder = tmp_path / "codex"
    folder.mkdir()
    given = invoke("ingest", "--db", db, "--codex-dir", folder)
    assert (given.exit_code, given.stderr) == (0, f"warning: no codex logs found in {folder}: it should hold "
                                                  "sessions/YYYY/MM/DD/rollout-*.jsonl[.zst] or archived_sessions/rollout-* "
                                                  "(or a sessions folder itself)\n")
    up = invoke("up", "--no-serve", "--db", db)
    assert up.exit_code == 0 and up.stderr.startswith(stderr)
    sources = get_sources()
    assert invoke("sources").stdout == (
        f"claude\tparser v{sources['claude'].parser_version}\t{isolated_home / '.claude'}\n"
        f"codex\tparser v{sources['codex'].parser_version}\t({codex} is not a folder)\n"
        f"gemini\tparser v{sources['gemini'].parser_version}\t(no default folder found)\n"
        f"toy\tparser v1\t({toy} is not a folder)\n"
    )


def test_a_default_root_that_is_a_file_is_not_scanned_and_is_warned_about(tmp_path, monkeypatch, toy_plugin):
    # The toy source declares no root_variable or home_folder: what default_root returns is its folder.
    afile = tmp_path / "toy-logs"
    afile.write_text(json.dumps({"id": "a", "text": "not a folder"}) + "\n")
    monkeypatch.setattr(toy_source.ToySource, "default_root", lambda self, environ: afile)
    assert default_roots({"toy": toy_source.ToySource()}) == {}
    message = f"the toy source's default folder {afile} is not a folder; toy not ingested"
    python = run_ingest(tmp_path / "p.db", sources={"toy": toy_source.ToySource()}).as_dict()
    assert (python["files"], python["warnings"]) == (0, [{"source": "toy", "path": str(afile), "message": message}])
    result = invoke("ingest", "--db", tmp_path / "o.db", "--source", "toy", "--json")
    assert (result.exit_code, result.stderr) == (0, f"warning: {message}\nwarning: {NO_FOLDERS}")
    summary = json.loads(result.stdout)
    assert (summary["roots"], summary["files"], summary["warnings"]) == (
        {}, 0, [{"source": "toy", "path": str(afile), "message": message},
                {"source": None, "path": None, "message": NO_FOLDERS.strip()}])
    assert f"toy\tparser v1\t({afile} is not a folder)\n" in invoke("sources").stdout
    # A folder option replaces it.
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "s1.jsonl").write_text(json.dumps({"id": "a", "text": "in a folder"}) + "\n")
    given = invoke("ingest", "--db", tmp_path / "o.db", "--dir", f"toy={folder}", "--json")
    assert (given.exit_code, given.stderr, json.loads(given.stdout)["warnings"]) == (0, "", [])


# -- attune --memory-root -------------------------------------------------------------------------


REMEMBER = 'return remember({"path": "%s", "summary": "A note"})["path"]'


def test_a_memory_root_that_is_not_a_folder_is_a_usage_error(tmp_path):
    afile = tmp_path / "n.md"
    afile.write_text("# n\n")
    db = tmp_path / "nope.db"  # usage errors come first: the database is not looked at
    for path, why in ((tmp_path / "notes", "does not exist"), (afile, "is not a folder")):
        result = invoke("attune", "--db", db, "--memory-root", path, "-c", REMEMBER % afile)
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr.endswith(f"\n{USAGE}--memory-root {path} {why}\n")
        as_json = invoke("attune", "--db", db, "--memory-root", path, "-c", REMEMBER % afile, "--json")
        error = json_error("OBELISK_INVALID_ARGUMENT", f"--memory-root {path} {why}")
        assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, error)
    assert not (tmp_path / "notes").exists()  # refused, never created


def test_memory_roots_from_the_environment_may_be_missing_but_not_files(tmp_path, monkeypatch):
    db = claude_db(tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "n.md").write_text("# n\n")
    monkeypatch.setenv("OBELISK_MEMORY_ROOTS", f"{tmp_path / 'elsewhere'}:{notes}")
    result = invoke("attune", "--db", db, "-c", REMEMBER % (notes / "n.md"))
    assert (result.exit_code, json.loads(result.stdout)) == (0, str(notes.resolve() / "n.md"))
    monkeypatch.setenv("OBELISK_MEMORY_ROOTS", f"{notes / 'n.md'}:{notes}")
    refused = invoke("attune", "--db", db, "-c", REMEMBER % (notes / "n.md"), "--json")
    error = json_error("OBELISK_INVALID_ARGUMENT", f"$OBELISK_MEMORY_ROOTS {notes / 'n.md'} is not a folder")
    assert (refused.exit_code, json.loads(refused.stdout)) == (2, error)


# -- search with no text ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\t\n"])
@pytest.mark.parametrize("mode", ["fts", "terms", "phrase", "raw"])
def test_search_without_text_is_a_usage_error(tmp_path, text, mode):
    db = claude_db(tmp_path)
    result = invoke("search", text, "--mode", mode, "--db", db)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", usage_error("search", EMPTY_SEARCH))
    as_json = invoke("search", text, "--mode", mode, "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", EMPTY_SEARCH))


@pytest.mark.parametrize("text, message", [
    ('a"b', "invalid FTS5 query 'a\"b': unterminated string"),
    ("AND (", "invalid FTS5 query 'AND (': fts5: syntax error near \"AND\""),
])
def test_a_raw_search_fts5_rejects_is_a_usage_error_with_the_code_search_gives_everywhere(tmp_path, text, message):
    db = claude_db(tmp_path)
    result = invoke("search", text, "--mode", "raw", "--db", db)
    shown = usage_error("search", message).replace(USAGE, "Error: SESSION_QUERY_INVALID_QUERY: ")
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", shown)
    as_json = invoke("search", text, "--mode", "raw", "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("SESSION_QUERY_INVALID_QUERY", message))


def test_search_mode_is_read_in_any_case_as_over_http(tmp_path):
    db = claude_db(tmp_path)
    upper = invoke("search", "hello world", "--mode", "PHRASE", "--db", db, "--json")
    lower = invoke("search", "hello world", "--mode", "phrase", "--db", db, "--json")
    assert (upper.exit_code, upper.stdout) == (lower.exit_code, lower.stdout)
    assert lower.exit_code == 0


def test_search_text_over_the_cap_is_a_usage_error_too(tmp_path):
    db = claude_db(tmp_path)
    message = "search() takes at most 1,000 characters of query text, not 1,001"
    result = invoke("search", "x" * 1001, "--db", db)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", usage_error("search", message))


@pytest.mark.parametrize("text, message", [  # (the messages and code of /-/obelisk/api/prompts?query=)
    ("", "a search needs a query: the text is blank"),
    (" \t", "a search needs a query: the text is blank"),
    ("x" * 1001, "the query is longer than 1000 characters"),
])
def test_prompts_query_text_that_cannot_be_searched_is_a_usage_error_as_search_s(tmp_path, text, message):
    db = claude_db(tmp_path)
    result = invoke("prompts", text, "--db", db)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.endswith(f"{USAGE}{message}\n")
    as_json = invoke("prompts", text, "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))


def test_search_without_text_is_the_same_error_in_python_and_in_scripts(tmp_path):
    db = claude_db(tmp_path)
    conn = connect_readonly(db)
    for text in ("", " \n"):
        with pytest.raises(QueryError) as error:
            obelisk.search(conn, text)
        assert (error.value.code, error.value.message) == ("OBELISK_INVALID_ARGUMENT", EMPTY_SEARCH)
    assert [hit["message"]["uuid"] for hit in obelisk.search(conn, " hello ")] == ["u1"]
    conn.close()
    # In a script the error is the script's (exit 1), as any helper error there.
    script = invoke("query", "--db", db, "-c", 'return search("  ")')
    assert (script.exit_code, json.loads(script.stdout)) == (1, json_error("OBELISK_INVALID_ARGUMENT", EMPTY_SEARCH))


@pytest.mark.asyncio
async def test_search_endpoint_answers_400_without_text(tmp_path):
    from web_fixtures import make_datasette

    ds = make_datasette(claude_db(tmp_path))
    await ds.invoke_startup()
    for q, message in (("", "missing required parameter 'q'"), ("   ", EMPTY_SEARCH)):
        response = await ds.client.get("/-/obelisk/api/search", params={"q": q})
        assert (response.status_code, response.json()) == (400, json_error("OBELISK_INVALID_ARGUMENT", message))
    found = await ds.client.get("/-/obelisk/api/search", params={"q": "hello"})
    assert [hit["message"]["uuid"] for hit in found.json()] == ["u1"]


def test_a_helper_argument_error_from_read_options_is_a_usage_error(tmp_path):
    db = claude_db(tmp_path)
    message = "sessions(): after must be an ISO 8601 date or time, such as 2025-06-14 or 2025-06-14T11:01:31Z, not 'soon'"
    result = invoke("sessions", "--after", "soon", "--db", db)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", usage_error("sessions", message))
    as_json = invoke("sessions", "--after", "soon", "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))


@pytest.mark.parametrize(
    "command, message",
    [
        (["read", "s1", "--offset", str(2**63)], "thread(): offset is too large"),
        (["search", "hello", "--project", "x" * 60_000], "search(): project is longer than 10,000 characters"),
    ],
)
def test_a_value_sqlite_cannot_take_is_a_usage_error(tmp_path, command, message):
    db = claude_db(tmp_path)
    result = invoke(*command, "--db", db)
    assert (result.exit_code, result.stdout) == (2, "") and result.stderr.endswith(f"\n{USAGE}{message}\n")
    as_json = invoke(*command, "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))


def test_an_unknown_session_has_nothing_as_in_python_and_names_the_stored_id_it_may_mean(tmp_path):
    logs = tmp_path / ".codex" / "sessions" / "2026" / "01" / "02"
    logs.mkdir(parents=True)
    thread = "77777777-7777-4777-8777-777777777777"
    (logs / f"rollout-2026-01-02T00-00-00-{thread}.jsonl").write_text(
        json.dumps({"timestamp": "2026-01-02T00:00:00Z", "type": "session_meta", "payload": {"id": thread}}) + "\n"
        + json.dumps({"timestamp": "2026-01-02T00:00:01Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}}) + "\n"
    )
    db = tmp_path / "o.db"
    run_ingest(db, {"codex": tmp_path / ".codex"})
    note = f"Note: no session {thread!r} (did you mean 'codex:{thread}'?)\n"
    conn = connect_readonly(db)
    python = {  # what the helpers answer: nothing, no error
        "read": obelisk.thread(conn, thread),
        "search": obelisk.search(conn, "hello", {"sessionId": thread}),
        "failures": obelisk.failures(conn, {"sessionId": thread}),
        "files": obelisk.file_history(conn, "/x.py", {"sessionId": thread}),
    }
    conn.close()
    assert set(map(json.dumps, python.values())) == {"[]"}
    for command, args in [("read", [thread]), ("search", ["hello", "--session", thread]),
                          ("failures", ["--session", thread]), ("files", ["/x.py", "--session", thread])]:
        as_json = CliRunner().invoke(cli, [command, *args, "--db", str(db), "--json"])
        assert (as_json.exit_code, json.loads(as_json.stdout), as_json.stderr) == (0, python[command], note), command
        text = CliRunner().invoke(cli, [command, *args, "--db", str(db)])
        assert (text.exit_code, text.stderr) == (0, note), command
    assert CliRunner().invoke(cli, ["read", "7777", "--db", str(db)]).output == "Note: no session '7777'\nNo messages.\n"


def test_a_session_id_cut_short_is_not_matched_but_the_ids_it_begins_are_named(tmp_path):
    db = claude_db(tmp_path)  # session s1
    project = tmp_path / "agent" / "projects" / "-w"
    for sid in ("0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f", "0a1b2c3d-9999-4061-8071-2a3b4c5d6e7f"):
        line = {"type": "user", "uuid": f"u-{sid}", "sessionId": sid, "timestamp": "2026-01-01T00:00:00Z",
                "message": {"role": "user", "content": "hello again"}}
        (project / f"{sid}.jsonl").write_text(json.dumps(line) + "\n")
    run_ingest(db, {"claude": tmp_path / "agent"})
    both = "'0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f' or '0a1b2c3d-9999-4061-8071-2a3b4c5d6e7f'"
    for short, meant in [("0a1b2c3d", both), ("0a1b2c3d-4e5f", "'0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f'")]:
        result = invoke("read", short, "--db", db, "--json")  # never read as the session it may mean
        assert (result.exit_code, json.loads(result.stdout)) == (0, [])
        assert result.stderr == f"Note: no session {short!r} (did you mean {meant}?)\n"
    assert invoke("read", "0a1b2", "--db", db).stderr == "Note: no session '0a1b2'\n"  # (too short to name any)
    # An id longer than any LIKE pattern SQLite takes (50,000 bytes) is looked for all the same.
    long = CliRunner().invoke(cli, ["read", "%" * 30_000, "--db", str(db)])
    assert (long.exit_code, long.stderr) == (0, f"Note: no session {'%' * 200 + '…'!r}\n")
    # An empty one is a usage error, as in Python.
    assert CliRunner().invoke(cli, ["search", "hello", "--session", "", "--db", str(db)]).exit_code == 2


def test_arguments_that_are_not_utf_8_are_usage_errors(tmp_path):
    # Bytes of a command line that are not UTF-8 reach Python as lone surrogates.
    db = tmp_path / "o.db"
    run_ingest(db, {})
    for args in (["search", "\udcff"], ["sessions", "--project", "x\udcff"], ["read", "\udcffab"],
                 ["query", "-c", "return '\udcff'"], ["attune", "-c", "return '\udcff'"]):
        result = CliRunner().invoke(cli, [*args, "--db", str(db), "--json"])
        assert result.exit_code == 2, result.output
        assert json.loads(result.stdout)["error"]["code"] == "OBELISK_INVALID_ARGUMENT"
        assert "not UTF-8 text" in result.stderr


def test_a_usage_error_before_the_command_is_json_too_with_json():
    result = CliRunner().invoke(cli, ["--bogus", "ingest", "--json"])
    error = json.loads(result.stdout)["error"]  # click's words for it
    assert (result.exit_code, error["code"], "--bogus" in error["message"]) == (2, "OBELISK_INVALID_ARGUMENT", True)


@pytest.mark.parametrize("args", [
    ["search", " "],  # the helper's OBELISK_INVALID_ARGUMENT
    ["sessions", "--limit", "0"],  # click's own refusal of a value
    ["sessions", "--source", "nope"],  # the command's own UsageError
    ["--bogus", "sessions"],  # before any command
])
def test_a_usage_error_names_its_code_on_stderr_as_with_json(tmp_path, args):
    db = claude_db(tmp_path)
    text, as_json = (CliRunner().invoke(cli, [*args, "--db", str(db), *extra]) for extra in ([], ["--json"]))
    error = json.loads(as_json.stdout)["error"]
    assert (text.exit_code, as_json.exit_code, text.stdout) == (2, 2, "")
    assert text.stderr.endswith(f"\nError: {error['code']}: {error['message']}\n")
    assert as_json.stderr == text.stderr


def test_a_command_group_without_arguments_shows_its_help_without_a_code():
    result = CliRunner().invoke(cli, [])
    assert "Usage:" in result.output and "OBELISK_" not in result.output


def test_logs_a_newer_parser_read_are_never_read_again_by_an_older_one(tmp_path):
    from datasette_obelisk.query.live import refresh
    from datasette_obelisk.store.db import open_db

    db = claude_db(tmp_path)
    version = get_sources()["claude"].parser_version
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = ?", [version + 1])
    conn.close()
    result = invoke("ingest", "--db", db, "--claude-dir", tmp_path / "agent")
    message = (f"--db {db} was made by a newer datasette-obelisk (its claude logs were read by claude parser "
               f"{version + 1}; this one has parser {version}): upgrade to write to it")
    assert (result.exit_code, result.stderr) == (2, usage_error("ingest", message))
    log = next((tmp_path / "agent").rglob("*.jsonl"))
    with open(log, "a") as fp:  # a line the page's live refresh would read
        fp.write(json.dumps({"type": "user", "uuid": "u9", "parentUuid": None, "sessionId": log.stem,
                             "timestamp": "2026-03-01T10:09:00.000Z", "message": {"role": "user", "content": "more"}}) + "\n")
    conn = open_db(db)
    assert refresh(conn) == []
    assert conn.execute("SELECT DISTINCT parser_version FROM source_files").fetchall() == [(version + 1,)]
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE uuid = 'u9'").fetchone() == (0,)
    conn.close()


def as_a_user_the_folder_refuses(command: list[str]):
    """``command`` run so that a folder without write permission refuses it (root drops its override)."""
    import os
    import shutil

    if os.geteuid() != 0:
        return command
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is needed to run as root without overriding permissions")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", *command]


@pytest.mark.parametrize("wal_left", [False, True])  # a writer that stopped without closing leaves its -wal
def test_an_archive_in_a_folder_that_cannot_be_written_is_read_as_it_is(tmp_path, wal_left):
    import os
    import shutil
    import sqlite3
    import subprocess
    import sys

    folder = tmp_path / "shared"
    folder.mkdir()
    db = claude_db(tmp_path)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    with writer:
        writer.execute("INSERT INTO obelisk_state (key, value) VALUES ('left', 'in the wal')")
    for suffix in ("", "-wal") if wal_left else ("",):
        shutil.copy(f"{db}{suffix}", folder / f"o.db{suffix}")
    writer.close()
    os.chmod(folder, 0o555)
    try:
        def obelisk(*args):
            command = as_a_user_the_folder_refuses([sys.executable, "-m", "datasette_obelisk", *args])
            return subprocess.run(command, capture_output=True, text=True, timeout=120)

        read = obelisk("sessions", "--db", folder / "o.db", "--json")
        assert (read.returncode, [s["id"] for s in json.loads(read.stdout)]) == (0, ["s1"]), read.stderr
        written = obelisk("ingest", "--db", folder / "o.db", "--claude-dir", tmp_path / "agent")
        assert written.returncode == 2 and f"the folder {folder} cannot be written" in written.stderr
    finally:
        os.chmod(folder, 0o755)


@pytest.mark.parametrize("seconds", ["nan", "inf", "1e10", "0"])
def test_a_time_limit_no_watchdog_can_keep_is_a_usage_error(tmp_path, seconds):
    db = claude_db(tmp_path)
    for command in (["query", "-c", "return 1", "--timeout", seconds], ["attune", "-c", "return 1", "--timeout", seconds],
                    ["ingest", "--watch", "--interval", seconds]):
        result = invoke(*command, "--db", db)
        assert result.exit_code == 2 and f"{USAGE}Invalid value for" in result.stderr, command
    with pytest.raises(QueryError) as error:
        from datasette_obelisk.query.runner import run_script

        run_script("return 1", db, timeout=float(seconds))
    assert error.value.code == "OBELISK_INVALID_ARGUMENT"


def test_a_file_that_cannot_be_written_is_one_error_line(tmp_path):
    db = claude_db(tmp_path)
    assert invoke("publish-config", "--db", db, "-o", "").exit_code == 2
    taken = tmp_path / "taken"
    taken.mkdir()
    assert "is a directory" in invoke("publish-config", "--db", db, "-o", taken).stderr
    assert "Invalid value for '-o' / '--output': it is empty" in invoke("publish-config", "--db", db, "-o", "").stderr
    full = invoke("publish-config", "--db", db, "-o", "/dev/full")
    assert (full.exit_code, full.stderr) == (
        1, "Error: SESSION_QUERY_PERSISTENCE_FAILED: /dev/full: No space left on device\n")


def test_control_characters_from_a_log_reach_a_terminal_as_escapes(tmp_path):
    project = tmp_path / "agent" / "projects" / "-w"
    project.mkdir(parents=True)
    hostile = "colour \x1b[31mred\x1b[0m title \x1b]0;pwned\x07 clip \x1b]52;c;ZWNobw==\x07 \u202eevil\tok\r\nnext \x9b2J\x7f"
    line = {"type": "user", "uuid": "u1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": hostile}}
    (project / "s1.jsonl").write_text(json.dumps(line) + "\n")
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / "agent"})
    shown = "colour \\x1b[31mred\\x1b[0m title \\x1b]0;pwned\\x07 clip \\x1b]52;c;ZWNobw==\\x07 \\u202eevil"
    for command in (["read", "s1"], ["search", "colour"], ["sessions"], ["trace", "u1"]):
        out = invoke(*command, "--db", db).stdout
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, command
        assert shown in out and "\\x0d" not in out, command
    for command in (["read", "s1"], ["search", "colour"], ["sessions"]):
        out = invoke(*command, "--db", db, "--json").stdout
        assert not set(out) & {"\x1b", "\x07", "\u202e", "\x9b", "\x7f"}, command
    assert hostile in json.loads(invoke("read", "s1", "--db", db, "--json").stdout)[0]["text"]  # the same JSON


def alternating_session(tmp_path, count: int):
    """A database of session s1: ``count`` prompts and answers in turn, m01 ("line 1") onwards."""
    project = tmp_path / "agent" / "projects" / "-w"
    project.mkdir(parents=True)
    lines = [{"type": "user" if n % 2 else "assistant", "uuid": f"m{n:02}", "parentUuid": f"m{n - 1:02}" if n > 1 else None,
              "sessionId": "s1", "timestamp": f"2026-01-01T00:00:{n:02}Z",
              "message": {"role": "user" if n % 2 else "assistant", "content": f"line {n}"}} for n in range(1, count + 1)]
    (project / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / "agent"})
    return db


def test_read_gives_a_session_longer_than_one_call_returns_whole(tmp_path, monkeypatch):
    db = alternating_session(tmp_path, 7)
    monkeypatch.setattr(obelisk, "MAX_THREAD", 3)  # one call returns 3 messages at most
    text = invoke("read", "s1", "--db", db)
    assert (text.exit_code, text.stdout.count("\n# "), text.stdout.startswith("# line 1\n")) == (0, 0, True)
    assert len([line for line in text.stdout.splitlines() if line.startswith("[2026-01-01T")]) == 7
    assert [line for line in text.stdout.splitlines() if line.startswith("line ")] == [f"line {n}" for n in range(1, 8)]
    as_json = invoke("read", "s1", "--db", db, "--json")
    assert [m["uuid"] for m in json.loads(as_json.stdout)] == [f"m{n:02}" for n in range(1, 8)]
    page = invoke("read", "s1", "--db", db, "--json", "--limit", "2", "--offset", "5")
    assert [m["uuid"] for m in json.loads(page.stdout)] == ["m06", "m07"]


def test_read_past_the_end_of_a_session_says_so(tmp_path):
    db = alternating_session(tmp_path, 3)
    for args in (["--offset", "3"], ["--offset", "99", "--limit", "2"]):
        result = invoke("read", "s1", "--db", db, *args)
        assert result.exit_code == 0, args
        assert result.stdout.splitlines()[-1] == "No messages past the 3 of this session.", args
    assert json.loads(invoke("read", "s1", "--db", db, "--offset", "3", "--json").stdout) == []


def test_trace_marks_the_history_the_model_no_longer_sees_as_read_does(tmp_path):
    project = tmp_path / "agent" / "projects" / "-w"
    project.mkdir(parents=True)

    def line(uuid, parent, role, text, second):
        return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                "timestamp": f"2026-01-01T00:00:{second:02}Z", "message": {"role": role, "content": text}}

    lines = [line("u1", None, "user", "pick one", 1), line("a1", "u1", "assistant", "which?", 2),
             line("u2", "a1", "user", "the first", 3), line("a2", "u2", "assistant", "done first", 4),
             line("u3", "a1", "user", "no, the second", 5), line("a3", "u3", "assistant", "done second", 6)]
    (project / "s1.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / "agent"})
    heads = [entry for entry in invoke("trace", "a2", "--db", db).stdout.splitlines() if entry[:5].strip()[:1].isdigit()]
    assert [entry.endswith("[rewound away]") for entry in heads] == [False, False, True, True]
    current = [entry for entry in invoke("trace", "a3", "--db", db).stdout.splitlines() if entry[:5].strip()[:1].isdigit()]
    assert not any("away]" in entry for entry in current)


def test_failures_marks_a_failure_on_a_rewound_branch(tmp_path):
    project = tmp_path / "agent" / "projects" / "-w"
    project.mkdir(parents=True)

    def line(uuid, parent, role, content, second):
        return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                "timestamp": f"2026-01-01T00:00:{second:02}Z", "message": {"role": role, "content": content}}

    call = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]
    result = [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "make: *** Error 2"}]
    lines = [line("u1", None, "user", "build it", 1), line("a1", "u1", "assistant", "how?", 2),
             line("u2", "a1", "user", "with make", 3), line("a2", "u2", "assistant", call, 4),
             line("r2", "a2", "user", result, 5),
             line("u3", "a1", "user", "never mind", 6), line("a3", "u3", "assistant", "ok", 7)]
    (project / "s1.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / "agent"})
    first = invoke("failures", "--db", db).stdout.splitlines()[0]
    assert first.startswith("2026-01-01T00:00:05Z  Bash") and first.endswith("[rewound away]"), first


def test_trace_says_when_the_chain_is_longer_than_it_walks(tmp_path, monkeypatch):
    project = tmp_path / "agent" / "projects" / "-w"
    project.mkdir(parents=True)
    lines = [{"type": "user", "uuid": f"m{n}", "parentUuid": f"m{n - 1}" if n > 1 else None, "sessionId": "s1",
              "timestamp": f"2026-01-01T00:00:{n:02}Z", "message": {"role": "user", "content": f"line {n}"}}
             for n in range(1, 6)]
    (project / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / "agent"})
    assert "Note:" not in invoke("trace", "m5", "--db", db).stderr
    monkeypatch.setattr(obelisk, "MAX_CHAIN", 3)
    assert "Note:" not in invoke("trace", "m4", "--db", db).stderr  # 3 above it: the root, reached
    cut = invoke("trace", "m5", "--db", db)
    assert cut.stderr == "Note: the chain has more than 3 ancestors: it starts here, below the conversation's root\n"
    as_json = invoke("trace", "m5", "--db", db, "--json")
    assert (as_json.stderr, [m.get("chain_cut") for m in json.loads(as_json.stdout)]) == (
        cut.stderr, [True, None, None, None])
    assert [line.split()[3] for line in cut.stdout.splitlines() if line.strip()[:2] in ("0.", "1.", "2.", "3.")] == [
        "m2", "m3", "m4", "m5"]


@pytest.mark.parametrize("error, code", [
    (PermissionError(13, "Permission denied", "/x/o.db"), "OBELISK_PERMISSION_DENIED"),
    (OSError(1, "Operation not permitted", "/x/o.db"), "OBELISK_PERMISSION_DENIED"),
    (OSError(36, "File name too long", "/x/o.db"), "OBELISK_NOT_FOUND"),
    (OSError(40, "Too many levels of symbolic links", "/x/o.db"), "OBELISK_NOT_FOUND"),
    (OSError(28, "No space left on device", "/x/o.db"), "SESSION_QUERY_PERSISTENCE_FAILED"),
    (OSError(5, "Input/output error", "/x/o.db"), "SESSION_QUERY_PERSISTENCE_FAILED"),
])
def test_an_error_the_system_gives_is_no_usage_error(tmp_path, monkeypatch, error, code):
    # A file the system will not let this user read is an error of that user's rights
    # (OBELISK_PERMISSION_DENIED), a path naming no file OBELISK_NOT_FOUND, anything else the
    # archive failing to be read (SESSION_QUERY_PERSISTENCE_FAILED): each exits 1 with its
    # code (in JSON with --json), never OBELISK_INVALID_ARGUMENT, a usage error's code (exit 2).
    from datasette_obelisk import cli_query

    db = claude_db(tmp_path)

    def refused(db_path):
        raise error

    monkeypatch.setattr(cli_query, "fresh_connection", refused)
    why = f"/x/o.db: {error.strerror}"
    for command in (["sessions"], ["search", "hello"], ["read", "s1"]):
        shown = invoke(*command, "--db", db, "--json")
        assert shown.exit_code == 1, command
        assert json.loads(shown.stdout) == json_error(code, why), command
        assert shown.stderr == f"Error: {code}: {why}\n", command
    told = invoke("sessions", "--db", db)
    assert (told.exit_code, told.stdout, told.stderr) == (1, "", f"Error: {code}: {why}\n")


def test_a_database_the_system_cannot_read_is_a_failed_archive_not_bad_sql():
    # SQLite's I/O errors (a device that fails a read, a file it cannot open) come from no
    # statement: SESSION_QUERY_PERSISTENCE_FAILED, exit 1, where OBELISK_INVALID_SQL said the SQL was bad.
    unreadable = invoke("search", "hello", "--db", "/proc/self/mem", "--json")
    assert unreadable.exit_code == 1
    assert json.loads(unreadable.stdout) == json_error(
        "SESSION_QUERY_PERSISTENCE_FAILED", "reading or writing the archive failed: disk I/O error")
    told = invoke("search", "hello", "--db", "/proc/self/mem")
    assert (told.exit_code, told.stderr) == (
        1, "Error: SESSION_QUERY_PERSISTENCE_FAILED: reading or writing the archive failed: disk I/O error\n")


@pytest.mark.parametrize("args, named", [
    (["auth"], "QUERY"),
    (["--session", "s1"], "--session"),
    (["--missing"], "--missing"),
    (["auth", "--missing"], "QUERY and --missing"),
])
def test_prompts_orphans_refuses_what_cannot_narrow_it_rather_than_ignore_it(tmp_path, args, named):
    db = claude_db(tmp_path)
    message = f"--orphans lists sessions, not prompts: {named} cannot narrow it (--project, --source and --limit can)"
    result = invoke("prompts", "--orphans", *args, "--db", db, "--json")
    assert (result.exit_code, json.loads(result.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))
    assert result.stderr.endswith(f"{USAGE}{message}\n")
    narrowed = invoke("prompts", "--orphans", "--source", "claude", "--project", "%x%", "--limit", "3", "--db", db)
    assert (narrowed.exit_code, narrowed.stdout) == (0, "No sessions known only from the prompt logs.\n")


# -- a reader that stops reading (| head) ----------------------------------------------------------


def closed_reader(args, env=None):
    """``python -m datasette_obelisk ARGS`` writing into a pipe nobody reads any more: (status, stderr)."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # (as `| head` has once it read its line: every write is EPIPE)
    try:
        done = subprocess.run([sys.executable, "-m", "datasette_obelisk", *map(str, args)], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=env)
    finally:
        os.close(write_end)
    return done.returncode, done.stderr


@pytest.mark.parametrize("command", [
    ["search", "hello"], ["search", "hello", "--json"], ["sessions"], ["sessions", "--json"], ["read", "s1"],
    ["read", "s1", "--json"], ["trace", "u1"], ["failures", "--json"], ["files", "/w/a.py", "--json"], ["prompts", "--json"],
    ["query", "-c", "return 1"], ["redact", "--check"], ["publish-config"],
])
def test_every_command_ends_quietly_with_141_when_its_reader_is_gone(tmp_path, command):
    db = claude_db(tmp_path)
    assert closed_reader([*command, "--db", db]) == (141, "")


@pytest.mark.parametrize("args", [["--help"], ["sessions", "--help"], ["--version"], ["sources", "--json"]])
def test_help_and_listings_end_quietly_with_141_when_the_reader_is_gone(args):
    assert closed_reader(args) == (141, "")


def test_ingest_ends_quietly_with_141_when_its_reader_is_gone(tmp_path):
    db = claude_db(tmp_path)
    assert closed_reader(["ingest", "--db", db, "--claude-dir", tmp_path / "agent", "--json"]) == (141, "")


# -- an option given empty -------------------------------------------------------------------------


EMPTY_OPTIONS = [
    (["sessions"], "--project"), (["sessions"], "--branch"), (["sessions"], "--after"), (["sessions"], "--source"),
    (["search", "hello"], "--session"), (["search", "hello"], "--cwd"), (["search", "hello"], "--before"),
    (["failures"], "--session"), (["files", "/w/a.py"], "--session"), (["prompts"], "--session"),
    (["prompts"], "--project"), (["prompts"], "--source"), (["read", "s1"], "--after-uuid"), (["ingest"], "--source"),
]


@pytest.mark.parametrize("command, option", EMPTY_OPTIONS)
@pytest.mark.parametrize("value, what", [
    ("", "it is empty"), ("  ", "it is only whitespace (spaces)"), ("\t\n", "it is only whitespace (tabs, newlines)"),
])
def test_an_option_given_empty_is_a_usage_error_not_a_filter_matching_nothing(tmp_path, command, option, value, what):
    db = claude_db(tmp_path)
    message = f"Invalid value for '{option}': {what}: give a value, or leave the option out"
    result = invoke(*command, option, value, "--db", db)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.endswith(f"\n{USAGE}{message}\n")
    as_json = invoke(*command, option, value, "--db", db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (2, json_error("OBELISK_INVALID_ARGUMENT", message))


@pytest.mark.parametrize("command, option", [
    (["sessions"], "--db"), (["ingest"], "--db"), (["ingest"], "--claude-dir"), (["ingest"], "--codex-dir"),
    (["up", "--no-serve"], "--gemini-dir"), (["up", "--no-serve"], "--demo-dir"), (["publish-config"], "--output"),
    (["attune", "-c", "return 1"], "--memory-root"),
])
def test_a_path_option_given_empty_is_a_usage_error_not_the_current_folder(tmp_path, monkeypatch, command, option):
    monkeypatch.chdir(tmp_path)
    result = invoke(*command, option, "")
    hint = "'-o' / '--output'" if option == "--output" else f"'{option}'" + (" (env var: 'OBELISK_DB')" if option == "--db" else "")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.endswith(f"\n{USAGE}Invalid value for {hint}: it is empty: give a path, or leave the option out\n")
    assert list(tmp_path.iterdir()) == []  # nothing read, nor written, in the current folder
