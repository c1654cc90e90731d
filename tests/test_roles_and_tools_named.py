"""A role or a tool a filter names must be one an event can have: a misspelt one is refused,
not matched against nothing, and telling which is which reads an index, never every row."""

from __future__ import annotations

import pytest

from datasette_obelisk.query import events, obelisk
from datasette_obelisk.query.filters import Filters
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import line, refusal, toy, type_filter_refusals  # noqa: F401 (fixture)

SPEAKERS = "the roles are user, assistant, system, developer, tool"


def three_sessions(toy):
    """s1 calls Grep, s2 Read twice; s3's narrator (a plugin's own role) calls nothing."""
    toy.write("s1", line("s1a", "needle one", "2026-01-01T00:00:00Z", tool="Grep"),
              line("s1b", "needle answer", "2026-01-01T00:00:01Z", role="assistant"))
    toy.write("s2", line("s2a", "needle two", "2026-01-02T00:00:00Z", tool="Read"),
              line("s2b", "needle again", "2026-01-02T00:00:01Z", tool="Read"))
    toy.write("s3", line("s3a", "needle three", "2026-01-03T00:00:00Z", role="narrator"))
    toy.ingest()
    return toy.conn()


@pytest.mark.parametrize("value, hint", [
    ("usr/message", ""), ("User/message", ": did you mean user/message?"), ("Narrator/message", ""),
])
def test_a_type_filter_naming_the_message_of_no_role_is_refused_in_every_face(toy, value, hint):
    types = [{"kind": "type", "values": ["user/message", value]}]
    expected = ("SESSION_QUERY_INVALID_FILTER", f"type: {value!r} is the message of a role no event has; {SPEAKERS}{hint}")
    assert type_filter_refusals(three_sessions(toy), types) == [expected] * 4


def test_a_type_filter_naming_a_role_some_event_has_is_taken(toy):
    sq = SessionQuery(three_sessions(toy))
    narrator = [{"kind": "type", "values": ["narrator/message"]}]
    assert [hit["header"]["id"] for hit in sq.search_sessions({"query": "needle", "eventFilters": narrator})["items"]] == ["s3"]
    assert [doc["id"] for doc in sq.filter_events("s3", narrator)] == ["s3a"]
    # a speaker no stored event is, and a structural type: no error, and no event
    assert sq.filter_events("s1", [{"kind": "type", "values": ["developer/message", "system/compact_boundary"]}]) == []
    assert [doc["id"] for doc in sq.filter_events("s1", [{"kind": "type", "values": ["assistant/message"]}])] == ["s1b"]


def test_a_structural_line_whose_subtype_is_message_keeps_its_type(toy):
    toy.write("s1", line("s1a", "a notice", "2026-01-01T00:00:00Z", type="notice"))
    toy.ingest()
    toy.sql("UPDATE messages SET surface = 'log-only', subtype = 'message', role = NULL WHERE uuid = 's1a'")
    conn = toy.conn()
    assert events.unknown_message_type(conn, "notice/message") is None
    assert [doc["type"] for doc in SessionQuery(conn).filter_events("s1", [{"kind": "type", "values": ["notice/message"]}])] \
        == ["notice/message"]
    assert events.unknown_message_type(conn, "notices/message") == "notices"


def test_whether_a_role_or_a_message_line_is_stored_is_read_from_an_index(toy):
    conn = three_sessions(toy)
    assert [events.stored_role(conn, role) for role in ("user", "tool", "narrator", "Narrator", "usr")] == [
        True, True, True, False, False]
    for sql, step in (
        (f"SELECT 1 FROM messages WHERE role = ? AND {events.OTHER_ROLE_SQL}",
         "SEARCH messages USING COVERING INDEX messages_other_role (role=?)"),
        (f"SELECT 1 FROM messages WHERE type = ? AND {events.MESSAGE_LINES_SQL}",
         "SEARCH messages USING INDEX messages_message_lines (type=?)"),
        ("SELECT 1 FROM tool_calls WHERE name = ?", "SEARCH tool_calls USING COVERING INDEX tool_calls_name (name=?)"),
    ):
        assert [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql} LIMIT 1", ["usr"])] == [step]


def test_the_search_page_s_role_is_checked_by_the_same_index(toy):
    conn = three_sessions(toy)
    assert [obelisk.known_role(conn, role) for role in ("Assistant", "narrator")] == ["assistant", "narrator"]
    assert refusal(lambda: obelisk.known_role(conn, "usr")) == ("OBELISK_INVALID_ARGUMENT", f"unknown role usr; {SPEAKERS}")


def test_a_tool_is_spelt_as_the_calls_name_it_or_refused(toy):
    conn = three_sessions(toy)
    assert [obelisk.known_tools(conn, tool) for tool in ("Grep", " Read ", "grep", "READ")] == [
        ("Grep",), ("Read",), ("Grep",), ("Read",)]
    assert refusal(lambda: obelisk.known_tools(conn, "Grpe")) == (
        "OBELISK_INVALID_ARGUMENT", "no tool call is named Grpe: the archive holds no call of that tool")
    assert refusal(lambda: obelisk.known_tools(conn, "  ")) == ("OBELISK_INVALID_ARGUMENT", "tool must not be blank")


def test_a_name_two_tools_spell_in_other_cases_is_both(toy):
    toy.write("s1", line("s1a", "needle", "2026-01-01T00:00:00Z", tool="read"),
              line("s1b", "needle", "2026-01-01T00:00:01Z", tool="READ"))
    toy.ingest()
    conn = toy.conn()
    assert obelisk.known_tools(conn, "Read") == ("READ", "read")
    assert obelisk.known_tools(conn, "read") == ("read",)  # a call has that very name


def test_a_tool_filter_finds_its_sessions_through_the_names_index(toy):
    conn = three_sessions(toy)
    where, params = Filters.build(tools=["Read"]).session_sql("s")
    plan = " | ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN SELECT s.id FROM sessions s WHERE {where}", params))
    assert "SEARCH c USING INDEX tool_calls_name (name=?)" in plan, plan
    recent = {tools: [row["id"] for row in obelisk.recent_in(conn, Filters.build(tools=list(tools)), 10)["items"]]
              for tools in (("Read",), ("Grep",), ("Grep", "Read"), ("Nothing",), ())}
    assert recent == {("Read",): ["s2"], ("Grep",): ["s1"], ("Grep", "Read"): ["s2", "s1"], ("Nothing",): [], (): []}


@pytest.mark.asyncio
async def test_over_http_a_type_of_no_role_is_a_400_with_the_filter_code(toy):
    from web_fixtures import make_datasette

    three_sessions(toy)
    ds = make_datasette(toy.db)
    await ds.invoke_startup()
    types = '[{"kind": "type", "values": ["usr/message"]}]'
    error = {"ok": False, "error": {"code": "SESSION_QUERY_INVALID_FILTER",
                                    "message": f"type: 'usr/message' is the message of a role no event has; {SPEAKERS}"}}
    for path, params in (("sessions/search", {"query": "needle", "eventFilters": types}),
                         ("events/search", {"sessionId": "s1", "query": "needle", "filters": types}),
                         ("session/s1/events", {"filters": types})):
        response = await ds.client.get(f"/-/obelisk/api/session-query/{path}", params=params)
        assert (response.status_code, response.json()) == (400, error), path


@pytest.mark.asyncio
@pytest.mark.parametrize("query", [{"q": "needle"}, {}])
async def test_the_search_page_refuses_a_tool_no_call_has_and_spells_one_in_another_case(toy, query):
    from web_fixtures import make_datasette

    three_sessions(toy)
    ds = make_datasette(toy.db)
    await ds.invoke_startup()
    refused = await ds.client.get("/-/obelisk", params={**query, "tool": "Grpe"})
    assert refused.status_code == 400
    assert ('<p class="ob-error"><code>OBELISK_INVALID_ARGUMENT</code> no tool call is named Grpe: '
            "the archive holds no call of that tool</p>") in refused.text
    exact = await ds.client.get("/-/obelisk", params={**query, "tool": "Grep"})
    assert exact.status_code == 200 and "/-/obelisk/session/s1" in exact.text and "/-/obelisk/session/s2" not in exact.text
    assert (await ds.client.get("/-/obelisk", params={**query, "tool": "grep"})).text == exact.text
