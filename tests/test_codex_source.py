"""Parser-level tests of the Codex CLI source (no database).

The expected per-file counts were derived by reading the corpus files with
jq and throwaway scripts, line by line, against the mapping documented in
``datasette_obelisk/sources/codex.py``.
"""

import base64
import functools
import io
import json
import os
import sqlite3
from collections import Counter
from pathlib import Path

import orjson
import pytest
import zstandard

from datasette_obelisk.records import (
    LineError,
    Merged,
    Message,
    Position,
    Session,
    SessionLink,
    Subagent,
    Summary,
    TitleCandidate,
    ToolCall,
    ToolResult,
)
from datasette_obelisk.sources import codex
from datasette_obelisk.sources.base import SourceFile
from datasette_obelisk.sources.codex import CodexSource, rollout_unit
from datasette_obelisk.sources.common import normalize_repository, patch_paths, shell_written_paths
from datasette_obelisk.sources.lines import read_lines

CORPUS = Path(__file__).parent.parent.parent / "shared" / "corpus"
CODEX = CORPUS / "codex"
ACCOUNTING = (Message, Merged, LineError)

DAAAIN = "daaain__claude-code-log"
MADSHN = "madshn__localpush"
FILE_1 = f"{DAAAIN}/sessions/2026/01/02/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
PARENT = f"{DAAAIN}/sessions/2026/01/03/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl"
CHILD = f"{DAAAIN}/sessions/2026/01/03/rollout-2026-01-03T04-05-10-33333333-3333-4333-8333-333333333333.jsonl"
FLAT = f"{DAAAIN}/sessions/rollout-44444444-4444-4444-8444-444444444444.jsonl"
MALFORMED = f"{DAAAIN}/malformed/rollout-66666666-6666-4666-8666-666666666666.jsonl"
SMALL = "jazzyalex__agent-sessions/small.jsonl"
ESCALATION = "kvsankar__agent-history/codex_with_escalation.jsonl"
COMPACTION = "kvsankar__agent-history/session_with_compaction.jsonl"
BIG = f"{MADSHN}/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
INTERRUPTED = f"{MADSHN}/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"

# lines, Messages, Merged by reason, LineErrors, tool calls, results by
# outcome, apply_patch/shell file paths, compactions, (parent, relationship),
# Subagent records; the compactions that wrote a summary (when not all did)
EXPECTED = {
    FILE_1: dict(
        lines=14, messages=9, merged={"duplicate": 2, "metadata": 2, "unknown-type": 1}, errors=0,
        tool_calls=3, outcomes={"succeeded": 3}, paths=["/workspace/synthetic-project/gamma.txt"], compactions=0, lineage=None, subagents=0,
    ),
    PARENT: dict(
        lines=5, messages=3, merged={"metadata": 2}, errors=0, tool_calls=1, outcomes={"succeeded": 1},
        paths=[], compactions=0, lineage=None, subagents=1,
    ),
    CHILD: dict(
        lines=5, messages=2, merged={"metadata": 1, "replay": 2}, errors=0, tool_calls=0, outcomes={},
        paths=[], compactions=0, lineage=("codex:22222222-2222-4222-8222-222222222222", "subagent"), subagents=1,
    ),
    FLAT: dict(
        lines=3, messages=2, merged={"metadata": 1}, errors=0, tool_calls=0, outcomes={}, paths=[],
        compactions=0, lineage=None, subagents=0,
    ),
    MALFORMED: dict(
        lines=3, messages=1, merged={"metadata": 1}, errors=1, tool_calls=0, outcomes={}, paths=[],
        compactions=0, lineage=None, subagents=0,
    ),
    SMALL: dict(
        lines=118, messages=46, merged={"duplicate": 31, "metadata": 38, "usage": 2, "title": 1}, errors=0,
        # call-1 (line 9) has its output (line 21) after its turn was aborted (line 20): succeeded
        tool_calls=8, outcomes={"succeeded": 7}, paths=[], compactions=7, lineage=None,
        subagents=1,
        # context_compacted (line 19) and a compacted line with an empty message (26) wrote none
        summaries=5,
    ),
    ESCALATION: dict(
        lines=21, messages=19, merged={"metadata": 2}, errors=0, tool_calls=4,
        outcomes={"succeeded": 2, "blocked": 2}, paths=["/home/testuser/codex-rejection-project/test.txt", "/home/testuser/codex-rejection-project/test.txt"], compactions=0, lineage=None,
        subagents=0,
    ),
    COMPACTION: dict(
        lines=20, messages=18, merged={"metadata": 2}, errors=0, tool_calls=2, outcomes={"succeeded": 2},
        paths=["/home/testuser/codex-compact-project/src/middleware/auth.py"], compactions=1, lineage=None, subagents=0,
    ),
    BIG: dict(
        lines=2722, messages=1569, merged={"duplicate": 493, "metadata": 373, "usage": 287}, errors=0,
        tool_calls=372, outcomes={"succeeded": 372}, paths=[], compactions=1, lineage=None, subagents=0,
    ),
    INTERRUPTED: dict(
        lines=19, messages=12, merged={"duplicate": 3, "metadata": 3, "usage": 1}, errors=0, tool_calls=1,
        outcomes={}, paths=[], compactions=0, lineage=None, subagents=0,
    ),
}


def corpus_file(relative: str) -> Path:
    path = CODEX / relative
    if not path.exists():
        pytest.skip(f"shared corpus not found at {CODEX} (expected next to the repository)")
    return path


def unit_for(path: Path) -> SourceFile:
    return rollout_unit(path) or SourceFile(path, "codex", kind="rollout")


def lines_of(data: bytes) -> list:
    return [line for line in read_lines(io.BytesIO(data)) if line.data.strip()]


def feed_all(lines, unit=None, *, restore_every_line=False) -> list:
    """Records of ``lines``; optionally through a JSON round trip of the
    parser state after every line (a crash and resume at each boundary)."""
    unit = unit or SourceFile(Path("rollout-test.jsonl"), "codex", kind="rollout")
    parser = CodexSource().open_parser(unit, None)
    records = []
    for line in lines:
        out = list(parser.feed(line.data, line.position))
        assert sum(isinstance(r, ACCOUNTING) for r in out) == 1, (line.position, out)
        records.extend(out)
        if restore_every_line:
            parser = CodexSource().open_parser(unit, json.loads(json.dumps(parser.state())))
    return records


def parse(relative: str, **kwargs) -> list:
    path = corpus_file(relative)
    if not kwargs:
        return list(_parsed(relative))
    return feed_all(lines_of(path.read_bytes()), unit_for(path), **kwargs)


@functools.cache
def _parsed(relative: str) -> tuple:
    path = CODEX / relative
    return tuple(feed_all(lines_of(path.read_bytes()), unit_for(path)))


def envelope(type_: str, payload: dict, timestamp: str = "2026-03-01T10:00:00.000Z") -> bytes:
    return orjson.dumps({"timestamp": timestamp, "type": type_, "payload": payload})


def feed_raw(raw_lines: list[bytes], unit=None) -> list:
    return feed_all(lines_of(b"\n".join(raw_lines) + b"\n"), unit)


def of(records, kind) -> list:
    return [r for r in records if isinstance(r, kind)]


# -- the corpus ---------------------------------------------------------------


def test_every_corpus_rollout_has_expected_counts():
    corpus_file(FILE_1)
    rollouts = {str(p.relative_to(CODEX)) for p in CODEX.rglob("*.jsonl") if p.name != "codex_history.jsonl"}
    assert rollouts == set(EXPECTED)


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_counts(relative):
    expected = EXPECTED[relative]
    records = parse(relative)
    assert sum(isinstance(r, ACCOUNTING) for r in records) == expected["lines"]
    assert len(of(records, Message)) == expected["messages"]
    assert Counter(r.reason for r in of(records, Merged)) == expected["merged"]
    assert len(of(records, LineError)) == expected["errors"]
    assert len(of(records, ToolCall)) == expected["tool_calls"]
    assert Counter(r.outcome for r in of(records, ToolResult)) == expected["outcomes"]
    assert [p for call in of(records, ToolCall) for p in call.file_paths] == expected["paths"]
    assert len([m for m in of(records, Message) if m.is_compact_summary]) == expected["compactions"]
    assert len(of(records, Summary)) == expected.get("summaries", expected["compactions"])
    linked = [(s.parent_session_id, s.relationship) for s in of(records, Session) if s.parent_session_id]
    assert linked == ([expected["lineage"]] if expected["lineage"] else [])
    assert len(of(records, Subagent)) == expected["subagents"]
    assert all(m.session_id == of(records, Session)[0].id for m in of(records, Message))


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_resuming_after_every_line_gives_the_same_records(relative):
    assert parse(relative, restore_every_line=True) == parse(relative)


def test_message_ids_are_byte_offsets_of_the_thread():
    records = parse(FILE_1)
    data = corpus_file(FILE_1).read_bytes()
    for message in of(records, Message):
        assert message.uuid == f"codex:11111111-1111-4111-8111-111111111111:{message.position.byte_offset}"
        assert data[message.position.byte_offset - 1 : message.position.byte_offset] in (b"\n", b"")


def test_session_identity_and_repository():
    session = of(parse(SMALL), Session)[0]
    assert session.id == "codex:019fc8be-3658-7ca3-9e29-000000000000"
    assert (session.cwd, session.git_branch, session.version, session.originator) == (
        "/tmp/repo", "main", "0.146.0", "codex_cli_rs",
    )
    assert session.git_commit == "0" * 40
    assert session.repository == "example.invalid/repo"
    assert session.started_at == "2026-08-03T10:48:56.000Z"
    models = [s.model for s in of(parse(SMALL), Session) if s.model]
    assert models[0] == "gpt-5.6-luna" and models[-1] == "gpt-5.6-sol"


def test_event_and_item_twins_are_stored_once():
    texts = [m.text for m in of(parse(FILE_1), Message) if m.role in ("user", "assistant") and m.content_type == "text"]
    assert texts == ["List the synthetic files.", "The synthetic files are alpha.txt and beta.txt."]
    # 0.146 writes task_started between the user event and its item
    first = of(parse(SMALL), Message)[0]
    assert (first.type, first.subtype, first.text) == ("event_msg", "user_message", "List the files")


def test_reasoning_summary_is_searchable_and_encrypted_content_never_stored():
    records = parse(FILE_1)
    thinking = [m for m in of(records, Message) if m.content_type == "thinking"]
    assert [m.text for m in thinking] == ["I will inspect the synthetic directory."]
    assert not any("SYNTHETIC_ENCRYPTED" in repr(r) for r in records)


@pytest.mark.parametrize("item_first", [False, True], ids=["events-first", "item-first"])
def test_each_reasoning_part_is_stored_once_whatever_the_order(item_first):
    parts = ["**Gamma** first part", "**Delta** second part"]
    item = envelope("response_item", {"type": "reasoning", "encrypted_content": "x",
                                      "summary": [{"type": "summary_text", "text": t} for t in parts]})
    events = [envelope("event_msg", {"type": "agent_reasoning", "text": t}) for t in parts]
    records = feed_raw([
        envelope("session_meta", {"id": "t-r"}),
        *([item, *events] if item_first else [*events, item]),
        envelope("event_msg", {"type": "agent_reasoning", "text": "a later thought"}),
    ])
    thinking = [m.text for m in of(records, Message)]
    if item_first:
        assert thinking == ["**Gamma** first part\n\n**Delta** second part", "a later thought"]
        assert [r.reason for r in of(records, Merged)] == ["metadata", "duplicate", "duplicate"]
    else:
        assert thinking == [*parts, "a later thought"]
        assert [r.reason for r in of(records, Merged)] == ["metadata", "duplicate"]


def test_a_responses_events_written_before_its_items_are_their_twins():
    # Codex 0.46 (late 2025) wrote a response's events as they streamed, then its items
    def said(role, text):
        kind = "output_text" if role == "assistant" else "input_text"
        return envelope("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    def reasoning(text):
        return envelope("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}],
                                          "content": None, "encrypted_content": "gAAA"})

    records = feed_raw([
        envelope("session_meta", {"id": "t-046", "cli_version": "0.46.0", "originator": "codex_exec"}),
        said("user", "<environment_context>\n  <cwd>/tmp/x</cwd>\n</environment_context>"),
        said("user", "what is 2+2?"),
        envelope("event_msg", {"type": "user_message", "message": "what is 2+2?", "kind": "plain"}),
        envelope("turn_context", {"cwd": "/tmp/x", "model": "gpt-5-codex"}),
        envelope("event_msg", {"type": "agent_reasoning", "text": "**Adding**"}),
        envelope("event_msg", {"type": "agent_message", "message": "4"}),
        reasoning("**Adding**"),
        said("assistant", "4"),
        envelope("event_msg", {"type": "agent_reasoning", "text": "**Checking**"}),
        reasoning("**Checking**"),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        envelope("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        # an event without its item, then twins: the last item is no one's twin
        envelope("event_msg", {"type": "agent_message", "message": "a"}),
        envelope("event_msg", {"type": "agent_message", "message": "b"}),
        said("assistant", "b"),
        said("assistant", "c"),
    ])
    shown = [(m.type, m.role, m.content_type, m.text) for m in of(records, Message) if not m.is_meta]
    assert shown == [
        ("response_item", "user", "text", "what is 2+2?"),  # the prompt once: its item, then its event
        ("event_msg", "assistant", "thinking", "**Adding**"),
        ("event_msg", "assistant", "text", "4"),
        ("event_msg", "assistant", "thinking", "**Checking**"),
        ("response_item", "assistant", "tool_use", "shell"),
        ("response_item", "user", "tool_result", "ok"),
        ("event_msg", "assistant", "text", "a"),
        ("event_msg", "assistant", "text", "b"),
        ("response_item", "assistant", "text", "c"),
    ]
    assert [m.text for m in of(records, Message) if m.is_meta] == ["<environment_context>\n  <cwd>/tmp/x</cwd>\n</environment_context>"]
    assert Counter(r.reason for r in of(records, Merged))["duplicate"] == 5
    assert [t.title for t in of(records, TitleCandidate)] == ["what is 2+2?"]


def test_an_answer_keeps_the_effort_its_turn_asked_for():
    # the session's reasoning effort is the last turn's; each answer keeps its own turn's
    records = feed_raw([
        envelope("session_meta", {"id": "t-effort", "cli_version": "0.104.0"}),
        envelope("event_msg", {"type": "user_message", "message": "think hard"}),
        envelope("turn_context", {"cwd": "/w", "model": "gpt-5.3-codex", "effort": "high"}),
        envelope("event_msg", {"type": "agent_reasoning", "text": "**Thinking**"}),
        envelope("event_msg", {"type": "agent_message", "message": "done"}),
        envelope("event_msg", {"type": "user_message", "message": "now quickly"}),
        envelope("turn_context", {"cwd": "/w", "model": "gpt-5.3-codex", "effort": "low"}),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        envelope("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        envelope("event_msg", {"type": "agent_message", "message": "also done"}),
    ])
    assert [(m.role, m.text, m.meta) for m in of(records, Message)] == [
        ("user", "think hard", None),
        ("assistant", "**Thinking**", {"effort": "high"}),
        ("assistant", "done", {"effort": "high"}),
        ("user", "now quickly", None),
        ("assistant", "shell", {"effort": "low"}),
        ("user", "ok", None),
        ("assistant", "also done", {"effort": "low"}),
    ]
    assert [s.reasoning_effort for s in of(records, Session) if s.reasoning_effort] == ["high", "low"]


def _answer(*parts):
    return envelope("response_item", {"type": "message", "role": "assistant",
                                      "content": [{"type": "output_text", "text": t} for t in parts]})


def _said(kind, text):
    return envelope("event_msg", {"type": kind, ("message" if kind == "agent_message" else "text"): text})


def _thought(text):
    return envelope("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]})


WARNING = envelope("event_msg", {"type": "warning", "message": "slow"})  # a log-only line between twins
TWIN_ORDERS = {
    # an answer in two parts: one event per part, before or after the item, a log-only line between
    "parts-events-first": (
        [_said("agent_message", "one"), _said("agent_message", "two"), WARNING, _answer("one", "two")], ["one", "two"]),
    "parts-item-first": (
        [_answer("one", "two"), WARNING, _said("agent_message", "one"), _said("agent_message", "two")], ["one\ntwo"]),
    # each item pairs with the event that said its text, not the last one
    "two-answers": (
        [_said("agent_message", "first"), _said("agent_message", "second"), _answer("first"), _answer("second")],
        ["first", "second"]),
    "two-thoughts": (
        [_said("agent_reasoning", "A"), _said("agent_reasoning", "B"), _thought("A"), _thought("B")], ["A", "B"]),
    # an answer in parts, its events first: both parts are its twins, and an answer after it is its own
    "parts-then-new": (
        [_said("agent_message", "a"), _said("agent_message", "b"), _answer("a", "b"), _answer("c")], ["a", "b", "c"]),
    # an item said whole by one event is consumed whole: the next answer is its own
    "whole-then-new": ([_answer("one", "two"), _said("agent_message", "one\ntwo"), _said("agent_message", "new")],
                       ["one\ntwo", "new"]),
}


@pytest.mark.parametrize("order", sorted(TWIN_ORDERS))
def test_twins_pair_by_what_they_say(order):
    lines, expected = TWIN_ORDERS[order]
    records = feed_raw([envelope("session_meta", {"id": "t-o"}), *lines])
    assert [m.text for m in of(records, Message) if not m.is_meta] == expected


def test_a_compaction_keeps_every_part_of_an_answer_said_in_parts():
    records = feed_raw([
        envelope("session_meta", {"id": "t-parts"}),
        _said("agent_message", "a1"), _said("agent_message", "b1"), _answer("a1", "b1"),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"}),
        envelope("compacted", {"message": "", "replacement_history": [
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "a1"}, {"type": "output_text", "text": "b1"}]}]}),
    ])
    lines = {m.uuid: m.position.line_no for m in of(records, Message)}
    [compaction] = [m for m in of(records, Message) if m.is_compact_summary]
    assert [lines[uuid] for uuid in compaction.meta["preserved_uuids"]] == [2, 3]


def test_a_compaction_keeps_the_latest_of_two_answers_saying_the_same():
    records = feed_raw([
        envelope("session_meta", {"id": "t-ok"}),
        _said("agent_message", "ok"), _said("agent_message", "ok"), _answer("ok"), _answer("ok"),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"}),
        envelope("compacted", {"message": "", "replacement_history": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}]}),
    ])
    lines = {m.uuid: m.position.line_no for m in of(records, Message)}
    [compaction] = [m for m in of(records, Message) if m.is_compact_summary]
    assert [lines[uuid] for uuid in compaction.meta["preserved_uuids"]] == [3]


def test_a_twin_further_back_must_say_the_same():
    reasoning = lambda text: envelope("response_item", {  # noqa: E731
        "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]})
    records = feed_raw([
        envelope("session_meta", {"id": "t-far"}),
        envelope("event_msg", {"type": "agent_reasoning", "text": "thought"}),
        envelope("event_msg", {"type": "agent_message", "message": "said"}),
        reasoning("another thought"),  # not the last Message's twin, nor saying what the first said
        reasoning("thought"),
    ])
    assert [m.text for m in of(records, Message)] == ["thought", "said", "another thought", "thought"]


def test_injected_context_is_meta():
    records = feed_raw([
        envelope("session_meta", {"id": "t-1", "timestamp": "2026-03-01T10:00:00.000Z"}),
        envelope("response_item", {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions instructions>sandbox</permissions instructions>"}]}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n<cwd>/x</cwd>\n</environment_context>"}]}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>"}]}),
        envelope("event_msg", {"type": "user_message", "message": "Fix the bug"}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Fix the bug"}]}),
    ])
    messages = of(records, Message)
    assert [(m.role, m.is_meta) for m in messages] == [("developer", 1), ("user", 1), ("user", 1), ("user", 0)]
    assert [t.title for t in of(records, TitleCandidate)] == ["Fix the bug"]


def test_user_items_of_a_context_block_between_turns_are_meta():
    user = lambda text: envelope("response_item", {"type": "message", "role": "user", "content": [  # noqa: E731
        {"type": "input_text", "text": text}]})
    developer = envelope("response_item", {"type": "message", "role": "developer", "content": [
        {"type": "input_text", "text": "[REDACTED_TEXT len=3642]"}]})
    block = [developer, user("[REDACTED_TEXT len=3021]"), user("[REDACTED_TEXT len=112]"), developer]
    records = feed_raw([
        envelope("session_meta", {"id": "t-c", "cli_version": "0.104.0"}),
        *block,
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        user("first prompt"),
        envelope("event_msg", {"type": "user_message", "message": "first prompt"}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}),
        *block,  # written again after a compaction
        envelope("event_msg", {"type": "task_started", "turn_id": "t2"}),
        user("second prompt"),
        envelope("event_msg", {"type": "user_message", "message": "second prompt"}),
    ])
    users = [(m.text, m.is_meta) for m in of(records, Message) if m.role == "user"]
    assert users == [
        ("[REDACTED_TEXT len=3021]", 1), ("[REDACTED_TEXT len=112]", 1), ("first prompt", 0),
        ("[REDACTED_TEXT len=3021]", 1), ("[REDACTED_TEXT len=112]", 1), ("second prompt", 0),
    ]
    assert [t.title for t in of(records, TitleCandidate)] == ["first prompt"]


def test_prompts_of_generations_without_event_twins_are_not_context():
    # items only, prompt after turn_context (0.77) or without any turn marker (pre-envelope)
    items_only = feed_raw([
        envelope("session_meta", {"id": "t-c2"}),
        envelope("turn_context", {"model": "m"}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "hello"}]}),
    ])
    pre_envelope = feed_raw([
        b'{"id":"c27a914d","timestamp":"2025-08-20T13:20:47.060Z","instructions":null}',
        b'{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]}',
        b'{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}',
    ])
    for records in (items_only, pre_envelope):
        assert [(m.text, m.is_meta) for m in of(records, Message) if m.role == "user"] == [("hello", 0)]
        assert [t.title for t in of(records, TitleCandidate)] == ["hello"]


# -- usage ----------------------------------------------------------------------


def test_usage_is_counted_once_per_api_response():
    records = parse(BIG)
    usage = [m for m in of(records, Message) if m.subtype == "token_count"]
    assert len(usage) == 286
    assert all(m.is_meta and m.surface == "log-only" for m in usage)
    final_total = {"input_tokens": 33810485, "cached_input_tokens": 31621504, "output_tokens": 133999}
    assert sum(m.input_tokens + m.cache_read_tokens for m in usage) == final_total["input_tokens"]
    assert sum(m.cache_read_tokens for m in usage) == final_total["cached_input_tokens"]
    assert sum(m.output_tokens for m in usage) == final_total["output_tokens"]
    assert {m.model for m in usage} == {"gpt-5.3-codex"}


# -- tools --------------------------------------------------------------------


def test_calls_and_outputs_pair_by_call_id():
    records = parse(FILE_1)
    calls = {c.id: c for c in of(records, ToolCall)}
    results = {r.tool_use_id: r for r in of(records, ToolResult)}
    assert set(calls) == set(results) == {
        "codex:11111111-1111-4111-8111-111111111111:call-structured-001",
        "codex:11111111-1111-4111-8111-111111111111:call-custom-001",
        "codex:11111111-1111-4111-8111-111111111111:call-mcp-001",
    }
    assert results["codex:11111111-1111-4111-8111-111111111111:call-custom-001"].content == "Done!"
    assert calls["codex:11111111-1111-4111-8111-111111111111:call-mcp-001"].name == "mcp__synthetic__lookup"


def test_outcomes_from_exit_codes_rejections_and_aborts():
    call = lambda cid, name="shell", args=None: envelope("response_item", {  # noqa: E731
        "type": "function_call", "name": name, "arguments": json.dumps(args or {"command": ["ls"]}), "call_id": cid})
    output = lambda cid, text: envelope("response_item", {  # noqa: E731
        "type": "function_call_output", "call_id": cid, "output": text})
    records = feed_raw([
        envelope("session_meta", {"id": "t-2"}),
        call("a"), output("a", json.dumps({"output": "boom", "metadata": {"exit_code": 2, "duration_seconds": 0.1}})),
        call("b"), output("b", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok"),
        call("c", "exec_command", {"cmd": "false"}),
        output("c", "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 1\nOutput:\n"),
        call("d"), output("d", "exec command rejected by user"),
        call("e"), output("e", "aborted"),
        call("f"),
        call("g", args={"command": ["rm", "x"], "sandbox_permissions": "require_escalated"}),
        envelope("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        output("f", "aborted"),  # written after the abort: the result is read from it
        envelope("event_msg", {"type": "task_started"}),  # the next turn: g got no output
        # a command's own output that mentions a refusal or an exit code
        call("h", "exec_command", {"cmd": "rg rejected"}),
        output("h", "Chunk ID: 2\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\n"
                    "src/policy.rs:12: // the call was rejected by user\n"),
        call("i", "exec_command", {"cmd": "./run"}),
        output("i", "Chunk ID: 3\nWall time: 10.0 seconds\nProcess running with session ID 4242\nOutput:\n"
                    "step 1\nExit code: 1\n"),
        call("j"), output("j", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nPermission denied by user policy"),
        call("k", "mcp__ci__status"), output("k", "build 41 passed\nExit code: 1 on build 40\n"),  # no header
        call("l"), output("l", "Exit code: 3"),  # a header alone
        call("m"), output("m", "Exit code: 99999999999999999999999\nOutput:\nx"),  # no code SQLite can store
    ])
    results = {r.tool_use_id.rsplit(":", 1)[1]: r for r in of(records, ToolResult)}
    assert {k: r.outcome for k, r in results.items()} == {
        "a": "failed", "b": "succeeded", "c": "failed", "d": "blocked", "e": "cancelled", "f": "cancelled",
        "g": "blocked", "h": "succeeded", "i": "succeeded", "j": "succeeded", "k": "succeeded", "l": "failed",
        "m": "succeeded",
    }
    assert (results["a"].exit_code, results["a"].content, results["a"].is_error) == (2, "boom", 1)
    assert {k: results[k].exit_code for k in "cdhijklm"} == {
        "c": 1, "d": None, "h": 0, "i": None, "j": 0, "k": None, "l": 3, "m": None,
    }
    assert len(of(records, ToolResult)) == 13


def test_codex_error_reports_of_built_in_tools_are_failures():
    custom = lambda cid, text: envelope("response_item", {  # noqa: E731
        "type": "custom_tool_call_output", "call_id": cid, "output": text})
    records = feed_raw([
        envelope("session_meta", {"id": "t-2b"}),
        envelope("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n",
                                   "call_id": "p"}),
        custom("p", "apply_patch verification failed: Failed to find expected lines in /repo/missing.py:\nzz"),
        custom("q", "failed to parse function arguments: missing field `input`"),
        custom("r", "unsupported custom tool call: frobnicate"),
        custom("s", "execution error: Io(Os { code: 2 })"),
        custom("t", json.dumps({"content": [{"type": "text", "text": "403 Forbidden"}], "isError": True})),
        # successful outputs that merely mention errors
        custom("u", "Success. Updated the following files:\nM errors.py\n"),
        custom("v", "Exit code: 0\nOutput:\nexecution error: none; unsupported call: none\n"),
        custom("w", json.dumps({"content": [{"type": "text", "text": "isError: true"}], "isError": False})),
    ])
    results = {r.tool_use_id.rsplit(":", 1)[1]: (r.outcome, r.is_error) for r in of(records, ToolResult)}
    assert results == {
        "p": ("failed", 1), "q": ("failed", 1), "r": ("failed", 1), "s": ("failed", 1), "t": ("failed", 1),
        "u": ("succeeded", 0), "v": ("succeeded", 0), "w": ("succeeded", 0),
    }


def test_an_output_written_after_its_turn_was_aborted_wins():
    call = lambda cid: envelope("response_item", {  # noqa: E731
        "type": "custom_tool_call", "name": "shell", "input": '{"command":["ls"]}', "call_id": cid})
    records = feed_raw([
        envelope("session_meta", {"id": "t-2c"}),
        call("late"), call("never"),
        envelope("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        envelope("response_item", {"type": "custom_tool_call_output", "call_id": "late",
                                   "output": [{"type": "input_text", "text": "a.txt\nb.txt\n"}]}),
        envelope("event_msg", {"type": "user_message", "message": "next"}),
    ])
    results = [(r.tool_use_id.rsplit(":", 1)[1], r.content, r.outcome) for r in of(records, ToolResult)]
    assert results == [("late", "a.txt\nb.txt\n", "succeeded"), ("never", "[no output: turn aborted]", "cancelled")]


def test_unanswered_escalation_is_blocked():
    records = parse(ESCALATION)
    blocked = [r.tool_use_id for r in of(records, ToolResult) if r.outcome == "blocked"]
    assert blocked == ["codex:rejection-codex-001:call_esc_002", "codex:rejection-codex-001:call_esc_004"]


def test_apply_patch_paths():
    patch = (
        "*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** Update File: src/app.py\n"
        "*** Move to: src/main.py\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch"
    )
    expected = ["docs/new.md", "src/app.py", "src/main.py", "old.txt"]
    assert patch_paths(patch) == expected
    records = feed_raw([
        envelope("session_meta", {"id": "t-3"}),
        envelope("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": "c1"}),
        envelope("response_item", {"type": "function_call", "name": "apply_patch",
                                   "arguments": json.dumps({"input": patch}), "call_id": "c2"}),
        envelope("response_item", {"type": "function_call", "name": "shell",
                                   "arguments": json.dumps({"command": ["apply_patch", patch]}), "call_id": "c3"}),
        envelope("response_item", {"type": "function_call", "name": "exec_command",
                                   "arguments": json.dumps({"cmd": "apply_patch <<'EOF'\n" + patch + "\nEOF\n"}),
                                   "call_id": "c4"}),
        envelope("response_item", {"type": "local_shell_call", "call_id": "c5", "status": "completed",
                                   "action": {"type": "exec", "command": ["bash", "-lc", "echo hi > notes.txt"]}}),
    ])
    assert [c.file_paths for c in of(records, ToolCall)] == [expected] * 4 + [["notes.txt"]]


def test_shell_write_detection_is_conservative():
    assert shell_written_paths("echo hi > a.txt && sort b | tee -a c.log") == ["a.txt", "c.log"]
    assert shell_written_paths("python -c 'print(1 > 2)' 2>/dev/null") == []
    assert shell_written_paths("cat > f.py << 'EOF'\nif a > b: pass\nEOF") == ["f.py"]
    assert shell_written_paths("ls -la && cat x") == []


def test_patch_paths_follow_the_call_s_working_folder():
    patch = "*** Begin Patch\n*** Update File: main.py\n@@\n-a\n+b\n*** End Patch"
    records = feed_raw([
        envelope("session_meta", {"id": "t-w", "cwd": "/repo"}),
        *[envelope("response_item", {"type": "function_call", "name": "shell_command", "call_id": f"c{i}",
                                     "arguments": json.dumps({"command": "apply_patch <<'EOF'\n" + patch + "\nEOF\n",
                                                              **({"workdir": workdir} if workdir else {})})})
          for i, workdir in enumerate(["pkg", "/elsewhere", "../up", None])],
        envelope("response_item", {"type": "local_shell_call", "call_id": "c5", "status": "completed", "action": {
            "type": "exec", "command": ["bash", "-lc", "echo x > rel.txt"], "working_directory": "/other/dir"}}),
    ])
    assert [c.file_paths for c in of(records, ToolCall)] == [
        ["/repo/pkg/main.py"], ["/elsewhere/main.py"], ["/up/main.py"], ["/repo/main.py"], ["/other/dir/rel.txt"]]


def test_an_mcp_call_that_failed_is_failed():
    call = lambda cid, name: envelope("response_item", {  # noqa: E731
        "type": "function_call", "name": name, "arguments": "{}", "call_id": cid})
    output = lambda cid, text: envelope("response_item", {  # noqa: E731
        "type": "function_call_output", "call_id": cid, "output": text})
    end = lambda cid, result: envelope("event_msg", {"type": "mcp_tool_call_end", "call_id": cid, "result": result})  # noqa: E731
    flagged = '[{"type":"text","text":"Error: 403 Resource not accessible"}]'
    records = feed_raw([
        envelope("session_meta", {"id": "t-mcp"}),
        call("a", "gh__create_issue"), end("a", {"Ok": {"content": [], "isError": True}}), output("a", flagged),
        call("b", "gh__list"), end("b", {"Err": "tool call failed: timeout"}), output("b", "err: tool call failed: timeout"),
        call("c", "gh__list"), output("c", "err: tool call failed: timeout"),  # no end event (0.2x-0.4x)
        call("d", "gh__list"), end("d", {"Ok": {"content": [], "isError": False}}), output("d", flagged),
        call("e", "shell"), output("e", "err: a command's own words"),
    ])
    results = {r.tool_use_id.rsplit(":", 1)[1]: (r.outcome, r.is_error) for r in of(records, ToolResult)}
    assert results == {"a": ("failed", 1), "b": ("failed", 1), "c": ("failed", 1), "d": ("succeeded", 0),
                       "e": ("succeeded", 0)}


def test_a_rollout_whose_first_line_names_no_folder_takes_its_environment_context_s():
    records = feed_raw([
        orjson.dumps({"id": "c27a914d-1111-4222-8333-444455556666", "timestamp": "2025-08-20T13:20:47.060Z",
                      "instructions": None, "git": {"branch": "main"}}),
        b'{"record_type":"state"}',
        orjson.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                      "<environment_context>\n  <cwd>/home/me/proj</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}),
        orjson.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]}),
    ])
    assert [(s.cwd, s.project) for s in of(records, Session) if s.cwd] == [("/home/me/proj", "-home-me-proj")]
    assert [m.cwd for m in of(records, Message)] == ["/home/me/proj", "/home/me/proj"]


def test_an_attached_image_s_markup_titles_nothing():
    image = {"type": "input_image", "image_url": "data:image/png;base64," + base64.b64encode(b"x" * 30).decode()}
    records = feed_raw([
        envelope("session_meta", {"id": "t-img"}),
        envelope("turn_context", {"cwd": "/w", "model": "gpt-5"}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<image name=[Image #1]>"}, image, {"type": "input_text", "text": "</image>"},
            {"type": "input_text", "text": "what is in this screenshot?"}]}),
        envelope("event_msg", {"type": "user_message", "message": "what is in this screenshot?", "images": []}),
    ])
    assert [t.title for t in of(records, TitleCandidate)] == ["what is in this screenshot?"]
    records = feed_raw([  # an image alone: the next prompt titles the session
        envelope("session_meta", {"id": "t-img2"}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<image name=[Image #1]>"}, image, {"type": "input_text", "text": "</image>"}]}),
        envelope("event_msg", {"type": "user_message", "message": "", "images": []}),
        envelope("event_msg", {"type": "user_message", "message": "describe the cat"}),
    ])
    assert [t.title for t in of(records, TitleCandidate)] == ["describe the cat"]


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://github.com/simonw/llm.git", "github.com/simonw/llm"),
        ("https://github.com/simonw/llm", "github.com/simonw/llm"),
        ("git@github.com:simonw/llm.git", "github.com/simonw/llm"),
        ("ssh://git@GitHub.com:22/simonw/llm.git/", "github.com/simonw/llm"),
        ("https://user:token@gitlab.example.com/group/sub/repo.git", "gitlab.example.com/group/sub/repo"),
        ("https://example.invalid/repo.git", "example.invalid/repo"),
        ("/home/user/repo", None),
        ("C:/repos/app", None),
        ("C:\\repos\\app", None),
        ("[trimmed for fixture]", None),
        (None, None),
    ],
)
def test_repository_url_normalization(url, expected):
    assert normalize_repository(url) == expected


# -- compaction and large payloads ----------------------------------------------


def test_compacted_replacement_history_is_never_decoded(monkeypatch):
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x" * 4000}]}
    history = orjson.dumps([item] * 1000 + [{"type": "reasoning", "summary": []}])  # 4 MB
    line = (
        b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"compacted","payload":{"message":"We fixed the parser.",'
        b'"replacement_history":' + history + b"}}"
    )
    decoded_sizes = []
    real_loads = orjson.loads

    def spy(data, *args):
        decoded_sizes.append(len(data))
        return real_loads(data, *args)

    parser = CodexSource().open_parser(SourceFile(Path("rollout-x.jsonl"), "codex", kind="rollout"), None)
    parser.feed(envelope("session_meta", {"id": "t-4"}), Position(1, 0, 10))
    monkeypatch.setattr(orjson, "loads", spy)
    out = list(parser.feed(line, Position(2, 11, len(line))))
    # only a skeleton of emptied strings is validated: no text of the history is decoded
    assert max(decoded_sizes) < len(history) // 50
    message = of(out, Message)[0]
    assert message.type == "compacted" and message.is_compact_summary == 1
    assert message.text == (
        f"We fixed the parser.\n\n[replacement_history: 1001 items, {len(history)} bytes, not stored]"
    )
    assert of(out, Summary)[0].content == "We fixed the parser."  # what it wrote, not the note
    assert of(out, Summary)[0].kind == "compaction"


def user_item(*parts) -> dict:
    return {"type": "message", "role": "user", "content": list(parts)}


def test_a_compaction_keeps_current_what_its_replacement_history_repeats():
    text = lambda kind, t: {"type": f"{kind}_text", "text": t}  # noqa: E731
    image = lambda n: {"type": "input_image", "image_url": "data:image/png;base64," + "A" * n}  # noqa: E731
    answer = {"type": "message", "role": "assistant", "content": [text("output", "Done: \"quoted\" and é")]}
    records = feed_raw([
        envelope("session_meta", {"id": "t-kept"}),
        envelope("event_msg", {"type": "user_message", "message": "first"}),        # offset of line 2: kept
        envelope("response_item", user_item(text("input", "first"))),                # its twin
        envelope("response_item", answer),                                            # kept
        envelope("response_item", user_item(text("input", "dropped"))),              # not in the history
        envelope("response_item", user_item(text("input", "look"), image(100))),     # kept: the image re-encoded
        envelope("compacted", {"message": "", "replacement_history": [
            user_item(text("input", "first")), answer, user_item(text("input", "look"), image(120)),
            user_item(text("input", "never said")), {"type": "compaction", "encrypted_content": "x"},
        ]}),
    ])
    messages = of(records, Message)
    said = {m.text.split("\n")[0]: m.uuid for m in messages if not m.is_compact_summary}
    [compaction] = [m for m in messages if m.is_compact_summary]
    assert compaction.meta == {"preserved_uuids": [said["first"], said['Done: "quoted" and é'], said["look"]]}


def test_a_prompt_said_again_and_again_is_kept_as_often_as_the_history_repeats_it():
    text = lambda t: {"type": "input_text", "text": t}  # noqa: E731
    prompt = lambda t: envelope("response_item", user_item(text(t)))  # noqa: E731
    records = feed_raw([
        envelope("session_meta", {"id": "t-again"}),
        prompt("continue"), prompt("other"), prompt("continue"), prompt("continue"),
        envelope("compacted", {"message": "", "replacement_history": [
            user_item(text("other")), user_item(text("continue")), user_item(text("continue")),
        ]}),
    ])
    lines = {m.uuid: m.position.line_no for m in of(records, Message)}
    [compaction] = [m for m in of(records, Message) if m.is_compact_summary]
    assert [lines[uuid] for uuid in compaction.meta["preserved_uuids"]] == [3, 4, 5]


def test_a_compactions_history_is_read_whatever_the_place_of_a_messages_id():
    text = lambda t: [{"type": "input_text", "text": t}]  # noqa: E731
    records = feed_raw([
        envelope("session_meta", {"id": "t-ids"}),
        envelope("response_item", user_item(*text("first"))),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        envelope("event_msg", {"type": "item_completed", "item": {  # 0.149: no response item
            "type": "UserMessage", "id": "u2", "content": [{"type": "text", "text": "second"}]}}),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c2"}),
        envelope("response_item", user_item(*text("third"))),
        envelope("compacted", {"message": "", "replacement_history": [
            {"type": "message", "id": "m1", "role": "user", "content": text("first")},
            {"type": "message", "role": "user", "id": None, "content": text("second")},
            {"type": "message", "id": "m\"3", "role": "user", "content": text("third")},
        ]}),
    ])
    lines = {m.uuid: m.position.line_no for m in of(records, Message)}
    [compaction] = [m for m in of(records, Message) if m.is_compact_summary]
    assert [lines[uuid] for uuid in compaction.meta["preserved_uuids"]] == [2, 4, 6]


def test_a_compaction_without_its_history_keeps_the_latest_prompts_within_codexs_budget(monkeypatch):
    from datasette_obelisk.sources import codex

    monkeypatch.setattr(codex, "KEPT_PROMPT_CHARS", 10)
    records = feed_raw([
        envelope("session_meta", {"id": "t-budget"}),
        envelope("event_msg", {"type": "user_message", "message": "oldest prompt"}),
        envelope("event_msg", {"type": "agent_message", "message": "reply"}),
        envelope("event_msg", {"type": "user_message", "message": "six ch"}),
        envelope("event_msg", {"type": "user_message", "message": "newer"}),
        envelope("compacted", {"message": "summary"}),
    ])
    prompts = {m.text: m.uuid for m in of(records, Message) if m.role == "user" and not m.is_compact_summary}
    [compaction] = [m for m in of(records, Message) if m.is_compact_summary]
    # 5 + 6 characters reach the budget of 10: the older prompt is left out, the one that crossed it is kept.
    assert compaction.meta == {"preserved_uuids": [prompts["six ch"], prompts["newer"]]}


def test_a_compacted_line_with_the_next_record_glued_on_is_an_error():
    cut = (
        b'{"timestamp":"2026-04-05T00:00:02.000Z","type":"compacted","payload":{"message":"summary text",'
        b'"replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"one"}]},'
        b'{"type":"mess'
    )
    glued = envelope("event_msg", {"type": "user_message", "message": "two"}, "2026-04-05T00:00:03.000Z")
    records = feed_raw([
        envelope("session_meta", {"id": "t-4b"}),
        envelope("event_msg", {"type": "user_message", "message": "one"}),
        cut + glued,
        envelope("event_msg", {"type": "agent_message", "message": "reply"}),
    ])
    assert [(e.position.line_no, e.reason) for e in of(records, LineError)] == [
        (3, "truncated compacted record")
    ]
    assert [(m.role, m.text) for m in of(records, Message)] == [("user", "one"), ("assistant", "reply")]
    assert not of(records, Summary)


def test_context_compacted_after_compacted_is_its_duplicate():
    records = feed_raw([
        envelope("session_meta", {"id": "t-5"}),
        envelope("compacted", {"message": "summary", "replacement_history": []}),
        envelope("event_msg", {"type": "context_compacted"}),
        envelope("event_msg", {"type": "context_compacted"}),  # a compaction of its own
    ])
    assert [r.reason for r in of(records, Merged)] == ["metadata", "duplicate"]
    assert [m.is_compact_summary for m in of(records, Message)] == [1, 1]


def test_inline_images_are_replaced_by_placeholders():
    image = base64.b64encode(b"\x89PNG" + bytes(60_000)).decode()
    records = feed_raw([
        envelope("session_meta", {"id": "t-6"}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is on the screen?"},
            {"type": "input_image", "image_url": "data:image/png;base64," + image}]}),
        envelope("event_msg", {"type": "user_message", "message": "small", "images": ["data:image/png;base64,iVBORw=="]}),
    ])
    texts = [m.text for m in of(records, Message)]
    assert texts[0] == "What is on the screen?\n[image image/png 60004 bytes]"
    assert not any(image[:100] in repr(r) for r in records)
    assert "iVBOR" not in repr(records)


def test_a_data_url_inside_a_text_is_replaced_by_a_placeholder():
    image = base64.b64encode(b"\x89PNG" + bytes(6_000)).decode()
    records = feed_raw([
        envelope("session_meta", {"id": "t-6b"}),
        envelope("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"embedded: ![x](data:image/png;base64,{image}) and more"}]}),
        envelope("event_msg", {"type": "agent_message", "message": "a short one: data:text/plain;base64,aGk="}),
    ])
    assert [m.text for m in of(records, Message)] == [
        "embedded: ![x]([image image/png 6004 bytes]) and more",
        "a short one: data:text/plain;base64,aGk=",
    ]
    assert image[:64] not in repr(records)


# -- lineage --------------------------------------------------------------------


def test_spawned_thread_replays_parent_history_only_once():
    parent, child = parse(PARENT), parse(CHILD)
    stored = [(m.session_id, m.text) for m in of(parent + child, Message)]
    assert stored.count(("codex:22222222-2222-4222-8222-222222222222", "Spawn a synthetic researcher.")) == 1
    assert not any("Spawn a synthetic researcher." in text for sid, text in stored if "3333" in sid)
    assert [text for sid, text in stored if "3333" in sid] == ["Inspect fixtures.", "The fixtures are fully synthetic."]
    assert len(of(parent + child, ToolCall)) == 1
    link = of(child, Subagent)[0]
    assert (link.session_id, link.child_session_id, link.parent_tool_use_id) == (
        "codex:22222222-2222-4222-8222-222222222222",
        "codex:33333333-3333-4333-8333-333333333333",
        "codex:22222222-2222-4222-8222-222222222222:call-spawn-001",
    )
    assert of(parent, ToolResult)[0].agent_id == "33333333-3333-4333-8333-333333333333"
    assert of(parent, Subagent)[0].child_session_id == link.child_session_id


PARENT_ID = "019bd000-0000-7000-8000-000000000001"  # minted 2026-01-18T07:26:59.584Z
CHILD_ID = "019c1000-0000-7000-8000-000000000002"  # minted 2026-01-30T17:42:41.408Z
OLD_TURN = "019bd000-1000-7000-8000-000000000003"  # a parent turn, before the fork
NEW_TURN = "019c1000-1000-7000-8000-000000000004"  # the child's own turn
FORK_TIME = "2026-01-30T17:42:41.408Z"
COPY_TIME = "2026-01-30T17:42:41.430Z"  # copies are re-stamped at the fork
OWN_TIME = "2026-01-30T17:47:00.000Z"


def copied_parent(stamp: str, turn: str | None) -> list[bytes]:
    """The parent's lines as a legacy fork copies them: re-stamped."""
    turn_fields = {"turn_id": turn} if turn else {}
    total = {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0,
             "total_tokens": 110}
    return [
        envelope("session_meta", {"id": PARENT_ID, "timestamp": "2026-01-18T07:26:59.584Z"}, stamp),
        envelope("event_msg", {"type": "task_started", **turn_fields}, stamp),
        envelope("turn_context", {"model": "gpt-parent", "cwd": "/p", **turn_fields}, stamp),
        envelope("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": "parent prompt"}]}, stamp),
        envelope("event_msg", {"type": "user_message", "message": "parent prompt"}, stamp),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "p1"}, stamp),
        envelope("response_item", {"type": "function_call_output", "call_id": "p1", "output": "ok"}, stamp),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": total,
                                                               "last_token_usage": total}}, stamp),
    ]


def own_turn(stamp: str, turn: str | None) -> list[bytes]:
    turn_fields = {"turn_id": turn} if turn else {}
    total = {"input_tokens": 150, "cached_input_tokens": 0, "output_tokens": 15, "reasoning_output_tokens": 0,
             "total_tokens": 165}
    last = {"input_tokens": 50, "cached_input_tokens": 0, "output_tokens": 5, "reasoning_output_tokens": 0,
            "total_tokens": 55}
    return [
        envelope("event_msg", {"type": "task_started", **turn_fields}, stamp),
        envelope("turn_context", {"model": "gpt-child", "cwd": "/c", **turn_fields}, stamp),
        envelope("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": "child prompt"}]}, stamp),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": total,
                                                               "last_token_usage": last}}, stamp),
    ]


@pytest.mark.parametrize("turns", [True, False], ids=["uuid7-turn-ids", "gap-after-copy"])
def test_legacy_fork_replay_is_merged(turns):
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID}, FORK_TIME),
        *copied_parent(COPY_TIME, OLD_TURN if turns else None),
        *own_turn(OWN_TIME, NEW_TURN if turns else None),
    ])
    assert [r.reason for r in of(records, Merged)] == ["metadata"] + ["replay"] * 8 + ["metadata"] * 2
    messages = of(records, Message)
    assert [m.text for m in messages if m.role == "user"] == ["child prompt"]
    assert not of(records, ToolCall)
    usage = [m for m in messages if m.subtype == "token_count"]
    assert [(m.input_tokens, m.output_tokens, m.model) for m in usage] == [(50, 5, "gpt-child")]
    sessions = of(records, Session)
    assert (sessions[0].parent_session_id, sessions[0].relationship) == (f"codex:{PARENT_ID}", "fork")


def test_a_line_that_stores_no_message_says_when_the_session_went_on_to():
    # A turn ends (task_complete, turn_complete) after its last message and usage; a line of a type
    # not known yet was written by the session too. A placeholder time is passed on (the store keeps
    # only times). Lines that store a message give no end of their own: their rows have the time.
    records = feed_raw([
        envelope("session_meta", {"id": "t-end", "cli_version": "0.104.0"}, "2026-03-01T10:00:00.000Z"),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}, "2026-03-01T10:00:00.500Z"),
        envelope("event_msg", {"type": "user_message", "message": "go"}, "2026-03-01T10:00:01.000Z"),
        envelope("event_msg", {"type": "agent_message", "message": "done"}, "2026-03-01T10:00:02.000Z"),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}, "2026-03-01T10:00:03.500Z"),
        envelope("event_msg", {"type": "turn_complete", "turn_id": "t2"}, "[trimmed for fixture]"),
        envelope("future_record", {"x": 1}, "2026-03-01T10:00:04.000Z"),
    ])
    assert [(s.id, s.ended_at) for s in of(records, Session) if s.ended_at] == [
        ("codex:t-end", "2026-03-01T10:00:00.000Z"), ("codex:t-end", "2026-03-01T10:00:00.500Z"),
        ("codex:t-end", "2026-03-01T10:00:03.500Z"), ("codex:t-end", "[trimmed for fixture]"),
        ("codex:t-end", "2026-03-01T10:00:04.000Z")]
    # (the session_meta line's record says when it started and that it went on to then)
    assert of(records, Session)[0].started_at == "2026-03-01T10:00:00.000Z"


@pytest.mark.parametrize("kept", [False, True], ids=["parent-stored", "parent-stored-nowhere"])
def test_lines_copied_from_the_parent_say_nothing_of_when_a_fork_ended(kept):
    # the copies are re-stamped at the fork (COPY_TIME): neither the child's own activity nor its
    # parent's. (A copy kept, its parent's log stored nowhere, stores its messages in the fork: those
    # rows have their times; its other lines give none.)
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID}, FORK_TIME),
        *copied_parent(COPY_TIME, OLD_TURN),
        *own_turn(OWN_TIME, NEW_TURN),
    ], orphan_unit() if kept else None)
    assert len([m for m in of(records, Message) if (m.meta or {}).get("copied_from")]) == (4 if kept else 0)
    assert [(s.id, s.ended_at) for s in of(records, Session) if s.ended_at] == [
        (f"codex:{CHILD_ID}", FORK_TIME), (f"codex:{CHILD_ID}", OWN_TIME), (f"codex:{CHILD_ID}", OWN_TIME)]


def test_a_fork_turn_started_at_once_after_the_copy_is_its_own():
    # codex exec fork: no turn ids, the copy stamped 1 ms apart, the own turn 387 ms later
    stamp = lambda ms: f"2026-01-30T17:42:41.{408 + ms:03d}Z"  # noqa: E731
    copied = [orjson.loads(line) for line in copied_parent(COPY_TIME, None)]
    own = [orjson.loads(line) for line in own_turn(OWN_TIME, None)]
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID}, stamp(0)),
        *[envelope(line["type"], line["payload"], stamp(1 + i)) for i, line in enumerate(copied)],
        *[envelope(line["type"], line["payload"], stamp(400 + i)) for i, line in enumerate(own)],
    ])
    assert [r.reason for r in of(records, Merged)] == ["metadata"] + ["replay"] * 8 + ["metadata"] * 2
    assert [m.text for m in of(records, Message) if m.role == "user"] == ["child prompt"]
    assert [t.title for t in of(records, TitleCandidate)] == ["child prompt"]
    usage = [m for m in of(records, Message) if m.subtype == "token_count"]
    assert [(m.input_tokens, m.output_tokens) for m in usage] == [(50, 5)]


def usage(tokens_in, cached, out):
    return {"input_tokens": tokens_in, "cached_input_tokens": cached, "output_tokens": out,
            "reasoning_output_tokens": 0, "total_tokens": tokens_in + out}


def test_usage_counts_what_the_total_grew_by_when_responses_have_no_event():
    # A log that starts late (or lost events) reports totals past the sum of the last usages.
    records = feed_raw([
        envelope("session_meta", {"id": "t-u"}),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(85_000, 30_000, 42_000),
                                                               "last_token_usage": usage(1_500, 500, 1_000)}}),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(86_000, 30_000, 42_500),
                                                               "last_token_usage": usage(1_000, 0, 500)}}),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(90_000, 31_000, 43_000),
                                                               "last_token_usage": usage(2_000, 1_000, 100)}}),
    ])
    counted = [(m.input_tokens, m.cache_read_tokens, m.output_tokens) for m in of(records, Message)]
    # Input is stored without the cached part; the sums are the last totals.
    assert counted == [(55_000, 30_000, 42_000), (1_000, 0, 500), (3_000, 1_000, 500)]
    assert [sum(column) for column in zip(*counted)] == [59_000, 31_000, 43_000]


def test_usage_without_its_last_response_counts_what_the_total_grew_by():
    records = feed_raw([
        envelope("session_meta", {"id": "t-x"}),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(1000, 0, 100)}}),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(1500, 0, 150)}}),
    ])
    assert [(m.input_tokens, m.output_tokens) for m in of(records, Message)] == [(1000, 100), (500, 50)]


def test_a_child_s_first_total_counts_only_its_last_usage():
    # A fork that copied nothing (history_base): its first total may include its parent's.
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "forked_from_id": PARENT_ID}),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(85_000, 0, 42_000),
                                                               "last_token_usage": usage(1_500, 0, 1_000)}}),
    ])
    assert [(m.input_tokens, m.output_tokens) for m in of(records, Message)] == [(1_500, 1_000)]


def test_lines_of_a_copied_turn_stay_copies_after_a_slow_flush():
    # the copied function_call_output is written 200 ms after the call: still the parent's turn
    stamp = lambda ms: f"2026-01-30T17:42:41.{408 + ms:03d}Z"  # noqa: E731
    copied = [orjson.loads(line) for line in copied_parent(COPY_TIME, OLD_TURN)]
    own = [orjson.loads(line) for line in own_turn(OWN_TIME, NEW_TURN)]
    delays = [1, 2, 3, 4, 5, 6, 206, 207]
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID}, stamp(0)),
        *[envelope(line["type"], line["payload"], stamp(ms)) for ms, line in zip(delays, copied)],
        *[envelope(line["type"], line["payload"], stamp(208 + i)) for i, line in enumerate(own)],
    ])
    assert [r.reason for r in of(records, Merged)] == ["metadata"] + ["replay"] * 8 + ["metadata"] * 2
    assert [m.text for m in of(records, Message) if m.role == "user"] == ["child prompt"]
    assert not of(records, ToolResult)
    usage = [m for m in of(records, Message) if m.subtype == "token_count"]
    assert [(m.input_tokens, m.output_tokens) for m in usage] == [(50, 5)]


def test_the_childs_own_session_meta_ends_the_copy():
    # no turn ids: the child's session_meta, written again, says its own lines follow, at once
    stamp = lambda ms: f"2026-01-30T17:42:41.{408 + ms:03d}Z"  # noqa: E731
    child_meta = {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID}
    copied = [orjson.loads(line) for line in copied_parent(COPY_TIME, None)]
    own = [orjson.loads(line) for line in own_turn(OWN_TIME, None)]
    records = feed_raw([
        envelope("session_meta", child_meta, stamp(0)),
        *[envelope(line["type"], line["payload"], stamp(1 + i)) for i, line in enumerate(copied)],
        envelope("session_meta", child_meta, stamp(9)),
        *[envelope(line["type"], line["payload"], stamp(10 + i)) for i, line in enumerate(own)],
    ])
    assert [r.reason for r in of(records, Merged)] == ["metadata"] + ["replay"] * 8 + ["metadata"] * 3
    assert [m.text for m in of(records, Message) if m.role == "user"] == ["child prompt"]
    usage = [m for m in of(records, Message) if m.subtype == "token_count"]
    assert [(m.input_tokens, m.output_tokens) for m in usage] == [(50, 5)]


def orphan_unit(hints=None) -> SourceFile:
    """A fork's rollout whose parent's log is stored nowhere (``copies_of``, as ``settle_hints`` says)."""
    return SourceFile(Path(f"rollout-2026-01-30T17-42-41-{CHILD_ID}.jsonl"), "codex", kind="rollout",
                      hints={"thread_id": CHILD_ID, "parent": PARENT_ID, "copies_of": PARENT_ID, **(hints or {})})


@pytest.mark.parametrize("turns", [True, False], ids=["uuid7-turn-ids", "gap-after-copy"])
def test_the_copy_of_a_parent_stored_nowhere_is_kept_and_marked(turns):
    lines = [
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID}, FORK_TIME),
        *copied_parent(COPY_TIME, OLD_TURN if turns else None),
        *own_turn(OWN_TIME, NEW_TURN if turns else None),
    ]
    records = feed_raw(lines, orphan_unit())
    # the 8 copied lines: the parent's session_meta stays a replay, task_started and turn_context are
    # metadata, the prompt's event its twin; prompt, call, output and usage are messages of the fork
    assert [r.reason for r in of(records, Merged)] == [
        "metadata", "replay", "metadata", "metadata", "duplicate", "metadata", "metadata"]
    parent = f"codex:{PARENT_ID}"
    assert [(m.role, m.subtype, m.text, m.input_tokens, m.output_tokens, (m.meta or {}).get("copied_from"))
            for m in of(records, Message)] == [
        ("user", "message", "parent prompt", None, None, parent),
        ("assistant", "function_call", "shell", None, None, parent),
        ("user", "function_call_output", "ok", None, None, parent),
        ("assistant", "token_count", "", 100, 10, parent),
        ("user", "message", "child prompt", None, None, None),
        ("assistant", "token_count", "", 50, 5, None),
    ]
    child = f"codex:{CHILD_ID}"
    assert [(c.id, c.session_id) for c in of(records, ToolCall)] == [(f"{child}:p1", child)]
    assert [(r.tool_use_id, r.outcome) for r in of(records, ToolResult)] == [(f"{child}:p1", "succeeded")]
    # the fork's own prompt titles it, as when the parent is stored
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "child prompt")]
    assert (of(records, Session)[0].parent_session_id, of(records, Session)[0].relationship) == (parent, "fork")
    # resumed after every line, the same
    assert feed_all(lines_of(b"\n".join(lines) + b"\n"), orphan_unit(), restore_every_line=True) == records
    # without the hint (the parent stored), the copy is merged as before
    assert [r.reason for r in of(feed_raw(lines), Merged)] == ["metadata"] + ["replay"] * 8 + ["metadata"] * 2


@pytest.mark.parametrize("copied_after_abort", [True, False], ids=["copy-goes-on", "copy-ends"])
@pytest.mark.parametrize("turns", [True, False], ids=["uuid7-turn-ids", "gap-after-copy"])
def test_a_kept_copy_moves_nothing_the_fork_s_own_lines_read(turns, copied_after_abort):
    """The copy's turn context (model, effort, cwd), its calls left open by an abort, its
    last message: the parent's. The fork's own records are those it has beside the parent."""
    old, new = (OLD_TURN, NEW_TURN) if turns else (None, None)
    turn_fields = {"turn_id": old} if old else {}
    copy = copied_parent(COPY_TIME, old)
    copy[2] = envelope("turn_context", {"model": "gpt-parent", "effort": "high", "cwd": "/p", **turn_fields}, COPY_TIME)
    copy[6:] = [  # the call's turn aborted before its output (then, maybe, a copied line more)
        envelope("event_msg", {"type": "turn_aborted", "reason": "interrupted", **turn_fields}, COPY_TIME),
        *[envelope("response_item", {"type": "message", "role": "developer",
                                     "content": [{"type": "input_text", "text": "<turn_aborted>"}]}, COPY_TIME)
          ] * copied_after_abort,
    ]
    own = own_turn(OWN_TIME, new)
    del own[1]  # no turn context of its own
    own.insert(2, envelope("response_item", {"type": "message", "role": "assistant",
                                             "content": [{"type": "output_text", "text": "child answer"}]}, OWN_TIME))
    lines = [envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID,
                                       "cwd": "/c"}, FORK_TIME), *copy, *own]

    def own_records(records):
        copied = {m.uuid for m in of(records, Message) if (m.meta or {}).get("copied_from")}
        return [r for r in records if not isinstance(r, (Merged, Session))
                and getattr(r, "uuid", None) not in copied and getattr(r, "message_uuid", None) not in copied]

    kept = feed_raw(lines, orphan_unit())
    merged = feed_raw(lines)
    assert own_records(kept) == own_records(merged)
    assert [(m.text, m.model, m.cwd, m.meta, m.parent_uuid) for m in own_records(kept) if isinstance(m, Message)] == [
        ("child prompt", None, "/c", None, None), ("child answer", None, "/c", None, of(kept, Message)[-3].uuid),
        ("", None, "/c", None, of(kept, Message)[-2].uuid)]
    assert [s for s in of(kept, Session) if s.model or s.reasoning_effort or s.cwd not in (None, "/c")] == []
    # the copy reads as the parent's own reading gives it: the aborted call cancelled
    assert [(r.tool_use_id, r.outcome) for r in of(kept, ToolResult)] == [(f"codex:{CHILD_ID}:p1", "cancelled")]
    assert {m.model for m in of(kept, Message) if (m.meta or {}).get("copied_from") and m.role == "assistant"} == {
        "gpt-parent"}
    # resumed after every line, the same
    assert feed_all(lines_of(b"\n".join(lines) + b"\n"), orphan_unit(), restore_every_line=True) == kept


def test_a_kept_copy_without_forked_from_id_names_the_parent_it_copies():
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME}, FORK_TIME),
        *copied_parent(COPY_TIME, OLD_TURN),
        *own_turn(OWN_TIME, NEW_TURN),
    ], orphan_unit())
    assert [(m.text, (m.meta or {}).get("copied_from")) for m in of(records, Message) if m.role == "user"] == [
        ("parent prompt", f"codex:{PARENT_ID}"), ("ok", f"codex:{PARENT_ID}"), ("child prompt", None)]


def rollout_file(folder: Path, thread: str, lines: list[bytes], compress: bool = False) -> SourceFile:
    path = folder / f"rollout-2026-01-30T17-42-41-{thread}.jsonl"
    data = b"\n".join(lines) + b"\n"
    if compress:
        path = path.with_name(path.name + ".zst")
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return rollout_unit(path)


def test_rollout_parent_is_read_from_the_head(tmp_path):
    child_meta = {"id": CHILD_ID, "timestamp": FORK_TIME, "base_instructions": {"text": "x" * 200_000}}
    fork = [envelope("session_meta", {**child_meta, "forked_from_id": PARENT_ID.upper()}, FORK_TIME),
            *copied_parent(COPY_TIME, OLD_TURN)]
    assert codex.rollout_parent(rollout_file(tmp_path, CHILD_ID, fork)) == (PARENT_ID, True)
    packed = rollout_file(tmp_path, "019c1000-0000-7000-8000-000000000009", fork, compress=True)
    assert codex.rollout_parent(packed) == (PARENT_ID, True)
    legacy = [envelope("session_meta", child_meta, FORK_TIME), *copied_parent(COPY_TIME, OLD_TURN)]
    assert codex.rollout_parent(rollout_file(tmp_path, "019c1000-0000-7000-8000-000000000003", legacy)) == (
        PARENT_ID, True)
    own = [envelope("session_meta", {"id": PARENT_ID}), *own_turn(OWN_TIME, None)]
    assert codex.rollout_parent(rollout_file(tmp_path, PARENT_ID, own)) == (None, True)
    spawned = [envelope("session_meta", {"id": "019c1000-0000-7000-8000-000000000005", "source": {
        "subagent": {"thread_spawn": {"parent_thread_id": PARENT_ID, "depth": 1}}}})]
    assert codex.rollout_parent(rollout_file(tmp_path, "019c1000-0000-7000-8000-000000000005", spawned)) == (
        PARENT_ID, True)
    assert codex.rollout_parent(rollout_file(tmp_path, "019c1000-0000-7000-8000-000000000006", [b"not json"])) == (
        None, True)
    # a head still being written is not settled: the first line unended, or the copied meta still to come
    path = rollout_file(tmp_path, "019c1000-0000-7000-8000-000000000007", legacy).path
    data = path.read_bytes()
    path.write_bytes(data[:100])
    assert codex.rollout_parent(rollout_unit(path)) == (None, False)
    path.write_bytes(data[:data.index(b"\n") + 1])
    assert codex.rollout_parent(rollout_unit(path)) == (None, False)
    path.write_bytes(data[:data.index(b"\n", data.index(b"\n") + 1) + 1])
    assert codex.rollout_parent(rollout_unit(path)) == (PARENT_ID, True)


def test_settle_hints_keeps_a_copy_while_its_parent_is_stored_nowhere(tmp_path):
    fork = [envelope("session_meta", {"id": CHILD_ID, "forked_from_id": PARENT_ID}, FORK_TIME),
            *copied_parent(COPY_TIME, OLD_TURN)]
    child = rollout_file(tmp_path, CHILD_ID, fork)
    parent = rollout_file(tmp_path, PARENT_ID, [envelope("session_meta", {"id": PARENT_ID}), *own_turn(OWN_TIME, None)])
    source = CodexSource()
    assert source.settle_hints([child], {}) == {}
    assert child.hints == {"thread_id": CHILD_ID, "parent": PARENT_ID, "copies_of": PARENT_ID}
    child = rollout_unit(child.path)
    assert source.settle_hints([child, parent], {}) == {}  # found by the same run
    assert (child.hints, parent.hints) == ({"thread_id": CHILD_ID, "parent": PARENT_ID},
                                           {"thread_id": PARENT_ID, "parent": None})
    child = rollout_unit(child.path)
    stored = {str(parent.path): {"thread_id": PARENT_ID, "parent": None}}
    assert source.settle_hints([child], stored) == {}  # stored before
    assert child.hints == {"thread_id": CHILD_ID, "parent": PARENT_ID}
    child = rollout_unit(child.path)
    assert source.settle_hints([child], {str(parent.path): {}}) == {}  # stored before hints were kept
    assert child.hints == {"thread_id": CHILD_ID, "parent": PARENT_ID}
    # a stored fork this run did not find gives way to the parent found now
    kept = {"thread_id": CHILD_ID, "parent": PARENT_ID, "copies_of": PARENT_ID}
    assert source.settle_hints([rollout_unit(parent.path)], {"/elsewhere/fork.jsonl": kept}) == {
        "/elsewhere/fork.jsonl": {"thread_id": CHILD_ID, "parent": PARENT_ID}}
    # a head still being written names no parent yet, and is read again next time
    data = child.path.read_bytes()
    child.path.write_bytes(data[:100])
    child = rollout_unit(child.path)
    assert source.settle_hints([child], {}) == {}
    assert child.hints == {"thread_id": CHILD_ID}
    child.path.write_bytes(data)
    # the parent a stored file's head named is not read again
    child.path.unlink()
    child = rollout_unit(child.path)
    assert source.settle_hints([child], {str(child.path): kept}) == {}
    assert child.hints == kept


def test_fork_without_forked_from_id_is_recognised_by_the_copied_meta():
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME}, FORK_TIME),
        *copied_parent(COPY_TIME, OLD_TURN),
        *own_turn(OWN_TIME, NEW_TURN),
    ])
    assert [m.text for m in of(records, Message) if m.role == "user"] == ["child prompt"]
    link = [s for s in of(records, Session) if s.parent_session_id]
    assert [(s.parent_session_id, s.relationship) for s in link] == [(f"codex:{PARENT_ID}", "fork")]


def test_history_base_fork_links_without_replay():
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "history_mode": "paginated",
                                  "history_base": {"thread_id": PARENT_ID, "end_ordinal_exclusive": 10}}),
        *own_turn(OWN_TIME, NEW_TURN),
    ])
    assert (of(records, Session)[0].parent_session_id, of(records, Session)[0].relationship) == (
        f"codex:{PARENT_ID}", "fork",
    )
    assert not [r for r in of(records, Merged) if r.reason == "replay"]


def test_foreign_session_meta_after_own_turns_is_not_a_replay():
    records = parse(SMALL)
    assert not [r for r in of(records, Merged) if r.reason == "replay"]


def test_guardian_and_auto_review_threads_are_excluded():
    guardian = feed_raw([envelope("session_meta", {
        "id": "g-1", "parent_thread_id": "p-1", "source": {"subagent": {"other": "guardian"}},
        "thread_source": "subagent"})])
    session = of(guardian, Session)[0]
    assert (session.is_excluded, session.relationship, session.parent_session_id) == (1, "subagent", "codex:p-1")
    reviewer = feed_raw([
        envelope("session_meta", {"id": "r-1", "thread_source": "subagent",
                                  "source": {"subagent": {"thread_spawn": {"parent_thread_id": "p-1"}}}}),
        envelope("turn_context", {"model": "codex-auto-review", "cwd": "/x"}),
    ])
    assert [s.is_excluded for s in of(reviewer, Session)] == [None, 1]
    main = feed_raw([envelope("session_meta", {"id": "m-1"}), envelope("turn_context", {"model": "codex-auto-review"})])
    assert {s.is_excluded for s in of(main, Session)} == {None}


def test_internal_threads_are_agents_and_a_guardian_review_is_excluded_not_a_fork():
    # 0.16x+: Codex starts a Guardian review as an internal session of the thread it reviews
    # (``spawn_internal_session``: parent_thread_id), a memory consolidation as one of no thread.
    review = "The following is the Codex agent history whose request action you are assessing."
    guardian = feed_raw([
        envelope("session_meta", {"id": "g-2", "session_id": "p-1", "parent_thread_id": "p-1",
                                  "source": {"internal": "guardian"}, "thread_source": "guardian_review"}),
        envelope("response_item", user_item({"type": "input_text", "text": review})),
    ])
    session = of(guardian, Session)[0]
    assert (session.is_excluded, session.relationship, session.parent_session_id, session.agent_type) == (
        1, "subagent", "codex:p-1", "guardian")
    assert [m.agent_id for m in of(guardian, Message)] == ["g-2"]
    memory = of(feed_raw([envelope("session_meta", {"id": "c-1", "source": {"internal": "memory_consolidation"},
                                                    "thread_source": "memory_consolidation"})]), Session)[0]
    assert (memory.is_excluded, memory.relationship, memory.agent_id, memory.agent_type) == (
        None, None, "c-1", "memory_consolidation")


# -- generations and odd files ---------------------------------------------------


def test_a_call_is_searchable_by_the_strings_of_its_arguments():
    # As JSON, "ls\ncat notes.txt" would index "ncat": the word after a newline was lost.
    arguments = json.dumps({"cmd": "ls\ncat notes.txt", "timeout_ms": 5000, "env": {"LANG": "C"}})
    records = feed_raw([
        b'{"id":"c27a914d","timestamp":"2025-08-20T13:20:47.060Z","instructions":null}',
        json.dumps({"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": "c1"}).encode(),
        json.dumps({"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n", "call_id": "c2"}).encode(),
    ])
    assert [m.text for m in of(records, Message)] == ["exec_command\nls\ncat notes.txt\nC", "apply_patch\n*** Begin Patch\n"]


def test_pre_envelope_rollout_with_state_markers():
    records = feed_raw([
        b'{"id":"c27a914d","timestamp":"2025-08-20T13:20:47.060Z","instructions":null,"git":{"branch":"main",'
        b'"repository_url":"git@github.com:o/r.git"}}',
        b'{"record_type":"state"}',
        b'{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"hello"}]}',
        b'{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"opaque"}',
        b'{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\\"command\\":[\\"ls\\"]}","call_id":"call_1"}',
        b'{"type":"function_call_output","call_id":"call_1","output":"README.md"}',
        b'{"record_type":"state"}',
    ])
    session = of(records, Session)[0]
    assert (session.id, session.git_branch, session.repository) == ("codex:c27a914d", "main", "github.com/o/r")
    assert [r.reason for r in of(records, Merged)] == ["metadata", "metadata", "metadata", "metadata"]
    assert [m.text for m in of(records, Message)] == ["hello", "shell\nls", "README.md"]
    assert [r.outcome for r in of(records, ToolResult)] == ["succeeded"]


def test_typescript_json_rollout_document():
    document = json.dumps({
        "session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "ts-1", "instructions": ""},
        "items": [
            {"id": "m1", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"id": "fc1", "type": "function_call", "call_id": "c1", "name": "shell",
             "arguments": json.dumps({"command": ["apply_patch", "*** Begin Patch\n*** Add File: a.py\n*** End Patch"]})},
            {"type": "function_call_output", "call_id": "c1",
             "output": json.dumps({"output": "error", "metadata": {"exit_code": 1, "duration_seconds": 0.1}})},
            {"id": "m2", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        ],
    }, indent=2).encode()
    unit = rollout_unit(Path("rollout-2025-04-20-ts-1.json"))
    assert unit.layout == "document"
    records = CodexSource().open_parser(unit, None).document(document)
    assert of(records, Session)[0].id == "codex:ts-1"
    assert [m.uuid for m in of(records, Message)] == [f"codex:ts-1:item-{i}" for i in (1, 2, 3, 4)]
    # each message keeps the bytes of its own item, so raw() reads that item
    items = json.loads(document)["items"]
    assert [json.loads(document[m.position.byte_offset : m.position.byte_offset + m.position.byte_length])
            for m in of(records, Message)] == items
    assert [m.position.line_no for m in of(records, Message)] == [1, 2, 3, 4]
    assert of(records, ToolCall)[0].file_paths == ["a.py"]
    assert [(r.outcome, r.exit_code) for r in of(records, ToolResult)] == [("failed", 1)]


def test_unknown_types_yield_no_messages():
    records = feed_raw([
        envelope("future_a", {"x": 1}),
        envelope("event_msg", {"type": "future_event"}),
        envelope("response_item", {"type": "future_item"}),
        b'{"something":"else"}',
    ])
    assert not of(records, Message)
    assert [r.reason for r in of(records, Merged)] == ["unknown-type"] * 4


DRIFT = (
    "a turn ended without any message the codex parser knows, after lines of unknown types "
    "(the first: line {}, {!r}): format drift?"
)


def test_known_metadata_with_unknown_conversation_lines_is_reported_as_drift():
    usage = {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5, "reasoning_output_tokens": 0,
             "total_tokens": 15}
    records = feed_raw([
        envelope("session_meta", {"id": "t-d", "cwd": "/w"}),
        envelope("turn_context", {"model": "m"}),
        envelope("conversation_item", {"type": "message", "role": "user", "text": "hello"}),
        envelope("conversation_item", {"type": "message", "role": "assistant", "text": "world"}),
        envelope("event_msg", {"type": "user_turn_v2", "text": "world"}),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage}}),
        envelope("event_msg", {"type": "task_complete"}),
        envelope("conversation_item", {"type": "message", "role": "user", "text": "again"}),
        envelope("event_msg", {"type": "task_complete"}),
    ])
    # the usage line is read (a log-only Message), the turn's conversation is not: reported at its end, once
    assert [m.subtype for m in of(records, Message)] == ["token_count"]
    assert [(e.position.line_no, e.reason) for e in of(records, LineError)] == [
        (7, DRIFT.format(3, "conversation_item"))
    ]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "metadata"] + ["unknown-type"] * 4 + ["metadata"]


def test_an_unknown_line_before_the_first_message_of_a_healthy_rollout_is_no_drift():
    # the corpus file's future record (its last line) written right after its session_meta, and its turn ended
    lines = corpus_file(FILE_1).read_bytes().splitlines()
    records = feed_raw([lines[0], lines[-1], *lines[1:-1], envelope("event_msg", {"type": "task_complete"})])
    assert not of(records, LineError)
    assert [r.reason for r in of(records, Merged)] == [
        "metadata", "unknown-type", "metadata", "duplicate", "duplicate", "metadata"
    ]
    assert len(of(records, Message)) == EXPECTED[FILE_1]["messages"]


def test_no_corpus_rollout_reports_drift():
    corpus_file(FILE_1)
    for relative in sorted(EXPECTED):
        for records in (parse(relative), parse(relative, restore_every_line=True)):
            assert not [e.reason for e in of(records, LineError) if "drift" in e.reason], relative


def test_unknown_lines_after_a_message_are_only_merged():
    records = feed_raw([
        envelope("session_meta", {"id": "t-d2"}),
        envelope("event_msg", {"type": "user_message", "message": "hi"}),
        envelope("response_item", {"type": "future_item"}),
    ])
    assert not of(records, LineError)
    assert [r.reason for r in of(records, Merged)] == ["metadata", "unknown-type"]


@pytest.mark.parametrize(
    "bad",
    [
        b"{synthetic malformed json",
        b"[1, 2, 3]",
        b'"a string"',
        b'{"timestamp":"x","type":"event_msg","payload":{"type":"user_message","message":"\xff"}}',
        b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"compacted","payload":{"message":"s","replacement_history":[{"ty',
        b'{"timestamp":"2026-03-01T10:00:00.000Z","type":"world_state","payload":{"full":tr',
    ],
)
def test_each_bad_line_is_one_line_error(bad):
    records = feed_raw([envelope("session_meta", {"id": "t-7"}), bad, envelope("event_msg", {"type": "task_started"})])
    assert len(of(records, LineError)) == 1
    assert of(records, LineError)[0].position.line_no == 2
    assert len(of(records, Merged)) == 2


def test_thread_names_and_first_prompt_are_title_candidates():
    records = parse(SMALL)
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [
        ("first_prompt", "List the files"),
        ("custom", "[trimmed for fixture]"),
    ]


def test_session_index_lines_are_index_titles(tmp_path):
    index = tmp_path / "session_index.jsonl"
    index.write_text(
        '{"id":"019c8a59-e9dd-71f0-9ae3-4079fe9726a9","thread_name":"Fix the parser","updated_at":"2026-02-23T12:00:00Z"}\n'
        "not json\n"
        '{"id":"x"}\n'
    )
    unit = next(iter(CodexSource().discover(tmp_path)))
    parser = CodexSource().open_parser(unit, None)
    records = [r for line in lines_of(index.read_bytes()) for r in parser.feed(line.data, line.position)]
    titles = of(records, TitleCandidate)
    assert [(t.session_id, t.kind, t.title) for t in titles] == [
        ("codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "index", "Fix the parser")
    ]
    assert [type(r).__name__ for r in records if isinstance(r, ACCOUNTING)] == ["Merged", "LineError", "Merged"]


def test_the_import_ledger_makes_a_thread_imported_from_a_claude_code_session_its_child(tmp_path):
    # external-agent-migration (sessions/ledger.rs): one record a source file Codex imported, its
    # canonical path and the thread it went into; rewritten whole (pretty JSON) on every import
    claude, cursor, windows = (f"{n}{n}{n}{n}{n}{n}{n}{n}-1111-4111-8111-111111111111" for n in "abc")
    threads = [f"019f0000-0000-7000-8000-00000000000{n}" for n in range(5)]
    ledger = tmp_path / "external_agent_session_imports.json"
    ledger.write_text(json.dumps({"records": [
        {"source_path": f"/home/u/.claude/projects/-w-app/{claude}.jsonl", "content_sha256": "0" * 64,
         "imported_thread_id": threads[0], "imported_at": 1790932099, "source_modified_at": 1790932000123456789,
         "connector_names": ["Slack"], "title": "Fix the login"},
        # Cursor's transcripts go to the same ledger: not a Claude Code session
        {"source_path": f"/home/u/.cursor/projects/w-app/agent-transcripts/{cursor}/{cursor}.jsonl",
         "content_sha256": "1" * 64, "imported_thread_id": threads[1], "imported_at": 1790932099},
        {"source_path": f"\\\\?\\C:\\Users\\u\\.claude\\projects\\C--w\\{windows}.jsonl",
         "content_sha256": "2" * 64, "imported_thread_id": threads[2], "imported_at": 1790932099},
        {"source_path": "/home/u/.claude/projects/-w-app/agent-a1b2c3.jsonl", "imported_thread_id": threads[3]},
        {"source_path": f"/home/u/.claude/projects/-w-app/{claude}.jsonl"},  # no thread
        "not a record",
    ], "detected_connector_records": [{"source_path": "/x.jsonl", "connector_names": ["Gmail"]}]}, indent=2))
    units = [u for u in CodexSource().discover(tmp_path) if u.kind == "import_ledger"]
    assert [(u.path, u.layout, u.priority) for u in units] == [(ledger, "document", 2)]
    records = CodexSource().open_parser(units[0], None).document(ledger.read_bytes())
    assert of(records, Session) == []  # (a thread whose rollout is not stored is no session)
    assert [(s.session_id, s.parent_session_id, s.relationship) for s in of(records, SessionLink)] == [
        (f"codex:{threads[0]}", claude, "import"), (f"codex:{threads[2]}", windows, "import")]
    assert [(type(r).__name__, r.position.line_no, getattr(r, "reason", None)) for r in records
            if isinstance(r, ACCOUNTING)] == [
        ("Merged", 1, "metadata"), ("Merged", 2, "metadata"), ("Merged", 3, "metadata"), ("Merged", 4, "metadata"),
        ("Merged", 5, "unknown-type"), ("Merged", 6, "unknown-type")]
    parser = CodexSource().open_parser(units[0], None)
    [error] = parser.document(b'{"records": [')
    assert (error.position.line_no, error.reason.startswith("invalid JSON")) == (0, True)
    assert [r.reason for r in parser.document(b'{"imports": []}')] == ["not a Codex import ledger document"]
    assert parser.document(b'{"records": []}') == []


# -- discovery ----------------------------------------------------------------


def test_discovery_in_a_codex_home(tmp_path):
    thread = "019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
    files = {
        f"sessions/2026/02/23/rollout-2026-02-23T12-54-34-{thread}.jsonl": b"",
        f"sessions/2026/02/24/rollout-2026-02-24T09-00-00-{thread}.jsonl.zst": b"",
        "sessions/rollout-44444444-4444-4444-8444-444444444444.jsonl": b"",
        "sessions/rollout-2025-04-20-abc.json": b"{}",
        "archived_sessions/rollout-2026-01-01T00-00-00-11111111-1111-4111-8111-111111111111.jsonl": b"",
        "session_index.jsonl": b"",
        "external_agent_session_imports.json": b"{}",
        "external_agent_session_imports.lock": b"",
        "history.jsonl": b"",
        "sessions/2026/02/23/notes.txt": b"",
        "log/codex-tui.log": b"",
        "state_5.sqlite": b"",
    }
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    units = {str(u.path.relative_to(tmp_path)): u for u in CodexSource().discover(tmp_path)}
    assert set(units) == {
        "session_index.jsonl",
        "history.jsonl",
        "external_agent_session_imports.json",
        f"sessions/2026/02/23/rollout-2026-02-23T12-54-34-{thread}.jsonl",
        f"sessions/2026/02/24/rollout-2026-02-24T09-00-00-{thread}.jsonl.zst",
        "sessions/rollout-44444444-4444-4444-8444-444444444444.jsonl",
        "sessions/rollout-2025-04-20-abc.json",
        "archived_sessions/rollout-2026-01-01T00-00-00-11111111-1111-4111-8111-111111111111.jsonl",
    }
    assert units["session_index.jsonl"].kind == "session_index"
    assert (units["history.jsonl"].kind, units["history.jsonl"].priority) == ("prompt_log", 4)
    assert units["external_agent_session_imports.json"].kind == "import_ledger"
    zst = units[f"sessions/2026/02/24/rollout-2026-02-24T09-00-00-{thread}.jsonl.zst"]
    assert (zst.compression, zst.layout, zst.hints) == ("zstd", "jsonl", {"thread_id": thread})
    assert units["sessions/rollout-2025-04-20-abc.json"].layout == "document"
    assert units["archived_sessions/rollout-2026-01-01T00-00-00-11111111-1111-4111-8111-111111111111.jsonl"].priority == 1
    assert all(u.source == "codex" for u in units.values())


def test_prompt_history_files_are_not_rollouts():
    assert rollout_unit(CODEX / "kvsankar__agent-history" / "codex_history.jsonl") is None
    assert rollout_unit(Path("history.jsonl")) is None
    assert rollout_unit(Path("session_index.jsonl")) is None


def test_a_zstd_copy_yields_the_same_records():
    path = corpus_file(FILE_1)
    compressed = zstandard.ZstdCompressor().compress(path.read_bytes())
    copy = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed)).read()
    zst_unit = rollout_unit(path.with_name(path.name + ".zst"))
    assert feed_all(lines_of(copy), zst_unit) == parse(FILE_1)


def test_default_root(tmp_path):
    source = CodexSource()
    assert source.default_root({"HOME": str(tmp_path)}) is None
    (tmp_path / ".codex").mkdir()
    assert source.default_root({"HOME": str(tmp_path)}) == tmp_path / ".codex"
    (tmp_path / "elsewhere").mkdir()
    assert source.default_root({"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "elsewhere")}) == (
        tmp_path / "elsewhere"
    )


def test_registered_through_the_hookspec():
    sources = codex.obelisk_sources()
    assert [type(s) for s in sources] == [CodexSource]
    assert sources[0].name == "codex"


def test_a_local_compaction_hands_its_summary_over_in_its_history():
    from datasette_obelisk.sources.codex import HANDOVER_END, HANDOVER_OPENING

    handover = f"{HANDOVER_OPENING} and wrote a summary; {HANDOVER_END}\nWe fixed the parser."
    records = feed_raw([
        envelope("session_meta", {"id": "t-handover"}),
        envelope("event_msg", {"type": "user_message", "message": "fix it"}),
        envelope("compacted", {"message": "", "replacement_history": [
            user_item({"type": "input_text", "text": "fix it"}), user_item({"type": "input_text", "text": handover}),
        ]}),
    ])
    [compaction] = [m for m in of(records, Message) if m.is_compact_summary]
    [summary] = of(records, Summary)
    assert (summary.kind, summary.content, summary.message_uuid) == ("compaction", "We fixed the parser.", compaction.uuid)
    assert compaction.text.startswith("We fixed the parser.\n\n[replacement_history: 2 items, ")
    assert len(compaction.meta["preserved_uuids"]) == 1  # the prompt it kept; the hand-over is no repeat


def test_a_thought_in_parts_pairs_part_by_part_with_events_saying_it_a_little_otherwise():
    records = feed_raw([
        envelope("session_meta", {"id": "t-near"}),
        envelope("response_item", {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "r1"}, {"type": "summary_text", "text": "r2"}]}),
        _said("agent_reasoning", "r1 "), _said("agent_reasoning", "r2 "),
    ])
    assert [m.text for m in of(records, Message)] == ["r1\n\nr2"]


def test_a_state_saved_before_sayings_were_groups_still_keeps_what_a_history_repeats():
    unit = rollout_unit(Path("/x/rollout-2026-03-01T10-00-00-t-old.jsonl"))
    lines = [envelope("session_meta", {"id": "t-old"}), envelope("response_item", user_item(
        {"type": "input_text", "text": "do it"}))]
    parser = CodexSource().open_parser(unit, None)
    for line in read_lines(io.BytesIO(b"\n".join(lines) + b"\n")):
        parser.feed(line.data, line.position)
    state = json.loads(json.dumps(parser.state()))
    state["said"] = {key: [uuid for group in sayings for uuid in group] for key, sayings in state["said"].items()}
    resumed = CodexSource().open_parser(unit, state)
    line = envelope("compacted", {"message": "", "replacement_history": [user_item({"type": "input_text", "text": "do it"})]})
    [compaction] = [r for r in resumed.feed(line, Position(3, 1000, len(line))) if isinstance(r, Message)]
    assert compaction.meta == {"preserved_uuids": ["codex:t-old:" + str(len(lines[0]) + 1)]}


def test_a_rollback_names_the_first_prompt_of_the_turns_it_took_back():
    def turn(n):
        return [envelope("event_msg", {"type": "user_message", "message": f"prompt {n}"}),
                envelope("event_msg", {"type": "agent_message", "message": f"answer {n}"})]

    back = lambda turns: envelope("event_msg", {"type": "thread_rolled_back", "num_turns": turns})  # noqa: E731
    records = feed_raw([envelope("session_meta", {"id": "t-back"}), *turn(1), *turn(2), *turn(3), back(2), *turn(4),
                        back(1), back("2"), back(5), *turn(5)])
    prompts = {m.text: m.uuid for m in of(records, Message) if m.role == "user"}
    markers = [m for m in of(records, Message) if m.subtype == "thread_rolled_back"]
    # the second rollback counts from the turns left: prompt 4; no number: none; more turns than are
    # left: all of them (from prompt 1)
    assert [m.logical_parent_uuid for m in markers] == [prompts["prompt 2"], prompts["prompt 4"], None, prompts["prompt 1"]]
    assert [m.surface for m in markers] == ["log-only"] * 4
    # the first prompt taken back: the next one titles the session
    assert [t.title for t in of(records, TitleCandidate)] == ["prompt 1", "prompt 5"]


def test_a_rollback_counts_a_compaction_s_summary_as_a_turn():
    def turn(n):
        return [envelope("event_msg", {"type": "user_message", "message": f"prompt {n}"}),
                envelope("event_msg", {"type": "agent_message", "message": f"answer {n}"})]

    history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"prompt {n}"}]}
               for n in (1, 2)]
    records = feed_raw([
        envelope("session_meta", {"id": "t-back2"}), *turn(1), *turn(2),
        envelope("compacted", {"message": "", "replacement_history": [*history, {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": codex.HANDOVER_OPENING + " and produced a "
                                                            "summary; " + codex.HANDOVER_END + " they fixed the parser."}]}]}),
        *turn(3), envelope("event_msg", {"type": "thread_rolled_back", "num_turns": 2}),
    ])
    # Codex's history: prompt 1, prompt 2 (kept), the summary, prompt 3: two turns back is the summary
    [summary] = [m for m in of(records, Message) if m.is_compact_summary]
    [marker] = [m for m in of(records, Message) if m.subtype == "thread_rolled_back"]
    assert marker.logical_parent_uuid == summary.uuid
    # a remote compaction's summary is an encrypted item, no user turn: two turns back is prompt 2
    records = feed_raw([
        envelope("session_meta", {"id": "t-back3"}), *turn(1), *turn(2),
        envelope("compacted", {"message": "", "replacement_history": [*history, {"type": "compaction", "encrypted_content": "gAAAA"}]}),
        *turn(3), envelope("event_msg", {"type": "thread_rolled_back", "num_turns": 2}),
    ])
    [marker] = [m for m in of(records, Message) if m.subtype == "thread_rolled_back"]
    assert marker.logical_parent_uuid == next(m.uuid for m in of(records, Message) if m.text == "prompt 2")


def test_codex_s_own_words_for_stopped_refused_and_broken_calls():
    call = lambda cid, name="shell_command": envelope("response_item", {  # noqa: E731
        "type": "function_call", "name": name, "arguments": "{}", "call_id": cid})
    output = lambda cid, text: envelope("response_item", {  # noqa: E731
        "type": "function_call_output", "call_id": cid, "output": text})
    risk = "This action was rejected due to unacceptable risk.\nReason: writes outside the workspace"
    records = feed_raw([
        envelope("session_meta", {"id": "t-words"}),
        call("a"), output("a", "Wall time: 2.2 seconds\naborted by user"),
        call("b", "exec_command"), output("b", "Wall time: 0.4 seconds\naborted by user"),
        call("c", "view_image"), output("c", "aborted by user after 1.3s"),
        call("d", "exec_command"),
        output("d", 'exec_command failed: CreateProcess { message: "No such file or directory (os error 2)" }'),
        call("e", "write_stdin"), output("e", "write_stdin failed: stdin is closed for this session"),
        call("f", "exec_command"), output("f", 'exec_command failed: CreateProcess { message: "Rejected(\\"' + risk + '\\")" }'),
        call("g", "exec_command"), output("g", risk),
        # a command's own output saying the same further down
        call("h"), output("h", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nWall time: 2.2 seconds\naborted by user"),
    ])
    results = {r.tool_use_id.rsplit(":", 1)[1]: (r.outcome, r.is_error) for r in of(records, ToolResult)}
    assert results == {
        "a": ("cancelled", 0), "b": ("cancelled", 0), "c": ("cancelled", 0), "d": ("failed", 1),
        "e": ("failed", 1), "f": ("blocked", 1), "g": ("blocked", 1), "h": ("succeeded", 0),
    }


def test_a_review_s_findings_and_codex_s_warnings_are_no_prompts():
    user = lambda text: envelope("response_item", {  # noqa: E731
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    records = feed_raw([
        envelope("session_meta", {"id": "t-inject"}),
        user("<user_action>\n  <context>User initiated a review task. Here's the full review output from reviewer "
             "model.</context>\n  <action>review</action>\n  <results>\n  none\n  </results>\n</user_action>\n"),
        user("Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead of exec_command."),
        user("WARNING: The maximum number of unified exec processes you can keep open is 60 and you currently have 61."),
        envelope("event_msg", {"type": "user_message", "message": "Warning: this one I typed"}),
        user("Warning: this one I typed"),
    ])
    messages = of(records, Message)
    assert [(m.is_meta, m.text[:20]) for m in messages] == [
        (1, "<user_action>\n  <con"), (1, "Warning: apply_patch"), (1, "WARNING: The maximum"), (0, "Warning: this one I "),
    ]
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "Warning: this one I typed")]


def test_a_spawned_agent_is_linked_by_its_call_s_output_when_no_event_names_it():
    records = feed_raw([
        envelope("session_meta", {"id": "t-spawn"}),
        envelope("response_item", {"type": "function_call", "name": "spawn_agent", "call_id": "s1",
                                   "arguments": json.dumps({"message": "look around"})}),
        envelope("response_item", {"type": "function_call_output", "call_id": "s1",
                                   "output": json.dumps({"agent_id": "019a-child", "nickname": "Scout"})}),
        envelope("response_item", {"type": "function_call", "name": "spawn_agent", "call_id": "s2", "arguments": "{}"}),
        envelope("response_item", {"type": "function_call_output", "call_id": "s2", "output": "collab spawn failed: limit"}),
    ])
    assert [(r.tool_use_id, r.agent_id) for r in of(records, ToolResult)] == [
        ("codex:t-spawn:s1", "019a-child"), ("codex:t-spawn:s2", None),
    ]
    assert [(s.agent_id, s.session_id, s.child_session_id, s.parent_tool_use_id) for s in of(records, Subagent)] == [
        ("019a-child", "codex:t-spawn", "codex:019a-child", "codex:t-spawn:s1"),
    ]


def test_context_from_hooks_goals_extensions_and_clients_is_injected():
    def said(text):
        return envelope("response_item", {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": text}]})

    records = feed_raw([
        envelope("session_meta", {"id": "t-ctx"}),
        said('<hook_prompt hook_run_id="stop:0">Run the linter too.</hook_prompt>'),
        said('<codex_internal_context source="goal">\nKeep going until tests pass\n</codex_internal_context>'),
        said("<goal_context>\nShip v2\n</goal_context>"),
        said("<extension_context>\nsteer\n</extension_context>"),
        said("<external_editor>buffer</external_editor>"),
        said("<codex_internal_context> is a tag I typed"),  # (no source: Codex's own check passes it on)
        said("Fix the parser"),
    ])
    assert [(m.text[:22], m.is_meta) for m in of(records, Message)] == [
        ('<hook_prompt hook_run_', 1), ('<codex_internal_contex', 1), ("<goal_context>\nShip v2", 1),
        ("<extension_context>\nst", 1), ("<external_editor>buffe", 1), ("<codex_internal_contex", 1),
        ("Fix the parser", 0)]
    assert [t.title for t in of(records, TitleCandidate)] == ["Fix the parser"]


def test_a_message_from_another_agent_is_a_turn_of_its_own():
    def turn(n):
        return [envelope("event_msg", {"type": "user_message", "message": f"prompt {n}"}),
                envelope("event_msg", {"type": "agent_message", "message": f"answer {n}"})]

    task = envelope("inter_agent_communication", {
        "author": "/root", "recipient": "/root/worker", "other_recipients": [],
        "content": "Audit the parser for drift and report findings.", "trigger_turn": True})
    records = feed_raw([envelope("session_meta", {"id": "t-worker"}), task,
                        envelope("event_msg", {"type": "agent_message", "message": "Noted."})])
    assert [(m.type, m.role, m.is_meta, m.text, m.meta) for m in of(records, Message)] == [
        ("inter_agent_communication", "user", 0, "[/root → /root/worker]\nAudit the parser for drift and report findings.",
         {"from": "/root", "to": "/root/worker"}),
        ("event_msg", "assistant", 0, "Noted.", None)]
    assert [t.title for t in of(records, TitleCandidate)] == ["Audit the parser for drift and report findings."]
    # A rollback of one turn takes back the message, not the prompt before it.
    records = feed_raw([envelope("session_meta", {"id": "t-root"}), *turn(1), task,
                        envelope("event_msg", {"type": "agent_message", "message": "Noted."}),
                        envelope("event_msg", {"type": "thread_rolled_back", "num_turns": 1})])
    [marker] = [m for m in of(records, Message) if m.subtype == "thread_rolled_back"]
    assert marker.logical_parent_uuid == next(m.uuid for m in of(records, Message) if m.type == "inter_agent_communication")
    # Codex's other form: a metadata line, then an ``agent_message`` item (an encrypted payload beside its header).
    item = envelope("response_item", {"type": "agent_message", "id": "am1", "author": "/root/worker", "recipient": "/root",
                                      "content": [{"type": "input_text", "text": "child done"},
                                                  {"type": "encrypted_content", "encrypted_content": "gAAAA"}]})
    records = feed_raw([envelope("session_meta", {"id": "t-root2"}), *turn(1),
                        envelope("inter_agent_communication_metadata", {"trigger_turn": False}), item,
                        envelope("event_msg", {"type": "agent_message", "message": "Noted."}),
                        envelope("event_msg", {"type": "thread_rolled_back", "num_turns": 1})])
    [sent] = [m for m in of(records, Message) if (m.type, m.subtype) == ("response_item", "agent_message")]
    assert (sent.role, sent.is_meta, sent.text, sent.meta) == (
        "user", 0, "[/root/worker → /root]\nchild done", {"from": "/root/worker", "to": "/root"})
    [marker] = [m for m in of(records, Message) if m.subtype == "thread_rolled_back"]
    assert marker.logical_parent_uuid == sent.uuid


def test_a_failed_mcp_call_of_a_paginated_history_is_failed():
    # With ``history_mode: paginated`` Codex writes no mcp_tool_call_end: the completed
    # item's status says whether the call failed.
    call = lambda cid: envelope("response_item", {  # noqa: E731
        "type": "function_call", "name": "mcp__db__query", "arguments": "{}", "call_id": cid})
    done = lambda cid, **fields: envelope("event_msg", {"type": "item_completed", "item": {  # noqa: E731
        "type": "McpToolCall", "id": cid, "server": "db", "tool": "query", "arguments": {}, **fields}})
    output = lambda cid: envelope("response_item", {  # noqa: E731
        "type": "function_call_output", "call_id": cid, "output": '[{"type":"text","text":"relation does not exist"}]'})
    records = feed_raw([
        envelope("session_meta", {"id": "t-pages", "history_mode": "paginated"}),
        call("a"), done("a", status="failed", result={"content": [], "isError": True}), output("a"),
        call("b"), done("b", status="completed", error={"message": "timeout"}), output("b"),
        call("c"), done("c", status="completed", result={"content": []}), output("c"),
        done("d", status="failed"),  # (no call open: nothing to fail)
    ])
    results = {r.tool_use_id.rsplit(":", 1)[1]: (r.outcome, r.is_error) for r in of(records, ToolResult)}
    assert results == {"a": ("failed", 1), "b": ("failed", 1), "c": ("succeeded", 0)}


def test_recommended_plugins_are_injected_context_and_title_nothing():
    # 0.13x+: the context message opens with the plugins Codex suggests installing
    plugins = ("<recommended_plugins>\nHere is a list of plugins that are available but not installed.\n\n"
               "- Linear (linear@openai-curated)\n</recommended_plugins>")
    records = feed_raw([
        envelope("session_meta", {"id": "t-plugins", "cli_version": "0.171.0"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("response_item", {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions instructions>\nread-only\n</permissions instructions>"}]}),
        envelope("response_item", user_item(
            {"type": "input_text", "text": plugins},
            {"type": "input_text", "text": "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nUse pytest.\n</INSTRUCTIONS>"},
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"})),
        envelope("turn_context", {"turn_id": "t1", "cwd": "/w", "model": "gpt-5.5"}),
        envelope("response_item", user_item({"type": "input_text", "text": "fix the flaky test"})),
        envelope("event_msg", {"type": "user_message", "message": "fix the flaky test"}),
    ])
    assert [(m.role, m.is_meta, m.text[:21]) for m in of(records, Message)] == [
        ("developer", 1, "<permissions instruct"), ("user", 1, "<recommended_plugins>"),
        ("user", 0, "fix the flaky test")]
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "fix the flaky test")]


def test_an_agent_message_boards_notices_are_injected_and_title_nothing():
    # 0.15x: a user-role notice wrapped in its tags; 0.16x+: an assistant-role one without
    # markers, its content kind saying what it is (Codex's AgentMessageBoardNotification).
    old_notice = ("<agent_message_board_notification>\nNew post 0b5c in discussion 7d1e. "
                  "Use read_post or read_thread to read it.\n</agent_message_board_notification>")
    new_notice = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": (
        "Message Type: CHANNEL_POST\nSender: /root/explorer\nChannel: findings\nMessage ID: m-1\n"
        "Thread ID: d-1\nPayload:\nFound the flaky test")}],
        "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["agent_message_board.notification"]}}
    records = feed_raw([
        envelope("session_meta", {"id": "t-board", "cli_version": "0.171.0"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("response_item", user_item({"type": "input_text", "text": old_notice})),
        envelope("response_item", new_notice),
        envelope("response_item", user_item({"type": "input_text", "text": "summarise what the explorer found"})),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "It found the flaky test."}]}),
        envelope("event_msg", {"type": "agent_message", "message": "It found the flaky test."}),
    ])
    assert [(m.role, m.is_meta, m.text[:20]) for m in of(records, Message)] == [
        ("user", 1, "<agent_message_board"), ("assistant", 1, "Message Type: CHANNE"),
        ("user", 0, "summarise what the e"), ("assistant", 0, "It found the flaky t")]
    assert [t.title for t in of(records, TitleCandidate)] == ["summarise what the explorer found"]
    assert [m.reason for m in of(records, Merged)] == ["metadata", "metadata", "duplicate"]


@pytest.mark.parametrize("kind", [[], {"type": "message"}], ids=["list", "object"])
def test_a_type_that_is_no_string_is_an_unknown_type_not_a_parser_error(kind):
    # (each was a TypeError, unhashable, and the whole line a parser error: a prompt
    # with it in its content kinds was lost)
    call = envelope("response_item", {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c1"})
    records = feed_raw([
        envelope("session_meta", {"id": "t-odd"}), call,
        envelope("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        envelope("response_item", {"type": kind}),  # after a call its turn's abort left open
    ])
    assert [(r.tool_use_id, r.outcome) for r in of(records, ToolResult)] == [("codex:t-odd:c1", "cancelled")]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "unknown-type"]
    records = feed_raw([
        envelope("session_meta", {"id": "t-odd"}),
        envelope("response_item", {**user_item({"type": "input_text", "text": "hello"}),
                                   "internal_chat_message_metadata_passthrough": {"content_item_kinds": [kind]}}),
    ])
    assert [(m.role, m.is_meta, m.text) for m in of(records, Message)] == [("user", 0, "hello")]
    fork, parent = "019bccd5-5e15-7883-8b2b-74522ca33fd4", "019bccd5-5e15-7883-8b2b-000000000000"
    records = feed_raw([  # a fork's copy of its parent's history
        envelope("session_meta", {"id": fork, "timestamp": "2026-01-02T00:00:00Z", "forked_from_id": parent}),
        envelope("session_meta", {"id": parent, "timestamp": "2026-01-01T00:00:00Z"}),
        envelope("event_msg", {"type": kind, "turn_id": "x"}, "2026-01-02T00:00:00Z"),
    ])
    assert [r.reason for r in of(records, Merged)] == ["metadata", "replay", "replay"]


THREAD_ID = "019ad000-0000-7000-8000-0000000000a1"
FIRST_ROLLOUT = "019ad100-0000-7000-8000-0000000000b2"  # the rollout of a first thread/revert
SECOND_ROLLOUT = "019ad200-0000-7000-8000-0000000000c3"  # the rollout of a revert of that one


@pytest.mark.parametrize("base", [THREAD_ID, FIRST_ROLLOUT], ids=["first-revert", "revert-of-a-revert"])
def test_a_reverted_rollout_is_no_fork_of_itself(base):
    # thread/revert keeps the thread's id and starts a rollout named ``…-<thread>_<rollout>.jsonl``
    # whose history_base is the rollout it reverted (the thread's own, or an earlier revert's)
    rollout = FIRST_ROLLOUT if base == THREAD_ID else SECOND_ROLLOUT
    unit = rollout_unit(Path(f"/h/sessions/2026/12/01/rollout-2026-12-01T11-00-00-{THREAD_ID}_{rollout}.jsonl"))
    records = feed_raw([
        envelope("session_meta", {"session_id": THREAD_ID, "id": THREAD_ID, "history_mode": "paginated",
                                  "history_base": {"thread_id": base, "end_ordinal_exclusive": 8,
                                                   "end_byte_offset": 2169}}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t3"}),
        envelope("response_item", user_item({"type": "input_text", "text": "use memcached instead"})),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "switched to memcached"}]}),
        # its totals go on from the reverted rollout's: only the last response is new
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(10_000, 0, 500),
                                                               "last_token_usage": usage(1_000, 0, 50)}}),
    ], unit)
    # (the other lines say only that the session went on to their time)
    [session] = [s for s in of(records, Session) if s.started_at]
    assert (session.id, session.parent_session_id, session.relationship) == (f"codex:{THREAD_ID}", None, None)
    assert [m.text for m in of(records, Message) if m.surface != "log-only"] == [
        "use memcached instead", "switched to memcached"]
    assert [(m.input_tokens, m.output_tokens) for m in of(records, Message) if m.surface == "log-only"] == [
        (1_000, 50)]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "metadata"]
    assert unit.hints == {"thread_id": THREAD_ID, "rollout_id": rollout}


def test_a_compactions_guardian_history_is_not_what_it_kept():
    # 0.16x+ writes a Guardian transcript (and window ids) after the replacement history
    prompt = lambda t: user_item({"type": "input_text", "text": t})  # noqa: E731
    history = [prompt("prompt B")]
    records = feed_raw([
        envelope("session_meta", {"id": "t-guardian"}),
        envelope("response_item", prompt("prompt A")),
        envelope("event_msg", {"type": "agent_message", "message": "answer A"}),
        envelope("response_item", prompt("prompt B")),
        envelope("event_msg", {"type": "agent_message", "message": "answer B"}),
        envelope("compacted", {"message": "Summary of the work so far.", "replacement_history": history,
                               "guardian_history": [prompt("prompt A"), prompt("prompt B")],
                               "window_number": 1, "window_id": "w-1"}),
    ])
    said = {m.text: m.uuid for m in of(records, Message) if not m.is_compact_summary}
    [compaction] = [m for m in of(records, Message) if m.is_compact_summary]
    assert compaction.meta == {"preserved_uuids": [said["prompt B"]]}  # prompt A was dropped
    assert compaction.text == (
        f"Summary of the work so far.\n\n[replacement_history: 1 items, {len(orjson.dumps(history))} bytes, not stored]")
    assert [s.content for s in of(records, Summary)] == ["Summary of the work so far."]


def test_a_task_envelope_of_another_agent_titles_nothing():
    # multi-agent v2: a task comes headed by its envelope, its payload encrypted (then absent) or after it
    def task(text, encrypted=True):
        parts = [{"type": "input_text", "text": text}]
        return envelope("response_item", {"type": "agent_message", "author": "/root", "recipient": "/root/worker",
                                          "content": parts + ([{"type": "encrypted_content", "encrypted_content": "gAAAA"}]
                                                              if encrypted else [])})

    head = "Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\n"
    records = feed_raw([
        envelope("session_meta", {"id": "t-v2", "multi_agent_version": "v2", "source": {"subagent": {"thread_spawn": {
            "parent_thread_id": "t-root", "agent_path": "/root/worker", "agent_role": "worker"}}}}),
        envelope("inter_agent_communication_metadata", {"trigger_turn": True}), task(head),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "Worker done."}]}),
        envelope("inter_agent_communication_metadata", {"trigger_turn": True}),
        task(head.replace("NEW_TASK", "FOLLOWUP_TASK") + "Now check the tests.", encrypted=False),
    ])
    assert [(m.role, m.is_meta, m.text) for m in of(records, Message)] == [
        ("user", 0, "[/root → /root/worker]\n" + head), ("assistant", 0, "Worker done."),
        ("user", 0, "[/root → /root/worker]\n" + head.replace("NEW_TASK", "FOLLOWUP_TASK") + "Now check the tests.")]
    # the envelope alone titles nothing: the first payload does
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "Now check the tests.")]


def test_an_attached_audio_s_markup_titles_nothing_and_its_data_is_a_placeholder():
    wav = base64.b64encode(b"RIFF" + bytes(40)).decode()
    tag = '<audio name=[Audio #1] path="/home/u/standup.wav">'
    item = envelope("response_item", user_item(
        {"type": "input_text", "text": tag}, {"type": "input_audio", "audio_url": f"data:audio/wav;base64,{wav}"},
        {"type": "input_text", "text": "</audio>"}))
    attached = lambda **audio: envelope("event_msg", {  # noqa: E731
        "type": "user_message", "message": "", "local_images": [], **audio})
    later = [envelope("response_item", user_item({"type": "input_text", "text": "summarise the recording"})),
             envelope("event_msg", {"type": "user_message", "message": "summarise the recording"})]
    item_first = feed_raw([envelope("session_meta", {"id": "t-audio"}), item,
                           attached(local_audio=["/home/u/standup.wav"]), *later])
    assert [(t.kind, t.title) for t in of(item_first, TitleCandidate)] == [("first_prompt", "summarise the recording")]
    assert [m.text for m in of(item_first, Message)] == [
        f"{tag}\n[data audio/wav 44 bytes]\n</audio>", "summarise the recording"]
    event_first = feed_raw([envelope("session_meta", {"id": "t-audio2"}),
                            attached(local_audio=["/home/u/standup.wav"], audio=[f"data:audio/wav;base64,{wav}"]),
                            item, *later])
    assert [m.text for m in of(event_first, Message)] == [
        "[data audio/wav 44 bytes]\n[audio: /home/u/standup.wav]", "summarise the recording"]
    for records in (item_first, event_first):
        assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "summarise the recording")]
        assert wav[:40] not in repr(records)


def test_a_named_output_without_a_call_has_its_call():
    # 0.16x+: an external tool's event (thread/inject_items) is an output named by its tool, with no call id
    named = lambda text, **where: envelope("response_item", {  # noqa: E731
        "type": "function_call_output", "name": "notifications", **where, "output": text})
    records = feed_raw([
        envelope("session_meta", {"id": "t-named"}),
        envelope("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        envelope("response_item", {"type": "function_call_output", "call_id": "c1", "name": "shell", "output": "ok"}),
        named("Alice mentioned you in #deploys.", namespace="slack"),
        named("Bob mentioned you."),
    ])
    outputs = [m for m in of(records, Message) if m.content_type == "tool_result"]
    ids = ["codex:t-named:c1"] + [f"codex:t-named:call@{m.position.byte_offset}" for m in outputs[1:]]
    assert [(c.id, c.name, c.message_uuid, c.input_json) for c in of(records, ToolCall)] == [
        (ids[0], "shell", of(records, Message)[0].uuid, "{}"),
        (ids[1], "slack.notifications", outputs[1].uuid, "null"),
        (ids[2], "notifications", outputs[2].uuid, "null")]
    assert [(r.tool_use_id, r.content, r.outcome) for r in of(records, ToolResult)] == [
        (ids[0], "ok", "succeeded"), (ids[1], "Alice mentioned you in #deploys.", "succeeded"),
        (ids[2], "Bob mentioned you.", "succeeded")]


def test_a_custom_tool_keeps_its_namespace():
    records = feed_raw([
        envelope("session_meta", {"id": "t-ns"}),
        envelope("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": "c1", "name": "exec",
                                   "namespace": "code_mode", "input": "print(open('x').read())"}),
        envelope("response_item", {"type": "custom_tool_call_output", "call_id": "c1", "output": "hello"}),
        envelope("response_item", {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch",
                                   "input": "*** Begin Patch\n*** End Patch"}),
    ])
    assert [(c.id, c.name) for c in of(records, ToolCall)] == [
        ("codex:t-ns:c1", "code_mode.exec"), ("codex:t-ns:c2", "apply_patch")]
    assert [m.text for m in of(records, Message) if m.content_type == "tool_use"] == [
        "code_mode.exec\nprint(open('x').read())", "apply_patch\n*** Begin Patch\n*** End Patch"]


def test_an_mcp_tool_has_one_name_whether_or_not_its_server_is_a_namespace():
    records = feed_raw([
        envelope("session_meta", {"id": "t-mcp"}),
        envelope("response_item", {"type": "function_call", "name": "create_issue", "namespace": "mcp__linear__",
                                   "arguments": "{}", "call_id": "c1"}),  # 0.12x+
        envelope("response_item", {"type": "function_call_output", "call_id": "c1", "output": "err: no team"}),
        envelope("response_item", {"type": "function_call", "name": "mcp__linear__create_issue",
                                   "arguments": "{}", "call_id": "c2"}),  # before
    ])
    assert [c.name for c in of(records, ToolCall)] == ["mcp__linear__create_issue"] * 2
    assert [r.outcome for r in of(records, ToolResult)][:1] == ["failed"]  # (an MCP call's ``err:``)


def token_count(total, last=None):
    info = {"total_token_usage": total, **({"last_token_usage": last} if last else {})}
    return envelope("event_msg", {"type": "token_count", "info": info})


def written(tokens_in, cached, writes, out):
    return {**usage(tokens_in, cached, out), "cache_write_input_tokens": writes}


def test_cache_writes_of_responses_without_an_event_are_counted_from_the_total():
    records = feed_raw([
        envelope("session_meta", {"id": "t-writes"}),
        # a log that starts late: the total grew by more than its last response
        token_count(written(1_000, 200, 300, 50), written(100, 20, 30, 5)),
        token_count(written(1_600, 300, 400, 80), written(600, 100, 100, 30)),  # one response: its own counts
    ])
    usage_messages = of(records, Message)
    assert [(m.input_tokens, m.cache_read_tokens, m.cache_creation_tokens, m.output_tokens, m.surface)
            for m in usage_messages] == [(500, 200, 300, 50, "log-only"), (400, 100, 100, 30, "log-only")]
    # the sums are the last total's
    assert sum(m.input_tokens + m.cache_read_tokens + m.cache_creation_tokens for m in usage_messages) == 1_600
    assert sum(m.cache_creation_tokens for m in usage_messages) == 400


def test_a_total_counted_whole_counts_its_cache_writes_too():
    records = feed_raw([
        envelope("session_meta", {"id": "t-child", "forked_from_id": "t-parent"}),
        token_count(written(1_000, 200, 300, 50)),  # a child's first total: counted whole
        token_count(written(400, 100, 100, 20)),  # a total that shrank: counted whole
    ])
    assert [(m.input_tokens, m.cache_read_tokens, m.cache_creation_tokens, m.output_tokens)
            for m in of(records, Message) if m.surface == "log-only"] == [(500, 200, 300, 50), (200, 100, 100, 20)]


def test_a_realtime_hand_off_titles_the_session_with_its_task_and_a_tail_flush_is_injected():
    task = ("<realtime_delegation>\n  <input>check why a &lt; b fails</input>\n"
            "  <transcript_delta>user: check why\nassistant: on it</transcript_delta>\n</realtime_delegation>")
    flush = ("<realtime_delegation>\n  <source>transcript_tail_flush</source>\n  <input>Note the talk.</input>\n"
             "  <transcript_delta>user: thanks</transcript_delta>\n</realtime_delegation>")
    records = feed_raw([
        envelope("session_meta", {"id": "t-voice"}),
        envelope("response_item", user_item({"type": "input_text", "text": flush})),
        envelope("response_item", user_item({"type": "input_text", "text": task})),
    ])
    # the whole hand-off stays searchable; a flush of the talk is no prompt
    assert [(m.is_meta, m.text) for m in of(records, Message)] == [(1, flush), (0, task)]
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "check why a < b fails")]


DELEGATION = ("<codex_delegation>\n  <source_thread_id>01a0ffff-0000-7000-8000-000000000099</source_thread_id>\n"
              "  <input>Check &lt;main&gt; &amp; report</input>\n</codex_delegation>")


@pytest.mark.parametrize("shape", ["user message", "tool output", "compact tool output"])
def test_a_task_another_thread_delegated_titles_the_session_with_its_input(shape):
    # create_thread / send_message_to_thread (codex_app, codex_tui): the task in <input>, XML-escaped; a
    # user message before 0.16x, since then the turn's input is a tool output without a call
    text = DELEGATION.replace("\n  ", "").replace("\n", "") if shape.startswith("compact") else DELEGATION
    delivered = (user_item({"type": "input_text", "text": text}) if shape == "user message" else
                 {"type": "function_call_output", "id": "fco_1", "name": "create_thread", "namespace": "codex_tui",
                  "output": text})
    records = feed_raw([
        envelope("session_meta", {"id": "t-delegated"}),
        envelope("response_item", delivered),
        envelope("response_item", user_item({"type": "input_text", "text": "now fix it"})),
    ])
    # the delegation stays what it was (a prompt, a tool's output), whole and searchable
    assert [(m.is_meta, m.text) for m in of(records, Message)][0] == (0, text)
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "Check <main> & report")]


def test_a_named_output_other_than_a_delegation_titles_nothing():
    records = feed_raw([
        envelope("session_meta", {"id": "t-not-delegated"}),
        envelope("response_item", {"type": "function_call_output", "name": "create_thread", "namespace": "codex_app",
                                   "output": '{"threadId": "01a0"}'}),
        envelope("response_item", {"type": "function_call_output", "name": "notifications", "output": DELEGATION}),
        envelope("response_item", user_item({"type": "input_text", "text": "hello"})),
    ])
    assert [t.title for t in of(records, TitleCandidate)] == ["hello"]


def test_a_scheduled_automation_run_is_a_prompt_titled_with_its_instructions():
    # a heartbeat (content kind user.heartbeat, turn trigger automation_heartbeat_scheduled): the user's
    # automation speaking in their name, its instructions as given (not escaped)
    beat = ("<heartbeat>\n  <automation_id>daily-ci</automation_id>\n  <current_time_iso>2026-10-01T10:00:02Z"
            "</current_time_iso>\n  <instructions>\nCheck CI & list <failures>\n  </instructions>\n</heartbeat>\n")
    item = {**user_item({"type": "input_text", "text": beat}),
            "internal_chat_message_metadata_passthrough": {"turn_id": "t1", "content_item_kinds": ["user.heartbeat"]}}
    records = feed_raw([
        envelope("session_meta", {"id": "t-heartbeat"}),
        envelope("event_msg", {"type": "user_message", "message": beat}),
        envelope("response_item", item),
    ])
    assert [(m.is_meta, m.text) for m in of(records, Message)] == [(0, beat)]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "duplicate"]
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "Check CI & list <failures>")]


def test_the_marker_ending_an_imported_session_is_no_answer():
    # external-agent-migration (sessions/export.rs): another agent's session written as turns of user and
    # agent messages (event, then item), its last turn ended by Codex's marker, an agent_message event alone
    answer = lambda text: [envelope("event_msg", {"type": "agent_message", "message": text}),  # noqa: E731
                           envelope("response_item", {"type": "message", "role": "assistant",
                                                      "content": [{"type": "output_text", "text": text}]})]
    records = feed_raw([
        envelope("session_meta", {"id": "t-imported"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "external-import-turn-1"}),
        envelope("event_msg", {"type": "user_message", "message": "run the tests"}),
        envelope("response_item", user_item({"type": "input_text", "text": "run the tests"})),
        *answer("All pass."),
        envelope("event_msg", {"type": "agent_message", "message": "<EXTERNAL SESSION IMPORTED>"}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "external-import-turn-1"}),
    ])
    assert [(m.role, m.is_meta, m.surface, m.text) for m in of(records, Message)] == [
        ("user", 0, None, "run the tests"), ("assistant", 0, None, "All pass."),
        ("assistant", 1, "log-only", "<EXTERNAL SESSION IMPORTED>")]


@pytest.mark.parametrize("kind", ["security_risk_score", "realtime_item", "retained_context", "rollout_reference",
                                  "dynamic_tools_updated", "id_allocation"])
def test_newer_metadata_lines_are_metadata(kind):
    records = feed_raw([
        envelope("session_meta", {"id": "t-meta"}),
        envelope(kind, {"score": 2} if kind == "security_risk_score" else {"item": {"id": "x"}}),
        envelope("response_item", user_item({"type": "input_text", "text": "hello"})),
    ])
    assert [m.reason for m in of(records, Merged)] == ["metadata", "metadata"]  # (session_meta, then it)


def test_additional_tools_item_is_metadata_not_drift():
    # 0.17x persists the tools offered from a point on as a response item of their own
    # (``additional_tools``: a role and tool definitions, no conversation); a turn that
    # ends without a message after it is no format drift
    tools = [{"type": "function", "name": "lookup", "description": "Look up a gene", "parameters": {}}]
    records = feed_raw([
        envelope("session_meta", {"id": "t-tools"}),
        envelope("response_item", {"type": "additional_tools", "id": "at_1", "role": "developer", "tools": tools}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}),
    ])
    assert not of(records, LineError)
    assert not of(records, Message)
    assert [m.reason for m in of(records, Merged)] == ["metadata"] * 4
    # a compaction's replacement history that keeps one counts it as one of its items
    history = [user_item({"type": "input_text", "text": "look it up"}),
               {"type": "additional_tools", "id": "at_1", "role": "developer", "tools": tools}]
    records = feed_raw([
        envelope("session_meta", {"id": "t-tools-2"}),
        envelope("event_msg", {"type": "user_message", "message": "look it up"}),
        envelope("compacted", {"message": "", "replacement_history": history}),
    ])
    [compaction] = [m for m in of(records, Message) if m.type == "compacted"]
    assert compaction.text == f"[replacement_history: 2 items, {len(orjson.dumps(history))} bytes, not stored]"


def numbered(lines: list[bytes]) -> list[bytes]:
    """Lines of a paginated rollout: each with its ordinal, after its timestamp."""
    numbered = []
    for ordinal, line in enumerate(lines):
        data = orjson.loads(line)
        numbered.append(orjson.dumps({"timestamp": data.pop("timestamp"), "ordinal": ordinal, **data}))
    return numbered


def inherited(type_: str, payload: dict, stamp: str, **metadata) -> bytes:
    """A line multi-agent v2 copies into a child, its message marked inherited (metadata beside the payload)."""
    data = orjson.loads(envelope(type_, payload, stamp))
    if type_ == "response_item" and payload.get("role") in ("user", "assistant"):
        data["metadata"] = {**metadata, "inherited_user_message": True}
    return orjson.dumps(data)


@pytest.mark.parametrize("parent_meta", [False, True], ids=["0.16x", "with-parent-meta"])
def test_a_childs_lines_before_its_history_start_are_its_parents(parent_meta):
    # 0.16x+ (spawn_forked_thread, LiveThread::create_with_inherited_model_context): the child's own
    # session_meta names where its history starts; the copy before it is re-stamped at the spawn, its
    # messages carry no turn id, and (0.15x) the parent's session_meta and totals may be copied too
    say = lambda role, text, **kw: {"type": "message", "role": role,  # noqa: E731
                                    "content": [{"type": "output_text" if role == "assistant" else "input_text",
                                                 "text": text}], **kw}
    copied = [
        *([envelope("session_meta", {"id": PARENT_ID, "timestamp": "2026-01-18T07:26:59.584Z"}, COPY_TIME)]
          if parent_meta else []),
        envelope("event_msg", {"type": "task_started", "turn_id": OLD_TURN}, COPY_TIME),
        envelope("turn_context", {"turn_id": OLD_TURN, "model": "gpt-parent", "cwd": "/p"}, COPY_TIME),
        envelope("response_item", say("developer", "<permissions instructions>x</permissions instructions>"), COPY_TIME),
        inherited("response_item", say("user", "parent prompt"), COPY_TIME, user_input_order=0),
        inherited("response_item", say("assistant", "parent answer", phase="final_answer"), COPY_TIME),
        *([envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(900, 0, 90)}}, COPY_TIME)]
          if parent_meta else []),
        envelope("event_msg", {"type": "task_complete", "turn_id": OLD_TURN}, COPY_TIME),
        envelope("response_item", say("user", "parent prompt, a turn without an id"), COPY_TIME),
        envelope("compacted", {"message": "parent summary"}, COPY_TIME),
        envelope("world_state", {"full": True, "state": {}}, COPY_TIME),
        envelope("response_item", say("developer", "You are a subagent."), COPY_TIME),
    ]
    start = 1 + len(copied)
    meta = {"id": CHILD_ID, "timestamp": FORK_TIME, "history_mode": "paginated", "forked_from_id": PARENT_ID,
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": PARENT_ID, "depth": 1}}},
            "subagent_history_start_ordinal": start}
    records = feed_raw(numbered([
        envelope("session_meta", meta, FORK_TIME),
        *copied,
        envelope("event_msg", {"type": "thread_settings_applied", "thread_settings": {}}, COPY_TIME),  # its own
        envelope("event_msg", {"type": "task_started", "turn_id": NEW_TURN}, OWN_TIME),
        envelope("inter_agent_communication", {"author": "/root", "recipient": "/root/worker", "content": (
            "Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\nchild task")}, OWN_TIME),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": usage(950, 0, 95),
                                                               "last_token_usage": usage(50, 0, 5)}}, OWN_TIME),
        envelope("response_item", say("assistant", "child answer", phase="final_answer"), OWN_TIME),
    ]))
    assert [r.reason for r in of(records, Merged)] == ["metadata"] + ["replay"] * len(copied) + ["metadata"] * 2
    messages = of(records, Message)
    assert [m.text for m in messages if not m.is_meta] == ["[/root → /root/worker]\n" + (
        "Message Type: NEW_TASK\nTask name: /root/worker\nSender: /root\nPayload:\nchild task"), "child answer"]
    assert not of(records, Summary)
    assert [t.title for t in of(records, TitleCandidate)] == ["child task"]
    assert [(m.input_tokens, m.output_tokens) for m in messages if m.subtype == "token_count"] == [(50, 5)]
    assert (of(records, Session)[0].parent_session_id, of(records, Session)[0].relationship) == (
        f"codex:{PARENT_ID}", "subagent")


def test_a_message_marked_inherited_is_a_copy_however_late_it_was_written():
    # a legacy (ordinal-less) v2 fork: a copied prompt outside any copied turn, written 200 ms into the copy
    late = "2026-01-30T17:42:41.630Z"
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "parent prompt 2"}]}
    records = feed_raw([
        envelope("session_meta", {"id": CHILD_ID, "timestamp": FORK_TIME, "forked_from_id": PARENT_ID}, FORK_TIME),
        *copied_parent(COPY_TIME, None),
        inherited("response_item", prompt, late),
        *own_turn(OWN_TIME, None),
    ])
    assert [r.reason for r in of(records, Merged)] == ["metadata"] + ["replay"] * 9 + ["metadata"] * 2
    assert [m.text for m in of(records, Message) if m.role == "user"] == ["child prompt"]
    assert [t.title for t in of(records, TitleCandidate)] == ["child prompt"]


def test_a_delivery_record_repeats_an_assistant_message_already_read():
    # 0.16x+ (RetainedContextEvent::DeliveredAssistantMessage): an assistant message a messaging tool
    # delivered is written again for review, its text a placeholder when it was cut
    said = lambda text, msg_id: {"type": "message", "role": "assistant", "id": msg_id,  # noqa: E731
                                 "content": [{"type": "output_text", "text": text}],
                                 "internal_chat_message_metadata_passthrough": {"turn_id": "turn-1"}}
    delivered = lambda text, msg_id, marker, order: orjson.dumps({  # noqa: E731
        "timestamp": "2026-03-01T10:00:00.000Z", "type": "response_item", "payload": said(text, msg_id),
        "metadata": {"delivered_assistant_message": marker, "user_input_order": order}})
    records = feed_raw([
        envelope("session_meta", {"id": "t-delivered"}),
        envelope("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": "Deploy staging when ready"}]}),
        envelope("response_item", said("May I deploy staging?", "msg-1")),
        envelope("response_item", {"type": "custom_tool_call", "call_id": "c1", "name": "exec",
                                   "input": "await tools.message('May I deploy staging?')"}),
        envelope("response_item", {"type": "custom_tool_call_output", "call_id": "c1", "output": "sent"}),
        delivered("May I deploy staging?", "msg-1", "codex:code-mode-delivery:v1:complete", 1),
        delivered("The content of a confirmed assistant message is unavailable. Do not infer what was asked or "
                  "authorized.", "msg-2", "codex:code-mode-delivery:v1:incomplete:Deploying n", 2),
    ])
    answers = [m.text for m in of(records, Message) if m.role == "assistant" and m.content_type == "text"]
    assert answers == ["May I deploy staging?"]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "duplicate", "duplicate"]


def test_a_quiet_one_line_rollout_names_no_parent_for_good(tmp_path):
    # a session opened and left before any prompt: its session_meta alone, written long ago
    unit = rollout_file(tmp_path, PARENT_ID, [envelope("session_meta", {"id": PARENT_ID}, FORK_TIME)])
    assert codex.rollout_parent(unit) == (None, False)  # just written: the copied meta of a fork may follow
    os.utime(unit.path, (0, 0))
    assert codex.rollout_parent(unit) == (None, True)
    source = CodexSource()
    assert source.settle_hints([unit], {}) == {}
    assert unit.hints == {"thread_id": PARENT_ID, "parent": None}  # kept: its head is not read again
    # a first line never ended, its writer gone, is settled too
    unit.path.write_bytes(unit.path.read_bytes()[:50])
    os.utime(unit.path, (0, 0))
    assert codex.rollout_parent(unit) == (None, True)
    # an empty one may yet be written
    unit.path.write_bytes(b"")
    os.utime(unit.path, (0, 0))
    assert codex.rollout_parent(unit) == (None, False)


# -- session segmentation: a rollout sealed at an immutable path ------------------

SEALED_THREAD = "019ad000-0000-7000-8000-00000000000a"
SEALED_SEGMENT = "019ad000-0000-7000-8000-0000000000b1"
SEALED_NAME = f"rollout-2026-11-20T10-00-00-{SEALED_THREAD}.jsonl"


def _sealed_meta(segment_id=None):
    meta = {"id": SEALED_THREAD, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/work/proj",
            "cli_version": "0.172.0", "source": "cli"}
    return envelope("session_meta", {**meta, **({"segment_id": segment_id} if segment_id else {})},
                    "2026-11-20T10:00:00.000Z")


def _sealed_turn(hour, prompt, answer, total, last):
    at = lambda second: f"2026-11-20T{hour}:00:{second:02d}.000Z"  # noqa: E731
    return [
        envelope("event_msg", {"type": "task_started", "turn_id": f"t{hour}"}, at(1)),
        envelope("response_item", user_item({"type": "input_text", "text": prompt}), at(2)),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": answer}]}, at(5)),
        envelope("event_msg", {"type": "token_count", "info": {"total_token_usage": total,
                                                               "last_token_usage": last}}, at(6)),
        envelope("event_msg", {"type": "task_complete", "turn_id": f"t{hour}"}, at(7)),
    ]


def _seal(home: Path, canonical: Path, segments_folder: str) -> None:
    """What Codex's session segmentation does on a compaction or a fork: the rollout's bytes
    go to ``<CODEX_HOME>/<folder>/<thread>/<segment id, or initial>/<its name>``, and the
    canonical file is replaced by one opening with the thread's session_meta (a new segment
    id) and a same-thread ``rollout_reference`` to that copy."""
    sealed = home / segments_folder / SEALED_THREAD / "initial" / SEALED_NAME
    sealed.parent.mkdir(parents=True)
    sealed.write_bytes(canonical.read_bytes())
    reference = {"rollout_path": str(sealed), "thread_id": SEALED_THREAD,
                 "rollout_timestamp": "2026-11-20T10-00-00", "segment_id": None, "max_depth": 1}
    canonical.write_bytes(b"\n".join([
        _sealed_meta(SEALED_SEGMENT),
        envelope("rollout_reference", reference, "2026-11-20T11:00:00.000Z"),
        *_sealed_turn("11", "second question", "second answer", usage(1_800, 0, 150), usage(800, 0, 50)),
    ]) + b"\n")


@pytest.mark.parametrize("segments_folder", ["rollout_segments", "x-a-folder-of-any-name"])
def test_a_sealed_segment_keeps_the_history_before_it(tmp_path, segments_folder):
    from datasette_obelisk.store.ingest import ingest

    home = tmp_path / ".codex"
    canonical = home / "sessions" / "2026" / "11" / "20" / SEALED_NAME
    canonical.parent.mkdir(parents=True)
    canonical.write_bytes(b"\n".join([
        _sealed_meta(),
        *_sealed_turn("10", "first question", "first answer", usage(1_000, 0, 100), usage(1_000, 0, 100)),
    ]) + b"\n")
    (home / "log").mkdir()
    (home / "log" / "codex-tui.log").write_bytes(b"")
    before, after = tmp_path / "before.db", tmp_path / "after.db"
    ingest(before, {"codex": home})
    _seal(home, canonical, segments_folder)

    sealed = f"{segments_folder}/{SEALED_THREAD}/initial/{SEALED_NAME}"
    assert sealed in {str(u.path.relative_to(home)) for u in CodexSource().discover(home)}
    expected = [("user", "first question"), ("assistant", "first answer"),
                ("user", "second question"), ("assistant", "second answer")]
    for db in (before, after):  # read again after the seal, and read only after it
        ingest(db, {"codex": home})
        conn = sqlite3.connect(db)
        said = conn.execute("SELECT role, text FROM messages WHERE surface != 'log-only' ORDER BY timestamp")
        assert said.fetchall() == expected
        # the usage of each response once: the sums are the last total
        counted = conn.execute("SELECT sum(input_tokens), sum(output_tokens) FROM messages "
                               "WHERE subtype = 'token_count'").fetchone()
        assert counted == (1_800, 150)
        assert conn.execute("SELECT id, title FROM sessions").fetchall() == [
            (f"codex:{SEALED_THREAD}", "first question")]
        conn.close()


def test_a_rollout_going_on_from_a_sealed_segment_titles_nothing_and_counts_only_its_own_usage():
    reference = {"rollout_path": f"/h/segments/{SEALED_THREAD}/initial/{SEALED_NAME}", "thread_id": SEALED_THREAD,
                 "segment_id": None, "max_depth": 1}
    unit = rollout_unit(Path(f"/h/sessions/2026/11/20/{SEALED_NAME}"))
    records = feed_raw([
        _sealed_meta(SEALED_SEGMENT),
        envelope("rollout_reference", reference, "2026-11-20T11:00:00.000Z"),
        *_sealed_turn("11", "second question", "second answer", usage(1_800, 0, 150), usage(800, 0, 50)),
    ], unit)
    assert [(m.role, m.text) for m in of(records, Message) if m.surface != "log-only"] == [
        ("user", "second question"), ("assistant", "second answer")]
    assert [(m.input_tokens, m.output_tokens) for m in of(records, Message) if m.surface == "log-only"] == [
        (800, 50)]
    assert not [t for t in of(records, TitleCandidate) if t.kind == "first_prompt"]
    # a fork's reference to another thread's segment is no sealed segment of its own
    other = feed_raw([
        _sealed_meta(SEALED_SEGMENT),
        envelope("rollout_reference", {**reference, "thread_id": PARENT_ID}, "2026-11-20T11:00:00.000Z"),
        *_sealed_turn("11", "second question", "second answer", usage(1_800, 0, 150), usage(800, 0, 50)),
    ], unit)
    assert [t.title for t in of(other, TitleCandidate) if t.kind == "first_prompt"] == ["second question"]


def test_the_context_codex_writes_for_a_task_or_a_rewind_is_no_prompt():
    # After 0.171 Codex writes context of its own as user-role messages: the task the user gave
    # an agent directly (UserAgentTask, ``<user_agent_task>``, in the root thread) and the note a
    # context rewind carries forward (ContextRewindCarryForward); it records an agent's response
    # it observed for another thread (``agent_response_observation``) beside the history.
    task = ('<user_agent_task>\n{"agent_id":"019b-child","nickname":"Scout",'
            '"task_preview":"review the parser"}\n\n</user_agent_task>')
    carry = '<context_rewind_carry_forward>\n{"anchor_id":"a1","note":"tests pass"}\n\n</context_rewind_carry_forward>'
    records = feed_raw([
        envelope("session_meta", {"id": "t-tasks", "cli_version": "0.172.0"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("response_item", {
            **user_item({"type": "input_text", "text": task}), "id": "msg_1",
            "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["multi_agent.user_agent_task"]}}),
        envelope("agent_response_observation", {
            "observer_thread_id": "t-tasks", "target_thread_id": "019b-child", "target_turn_id": None,
            "pending_commentary": False, "baseline_final_delivery": "none", "final_delivery": "none",
            "final_delivery_response_item_id": None, "committed_delivery_response_item_ids": []}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t2"}),
        envelope("response_item", user_item({"type": "input_text", "text": carry})),
        envelope("response_item", user_item({"type": "input_text", "text": "now fix the parser"})),
        envelope("event_msg", {"type": "user_message", "message": "now fix the parser"}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t2"}),
    ])
    assert of(records, LineError) == []
    assert [(m.role, m.is_meta, m.text[:21]) for m in of(records, Message)] == [
        ("user", 1, "<user_agent_task>\n{\"a"), ("user", 1, "<context_rewind_carry"), ("user", 0, "now fix the parser")]
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "now fix the parser")]
    assert "unknown-type" not in [r.reason for r in of(records, Merged)]


def test_a_subagent_s_completion_written_in_its_parent_is_no_answer_of_the_parent():
    # After 0.171 a background agent's end is written in its parent's rollout as a completed
    # AgentMessage item carrying ``sub_agent_completion`` (Codex's sub_agent_completion_item):
    # the child's final answer, "Agent final answer from `<agent>`:", not the parent's.
    completion = {"type": "AgentMessage", "id": "msg_c_019b0000-0000-7000-8000-000000000001",
                  "content": [{"type": "Text", "text": "Agent final answer from `/root/worker`:\n\nall 12 tests pass"}],
                  "phase": "commentary",
                  "sub_agent_completion": {"agent_reference": "/root/worker", "status": "completed"}}
    records = feed_raw([
        envelope("session_meta", {"id": "t-parent", "cli_version": "0.172.0"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("response_item", user_item({"type": "input_text", "text": "run the tests in a worker"})),
        envelope("event_msg", {"type": "user_message", "message": "run the tests in a worker"}),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "Started a worker."}]}),
        envelope("event_msg", {"type": "agent_message", "message": "Started a worker."}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}),
        envelope("event_msg", {"type": "item_completed", "thread_id": "t-parent", "turn_id": "t1",
                               "item": completion, "completed_at_ms": 1}),
    ])
    assert of(records, LineError) == []
    answers = [m.text for m in of(records, Message) if m.role == "assistant" and not m.is_meta]
    assert answers == ["Started a worker."]
    [notice] = [m for m in of(records, Message) if "all 12 tests pass" in (m.text or "")]
    assert (notice.is_meta, notice.subtype, (notice.meta or {}).get("from")) == (1, "item_completed", "/root/worker")


def test_a_review_s_start_and_findings_written_as_completed_items_are_kept():
    # A paginated rollout (and, after 0.171, every legacy rollout Codex migrates to one) keeps
    # a review's start and end as completed EnteredReviewMode / ExitedReviewMode items, not as
    # the entered_review_mode / exited_review_mode events: the findings are in the item.
    findings = {"findings": [{"title": "[P1] Off-by-one in pager", "body": "The last page is skipped.",
                              "confidence_score": 0.8, "priority": 1,
                              "code_location": {"absolute_file_path": "/w/pager.py", "line_range": {"start": 3, "end": 4}}}],
                "overall_correctness": "patch is incorrect", "overall_explanation": "One bug.",
                "overall_confidence_score": 0.8}
    item = lambda ordinal, body: envelope("event_msg", {  # noqa: E731
        "type": "item_completed", "thread_id": "t-review", "turn_id": "r1", "item": body, "completed_at_ms": 1})
    records = feed_raw([
        envelope("session_meta", {"id": "t-review", "cli_version": "0.172.0", "history_mode": "paginated"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "r1"}),
        item(1, {"type": "EnteredReviewMode", "id": "entered-1",
                 "target": {"type": "uncommittedChanges"}, "user_facing_hint": "current changes"}),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "Reviewing the diff."}]}),
        item(2, {"type": "ExitedReviewMode", "id": "exited-1", "review_output": findings}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "r1"}),
    ])
    assert of(records, LineError) == []
    review = [(m.subtype, m.is_meta, m.text) for m in of(records, Message) if m.subtype != "message"]
    assert review == [
        ("entered_review_mode", 1, "current changes"),
        ("exited_review_mode", 1, "[P1] Off-by-one in pager\nThe last page is skipped.\n\nOne bug."),
    ]


def test_a_subagent_s_completion_told_to_the_parent_s_model_is_stored_once():
    # Codex writes a background agent's end in its parent's rollout twice: first what the
    # parent's model is told (persist_completion_context: an inter_agent_communication_metadata
    # line and a completion context with the reserved id ``amsg_x_<uuid>``, an agent message from
    # the agent in multi-agent v2, a <subagent_notification> before), then what the user is shown
    # (publish_completion_item: a completed AgentMessage with sub_agent_completion, in a turn of
    # its own when none is running). The end is one message of the agent's, not two.
    def completion(n, agent, answer, **extra):
        item = {"type": "AgentMessage", "id": f"msg_c_019b0000-0000-7000-8000-00000000010{n}",
                "content": [{"type": "Text", "text": f"Agent final answer from `{agent}`:\n\n{answer}"}],
                "phase": "commentary",
                "sub_agent_completion": {"agent_reference": agent, "status": "completed", **extra}}
        turn = f"019b0000-0000-7000-8000-00000000020{n}"
        return [
            envelope("event_msg", {"type": "task_started", "turn_id": turn, "collaboration_mode_kind": "default"}),
            envelope("event_msg", {"type": "item_completed", "thread_id": "t-parent", "turn_id": turn,
                                   "item": item, "completed_at_ms": 1}),
            envelope("event_msg", {"type": "task_complete", "turn_id": turn, "last_agent_message": None}),
        ]

    v2_context = {
        "type": "agent_message", "id": "amsg_x_019b0000-0000-7000-8000-000000000301",
        "author": "/root/worker", "recipient": "/root",
        "content": [{"type": "input_text",
                     "text": "Message Type: FINAL_ANSWER\nTask name: /root\nSender: /root/worker\nPayload:\nall 12 tests pass"}],
    }
    notification = '<subagent_notification>\n{"agent_path":"/root/linter","status":{"completed":"no lint left"}}\n</subagent_notification>'
    v1_context = {"type": "message", "role": "user", "id": "amsg_x_019b0000-0000-7000-8000-000000000302",
                  "content": [{"type": "input_text", "text": notification}]}
    records = feed_raw([
        envelope("session_meta", {"id": "t-parent", "cli_version": "0.172.0"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("response_item", user_item({"type": "input_text", "text": "run the tests and the linter"})),
        envelope("event_msg", {"type": "user_message", "message": "run the tests and the linter"}),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "Started two agents."}]}),
        envelope("event_msg", {"type": "agent_message", "message": "Started two agents."}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}),
        envelope("inter_agent_communication_metadata", {"trigger_turn": False}),
        envelope("response_item", v2_context),
        *completion(1, "/root/worker", "all 12 tests pass"),
        envelope("inter_agent_communication_metadata", {"trigger_turn": False}),
        envelope("response_item", v1_context),
        *completion(2, "/root/linter", "no lint left"),
        # shown to the user only, the model not told: the note is its only record
        *completion(3, "/root/worker", "a late retry passed", model_visibility="not_visible"),
    ])
    assert of(records, LineError) == []
    messages = of(records, Message)
    assert [m.text for m in messages if m.role == "assistant" and not m.is_meta] == ["Started two agents."]
    told = [(m.type, m.subtype, m.is_meta) for m in messages if "all 12 tests pass" in (m.text or "")]
    assert told == [("response_item", "agent_message", 0)]
    assert [(m.subtype, m.is_meta) for m in messages if "no lint left" in (m.text or "")] == [("message", 1)]
    [late] = [m for m in messages if "a late retry passed" in (m.text or "")]
    assert (late.subtype, late.is_meta, (late.meta or {}).get("from")) == ("item_completed", 1, "/root/worker")


def test_a_spawn_named_only_by_completed_items_links_its_call_to_the_agent():
    # Codex's main branch writes the thread a v2 spawn_agent call started only in completed
    # SubAgentActivity (kind started, its id the call's) and CollabAgentToolCall items (no
    # collab_agent_spawn_end, no sub_agent_activity event); the call's output names the
    # agent's path, not its thread. The call is the agent's parent call all the same.
    child = "019b2222-2222-7222-8222-222222222222"
    other = "019b6666-6666-7666-8666-666666666666"
    completed = lambda item: envelope("event_msg", {  # noqa: E731
        "type": "item_completed", "thread_id": "t-parent", "turn_id": "t1", "item": item, "completed_at_ms": 1})
    records = feed_raw([
        envelope("session_meta", {"id": "t-parent", "cli_version": "0.172.0", "history_mode": "paginated"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("response_item", user_item({"type": "input_text", "text": "run the tests in a worker"})),
        envelope("response_item", {"type": "function_call", "name": "spawn_agent", "call_id": "call_spawn_1",
                                   "arguments": json.dumps({"task_name": "worker", "message": "run the tests"})}),
        completed({"type": "SubAgentActivity", "id": "call_spawn_1", "kind": "started",
                   "agent_thread_id": child, "agent_path": "/root/worker"}),
        completed({"type": "CollabAgentToolCall", "id": "call_spawn_1", "tool": "spawn_agent", "status": "completed",
                   "sender_thread_id": "t-parent", "receiver_thread_ids": [child],
                   "receiver_agents": [{"thread_id": child, "agent_path": "/root/worker", "agent_nickname": "Ada",
                                        "agent_role": "explorer"}],
                   "prompt": "run the tests", "agents_states": {child: "pending_init"}}),
        envelope("response_item", {"type": "function_call_output", "call_id": "call_spawn_1",
                                   "output": json.dumps({"task_name": "/root/worker", "nickname": "Ada"})}),
        # an agent started by no call of this thread (a work swarm's), and one only talked to
        completed({"type": "SubAgentActivity", "id": "work_swarm:run-1:task-1", "kind": "started",
                   "agent_thread_id": other, "agent_path": "/root/swarm"}),
        completed({"type": "SubAgentActivity", "id": "call_msg_1", "kind": "interacted",
                   "agent_thread_id": child, "agent_path": "/root/worker"}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}),
    ])
    assert of(records, LineError) == []
    links = {(s.agent_id, s.parent_tool_use_id, s.agent_type, s.description) for s in of(records, Subagent)}
    assert links == {
        (child, "codex:t-parent:call_spawn_1", None, None),
        (child, "codex:t-parent:call_spawn_1", "explorer", "Ada"),
        (other, None, None, None),
    }
    [result] = of(records, ToolResult)
    assert (result.tool_use_id, result.agent_id) == ("codex:t-parent:call_spawn_1", child)


def test_the_starts_of_agent_items_are_metadata_and_their_completions_link_the_spawn():
    # 0.171 writes item_started and item_completed for its agent items (CollabAgentToolCall,
    # SubAgentActivity; codex-rs rollout policy): a start is metadata, never an unknown type;
    # the completed items say which thread the spawn_agent call started.
    parent, child = "019b1111-1111-7111-8111-111111111111", "019b2222-2222-7222-8222-222222222222"

    def lifecycle(kind: str, item: dict, **done) -> list[bytes]:
        started = {"type": "item_started", "thread_id": parent, "turn_id": "t1", "item": item, "started_at_ms": 1}
        completed = {"type": "item_completed", "thread_id": parent, "turn_id": "t1", "item": {**item, **done},
                     "started_at_ms": 1, "completed_at_ms": 2}
        return [envelope("event_msg", started), envelope("event_msg", completed)] if kind == "both" else \
            [envelope("event_msg", started)]

    spawn = {"type": "CollabAgentToolCall", "id": "call_spawn_1", "tool": "spawn_agent", "status": "in_progress",
             "sender_thread_id": parent, "receiver_thread_ids": [], "receiver_agents": [],
             "prompt": "run the tests", "agents_states": {}}
    wait = {"type": "CollabAgentToolCall", "id": "call_wait_1", "tool": "wait", "status": "in_progress",
            "sender_thread_id": parent, "receiver_thread_ids": [child], "receiver_agents": [],
            "agents_states": {child: "running"}}
    activity = {"type": "SubAgentActivity", "id": "call_spawn_1", "kind": "started", "agent_thread_id": child,
                "agent_path": "/root/worker"}
    records = feed_raw([
        envelope("session_meta", {"id": parent, "cli_version": "0.171.0", "history_mode": "paginated"}),
        envelope("event_msg", {"type": "task_started", "turn_id": "t1"}),
        envelope("response_item", user_item({"type": "input_text", "text": "run the tests in a worker"})),
        envelope("response_item", {"type": "function_call", "name": "spawn_agent", "call_id": "call_spawn_1",
                                   "arguments": json.dumps({"task_name": "worker", "message": "run the tests"})}),
        *lifecycle("both", spawn, status="completed", receiver_thread_ids=[child],
                   receiver_agents=[{"thread_id": child, "agent_nickname": "Ada", "agent_role": "explorer"}],
                   agents_states={child: "pending_init"}),
        *lifecycle("both", activity),
        envelope("response_item", {"type": "function_call_output", "call_id": "call_spawn_1",
                                   "output": json.dumps({"task_name": "/root/worker", "nickname": "Ada"})}),
        envelope("response_item", {"type": "function_call", "name": "wait", "call_id": "call_wait_1",
                                   "arguments": json.dumps({"targets": ["/root/worker"]})}),
        *lifecycle("both", wait, status="completed", agents_states={child: {"completed": "all 12 tests pass"}}),
        *lifecycle("both", {**activity, "id": "call_msg_1", "kind": "interacted"}),
        envelope("response_item", {"type": "function_call_output", "call_id": "call_wait_1",
                                   "output": json.dumps({"status": {child: {"completed": "all 12 tests pass"}}})}),
        # a start of a kind of item no Codex writes is still an unknown type
        *lifecycle("started", {"type": "Teleport", "id": "x1"}),
        envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}),
    ])
    assert of(records, LineError) == []
    merged = {r.position.line_no: r.reason for r in of(records, Merged)}
    assert merged == {
        1: "metadata", 2: "metadata", 17: "metadata",  # session_meta, task_started, task_complete
        5: "metadata", 7: "metadata", 11: "metadata", 13: "metadata",  # the four starts
        6: "metadata", 8: "metadata",  # the spawn's completed items: its links
        12: "duplicate", 14: "duplicate",  # a wait and a talk: the calls' response items say it
        16: "unknown-type",
    }
    links = {(s.agent_id, s.parent_tool_use_id, s.agent_type, s.description) for s in of(records, Subagent)}
    assert links == {
        (child, f"codex:{parent}:call_spawn_1", "explorer", "Ada"),
        (child, f"codex:{parent}:call_spawn_1", None, None),
    }
