"""How the CLI refuses what it cannot do: exit codes, messages and JSON error objects.

Exit 1 with a code (OBELISK_NOT_FOUND...) for a query error, exit 2 for a usage
error (with --json also ``{"ok": false, "error": {"code": "OBELISK_INVALID_ARGUMENT", ...}}``).
"""

import json
import sqlite3

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.store.ingest import ingest as run_ingest

def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def usage_error(command: str, message: str) -> str:
    return f"Usage: cli {command} [OPTIONS]{' TEXT' if command == 'search' else ''}\n" \
           f"Try 'cli {command} --help' for help.\n\nError: {message}\n"


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
    message = f"{other} is not an obelisk database (run `obelisk ingest` into it first)"
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", f"Error: OBELISK_NOT_FOUND: {message}\n")


def test_publish_config_checks_its_output_folder_before_the_database(tmp_path):
    result = invoke("publish-config", "--db", tmp_path / "nope.db", "-o", tmp_path / "no" / "p.yaml")
    assert result.exit_code == 2
    assert result.stderr.endswith(f"Error: --output {tmp_path / 'no' / 'p.yaml'}: the folder {tmp_path / 'no'} does not exist\n")
