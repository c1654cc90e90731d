"""A type filter must name a kind of event the archive can hold: ``tool/cal`` or ``summry`` is
refused with the types it may have meant, in Python, over HTTP and from the CLI, while a
known type no event has yet is an empty answer; telling which reads an index, never every row."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.query import events
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import connect, corpus_db, line, toy, type_filter_answers, type_filter_refusals  # noqa: F401 (fixtures)

TYPES = ("the types are compaction/summary, tool/call, tool/result, assistant/reasoning, <role>/message, "
         "and a log line's <kind>/<subtype> or <kind> of a kind the archive holds")


def unknown(value: str, hint: str = "") -> tuple[str, str]:
    return "SESSION_QUERY_INVALID_FILTER", f"type: {value!r} is of a kind no event has; {TYPES}{hint}"


def sessions(toy):
    """s1 (a prompt calling Grep) is answered; s2 holds a scroll, a kind of the toy source's own."""
    toy.write("s1", line("s1a", "needle one", "2026-01-01T00:00:00Z", tool="Grep"),
              line("s1b", "needle answer", "2026-01-01T00:00:01Z", role="assistant"))
    toy.write("s2", line("s2a", "needle scroll", "2026-01-02T00:00:00Z", role=None, type="scroll"))
    toy.ingest()
    return toy.conn()


@pytest.mark.parametrize("value, hint", [
    ("tool/cal", ": did you mean tool/call?"),
    ("summry", ": did you mean compaction/summary?"),
    ("tool", ": did you mean tool/call or tool/result?"),
    ("Tool/Call", ": did you mean tool/call?"),
    ("System/compact_boundary", ": did you mean system/compact_boundary?"),
    ("atachment/hook_success", ": did you mean attachment/hook_success?"),
    ("scrol", ": did you mean scroll?"),
    ("developer/mesage", ": did you mean developer/message?"),
    ("zebra/call", ""),
])
def test_a_type_of_a_kind_no_event_has_is_refused_in_every_face(toy, value, hint):
    types = [{"kind": "type", "values": ["tool/call", value]}]
    expected = unknown(value, hint)
    assert type_filter_refusals(sessions(toy), types) == [expected] * 4


def test_a_known_type_no_event_has_is_an_empty_answer(toy):
    conn = sessions(toy)
    sq = SessionQuery(conn)
    # types of kinds the built-in parsers write, with subtypes they give or read (none in this archive)
    empty = ["compaction/summary", "tool/result", "assistant/reasoning", "system/compact_boundary",
             "attachment/queued_command", "event_msg/token_count", "compaction/compact_boundary", "gemini/usage"]
    assert type_filter_answers(conn, empty) == ([], {"items": []})
    # a kind only the toy source stores
    scroll = [{"kind": "type", "values": ["scroll"]}]
    assert [doc["id"] for doc in sq.filter_events("s2", scroll)] == ["s2a"]
    assert [hit["header"]["id"] for hit in sq.search_sessions({"query": "needle", "eventFilters": scroll})["items"]] == ["s2"]
    assert [doc["id"] for doc in sq.filter_events("s1", [{"kind": "type", "values": ["user/message"]}])] == ["s1a"]


def test_a_kind_with_a_slash_is_found_by_its_whole_type(toy):
    toy.write("s1", line("s1a", "a note", "2026-01-01T00:00:00Z", role=None, type="note/v2"))
    toy.ingest()
    conn = toy.conn()
    assert [events.unknown_kind(conn, value) for value in ("note/v2", "note/v2/extra", "note", "note/v3")] == [
        False, False, True, True]


def test_whether_a_kind_is_stored_is_read_from_an_index(toy):
    conn = sessions(toy)
    assert events.stored_kinds(conn) == ["scroll"]
    for sql, step in (
        (f"SELECT 1 FROM messages WHERE type = ? AND {events.OTHER_KIND_SQL} LIMIT 1",
         "SEARCH messages USING COVERING INDEX messages_other_kind (type=?)"),
        (f"SELECT DISTINCT type FROM messages WHERE {events.OTHER_KIND_SQL} ORDER BY type",
         "SCAN messages USING COVERING INDEX messages_other_kind"),
    ):
        assert [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", ["x"] if "?" in sql else [])] == [step]


def test_built_in_logs_add_no_row_to_the_index_of_other_kinds(corpus_db):
    conn = connect(corpus_db)
    assert conn.execute(f"SELECT COUNT(*) FROM messages WHERE {events.OTHER_KIND_SQL}").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(DISTINCT type) FROM messages").fetchone()[0] == 9


@pytest.mark.asyncio
async def test_over_http_a_type_of_no_kind_is_a_400_with_the_filter_code(toy):
    from web_fixtures import make_datasette

    sessions(toy)
    ds = make_datasette(toy.db)
    await ds.invoke_startup()
    types = '[{"kind": "type", "values": ["tool/cal"]}]'
    code, message = unknown("tool/cal", ": did you mean tool/call?")
    error = {"ok": False, "error": {"code": code, "message": message}}
    for path, params in (("sessions/search", {"query": "needle", "eventFilters": types}),
                         ("events/search", {"sessionId": "s1", "query": "needle", "filters": types}),
                         ("session/s1/events", {"filters": types})):
        response = await ds.client.get(f"/-/obelisk/api/session-query/{path}", params=params)
        assert (response.status_code, response.json()) == (400, error), path
    empty = await ds.client.get("/-/obelisk/api/session-query/session/s1/events",
                                params={"filters": '[{"kind": "type", "values": ["system/compact_boundary"]}]'})
    assert (empty.status_code, empty.json()) == (200, [])


def test_from_the_cli_a_type_of_no_kind_is_the_filter_code(toy):
    sessions(toy)
    script = 'return session_query.filterEvents("s1", [{"kind": "type", "values": ["summry"]}])'
    result = CliRunner().invoke(cli, ["query", "-c", script, "--db", str(toy.db)])
    code, message = unknown("summry", ": did you mean compaction/summary?")
    assert (result.exit_code, json.loads(result.stdout)) == (1, {"ok": False, "error": {"code": code, "message": message}})
    script = 'return session_query.filterEvents("s1", [{"kind": "type", "values": ["user/message"]}])'
    result = CliRunner().invoke(cli, ["query", "-c", script, "--db", str(toy.db)])
    assert (result.exit_code, [doc["id"] for doc in json.loads(result.stdout)]) == (0, ["s1a"])
