"""While an ingest defers full-text indexing (a first load, or a reload that empties the
index), the contracts' searches say so with SESSION_QUERY_INDEX_FAILED rather than answer
from an index missing some or all messages, as if nothing matched."""

from __future__ import annotations

import json

import pytest

from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.history import history_read, history_search
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import line, toy  # noqa: F401 (fixture)

RELOAD = ("SESSION_QUERY_INDEX_FAILED", "the full-text index is incomplete: The logs are being read again (a new "
          "parser or new redaction rules): searches find nothing until that ingest ends and indexes every message.")
LOAD = ("SESSION_QUERY_INDEX_FAILED", "the full-text index is incomplete: A first ingest is still loading: "
        "searches miss the messages it has not indexed yet.")


def indexing(toy, state: dict):
    toy.write("s1", line("s1a", "needle here", "2026-01-01T00:00:00Z"))
    toy.ingest()
    toy.sql("INSERT INTO obelisk_state (key, value) VALUES ('cold_load', ?)", [json.dumps(state)])
    return toy.conn()


def refusal(call) -> tuple[str, str]:
    with pytest.raises(QueryError) as error:
        call()
    return error.value.code, error.value.message


@pytest.mark.parametrize("state, expected", [({"reload": True}, RELOAD), ({}, LOAD)])
def test_a_contract_search_during_deferred_indexing_is_index_failed(toy, state, expected):
    conn = indexing(toy, state)
    sq = SessionQuery(conn)
    assert refusal(lambda: sq.search_sessions({"query": "needle"})) == expected
    assert refusal(lambda: sq.search_events({"sessionId": "s1", "query": "needle"})) == expected
    assert refusal(lambda: history_search(conn, {"query": "needle"})) == expected
    # what reads no full-text index answers as ever
    assert [s["sessionId"] for s in history_search(conn, {})["sessions"]] == ["s1"]
    assert [e["id"] for e in history_read(conn, {"sessionId": "s1"})["entries"]] == ["s1a"]
    assert [d["id"] for d in sq.filter_events("s1", [{"kind": "text", "text": "needle"}])] == ["s1a"]


def test_once_indexing_ends_the_searches_answer(toy):
    indexing(toy, {"reload": True})
    toy.sql("DELETE FROM obelisk_state WHERE key = 'cold_load'")
    conn = toy.conn()
    assert [item["header"]["id"] for item in SessionQuery(conn).search_sessions({"query": "needle"})["items"]] == ["s1"]
    assert [s["sessionId"] for s in history_search(conn, {"query": "needle"})["sessions"]] == ["s1"]


def test_deferred_indexing_is_a_failure_that_passes(toy):
    conn = indexing(toy, {"reload": True})
    with pytest.raises(QueryError) as error:
        SessionQuery(conn).search_sessions({"query": "needle"})
    assert (error.value.code, error.value.retry_after, error.value.status) == ("SESSION_QUERY_INDEX_FAILED", 30, 503)
    # the same code for an index SQLite could not read is no such failure
    failed = QueryError("SESSION_QUERY_INDEX_FAILED", "reading the archive failed: database disk image is malformed")
    assert (failed.retry_after, failed.status) == (None, 500)


@pytest.mark.asyncio
async def test_over_http_a_search_during_a_reload_is_a_503_to_retry(toy):
    from web_fixtures import make_datasette

    indexing(toy, {"reload": True})
    ds = make_datasette(toy.db)
    await ds.invoke_startup()
    error = {"ok": False, "error": dict(zip(("code", "message"), RELOAD))}
    for path, params in (("session-query/sessions/search", {"query": "needle"}),
                         ("session-query/events/search", {"sessionId": "s1", "query": "needle"}),
                         ("history/search", {"query": "needle"})):
        response = await ds.client.get(f"/-/obelisk/api/{path}", params=params)
        assert (response.status_code, response.headers.get("retry-after"), response.json()) == (503, "30", error), path
    listed = await ds.client.get("/-/obelisk/api/history/search")
    assert (listed.status_code, listed.headers.get("retry-after")) == (200, None)
    described = (await ds.client.get("/-/obelisk/api/openapi.json")).json()["paths"]
    assert [path for path, methods in described.items() if "503" in methods.get("get", {}).get("responses", {})] == [
        "/-/obelisk/api/session-query/sessions/search", "/-/obelisk/api/session-query/events/search",
        "/-/obelisk/api/history/search"]


def test_from_the_cli_a_search_during_a_reload_is_index_failed(toy):
    from click.testing import CliRunner

    from datasette_obelisk.cli import cli

    indexing(toy, {"reload": True})
    result = CliRunner().invoke(cli, ["query", "-c", 'return session_query.searchSessions({"query": "needle"})',
                                      "--db", str(toy.db)])
    assert (result.exit_code, json.loads(result.stdout)) == (1, {"ok": False, "error": dict(zip(("code", "message"), RELOAD))})
