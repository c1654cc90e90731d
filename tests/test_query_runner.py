"""obelisk query / attune: the sandbox, read-only SQL, the timeout, and the CLI commands."""

import json
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.query import obelisk as o
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.query.session_query import SessionQuery
from datasette_obelisk.query.history import History
from datasette_obelisk.query.runner import ATTUNE_GLOBALS, CONTRACT_GLOBALS, QUERY_GLOBALS, compile_script, execute_script, run_script
from helper_fixtures import corpus_db, table_counts  # noqa: F401 (fixtures)

SLOW_SQL = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r"


def error_of(code, db, **options) -> QueryError:
    with pytest.raises(QueryError) as error:
        run_script(code, db, **options)
    return error.value


# -- scripts ---------------------------------------------------------------------


def test_a_script_is_a_function_body():
    assert execute_script("x = 2\nreturn x * 21", {}) == 42
    assert execute_script("pass", {}) is None
    assert execute_script("", {}) is None
    assert execute_script("def f(n):\n    return [n] * n\nreturn f(2)", {}) == [2, 2]


def test_syntax_errors_name_the_line():
    with pytest.raises(QueryError) as error:
        compile_script("x = 1\nreturn (")
    assert error.value.code == "OBELISK_SCRIPT_ERROR" and "(line 2)" in error.value.message


def test_query_scripts_see_exactly_the_read_helpers(corpus_db):
    names = run_script("return sorted(k for k in globals() if not k.startswith('__'))", corpus_db)
    assert names == sorted([*QUERY_GLOBALS, *CONTRACT_GLOBALS, "QueryError", "script"])
    assert set(QUERY_GLOBALS) == set(o.HELPERS)


def test_attune_scripts_see_only_remember_and_forget(corpus_db):
    names = run_script("return sorted(k for k in globals() if not k.startswith('__'))", corpus_db, mode="attune")
    assert names == sorted([*ATTUNE_GLOBALS, "QueryError", "script"])
    assert error_of("return sql('SELECT 1')", corpus_db, mode="attune").message == "NameError: name 'sql' is not defined (line 1)"


def test_helpers_run_inside_scripts(corpus_db):
    with connect_readonly(corpus_db) as conn:
        expected = o.search(conn, "goodbye", {"source": "claude"})
    assert run_script('return search("goodbye", {"source": "claude"})', corpus_db) == json.loads(json.dumps(expected))
    assert run_script('return [m["uuid"] for m in trace("p1a")]', corpus_db) == ["cb", "cs", "b2a2", "p1u", "p1a"]
    assert run_script('return fileHistory("/project/hello.py")[0]["toolCall"]["name"]', corpus_db) == "Write"
    assert run_script('return workflowTree("nope")', corpus_db) is None


def test_scripts_reach_the_history_and_session_query_contracts(corpus_db):
    conn = connect_readonly(corpus_db)
    expected = {
        "history": History(conn).search({"query": "goodbye"}),
        "read": History(conn).read({"sessionId": "sample_session", "limit": 3}),
        "sessions": SessionQuery(conn).search_sessions({"query": "goodbye", "limit": 2}),
    }
    conn.close()
    got = run_script(
        'return {"history": history.search({"query": "goodbye"}), '
        '"read": history.read({"sessionId": "sample_session", "limit": 3}), '
        '"sessions": session_query.search_sessions({"query": "goodbye", "limit": 2})}',
        corpus_db,
    )
    assert got == json.loads(json.dumps(expected))
    assert [s["sessionId"] for s in got["history"]["sessions"]] == ["sample_session"]
    assert len(got["read"]["entries"]) == 3


def test_helper_errors_keep_their_code(corpus_db):
    error = error_of('return search("x", {"sesionId": "s"})', corpus_db)
    assert error.code == "OBELISK_INVALID_ARGUMENT"


def test_script_errors_name_the_line(corpus_db):
    error = error_of("x = 1\ny = {}\nreturn y['missing']", corpus_db)
    assert (error.code, error.message) == ("OBELISK_SCRIPT_ERROR", "KeyError: 'missing' (line 3)")


@pytest.mark.parametrize(
    "code",
    ["import os", "import sqlite3", "from pathlib import Path", "return open('/etc/hostname').read()", "return eval('1')", "exec('x=1')", "__import__('os')"],
)
def test_scripts_cannot_reach_the_filesystem_by_accident(corpus_db, code):
    assert error_of(code, corpus_db).code == "OBELISK_SCRIPT_ERROR"


def test_pure_modules_can_be_imported(corpus_db):
    code = "import json, re, math, statistics\nfrom collections import Counter\nimport datetime\n" \
           "return [Counter('aab')['a'], math.floor(2.5), statistics.mean([1, 3]), datetime.datetime.strptime('2026', '%Y').year]"
    assert run_script(code, corpus_db) == [2, 2, 2, 2026]


def test_results_become_json(corpus_db):
    assert run_script("return {'s': {3, 1}, 't': (1, 2), 'b': b'hi'}", corpus_db) == {
        "s": [1, 3], "t": [1, 2], "b": {"$base64": True, "encoded": "aGk="},
    }
    assert error_of("return object()", corpus_db).code == "OBELISK_SCRIPT_ERROR"
    assert "not JSON" in error_of("return float('nan')", corpus_db).message


# -- read-only ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO memories (id, path, summary, created_at) VALUES ('m', '/x', 'x', 'now')",
        "UPDATE sessions SET title = 'x'",
        "DELETE FROM messages",
        "REPLACE INTO obelisk_state VALUES ('k', 'v')",
        "WITH x AS (SELECT 1) INSERT INTO obelisk_state SELECT 'k', 'v' FROM x",
        "CREATE TABLE evil (x)",
        "CREATE TEMP TABLE evil (x)",
        "CREATE INDEX evil ON messages (text)",
        "CREATE VIEW evil AS SELECT 1",
        "CREATE TRIGGER evil AFTER INSERT ON messages BEGIN SELECT 1; END",
        "DROP TABLE messages",
        "ALTER TABLE messages ADD COLUMN evil",
        "ATTACH DATABASE ':memory:' AS evil",
        "ATTACH DATABASE '/tmp/obelisk-evil.db' AS evil",
        "DETACH DATABASE main",
        "PRAGMA user_version = 7",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA writable_schema = ON",
        "PRAGMA query_only = 0",
        "VACUUM",
        "VACUUM INTO '/tmp/obelisk-evil-copy.db'",
        "REINDEX",
        "ANALYZE",
        "BEGIN IMMEDIATE",
        "SAVEPOINT evil",
        "INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')",
        "SELECT load_extension('evil')",
    ],
)
def test_sql_cannot_write(corpus_db, statement):
    before = table_counts(corpus_db)
    error = error_of(f"return sql({statement!r})", corpus_db)
    assert error.code == "OBELISK_READ_ONLY", error.message
    assert table_counts(corpus_db) == before
    assert not Path("/tmp/obelisk-evil-copy.db").exists() and not Path("/tmp/obelisk-evil.db").exists()


def test_reading_pragmas_are_allowed(corpus_db):
    assert run_script("return sql('PRAGMA table_info(memories)')[1]['name']", corpus_db) == "id"
    assert run_script("return sql('SELECT name FROM pragma_table_info(?) LIMIT 1', 'sessions')", corpus_db) == [{"name": "id"}]
    assert run_script("return sql('PRAGMA user_version')", corpus_db) == [{"user_version": 0}]


def test_multiple_statements_are_refused(corpus_db):
    for statement in ("SELECT 1; DELETE FROM messages", "SELECT 1; SELECT 2", "SELECT 1; ;"):
        assert error_of(f"return sql({statement!r})", corpus_db).code == "OBELISK_INVALID_SQL"


def test_a_binding_mismatch_after_a_failed_statement_is_reported_as_such(corpus_db):
    code = "sql('select ? a', 1)\ntry:\n    sql('SELEKT 1')\nexcept QueryError:\n    pass\nreturn sql('select ? a', [1, 2])"
    error = error_of(code, corpus_db)
    assert (error.code, error.message) == (
        "OBELISK_INVALID_SQL", "Incorrect number of bindings supplied. The current statement uses 1, and there are 2 supplied."
    )
    assert run_script("return sql('select ? a, ? b', [1, 2])", corpus_db) == [{"a": 1, "b": 2}]


def test_a_script_that_swallows_errors_still_cannot_write(corpus_db):
    before = table_counts(corpus_db)
    code = "out = []\nfor s in ['DELETE FROM messages', 'DROP TABLE sessions']:\n" \
           "    try:\n        sql(s)\n    except QueryError as e:\n        out.append(e.code)\nreturn out"
    assert run_script(code, corpus_db) == ["OBELISK_READ_ONLY", "OBELISK_READ_ONLY"]
    assert table_counts(corpus_db) == before


def landlock_works() -> bool:
    """Whether the kernel lets a process forbid itself file writes (checked in a child)."""
    import multiprocessing

    from datasette_obelisk.query.no_writes import forbid_file_writes

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(forbid_file_writes)


# Python cannot hide the connection from a script: this one climbs out of its
# own frame into the runner's globals, the way a hostile script would.
ESCAPE = """
try:
    raise ValueError
except ValueError as exc:
    runner = exc.__traceback__.tb_frame.f_back.f_globals
os, sqlite3 = runner["os"], runner["sqlite3"]
tried = []
try:
    conn = sqlite3.connect(DB)
    conn.execute("UPDATE sessions SET title = 'changed'")
    conn.commit()
    tried.append("database written")
except sqlite3.Error as exc:
    tried.append("database: " + str(exc))
try:
    os.close(os.open(DB + ".new", os.O_CREAT | os.O_WRONLY))
    tried.append("file created")
except OSError as exc:
    tried.append("file: " + exc.strerror)
return tried
"""


@pytest.mark.skipif(not landlock_works(), reason="Linux Landlock is not available here")
@pytest.mark.parametrize("mode", ["query", "attune"])
def test_a_script_that_escapes_the_guard_rails_still_cannot_write(corpus_db, tmp_path, mode):
    # An attune script's remember / forget are made by the parent: its own process may write nothing either.
    db = tmp_path / "copy.db"
    db.write_bytes(Path(corpus_db).read_bytes())
    before = table_counts(db)
    assert run_script(ESCAPE.replace("DB", repr(str(db))), db, mode=mode) == [
        "database: attempt to write a readonly database",
        "file: Permission denied",
    ]
    assert table_counts(db) == before
    assert not Path(f"{db}.new").exists()


# -- the timeout ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        f"return sql({SLOW_SQL!r})",
        "while True:\n    pass",
        "x = 0\nwhile True:\n    try:\n        x += 1\n    except BaseException:\n        pass",
        f"while True:\n    try:\n        sql({SLOW_SQL!r})\n    except QueryError:\n        pass",
        "return sum(range(10 ** 12))",
    ],
    ids=["slow sql", "python loop", "loop that swallows exceptions", "sql retried forever", "long C call"],
)
def test_the_timeout_stops_everything(corpus_db, code):
    started = time.monotonic()
    error = error_of(code, corpus_db, timeout=1)
    elapsed = time.monotonic() - started
    assert error.code == "OBELISK_TIMEOUT"
    assert 0.9 < elapsed < 3


def test_scripts_also_run_in_a_spawned_process(corpus_db, monkeypatch):
    from datasette_obelisk.query import runner

    monkeypatch.setattr(runner, "start_method", lambda: "spawn")
    assert run_script('return [m["uuid"] for m in trace("p1a")]', corpus_db) == ["cb", "cs", "b2a2", "p1u", "p1a"]
    started = time.monotonic()
    assert error_of("while True: pass", corpus_db, timeout=2).code == "OBELISK_TIMEOUT"
    assert time.monotonic() - started < 4


def test_a_returned_lone_surrogate_is_a_script_error(corpus_db):
    error = error_of('return {"text": "\\udcff"}', corpus_db)
    assert (error.code, error.message) == (
        "OBELISK_SCRIPT_ERROR", "the returned value holds a lone surrogate, which UTF-8 cannot hold")


def test_timeout_must_be_positive(corpus_db):
    assert error_of("return 1", corpus_db, timeout=0).code == "OBELISK_INVALID_ARGUMENT"


def test_a_missing_database_is_reported(tmp_path):
    error = error_of("return 1", tmp_path / "nope.db")
    assert error.code == "OBELISK_NOT_FOUND" and "nope.db" in error.message
    assert error_of("return 1", tmp_path / "nope.db", mode="attune").code == "OBELISK_NOT_FOUND"
    assert not (tmp_path / "nope.db").exists()


@pytest.mark.parametrize("mode", ["query", "attune"])
def test_a_file_that_is_no_obelisk_database_is_refused_and_left_as_it_was(tmp_path, mode):
    empty, other, text = tmp_path / "empty.db", tmp_path / "other.db", tmp_path / "notes.txt"
    empty.touch()
    sqlite3.connect(other).execute("CREATE TABLE sessions (x)").connection.close()
    text.write_text("not a database\n")
    before = {path: path.read_bytes() for path in (empty, other, text)}
    for path in before:
        error = error_of("return 1", path, mode=mode)
        assert error.code == "OBELISK_NOT_FOUND" and str(path) in error.message, error.message
    assert {path: path.read_bytes() for path in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db", "notes.txt", "other.db"]  # no -wal, no -shm


# -- attune ------------------------------------------------------------------------------


@pytest.fixture
def notes_db(tmp_path, corpus_db):
    import shutil

    db = tmp_path / "copy.db"
    shutil.copy(corpus_db, db)
    root = tmp_path / "notes"
    root.mkdir()
    (root / "note.md").write_text("# note\n")
    return db, root


def test_attune_writes_memories(notes_db):
    db, root = notes_db
    memory = run_script('return remember({"path": "note.md", "summary": "A note"})', db, mode="attune", memory_roots=[root], cwd=str(root))
    assert memory["path"] == str(root.resolve() / "note.md")
    assert run_script("return [m['id'] for m in memories()]", db) == [memory["id"]]
    refused = error_of('return remember({"path": "/etc/hostname", "summary": "x"})', db, mode="attune", memory_roots=[root])
    assert refused.code == "OBELISK_MEMORY_REFUSED"
    archived = run_script(f'return forget({{"id": "{memory["id"]}", "reason": "test"}})', db, mode="attune")
    assert archived["deleted_reason"] == "test"
    assert run_script("return memories()", db) == []


REMEMBER = 'return remember({"path": "note.md", "summary": "A note"})'


def test_a_remember_waiting_for_a_lock_keeps_the_time_limit(notes_db):
    db, root = notes_db
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the database
    try:
        started = time.monotonic()
        error = error_of(REMEMBER, db, mode="attune", memory_roots=[root], cwd=str(root), timeout=2)
        assert error.code == "OBELISK_TIMEOUT" and time.monotonic() - started < 4
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run_script(REMEMBER, db, mode="attune", memory_roots=[root], cwd=str(root))["path"].endswith("note.md")


@pytest.mark.parametrize("sent", [b"not json", b"\xff\xfe", b"5", b"[]", b'{"ok": true}', b'{"ok": false, "error": 1}',
                                  b'{"ok": false, "error": {"code": "NOPE", "message": "x"}}', b"[" * 100_000])
def test_whatever_a_script_sends_its_parent_is_no_crash(notes_db, sent):
    db, root = notes_db
    channel = "remember.__closure__[0].cell_contents"  # the pipe to the parent, as a hostile script finds it
    error = error_of(f"{channel}.send_bytes({sent!r})\nreturn 1", db, mode="attune", memory_roots=[root])
    assert (error.code, error.message) == ("OBELISK_SCRIPT_ERROR", "the script process sent something that is no result")
    forged = f'import json\n{channel}.send_bytes(b\'{{"call": "drop"}}\')\nreturn json.loads({channel}.recv_bytes())'
    assert run_script(forged, db, mode="attune") == {  # only remember and forget are made
        "ok": False, "error": {"code": "OBELISK_SCRIPT_ERROR", "message": "no helper 'drop' to call"}}


def test_a_database_that_cannot_be_written_is_refused_with_a_code(notes_db, monkeypatch):
    from datasette_obelisk.query import runner

    db, root = notes_db

    def read_only(path):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(runner, "connect_for_memories", read_only)
    error = error_of(REMEMBER, db, mode="attune", memory_roots=[root])
    assert (error.code, error.message) == ("OBELISK_READ_ONLY", f"{db} cannot be written: attempt to write a readonly database")


# -- the CLI ------------------------------------------------------------------------------


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env, catch_exceptions=False)


@pytest.fixture
def helpers_of(corpus_db):
    conn = connect_readonly(corpus_db)
    yield lambda name, *args: json.loads(json.dumps(o.HELPERS[name](conn, *args), default=str))
    conn.close()


@pytest.mark.parametrize(
    "args, helper, helper_args",
    [
        (["search", "goodbye", "--source", "claude"], "search", ("goodbye", {"source": "claude"})),
        (["search", "hello", "--limit", "3", "--project", "simonw%"], "search", ("hello", {"limit": 3, "project": "simonw%"})),
        (["search", "goodbye OR hello"], "search", ("goodbye OR hello",)),
        (["search", "todo-app"], "search", ("todo-app",)),
        (["search", "goodbye OR hello", "--mode", "terms"], "search", ("goodbye OR hello", {"mode": "terms"})),
        (["search", "goodbye function", "--mode", "phrase", "--session", "sample_session"], "search", ("goodbye function", {"sessionId": "sample_session", "mode": "phrase"})),
        (["search", "Caveat", "--include-meta", "--session", "edge_cases"], "search", ("Caveat", {"includeMeta": True, "sessionId": "edge_cases"})),
        (["search", "hello", "--cwd", "/project%"], "search", ("hello", {"cwd": "/project%"})),
        (["sessions", "--source", "all", "--limit", "3"], "sessions", ({"limit": 3},)),
        (["read", "sample_session"], "thread", ("sample_session",)),
        (["read", "edge_cases", "--include-meta", "--limit", "3", "--offset", "1"], "thread", ("edge_cases", {"includeMeta": True, "limit": 3, "offset": 1})),
        (["trace", "p1a"], "trace", ("p1a",)),
        (["sessions"], "sessions", ()),
        (["sessions", "--project", "daaain%", "--limit", "2"], "sessions", ({"project": "daaain%", "limit": 2},)),
        (["failures", "--session", "edge_cases"], "failures", ({"sessionId": "edge_cases"},)),
        (["failures", "--limit", "2", "--source", "claude"], "failures", ({"limit": 2, "source": "claude"},)),
        (["files", "/project/hello.py"], "fileHistory", ("/project/hello.py",)),
        (["files", "/workspace/synthetic-project/gamma.txt", "--source", "codex"], "fileHistory", ("/workspace/synthetic-project/gamma.txt", {"source": "codex"})),
    ],
)
def test_json_output_is_the_helpers_value(corpus_db, helpers_of, args, helper, helper_args):
    result = invoke(*args, "--db", corpus_db, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == helpers_of(helper, *helper_args)


def test_search_prints_readable_text(corpus_db):
    result = invoke("search", "goodbye", "--source", "claude", "--db", corpus_db)
    assert result.exit_code == 0
    assert result.stdout == (
        "1. Create a hello world function  sample_session  [claude] simonw__claude-code-transcripts\n"
        "   2025-12-24T10:01:00.000Z  user  msg-006\n"
        "   Now add a goodbye function\n"
    )
    assert invoke("search", "zzzyxw", "--db", corpus_db).stdout == "No matches.\n"


@pytest.mark.parametrize("args, what", [
    (["sessions", "--source", "claude"], "sessions"), (["failures"], "failures"), (["search", "function"], "matches"),
])
def test_text_output_says_when_the_limit_left_rows_out(corpus_db, args, what):
    total = len(json.loads(invoke(*args, "--limit", "200", "--db", corpus_db, "--json").stdout))
    whole = invoke(*args, "--limit", str(total), "--db", corpus_db).stdout.splitlines()
    cut = invoke(*args, "--limit", str(total - 1), "--db", corpus_db).stdout.splitlines()
    assert cut[-1] == f"({total - 1} shown; there are more {what}: raise --limit or narrow the search)"
    assert len(cut) <= len(whole) and cut[:-1] == whole[: len(cut) - 1] and not whole[-1].startswith("(")
    # JSON holds the rows asked for, and says nothing more
    assert len(json.loads(invoke(*args, "--limit", str(total - 1), "--db", corpus_db, "--json").stdout)) == total - 1


@pytest.mark.parametrize("args, what", [
    (["sessions", "--source", "claude"], "sessions"), (["failures"], "failures"), (["search", "function"], "matches"),
])
def test_json_output_says_on_stderr_when_the_limit_left_rows_out(corpus_db, args, what):
    # As `read` and `files` do: stdout stays the helper's value, stderr tells a script there is more.
    total = len(json.loads(invoke(*args, "--limit", "200", "--db", corpus_db, "--json").stdout))
    cut = invoke(*args, "--limit", str(total - 1), "--db", corpus_db, "--json")
    assert cut.exit_code == 0 and len(json.loads(cut.stdout)) == total - 1
    assert cut.stderr == f"({total - 1} shown; there are more {what}: raise --limit or narrow the search)\n"
    whole = invoke(*args, "--limit", str(total), "--db", corpus_db, "--json")
    assert (len(json.loads(whole.stdout)), whole.stderr) == (total, "")


@pytest.mark.parametrize("args, empty", [
    (["sessions"], "No sessions.\n"), (["failures"], "No failures.\n"), (["search", "sorting"], "No matches.\n"),
    (["files", "/home/testuser/fork-project/quicksort.py"],
     "No tool call touched /home/testuser/fork-project/quicksort.py.\n"),
])
def test_a_project_pattern_no_project_matches_is_said_with_the_projects_holding_it(corpus_db, args, empty):
    # A project's name without its "%" (the corpus's kvsankar__agent-history) is a LIKE pattern that matches none.
    bare = invoke(*args, "--project", "agent-history", "--db", corpus_db)
    assert (bare.exit_code, bare.stdout) == (0, empty)
    assert bare.stderr == ("Note: no project matches 'agent-history' (--project is a SQL LIKE pattern: "
                           "'%agent-history%' matches 'kvsankar__agent-history')\n")
    as_json = invoke(*args, "--project", "agent-history", "--db", corpus_db, "--json")
    assert (json.loads(as_json.stdout), as_json.stderr) == ([], bare.stderr)
    nowhere = invoke(*args, "--project", "no-such-project", "--db", corpus_db)
    assert nowhere.stderr == "Note: no project matches 'no-such-project' (--project is a SQL LIKE pattern)\n"
    assert invoke(*args, "--project", "%agent-history", "--db", corpus_db).stderr == ""


def test_search_text_marks_the_hits_the_model_no_longer_sees(corpus_db):
    # kvsankar's forked session: lines 3-6 (the QuickSort branch, fu2a to fa3a) were rewound for MergeSort.
    found = invoke("search", "quicksort", "--session", "claude_forked_session", "--db", corpus_db).stdout
    assert [line.split()[2:] for line in found.splitlines()[1::3]] == [
        ["fa2a-fork", "[rewound", "away]"], ["fu2a-fork", "[rewound", "away]"], ["fa3a-fork", "[rewound", "away]"],
        ["fa1-fork"],
    ]
    kept = invoke("search", "mergesort", "--session", "claude_forked_session", "--db", corpus_db).stdout
    assert "[rewound away]" not in kept and "[compacted away]" not in kept


def test_search_says_on_stderr_when_an_ingest_has_not_indexed_everything(corpus_db, tmp_path):
    import shutil

    db = tmp_path / "o.db"
    shutil.copy(corpus_db, db)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO obelisk_state (key, value) VALUES ('cold_load', '{\"reload\": true}')")
    conn.commit()
    conn.close()
    result = invoke("search", "goodbye", "--source", "claude", "--db", db, "--json")
    assert result.stderr == (
        "Note: The logs are being read again (a new parser or new redaction rules): searches find nothing "
        "until that ingest ends and indexes every message.\n"
    )
    assert len(json.loads(result.stdout)) == 1  # this copy's index is whole


def test_read_prints_a_transcript(corpus_db):
    result = invoke("read", "sample_session", "--limit", "2", "--db", corpus_db)
    assert result.stdout.startswith(
        "# Create a hello world function\n"
        "sample_session · claude · simonw__claude-code-transcripts · 2025-12-24T10:00:00.000Z → 2025-12-24T10:01:05.000Z\n"
        "\n[2025-12-24T10:00:00.000Z] user:\nCreate a hello world function\n"
        "\n[2025-12-24T10:00:05.000Z] assistant (mixed):\nI'll create that function for you.\n"
    )
    assert result.stdout.endswith("\n\n[messages 1-2 of 7; 5 more: --after-uuid msg-002]\n")
    whole = invoke("read", "sample_session", "--db", corpus_db).stdout
    assert whole.endswith("\n[2025-12-24T10:01:05.000Z] assistant:\nDone! The hello function is ready.\n")
    assert invoke("read", "sample_session", "--offset", "5", "--limit", "2", "--db", corpus_db).stdout.endswith(
        "Done! The hello function is ready.\n"
    )


def test_read_notes_outcomes_and_agents_and_leaves_out_empty_reasoning(corpus_db):
    # ef958aa1's six Agent calls (lines 56-64 and 131-139): only a36efb2a's transcript is in the logs.
    agents = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    text = invoke("read", agents, "--db", corpus_db).stdout
    notes = re.findall(r"\] assistant \(tool_use\) \[agent: ([^\]]+)\]:\n", text)
    assert notes == ["its transcript is not in the logs"] * 3 + [f"{agents}:agent-a36efb2a1231c41e2"] + [
        "its transcript is not in the logs"] * 2
    # Its thinking lines whose text Claude Code did not write (a signature only) are left out.
    empty = [m for m in json.loads(invoke("read", agents, "--db", corpus_db, "--json").stdout)
             if m["content_type"] == "thinking" and not m["text"].strip()]
    assert empty and "(no text)" not in text
    # 2b4ed4c0: six results refused for permission (blocked).
    blocked = invoke("read", "2b4ed4c0-b905-41de-9238-273db3ec737a", "--db", corpus_db).stdout
    assert blocked.count(" [blocked]:\n") == 6 and "[failed]" not in blocked


LONG_THREAD = "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9"  # 1,230 messages (the 8 user items of its 4 context blocks are meta)


def test_read_gives_the_whole_session_and_pages_say_what_remains(corpus_db):
    whole = invoke("read", LONG_THREAD, "--db", corpus_db, "--json")
    assert (len(json.loads(whole.stdout)), whole.stderr) == (1230, "")
    first = invoke("read", LONG_THREAD, "--limit", "1000", "--db", corpus_db, "--json")
    assert json.loads(first.stdout) == json.loads(whole.stdout)[:1000]
    after = json.loads(whole.stdout)[999]["uuid"]
    assert first.stderr == f"\n[messages 1-1000 of 1230; 230 more: --after-uuid {after}]\n"
    last = invoke("read", LONG_THREAD, "--limit", "1000", "--offset", "1000", "--db", corpus_db, "--json")
    assert (json.loads(last.stdout), last.stderr) == (json.loads(whole.stdout)[1000:], "")
    rest = invoke("read", LONG_THREAD, "--limit", "1000", "--after-uuid", after, "--db", corpus_db, "--json")
    assert (rest.stdout, rest.stderr) == (last.stdout, "")


def test_read_over_the_cap_pages_through_the_whole_session(corpus_db, monkeypatch):
    whole = json.loads(invoke("read", LONG_THREAD, "--db", corpus_db, "--json").stdout)
    monkeypatch.setattr(o, "MAX_THREAD", 1000)  # the helper refuses more than one call returns; the command pages
    paged = invoke("read", LONG_THREAD, "--db", corpus_db, "--json")
    assert (paged.exit_code, len(whole), json.loads(paged.stdout)) == (0, 1230, whole)
    with pytest.raises(QueryError) as error:
        o.thread(connect_readonly(corpus_db), LONG_THREAD)
    assert error.value.message.endswith(
        "has 1230 messages, more than the 1000 one call returns: page through it with limit and offset")


def test_trace_files_sessions_and_failures_print_text(corpus_db):
    assert invoke("trace", "msg-007", "--db", corpus_db).stdout == (
        "  0. [2025-12-24T10:01:05.000Z] assistant  msg-007\n     Done! The hello function is ready.\n"
    )
    assert invoke("files", "/project/hello.py", "--db", corpus_db).stdout == (
        "2025-12-24T10:00:05.000Z  Write         succeeded  sample_session  Create a hello world function\n"
    )
    assert invoke("sessions", "--project", "simonw%", "--db", corpus_db).stdout == (
        "2025-12-24T10:01:05.000Z  claude      4 msgs  sample_session  Create a hello world function\n"
    )
    failures = invoke("failures", "--session", "edge_cases", "--db", corpus_db).stdout
    assert failures.startswith("2025-06-14T11:01:31Z  FailingTool  Tested various edge cases")
    # Its input (line 9), its output, and the first of the messages after it.
    assert failures.split("(edge_cases)\n")[1].startswith(
        '   call:   {"test_param":"This tool will fail to demonstrate error handling"}\n'
        "   output: Error: Tool execution failed with error: Command not found\n"
        "   next:   user: <command-name>test-command</command-name>"
    )


def test_files_names_outcomes_narrows_to_a_session_and_says_what_it_left_out(corpus_db, monkeypatch):
    # d-kimuson's log: Read, Edit (failed), Edit (failed), Read, Edit, Read, Edit of page.tsx.
    page = "/path/to/Demo/todo-app/src/app/page.tsx"
    listed = invoke("files", page, "--limit", "4", "--db", corpus_db)
    lines = listed.stdout.splitlines()
    assert [line.split()[1:3] for line in lines[:4]] == [
        ["Read", "succeeded"], ["Edit", "failed"], ["Edit", "failed"], ["Read", "succeeded"]]
    assert lines[4:] == ["", "[calls 1–4 of 7; the next: --offset 4]"]
    as_json = invoke("files", page, "--limit", "4", "--db", corpus_db, "--json")
    assert len(json.loads(as_json.stdout)) == 4 and as_json.stderr == "\n" + lines[4 + 1] + "\n"
    assert invoke("files", page, "--session", "sample_session", "--db", corpus_db).stdout == f"No tool call touched {page}.\n"
    relative = invoke("files", "src/app/page.tsx", "--db", corpus_db).stdout
    assert relative == ("No tool call touched src/app/page.tsx (tool calls name files by absolute path, "
                        f"such as {os.path.abspath('src/app/page.tsx')}).\n")
    home = invoke("files", "~/page.tsx", "--db", corpus_db).stdout
    assert home.endswith(f"such as {os.path.expanduser('~/page.tsx')}).\n")
    assert len(invoke("files", page, "--project", "d-kimuson%", "--db", corpus_db).stdout.splitlines()) == 7
    rest = invoke("files", page, "--limit", "4", "--offset", "4", "--db", corpus_db).stdout.splitlines()
    assert [line.split()[1:3] for line in rest[:3]] == [["Edit", "succeeded"], ["Read", "succeeded"], ["Edit", "succeeded"]]
    assert rest[3:] == ["", "[calls 5–7 of 7]"]
    assert invoke("files", page, "--offset", "7", "--db", corpus_db).stdout == (
        f"No calls past the 7 that touched {page}.\n")


@pytest.mark.parametrize("args, helper, helper_args", [
    (["read", "no-such-session"], "thread", ("no-such-session",)),
    (["trace", "no-such-uuid"], "trace", ("no-such-uuid",)),
    (["search", "hello", "--session", "no-such-session"], "search", ("hello", {"sessionId": "no-such-session"})),
    (["failures", "--session", "no-such-session"], "failures", ({"sessionId": "no-such-session"},)),
    (["files", "/project/hello.py", "--session", "no-such-session"], "fileHistory",
     ("/project/hello.py", {"sessionId": "no-such-session"})),
])
def test_unknown_ids_have_the_helpers_answer_and_a_note(corpus_db, helpers_of, args, helper, helper_args):
    assert helpers_of(helper, *helper_args) == []
    as_json = invoke(*args, "--db", corpus_db, "--json")
    assert (as_json.exit_code, json.loads(as_json.stdout)) == (0, [])
    assert as_json.stderr.startswith("Note: no ") and "no-such-" in as_json.stderr
    result = invoke(*args, "--db", corpus_db)
    assert (result.exit_code, result.stderr) == (0, as_json.stderr)


def test_query_errors_exit_1(corpus_db, tmp_path):
    result = invoke("search", "foo-bar", "--mode", "raw", "--db", corpus_db)  # (the text is an argument: exit 2)
    assert result.exit_code == 2 and "Error: SESSION_QUERY_INVALID_QUERY: invalid FTS5 query 'foo-bar'" in result.stderr
    missing = invoke("sessions", "--db", tmp_path / "nope.db", "--json")
    assert missing.exit_code == 1 and json.loads(missing.stdout)["error"]["code"] == "OBELISK_NOT_FOUND"


@pytest.mark.parametrize("command", [["search", "hello"], ["sessions"], ["read", "s1"], ["failures"], ["trace", "u1"]])
def test_a_database_that_is_something_else_is_refused_not_migrated(tmp_path, command):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE things (id INTEGER)").connection.commit()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    for db, why in ((other, "is not an obelisk database"), (garbage, "is not an SQLite database")):
        before = db.read_bytes()
        result = invoke(*command, "--db", db, "--json")
        error = json.loads(result.stdout)["error"]
        assert result.exit_code == 1 and error["code"] == "OBELISK_NOT_FOUND" and why in error["message"]
        assert db.read_bytes() == before
    result = invoke("redact", "--check", "--db", other)
    assert result.exit_code != 0 and "is not an obelisk database" in result.output
    assert sqlite3.connect(other).execute("SELECT name FROM sqlite_master").fetchall() == [("things",)]
    assert not (tmp_path / "other.db.redaction-key").exists()


@pytest.mark.parametrize("args", [
    ["sessions", "--limit", "0"], ["sessions", "--limit", "abc"], ["sessions", "--bogus"], ["search", "x", "--mode", "fuzzy"],
])
def test_usage_errors_with_json_are_json_too(corpus_db, args):
    result = invoke(*args, "--db", corpus_db, "--json")
    error = json.loads(result.stdout)["error"]
    assert result.exit_code == 2 and error["code"] == "OBELISK_INVALID_ARGUMENT" and error["message"]
    assert "Usage:" in result.stderr or "Error:" in result.stderr


def test_usage_errors_exit_2(corpus_db, tmp_path):
    binary = tmp_path / "script.py"
    binary.write_bytes(b"return 1\n\xff\xfe")
    result = invoke("query", "--db", corpus_db, binary)
    assert result.exit_code == 2 and "is not UTF-8 text" in result.output
    assert invoke("search", "x", "--mode", "fuzzy", "--db", corpus_db).exit_code == 2
    assert invoke("query", "--db", corpus_db).exit_code == 2
    assert invoke("sessions", "--limit", "0", "--db", corpus_db).exit_code == 2


def test_query_command(corpus_db, tmp_path):
    result = invoke("query", "--db", corpus_db, "-c", 'return [m["uuid"] for m in trace("p1a")]')
    assert result.exit_code == 0 and json.loads(result.stdout) == ["cb", "cs", "b2a2", "p1u", "p1a"]
    script = tmp_path / "script.py"
    script.write_text('print("to stderr, not into the JSON")\nreturn recent(1)[0]["id"]\n')
    from_file = invoke("query", script, "--db", corpus_db, "--json")
    assert from_file.exit_code == 0 and json.loads(from_file.stdout) == o.recent(connect_readonly(corpus_db), 1)[0]["id"]
    both = invoke("query", script, "-c", "return 1", "--db", corpus_db)
    assert both.exit_code == 2


def test_query_command_errors_are_json(corpus_db):
    result = invoke("query", "--db", corpus_db, "-c", "return sql('DELETE FROM messages')")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "ok": False,
        "error": {"code": "OBELISK_READ_ONLY",
                  "message": "read-only: only a statement that reads may run (SELECT, WITH, VALUES, EXPLAIN, "
                             "a PRAGMA that reads) (not authorized)"},
    }
    slow = invoke("query", "--db", corpus_db, "--timeout", "0.5", "-c", "while True: pass")
    assert slow.exit_code == 1 and json.loads(slow.stdout)["error"]["code"] == "OBELISK_TIMEOUT"


def test_attune_command_roots(tmp_path, corpus_db):
    import shutil

    db = tmp_path / "copy.db"
    shutil.copy(corpus_db, db)
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        (folder / "n.md").write_text("# n\n")
    code = 'return remember({"path": "%s", "summary": "note"})["path"]'
    refused = invoke("attune", "--db", db, "-c", code % (first / "n.md"))
    assert refused.exit_code == 1 and json.loads(refused.stdout)["error"]["code"] == "OBELISK_MEMORY_REFUSED"
    by_option = invoke("attune", "--db", db, "--memory-root", first, "-c", code % (first / "n.md"))
    assert by_option.exit_code == 0 and json.loads(by_option.stdout) == str(first.resolve() / "n.md")
    env = {"OBELISK_MEMORY_ROOTS": f"{first}:{second}"}
    by_env = invoke("attune", "--db", db, "-c", code % (second / "n.md"), env=env)
    assert by_env.exit_code == 0 and json.loads(by_env.stdout) == str(second.resolve() / "n.md")
    no_reads = invoke("attune", "--db", db, "--memory-root", first, "-c", "return recent()")
    assert no_reads.exit_code == 1 and "NameError" in json.loads(no_reads.stdout)["error"]["message"]


@pytest.mark.parametrize("redact", [True, False])
def test_lines_tailed_before_an_answer_are_redacted_as_the_ingest_was(tmp_path, redact):
    from datasette_obelisk.store.ingest import ingest as run_ingest

    token = "ghp_zyxwvutsrqponmlkjihgfedcba9876543210"
    project = tmp_path / ".claude" / "projects" / "-w"
    project.mkdir(parents=True)
    log = project / "s1.jsonl"

    def line(uuid, text):
        return json.dumps({"type": "user", "uuid": uuid, "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
                           "message": {"role": "user", "content": text}}) + "\n"

    log.write_text(line("a", f"first token {token}"))
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / ".claude"}, redact=redact)
    with open(log, "a") as fp:
        fp.write(line("b", f"a lynx and {token}"))
    found = json.loads(invoke("search", "lynx", "--db", str(db), "--json").stdout)
    [text] = [hit["message"]["text"] for hit in found]
    if redact:
        assert token not in text and text.startswith("a lynx and [REDACTED:github-pat:")
        assert invoke("redact", "--check", "--db", str(db)).exit_code == 0
    else:
        assert text == f"a lynx and {token}"


def test_cli_answers_include_lines_appended_since_the_last_ingest(tmp_path):
    """Live-preferred: a line appended to a session is found without `obelisk ingest`."""
    import json as _json

    from datasette_obelisk.store.ingest import ingest as run_ingest

    project = tmp_path / ".claude" / "projects" / "-w"
    project.mkdir(parents=True)
    log = project / "s1.jsonl"
    def line(uuid, parent, text):
        return _json.dumps({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                            "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": text}}) + "\n"
    log.write_text(line("a", None, "first words"))
    db = tmp_path / "o.db"
    run_ingest(db, {"claude": tmp_path / ".claude"})
    with open(log, "a") as fp:
        fp.write(line("b", "a", "a quokka appears"))
    result = invoke("search", "quokka", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    assert [r["message"]["uuid"] for r in _json.loads(result.stdout)] == ["b"]


def test_read_marks_compactions_and_shows_gemini_tool_output(tmp_path):
    from conftest import CORPUS
    from corpus_layout import lay_out
    from datasette_obelisk.store.ingest import ingest

    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    codex = "codex/kvsankar__agent-history/session_with_compaction.jsonl"
    gemini = "gemini/jazzyalex__agent-sessions/jsonl_v040.jsonl"
    lay_out(tmp_path, CORPUS, {codex: "codex/sessions/rollout-compaction.jsonl",
                               gemini: "gemini/tmp/h/chats/session-stage0.jsonl"}, [codex, gemini])
    db = tmp_path / "o.db"
    ingest(db, {"codex": tmp_path / "codex", "gemini": tmp_path / "gemini"})
    compacted = invoke("read", "codex:compact-codex-001", "--db", db).stdout
    headers = [line for line in compacted.splitlines() if line.startswith("[2025")]
    # Lines 3-12 went into the compaction of line 13 but its prompts (3, 9, 11); lines 14-19 came after it.
    assert [h.endswith("[compacted away]:") for h in headers] == [n not in (3, 9, 11) for n in range(3, 13)] + [False] * 7
    assert headers[10] == "[2025-10-28T05:26:42.667Z] user [context compacted here]:"
    # Gemini writes a call's output inside the message that made the call (line 4): it follows the call.
    listed = invoke("read", "gemini:gemini_stage0_jsonl", "--db", db).stdout
    assert "\nrun_shell_command\nls -F\nList files in the current directory.\n\n[2026-04-29T21:39:35.364Z] user (tool_result):\n" \
           "Output: AgentSessions/\nREADME.md\nProcess Group PGID: 12345\n" in listed


SKILL = Path(__file__).resolve().parent.parent / "SKILL.md"


def skill_recipes() -> list[str]:
    import re

    return re.findall(r"```python\n(.*?)```", SKILL.read_text(), re.S)


def test_a_script_finds_the_current_project_from_a_folder_no_session_ran_in(corpus_db, tmp_path, monkeypatch):
    # Looking past the shared folders must not write anything (a script may not): SKILL.md's first recipe.
    folder = tmp_path / "work" / "app"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # as in a fresh process: gettempdir() would probe by writing
    result = invoke("query", "-c", 'return overview()["current"]', "--db", corpus_db)
    assert (result.exit_code, json.loads(result.stdout)) == (0, {"cwd": str(folder), "project": None})


def test_every_skill_recipe_runs(corpus_db):
    recipes = skill_recipes()
    assert len(recipes) == 5
    for recipe in recipes:
        run_script(recipe, corpus_db)  # a failure raises QueryError


def test_the_skill_recipe_for_pull_requests_names_their_sessions(corpus_db):
    [recipe] = [r for r in skill_recipes() if "pull_requests" in r]
    assert run_script(recipe, corpus_db) == [{
        "repository": "org/repo", "number": 1, "url": "https://example.invalid/org/repo/pull/1",
        "id": "small", "title": "Stage0 small fixture",  # its custom-title line
    }]


def test_the_skill_recipe_for_a_files_history_keeps_the_edits_that_worked(corpus_db):
    # d-kimuson's log: of its four Edits of page.tsx, those at 00:54:10 and 00:54:23 failed (is_error).
    [recipe] = [r for r in skill_recipes() if "edits = sql(" in r]
    found = run_script(recipe.replace("/home/me/myapp/src/db.py", "/path/to/Demo/todo-app/src/app/page.tsx"), corpus_db)
    assert [at for at, _ in found["edits"]] == ["2025-09-03T01:00:02.779Z", "2025-09-03T00:54:39.453Z"]  # newest first
    assert found["by_tool"] == [{"name": "Edit", "n": 4}, {"name": "Read", "n": 3}]


@pytest.mark.parametrize("args, message", [
    (["read", " "], "a session id is needed: it is only whitespace (spaces)"),
    (["read", ""], "a session id is needed: it is empty"),
    (["search", "hello", "--session", ""], "Invalid value for '--session': it is empty:"),
    (["files", "/a.py", "--session", " "], "Invalid value for '--session': it is only whitespace (spaces):"),
    (["files", "/a.py", "--session", "\u3000"], "Invalid value for '--session': it is only whitespace (other whitespace):"),
])
def test_an_empty_session_id_is_a_usage_error(corpus_db, args, message):
    result = invoke(*args, "--db", corpus_db)
    assert result.exit_code == 2 and message in result.stderr



def test_a_result_nested_deeper_than_the_json_module_goes_is_returned(corpus_db):
    """5,000 levels of lists: the script's process writes them and the parent reads them
    back (an OBELISK_SCRIPT_ERROR "maximum recursion depth exceeded" before)."""
    result = run_script("x = 'leaf'\nfor n in range(5000):\n    x = [n, x]\nreturn x", corpus_db)
    depth = 0
    while isinstance(result, list):
        assert result[0] == 4999 - depth
        result, depth = result[1], depth + 1
    assert (depth, result) == (5000, "leaf")


def test_obelisk_query_prints_the_trace_of_a_lineage_deeper_than_the_json_module_goes(corpus_db, tmp_path):
    """``obelisk query`` of session_query.traceSession on a session continued 1,200 times:
    every generation, nested, as the JSON it prints (OBELISK_SCRIPT_ERROR past ~500 before)."""
    db = tmp_path / "deep.db"
    source = sqlite3.connect(corpus_db)
    source.backup(target := sqlite3.connect(db))
    source.close()
    [root] = target.execute("SELECT id FROM sessions s WHERE parent_session_id IS NULL AND NOT EXISTS "
        "(SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id) ORDER BY id LIMIT 1").fetchone()
    target.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) "
        "INSERT INTO sessions (id, source, parent_session_id, relationship, started_at) "
        "SELECT 'deep-' || i, 'claude', CASE i WHEN 1 THEN ? ELSE 'deep-' || (i - 1) END, 'continuation', "
        "strftime('%Y-%m-%dT%H:%M:%fZ', '2026-04-01', '+' || i || ' minutes') FROM n",
        [root],
    )
    target.commit()
    target.close()
    code = f"return session_query.traceSession({root!r})"
    result = CliRunner().invoke(cli, ["query", "--db", str(db), "-c", code])
    assert result.exit_code == 0, result.output
    from datasette_obelisk import deep_json

    trace, depth = deep_json.loads(result.stdout), 0
    node = {"descendants": trace["descendants"]}
    while node["descendants"]:
        [node] = node["descendants"]
        depth += 1
        assert node["session"]["header"]["id"] == f"deep-{depth}"
    assert depth == 1200 and trace["target"]["header"]["id"] == root
    assert result.stdout.startswith('{\n  "target": {\n    "header": {') and "\n" + "  " * 2401 + '"session"' in result.stdout


# -- one state of the archive while an ingest commits ---------------------------------


def memory_count(script_result: bytes) -> list:
    return json.loads(script_result)["result"]


def test_a_script_reads_one_state_of_the_archive_while_an_ingest_commits(tmp_path, monkeypatch):
    from datasette_obelisk.query.runner import run_job
    from helper_fixtures import build_toy_db, execute

    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "x", "ts": "2026-01-01T00:00:00Z"}]})
    # recent() stands for any call during which `obelisk up` commits what the logs gained
    monkeypatch.setitem(o.HELPERS, "recent", lambda conn, n=10: execute(
        db, "INSERT INTO memories (id, path, summary, created_at) VALUES ('m1', '/m.md', 'x', '2026-01-02T00:00:00.000Z')"))
    code = 'n = lambda: sql("SELECT COUNT(*) AS n FROM memories")[0]["n"]\nfirst = n()\nrecent()\nreturn [first, n()]'
    job = {"mode": "query", "db_path": str(db), "timeout": 10.0, "code": code}
    assert memory_count(run_job(job)) == [0, 0]
    monkeypatch.setitem(o.HELPERS, "recent", lambda conn, n=10: None)
    assert memory_count(run_job(job)) == [1, 1]  # the next script sees it


def test_a_command_reads_one_state_of_the_archive_while_an_ingest_commits(tmp_path):
    from datasette_obelisk.cli_query import call
    from helper_fixtures import execute
    from query_fixtures import copy_corpus

    db, _ = copy_corpus(tmp_path, "claude-code/simonw__claude-code-transcripts/sample_session.jsonl")

    def counts(conn):
        first = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        execute(db, "DELETE FROM messages WHERE uuid = 'msg-007'")  # an ingest commits between two statements
        return first, conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]

    assert call(db, counts) == (7, 7)
    assert call(db, lambda conn: conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]) == 6


def test_obelisk_read_counts_the_messages_of_the_state_it_listed(tmp_path, monkeypatch):
    from helper_fixtures import execute
    from query_fixtures import copy_corpus

    db, _ = copy_corpus(tmp_path, "claude-code/simonw__claude-code-transcripts/sample_session.jsonl")
    listed = o.thread_page

    def thread_page(conn, *args, **kwargs):  # an ingest commits once the session is found
        execute(db, "DELETE FROM messages WHERE uuid = 'msg-007'")
        return listed(conn, *args, **kwargs)

    monkeypatch.setattr(o, "thread_page", thread_page)
    result = CliRunner().invoke(cli, ["read", "sample_session", "--limit", "2", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith("\n[messages 1-2 of 7; 5 more: --after-uuid msg-002]\n")
