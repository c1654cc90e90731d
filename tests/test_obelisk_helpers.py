"""The Obelisk helpers: shapes pinned to the reference, values read from the corpus files."""

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import zstandard

from datasette_obelisk.query import obelisk as o
from datasette_obelisk.query.dashboard import totals
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.memories import remember
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.store import derive
from datasette_obelisk.store.db import connect, transaction
from datasette_obelisk.store.fingerprint import hashes_at
from datasette_obelisk.store.ingest import ingest
from helper_fixtures import (  # noqa: F401 (fixtures)
    CLAUDE,
    CODEX,
    SEED,
    build_toy_db,
    corpus_db,
    corpus_line,
    execute,
    line_offset,
    ro,
)
from toy_source import ToySource

SAMPLE = CLAUDE / "simonw__claude-code-transcripts" / "sample_session.jsonl"
EDGE = CLAUDE / "daaain__claude-code-log" / "edge_cases.jsonl"
EXPLORE = CLAUDE / "marot__spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl"
ROLLOUT = CODEX / "daaain__claude-code-log/sessions/2026/01/02/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
ROLLOUT_THREAD = "codex:11111111-1111-4111-8111-111111111111"

# The shapes, as the reference writes them (checked against its text below).
MESSAGE_KEYS = "uuid, text, content_type, is_meta, role, timestamp, model, cwd, source"
SEARCH_SESSION_KEYS = "id, title, project, started_at, source"
SEARCH_KEYS = "message, session, rank, context"
CONTEXT_KEYS = "message, parentChain, session, subagent, workflow"
RAW_KEYS = "text, totalLength, offset, limit, hasMore"
OVERVIEW_PROJECT_KEYS = "project, project_path, source, confidence"
OVERVIEW_SESSION_KEYS = "id, title, project, project_path, started_at, ended_at, git_branch, message_count, source"
OVERVIEW_MEMORY_KEYS = "id, path, anchors, summary, session_id, project, created_at"
TOOL_CALL_KEYS = "id, message_uuid, name, input_json"
FILE_SESSION_KEYS = "id, title, project"
FAILURE_KEYS = "toolCall, result, session, nextMessages"
GLOBALS = (
    "sql, search, context, trace, thread, raw,\n"
    "overview, sessions, recent, summaries, memories,\n"
    "subagents, workflows, workflowTree, fileHistory, failures"
)


def keys(text: str) -> set[str]:
    return {k.strip() for k in text.replace("\n", " ").split(",")}


def uuids(messages) -> list[str]:
    return [m["uuid"] for m in messages]


# -- the shapes match the reference -------------------------------------------


@pytest.mark.skipif(not SEED.exists(), reason="seed text not available")
@pytest.mark.parametrize(
    "fragment",
    [
        "message: { " + MESSAGE_KEYS + " }",
        "session: { " + SEARCH_SESSION_KEYS + " }",
        "{ " + CONTEXT_KEYS + " } | null",
        "{ " + RAW_KEYS + " } | null",
        "toolCall: { " + TOOL_CALL_KEYS + " }",
        "session: { " + FILE_SESSION_KEYS + " }",
        "Array<{ " + FAILURE_KEYS + " }>",
        "{ " + OVERVIEW_SESSION_KEYS + " }",
        "{ " + OVERVIEW_MEMORY_KEYS + " }",
        GLOBALS,
    ],
)
def test_pinned_shapes_are_the_references(fragment):
    assert fragment in SEED.read_text()


def test_helpers_are_bound_under_the_references_names(ro):
    bound = o.helpers(ro)
    assert set(bound) == keys(GLOBALS)
    assert bound["recent"](1) == o.recent(ro, 1)


# -- search -------------------------------------------------------------------


def test_search_hit_shape_and_values(ro):
    hits = o.search(ro, "goodbye", {"source": "claude"})
    assert len(hits) == 1
    hit = hits[0]
    assert set(hit) == keys(SEARCH_KEYS)
    assert set(hit["message"]) == keys(MESSAGE_KEYS)
    assert set(hit["session"]) == keys(SEARCH_SESSION_KEYS)
    assert hit["message"] == {
        "uuid": "msg-006",
        "text": "Now add a goodbye function",
        "content_type": "text",
        "is_meta": 0,
        "role": "user",
        "timestamp": "2025-12-24T10:01:00.000Z",
        "model": None,
        "cwd": None,
        "source": "claude",
    }
    assert hit["session"] == {
        "id": "sample_session",
        "title": "Create a hello world function",  # the summary line names a leaf that is not in the file
        "project": "simonw__claude-code-transcripts",
        "started_at": "2025-12-24T10:00:00.000Z",
        "source": "claude",
    }
    assert isinstance(hit["rank"], float) and hit["rank"] < 0
    # The six nearest messages in time, in order: everything else in the session.
    assert uuids(hit["context"]) == ["msg-001", "msg-002", "msg-003", "msg-004", "msg-005", "msg-007"]
    assert all(set(m) == keys(MESSAGE_KEYS) for m in hit["context"])


def test_search_filters(ro):
    for source in ("claude", "codex"):
        hits = o.search(ro, "file", {"source": source, "limit": 50})
        assert hits and {h["message"]["source"] for h in hits} == {source}
    assert "msg-006" in uuids(h["message"] for h in o.search(ro, "goodbye"))
    assert o.search(ro, "goodbye", {"sessionId": "edge_cases"}) == []
    assert uuids(h["message"] for h in o.search(ro, "goodbye", "sample_session")) == ["msg-006"]
    assert uuids(h["message"] for h in o.search(ro, "goodbye", {"project": "simonw%"})) == ["msg-006"]
    assert o.search(ro, "goodbye", {"project": "simonw%", "after": "2025-12-24T10:01:01Z"}) == []
    assert uuids(h["message"] for h in o.search(ro, "goodbye", {"project": "simonw%", "before": "2025-12-25"})) == ["msg-006"]
    assert o.search(ro, "goodbye", {"project": "simonw%", "before": "2025-12-24T10:00:59Z"}) == []
    assert o.search(ro, "goodbye", {"cwd": "/nowhere%"}) == []
    assert uuids(h["message"] for h in o.search(ro, "synthetic files", {"cwd": "/workspace/%", "source": "codex"}))


def test_an_excluded_session_is_searched_when_asked_for_by_id(tmp_path):
    # A guardian (auto-review) thread stays out of a search of everything, but one restricted
    # to it finds its text, as sessions() lists it when asked for by id and thread() reads it.
    db = build_toy_db(tmp_path, {
        "main": [{"id": "m1", "text": "review the walrus module"}],
        "guard": [{"id": "g1", "text": "walrus command risk is low"}],
    })
    execute(db, "UPDATE sessions SET is_excluded = 1 WHERE id = 'guard'")
    with connect_readonly(db) as conn:
        assert uuids(h["message"] for h in o.search(conn, "walrus")) == ["m1"]
        assert uuids(h["message"] for h in o.search(conn, "walrus", "guard")) == ["g1"]
        assert [s["id"] for s in o.sessions(conn, "guard")] == ["guard"]
        assert uuids(o.thread(conn, "guard")) == ["g1"]


def test_search_limit_orders_by_rank(ro):
    hits = o.search(ro, "hello", 3)
    assert len(hits) == 3
    assert [h["rank"] for h in hits] == sorted(h["rank"] for h in hits)


def test_search_skips_meta_lines_unless_asked(ro):
    # edge_006 starts with "Caveat: The messages below were generated": injected text.
    assert o.search(ro, "Caveat", "edge_cases") == []
    assert uuids(h["message"] for h in o.search(ro, "Caveat", {"sessionId": "edge_cases", "includeMeta": True})) == ["edge_006"]
    assert o.search(ro, "Caveat", session_id="edge_cases", include_meta=True)[0]["message"]["is_meta"] == 1


def test_search_honours_fts5_syntax(ro):
    assert uuids(h["message"] for h in o.search(ro, '"goodbye function"')) == ["msg-006"]
    found = uuids(h["message"] for h in o.search(ro, "goodbye OR ready", {"sessionId": "sample_session"}))
    assert sorted(found) == ["msg-006", "msg-007"]


def test_search_finds_unicode_text(tmp_path):
    db = build_toy_db(tmp_path, {"s1": [
        {"id": "a", "text": "Testing special characters: café, naïve, résumé, 中文, 🎉 emojis"},
        {"id": "b", "text": "plain ascii"},
    ]})
    with connect_readonly(db) as conn:
        assert uuids(h["message"] for h in o.search(conn, "中文")) == ["a"]
        assert uuids(h["message"] for h in o.search(conn, "naive resume")) == ["a"]
        assert uuids(h["message"] for h in o.search(conn, "café 🎉")) == ["a"]
        assert uuids(h["message"] for h in o.search(conn, "🎉")) == ["a"]  # (an emoji is a word)
        assert o.search(conn, "🚀") == []


@pytest.mark.parametrize(
    "text",
    ["foo-bar", "c++", '"quotes', "/src/x.py", "don't", "🎉", "日本語", "NOT", "a AND", "x:y", "((", "*", "^", "NEAR(", "\x00", "'; DROP TABLE messages; --"],
)
def test_awkward_search_text_never_raises(ro, text):
    assert isinstance(o.search(ro, text), list)


def test_awkward_text_falls_back_to_its_tokens(ro):
    # FTS5 rejects /project/hello.py; its tokens find the Write call in msg-002.
    assert "msg-002" in uuids(h["message"] for h in o.search(ro, "/project/hello.py"))
    assert "edge_002" in uuids(h["message"] for h in o.search(ro, '"Great example'))


def test_the_fallback_keeps_every_word(ro):
    # FTS5 rejects "todo-app": the fallback ANDs every token, the last one too.
    words = "todo-app" + " todo" * 11
    assert o.search(ro, words)
    assert o.search(ro, words + " zzqqxnonexistent") == []
    assert o.safe_match(words + " zzqqxnonexistent") == '"todo" "app" "zzqqxnonexistent"'


def test_the_fallback_matches_on_a_thirteenth_word(tmp_path):
    words = [f"w{n}" for n in range(13)]
    db = build_toy_db(tmp_path, {"s1": [
        {"id": "all", "text": " ".join(words)},
        {"id": "twelve", "text": " ".join(words[:12])},
    ]})
    with connect_readonly(db) as conn:
        assert uuids(h["message"] for h in o.search(conn, "w0-w1 " + " ".join(words[2:]))) == ["all"]


def test_search_modes(ro):
    assert uuids(h["message"] for h in o.search(ro, "goodbye function", {"mode": "phrase"})) == ["msg-006"]
    assert uuids(h["message"] for h in o.search(ro, "function goodbye", {"mode": "terms"})) == ["msg-006"]
    assert o.search(ro, "function goodbye", {"mode": "phrase"}) == []
    with pytest.raises(QueryError) as error:
        o.search(ro, "foo-bar", {"mode": "raw"})
    assert error.value.code == "SESSION_QUERY_INVALID_QUERY"


def test_long_hits_are_clipped_around_the_match(tmp_path):
    text = "filler " * 3000 + "needle in the middle " + "filler " * 3000
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": text, "ts": "2026-01-01T00:00:00Z"}]})
    with connect_readonly(db) as conn:
        hit = o.search(conn, "needle")[0]["message"]["text"]
    assert len(hit) < o.MAX_TEXT + 40
    assert hit.startswith("…") and "needle in the middle" in hit and hit.endswith("chars]")


def test_long_texts_are_clipped_alike_wherever_sqlite_clips_them(tmp_path):
    # thread() and a hit's neighbours clip in SQL, so a multi-MB output is never read whole.
    long = "é" * 25_000 + " needle"
    nul = "a\x00b" + "x" * 50_000  # SQLite's length() and substr() stop at a NUL
    db = build_toy_db(tmp_path, {"s1": [
        {"id": "a", "text": long, "ts": "2026-01-01T00:00:00Z"},
        {"id": "b", "text": "needle", "ts": "2026-01-01T00:00:01Z"},
        {"id": "c", "text": "", "ts": "2026-01-01T00:00:02Z"},
        {"id": "d", "text": "d", "ts": "2026-01-01T00:00:03Z"},
    ]})
    with sqlite3.connect(db) as conn:  # (a log's escaped NUL is read as U+FFFD; an older archive may hold one)
        conn.execute("UPDATE messages SET text = ? WHERE uuid = 'd'", [nul])
    with connect_readonly(db) as conn:
        assert [m["text"] for m in o.thread(conn, "s1")] == [o.clip(long), "needle", "", o.clip(nul)]
        [hit] = [h for h in o.search(conn, "needle") if h["message"]["uuid"] == "b"]
        assert [m["text"] for m in hit["context"]] == [o.clip(long, o.NEIGHBOUR_TEXT), "", o.clip(nul, o.NEIGHBOUR_TEXT)]
    assert o.clip(long).endswith("é…[+15007 chars]") and len(o.clip(long)) == 10_000 + len("…[+15007 chars]")


@pytest.mark.parametrize("value", ["", " ", "\t\n"])
def test_a_blank_required_id_is_refused_as_the_command_line_and_http_refuse_it(ro, value):
    # A session id (or message uuid, run id, path) that is empty or only whitespace names
    # nothing: refused, never an empty answer for a session that cannot exist.
    for call in (lambda: o.thread(ro, value), lambda: o.thread_page(ro, value), lambda: o.context(ro, value),
                 lambda: o.trace(ro, value), lambda: o.workflow_tree(ro, value),
                 lambda: o.search(ro, "hello", {"sessionId": value}), lambda: o.failures(ro, {"sessionId": value})):
        with pytest.raises(QueryError) as error:
            call()
        assert error.value.code == "OBELISK_INVALID_ARGUMENT", error.value.message


@pytest.mark.parametrize(
    "opts, message",
    [
        ({"sesionId": "x"}, "search() has no option 'sesionId'"),
        ({"limit": 0}, "limit must be between 1 and 1000"),
        ({"limit": "5"}, "limit must be an integer"),
        ({"includeMeta": "yes"}, "includeMeta must be a bool"),
        (True, "options must be a dict"),
        ({"sessionId": ""}, "search(): sessionId must not be empty"),
        ({"project": "%x" * 5001}, "search(): project is longer than 10,000 characters"),
        ({"cwd": "/" * 60000}, "search(): cwd is longer than 10,000 characters"),
        # one option in both spellings: which one was meant? (over HTTP a repeated parameter is refused too)
        ({"sessionId": "a", "session_id": "b"}, "search() was given sessionId twice ('sessionId' and 'session_id')"),
        ({"includeMeta": False, "include_meta": True}, "search() was given includeMeta twice"),
    ],
)
def test_bad_options_are_refused(ro, opts, message):
    with pytest.raises(QueryError) as error:
        o.search(ro, "hello", opts)
    assert error.value.code == "OBELISK_INVALID_ARGUMENT"
    assert message in error.value.message


@pytest.mark.parametrize(
    "helper, args, options, message",
    [
        ("thread", ("sample_session",), {"offset": 2**63}, "thread(): offset is too large"),
        ("thread", ("sample_session",), {"offset": 10**30}, "thread(): offset is too large"),
        ("sessions", (), {"sessions": [1, 2]}, "sessions(): sessions must be a list of strings"),
        ("sessions", (), {"sessions": [None]}, "sessions(): sessions must be a list of strings"),
        ("overview", (), {"project": "x" * 10_001}, "overview(): project is longer than 10,000 characters"),
    ],
)
def test_out_of_range_options_are_refused_before_sqlite_sees_them(ro, helper, args, options, message):
    with pytest.raises(QueryError) as error:
        o.HELPERS[helper](ro, *args, options)
    assert (error.value.code, error.value.message) == ("OBELISK_INVALID_ARGUMENT", message)


def test_search_modes_are_named_in_any_case_and_fts_is_the_default(ro):
    default = o.search(ro, "hello")
    assert default and o.search(ro, "hello", {"mode": "fts"}) == o.search(ro, "hello", {"mode": " FTS "}) == default
    assert o.search(ro, "hello", {"mode": "TERMS"}) == o.search(ro, "hello", {"mode": "terms"})
    with pytest.raises(QueryError) as error:
        o.search(ro, "hello", {"mode": "fuzzy"})
    assert error.value.code == "SESSION_QUERY_INVALID_QUERY"
    assert error.value.message == "unknown query mode 'fuzzy'; use fts or one of terms, phrase, raw"


@pytest.mark.parametrize("mode", [None, "fts", "terms", "phrase", "raw"])
def test_a_search_longer_than_the_query_cap_is_refused_in_every_mode(ro, mode):
    with pytest.raises(QueryError) as error:
        o.search(ro, "x" * 1001, {"mode": mode} if mode else None)
    assert (error.value.code, error.value.message) == (
        "OBELISK_INVALID_ARGUMENT", "search() takes at most 1,000 characters of query text, not 1,001"
    )


@pytest.mark.parametrize(
    "helper, args, options, message",
    [
        ("raw", ("msg-003",), "msg-003", "raw() options must be a dict or an integer (its limit)"),
        ("thread", ("sample_session",), "sample_session", "thread() options must be a dict or an integer (its limit)"),
        ("fileHistory", ("/project/hello.py",), "Write", "fileHistory() options must be a dict or an integer (its limit)"),
        ("fileHistory", ("/project/hello.py",), False, "fileHistory() options must be a dict or an integer (its limit)"),
        ("search", ("hello",), 2.5, "search() options must be a dict, a string (its sessionId) or an integer (its limit)"),
        ("overview", (), ["x"], "overview() options must be a dict, a string (its project) or an integer (its limit)"),
    ],
)
def test_wrong_typed_options_name_what_the_helper_takes(ro, helper, args, options, message):
    with pytest.raises(QueryError) as error:
        o.HELPERS[helper](ro, *args, options)
    assert (error.value.code, error.value.message) == ("OBELISK_INVALID_ARGUMENT", message)


SOURCE_HELPERS = [
    ("search", ("hello",)), ("sessions", ()), ("summaries", ()), ("memories", ()), ("subagents", ()),
    ("workflows", ()), ("fileHistory", ("/project/hello.py",)), ("failures", ()),
]


@pytest.mark.parametrize("helper, args", SOURCE_HELPERS)
def test_an_unknown_source_is_refused_naming_the_installed_ones(ro, helper, args):
    with pytest.raises(QueryError) as error:
        o.HELPERS[helper](ro, *args, {"source": "claud"})
    message = f"{helper}(): unknown source claud; installed: claude, codex, gemini"
    assert (error.value.code, error.value.message) == ("OBELISK_INVALID_ARGUMENT", message)
    assert o.HELPERS[helper](ro, *args, {"source": "gemini"}) == []  # installed, nothing stored


@pytest.mark.parametrize("helper, args", SOURCE_HELPERS)
def test_a_script_refused_a_source_is_told_which_helper_refused_it(corpus_db, helper, args):
    from click.testing import CliRunner

    from datasette_obelisk.cli import cli

    call = f"{helper}({', '.join(map(json.dumps, (*args, {'source': ' '})))})"
    result = CliRunner().invoke(cli, ["query", "-c", f"return {call}", "--db", str(corpus_db)])
    error = {"code": "OBELISK_INVALID_ARGUMENT", "message": f"{helper}(): source must not be blank"}
    assert (result.exit_code, json.loads(result.stdout)) == (1, {"ok": False, "error": error})


@pytest.mark.parametrize("helper, args", SOURCE_HELPERS)
def test_source_all_is_no_source(ro, helper, args):
    assert o.HELPERS[helper](ro, *args, {"source": "all"}) == o.HELPERS[helper](ro, *args)


@pytest.mark.parametrize("helper, args", SOURCE_HELPERS)
def test_a_source_is_named_in_any_case(ro, helper, args):
    assert o.HELPERS[helper](ro, *args, {"source": "Claude"}) == o.HELPERS[helper](ro, *args, {"source": "claude"})
    assert o.HELPERS[helper](ro, *args, {"source": "ALL"}) == o.HELPERS[helper](ro, *args)


def test_the_forms_named_are_accepted(ro):
    assert o.raw(ro, "msg-003", 5)["text"] == corpus_line(SAMPLE, 4).decode()[:5]
    assert uuids(o.thread(ro, "sample_session", 2)) == ["msg-001", "msg-002"]
    assert len(o.file_history(ro, "/project/hello.py", 1)) == 1
    assert o.overview(ro, "simonw%")["current"]["project"]["project"] == "simonw__claude-code-transcripts"


# -- context, trace, thread ----------------------------------------------------


def test_context_of_a_message_after_compaction(ro):
    found = o.context(ro, "p1a")
    assert set(found) == keys(CONTEXT_KEYS)
    assert found["message"]["uuid"] == "p1a" and found["message"]["text"] == "Final answer"
    # p1a -> p1u -> b2a2 -> cs -> cb, whose logical parent b2a2 closes the loop.
    assert uuids(found["parentChain"]) == ["cb", "cs", "b2a2", "p1u"]
    assert found["session"]["id"] == "dag_compact_after_rewind_preserved"
    assert (found["subagent"], found["workflow"]) == (None, None)


def test_context_of_a_subagent_message(ro):
    found = o.context(ro, "ec72d4f9-49fc-499c-bef2-a4cdf59307ad")  # first line of agent-a36efb2a1231c41e2.jsonl
    assert found["parentChain"] == []
    assert found["session"]["id"] == "ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2"
    assert found["subagent"]["agent_id"] == "a36efb2a1231c41e2"
    assert found["subagent"]["description"] == "Round 2: alice comparison"  # from the .meta.json


def test_context_of_an_unknown_message_is_none(ro):
    assert o.context(ro, "no-such-uuid") is None


def test_trace_is_root_first_and_includes_the_message(ro):
    assert uuids(o.trace(ro, "p1a")) == ["cb", "cs", "b2a2", "p1u", "p1a"]
    assert uuids(o.trace(ro, "b1a")) == ["u1", "a1", "b1u", "b1a"]  # a rewound branch still traces
    assert uuids(o.trace(ro, "msg-007")) == ["msg-007"]  # no parentUuid in this file
    assert o.trace(ro, "no-such-uuid") == []


def test_trace_crosses_a_compact_boundary_by_its_logical_parent(tmp_path):
    def line(**fields):
        base = {"sessionId": "s", "cwd": "/w", "version": "2.0.0"}
        return __import__("json").dumps({**base, **fields})

    lines = [
        line(type="user", uuid="u1", parentUuid=None, timestamp="2026-01-01T00:00:00Z", message={"role": "user", "content": "start"}),
        line(type="assistant", uuid="a1", parentUuid="u1", timestamp="2026-01-01T00:00:01Z", message={"role": "assistant", "content": [{"type": "text", "text": "ok"}]}),
        line(type="system", subtype="compact_boundary", uuid="cb", parentUuid=None, logicalParentUuid="a1", timestamp="2026-01-01T00:01:00Z", content="Conversation compacted"),
        line(type="user", uuid="cs", parentUuid="cb", isCompactSummary=True, timestamp="2026-01-01T00:01:01Z", message={"role": "user", "content": "summary of before"}),
        line(type="assistant", uuid="a2", parentUuid="cs", timestamp="2026-01-01T00:01:02Z", message={"role": "assistant", "content": [{"type": "text", "text": "after"}]}),
    ]
    project = tmp_path / "projects" / "-w"
    project.mkdir(parents=True)
    (project / "s.jsonl").write_text("\n".join(lines) + "\n")
    db = tmp_path / "c.db"
    ingest(db, {"claude": tmp_path / "projects"})
    with connect_readonly(db) as conn:
        assert uuids(o.trace(conn, "a2")) == ["u1", "a1", "cb", "cs", "a2"]


def test_thread_is_the_session_in_order(ro):
    messages = o.thread(ro, "sample_session")
    assert uuids(messages) == [f"msg-00{n}" for n in range(1, 8)]
    assert messages[0]["text"] == "Create a hello world function"
    assert uuids(o.thread(ro, "sample_session", {"limit": 2, "offset": 5})) == ["msg-006", "msg-007"]
    # edge_006 and edge_008 are injected text (a caveat, a command's output): only with
    # includeMeta; edge_007 between them is the command the user typed.
    assert [u for u in uuids(o.thread(ro, "edge_cases")) if u in ("edge_006", "edge_007", "edge_008")] == ["edge_007"]
    assert {"edge_006", "edge_008"} <= set(uuids(o.thread(ro, "edge_cases", {"includeMeta": True})))
    assert o.thread(ro, "no-such-session") == []


# 1,230 messages, 1,569 with meta rows: the 8 user items of its 4 context blocks
# (lines 4-5, 131-132, 219-220, 450-451) are meta.
LONG_THREAD = "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9"


def test_thread_returns_the_whole_session(ro):
    assert len(o.thread(ro, LONG_THREAD)) == 1230
    assert len(o.thread(ro, LONG_THREAD, {"includeMeta": True})) == 1569
    assert o.thread(ro, LONG_THREAD, {"offset": 1000}) == o.thread(ro, LONG_THREAD)[1000:]


def test_thread_pages_say_what_remains(ro):
    first = o.thread_page(ro, LONG_THREAD, {"limit": 1000})
    assert (len(first.items), first.offset, first.total, first.remaining) == (1000, 0, 1230, 230)
    last = o.thread_page(ro, LONG_THREAD, {"limit": 1000, "offset": 1000})
    assert (len(last.items), last.offset, last.total, last.remaining) == (230, 1000, 1230, 0)
    assert first.items + last.items == o.thread(ro, LONG_THREAD)
    beyond = o.thread_page(ro, LONG_THREAD, {"offset": 2000})
    assert (beyond.items, beyond.remaining) == ([], 0)
    assert o.thread_page(ro, "no-such-session") == o.Page([], 0, 0)



def test_reading_a_whole_thread_page_by_page_orders_the_session_once(ro):
    """``thread_pages`` gives the pages ``thread_page`` gives one after another,
    putting the session in thread order once, not once a page (each page of
    ``thread_page`` orders the whole session: reading a 300,000-message session
    in 30 pages took 41 s)."""
    orderings = []
    ro.set_trace_callback(lambda sql: orderings.append(sql) if "OVER (ORDER BY seq)" in sql else None)
    try:
        pages = list(o.thread_pages(ro, LONG_THREAD, {"includeMeta": True, "offset": 3}, step=100))
    finally:
        ro.set_trace_callback(None)
    assert len(orderings) == 1 and len(pages) == 16
    expected, offset = [], 3
    while not expected or expected[-1].remaining:
        expected.append(o.thread_page(ro, LONG_THREAD, {"includeMeta": True, "limit": 100, "offset": offset}))
        offset += 100
    assert pages == expected
    assert list(o.thread_pages(ro, "no-such-session")) == [o.Page([], 0, 0)]

def test_a_thread_over_the_cap_asks_to_page(ro, monkeypatch):
    monkeypatch.setattr(o, "MAX_THREAD", 1000)
    with pytest.raises(QueryError) as error:
        o.thread(ro, LONG_THREAD)
    assert (error.value.code, error.value.message) == (
        "OBELISK_PAYLOAD_TOO_LARGE",
        f"thread(): session {LONG_THREAD!r} has 1230 messages, more than the 1000 one call returns: "
        "page through it with limit and offset",
    )
    with pytest.raises(QueryError) as error:
        o.thread(ro, LONG_THREAD, {"offset": 100})
    assert "has 1230 messages (1130 from offset 100), more than the 1000" in error.value.message
    assert len(o.thread(ro, LONG_THREAD, {"offset": 230})) == 1000
    assert len(o.thread(ro, LONG_THREAD, {"limit": 1000})) == 1000


def test_thread_is_ordered_by_time_not_by_log_line(ro):
    # b2a2 (10:21) is logged after the compaction (cb 10:30, cs 10:30:01).
    assert uuids(o.thread(ro, "dag_compact_after_rewind_preserved")) == [
        "u1", "a1", "b1u", "b1a", "b2u", "b2a", "b2u2", "b2a2", "cs", "p1u", "p1a",
    ]
    assert uuids(o.thread(ro, "dag_compact_after_rewind_preserved", {"includeMeta": True})) == [
        "u1", "a1", "b1u", "b1a", "b2u", "b2a", "b2u2", "b2a2", "cb", "cs", "p1u", "p1a",
    ]
    # assistant_004 (10:02) is the last line of the file, and the earliest.
    assert uuids(o.thread(ro, "edge_cases"))[:2] == ["assistant_004", "edge_001"]


def test_thread_places_untimed_lines_by_log_order(tmp_path):
    stamps = {
        "u0": None,  # before any timestamp: first
        "t1": "2026-01-01T10:00:05Z",
        "u2": None,  # right after t1
        "t3": "2026-01-01T10:00:01.000Z",
        "x4": "[trimmed]",  # no usable time: right after t3
        "t5": "2026-01-01T11:00:03+01:00",  # 10:00:03Z
        "t6": "2026-01-01T10:00:05.000Z",  # t1's instant: log order decides
    }
    db = build_toy_db(tmp_path, {"s1": [{"id": uuid, "text": uuid, "ts": ts} for uuid, ts in stamps.items()]})
    with connect_readonly(db) as conn:
        assert uuids(o.thread(conn, "s1")) == ["u0", "t3", "x4", "t5", "t1", "u2", "t6"]
        assert uuids(o.thread(conn, "s1", {"limit": 3, "offset": 2})) == ["x4", "t5", "t1"]


# -- raw --------------------------------------------------------------------------


def test_raw_returns_the_original_line(ro):
    original = corpus_line(SAMPLE, 4).decode()  # msg-003, the first tool result
    found = o.raw(ro, "msg-003")
    assert set(found) == keys(RAW_KEYS)
    assert found == {"text": original, "totalLength": len(original), "offset": 0, "limit": 10_000, "hasMore": False}


def test_raw_finds_files_ingested_from_a_relative_folder(tmp_path, monkeypatch):
    shutil.copytree(SAMPLE.parent, tmp_path / "logs" / "projects" / "p")
    monkeypatch.chdir(tmp_path)
    ingest(tmp_path / "rel.db", {"claude": Path("logs")})
    monkeypatch.chdir(tmp_path / "logs")  # somewhere else, as Datasette may be
    with connect_readonly(tmp_path / "rel.db") as conn:
        assert o.raw(conn, "msg-003")["text"] == corpus_line(SAMPLE, 4).decode()
        assert {Path(path).is_absolute() for (path,) in conn.execute("SELECT path FROM source_files")} == {True}


def test_raw_windows_by_characters(ro):
    original = corpus_line(EXPLORE, 6).decode()  # 2740 bytes, 2640 characters ("→" and friends)
    uuid = "3e72c6d8-d33e-4ddf-bf77-ee3b4b3f898d"
    total = len(original)
    assert total < len(original.encode())
    first = o.raw(ro, uuid, {"limit": 1000})
    assert first == {"text": original[:1000], "totalLength": total, "offset": 0, "limit": 1000, "hasMore": True}
    rest = o.raw(ro, uuid, {"offset": 1000, "limit": total})
    assert first["text"] + rest["text"] == original and rest["hasMore"] is False
    assert o.raw(ro, uuid, offset=total)["text"] == ""


def test_raw_of_a_replayed_uuid_is_the_stored_line(ro):
    # edge_011 appears on lines 11 and 12 with other text: the second is kept under its offset.
    assert o.raw(ro, "edge_011")["text"] == corpus_line(EDGE, 11).decode()
    assert o.raw(ro, f"edge_011@{line_offset(EDGE, 12)}")["text"] == corpus_line(EDGE, 12).decode()


def test_raw_of_a_codex_line(ro):
    uuid = f"{ROLLOUT_THREAD}:{line_offset(ROLLOUT, 8)}"  # the apply_patch call
    assert o.raw(ro, uuid)["text"] == corpus_line(ROLLOUT, 8).decode()


@pytest.mark.skipif(not ROLLOUT.exists(), reason="shared corpus not found")
def test_raw_streams_through_zstd(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / (ROLLOUT.stem + ".jsonl.zst")).write_bytes(zstandard.ZstdCompressor().compress(ROLLOUT.read_bytes()))
    db = tmp_path / "z.db"
    ingest(db, {"codex": tmp_path})
    with connect_readonly(db) as conn:
        uuid = f"{ROLLOUT_THREAD}:{line_offset(ROLLOUT, 8)}"
        assert o.raw(conn, uuid)["text"] == corpus_line(ROLLOUT, 8).decode()


def test_raw_can_be_redacted(ro):
    original = corpus_line(SAMPLE, 4).decode()
    assert o.raw(ro, "msg-003", redact=str.upper)["text"] == original.upper()
    bound = o.helpers(ro, redact=str.upper)["raw"]
    assert bound("msg-003", {"limit": 20})["text"] == original.upper()[:20]
    for helpers in (o.helpers(ro, redact=str.upper), o.helpers(ro)):
        with pytest.raises(QueryError) as error:
            helpers["raw"]("msg-003", redact=None)
        assert error.value.code == "OBELISK_INVALID_ARGUMENT"


def test_raw_of_an_unknown_message_is_none(ro):
    assert o.raw(ro, "no-such-uuid") is None


def test_raw_says_when_the_file_is_gone_or_rewritten(tmp_path):
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "first line"}, {"id": "b", "text": "second"}]})
    path = tmp_path / "logs" / "s1.jsonl"
    with connect_readonly(db) as conn:
        assert o.raw(conn, "b")["text"] == '{"id": "b", "text": "second"}'
        path.write_bytes(b'{"id": "x"}\n' * 5)
        with pytest.raises(QueryError) as rewritten:
            o.raw(conn, "b")
        path.unlink()
        with pytest.raises(QueryError) as gone:
            o.raw(conn, "b")
    assert (rewritten.value.code, gone.value.code) == ("OBELISK_NOT_FOUND", "OBELISK_NOT_FOUND")
    assert "rewritten since it was indexed" in rewritten.value.message
    assert "is no longer on disk" in gone.value.message and str(path) in gone.value.message



SECRET = b"password=hunter2\n"


def fingerprint_of(path: Path, cursor: int) -> tuple[str, str]:
    with open(path, "rb") as fp:
        return hashes_at(fp, cursor)


@pytest.mark.parametrize("case", ["unfingerprinted", "past the cursor", "a device", "not zstd"])
def test_raw_reads_only_bytes_the_archive_fingerprinted(tmp_path, case):
    """A database names the files it read and can be made anywhere: raw() never reads a file, or
    bytes of one, that its ingest did not fingerprint (``datasette their.db`` must not serve the
    server's own files, /proc/self/environ and DATASETTE_SECRET included)."""
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "first line"}]})
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    path, compression, cursor, hashes = {
        "unfingerprinted": (secret, None, 0, (None, None)),
        "past the cursor": (secret, None, 0, fingerprint_of(secret, 0)),  # the hashes of no bytes
        "a device": (Path("/dev/zero"), None, len(SECRET), fingerprint_of(Path("/dev/zero"), len(SECRET))),
        "not zstd": (secret, "zstd", len(SECRET), fingerprint_of(secret, len(SECRET))),
    }[case]
    if not path.exists():
        pytest.skip(f"{path} does not exist here")
    execute(db, "INSERT INTO source_files (id, path, source, kind, compression, cursor, head_hash, tail_hash) "
                "VALUES (999, ?, 'toy', 'session', ?, ?, ?, ?)", [str(path), compression, cursor, *hashes])
    execute(db, "UPDATE messages SET file_id = 999, byte_offset = 0, byte_length = ? WHERE uuid = 'a'", [len(SECRET)])
    with connect_readonly(db) as conn, pytest.raises(QueryError) as refused:
        o.raw(conn, "a")
    assert refused.value.code == "OBELISK_NOT_FOUND" and "hunter2" not in refused.value.message


# -- sql ----------------------------------------------------------------------------


def test_sql_returns_dicts_with_bindings(ro):
    assert o.sql(ro, "SELECT uuid, role FROM messages WHERE session_id = ? AND seq <= ? ORDER BY seq", "sample_session", 2) == [
        {"uuid": "msg-001", "role": "user"},
        {"uuid": "msg-002", "role": "assistant"},
    ]
    assert o.sql(ro, "SELECT :a + :b AS n", {"a": 1, "b": 2}) == [{"n": 3}]
    assert o.sql(ro, "WITH x AS (SELECT 1 AS n) SELECT n FROM x; -- trailing comment") == [{"n": 1}]


@pytest.mark.parametrize(
    "statement, code",
    [
        ("DELETE FROM messages", "OBELISK_READ_ONLY"),
        ("SELECT 1; SELECT 2", "OBELISK_INVALID_SQL"),
        ("SELEKT 1", "OBELISK_INVALID_SQL"),
        ("SELECT * FROM no_such_table", "OBELISK_INVALID_SQL"),
        ("", "OBELISK_INVALID_SQL"),  # no statement at all
        ("  -- only a comment", "OBELISK_INVALID_SQL"),
    ],
)
def test_sql_refusals(ro, statement, code):
    with pytest.raises(QueryError) as error:
        o.sql(ro, statement)
    assert error.value.code == code


@pytest.mark.parametrize(
    "statement", ["DELETE FROM messages", "DROP TABLE summaries", "ATTACH ':memory:' AS other", "CREATE TEMP TABLE t (x)"]
)
def test_sql_on_a_connection_that_can_write_still_only_reads(tmp_path, statement):
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "first line"}]})
    conn = sqlite3.connect(db, isolation_level=None)
    if not statement.startswith("ATTACH"):  # prepared once, so in the statement cache
        conn.execute("BEGIN")
        conn.execute(statement)
        conn.execute("ROLLBACK")
    with pytest.raises(QueryError) as error:
        o.sql(conn, statement)
    assert error.value.code == "OBELISK_READ_ONLY"
    assert o.sql(conn, "SELECT COUNT(*) AS n FROM messages") == [{"n": 1}]
    conn.execute("INSERT INTO obelisk_state (key, value) VALUES ('mine', 'yes')")  # the connection is the caller's again
    assert conn.execute("SELECT value FROM obelisk_state WHERE key = 'mine'").fetchone() == ("yes",)


@pytest.mark.parametrize("statement", [
    "PRAGMA journal_mode = delete", "PRAGMA query_only = 0", "PRAGMA writable_schema = 1", "ATTACH '{new}' AS x",
    "VACUUM INTO '{new}'",
])
def test_sql_on_a_query_only_connection_of_the_caller_still_has_the_authorizer(tmp_path, statement):
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "first line"}]})
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA query_only = 1")
    new = tmp_path / "new.db"
    with pytest.raises(QueryError) as error:
        o.sql(conn, statement.format(new=new))
    assert error.value.code == "OBELISK_READ_ONLY"
    assert conn.execute("PRAGMA query_only").fetchone() == (1,) and not new.exists()
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_sql_binds_one_list_of_values(ro):
    assert o.sql(ro, "SELECT ? AS a, ? AS b", [1, "x"]) == [{"a": 1, "b": "x"}]
    assert o.sql(ro, "SELECT ? AS a", (None,)) == [{"a": None}]


BINDS = "SQLite binds None, integers, floats, text and bytes"


@pytest.mark.parametrize(
    "query, params, code, message",
    [
        ("select ? a", ([1, 2],), "OBELISK_INVALID_SQL",
         "Incorrect number of bindings supplied. The current statement uses 1, and there are 2 supplied."),
        ("select ? a", ([[1]],), "OBELISK_INVALID_ARGUMENT", f"sql(): binding 1 is a list; {BINDS}"),
        ("select ? a", (2**63,), "OBELISK_INVALID_ARGUMENT",
         f"sql(): binding 1 is an integer out of SQLite's 64-bit range; {BINDS}"),
        ("select :x a", ({"x": {1}},), "OBELISK_INVALID_ARGUMENT", f"sql(): binding :x is a set; {BINDS}"),
    ],
)
def test_sql_reports_its_own_binding_error_after_a_failed_statement(ro, query, params, code, message):
    o.sql(ro, query, {"x": 1} if ":x" in query else 1)  # now in the statement cache
    with pytest.raises(QueryError):
        o.sql(ro, "SELEKT 1")
    with pytest.raises(QueryError) as error:
        o.sql(ro, query, *params)
    assert (error.value.code, error.value.message) == (code, message)


LONE = "a\ud800"


@pytest.mark.parametrize("call", [
    lambda c: o.search(c, LONE), lambda c: o.search(c, "x", {"project": LONE}), lambda c: o.context(c, LONE),
    lambda c: o.trace(c, LONE), lambda c: o.thread(c, LONE), lambda c: o.raw(c, LONE),
    lambda c: o.sessions(c, {"project": LONE}), lambda c: o.file_history(c, LONE),
    lambda c: o.workflow_tree(c, LONE), lambda c: o.sql(c, "SELECT ? AS a", LONE),
    lambda c: o.failures(c, {"session_id": LONE}),
], ids=["search", "search-project", "context", "trace", "thread", "raw", "sessions", "fileHistory",
        "workflowTree", "sql", "failures"])
def test_a_lone_surrogate_in_an_argument_is_an_invalid_argument(ro, call):
    with pytest.raises(QueryError) as error:
        call(ro)
    assert error.value.code == "OBELISK_INVALID_ARGUMENT"
    assert error.value.message.endswith("an argument holds a lone surrogate, which UTF-8 cannot hold")


# -- orientation --------------------------------------------------------------------


def test_overview_from_an_exact_project_path(ro):
    found = o.overview(ro, {"cwd": "/project"})  # sample_session ran in /project
    assert set(found) == {"current", "current_project", "projects", "totals"}
    assert set(found["current"]["project"]) == keys(OVERVIEW_PROJECT_KEYS)
    assert found["current"] == {
        "cwd": "/project",
        "project": {
            "project": "simonw__claude-code-transcripts",
            "project_path": "/project",
            "source": "cwd_project_path",
            "confidence": "exact",
        },
    }
    current = found["current_project"]
    assert set(current) == {"project", "project_path", "session_total", "sessions", "memory_total", "memories"}
    assert (current["session_total"], current["memory_total"], current["memories"]) == (1, 0, [])
    assert current["sessions"] == [
        {
            "id": "sample_session",
            "title": "Create a hello world function",
            "project": "simonw__claude-code-transcripts",
            "project_path": "/project",
            "started_at": "2025-12-24T10:00:00.000Z",
            "ended_at": "2025-12-24T10:01:05.000Z",
            "git_branch": "main",
            "message_count": 4,  # two prompts, two answers; tool calls and results are not messages
            "source": "claude",
        }
    ]
    assert set(current["sessions"][0]) == keys(OVERVIEW_SESSION_KEYS)


def test_overview_inferences(ro):
    inside = o.overview(ro, {"cwd": "/project/src/deep"})["current"]["project"]
    assert (inside["project"], inside["source"], inside["confidence"]) == ("simonw__claude-code-transcripts", "cwd_project_path", "inferred")
    assert o.overview(ro, {"cwd": "/nowhere/at/all"})["current"] == {"cwd": "/nowhere/at/all", "project": None}
    assert o.overview(ro, {"cwd": "/nowhere/at/all"})["current_project"] is None
    given = o.overview(ro, "simonw__claude-code-transcripts")["current"]["project"]
    assert (given["source"], given["confidence"], given["project_path"]) == ("opts", "exact", "/project")
    pattern = o.overview(ro, "simonw%")["current"]["project"]
    assert (pattern["project"], pattern["confidence"]) == ("simonw__claude-code-transcripts", "inferred")
    unknown = o.overview(ro, {"project": "no-such-project"})
    assert unknown["current"]["project"] == {"project": "no-such-project", "project_path": None, "source": "opts", "confidence": "unknown"}
    assert unknown["current_project"]["sessions"] == []


@pytest.mark.parametrize("cwd", ["/project/", "/project/./", "/project//", "/elsewhere/../project"])
def test_overview_reads_a_given_folder_however_it_is_written(ro, cwd):
    # Each names /project, where sample_session ran: its project, exactly, as "/project" gives it.
    assert o.overview(ro, {"cwd": cwd})["current"] == {
        "cwd": "/project",
        "project": {
            "project": "simonw__claude-code-transcripts",
            "project_path": "/project",
            "source": "cwd_project_path",
            "confidence": "exact",
        },
    }


def test_overview_from_message_cwd(tmp_path):
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "x", "ts": "2026-01-01T00:00:00Z"}]})
    execute(db, "UPDATE sessions SET project = 'toy', project_path = '/repo'")
    execute(db, "UPDATE messages SET cwd = '/elsewhere/tmp'")
    with connect_readonly(db) as conn:
        found = o.overview(conn, cwd="/elsewhere/tmp")["current"]["project"]
        assert found == {"project": "toy", "project_path": "/repo", "source": "cwd_messages", "confidence": "inferred"}
        assert o.overview(conn, cwd="/repo", limit=1)["current_project"]["project_path"] == "/repo"


@pytest.mark.parametrize("shared", ["home", "/tmp", "/"])
def test_a_session_run_in_a_folder_of_many_projects_is_no_project_of_the_folders_below(tmp_path, shared):
    import pathlib

    folder = str(pathlib.Path.home()) if shared == "home" else shared
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "x", "ts": "2026-01-01T00:00:00Z"}]})
    execute(db, "UPDATE sessions SET project = 'toy', project_path = ?", [folder])
    with connect_readonly(db) as conn:
        assert o.overview(conn, cwd=os.path.join(folder, "work", "app"))["current"]["project"] is None
        assert o.overview(conn, cwd=folder)["current"]["project"]["confidence"] == "exact"  # run there itself


def test_overview_projects_and_totals(ro):
    found = o.overview(ro, {"cwd": "/nowhere", "projectLimit": 3})
    assert len(found["projects"]) == 3
    assert all(
        set(p) == {"project", "project_path", "session_count", "memory_count", "last_session_at", "last_memory_at", "recent_branches"}
        for p in found["projects"]
    )
    totals = found["totals"]
    assert set(totals) == {"projects", "sessions", "memories", "sources"}
    assert [s["source"] for s in totals["sources"]] == sorted(s["source"] for s in totals["sources"])
    assert {"claude", "codex"} <= {s["source"] for s in totals["sources"]}
    assert all(set(s) == {"source", "session_count", "last_session_at"} for s in totals["sources"])
    assert totals["sessions"] == sum(s["session_count"] for s in totals["sources"])
    simonw = [p for p in o.overview(ro, {"cwd": "/nowhere", "projectLimit": 100})["projects"] if p["project"].startswith("simonw")]
    assert simonw == [{
        "project": "simonw__claude-code-transcripts", "project_path": "/project", "session_count": 1, "memory_count": 0,
        "last_session_at": "2025-12-24T10:01:05.000Z", "last_memory_at": None, "recent_branches": ["main"],
    }]


# -- lists ---------------------------------------------------------------------------


def test_sessions_newest_first_with_filters(ro):
    rows = o.sessions(ro)
    ended = [r["ended_at"] for r in rows if r["ended_at"]]
    assert ended == sorted(ended, reverse=True)
    # Subagent transcripts are left out, but for those whose parent is not stored: marot__spotter's
    # two agent logs sit in <session>/subagents/ without the session's own log.
    orphans = ["fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-a93ccab", "fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-acompact-70d8e7"]
    assert sorted(r["id"] for r in rows if r["relationship"] in ("subagent", "workflow")) == orphans
    assert sorted(r["id"] for r in o.sessions(ro, {"project": "%spotter%"})) == orphans
    assert "marot__spotter" in {p["project"] for p in o.overview(ro)["projects"]}
    assert [r["id"] for r in o.sessions(ro, {"project": "simonw%"})] == ["sample_session"]
    assert [r["id"] for r in o.sessions(ro, {"project": "simonw%", "branch": "main"})] == ["sample_session"]
    assert o.sessions(ro, {"project": "simonw%", "branch": "dev"}) == []
    assert o.sessions(ro, {"project": "simonw%", "after": "2025-12-25"}) == []
    assert [r["id"] for r in o.sessions(ro, {"source": "codex", "sessionId": ROLLOUT_THREAD})] == [ROLLOUT_THREAD]
    assert o.sessions(ro, {"source": "claude", "sessionId": ROLLOUT_THREAD}) == []
    assert {r["id"] for r in o.sessions(ro, {"sessions": ["sample_session", "edge_cases"]})} == {"sample_session", "edge_cases"}
    assert len(o.sessions(ro, 2)) == 2
    child = "ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2"
    assert [r["relationship"] for r in o.sessions(ro, child)] == ["subagent"]


def test_recent_is_sessions_with_a_limit(ro):
    assert o.recent(ro) == o.sessions(ro, {"limit": 10})
    assert o.recent(ro, 3) == o.sessions(ro, 3)
    for n in (0, 1001, "3", True):
        with pytest.raises(QueryError) as error:
            o.recent(ro, n)
        assert (error.value.code, error.value.message) == (
            "OBELISK_INVALID_ARGUMENT", f"recent(): n must be an integer between 1 and 1000, not {n!r}"
        )


def test_summaries(ro):
    rows = o.summaries(ro, "dag_compact_after_rewind_preserved")
    assert [(r["id"], r["source"], r["session_title"], r["project"]) for r in rows] == [
        ("cs", "compaction", "Start", "daaain__claude-code-log")
    ]
    assert rows[0]["content"].startswith("This session is being continued from a previous conversation")
    times = [r["timestamp"] for r in o.summaries(ro)]
    assert times == sorted(times, reverse=True)
    assert o.summaries(ro, {"source": "codex", "sessionId": "dag_compact_after_rewind_preserved"}) == []


def test_memories_recall(tmp_path, corpus_db):
    db = tmp_path / "copy.db"
    shutil.copy(corpus_db, db)
    root = tmp_path / "notes"
    root.mkdir()
    for name in ("wal.md", "hello.md"):
        (root / name).write_text("# note\n")
    write = connect(db)
    first = remember(write, {"path": str(root / "wal.md"), "summary": "Why the ingester uses WAL mode"}, memory_roots=[root])
    second = remember(write, {"path": str(root / "hello.md"), "summary": "The hello world function", "session_id": "sample_session"}, memory_roots=[root])
    write.close()
    with connect_readonly(db) as conn:
        newest = o.memories(conn)
        assert [m["id"] for m in newest] == [second["id"], first["id"]]
        assert set(newest[0]) == {"id", "session_id", "project", "message_start", "message_end", "path", "anchors", "summary", "created_at", "deleted_at", "deleted_reason"}
        ranked = o.memories(conn, {"query": "wal ingester"})
        assert [m["id"] for m in ranked] == [first["id"]] and ranked[0]["rank"] < 0
        assert [m["id"] for m in o.memories(conn, "sample_session")] == [second["id"]]
        assert [m["id"] for m in o.memories(conn, {"project": "simonw%"})] == [second["id"]]
        assert [m["id"] for m in o.memories(conn, {"source": "claude"})] == [second["id"]]
        assert o.memories(conn, {"query": "🎉"}) == []
        assert o.memories(conn, {"query": ""}) == o.memories(conn, {"query": "  "}) == newest  # no query
        assert o.memories(conn, {"query": "foo-bar c++"}) == []
        twelve = "why the ingester uses wal mode why the ingester uses wal mode"
        assert [m["id"] for m in o.memories(conn, {"query": twelve})] == [first["id"]]
        assert o.memories(conn, {"query": twelve + " zzqqxnonexistent"}) == []
        overview = o.overview(conn, {"cwd": "/project"})["current_project"]
        assert overview["memory_total"] == 1 and set(overview["memories"][0]) == keys(OVERVIEW_MEMORY_KEYS)


# -- agents and workflows -------------------------------------------------------------


def test_subagents_with_message_counts(ro):
    rows = o.subagents(ro, "ef958aa1-0e93-49f0-bb71-150f63befcd1")
    # Six Agent calls name an agentId; one transcript (18 lines) was saved.
    assert [(r["agent_id"], r["messageCount"]) for r in rows] == [
        ("a36efb2a1231c41e2", 18),
        ("a6aa8ad077d9ea083", 0),
        ("aef063ba534d73153", 0),
        ("a4ca7529859c158c2", 0),
        ("a52886dc180afb356", 0),
        ("ab1e6e141221a29ab", 0),
    ]
    assert rows[0]["agent_type"] == "general-purpose"
    assert rows[0]["child_session_id"] == "ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2"
    assert len(o.subagents(ro, {"sessionId": "ef958aa1-0e93-49f0-bb71-150f63befcd1", "limit": 2})) == 2
    assert o.subagents(ro, {"sessionId": "ef958aa1-0e93-49f0-bb71-150f63befcd1", "source": "codex"}) == []


def test_subagents_of_a_parent_whose_log_is_missing_keep_their_source_and_project(ro):
    # marot__spotter keeps two agent files of fa812bfe-…, whose own log is not in the corpus.
    parent = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"
    assert ro.execute("SELECT COUNT(*) FROM sessions WHERE id = ?", [parent]).fetchone()[0] == 0
    every = [r["agent_id"] for r in o.subagents(ro, {"sessionId": parent})]
    assert sorted(every) == ["a93ccab", "acompact-70d8e7"]
    assert [r["agent_id"] for r in o.subagents(ro, {"sessionId": parent, "source": "claude"})] == every
    assert [r["agent_id"] for r in o.subagents(ro, {"sessionId": parent, "project": "marot__spotter"})] == every
    # filtered by each source in turn, the lists add up to the whole
    whole = o.subagents(ro, {"limit": 1000})
    assert sum(len(o.subagents(ro, {"limit": 1000, "source": s})) for s in ("claude", "codex", "gemini")) == len(whole)


@pytest.fixture
def workflow_db(tmp_path):
    db = build_toy_db(tmp_path, {
        "parent": [{"id": "p1", "text": "run the workflow", "ts": "2026-01-01T00:00:00Z"}],
        "child": [{"id": "c1", "text": "agent work", "ts": "2026-01-01T00:00:01Z"}, {"id": "c2", "text": "done", "ts": "2026-01-01T00:00:02Z"}],
    })
    execute(db, "UPDATE sessions SET relationship = 'workflow', parent_session_id = 'parent', agent_id = 'ag1' WHERE id = 'child'")
    execute(db, "INSERT INTO workflows (run_id, session_id, result_json, timestamp, status, workflow_name) "
                "VALUES ('run1', 'parent', '{\"ok\": true}', '2026-01-01T00:00:03Z', 'completed', 'review')")
    execute(db, "INSERT INTO workflows (run_id, session_id, result_json, timestamp) VALUES ('run0', 'parent', 'not json', '2025-12-31T00:00:00Z')")
    execute(db, "INSERT INTO workflow_agents (agent_id, run_id, session_id, label) VALUES ('ag1', 'run1', 'parent', 'first')")
    execute(db, "INSERT INTO workflow_agents (agent_id, run_id, session_id, label) VALUES ('ag2', 'run1', 'parent', 'second')")
    return db


def test_workflows_and_tree(workflow_db):
    with connect_readonly(workflow_db) as conn:
        assert [w["run_id"] for w in o.workflows(conn)] == ["run1", "run0"]
        assert [w["run_id"] for w in o.workflows(conn, {"after": "2026-01-01"})] == ["run1"]
        assert o.workflows(conn, "other") == []
        tree = o.workflowTree(conn, "run1")
        assert tree["result"] == {"ok": True} and tree["workflow_name"] == "review"
        assert [(a["agent_id"], a["label"], a["messageCount"]) for a in tree["agents"]] == [("ag1", "first", 2), ("ag2", "second", 0)]
        assert o.workflow_tree(conn, "run0")["result"] is None
        assert o.workflowTree(conn, "nope") is None
        found = o.context(conn, "c2")
        assert found["workflow"]["agent_id"] == "ag1" and found["workflow"]["run"]["workflow_name"] == "review"


# -- evidence ----------------------------------------------------------------------------


def test_file_history_of_a_claude_write(ro):
    rows = o.fileHistory(ro, "/project/hello.py")
    assert rows == [{
        "toolCall": {
            "id": "toolu_001",
            "message_uuid": "msg-002",
            "name": "Write",
            "input_json": '{"file_path":"/project/hello.py","content":"def hello():\\n    return \'Hello, World!\'\\n"}',
        },
        "session": {"id": "sample_session", "title": "Create a hello world function", "project": "simonw__claude-code-transcripts"},
        "timestamp": "2025-12-24T10:00:05.000Z",
    }]
    assert set(rows[0]["toolCall"]) == keys(TOOL_CALL_KEYS) and set(rows[0]["session"]) == keys(FILE_SESSION_KEYS)
    assert o.file_history(ro, "/project/hello.py", {"source": "codex"}) == []
    assert o.file_history(ro, "/project/hello.py", {"after": "2025-12-25"}) == []
    # Narrowed like failures(): to a session, or a project pattern.
    assert o.file_history(ro, "/project/hello.py", {"sessionId": "sample_session"}) == rows
    assert o.file_history(ro, "/project/hello.py", {"sessionId": "edge_cases"}) == []
    assert o.file_history(ro, "/project/hello.py", {"project": "simonw%"}) == rows
    assert o.file_history(ro, "/project/hello.py", {"project": "daaain%"}) == []
    assert o.file_history_count(ro, "/project/hello.py", {"limit": 1}) == 1


def test_file_history_of_a_codex_patch(ro):
    rows = o.file_history(ro, "/workspace/synthetic-project/gamma.txt")  # "*** Add File: gamma.txt" in that cwd
    assert [(r["toolCall"]["id"], r["toolCall"]["name"], r["toolCall"]["message_uuid"], r["timestamp"]) for r in rows] == [
        (f"{ROLLOUT_THREAD}:call-custom-001", "apply_patch", f"{ROLLOUT_THREAD}:{line_offset(ROLLOUT, 8)}", "2026-01-02T03:04:11.000Z")
    ]
    assert "*** Add File: gamma.txt" in rows[0]["toolCall"]["input_json"]
    assert rows[0]["session"] == {"id": ROLLOUT_THREAD, "title": "List the synthetic files.", "project": "-workspace-synthetic-project"}


def test_file_history_is_oldest_first(ro):
    rows = o.file_history(ro, "/path/to/Demo/todo-app/src/app/page.tsx")
    times = [r["timestamp"] for r in rows]
    assert len(rows) > 1 and times == sorted(times)


@pytest.mark.parametrize("spelled", [
    "/project/hello.py/", "/project//hello.py", "//project/hello.py", "/project/./hello.py", "/./project//./hello.py/",
])
def test_file_history_reads_another_spelling_of_the_path_as_the_path(ro, spelled):
    assert o.file_history(ro, spelled) == o.file_history(ro, "/project/hello.py") != []
    assert o.file_history_count(ro, spelled) == 1


def test_file_history_leaves_dot_dot_to_the_filesystem(ro):
    # (/project/sub/.. is /project only when sub is no symlink)
    assert o.file_history(ro, "/project/sub/../hello.py") == []


@pytest.mark.parametrize("path, normal", [
    ("/", "/"), ("//", "/"), ("/./", "/"), ("/a/b/", "/a/b"), ("/a//b/./c/.", "/a/b/c"), ("a/./b/", "a/b"),
    ("./", "."), ("./a", "a"), ("/a/../b", "/a/../b"), ("~/a//b", "~/a/b"), ("C:/a//b/", "C:/a/b"), ("C:/", "C:/"),
    ("C:\\a\\", "C:\\a\\"), ("a.py", "a.py"),
])
def test_the_normal_form_of_a_path(path, normal):
    assert o.normal_path(path) == normal


def test_file_history_of_a_path_the_agents_spelled_apart(tmp_path):
    db = build_toy_db(tmp_path, {
        "s1": [{"id": "a", "text": "x", "ts": "2025-06-14T11:01:31.000Z", "tool": "Read", "paths": ["/p/app.py"]}],
        "s2": [{"id": "b", "text": "x", "ts": "2025-06-14T11:01:32.000Z", "tool": "Read", "paths": ["/p//app.py"]}],
        "s3": [{"id": "c", "text": "x", "ts": "2025-06-14T11:01:33.000Z", "tool": "Read",
                "paths": ["/p/app.py", "/p//app.py"]}],
    })
    with connect_readonly(db) as conn:
        # Stored in one spelling (a call that wrote two has one row), which every spelling finds.
        assert [tuple(r) for r in conn.execute("SELECT path, COUNT(*) FROM tool_call_files GROUP BY path")] == [
            ("/p/app.py", 3)]

        def found(path):
            return [r["toolCall"]["message_uuid"] for r in o.file_history(conn, path)], o.file_history_count(conn, path)
        assert found("/p/app.py") == found("/p/app.py/") == found("/p/./app.py") == found("/p//app.py") == (
            ["a", "b", "c"], 3)
        assert [r["toolCall"]["message_uuid"] for r in o.file_history(conn, "/p//app.py", {"offset": 1, "limit": 1})] == ["b"]


def test_failures_of_a_session(ro):
    rows = o.failures(ro, "edge_cases")
    assert len(rows) == 1
    failure = rows[0]
    assert set(failure) == keys(FAILURE_KEYS)
    assert failure["toolCall"] == {
        "id": "tool_edge_001", "message_uuid": "edge_004", "name": "FailingTool",
        "input_json": '{"test_param":"This tool will fail to demonstrate error handling"}',
    }
    result = failure["result"]
    assert (result["tool_use_id"], result["message_uuid"], result["is_error"], result["outcome"], result["timestamp"]) == (
        "tool_edge_001", "edge_005", 1, "failed", "2025-06-14T11:01:31Z"
    )
    assert result["content"] == "Error: Tool execution failed with error: Command not found"
    assert failure["session"] == {
        "id": "edge_cases",
        "title": "Tested various edge cases including markdown formatting, long text, tool errors, system messages, command outputs, special characters and emojis. All message types render correctly in the transcript viewer.",
        "project": "daaain__claude-code-log",
    }
    # edge_006 and edge_008 are injected text; edge_007, the command the user typed, and the next real messages follow.
    assert uuids(failure["nextMessages"]) == ["edge_007", "edge_009", "edge_010"]
    assert all(set(m) == keys(MESSAGE_KEYS) for m in failure["nextMessages"])


def test_failures_newest_first_and_filtered(ro):
    rows = o.failures(ro, {"limit": 50})
    times = [r["result"]["timestamp"] for r in rows]
    assert times == sorted(times, reverse=True)
    assert all(r["result"]["outcome"] == "failed" or r["result"]["is_error"] == 1 for r in rows)
    assert all(r["session"]["project"] == "daaain__claude-code-log" for r in o.failures(ro, {"project": "daaain%"}))
    assert o.failures(ro, {"sessionId": "edge_cases", "before": "2025-06-14T11:01"}) == []
    assert len(o.failures(ro, 3)) == 3


# -- time bounds ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bounds, found",
    [
        ({"before": "2025-06-14T11:01:31.000Z"}, ["edge_005"]),  # the same instant as its stored ...31Z
        ({"after": "2025-06-14T11:01:31.000Z"}, ["edge_005"]),
        ({"after": "2025-06-14T11:01:31.900Z"}, []),  # later
        ({"after": "2025-06-14T12:00:00+02:00"}, ["edge_005"]),  # 10:00Z, earlier
        ({"before": "2025-06-14T13:01:30.999+02:00"}, []),  # a millisecond earlier
        ({"after": "2025-06-14T13:01:31+02:00", "before": "2025-06-14T11:01:31Z"}, ["edge_005"]),
        ({"after": "2025-06-14"}, ["edge_005"]),
        ({"before": "2025-06"}, []),
    ],
)
def test_the_edge_case_failure_is_bounded_by_instants(ro, bounds, found):
    rows = o.failures(ro, {"sessionId": "edge_cases", **bounds})
    assert [r["result"]["message_uuid"] for r in rows] == found
    assert rows == [] or rows[0]["result"]["timestamp"] == "2025-06-14T11:01:31Z"  # returned as stored


# One line per session, at instants whose text order (b, a, d, c) is not their time order (a, d, b, c).
STAMPS = {
    "a": "2025-06-14T11:01:31Z",
    "b": "2025-06-14T11:01:31.500Z",
    "c": "2025-06-14T13:01:32+02:00",
    "d": "2025-06-14T12:01:31.200+01:00",
}


@pytest.fixture(scope="module")
def stamped_db(tmp_path_factory):
    db = build_toy_db(tmp_path_factory.mktemp("stamped"), {
        name: [{"id": name, "text": "needle", "ts": ts, "tool": "Bash", "paths": ["/f.txt"], "outcome": "failed"}]
        for name, ts in STAMPS.items()
    })
    for name, ts in STAMPS.items():
        execute(db, "INSERT INTO summaries (id, session_id, timestamp, source, content, file_id) "
                    "VALUES (?, ?, ?, 'away_summary', 'x', 0)", [name, name, ts])
        execute(db, "INSERT INTO workflows (run_id, session_id, timestamp) VALUES (?, ?, ?)", [name, name, ts])
        execute(db, "INSERT INTO memories (id, session_id, path, summary, created_at) VALUES (?, ?, '/m.md', 'x', ?)",
                [name, name, ts])
    return db


BOUNDED = {
    "search": lambda conn, b: [h["message"]["uuid"] for h in o.search(conn, "needle", b)],
    "sessions": lambda conn, b: [r["id"] for r in o.sessions(conn, b)],
    "summaries": lambda conn, b: [r["id"] for r in o.summaries(conn, b)],
    "memories": lambda conn, b: [r["id"] for r in o.memories(conn, b)],
    "workflows": lambda conn, b: [r["run_id"] for r in o.workflows(conn, b)],
    "fileHistory": lambda conn, b: [r["toolCall"]["message_uuid"] for r in o.file_history(conn, "/f.txt", b)],
    "failures": lambda conn, b: [r["result"]["message_uuid"] for r in o.failures(conn, b)],
}


@pytest.mark.parametrize("helper", BOUNDED)
@pytest.mark.parametrize(
    "bounds, found",
    [
        ({}, "abcd"),
        ({"before": "2025-06-14T11:01:31.000Z"}, "a"),
        ({"after": "2025-06-14T11:01:31.100Z"}, "bcd"),
        ({"after": "2025-06-14T11:01:31.2Z", "before": "2025-06-14T11:01:31.5Z"}, "bd"),
        ({"after": "2025-06-14T13:01:31.5+02:00"}, "bc"),
        ({"before": "2025-06-14T11:01:31.999"}, "abd"),  # no offset: UTC
        ({"after": "2025-06-14T11:01:32Z"}, "c"),
        # Times are whole milliseconds: a finer bound admits only those inside it (d is at .200).
        ({"after": "2025-06-14T11:01:31.2004Z"}, "bc"),
        ({"after": "2025-06-14T11:01:31.200400+00:00"}, "bc"),  # (Python's isoformat())
        ({"before": "2025-06-14T11:01:31.1996Z"}, "a"),
        ({"after": "2025-06-14T11:01:31.1996Z", "before": "2025-06-14T11:01:31.2004Z"}, "d"),
        ({"after": "2025-06-14T11:01:31.2004Z", "before": "2025-06-14T11:01:31.2006Z"}, ""),
    ],
)
def test_time_bounds_compare_instants_in_every_helper(stamped_db, helper, bounds, found):
    with connect_readonly(stamped_db) as conn:
        assert sorted(BOUNDED[helper](conn, bounds)) == list(found)


@pytest.mark.parametrize("helper", BOUNDED)
def test_lists_come_in_time_order_not_text_order(stamped_db, helper):
    # Newest first (search: equal ranks, then newest), but fileHistory: oldest first.
    with connect_readonly(stamped_db) as conn:
        assert "".join(BOUNDED[helper](conn, {})) == ("adbc" if helper == "fileHistory" else "cbda")


def test_a_search_cut_inside_a_long_run_of_equal_ranks_keeps_the_newest(tmp_path):
    # 60 lines of one text rank equal. Written oldest first, but for the 20 newest, which come first
    # (lowest ids) and carry a +02:00 offset, so neither id nor text order is time order.
    newest = [(f"n{i:02}", f"2025-06-15T{12 + i // 60:02}:{i % 60:02}:00+02:00") for i in range(20)]
    older = [(f"o{i:02}", f"2025-06-14T10:{i:02}:00Z") for i in range(40)]
    db = build_toy_db(tmp_path, {"tied": [{"id": name, "text": "needle", "ts": ts} for name, ts in newest + older]})
    assert o.TIE_ROOM < 40
    with connect_readonly(db) as conn:
        ranks = {h["rank"] for h in o.search(conn, "needle", {"limit": 60})}
        assert len(ranks) == 1
        found = [h["message"]["uuid"] for h in o.search(conn, "needle", {"limit": 5})]
        assert found == ["n19", "n18", "n17", "n16", "n15"]
        assert [h["message"]["uuid"] for h in o.search(conn, "needle", {"limit": 22})][-2:] == ["o39", "o38"]


@pytest.mark.parametrize("helper", BOUNDED)
@pytest.mark.parametrize("name, value", [("after", "yesterday"), ("before", "2025-13-01"), ("after", "now"), ("before", "")])
def test_a_bound_that_is_no_time_is_refused(stamped_db, helper, name, value):
    with connect_readonly(stamped_db) as conn, pytest.raises(QueryError) as error:
        BOUNDED[helper](conn, {name: value})
    assert (error.value.code, error.value.message) == (
        "OBELISK_INVALID_ARGUMENT",
        f"{helper}(): {name} must be an ISO 8601 date or time, such as 2025-06-14 or 2025-06-14T11:01:31Z, not {value!r}",
    )


def test_helpers_leave_the_corpus_database_unchanged(corpus_db):
    before = os.stat(corpus_db).st_mtime_ns, corpus_db.read_bytes()
    with connect_readonly(corpus_db) as conn:
        for helper in (o.recent, o.sessions, o.summaries, o.memories, o.subagents, o.workflows, o.failures):
            helper(conn)
        o.search(conn, "hello")
        o.overview(conn)
    assert (os.stat(corpus_db).st_mtime_ns, corpus_db.read_bytes()) == before


def test_readonly_connection_refuses_writes_even_without_the_authorizer(corpus_db):
    conn = connect_readonly(corpus_db)
    conn.set_authorizer(None)
    with pytest.raises(sqlite3.OperationalError, match="readonly|query_only|read-only"):
        conn.execute("DELETE FROM messages")
    conn.close()


def test_neighbours_prefer_timed_lines_and_keep_log_order(tmp_path):
    lines = [{"id": f"m{n}", "text": f"line {n}", "ts": f"2026-01-01T00:00:0{n}Z"} for n in range(8)]
    lines[1]["ts"] = None  # an untimed line is never nearer than a timed one
    lines[4]["text"] = "the needle"
    db = build_toy_db(tmp_path, {"s1": lines})
    with connect_readonly(db) as conn:
        [hit] = o.search(conn, "needle")
    # m3/m5 are 1 s away, m2/m6 2 s, m7 3 s, m0 4 s; m1 has no timestamp.
    assert uuids(hit["context"]) == ["m0", "m2", "m3", "m5", "m6", "m7"]


def test_dashboard_counts_files_gone_from_disk_and_unreadable_lines(tmp_path):
    db = build_toy_db(tmp_path, {"s1": [{"id": "a", "text": "x"}], "s2": [{"id": "b", "text": "y"}]})
    with open(tmp_path / "logs" / "s1.jsonl", "ab") as fp:
        fp.write(b"{broken\n")
    (tmp_path / "logs" / "s2.jsonl").unlink()
    ingest(db, {"toy": tmp_path / "logs"}, sources={"toy": ToySource()})
    with connect_readonly(db) as conn:
        files = totals(conn)["files"]
        [(last,)] = conn.execute("SELECT max(ingested_at) FROM source_files").fetchall()
    assert files == {"files": 2, "gone": 1, "bad_lines": 1, "last_ingest_at": last, "repaired_lines": 0}
    assert last is not None


def test_every_helper_takes_a_plain_connection_too(corpus_db, workflow_db):
    """A Python caller's own ``sqlite3.connect`` (rows as tuples) answers as ``connect_readonly`` does."""
    import json

    for db in (corpus_db, workflow_db):
        ro_conn, plain = connect_readonly(db), sqlite3.connect(db)
        uuid, session = ro_conn.execute("SELECT uuid, session_id FROM messages WHERE text != '' ORDER BY id LIMIT 1").fetchone()
        path = (ro_conn.execute("SELECT path FROM tool_call_files LIMIT 1").fetchone() or ["/none"])[0]
        calls = {
            "search": ("hello",), "context": (uuid,), "trace": (uuid,), "thread": (session,), "raw": (uuid,),
            "overview": (), "sessions": (), "recent": (), "summaries": (), "memories": (), "subagents": (),
            "workflows": (), "workflowTree": ("run1",), "fileHistory": (path,), "failures": (),
            "sql": ("SELECT COUNT(*) AS n FROM messages",),
        }
        assert set(calls) == set(o.HELPERS)
        for name, args in calls.items():
            expected = o.HELPERS[name](ro_conn, *args)
            assert json.dumps(o.HELPERS[name](plain, *args), default=str) == json.dumps(expected, default=str), name
        assert plain.row_factory is None  # left as it was
        ro_conn.close()
        plain.close()


def test_a_working_folder_named_in_bytes_that_are_no_utf8_matches_no_project(ro, tmp_path, monkeypatch):
    folder = tmp_path / os.fsdecode(b"caf\xe9")  # a Latin-1 name: a lone surrogate in Python
    folder.mkdir()
    monkeypatch.chdir(folder)
    found = o.overview(ro)
    assert found["current"] == {"cwd": str(tmp_path / "caf\ufffd"), "project": None}



def test_only_an_argument_holding_a_lone_surrogate_is_reported_as_one():
    from datasette_obelisk.query.errors import refusing_unencodable

    @refusing_unencodable("OBELISK_INVALID_ARGUMENT")
    def encode(value, opts=None):
        return (value + "\ud800").encode()  # the function's own text, not the caller's

    with pytest.raises(UnicodeEncodeError):
        encode("plain", {"project": "p"})
    with pytest.raises(QueryError) as error:
        encode("plain", {"project": ["a\udc80"]})
    assert error.value.message == "encode(): an argument holds a lone surrogate, which UTF-8 cannot hold"


def test_texts_at_the_clipping_edges_are_clipped_as_clip_does(tmp_path):
    # SQLite clips on text_length and substr; a NUL (an older archive may hold one) and a
    # stale text_length are finished in Python: every text comes out as clip() gives it.
    limit = o.NEIGHBOUR_TEXT
    texts = {
        "a": "x" * limit, "b": "y" * (limit + 1), "c": "é" * (limit + 7),
        "e": "a\x00b" + "z" * limit, "f": "w" * (limit + 5) + "\x00tail", "g": "stale " * limit,
    }
    lines = [{"id": k, "text": k, "ts": f"2026-01-01T00:00:0{n}Z"} for n, k in enumerate(sorted(texts))]
    lines.insert(3, {"id": "hit", "text": "needle", "ts": "2026-01-01T00:00:03Z"})
    db = build_toy_db(tmp_path, {"s1": lines})
    with sqlite3.connect(db) as conn:
        for uuid, text in texts.items():
            length = 1 if uuid == "g" else len(text)  # g: text_length left as it was
            conn.execute("UPDATE messages SET text = ?, text_length = ? WHERE uuid = ?", [text, length, uuid])
    with connect_readonly(db) as conn:
        [hit] = o.search(conn, "needle")
        assert {m["uuid"]: m["text"] for m in hit["context"]} == {k: o.clip(t, limit) for k, t in texts.items()}
        clipped = {m["uuid"]: m["text"] for m in o.thread(conn, "s1")}
        assert clipped == {"hit": "needle", **{k: o.clip(t) for k, t in texts.items()}}
    assert o.clip(texts["b"], limit) == "y" * limit + "…[+1 chars]"
    assert o.clip(texts["f"], limit) == "w" * limit + "…[+10 chars]"  # (the NUL beyond the cut)
    assert o.clip(texts["e"], limit) == "a\x00b" + "z" * (limit - 3) + "…[+3 chars]"


def test_a_long_neighbour_is_clipped_without_sqlite_scanning_its_text(tmp_path):
    # A search's hits each read up to six neighbours: length() and instr() over a 25 MB
    # output beside a hit took 100 ms, once per hit beside it.
    long = "output line\n" * 20_000
    db = build_toy_db(tmp_path, {"s1": [
        {"id": "a", "text": long, "ts": "2026-01-01T00:00:00Z"},
        {"id": "b", "text": "needle", "ts": "2026-01-01T00:00:01Z"},
    ]})
    scanned = []

    def counting(name, fn):
        def call(*args):
            if isinstance(args[0], str) and len(args[0]) > o.NEIGHBOUR_TEXT:
                scanned.append(name)
            return fn(*args)
        return call

    with connect_readonly(db) as conn:
        conn.create_function("length", 1, counting("length", lambda t: None if t is None else len(t)))
        conn.create_function("instr", 2, counting("instr", lambda t, s: None if t is None else t.find(s) + 1))
        [hit] = o.search(conn, "needle")
        assert [m["text"] for m in hit["context"]] == [o.clip(long, o.NEIGHBOUR_TEXT)]
        assert [m["text"] for m in o.thread(conn, "s1")] == [o.clip(long), "needle"]
    assert scanned == []


def test_neighbours_of_an_untimed_hit_are_the_nearest_timed_lines_in_the_log(tmp_path):
    lines = [{"id": f"m{n}", "text": f"line {n}", "ts": f"2026-01-01T00:00:{n:02d}Z"} for n in range(12)]
    lines[2]["ts"] = lines[7]["ts"] = None
    lines[4] = {"id": "m4", "text": "the needle", "ts": None}
    db = build_toy_db(tmp_path, {"s1": lines})
    with connect_readonly(db) as conn:
        [hit] = o.search(conn, "needle")
    # Timed lines before untimed ones (m2, m7), nearest in the log first: m3/m5, m6, m1, m0/m8.
    assert uuids(hit["context"]) == ["m0", "m1", "m3", "m5", "m6", "m8"]


def test_neighbours_parse_each_line_time_once(tmp_path):
    # Sorting a hit's window by distance in time parsed every line's time twice (the
    # window is 400 lines a hit, for up to 1,000 hits): most of a long search's time.
    from datetime import datetime

    lines = [{"id": f"m{n:02d}", "text": f"line {n}", "ts": f"2026-01-01T00:00:{n:02d}Z"} for n in range(40)]
    lines[20]["text"] = "the needle"
    db = build_toy_db(tmp_path, {"s1": lines})
    parsed = []

    def julianday(value):
        parsed.append(value)
        if value is None:
            return None
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() / 86400 + 2440587.5

    with connect_readonly(db) as conn:
        conn.create_function("julianday", 1, julianday, deterministic=True)
        [hit] = o.search(conn, "needle")
    assert uuids(hit["context"]) == ["m17", "m18", "m19", "m21", "m22", "m23"]
    assert len(parsed) <= len(lines) + 2


def test_thread_pages_follow_the_placement_rule_on_a_shuffled_log(tmp_path):
    # Each untimed line sorts at the instant of the last timed line before it (the first
    # ones, before any time, first), then log order; meta lines count for that placement
    # but are shown only when asked for. A reference ordering in Python, on a log whose
    # times go back and forth, in several spellings of one instant.
    import random
    from datetime import datetime, timedelta, timezone

    rng = random.Random(7)
    start = datetime(2026, 1, 1, 10, tzinfo=timezone.utc)
    lines, instants = [], {}
    for n in range(80):
        uuid = f"m{n:02d}"
        when = start + timedelta(seconds=rng.choice([rng.randint(0, 40), n]))
        kind = rng.choice(["z", "ms", "offset", "none", "trimmed", "z", "ms"])
        ts = {
            "z": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ms": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "offset": when.astimezone(timezone(timedelta(hours=2))).isoformat(),
            "none": None,
            "trimmed": "[trimmed]",
        }[kind]
        instants[uuid] = when if kind in ("z", "ms", "offset") else None
        lines.append({"id": uuid, "text": f"line {n}", "ts": ts})
    db = build_toy_db(tmp_path, {"s1": lines})
    with sqlite3.connect(db) as conn:
        meta = {u for (u,) in conn.execute("SELECT uuid FROM messages WHERE seq % 7 = 3")}
        conn.execute("UPDATE messages SET is_meta = 1 WHERE seq % 7 = 3")
    placed, last = [], None
    for seq, line in enumerate(lines):
        last = instants[line["id"]] or last
        placed.append(((last is not None, last or start, seq), line["id"]))
    order = [uuid for _, uuid in sorted(placed)]
    with connect_readonly(db) as conn:
        assert uuids(o.thread(conn, "s1", {"includeMeta": True})) == order
        shown = [u for u in order if u not in meta]
        assert uuids(o.thread(conn, "s1")) == shown
        for offset in (0, 5, 33, 60):
            page = o.thread_page(conn, "s1", {"limit": 9, "offset": offset})
            assert (uuids(page.items), page.total) == (shown[offset : offset + 9], len(shown))
        assert [uuids(p.items) for p in o.thread_pages(conn, "s1", {"includeMeta": True}, step=25)] == [
            order[i : i + 25] for i in range(0, 80, 25)
        ]


def test_a_thread_page_reads_each_line_time_once(tmp_path):
    # Every page puts the whole session in thread order: one pass over it, each line's
    # time read once (two windows read them twice and sorted the session twice more).
    from datetime import datetime, timezone

    lines = [{"id": f"m{n:02d}", "text": f"line {n}", "ts": f"2026-01-01T10:00:{(n * 7) % 60:02d}Z"} for n in range(50)]
    lines[10]["ts"] = None
    db = build_toy_db(tmp_path, {"s1": lines})
    read = []

    def strftime(form, value):
        read.append(value)
        if form != "%Y-%m-%dT%H:%M:%fZ" or not isinstance(value, str):
            return None
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    with connect_readonly(db) as conn:
        expected = uuids(o.thread_page(conn, "s1", {"limit": 10, "offset": 20}).items)
    with connect_readonly(db) as conn:
        conn.create_function("strftime", 2, strftime)
        page = o.thread_page(conn, "s1", {"limit": 10, "offset": 20})
    assert uuids(page.items) == expected and page.total == 50
    assert len(read) == len(lines), len(read)


def test_neighbours_follow_the_rule_on_a_log_full_of_ties(tmp_path):
    # Times repeat, go back and forth, are missing or unreadable, in several spellings; some
    # lines are meta. Every hit's neighbours are the rule's: of the lines within 200 of it,
    # the nearest in time (untimed last; for an untimed hit, timed first), then in the log,
    # then the earlier line.
    import random

    rng = random.Random(5)
    lines = []
    for n in range(450):
        roll = rng.random()
        ts = None if roll < 0.15 else "[trimmed]" if roll < 0.2 else (
            f"2026-01-01T10:{rng.randint(0, 2):02d}:{rng.choice([0, 30]):02d}" + rng.choice(["Z", ".000Z", "+00:00"]))
        lines.append({"id": f"m{n:03d}", "text": f"needle {n}" if n % 9 == 0 else f"line {n}", "ts": ts})
    db = build_toy_db(tmp_path, {"s1": lines})
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET is_meta = 1 WHERE seq % 11 = 4")
    with connect_readonly(db) as conn:
        rows = conn.execute("SELECT id, uuid, seq, julianday(timestamp), is_meta FROM messages").fetchall()
        for include_meta in (False, True):
            hits = o.search(conn, "needle", {"limit": 100, "includeMeta": include_meta})
            assert len(hits) == (50 if include_meta else 45)  # (five needles are meta lines)
            for hit in hits:
                [(hit_id, seq, instant)] = [(r[0], r[2], r[3]) for r in rows if r[1] == hit["message"]["uuid"]]
                window = [r for r in rows if abs(r[2] - seq) <= 200 and r[0] != hit_id and (include_meta or not r[4])]
                if instant is None:
                    nearest = sorted(window, key=lambda r: (r[3] is None, abs(r[2] - seq), r[2]))[:6]
                else:
                    nearest = sorted(window, key=lambda r: (r[3] is None, abs((r[3] or 0) - instant), abs(r[2] - seq), r[2]))[:6]
                assert uuids(hit["context"]) == [r[1] for r in sorted(nearest, key=lambda r: r[2])]


def test_a_search_reads_each_session_once_for_its_hits_neighbours(tmp_path):
    # 1,000 hits sorted 1,000 windows of 400 lines in SQL, one statement each.
    lines = [{"id": f"m{n:02d}", "text": f"needle {n}" if n % 2 else f"line {n}", "ts": f"2026-01-01T10:00:{n:02d}Z"}
             for n in range(60)]
    db = build_toy_db(tmp_path, {"s1": lines, "s2": lines[:1] + [dict(line, id=f"x{n}") for n, line in enumerate(lines[1:])]})
    statements = []
    with connect_readonly(db) as conn:
        conn.set_trace_callback(lambda sql: statements.append(sql) if "julianday(timestamp)" in sql else None)
        hits = o.search(conn, "needle", {"limit": 100})
    assert len(hits) == 60 and all(len(hit["context"]) == 6 for hit in hits)
    assert len(statements) == 2


def test_an_option_given_both_in_the_dict_and_as_a_keyword_is_refused(ro):
    for call in (lambda: o.sessions(ro, {"limit": 5}, limit=2), lambda: o.sessions(ro, 5, limit=2),
                 lambda: o.failures(ro, "sample_session", session_id="other")):
        with pytest.raises(QueryError) as error:
            call()
        assert error.value.code == "OBELISK_INVALID_ARGUMENT" and "twice" in error.value.message
    assert len(o.sessions(ro, {"limit": 1})) == len(o.sessions(ro, limit=1)) == 1


def test_a_thread_page_goes_on_after_its_last_message_when_an_ingest_renumbers_the_session(tmp_path):
    """A page's next page named by an offset skips messages after an ingest that renumbered
    the session (a Codex fork giving up its copy of the log it forked from); named by the
    page's last message (``afterUuid``) it goes on after that message wherever it now is,
    and is OBELISK_NOT_FOUND once the session no longer holds it. The CLI names the next
    page so."""
    from click.testing import CliRunner

    from datasette_obelisk.cli import cli
    from datasette_obelisk.query.readonly import connect_readonly
    from test_session_query import renumbered_fork

    db, fork, parent_arrives = renumbered_fork(tmp_path)
    with connect_readonly(db) as conn:
        first = o.thread_page(conn, fork, {"limit": 5})
        early = o.thread_page(conn, fork, {"limit": 3})
    assert [m["text"] for m in first.items][-1] == "B's own prompt" and first.total == 8
    assert first.after == first.items[-1]["uuid"] and early.after == early.items[-1]["uuid"]
    listed = CliRunner().invoke(cli, ["read", fork, "--limit", "5", "--db", str(db)])
    assert listed.stdout.endswith(f"[messages 1-5 of 8; 3 more: --after-uuid {first.after}]\n")
    parent_arrives()
    with connect_readonly(db) as conn:
        assert o.thread_page(conn, fork, {"limit": 5, "offset": 5}).items == []  # (an offset skipped them)
        rest = o.thread_page(conn, fork, {"limit": 5, "afterUuid": first.after})
        assert [m["text"].split("\n")[0] for m in rest.items] == ["shell", "B", "Answer to B's own prompt"]
        assert (rest.offset, rest.total, rest.after) == (1, 4, None)
        assert [m["uuid"] for m in o.thread(conn, fork, afterUuid=first.after)] == [m["uuid"] for m in rest.items]
        assert [p.items for p in o.thread_pages(conn, fork, {"afterUuid": first.after})] == [rest.items]
        with pytest.raises(QueryError) as gone:  # (the page ended on the copy the fork gave up)
            o.thread_page(conn, fork, {"limit": 3, "afterUuid": early.after})
        assert gone.value.code == "OBELISK_NOT_FOUND"
        with pytest.raises(QueryError) as both:
            o.thread_page(conn, fork, {"offset": 1, "afterUuid": first.after})
        assert both.value.code == "OBELISK_INVALID_ARGUMENT"
    again = CliRunner().invoke(cli, ["read", fork, "--limit", "5", "--after-uuid", first.after, "--db", str(db)])
    assert again.exit_code == 0 and "Answer to B's own prompt" in again.stdout and "user:\nB's own prompt" not in again.stdout


def test_a_thread_page_of_a_session_in_time_order_reads_the_page_not_the_whole_session(tmp_path):
    # A session whose canonical times never go back is in thread order as logged: a page
    # is read from the (session, seq) index, without placing and sorting the whole session
    # (no window), and is the page the placement gives. One time going back, a time in
    # another spelling, or a date SQLite would move, and the session is placed as before;
    # a session changed but not derived again yet (queued) is placed, and so is one whose
    # derivation found it out of order.
    lines = [{"id": f"m{n:02d}", "text": f"line {n}",
              "ts": None if n in (0, 7) else f"2026-01-01T10:00:{n // 2:02d}.000Z"} for n in range(40)]
    db = build_toy_db(tmp_path, {"s1": lines})
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET is_meta = 1 WHERE seq % 5 = 3")
    run = []

    def placed(conn, *args):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(o, "in_log_order", lambda conn, session_id: False)
            return uuids(o.thread_page(conn, "s1", *args).items)

    with connect_readonly(db) as conn:
        conn.set_trace_callback(run.append)
        for args in ({"limit": 7, "offset": 9}, {"limit": 7, "afterUuid": "m12"}, {"includeMeta": True}, {}):
            run.clear()
            page = o.thread_page(conn, "s1", args)
            assert not any("OVER (" in statement for statement in run), run
            assert uuids(page.items) == placed(conn, args)
        assert page.total == 32
        for spelling in ("2026-01-01T09:59:59.000Z", "2026-01-01T10:00:30Z", "2026-01-01T11:00:30.000+01:00",
                         "2026-02-30T10:00:30.000Z"):
            with sqlite3.connect(db) as writer:
                writer.execute("UPDATE messages SET timestamp = ? WHERE uuid = 'm30'", [spelling])
                writer.execute("INSERT INTO derive_queue (session_id) VALUES ('s1')")
            for derived in (False, True):
                if derived:
                    writer = connect(db)
                    with transaction(writer):
                        derive.forget_tallies(writer, ["s1"])  # (a row changed in place, as an ingest does)
                        derive.derive_sessions(writer, ["s1"])
                        writer.execute("DELETE FROM derive_queue")
                    writer.close()
                run.clear()
                page = o.thread_page(conn, "s1", {"limit": 7, "offset": 20})
                assert any("OVER (" in statement for statement in run), spelling
                assert uuids(page.items) == placed(conn, {"limit": 7, "offset": 20})
