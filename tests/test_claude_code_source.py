"""Parser-level tests of the Claude Code source (no database involved).

The expected per-file counts below were derived by reading the corpus files
with jq and by hand, not by running the parser.
"""

import base64
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_obelisk.plugins import get_sources
from datasette_obelisk.records import (
    LineError,
    Merged,
    Message,
    Position,
    PullRequest,
    Session,
    Subagent,
    Summary,
    TitleCandidate,
    ToolCall,
    ToolResult,
    Workflow,
    WorkflowAgent,
)
from datasette_obelisk.sources.base import SourceFile
from datasette_obelisk.sources.claude_code import ClaudeCodeSource
from datasette_obelisk.sources.lines import read_lines

CORPUS = Path(__file__).parent.parent.parent / "shared" / "corpus"
CLAUDE = CORPUS / "claude-code"
needs_corpus = pytest.mark.skipif(
    not CLAUDE.is_dir(), reason=f"the shared corpus is not at {CLAUDE}"
)

SOURCE = ClaudeCodeSource()

# The corpus keeps the 2.0.x flat agent file under its fixture name, not
# ``agent-<id>.jsonl``: discovery sees a session, its lines say it is agent
# e1c84ba5 of session 88a8d761-….
FLAT_AGENT = "handgemacht-ai__claude-code-log/sidechain_agent.jsonl"
INLINE_1_0 = "d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
MAIN_2_1 = "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
ALICE = "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2"
JAZZY = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
JAZZY_AGENT = f"jazzyalex__agent-sessions/{JAZZY}/subagents/agent-a0ad4f44468bdf20d.jsonl"
COMPACT_AGENT = "marot__spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl"

COLUMNS = (
    "messages merged errors tool_calls tool_results is_error"
    " succeeded failed blocked cancelled subagents away_summary compaction"
    " custom ai summary first_prompt split_api_ids"
).split()

# fmt: off
EXPECTED = {
    #                                                         msg mrg err calls res err  ok fail blk cxl sub away cmp cus ai sum fp split
    "d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl":
                                                            (437, 1, 0, 167, 167, 23, 144, 23, 0, 0, 0, 0, 0, 0, 0, 1, 1, 88),
    "daaain__claude-code-log/dag_compact_after_rewind_preserved.jsonl":
                                                            (12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0),
    # (line 18, a prompt with no parent after line 17 named one, may be the first prompt sent again)
    "daaain__claude-code-log/edge_cases.jsonl":             (14, 2, 3, 3, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0),
    "handgemacht-ai__claude-code-log/2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl":
                                                            (23, 1, 0, 9, 9, 6, 3, 0, 6, 0, 0, 0, 0, 0, 0, 0, 1, 2),
    # Two records of its one agent: the Task result (line 3) and the task notification (line 6).
    "handgemacht-ai__claude-code-log/eb000000-0000-4000-8000-000000000001.jsonl":
                                                            (7, 0, 0, 2, 2, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0),
    "handgemacht-ai__claude-code-log/eb000000-0000-4000-8000-000000000001/subagents/agent-cccc333.jsonl":
                                                            (3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0),
    "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl":
                                                            (162, 18, 0, 40, 40, 0, 40, 0, 0, 0, 6, 2, 0, 0, 0, 0, 1, 16),
    "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.jsonl":
                                                            (18, 0, 0, 7, 7, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 3),
    "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.meta.json":
                                                            (0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0),
    FLAT_AGENT:                                             (3, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1),
    "handgemacht-ai__claude-code-log/sidechain_main.jsonl": (3, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0),
    "jazzyalex__agent-sessions/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl":
                                                            (3, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0),
    "jazzyalex__agent-sessions/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl":
                                                            (4, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0),
    "jazzyalex__agent-sessions/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.meta.json":
                                                            (0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0),
    # (line 12, the prompt queued while the agent worked, is a message: log-only and meta)
    "jazzyalex__agent-sessions/small.jsonl":                (72, 17, 0, 3, 3, 1, 2, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1),
    "kvsankar__agent-history/claude_forked_session.jsonl":  (14, 0, 0, 3, 3, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0),
    # history.jsonl's shape (no type, no uuid): only metadata.
    "kvsankar__agent-history/claude_history.jsonl":         (0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    "marot__spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl":
                                                            (116, 0, 0, 25, 25, 0, 25, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 10),
    "marot__spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl":
                                                            (15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0),
    "simonw__claude-code-transcripts/sample_session.jsonl": (7, 1, 0, 2, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0),
}
# fmt: on


# Helpers


def corpus_units():
    """Every corpus file as discovery finds it, by path below the corpus."""
    return {str(unit.path.relative_to(CLAUDE)): unit for unit in SOURCE.discover(CLAUDE)}


def line_items(path):
    """(bytes, Position) of each non-blank line, as the ingester feeds them."""
    with open(path, "rb") as stream:
        return [(line.data, line.position) for line in read_lines(stream) if line.data.strip()]


def parsed(name):
    """Records of the corpus file ``name``."""
    return parse_unit(corpus_units()[name])


def parse_unit(unit_):
    parser = SOURCE.open_parser(unit_, None)
    if unit_.layout == "document":
        return parser.document(unit_.path.read_bytes())
    return [r for data, position in line_items(unit_.path) for r in parser.feed(data, position)]


def unit(kind="session", name="s1.jsonl", layout="jsonl", **hints):
    return SourceFile(Path("/projects/-p") / name, "claude", kind, layout, hints=hints)


def feed_lines(objects, unit_=None, state=None):
    """Records for JSON-able ``objects`` fed as consecutive lines."""
    parser = SOURCE.open_parser(unit_ or unit(session_id="s1"), state)
    records, offset = [], 0
    for line_no, obj in enumerate(objects, 1):
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj)
        records.extend(parser.feed(data, Position(line_no, offset, len(data))))
        offset += len(data) + 1
    return records


def of_type(records, kind):
    return [record for record in records if isinstance(record, kind)]


def tally(records):
    """The EXPECTED columns for ``records``."""
    results = of_type(records, ToolResult)
    outcomes = Counter(result.outcome for result in results)
    summaries = Counter(summary.kind for summary in of_type(records, Summary))
    titles = Counter(title.kind for title in of_type(records, TitleCandidate))
    api_ids = Counter(m.api_message_id for m in of_type(records, Message) if m.api_message_id)
    return (
        len(of_type(records, Message)),
        len(of_type(records, Merged)),
        len(of_type(records, LineError)),
        len(of_type(records, ToolCall)),
        len(results),
        sum(result.is_error for result in results),
        outcomes["succeeded"],
        outcomes["failed"],
        outcomes["blocked"],
        outcomes["cancelled"],
        len(of_type(records, Subagent)),
        summaries["away_summary"],
        summaries["compaction"],
        titles["custom"],
        titles["ai"],
        titles["summary"],
        titles["first_prompt"],
        sum(1 for count in api_ids.values() if count > 1),
    )


def user(uuid, content, **extra):
    message = {"role": "user", "content": content}
    return {"type": "user", "uuid": uuid, "sessionId": "s1", "message": message, **extra}


def assistant(uuid, content, **extra):
    message = {"role": "assistant", "content": content}
    return {"type": "assistant", "uuid": uuid, "message": message, **extra}


def tool_result(tool_use_id, content, is_error=None):
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


# The corpus


@needs_corpus
def test_every_claude_file_in_the_corpus_has_expected_counts():
    units = corpus_units()
    assert sorted(units) == sorted(EXPECTED)


@needs_corpus
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_counts(name):
    records = parsed(name)
    assert dict(zip(COLUMNS, tally(records))) == dict(zip(COLUMNS, EXPECTED[name]))


@needs_corpus
@pytest.mark.parametrize("name", [n for n in sorted(EXPECTED) if n.endswith(".jsonl")])
def test_each_line_is_exactly_one_message_merged_or_error(name):
    unit_ = corpus_units()[name]
    parser = SOURCE.open_parser(unit_, None)
    for data, position in line_items(unit_.path):
        records = parser.feed(data, position)
        accounted = [r for r in records if isinstance(r, (Message, Merged, LineError))]
        assert len(accounted) == 1, position
        assert all(getattr(r, "position", position) == position for r in accounted)


@needs_corpus
def test_compaction_keeps_its_preserved_segment():
    records = parsed("daaain__claude-code-log/dag_compact_after_rewind_preserved.jsonl")
    messages = {m.uuid: m for m in of_type(records, Message)}
    boundary = messages["cb"]
    assert (boundary.type, boundary.subtype, boundary.parent_uuid, boundary.logical_parent_uuid) == (
        "system", "compact_boundary", None, "b2a2"
    )
    assert boundary.meta == {"preserved_uuids": ["b2a", "b2u2", "b2a2"]}
    assert (boundary.is_meta, boundary.surface, boundary.text) == (1, "log-only", "Conversation compacted")
    summary = messages["cs"]
    assert (summary.is_compact_summary, summary.is_meta, summary.surface) == (1, 0, None)
    assert of_type(records, Summary) == [
        Summary("cs", "dag_compact_after_rewind_preserved", "compaction", summary.text, summary.timestamp, "cs")
    ]


@needs_corpus
def test_refusals_and_errors_keep_their_details():
    messages = {m.uuid: m for m in of_type(parsed("jazzyalex__agent-sessions/small.jsonl"), Message)}
    # line 20: "content": "refusal", "apiRefusalExplanation": "Refused for policy reasons."
    refusal = messages["s3"]
    assert (refusal.subtype, refusal.surface, refusal.text) == ("api_refusal", "log-only", "refusal\nRefused for policy reasons.")
    # line 31: no content; "error": {"message": "[trimmed for fixture]", "status": 429, "formatted": ...}
    error = messages["sys-nested-1"]
    assert (error.subtype, error.surface, error.text) == ("error", "log-only", "[trimmed for fixture]\nstatus 429")
    # Other system lines keep their content alone.
    assert messages["s4"].text == "compacted"


def test_an_api_error_says_what_each_wrapped_error_says():
    line = {"type": "system", "subtype": "api_error", "uuid": "e1", "timestamp": "2026-01-01T00:00:00Z",
            "error": {"status": 529, "error": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}}
    (message,) = of_type(feed_lines([line]), Message)
    assert message.text == "status 529\nerror\nOverloaded\noverloaded_error"
    unknown = {**line, "uuid": "e2", "error": "not an object", "content": "Retrying"}
    assert of_type(feed_lines([unknown]), Message)[0].text == "Retrying"


@needs_corpus
def test_2_1_line_fields():
    records = parsed(MAIN_2_1)
    messages = {m.uuid: m for m in of_type(records, Message)}
    thinking = messages["226dc7e9-9f54-4066-8239-0b14974c9a4e"]
    # Empty thinking with only a signature contributes no text.
    assert (thinking.text, thinking.content_type) == ("", "thinking")
    assert thinking.api_message_id == "msg_01XwTPVdM5y8bf1EDKvGBV35"
    assert thinking.request_id == "req_011CaBJWhtEYGeXKSjCTPCH9"
    assert (thinking.model, thinking.stop_reason, thinking.role) == ("claude-opus-4-7", "tool_use", "assistant")
    assert (thinking.input_tokens, thinking.output_tokens) == (6, 2201)
    assert (thinking.cache_read_tokens, thinking.cache_creation_tokens) == (0, 27860)
    assert thinking.surface is None and thinking.is_meta == 0
    tool_search = messages["6d26e720-e434-4a95-aeed-e4c2ed73ac3c"]
    assert tool_search.text == "TaskCreate\nSendMessage\nTaskList\nTaskGet"
    assert tool_search.content_type == "tool_result"
    hook = messages["1a39b566-c11f-4d25-bf32-158094f07434"]
    assert (hook.type, hook.subtype, hook.content_type) == ("attachment", "hook_success", "attachment")
    assert (hook.is_meta, hook.surface, hook.text) == (1, "log-only", "")
    away = messages["e8b0fd84-dfca-4e0c-85f8-8a4b212caf95"]
    assert (away.subtype, away.is_meta, away.surface) == ("away_summary", 1, "log-only")
    assert away.text.startswith("Running a teammate experiment")
    assert [s.content for s in of_type(records, Summary)][0] == away.text
    caveat = messages["b2ad0fde-4454-493e-8aed-0d5c4ae4be01"]
    exit_command = messages["8b5a6508-dc77-49c6-a13d-239d5a7c69b1"]
    # The caveat is injected; the /exit after it is what the user typed.
    assert (caveat.is_meta, exit_command.is_meta) == (1, 0)
    spawned = {s.agent_id: s for s in of_type(records, Subagent)}
    alice = spawned["a36efb2a1231c41e2"]
    assert alice.session_id == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert alice.child_session_id == "ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2"
    assert (alice.agent_type, alice.duration_ms, alice.total_tokens) == ("general-purpose", 227081, 29103)
    agent_calls = {c.id for c in of_type(records, ToolCall) if c.name == "Agent"}
    assert {s.parent_tool_use_id for s in spawned.values()} <= agent_calls
    linked = [r for r in of_type(records, ToolResult) if r.agent_id]
    assert sorted(r.agent_id for r in linked) == sorted(spawned)


@needs_corpus
def test_subagent_transcripts_are_sessions_of_their_own():
    # 2.1.x: the parent comes from the path, even where lines say otherwise.
    jazzy = parsed(JAZZY_AGENT)
    child = f"{JAZZY}:agent-a0ad4f44468bdf20d"
    [session] = of_type(jazzy, Session)
    assert (session.id, session.parent_session_id) == (child, JAZZY)
    assert (session.relationship, session.agent_id) == ("subagent", "a0ad4f44468bdf20d")
    assert of_type(jazzy, Subagent) == [Subagent("a0ad4f44468bdf20d", JAZZY, child_session_id=child)]
    assert {m.session_id for m in of_type(jazzy, Message)} == {child}
    assert {m.agent_id for m in of_type(jazzy, Message)} == {"a0ad4f44468bdf20d"}
    # 2.0.x flat file, under a fixture name: the lines say which agent it is
    # (agentId) and whose (sessionId).
    assert corpus_units()[FLAT_AGENT].kind == "session"
    flat = parsed(FLAT_AGENT)
    [session] = of_type(flat, Session)
    assert session.id == "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358:agent-e1c84ba5"
    assert session.parent_session_id == "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358"
    assert (session.relationship, session.agent_id) == ("subagent", "e1c84ba5")
    assert of_type(flat, Subagent) == [
        Subagent("e1c84ba5", "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358", child_session_id=session.id)
    ]
    assert {(m.session_id, m.agent_id) for m in of_type(flat, Message)} == {(session.id, "e1c84ba5")}
    # The compaction summariser is an agent like any other, typed by its file name.
    compact = parsed(COMPACT_AGENT)
    assert {(s.id, s.agent_type) for s in of_type(compact, Session)} == {
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-acompact-70d8e7", "compaction")
    }
    assert [(a.agent_id, a.agent_type) for a in of_type(compact, Subagent)] == [("acompact-70d8e7", "compaction")]
    assert of_type(compact, TitleCandidate)[0].title.startswith("Your task is to create a detailed summary")


@needs_corpus
def test_2_0_trunk_tool_result_refers_to_its_agent():
    records = parsed("handgemacht-ai__claude-code-log/sidechain_main.jsonl")
    [result] = of_type(records, ToolResult)
    assert result.agent_id == "e1c84ba5"
    assert all(m.agent_id is None for m in of_type(records, Message))
    [spawned] = of_type(records, Subagent)
    assert (spawned.parent_tool_use_id, spawned.duration_ms, spawned.total_tokens) == (
        "toolu_01JA2mLseQCAW3MdwPE4qWEk", 119249, 59967
    )


@needs_corpus
def test_inline_sidechains_keep_their_lines_and_never_title_the_session():
    records = parsed(INLINE_1_0)
    messages = of_type(records, Message)
    assert sum(m.is_sidechain for m in messages) == 405
    assert all(m.agent_id is None for m in messages)
    titles = {t.kind: t for t in of_type(records, TitleCandidate)}
    assert titles["first_prompt"].title == "/orchestrator create TODO app by Next.js"  # the command line 2 typed
    assert titles["summary"].leaf_uuid == "549b3502-6e30-4fa5-869f-c998df26c3f0"
    multi_edit = [c for c in of_type(records, ToolCall) if c.name == "MultiEdit"]
    assert multi_edit and all(len(c.file_paths) == 1 for c in multi_edit)


@needs_corpus
def test_meta_json_documents():
    records = parsed(f"{ALICE}.meta.json")
    data = (CLAUDE / f"{ALICE}.meta.json").read_bytes()
    assert records == [
        Subagent(
            "a36efb2a1231c41e2",
            "ef958aa1-0e93-49f0-bb71-150f63befcd1",
            child_session_id="ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2",
            agent_type="general-purpose",
            description="Round 2: alice comparison",
            described_by="agent",
        ),
        Merged(Position(1, 0, len(data)), "metadata"),
    ]


@needs_corpus
def test_no_base64_in_corpus_text():
    records = parsed("jazzyalex__agent-sessions/small.jsonl")
    placeholders = [m.text for m in of_type(records, Message) if "[image " in m.text]
    assert len(placeholders) == 2  # a prompt and a queued_command with images
    for message in of_type(records, Message):
        assert '"data"' not in message.text and "base64" not in message.text


@needs_corpus
@pytest.mark.parametrize(
    "name",
    [
        "jazzyalex__agent-sessions/small.jsonl",
        "daaain__claude-code-log/edge_cases.jsonl",
        "daaain__claude-code-log/dag_compact_after_rewind_preserved.jsonl",
        "handgemacht-ai__claude-code-log/eb000000-0000-4000-8000-000000000001/subagents/agent-cccc333.jsonl",
        "handgemacht-ai__claude-code-log/sidechain_main.jsonl",
        FLAT_AGENT,
    ],
)
def test_resuming_from_saved_state_at_every_line_gives_the_same_records(name):
    unit_ = corpus_units()[name]
    items = line_items(unit_.path)
    whole = parse_unit(unit_)
    for split in range(len(items) + 1):
        first = SOURCE.open_parser(unit_, None)
        records = [r for data, pos in items[:split] for r in first.feed(data, pos)]
        state = orjson.loads(orjson.dumps(first.state()))  # what the store keeps
        second = SOURCE.open_parser(unit_, state)
        records += [r for data, pos in items[split:] for r in second.feed(data, pos)]
        assert records == whole, split


# Mapping rules on hand-made lines


def test_images_and_documents_become_placeholders():
    payload = base64.b64encode(bytes(range(256)) * 12).decode()  # 3072 bytes
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": payload}}
    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": payload}}
    records = feed_lines(
        [
            user("u1", [image, {"type": "text", "text": "what is this?"}]),
            user("u2", [tool_result("t1", [image, {"type": "text", "text": "shot"}])]),
            {
                "type": "attachment",
                "uuid": "q1",
                "attachment": {"type": "queued_command", "prompt": [pdf, {"type": "text", "text": "and this"}]},
            },
        ]
    )
    texts = [m.text for m in of_type(records, Message)]
    assert texts == [
        "[image image/png 3072 bytes]\nwhat is this?",
        "[image image/png 3072 bytes]\nshot",
        "[document application/pdf 3072 bytes]\nand this",
    ]
    assert of_type(records, ToolResult)[0].content == texts[1]
    assert of_type(records, Message)[0].content_type == "mixed"
    assert of_type(records, TitleCandidate)[0].title == "what is this?"
    assert not any(payload[:40] in repr(r) for r in records)


@pytest.mark.parametrize(
    "content, is_error, extra, outcome, exit_code",
    [
        ("[Request interrupted by user for tool use]", True, {}, "cancelled", None),
        ("The user doesn't want to proceed with this tool use. The tool use was rejected", True, {}, "blocked", None),
        ("The user doesn't want to take this action right now. STOP what you are doing", True, {}, "cancelled", None),
        ("Permission to use Bash with command node --version has been denied.", True, {}, "blocked", None),
        ("Claude requested permissions to use WebSearch, but you haven't granted it yet.", True, {}, "blocked", None),
        ("Error: This command requires approval", True, {}, "blocked", None),
        ("anything at all", True, {"toolDenialKind": "classifier"}, "blocked", None),
        # A command the user stopped: Bash keeps its output and adds the abort.
        ("partial out\n<error>Command was aborted before completion</error>", True,
         {"toolUseResult": {"stdout": "partial out", "interrupted": True}}, "cancelled", None),
        ("Exit code 1\nboom", True, {"toolUseResult": {"stdout": "", "interrupted": False}}, "failed", 1),
        ("Exit code 2\nls: cannot access 'x'", True, {}, "failed", 2),
        ("Error: Exit code 127\nbash: nope: command not found", True, {}, "failed", 127),
        ("Exit code 0", False, {}, "succeeded", 0),
        ("The user doesn't want to proceed with this tool use", False, {}, "succeeded", None),
        ("fine", None, {}, "succeeded", None),
    ],
)
def test_tool_result_outcomes(content, is_error, extra, outcome, exit_code):
    records = feed_lines([user("u1", [tool_result("t1", content, is_error)], **extra)])
    [result] = of_type(records, ToolResult)
    assert (result.outcome, result.exit_code, result.is_error) == (outcome, exit_code, int(is_error is True))


@pytest.mark.parametrize("details, path", [
    ({"type": "text", "file": {"filePath": "/a.py", "content": "x"}}, "/a.py"),  # Read
    ({"filePath": "/b.py", "oldString": "x", "newString": "y"}, "/b.py"),  # Edit
    ({"type": "create", "filePath": "/c.py"}, "/c.py"),  # Write
    ({"stdout": "", "stderr": ""}, None),  # Bash
    ("File created successfully at: /d.py", None),  # 1.0.x: a string
])
def test_a_result_names_the_file_its_tool_result_says(details, path):
    records = feed_lines([user("u1", [tool_result("t1", "ok")], toolUseResult=details)])
    assert of_type(records, ToolResult)[0].file_path == path


def test_a_turn_duration_line_keeps_its_duration():
    line = {"type": "system", "subtype": "turn_duration", "uuid": "d1", "parentUuid": "a1", "durationMs": 247515}
    records = feed_lines([line, {**line, "uuid": "d2", "durationMs": "soon"}, {**line, "uuid": "d3", "durationMs": 2**64 - 1}])
    assert [(m.uuid, m.turn_duration_ms, m.is_meta) for m in of_type(records, Message)] == [
        ("d1", 247515, 1), ("d2", None, 1), ("d3", None, 1),  # past SQLite's integers: not a duration
    ]


def test_tool_calls():
    edit = {"type": "tool_use", "id": "t1", "name": "MultiEdit", "input": {"file_path": "/a.py", "edits": []}}
    notebook = {"type": "tool_use", "id": "t2", "name": "NotebookEdit", "input": {"notebook_path": "/n.ipynb"}}
    skill = {"type": "tool_use", "id": "t3", "name": "Skill", "input": {"skill": "pdf"}}
    grep = {"type": "tool_use", "id": "t4", "name": "Grep", "input": {"path": "/src"}}
    anonymous = {"type": "tool_use", "name": "bash", "input": {"command": "ls"}}
    records = feed_lines([assistant("a1", [edit, notebook, skill, grep, anonymous], timestamp="T")])
    calls = of_type(records, ToolCall)
    assert [(c.id, c.file_paths, c.presentation) for c in calls] == [
        ("t1", ["/a.py"], "default"),
        ("t2", ["/n.ipynb"], "default"),
        ("t3", [], "skill"),
        ("t4", [], "default"),
        ("a1:4", [], "default"),
    ]
    assert calls[0].input_json == '{"file_path":"/a.py","edits":[]}'
    assert {(c.message_uuid, c.session_id, c.timestamp) for c in calls} == {("a1", "s1", "T")}
    [message] = of_type(records, Message)
    assert message.content_type == "tool_use"
    assert message.text.splitlines()[:3] == ['MultiEdit', '/a.py', 'NotebookEdit']


def test_meta_detection_and_content_types():
    records = feed_lines(
        [
            user("u1", "<command-name>/clear</command-name>"),
            user("u2", [{"type": "text", "text": "<system-reminder>x</system-reminder>"}]),
            user("u3", "<task-notification>\n<task-id>1</task-id>"),
            user("u4", "Base directory for this skill: /skills/pdf", isMeta=True),
            user("u5", "a real prompt"),
            assistant("a1", [{"type": "thinking", "thinking": "hmm", "signature": "x"}, {"type": "text", "text": "ok"}]),
            assistant("a2", [{"type": "redacted_thinking", "data": "opaque"}]),
            user("u6", "[Request interrupted by user]"),
            user("u7", [{"type": "text", "text": "[Request interrupted by user for tool use]"}]),
            user("u8", "[Request interrupted by user]\nNo, use the other file"),
        ]
    )
    messages = {m.uuid: m for m in of_type(records, Message)}
    # u1: a slash command the user typed is a request, not an injection
    assert [messages[u].is_meta for u in ("u1", "u2", "u3", "u4", "u5", "a1")] == [0, 1, 1, 1, 0, 0]
    assert messages["u4"].content_type == "skill_instructions"
    # Claude Code's note that a turn was stopped: shown, but no one's prompt.
    assert [(messages[u].content_type, messages[u].is_meta) for u in ("u6", "u7")] == [("interruption", 0)] * 2
    assert messages["u8"].content_type == "text"  # the note and what the user typed after it
    assert (messages["a1"].content_type, messages["a1"].text) == ("mixed", "hmm\nok")
    assert (messages["a2"].content_type, messages["a2"].text) == ("redacted_thinking", "")


def test_first_prompt_skips_everything_that_is_not_a_typed_prompt():
    records = feed_lines(
        [
            {"type": "summary", "summary": "Old title", "leafUuid": "x"},
            user("u0", "inline subagent task", isSidechain=True),
            user("u1", "Caveat: The messages below were generated by the user", isMeta=True),
            user("u2", "<command-name>/model</command-name>"),
            user("u3", "[Request interrupted by user]"),
            user("u4", [tool_result("t1", "out")]),
            user("u5", "This session is being continued from a previous conversation", isCompactSummary=True),
            user("u6", "   "),
            user("u7", "  Fix the login bug  "),
            user("u8", "second prompt"),
        ]
    )
    titles = of_type(records, TitleCandidate)
    assert [(t.kind, t.title) for t in titles] == [("summary", "Old title"), ("first_prompt", "Fix the login bug")]
    assert titles[1].position.line_no == 9  # a command without arguments (/model) says nothing to title
    assert [s.kind for s in of_type(records, Summary)] == ["compaction"]


def test_results_beside_a_note_of_the_interruption_and_shell_commands():
    note = {"type": "text", "text": "[Request interrupted by user]"}
    records = feed_lines(
        [
            user("r1", [tool_result("t1", "PASS"), note]),
            user("r2", [tool_result("t2", "PASS"), {"type": "text", "text": "and use pytest -x"}]),
            user("b1", "<bash-input>git status</bash-input>"),
            user("b2", "<bash-stdout>On branch main</bash-stdout><bash-stderr></bash-stderr>"),
            user("b3", "<bash-stderr>fatal: not a git repository</bash-stderr>"),
        ]
    )
    messages = {m.uuid: m for m in of_type(records, Message)}
    assert [(u, m.content_type, m.is_meta) for u, m in messages.items()] == [
        ("r1", "tool_result", 0),  # no one typed the note: no prompt, no conversation
        ("r2", "mixed", 0),
        ("b1", "text", 0),  # the user typed the command
        ("b2", "text", 1),
        ("b3", "text", 1),
    ]
    assert messages["r1"].text == "PASS\n[Request interrupted by user]"
    assert of_type(records, TitleCandidate) == []  # a shell command names no task


def test_a_title_leaves_out_what_the_ide_added_before_the_prompt():
    opened = "<ide_opened_file>The user opened the file /src/app.kt in the IDE.</ide_opened_file>"
    selected = "<ide_selection>The user selected lines 1 to 3:\nval x = 1\n</ide_selection>"
    records = feed_lines(
        [
            user("u1", [{"type": "text", "text": opened}]),  # nothing typed: no title
            user("u2", [{"type": "text", "text": opened}, {"type": "text", "text": selected},
                        {"type": "text", "text": "make the number red"}]),
        ]
    )
    assert [(t.kind, t.title) for t in of_type(records, TitleCandidate)] == [("first_prompt", "make the number red")]
    string = feed_lines([user("u1", f"{selected}\n\nexplain <ide_selection> tags")])
    assert [t.title for t in of_type(string, TitleCandidate)] == ["explain <ide_selection> tags"]


@pytest.mark.parametrize("flagged", [True, False])
def test_a_compaction_summary_is_known_by_its_words_when_unflagged(flagged):
    summary = "This session is being continued from a previous conversation that ran out of context. Analysis: wallaby"
    flag = {"isCompactSummary": True} if flagged else {}
    records = feed_lines([user("u1", summary, parentUuid=None, **flag), user("u2", "Go on", parentUuid="u1")])
    messages = of_type(records, Message)
    assert [(m.uuid, m.is_compact_summary, m.is_meta) for m in messages] == [("u1", 1, 0), ("u2", 0, 0)]
    assert [(s.kind, s.content) for s in of_type(records, Summary)] == [("compaction", summary)]
    assert [(t.kind, t.title) for t in of_type(records, TitleCandidate)] == [("first_prompt", "Go on")]
    quoted = feed_lines([user("u1", "Why does it say: " + summary), user("u2", summary, parentUuid="u1")])
    assert [m.is_compact_summary for m in of_type(quoted, Message)] == [0, 0]  # a prompt pasting it has a parent
    unlinked = feed_lines([user("u1", summary)])  # a log that writes no parentUuid: no sign of a new chain
    assert [m.is_compact_summary for m in of_type(unlinked, Message)] == [0]


def test_a_slash_command_with_arguments_titles_its_session():
    typed = ("<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n"
             "<command-args>create TODO app by Next.js</command-args>")
    records = feed_lines([user("u1", typed), user("u2", "Base prompt", isMeta=True), user("u3", "Thanks!")])
    assert [(t.kind, t.title) for t in of_type(records, TitleCandidate)] == [
        ("first_prompt", "/orchestrator create TODO app by Next.js")]
    bare = feed_lines([user("u1", "<command-name>review</command-name><command-args>the diff</command-args>")])
    assert [t.title for t in of_type(bare, TitleCandidate)] == ["/review the diff"]


def test_the_reasoning_effort_is_the_last_an_assistant_line_names_cut_short():
    records = feed_lines([
        user("u1", "Hi"),
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1", "effort": "medium",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "a1", "sessionId": "s1", "effort": "x" * 300,
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Again"}]}},
    ])
    assert [s.reasoning_effort for s in of_type(records, Session)] == [None, "medium", "x" * 99 + "…"]


def test_each_assistant_line_keeps_the_reasoning_effort_it_names():
    records = feed_lines([
        user("u1", "Hi"),
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1", "effort": "high",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}},
        user("u2", "Quickly now"),
        {"type": "assistant", "uuid": "a2", "parentUuid": "u2", "sessionId": "s1", "effort": "low",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Done"}]}},
        {"type": "assistant", "uuid": "a3", "parentUuid": "a2", "sessionId": "s1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "No effort named"}]}},
    ])
    assert [(m.uuid, m.meta) for m in of_type(records, Message)] == [
        ("u1", None), ("a1", {"effort": "high"}), ("u2", None), ("a2", {"effort": "low"}), ("a3", None)]
    assert [s.reasoning_effort for s in of_type(records, Session)] == [None, "high", "low"]


def test_pr_link_lines_name_pull_requests():
    def pr_link(**fields):
        return {"type": "pr-link", "sessionId": "elsewhere", "timestamp": "2026-01-02T03:04:05Z", **fields}

    records = feed_lines([
        pr_link(prNumber=12, prUrl="https://github.com/o/r/pull/12", prRepository="o/r"),
        user("u1", "Open a PR"),
        pr_link(prNumber="13", prUrl="https://github.com/o/r/pull/13"),  # a number written as text is no number
        pr_link(prNumber=14),  # no URL: nothing to link
    ])
    assert of_type(records, PullRequest) == [
        PullRequest("s1", "https://github.com/o/r/pull/12", 12, "o/r", "2026-01-02T03:04:05Z"),
        PullRequest("s1", "https://github.com/o/r/pull/13", None, None, "2026-01-02T03:04:05Z"),
    ]
    assert [r.reason for r in of_type(records, Merged)] == ["metadata"] * 3


def launched(agent_id, call="t1"):
    return user(f"r-{agent_id}", [tool_result(call, "Async agent launched")],
                toolUseResult={"isAsync": True, "status": "async_launched", "agentId": agent_id})


def notification(agent_id, tokens, ms, result="Done."):
    return (f"<task-notification>\n<task-id>{agent_id}</task-id>\n<status>completed</status>\n"
            f"<summary>Agent \"Coverage analysis\" completed</summary>\n<result>{result}</result>\n"
            f"<usage>total_tokens: {tokens}\ntool_uses: 2\nduration_ms: {ms}</usage>\n</task-notification>")


def totals(records):
    return [(a.agent_id, a.duration_ms, a.total_tokens) for a in of_type(records, Subagent) if a.duration_ms]


def test_an_async_agents_task_notification_gives_its_duration_and_tokens():
    shell = "<task-notification>\n<task-id>b1</task-id>\n<summary>Background command completed</summary>\n</task-notification>"
    records = feed_lines([launched("cccc333"), user("u1", notification("cccc333", 23099, 15506)), user("u2", shell)])
    assert totals(records) == [("cccc333", 15506, 23099)]
    assert all(m.is_meta for m in of_type(records, Message) if m.uuid != "r-cccc333")
    # The agent's own output is no field of the notification; two notifications in one line are two.
    nested = notification("a1", 10, 100, result="<task-id>deadbeef</task-id><usage>total_tokens: 5\nduration_ms: 7</usage>")
    records = feed_lines([launched("a1"), launched("a2", "t2"), launched("deadbeef", "t3"),
                          user("u1", nested + "\n" + notification("a2", 20, 200))])
    assert totals(records) == [("a1", 100, 10), ("a2", 200, 20)]


def queued(prompt, **extra):
    return {"type": "attachment", "uuid": "q1", "parentUuid": "u0", "timestamp": "2026-01-02T03:04:05Z",
            "attachment": {"type": "queued_command", "prompt": prompt, **extra}}


def test_a_task_notification_queued_as_an_attachment_gives_its_totals():
    # 2.1.25x+ delivers it as a queued command while the session works on.
    records = feed_lines([launched("aqq1"), queued(notification("aqq1", 4321, 8765), commandMode="task-notification")])
    assert totals(records) == [("aqq1", 8765, 4321)]


def test_a_prompt_queued_while_the_agent_worked_is_the_user_s():
    records = feed_lines([
        queued("also update the README", commandMode="prompt", origin={"kind": "human"}),
        {**queued("older build", commandMode="prompt"), "uuid": "q2"},
        {**queued("ls -la", commandMode="bash"), "uuid": "q3"},
        {**queued(notification("x1", 1, 2), commandMode="task-notification", origin={"kind": "task-notification"}), "uuid": "q4"},
    ])
    assert [(m.uuid, m.role, m.is_meta, m.content_type, m.surface) for m in of_type(records, Message)] == [
        ("q1", "user", 0, "text", None), ("q2", "user", 0, "text", None),
        ("q3", None, 1, "attachment", "log-only"), ("q4", None, 1, "attachment", "log-only"),
    ]
    assert of_type(records, TitleCandidate) == []  # (a queued prompt is never the first)


def test_an_agent_result_without_details_names_its_agent_by_its_footer():
    # 2.1.172+: a result in an agent's transcript (an agent's agent) has no toolUseResult
    footer = ("Found three call sites; the field agentId: legacy-x is unused.\n"
              "agentId: ab2 (use SendMessage with to: 'ab2' to continue this agent)\n"
              "<usage>total_tokens: 4321\ntool_uses: 3\nduration_ms: 8765</usage>")
    same = "agentId: zz9 (use SendMessage with to: 'zz9' to continue this agent)\n<usage>total_tokens: 99999</usage>"
    unit_ = unit("subagent", "agent-ab1.jsonl", parent_session_id="cc1", agent_id="ab1")
    records = feed_lines([
        assistant("a1", [{"type": "tool_use", "id": "toolu_n", "name": "Agent", "input": {"prompt": "Dig"}}], isSidechain=True),
        user("r1", [tool_result("toolu_n", footer)], isSidechain=True),
        user("r2", [tool_result("toolu_x", "a Bash output that says agentId: zz and <usage>n: 1</usage> then more")],
             isSidechain=True),
        # a command's output, or a file read, that ends as an agent's result does
        assistant("a3", [{"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": "cat log"}}],
                  isSidechain=True),
        user("r3", [tool_result("toolu_b", same)], isSidechain=True),
        assistant("a4", [{"type": "tool_use", "id": "toolu_t", "name": "Task", "input": {"prompt": "x"}}], isSidechain=True),
        user("r4", [tool_result("toolu_t", same)], isSidechain=True, toolUseResult={"type": "text", "file": {}}),
    ], unit_)
    results = {r.tool_use_id: (r.agent_id, r.agent_duration_ms, r.agent_tokens) for r in of_type(records, ToolResult)}
    assert results == {"toolu_n": ("ab2", 8765, 4321), "toolu_x": (None, None, None), "toolu_b": (None, None, None),
                       "toolu_t": (None, None, None)}
    [agent] = [a for a in of_type(records, Subagent) if a.agent_id == "ab2"]
    assert (agent.parent_tool_use_id, agent.duration_ms, agent.total_tokens) == ("toolu_n", 8765, 4321)


def test_a_notification_of_an_agent_another_session_started_adds_no_agent():
    # After /clear the agent's notification can land in the next session's log.
    assert of_type(feed_lines([user("u1", notification("abc123", 23099, 15506))]), Subagent) == []


@pytest.mark.parametrize("typed, title", [
    ("<command-name>/model</command-name><command-args>opus</command-args>", None),  # a setting
    ("<command-name>/add-dir</command-name><command-args>/home/me/lib</command-args>", None),
    ("<command-name></command-name><command-args>do it</command-args>", None),
    ("<command-name>/ask</command-name><command-args>why does </command-args> break html?</command-args>",
     "/ask why does </command-args> break html?"),
    ("<command-name>/review</command-name><command-args>\n  the diff\n</command-args>", "/review the diff"),
])
def test_which_slash_commands_title_their_session(typed, title):
    records = feed_lines([user("u1", typed), user("u2", "Fix the login bug")])
    assert [t.title for t in of_type(records, TitleCandidate)] == [title or "Fix the login bug"]


def test_titles_and_metadata_lines():
    records = feed_lines(
        [
            {"type": "custom-title", "customTitle": "Mine", "sessionId": "s1"},
            {"type": "ai-title", "aiTitle": "Theirs", "sessionId": "s1"},
            {"type": "ai-title", "aiTitle": "", "sessionId": "s1"},
            {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
            {"type": "queue-operation", "operation": "enqueue", "content": "later"},
            {"type": "last-prompt", "lastPrompt": "x"},
        ]
    )
    assert [(t.kind, t.title, t.session_id) for t in of_type(records, TitleCandidate)] == [
        ("custom", "Mine", "s1"),
        ("ai", "Theirs", "s1"),
    ]
    assert [m.reason for m in of_type(records, Merged)] == ["metadata"] * 5
    # (the prompt queued, line 5, is a message of its own: log-only and meta)
    assert [(m.type, m.subtype, m.text) for m in of_type(records, Message)] == [("queue-operation", "enqueue", "later")]
    assert not of_type(records, Session)  # metadata alone makes no session


# A line without a uuid of each type Claude Code 2.1.332 writes about a session (its
# transcript writer's table), of 2.1.333 (denial-counts), of older builds' (task-summary, speculation-accept, context
# collapse), of a workflow journal, and of history.jsonl (no type, its ``display``).
KNOWN_WITHOUT_UUID = [
    {"type": t, "sessionId": "s1"} for t in (
        "summary custom-title ai-title agent-name agent-color agent-setting tag last-prompt pr-link frame-link "
        "continued-in relocated worktree-state cost-state ended-by-model fork-context-ref queue-operation "
        "file-history-snapshot file-history-delta attribution-snapshot content-replacement permission-mode mode "
        "repl-mode memory-mode isolation-latch atis-latch dev-mods session-owner hybrid-organization "
        "history-suppression bridge-session artifact-comment-monitor artifact-autoreact-ledger tools-used "
        "data-flow-records data-flow-incomplete data-flow-handover derived-from api-request api-request-shape "
        "api-request-blob api-request-resumed observer-ref resume-head-vouch host-row task-summary "
        "speculation-accept marble-origami-commit marble-origami-snapshot marble-origami-reset "
        "denial-counts launched started result failed"
    ).split()
] + [{"display": "fix the tests", "pastedContents": {}, "timestamp": 1762870600000, "project": "/p"}]


def test_a_line_of_a_type_not_known_is_merged_as_such_and_named():
    records = feed_lines(KNOWN_WITHOUT_UUID + [
        {"silly": "this"},  # (daaain's edge_cases.jsonl line 14)
        {"type": "future-line", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00.000Z"},
        {"type": 7, "display": "not history: it has a type"},
        {"type": "permission-mode", "permissionMode": "plan"},
    ])
    merged = [(m.position.line_no, m.reason, m.detail) for m in of_type(records, Merged)]
    n = len(KNOWN_WITHOUT_UUID)
    assert n == 57
    assert merged[:n] == [(line, "metadata", None) for line in range(1, n + 1)]
    assert merged[n:] == [
        (n + 1, "unknown-type", None), (n + 2, "unknown-type", "future-line"), (n + 3, "unknown-type", None),
        (n + 4, "metadata", None),
    ]
    # nothing else changes: an unknown line with a time still says the session went on to then
    assert [s.ended_at for s in of_type(records, Session) if s.ended_at] == ["2026-01-01T00:00:00.000Z"]


@needs_corpus
def test_the_only_line_of_a_type_not_known_in_the_corpus_is_edge_cases_line_14():
    found = []
    for name, unit_ in sorted(corpus_units().items()):
        if unit_.layout != "document":
            found += [(name, m.position.line_no, m.detail) for m in of_type(parse_unit(unit_), Merged)
                      if m.reason == "unknown-type"]
    assert found == [("daaain__claude-code-log/edge_cases.jsonl", 14, None)]


def test_a_prompt_queued_while_the_agent_worked_is_kept_as_queued():
    # Claude Code 2.0.x-2.1.x writes what the user typed while the agent worked as a
    # ``queue-operation`` ``enqueue`` line (content: the text) before it is delivered as a
    # prompt (a user line after ``dequeue``, a ``queued_command`` attachment beside
    # ``remove``); a prompt never delivered (taken back with Esc, ``popAll``/``popOne``,
    # dropped by a hook, the session left with it waiting), and one some builds delivered
    # without a line of its own, is in that line only. It is kept, log-only and meta (no
    # prompt, no title); what Claude Code queued itself (a task's notification) is not.
    records = feed_lines([
        user("u1", "Fix the login bug", timestamp="2026-04-18T15:00:00.000Z"),
        {"type": "queue-operation", "operation": "enqueue", "content": "and the logout one",
         "sessionId": "s1", "timestamp": "2026-04-18T15:00:07.000Z"},
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1", "timestamp": "2026-04-18T15:00:08.000Z",
         "content": "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"},
        {"type": "queue-operation", "operation": "remove", "content": "and the logout one", "reason": "cleared_on_cancel",
         "sessionId": "s1", "timestamp": "2026-04-18T15:00:09.000Z"},
        {"type": "queue-operation", "operation": "popAll", "content": "and the logout one",
         "sessionId": "s1", "timestamp": "2026-04-18T15:00:09.000Z"},
        {"type": "queue-operation", "operation": "dequeue", "sessionId": "s1", "timestamp": "2026-04-18T15:00:10.000Z"},
        {"type": "queue-operation", "operation": "enqueue", "content": "  ", "sessionId": "s1"},
    ])
    queued = [m for m in of_type(records, Message) if m.type == "queue-operation"]
    assert [(m.uuid, m.subtype, m.role, m.text, m.content_type, m.is_meta, m.surface, m.timestamp, m.position.line_no)
            for m in queued] == [
        (f"s1:{queued[0].position.byte_offset}", "enqueue", "user", "and the logout one", "text", 1, "log-only",
         "2026-04-18T15:00:07.000Z", 2)]
    assert [(m.position.line_no, m.reason) for m in of_type(records, Merged)] == [
        (3, "metadata"), (4, "metadata"), (5, "metadata"), (6, "metadata"), (7, "metadata")]
    assert [t.title for t in of_type(records, TitleCandidate)] == ["Fix the login bug"]


def test_session_is_emitted_once_and_again_on_context_change():
    context = {"cwd": "/a", "gitBranch": "main", "version": "2.1.1"}
    records = feed_lines(
        [
            {"type": "permission-mode", "permissionMode": "default"},
            user("u1", "hi", **context),
            assistant("a1", "yo", **context),
            assistant("a2", "sub", isSidechain=True, cwd="/a/sub"),
            assistant("a3", "no context"),
            user("u2", "moved", **{**context, "cwd": "/b"}),
            user("u3", "upgraded", **{**context, "cwd": "/b", "version": "2.1.2"}),
        ],
        unit(session_id="s1", project="-a"),
    )
    sessions = of_type(records, Session)
    assert [(s.cwd, s.git_branch, s.version) for s in sessions] == [
        ("/a", "main", "2.1.1"),
        ("/b", "main", "2.1.1"),
        ("/b", "main", "2.1.2"),
    ]
    assert {(s.id, s.source, s.project, s.relationship) for s in sessions} == {("s1", "claude", "-a", None)}
    assert of_type(records, Message)[2].cwd == "/a/sub"


def test_lines_without_uuid_get_a_positional_id():
    records = feed_lines([{"type": "user", "message": {"role": "user", "content": "hi"}}])
    assert of_type(records, Message)[0].uuid == "s1:0"


def test_agent_progress_links_a_tool_call_to_its_agent():
    line = {
        "type": "progress",
        "uuid": "p1",
        "data": {"type": "agent_progress", "agentId": "a93ccab", "message": {"type": "user"}},
        "parentToolUseID": "toolu_1",
        "toolUseID": "agent_msg_1",
    }
    records = feed_lines([line])
    assert of_type(records, Subagent) == [
        Subagent("a93ccab", "s1", child_session_id="s1:agent-a93ccab", parent_tool_use_id="toolu_1")
    ]
    [message] = of_type(records, Message)
    assert (message.subtype, message.text, message.surface, message.is_meta) == ("agent_progress", "", "log-only", 1)


def test_agent_ids_are_membership_in_agent_files_and_references_in_trunks():
    trunk = user("u1", [tool_result("t1", "done")], agentId="e1c84ba5")
    inline = assistant("a1", "sub", isSidechain=True, agentId="b2")
    records = feed_lines([trunk, inline])
    assert [m.agent_id for m in of_type(records, Message)] == [None, "b2"]
    assert of_type(records, ToolResult)[0].agent_id == "e1c84ba5"
    flat = unit("subagent", "agent-e1c84ba5.jsonl", agent_id="e1c84ba5")
    records = feed_lines([{**trunk, "sessionId": "parent"}], flat)
    assert of_type(records, Message)[0].agent_id == "e1c84ba5"
    assert of_type(records, Message)[0].session_id == "parent:agent-e1c84ba5"
    assert of_type(records, ToolResult)[0].agent_id is None


def test_an_agent_file_is_known_by_its_lines_whatever_its_name():
    # A 2.0.x agent file renamed or copied beside the sessions: every line is
    # a sidechain line naming its agent and, in sessionId, its parent.
    def agent_line(uuid, content, **extra):
        return assistant(uuid, content, isSidechain=True, agentId="e1c84ba5", sessionId="parent", **extra)

    lines = [
        {"type": "file-history-snapshot", "messageId": "a1", "snapshot": {}},
        agent_line("a1", "looking", parentUuid=None, cwd="/p"),
        agent_line("a2", [{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"pattern": "x"}}], parentUuid="a1"),
        user("u1", [tool_result("t1", "found")], isSidechain=True, agentId="e1c84ba5", sessionId="parent"),
    ]
    expected = "parent:agent-e1c84ba5"
    for name in ("copy of agent.jsonl", "agent-e1c84ba5 (1).jsonl"):
        kind = "subagent" if name.startswith("agent-") else "session"
        hints = {"agent_id": "e1c84ba5 (1)"} if kind == "subagent" else {"session_id": name[: -len(".jsonl")]}
        renamed = unit(kind, name, project="-p", **hints)
        records = feed_lines(lines, renamed)
        [session] = of_type(records, Session)
        assert (session.id, session.parent_session_id, session.relationship, session.agent_id) == (
            expected, "parent", "subagent", "e1c84ba5"
        )
        assert of_type(records, Subagent) == [Subagent("e1c84ba5", "parent", child_session_id=expected)]
        assert [(m.session_id, m.agent_id) for m in of_type(records, Message)] == [(expected, "e1c84ba5")] * 3
        assert [c.session_id for c in of_type(records, ToolCall)] == [expected]
        assert [(r.session_id, r.agent_id) for r in of_type(records, ToolResult)] == [(expected, None)]
        # Resumed after any line, the parser still knows what the file is.
        items = [(orjson.dumps(obj), Position(n, 100 * n, 99)) for n, obj in enumerate(lines, 1)]
        for split in range(len(items) + 1):
            parser = SOURCE.open_parser(renamed, None)
            resumed = [r for data, position in items[:split] for r in parser.feed(data, position)]
            parser = SOURCE.open_parser(renamed, orjson.loads(orjson.dumps(parser.state())))
            resumed += [r for data, position in items[split:] for r in parser.feed(data, position)]
            assert of_type(resumed, Session) == of_type(records, Session), (name, split)
            assert of_type(resumed, Subagent) == of_type(records, Subagent)
            assert [m.session_id for m in of_type(resumed, Message)] == [expected] * 3


def test_a_session_file_stays_a_session():
    trunk = user("u1", [tool_result("t1", "done")], agentId="e1c84ba5", toolUseResult={"agentId": "e1c84ba5"})
    inline = user("u2", "inline 1.0 task", isSidechain=True)  # an inline sidechain names no agent
    for first in (trunk, inline):
        records = feed_lines([first, assistant("a1", "sub", isSidechain=True, agentId="b2")])
        assert {s.id for s in of_type(records, Session)} == {"s1"}
        assert {m.session_id for m in of_type(records, Message)} == {"s1"}
    # 2.1.x agents below a session keep the name their meta.json pairs with.
    nested = unit("subagent", "s1/subagents/agent-a1.jsonl", agent_id="a1", parent_session_id="s1")
    records = feed_lines([assistant("a1", "x", isSidechain=True, agentId="other", sessionId="s9")], nested)
    assert of_type(records, Session)[0].id == "s1:agent-a1"


def test_workflow_documents_journal_and_agents():
    hints = {"run_id": "wf_1", "parent_session_id": "s1", "project": "-p"}
    document = {
        "runId": "wf_1",
        "taskId": "task_1",
        "status": "completed",
        "workflowName": "docs-sweep",
        "timestamp": "2026-06-28T09:00:00.000Z",
        "durationMs": 2000,
        "totalTokens": 101,
        "script": "phase('Sweep')",
        "result": {"pages": 2},
        "workflowProgress": [
            {"type": "workflow_phase", "index": 1, "title": "Sweep"},
            {
                "type": "workflow_agent",
                "label": "sweep:a",
                "phaseTitle": "Sweep",
                "agentId": "w1",
                "model": "claude-sonnet-4-6",
                "state": "done",
                "tokens": 101,
                "toolCalls": 2,
                "durationMs": 900,
            },
        ],
    }
    data = orjson.dumps(document)
    parser = SOURCE.open_parser(unit("workflow", "s1/workflows/wf_1.json", "document", **hints), None)
    assert parser.document(data) == [
        Workflow(
            "wf_1",
            "s1",
            task_id="task_1",
            script="phase('Sweep')",
            result_json='{"pages":2}',
            timestamp="2026-06-28T09:00:00.000Z",
            agent_count=1,
            duration_ms=2000,
            total_tokens=101,
            status="completed",
            workflow_name="docs-sweep",
        ),
        WorkflowAgent(
            "w1", "wf_1", "s1", phase="Sweep", label="sweep:a", model="claude-sonnet-4-6",
            state="done", duration_ms=900, tokens=101, tool_calls=2,
        ),
        Merged(Position(1, 0, len(data)), "metadata"),
    ]
    run = "s1/subagents/workflows/wf_1/"
    journal = [
        {"type": "started", "key": "v2:k", "agentId": "w1"},
        {"type": "result", "key": "v2:k", "agentId": "w1", "result": "ok"},
        {"type": "workflow_ledger_entry"},
    ]
    records = feed_lines(journal, unit("workflow_journal", run + "journal.jsonl", **hints))
    assert of_type(records, WorkflowAgent) == [WorkflowAgent("w1", "wf_1", "s1")] * 2
    assert [(m.reason, m.detail) for m in of_type(records, Merged)] == [
        ("metadata", None), ("metadata", None), ("unknown-type", "workflow_ledger_entry")]
    agent = unit("workflow_agent", run + "agent-w1.jsonl", agent_id="w1", **hints)
    records = feed_lines([user("u1", "Sweep docs", isSidechain=True, sessionId="s1#agent-w1")], agent)
    [session] = of_type(records, Session)
    assert (session.id, session.parent_session_id, session.relationship) == ("s1:agent-w1", "s1", "workflow")
    assert of_type(records, WorkflowAgent) == [WorkflowAgent("w1", "wf_1", "s1")]
    meta = unit("subagent_meta", run + "agent-w1.meta.json", "document", agent_id="w1", **hints)
    [agent_type, _] = SOURCE.open_parser(meta, None).document(b'{"agentType": "workflow-subagent"}')
    assert agent_type == WorkflowAgent("w1", "wf_1", "s1", agent_type="workflow-subagent")


def test_malformed_documents_are_one_error():
    meta = unit("subagent_meta", "s1/subagents/agent-a1.meta.json", "document", agent_id="a1", parent_session_id="s1")
    for data in (b"{not json", b"[1, 2]", b"\xff\xfe"):
        [error] = SOURCE.open_parser(meta, None).document(data)
        assert isinstance(error, LineError) and error.position == Position(1, 0, len(data))


# Robustness


@pytest.mark.parametrize(
    "data",
    [
        b'{"type": "user", "uuid": ',
        b'"just a string"',
        b"42",
        b"[1]",
        b'{"type": "user", "text": "caf\xe9"}',
        b'{"type": "user", "uuid": "\\ud800", "bad": \\x}',
        b"[" * 5000 + b"]" * 5000,
    ],
    ids=["malformed", "string", "number", "array", "non-utf8", "lone-surrogate-and-bad-json", "deep-nesting"],
)
def test_bad_lines_are_exactly_one_error(data):
    records = feed_lines([data])
    assert len(records) == 1 and isinstance(records[0], LineError)


def test_an_escaped_lone_surrogate_is_read_as_a_replacement_character():
    # A JavaScript string cut inside an emoji: JSON.stringify writes the half it kept escaped.
    cut = b'{"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "fine \\ud83d"}}'
    low = b'{"type": "user", "uuid": "u2", "sessionId": "s1", "message": {"role": "user", "content": "\\ude00 and \\ud83d\\ude00"}}'
    messages = of_type(feed_lines([cut, low]), Message)
    assert [(m.uuid, m.text) for m in messages] == [("u1", "fine \ufffd"), ("u2", "\ufffd and \U0001f600")]
    # The rest of the line is read as orjson reads it: NaN, infinity and deep nesting refused,
    # an integer past 64 bits a float.
    for rest in (b'"n": NaN', b'"n": 1e400', b'"n": ' + b"[" * 5000 + b"]" * 5000):
        bad = b'{"type": "user", "uuid": "u3", "text": "\\ud83d", ' + rest + b'}'
        assert [type(r) for r in feed_lines([bad])] == [LineError]
    from datasette_obelisk.sources.lines import load_json
    assert load_json(b'{"t": "\\ud83d", "n": 123456789012345678901234, "m": 18446744073709551615}') == {
        "t": "\ufffd", "n": 1.2345678901234568e+23, "m": 18446744073709551615}


def test_an_escaped_nul_is_read_as_a_replacement_character():
    # SQLite's JSON functions end a text at a NUL: an id holding one was lost in json_each
    from datasette_obelisk.sources.lines import load_json
    line = b'{"type": "user", "uuid": "u\\u0000", "sessionId": "s1", "message": {"role": "user", "content": "a\\u0000b"}}'
    assert [(m.uuid, m.text) for m in of_type(feed_lines([line]), Message)] == [("u\ufffd", "a\ufffdb")]
    # (a key too, the text too; an escaped backslash before "u0000" is no NUL)
    for data in (b'{"k\\u0000": ["\\u0000\\u0000", "\\\\u0000", "\\\\\\u0000"]}',
                 '{"k\\u0000": ["\\u0000\\u0000", "\\\\u0000", "\\\\\\u0000"]}'):
        assert load_json(data) == {"k\ufffd": ["\ufffd\ufffd", "\\u0000", "\\\ufffd"]}


@pytest.mark.parametrize(
    "line, accounted",
    [
        ({"type": "brand-new-thing", "uuid": "n1", "content": "some text"}, Message),
        ({"type": "brand-new-thing", "whatever": [1, 2]}, Merged),
        ({"uuid": "n2"}, Message),
        ({"type": 7, "uuid": ["x"], "message": "oops"}, Merged),
        ({"type": "assistant", "uuid": "n3", "message": {"content": [None, 3, {"type": 1}, {"no": "type"}]}}, Message),
        ({"type": "attachment", "uuid": "n4", "attachment": {"type": "hook_success", "hookEvent": ["x"]}}, Message),
        ({"type": "attachment", "uuid": "n5", "attachment": {"type": ["task_status"]}}, Message),
        ({"type": "user", "uuid": "n6", "origin": {"kind": ["peer"]}, "forkedFrom": ["s"], "message": {"content": "hi"}}, Message),
    ],
)
def test_unknown_shapes_are_never_fatal(line, accounted):
    records = feed_lines([line])
    assert [type(r) for r in records if isinstance(r, (Message, Merged, LineError))] == [accounted]
    message = next(iter(of_type(records, Message)), None)
    if message and message.type not in ("user", "assistant"):
        assert (message.is_meta, message.surface) == (1, "log-only")


KEYS = [
    "type", "uuid", "parentUuid", "message", "content", "role", "isSidechain", "isMeta", "agentId",
    "toolUseResult", "data", "attachment", "subtype", "sessionId", "cwd", "gitBranch", "version",
    "isCompactSummary", "text", "tool_use_id", "is_error", "input", "name", "id", "usage", "source",
    "summary", "customTitle", "aiTitle", "leafUuid", "prompt", "toolDenialKind", "timestamp",
    "origin", "kind", "forkedFrom", "hookEvent", "hookName", "hookErrors", "stopReason", "deltaSummary",
    "messages", "response", "planContent", "status",
]
TYPES = ["user", "assistant", "system", "progress", "attachment", "summary", "custom-title",
         "ai-title", "tool_use", "tool_result", "text", "thinking", "image", "agent_progress",
         "queued_command", "away_summary", "Edit", "Skill", "hook_success", "task_status", "teammate_mailbox",
         "hook_stopped_continuation", "peer", "SessionStart"]
scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(TYPES) | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=12,
)
# Shaped like Claude lines so the fuzzing reaches content blocks, not just the envelope.
BLOCK_KEYS = ["text", "thinking", "content", "tool_use_id", "is_error", "input", "name", "id", "source"]
LINE_KEYS = ["isSidechain", "isMeta", "isCompactSummary", "agentId", "toolUseResult", "toolDenialKind",
             "data", "attachment", "subtype", "content", "cwd", "sessionId", "compactMetadata"]
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES)}, optional=dict.fromkeys(BLOCK_KEYS, json_values)
)
claude_lines = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES), "uuid": st.text(max_size=4)},
    optional={
        **dict.fromkeys(LINE_KEYS, json_values),
        "message": st.fixed_dictionaries(
            {}, optional={"content": st.lists(blocks, max_size=3) | json_values, "usage": json_values}
        ),
    },
)
any_lines = claude_lines | st.dictionaries(st.sampled_from(KEYS), json_values, max_size=8)


@settings(max_examples=100, deadline=None)
@given(st.lists(any_lines, min_size=1, max_size=4))
def test_fuzzed_lines_are_each_accounted_for_once(objects):
    for kind, name, hints in [
        ("session", "s1.jsonl", {"session_id": "s1"}),
        ("subagent", "agent-a1.jsonl", {"agent_id": "a1"}),
    ]:
        parser = SOURCE.open_parser(unit(kind, name, **hints), None)
        for line_no, obj in enumerate(objects, 1):
            records = parser.feed(orjson.dumps(obj), Position(line_no, 0, 1))
            accounted = [r for r in records if isinstance(r, (Message, Merged, LineError))]
            assert len(accounted) == 1 and not isinstance(accounted[0], LineError)
        orjson.dumps(parser.state())


# Discovery and registration


def make_tree(base):
    """A temp tree laid out like a real ~/.claude, with all three subagent eras."""
    project = base / "projects" / "-home-u-proj"
    files = [
        "s1.jsonl",  # main session
        "agent-8f3e2a1b.jsonl",  # 2.0.x flat agent
        "s1/subagents/agent-a93ccab.jsonl",  # 2.1.x agent
        "s1/subagents/agent-a93ccab.meta.json",
        "s1/subagents/agent-acompact-70d8e7.jsonl",
        "s1/subagents/workflows/wf_1/agent-w1.jsonl",
        "s1/subagents/workflows/wf_1/agent-w1.meta.json",
        "s1/subagents/workflows/wf_1/journal.jsonl",
        "s1/workflows/wf_1.json",
        "s1/tool-results/toolu_1.txt",  # a tool's output saved apart (2.x)
        "s1/tool-results/toolu_2.json",  # an MCP tool's content blocks
        "s1/tool-results/toolu_3.png",  # ignored from here on: an image, saved as it came
        "s1/tool-results/pdf-toolu_4/page-1.txt",
        # the log as it was before Claude Code pruned it to its last compaction (2.1.3xx)
        "s1/before-cleanup/1764583200000-0a1b2c3d.jsonl.replaced",
        "s1.jsonl.compact.tmp.0a1b2c3d",  # ignored: the pruned copy before it is renamed over the log
        "s1/before-cleanup/notes.txt",
        "s1/remote-agents/remote-agent-r1a2b3c4d.meta.json",  # ignored: a running cloud task's sidecar
        "sessions-index.json",
        "notes.txt",
        "s1/subagents/notes.jsonl",
        "s1/other/agent-x.jsonl",
    ]
    for name in files:
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")
    (base / "history.jsonl").write_text("{}\n")
    return project


def test_discovery_kinds_hints_and_priorities(tmp_path):
    project = make_tree(tmp_path / ".claude")
    units = list(SOURCE.discover(tmp_path / ".claude"))
    # The config dir's prompt log is read too, after the transcripts; a projects folder has none.
    assert [(u.path, u.kind, u.layout, u.priority) for u in units if u.kind == "prompt_log"] == [
        (tmp_path / ".claude" / "history.jsonl", "prompt_log", "jsonl", 4)]
    found = {
        str(u.path.relative_to(project)): (u.kind, u.layout, u.priority, u.hints)
        for u in units
        if u.source == "claude" and u.kind != "prompt_log"
    }
    p, s = {"project": "-home-u-proj"}, {"parent_session_id": "s1", "project": "-home-u-proj"}
    run = "s1/subagents/workflows/wf_1/"
    assert found == {
        "s1.jsonl": ("session", "jsonl", 0, {"session_id": "s1", **p}),
        "s1/before-cleanup/1764583200000-0a1b2c3d.jsonl.replaced": ("session", "jsonl", -1, {"session_id": "s1", **p}),
        "agent-8f3e2a1b.jsonl": ("subagent", "jsonl", 1, {"agent_id": "8f3e2a1b", **p}),
        "s1/subagents/agent-a93ccab.jsonl": ("subagent", "jsonl", 1, {"agent_id": "a93ccab", **s}),
        "s1/subagents/agent-a93ccab.meta.json": ("subagent_meta", "document", 2, {"agent_id": "a93ccab", **s}),
        "s1/subagents/agent-acompact-70d8e7.jsonl": ("subagent", "jsonl", 1, {"agent_id": "acompact-70d8e7", **s}),
        run + "agent-w1.jsonl": ("workflow_agent", "jsonl", 1, {"agent_id": "w1", "run_id": "wf_1", **s}),
        run + "agent-w1.meta.json": ("subagent_meta", "document", 2, {"agent_id": "w1", "run_id": "wf_1", **s}),
        run + "journal.jsonl": ("workflow_journal", "jsonl", 1, {"run_id": "wf_1", **s}),
        "s1/workflows/wf_1.json": ("workflow", "document", 2, {"run_id": "wf_1", **s}),
        "s1/tool-results/toolu_1.txt": ("tool_output", "text", 3, s),
        "s1/tool-results/toolu_2.json": ("tool_output", "text", 3, s),
    }
    # A projects-like folder given directly is read the same way.
    direct = {str(u.path.relative_to(project)) for u in SOURCE.discover(tmp_path / ".claude" / "projects")}
    assert direct == set(found)


def test_default_root(tmp_path):
    assert SOURCE.default_root({"HOME": str(tmp_path)}) is None
    (tmp_path / ".claude").mkdir()
    assert SOURCE.default_root({"HOME": str(tmp_path)}) == tmp_path / ".claude"
    config = tmp_path / "elsewhere"
    assert SOURCE.default_root({"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config)}) is None
    config.mkdir()
    assert SOURCE.default_root({"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config)}) == config


def test_registered_through_the_hookspec():
    source = get_sources()["claude"]
    assert isinstance(source, ClaudeCodeSource)
    assert (source.name, source.parser_version) == ("claude", 22)


def test_a_renamed_message_takes_its_lines_tool_calls_results_and_summary(tmp_path):
    import sqlite3

    from datasette_obelisk.store.ingest import ingest

    lines = [
        user("u1", "damaged"),
        assistant("a1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]),
        user("u1", "This session is being continued from a previous conversation", isCompactSummary=True),
        user("r1", [tool_result("t1", "one file")]),
        assistant("a1", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "false"}}]),
        user("r1", [tool_result("t2", "exit 1", is_error=True)]),
    ]
    data = [orjson.dumps(line) + b"\n" for line in lines]
    offsets = [sum(len(d) for d in data[:n]) for n in range(len(data))]
    folder = tmp_path / ".claude" / "projects" / "-p"
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").write_bytes(b"".join(data))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"}, sources={"claude": ClaudeCodeSource()})
    conn = sqlite3.connect(db)
    summary_uuid, call_uuid, result_uuid = (f"{u}@{offsets[n]}" for u, n in (("u1", 2), ("a1", 4), ("r1", 5)))
    assert conn.execute("SELECT uuid FROM messages ORDER BY seq").fetchall() == [
        ("u1",), ("a1",), (summary_uuid,), ("r1",), (call_uuid,), (result_uuid,)
    ]
    assert conn.execute("SELECT id, message_uuid FROM tool_calls ORDER BY id").fetchall() == [("t1", "a1"), ("t2", call_uuid)]
    assert conn.execute("SELECT tool_use_id, message_uuid, outcome FROM tool_results ORDER BY tool_use_id").fetchall() == [
        ("t1", "r1", "succeeded"), ("t2", result_uuid, "failed")
    ]
    assert conn.execute("SELECT id, message_uuid, source FROM summaries").fetchall() == [
        (summary_uuid, summary_uuid, "compaction")
    ]


def test_what_hooks_said_and_todo_lists_are_the_text_of_their_attachments():
    from datasette_obelisk.sources.claude_code import _attachment_text

    assert _attachment_text({"type": "hook_blocking_error", "hookName": "PreToolUse:Bash", "hookEvent": "PreToolUse",
                             "blockingError": {"blockingError": "rm -rf is not allowed", "command": "guard.sh"}}) == (
        "PreToolUse:Bash\nrm -rf is not allowed")
    assert _attachment_text({"type": "hook_non_blocking_error", "hookName": "Stop", "stderr": "lint failed",
                             "stdout": "", "exitCode": 1}) == "Stop\nlint failed"
    assert _attachment_text({"type": "todo_reminder", "itemCount": 2, "content": [
        {"content": "Write the parser", "status": "completed", "activeForm": "Writing the parser"},
        {"content": "Test it", "status": "in_progress"}, "not a todo"]}) == (
        "[completed] Write the parser\n[in_progress] Test it")
    assert _attachment_text({"type": "todo_reminder", "content": []}) == ""
    assert _attachment_text({"type": "hook_additional_context", "hookName": "SessionStart", "hookEvent": "SessionStart",
                             "content": ["clmail 6.0.10 session registered"]}) == "SessionStart\nclmail 6.0.10 session registered"
    assert _attachment_text({"type": "task_reminder", "itemCount": 2, "content": [
        {"id": "1", "subject": "Research plan mode", "description": "Write it up", "status": "completed"},
        {"id": "2", "subject": "Review", "status": "pending"}]}) == "[completed] Research plan mode: Write it up\n[pending] Review"
    assert _attachment_text({"type": "hook_success", "stdout": "ok"}) == ""
    assert _attachment_text({"type": "hook_success", "hookName": "SessionStart:startup", "hookEvent": "SessionStart",
                             "content": ""}) == ""  # (a name alone says nothing)
    assert _attachment_text({"type": "hook_success", "hookName": "SessionStart:startup", "hookEvent": "SessionStart",
                             "content": "branch main, 3 open issues"}) == "SessionStart:startup\nbranch main, 3 open issues"
    assert _attachment_text({"type": "hook_success", "hookName": "PostToolUse:Bash", "hookEvent": "PostToolUse",
                             "content": "formatted"}) == ""  # (its output never reached the model)


def test_what_hooks_tasks_plans_and_teammates_said_is_searchable():
    from datasette_obelisk.sources.claude_code import _attachment_text

    assert _attachment_text({"type": "task_status", "taskId": "a1", "taskType": "local_agent", "status": "failed",
                             "description": "Run schema migration",
                             "deltaSummary": "psql: FATAL password authentication failed"}) == (
        "[failed] Run schema migration\npsql: FATAL password authentication failed")
    assert _attachment_text({"type": "task_status", "status": "running", "description": "npm test",
                             "deltaSummary": None, "shell": {"command": "npm test -- --watch", "kind": "bash"}}) == (
        "[running] npm test\nnpm test -- --watch")
    assert _attachment_text({"type": "hook_stopped_continuation", "hookName": "PostToolUse:Bash",
                             "message": "Blocked by policy: migrations need DBA sign-off"}) == (
        "PostToolUse:Bash\nBlocked by policy: migrations need DBA sign-off")
    assert _attachment_text({"type": "async_hook_response", "hookName": "UserPromptSubmit", "stdout": "raw",
                             "response": {"systemMessage": "Ticket ABC-12 linked",
                                          "hookSpecificOutput": {"additionalContext": "ABC-12: fix login"}}}) == (
        "UserPromptSubmit\nTicket ABC-12 linked\nABC-12: fix login")
    assert _attachment_text({"type": "plan_file_reference", "planFilePath": "/p/plan.md",
                             "planContent": "1. Add retries"}) == "1. Add retries"
    assert _attachment_text({"type": "plugin_note", "plugin": "x", "content": ["first note", {"type": "text", "text": "second"}]}) == (
        "first note\nsecond")
    assert _attachment_text({"type": "teammate_mailbox", "messages": [{"from": "lead", "text": "Take the API"},
                                                                      {"text": "Then the docs"}, "junk"]}) == (
        "Take the API\nThen the docs")
    records = feed_lines([{"type": "system", "subtype": "stop_hook_summary", "uuid": "h1", "hookCount": 1,
                           "hookErrors": ["check.sh: lint failed"], "stopReason": "Lint must pass before stopping",
                           "preventedContinuation": True}])
    assert [m.text for m in of_type(records, Message)] == ["Lint must pass before stopping\ncheck.sh: lint failed"]


def test_what_another_sender_wrote_in_the_user_s_name_is_no_prompt():
    # 2.1.x stamps a user line's sender (``origin``): a teammate's or peer's message,
    # a plugin's, Claude Code's own continuation are not the user typing.
    records = feed_lines([
        user("p1", '<teammate-message teammate_id="team-lead">\nPlease fix the login bug\n</teammate-message>',
             origin={"kind": "peer", "from": "team-lead"}),
        user("p2", "continue", origin={"kind": "auto-continuation"}, parentUuid="p1"),
        user("p3", "Add retries", origin={"kind": "human"}, parentUuid="p2"),
        user("p4", "Also the docs", parentUuid="p3"),  # (no origin: before 2.1.x stamped one)
        {**queued("check CI", commandMode="prompt", isMeta=True), "uuid": "q1"},  # a scheduled wake-up
    ])
    assert [(m.uuid, m.role, m.is_meta) for m in of_type(records, Message)] == [
        ("p1", "user", 1), ("p2", "user", 1), ("p3", "user", 0), ("p4", "user", 0), ("q1", "user", 1)]
    assert [(t.kind, t.title) for t in of_type(records, TitleCandidate)] == [("first_prompt", "Add retries")]


def test_a_branched_session_names_the_session_it_was_copied_from():
    fork = {"sessionId": "orig-1", "messageUuid": "u2"}
    records = feed_lines([
        user("u1", "Plan the refactor", sessionId="s1", forkedFrom=fork, cwd="/w"),
        assistant("a1", [{"type": "text", "text": "Sure"}], sessionId="s1", forkedFrom=fork, parentUuid="u1"),
        user("u3", "Now the tests", sessionId="s1", parentUuid="a1"),
    ])
    assert [(s.id, s.parent_session_id, s.relationship) for s in of_type(records, Session)] == [("s1", "orig-1", "fork")]
    itself = feed_lines([user("u1", "Hi", forkedFrom={"sessionId": "s1", "messageUuid": "u0"})])
    assert [(s.parent_session_id, s.relationship) for s in of_type(itself, Session)] == [(None, None)]
    # The parser's state carries the parent to a later ingest of the same file.
    parser = SOURCE.open_parser(unit(session_id="s1"), None)
    parser.feed(orjson.dumps(user("u1", "Hi", forkedFrom=fork)), Position(1, 0, 10))
    resumed = SOURCE.open_parser(unit(session_id="s1"), parser.state())
    later = resumed.feed(orjson.dumps(user("u2", "Again", cwd="/elsewhere")), Position(2, 11, 10))
    assert [(s.parent_session_id, s.relationship, s.cwd) for s in of_type(later, Session)] == [("orig-1", "fork", "/elsewhere")]


def test_only_a_person_s_origin_makes_a_prompt():
    # 2.1.332 frames every origin but ``human`` as not the user's (an MCP channel,
    # a Slack mention, an injection of no known provenance, a voice call, a kind
    # it does not know): none is a prompt or titles the session; all stay searchable.
    records = feed_lines([
        user("c1", '<channel source="telegram" chat_id="42">\ndeploy it when green\n</channel>',
             origin={"kind": "channel", "server": "telegram"}),
        user("s1", "[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]\n@claude check the flaky test",
             origin={"kind": "slack-ping", "channelId": "C01", "threadTs": "1.0", "messageTs": "1.0"}, parentUuid="c1"),
        user("x1", "[MESSAGE FROM NON-USER SOURCE - NOT USER INPUT]\nrun the report", origin={"kind": "unclassified"},
             parentUuid="s1"),
        user("n1", "something new", origin={"kind": "a-kind-from-later"}, parentUuid="x1"),
        user("i1", [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                    {"type": "text", "text": "deploy it when green"}], origin={"kind": "channel"}, parentUuid="n1"),
        user("h1", "Fix the redirect loop", origin={"kind": "human"}, parentUuid="i1"),
        assistant("a1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}], parentUuid="h1"),
        # tool results carry the origin of the prompt they answer
        user("r1", [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}], origin={"kind": "channel"},
             parentUuid="a1"),
    ])
    assert [(m.uuid, m.role, m.is_meta) for m in of_type(records, Message)] == [
        ("c1", "user", 1), ("s1", "user", 1), ("x1", "user", 1), ("n1", "user", 1), ("i1", "user", 1),
        ("h1", "user", 0), ("a1", "assistant", 0), ("r1", "user", 0)]
    assert [(t.kind, t.title) for t in of_type(records, TitleCandidate)] == [("first_prompt", "Fix the redirect loop")]


def test_what_an_agent_team_s_member_sent_is_no_prompt_and_names_its_sender():
    # 2.1.332 delivers a team mailbox as a prompt written with no ``origin``: to a
    # member in ``<teammate-message>`` envelopes (its first line is the lead's
    # instructions), to the lead framed as another session's message.
    frame = ("This came from another Claude session \u2014 not typed by your user, but very likely working on"
             " their behalf. After completing your current task, decide whether/how to respond.")
    member = feed_lines([
        user("m1", '<teammate-message teammate_id="team-lead" summary="Write tests">\nWrite tests for auth.py\n'
                   '</teammate-message>'),
        assistant("m2", [{"type": "text", "text": "On it"}], parentUuid="m1"),
        user("m3", "Skip the slow ones", origin={"kind": "human"}, parentUuid="m2"),  # the user, in its pane
    ])
    assert [(m.uuid, m.is_meta, m.meta) for m in of_type(member, Message)] == [
        ("m1", 1, {"from": "team-lead"}), ("m2", 0, None), ("m3", 0, None)]
    assert [(t.kind, t.title) for t in of_type(member, TitleCandidate)] == [("first_prompt", "Skip the slow ones")]
    lead = feed_lines([
        user("l1", "Fix the login bug with a team", origin={"kind": "human"}),
        user("l2", 'Another Claude session sent a message:\n<teammate-message teammate_id="researcher" color="blue"'
                   ' summary="Found it">\nauth.py line 42\n</teammate-message>\n<teammate-message teammate_id="tester">'
                   '\nTests pass\n</teammate-message>\n' + frame, parentUuid="l1"),
        user("l3", 'Quote: <teammate-message teammate_id="x">', parentUuid="l2"),  # typed by the user
    ])
    assert [(m.uuid, m.is_meta, m.meta) for m in of_type(lead, Message)] == [
        ("l1", 0, None), ("l2", 1, {"from": ["researcher", "tester"]}), ("l3", 0, None)]


def test_an_agent_s_given_name_and_its_team_describe_its_session():
    # 2.1.332 keeps an Agent call's ``name`` in the agent's .meta.json, with the team
    # of an in-process member of an agent team; a member running in a pane of its own
    # writes its own session, every line naming it (``agentName``) and its team.
    agent = "aresearcher-0123456789abcdef"
    child = f"s1:agent-{agent}"
    meta = unit("subagent_meta", f"s1/subagents/agent-{agent}.meta.json", "document",
                agent_id=agent, parent_session_id="s1", project="-p")
    data = orjson.dumps({"agentType": "general-purpose", "isBuiltIn": True, "description": "Investigate login",
                         "name": "researcher", "spawnDepth": 1, "taskKind": "in_process_teammate",
                         "teamName": "alpha", "color": "blue", "planModeRequired": False})
    records = SOURCE.open_parser(meta, None).document(data)
    assert of_type(records, Session) == [Session(child, "claude", project="-p", parent_session_id="s1",
                                                 relationship="subagent", agent_id=agent, agent_name="researcher",
                                                 team_name="alpha")]
    assert of_type(records, TitleCandidate) == [TitleCandidate(child, "name", "researcher")]
    unnamed = SOURCE.open_parser(meta, None).document(b'{"agentType": "Explore", "description": "Audit DB"}')
    assert of_type(unnamed, Session) == of_type(unnamed, TitleCandidate) == []
    team = {"agentName": "tester", "teamName": "alpha"}
    lines = [
        user("p1", '<teammate-message teammate_id="team-lead">\nWrite tests\n</teammate-message>',
             timestamp="2026-11-25T10:02:00.000Z", cwd="/w", **team),
        assistant("p2", [{"type": "text", "text": "On it"}], parentUuid="p1", cwd="/w", **team),
        assistant("p3", [{"type": "text", "text": "Done"}], parentUuid="p2", cwd="/w/sub", **team),
        # an agent it started writes its lines here with no team (<= 1.0.x inline)
        user("q1", "Look around", isSidechain=True, parentUuid=None, cwd="/w"),
    ]
    records = feed_lines(lines)
    assert [(s.cwd, s.agent_name, s.team_name) for s in of_type(records, Session)] == [
        ("/w", "tester", "alpha"), ("/w/sub", "tester", "alpha")]
    assert [(t.kind, t.title, t.timestamp) for t in of_type(records, TitleCandidate)] == [
        ("name", "tester", "2026-11-25T10:02:00.000Z")]
    # The parser's state carries them to a later ingest of the same file.
    parser = SOURCE.open_parser(unit(session_id="s1"), None)
    parser.feed(orjson.dumps(lines[0]), Position(1, 0, 10))
    later = SOURCE.open_parser(unit(session_id="s1"), parser.state()).feed(orjson.dumps(lines[2]), Position(3, 22, 10))
    assert [(s.agent_name, s.team_name) for s in of_type(later, Session)] == [("tester", "alpha")]
    assert of_type(later, TitleCandidate) == []


def test_a_voice_call_note_is_said_in_the_session_but_is_no_prompt():
    # 2.1.332 stores a voice call's note as a system line (so no older build sends
    # it to a model) and reads it back as a user line of origin ``voice-call``.
    note = {"type": "system", "subtype": "voice_call_talk", "level": "info", "isMeta": True, "msgV": 1,
            "uuid": "v1", "parentUuid": "u1", "timestamp": "2026-11-25T10:03:30.000Z",
            "content": "[TALK FROM A VOICE CALL - NOT USER INPUT]\nwe saw 502s on payments",
            "origin": {"kind": "voice-call", "requestUuid": "9b0c2f7e-1d4a-4c57-9b5e-5a0f3e1c2d3b"}}
    records = feed_lines([user("u1", "Fix the redirect loop"), note])
    voice = of_type(records, Message)[1]
    assert (voice.type, voice.subtype, voice.role, voice.is_meta, voice.surface, voice.content_type) == (
        "system", "voice_call_talk", "user", 1, None, "text")
    assert voice.text.endswith("we saw 502s on payments")
    assert [t.title for t in of_type(records, TitleCandidate)] == ["Fix the redirect loop"]


def test_agent_name_tag_and_continued_in_describe_the_session():
    records = feed_lines([
        user("u1", "Fix the redirect loop"),
        {"type": "custom-title", "customTitle": "login loop", "sessionId": "s1"},
        {"type": "agent-name", "agentName": "login-loop", "sessionId": "s1"},
        {"type": "tag", "tag": "auth", "sessionId": "s1"},
        # the Agent SDK's session store writes them with a uuid and a timestamp
        {"type": "custom-title", "customTitle": "From the SDK", "sessionId": "s1", "uuid": "t1",
         "timestamp": "2026-11-25T10:05:00.000Z"},
        {"type": "tag", "tag": "", "sessionId": "s1", "uuid": "t2", "timestamp": "2026-11-25T10:05:01.000Z"},
        {"type": "worktree-state", "sessionId": "s1", "worktreeSession": {"worktreePath": "/w/.claude/worktrees/x"}},
        {"type": "continued-in", "timestamp": "2026-11-25T10:06:00.000Z", "sessionId": "s1",
         "continuedInSessionId": "s2"},
    ])
    assert [m.uuid for m in of_type(records, Message)] == ["u1"]
    assert len(of_type(records, Merged)) == 7
    assert [(t.kind, t.title) for t in of_type(records, TitleCandidate)] == [
        ("first_prompt", "Fix the redirect loop"), ("custom", "login loop"), ("name", "login-loop"),
        ("custom", "From the SDK")]
    described = [(s.id, s.tag, s.continued_in) for s in of_type(records, Session) if s.tag is not None or s.continued_in]
    assert described == [("s1", "auth", None), ("s1", "", None), ("s1", None, "s2")]


def test_a_line_about_the_session_says_when_it_went_on_to():
    # Lines that are no message but carry a time: a prompt queued while the agent was busy (then
    # taken, or the session left with it waiting), a pull request or a preview linked. Lines that are
    # messages (a turn's duration, an attachment) give their rows' times; lines with no time say nothing.
    records = feed_lines([
        user("u1", "Fix the login bug", timestamp="2026-04-18T15:00:00.000Z"),
        assistant("a1", "On it", parentUuid="u1", timestamp="2026-04-18T15:00:05.000Z"),
        {"type": "system", "subtype": "turn_duration", "durationMs": 5000, "uuid": "d1", "parentUuid": "a1",
         "sessionId": "s1", "timestamp": "2026-04-18T15:00:05.100Z"},
        {"type": "queue-operation", "operation": "enqueue", "content": "and the logout one",
         "sessionId": "s1", "timestamp": "2026-04-18T15:00:07.000Z"},
        {"type": "pr-link", "sessionId": "s1", "prNumber": 7, "prUrl": "https://example.invalid/o/r/pull/7",
         "prRepository": "o/r", "timestamp": "2026-04-18T15:00:09.000Z"},
        {"type": "last-prompt", "lastPrompt": "and the logout one", "sessionId": "s1"},
        {"type": "queue-operation", "operation": "remove", "sessionId": "s1", "timestamp": "[trimmed for fixture]"},
    ])
    # (the prompt queued is a message of its own, named by its offset: its line's time is its row's)
    assert [m.uuid for m in of_type(records, Message)] == ["u1", "a1", "d1", "s1:427"]
    assert [(s.id, s.ended_at) for s in of_type(records, Session) if s.ended_at] == [
        ("s1", "2026-04-18T15:00:07.000Z"), ("s1", "2026-04-18T15:00:09.000Z"),
        ("s1", "[trimmed for fixture]")]  # (the store keeps only times)


def test_a_file_history_snapshot_says_when_its_backups_were_taken():
    # The line has no time of its own: its snapshot's is when the files were backed up for a
    # prompt (2.1.114: a few milliseconds after the prompt's line, which may be the session's
    # last). An update keeps the time of the snapshot it updates; a snapshot with no time, or
    # with none that is text, says nothing.
    records = feed_lines([
        user("u1", "/exit", timestamp="2026-04-18T15:09:30.093Z"),
        {"type": "file-history-snapshot", "messageId": "u1", "isSnapshotUpdate": False,
         "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": "2026-04-18T15:09:30.096Z"}},
        {"type": "file-history-snapshot", "messageId": "u1", "isSnapshotUpdate": True,
         "snapshot": {"messageId": "u1", "trackedFileBackups": {"a.py": {}}, "timestamp": "2026-04-18T15:09:30.096Z"}},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"messageId": "u1", "trackedFileBackups": {}}},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"timestamp": 1776525000000}},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": "2026-04-18T15:10:00.000Z"},
    ])
    assert [m.uuid for m in of_type(records, Message)] == ["u1"]
    assert len(of_type(records, Merged)) == 5
    assert [(s.id, s.ended_at) for s in of_type(records, Session) if s.ended_at] == [
        ("s1", "2026-04-18T15:09:30.096Z"), ("s1", "2026-04-18T15:09:30.096Z")]


def cost_state(usd, added, removed, **extra):
    """A 2.1.332 ``cost-state`` line: the session's totals so far."""
    return {"type": "cost-state", "sessionId": "s1", "totalCostUSD": usd, "totalAPIDuration": 61234,
            "totalAPIDurationWithoutRetries": 60000, "totalToolDuration": 5000, "totalLinesAdded": added,
            "totalLinesRemoved": removed, "totalDuration": 300000, "startTime": 1764064800000,
            "modelUsage": {"claude-opus-4-5": {"inputTokens": 10, "outputTokens": 200, "cacheReadInputTokens": 3000,
                                               "cacheCreationInputTokens": 400, "webSearchRequests": 0, "costUSD": usd}},
            "hasUnknownModelCost": False, **extra}


WORKTREE = {"originalCwd": "/w", "preEnterOriginalCwd": "/w", "worktreePath": "/w/.claude/worktrees/fix-login",
            "worktreeName": "fix-login", "worktreeBranch": "worktree-fix-login", "originalBranch": "main",
            "originalHeadCommit": "0123456789abcdef0123456789abcdef01234567", "sessionId": "s1", "hookBased": False,
            "enteredExisting": False}


def test_the_cost_folder_worktree_and_end_claude_code_reported_describe_the_session():
    # 2.1.332 writes these to the main session's log: the totals so far when a process
    # leaves the session (a resume restores them from the last, so each line holds the
    # session's, not what one process added), the folder it moved the log to, the
    # worktree it entered (null once it left) and that the model ended it.
    records = feed_lines([
        user("u1", "Fix the login bug", cwd="/w"),
        {"type": "worktree-state", "worktreeSession": WORKTREE, "sessionId": "s1"},
        {"type": "relocated", "sessionId": "s1", "relocatedCwd": "/w/.claude/worktrees/fix-login"},
        cost_state(0.4213, 12, 3),
        {"type": "worktree-state", "worktreeSession": None, "sessionId": "s1"},  # left it: it still worked there
        {"type": "relocated", "sessionId": "s1", "relocatedCwd": "/w"},
        {"type": "ended-by-model", "timestamp": "2026-11-25T11:00:05.000Z", "sessionId": "s1"},
        cost_state(1.84, 214, 61),
        # what Claude Code refuses to read back: no figure, a negative one, a string, beyond its bounds
        {"type": "cost-state", "sessionId": "s1", "totalCostUSD": 2.5},
        cost_state(-1, 5, 5), cost_state("2.5", 5, 5), cost_state(2e9, 5, 5), cost_state(2.5, True, 5),
        {"type": "relocated", "sessionId": "s1", "relocatedCwd": ""},
        # the Agent SDK's session store gives such lines a uuid: still no message
        {"type": "ended-by-model", "sessionId": "s1", "uuid": "e1", "timestamp": "2026-11-25T11:00:06.000Z"},
    ])
    assert [m.uuid for m in of_type(records, Message)] == ["u1"]
    assert len(of_type(records, Merged)) == 14
    assert of_type(records, Session)[1:] == [
        Session("s1", "claude", worktree_path="/w/.claude/worktrees/fix-login", worktree_branch="worktree-fix-login",
                worktree_base_branch="main"),
        Session("s1", "claude", relocated_cwd="/w/.claude/worktrees/fix-login"),
        Session("s1", "claude", cost_usd=0.4213, lines_added=12, lines_removed=3),
        Session("s1", "claude", relocated_cwd="/w"),
        # (a line's time says the session went on to then: its end is no earlier)
        Session("s1", "claude", ended_by_model=1, ended_at="2026-11-25T11:00:05.000Z"),
        Session("s1", "claude", cost_usd=1.84, lines_added=214, lines_removed=61),
        Session("s1", "claude", ended_by_model=1, ended_at="2026-11-25T11:00:06.000Z"),
    ]
    # A cost of no cents is a number all the same; a hook's worktree names no branch.
    hooked = {"worktreePath": "/w/wt", "worktreeName": "wt", "hookBased": True, "sessionId": "s1"}
    records = feed_lines([cost_state(0, 0, 0), {"type": "worktree-state", "worktreeSession": hooked, "sessionId": "s1"}])
    assert of_type(records, Session) == [Session("s1", "claude", cost_usd=0.0, lines_added=0, lines_removed=0),
                                         Session("s1", "claude", worktree_path="/w/wt")]
    assert isinstance(of_type(records, Session)[0].cost_usd, float)
    # An agent's log holds none of them (Claude Code writes them to its session's).
    agent = unit(kind="subagent", name="s1/subagents/agent-a1.jsonl", agent_id="a1", parent_session_id="s1")
    assert of_type(feed_lines([cost_state(1.0, 1, 1), {"type": "ended-by-model", "sessionId": "s1"}], agent),
                   Session) == []


def test_a_forked_agent_s_first_line_says_what_it_was_forked_with():
    agent = unit(kind="subagent", name="s1/subagents/agent-af1.jsonl", agent_id="af1", parent_session_id="s1")
    records = feed_lines([
        {"type": "fork-context-ref", "agentId": "af1", "parentSessionId": "s1", "parentLastUuid": "a9",
         "contextLength": 12},
        user("f1", "Check the cookie path", isSidechain=True, agentId="af1"),
        assistant("f2", [{"type": "text", "text": "It is wrong."}], isSidechain=True, agentId="af1", parentUuid="f1"),
    ], agent)
    first, second = of_type(records, Message)
    assert first.meta == {"fork_context": {"parentSessionId": "s1", "parentLastUuid": "a9", "contextLength": 12}}
    assert second.meta is None


def test_the_lines_after_a_prompt_stored_anew_are_its_own():
    # 2.1.332 stores a prompt a client sent again after a compaction cut its
    # turn off under a fresh uuid (``sentAsUuid``: the one it was sent as) and
    # goes on naming that one: those lines answer the copy, not the compacted first.
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
                "logicalParentUuid": "a1", "content": "Conversation compacted"}
    lines = [
        user("u1", "do X"),
        assistant("a1", [{"type": "text", "text": "working"}], parentUuid="u1"),
        boundary,
        user("s1", "This session is being continued from a previous conversation.", parentUuid="b1",
             isCompactSummary=True),
        user("u1copy", "do X", parentUuid="s1", sentAsUuid="u1"),
        assistant("a3", [{"type": "text", "text": "done"}], parentUuid="u1"),
        {**boundary, "uuid": "b2", "logicalParentUuid": "u1"},  # compacted again right after the copy
        user("t1", "side", isSidechain=True, sentAsUuid="a3"),  # (an agent's line is never stored anew)
        assistant("a4", [{"type": "text", "text": "more"}], parentUuid="a3"),
    ]
    links = [(m.uuid, m.parent_uuid, m.logical_parent_uuid) for m in of_type(feed_lines(lines), Message)]
    assert links == [
        ("u1", None, None), ("a1", "u1", None), ("b1", None, "a1"), ("s1", "b1", None), ("u1copy", "s1", None),
        ("a3", "u1copy", None), ("b2", None, "u1copy"), ("t1", None, None), ("a4", "a3", None),
    ]
    # The copy may be read in one ingest and what answers it in the next.
    for split in range(len(lines) + 1):
        first = SOURCE.open_parser(unit(session_id="s1"), None)
        records = [r for n, obj in enumerate(lines[:split]) for r in first.feed(orjson.dumps(obj), Position(n + 1, n, 1))]
        state = orjson.loads(orjson.dumps(first.state()))
        second = SOURCE.open_parser(unit(session_id="s1"), state)
        records += [r for n, obj in enumerate(lines[split:], split) for r in second.feed(orjson.dumps(obj), Position(n + 1, n, 1))]
        assert [(m.uuid, m.parent_uuid, m.logical_parent_uuid) for m in of_type(records, Message)] == links, split


# A tool's output saved apart (2.x): the log's note and the file


def saved_note(path):
    """The note Claude Code 2.1.332 logs in place of an output it saved (``xe``)."""
    return (f"<persisted-output>\nOutput too large (96.6KB). Full output saved to: {path}\n\n"
            "Preview (first 2KB):\nline 1\nline 2\n...\n</persisted-output>")


@pytest.mark.parametrize("content, uuid", [
    (saved_note("/home/u/.claude/projects/-w/s1/tool-results/toolu_01A.txt"), "s1:tool-results/toolu_01A.txt"),
    ([{"type": "text", "text": saved_note("/h/.claude/projects/-w/s1/tool-results/toolu_01A.json")}],
     "s1:tool-results/toolu_01A.json"),
    # An agent's output is saved in its root session's folder; a Windows path; one cut at the limit.
    (saved_note(r"C:\Users\u\.claude\projects\C--w\root\tool-results\toolu_01A.txt"), "root:tool-results/toolu_01A.txt"),
    ("<persisted-output>\nOutput exceeded the 1.0GB persist limit; only the first 1.0GB were saved to: "
     "/h/p/s1/tool-results/toolu_01A.txt\n\nPreview (first 2KB):\nx\n</persisted-output>", "s1:tool-results/toolu_01A.txt"),
    # Not a note of Claude Code's: an output quoting one, a path elsewhere, no path.
    ("cat notes.md\n" + saved_note("/h/p/s1/tool-results/toolu_01A.txt"), None),
    (saved_note("/tmp/out.txt"), None),
    ("<persisted-output>\nOutput too large.\n</persisted-output>", None),
])
def test_a_result_names_the_message_holding_its_output_saved_apart(content, uuid):
    records = feed_lines([user("u1", [tool_result("toolu_01A", content)])])
    [result] = of_type(records, ToolResult)
    assert result.output_uuid == uuid
    assert of_type(records, Message)[0].text == (content if isinstance(content, str) else content[0]["text"])


def saved_records(name, data, size=None, left=0):
    unit_ = unit(kind="tool_output", name=f"s1/tool-results/{name}", layout="text",
                 parent_session_id="s1", project="-p")
    return SOURCE.open_parser(unit_, None).text(data, len(data) if size is None else size, left)


def test_an_output_saved_apart_is_a_message_of_its_session():
    whole = "step 1: ok\nstep 2: ok — done\n"
    assert saved_records("toolu_01A.txt", whole.encode()) == [
        Session("s1", "claude", project="-p"),
        Message(uuid="s1:tool-results/toolu_01A.txt", session_id="s1", source="claude", type="tool_output",
                position=Position(1, 0, len(whole.encode())), text=whole, content_type="tool_result",
                surface="log-only", meta={"tool_use_id": "toolu_01A", "bytes": len(whole.encode())}),
    ]
    # Content blocks are their text, as in a result; a name Claude Code escaped is its tool use id.
    blocks = orjson.dumps([{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
                          option=orjson.OPT_INDENT_2)
    [message] = of_type(saved_records("mcp%2Fcall.json", blocks), Message)
    assert (message.uuid, message.text, message.meta["tool_use_id"]) == ("s1:tool-results/mcp%2Fcall.json",
                                                                          "first\nsecond", "mcp/call")
    # What is not JSON is kept as it is.
    assert of_type(saved_records("toolu_01B.json", b"[not json"), Message)[0].text == "[not json"
    # Held only in part (over the reader's limit): the length of the whole, as it was counted.
    [message] = of_type(saved_records("toolu_01C.txt", b"abc", size=10_000, left=9_997), Message)
    assert (message.text, message.meta) == ("abc", {"tool_use_id": "toolu_01C", "bytes": 10_000, "length": 10_000})
    # Empty (caught as it was made): nothing yet.
    assert saved_records("toolu_01D.txt", b"") == [Merged(Position(1, 0, 0), "empty")]


def test_the_lines_2_1_334_adds_are_read_without_error():
    # Claude Code 2.1.333/2.1.334 (platform builds) add a ``denial-counts`` line (auto
    # mode's refusals so far, in the main session's log), attachments that carry
    # instructions (``plugin_rules``, ``projects_instructions``) or a plugin's answer
    # for an earlier attachment (``attachment_answer``), and ``textRewritten`` on an
    # attachment a plugin rewrote: what the person queued stays the queued prompt.
    def attachment(uuid, parent, body, **extra):
        return {"type": "attachment", "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                "version": "2.1.334", "attachment": body, **extra}

    records = feed_lines([
        user("u1", "Fix the login bug", origin={"kind": "human"}, version="2.1.334"),
        {"type": "denial-counts", "sessionId": "s1", "consecutive": 2, "total": 5},
        attachment("r1", "u1", {"type": "plugin_rules", "names": ["fmt@acme"], "rules": ["Run gofmt"]}),
        attachment("p1", "r1", {"type": "projects_instructions", "blocks": ["Use tabs"], "changed": False}),
        attachment("q1", "p1", {"type": "queued_command", "prompt": "also check logout", "origin": {"kind": "human"}},
                   textRewritten={"by": "prompt.attachment", "askedOf": ["acme"],
                                  "rendered": [{"content": "also check logout (AUTH-12)"}]}),
        attachment("n1", "q1", {"type": "attachment_answer", "rowUuid": "q1", "row": {"type": "queued_command"},
                                "rendered": [{"content": "also check logout (AUTH-12)"}], "askedOf": ["acme"]}),
    ])
    assert of_type(records, LineError) == []
    assert [(m.uuid, m.subtype, m.parent_uuid, m.content_type, m.is_meta, m.text)
            for m in of_type(records, Message)] == [
        ("u1", None, None, "text", 0, "Fix the login bug"),
        ("r1", "plugin_rules", "u1", "attachment", 1, ""),
        ("p1", "projects_instructions", "r1", "attachment", 1, ""),
        ("q1", "queued_command", "p1", "text", 0, "also check logout"),
        ("n1", "attachment_answer", "q1", "attachment", 1, ""),
    ]
    assert [(m.position.line_no, m.reason) for m in of_type(records, Merged)] == [(2, "metadata")]


def test_an_agent_s_figures_under_the_names_2_1_3xx_gives_them():
    # Claude Code 2.1.3xx (2.1.332, 2.1.334) counts an agent's tokens as
    # ``subagent_tokens``: tagged in a task notification's <usage>, and as a line of
    # an agent result's footer, which names the worktree the agent ran in (if it did)
    # between its agentId line and its <usage>.
    tagged = ("<task-notification>\n<task-id>a53e5</task-id>\n<tool-use-id>t1</tool-use-id>\n<status>completed</status>\n"
              "<summary>Agent \"Catalog API\" finished</summary>\n<result>Four endpoints.</result>\n"
              "<usage><subagent_tokens>153883</subagent_tokens><tool_uses>29</tool_uses>"
              "<duration_ms>249552</duration_ms></usage>\n</task-notification>")
    records = feed_lines([launched("a53e5"), user("u1", tagged)])
    assert totals(records) == [("a53e5", 249552, 153883)]
    records = feed_lines([launched("aqq2"), queued(tagged.replace("a53e5", "aqq2"), commandMode="task-notification")])
    assert totals(records) == [("aqq2", 249552, 153883)]

    usage = "<usage>subagent_tokens: 62189\ntool_uses: 12\nduration_ms: 96159</usage>"
    plain = "agentId: ab3 (use SendMessage with to: 'ab3', summary: '<5-10 word recap>' to continue this agent)\n" + usage
    in_worktree = ("agentId: ab4 (use SendMessage with to: 'ab4', summary: '<5-10 word recap>' to continue this agent)\n"
                   "worktreePath: /w/.claude/worktrees/agent-ab4\nworktreeBranch: worktree-agent-ab4\n" + usage)
    unit_ = unit("subagent", "agent-ab1.jsonl", parent_session_id="cc1", agent_id="ab1")

    def call(id_):
        return assistant(f"a-{id_}", [{"type": "tool_use", "id": id_, "name": "Agent", "input": {"prompt": "Dig"}}],
                         isSidechain=True)

    records = feed_lines([
        call("toolu_p"), user("r1", [tool_result("toolu_p", [{"type": "text", "text": "Login and logout."},
                                                             {"type": "text", "text": plain}])], isSidechain=True),
        call("toolu_w"), user("r2", [tool_result("toolu_w", "Login and logout.\n" + in_worktree)], isSidechain=True),
    ], unit_)
    results = {r.tool_use_id: (r.agent_id, r.agent_duration_ms, r.agent_tokens) for r in of_type(records, ToolResult)}
    assert results == {"toolu_p": ("ab3", 96159, 62189), "toolu_w": ("ab4", 96159, 62189)}
    assert [(a.agent_id, a.parent_tool_use_id, a.duration_ms, a.total_tokens) for a in of_type(records, Subagent)
            if a.parent_tool_use_id] == [("ab3", "toolu_p", 96159, 62189), ("ab4", "toolu_w", 96159, 62189)]
