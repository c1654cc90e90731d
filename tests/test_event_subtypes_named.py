"""A type filter's subtype must be one an event of its kind can have: ``system/compact_boundry``,
``compaction/summry`` or a source plugin's ``scroll/prat`` is refused with the types it may have
meant, in Python, over HTTP and from the CLI. A built-in kind's subtypes are those its parser
gives, or, where they are the log's own words (Claude Code's system, attachment and progress
lines), those too that stored rows have; a plugin's kind has those of its stored rows. Telling
which reads an index, never every row."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.query import events
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import connect, corpus_db, line, toy, type_filter_answers, type_filter_refusals  # noqa: F401 (fixtures)

STORED = "its subtypes are those its stored log lines have"
EVENT_MSG = ("its subtypes are agent_message, agent_reasoning, agent_reasoning_raw_content, context_compacted, "
             "entered_review_mode, error, exited_review_mode, item_completed, thread_rolled_back, token_count, "
             "turn_aborted, undo_completed, undo_started, user_message, warning")


def refused(value: str, kind: str, subtypes: str, hint: str = "") -> tuple[str, str]:
    return "SESSION_QUERY_INVALID_FILTER", f"type: {value!r} is of a subtype no {kind} event has; {subtypes}{hint}"


def sessions(toy):
    """s1 (a prompt calling Grep, a hook's attachment) is answered; s2 holds a scroll's part and
    a note/v2 of its own, kinds of the toy source's own (one holding a /)."""
    toy.write("s1", line("s1a", "needle one", "2026-01-01T00:00:00Z", tool="Grep"),
              line("s1b", "needle hook", "2026-01-01T00:00:01Z", role=None, type="attachment", subtype="hook_success"),
              line("s1c", "needle answer", "2026-01-01T00:00:02Z", role="assistant"))
    toy.write("s2", line("s2a", "needle scroll", "2026-01-02T00:00:00Z", role=None, type="scroll", subtype="part"),
              line("s2b", "needle note", "2026-01-02T00:00:01Z", role=None, type="note/v2", subtype="draft"))
    toy.ingest()
    return toy.conn()


@pytest.mark.parametrize("value, expected", [
    # a kind whose subtypes are the log's own: named by the parser, or stored
    ("system/compact_boundry", refused("system/compact_boundry", "system", STORED, ": did you mean system/compact_boundary?")),
    ("attachment/hook_sucess", refused("attachment/hook_sucess", "attachment", STORED, ": did you mean attachment/hook_success?")),
    ("system/not_yet_written", refused("system/not_yet_written", "system", STORED)),
    ("user/mesage", refused("user/mesage", "user", STORED, ": did you mean user/message?")),
    # a kind whose subtypes its parser gives
    ("event_msg/token_cont", refused("event_msg/token_cont", "event_msg", EVENT_MSG, ": did you mean event_msg/token_count?")),
    ("event_msg/Token_Count", refused("event_msg/Token_Count", "event_msg", EVENT_MSG, ": did you mean event_msg/token_count?")),
    ("compaction/summry", refused("compaction/summry", "compaction", "its subtypes are compact_boundary",
                                  ": did you mean compaction/summary?")),
    ("gemini/usge", refused("gemini/usge", "gemini", "its subtypes are usage", ": did you mean gemini/usage?")),
    ("info/detail", refused("info/detail", "info", "it has no subtype")),
    # a source plugin's kind: its stored rows' subtypes, a kind holding a / too
    ("scroll/prat", refused("scroll/prat", "scroll", STORED, ": did you mean scroll/part?")),
    ("note/v2/drafts", refused("note/v2/drafts", "note/v2", STORED, ": did you mean note/v2/draft?")),
])
def test_a_subtype_no_event_of_its_kind_has_is_refused_in_every_face(toy, value, expected):
    types = [{"kind": "type", "values": ["tool/call", value]}]
    assert type_filter_refusals(sessions(toy), types) == [expected] * 4


def test_a_subtype_an_event_of_its_kind_can_have_is_taken(toy):
    conn = sessions(toy)
    sq = SessionQuery(conn)
    # named by a parser, none stored here: an empty answer
    empty = ["system/compact_boundary", "system/api_error", "attachment/queued_command", "event_msg/token_count",
             "response_item/function_call", "compaction/compact_boundary", "gemini/usage", "queue-operation/enqueue"]
    assert type_filter_answers(conn, empty) == ([], {"items": []})
    # stored: of an open built-in kind, of a plugin's kinds (one holding a /)
    for session, value, ids in (("s1", "attachment/hook_success", ["s1b"]), ("s2", "scroll/part", ["s2a"]),
                                ("s2", "note/v2/draft", ["s2b"])):
        assert [doc["id"] for doc in sq.filter_events(session, [{"kind": "type", "values": [value]}])] == ids, value


def test_a_kind_holding_a_slash_is_offered_for_one_it_nearly_spells(toy):
    conn = sessions(toy)
    assert events.near_types(conn, "note/v3") == ["note/v2"]
    assert events.near_types(conn, "nte/v2/draft") == ["note/v2/draft"]
    message = ("type: 'note/v3' is of a kind no event has; the types are compaction/summary, tool/call, tool/result, "
               "assistant/reasoning, <role>/message, and a log line's <kind>/<subtype> or <kind> of a kind the archive "
               "holds: did you mean note/v2?")
    types = [{"kind": "type", "values": ["note/v3"]}]
    assert type_filter_refusals(conn, types) == [("SESSION_QUERY_INVALID_FILTER", message)] * 4


def test_whether_a_subtype_is_stored_is_read_from_an_index(toy):
    conn = sessions(toy)
    assert events.stored_subtypes(conn, "attachment") == ["hook_success"]
    assert events.stored_subtypes(conn, "note/v2") == ["draft"]
    assert [events.stored_subtype(conn, "scroll", sub) for sub in ("part", "prat")] == [True, False]
    for sql, params, step in (
        (f"SELECT 1 FROM messages WHERE type = ? AND subtype = ? AND {events.OPEN_SUBTYPE_SQL} LIMIT 1", ["x", "y"],
         "SEARCH messages USING COVERING INDEX messages_open_subtypes (type=? AND subtype=?)"),
        (f"SELECT MIN(subtype) FROM messages WHERE type = ? AND subtype > ? AND {events.OPEN_SUBTYPE_SQL}", ["x", ""],
         "SEARCH messages USING COVERING INDEX messages_open_subtypes (type=? AND subtype>?)"),
    ):
        assert [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)] == [step]


def test_the_parsers_store_no_subtype_they_do_not_name(corpus_db):
    """Every subtype a stored row of a kind with given subtypes has is one its parser names; the
    rows of those kinds are not in the index of open subtypes."""
    conn = connect(corpus_db)
    closed = [kind for kind in events.BUILT_IN_KINDS if kind not in events.OPEN_KINDS]
    marks = ", ".join("?" * len(closed))
    stored = conn.execute(
        f"SELECT DISTINCT type, subtype FROM messages WHERE subtype IS NOT NULL AND type IN ({marks})", closed).fetchall()
    assert len(stored) == 12
    assert [(kind, sub) for kind, sub in stored if sub not in events.KNOWN_SUBTYPES.get(kind, ())] == []
    indexed = conn.execute(f"SELECT COUNT(*) FROM messages WHERE {events.OPEN_SUBTYPE_SQL}").fetchone()[0]
    open_rows = conn.execute("SELECT COUNT(*) FROM messages WHERE subtype IS NOT NULL AND type IN "
                             "('system', 'attachment', 'progress')").fetchone()[0]
    assert indexed == open_rows == 161  # of 2,503 messages
    assert set(events.KNOWN_SUBTYPES) | events.OPEN_KINDS <= set(events.BUILT_IN_KINDS)


@pytest.mark.asyncio
async def test_over_http_a_subtype_of_no_event_is_a_400_with_the_filter_code(toy):
    from web_fixtures import make_datasette

    sessions(toy)
    ds = make_datasette(toy.db)
    await ds.invoke_startup()
    types = '[{"kind": "type", "values": ["system/compact_boundry"]}]'
    code, message = refused("system/compact_boundry", "system", STORED, ": did you mean system/compact_boundary?")
    error = {"ok": False, "error": {"code": code, "message": message}}
    for path, params in (("sessions/search", {"query": "needle", "eventFilters": types}),
                         ("events/search", {"sessionId": "s1", "query": "needle", "filters": types}),
                         ("session/s1/events", {"filters": types})):
        response = await ds.client.get(f"/-/obelisk/api/session-query/{path}", params=params)
        assert (response.status_code, response.json()) == (400, error), path
    found = await ds.client.get("/-/obelisk/api/session-query/session/s1/events",
                                params={"filters": '[{"kind": "type", "values": ["attachment/hook_success"]}]'})
    assert (found.status_code, [doc["id"] for doc in found.json()]) == (200, ["s1b"])


def test_from_the_cli_a_subtype_of_no_event_is_the_filter_code(toy):
    sessions(toy)
    script = 'return session_query.filterEvents("s2", [{"kind": "type", "values": ["scroll/prat"]}])'
    result = CliRunner().invoke(cli, ["query", "-c", script, "--db", str(toy.db)])
    code, message = refused("scroll/prat", "scroll", STORED, ": did you mean scroll/part?")
    assert (result.exit_code, json.loads(result.stdout)) == (1, {"ok": False, "error": {"code": code, "message": message}})
    script = 'return session_query.filterEvents("s2", [{"kind": "type", "values": ["scroll/part"]}])'
    result = CliRunner().invoke(cli, ["query", "-c", script, "--db", str(toy.db)])
    assert (result.exit_code, [doc["id"] for doc in json.loads(result.stdout)]) == (0, ["s2a"])
