"""The Gemini CLI chats in ../shared/corpus ingest with exact, hand-checked
results at the database level.

The corpus files are symlinked into a temporary ``~/.gemini`` the way Gemini
CLI lays chats out: ``tmp/<project hash>/chats/session-<start>-<first 8
characters of the session id>.jsonl`` for the JSONL log, the legacy
single-JSON chat under its own ``session-….json`` name, and the prompt log as
``tmp/<project hash>/logs.json`` (not a chat: its entries are merged, each
user prompt a ``prompt_log`` row).

Derivation, by reading the files:

* ``jsonl_v040.jsonl`` (5 lines): the metadata line and the
  ``{"$set": {"lastUpdated"}}`` update are merged; the user prompt and the
  two ``gemini`` records are messages. The first ``gemini`` record only calls
  ``run_shell_command`` (content ``""``: a tool_use row, not counted in
  ``message_count``) whose result is in the same record (``status:
  success``). Tokens: input is ``input + tool - cached``, output is
  ``output + thoughts``: 11855/81/0 and 12069-11502/147/11502.
* ``small.json`` (one document, two messages): the user's "Hello" and a
  ``gemini`` answer with a thought (``mixed``), 10 input and 5 output tokens.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest
from corpus_layout import lay_out

from datasette_obelisk.plugins import get_sources
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.query.session_query import SessionQuery
from datasette_obelisk.store.ingest import ingest
from dbsnapshot import diff, rows, snapshot

JSONL = "jazzyalex__agent-sessions/jsonl_v040.jsonl"
LEGACY = "jazzyalex__agent-sessions/small.json"
PROMPT_LOG = "kvsankar__agent-history/gemini_logs.json"
PROJECT = "0b7dfb1274ee51b336813b17f2ddab1f56b6591f723e7314126bbd502c69e9c9"
CHATS = f"tmp/{PROJECT}/chats"
LAYOUT = {
    JSONL: f"{CHATS}/session-2026-04-29T21-39-gemini_s.jsonl",
    LEGACY: f"{CHATS}/session-2026-01-16T18-34-3739ef95.json",
    PROMPT_LOG: f"tmp/{PROJECT}/logs.json",
}
JSONL_SESSION = "gemini:gemini_stage0_jsonl"
LEGACY_SESSION = "gemini:session-2026-01-16T18-34-3739ef95"

FILES = {
    # path: (layout, lines_read, lines_stored, lines_merged, lines_failed)
    LAYOUT[JSONL]: ("jsonl", 5, 4, 2, 0),  # line 4 stores its message and its call's output
    # A document is read as one "line" whose messages are one row each (see
    # test_document_lines_add_up).
    LAYOUT[LEGACY]: ("document", 2, 2, 0, 0),  # a document counts its items
    # the prompt log: ten entries, merged (seven user prompts are prompt_log rows)
    LAYOUT[PROMPT_LOG]: ("document", 10, 0, 10, 0),
}

SESSIONS = [
    # id, title source, title, parent, relationship, cwd, project, project path, message count,
    # input, output, cache read, cache creation tokens, availability, model
    # The corpus names no folder, and its tmp folder (the SHA-256 of a root) no root: the
    # chats are grouped by that folder, marked as such.
    (JSONL_SESSION, "first_prompt", "Say hello and list files.", None, None, None, f"gemini-tmp:{PROJECT}", None,
     2, 11855 + (12069 - 11502), 81 + 147, 11502, 0, "live", "gemini-3-flash-preview"),
    (LEGACY_SESSION, "first_prompt", "Hello", None, None, None, f"gemini-tmp:{PROJECT}", None,
     2, 10, 5, 0, 0, "live", "gemini-3-flash-preview"),
]

MESSAGES = [
    # uuid, session, seq, type, role, content type, line, input, output, cache read tokens, text
    ("gemini:gemini_stage0_jsonl:g-user-1", JSONL_SESSION, 1, "user", "user", "text", 2, None, None, None,
     "Say hello and list files."),
    ("gemini:gemini_stage0_jsonl:g-assistant-1", JSONL_SESSION, 2, "gemini", "assistant", "tool_use", 4,
     11855, 81, 0, 'run_shell_command\nls -F\nList files in the current directory.'),
    # the call's output, written inside line 4's message, is a row of its own
    ("gemini:gemini_stage0_jsonl:g-assistant-1:result:run_shell_command_stage0", JSONL_SESSION, 3, "tool_result",
     "user", "tool_result", 4, None, None, None, "Output: AgentSessions/\nREADME.md\nProcess Group PGID: 12345"),
    ("gemini:gemini_stage0_jsonl:g-assistant-2", JSONL_SESSION, 4, "gemini", "assistant", "text", 5,
     567, 147, 11502, "Hello! I listed the files."),
    ("gemini:session-2026-01-16T18-34-3739ef95:m1", LEGACY_SESSION, 1, "user", "user", "text", 1, None, None, None,
     "Hello"),
    ("gemini:session-2026-01-16T18-34-3739ef95:m2", LEGACY_SESSION, 2, "gemini", "assistant", "mixed", 2, 10, 5, 0,
     "Short reasoning placeholder.\n\nHi!"),
]


@pytest.fixture(scope="module")
def corpus_root():
    from conftest import CORPUS

    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS / "gemini"


def gemini_home(root: Path, corpus_root: Path, files=tuple(LAYOUT)) -> Path:
    return lay_out(root, corpus_root, LAYOUT, files)


@pytest.fixture(scope="module")
def home(tmp_path_factory, corpus_root):
    return gemini_home(tmp_path_factory.mktemp("gemini") / ".gemini", corpus_root)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, home):
    path = tmp_path_factory.mktemp("gemini-db") / "obelisk.db"
    summary = ingest(path, {"gemini": home})
    conn = sqlite3.connect(path)
    yield conn, summary
    conn.close()


@pytest.fixture(scope="module")
def db(ingested):
    return ingested[0]


def gemini_sources():
    return {"gemini": get_sources()["gemini"]}


def jsonl(*records) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def test_summary_of_the_run(ingested):
    _, summary = ingested
    assert (summary.files, summary.files_read, summary.lines, summary.messages, summary.merged, summary.errors) == (
        3, 3, 17, 6, 12, 0,
    )
    assert (summary.sessions, summary.prompts, summary.error_samples, summary.empty_files) == (2, 7, [], [])


def test_every_line_is_accounted_for(db, home):
    got = {
        path.removeprefix(f"{home}/"): tuple(counts)
        for path, *counts in db.execute(
            "SELECT path, layout, lines_read, lines_stored, lines_merged, lines_failed FROM source_files"
        )
    }
    assert got == FILES
    assert db.execute("SELECT COUNT(*) FROM ingest_errors").fetchone() == (0,)


def test_sessions(db):
    got = db.execute(
        "SELECT id, title_source, title, parent_session_id, relationship, cwd, project, project_path, "
        "message_count, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, availability, "
        "model FROM sessions ORDER BY id"
    ).fetchall()
    assert got == SESSIONS
    assert db.execute("SELECT DISTINCT project_source FROM sessions").fetchall() == [("folder",)]


def test_a_chat_ends_when_its_file_was_last_written(db):
    # small.json's lastUpdated (18:34:10) is 8 s after its last message (18:34:02): gemini-cli sets it at
    # every write, a reply's tokens and tool output included. jsonl_v040's lastUpdated (its first line's,
    # 21:39:22.319, and its $set's, 21:39:33.156) are older than its last message (21:39:45.996), its end.
    assert db.execute("SELECT id, started_at, ended_at FROM sessions ORDER BY id").fetchall() == [
        (JSONL_SESSION, "2026-04-29T21:39:22.319Z", "2026-04-29T21:39:45.996Z"),
        (LEGACY_SESSION, "2026-01-16T18:34:00.000Z", "2026-01-16T18:34:10.000Z"),
    ]


def test_a_chat_log_read_as_it_grows_ends_where_one_read_whole_does(tmp_path, corpus_root):
    """The .jsonl chat read a line at a time, a $set moving its end past its last message: after every
    line its session is the one an ingest of as many lines gives, and so is the database."""
    lines = (corpus_root / JSONL).read_bytes().splitlines(keepends=True)
    later = b'{"$set":{"lastUpdated":"2026-04-29T21:39:47.250Z"}}\n'  # (the reply's tokens written after it)
    lines.append(later)
    live = tmp_path / "live" / ".gemini" / LAYOUT[JSONL]
    live.parent.mkdir(parents=True)
    db = tmp_path / "o.db"
    sql = "SELECT id, started_at, ended_at, message_count FROM sessions"
    for n in range(1, len(lines) + 1):
        with open(live, "ab") as fp:
            fp.write(lines[n - 1])
        ingest(db, {"gemini": tmp_path / "live" / ".gemini"}, sources=gemini_sources())
        whole = tmp_path / f"whole-{n}" / ".gemini" / LAYOUT[JSONL]
        whole.parent.mkdir(parents=True)
        whole.write_bytes(b"".join(lines[:n]))
        fresh = tmp_path / f"whole-{n}.db"
        ingest(fresh, {"gemini": tmp_path / f"whole-{n}" / ".gemini"}, sources=gemini_sources())
        assert rows(db, sql) == rows(fresh, sql), n
    got, expected = snapshot(db), snapshot(fresh)
    assert got == expected, diff(got, expected)
    assert rows(db, sql) == [(JSONL_SESSION, "2026-04-29T21:39:22.319Z", "2026-04-29T21:39:47.250Z", 2)]


def test_messages(db):
    got = db.execute(
        "SELECT uuid, session_id, seq, type, role, content_type, line_no, input_tokens, output_tokens, "
        "cache_read_tokens, text FROM messages ORDER BY session_id, seq"
    ).fetchall()
    assert got == MESSAGES
    # Byte positions of the JSONL lines; the legacy document has none of its own.
    assert db.execute(
        "SELECT byte_offset, byte_length FROM messages WHERE session_id = ? ORDER BY seq", [JSONL_SESSION]
    ).fetchall() == [(211, 119), (383, 731), (383, 731), (1115, 252)]


def test_tool_calls_and_results(db):
    call = f"{JSONL_SESSION}:run_shell_command_stage0"
    assert db.execute("SELECT id, message_uuid, name, timestamp FROM tool_calls").fetchall() == [
        (call, f"{JSONL_SESSION}:g-assistant-1", "run_shell_command", "2026-04-29T21:39:35.364Z")
    ]
    # shell.ts writes no "Exit Code" line for a command that exited 0
    assert db.execute("SELECT tool_use_id, outcome, is_error, exit_code, content FROM tool_results").fetchall() == [
        (call, "succeeded", 0, None, "Output: AgentSessions/\nREADME.md\nProcess Group PGID: 12345")
    ]
    assert db.execute("SELECT COUNT(*) FROM tool_call_files").fetchone() == (0,)  # ls -F writes nothing


def test_document_lines_add_up(db):
    assert db.execute(
        "SELECT lines_read - lines_stored - lines_merged - lines_failed FROM source_files WHERE layout = 'document'"
    ).fetchall() == [(0,), (0,)]


# -- $set updates, re-appended messages, rewinds -------------------------------


def updated_chat(corpus_root) -> bytes:
    """The corpus log as Gemini goes on writing it (lines 6-12): an answer
    that calls a tool, re-appended when the call failed and its tokens came
    in, then re-appended again with nothing new; a summary; a rewind to that
    answer; a new answer; and a ``$set`` of the whole history."""
    pending = {"id": "replace_1", "name": "replace", "status": "executing",
               "args": {"file_path": "/work/README.md", "old_string": "a", "new_string": "b"}}
    failed = {**pending, "status": "error",
              "result": [{"functionResponse": {"id": "replace_1", "name": "replace",
                                               "response": {"error": "0 occurrences found"}}}]}
    answer = {"id": "g-assistant-3", "timestamp": "2026-04-29T21:39:50.000Z", "type": "gemini", "content": "",
              "model": "gemini-3-flash-preview"}
    tokens = {"input": 12300, "output": 30, "cached": 12000, "thoughts": 4, "tool": 0, "total": 12334}
    return (corpus_root / JSONL).read_bytes() + jsonl(
        {**answer, "toolCalls": [pending]},
        {**answer, "toolCalls": [failed], "tokens": tokens},
        {**answer, "toolCalls": [failed], "tokens": tokens},
        {"$set": {"summary": "Listing the stage0 files", "lastUpdated": "2026-04-29T21:40:00.000Z"}},
        {"$rewindTo": "g-assistant-3"},
        {"id": "g-assistant-4", "timestamp": "2026-04-29T21:40:10.000Z", "type": "gemini", "content": "Hi again.",
         "tokens": {"input": 12400, "output": 20, "cached": 12200, "thoughts": 5, "tool": 0, "total": 12425},
         "model": "gemini-3-flash-preview"},
        {"$set": {"messages": [{"id": "g-user-1"}], "lastUpdated": "2026-04-29T21:40:11.000Z"}},
    )


def test_jsonl_log_with_updates(tmp_path, corpus_root):
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)
    path.write_bytes(updated_chat(corpus_root))
    db_path = tmp_path / "obelisk.db"
    summary = ingest(db_path, {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    # merged: the metadata line, the two $set updates of lastUpdated/summary
    # and the second re-append (nothing new). The history $set keeps only
    # g-user-1, taking the three answers after it back, as gemini-cli rolls a
    # request back: a rewind marker. The two tool outputs (line 4, and the
    # failure the first re-append, line 7, brought) are rows of their own.
    assert (summary.lines, summary.messages, summary.merged, summary.errors) == (12, 10, 4, 0)
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [
        (12, 10, 4, 0)
    ]
    # The rewind marker is kept as a log-only row.
    assert rows(db_path, "SELECT line_no, uuid, type, subtype, is_meta, input_tokens, output_tokens, "
                         "cache_read_tokens, logical_parent_uuid FROM messages ORDER BY seq") == [
        (2, f"{JSONL_SESSION}:g-user-1", "user", None, 0, None, None, None, None),
        (4, f"{JSONL_SESSION}:g-assistant-1", "gemini", None, 0, 11855, 81, 0, None),
        (4, f"{JSONL_SESSION}:g-assistant-1:result:run_shell_command_stage0", "tool_result", None, 0,
         None, None, None, None),
        (5, f"{JSONL_SESSION}:g-assistant-2", "gemini", None, 0, 567, 147, 11502, None),
        (6, f"{JSONL_SESSION}:g-assistant-3", "gemini", None, 0, None, None, None, None),
        # the re-append brought the tokens the first copy lacked
        (7, f"{JSONL_SESSION}:g-assistant-3:usage", "gemini", "usage", 1, 300, 34, 12000, None),
        (7, f"{JSONL_SESSION}:g-assistant-3:result:replace_1", "tool_result", None, 0, None, None, None, None),
        (10, f"{JSONL_SESSION}:rewind@{rewind_offset(path)}", "rewind", None, 1, None, None, None,
         f"{JSONL_SESSION}:g-assistant-3"),
        (11, f"{JSONL_SESSION}:g-assistant-4", "gemini", None, 0, 200, 25, 12200, None),
        (12, f"{JSONL_SESSION}:rewind@{sync_offset(path)}", "rewind", None, 1, None, None, None,
         f"{JSONL_SESSION}:g-assistant-1"),
    ]
    # Each rewind took its messages back: kept and searchable, but shadowed,
    # inactive and replaced by its marker; g-user-1 stays current.
    rewind = f"{JSONL_SESSION}:rewind@{rewind_offset(path)}"
    rollback = f"{JSONL_SESSION}:rewind@{sync_offset(path)}"
    assert rows(db_path, "SELECT line_no, surface, visibility, replaced_by FROM messages ORDER BY seq") == [
        (2, "current", "visible", None),
        (4, "shadowed", "inactive", rollback),
        (4, "shadowed", "inactive", rollback),
        (5, "shadowed", "inactive", rollback),
        (6, "shadowed", "inactive", rewind),
        (7, "log-only", "inactive", rewind),  # an accounting row stays log-only
        (7, "shadowed", "inactive", rewind),
        (10, "log-only", "inactive", rollback),  # the first marker too came after g-assistant-1
        (11, "shadowed", "inactive", rollback),
        (12, "log-only", "visible", None),
    ]
    # The $set summary titles the session; tokens are counted once, those of answers taken back too
    # (they were spent); only the prompt still counts as a message.
    assert rows(db_path, "SELECT title, title_source, message_count, input_tokens, output_tokens, cache_read_tokens "
                         "FROM sessions") == [
        ("Listing the stage0 files", "summary", 1, 11855 + 567 + 300 + 200, 81 + 147 + 34 + 25,
         11502 + 12000 + 12200)
    ]
    assert rows(db_path, "SELECT tool_use_id, outcome, is_error, content, message_uuid FROM tool_results ORDER BY 1") == [
        (f"{JSONL_SESSION}:replace_1", "failed", 1, "0 occurrences found",
         f"{JSONL_SESSION}:g-assistant-3:result:replace_1"),
        (f"{JSONL_SESSION}:run_shell_command_stage0", "succeeded", 0,
         "Output: AgentSessions/\nREADME.md\nProcess Group PGID: 12345",
         f"{JSONL_SESSION}:g-assistant-1:result:run_shell_command_stage0"),
    ]
    assert rows(db_path, "SELECT tool_call_id, path FROM tool_call_files") == [
        (f"{JSONL_SESSION}:replace_1", "/work/README.md")
    ]


def sync_offset(path: Path) -> int:
    return path.read_bytes().index(b'{"$set":{"messages"')


def rewind_offset(path: Path) -> int:
    data = path.read_bytes()
    return data.index(b'{"$rewindTo"')


def test_legacy_chat_summary_is_its_title(tmp_path, corpus_root):
    document = orjson.loads((corpus_root / LEGACY).read_bytes())
    document["summary"] = "Greeting"
    path = tmp_path / ".gemini" / LAYOUT[LEGACY]
    path.parent.mkdir(parents=True)
    path.write_bytes(orjson.dumps(document))
    ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert rows(tmp_path / "obelisk.db", "SELECT title, title_source FROM sessions") == [("Greeting", "summary")]


def test_a_legacy_chat_saved_with_a_byte_order_mark_reads_as_without(tmp_path, corpus_root):
    data = (corpus_root / LEGACY).read_bytes()
    for name, content in [("plain", data), ("bom", b"\xef\xbb\xbf" + data)]:
        path = tmp_path / name / ".gemini" / LAYOUT[LEGACY]
        path.parent.mkdir(parents=True)
        path.write_bytes(content)
        summary = ingest(tmp_path / f"{name}.db", {"gemini": tmp_path / name / ".gemini"}, sources=gemini_sources())
        assert summary.errors == 0
    query = "SELECT uuid, role, text FROM messages ORDER BY seq"
    assert rows(tmp_path / "bom.db", query) == rows(tmp_path / "plain.db", query) != []


def test_legacy_chat_rewritten_with_more_messages(tmp_path, corpus_root):
    """Gemini rewrites the whole document on every update: read again, no
    duplicate rows, the same database as reading the final document once."""
    document = orjson.loads((corpus_root / LEGACY).read_bytes())
    grown = {**document, "lastUpdated": "2026-01-16T18:35:00.000Z", "messages": document["messages"] + [
        {"id": "m3", "timestamp": "2026-01-16T18:34:30.000Z", "type": "user", "content": "And goodbye"},
        {"id": "m4", "timestamp": "2026-01-16T18:34:31.000Z", "type": "gemini", "content": "Bye!",
         "tokens": {"input": 20, "output": 2, "cached": 8, "thoughts": 0, "tool": 0, "total": 22}},
    ]}
    live, once = tmp_path / "live" / LAYOUT[LEGACY], tmp_path / "once" / LAYOUT[LEGACY]
    for path in (live, once):
        path.parent.mkdir(parents=True)
    shutil.copy(corpus_root / LEGACY, live)
    ingest(tmp_path / "live.db", {"gemini": tmp_path / "live"}, sources=gemini_sources(), redact=False)
    live.write_bytes(orjson.dumps(grown, option=orjson.OPT_INDENT_2))
    summary = ingest(tmp_path / "live.db", {"gemini": tmp_path / "live"}, sources=gemini_sources(), redact=False)
    assert (summary.files_replayed, summary.messages) == (1, 4)
    once.write_bytes(orjson.dumps(grown, option=orjson.OPT_INDENT_2))
    ingest(tmp_path / "once.db", {"gemini": tmp_path / "once"}, sources=gemini_sources(), redact=False)
    got, expected = snapshot(tmp_path / "live.db"), snapshot(tmp_path / "once.db")
    assert got == expected, diff(got, expected)
    assert rows(tmp_path / "live.db", "SELECT message_count, input_tokens, output_tokens, cache_read_tokens "
                                      "FROM sessions") == [(4, 10 + 12, 5 + 2, 8)]


def test_a_legacy_chat_gone_for_a_run_then_saved_again_grown_is_the_same_chat(tmp_path, corpus_root):
    """A document is saved again whole: gone for a run (moved away, synced), then back
    with a message changed and more, it is the chat read again, not a new file."""
    document = orjson.loads((corpus_root / LEGACY).read_bytes())
    first = {**document["messages"][1], "content": document["messages"][1]["content"] + " (edited)"}
    grown = {**document, "messages": [document["messages"][0], first, {
        "id": "m3", "timestamp": "2026-01-16T18:34:30.000Z", "type": "user", "content": "And goodbye"}]}
    live, once = tmp_path / "live" / LAYOUT[LEGACY], tmp_path / "once" / LAYOUT[LEGACY]
    for path in (live, once):
        path.parent.mkdir(parents=True)
    shutil.copy(corpus_root / LEGACY, live)
    roots = {"gemini": tmp_path / "live"}
    ingest(tmp_path / "live.db", roots, sources=gemini_sources(), redact=False)
    live.unlink()
    assert ingest(tmp_path / "live.db", roots, sources=gemini_sources(), redact=False).files_missing == 1
    live.write_bytes(orjson.dumps(grown, option=orjson.OPT_INDENT_2))
    ingest(tmp_path / "live.db", roots, sources=gemini_sources(), redact=False)
    once.write_bytes(orjson.dumps(grown, option=orjson.OPT_INDENT_2))
    ingest(tmp_path / "once.db", {"gemini": tmp_path / "once"}, sources=gemini_sources(), redact=False)
    got, expected = snapshot(tmp_path / "live.db"), snapshot(tmp_path / "once.db")
    assert got == expected, diff(got, expected)
    assert rows(tmp_path / "live.db", "SELECT path, missing FROM source_files") == [(str(live), 0)]


def test_a_legacy_chat_caught_half_written_keeps_what_it_held(tmp_path, corpus_root):
    """The document is rewritten whole, in place: a read that finds it cut keeps
    the rows of the last whole one, reports the file, and tries again next time."""
    path = tmp_path / "live" / LAYOUT[LEGACY]
    path.parent.mkdir(parents=True)
    data = (corpus_root / LEGACY).read_bytes()
    path.write_bytes(data)
    db_path, roots = tmp_path / "live.db", {"gemini": tmp_path / "live"}
    ingest(db_path, roots, sources=gemini_sources(), redact=False)
    before = snapshot(db_path)
    path.write_bytes(data[:400])
    for _ in range(2):  # the second run reads it again, and reports it once
        summary = ingest(db_path, roots, sources=gemini_sources(), redact=False)
        assert (summary.errors, summary.files_replayed) == (1, 0)
        assert rows(db_path, "SELECT line_no, reason FROM ingest_errors") == [
            (0, "invalid JSON: unexpected end of data: line 13 column 21 (char 400)")]
        assert {k: v for k, v in snapshot(db_path).items() if k != "ingest_errors"} == {
            k: v for k, v in before.items() if k != "ingest_errors"}
    path.write_bytes(data)
    summary = ingest(db_path, roots, sources=gemini_sources(), redact=False)
    assert (summary.errors, summary.files_replayed) == (0, 1)
    assert snapshot(db_path) == before


def test_jsonl_log_written_in_random_chunks_gives_the_same_database(tmp_path, corpus_root):
    data = updated_chat(corpus_root)
    whole, live = tmp_path / "whole" / LAYOUT[JSONL], tmp_path / "live" / LAYOUT[JSONL]
    for path in (whole, live):
        path.parent.mkdir(parents=True)
    whole.write_bytes(data)
    ingest(tmp_path / "whole.db", {"gemini": tmp_path / "whole"}, sources=gemini_sources(), redact=False)
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(data)), 25))
    with open(live, "wb") as fp:
        for start, end in zip([0] + cuts, cuts + [len(data)]):
            fp.write(data[start:end])
            fp.flush()
            ingest(tmp_path / "live.db", {"gemini": tmp_path / "live"}, sources=gemini_sources(), redact=False)
    got, expected = snapshot(tmp_path / "live.db"), snapshot(tmp_path / "whole.db")
    assert got == expected, diff(got, expected)


def test_subagent_chat_lineage_both_ways(tmp_path, corpus_root):
    """A subagent's chat beside its parent's: ``chats/<parent id>/<id>.jsonl``."""
    home = gemini_home(tmp_path / ".gemini", corpus_root, [JSONL])
    child = home / CHATS / "gemini_stage0_jsonl" / "investigator-1.jsonl"
    child.parent.mkdir()
    child.write_bytes(jsonl(
        {"sessionId": "investigator-1", "projectHash": PROJECT, "startTime": "2026-04-29T21:39:36.000Z",
         "kind": "subagent", "directories": ["/work/agent-sessions"]},
        {"id": "s-user-1", "timestamp": "2026-04-29T21:39:36.100Z", "type": "user", "content": "Find the README."},
        {"id": "s-gemini-1", "timestamp": "2026-04-29T21:39:38.000Z", "type": "gemini", "content": "It is README.md.",
         "tokens": {"input": 900, "output": 12, "cached": 0, "thoughts": 0, "tool": 0, "total": 912}},
    ))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": home}, sources=gemini_sources())
    assert rows(db_path, "SELECT id, parent_session_id, relationship, agent_id, cwd, project, message_count "
                         "FROM sessions ORDER BY id") == [
        ("gemini:gemini_stage0_jsonl", None, None, None, None, f"gemini-tmp:{PROJECT}", 2),
        ("gemini:investigator-1", "gemini:gemini_stage0_jsonl", "subagent", "investigator-1",
         "/work/agent-sessions", "-work-agent-sessions", 2),
    ]
    assert rows(db_path, "SELECT id FROM sessions WHERE parent_session_id = ?", [JSONL_SESSION]) == [
        ("gemini:investigator-1",)
    ]
    assert rows(db_path, "SELECT agent_id, session_id, child_session_id FROM subagents") == [
        ("investigator-1", JSONL_SESSION, "gemini:investigator-1")
    ]
    assert rows(db_path, "SELECT session_id, COUNT(*), COUNT(agent_id) FROM messages GROUP BY 1 ORDER BY 1") == [
        (JSONL_SESSION, 4, 0), ("gemini:investigator-1", 2, 2),
    ]


def test_a_subagent_is_typed_and_described_by_the_call_that_ran_it(tmp_path):
    call = {"id": "codebase_investigator-1", "name": "codebase_investigator", "agentId": "inv-1",
            "args": {"objective": "Find where the parser reads tokens."}, "status": "success",
            "result": [{"functionResponse": {"id": "codebase_investigator-1", "name": "codebase_investigator",
                                             "response": {"output": "In gemini.py."}}}]}
    db_path = ingested_chat(tmp_path, {"id": "u1", "type": "user", "content": "where?"},
                            {"id": "g1", "type": "gemini", "content": "", "toolCalls": [call]})
    child = tmp_path / ".gemini" / CHATS / "t" / "inv-1.jsonl"
    child.parent.mkdir()
    child.write_bytes(jsonl({"sessionId": "inv-1", "projectHash": PROJECT, "kind": "subagent"},
                            {"id": "s1", "type": "user", "content": "Find where the parser reads tokens."}))
    ingest(db_path, {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert rows(db_path, "SELECT agent_id, session_id, child_session_id, parent_tool_use_id, agent_type, description "
                         "FROM subagents") == [
        ("inv-1", "gemini:t", "gemini:inv-1", "gemini:t:codebase_investigator-1", "codebase_investigator",
         "Find where the parser reads tokens.")]
    assert rows(db_path, "SELECT agent_type FROM sessions WHERE id = 'gemini:inv-1'") == [("codebase_investigator",)]


def rewound_twice(tmp_path) -> tuple[Path, str, str]:
    """A chat rewound twice, ingested: the database and the two markers' uuids."""
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)

    def message(id, type, text, minute):
        return {"id": id, "timestamp": f"2026-05-01T10:{minute:02d}:00.000Z", "type": type, "content": text}

    path.write_bytes(jsonl(
        {"sessionId": "twice", "projectHash": PROJECT, "startTime": "2026-05-01T10:00:00.000Z",
         "lastUpdated": "2026-05-01T10:00:00.000Z", "kind": "main"},
        message("u1", "user", "first question", 1),
        message("g1", "gemini", "first answer", 2),
        message("u2", "user", "second question", 3),
        message("g2", "gemini", "second answer", 4),
        {"$rewindTo": "u2"},
        message("u3", "user", "second question again", 5),
        {"$rewindTo": "g1"},
        message("g3", "gemini", "another first answer", 6),
    ))
    ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    data = path.read_bytes()
    first, second = (f"gemini:twice:rewind@{data.index(jsonl({'$rewindTo': t}))}" for t in ("u2", "g1"))
    return tmp_path / "obelisk.db", first, second


def test_a_later_rewind_to_an_earlier_message_takes_back_more(tmp_path):
    """Rewound twice: the second ``$rewindTo`` reaches past the first marker.
    Each taken-back row names the marker that took it back first."""
    db, first, second = rewound_twice(tmp_path)
    assert rows(db, "SELECT uuid, surface, visibility, replaced_by FROM messages ORDER BY seq") == [
        ("gemini:twice:u1", "current", "visible", None),
        ("gemini:twice:g1", "shadowed", "inactive", second),
        ("gemini:twice:u2", "shadowed", "inactive", first),
        ("gemini:twice:g2", "shadowed", "inactive", first),
        (first, "log-only", "inactive", second),
        ("gemini:twice:u3", "shadowed", "inactive", second),
        (second, "log-only", "visible", None),
        ("gemini:twice:g3", "current", "visible", None),
    ]
    assert rows(db, "SELECT message_count FROM sessions") == [(2,)]


def test_trace_event_replaces_only_shadowed_events(tmp_path):
    """The first marker (seq 5), taken back by the second (seq 7), is log-only:
    traceEvent gives it no replacement, and a chain through it ends there."""
    from datasette_obelisk.query.session_query import SessionQuery

    db, _, _ = rewound_twice(tmp_path)
    sq = SessionQuery(sqlite3.connect(db))
    trace = lambda seq: {k: v for k, v in sq.traceEvent({"sessionId": "gemini:twice", "seq": seq}).items()  # noqa: E731
                         if k in ("replacedBy", "replacementChain", "replacedEventSeqs")}
    assert trace(3) == {"replacedBy": 5, "replacementChain": [5], "replacedEventSeqs": []}
    assert trace(5) == {"replacementChain": [], "replacedEventSeqs": [3, 4]}
    assert trace(7) == {"replacementChain": [], "replacedEventSeqs": [2, 6]}


def test_failed_shell_command_is_stored_failed(tmp_path):
    """gemini-cli's shell tool says ``success`` when the command ran, whatever
    its exit status; ``Exit Code: 1`` in the output makes the call failed."""
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)
    call = {"id": "shell-1", "name": "run_shell_command", "args": {"command": "false"}, "status": "success",
            "timestamp": "2026-05-01T10:00:03.500Z",
            "result": [{"functionResponse": {"id": "shell-1", "name": "run_shell_command",
                                             "response": {"output": "Output: (empty)\nExit Code: 1\nProcess Group PGID: 9"}}}]}
    path.write_bytes(jsonl(
        {"sessionId": "exit", "projectHash": PROJECT, "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"},
        {"id": "g1", "timestamp": "2026-05-01T10:00:02.000Z", "type": "gemini", "content": "", "toolCalls": [call]},
    ))
    ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert rows(tmp_path / "obelisk.db", "SELECT tool_use_id, outcome, is_error, exit_code FROM tool_results") == [
        ("gemini:exit:shell-1", "failed", 1, 1)
    ]


def test_directories_set_later_give_the_cwd_and_project(tmp_path, corpus_root):
    """Gemini records the workspace directories with a ``$set`` (here with the
    summary, on one line after the corpus log): the first is the cwd."""
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)
    path.write_bytes((corpus_root / JSONL).read_bytes() + jsonl(
        {"$set": {"directories": ["/home/u/proj"], "summary": "Listing files"}}
    ))
    ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    # The messages, written before the folder was named, carry no cwd: the project's path is the session's own.
    assert rows(tmp_path / "obelisk.db", "SELECT id, cwd, project, project_path, title, title_source FROM sessions") == [
        (JSONL_SESSION, "/home/u/proj", "-home-u-proj", "/home/u/proj", "Listing files", "summary")
    ]


def test_messages_carry_the_folder_named_when_they_were_written(tmp_path, corpus_root):
    """A chat's messages take its folder as known at their line (its
    ``.project_root``, then a ``directories`` update), as Claude Code and
    Codex lines carry theirs: a search narrowed by cwd finds them."""
    from datasette_obelisk.query import obelisk

    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)
    (path.parent.parent / ".project_root").write_text("/home/u/root")
    path.write_bytes(jsonl(
        {"sessionId": "where", "projectHash": PROJECT, "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"},
        {"id": "u1", "timestamp": "2026-05-01T10:00:01.000Z", "type": "user", "content": [{"text": "walrus one"}]},
        {"$set": {"directories": ["/home/u/proj"]}},
        {"id": "g1", "timestamp": "2026-05-01T10:00:02.000Z", "type": "gemini", "content": "walrus two"},
        {"id": "u2", "timestamp": "2026-05-01T10:00:03.000Z", "type": "user", "content": [{"text": "walrus three"}]},
    ))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert rows(db_path, "SELECT uuid, cwd FROM messages ORDER BY seq") == [
        ("gemini:where:u1", "/home/u/root"), ("gemini:where:g1", "/home/u/proj"), ("gemini:where:u2", "/home/u/proj"),
    ]
    assert rows(db_path, "SELECT cwd, project_path FROM sessions") == [("/home/u/proj", "/home/u/proj")]
    conn = connect_readonly(db_path)
    found = obelisk.search(conn, "walrus", {"cwd": "/home/u/proj"})
    assert sorted(hit["message"]["uuid"] for hit in found) == ["gemini:where:g1", "gemini:where:u2"]


def test_migrated_chat_is_titled_by_its_summary(tmp_path, corpus_root):
    """Resuming a legacy chat copies it to ``.jsonl`` with its summary and
    directories on the first line; the summary, not the first prompt, titles it."""
    home = gemini_home(tmp_path / ".gemini", corpus_root, [LEGACY])
    document = orjson.loads((corpus_root / LEGACY).read_bytes())
    first = {key: document[key] for key in ("sessionId", "projectHash", "startTime", "lastUpdated", "kind")}
    (home / LAYOUT[LEGACY]).with_suffix(".jsonl").write_bytes(jsonl(
        {**first, "directories": ["/home/u/gproj"], "summary": "Greeting chat"},
        *document["messages"],
        {"$set": {"sessionId": document["sessionId"]}},
    ))
    ingest(tmp_path / "obelisk.db", {"gemini": home}, sources=gemini_sources())
    assert rows(tmp_path / "obelisk.db", "SELECT id, title, title_source, cwd, message_count FROM sessions") == [
        (LEGACY_SESSION, "Greeting chat", "summary", "/home/u/gproj", 2)
    ]


def test_history_sync_after_compression_is_a_compaction(tmp_path):
    """gemini-cli compresses a chat by replacing its history with a summary,
    the model's acknowledgement and the turns it keeps (one ``$set`` of
    ``messages``): the summary and acknowledgement are stored, the replaced
    messages shadowed by the summary, the kept prompt stays current once."""
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)

    def message(id, type, text, second):
        return {"id": id, "timestamp": f"2026-05-01T10:00:{second:02d}.000Z", "type": type, "content": [{"text": text}]}

    kept = message("u3", "user", "Actually stop", 5)
    summary = message("c1", "user", "COMPRESSED SUMMARY OF EARLIER CONVERSATION", 9)
    path.write_bytes(jsonl(
        {"sessionId": "zip", "projectHash": PROJECT, "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"},
        message("u1", "user", "Write a.py", 1), message("g1", "gemini", "Done.", 2),
        message("u2", "user", "Try again", 3), message("g2", "gemini", "Trying.", 4), {"$rewindTo": "u2"},
        kept, message("g3", "gemini", "Stopped.", 6),
        {"$set": {"messages": [summary, message("a1", "gemini", "Got it.", 9), kept],
                  "lastUpdated": "2026-05-01T10:00:09.000Z"}},
    ))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    data = path.read_bytes()
    rewind, boundary = (f"gemini:zip:{kind}@{data.index(prefix)}" for kind, prefix in
                        (("rewind", b'{"$rewindTo"'), ("compaction", b'{"$set":{"messages"')))
    # 9 lines: the metadata line is merged; the $set gives three rows (boundary, summary, acknowledgement)
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [
        (9, 10, 1, 0)
    ]
    assert rows(db_path, "SELECT line_no, uuid, is_compact_summary, surface, visibility, replaced_by "
                         "FROM messages ORDER BY seq") == [
        (2, "gemini:zip:u1", 0, "shadowed", "visible", "gemini:zip:c1"),
        (3, "gemini:zip:g1", 0, "shadowed", "visible", "gemini:zip:c1"),
        (4, "gemini:zip:u2", 0, "shadowed", "inactive", rewind),
        (5, "gemini:zip:g2", 0, "shadowed", "inactive", rewind),
        (6, rewind, 0, "log-only", "visible", None),
        (7, "gemini:zip:u3", 0, "current", "visible", None),
        (8, "gemini:zip:g3", 0, "shadowed", "visible", "gemini:zip:c1"),
        (9, boundary, 0, "log-only", "visible", None),
        (9, "gemini:zip:c1", 1, "current", "visible", None),
        (9, "gemini:zip:a1", 0, "current", "visible", None),
    ]
    assert rows(db_path, "SELECT id, source, content, message_uuid FROM summaries") == [
        ("gemini:zip:c1", "compaction", "COMPRESSED SUMMARY OF EARLIER CONVERSATION", "gemini:zip:c1")
    ]
    assert rows(db_path, "SELECT title, title_source FROM sessions") == [("Write a.py", "first_prompt")]
    # The model's history is the $set's: summary, acknowledgement, then the kept prompt.
    surface = SessionQuery(connect_readonly(db_path)).readSurface("gemini:zip")
    assert [e["id"] for e in surface["events"]] == ["gemini:zip:c1", "gemini:zip:a1", "gemini:zip:u3"]


def synced_chat() -> bytes:
    """A chat whose two history ``$set`` lines (6 and 8) give several rows
    each. gemini-cli compresses it: a boundary, the summary, an
    acknowledgement that calls a tool and the tool's output (four rows); then it rolls a failed
    prompt back out of the history: a rewind marker."""
    def message(id, type, text, second, **more):
        return {"id": id, "timestamp": f"2026-05-01T10:00:{second:02d}.000Z", "type": type,
                "content": [{"text": text}], **more}

    read = {"id": "read_1", "name": "read_file", "args": {"file_path": "/w/a.py"}, "status": "success",
            "result": [{"functionResponse": {"id": "read_1", "name": "read_file", "response": {"output": "x = 1"}}}]}
    kept = [message("u2", "user", "Now b.py", 3), message("g2", "gemini", "Done too.", 4)]
    history = [message("c1", "user", "SUMMARY: a.py written", 5),
               message("ack", "gemini", "Got it.", 5, toolCalls=[read]), *kept]
    return jsonl(
        {"sessionId": "sync", "projectHash": PROJECT, "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"},
        message("u1", "user", "Write a.py", 1), message("g1", "gemini", "Done.", 2), *kept,
        {"$set": {"messages": history, "lastUpdated": "2026-05-01T10:00:05.000Z"}},
        message("u3", "user", "And c.py", 6),
        {"$set": {"messages": history, "lastUpdated": "2026-05-01T10:00:07.000Z"}},
        message("u4", "user", "Try c.py again", 8), message("g4", "gemini", "Done at last.", 9),
    )


def synced(tmp_path) -> tuple[Path, Path]:
    """``synced_chat`` ingested: the log and the database."""
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)
    path.write_bytes(synced_chat())
    ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    return path, tmp_path / "obelisk.db"


def sync_rows(path: Path) -> dict[int, list[str]]:
    """The uuids of the rows of lines 6 and 8, by line (see ``synced_chat``)."""
    data = path.read_bytes()
    prefix = b'{"$set":{"messages"'
    first, second = f"gemini:sync:compaction@{data.index(prefix)}", f"gemini:sync:rewind@{data.rindex(prefix)}"
    return {6: [first, "gemini:sync:c1", "gemini:sync:ack", "gemini:sync:ack:result:read_1"], 8: [second]}


def test_history_sync_that_takes_back_the_last_prompt_rewinds_it(tmp_path):
    """The prompt the second ``$set`` took back (u3) is rewound, as by a
    ``$rewindTo``; the compression's dropped messages are shadowed, still
    visible, replaced by its summary; what either kept stays current."""
    path, db_path = synced(tmp_path)
    (first, summary, _, _), (rewind,) = sync_rows(path).values()
    assert rows(db_path, "SELECT line_no, uuid, is_compact_summary, surface, visibility, replaced_by "
                         "FROM messages ORDER BY seq") == [
        (2, "gemini:sync:u1", 0, "shadowed", "visible", summary),
        (3, "gemini:sync:g1", 0, "shadowed", "visible", summary),
        (4, "gemini:sync:u2", 0, "current", "visible", None),
        (5, "gemini:sync:g2", 0, "current", "visible", None),
        (6, first, 0, "log-only", "visible", None),
        (6, summary, 1, "current", "visible", None),
        (6, "gemini:sync:ack", 0, "current", "visible", None),
        (6, "gemini:sync:ack:result:read_1", 0, "current", "visible", None),
        (7, "gemini:sync:u3", 0, "shadowed", "inactive", rewind),
        (8, rewind, 0, "log-only", "visible", None),
        (9, "gemini:sync:u4", 0, "current", "visible", None),
        (10, "gemini:sync:g4", 0, "current", "visible", None),
    ]
    assert rows(db_path, "SELECT uuid, meta_json FROM messages WHERE subtype = 'compact_boundary' ORDER BY seq") == [
        (first, '{"preserved_uuids":["gemini:sync:u2","gemini:sync:g2"]}'),
    ]
    # Shadowed is not hidden: every prompt and answer still counts but the one taken back;
    # the summary, in the user's name, does not.
    assert rows(db_path, "SELECT message_count, title FROM sessions") == [(7, "Write a.py")]
    assert rows(db_path, "SELECT id, message_uuid FROM summaries") == [(summary, summary)]


def test_the_last_kept_message_re_appended_after_a_sync_adds_its_token_counts(tmp_path):
    def message(id, type, text, **more):
        return {"id": id, "timestamp": "2026-05-01T10:00:00.000Z", "type": type, "content": [{"text": text}], **more}

    tokens = {"input": 100, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 120}
    history = [message("c1", "user", "SUMMARY"), message("u2", "user", "Now b.py"), message("g2", "gemini", "Done.")]
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)
    path.write_bytes(jsonl(
        {"sessionId": "re", "projectHash": PROJECT, "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"},
        message("u1", "user", "Write a.py"), message("u2", "user", "Now b.py"), message("g2", "gemini", "Done."),
        {"$set": {"messages": history}},
        message("g2", "gemini", "Done.", tokens=tokens),  # gemini-cli re-appends it with its counts
    ))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged FROM source_files") == [(6, 6, 1)]
    offset = path.read_bytes().index(b'{"$set"')
    boundary = f"gemini:re:compaction@{offset}"
    assert rows(db_path, "SELECT line_no, uuid, subtype, input_tokens, output_tokens FROM messages WHERE line_no >= 4 ORDER BY seq") == [
        (4, "gemini:re:g2", None, None, None),
        (5, boundary, "compact_boundary", None, None),
        (5, "gemini:re:c1", None, None, None),
        (6, "gemini:re:g2:usage", "usage", 100, 20),
    ]


def test_each_row_of_a_sync_line_reads_back_that_line(tmp_path):
    """One ``$set`` line gives several rows: each has its own uuid and the
    line's own offset and length, so raw() of each reads that line again."""
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.readonly import connect_readonly

    path, db_path = synced(tmp_path)
    data = path.read_bytes()
    lines = data.split(b"\n")
    offsets = [sum(len(line) + 1 for line in lines[:index]) for index in range(len(lines))]
    expected = [(line_no, uuid, offsets[line_no - 1], len(lines[line_no - 1]))
                for line_no, uuids in sync_rows(path).items() for uuid in uuids]
    assert rows(db_path, "SELECT line_no, uuid, byte_offset, byte_length FROM messages "
                         "WHERE line_no IN (6, 8) ORDER BY seq") == expected
    with connect_readonly(db_path) as conn:
        assert [obelisk.raw(conn, uuid, {"limit": 100_000})["text"] for _, uuid, _, _ in expected] == [
            lines[5].decode()] * 4 + [lines[7].decode()]
    # 10 lines, 12 rows: none of a sync line's rows was merged away as a duplicate.
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [
        (10, 12, 1, 0)
    ]
    assert rows(db_path, "SELECT id, message_uuid FROM tool_calls") == [("gemini:sync:read_1", "gemini:sync:ack")]


def test_raw_of_a_chat_document_message_reads_that_message(tmp_path, corpus_root):
    """A legacy ``.json`` chat is one document: each message's row keeps the
    bytes of its own item, so raw() reads that message, not the file's head."""
    from datasette_obelisk.query import obelisk

    source = corpus_root / LEGACY
    path = tmp_path / ".gemini" / LAYOUT[LEGACY]
    path.parent.mkdir(parents=True)
    shutil.copyfile(source, path)
    ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources(), redact=False)
    data = source.read_bytes()
    items = orjson.loads(data)["messages"]
    with connect_readonly(tmp_path / "obelisk.db") as conn:
        stored = conn.execute("SELECT line_no, uuid, byte_offset, byte_length FROM messages ORDER BY seq").fetchall()
        assert [(line_no, uuid) for line_no, uuid, _, _ in stored] == [
            (1, f"{LEGACY_SESSION}:{items[0]['id']}"), (2, f"{LEGACY_SESSION}:{items[1]['id']}")]
        for line_no, uuid, offset, length in stored:
            text = obelisk.raw(conn, uuid, {"limit": 100_000})["text"]
            assert text.encode() == data[offset : offset + length]
            assert orjson.loads(text) == items[line_no - 1]


def test_sync_lines_appended_piece_by_piece_give_the_same_rows(tmp_path):
    """Ingested after each piece is appended (a line cut in its middle, a
    whole line still without its newline, then the newline), and read again
    from the start as after a parser version bump, the log gives the
    database reading it whole gives."""
    data = synced_chat()
    whole, live = tmp_path / "whole" / LAYOUT[JSONL], tmp_path / "live" / LAYOUT[JSONL]
    for path in (whole, live):
        path.parent.mkdir(parents=True)
    whole.write_bytes(data)
    ingest(tmp_path / "whole.db", {"gemini": tmp_path / "whole"}, sources=gemini_sources(), redact=False)
    ends = [index for index, byte in enumerate(data) if byte == ord("\n")]
    cuts = sorted({cut for start, end in zip([-1] + ends, ends) for cut in ((start + end) // 2, end, end + 1)})
    with open(live, "wb") as fp:
        for start, end in zip([0] + cuts, cuts):
            fp.write(data[start:end])
            fp.flush()
            ingest(tmp_path / "live.db", {"gemini": tmp_path / "live"}, sources=gemini_sources(), redact=False)
    assert live.read_bytes() == data
    expected = snapshot(tmp_path / "whole.db")
    got = snapshot(tmp_path / "live.db")
    assert got == expected, diff(got, expected)
    conn = sqlite3.connect(tmp_path / "live.db")
    conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.commit()
    conn.close()
    summary = ingest(tmp_path / "live.db", {"gemini": tmp_path / "live"}, sources=gemini_sources(), redact=False)
    assert (summary.files_replayed, summary.messages) == (1, 12)
    got = snapshot(tmp_path / "live.db")
    assert got == expected, diff(got, expected)


def test_a_reply_with_its_thoughts_says_where_they_end(db, ingested):
    from datasette_obelisk.query.history import history_read

    # small.json's m2: thoughts "Short reasoning placeholder." (28 characters), content "Hi!".
    session, meta = db.execute(
        "SELECT session_id, meta_json FROM messages WHERE content_type = 'mixed'"
    ).fetchone()
    assert meta == '{"thinking_chars":28}'
    read = sqlite3.connect(f"file:{db.execute('PRAGMA database_list').fetchone()[2]}?mode=ro", uri=True)
    read.row_factory = sqlite3.Row
    entries = history_read(read, sessionId=session)["entries"]
    assert [(e["type"], e["content"]) for e in entries] == [("user", "Hello"), ("assistant", "Hi!")]
    # `obelisk read` shows the thoughts apart too
    from click.testing import CliRunner

    from datasette_obelisk.cli import cli

    path = db.execute("PRAGMA database_list").fetchone()[2]
    out = CliRunner().invoke(cli, ["read", session, "--db", path]).output
    assert "assistant (thinking):\nShort reasoning placeholder.\n\n[" in out
    assert out.rstrip().endswith("assistant (mixed):\nHi!")


def test_a_tool_output_is_found_by_search(db):
    from datasette_obelisk.query import obelisk

    read = sqlite3.connect(f"file:{db.execute('PRAGMA database_list').fetchone()[2]}?mode=ro", uri=True)
    read.row_factory = sqlite3.Row
    # jsonl_v040.jsonl line 4: run_shell_command's output, written inside the message that called it.
    [hit] = obelisk.search(read, "AgentSessions")
    assert (hit["message"]["uuid"], hit["message"]["content_type"]) == (
        f"{JSONL_SESSION}:g-assistant-1:result:run_shell_command_stage0", "tool_result"
    )


CALL_A = {"id": "A", "name": "read_file", "args": {"file_path": "/w/a.py"}, "status": "success",
          "result": [{"functionResponse": {"id": "A", "name": "read_file", "response": {"output": "x = 1"}}}]}


def ingested_chat(tmp_path, *records) -> Path:
    path = tmp_path / ".gemini" / LAYOUT[JSONL]
    path.parent.mkdir(parents=True)
    path.write_bytes(jsonl(
        {"sessionId": "t", "projectHash": PROJECT, "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"}, *records))
    ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    return tmp_path / "obelisk.db"


@pytest.mark.parametrize("how", ["rewindTo", "history"])
def test_taking_back_from_a_tool_response_takes_back_what_came_after_it(tmp_path, how):
    """A tool response has no row of its own: a rewind to it starts at the next row."""
    u1 = {"id": "u1", "type": "user", "content": "go", "timestamp": "2026-05-01T10:00:01.000Z"}
    g1 = {"id": "g1", "type": "gemini", "content": "", "toolCalls": [CALL_A], "timestamp": "2026-05-01T10:00:02.000Z"}
    u2 = {"id": "u2", "type": "user", "content": [{"functionResponse": CALL_A["result"][0]["functionResponse"]}]}
    g2 = {"id": "g2", "type": "gemini", "content": "partial answer", "timestamp": "2026-05-01T10:00:03.000Z"}
    back = {"$rewindTo": "u2"} if how == "rewindTo" else {
        "$set": {"messages": [u1, g1], "lastUpdated": "2026-05-01T10:00:04.000Z"}}
    db_path = ingested_chat(tmp_path, u1, g1, u2, g2, back,
                            {"id": "u3", "type": "user", "content": "again", "timestamp": "2026-05-01T10:00:05.000Z"})
    assert rows(db_path, "SELECT uuid, surface, visibility FROM messages WHERE type != 'rewind' ORDER BY seq") == [
        ("gemini:t:u1", "current", "visible"), ("gemini:t:g1", "current", "visible"),
        ("gemini:t:g1:result:A", "current", "visible"), ("gemini:t:g2", "shadowed", "inactive"),
        ("gemini:t:u3", "current", "visible"),
    ]
    assert rows(db_path, "SELECT message_count, ended_at FROM sessions") == [(2, "2026-05-01T10:00:05.000Z")]


def test_a_compaction_keeps_every_row_of_a_message_it_keeps(tmp_path):
    thought = [{"subject": "Plan", "description": "read a.py"}]
    g1 = {"id": "g1", "type": "gemini", "content": "", "thoughts": thought}
    u2 = {"id": "u2", "type": "user", "content": [{"functionResponse": {"id": "B", "name": "read_file",
                                                                          "response": {"output": "y = 2"}}}]}
    summary = {"id": "sum", "type": "user", "content": "SUMMARY"}
    db_path = ingested_chat(
        tmp_path, {"id": "u1", "type": "user", "content": "read it"}, g1, {**g1, "toolCalls": [CALL_A]}, u2,
        {"$set": {"messages": [summary, {**g1, "toolCalls": [CALL_A]}, u2]}},
        {"id": "g3", "type": "gemini", "content": "Done."},
    )
    assert rows(db_path, "SELECT uuid, surface FROM messages WHERE uuid LIKE 'gemini:t:g1%' OR uuid LIKE 'gemini:t:u%' "
                         "ORDER BY seq") == [
        ("gemini:t:u1", "shadowed"), ("gemini:t:g1", "current"), (rows(db_path, (
            "SELECT uuid FROM messages WHERE uuid LIKE 'gemini:t:g1:calls@%'"))[0][0], "current"),
        ("gemini:t:g1:result:A", "current"), ("gemini:t:u2:result:B", "current"),
    ]


def test_generated_chats_ingested_as_they_grow_give_a_whole_ingests_rows(tmp_path):
    """Each generated log written in pieces, cut anywhere, with an ingest after each."""
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "whole", seed=2, target_bytes=400_000, claude=False, codex=False, gemini=True)
    ingest(tmp_path / "whole.db", {"gemini": tmp_path / "whole" / ".gemini"}, sources=gemini_sources(), redact=False)
    shutil.copytree(tmp_path / "whole", tmp_path / "live")
    logs = sorted((tmp_path / "live").rglob("*.jsonl"))
    data = {path: path.read_bytes() for path in logs}
    rng = random.Random(9)
    cuts = {path: sorted(rng.sample(range(1, len(blob)), 6)) + [len(blob)] for path, blob in data.items()}
    for path in logs:
        path.write_bytes(b"")
    for step in range(7):
        for path in logs:
            path.write_bytes(data[path][: cuts[path][step]])
        ingest(tmp_path / "live.db", {"gemini": tmp_path / "live" / ".gemini"}, sources=gemini_sources(), redact=False)
    got, expected = snapshot(tmp_path / "live.db"), snapshot(tmp_path / "whole.db")
    assert got == expected, diff(got, expected)


def test_each_bad_message_of_a_chat_document_has_its_error_row(tmp_path, corpus_root):
    # (keyed by file and byte offset alone, and each at offset 0, they kept the last one's row)
    chat = orjson.loads((corpus_root / LEGACY).read_bytes())
    chat["messages"] = [chat["messages"][0], 1, "two", chat["messages"][1], None]
    path = tmp_path / ".gemini" / LAYOUT[LEGACY]
    path.parent.mkdir(parents=True)
    path.write_bytes(blob := orjson.dumps(chat))
    summary = ingest(tmp_path / "obelisk.db", {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert summary.errors == 3
    one, null = blob.index(b'},1,"two",{') + 2, blob.rindex(b"},null]}") + 2
    assert rows(tmp_path / "obelisk.db", "SELECT line_no, byte_offset, byte_length, reason FROM ingest_errors ORDER BY line_no") == [
        (2, one, 1, "message is not a message record"), (3, one + 2, 5, "message is not a message record"),
        (5, null, 4, "message is not a message record")]


def test_a_database_keyed_by_offset_alone_reads_again_the_files_whose_error_rows_it_lost(tmp_path, corpus_root):
    test_each_bad_message_of_a_chat_document_has_its_error_row(tmp_path, corpus_root)
    db_path = tmp_path / "obelisk.db"
    old = sqlite3.connect(db_path)
    with old:  # as m001 made it, with the one row it kept
        old.execute("DROP TABLE ingest_errors")
        old.execute("""CREATE TABLE ingest_errors (id INTEGER PRIMARY KEY, file_id INTEGER, path TEXT NOT NULL,
                       line_no INTEGER, byte_offset INTEGER, byte_length INTEGER, reason TEXT NOT NULL,
                       created_at TEXT NOT NULL, UNIQUE (path, byte_offset))""")
        old.execute("INSERT INTO ingest_errors (file_id, path, line_no, byte_offset, byte_length, reason, created_at) "
                    "SELECT id, path, 5, 0, size, 'message is not a message record', '2026-01-01' FROM source_files")
        old.execute("DELETE FROM _sqlite_migrations WHERE name = 'm045_key_ingest_errors_by_line'")
    old.close()
    summary = ingest(db_path, {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert (summary.files_replayed, summary.errors) == (1, 3)
    assert rows(db_path, "SELECT line_no, reason FROM ingest_errors ORDER BY line_no") == [
        (2, "message is not a message record"), (3, "message is not a message record"),
        (5, "message is not a message record")]


def chat_in(folder: Path, session: str, project_hash: str, **extra) -> None:
    """A gemini-cli 0.4x+ chat log in ``folder``'s ``chats/``."""
    chats = folder / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    (chats / f"session-2026-04-29T21-39-{session[:8]}.jsonl").write_bytes(jsonl(
        {"sessionId": session, "projectHash": project_hash, "startTime": "2026-04-29T21:39:22.319Z", "kind": "main", **extra},
        {"id": "u1", "timestamp": "2026-04-29T21:39:33.155Z", "type": "user", "content": [{"text": "Hi"}]},
    ))


def sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def projects(db_path: Path) -> list:
    return rows(db_path, "SELECT id, cwd, project, project_source FROM sessions ORDER BY id")


def test_a_chat_in_a_folder_named_by_a_slug_takes_its_root_from_the_folder_or_the_registry(tmp_path):
    """gemini-cli 0.3x+ (``ProjectRegistry.getShortId``): ``tmp/<slug of the root's basename>``,
    the root in its ``.project_root`` and in ``projects.json`` beside ``tmp/``."""
    home = tmp_path / ".gemini"
    chat_in(home / "tmp" / "myapp", "s-marker", sha256("/home/u/myapp"))
    (home / "tmp" / "myapp" / ".project_root").write_text("/home/u/myapp")
    chat_in(home / "tmp" / "myapp-1", "s-registry", sha256("/srv/myapp"))  # its marker lost
    (home / "projects.json").write_text(json_text({"projects": {"/home/u/myapp": "myapp", "/srv/myapp": "myapp-1"}}))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": home}, sources=gemini_sources())
    assert projects(db_path) == [
        ("gemini:s-marker", "/home/u/myapp", "-home-u-myapp", "log"),
        ("gemini:s-registry", "/srv/myapp", "-srv-myapp", "log"),
    ]


def test_a_chat_in_a_folder_named_by_the_hash_of_its_root_takes_the_root_that_hashes_so(tmp_path):
    """Before the registry, ``tmp/<SHA-256 of the root>``; the migration to a slug folder copies
    the hash folder and leaves it. A root named anywhere (a slug folder's or ``history/``'s
    ``.project_root``, ``projects.json``) whose hash is the folder's name is its root."""
    home = tmp_path / ".gemini"
    for root, slug in (("/home/u/myapp", "myapp"), ("/home/u/web", "web"), ("/home/u/api", "api")):
        chat_in(home / "tmp" / sha256(root), f"s-{slug}", sha256(root))
    (home / "tmp" / "myapp").mkdir(parents=True)
    (home / "tmp" / "myapp" / ".project_root").write_text("/home/u/myapp")
    (home / "history" / "web").mkdir(parents=True)
    (home / "history" / "web" / ".project_root").write_text("/home/u/web")
    (home / "projects.json").write_text(json_text({"projects": {"/home/u/api": "api"}}))
    # migrated: the slug folder holds a copy of the hash folder's chat (one session)
    chat_in(home / "tmp" / "myapp", "s-myapp", sha256("/home/u/myapp"))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": home}, sources=gemini_sources())
    assert projects(db_path) == [
        ("gemini:s-api", "/home/u/api", "-home-u-api", "log"),
        ("gemini:s-myapp", "/home/u/myapp", "-home-u-myapp", "log"),
        ("gemini:s-web", "/home/u/web", "-home-u-web", "log"),
    ]


def test_chats_whose_root_no_file_names_are_grouped_by_their_folder(tmp_path):
    """A hash folder no known root hashes to, or a slug folder without its marker or registry
    entry: its chats share a project marked as their folder's ('folder'), not a path."""
    home = tmp_path / ".gemini"
    chat_in(home / "tmp" / PROJECT, "s-hash-1", PROJECT)
    chat_in(home / "tmp" / PROJECT, "s-hash-2", PROJECT)
    chat_in(home / "tmp" / "myapp", "s-slug", sha256("/home/u/myapp"))
    # a chat that names its folders (``/directory add``) takes its project from them
    # (folders that are not the root its projectHash is of: they name no root of the folder)
    chat_in(home / "tmp" / "myapp", "s-named", sha256("/home/u/myapp"), directories=["/home/u/myapp/web", "/data"])
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": home}, sources=gemini_sources())
    assert projects(db_path) == [
        ("gemini:s-hash-1", None, f"gemini-tmp:{PROJECT}", "folder"),
        ("gemini:s-hash-2", None, f"gemini-tmp:{PROJECT}", "folder"),
        ("gemini:s-named", "/home/u/myapp/web", "-home-u-myapp-web", "log"),
        ("gemini:s-slug", None, "gemini-tmp:myapp", "folder"),
    ]


def test_the_registry_beside_a_sandbox_s_tmp_names_its_roots(tmp_path):
    """Under macOS Seatbelt (0.61+) tmp/ and projects.json are under ``~/.cache/.gemini``."""
    (tmp_path / ".gemini").mkdir()
    runtime = tmp_path / ".cache" / ".gemini"
    chat_in(runtime / "tmp" / "myapp", "s-1", sha256("/Users/u/myapp"))
    runtime.joinpath("projects.json").write_text(json_text({"projects": {"/Users/u/myapp": "myapp"}}))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": tmp_path / ".gemini"}, sources=gemini_sources())
    assert projects(db_path) == [("gemini:s-1", "/Users/u/myapp", "-Users-u-myapp", "log")]


def json_text(value) -> str:
    return orjson.dumps(value).decode()


def test_a_chat_naming_the_root_its_project_hash_is_of_names_its_folder_s_root(tmp_path):
    """A subagent's chat opens with the workspace's folders, the root first; when its hash is
    the chat's ``projectHash``, it is the root of every chat of the folder. A folder named that
    does not hash so (another workspace) names nothing."""
    home = tmp_path / ".gemini"
    chat_in(home / "tmp" / "myapp", "s-main", sha256("/home/u/myapp"))
    child = home / "tmp" / "myapp" / "chats" / "s-main" / "helper-1.jsonl"
    child.parent.mkdir()
    child.write_bytes(jsonl({"sessionId": "helper-1", "projectHash": sha256("/home/u/myapp"), "kind": "subagent",
                             "startTime": "2026-04-29T21:39:40.000Z", "directories": ["/home/u/myapp", "/data"]}))
    chat_in(home / "tmp" / "other", "s-other", sha256("/home/u/other"), directories=["/home/u/elsewhere"])
    chat_in(home / "tmp" / "other", "s-other-2", sha256("/home/u/other"))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"gemini": home}, sources=gemini_sources())
    assert projects(db_path) == [
        ("gemini:helper-1", "/home/u/myapp", "-home-u-myapp", "log"),
        ("gemini:s-main", "/home/u/myapp", "-home-u-myapp", "log"),
        ("gemini:s-other", "/home/u/elsewhere", "-home-u-elsewhere", "log"),
        ("gemini:s-other-2", None, "gemini-tmp:other", "folder"),
    ]
