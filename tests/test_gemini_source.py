"""Parser-level tests of the Gemini CLI source (no database).

Expected counts were derived by reading the corpus files by hand.
"""

import base64
import io
import json
from collections import Counter
from pathlib import Path

import orjson
import pytest

from datasette_obelisk.records import (
    LineError,
    Merged,
    Message,
    Position,
    Session,
    Subagent,
    Summary,
    TitleCandidate,
    ToolCall,
    ToolResult,
)
from datasette_obelisk.sources import gemini
from datasette_obelisk.sources.base import SourceFile
from datasette_obelisk.sources.gemini import GeminiSource, chat_unit
from datasette_obelisk.sources.lines import read_lines

CORPUS = Path(__file__).parent.parent.parent / "shared" / "corpus"
GEMINI = CORPUS / "gemini"
ACCOUNTING = (Message, Merged, LineError)
JSONL = "jazzyalex__agent-sessions/jsonl_v040.jsonl"
LEGACY = "jazzyalex__agent-sessions/small.json"
PROMPT_LOG = "kvsankar__agent-history/gemini_logs.json"


def corpus_file(relative: str) -> Path:
    path = GEMINI / relative
    if not path.exists():
        pytest.skip(f"shared corpus not found at {GEMINI} (expected next to the repository)")
    return path


def chat(name="session-2026-04-29T21-39-abcdef12.jsonl", **hints) -> SourceFile:
    layout = "document" if name.endswith(".json") else "jsonl"
    return SourceFile(Path("/x/tmp/hash/chats") / name, "gemini", kind="chat", layout=layout, hints=hints)


def feed_all(data: bytes, unit=None, *, restore_every_line=False) -> list:
    unit = unit or chat()
    parser = GeminiSource().open_parser(unit, None)
    records = []
    for line in read_lines(io.BytesIO(data)):
        if not line.data.strip():
            continue
        out = list(parser.feed(line.data, line.position))
        # a message's tool results are rows of their own; a history $set stores every message it adds
        accounted = sum(isinstance(r, ACCOUNTING) for r in out) - sum(
            isinstance(r, Message) and r.content_type == "tool_result" and r.type == "tool_result" for r in out
        )
        assert accounted == 1 or line.data.startswith(HISTORY_SYNC) and accounted > 1, (line.position, out)
        records.extend(out)
        if restore_every_line:
            parser = GeminiSource().open_parser(unit, json.loads(json.dumps(parser.state())))
    return records


def jsonl(*records) -> bytes:
    return b"\n".join(orjson.dumps(r) for r in records) + b"\n"


def of(records, kind) -> list:
    return [r for r in records if isinstance(r, kind)]


HISTORY_SYNC = b'{"$set":{"messages":'
META = {"sessionId": "s-1", "projectHash": "abc", "startTime": "2026-04-29T21:39:22.319Z", "kind": "main"}


def test_jsonl_chat_counts():
    records = feed_all(corpus_file(JSONL).read_bytes())
    assert len(of(records, Message)) == 4
    assert Counter(r.reason for r in of(records, Merged)) == {"metadata": 2}
    assert not of(records, LineError)
    session = of(records, Session)[0]
    assert (session.id, session.started_at) == ("gemini:gemini_stage0_jsonl", "2026-04-29T21:39:22.319Z")
    messages = of(records, Message)
    assert [(m.uuid, m.role, m.content_type) for m in messages] == [
        ("gemini:gemini_stage0_jsonl:g-user-1", "user", "text"),
        ("gemini:gemini_stage0_jsonl:g-assistant-1", "assistant", "tool_use"),
        ("gemini:gemini_stage0_jsonl:g-assistant-1:result:run_shell_command_stage0", "user", "tool_result"),
        ("gemini:gemini_stage0_jsonl:g-assistant-2", "assistant", "text"),
    ]
    assert [(m.input_tokens, m.cache_read_tokens, m.output_tokens) for m in messages] == [
        (None, None, None), (11855, 0, 81), (None, None, None), (567, 11502, 147),
    ]
    assert messages[1].model == "gemini-3-flash-preview"
    call, result = of(records, ToolCall)[0], of(records, ToolResult)[0]
    assert (call.id, call.name, json.loads(call.input_json)["command"]) == (
        "gemini:gemini_stage0_jsonl:run_shell_command_stage0", "run_shell_command", "ls -F",
    )
    assert (result.tool_use_id, result.outcome) == (call.id, "succeeded")
    assert result.content == "Output: AgentSessions/\nREADME.md\nProcess Group PGID: 12345"
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [("first_prompt", "Say hello and list files.")]


def test_legacy_json_chat_document():
    path = corpus_file(LEGACY)
    unit = chat_unit(Path("/h/.gemini/tmp/abc/chats/session-2026-01-16T18-34-3739ef95.json"))
    records = GeminiSource().open_parser(unit, None).document(path.read_bytes())
    assert of(records, Session)[0].id == "gemini:session-2026-01-16T18-34-3739ef95"
    messages = of(records, Message)
    assert [(m.role, m.content_type, m.text) for m in messages] == [
        ("user", "text", "Hello"),
        ("assistant", "mixed", "Short reasoning placeholder.\n\nHi!"),
    ]
    assert (messages[1].input_tokens, messages[1].output_tokens) == (10, 5)
    assert not of(records, LineError)


def test_a_chat_says_when_its_file_was_last_written():
    # lastUpdated, which gemini-cli sets at every write (a reply's tokens and tool output come after
    # the reply's time): the document's; the first line's and each $set's in a .jsonl log
    unit = chat_unit(Path("/h/.gemini/tmp/abc/chats/session-2026-01-16T18-34-3739ef95.json"))
    document = GeminiSource().open_parser(unit, None).document(corpus_file(LEGACY).read_bytes())
    assert [s.ended_at for s in of(document, Session)] == ["2026-01-16T18:34:10.000Z"]
    records = feed_all(corpus_file(JSONL).read_bytes())
    assert [s.ended_at for s in of(records, Session) if s.ended_at] == [
        "2026-04-29T21:39:22.319Z", "2026-04-29T21:39:33.156Z"]
    records = feed_all(jsonl(
        {**META, "lastUpdated": "2026-04-29T21:39:22.319Z"},
        {"id": "u1", "type": "user", "content": "hi", "timestamp": "2026-04-29T21:39:23.000Z"},
        {"$set": {"lastUpdated": "2026-04-29T21:39:31.000Z", "summary": "Greeting"}},
        {"$set": {"summary": "Greeting again"}},
    ))
    assert [s.ended_at for s in of(records, Session) if s.ended_at] == [
        "2026-04-29T21:39:22.319Z", "2026-04-29T21:39:31.000Z"]


def test_prompt_log_is_not_a_session():
    path = corpus_file(PROMPT_LOG)
    assert chat_unit(Path("/h/.gemini/tmp/abc/logs.json")) is None
    records = GeminiSource().open_parser(chat("session-x.json"), None).document(path.read_bytes())
    assert [type(r) for r in records] == [LineError]


@pytest.mark.parametrize("name", ["corpus", "updated"])
def test_resuming_after_every_line_gives_the_same_records(name):
    data = corpus_file(JSONL).read_bytes() if name == "corpus" else UPDATED_CHAT
    assert feed_all(data, restore_every_line=True) == feed_all(data)


def compressed_chat() -> bytes:
    """A chat rewound once, then compressed: gemini-cli's history ``$set``
    holds its summary, the model's acknowledgement and the prompt it kept."""
    def message(id, type, text):
        return {"id": id, "timestamp": f"2026-05-01T10:00:0{len(id)}Z", "type": type, "content": [{"text": text}]}

    history = [message("c1", "user", "COMPRESSED SUMMARY"), message("ack", "gemini", "Got it."),
               message("u3", "user", "Actually stop")]
    return jsonl(
        META, message("u1", "user", "Write a.py"), message("g1", "gemini", "Done."),
        message("u2", "user", "Try again"), message("g2", "gemini", "Trying."), {"$rewindTo": "u2"},
        history[2], {"id": "i1", "type": "info", "content": "Request cancelled."}, message("g3", "gemini", "Stopped."),
        {"$set": {"messages": history, "lastUpdated": "2026-05-01T10:03:00Z"}},
        message("u4", "user", "Go on"),
        {"$set": {"messages": history + [message("u4", "user", "Go on [masked]")]}},  # masking: nothing new
    )


def test_history_sync_that_drops_messages_is_a_compaction():
    data = compressed_chat()
    records = feed_all(data)
    sync = data.index(b'{"$set":{"messages"')
    boundary = f"gemini:s-1:compaction@{sync}"
    messages = of(records, Message)
    assert [(m.uuid, m.parent_uuid, m.is_compact_summary) for m in messages[-5:]] == [
        ("gemini:s-1:g3", "gemini:s-1:i1", 0),
        (boundary, "gemini:s-1:g3", 0),
        ("gemini:s-1:c1", boundary, 1),
        ("gemini:s-1:ack", "gemini:s-1:c1", 0),
        ("gemini:s-1:u4", "gemini:s-1:ack", 0),
    ]
    marker = messages[-4]
    assert (marker.type, marker.subtype, marker.is_meta, marker.surface, marker.timestamp, marker.text, marker.meta) == (
        "compaction", "compact_boundary", 1, "log-only", "2026-05-01T10:03:00Z", "history replaced: 3 dropped, 1 kept",
        {"preserved_uuids": ["gemini:s-1:u3"]},
    )
    assert [(m.position.line_no, m.role, m.text) for m in messages[-3:-1]] == [
        (10, "user", "COMPRESSED SUMMARY"), (10, "assistant", "Got it."),
    ]
    assert of(records, Summary) == [
        Summary("gemini:s-1:c1", "gemini:s-1", "compaction", "COMPRESSED SUMMARY", "2026-05-01T10:00:02Z",
                message_uuid="gemini:s-1:c1")
    ]
    # the summary is no prompt; the second $set only changed a kept message's content
    assert [t.title for t in of(records, TitleCandidate)] == ["Write a.py"]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "history-sync"]
    assert feed_all(data, restore_every_line=True) == records


def test_history_sync_that_takes_back_the_last_messages_is_a_rewind():
    """gemini-cli rolls a failed or cancelled request back out of its history:
    the ``$set`` keeps what came before and adds nothing, as a ``$rewindTo``."""
    u1, g1 = {"id": "u1", "type": "user", "content": "Hi"}, {"id": "g1", "type": "gemini", "content": "Hello"}
    u2, g2 = {"id": "u2", "type": "user", "content": "More"}, {"id": "g2", "type": "gemini", "content": "Partial"}
    sync = {"$set": {"messages": [u1, g1], "lastUpdated": "2026-05-01T10:05:00Z"}}
    data = jsonl(META, u1, g1, u2, g2, sync, {"id": "u3", "type": "user", "content": "Again"})
    records = feed_all(data)
    rewind = f"gemini:s-1:rewind@{data.index(HISTORY_SYNC)}"
    assert [(m.uuid, m.type, m.is_meta, m.surface, m.logical_parent_uuid) for m in of(records, Message)[-2:]] == [
        (rewind, "rewind", 1, "log-only", "gemini:s-1:u2"), ("gemini:s-1:u3", "user", 0, None, None),
    ]
    assert not of(records, Summary)
    assert feed_all(data, restore_every_line=True) == records


def test_history_sync_that_only_drops_earlier_messages_is_a_compaction_with_a_placeholder_summary():
    """A ``$set`` that drops messages before ones it keeps, and adds none, replaced
    them: the boundary names what it kept; with no added message to be the
    summary, a log-only placeholder is."""
    u1, g1 = {"id": "u1", "type": "user", "content": "Hi"}, {"id": "g1", "type": "gemini", "content": "Hello"}
    u2, g2 = {"id": "u2", "type": "user", "content": "More"}, {"id": "g2", "type": "gemini", "content": "Partial"}
    sync = {"$set": {"messages": [u2, g2], "lastUpdated": "2026-05-01T10:05:00Z"}}
    data = jsonl(META, u1, g1, u2, g2, sync, {"id": "u3", "type": "user", "content": "Again"})
    records = feed_all(data)
    boundary = f"gemini:s-1:compaction@{data.index(HISTORY_SYNC)}"
    where = Position(6, data.index(HISTORY_SYNC), len(orjson.dumps(sync)))
    assert [
        (m.uuid, m.parent_uuid, m.type, m.subtype, m.is_meta, m.is_compact_summary, m.surface, m.timestamp, m.text,
         m.meta, m.position)
        for m in of(records, Message)[-3:-1]
    ] == [
        (boundary, "gemini:s-1:g2", "compaction", "compact_boundary", 1, 0, "log-only", "2026-05-01T10:05:00Z",
         "history replaced: 2 dropped, 2 kept", {"preserved_uuids": ["gemini:s-1:u2", "gemini:s-1:g2"]}, where),
        (f"{boundary}:summary", boundary, "compaction", None, 1, 1, "log-only", "2026-05-01T10:05:00Z",
         "[history replaced without a summary]", None, where),
    ]
    assert (of(records, Message)[-1].uuid, of(records, Message)[-1].parent_uuid) == (
        "gemini:s-1:u3", f"{boundary}:summary",
    )
    assert not of(records, Summary)  # the placeholder summarises nothing
    assert [r.reason for r in of(records, Merged)] == ["metadata"]
    assert feed_all(data, restore_every_line=True) == records


def test_history_sync_that_only_adds_stores_the_new_messages():
    first = {"id": "u1", "type": "user", "content": "Hi"}
    added = {"id": "s1", "type": "gemini", "content": "Synthetic turn"}
    records = feed_all(jsonl(META, first, {"$set": {"messages": [first, added]}}))
    assert [(m.uuid, m.is_compact_summary) for m in of(records, Message)] == [
        ("gemini:s-1:u1", 0), ("gemini:s-1:s1", 0),
    ]
    assert not of(records, Summary)


def updated_chat() -> bytes:
    """A chat with a re-appended message, updates, a rewind and a notice."""
    call = {"id": "c1", "name": "replace", "args": {"file_path": "/w/a.py"}, "status": "executing"}
    failed = {**call, "status": "error",
              "result": [{"functionResponse": {"id": "c1", "name": "replace", "response": {"error": "no match"}}}]}
    tokens = {"input": 100, "output": 7, "cached": 40, "thoughts": 3, "tool": 0, "total": 110}
    g1 = {"id": "g1", "timestamp": "2026-04-29T21:40:05Z", "type": "gemini", "content": "", "model": "gemini-x"}
    return jsonl(
        META,
        {"id": "u1", "timestamp": "2026-04-29T21:40:00Z", "type": "user", "content": [{"text": "Edit the file"}]},
        {**g1, "toolCalls": [call]},
        {"$set": {"lastUpdated": "2026-04-29T21:40:06Z"}},
        {**g1, "toolCalls": [failed], "tokens": tokens},  # re-appended: result and tokens
        {**g1, "toolCalls": [failed], "tokens": tokens},  # again: nothing new
        {"$set": {"summary": "Editing a.py", "lastUpdated": "2026-04-29T21:41:00Z"}},
        {"$rewindTo": "g1"},
        {"id": "i1", "timestamp": "2026-04-29T21:42:00Z", "type": "info", "content": "Request cancelled."},
        {"unexpected": True},
    )


UPDATED_CHAT = updated_chat()


def test_updates_rewinds_and_reappended_messages():
    records = feed_all(UPDATED_CHAT)
    messages = of(records, Message)
    rewind_uuid = f"gemini:s-1:rewind@{messages[4].position.byte_offset}"
    # The first re-append brought the tokens and the failed call's output (once, though repeated).
    assert [m.uuid for m in messages] == [
        "gemini:s-1:u1", "gemini:s-1:g1", "gemini:s-1:g1:usage", "gemini:s-1:g1:result:c1", rewind_uuid,
        "gemini:s-1:i1",
    ]
    assert (messages[3].content_type, messages[3].text, messages[3].position) == (
        "tool_result", "no match", messages[2].position)
    usage = messages[2]
    assert (usage.is_meta, usage.surface, usage.model) == (1, "log-only", "gemini-x")
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (60, 40, 10)
    assert sum(m.output_tokens or 0 for m in messages) == 10
    rewind = messages[4]
    assert (rewind.type, rewind.is_meta, rewind.surface, rewind.logical_parent_uuid) == (
        "rewind", 1, "log-only", "gemini:s-1:g1",
    )
    assert (messages[5].is_meta, messages[5].surface, messages[5].role) == (1, "log-only", None)
    assert {c.id for c in of(records, ToolCall)} == {"gemini:s-1:c1"}
    assert [c.file_paths for c in of(records, ToolCall)] == [["/w/a.py"]] * 3
    assert [(r.outcome, r.content, r.message_uuid) for r in of(records, ToolResult)] == [
        ("failed", "no match", "gemini:s-1:g1:result:c1")
    ] * 2
    assert [(t.kind, t.title) for t in of(records, TitleCandidate)] == [
        ("first_prompt", "Edit the file"), ("summary", "Editing a.py"),
    ]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "metadata", "update", "metadata", "unknown-type"]


def test_migrated_legacy_chat_yields_the_same_message_ids():
    legacy = {**META, "lastUpdated": "x", "messages": [
        {"id": "u1", "timestamp": "t", "type": "user", "content": "Hi"},
        {"id": "g1", "timestamp": "t", "type": "gemini", "content": "Hello"},
    ]}
    from_document = GeminiSource().open_parser(chat("session-x.json"), None).document(orjson.dumps(legacy))
    from_log = feed_all(jsonl(META, *legacy["messages"], {"id": "u2", "type": "user", "content": "More"}))
    uuids = lambda records: [m.uuid for m in of(records, Message)]  # noqa: E731
    assert uuids(from_log)[:2] == uuids(from_document) == ["gemini:s-1:u1", "gemini:s-1:g1"]


def test_subagent_chat_is_linked_to_its_parent():
    unit = chat_unit(Path("/h/.gemini/tmp/abc/chats/parent-1234/child-5678.jsonl"))
    assert (unit.kind, unit.hints) == ("subagent_chat", {"session_id": "child-5678", "parent_session_id": "parent-1234"})
    records = feed_all(jsonl({"sessionId": "child-5678", "projectHash": "abc", "kind": "subagent",
                              "directories": ["/w"]},
                             {"id": "u1", "type": "user", "content": "Investigate"}), unit)
    session = of(records, Session)[0]
    assert (session.id, session.parent_session_id, session.relationship, session.agent_id, session.cwd) == (
        "gemini:child-5678", "gemini:parent-1234", "subagent", "child-5678", "/w",
    )
    link = of(records, Subagent)[0]
    assert (link.session_id, link.child_session_id) == ("gemini:parent-1234", "gemini:child-5678")
    assert of(records, Message)[0].agent_id == "child-5678"


def test_a_subagent_chat_written_as_a_document_is_linked_to_its_parent():
    unit = chat_unit(Path("/h/.gemini/tmp/abc/chats/parent-1234/child-5678.json"))
    assert (unit.kind, unit.layout, unit.hints) == (
        "subagent_chat", "document", {"session_id": "child-5678", "parent_session_id": "parent-1234"})
    document = {"sessionId": "child-5678", "projectHash": "abc", "kind": "subagent", "startTime": "t",
                "messages": [{"id": "u1", "timestamp": "t", "type": "user", "content": "Investigate"}]}
    records = GeminiSource().open_parser(unit, None).document(orjson.dumps(document))
    session = of(records, Session)[0]
    assert (session.id, session.parent_session_id, session.relationship) == (
        "gemini:child-5678", "gemini:parent-1234", "subagent")
    assert [(m.uuid, m.text) for m in of(records, Message)] == [("gemini:child-5678:u1", "Investigate")]
    assert chat_unit(Path("/h/.gemini/tmp/abc/chats/parent-1234/notes.txt")) is None


def test_inline_data_is_never_stored():
    image = base64.b64encode(bytes(30_000)).decode()
    small = base64.b64encode(bytes(30)).decode()
    records = feed_all(jsonl(META, {"id": "u1", "type": "user", "content": [
        {"text": "Look"}, {"inlineData": {"mimeType": "image/png", "data": image}},
        {"inlineData": {"mimeType": "image/jpeg", "data": small}}]}))
    assert of(records, Message)[0].text == "Look\n[image image/png 30000 bytes]\n[image image/jpeg 30 bytes]"
    assert image[:50] not in repr(records) and small not in repr(records)


@pytest.mark.parametrize("bad", [b"{broken", b"[]", b"42", b'{"$set":{"messages":[{"id":"m1"'])
def test_each_bad_line_is_one_line_error(bad):
    records = feed_all(jsonl(META) + bad + b"\n" + jsonl({"$set": {"lastUpdated": "x"}}))
    assert len(of(records, LineError)) == 1 and of(records, LineError)[0].position.line_no == 2
    assert len(of(records, Merged)) == 2


def test_discovery_in_a_gemini_home(tmp_path):
    files = [
        "tmp/0b7d/chats/session-2026-01-16T18-34-3739ef95.json",
        "tmp/0b7d/chats/session-2026-04-29T21-39-abcdef12.jsonl",
        "tmp/0b7d/chats/abcdef12-0000-4000-8000-000000000000/child-1.jsonl",
        "tmp/0b7d/logs.json",
        "tmp/0b7d/checkpoint-mytag.json",
        "tmp/0b7d/chats/notes.txt",
        "tmp/0b7d/shell_history",
        "settings.json",
        "history/abc/file.txt",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    units = {str(u.path.relative_to(tmp_path)): u for u in GeminiSource().discover(tmp_path)}
    assert set(units) == set(files[:4])
    assert (units[files[3]].kind, units[files[3]].layout) == ("prompt_log", "document")  # the prompt log
    assert units[files[0]].layout == "document"
    assert units[files[1]].layout == "jsonl"
    assert units[files[2]].hints["parent_session_id"] == "abcdef12-0000-4000-8000-000000000000"
    assert all(u.source == "gemini" for u in units.values())


def test_default_root(tmp_path):
    source = GeminiSource()
    assert source.default_root({"HOME": str(tmp_path)}) is None
    (tmp_path / ".gemini").mkdir()
    assert source.default_root({"HOME": str(tmp_path)}) == tmp_path / ".gemini"
    # gemini-cli's own home, when set, is where its .gemini folder is
    elsewhere = tmp_path / "gemini-home"
    assert source.default_root({"HOME": str(tmp_path), "GEMINI_CLI_HOME": str(elsewhere)}) is None
    (elsewhere / ".cache" / ".gemini").mkdir(parents=True)
    assert source.default_root({"HOME": str(tmp_path), "GEMINI_CLI_HOME": str(elsewhere)}) == (
        elsewhere / ".cache" / ".gemini")
    (elsewhere / ".gemini").mkdir()
    assert source.default_root({"HOME": str(tmp_path), "GEMINI_CLI_HOME": str(elsewhere)}) == elsewhere / ".gemini"
    assert source.default_root({"HOME": str(tmp_path), "GEMINI_CLI_HOME": ""}) == tmp_path / ".gemini"


def test_chats_gemini_cli_keeps_under_macos_seatbelt_are_found_by_default(tmp_path):
    """Under macOS Seatbelt gemini-cli 0.61+ writes tmp/ in ``~/.cache/.gemini``: the
    default folder when there is no ``~/.gemini``, read beside it when there is."""
    from datasette_obelisk.store.ingest import default_roots

    sandboxed = tmp_path / ".cache" / ".gemini" / "tmp" / "p1"
    (sandboxed / "chats").mkdir(parents=True)
    (sandboxed / ".project_root").write_text("/home/u/boxed\n")
    (sandboxed / "chats" / "session-2026-09-10T10-00-sb1.jsonl").write_bytes(jsonl(META))
    source, environ = GeminiSource(), {"HOME": str(tmp_path)}
    assert source.default_root(environ) == tmp_path / ".cache" / ".gemini"
    assert default_roots({"gemini": source}, environ) == {"gemini": tmp_path / ".cache" / ".gemini"}
    assert [(str(u.path.relative_to(tmp_path)), u.hints.get("project_root")) for u in source.discover(
        source.default_root(environ))] == [(".cache/.gemini/tmp/p1/chats/session-2026-09-10T10-00-sb1.jsonl",
                                           "/home/u/boxed")]
    (tmp_path / ".gemini" / "tmp" / "p2" / "chats").mkdir(parents=True)
    (tmp_path / ".gemini" / "tmp" / "p2" / "chats" / "session-2026-09-10T11-00-gh1.jsonl").write_bytes(jsonl(META))
    assert source.default_root(environ) == tmp_path / ".gemini"
    assert sorted((str(u.path.relative_to(tmp_path)), u.hints.get("project_root")) for u in source.discover(
        source.default_root(environ))) == [
        (".cache/.gemini/tmp/p1/chats/session-2026-09-10T10-00-sb1.jsonl", "/home/u/boxed"),
        (".gemini/tmp/p2/chats/session-2026-09-10T11-00-gh1.jsonl", None)]



def test_a_chat_gone_from_beside_the_gemini_folder_is_archived(tmp_path):
    import sqlite3

    from datasette_obelisk.store.ingest import ingest

    chats = [tmp_path / folder / "tmp" / "p1" / "chats" / f"session-2026-09-10T10-00-{name}.jsonl"
             for folder, name in ((".gemini", "home-1"), (".cache/.gemini", "box-1"))]
    for chat, name in zip(chats, ("home-1", "box-1")):
        chat.parent.mkdir(parents=True)
        chat.write_bytes(jsonl({**META, "sessionId": name}, {"id": "u1", "type": "user", "content": "hello"}))
    db = tmp_path / "o.db"
    ingest(db, {"gemini": tmp_path / ".gemini"})
    for chat in chats:
        chat.unlink()
    ingest(db, {"gemini": tmp_path / ".gemini"})
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT id, availability, message_count FROM sessions ORDER BY id").fetchall() == [
        ("gemini:box-1", "archived", 1), ("gemini:home-1", "archived", 1)]
    assert conn.execute("SELECT missing FROM source_files").fetchall() == [(1,), (1,)]


def test_registered_through_the_hookspec():
    sources = gemini.obelisk_sources()
    assert [type(s) for s in sources] == [GeminiSource]
    assert sources[0].name == "gemini"


def shell_result(output=None, status="success", name="run_shell_command", display=None) -> ToolResult:
    """The result record of one shell call whose response ``output`` is given."""
    call = {"id": "sh-1", "name": name, "args": {"command": "make"}, "status": status}
    if output is not None:
        call["result"] = [{"functionResponse": {"id": "sh-1", "name": name, "response": {"output": output}}}]
    if display is not None:
        call["resultDisplay"] = display
    records = feed_all(jsonl(META, {"id": "g1", "type": "gemini", "content": "", "toolCalls": [call]}))
    (result,) = of(records, ToolResult)
    return result


@pytest.mark.parametrize(
    "output, status, display, expected",
    [
        # shell.ts writes a non-zero exit code as a line after the output, status still "success"
        ("Output: make: *** No rule\nExit Code: 2\nProcess Group PGID: 41", "success", None, ("failed", 1, 2)),
        # older releases wrote every field, zero and "(none)" included
        ("Command: make\nStdout: ok\nStderr: (empty)\nExit Code: 0\nSignal: (none)", "success", None,
         ("succeeded", 0, 0)),
        ("Command: make\nExit Code: (none)\nSignal: SIGTERM", "success", None, ("succeeded", 0, None)),
        # the output may quote an exit code; the status line after it wins
        ("Output: step Exit Code: 9\nExit Code: 3\nExit Code: 0\nProcess Group PGID: 7", "success", None,
         ("succeeded", 0, 0)),
        ("Output: (empty)\nProcess Group PGID: 41", "success", None, ("succeeded", 0, None)),
        # no output: the display is just the exit status
        (None, "success", "Command exited with code: 127", ("failed", 1, 127)),
        ("Output: (empty)\nExit Code: 1", "error", None, ("failed", 1, 1)),
        ("Command was cancelled by user before it could complete.", "cancelled", None, ("cancelled", 0, None)),
    ],
)
def test_shell_exit_code_decides_the_outcome(output, status, display, expected):
    result = shell_result(output, status, display=display)
    assert (result.outcome, result.is_error, result.exit_code) == expected


def test_exit_code_is_read_from_shell_calls_only():
    result = shell_result("Exit Code: 1", name="read_file")
    assert (result.outcome, result.is_error, result.exit_code) == ("succeeded", 0, None)
    assert shell_result("Output: x\nExit Code: 1", name="shell").exit_code == 1


def test_directories_update_sets_the_workspace():
    records = feed_all(jsonl(
        META,
        {"id": "u1", "type": "user", "content": "Hi"},
        {"$set": {"directories": ["/home/u/proj", "/home/u/lib"], "summary": "Listing files"}},
        {"$set": {"directories": []}},
    ))
    assert [(s.cwd, s.project) for s in of(records, Session)] == [(None, None), ("/home/u/proj", "-home-u-proj")]
    assert [(t.kind, t.title, t.leaf_uuid) for t in of(records, TitleCandidate)] == [
        ("first_prompt", "Hi", "gemini:s-1:u1"), ("summary", "Listing files", "gemini:s-1:u1"),
    ]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "metadata", "metadata"]


def test_summary_before_any_message_names_the_first_message():
    """A migrated chat's first line carries the legacy summary: it becomes a
    candidate once there is a message for it to name, from its own line."""
    first = {**META, "lastUpdated": "2026-01-16T18:34:10.000Z", "directories": ["/home/u/gproj"],
             "summary": "Greeting chat"}
    prompt = {"id": "m1", "type": "user", "content": "Hello"}
    data = jsonl(first, prompt, {"id": "m2", "type": "gemini", "content": "Hi!"})
    records = feed_all(data)
    first_line, prompt_line = orjson.dumps(first), orjson.dumps(prompt)
    assert [(t.kind, t.title, t.timestamp, t.leaf_uuid, t.position) for t in of(records, TitleCandidate)] == [
        ("first_prompt", "Hello", None, "gemini:s-1:m1", Position(2, len(first_line) + 1, len(prompt_line))),
        ("summary", "Greeting chat", "2026-01-16T18:34:10.000Z", "gemini:s-1:m1", Position(1, 0, len(first_line))),
    ]
    assert feed_all(data, restore_every_line=True) == records


def test_a_kept_message_written_without_its_type_is_still_dropped_by_a_later_sync():
    first = {"id": "u1", "type": "user", "content": "Hi"}
    added = {"id": "s1", "type": "gemini", "content": "Synthetic turn"}
    untyped = {"id": "u1", "content": "Hi"}
    records = feed_all(jsonl(META, first, {"$set": {"messages": [untyped, added]}}, {"$set": {"messages": [added]}}))
    assert [(m.uuid, m.subtype, m.surface) for m in of(records, Message)] == [
        ("gemini:s-1:u1", None, None),
        ("gemini:s-1:s1", None, None),
        (f"gemini:s-1:compaction@{of(records, Message)[2].position.byte_offset}", "compact_boundary", "log-only"),
        (f"gemini:s-1:compaction@{of(records, Message)[2].position.byte_offset}:summary", None, "log-only"),
    ]


def test_a_reply_that_thinks_then_only_calls_a_tool_keeps_its_thoughts_apart():
    call = {"id": "ls_1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
            "result": [{"functionResponse": {"id": "ls_1", "name": "run_shell_command", "response": {"output": "a.py"}}}]}
    records = feed_all(jsonl(META, {"id": "g1", "type": "gemini", "content": "", "thoughts": [
        {"subject": "Plan", "description": "look first"}], "toolCalls": [call]}))
    [reply, result] = of(records, Message)
    # A reply's calls, as a Claude Code line of tool_use blocks: not conversation (message_count).
    assert (reply.content_type, reply.text, reply.meta) == ("tool_use", "Plan: look first\n\nrun_shell_command\nls", {"thinking_chars": 16})
    assert (result.content_type, result.text) == ("tool_result", "a.py")


def test_a_reply_is_typed_by_what_it_holds():
    thought = [{"subject": "Plan", "description": "look first"}]
    records = feed_all(jsonl(
        META,
        {"id": "g1", "type": "gemini", "content": "Done", "thoughts": thought},
        {"id": "g2", "type": "gemini", "content": "", "thoughts": thought},
        {"id": "g3", "type": "gemini", "content": ""},  # nothing yet: its row waits for a re-append
        {"id": "u1", "type": "user", "content": [{"functionResponse": {"name": "x", "response": {}}}]},
    ))
    assert [(m.uuid, m.content_type) for m in of(records, Message)] == [
        ("gemini:s-1:g1", "mixed"), ("gemini:s-1:g2", "thinking")]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "update", "tool-response"]


SHELL = {"id": "shell-1", "name": "run_shell_command", "args": {"command": "pytest -q"}}
DONE = {**SHELL, "status": "success", "result": [{"functionResponse": {
    "id": "shell-1", "name": "run_shell_command", "response": {"output": "1 failed\nExit Code: 1"}}}]}
TOKENS = {"input": 100, "output": 10, "cached": 0, "thoughts": 5, "tool": 0, "total": 115}
THOUGHT = [{"subject": "Plan", "description": "run the tests"}]


@pytest.mark.parametrize("first", ["thoughts", "nothing", "tokens"])
def test_a_reply_written_before_its_tool_calls_gets_them(first):
    """gemini-cli writes a reply, then again with its calls (and again with their
    results): the calls are the reply's as if written with it at once."""
    reply = {"id": "g1", "type": "gemini", "content": "", "model": "m"}
    opening = {"thoughts": {**reply, "thoughts": THOUGHT}, "nothing": reply, "tokens": {**reply, "tokens": TOKENS}}[first]
    later = {**opening, "tokens": TOKENS}
    records = feed_all(jsonl(
        META, {"id": "u1", "type": "user", "content": "test it"}, opening,
        {**later, "toolCalls": [SHELL]}, {**later, "toolCalls": [DONE]},
        {"id": "u2", "type": "user", "content": [{"functionResponse": DONE["result"][0]["functionResponse"]}]},
        {"id": "g2", "type": "gemini", "content": "One test fails."},
    ))
    rows = [(m.uuid, m.content_type, m.text, m.input_tokens) for m in of(records, Message)]
    calls_row = "gemini:s-1:g1:calls@"
    if first == "thoughts":  # its row holds the thoughts; the calls have a row of their own
        assert [r[:3] for r in rows[1:3]] == [
            ("gemini:s-1:g1", "thinking", "Plan: run the tests"), (rows[2][0], "tool_use", "run_shell_command\npytest -q")]
        assert rows[2][0].startswith(calls_row) and rows[1][3] is None and rows[2][3] == 100
    elif first == "nothing":  # a reply that held nothing gets its row with its calls
        assert rows[1] == ("gemini:s-1:g1", "tool_use", "run_shell_command\npytest -q", 100)
    else:  # its token counts came first: a row of their own
        assert rows[1:3] == [("gemini:s-1:g1:usage", None, "", 100),
                             ("gemini:s-1:g1", "tool_use", "run_shell_command\npytest -q", None)]
    owner = rows[2][0] if first == "thoughts" else "gemini:s-1:g1"
    assert [(c.id, c.message_uuid) for c in of(records, ToolCall)] == [("gemini:s-1:shell-1", owner)] * 2
    # the output once, as the call's result; the user message of tool responses repeats it
    assert [(r.tool_use_id, r.outcome, r.exit_code) for r in of(records, ToolResult)] == [
        ("gemini:s-1:shell-1", "failed", 1)]
    assert [m.text for m in of(records, Message) if m.content_type == "tool_result"] == ["1 failed\nExit Code: 1"]
    assert rows[-1][:2] == ("gemini:s-1:g2", "text")
    assert sum(m.input_tokens or 0 for m in of(records, Message)) == 100  # counted once
    data = jsonl(META, {"id": "u1", "type": "user", "content": "test it"}, opening, {**later, "toolCalls": [SHELL]})
    assert feed_all(data, restore_every_line=True) == feed_all(data)


def test_a_tool_response_whose_call_gave_no_result_is_that_calls_result():
    response = {"id": "shell-9", "name": "run_shell_command", "response": {"output": "ok"}}
    records = feed_all(jsonl(
        META, {"id": "g1", "type": "gemini", "content": "", "toolCalls": [{**SHELL, "id": "shell-9"}]},
        {"id": "u2", "type": "user", "content": [{"functionResponse": response}]},
    ))
    assert [(r.tool_use_id, r.message_uuid, r.content) for r in of(records, ToolResult)] == [
        ("gemini:s-1:shell-9", "gemini:s-1:u2:result:shell-9", "ok")]


def test_a_resume_repeating_the_responses_of_hundreds_of_calls_stores_none_again():
    """gemini-cli 0.44+ writes, on a resume, a user message of tool responses
    after every reply with calls: each repeats a result already stored."""
    def done(n):
        return {**SHELL, "id": f"c{n}", "status": "success", "result": [{"functionResponse": response(n)}]}

    def response(n):
        return {"id": f"c{n}", "name": "run_shell_command", "response": {"output": f"out {n}"}}

    replies = [{"id": f"g{n}", "type": "gemini", "content": "", "toolCalls": [done(n)]} for n in range(300)]
    history = [m for n, reply in enumerate(replies)
               for m in (reply, {"id": f"g{n}_response", "type": "user", "content": [{"functionResponse": response(n)}]})]
    records = feed_all(jsonl(META, {"id": "u0", "type": "user", "content": "go"}, *replies,
                             {"$set": {"messages": [{"id": "u0", "type": "user", "content": "go"}, *history]}}))
    results = [m.text for m in of(records, Message) if m.content_type == "tool_result"]
    assert results == [f"out {n}" for n in range(300)]
    assert len(of(records, ToolResult)) == 300


def test_an_earlier_reply_written_again_adds_nothing_it_had():
    """gemini-cli 0.39-0.43 writes every reply with calls again when it sets
    its history (here after a rewind; masking writes its output shortened)."""
    read = {"id": "c1", "name": "read_file", "args": {"file_path": "/a"}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "DEBUG=1"}}}]}
    reply = {"id": "g1", "type": "gemini", "content": "Let me check.", "tokens": TOKENS}
    masked = {**read, "result": [{"functionResponse": {**read["result"][0]["functionResponse"],
                                                        "response": {"output": "<output masked>"}}}]}
    pending = {**read, "id": "c2", "status": "executing", "result": None}
    records = feed_all(jsonl(
        META, {"id": "u1", "type": "user", "content": "Check the config"}, reply,
        {**reply, "toolCalls": [read, pending]},
        {"id": "g2", "type": "gemini", "content": "DEBUG is on."}, {"id": "u2", "type": "user", "content": "Turn it off"},
        {"$rewindTo": "u2"}, {**reply, "toolCalls": [masked, {**pending, "status": "cancelled", "result": []}]},
        {"id": "u3", "type": "user", "content": "Turn it on"},
    ))
    messages = of(records, Message)
    assert [(m.uuid, m.content_type) for m in messages if m.type != "rewind"] == [
        ("gemini:s-1:u1", "text"), ("gemini:s-1:g1", "text"), (messages[2].uuid, "tool_use"),
        ("gemini:s-1:g1:result:c1", "tool_result"), ("gemini:s-1:g2", "text"), ("gemini:s-1:u2", "text"),
        ("gemini:s-1:g1:result:c2", "tool_result"), ("gemini:s-1:u3", "text")]
    assert [(r.tool_use_id, r.content, r.outcome) for r in of(records, ToolResult)] == [
        ("gemini:s-1:c1", "DEBUG=1", "succeeded"), ("gemini:s-1:c2", "", "cancelled")]
    assert sum(m.input_tokens or 0 for m in messages) == 100


COMPRESSED_ENV = {"id": "env", "type": "user", "content": [{"text": "<session_context>\nOS\n</session_context>"}]}
READ_C3 = {"functionResponse": {"id": "c3", "name": "read_file", "response": {"output": "DEBUG=1"}}}


def chat_kept_under_new_ids(*after) -> bytes:
    """A chat whose compression keeps its last turns under new ids (K1-K4), as
    newer gemini-cli writes them: the tool turn as functionCall / functionResponse parts."""
    read = {"id": "c3", "name": "read_file", "args": {"file_path": "/x"}, "status": "success", "result": [READ_C3]}
    return jsonl(
        META, {"$set": {"messages": [COMPRESSED_ENV]}},
        {"id": "u1", "type": "user", "content": [{"text": "First question"}]},
        {"id": "g1", "type": "gemini", "content": "Answer one", "tokens": TOKENS},
        {"id": "u2", "type": "user", "content": [{"text": "Please read config.py"}]},
        {"id": "g2", "type": "gemini", "content": ""}, {"id": "g2", "type": "gemini", "content": "", "toolCalls": [read]},
        {"id": "r2", "type": "user", "content": [READ_C3]},
        {"id": "g3", "type": "gemini", "content": "config.py sets DEBUG=1"},
        {"$set": {"messages": [
            COMPRESSED_ENV, {"id": "S", "type": "user", "content": [{"text": "<state_snapshot>asked</state_snapshot>"}]},
            {"id": "A", "type": "gemini", "content": [{"text": "Got it. Thanks for the additional context!"}]},
            {"id": "K1", "type": "user", "content": [{"text": "Please read config.py"}]},
            {"id": "K2", "type": "gemini", "content": [{"functionCall": {"id": "c3", "name": "read_file", "args": {}}}]},
            {"id": "K3", "type": "user", "content": [READ_C3]},
            {"id": "K4", "type": "gemini", "content": [{"text": "config.py sets DEBUG=1"}]}]}},
        *after,
    )


def test_what_a_compression_keeps_under_new_ids_stays_current_once():
    records = feed_all(chat_kept_under_new_ids({"id": "u5", "type": "user", "content": [{"text": "Turn it off"}]},
                                       {"$rewindTo": "K4"}))
    messages = of(records, Message)
    boundary = next(m for m in messages if m.subtype == "compact_boundary")
    assert boundary.text == "history replaced: 2 dropped, 4 kept"
    assert boundary.meta["preserved_uuids"] == [  # the context gemini-cli keeps first, too
        "gemini:s-1:env", "gemini:s-1:u2", "gemini:s-1:g2", "gemini:s-1:g2:result:c3", "gemini:s-1:g3"]
    stored = [m.uuid for m in messages if m.type in ("user", "gemini")]
    assert stored == ["gemini:s-1:env", "gemini:s-1:u1", "gemini:s-1:g1", "gemini:s-1:u2", "gemini:s-1:g2",
                      "gemini:s-1:g3", "gemini:s-1:S", "gemini:s-1:A", "gemini:s-1:u5"]  # no copy stored again
    rewind = messages[-1]  # a rewind to a kept copy names the rows it took back: they came before the compaction
    assert (rewind.type, rewind.logical_parent_uuid, rewind.meta) == (
        "rewind", "gemini:s-1:g3", {"taken_uuids": ["gemini:s-1:g3", "gemini:s-1:u5"]})


def test_kept_copies_are_the_last_turns_said_again_from_a_prompt_on():
    def said(kind, id, text):
        return {"id": id, "type": kind, "content": [{"text": text}]}

    def compression(n, *kept):
        return {"$set": {"messages": [COMPRESSED_ENV, said("user", f"S{n}", f"<state_snapshot>{n}</state_snapshot>"),
                                      said("gemini", f"A{n}", "Got it. Thanks for the additional context!"), *kept]}}

    records = feed_all(jsonl(
        META, {"$set": {"messages": [COMPRESSED_ENV]}},
        said("user", "u1", "continue"), said("gemini", "g1", "Done."),
        said("user", "u2", "fix the tests"), said("gemini", "g2", "Fixed."),
        said("user", "u3", "continue"), said("gemini", "g3", "Done."),  # said before: the later pair is the kept one
        compression(1, said("user", "K1", "continue"), said("gemini", "K2", "Done.")),
        said("user", "u4", "go on"),
        compression(2, said("user", "K3", "go on")),  # A1 says what A2 says: no kept turn, it starts no prompt
    ))
    boundaries = [m for m in of(records, Message) if m.subtype == "compact_boundary"]
    assert [(b.text, b.meta["preserved_uuids"]) for b in boundaries] == [
        ("history replaced: 4 dropped, 2 kept", ["gemini:s-1:env", "gemini:s-1:u3", "gemini:s-1:g3"]),
        ("history replaced: 4 dropped, 1 kept", ["gemini:s-1:env", "gemini:s-1:u4"]),
    ]
    assert [m.uuid for m in of(records, Message) if m.uuid.split(":")[-1] in ("A1", "A2", "K1", "K2", "K3")] == [
        "gemini:s-1:A1", "gemini:s-1:A2"]


def test_a_resume_leaving_out_what_gemini_cli_never_sends_replaces_nothing():
    def said(kind, id, text):
        return {"id": id, "type": kind, "content": [{"text": text}] if text else ""}

    history = [said("user", "u1", "/model"), said("user", "u2", "hi"), said("gemini", "g2", ""),
               said("user", "u3", " ?"), said("user", "u4", "go"), said("gemini", "g4", "done")]
    records = feed_all(jsonl(META, *history, {"$set": {"messages": [history[1], history[4], history[5]]}},
                             said("user", "u5", "more")))
    assert [m.type for m in of(records, Message) if m.type not in ("user", "gemini")] == []  # no boundary, no rewind
    assert [r.reason for r in of(records, Merged)] == ["metadata", "update", "history-sync"]
    assert [t.title for t in of(records, TitleCandidate)] == ["hi"]  # a command names no task
    dropping = feed_all(jsonl(META, *history, {"$set": {"messages": [history[1], history[5]]}}))
    assert [m.subtype for m in of(dropping, Message) if m.type == "compaction"] == ["compact_boundary", None]


def test_a_rewind_to_a_kept_copy_takes_back_only_what_followed_it(tmp_path):
    import sqlite3

    from datasette_obelisk.store.ingest import ingest

    chats = tmp_path / ".gemini" / "tmp" / "h" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-01-01T00-00-s1.jsonl").write_bytes(chat_kept_under_new_ids(
        {"id": "u5", "type": "user", "content": [{"text": "Turn it off"}]}, {"$rewindTo": "K1"},
        {"id": "u6", "type": "user", "content": [{"text": "Something else"}]}))
    ingest(tmp_path / "o.db", {"gemini": tmp_path / ".gemini"}, sources={"gemini": GeminiSource()})
    conn = sqlite3.connect(tmp_path / "o.db")
    got = conn.execute("SELECT substr(uuid, 12), surface, visibility FROM messages "
                       "WHERE type IN ('user', 'gemini', 'tool_result') ORDER BY seq").fetchall()
    assert got == [
        ("env", "current", "visible"), ("u1", "shadowed", "visible"), ("g1", "shadowed", "visible"),
        ("u2", "shadowed", "inactive"), ("g2", "shadowed", "inactive"), ("g2:result:c3", "shadowed", "inactive"),
        ("g3", "shadowed", "inactive"), ("S", "current", "visible"), ("A", "current", "visible"),
        ("u5", "shadowed", "inactive"), ("u6", "current", "visible"),
    ]


def test_text_parts_are_joined_as_gemini_cli_joins_them():
    records = feed_all(jsonl(META, {"id": "u1", "type": "user", "content": [
        {"text": "Explain @README.md"}, {"text": "\n--- Content from referenced files ---"},
        {"text": "\nContent from @/w/README.md:\n"}, {"text": "# App\n"}]}))
    assert of(records, Message)[0].text == (
        "Explain @README.md\n--- Content from referenced files ---\nContent from @/w/README.md:\n# App\n")


def test_a_tool_response_beside_other_parts_is_still_one():
    response = {"id": "shell-7", "name": "read_many_files", "response": {"output": "read 1 file"}}
    records = feed_all(jsonl(
        META, {"id": "g1", "type": "gemini", "content": "", "toolCalls": [{**SHELL, "id": "shell-7"}]},
        {"id": "u2", "type": "user", "content": [{"functionResponse": response}, {"text": "--- a.py ---\nx = 1"},
                                                   {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
    ))
    assert [m.role for m in of(records, Message)] == ["assistant", "user"]
    assert [(r.tool_use_id, r.content) for r in of(records, ToolResult)] == [
        ("gemini:s-1:shell-7", "read 1 file\n--- a.py ---\nx = 1")]


def test_a_reply_that_held_nothing_still_waits_for_its_calls_after_a_history_sync():
    hollow = {"id": "g1", "type": "gemini", "content": ""}
    user = {"id": "u1", "type": "user", "content": "go"}
    sync = {"$set": {"messages": [user, hollow]}}
    records = feed_all(jsonl(META, user, hollow, sync, {**hollow, "toolCalls": [SHELL]}))
    assert [(m.uuid, m.content_type) for m in of(records, Message)] == [
        ("gemini:s-1:u1", "text"), ("gemini:s-1:g1", "tool_use")]


def test_a_first_prompt_titles_its_chat_as_typed():
    content = [{"text": "Explain @README.md"}, {"text": "\n--- Content from referenced files ---\n# App"}]
    records = feed_all(jsonl(
        META, {"id": "u1", "type": "user", "displayContent": [{"text": "Explain @README.md"}], "content": content}))
    assert [t.title for t in of(records, TitleCandidate)] == ["Explain @README.md"]
    assert of(records, Message)[0].text.endswith("# App")  # what the model was sent


ENV = {"id": "env-1", "type": "user", "content": [{"text": "<session_context>\nThis is the Gemini CLI. We are setting "
                                                          "up the context for our chat.\n</session_context>"}]}


def test_the_context_gemini_cli_writes_as_the_users_is_injected():
    u1 = {"id": "u1", "type": "user", "content": [{"text": "Fix the bug"},
                                                   {"text": "<hook_context>lint: clean</hook_context>"}]}
    g1 = {"id": "g1", "type": "gemini", "content": "Fixed."}
    records = feed_all(jsonl(
        META, {"$set": {"messages": [ENV]}}, u1, g1,
        {"$rewindTo": "g1"}, {"$set": {"messages": [u1]}},  # as after /rewind: its history leaves the context out
    ))
    rows = [(m.uuid, m.is_meta, m.type) for m in of(records, Message)]
    assert rows[:3] == [("gemini:s-1:env-1", 1, "user"), ("gemini:s-1:u1", 0, "user"), ("gemini:s-1:g1", 0, "gemini")]
    assert [t.title for t in of(records, TitleCandidate)] == ["Fix the bug"]  # the hook's context left out
    assert of(records, Message)[1].text == "Fix the bug<hook_context>lint: clean</hook_context>"  # what the model read
    assert not [m for m in of(records, Message) if m.type == "compaction"]  # the context's absence drops nothing
    assert feed_all(jsonl(META, {"$set": {"messages": [ENV]}}, u1, g1), restore_every_line=True) == feed_all(
        jsonl(META, {"$set": {"messages": [ENV]}}, u1, g1))


def test_a_rollback_that_closes_an_interrupted_turn_is_a_rewind_with_the_closing_reply():
    u1, g1 = {"id": "u1", "type": "user", "content": "Hi"}, {"id": "g1", "type": "gemini", "content": "Hello"}
    u2 = {"id": "u2", "type": "user", "content": "and the log?"}
    closing = {"id": "x1", "type": "gemini", "content": "[The previous response was interrupted before it completed.]"}
    data = jsonl(META, u1, g1, u2, {"$set": {"messages": [u1, g1, closing]}})
    records = feed_all(data)
    rows = [(m.uuid, m.type, m.is_compact_summary, m.logical_parent_uuid) for m in of(records, Message)][-2:]
    assert rows == [(f"gemini:s-1:rewind@{data.index(HISTORY_SYNC)}", "rewind", 0, "gemini:s-1:u2"),
                    ("gemini:s-1:x1", "gemini", 0, None)]
    assert not of(records, Summary)


def test_a_compression_that_keeps_nothing_is_still_a_compaction():
    u1, g1 = {"id": "u1", "type": "user", "content": "hello"}, {"id": "g1", "type": "gemini", "content": "hi there"}
    summary = {"id": "sum", "type": "user", "content": "<state_snapshot>they said hello</state_snapshot>"}
    ack = {"id": "ack", "type": "gemini", "content": "Got it. Thanks for the additional context!"}
    records = feed_all(jsonl(META, {"$set": {"messages": [ENV]}}, u1, g1, {"$set": {"messages": [ENV, summary, ack]}}))
    rows = [(m.uuid.split("@")[0], m.subtype, m.is_compact_summary) for m in of(records, Message)][-3:]
    assert rows == [("gemini:s-1:compaction", "compact_boundary", 0), ("gemini:s-1:sum", None, 1),
                    ("gemini:s-1:ack", None, 0)]
    assert [s.message_uuid for s in of(records, Summary)] == ["gemini:s-1:sum"]
    assert not [m for m in of(records, Message) if m.type == "rewind"]


def test_thought_parts_of_a_reply_are_its_thoughts():
    records = feed_all(jsonl(META, {"id": "g1", "type": "gemini", "content": [
        {"text": "Weighing the options", "thought": True}, {"text": "Use the cache."}]}))
    [reply] = of(records, Message)
    assert (reply.content_type, reply.text) == ("mixed", "Weighing the options\n\nUse the cache.")


def test_a_rewind_to_the_context_takes_back_everything():
    u1, g1 = {"id": "u1", "type": "user", "content": "hello"}, {"id": "g1", "type": "gemini", "content": "hi"}
    records = feed_all(jsonl(META, {"$set": {"messages": [ENV]}}, u1, g1, {"$rewindTo": "env-1"}))
    assert of(records, Message)[-1].logical_parent_uuid == "gemini:s-1:u1"


def test_what_follows_a_rewind_descends_from_what_it_kept():
    u1 = {"id": "u1", "type": "user", "content": "go"}
    g1 = {"id": "g1", "type": "gemini", "content": "", "toolCalls": [{**SHELL, "status": "success", "result": []}]}
    u2, g2 = {"id": "u2", "type": "user", "content": "more"}, {"id": "g2", "type": "gemini", "content": "partial"}
    data = jsonl(META, u1, g1, u2, g2, {"$rewindTo": "u2"}, {"id": "u3", "type": "user", "content": "instead"})
    records = feed_all(data)
    messages = {m.uuid: m for m in of(records, Message)}
    rewind = "gemini:s-1:rewind@" + str(data.index(b'{"$rewindTo'))
    assert messages[rewind].parent_uuid == "gemini:s-1:g1:result:shell-1"  # the last row of the kept reply
    assert messages["gemini:s-1:u3"].parent_uuid == rewind
    assert feed_all(data, restore_every_line=True) == records


def test_the_first_prompt_taken_back_by_a_rewind_leaves_the_title_to_the_next():
    u1, g1 = {"id": "u1", "type": "user", "content": "first try"}, {"id": "g1", "type": "gemini", "content": "ok"}
    u2, g2 = {"id": "u2", "type": "user", "content": "go on"}, {"id": "g2", "type": "gemini", "content": "ok"}
    again = {"id": "u3", "type": "user", "content": "second try"}
    data = jsonl(META, u1, g1, u2, g2, {"$rewindTo": "u1"}, again, {"$rewindTo": "g1"}, {**u2, "id": "u4"})
    records = feed_all(data)
    # (a rewind past the first prompt's reply keeps it: no new title then)
    assert [(t.title, t.leaf_uuid) for t in of(records, TitleCandidate)] == [
        ("first try", "gemini:s-1:u1"), ("second try", "gemini:s-1:u3")]
    assert feed_all(data, restore_every_line=True) == records


def test_a_rewind_to_the_copy_a_compression_kept_of_the_first_prompt_leaves_the_title_to_the_next():
    said = [{"id": "u1", "type": "user", "content": "first ask"}, {"id": "g1", "type": "gemini", "content": "ans1"},
            {"id": "u2", "type": "user", "content": "second"}, {"id": "g2", "type": "gemini", "content": "ans2"}]
    copies = [{"id": "c0", "type": "user", "content": "summary of the chat"},
              *({**m, "id": f"c{n}"} for n, m in enumerate(said, 1))]
    data = jsonl(META, *said, {"$set": {"messages": copies}}, {"$rewindTo": "c1"},
                 {"id": "u5", "type": "user", "content": "start over"})
    records = feed_all(data)
    assert [(t.title, t.leaf_uuid) for t in of(records, TitleCandidate)] == [
        ("first ask", "gemini:s-1:u1"), ("start over", "gemini:s-1:u5")]
    assert feed_all(data, restore_every_line=True) == records


def test_a_rewind_after_a_compression_goes_back_to_what_the_first_message_taken_back_followed():
    u1, g1 = {"id": "u1", "type": "user", "content": "a"}, {"id": "g1", "type": "gemini", "content": "b"}
    u2, g2 = {"id": "u2", "type": "user", "content": "c"}, {"id": "g2", "type": "gemini", "content": "d"}
    c1, ack = {"id": "c1", "type": "user", "content": "SUMMARY"}, {"id": "ack", "type": "gemini", "content": "Got it."}
    u3, g3 = {"id": "u3", "type": "user", "content": "e"}, {"id": "g3", "type": "gemini", "content": "f"}
    records = feed_all(jsonl(META, u1, g1, u2, g2, {"$set": {"messages": [c1, ack, u2]}}, u3, g3,
                             {"$rewindTo": "u3"}, {"id": "u4", "type": "user", "content": "g"}))
    rewind = next(m for m in of(records, Message) if m.type == "rewind")
    u3_parent = next(m.parent_uuid for m in of(records, Message) if m.uuid == "gemini:s-1:u3")
    assert rewind.parent_uuid == "gemini:s-1:ack" == u3_parent


def test_a_rewind_to_a_message_read_before_its_first_row_was_noted_follows_the_last_row():
    u1, g1 = {"id": "u1", "type": "user", "content": "a"}, {"id": "g1", "type": "gemini", "content": "b"}
    unit = chat()
    parser = GeminiSource().open_parser(unit, None)
    for line in read_lines(io.BytesIO(jsonl(META, u1, g1))):
        parser.feed(line.data, line.position)
    state = json.loads(json.dumps(parser.state()))
    state.pop("first_parents")  # as a state saved before they were noted
    resumed = GeminiSource().open_parser(unit, state)
    line = orjson.dumps({"$rewindTo": "g1"})
    [rewind] = [r for r in resumed.feed(line, Position(4, 500, len(line))) if isinstance(r, Message)]
    assert rewind.parent_uuid == "gemini:s-1:g1"


def test_a_chat_takes_its_project_from_its_folder_s_project_root(tmp_path):
    from datasette_obelisk.sources.gemini import GeminiSource

    folder = tmp_path / "tmp" / "myapp"
    (folder / "chats" / "parent-1234").mkdir(parents=True)
    (folder / ".project_root").write_text("/home/u/myapp\n")
    (folder / "chats" / "session-2026-04-29T21-39-aaaa.jsonl").write_bytes(
        jsonl(META, {"id": "u1", "type": "user", "content": "Hi"}))
    (folder / "chats" / "parent-1234" / "child-5678.jsonl").write_bytes(
        jsonl({**META, "sessionId": "child-5678", "kind": "subagent"}))
    (tmp_path / "tmp" / "other" / "chats").mkdir(parents=True)  # no .project_root
    (tmp_path / "tmp" / "other" / "chats" / "session-2026-04-29T21-39-bbbb.jsonl").write_bytes(
        jsonl({**META, "sessionId": "s-2"}, {"id": "u1", "type": "user", "content": "Hi"}))
    units = sorted(GeminiSource().discover(tmp_path), key=lambda unit: str(unit.path))
    assert [unit.hints.get("project_root") for unit in units] == ["/home/u/myapp", "/home/u/myapp", None]
    sessions = [[(s.id, s.cwd, s.project) for s in of(feed_all(unit.path.read_bytes(), unit), Session)] for unit in units]
    assert sessions == [
        [("gemini:child-5678", "/home/u/myapp", "-home-u-myapp")],
        [("gemini:s-1", "/home/u/myapp", "-home-u-myapp")],
        [("gemini:s-2", None, "gemini-tmp:other")],  # no root named: its folder groups it
    ]
    # the folders a chat names come first
    records = feed_all(jsonl({**META, "directories": ["/home/u/elsewhere"]}), units[1])
    assert [(s.cwd, s.project) for s in of(records, Session)] == [("/home/u/elsewhere", "-home-u-elsewhere")]


MASKED_OUTPUT = "<tool_output_masked>\nOutput too large. Full output available at: /tmp/c1.txt\n</tool_output_masked>"


def read_call(call_id: str, output: str, done=True) -> dict:
    call = {"id": call_id, "name": "read_file", "args": {"file_path": f"/w/{call_id}.py"}}
    return {**call, "status": "success", "result": read_response(call_id, output)} if done else {"functionCall": call}


def read_response(call_id: str, output: str) -> list:
    return [{"functionResponse": {"id": call_id, "name": "read_file", "response": {"output": output}}}]


def masked_chat(*after, coalesced=True, changed=None) -> bytes:
    """A chat whose tool output gemini-cli (0.44+) masks: ``setHistory`` of plain contents
    writes every message of its history again under a new id (M1-M8), each followed by a
    ``lastUpdated`` update, then a ``$set`` of the history of the copies. The context opens
    it, joined to the first prompt (``getHistory`` coalesces consecutive turns of a role)
    unless ``coalesced`` is false (then M0 is its copy); ``changed`` says a copy's new text."""
    def said(id, kind, content, second, **more):
        return {"id": id, "timestamp": f"2026-05-01T10:00:{second:02d}.000Z", "type": kind, "content": content, **more}

    env_text = ENV["content"][0]["text"]
    written = [
        said("u1", "user", [{"text": "Read a.py"}], 1),
        said("g1", "gemini", "", 2, model="m", tokens=TOKENS, toolCalls=[read_call("c1", "x = 1\n" * 40)]),
        said("r1", "user", read_response("c1", "x = 1\n" * 40), 3),
        said("g2", "gemini", "a.py sets x.", 4, model="m", tokens=TOKENS),
        said("u2", "user", [{"text": "Now b.py"}], 5),
        said("g3", "gemini", "", 6, model="m", tokens=TOKENS, toolCalls=[read_call("c2", "y = 2")]),
        said("r2", "user", read_response("c2", "y = 2"), 7),
        said("g4", "gemini", "b.py sets y.", 8, model="m", tokens=TOKENS),
    ]
    again = [[{"text": "Read a.py"}], [read_call("c1", "", done=False)], read_response("c1", MASKED_OUTPUT),
             [{"text": "a.py sets x."}], [{"text": "Now b.py"}], [read_call("c2", "", done=False)],
             read_response("c2", "y = 2"), [{"text": "b.py sets y."}]]
    if changed:
        again[changed[0] - 1] = [{"text": changed[1]}]
    if coalesced:
        again[0] = [{"text": env_text}, *again[0]]
    else:
        again.insert(0, [{"text": env_text}])
    first = 1 if coalesced else 0
    copies = [said(f"M{n}", "user", content, 20 + n) if n % 2 or n == 0 else
              said(f"M{n}", "gemini", content, 20 + n, thoughts=[], tokens=None)
              for n, content in enumerate(again, start=first)]
    return jsonl(
        META, {"$set": {"messages": [ENV], "lastUpdated": "2026-05-01T10:00:00.000Z"}}, *written,
        *(line for copy in copies for line in (copy, {"$set": {"lastUpdated": copy["timestamp"]}})),
        {"$set": {"messages": copies, "lastUpdated": "2026-05-01T10:00:40.000Z"}},
        said("u3", "user", [{"text": "Thanks"}], 41), *after,
    )


@pytest.mark.parametrize("coalesced", [True, False])
def test_a_history_written_again_under_new_ids_stores_no_copy(coalesced):
    """Each copy is what it copies: before version 14 each one saying something was stored
    again, and what it copied shadowed by a placeholder compaction."""
    data = masked_chat({"$rewindTo": "M5"}, {"id": "u4", "type": "user", "content": "Only a.py"}, coalesced=coalesced)
    records = feed_all(data)
    messages = of(records, Message)
    rewind = "gemini:s-1:rewind@" + str(data.index(b'{"$rewindTo'))
    assert [(m.uuid.removeprefix("gemini:s-1:"), m.parent_uuid) for m in messages] == [
        ("env-1", None), ("u1", "gemini:s-1:env-1"), ("g1", "gemini:s-1:u1"), ("g1:result:c1", "gemini:s-1:g1"),
        ("g2", "gemini:s-1:g1:result:c1"), ("u2", "gemini:s-1:g2"), ("g3", "gemini:s-1:u2"),
        ("g3:result:c2", "gemini:s-1:g3"), ("g4", "gemini:s-1:g3:result:c2"), ("u3", "gemini:s-1:g4"),
        (rewind.removeprefix("gemini:s-1:"), "gemini:s-1:g2"), ("u4", rewind),
    ]
    copies = 8 if coalesced else 9  # each followed by a lastUpdated update
    assert Counter(r.reason for r in of(records, Merged)) == {
        "metadata": 1 + copies, "tool-response": 2, "history-copy": copies, "history-sync": 1}
    assert [(r.tool_use_id, r.content) for r in of(records, ToolResult)] == [
        ("gemini:s-1:c1", "x = 1\n" * 40), ("gemini:s-1:c2", "y = 2")]  # the masked output is not stored
    # the copies have the rows of what they copy: a rewind to one names them
    assert (messages[-2].logical_parent_uuid, messages[-2].meta) == ("gemini:s-1:u2", {"taken_uuids": [
        "gemini:s-1:u2", "gemini:s-1:g3", "gemini:s-1:g3:result:c2", "gemini:s-1:g4", "gemini:s-1:u3"]})
    assert [t.title for t in of(records, TitleCandidate)] == ["Read a.py"]
    assert feed_all(data, restore_every_line=True) == records


def test_a_copy_saying_something_new_replaces_what_it_copies_as_a_compaction():
    data = masked_chat(changed=(4, "a.py sets x. [truncated]"))
    records = feed_all(data)
    sync = data.rindex(HISTORY_SYNC)
    boundary = f"gemini:s-1:compaction@{sync}"
    assert [m.uuid.removeprefix("gemini:s-1:") for m in of(records, Message)][8:] == [
        "g4", "M4", f"compaction@{sync}", f"compaction@{sync}:summary", "u3"]
    marker = next(m for m in of(records, Message) if m.uuid == boundary)
    assert (marker.text, marker.meta) == ("history replaced: 1 dropped, 8 kept", {"preserved_uuids": [
        f"gemini:s-1:{uuid}" for uuid in
        ("env-1", "u1", "g1", "g1:result:c1", "M4", "u2", "g3", "g3:result:c2", "g4")]})
    assert feed_all(data, restore_every_line=True) == records


def test_a_prompt_saying_again_what_the_first_said_is_no_copy():
    """Only a copy of the context the history opens with starts a rewrite: a prompt never does."""
    u1 = {"id": "u1", "type": "user", "content": [{"text": "continue"}]}
    g1 = {"id": "g1", "type": "gemini", "content": "ok"}
    records = feed_all(jsonl(META, {"$set": {"messages": [ENV]}}, u1, g1, {**u1, "id": "u2"}, {**g1, "id": "g2"}))
    assert [m.uuid for m in of(records, Message)] == [
        "gemini:s-1:env-1", "gemini:s-1:u1", "gemini:s-1:g1", "gemini:s-1:u2", "gemini:s-1:g2"]


def test_a_history_written_again_ingested_piece_by_piece_gives_the_same_rows(tmp_path):
    import sqlite3

    from dbsnapshot import diff, snapshot

    from datasette_obelisk.store.ingest import ingest

    data = masked_chat({"id": "g5", "type": "gemini", "content": "Welcome."}, changed=(4, "a.py sets x. [truncated]"))
    databases = {}
    for how in ("whole", "pieces"):
        path = tmp_path / how / ".gemini" / "tmp" / "h" / "chats" / "session-2026-05-01T10-00-s1.jsonl"
        path.parent.mkdir(parents=True)
        ends = [index + 1 for index, byte in enumerate(data) if byte == ord("\n")]
        cuts = sorted({cut for start, end in zip([0] + ends, ends) for cut in ((start + end) // 2, end)})
        for cut in cuts if how == "pieces" else [len(data)]:
            path.write_bytes(data[:cut])
            ingest(tmp_path / f"{how}.db", {"gemini": tmp_path / how / ".gemini"}, sources={"gemini": GeminiSource()},
                   redact=False)
        databases[how] = snapshot(tmp_path / f"{how}.db")
    assert databases["pieces"] == databases["whole"], diff(databases["pieces"], databases["whole"])
    conn = sqlite3.connect(tmp_path / "whole.db")
    got = conn.execute("SELECT substr(uuid, 12), surface FROM messages WHERE type != 'compaction' ORDER BY seq")
    assert got.fetchall() == [  # the copies are no rows; the one saying something new replaced what it copied
        ("env-1", "current"), ("u1", "current"), ("g1", "current"), ("g1:result:c1", "current"),
        ("g2", "shadowed"), ("u2", "current"), ("g3", "current"), ("g3:result:c2", "current"), ("g4", "current"),
        ("M4", "current"), ("u3", "current"), ("g5", "current"),
    ]
    conn.close()


def test_what_the_user_said_while_tools_ran_is_kept_beside_their_responses():
    """gemini-cli puts the user's steering hint (or a background command's output)
    before the tool responses it sends: the message's own row."""
    response = DONE["result"][0]["functionResponse"]
    hint = ("User steering update:\n<user_input>\nalso update the README, not <user_input>x</user_input>\n"
            "</user_input>\nAcknowledge the update and adjust the plan.")
    background = "Background execution update:\n<background_output>\nbuild ok\n</background_output>\n\nAcknowledge it."
    records = feed_all(jsonl(
        META, {"id": "u1", "type": "user", "content": "test it"},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [DONE]},
        {"id": "u2", "type": "user", "content": [{"text": hint}, {"functionResponse": response}]},
        {"id": "u3", "type": "user", "content": [{"text": background}, {"functionResponse": response}]},
        {"id": "u4", "type": "user", "content": [{"functionResponse": response}]},
    ))
    assert [(m.uuid, m.role, m.is_meta, m.text) for m in of(records, Message) if m.content_type == "text"] == [
        ("gemini:s-1:u1", "user", 0, "test it"), ("gemini:s-1:u2", "user", 0, "also update the README, not <user_input>x</user_input>"),
        ("gemini:s-1:u3", "user", 1, background)]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "tool-response"]
    assert len(of(records, ToolResult)) == 1  # each response repeats the call's result, stored once


def test_a_steering_hint_sent_as_a_prompt_titles_with_the_user_s_words():
    hint = "User steering update:\n<user_input>\nskip the docs\n</user_input>\nAcknowledge the update."
    records = feed_all(jsonl(META, {"id": "u1", "type": "user", "content": [{"text": hint}]}))
    assert [t.title for t in of(records, TitleCandidate)] == ["skip the docs"]


def test_context_gemini_cli_adds_in_the_user_s_name_titles_nothing():
    editor = "Here is the user's editor context as a JSON object. This is for your information only.\n```json\n{}\n```"
    memory = "\n<loaded_context>\n<project_context>\nAlways use tabs.\n</project_context>\n</loaded_context>"
    records = feed_all(jsonl(
        META, {"id": "e1", "type": "user", "content": [{"text": editor}]},
        {"id": "t1", "type": "user", "content": [{"text": memory}, {"text": "Find the config parser"}]},
        {"id": "g1", "type": "gemini", "content": "Found it."},
    ))
    assert [(m.uuid, m.is_meta) for m in of(records, Message)] == [
        ("gemini:s-1:e1", 1), ("gemini:s-1:t1", 0), ("gemini:s-1:g1", 0)]
    assert [t.title for t in of(records, TitleCandidate)] == ["Find the config parser"]


def test_the_reply_gemini_cli_puts_in_for_an_interrupted_one_is_injected():
    placeholder = "[The previous response was interrupted before it completed.]"
    kept = [{"id": "u1", "type": "user", "content": "go"}, {"id": "p1", "type": "gemini", "content": placeholder},
            {"id": "u2", "type": "user", "content": "again"}]
    records = feed_all(jsonl(META, kept[0], kept[2], {"$set": {"messages": kept}}))
    assert [(m.uuid, m.role, m.is_meta) for m in of(records, Message) if m.role] == [
        ("gemini:s-1:u1", "user", 0), ("gemini:s-1:u2", "user", 0), ("gemini:s-1:p1", "assistant", 1)]


NUDGE = ("[System: You successfully executed a tool but returned an empty response. "
         "Please analyze the tool output and explain your progress or final answer.]")
LS_RESPONSE = {"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "Output: a.txt"}}}
LS = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success", "result": [LS_RESPONSE]}


def nudged_turn() -> list:
    """A tool turn whose reply after the results held nothing (e1), then the prompt
    gemini-cli 0.61+ sends in the user's name for it (n1), and the reply to that."""
    g1 = {"id": "g1", "type": "gemini", "content": "", "thoughts": [], "tokens": TOKENS, "model": "m"}
    return [
        {"id": "u1", "type": "user", "content": [{"text": "list the files"}]}, g1, {**g1, "toolCalls": [LS]},
        {"id": "r1", "type": "user", "content": [LS_RESPONSE]},
        {"id": "e1", "type": "gemini", "content": [], "thoughts": [], "tokens": TOKENS},
        {"id": "n1", "type": "user", "content": [{"text": NUDGE}]},
        {"id": "g2", "type": "gemini", "content": "One file.", "tokens": TOKENS, "model": "m"},
    ]


def ingested(tmp_path, data: bytes):
    """``data`` ingested as a chat in a ``~/.gemini``: a connection to the database."""
    import sqlite3

    from datasette_obelisk.store.ingest import ingest

    chats = tmp_path / ".gemini" / "tmp" / "h" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-09-10T10-00-s1.jsonl").write_bytes(data)
    ingest(tmp_path / "o.db", {"gemini": tmp_path / ".gemini"}, sources={"gemini": GeminiSource()}, redact=False)
    return sqlite3.connect(tmp_path / "o.db")


def test_the_prompt_gemini_cli_sends_after_a_reply_that_held_nothing_is_meta(tmp_path):
    quoted = {"id": "u2", "type": "user", "content": [{"text": f"what does {NUDGE} mean?"}]}
    data = jsonl(META, *nudged_turn(), quoted)
    records = feed_all(data)
    assert [(m.uuid, m.is_meta) for m in of(records, Message) if m.content_type == "text"] == [
        ("gemini:s-1:u1", 0), ("gemini:s-1:n1", 1), ("gemini:s-1:g2", 0), ("gemini:s-1:u2", 0)]
    assert [t.title for t in of(records, TitleCandidate)] == ["list the files"]
    conn = ingested(tmp_path, data)
    got = conn.execute("SELECT is_meta, visibility, surface FROM messages WHERE uuid = 'gemini:s-1:n1'").fetchall()
    assert got == [(1, "visible", "current")]
    assert conn.execute("SELECT message_count FROM sessions").fetchall() == [(3,)]  # u1, g2, u2: not the nudge


def test_a_resume_leaving_out_a_reply_that_held_nothing_before_what_it_keeps_replaces_nothing(tmp_path):
    """gemini-cli's resume sends no reply that held nothing (e1) and writes each reply's
    tool responses after it (g1_response): nothing was dropped, nothing taken back."""
    turn = nudged_turn()
    resumed = [ENV, turn[0], {**turn[2], "content": [{"functionCall": {"id": "c1", "name": "run_shell_command",
                                                                       "args": {"command": "ls"}}}]},
               {"id": "g1_response", "type": "user", "content": [LS_RESPONSE]}, *turn[3:4], *turn[5:]]
    data = jsonl(META, {"$set": {"messages": [ENV]}}, *turn, {"$set": {"messages": resumed}},
                 {"id": "u3", "type": "user", "content": [{"text": "thanks"}]},
                 {"id": "g3", "type": "gemini", "content": "Welcome.", "tokens": TOKENS})
    records = feed_all(data)
    assert [m.uuid.removeprefix("gemini:s-1:") for m in of(records, Message)] == [
        "env-1", "u1", "g1:usage", "g1", "g1:result:c1", "e1:usage", "n1", "g2", "u3", "g3"]  # no boundary, no rewind
    # the history sync stores nothing: what it adds (g1_response) repeats a result
    assert [r.reason for r in of(records, Merged)] == ["metadata", "tool-response", "tool-response"]
    assert feed_all(data, restore_every_line=True) == records
    conn = ingested(tmp_path, data)
    assert conn.execute("SELECT DISTINCT visibility, surface FROM messages WHERE NOT is_meta").fetchall() == [
        ("visible", "current")]
    assert conn.execute("SELECT message_count FROM sessions").fetchall() == [(4,)]


def declined_after_a_nudge(*context) -> bytes:
    """A tool the user declines in the turn after a nudged one (``context``: the IDE
    context gemini-cli wrote as the user's before each prompt): gemini-cli writes its
    history again under new ids (k1-k4), the context merged into the prompt it preceded
    and the tool response into the nudge, then sets it without the declined turn."""
    turn = nudged_turn()
    before = [{"id": f"i{n}", "type": "user", "content": [{"text": text}]} for n, text in enumerate(context, 1)]
    g3 = {"id": "g3", "type": "gemini", "content": "", "tokens": TOKENS, "model": "m"}
    write = {"id": "c2", "name": "write_file", "args": {"file_path": "/w/x.txt", "content": "x"}, "status": "cancelled",
             "result": [{"functionResponse": {"id": "c2", "name": "write_file", "response": {
                 "error": "[Operation Cancelled] Reason: User denied execution."}}}]}
    copies = [
        {"id": "k1", "type": "user", "content": [ENV["content"][0], *(m["content"][0] for m in before[:1]),
                                                 {"text": "list the files"}]},
        {"id": "k2", "type": "gemini", "content": [{"functionCall": {"id": "c1", "name": "run_shell_command",
                                                                     "args": {"command": "ls"}}}], "tokens": None},
        {"id": "k3", "type": "user", "content": [LS_RESPONSE, {"text": NUDGE}]},
        {"id": "k4", "type": "gemini", "content": [{"text": "One file."}], "tokens": None},
    ]
    return jsonl(
        META, {"$set": {"messages": [ENV]}}, *before[:1], *turn, *before[1:],
        {"id": "u2", "type": "user", "content": [{"text": "now write x.txt"}]}, g3, {**g3, "toolCalls": [write]},
        *(line for copy in copies for line in (copy, {"$set": {"lastUpdated": "2026-09-10T10:01:00Z"}})),
        {"$set": {"messages": copies, "lastUpdated": "2026-09-10T10:01:01Z"}},
        {"id": "u3", "type": "user", "content": [{"text": "bye"}]},
        {"id": "g4", "type": "gemini", "content": "Bye.", "tokens": TOKENS},
    )


def test_declining_a_tool_after_a_nudged_turn_takes_back_the_prompt():
    data = declined_after_a_nudge()
    records = feed_all(data)
    rewind = f"gemini:s-1:rewind@{data.rindex(HISTORY_SYNC)}"
    assert [(m.uuid.removeprefix("gemini:s-1:"), m.type, m.parent_uuid, m.logical_parent_uuid)
            for m in of(records, Message)[-3:]] == [
        (rewind.removeprefix("gemini:s-1:"), "rewind", "gemini:s-1:g2", "gemini:s-1:u2"),
        ("u3", "user", rewind, None), ("g4", "gemini", "gemini:s-1:u3", None)]
    assert not [m for m in of(records, Message) if m.type == "compaction"]
    assert [m.uuid for m in of(records, Message) if m.text == "One file."] == ["gemini:s-1:g2"]  # no copy stored
    assert feed_all(data, restore_every_line=True) == records


def test_declining_a_tool_after_a_nudged_turn_leaves_the_declined_turn_inactive(tmp_path):
    conn = ingested(tmp_path, declined_after_a_nudge())
    got = conn.execute("SELECT substr(uuid, 12), is_meta, visibility, surface FROM messages "
                       "WHERE type IN ('user', 'gemini', 'tool_result') ORDER BY seq").fetchall()
    assert got == [
        ("env-1", 1, "visible", "current"), ("u1", 0, "visible", "current"), ("g1:usage", 1, "visible", "log-only"),
        ("g1", 0, "visible", "current"), ("g1:result:c1", 0, "visible", "current"),
        ("e1:usage", 1, "visible", "log-only"), ("n1", 1, "visible", "current"), ("g2", 0, "visible", "current"),
        ("u2", 0, "inactive", "shadowed"), ("g3:usage", 1, "inactive", "log-only"), ("g3", 0, "inactive", "shadowed"),
        ("g3:result:c2", 0, "inactive", "shadowed"), ("u3", 0, "visible", "current"), ("g4", 0, "visible", "current"),
    ]
    assert conn.execute("SELECT message_count FROM sessions").fetchall() == [(4,)]  # u1, g2, u3, g4


IDE_CONTEXT = ("Here is the user's editor context as a JSON object. This is for your information only.\n"
               "```json\n{\"activeFile\":{\"path\":\"/w/a.py\"}}\n```")
IDE_CHANGES = ("Here is a summary of changes in the user's editor context, in JSON format. This is for your "
               "information only.\n```json\n{\"changes\":{\"activeFileChanged\":{\"path\":\"/w/b.py\"}}}\n```")


def test_copies_with_the_ide_context_merged_into_the_prompt_are_what_they_copy(tmp_path):
    """In IDE mode gemini-cli writes the editor context as the user's before a prompt;
    the history it sets again says it in the prompt's copy (k1): the declined turn is
    taken back, nothing replaced, nothing stored twice."""
    data = declined_after_a_nudge(IDE_CONTEXT, IDE_CHANGES)
    records = feed_all(data)
    rewind = f"gemini:s-1:rewind@{data.rindex(HISTORY_SYNC)}"
    marks = [m for m in of(records, Message) if m.type not in ("user", "gemini", "tool_result")]
    assert [(m.uuid, m.type, m.logical_parent_uuid) for m in marks] == [(rewind, "rewind", "gemini:s-1:u2")]
    assert [m.uuid for m in of(records, Message) if m.text == "One file."] == ["gemini:s-1:g2"]
    assert feed_all(data, restore_every_line=True) == records
    conn = ingested(tmp_path, data)
    got = conn.execute("SELECT substr(uuid, 12), is_meta, visibility, surface FROM messages "
                       "WHERE type IN ('user', 'gemini') AND role IS NOT NULL AND text != '' ORDER BY seq").fetchall()
    assert got == [
        ("env-1", 1, "visible", "current"), ("i1", 1, "visible", "current"), ("u1", 0, "visible", "current"),
        ("g1", 0, "visible", "current"), ("n1", 1, "visible", "current"), ("g2", 0, "visible", "current"),
        ("i2", 1, "visible", "current"), ("u2", 0, "inactive", "shadowed"), ("g3", 0, "inactive", "shadowed"),
        ("u3", 0, "visible", "current"), ("g4", 0, "visible", "current"),
    ]
    assert conn.execute("SELECT message_count FROM sessions").fetchall() == [(4,)]


def test_a_compression_keeping_a_turn_whose_tool_response_and_nudge_it_merged_keeps_them_once(tmp_path):
    said = lambda kind, id, content: {"id": id, "type": kind, "content": content}  # noqa: E731
    compression = {"$set": {"messages": [
        ENV, said("user", "s1", [{"text": "<state_snapshot>summary of hello</state_snapshot>"}]),
        said("gemini", "s2", [{"text": "Got it. Thanks for the additional context!"}]),
        said("user", "s3", [{"text": "list the files"}]),
        said("gemini", "s4", [{"functionCall": {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}}}]),
        said("user", "s5", [LS_RESPONSE, {"text": NUDGE}]), said("gemini", "s6", [{"text": "One file."}]),
    ], "lastUpdated": "2026-09-10T10:01:18Z"}}
    data = jsonl(META, {"$set": {"messages": [ENV]}}, said("user", "u0", [{"text": "hello"}]),
                 said("gemini", "g0", "Hi!"), *nudged_turn(), compression,
                 said("user", "u5", [{"text": "thanks"}]), said("gemini", "g5", "Welcome."))
    records = feed_all(data)
    messages = of(records, Message)
    boundary = next(m for m in messages if m.subtype == "compact_boundary")
    assert (boundary.uuid, boundary.text, boundary.meta) == (
        f"gemini:s-1:compaction@{data.rindex(HISTORY_SYNC)}",
        "history replaced: 3 dropped, 4 kept", {"preserved_uuids": [f"gemini:s-1:{uuid}" for uuid in (
            "env-1", "u1", "g1", "g1:usage", "g1:result:c1", "n1", "g2")]})
    assert [m.uuid.removeprefix("gemini:s-1:") for m in messages if m.type in ("user", "gemini")] == [
        "env-1", "u0", "g0", "u1", "g1:usage", "g1", "e1:usage", "n1", "g2", "s1", "s2", "u5", "g5"]  # no copy stored
    assert [s.message_uuid for s in of(records, Summary)] == ["gemini:s-1:s1"]
    assert feed_all(data, restore_every_line=True) == records
    conn = ingested(tmp_path, data)
    got = conn.execute("SELECT substr(uuid, 12), surface FROM messages WHERE NOT is_meta ORDER BY seq").fetchall()
    assert got == [("u0", "shadowed"), ("g0", "shadowed"), ("u1", "current"), ("g1", "current"),
                   ("g1:result:c1", "current"), ("g2", "current"), ("s1", "current"), ("s2", "current"),
                   ("u5", "current"), ("g5", "current")]
    assert conn.execute("SELECT message_count FROM sessions").fetchall() == [(7,)]


def test_what_gemini_cli_s_loop_detection_tells_the_model_is_meta():
    feedback = ("System: Potential loop detected. Details: Repetitive tool calls. Please take a step back and "
                "confirm you're making forward progress.")
    records = feed_all(jsonl(
        META,
        {"id": "u1", "type": "user", "content": [{"text": feedback}], "displayContent": [{"text": "list the files"}]},
        {"id": "u2", "type": "user", "content": [{"text": "list the files"}]},
    ))
    assert [(m.uuid, m.is_meta) for m in of(records, Message)] == [("gemini:s-1:u1", 1), ("gemini:s-1:u2", 0)]
    assert [t.title for t in of(records, TitleCandidate)] == ["list the files"]


@pytest.mark.parametrize("ide", [False, True], ids=["prompt", "prompt-with-ide-context"])
def test_a_compression_keeping_a_prompt_with_its_ide_context_merged_in_keeps_the_prompt(ide):
    def said(kind, id_, content):
        return {"id": id_, "type": kind, "content": content}

    context = [said("user", "i1", [{"text": IDE_CONTEXT}])] if ide else []
    compression = {"$set": {"messages": [
        ENV, said("user", "s1", [{"text": "<state_snapshot>summary of hello</state_snapshot>"}]),
        said("gemini", "s2", [{"text": "Got it. Thanks for the additional context!"}]),
        said("user", "s3", [{"text": IDE_CONTEXT}] * ide + [{"text": "list the files"}]),  # the copies kept
        said("gemini", "s4", [{"text": "One file."}]),
    ]}}
    records = feed_all(jsonl(META, {"$set": {"messages": [ENV]}}, said("user", "u0", [{"text": "hello"}]),
                             said("gemini", "g0", "Hi!"), *context, said("user", "u1", [{"text": "list the files"}]),
                             said("gemini", "g1", "One file."), compression))
    messages = of(records, Message)
    assert [m.uuid.removeprefix("gemini:s-1:") for m in messages if not m.uuid.startswith("gemini:s-1:compaction@")] == [
        "env-1", "u0", "g0", *["i1"] * ide, "u1", "g1", "s1", "s2"]  # no copy of u1 or g1 stored again
    assert [(m.text, m.meta) for m in messages if m.subtype == "compact_boundary"] == [
        ("history replaced: 2 dropped, 2 kept",
         {"preserved_uuids": ["gemini:s-1:env-1", "gemini:s-1:u1", "gemini:s-1:g1"]})]


@pytest.mark.parametrize("kind", [[], {"type": "gemini"}], ids=["list", "object"])
def test_a_message_whose_type_is_no_string_is_of_unknown_type_not_a_parser_error(kind):
    # (a TypeError, unhashable, made the whole line a parser error: the reply a $set added with it was lost)
    first = {"id": "u1", "type": "user", "content": "Hi"}
    added = {"id": "s1", "type": "gemini", "content": "Synthetic turn"}
    records = feed_all(jsonl(META, first, {"$set": {"messages": [first, added, {"id": "x1", "type": kind, "content": "odd"}]}}))
    assert [(m.uuid, m.type, m.role, m.text) for m in of(records, Message)] == [
        ("gemini:s-1:u1", "user", "user", "Hi"), ("gemini:s-1:s1", "gemini", "assistant", "Synthetic turn"),
        ("gemini:s-1:x1", "unknown", None, "odd"),
    ]
    records = feed_all(jsonl(  # a history written anew: each line a copy of what it said before?
        META, {"$set": {"messages": [COMPRESSED_ENV]}}, first, {**COMPRESSED_ENV, "id": "env2"},
        {"id": "u9", "type": kind, "content": "Hi"}))
    assert [(m.uuid, m.type, m.is_meta) for m in of(records, Message)] == [
        ("gemini:s-1:env", "user", 1), ("gemini:s-1:u1", "user", 0), ("gemini:s-1:u9", "unknown", 1),
    ]
    assert [r.reason for r in of(records, Merged)] == ["metadata", "history-copy"]


def test_registered_through_the_hookspec_at_its_parser_version():
    from datasette_obelisk.plugins import get_sources

    source = get_sources()["gemini"]
    assert isinstance(source, gemini.GeminiSource)
    assert (source.name, source.parser_version) == ("gemini", 19)
