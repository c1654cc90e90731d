"""The real Codex rollouts in ../shared/corpus ingest with exact, hand-checked
results at the database level.

The corpus files are symlinked into a temporary ``$CODEX_HOME`` under the
names Codex itself gives them (``sessions/YYYY/MM/DD/rollout-<time>-<thread
id>.jsonl``, the flat pre-envelope ``sessions/rollout-<id>.jsonl``, and
``history.jsonl`` for the prompt log, which is not a rollout: its lines are
merged, each prompt a ``prompt_log`` row), so discovery finds them the way it
finds a user's own.

How the expected figures were derived: every line of every file was read
(by eye for the small ones, with a throwaway ``json`` tally by line type for
the 2722-line localpush rollout and the 118-line schema sampler) and
classified by the mapping documented in ``sources/codex.py``: a conversation
or structural line is one ``messages`` row, an event that repeats its
response item (or the reverse), ``session_meta``/``turn_context``/task
events, repeated usage totals and copied parent history are merged, and a
line that is not JSON is an ``ingest_errors`` row. ``message_count`` counts
the user and assistant rows that are neither meta, reasoning nor tool calls
or outputs; token totals are the sums of ``last_token_usage`` over the
``token_count`` events whose ``total_token_usage`` moved (cross-checked
against the file's final total below). Values quoted as
``[trimmed for fixture]`` are the sampler's placeholders: its tool calls and
outputs share that id, so the database keeps one row per distinct id.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from corpus_layout import lay_out
import zstandard
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.plugins import get_sources
from datasette_obelisk.store.ingest import ingest
from dbsnapshot import diff, rows, snapshot

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
PROMPT_LOG = "kvsankar__agent-history/codex_history.jsonl"

# corpus file -> where Codex would have written it, below $CODEX_HOME. Files
# saved under another name get the rollout name of their session_meta (date
# and time of its timestamp, then its id).
LAYOUT = {
    FILE_1: "sessions/2026/01/02/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
    PARENT: "sessions/2026/01/03/rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl",
    CHILD: "sessions/2026/01/03/rollout-2026-01-03T04-05-10-33333333-3333-4333-8333-333333333333.jsonl",
    FLAT: "sessions/rollout-44444444-4444-4444-8444-444444444444.jsonl",
    MALFORMED: "sessions/2026/02/01/rollout-2026-02-01T00-00-00-66666666-6666-4666-8666-666666666666.jsonl",
    SMALL: "sessions/2026/08/03/rollout-2026-08-03T10-48-56-019fc8be-3658-7ca3-9e29-000000000000.jsonl",
    ESCALATION: "sessions/2025/12/05/rollout-2025-12-05T11-00-00-rejection-codex-001.jsonl",
    COMPACTION: "sessions/2025/10/28/rollout-2025-10-28T04-00-00-compact-codex-001.jsonl",
    BIG: "sessions/2026/02/23/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
    INTERRUPTED: "sessions/2026/02/23/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
    PROMPT_LOG: "history.jsonl",
}
ROLLOUTS = sorted(k for k in LAYOUT if k != PROMPT_LOG)

# Codex home path: (lines_read, lines_stored, lines_merged, lines_failed).
FILES = {
    # session_meta, turn_context, the user item and agent item that repeat
    # their events, and the unknown future record are merged.
    LAYOUT[FILE_1]: (14, 9, 5, 0),
    # session_meta; the collab_tool_call event is the spawn link (a subagents row).
    LAYOUT[PARENT]: (5, 3, 2, 0),
    # session_meta; lines 2-3 are the parent's, copied (older than the child).
    LAYOUT[CHILD]: (5, 2, 3, 0),
    # the bare {id, timestamp} first line.
    LAYOUT[FLAT]: (3, 2, 1, 0),
    # session_meta; line 3 is not JSON.
    LAYOUT[MALFORMED]: (3, 1, 1, 1),
    # 31 repeats (twins, tool events, item_completed of tool items), 38
    # metadata lines, 2 token_count without new usage, 1 thread name.
    LAYOUT[SMALL]: (118, 46, 72, 0),
    LAYOUT[ESCALATION]: (21, 19, 2, 0),
    LAYOUT[COMPACTION]: (20, 18, 2, 0),
    # the prompt log: five prompts, merged (prompt_log rows)
    LAYOUT[PROMPT_LOG]: (5, 0, 5, 0),
    # 493 repeats (255 agent_message, 199 agent_reasoning, 38 user_message,
    # 1 context_compacted), 373 metadata (1 session_meta, 286 turn_context,
    # 66 task events, 20 encrypted-only reasoning), 287 token_count repeats.
    LAYOUT[BIG]: (2722, 1569, 1153, 0),
    # task_started, session_meta, turn_context; 3 twins; 1 token_count without info.
    LAYOUT[INTERRUPTED]: (19, 12, 7, 0),
}
# Read without its parent, whose log is then stored nowhere, the child keeps lines 2-3 it copied:
# the parent's prompt (its user_message event) and its spawn_agent call are messages of the child.
ALONE = {LAYOUT[CHILD]: (5, 4, 1, 0)}

# The first prompts (line 9 of each): the user items before them (lines 4-5)
# are the context block written between turns, after developer messages.
REDACTED_BIG = "[REDACTED_TEXT len=32 sha=821fd802]"
REDACTED_INTERRUPTED = "[REDACTED_TEXT len=86 sha=2239bcba]"

SESSIONS = [
    # id, title source, title (40 chars), parent, relationship, repository, git
    # branch, cwd, project, project path, message count, input, output, cache
    # read, cache creation tokens, availability.
    # localpush: every text is redacted, so the AGENTS.md/environment context
    # is told by where it stands (between turns, after developer messages).
    ("codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "first_prompt", REDACTED_BIG, None, None, "url/454be97b1a",
     "main", "/redacted/path/59b923df4d", "-redacted-path-59b923df4d", "/redacted/path/59b923df4d",
     # 38 user + 255 assistant (the compaction's summary is no one's message, and the
     # 199 reasoning items are a reply's reasoning); the 8 user items of the 4 context
     # blocks (lines 4-5, 131-132, 219-220, 450-451) are meta
     293, 2188981, 133999, 31621504, 0, "live"),
    ("codex:019c8a70-dda7-7f33-98ea-f30553347322", "first_prompt", REDACTED_INTERRUPTED, None, None, "url/d18f1190d0",
     "main", "/redacted/path/da0ba47443", "-redacted-path-da0ba47443", "/redacted/path/da0ba47443",
     # 3: lines 4-5 are its context block (meta); line 11, a user item after
     # the prompt's event, is still counted; its one reasoning item is not
     3, 34469 - 3456, 431, 3456, 0, "live"),
    # project from session_meta's cwd; the most used message cwd is the
    # sampler's placeholder. 9: the 15 user and assistant texts but the 6
    # compactions' messages (lines 26, 47, 69, 81, 89, 111).
    ("codex:019fc8be-3658-7ca3-9e29-000000000000", "custom", "[trimmed for fixture]", None, None,
     "example.invalid/repo", "main", "/tmp/repo", "-tmp-repo", "[trimmed for fixture]",
     9, 16341 - 3584, 81, 3584, 0, "live"),
    ("codex:11111111-1111-4111-8111-111111111111", "first_prompt", "List the synthetic files.", None, None, None,
     None, "/workspace/synthetic-project", "-workspace-synthetic-project", "/workspace/synthetic-project",
     2, 0, 0, 0, 0, "live"),
    ("codex:22222222-2222-4222-8222-222222222222", "first_prompt", "Spawn a synthetic researcher.", None, None,
     None, None, "/workspace/synthetic-project", "-workspace-synthetic-project", "/workspace/synthetic-project",
     1, 0, 0, 0, 0, "live"),
    ("codex:33333333-3333-4333-8333-333333333333", "first_prompt", "Inspect fixtures.",
     "codex:22222222-2222-4222-8222-222222222222", "subagent", None, None, "/workspace/synthetic-project",
     "-workspace-synthetic-project", "/workspace/synthetic-project", 2, 0, 0, 0, 0, "live"),
    ("codex:44444444-4444-4444-8444-444444444444", "first_prompt", "Open the synthetic legacy session.", None,
     None, None, None, None, None, None, 2, 0, 0, 0, 0, "live"),
    ("codex:66666666-6666-4666-8666-666666666666", "first_prompt", "Safe line before malformed input.", None,
     None, None, None, "/workspace/synthetic-project", "-workspace-synthetic-project",
     "/workspace/synthetic-project", 1, 0, 0, 0, 0, "live"),
    # 4 prompts, 6 answers (its compaction summary and 2 reasoning summaries are not counted)
    ("codex:compact-codex-001", "first_prompt", "Help me build the API endpoints", None, None, None,
     "feature/api", "/home/testuser/codex-compact-project", "-home-testuser-codex-compact-project",
     "/home/testuser/codex-compact-project", 10, 85000 - 30000, 42000, 30000, 0, "live"),
    ("codex:rejection-codex-001", "first_prompt", "Create a test file", None, None, None, "main",
     "/home/testuser/codex-rejection-project", "-home-testuser-codex-rejection-project",
     "/home/testuser/codex-rejection-project", 9, 1500 - 500, 800, 500, 0, "live"),
]

TOOLS = {
    # session: (tool_calls rows, {outcome: tool_results rows})
    "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9": (372, {"succeeded": 372}),  # 316 exec, 49 apply_patch, 7 web search
    # the exec_command call was interrupted: no output, and its turn never ended
    "codex:019c8a70-dda7-7f33-98ea-f30553347322": (1, {}),
    # call-1 cancelled by turn_aborted; call-2, call-3 (tool search), ws-1
    # (web search) succeeded; the five "[trimmed for fixture]" calls and three
    # outputs share one id, so one row each
    # call-1's turn is aborted (line 20) but its output follows (line 21): succeeded, not cancelled
    "codex:019fc8be-3658-7ca3-9e29-000000000000": (5, {"succeeded": 5}),
    "codex:11111111-1111-4111-8111-111111111111": (3, {"succeeded": 3}),
    "codex:22222222-2222-4222-8222-222222222222": (1, {"succeeded": 1}),
    "codex:compact-codex-001": (2, {"succeeded": 2}),
    # call_esc_002 asked for escalation and the user moved on; call_esc_004
    # asked for it and the turn was aborted
    "codex:rejection-codex-001": (4, {"succeeded": 2, "blocked": 2}),
}

TOOL_CALL_FILES = [
    # apply_patch "*** Add File: gamma.txt", resolved against the turn's cwd
    ("codex:11111111-1111-4111-8111-111111111111:call-custom-001", "/workspace/synthetic-project/gamma.txt"),
    # cat > src/middleware/auth.py << 'EOF'
    ("codex:compact-codex-001:call_compact_002", "/home/testuser/codex-compact-project/src/middleware/auth.py"),
    # echo 'Hello World' > test.txt, then printf 'Goodbye World\n' > test.txt
    ("codex:rejection-codex-001:call_esc_001", "/home/testuser/codex-rejection-project/test.txt"),
    ("codex:rejection-codex-001:call_esc_002", "/home/testuser/codex-rejection-project/test.txt"),
]

SUBAGENTS = [
    # agent id, parent session, child session, spawning call, agent type, description
    ("33333333-3333-4333-8333-333333333333", "codex:22222222-2222-4222-8222-222222222222",
     "codex:33333333-3333-4333-8333-333333333333", "codex:22222222-2222-4222-8222-222222222222:call-spawn-001",
     None, None),
    # collab_agent_spawn_end in the sampler, every value trimmed
    ("[trimmed for fixture]", "codex:019fc8be-3658-7ca3-9e29-000000000000", "codex:[trimmed for fixture]",
     "codex:019fc8be-3658-7ca3-9e29-000000000000:[trimmed for fixture]", "[trimmed for fixture]",
     "[trimmed for fixture]"),
]

MALFORMED_ERROR = "invalid JSON: unexpected character, expected a string key: line 1 column 2 (char 1)"


# -- fixtures -------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_root():
    from conftest import CORPUS

    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS / "codex"


def codex_home(root: Path, corpus_root: Path, files=tuple(LAYOUT)) -> Path:
    """A Codex home holding ``files`` (symlinks to the corpus), by their Codex names."""
    return lay_out(root, corpus_root, LAYOUT, files)


@pytest.fixture(scope="module")
def home(tmp_path_factory, corpus_root):
    return codex_home(tmp_path_factory.mktemp("codex") / ".codex", corpus_root)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, home):
    path = tmp_path_factory.mktemp("codex-db") / "obelisk.db"
    summary = ingest(path, {"codex": home})
    conn = sqlite3.connect(path)
    yield conn, summary
    conn.close()


@pytest.fixture(scope="module")
def db(ingested):
    return ingested[0]


def codex_sources():
    return {"codex": get_sources()["codex"]}


def envelope(type_: str, payload: dict, timestamp: str) -> bytes:
    return orjson.dumps({"timestamp": timestamp, "type": type_, "payload": payload}) + b"\n"


# -- the corpus, every file ------------------------------------------------------


def test_summary_of_the_run(ingested, home):
    _, summary = ingested
    assert (summary.files, summary.files_read, summary.lines, summary.messages, summary.merged, summary.errors) == (
        11, 11, 2935, 1681, 1253, 1,
    )
    assert (summary.sessions, summary.prompts) == (10, 5)
    assert summary.error_samples == [(str(home / LAYOUT[MALFORMED]), 3, MALFORMED_ERROR)]
    assert summary.empty_files == []


UNKNOWN_LINE = "a line of a type the parser does not know (future_synthetic_record): counted as merged, not stored"


def test_the_summary_names_the_lines_of_types_not_known(ingested, home):
    # daaain's line 14 ("future_synthetic_record") is merged, as every line of a type the
    # parser does not know: nothing of it is stored, so the run says where it was.
    _, summary = ingested
    assert (summary.unknown, summary.unknown_samples) == (1, [(str(home / LAYOUT[FILE_1]), 14, UNKNOWN_LINE)])
    assert summary.as_dict()["unknown_samples"] == [
        {"path": str(home / LAYOUT[FILE_1]), "line": 14, "reason": UNKNOWN_LINE}]


def test_the_cli_warns_of_lines_of_types_not_known(tmp_path, corpus_root):
    home = codex_home(tmp_path / ".codex", corpus_root, files=(FILE_1,))
    result = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / "obelisk.db"), "--codex-dir", str(home)])
    assert result.exit_code == 0, result.output
    assert "(1 line of a type not known, not stored)" in result.output
    assert f"  warning: {home / LAYOUT[FILE_1]}:14: {UNKNOWN_LINE}" in result.output


def test_every_line_is_accounted_for(db, home, corpus_root):
    got = {
        path.removeprefix(f"{home}/"): counts
        for path, *counts in db.execute(
            "SELECT path, lines_read, lines_stored, lines_merged, lines_failed FROM source_files"
        )
    }
    assert got == {path: list(counts) for path, counts in FILES.items()}
    # The prompt log is not a rollout; every line of every rollout is read.
    for relative in ROLLOUTS:
        assert FILES[LAYOUT[relative]][0] == (corpus_root / relative).read_bytes().count(b"\n")
    assert db.execute(
        "SELECT COUNT(*) FROM source_files WHERE lines_read != lines_stored + lines_merged + lines_failed "
        "OR cursor != size OR pending_bytes OR missing"
    ).fetchone() == (0,)
    assert db.execute("SELECT source, kind, layout, compression FROM source_files GROUP BY 1, 2, 3, 4").fetchall() == [
        ("codex", "prompt_log", "jsonl", None), ("codex", "rollout", "jsonl", None)
    ]


def test_messages_are_rows_of_their_own_lines(db):
    # One row per stored line; ids are the thread and the line's byte offset.
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT uuid) FROM messages").fetchone() == (1681, 1681)
    assert db.execute(
        "SELECT COUNT(*) FROM messages WHERE uuid != session_id || ':' || byte_offset"
    ).fetchone() == (0,)
    per_session = dict(db.execute("SELECT session_id, COUNT(*) FROM messages GROUP BY 1"))
    assert per_session == {
        "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9": 1569,
        "codex:019c8a70-dda7-7f33-98ea-f30553347322": 12,
        "codex:019fc8be-3658-7ca3-9e29-000000000000": 46,
        "codex:11111111-1111-4111-8111-111111111111": 9,
        "codex:22222222-2222-4222-8222-222222222222": 3,
        "codex:33333333-3333-4333-8333-333333333333": 2,
        "codex:44444444-4444-4444-8444-444444444444": 2,
        "codex:66666666-6666-4666-8666-666666666666": 1,
        "codex:compact-codex-001": 18,
        "codex:rejection-codex-001": 19,
    }


def test_sessions(db):
    got = db.execute(
        "SELECT id, title_source, substr(replace(title, char(10), ' '), 1, 40), parent_session_id, relationship, "
        "repository, git_branch, cwd, project, project_path, message_count, input_tokens, output_tokens, "
        "cache_read_tokens, cache_creation_tokens, availability FROM sessions ORDER BY id"
    ).fetchall()
    assert got == SESSIONS


def test_the_reasoning_effort_is_the_last_turn_s(db):
    # turn_context payload.effort (or collaboration_mode.settings.reasoning_effort), the last one of each rollout
    assert db.execute("SELECT id, reasoning_effort FROM sessions WHERE reasoning_effort IS NOT NULL ORDER BY id").fetchall() == [
        ("codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "medium"),
        ("codex:019c8a70-dda7-7f33-98ea-f30553347322", "high"),
        ("codex:019fc8be-3658-7ca3-9e29-000000000000", "[trimmed for fixture]"),
        ("codex:compact-codex-001", "high"),
        ("codex:rejection-codex-001", "high"),
    ]


def test_an_answer_keeps_the_reasoning_effort_its_turn_asked_for(db):
    # the localpush rollout's first turn asked for high effort (turn_context lines 11-127), every later
    # one for medium (line 138 on): its assistant rows say which, where the session keeps only the last
    assert db.execute(
        "SELECT session_id, json_extract(meta_json, '$.effort'), min(line_no), max(line_no), count(*) FROM messages "
        "WHERE source = 'codex' AND role = 'assistant' AND meta_json LIKE '%effort%' GROUP BY 1, 2 ORDER BY 1, 3"
    ).fetchall() == [
        ("codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "high", 13, 126, 53),
        ("codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "medium", 140, 2721, 1059),
        ("codex:019c8a70-dda7-7f33-98ea-f30553347322", "high", 14, 19, 4),
        ("codex:019fc8be-3658-7ca3-9e29-000000000000", "medium", 7, 23, 7),
        ("codex:019fc8be-3658-7ca3-9e29-000000000000", "[trimmed for fixture]", 43, 114, 6),
        ("codex:compact-codex-001", "high", 4, 20, 11),
        ("codex:rejection-codex-001", "high", 4, 21, 11),
    ]


def test_a_session_ends_at_the_last_time_its_own_lines_give(db):
    # The localpush rollout completes its last turn (line 2722, task_complete at 12:09:44.294) 61 ms
    # after its last stored row (line 2721, the usage at .233); 11111111's last line (14) is of a type
    # not known yet, written a second after its last message (03:04:16 after 03:04:15.001). The
    # sampler's later task_complete lines have a placeholder time, no end. The child 33333333 copies
    # two lines of its parent: they move neither end (the parent's is its own last line, 04:05:10).
    assert db.execute("SELECT id, started_at, ended_at FROM sessions ORDER BY id").fetchall() == [
        ("codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "2026-02-23T11:54:34.334Z", "2026-02-24T12:09:44.294Z"),
        ("codex:019c8a70-dda7-7f33-98ea-f30553347322", "2026-02-23T12:19:38.535Z", "2026-02-23T12:19:52.689Z"),
        ("codex:019fc8be-3658-7ca3-9e29-000000000000", "2026-08-03T10:48:56.000Z", "2026-08-03T10:48:56.000Z"),
        ("codex:11111111-1111-4111-8111-111111111111", "2026-01-02T03:04:05.000Z", "2026-01-02T03:04:16.000Z"),
        ("codex:22222222-2222-4222-8222-222222222222", "2026-01-03T04:05:06.000Z", "2026-01-03T04:05:10.000Z"),
        ("codex:33333333-3333-4333-8333-333333333333", "2026-01-03T04:05:10.000Z", "2026-01-03T04:05:12.000Z"),
        ("codex:44444444-4444-4444-8444-444444444444", "2026-01-04T05:06:07.000Z", "2026-01-04T05:06:07.000Z"),
        ("codex:66666666-6666-4666-8666-666666666666", "2026-02-01T00:00:00.000Z", "2026-02-01T00:00:01.000Z"),
        ("codex:compact-codex-001", "2025-10-28T04:00:00.000Z", "2025-10-28T05:27:35.000Z"),
        ("codex:rejection-codex-001", "2025-12-05T11:00:00.000Z", "2025-12-05T11:01:15.000Z"),
    ]


def grow(path: Path, lines: list[bytes]) -> None:
    with open(path, "ab") as fp:
        fp.write(b"".join(lines))


@pytest.mark.parametrize("relative", [FILE_1, BIG])
def test_a_rollout_read_as_it_grows_ends_where_one_read_whole_does(tmp_path, corpus_root, relative):
    """A rollout read line by line (each ingest reads on from the last: its sessions derived from
    the rows appended alone) ends, after every line, where one holding as many lines read whole does,
    and gives its database; the localpush rollout's last turn completes in a line of its own."""
    from datasette_obelisk.store import derive

    lines = (corpus_root / relative).read_bytes().splitlines(keepends=True)
    live = tmp_path / "live" / ".codex" / LAYOUT[relative]
    live.parent.mkdir(parents=True)
    db = tmp_path / "o.db"
    start = 1 if relative == FILE_1 else len(lines) - 3  # (the big one: its last lines, one at a time)
    grow(live, lines[:start])
    ingest(db, {"codex": tmp_path / "live" / ".codex"}, sources=codex_sources())
    for n in range(start + 1, len(lines) + 1):
        grow(live, lines[n - 1:n])
        before, tallied = dict(derive.PLANS), rows(db, "SELECT COUNT(*) FROM derive_tallies") == [(1,)]
        ingest(db, {"codex": tmp_path / "live" / ".codex"}, sources=codex_sources())
        if tallied:  # (derived before from rows: now from those appended alone)
            assert derive.PLANS["whole"] == before.get("whole", 0), n
        whole = tmp_path / f"whole-{n}" / ".codex" / LAYOUT[relative]
        whole.parent.mkdir(parents=True)
        whole.write_bytes(b"".join(lines[:n]))
        fresh = tmp_path / f"whole-{n}.db"
        ingest(fresh, {"codex": tmp_path / f"whole-{n}" / ".codex"}, sources=codex_sources())
        sql = "SELECT id, started_at, ended_at FROM sessions"
        assert rows(db, sql) == rows(fresh, sql), n
    got, expected = snapshot(db), snapshot(fresh)
    assert got == expected, diff(got, expected)
    assert rows(db, "SELECT ended_at FROM sessions") == [
        ("2026-01-02T03:04:16.000Z",) if relative == FILE_1 else ("2026-02-24T12:09:44.294Z",)]


def test_usage_totals_equal_the_rollouts_final_total(db, home, corpus_root):
    """The stored usage of a rollout adds up to its last running total
    (``total_token_usage`` of its last token_count event that has one), also
    when its events do not cover every response (the synthetic ones have one
    token_count, whose total is far past its ``last_token_usage``)."""
    for relative in (BIG, INTERRUPTED, SMALL, ESCALATION, COMPACTION):
        final = None
        for line in (corpus_root / relative).read_bytes().splitlines():
            record = json.loads(line)
            payload = record["payload"]
            if payload.get("type") == "token_count" and payload.get("info"):
                if any(payload["info"]["total_token_usage"].values()):
                    final = payload["info"]["total_token_usage"]
        got = db.execute(
            "SELECT s.input_tokens + s.cache_read_tokens, s.cache_read_tokens, s.output_tokens FROM sessions s "
            "WHERE s.id = (SELECT m.session_id FROM messages m JOIN source_files f ON f.id = m.file_id "
            "WHERE f.path = ? LIMIT 1)",
            [str(home / LAYOUT[relative])],
        ).fetchone()
        assert got == (final["input_tokens"], final["cached_input_tokens"], final["output_tokens"]), relative
    assert db.execute(
        "SELECT id, input_tokens, cache_read_tokens, output_tokens FROM sessions WHERE id LIKE '%-codex-001' ORDER BY id"
    ).fetchall() == [("codex:compact-codex-001", 55_000, 30_000, 42_000), ("codex:rejection-codex-001", 1_000, 500, 800)]


def test_tool_calls_and_results_by_outcome(db):
    calls = dict(db.execute("SELECT session_id, COUNT(*) FROM tool_calls GROUP BY 1"))
    outcomes = {}
    for session, outcome, count in db.execute(
        "SELECT session_id, outcome, COUNT(*) FROM tool_results GROUP BY 1, 2"
    ):
        outcomes.setdefault(session, {})[outcome] = count
    assert {s: (calls.get(s, 0), outcomes.get(s, {})) for s in set(calls) | set(outcomes)} == TOOLS
    # Every result answers a call of its own session; blocked results are errors.
    assert db.execute(
        "SELECT COUNT(*) FROM tool_results r LEFT JOIN tool_calls c ON c.id = r.tool_use_id "
        "WHERE c.id IS NULL OR c.session_id != r.session_id"
    ).fetchone() == (0,)
    assert db.execute("SELECT outcome, is_error, COUNT(*) FROM tool_results GROUP BY 1, 2").fetchall() == [
        ("blocked", 1, 2), ("succeeded", 0, 372 + 5 + 3 + 1 + 2 + 2),
    ]
    assert db.execute(
        "SELECT tool_use_id, content, timestamp FROM tool_results WHERE outcome IN ('blocked', 'cancelled') ORDER BY 1"
    ).fetchall() == [
        # closed by the next prompt (line 12), and by the turn's abort (line 20)
        ("codex:rejection-codex-001:call_esc_002", "[no output: escalation not granted]", "2025-12-05T11:00:30.000Z"),
        ("codex:rejection-codex-001:call_esc_004", "[no output: escalation not granted]", "2025-12-05T11:01:10.000Z"),
    ]


def test_an_undo_s_status_is_semantic_text(db):
    from datasette_obelisk.query.events import semantic_sql

    # small.jsonl line 83: an undo_completed with success false and its message
    assert db.execute(
        f"SELECT seq, text FROM messages m WHERE subtype = 'undo_completed' AND {semantic_sql('m')}"
    ).fetchall() == [(31, "[trimmed for fixture]")]


def test_a_tool_search_result_holds_the_tools_it_found(db, home, corpus_root):
    # small.jsonl line 13: the found tools are a list of definitions, not text parts
    raw = (corpus_root / SMALL).read_text().splitlines()[12]
    tools = json.loads(raw)["payload"]["tools"]
    content, = db.execute("SELECT content FROM tool_results WHERE tool_use_id LIKE '%:call-3'").fetchone()
    assert json.loads(content) == tools
    # and search finds it by a tool's name
    assert db.execute(
        "SELECT m.content_type, m.timestamp FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
        "WHERE messages_fts MATCH '\"example_tool\"'"
    ).fetchall() == [("tool_result", "2026-08-03T10:48:56.000Z")]


def test_file_paths_from_patches_and_shell_writes(db):
    assert db.execute("SELECT tool_call_id, path FROM tool_call_files ORDER BY 1, 2").fetchall() == TOOL_CALL_FILES
    assert db.execute(
        "SELECT id, file_path FROM tool_calls WHERE file_path IS NOT NULL ORDER BY 1"
    ).fetchall() == TOOL_CALL_FILES


def test_ingest_errors_name_file_line_and_reason(db, home):
    assert db.execute("SELECT path, line_no, byte_offset, byte_length, reason FROM ingest_errors").fetchall() == [
        (str(home / LAYOUT[MALFORMED]), 3, 323, 25, MALFORMED_ERROR)
    ]


def test_compactions(db):
    got = db.execute(
        "SELECT s.session_id, m.type, COALESCE(m.subtype, ''), m.line_no FROM summaries s "
        "JOIN messages m ON m.uuid = s.message_uuid WHERE s.source = 'compaction' ORDER BY 1, 4"
    ).fetchall()
    assert got == [
        ("codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "compacted", "", 1788),
        # Line 19 (context_compacted) and line 26 (compacted, "message": "") wrote no summary.
        *[("codex:019fc8be-3658-7ca3-9e29-000000000000", "compacted", "", n) for n in (47, 69, 81, 89, 111)],
        ("codex:compact-codex-001", "compacted", "", 13),
    ]
    # What the summary replaced is shadowed; the replacement history is never stored. This
    # older build wrote no replacement history: Codex rebuilds one from the prompts (lines 3,
    # 9 and 11, 92 characters, within its budget) and the summary, so the prompts stay current.
    assert db.execute(
        "SELECT surface, COUNT(*) FROM messages WHERE session_id = 'codex:compact-codex-001' GROUP BY 1"
    ).fetchall() == [("current", 10), ("log-only", 1), ("shadowed", 7)]  # 3, 9, 11, 13-19 | 20 | 4-8, 10, 12
    assert db.execute(
        "SELECT line_no FROM messages WHERE session_id = 'codex:compact-codex-001' AND line_no < 13 "
        "AND surface = 'current' ORDER BY 1"
    ).fetchall() == [(3,), (9,), (11,)]
    # Line 1788's replacement_history repeats 36 user and assistant items word for word, each
    # written once before (as response items, lines 9 to 1733; one injected context item four
    # times: its latest copy is kept); the rest of what came before is shadowed.
    assert db.execute(
        "SELECT COUNT(*), MIN(line_no), MAX(line_no) FROM messages "
        "WHERE session_id = 'codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9' AND line_no < 1788 AND surface = 'current'"
    ).fetchone() == (36, 9, 1733)
    assert db.execute(
        "SELECT COUNT(*) FROM messages WHERE text LIKE '%\"replacement_history\"%'"
    ).fetchone() == (0,)


def test_titles(db):
    assert db.execute("SELECT session_id, kind, title FROM titles WHERE kind != 'first_prompt'").fetchall() == [
        ("codex:019fc8be-3658-7ca3-9e29-000000000000", "custom", "[trimmed for fixture]")
    ]


# -- lineage: the spawned subagent in the corpus, and a fork of a real rollout ----


def test_spawned_subagent_lineage_both_ways(db):
    parent, child = "codex:22222222-2222-4222-8222-222222222222", "codex:33333333-3333-4333-8333-333333333333"
    assert db.execute("SELECT agent_id, session_id, child_session_id, parent_tool_use_id, agent_type, description "
                      "FROM subagents ORDER BY session_id DESC").fetchall() == SUBAGENTS
    assert db.execute(
        "SELECT parent_session_id, relationship, agent_id FROM sessions WHERE id = ?", [child]
    ).fetchone() == (parent, "subagent", "33333333-3333-4333-8333-333333333333")
    # From the parent: its children, and the spawning call's result names the agent.
    assert db.execute("SELECT id FROM sessions WHERE parent_session_id = ?", [parent]).fetchall() == [(child,)]
    assert db.execute(
        "SELECT r.agent_id, c.name FROM tool_results r JOIN tool_calls c ON c.id = r.tool_use_id "
        "WHERE r.tool_use_id = ?",
        [f"{parent}:call-spawn-001"],
    ).fetchone() == ("33333333-3333-4333-8333-333333333333", "spawn_agent")


def test_spawned_subagent_parent_messages_are_stored_once(db):
    parent, child = "codex:22222222-2222-4222-8222-222222222222", "codex:33333333-3333-4333-8333-333333333333"
    # The child replays the parent's prompt and spawn call (lines 2-3): merged.
    assert db.execute(
        "SELECT session_id, line_no FROM messages WHERE text = 'Spawn a synthetic researcher.'"
    ).fetchall() == [(parent, 2)]
    assert db.execute("SELECT id, session_id FROM tool_calls WHERE name = 'spawn_agent'").fetchall() == [
        (f"{parent}:call-spawn-001", parent)
    ]
    assert db.execute(
        "SELECT line_no, role, text, agent_id FROM messages WHERE session_id = ? ORDER BY seq", [child]
    ).fetchall() == [
        (4, "user", "Inspect fixtures.", "33333333-3333-4333-8333-333333333333"),
        (5, "assistant", "The fixtures are fully synthetic.", "33333333-3333-4333-8333-333333333333"),
    ]
    assert db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ? AND agent_id IS NOT NULL", [parent]).fetchone() == (0,)


FORK_PARENT = "019c8a70-dda7-7f33-98ea-f30553347322"
FORK_ID = "019c8a83-8100-7000-8000-00000000f0a1"  # UUIDv7 minted 2026-02-23T12:40:00.000Z
FORK_TURN = "019c8a84-6b60-7000-8000-00000000f0a2"  # UUIDv7 minted 2026-02-23T12:41:00.000Z
FORK_TURN_AT_ONCE = "019c8a83-818c-7000-8000-00000000f0a3"  # UUIDv7 minted 2026-02-23T12:40:00.140Z
FORK_TIME = "2026-02-23T12:40:00.000Z"
COPY_TIME = "2026-02-23T12:40:00.012Z"


def restamp(line: bytes, timestamp: str) -> bytes:
    return line[:14] + timestamp.encode() + line[14 + len(timestamp):] + b"\n"


def fork_of(parent: bytes, at_once: bool = False) -> bytes:
    """A fork of the interrupted localpush rollout, as Codex writes one: its
    own session_meta (``forked_from_id``), the parent's lines copied and
    re-stamped with the fork time (its session_meta first), then a turn of
    its own (6 lines), a minute later.

    ``at_once``: the copy is flushed with a 120 ms pause inside the copied
    turn (before the parent's line 10), and the fork's own turn is written
    1 ms after the copy's last line, at 12:40:00.140 (as ``codex exec fork``
    or an app starting a turn right away would)."""
    meta = {"id": FORK_ID, "timestamp": FORK_TIME, "cwd": "/redacted/path/da0ba47443", "originator": "Codex Desktop",
            "cli_version": "0.104.0-alpha.1", "source": "vscode", "forked_from_id": FORK_PARENT,
            "git": {"branch": "try-again", "repository_url": "redacted://url/d18f1190d0"}}
    lines = parent.splitlines()
    if at_once:  # parent lines 1-9 at .001-.009, lines 10-19 at .130-.139, own turn from .140
        stamps = [f"2026-02-23T12:40:00.{n + (120 if n >= 10 else 0):03d}Z" for n in range(1, len(lines) + 1)]
        own_stamps = ["2026-02-23T12:40:00.140Z"] + ["2026-02-23T12:40:00.141Z"] * 2 + ["2026-02-23T12:40:05.000Z"] * 2
        own_stamps.append("2026-02-23T12:40:05.100Z")
        turn = FORK_TURN_AT_ONCE
    else:
        stamps = [COPY_TIME] * len(lines)
        own_stamps = ["2026-02-23T12:41:00.000Z"] + ["2026-02-23T12:41:00.001Z"] * 2 + ["2026-02-23T12:41:05.000Z"] * 2
        own_stamps.append("2026-02-23T12:41:05.100Z")
        turn = FORK_TURN
    copied = b"".join(restamp(line, stamp) for line, stamp in zip(lines, stamps))
    last = {"input_tokens": 1000, "cached_input_tokens": 500, "output_tokens": 50, "reasoning_output_tokens": 0,
            "total_tokens": 1050}
    total = {"input_tokens": 35469, "cached_input_tokens": 3956, "output_tokens": 481, "reasoning_output_tokens": 264,
             "total_tokens": 35950}
    own = [
        ("event_msg", {"type": "task_started", "turn_id": turn}),
        ("response_item", {"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "Try the other approach."}]}),
        ("event_msg", {"type": "user_message", "message": "Try the other approach."}),
        ("event_msg", {"type": "agent_message", "message": "Trying the other approach."}),
        ("response_item", {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "Trying the other approach."}]}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last}}),
    ]
    return envelope("session_meta", meta, FORK_TIME) + copied + b"".join(
        envelope(type_, payload, stamp) for (type_, payload), stamp in zip(own, own_stamps)
    )


@pytest.fixture(scope="module", params=[False, True], ids=["own-turn-a-minute-later", "own-turn-at-once"])
def fork_db(request, tmp_path_factory, corpus_root):
    root = tmp_path_factory.mktemp("fork")
    home = codex_home(root / ".codex", corpus_root, [INTERRUPTED])
    parent = (corpus_root / INTERRUPTED).read_bytes()
    path = home / f"sessions/2026/02/23/rollout-2026-02-23T12-40-00-{FORK_ID}.jsonl"
    path.write_bytes(fork_of(parent, at_once=request.param))
    db_path = root / "obelisk.db"
    ingest(db_path, {"codex": home})
    alone = root / "parent-alone.db"
    ingest(alone, {"codex": codex_home(root / "alone", corpus_root, [INTERRUPTED])})
    return db_path, alone, path


def test_fork_every_parent_line_once(fork_db):
    db_path, alone, path = fork_db
    fork, parent = f"codex:{FORK_ID}", f"codex:{FORK_PARENT}"
    # 1 session_meta + 19 copied lines (merged) + 6 own lines: 2 twins and task_started merged
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files WHERE path = ?",
                [str(path)]) == [(26, 3, 23, 0)]
    # The parent's rows are exactly those it has when ingested alone.
    columns = "uuid, session_id, seq, type, subtype, role, text, is_meta, line_no, byte_offset"
    assert rows(db_path, f"SELECT {columns} FROM messages WHERE session_id = ? ORDER BY seq", [parent]) == rows(
        alone, f"SELECT {columns} FROM messages ORDER BY seq"
    )
    assert rows(db_path, "SELECT COUNT(*) FROM tool_calls WHERE session_id = ?", [fork]) == [(0,)]
    assert rows(db_path, "SELECT id, session_id FROM tool_calls") == [(f"{parent}:call_UtYwHmwWekzvq83m8Rb9K8jJ", parent)]
    # The fork's own turn, attributed to the fork.
    assert rows(db_path, "SELECT line_no, role, subtype, text, input_tokens, output_tokens FROM messages "
                         "WHERE session_id = ? ORDER BY seq", [fork]) == [
        (22, "user", "message", "Try the other approach.", None, None),
        (24, "assistant", "agent_message", "Trying the other approach.", None, None),
        (26, "assistant", "token_count", "", 500, 50),
    ]
    # No parent text is stored twice.
    assert rows(db_path, "SELECT text, COUNT(*) FROM messages WHERE text != '' GROUP BY text HAVING COUNT(*) > 1") == []


def test_fork_lineage_both_ways(fork_db):
    db_path, _, _ = fork_db
    fork, parent = f"codex:{FORK_ID}", f"codex:{FORK_PARENT}"
    assert rows(db_path, "SELECT id, title, title_source, parent_session_id, relationship, git_branch, project, "
                         "message_count, input_tokens, output_tokens, cache_read_tokens FROM sessions ORDER BY id") == [
        (parent, REDACTED_INTERRUPTED, "first_prompt", None, None, "main", "-redacted-path-da0ba47443",
         3, 31013, 431, 3456),
        (fork, "Try the other approach.", "first_prompt", parent, "fork", "try-again", "-redacted-path-da0ba47443",
         2, 500, 50, 500),
    ]
    assert rows(db_path, "SELECT id FROM sessions WHERE parent_session_id = ?", [parent]) == [(fork,)]
    assert rows(db_path, "SELECT COUNT(*) FROM subagents") == [(0,)]  # a fork is not a subagent


FORK_NAME = f"sessions/2026/02/23/rollout-2026-02-23T12-40-00-{FORK_ID}.jsonl"
ARCHIVED_PARENT = "archived_sessions/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"


def fork_home(home: Path, corpus_root: Path, fork: bool = True, parent: str | None = None, data: bytes | None = None) -> Path:
    """A Codex home holding the fork of the interrupted rollout (``fork_of``) and/or its parent at ``parent``."""
    (home / "sessions").mkdir(parents=True, exist_ok=True)
    if parent:
        (home / parent).parent.mkdir(parents=True, exist_ok=True)
        (home / parent).write_bytes((corpus_root / INTERRUPTED).read_bytes())
    if fork:
        (home / FORK_NAME).parent.mkdir(parents=True, exist_ok=True)
        (home / FORK_NAME).write_bytes(fork_of((corpus_root / INTERRUPTED).read_bytes()) if data is None else data)
    return home


def test_a_fork_whose_parent_is_stored_nowhere_keeps_the_history_it_copied(tmp_path, corpus_root):
    home = fork_home(tmp_path / ".codex", corpus_root)
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"codex": home})
    fork, parent = f"codex:{FORK_ID}", f"codex:{FORK_PARENT}"
    # 1 session_meta; the 19 copied lines as the parent's own reading gives them (12 messages: lines
    # 2-7, 9, 11, 14, 16, 18, 19 of the parent; its task_started and turn_context metadata, the
    # info-less token_count a usage repeat, 3 twins), but its session_meta, still a replay; 6 own lines
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [
        (26, 15, 11, 0)]
    copied = rows(db_path, "SELECT line_no, role, subtype FROM messages WHERE session_id = ? "
                           "AND json_extract(meta_json, '$.copied_from') = ? ORDER BY seq", [fork, parent])
    assert copied == [
        (3, "developer", "message"), (4, "developer", "message"), (5, "user", "message"), (6, "user", "message"),
        (7, "developer", "message"), (8, "developer", "message"), (10, "user", "message"), (12, "user", "message"),
        (15, "assistant", "agent_reasoning"), (17, "assistant", "agent_message"), (19, "assistant", "function_call"),
        (20, "assistant", "token_count"),
    ]
    # its own turn's rows: the copy's turn context (its effort) is the parent's, not theirs
    assert rows(db_path, "SELECT seq, line_no, meta_json FROM messages WHERE session_id = ? AND meta_json IS NOT NULL "
                         "AND json_extract(meta_json, '$.copied_from') IS NULL ORDER BY seq", [fork]) == []
    assert rows(db_path, "SELECT seq, line_no FROM messages WHERE session_id = ? AND meta_json IS NULL ORDER BY seq",
                [fork]) == [(13, 22), (14, 24), (15, 26)]
    assert rows(db_path, "SELECT COUNT(*) FROM messages WHERE session_id != ?", [fork]) == [(0,)]
    # searchable, and the parent's prompt found in the fork
    assert rows(db_path, "SELECT m.session_id, m.line_no FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                         "WHERE messages_fts MATCH '2239bcba'") == [(fork, 10)]
    assert rows(db_path, "SELECT id, session_id FROM tool_calls") == [(f"{fork}:call_UtYwHmwWekzvq83m8Rb9K8jJ", fork)]
    # the fork is still a fork of the parent, titled by its own prompt
    assert rows(db_path, "SELECT id, title, parent_session_id, relationship FROM sessions") == [
        (fork, "Try the other approach.", parent, "fork")]


def _layouts(tmp_path, corpus_root, scenario: str) -> Path:
    """Ingest the fork and its parent as ``scenario`` says; the database."""
    db_path = tmp_path / f"{scenario}.db"
    home = tmp_path / scenario / ".codex"
    if scenario == "together":
        ingest(db_path, {"codex": fork_home(home, corpus_root, parent=INTERRUPTED_NAME)})
    elif scenario == "parent-in-a-later-run":
        ingest(db_path, {"codex": fork_home(home, corpus_root)})
        ingest(db_path, {"codex": fork_home(home, corpus_root, fork=False, parent=INTERRUPTED_NAME)})
    elif scenario == "same-run-fork-read-first":  # sessions/ is read before archived_sessions/
        ingest(db_path, {"codex": fork_home(home, corpus_root, parent=ARCHIVED_PARENT)})
    elif scenario == "parent-in-another-folder-later":
        ingest(db_path, {"codex": fork_home(home, corpus_root)})
        ingest(db_path, {"codex": fork_home(tmp_path / "other" / ".codex", corpus_root, fork=False, parent=INTERRUPTED_NAME)})
    elif scenario == "parent-in-another-folder-first":
        ingest(db_path, {"codex": fork_home(tmp_path / "other" / ".codex", corpus_root, fork=False, parent=INTERRUPTED_NAME)})
        ingest(db_path, {"codex": fork_home(home, corpus_root)})
    elif scenario == "fork-appended-then-parent":
        data = fork_of((corpus_root / INTERRUPTED).read_bytes())
        cut = data.index(b"\n", len(data) // 2) + 1
        ingest(db_path, {"codex": fork_home(home, corpus_root, data=data[:cut])})
        ingest(db_path, {"codex": fork_home(home, corpus_root, data=data)})  # (read on from its cursor)
        ingest(db_path, {"codex": fork_home(home, corpus_root, fork=False, parent=INTERRUPTED_NAME)})
    return db_path


INTERRUPTED_NAME = LAYOUT[INTERRUPTED]
FORK_SCENARIOS = ["parent-in-a-later-run", "same-run-fork-read-first", "parent-in-another-folder-later",
                  "parent-in-another-folder-first", "fork-appended-then-parent"]


@pytest.mark.parametrize("scenario", FORK_SCENARIOS)
def test_a_kept_copy_gives_way_to_its_parent_however_the_logs_arrive(tmp_path, corpus_root, scenario):
    together = _layouts(tmp_path, corpus_root, "together")
    db_path = _layouts(tmp_path, corpus_root, scenario)
    assert diff(snapshot(together), snapshot(db_path)) == []
    fork, parent = f"codex:{FORK_ID}", f"codex:{FORK_PARENT}"
    counts = "SELECT session_id, COUNT(*) FROM messages GROUP BY session_id ORDER BY session_id"
    assert rows(db_path, counts) == rows(together, counts) == [(parent, 12), (fork, 3)]
    assert rows(db_path, "SELECT COUNT(*) FROM messages WHERE meta_json LIKE '%copied_from%'") == [(0,)]
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files "
                         "WHERE path LIKE ?", [f"%{FORK_ID}.jsonl"]) == [(26, 3, 23, 0)]


def generated_fork(home: Path) -> tuple[Path, Path, dict]:
    """The one fork rollout the generator wrote under ``home``, its parent's rollout, and
    the fork's session_meta."""
    heads = {path: orjson.loads(path.read_bytes().split(b"\n", 1)[0])["payload"]
             for path in home.rglob("rollout-*.jsonl")}
    [(fork_path, meta)] = [(path, meta) for path, meta in heads.items() if meta.get("forked_from_id")]
    [parent_path] = [path for path, head in heads.items() if head["id"] == meta["forked_from_id"]]
    return fork_path, parent_path, meta


def test_generated_fork_keeps_its_copy_until_its_parent_comes(tmp_path):
    from datasette_obelisk.demo.generator import generate

    stats = generate(tmp_path / "gen", seed=3, target_bytes=300_000, claude=False, codex=True).codex
    home = tmp_path / "gen" / ".codex"
    fork_path, parent_path, meta = generated_fork(home)
    together = tmp_path / "together.db"
    ingest(together, {"codex": home})
    # the parent's log elsewhere: the fork keeps what it copied, every copied call among it
    elsewhere = tmp_path / "elsewhere" / ".codex" / "sessions"
    elsewhere.mkdir(parents=True)
    parent_path.rename(elsewhere / parent_path.name)
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"codex": home})
    fork = f"codex:{meta['id']}"
    assert rows(db_path, "SELECT COUNT(*) FROM tool_calls c JOIN messages m ON m.uuid = c.message_uuid "
                         "WHERE json_extract(m.meta_json, '$.copied_from') = ?",
                [f"codex:{meta['forked_from_id']}"]) == [(stats.replayed_tool_calls,)]
    assert rows(db_path, "SELECT SUM(lines_read) = SUM(lines_stored + lines_merged + lines_failed) FROM source_files") == [(1,)]
    assert rows(db_path, "SELECT COUNT(*) > 0 FROM messages WHERE session_id = ? AND meta_json LIKE '%copied_from%'",
                [fork]) == [(1,)]
    # then it comes, from the other folder: as if read together
    ingest(db_path, {"codex": elsewhere.parent})
    parent_path.parent.mkdir(parents=True, exist_ok=True)
    (elsewhere / parent_path.name).rename(parent_path)
    ingest(db_path, {"codex": home})
    assert diff(snapshot(together), snapshot(db_path)) == []


def own_rows(db_path, session: str) -> dict:
    """A session's own rows (not copied from its parent), every column but the row ids,
    sequence numbers and file ids that depend on what else was stored; and the columns of
    its ``sessions`` row that the rows copied do not tally (counts, tokens, the model the
    last of its rows names)."""
    own = ("FROM messages WHERE session_id = :s AND (meta_json IS NULL "
           "OR json_extract(meta_json, '$.copied_from') IS NULL)")
    drop = {"id", "seq", "file_id"}
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    try:
        def table(sql):
            return [{k: row[k] for k in row.keys() if k not in drop} for row in conn.execute(sql, {"s": session})]
        session_row = dict(conn.execute("SELECT * FROM sessions WHERE id = ?", [session]).fetchone())
        for tallied in ("message_count", "input_tokens", "output_tokens", "cache_read_tokens",
                        "cache_creation_tokens", "model", "jsonl_path", "updated_at"):
            session_row.pop(tallied)
        return {
            "messages": table(f"SELECT * {own} ORDER BY seq"),
            "tool_calls": table(f"SELECT * FROM tool_calls WHERE message_uuid IN (SELECT uuid {own}) ORDER BY id"),
            "tool_results": table(f"SELECT * FROM tool_results WHERE message_uuid IN (SELECT uuid {own}) ORDER BY id"),
            "session": session_row,
        }
    finally:
        conn.close()


def test_a_kept_copy_leaves_the_fork_s_own_rows_as_they_are_beside_the_parent(tmp_path, corpus_root):
    # the fork's own turn has no turn_context: the copy's (its model, its effort) is not the fork's
    together = _layouts(tmp_path, corpus_root, "together")
    alone = tmp_path / "alone.db"
    ingest(alone, {"codex": fork_home(tmp_path / "alone" / ".codex", corpus_root)})
    fork = f"codex:{FORK_ID}"
    assert rows(alone, "SELECT COUNT(*) FROM messages WHERE meta_json LIKE '%copied_from%'") != [(0,)]
    assert own_rows(alone, fork) == own_rows(together, fork)
    assert rows(alone, "SELECT model, meta_json FROM messages WHERE session_id = ? AND line_no > 21", [fork]) == [
        (None, None), (None, None), (None, None)]
    assert rows(alone, "SELECT reasoning_effort FROM sessions WHERE id = ?", [fork]) == [(None,)]


def test_a_generated_fork_s_own_rows_are_the_same_with_its_copy_kept(tmp_path):
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "gen", seed=3, target_bytes=300_000, claude=False, codex=True)
    home = tmp_path / "gen" / ".codex"
    fork_path, parent_path, meta = generated_fork(home)
    together = tmp_path / "together.db"
    ingest(together, {"codex": home})
    parent_path.unlink()
    alone = tmp_path / "alone.db"
    ingest(alone, {"codex": home})
    fork = f"codex:{meta['id']}"
    assert rows(alone, "SELECT COUNT(*) > 0 FROM messages WHERE session_id = ? AND meta_json LIKE '%copied_from%'",
                [fork]) == [(1,)]
    assert own_rows(alone, fork) == own_rows(together, fork)


# -- the malformed and the truncated rollout ---------------------------------------


def test_a_session_whose_lines_have_no_time_ends_at_its_start(db):
    # The legacy rollout's header has the only timestamp; its two messages have none.
    assert db.execute(
        "SELECT started_at, ended_at FROM sessions WHERE id = 'codex:44444444-4444-4444-8444-444444444444'"
    ).fetchone() == ("2026-01-04T05:06:07.000Z", "2026-01-04T05:06:07.000Z")
    assert db.execute("SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL AND started_at IS NOT NULL").fetchone() == (0,)


def test_malformed_rollout_keeps_the_good_lines(db):
    session = "codex:66666666-6666-4666-8666-666666666666"
    assert db.execute("SELECT line_no, role, text FROM messages WHERE session_id = ?", [session]).fetchall() == [
        (2, "user", "Safe line before malformed input.")
    ]


def test_truncated_rollout(tmp_path, corpus_root):
    """A rollout cut in the middle of a line (a crash), then resumed on a new
    line, and cut again at its end."""
    lines = (corpus_root / COMPACTION).read_bytes().splitlines(keepends=True)
    cut_compacted = lines[12][: len(lines[12]) // 2] + b"\n"  # the writer died half-way through line 13
    cut_last = lines[19][:100]  # and in the middle of the last one, with no newline
    data = b"".join(lines[:12]) + cut_compacted + b"".join(lines[13:19]) + cut_last
    path = tmp_path / ".codex" / LAYOUT[COMPACTION]
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    db_path = tmp_path / "obelisk.db"
    # While the writer may still be busy the unfinished last line is waited for...
    summary = ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    assert (summary.lines, summary.messages, summary.errors) == (19, 16, 1)
    assert rows(db_path, "SELECT line_no, byte_offset, byte_length, reason FROM ingest_errors") == [
        (13, sum(map(len, lines[:12])), len(cut_compacted) - 1, "truncated compacted record"),
    ]
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed, pending_bytes FROM source_files") == [
        (19, 16, 2, 1, 100)
    ]
    # ...and reported once it has been quiet for a while.
    past = time.time() - 3600
    os.utime(path, (past, past))
    summary = ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    assert summary.error_samples == [(str(path), 20, "unterminated last line that is not valid JSON")]
    assert rows(db_path, "SELECT line_no, byte_offset, byte_length, reason FROM ingest_errors ORDER BY line_no") == [
        (13, sum(map(len, lines[:12])), len(cut_compacted) - 1, "truncated compacted record"),
        (20, len(data) - 100, 100, "unterminated last line that is not valid JSON"),
    ]
    # Everything else is there: no compaction, the rest of the conversation (its 2 reasoning
    # summaries not counted).
    assert rows(db_path, "SELECT message_count FROM sessions") == [(10,)]
    assert rows(db_path, "SELECT COUNT(*) FROM summaries") == [(0,)]
    assert rows(db_path, "SELECT COUNT(*), SUM(outcome = 'succeeded') FROM tool_results") == [(2, 2)]


def test_completed_last_line_clears_its_error(tmp_path, corpus_root):
    data = (corpus_root / FILE_1).read_bytes()
    path = tmp_path / ".codex" / LAYOUT[FILE_1]
    path.parent.mkdir(parents=True)
    path.write_bytes(data[:-40])
    past = time.time() - 3600
    os.utime(path, (past, past))
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    assert rows(db_path, "SELECT line_no FROM ingest_errors") == [(14,)]
    path.write_bytes(data)
    ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    assert rows(db_path, "SELECT lines_read, lines_failed FROM source_files") == [(14, 0)]
    assert rows(db_path, "SELECT line_no, reason FROM ingest_errors") == []


# -- format drift ------------------------------------------------------------------


def dated_rollout(tmp_path, thread: str, data: bytes) -> Path:
    """``data`` written as the rollout of ``thread`` started 2026-03-01 10:00."""
    path = tmp_path / ".codex" / f"sessions/2026/03/01/rollout-2026-03-01T10-00-00-{thread}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def drifted_rollout(tmp_path) -> Path:
    """A rollout of a future Codex whose every line has a type nobody knows."""
    thread = "0195a000-0000-7000-8000-000000000001"
    return dated_rollout(
        tmp_path, thread,
        envelope("session_header", {"id": thread, "cwd": "/w"}, "2026-03-01T10:00:00.000Z")
        + envelope("event_msg", {"type": "user_turn", "message": "hello"}, "2026-03-01T10:00:01.000Z")
        + envelope("response_item", {"type": "message_v2", "role": "assistant", "text": "hi"}, "2026-03-01T10:00:02.000Z")
        + b'{"kind":"checkpoint","at":"2026-03-01T10:00:03.000Z"}\n',
    )


def test_format_drift_is_reported_loudly(tmp_path):
    path = drifted_rollout(tmp_path)
    db_path = tmp_path / "obelisk.db"
    summary = ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    reason = "none of the 4 lines has a type the codex parser knows: format drift? (0 messages ingested)"
    assert (summary.lines, summary.messages, summary.merged, summary.errors) == (4, 0, 4, 1)
    assert summary.empty_files == [str(path)]
    assert summary.error_samples == [(str(path), None, reason)]
    assert rows(db_path, "SELECT path, line_no, byte_offset, reason FROM ingest_errors") == [(str(path), 0, 0, reason)]
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged FROM source_files") == [(4, 0, 4)]
    assert rows(db_path, "SELECT COUNT(*) FROM messages") == [(0,)]
    # a line of a known type appended later: the report stays, the file still holds no message
    with open(path, "ab") as f:
        f.write(envelope("event_msg", {"type": "token_count", "info": None}, "2026-03-01T10:00:04.000Z"))
    ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    assert rows(db_path, "SELECT line_no, reason FROM ingest_errors") == [(0, reason)]


def test_format_drift_keeps_the_row_of_a_bad_first_line(tmp_path):
    # (a file's error is at line 0, byte 0: keyed by file and byte offset alone, it took
    # the place of the first line's)
    path = drifted_rollout(tmp_path)
    path.write_bytes(b"{not json\n" + path.read_bytes())
    db_path = tmp_path / "obelisk.db"
    summary = ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    drift = "none of the 5 lines has a type the codex parser knows: format drift? (0 messages ingested)"
    bad = "invalid JSON: unexpected character, expected a string key: line 1 column 2 (char 1)"
    assert [(line, reason) for file, line, reason in summary.error_samples if file == str(path)] == [(1, bad), (None, drift)]
    assert rows(db_path, "SELECT line_no, byte_offset, reason FROM ingest_errors WHERE path = ? ORDER BY line_no",
                [str(path)]) == [(0, 0, drift), (1, 0, bad)]


def test_a_thread_id_holding_an_escaped_nul_is_ingested(tmp_path):
    # SQLite's json_each ends a text at a NUL: the session was never found in the queue of
    # sessions to derive, and the ingest looped forever (so it runs in a process of its own)
    path = dated_rollout(
        tmp_path, "0195a000-0000-7000-8000-000000000004",
        envelope("session_meta", {"id": "t\u0000x", "cwd": "/w"}, "2026-03-01T10:00:00.000Z")
        + envelope("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                   "2026-03-01T10:00:01.000Z"),
    )
    db_path = tmp_path / "obelisk.db"
    code = f"from datasette_obelisk.store.ingest import ingest; ingest({str(db_path)!r}, {{'codex': {str(path.parents[4])!r}}})"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert rows(db_path, "SELECT id, message_count FROM sessions") == [("codex:t\ufffdx", 1)]
    assert rows(db_path, "SELECT COUNT(*) FROM derive_queue") == [(0,)]


def test_format_drift_fails_the_cli(tmp_path):
    path = drifted_rollout(tmp_path)
    db_path = tmp_path / "obelisk.db"
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db_path), "--codex-dir", str(tmp_path / ".codex"), "--json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert (out["files"], out["messages"], out["errors"], out["roots"]) == (1, 0, 1, {"codex": str(tmp_path / ".codex")})
    assert out["files_without_messages"] == [str(path)]
    assert [(e["path"], e["line"]) for e in out["error_samples"]] == [(str(path), None)]
    assert out["error_samples"][0]["reason"] == (
        "none of the 4 lines has a type the codex parser knows: format drift? (0 messages ingested)"
    )


def test_partial_drift_is_one_error_at_the_end_of_a_turn(tmp_path):
    """Known metadata, unknown conversation lines: the turn's end is the
    ingest error; a known line of unknown type before it is only merged."""
    thread = "0195a000-0000-7000-8000-000000000002"
    path = dated_rollout(
        tmp_path, thread,
        envelope("session_meta", {"id": thread, "cwd": "/w"}, "2026-03-01T10:00:00.000Z")
        + envelope("event_msg", {"type": "task_started", "turn_id": "t1"}, "2026-03-01T10:00:01.000Z")
        + envelope("conversation_item", {"role": "user", "text": "hello"}, "2026-03-01T10:00:01.001Z")
        + envelope("conversation_item", {"role": "assistant", "text": "hi"}, "2026-03-01T10:00:02.000Z")
        + envelope("event_msg", {"type": "task_complete", "turn_id": "t1"}, "2026-03-01T10:00:02.001Z"),
    )
    db_path = tmp_path / "obelisk.db"
    summary = ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    reason = ("a turn ended without any message the codex parser knows, after lines of unknown types "
              "(the first: line 3, 'conversation_item'): format drift?")
    assert (summary.lines, summary.messages, summary.merged, summary.errors) == (5, 0, 4, 1)
    assert rows(db_path, "SELECT line_no, reason FROM ingest_errors") == [(5, reason)]
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [(5, 0, 4, 1)]


# -- compressed and archived copies ------------------------------------------------


@pytest.mark.parametrize("relative", ROLLOUTS)
def test_zstd_copy_gives_the_same_rows(tmp_path, corpus_root, relative):
    data = (corpus_root / relative).read_bytes()
    plain = tmp_path / "plain" / LAYOUT[relative]
    packed = tmp_path / "packed" / (LAYOUT[relative] + ".zst")
    for path in (plain, packed):
        path.parent.mkdir(parents=True)
    plain.write_bytes(data)
    packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
    ingest(tmp_path / "plain.db", {"codex": tmp_path / "plain"}, sources=codex_sources(), redact=False)
    ingest(tmp_path / "packed.db", {"codex": tmp_path / "packed"}, sources=codex_sources(), redact=False)
    got, expected = snapshot(tmp_path / "packed.db"), snapshot(tmp_path / "plain.db")
    assert got == expected, diff(got, expected)
    counts = "SELECT lines_read, lines_stored, lines_merged, lines_failed, compression FROM source_files"
    expected = ALONE.get(LAYOUT[relative], FILES[LAYOUT[relative]])
    assert rows(tmp_path / "packed.db", counts) == [(*expected, "zstd")]
    assert rows(tmp_path / "plain.db", counts) == [(*expected, None)]


THREAD = "019c0000-0000-7000-8000-00000000c0de"
PACKED = f"sessions/2026/03/01/rollout-2026-03-01T10-00-00-{THREAD}.jsonl.zst"
CUT_SHORT = "cannot read file: its zstd data is cut short (the file ends inside a frame)"


def prompts(count: int, filler: int = 0) -> list[bytes]:
    """A rollout's lines: its session_meta, then ``count - 1`` prompts (of ``filler`` more characters)."""
    return [envelope("session_meta", {"id": THREAD, "timestamp": "2026-03-01T10:00:00.000Z"}, "2026-03-01T10:00:00.000Z")] + [
        envelope("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": f"prompt {i} " + "x" * filler}]},
                 f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z")
        for i in range(1, count)]


def frames_of(lines: list[bytes], size: int, **options) -> list[bytes]:
    """``lines`` compressed ``size`` to a zstd frame."""
    return [zstandard.ZstdCompressor(**options).compress(b"".join(lines[i:i + size])) for i in range(0, len(lines), size)]


def test_a_compressed_rollout_cut_short_keeps_what_it_read_and_says_so_once_quiet(tmp_path):
    # (the decompressor takes the cut for the end of the file: its last frame was lost
    # without a word, and a file of one frame read as empty)
    home, db_path = tmp_path / ".codex", tmp_path / "obelisk.db"
    path = home / PACKED
    path.parent.mkdir(parents=True)
    frames = frames_of(prompts(30), 10)
    path.write_bytes(b"".join(frames)[:len(frames[0]) + len(frames[1]) + len(frames[2]) // 2])
    summary = ingest(db_path, {"codex": home}, sources=codex_sources())
    assert (summary.messages, summary.errors) == (19, 0)  # its writer may be at it still
    os.utime(path, (1e9, 1e9))  # ... and went quiet long ago
    summary = ingest(db_path, {"codex": home}, sources=codex_sources())
    assert (summary.messages, summary.errors) == (19, 1)
    assert rows(db_path, "SELECT line_no, reason FROM ingest_errors") == [(21, CUT_SHORT)]
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [(21, 19, 1, 1)]
    summary = ingest(db_path, {"codex": home}, sources=codex_sources())
    assert (summary.files_skipped, summary.errors) == (1, 0)
    path.write_bytes(frames[0][:-1])  # nothing of it can be read: the file cannot be read
    os.utime(path, (1e9, 1e9))
    summary = ingest(db_path, {"codex": home}, sources=codex_sources())
    assert (summary.messages, summary.errors) == (0, 1)
    # (what it held is the old file's, gone: archived with the error it had)
    assert rows(db_path, "SELECT e.line_no, e.reason, f.missing, f.lines_stored FROM ingest_errors e "
                         "JOIN source_files f ON f.id = e.file_id ORDER BY f.id") == [(21, CUT_SHORT, 1, 19), (0, CUT_SHORT, 0, 0)]
    assert rows(db_path, "SELECT COUNT(*) FROM messages") == [(19,)]


def test_a_compressed_rollout_corrupt_midway_keeps_what_was_read_before(tmp_path):
    # (the decompressor's error failed the file: none of its lines was stored)
    home, db_path = tmp_path / ".codex", tmp_path / "obelisk.db"
    path = home / PACKED
    path.parent.mkdir(parents=True)
    frames = frames_of(prompts(3000, filler=1000), 500, write_checksum=True)
    broken = bytearray(frames[4])
    broken[len(broken) // 2] ^= 0xFF
    path.write_bytes(b"".join([*frames[:4], broken, frames[5]]))
    summary = ingest(db_path, {"codex": home}, sources=codex_sources())
    reason = "cannot read file: its zstd data is corrupt (zstd decompress error: Restored data doesn't match checksum)"
    assert (summary.messages, summary.errors) == (1804, 1)  # every line of the first 2 MB decompressed
    assert rows(db_path, "SELECT line_no, reason FROM ingest_errors") == [(1806, reason)]
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [
        (1806, 1804, 1, 1)]


def ingested_rollout(tmp_path, corpus_root, relative=COMPACTION):
    """A corpus rollout copied where Codex writes it and ingested: (home, its path, the database)."""
    home = tmp_path / ".codex"
    live = home / LAYOUT[relative]
    live.parent.mkdir(parents=True)
    shutil.copy(corpus_root / relative, live)
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"codex": home}, sources=codex_sources())
    return home, live, db_path


def archive(tmp_path, corpus_root, relative=COMPACTION):
    """Ingest a rollout, move it to archived_sessions/ as Codex does, ingest again."""
    home, live, db_path = ingested_rollout(tmp_path, corpus_root, relative)
    before = snapshot(db_path)
    archived = home / "archived_sessions" / live.name
    archived.parent.mkdir()
    os.rename(live, archived)
    summary = ingest(db_path, {"codex": home}, sources=codex_sources())
    return db_path, before, summary, archived


def test_archived_rollout_keeps_its_session(tmp_path, corpus_root):
    db_path, before, summary, archived = archive(tmp_path, corpus_root)
    after = snapshot(db_path)
    # The moved file is read again, every line merges into what is stored.
    assert (summary.files, summary.files_missing, summary.messages, summary.merged, summary.errors) == (1, 1, 0, 20, 0)
    for table in ("messages", "tool_calls", "tool_call_files", "tool_results", "summaries", "ingest_errors"):
        assert after[table] == before[table], table
    assert after["titles"][0] == before["titles"][0]  # the same title (see below for the extra row)
    session = {k: v for k, v in after["sessions"][0].items() if k not in ("availability", "updated_at")}
    assert session == {k: v for k, v in before["sessions"][0].items() if k not in ("availability", "updated_at")}
    assert len(after["sessions"]) == 1
    assert rows(db_path, "SELECT COUNT(*), COUNT(DISTINCT uuid) FROM messages") == [(18, 18)]


def test_a_corrupt_compressed_copy_of_a_gone_rollout_is_no_copy(tmp_path, corpus_root):
    # Its rows stay with the gone file (archived); the check that would move them to the
    # copy failed the whole ingest, run after run, with the decompressor's error.
    home, live, db_path = ingested_rollout(tmp_path, corpus_root)
    packed = home / "archived_sessions" / (live.name + ".zst")
    packed.parent.mkdir()
    packed.write_bytes(zstandard.ZstdCompressor(write_checksum=True).compress(live.read_bytes()))
    ingest(db_path, {"codex": home}, sources=codex_sources())
    live.unlink()
    data = bytearray(packed.read_bytes())
    data[len(data) // 2] ^= 0xFF
    packed.write_bytes(bytes(data))
    for _ in range(2):
        summary = ingest(db_path, {"codex": home}, sources=codex_sources())
        assert [(Path(path).name, line, reason) for path, line, reason in summary.error_samples] == [
            (packed.name, None, "cannot read file: its zstd data is corrupt (zstd decompress error: Restored data doesn't match checksum)")]
    # (the copy corrupted where it is is the copy gone, archived with the sessions it named)
    assert rows(db_path, "SELECT missing, (SELECT COUNT(*) FROM messages WHERE file_id = f.id) FROM source_files f "
                         "ORDER BY id") == [(1, 18), (1, 0), (0, 0)]


def test_archived_rollout_stays_live(tmp_path, corpus_root):
    db_path, _, _, _ = archive(tmp_path, corpus_root)
    assert rows(db_path, "SELECT availability FROM sessions") == [("live",)]


def test_archived_rollout_adds_no_title_rows(tmp_path, corpus_root):
    db_path, before, _, _ = archive(tmp_path, corpus_root)
    assert snapshot(db_path)["titles"] == before["titles"]


def test_archived_rollout_path_follows_the_file(tmp_path, corpus_root):
    db_path, _, _, archived = archive(tmp_path, corpus_root)
    assert rows(db_path, "SELECT jsonl_path FROM sessions") == [(str(archived),)]


def raw_lines(db_path) -> list:
    """raw() of every stored message, read back from wherever its rows now point."""
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.readonly import connect_readonly

    with connect_readonly(db_path) as conn:
        uuids = [row[0] for row in conn.execute("SELECT uuid FROM messages ORDER BY uuid")]
        return [obelisk.raw(conn, uuid, {"limit": 100_000})["text"] for uuid in uuids]


def test_an_archived_rollout_is_still_read_back_line_by_line(tmp_path, corpus_root):
    db_path, _, _, archived = archive(tmp_path, corpus_root)
    read_back = raw_lines(db_path)
    assert len(read_back) == 18 and set(read_back) <= set(archived.read_text().splitlines())
    # The rows, and the line counts, moved to the file still on disk.
    assert rows(db_path, "SELECT missing, lines_read, lines_stored, lines_merged FROM source_files ORDER BY id") == [
        (1, 20, 0, 20), (0, 20, 18, 2),
    ]
    assert rows(db_path, "SELECT DISTINCT f.missing FROM messages m JOIN source_files f ON f.id = m.file_id") == [(0,)]


def test_a_rollout_moved_back_from_the_archive_is_live_where_it_is(tmp_path, corpus_root):
    db_path, before, _, archived = archive(tmp_path, corpus_root)
    live = tmp_path / ".codex" / LAYOUT[COMPACTION]
    os.rename(archived, live)  # unarchived: back where it was first read
    summary = ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    assert (summary.files_missing, summary.messages, summary.errors) == (1, 0, 0)
    assert rows(db_path, "SELECT availability, jsonl_path FROM sessions") == [("live", str(live))]
    assert len(raw_lines(db_path)) == 18
    assert rows(db_path, "SELECT path, missing, lines_read, lines_stored, lines_merged FROM source_files ORDER BY id") == [
        (str(live), 0, 20, 18, 2), (str(archived), 1, 20, 0, 20),
    ]
    assert snapshot(db_path)["messages"] == before["messages"]


def compressed_in_place(tmp_path, corpus_root):
    """An ingested rollout Codex then compressed in place, ingested again; its raw lines before."""
    home, live, db_path = ingested_rollout(tmp_path, corpus_root)
    before = sorted(raw_lines(db_path))
    packed = live.with_name(live.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(live.read_bytes()))
    live.unlink()
    ingest(db_path, {"codex": home}, sources=codex_sources())
    return home, packed, db_path, before


def test_a_rollout_compressed_in_place_is_still_read_back(tmp_path, corpus_root):
    home, packed, db_path, before = compressed_in_place(tmp_path, corpus_root)
    assert sorted(raw_lines(db_path)) == before and len(before) == 18
    assert rows(db_path, "SELECT availability FROM sessions") == [("live",)]


def test_a_compressed_rollout_moved_to_the_archive_is_still_read_back(tmp_path, corpus_root):
    # Codex compresses an idle rollout in place, then may archive it: the rows
    # follow the compressed copy, so raw() still finds every line.
    home, packed, db_path, before = compressed_in_place(tmp_path, corpus_root)
    archived = home / "archived_sessions" / packed.name
    archived.parent.mkdir()
    os.rename(packed, archived)
    ingest(db_path, {"codex": home}, sources=codex_sources())
    assert sorted(raw_lines(db_path)) == before and len(before) == 18
    assert rows(db_path, "SELECT DISTINCT f.path FROM messages m JOIN source_files f ON f.id = m.file_id") == [
        (str(archived),)]


def test_a_copy_found_after_its_rollout_was_found_gone_takes_its_rows(tmp_path, corpus_root):
    # The rollout is deleted and a run archives it; a later run finds a copy of it,
    # compressed in archived_sessions/: the rows follow the copy, as when it came
    # first, so raw() finds every line and the database is what one ingest gives.
    home, live, db_path = ingested_rollout(tmp_path, corpus_root)
    before = sorted(raw_lines(db_path))
    data = live.read_bytes()
    live.unlink()
    ingest(db_path, {"codex": home}, sources=codex_sources())
    assert rows(db_path, "SELECT availability FROM sessions") == [("archived",)]
    packed = home / "archived_sessions" / (live.name + ".zst")
    packed.parent.mkdir()
    packed.write_bytes(zstandard.ZstdCompressor().compress(data))
    ingest(db_path, {"codex": home}, sources=codex_sources())
    assert sorted(raw_lines(db_path)) == before and len(before) == 18
    assert rows(db_path, "SELECT path, missing, lines_read, lines_stored, lines_merged FROM source_files ORDER BY id") == [
        (str(live), 1, 20, 0, 20), (str(packed), 0, 20, 18, 2),
    ]
    assert rows(db_path, "SELECT availability, jsonl_path FROM sessions") == [("live", str(packed))]
    ingest(tmp_path / "once.db", {"codex": home}, sources=codex_sources())
    got, once = snapshot(db_path), snapshot(tmp_path / "once.db")
    assert got == once, diff(got, once)


def test_a_deleted_rollout_keeps_its_rows_with_the_missing_file(tmp_path, corpus_root):
    db_path, _, _, archived = archive(tmp_path, corpus_root)
    archived.unlink()
    ingest(db_path, {"codex": tmp_path / ".codex"}, sources=codex_sources())
    assert rows(db_path, "SELECT COUNT(*) FROM messages") == [(18,)]
    assert rows(db_path, "SELECT availability FROM sessions") == [("archived",)]


# -- session index titles ---------------------------------------------------------


def test_session_index_names_a_thread_even_before_its_rollout(tmp_path, corpus_root):
    home = tmp_path / ".codex"
    home.mkdir()
    index = home / "session_index.jsonl"
    index.write_bytes(
        b'{"id":"019c8a70-dda7-7f33-98ea-f30553347322","thread_name":"Sync the push queue",'
        b'"updated_at":"2026-02-23T12:30:00Z"}\n'
        # a thread whose rollout names itself (thread_name_updated): that title wins
        b'{"id":"019fc8be-3658-7ca3-9e29-000000000000","thread_name":"Index name",'
        b'"updated_at":"2026-08-03T11:00:00Z"}\n'
    )
    db_path = tmp_path / "obelisk.db"
    summary = ingest(db_path, {"codex": home}, sources=codex_sources())
    assert (summary.lines, summary.merged, summary.messages) == (2, 2, 0)
    assert rows(db_path, "SELECT COUNT(*) FROM sessions") == [(0,)]  # nothing to show yet
    codex_home(home, corpus_root, [INTERRUPTED, SMALL])
    ingest(db_path, {"codex": home}, sources=codex_sources())
    titles = "SELECT id, title, title_source FROM sessions ORDER BY id"
    assert rows(db_path, titles) == [
        ("codex:019c8a70-dda7-7f33-98ea-f30553347322", "Sync the push queue", "index"),
        ("codex:019fc8be-3658-7ca3-9e29-000000000000", "[trimmed for fixture]", "custom"),
    ]
    # A rename appends to the index: the newest name wins.
    with open(index, "ab") as fp:
        fp.write(b'{"id":"019c8a70-dda7-7f33-98ea-f30553347322","thread_name":"Sync the push queue, take two",'
                 b'"updated_at":"2026-02-24T09:00:00Z"}\n')
    ingest(db_path, {"codex": home}, sources=codex_sources())
    assert rows(db_path, titles)[0] == ("codex:019c8a70-dda7-7f33-98ea-f30553347322", "Sync the push queue, take two", "index")
    assert rows(db_path, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files WHERE kind = "
                         "'session_index'") == [(3, 0, 3, 0)]


# -- imported sessions ------------------------------------------------------------


def claude_session_log(session: str, prompt: str, answer: str) -> str:
    def line(uuid, parent, role, content):
        return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": "/w/app",
                           "version": "2.1.300", "timestamp": "2026-11-25T10:00:00.000Z",
                           "message": {"role": role, "content": content}}) + "\n"

    return line(f"{session[:4]}-u", None, "user", prompt) + line(f"{session[:4]}-a", f"{session[:4]}-u", "assistant", [
        {"type": "thinking", "thinking": "Only Claude Code keeps this.", "signature": "x"},
        {"type": "text", "text": answer}])


def imported_rollout(thread: str, prompt: str, answer: str) -> bytes:
    """A rollout as Codex's import writes it (external-agent-migration, sessions/export.rs): a new
    thread's session_meta, then each prompt and answer as an event and a response item, its last
    turn ended by Codex's marker and a token count."""
    at = "2026-11-25T10:00:00.000Z"
    return b"".join([
        envelope("session_meta", {"id": thread, "session_id": thread, "timestamp": at, "cwd": "/w/app",
                                  "originator": "codex_vscode", "cli_version": "0.170.0", "source": "vscode",
                                  "model_provider": "openai", "history_mode": "legacy"}, at),
        envelope("event_msg", {"type": "task_started", "turn_id": "external-import-turn-1"}, at),
        envelope("event_msg", {"type": "user_message", "message": prompt}, at),
        envelope("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": prompt}]}, at),
        envelope("event_msg", {"type": "agent_message", "message": answer}, at),
        envelope("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": answer}]}, at),
        envelope("event_msg", {"type": "agent_message", "message": "<EXTERNAL SESSION IMPORTED>"}, at),
        envelope("event_msg", {"type": "token_count", "info": {
            "total_token_usage": {"total_tokens": 12}, "last_token_usage": {"total_tokens": 12}}}, at),
        envelope("event_msg", {"type": "task_complete", "turn_id": "external-import-turn-1"}, at),
    ])


def test_a_thread_imported_from_a_claude_code_session_is_its_child_and_both_keep_their_text(tmp_path):
    first, second = "aaaaaaaa-1111-4111-8111-111111111111", "bbbbbbbb-2222-4222-8222-222222222222"
    threads = {first: "019fd000-0000-7000-8000-000000000001", second: "019fd000-0000-7000-8000-000000000002"}
    claude = tmp_path / ".claude" / "projects" / "-w-app"
    claude.mkdir(parents=True)
    codex = tmp_path / ".codex"
    day = codex / "sessions" / "2026" / "11" / "25"
    day.mkdir(parents=True)
    ledger = codex / "external_agent_session_imports.json"

    def imported(session, prompt, answer):
        (claude / f"{session}.jsonl").write_text(claude_session_log(session, prompt, answer))
        rollout = day / f"rollout-2026-11-25T10-00-00-{threads[session]}.jsonl"
        rollout.write_bytes(imported_rollout(threads[session], prompt, answer))
        return rollout

    def record(session):  # (what Codex writes once the batch of imports is done)
        return {"source_path": str(claude / f"{session}.jsonl"), "content_sha256": session[0] * 64,
                "imported_thread_id": threads[session], "imported_at": 1795600000,
                "source_modified_at": 1795600000000000000, "connector_names": [], "title": None}

    db_path = tmp_path / "obelisk.db"
    homes = {"claude": tmp_path / ".claude", "codex": codex}
    links = "SELECT id, source, parent_session_id, relationship, message_count FROM sessions ORDER BY id"
    rollout = imported(first, "Fix the login", "Done: the token is refreshed.")
    ingest(db_path, homes)
    assert rows(db_path, links) == [(first, "claude", None, None, 2), (f"codex:{threads[first]}", "codex", None, None, 2)]
    ledger.write_text(json.dumps({"records": [record(first)]}, indent=2))
    summary = ingest(db_path, homes)
    assert (summary.files_read, summary.lines, summary.merged) == (1, 1, 1)  # the ledger alone
    assert rows(db_path, links) == [
        (first, "claude", None, None, 2), (f"codex:{threads[first]}", "codex", first, "import", 2)]
    assert ingest(db_path, homes).files_read == 0
    # Both keep their text: the original whole, Codex's copy as Codex wrote it (no thinking).
    assert rows(db_path, "SELECT session_id, role, text FROM messages WHERE is_meta = 0 ORDER BY session_id, seq") == [
        (first, "user", "Fix the login"),
        (first, "assistant", "Only Claude Code keeps this.\nDone: the token is refreshed."),
        (f"codex:{threads[first]}", "user", "Fix the login"),
        (f"codex:{threads[first]}", "assistant", "Done: the token is refreshed."),
    ]

    # Another import: the ledger, rewritten whole, is read again alone.
    imported(second, "Add a test", "Added.")
    ledger.write_text(json.dumps({"records": [record(first), record(second)]}, indent=2))
    ingest(db_path, homes)
    assert rows(db_path, links)[2:] == [
        (f"codex:{threads[first]}", "codex", first, "import", 2), (f"codex:{threads[second]}", "codex", second, "import", 2)]
    # A rollout read again from its start (a parser change) takes the ledger along: the link stays.
    change = sqlite3.connect(db_path)
    with change:
        change.execute("UPDATE source_files SET parser_version = NULL WHERE path = ?", [str(rollout)])
    change.close()
    assert ingest(db_path, homes).files_read == 3  # the rollout, the ledger naming it and the other one it names
    assert rows(db_path, links)[2:] == [
        (f"codex:{threads[first]}", "codex", first, "import", 2), (f"codex:{threads[second]}", "codex", second, "import", 2)]
    assert rows(db_path, "SELECT lines_read, lines_merged, lines_failed FROM source_files WHERE kind = 'import_ledger'") == [
        (2, 2, 0)]
    # A thread whose rollout is not here (deleted, another Codex home) is no session of its own.
    gone = {**record(second), "imported_thread_id": "019fd000-0000-7000-8000-000000000003"}
    ledger.write_text(json.dumps({"records": [record(first), record(second), gone]}, indent=2))
    ingest(db_path, homes)
    assert [r[0] for r in rows(db_path, links)] == [first, second, f"codex:{threads[first]}", f"codex:{threads[second]}"]


@pytest.mark.parametrize("cold_load_bytes", [None, 0], ids=["row-by-row", "cold-load"])
def test_a_ledger_read_before_the_thread_links_it_once_its_rollout_comes(tmp_path, corpus_root, cold_load_bytes):
    # The ledger is rewritten as soon as Codex imports; the rollout may reach the
    # store later (another run, a live refresh): what a fresh ingest gives all the same.
    session, thread = "aaaaaaaa-1111-4111-8111-111111111111", "019fd000-0000-7000-8000-000000000001"
    spawned = "33333333-3333-4333-8333-333333333333"  # a subagent's thread: its parent is its log's
    claude = tmp_path / ".claude" / "projects" / "-w-app"
    claude.mkdir(parents=True)
    (claude / f"{session}.jsonl").write_text(claude_session_log(session, "Fix the login", "Done."))
    codex = tmp_path / ".codex"
    codex.mkdir()
    ledger = codex / "external_agent_session_imports.json"

    def record(imported):
        return {"source_path": str(claude / f"{session}.jsonl"), "content_sha256": "a" * 64,
                "imported_thread_id": imported, "imported_at": 1795600000,
                "source_modified_at": 1795600000000000000, "connector_names": [], "title": None}

    ledger.write_text(json.dumps({"records": [record(thread), record(spawned)]}))
    homes = {"claude": tmp_path / ".claude", "codex": codex}
    db_path = tmp_path / "obelisk.db"
    links = "SELECT id, parent_session_id, relationship FROM sessions WHERE id LIKE 'codex:%' ORDER BY id"
    ingest(db_path, homes, cold_load_bytes=cold_load_bytes)
    assert rows(db_path, links) == []  # no rollout yet: no session
    day = codex / "sessions" / "2026" / "11" / "25"
    day.mkdir(parents=True)
    rollout = day / f"rollout-2026-11-25T10-00-00-{thread}.jsonl"
    rollout.write_bytes(imported_rollout(thread, "Fix the login", "Done."))
    codex_home(codex, corpus_root, [PARENT, CHILD])
    summary = ingest(db_path, homes, cold_load_bytes=cold_load_bytes)
    assert summary.files_read == 3  # the rollouts alone: the ledger is not read again
    linked = [(f"codex:{thread}", session, "import"),
              ("codex:22222222-2222-4222-8222-222222222222", None, None),
              (f"codex:{spawned}", "codex:22222222-2222-4222-8222-222222222222", "subagent")]
    assert sorted(rows(db_path, links)) == sorted(linked)
    ingest(tmp_path / "fresh.db", homes, cold_load_bytes=cold_load_bytes)
    got, expected = snapshot(db_path), snapshot(tmp_path / "fresh.db")
    assert got == expected, diff(got, expected)
    assert ingest(db_path, homes).files_read == 0

    # A rollout read again from its start keeps the link (the ledger, unchanged, gives it still).
    change = sqlite3.connect(db_path)
    with change:
        change.execute("UPDATE source_files SET parser_version = NULL WHERE path = ?", [str(rollout)])
    change.close()
    ingest(db_path, homes)
    assert sorted(rows(db_path, links)) == sorted(linked)

    # The ledger rewritten without them: the link it gave goes, the parent the subagent's log gives stays.
    ledger.write_text(json.dumps({"records": []}))
    ingest(db_path, homes)
    assert sorted(rows(db_path, links)) == sorted([(f"codex:{thread}", None, None), *linked[1:]])
    (tmp_path / "fresh.db").unlink()
    ingest(tmp_path / "fresh.db", homes)
    got, expected = snapshot(db_path), snapshot(tmp_path / "fresh.db")
    assert got == expected, diff(got, expected)


def one_import(tmp_path):
    """A Claude Code session, the Codex thread it was imported into and the ledger saying so:
    the session, the thread, the Codex home and the thread's rollout."""
    session, thread = "aaaaaaaa-1111-4111-8111-111111111111", "019fd000-0000-7000-8000-000000000001"
    claude = tmp_path / ".claude" / "projects" / "-w-app"
    claude.mkdir(parents=True)
    (claude / f"{session}.jsonl").write_text(claude_session_log(session, "Fix the login", "Done."))
    codex = tmp_path / ".codex"
    day = codex / "sessions" / "2026" / "11" / "25"
    day.mkdir(parents=True)
    rollout = day / f"rollout-2026-11-25T10-00-00-{thread}.jsonl"
    rollout.write_bytes(imported_rollout(thread, "Fix the login", "Done."))
    (codex / "external_agent_session_imports.json").write_text(json.dumps({"records": [{
        "source_path": str(claude / f"{session}.jsonl"), "content_sha256": "a" * 64, "imported_thread_id": thread,
        "imported_at": 1795600000, "source_modified_at": 1795600000000000000, "connector_names": [], "title": None}]}))
    return session, thread, codex, rollout


def test_a_database_from_before_the_links_were_kept_takes_the_links_it_missed_and_keeps_the_others(tmp_path):
    session, thread, codex, _ = one_import(tmp_path)
    ledger = codex / "external_agent_session_imports.json"
    db_path = tmp_path / "obelisk.db"
    homes = {"claude": tmp_path / ".claude", "codex": codex}
    link = f"SELECT parent_session_id, relationship FROM sessions WHERE id = 'codex:{thread}'"
    ingest(db_path, homes)
    assert rows(db_path, link) == [(session, "import")]

    def as_before_the_links_were_kept(missed: bool):
        old = sqlite3.connect(db_path)
        with old:
            old.execute("DROP TABLE session_links")
            old.execute("DELETE FROM _sqlite_migrations WHERE name = 'm042_create_session_links'")
            if missed:  # (its ledger read before its rollout)
                old.execute("UPDATE sessions SET parent_session_id = NULL, relationship = NULL WHERE id = ?",
                            [f"codex:{thread}"])
            old.execute("INSERT OR IGNORE INTO derive_queue (session_id) VALUES (?)", [f"codex:{thread}"])
        old.close()

    # The link missed is set: the ledger still there is read again.
    as_before_the_links_were_kept(missed=True)
    ingest(db_path, homes)
    assert rows(db_path, link) == [(session, "import")]
    # The link of a ledger gone from disk (not read again) stays when its thread is derived again.
    ledger.unlink()
    assert ingest(db_path, homes).files_missing == 1
    as_before_the_links_were_kept(missed=False)
    ingest(db_path, homes)
    assert rows(db_path, link) == [(session, "import")]
    assert rows(db_path, "SELECT session_id, parent_session_id, relationship FROM session_links") == [
        (f"codex:{thread}", session, "import")]


def test_an_imported_thread_whose_rollout_is_gone_is_archived_though_the_lists_naming_it_stay(tmp_path):
    # The import ledger and session_index.jsonl name threads; neither is a thread's log.
    session, thread, codex, rollout = one_import(tmp_path)
    (codex / "session_index.jsonl").write_text(
        json.dumps({"id": thread, "thread_name": "Login fix", "updated_at": "2026-11-25T10:00:00Z"}) + "\n")
    db_path = tmp_path / "obelisk.db"
    homes = {"claude": tmp_path / ".claude", "codex": codex}
    thread_row = f"SELECT parent_session_id, availability, jsonl_path FROM sessions WHERE id = 'codex:{thread}'"
    ingest(db_path, homes)
    assert rows(db_path, thread_row) == [(session, "live", str(rollout))]
    rollout.unlink()
    assert ingest(db_path, homes).files_missing == 1
    assert rows(db_path, thread_row) == [(session, "archived", str(rollout))]


# -- incremental and crash-safe ---------------------------------------------------


def file_counts(db_path):
    return rows(db_path, "SELECT path, cursor, line_no, lines_read, lines_stored, lines_merged, lines_failed, "
                         "pending_bytes FROM source_files ORDER BY path")


@pytest.mark.parametrize("relative", ROLLOUTS)
def test_rollout_written_in_random_chunks_gives_the_same_database(tmp_path, corpus_root, relative):
    data = (corpus_root / relative).read_bytes()
    whole = tmp_path / "whole" / ".codex"
    live = tmp_path / "live" / ".codex"
    for home in (whole, live):
        (home / LAYOUT[relative]).parent.mkdir(parents=True)
    (whole / LAYOUT[relative]).write_bytes(data)
    ingest(tmp_path / "whole.db", {"codex": whole}, sources=codex_sources(), redact=False)

    rng = random.Random(relative)
    cuts = sorted(rng.sample(range(1, len(data)), 25))
    with open(live / LAYOUT[relative], "wb") as fp:
        for start, end in zip([0] + cuts, cuts + [len(data)]):
            fp.write(data[start:end])
            fp.flush()
            ingest(tmp_path / "live.db", {"codex": live}, sources=codex_sources(), redact=False)
    got, expected = snapshot(tmp_path / "live.db"), snapshot(tmp_path / "whole.db")
    assert got == expected, diff(got, expected)
    assert [r[1:] for r in file_counts(tmp_path / "live.db")] == [r[1:] for r in file_counts(tmp_path / "whole.db")]


def test_project_is_where_the_session_started_however_the_file_is_read(tmp_path, corpus_root):
    # The sampler's later turns work in another folder (its placeholder):
    # read whole or line by line, the project stays session_meta's cwd.
    data = (corpus_root / SMALL).read_bytes()
    home = tmp_path / ".codex"
    path = home / LAYOUT[SMALL]
    path.parent.mkdir(parents=True)
    with open(path, "wb") as fp:
        for line in data.splitlines(keepends=True):
            fp.write(line)
            fp.flush()
            ingest(tmp_path / "obelisk.db", {"codex": home}, sources=codex_sources(), redact=False)
    assert rows(tmp_path / "obelisk.db", "SELECT project, project_path FROM sessions") == [
        ("-tmp-repo", "[trimmed for fixture]")
    ]


def test_derived_project_does_not_depend_on_how_the_file_was_read(tmp_path):
    # A rollout whose session_meta has no cwd (the project is derived from the turns).
    thread = "0195a000-0000-7000-8000-0000000000aa"
    lines = [envelope("session_meta", {"id": thread}, "2026-03-01T10:00:00.000Z")]
    for folder, prompts in (("/w/first", 2), ("/w/second", 4)):
        lines.append(envelope("turn_context", {"cwd": folder, "model": "m"}, "2026-03-01T10:00:01.000Z"))
        lines += [envelope("event_msg", {"type": "user_message", "message": f"{folder} {i}"}, "2026-03-01T10:00:02.000Z")
                  for i in range(prompts)]
    for name, parts in (("whole", [b"".join(lines)]), ("split", [b"".join(lines[:4]), b"".join(lines[4:])])):
        path = tmp_path / name / ".codex" / f"sessions/2026/03/01/rollout-2026-03-01T10-00-00-{thread}.jsonl"
        path.parent.mkdir(parents=True)
        for part in parts:
            with open(path, "ab") as fp:
                fp.write(part)
            ingest(tmp_path / f"{name}.db", {"codex": tmp_path / name / ".codex"}, sources=codex_sources())
    assert rows(tmp_path / "whole.db", "SELECT project, project_path FROM sessions") == [("-w-second", "/w/second")]
    assert rows(tmp_path / "split.db", "SELECT project, project_path FROM sessions") == [("-w-second", "/w/second")]


def test_small_commits_give_the_same_database(tmp_path, corpus_root):
    """Commits in the middle of a file (every 64 KB here, every 8 MB by
    default) neither re-read nor skip a line: Codex message ids are byte
    offsets, so a line read twice would be a second message."""
    home = codex_home(tmp_path / ".codex", corpus_root, [BIG])
    ingest(tmp_path / "one.db", {"codex": home}, sources=codex_sources(), redact=False)
    ingest(tmp_path / "many.db", {"codex": home}, sources=codex_sources(), redact=False, chunk_bytes=64 << 10)
    assert file_counts(tmp_path / "many.db") == file_counts(tmp_path / "one.db")
    got, expected = snapshot(tmp_path / "many.db"), snapshot(tmp_path / "one.db")
    assert got == expected, diff(got, expected)


RUNNER = """
import sys, time
from pathlib import Path
from datasette_obelisk.store.ingest import ingest
root = Path({root!r})
print("ready", flush=True)
started = time.perf_counter()
ingest({db!r}, {{"claude": root / ".claude", "codex": root / ".codex"}}, chunk_bytes={chunk})
print(time.perf_counter() - started, flush=True)
"""
CRASH_CHUNK_BYTES = 6000  # a commit every few lines: hundreds of transactions


def start_ingest(db_path: Path, root: Path) -> subprocess.Popen:
    code = RUNNER.format(root=str(root), db=str(db_path), chunk=CRASH_CHUNK_BYTES)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"  # imports done: the ingest starts now
    return proc


def unfinished(db_path: Path, total: int) -> bool:
    """Whether an ingester killed in ``db_path`` left work for the next run:
    no schema yet, messages missing, or sessions still to derive."""
    if not db_path.exists():
        return True
    try:
        (messages, queued), = rows(db_path, "SELECT (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM derive_queue)")
    except sqlite3.OperationalError:  # killed before or while creating the schema
        return True
    return messages < total or queued > 0


def test_sigkill_at_random_moments_then_rerun_gives_the_clean_database(tmp_path):
    """The real Claude Code and Codex sources on a generated corpus (subagents,
    a fork, a spawned thread, compaction), killed at random points of the
    ingest, then run to the end: the same database as one clean run."""
    from datasette_obelisk.demo.generator import generate

    root = tmp_path / "logs"
    stats = generate(root, seed=3, target_bytes=1_200_000)
    assert (stats.codex.forks, stats.codex.subagent_transcripts) >= (1, 1)
    clean = tmp_path / "clean.db"
    proc = start_ingest(clean, root)
    duration = float(proc.stdout.readline())
    assert proc.wait() == 0
    expected, expected_files = snapshot(clean), file_counts(clean)
    assert rows(clean, "SELECT COUNT(*) FROM source_files") == [(stats.claude.files + stats.codex.files,)]
    # Hundreds of small commits give what one commit per file gives.
    key = Path(f"{clean}.redaction-key")
    shutil.copy(key, tmp_path / "one.db.redaction-key")
    ingest(tmp_path / "one.db", {"claude": root / ".claude", "codex": root / ".codex"})
    assert snapshot(tmp_path / "one.db") == expected, diff(snapshot(tmp_path / "one.db"), expected)
    assert file_counts(tmp_path / "one.db") == expected_files

    killed = tmp_path / "killed.db"
    rng = random.Random(11)
    total = rows(clean, "SELECT COUNT(*) FROM messages")[0][0]
    kills = attempts = 0
    while kills < 4 and attempts < 40:
        attempts += 1
        shutil.copy(key, f"{killed}.redaction-key")  # the same secret markers as the clean run
        proc = start_ingest(killed, root)
        time.sleep(rng.uniform(0.05, 0.9) * duration)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        if proc.returncode == -signal.SIGKILL and unfinished(killed, total):
            kills += 1  # killed with work left: later runs must finish it
        else:
            # It got to the end first: start over, so the next kill lands in work.
            for suffix in ("", "-wal", "-shm"):
                Path(f"{killed}{suffix}").unlink(missing_ok=True)
    assert kills >= 3, f"only {kills} of {attempts} kills landed before the ingester finished"
    proc = start_ingest(killed, root)
    proc.stdout.readline()
    assert proc.wait() == 0
    proc.stdout.close()
    got = snapshot(killed)
    assert got == expected, diff(got, expected)
    assert file_counts(killed) == expected_files


def test_a_fork_read_again_for_a_parent_found_elsewhere_is_counted_among_the_files(tmp_path, corpus_root):
    db_path = tmp_path / "obelisk.db"
    ingest(db_path, {"codex": fork_home(tmp_path / "first" / ".codex", corpus_root)})
    other = fork_home(tmp_path / "other" / ".codex", corpus_root, fork=False, parent=INTERRUPTED_NAME)
    summary = ingest(db_path, {"codex": other})
    assert (summary.files, summary.files_read, summary.files_skipped) == (2, 2, 0)



def fork_with_turn_context(corpus_root: Path) -> bytes:
    """``fork_of`` whose own turn opens with its ``turn_context``, as Codex writes one
    (it names the turn's model and effort: none is taken from the copied history)."""
    lines = fork_of((corpus_root / INTERRUPTED).read_bytes()).splitlines(keepends=True)
    [at] = [n for n, line in enumerate(lines) if FORK_TURN.encode() in line]
    context = {"turn_id": FORK_TURN, "cwd": "/redacted/path/da0ba47443", "model": "gpt-5.3-codex", "effort": "medium"}
    return b"".join(lines[:at + 1]) + envelope("turn_context", context, "2026-02-23T12:41:00.000Z") + b"".join(lines[at + 1:])


def _fork_gone(tmp_path, corpus_root, how: str, scenario: str) -> Path:
    """The fork's file gone (``how``: deleted, or emptied in place) and its rows
    archived, its parent's log read with it (``together``) or after."""
    db_path = tmp_path / f"{scenario}-{how}.db"
    home = tmp_path / f"{scenario}-{how}" / ".codex"
    data = fork_with_turn_context(corpus_root)

    def gone():
        if how == "deleted":
            (home / FORK_NAME).unlink()
        else:
            (home / FORK_NAME).write_bytes(b"")

    if scenario == "together":
        ingest(db_path, {"codex": fork_home(home, corpus_root, parent=INTERRUPTED_NAME, data=data)})
        gone()
        ingest(db_path, {"codex": home})
    elif scenario == "parent-in-a-later-run":
        ingest(db_path, {"codex": fork_home(home, corpus_root, data=data)})
        gone()
        ingest(db_path, {"codex": home})
        ingest(db_path, {"codex": fork_home(home, corpus_root, fork=False, parent=INTERRUPTED_NAME)})
    elif scenario == "parent-in-the-run-that-finds-it-gone":
        ingest(db_path, {"codex": fork_home(home, corpus_root, data=data)})
        gone()
        ingest(db_path, {"codex": fork_home(home, corpus_root, fork=False, parent=INTERRUPTED_NAME)})
    elif scenario == "parent-in-another-folder-later":
        ingest(db_path, {"codex": fork_home(home, corpus_root, data=data)})
        gone()
        ingest(db_path, {"codex": home})
        ingest(db_path, {"codex": fork_home(tmp_path / f"other-{how}" / ".codex", corpus_root, fork=False,
                                            parent=INTERRUPTED_NAME)})
    return db_path


@pytest.mark.parametrize("how", ["deleted", "emptied"])
@pytest.mark.parametrize("scenario", ["parent-in-a-later-run", "parent-in-the-run-that-finds-it-gone",
                                      "parent-in-another-folder-later"])
def test_a_gone_fork_gives_its_kept_copy_up_when_its_parent_comes(tmp_path, corpus_root, how, scenario):
    together = _fork_gone(tmp_path, corpus_root, how, "together")
    db_path = _fork_gone(tmp_path, corpus_root, how, scenario)
    fork, parent = f"codex:{FORK_ID}", f"codex:{FORK_PARENT}"
    counts = "SELECT session_id, COUNT(*) FROM messages GROUP BY session_id ORDER BY session_id"
    assert rows(together, counts) == [(parent, 12), (fork, 3)]
    assert rows(db_path, counts) == [(parent, 12), (fork, 3)]
    assert rows(db_path, "SELECT COUNT(*) FROM messages WHERE meta_json LIKE '%copied_from%'") == [(0,)]
    assert rows(db_path, "SELECT seq, line_no, parent_uuid FROM messages WHERE session_id = ? ORDER BY seq", [fork]) == [
        (1, 23, None), (2, 25, f"{fork}:6113"), (3, 27, f"{fork}:6417")]
    assert rows(db_path, "SELECT id, session_id FROM tool_calls") == [(f"{parent}:call_UtYwHmwWekzvq83m8Rb9K8jJ", parent)]
    assert rows(db_path, "SELECT COUNT(*) FROM tool_results WHERE session_id = ?", [fork]) == [(0,)]
    # the parent's prompt is found once, in the parent
    assert rows(db_path, "SELECT m.session_id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                         "WHERE messages_fts MATCH '2239bcba'") == [(parent,)]
    sessions = "SELECT id, title, message_count, availability, input_tokens, reasoning_effort FROM sessions ORDER BY id"
    assert rows(db_path, sessions) == rows(together, sessions)
    file_counts = ("SELECT lines_read, lines_stored, lines_merged, lines_failed, missing FROM source_files "
                   "WHERE path LIKE ?")
    assert rows(db_path, file_counts, [f"%{FORK_ID}.jsonl"]) == rows(together, file_counts, [f"%{FORK_ID}.jsonl"]) == [
        (27, 3, 24, 0, 1)]
    assert diff(snapshot(together), snapshot(db_path)) == []


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_generated_gone_fork_gives_its_kept_copy_up_when_its_parent_comes(tmp_path, how):
    from datasette_obelisk.demo.generator import generate

    def fork_gone(folder: Path, parent_later: bool) -> tuple[Path, dict]:
        generate(folder / "gen", seed=3, target_bytes=300_000, claude=False, codex=True)
        home = folder / "gen" / ".codex"
        fork_path, parent_path, meta = generated_fork(home)
        db_path = folder / "obelisk.db"
        if parent_later:
            (folder / "away").mkdir()
            parent_path.rename(folder / "away" / parent_path.name)
            ingest(db_path, {"codex": home})
            fork = f"codex:{meta['id']}"
            assert rows(db_path, "SELECT COUNT(*) FROM messages WHERE session_id = ? "
                                 "AND json_extract(meta_json, '$.copied_from') IS NOT NULL", [fork]) == [(34,)]
            assert rows(db_path, "SELECT COUNT(*) FROM tool_calls WHERE session_id = ?", [fork]) == [(11,)]
        else:
            ingest(db_path, {"codex": home})
        if how == "deleted":
            fork_path.unlink()
        else:
            fork_path.write_bytes(b"")
        ingest(db_path, {"codex": home})
        if parent_later:
            (folder / "away" / parent_path.name).rename(parent_path)
            ingest(db_path, {"codex": home})
        return db_path, meta

    together, meta = fork_gone(tmp_path / "together", parent_later=False)
    db_path, _ = fork_gone(tmp_path / "later", parent_later=True)
    fork, parent = f"codex:{meta['id']}", f"codex:{meta['forked_from_id']}"
    counts = "SELECT session_id, COUNT(*) FROM messages WHERE session_id IN (?, ?) GROUP BY session_id ORDER BY 1"
    assert rows(db_path, counts, [fork, parent]) == rows(together, counts, [fork, parent]) == [(parent, 49), (fork, 35)]
    assert rows(db_path, "SELECT COUNT(*) FROM messages WHERE meta_json LIKE '%copied_from%'") == [(0,)]
    assert rows(db_path, "SELECT COUNT(*) FROM tool_calls WHERE session_id = ?", [fork]) == rows(
        together, "SELECT COUNT(*) FROM tool_calls WHERE session_id = ?", [fork])
    assert diff(snapshot(together), snapshot(db_path)) == []


@pytest.mark.parametrize("grown", [False, True], ids=["as-long", "with-a-turn-more"])
def test_a_deleted_rollout_back_with_its_lines_at_other_offsets_stores_each_message_once(tmp_path, corpus_root, grown):
    # Message ids are byte offsets: written again with a longer first line, every
    # message of the rollout is at another offset, and is the archived one moved.
    home, live, db_path = ingested_rollout(tmp_path, corpus_root)
    lines = live.read_bytes().splitlines(keepends=True)
    live.unlink()
    ingest(db_path, {"codex": home}, sources=codex_sources())
    assert rows(db_path, "SELECT availability FROM sessions") == [("archived",)]
    head = orjson.loads(lines[0])
    head["payload"]["instructions"] = "Answer briefly."
    data = orjson.dumps(head) + b"\n" + b"".join(lines[1:])
    if grown:
        stamp = "2025-10-28T05:00:00.000Z"
        data += envelope("event_msg", {"type": "user_message", "message": "One more thing."}, stamp)
        data += envelope("event_msg", {"type": "agent_message", "message": "Done."}, stamp)
    live.write_bytes(data)
    ingest(db_path, {"codex": home}, sources=codex_sources())
    assert rows(db_path, "SELECT COUNT(*) FROM messages") == [(18 + 2 * grown,)]
    assert rows(db_path, "SELECT path, missing FROM source_files") == [(str(live), 0)]
    assert rows(db_path, "SELECT availability, message_count FROM sessions") == [("live", 10 + 2 * grown)]
    ingest(tmp_path / "once.db", {"codex": home}, sources=codex_sources())
    assert diff(snapshot(db_path), snapshot(tmp_path / "once.db")) == []
    assert raw_lines(db_path) == raw_lines(tmp_path / "once.db")
