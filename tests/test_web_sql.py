"""SQL functions, stored queries and the browse views, through Datasette's own JSON API."""

from __future__ import annotations

import json
import sqlite3
import re
from pathlib import Path

import pytest
import sqlite_utils
from datasette.app import Datasette

from datasette_obelisk.web.sql_functions import register_functions
from datasette_obelisk.web.stored_queries import QUERIES
from web_fixtures import WORKFLOW_RUN, XSS_SESSION, copy_db, ds, make_datasette, web_db  # noqa: F401 (fixtures)

DOCS = Path(__file__).parent.parent / "docs" / "web.md"


async def sql(ds, query: str, **params) -> list[dict]:
    response = await ds.client.get("/obelisk/-/query.json", params={"sql": query, "_shape": "array", **params})
    assert response.status_code == 200, response.text[:500]
    return response.json()


@pytest.mark.asyncio
async def test_obelisk_trace(ds):
    rows = await sql(ds, "select obelisk_trace(:u) as chain, obelisk_trace('nope') as none", u="xss-a2")
    assert json.loads(rows[0]["chain"]) == ["xss-u1", "xss-a1", "xss-a2"]
    assert json.loads(rows[0]["none"]) == []


def test_obelisk_trace_walks_the_links_without_reading_text(web_db):
    """Each step reads a message's parent links only: a chain of long messages costs no text."""
    db = sqlite_utils.Database(web_db)
    read = []
    db.conn.set_trace_callback(read.append)
    assert json.loads(db.execute("select obelisk_trace('xss-a2')").fetchone()[0]) == ["xss-u1", "xss-a1", "xss-a2"]
    steps = [statement for statement in read if "FROM messages" in statement]
    assert len(steps) == 3 and not [s for s in steps if "*" in s or "text" in s], steps


def test_obelisk_trace_reads_only_its_own_database(web_db):
    from datasette_obelisk.web.sql_functions import register_functions

    conn = sqlite3.connect(":memory:")  # --crossdb's _memory, the archive attached
    register_functions(conn)
    conn.execute("ATTACH DATABASE ? AS obelisk", [str(web_db)])
    assert conn.execute("select obelisk_trace('xss-a2')").fetchone() == (None,)
    conn.close()


def test_obelisk_trace_past_the_time_limit_stops_the_statement_with_the_usual_error(web_db, monkeypatch):
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.errors import QueryError
    from datasette_obelisk.web.sql_functions import register_functions

    conn = sqlite3.connect(web_db)
    register_functions(conn)
    past = []

    def interrupted(conn, uuid):  # the time limit falls while the function reads the chain
        past.append(uuid)
        raise QueryError("OBELISK_TIMEOUT", "the query ran past its time limit and was stopped")

    monkeypatch.setattr(obelisk, "trace_uuids", interrupted)
    conn.set_progress_handler(lambda: bool(past), 10)
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute("SELECT count(*) FROM messages WHERE json_array_length(obelisk_trace(uuid)) > 5").fetchall()
    assert str(error.value) == "interrupted"
    conn.close()


def test_obelisk_trace_called_once_the_time_limit_fell_leaves_the_usual_error(web_db):
    from datasette_obelisk.web.sql_functions import register_functions

    conn = sqlite3.connect(web_db)
    register_functions(conn)
    steps = []
    conn.set_progress_handler(lambda: steps.append(1) or len(steps) > 50, 100)  # every statement stopped from then on
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute("WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 10000000) "
                     "SELECT count(obelisk_trace('nope')) FROM r").fetchall()
    assert str(error.value) == "interrupted"
    conn.close()


def test_obelisk_trace_stopped_by_the_time_limit_stops_a_statement_too_short_to_be_checked(web_db):
    """A trace the time limit stops never reads as NULL (which says: not an obelisk database):
    ``select obelisk_trace(:uuid)`` past a short ``sql_time_limit_ms`` answered NULL, not
    "SQL query took too long"."""
    from datasette_obelisk.web.sql_functions import register_functions

    conn = sqlite3.connect(web_db)
    register_functions(conn)
    conn.set_progress_handler(lambda: 1, 20)  # past the time limit: every statement is stopped at its next check
    with pytest.raises(sqlite3.OperationalError) as error:
        conn.execute("SELECT obelisk_trace('xss-a2')").fetchall()
    assert str(error.value) == "interrupted"
    conn.set_progress_handler(None, 20)
    assert json.loads(conn.execute("SELECT obelisk_trace('xss-a2')").fetchone()[0]) == ["xss-u1", "xss-a1", "xss-a2"]
    conn.close()


@pytest.mark.parametrize("fresh", [True, False])
def test_escape_fts_of_cjk_past_the_time_limit_leaves_the_usual_error(web_db, fresh):
    """A table page's ``?_search=数据`` whose time limit falls while escape_fts looks at the schema
    is stopped as interrupted (Datasette reads anything else from a facet's query as a 500)."""
    from datasette_obelisk.web.sql_functions import register_escape_fts

    conn = sqlite3.connect(web_db)
    register_escape_fts(conn)
    if not fresh:  # (a connection that searched before)
        assert conn.execute("select escape_fts('数据')").fetchone()[0] != '"数据"'
    conn.set_progress_handler(lambda: 1, 20)  # past the time limit: every statement is stopped at its next check
    statements = ["SELECT rowid FROM messages_fts WHERE messages_fts MATCH escape_fts('数据')"]
    if fresh:  # (one too short to be checked, stopped all the same: its function's read was stopped)
        statements.append("SELECT escape_fts('数据')")
    for statement in statements:
        with pytest.raises(sqlite3.OperationalError) as error:
            conn.execute(statement).fetchall()
        assert str(error.value) == "interrupted"
    conn.set_progress_handler(None, 20)
    assert conn.execute("select escape_fts('数据')").fetchone()[0] == '("数据" OR "\ufffe数\ufffe据\ufffe")'
    conn.close()


@pytest.mark.asyncio
async def test_obelisk_snippet(ds):
    text = "word " * 100 + "zebrafish " + "word " * 100
    rows = await sql(ds, "select obelisk_snippet(:t, 'zebrafish', 40) as s, obelisk_snippet(:t, 'zebrafish') as d", t=text)
    assert "zebrafish" in rows[0]["s"] and len(rows[0]["s"]) <= 42
    assert len(rows[0]["d"]) <= 242


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "text,mode,expected",
    [
        ("zebrafish command", "terms", {XSS_SESSION}),
        ("command failed", "phrase", {XSS_SESSION}),
        ('foo-bar "c++ /x.py', "terms", set()),
        ("", "terms", set()),
        ("!!!", "phrase", set()),
    ],
)
async def test_obelisk_fts_never_errors(ds, text, mode, expected):
    rows = await sql(
        ds,
        "select distinct m.session_id from messages_fts join messages m on m.id = messages_fts.rowid "
        "where messages_fts match obelisk_fts(:q, :mode)",
        q=text,
        mode=mode,
    )
    assert {row["session_id"] for row in rows} >= expected
    if not expected:
        assert rows == [] or text.startswith("foo")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "expression, expected",
    [
        # NULL in, NULL out
        ("obelisk_snippet('hello', 'x', null)", None),
        ("obelisk_snippet(null, 'x')", None),
        ("obelisk_snippet('hello', null)", None),
        ("obelisk_fts('x', null)", None),
        ("obelisk_fts(null)", None),
        ("obelisk_trace(null)", None),
        # an argument of the wrong kind: NULL, never an error
        ("obelisk_snippet('hello', 'x', 'abc')", None),
        ("obelisk_snippet('hello world', 'world', 0)", None),
        ("obelisk_snippet('hello world', 'world', -5)", None),
        ("obelisk_snippet('hello world', 'world', 5.5)", None),
        ("obelisk_fts('x', 'raw')", None),
        ("obelisk_fts('x', 'bogus')", None),
        # widths as integral text or reals; modes in any case
        ("obelisk_snippet('hello world', 'world', 5)", "… worl…"),
        ("obelisk_snippet('hello world', 'world', '5')", "… worl…"),
        ("obelisk_snippet('hello world', 'world', 5.0)", "… worl…"),
        ("obelisk_fts('a b', 'PHRASE')", '"a b"'),
        ("obelisk_fts('a b', ' Terms ')", '"a" AND "b"'),
        # BLOBs are UTF-8 text (invalid bytes replaced), numbers their text
        ("obelisk_snippet(x'00ff', 'w')", "\x00\ufffd"),
        ("obelisk_snippet(x'636166c3a9206f6b', x'636166')", "café ok"),
        ("obelisk_fts(x'6162')", '"ab"'),
        ("obelisk_fts(42)", '"42"'),
        ("obelisk_trace('')", "[]"),
        # escape_fts (what ?_search= calls) keeps the same contract
        ("escape_fts(null)", None),
        ("escape_fts(42)", '"42"'),
        ("escape_fts(x'6162')", '"ab"'),
        ("escape_fts('a' || char(0) || 'b')", '"a" "b"'),  # (a NUL ends an FTS5 string: a space instead)
    ],
)
async def test_sql_function_contract(ds, expression, expected):
    assert await sql(ds, f"select {expression} as v") == [{"v": expected}]


@pytest.mark.asyncio
async def test_the_documented_examples_run(ds):
    examples = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S)
    assert len(examples) >= 4
    for example in examples:
        assert await sql(ds, example), example


def test_functions_are_registered_for_sqlite_utils(web_db):
    from sqlite_utils.plugins import get_plugins

    assert any("prepare_connection" in plugin["hooks"] for plugin in get_plugins() if "obelisk" in plugin["name"])
    db = sqlite_utils.Database(web_db)  # the plugin's prepare_connection hook runs here
    assert json.loads(db.execute("select obelisk_trace('xss-a1')").fetchone()[0]) == ["xss-u1", "xss-a1"]
    assert db.execute("select obelisk_fts('a-b')").fetchone()[0] == '"a-b"'


# -- stored queries ------------------------------------------------------------

EXPECTED = {
    "obelisk_search": ({"q": "zebrafish"}, lambda rows: {r["session_id"] for r in rows} == {XSS_SESSION}),
    "obelisk_context": ({"uuid": "xss-a2"}, lambda rows: rows[0]["depth"] == 2 and rows[0]["session_id"] == XSS_SESSION),
    "obelisk_trace": ({"uuid": "xss-a2"}, lambda rows: [r["uuid"] for r in rows] == ["xss-u1", "xss-a1", "xss-a2"]),
    "obelisk_thread": ({"session_id": XSS_SESSION}, lambda rows: [r["seq"] for r in rows] == [1, 2, 3, 4, 5]),
    "obelisk_overview": ({"source": "codex"}, lambda rows: rows and {r["source"] for r in rows} == {"codex"}),
    "obelisk_sessions": ({"branch": "xss-branch"}, lambda rows: [r["id"] for r in rows] == [XSS_SESSION]),
    "obelisk_summaries": ({}, lambda rows: all("kind" in r for r in rows)),
    "obelisk_memories": ({"q": "zebrafish"}, lambda rows: [r["summary"] for r in rows] == ["How zebrafish commands fail"]),
    "obelisk_subagents": ({}, lambda rows: rows and all(r["child_session_id"] for r in rows)),
    "obelisk_workflows": ({"session_id": XSS_SESSION}, lambda rows: [r["run_id"] for r in rows] == [WORKFLOW_RUN]),
    "obelisk_file_history": ({"path": "%/types/index.ts"}, lambda rows: rows and {r["tool"] for r in rows} >= {"Write"}),
    "obelisk_failures": ({"session_id": XSS_SESSION}, lambda rows: [r["tool"] for r in rows] == ["Bash"]),
}


def test_every_stored_query_is_tested():
    assert {q.name for q in QUERIES} == set(EXPECTED)


@pytest.mark.asyncio
@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_stored_query_runs_as_json(ds, name):
    params, check = EXPECTED[name]
    response = await ds.client.get(f"/obelisk/{name}.json", params={**params, "_shape": "array"})
    assert response.status_code == 200, response.text[:500]
    assert check(response.json()), response.json()[:3]


@pytest.mark.asyncio
async def test_stored_thread_is_in_the_helpers_time_order(ds, web_db):
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.readonly import connect_readonly

    for include_meta in ("", "1"):
        response = await ds.client.get("/obelisk/obelisk_thread.json", params={
            "session_id": "dag_compact_after_rewind_preserved", "include_meta": include_meta, "_shape": "array",
        })
        with connect_readonly(web_db) as conn:
            helper = obelisk.thread(conn, "dag_compact_after_rewind_preserved", {"includeMeta": bool(include_meta)})
        assert [r["uuid"] for r in response.json()] == [m["uuid"] for m in helper]
    assert [r["uuid"] for r in response.json()][7:9] == ["b2a2", "cb"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "bounds, found",
    [
        ({"before": "2025-06-14T10:02:00.000Z"}, True),  # edge_cases started at ...10:02:00Z: the same instant
        ({"after": "2025-06-14T12:02:00+02:00"}, True),
        ({"after": "2025-06-14T10:02:00.001Z"}, False),
    ],
)
async def test_stored_sessions_bound_by_instants(ds, bounds, found):
    response = await ds.client.get("/obelisk/obelisk_sessions.json", params={
        "project": "daaain%", "after": "", "before": "", **bounds, "_shape": "array",
    })
    assert ("edge_cases" in [r["id"] for r in response.json()]) is found


async def stored(ds, name: str, **params) -> list[dict]:
    response = await ds.client.get(f"/obelisk/{name}.json", params={**params, "_shape": "array"})
    assert response.status_code == 200, response.text[:500]
    return response.json()


def helper(web_db, name: str, *args):
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.readonly import connect_readonly

    with connect_readonly(web_db) as conn:
        return getattr(obelisk, name)(conn, *args)


@pytest.mark.asyncio
@pytest.mark.parametrize("bound", ["2026", "2025-06", " 2025-06-14 ", "2025-06-14T12:02:00+02:00", "2026-03-01T10:00"])
async def test_stored_sessions_read_bounds_as_the_helper_does(ds, web_db, bound):
    for name in ("after", "before"):
        rows = await stored(ds, "obelisk_sessions", **{name: bound}, limit="1000")
        expected = helper(web_db, "sessions", {name: bound, "limit": 1000})
        assert [r["id"] for r in rows] == [r["id"] for r in expected]


@pytest.mark.asyncio
async def test_stored_sessions_and_overview_list_the_sessions_the_helpers_do(ds, web_db):
    """Agents' transcripts only when their parent is not stored; forks count."""
    rows = await stored(ds, "obelisk_sessions", limit="1000")
    assert [r["id"] for r in rows] == [r["id"] for r in helper(web_db, "sessions", {"limit": 1000})]
    assert any(":agent-" in r["id"] for r in rows)  # the agents of fa812bfe, a session not in the corpus
    assert not any(":agent-sidechain-" in r["id"] for r in rows)
    overview = await stored(ds, "obelisk_overview")
    assert sum(r["sessions"] for r in overview) == helper(web_db, "overview")["totals"]["sessions"]


@pytest.mark.asyncio
async def test_stored_thread_and_trace_read_in_pages(ds, web_db):
    whole = helper(web_db, "thread", "fe5e1c67-53e7-4862-81ae-d0e013e3270b")
    pages = [await stored(ds, "obelisk_thread", session_id="fe5e1c67-53e7-4862-81ae-d0e013e3270b", offset=str(n))
             for n in (0, 3)]
    assert [r["uuid"] for r in pages[0]] == [m["uuid"] for m in whole]
    assert [r["uuid"] for r in pages[1]] == [m["uuid"] for m in whole][3:]
    last = whole[-1]["uuid"]
    chain = helper(web_db, "trace", last)
    assert [r["uuid"] for r in await stored(ds, "obelisk_trace", uuid=last, offset="2")] == [m["uuid"] for m in chain][2:]


@pytest.mark.asyncio
async def test_stored_sessions_after_a_year_is_its_first_instant(ds):
    rows = await stored(ds, "obelisk_sessions", after="2026")
    assert rows and all(r["started_at"] >= "2026-01-01" for r in rows)
    assert XSS_SESSION in [r["id"] for r in rows]


@pytest.mark.asyncio
@pytest.mark.parametrize("session_id", ["", "fa812bfe-b295-4cca-9c2f-fdf01028cb46"])
async def test_stored_subagents_are_the_helpers(ds, web_db, session_id):
    rows = await stored(ds, "obelisk_subagents", session_id=session_id)
    expected = helper(web_db, "subagents", {"sessionId": session_id} if session_id else {})
    assert [r["agent_id"] for r in rows] == [r["agent_id"] for r in expected]
    assert len(rows) == (18 if not session_id else 2)  # two whose parent session is missing


@pytest.mark.asyncio
async def test_stored_failures_are_the_helpers(ds, web_db):
    rows = await stored(ds, "obelisk_failures", limit="1000")
    expected = helper(web_db, "failures", {"limit": 1000})
    assert [r["tool_use_id"] for r in rows] == [f["result"]["tool_use_id"] for f in expected]
    assert len(rows) == 32 and {r["outcome"] for r in rows} > {"failed"}  # is_error results too


@pytest.mark.asyncio
async def test_stored_workflows_and_summaries_are_the_helpers_in_time_order(web_db, tmp_path):
    """Stamps of one instant written several ways sort as instants, and a run whose
    session's log was never read is listed, as workflows() and summaries() list them."""
    db = copy_db(web_db, tmp_path / "obelisk.db")
    conn = sqlite3.connect(db)
    conn.executemany(
        "INSERT INTO workflows (run_id, session_id, timestamp, file_id) VALUES (?, ?, ?, 0)",
        [("run-late", XSS_SESSION, "2026-03-01T10:00:04Z"), ("run-offset", XSS_SESSION, "2026-03-01T11:00:02+02:00"),
         ("run-orphan", "never-read", "2026-03-01T10:00:01.000Z")],
    )
    conn.executemany(
        "INSERT INTO summaries (id, session_id, timestamp, source, content, file_id) VALUES (?, ?, ?, 'compaction', 'x', 0)",
        [("sum-whole", XSS_SESSION, "2026-03-01T10:00:04Z"), ("sum-half", XSS_SESSION, "2026-03-01T10:00:04.500Z")],
    )
    conn.commit()
    conn.close()
    ds = make_datasette(db)
    await ds.invoke_startup()
    runs = await stored(ds, "obelisk_workflows", limit="1000")
    assert [r["run_id"] for r in runs] == [r["run_id"] for r in helper(db, "workflows", {"limit": 1000})]
    assert [r["run_id"] for r in runs] == ["run-late", WORKFLOW_RUN, "run-orphan", "run-offset"]
    summaries = await stored(ds, "obelisk_summaries", session_id=XSS_SESSION)
    assert [r["id"] for r in summaries] == [r["id"] for r in helper(db, "summaries", {"sessionId": XSS_SESSION})]
    assert [r["id"] for r in summaries] == ["sum-half", "sum-whole"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path, exact",
    [
        ("/path/to/Demo/types/index.ts", "/path/to/Demo/types/index.ts"),
        ("/PATH/to/Demo/types/index.ts", "/PATH/to/Demo/types/index.ts"),  # exact: no case folding
        ("/path/to/Demo/types/index_ts", "/path/to/Demo/types/index_ts"),  # exact: _ is no wildcard
    ],
)
async def test_stored_file_history_is_exact_without_percent(ds, web_db, path, exact):
    rows = await stored(ds, "obelisk_file_history", path=path)
    expected = helper(web_db, "file_history", exact)
    assert [r["tool_call_id"] for r in rows] == [h["toolCall"]["id"] for h in expected]
    assert bool(rows) is (path == "/path/to/Demo/types/index.ts")


@pytest.mark.asyncio
async def test_stored_file_history_takes_a_like_pattern_with_percent(ds):
    rows = await stored(ds, "obelisk_file_history", path="%/types/index.ts")
    assert {r["path"] for r in rows} >= {"/path/to/Demo/types/index.ts"}


@pytest.mark.asyncio
@pytest.mark.parametrize("value", ["", "0", "false", "False", "no", "NO", "off", " Off "])
async def test_stored_thread_false_values_leave_meta_out(ds, web_db, value):
    rows = await stored(ds, "obelisk_thread", session_id="dag_compact_after_rewind_preserved", include_meta=value)
    expected = helper(web_db, "thread", "dag_compact_after_rewind_preserved", {"includeMeta": False})
    assert [r["uuid"] for r in rows] == [m["uuid"] for m in expected]


@pytest.mark.asyncio
@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "Yes", "on", " ON "])
async def test_stored_thread_true_values_include_meta(ds, web_db, value):
    rows = await stored(ds, "obelisk_thread", session_id="dag_compact_after_rewind_preserved", include_meta=value)
    expected = helper(web_db, "thread", "dag_compact_after_rewind_preserved", {"includeMeta": True})
    assert [r["uuid"] for r in rows] == [m["uuid"] for m in expected]
    assert len(expected) > len(helper(web_db, "thread", "dag_compact_after_rewind_preserved"))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "name, params, message",
    [
        ("obelisk_search", {"q": "zebrafish", "mode": "bogus"}, 'mode must be terms or phrase, not "bogus"'),
        ("obelisk_search", {"q": "zebrafish", "limit": "abc"}, 'limit must be a whole number from 1 to 1000, not "abc"'),
        ("obelisk_search", {"q": "x" * 20_000}, "q takes at most 10,000 characters, not 20000"),
        ("obelisk_memories", {"q": "x" * 10_001}, "q takes at most 10,000 characters, not 10001"),
        ("obelisk_sessions", {"limit": "0"}, 'limit must be a whole number from 1 to 1000, not "0"'),
        ("obelisk_failures", {"limit": "1001"}, 'limit must be a whole number from 1 to 1000, not "1001"'),
        ("obelisk_sessions", {"after": "bogus"},
         'after must be an ISO 8601 date or time, such as 2025-06-14 or 2025-06-14T11:01:31Z, not "bogus"'),
        ("obelisk_sessions", {"before": "2461000.5"},
         'before must be an ISO 8601 date or time, such as 2025-06-14 or 2025-06-14T11:01:31Z, not "2461000.5"'),
        ("obelisk_thread", {"session_id": XSS_SESSION, "offset": "-1"}, 'offset must be a whole number, not "-1"'),
        ("obelisk_thread", {"session_id": XSS_SESSION, "include_meta": "maybe"},
         'include_meta must be 1/0, true/false, yes/no or on/off, not "maybe"'),
    ],
)
async def test_stored_queries_refuse_bad_parameters_readably(ds, name, params, message):
    response = await ds.client.get(f"/obelisk/{name}.json", params=params)
    assert response.status_code == 400
    assert response.json()["error"] == f"JSON path error near '{message}'"


@pytest.mark.asyncio
async def test_stored_search_mode_is_case_insensitive(ds):
    rows = await stored(ds, "obelisk_search", q="zebrafish command", mode="PHRASE")
    assert [r["uuid"] for r in rows] == ["xss-a3"]


@pytest.mark.asyncio
async def test_stored_queries_are_listed_with_titles_and_parameters(ds):
    page = await ds.client.get("/obelisk/obelisk_sessions")
    assert page.status_code == 200
    assert "Sessions, newest first" in page.text and 'name="branch"' in page.text
    for query in QUERIES:
        stored = await ds.get_query("obelisk", query.name)
        assert stored.title and stored.description
        assert stored.is_trusted


@pytest.mark.asyncio
async def test_stored_queries_run_where_arbitrary_sql_is_off(web_db):
    from web_fixtures import make_datasette

    ds = make_datasette(web_db, settings={"default_allow_sql": False})
    await ds.invoke_startup()
    assert (await ds.client.get("/obelisk/-/query.json", params={"sql": "select 1"})).status_code == 403
    response = await ds.client.get("/obelisk/obelisk_search.json", params={"q": "zebrafish", "_shape": "array"})
    assert response.status_code == 200 and response.json()


@pytest.mark.asyncio
async def test_databases_without_our_schema_get_nothing(tmp_path):
    from web_fixtures import make_datasette

    other = tmp_path / "other.db"
    sqlite_utils.Database(other)["things"].insert({"id": 1})
    ds = make_datasette(other)
    await ds.invoke_startup()
    assert await ds.get_query("other", "obelisk_search") is None
    page = await ds.client.get("/-/obelisk")
    assert page.status_code == 404 and "obelisk ingest" in page.text
    # The functions are there, and never abort a query for want of our tables.
    response = await ds.client.get("/other/-/query.json", params={
        "sql": "select obelisk_trace('x') as t, obelisk_fts('a') as f", "_shape": "array"})
    assert response.json() == [{"t": None, "f": '"a"'}]


@pytest.mark.asyncio
async def test_a_database_of_another_tool_with_a_messages_fts_table_is_served_as_it_is(tmp_path, web_db):
    """sqlite-utils names the full-text table of a ``messages`` table ``messages_fts``."""
    from web_fixtures import make_datasette

    chat = tmp_path / "chat.db"
    db = sqlite_utils.Database(chat)
    db["messages"].insert_all([{"id": n, "text": f"hello {n}"} for n in range(3)], pk="id")
    db["messages"].enable_fts(["text"], create_triggers=True)
    db["sessions"].insert({"id": "s1"})
    db.close()
    ds = make_datasette(chat)
    await ds.invoke_startup()
    assert await ds.get_query("chat", "obelisk_search") is None
    assert (await ds.client.get("/-/obelisk")).status_code == 404
    response = await ds.client.get("/chat/-/query.json", params={
        "sql": "select obelisk_trace('x') as t, count(*) as n from messages", "_shape": "array"})
    assert response.json() == [{"t": None, "n": 3}]
    both = Datasette([str(web_db), str(chat)])
    await both.invoke_startup()  # beside an archive, too
    assert (await both.client.get("/-/obelisk")).status_code == 200
    assert (await both.client.get("/chat/messages.json")).status_code == 200


@pytest.mark.asyncio
async def test_the_configuration_s_own_stored_query_of_one_of_our_names_wins(web_db):
    from web_fixtures import make_datasette

    config = {"databases": {"obelisk": {"queries": {"obelisk_failures": {"sql": "select 43 as mine"}}}}}
    ds = make_datasette(web_db, config=config)
    await ds.invoke_startup()
    mine = await ds.client.get("/obelisk/obelisk_failures.json", params={"_shape": "array"})
    assert mine.json() == [{"mine": 43}]
    assert (await ds.get_query("obelisk", "obelisk_search")).source == "plugin"


@pytest.mark.asyncio
async def test_the_configuration_s_own_stored_query_of_one_of_our_names_is_hidden_by_what_it_reads(web_db):
    """Not by what ours of that name would read: hiding memories hides our obelisk_memories, not theirs."""
    from web_fixtures import make_datasette

    config = {"databases": {"obelisk": {
        "queries": {"obelisk_memories": {"sql": "select 43 as mine"}},
        "tables": {"memories": {"allow": False}},
    }}}
    ds = make_datasette(web_db, config=config)
    await ds.invoke_startup()
    mine = await ds.client.get("/obelisk/obelisk_memories.json", params={"_shape": "array"})
    assert (mine.status_code, mine.json()) == (200, [{"mine": 43}])
    ours = await ds.client.get("/obelisk/obelisk_overview.json", params={"_shape": "array"})  # reads memories
    assert ours.status_code == 403


@pytest.mark.asyncio
async def test_obelisk_fts_takes_text_up_to_a_bound(ds):
    # The API refuses more than 1,000 characters; SQLite cannot interrupt a function, so it is bounded.
    long = "zebrafish " * 200
    assert await sql(ds, "select obelisk_fts(:q) as v", q=long) == [{"v": " AND ".join(['"zebrafish"'] * 200)}]
    found = (await ds.client.get("/obelisk/obelisk_search.json", params={"q": long, "_shape": "array"})).json()
    assert {row["session_id"] for row in found} == {XSS_SESSION}
    assert await sql(ds, "select obelisk_fts(:q) as f, obelisk_snippet('a b', :q) as s", q="ab " * 3334) == [
        {"f": None, "s": None}]
    assert await sql(ds, "select length(obelisk_fts(:q)) > 0 as f", q="a" * 10_000) == [{"f": 1}]


# -- zero-config search and facets on tables and views ---------------------------


async def table(ds, path: str, **params) -> dict:
    response = await ds.client.get(path, params=params)
    assert response.status_code == 200, response.text[:500]
    return response.json()


def facet_values(body: dict, name: str) -> set:
    return {item["value"] for item in body["facet_results"]["results"][name]["results"]}


@pytest.mark.asyncio
async def test_search_on_tables_without_configuration(ds):
    messages = await table(ds, "/obelisk/messages.json", _search="zebrafish")
    assert {row["session_id"] for row in messages["rows"]} == {XSS_SESSION}
    failed = await table(ds, "/obelisk/tool_results.json", _search="pwned")
    assert [row["session_id"] for row in failed["rows"]] == [XSS_SESSION]
    memories = await table(ds, "/obelisk/memories.json", _search="zebrafish")
    assert len(memories["rows"]) == 1
    nul = await table(ds, "/obelisk/messages.json", _search="zebrafish\x00")
    assert {row["session_id"] for row in nul["rows"]} == {XSS_SESSION}


@pytest.mark.asyncio
async def test_facets_on_the_message_view(ds):
    body = await table(
        ds, "/obelisk/browse_messages.json", _search="zebrafish", _extra="facet_results",
        _facet=["source", "project", "branch", "role", "content_type", "model", "tool_name", "outcome"],
        _facet_date="timestamp",
    )
    assert {row["session_id"] for row in body["rows"]} == {XSS_SESSION}
    assert facet_values(body, "source") == {"claude"}
    assert facet_values(body, "branch") == {"xss-branch"}
    assert facet_values(body, "role") == {"user", "assistant"}
    assert facet_values(body, "model") == {"claude-test"}
    assert facet_values(body, "timestamp") == {"2026-03-01"}
    everything = await table(ds, "/obelisk/browse_messages.json", _extra="facet_results", _facet=["tool_name", "outcome"])
    assert "Bash" in facet_values(everything, "tool_name")
    assert {"succeeded", "failed"} <= facet_values(everything, "outcome")


@pytest.mark.asyncio
async def test_facets_on_the_tool_call_view_and_tables(ds):
    calls = await table(ds, "/obelisk/browse_tool_calls.json", _extra="facet_results", _facet=["tool_name", "outcome", "model"])
    assert "Bash" in facet_values(calls, "tool_name") and "failed" in facet_values(calls, "outcome")
    failed_bash = await table(ds, "/obelisk/browse_tool_calls.json", _search="pwned", tool_name="Bash")
    assert [row["session_id"] for row in failed_bash["rows"]] == [XSS_SESSION]
    sessions = await table(ds, "/obelisk/sessions.json", _extra="facet_results", _facet=["source", "project", "model"])
    assert {"claude", "codex"} <= facet_values(sessions, "source")


@pytest.mark.asyncio
async def test_one_column_search_on_the_views(ds):
    messages = await table(ds, "/obelisk/browse_messages.json", _search_text="zebrafish")
    everywhere = await table(ds, "/obelisk/browse_messages.json", _search="zebrafish")
    assert [row["id"] for row in messages["rows"]] == [row["id"] for row in everywhere["rows"]] != []
    calls = await table(ds, "/obelisk/browse_tool_calls.json", _search_content="pwned")
    assert [row["session_id"] for row in calls["rows"]] == [XSS_SESSION]


@pytest.mark.asyncio
async def test_user_configuration_wins_over_ours(web_db):
    from web_fixtures import make_datasette

    config = {"databases": {"obelisk": {"tables": {"browse_messages": {"facets": ["role"]}}}}}
    ds = make_datasette(web_db, config=config)
    await ds.invoke_startup()
    body = await table(ds, "/obelisk/browse_messages.json", _extra="facet_results", _size="1")
    assert list(body["facet_results"]["results"]) == ["role"]
    assert config["databases"]["obelisk"]["tables"]["browse_messages"] == {"facets": ["role"]}  # not mutated


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/path/to/Demo//types/index.ts", "/path/to/Demo/./types/index.ts/"])
async def test_stored_file_history_reads_another_spelling_of_the_path_as_file_history_does(ds, web_db, path):
    # Paths are stored in one spelling: another spelling of the path finds the same calls,
    # as fileHistory() finds them, not nothing.
    rows = await stored(ds, "obelisk_file_history", path=path)
    expected = helper(web_db, "file_history", path)
    assert expected
    assert [r["tool_call_id"] for r in rows] == [h["toolCall"]["id"] for h in expected]


def test_obelisk_normal_path_is_the_stored_spelling():
    conn = sqlite3.connect(":memory:")
    register_functions(conn)
    assert conn.execute(
        "select obelisk_normal_path('/a//b/./c/'), obelisk_normal_path('a/../b'), obelisk_normal_path(NULL)"
    ).fetchone() == ("/a/b/c", "a/../b", None)


FILLED_IN = {"q": "the", "path": "%", "limit": "1000"}  # (what a stored query needs to list something)


@pytest.mark.asyncio
@pytest.mark.parametrize("query", [q for q in QUERIES if "source" in q.parameters], ids=lambda q: q.name)
async def test_a_stored_query_reads_a_source_in_any_case_as_the_helpers(ds, query):
    given = {name: FILLED_IN.get(name, "") for name in query.parameters}
    exact = await stored(ds, query.name, **{**given, "source": "claude"})
    assert await stored(ds, query.name, **{**given, "source": "Claude"}) == exact
    assert await stored(ds, query.name, **{**given, "source": "CLAUDE"}) == exact


@pytest.mark.asyncio
async def test_stored_query_pages_are_titled_by_their_titles_not_their_sql(ds):
    def title(html: str) -> str:
        return re.search(r"<title>(.*?)</title>", html, re.S).group(1).strip()

    for query in QUERIES:
        response = await ds.client.get(f"/obelisk/{query.name}")
        assert response.status_code in (200, 400), response.text[:300]  # (some need a parameter)
        assert title(response.text) == f"{query.title} · obelisk"
    # a query typed in is still named by its SQL, as Datasette names it
    response = await ds.client.get("/obelisk/-/query", params={"sql": "select 1 as one"})
    assert title(response.text) == "obelisk: select 1 as one"
