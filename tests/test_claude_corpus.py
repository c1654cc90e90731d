"""The real Claude Code logs in ../shared/corpus ingest with exact, hand-checked results.

Line counts were derived by reading the files with a separate script (every
non-blank line is a message (first occurrence of a uuid), merged (a repeated
uuid or a line without one that is not a conversation line) or an error
(not a JSON object)); titles, surfaces and token totals by reading the lines.
"""

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.store.ingest import ingest

DAG = "dag_compact_after_rewind_preserved"
FLAT_AGENT = "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358:agent-e1c84ba5"
FILES = {
    # path below corpus/claude-code: (lines, messages, merged, errors)
    "d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (438, 437, 1, 0),
    "daaain__claude-code-log/dag_compact_after_rewind_preserved.jsonl": (12, 12, 0, 0),
    # edge_010 and edge_011 each come twice, a damaged line before the real
    # one: both copies are kept ("wow error", the special-characters prompt).
    "daaain__claude-code-log/edge_cases.jsonl": (19, 14, 2, 3),
    "handgemacht-ai__claude-code-log/2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl": (24, 23, 1, 0),
    "handgemacht-ai__claude-code-log/eb000000-0000-4000-8000-000000000001.jsonl": (7, 7, 0, 0),
    "handgemacht-ai__claude-code-log/eb000000-0000-4000-8000-000000000001/subagents/agent-cccc333.jsonl": (3, 3, 0, 0),
    "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl": (180, 162, 18, 0),
    "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.jsonl": (18, 18, 0, 0),
    "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.meta.json": (1, 0, 1, 0),
    "handgemacht-ai__claude-code-log/sidechain_agent.jsonl": (3, 3, 0, 0),
    "handgemacht-ai__claude-code-log/sidechain_main.jsonl": (3, 3, 0, 0),
    "jazzyalex__agent-sessions/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl": (3, 3, 0, 0),
    "jazzyalex__agent-sessions/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl": (4, 4, 0, 0),
    "jazzyalex__agent-sessions/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.meta.json": (1, 0, 1, 0),
    # u1 and a1 are also uuids of dag_compact_after_rewind_preserved, with
    # other text: kept as u1@1752 and a1@2219. Of the 45 message lines whose uuid
    # is "[trimmed for fixture]", 37 differ in type, subtype, role, content type
    # or text and are kept; 56, 59, 62, 63, 77, 78, 83 and 87 repeat one.
    # Line 12, the prompt queued (its text a fixture's, "tool_result"), is a log-only message.
    "jazzyalex__agent-sessions/small.jsonl": (89, 64, 25, 0),
    "kvsankar__agent-history/claude_forked_session.jsonl": (14, 14, 0, 0),
    "kvsankar__agent-history/claude_history.jsonl": (7, 0, 7, 0),
    "marot__spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-a93ccab.jsonl": (116, 116, 0, 0),
    "marot__spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46/subagents/agent-acompact-70d8e7.jsonl": (15, 15, 0, 0),
    "simonw__claude-code-transcripts/sample_session.jsonl": (8, 7, 1, 0),
}

SESSIONS = [
    # id, title source, title (first 40 characters), message count, parent, relationship
    ('0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f', 'first_prompt', 'Delegate a repo search to a subagent', 2, None, None),
    ('0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f:agent-a0ad4f44468bdf20d', 'first_prompt', 'Search the repo for TODO comments', 2, '0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f', 'subagent'),
    ('2b4ed4c0-b905-41de-9238-273db3ec737a', 'first_prompt', 'Search if claude -p can make use of WebS', 4, None, None),
    # sidechain_agent.jsonl: a 2.0.46 agent file under a fixture name. Its
    # lines name agent e1c84ba5 of session 88a8d761-…; the main file naming
    # that session in its lines is stored as sidechain_main, whose Task result
    # names the agent. One conversation message: its first line's text (the
    # other two are a tool_use and a tool_result). No prompt of its own: the
    # Task call's input (sidechain_main.jsonl line 1) gives its description.
    (FLAT_AGENT, 'subagent', 'Research data-border-color usage and CSS', 1, 'sidechain_main', 'subagent'),
    ('claude_forked_session', 'first_prompt', 'Help me implement a sorting algorithm', 8, None, None),
    # dag_compact: the 9 conversation lines but line 9, the compaction's summary.
    ('dag_compact_after_rewind_preserved', 'first_prompt', 'Start', 8, None, None),
    ('eb000000-0000-4000-8000-000000000001', 'first_prompt', 'Spawn a coverage analysis agent in the b', 2, None, None),
    ('eb000000-0000-4000-8000-000000000001:agent-cccc333', 'first_prompt', 'Analyze the coverage gaps and report bac', 3, 'eb000000-0000-4000-8000-000000000001', 'subagent'),
    # Lines 1, 2, 3, 7 (a slash command), 9, 12 and 18 ("wow error"); 10 and 11 have no
    # content (keys misspelt, a string).
    ('edge_cases', 'summary', 'Tested various edge cases including mark', 7, None, None),
    # Prompts on lines 5 and 117, replies on 10, 19, 66, 92, 111, 134, 148 and 170, and the
    # /exit the user typed on line 179; the 14 lines holding only an empty thinking block
    # are a reply's reasoning, not messages.
    ('ef958aa1-0e93-49f0-bb71-150f63befcd1', 'first_prompt', "OK, we're going to make a little experim", 11, None, None),
    ('ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2', 'first_prompt', 'You are **alice** (round 2). You are NOT', 4, 'ef958aa1-0e93-49f0-bb71-150f63befcd1', 'subagent'),
    ('fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-a93ccab', 'first_prompt', 'Explore the codebase to understand the c', 12, 'fa812bfe-b295-4cca-9c2f-fdf01028cb46', 'subagent'),
    ('fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-acompact-70d8e7', 'first_prompt', 'Your task is to create a detailed summar', 2, 'fa812bfe-b295-4cca-9c2f-fdf01028cb46', 'subagent'),
    # Line 2: the slash command the user typed, /orchestrator with its arguments.
    ('fe5e1c67-53e7-4862-81ae-d0e013e3270b', 'first_prompt', '/orchestrator create TODO app by Next.js', 9, None, None),
    ('fe5e1c67-53e7-4862-81ae-d0e013e3270b:agent-sidechain-0d692b0f17cb', 'subagent', 'Implement state management', 17, 'fe5e1c67-53e7-4862-81ae-d0e013e3270b', 'subagent'),
    ('fe5e1c67-53e7-4862-81ae-d0e013e3270b:agent-sidechain-60dade7020bb', 'subagent', 'Setup Next.js project', 20, 'fe5e1c67-53e7-4862-81ae-d0e013e3270b', 'subagent'),
    ('fe5e1c67-53e7-4862-81ae-d0e013e3270b:agent-sidechain-6690d10ef521', 'subagent', 'Build TODO components', 5, 'fe5e1c67-53e7-4862-81ae-d0e013e3270b', 'subagent'),
    ('fe5e1c67-53e7-4862-81ae-d0e013e3270b:agent-sidechain-f4546a51ea10', 'subagent', 'Create data models', 20, 'fe5e1c67-53e7-4862-81ae-d0e013e3270b', 'subagent'),
    ('fe5e1c67-53e7-4862-81ae-d0e013e3270b:agent-sidechain-f4ab2bf6d642', 'subagent', 'Create main page integration', 31, 'fe5e1c67-53e7-4862-81ae-d0e013e3270b', 'subagent'),
    ('sample_session', 'first_prompt', 'Create a hello world function', 4, None, None),
    ('sidechain_main', None, None, 1, None, None),
    # With the prompt queued while the agent worked (line 39, a queued_command attachment);
    # the origins of lines 49 (an image prompt) and 60 (a sender's ``from`` and ``senderTaskId``)
    # had their kinds trimmed: no person's.
    ('small', 'custom', 'Stage0 small fixture', 5, None, None),
    # One sidechain: u1 -> a1 -> u2/u2b -> a2, a3 -> u3 (u1, a1, a2, a3 count; u3 is a compaction's summary).
    ('small:agent-sidechain-sys1', None, None, 4, 'small', 'subagent'),
]

SUBAGENT_LINKS = {
    # (parent session, agent id): the tool call that started it
    ("eb000000-0000-4000-8000-000000000001", "cccc333"): "tu_Task_async_001",
    ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "a36efb2a1231c41e2"): "toolu_017y4gSjMWeQ3L2DAKiygU2y",
    # agents whose transcripts are not in the corpus, known from toolUseResult.agentId
    ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "a4ca7529859c158c2"): "toolu_01GmrK6tgdD9D5xD6W5X9UUy",
    ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "a52886dc180afb356"): "toolu_016neBD9WjCCZqzRTP3afGDT",
    ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "a6aa8ad077d9ea083"): "toolu_0151DrVyXBXfb63SXGNF1qDb",
    ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "ab1e6e141221a29ab"): "toolu_01EaAN7bPNQrMTGoKhbEjVrx",
    ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "aef063ba534d73153"): "toolu_01N26s4U6vDxE1NRAH5CyCNf",
    ("fe5e1c67-53e7-4862-81ae-d0e013e3270b", "sidechain-0d692b0f17cb"): "toolu_017rjDpjVPeNFmAEXNTkoP55",
    ("fe5e1c67-53e7-4862-81ae-d0e013e3270b", "sidechain-60dade7020bb"): "toolu_014i9ThHMNShCHocf9xMKasf",
    ("fe5e1c67-53e7-4862-81ae-d0e013e3270b", "sidechain-6690d10ef521"): "toolu_01LS6tcVd796SbQKmZqeVnWY",
    ("fe5e1c67-53e7-4862-81ae-d0e013e3270b", "sidechain-f4546a51ea10"): "toolu_01EbxY94wRUAGyMLj5wh699C",
    ("fe5e1c67-53e7-4862-81ae-d0e013e3270b", "sidechain-f4ab2bf6d642"): "toolu_01EPom7jESzNbU8coiKjzVGS",
    ("sidechain_main", "e1c84ba5"): "toolu_01JA2mLseQCAW3MdwPE4qWEk",
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, corpus_root):
    path = tmp_path_factory.mktemp("claude") / "obelisk.db"
    summary = ingest(path, {"claude": corpus_root / "claude-code"}, sources=None)
    # Sessions stored: those of SESSIONS, the inline agents among them; not the parents
    # (88a8d761, fa812bfe) whose logs are missing though their agents' lines name them.
    assert (summary.files, summary.errors, summary.sessions) == (len(FILES), 3, len(SESSIONS))
    return path, summary


@pytest.fixture(scope="module")
def db(ingested):
    conn = sqlite3.connect(ingested[0])
    yield conn
    conn.close()


UNKNOWN_LINE = "a line of a type the parser does not know: counted as merged, not stored"


def test_the_summary_names_the_line_of_a_type_not_known(ingested, corpus_root):
    # edge_cases.jsonl line 14, {"silly": "this"}: no uuid, no type. Every other line
    # without a uuid is of a type Claude Code writes (history.jsonl's entries have none,
    # but their ``display``).
    path = str(corpus_root / "claude-code" / "daaain__claude-code-log" / "edge_cases.jsonl")
    summary = ingested[1]
    assert (summary.unknown, summary.unknown_samples) == (1, [(path, 14, UNKNOWN_LINE)])
    assert summary.empty_files == []


def test_a_prompt_queued_while_the_agent_worked_is_a_log_only_row(db):
    # small.jsonl line 12: queue-operation enqueue, its content "tool_result" (the fixture's)
    assert db.execute(
        "SELECT session_id, type, subtype, role, text, is_meta, surface, timestamp FROM messages "
        "WHERE type = 'queue-operation'").fetchall() == [
        ("small", "queue-operation", "enqueue", "user", "tool_result", 1, "log-only", "2025-12-16T00:00:03.500Z")]


def test_a_log_of_lines_of_types_not_known_only_is_format_drift(tmp_path):
    log = tmp_path / "projects" / "-p" / "s9.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(b'{"silly":"this"}\n{"type":"brand-new","sessionId":"s9"}\n')
    summary = ingest(tmp_path / "obelisk.db", {"claude": tmp_path})
    assert (summary.errors, summary.unknown, summary.empty_files) == (1, 2, [str(log)])
    assert [reason for _, _, reason in summary.unknown_samples] == [
        UNKNOWN_LINE, UNKNOWN_LINE.replace("know:", "know (brand-new):")]


def test_the_cli_warns_of_the_line_of_a_type_not_known(tmp_path, corpus_root):
    project = corpus_root / "claude-code" / "daaain__claude-code-log"
    result = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / "obelisk.db"), "--claude-dir", str(project)])
    assert result.exit_code == 1, result.output  # (lines 13, 15 and 16 are no JSON objects: errors)
    assert "3 errors (1 line of a type not known, not stored)" in result.output
    assert f"  warning: {project / 'edge_cases.jsonl'}:14: {UNKNOWN_LINE}" in result.output


@pytest.fixture(scope="module")
def corpus_root():
    from conftest import CORPUS

    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


def test_every_line_is_accounted_for(db, corpus_root):
    prefix = str(corpus_root / "claude-code") + "/"
    got = {
        path.removeprefix(prefix): (read, stored, merged, failed)
        for path, read, stored, merged, failed in db.execute(
            "SELECT path, lines_read, lines_stored, lines_merged, lines_failed FROM source_files"
        )
    }
    assert got == FILES


def test_sessions_titles_and_lineage(db):
    got = db.execute(
        "SELECT id, title_source, substr(replace(title, char(10), ' '), 1, 40), message_count, "
        "parent_session_id, relationship FROM sessions ORDER BY id"
    ).fetchall()
    assert got == SESSIONS


def test_session_times_skip_placeholder_timestamps(db):
    # jazzyalex's small.jsonl has 48 lines whose timestamp is "[trimmed for
    # fixture]"; its real ones run from 00:00:03.200 (the session's own lines)
    # to 2026-04-16T20:10:42.522Z. Placeholders stay on the messages.
    assert db.execute("SELECT started_at, ended_at FROM sessions WHERE id = 'small'").fetchone() == (
        "2025-12-16T00:00:03.200Z", "2026-04-16T20:10:42.522Z"
    )
    assert db.execute(
        "SELECT count(*) FROM sessions WHERE started_at NOT GLOB '2*' OR ended_at NOT GLOB '2*'"
    ).fetchone() == (0,)
    assert db.execute(
        "SELECT count(*) FROM messages WHERE session_id = 'small' AND timestamp = '[trimmed for fixture]'"
    ).fetchone()[0] > 0


def test_a_session_ends_when_its_last_file_snapshot_was_taken(db):
    # ef958aa1's last lines: the snapshot for the /exit prompt (line 177, taken at
    # 15:09:30.096), then that prompt and its output (lines 179-180, 15:09:30.093).
    assert db.execute(
        "SELECT started_at, ended_at FROM sessions WHERE id = 'ef958aa1-0e93-49f0-bb71-150f63befcd1'"
    ).fetchone() == ("2026-04-18T13:10:51.686Z", "2026-04-18T15:09:30.096Z")


def test_subagents_are_linked_to_their_tool_call(db):
    got = {
        (session, agent): tool
        for session, agent, tool in db.execute(
            "SELECT session_id, agent_id, parent_tool_use_id FROM subagents WHERE parent_tool_use_id IS NOT NULL"
        )
    }
    assert got == SUBAGENT_LINKS
    # Each linked call is a real Task/Agent call in the parent session.
    for (session, _), tool in SUBAGENT_LINKS.items():
        assert db.execute("SELECT name FROM tool_calls WHERE id = ? AND session_id = ?", [tool, session]).fetchone()[0] in ("Task", "Agent")


def test_a_2_0_agent_file_under_another_name_is_linked_by_its_lines(db):
    # sidechain_main.jsonl line 2: the Task result for toolu_01JA2mLs… with
    # toolUseResult.agentId e1c84ba5, totalDurationMs 119249, totalTokens 59967.
    # sidechain_agent.jsonl: 3 lines, each isSidechain, agentId e1c84ba5 and
    # the sessionId of sidechain_main's lines (88a8d761-…). The agent's type
    # and task come from the Task call's input (line 1).
    assert db.execute(
        "SELECT session_id, child_session_id, parent_tool_use_id, duration_ms, total_tokens, agent_type, description "
        "FROM subagents WHERE agent_id = 'e1c84ba5' OR session_id LIKE '88a8d761-%' OR child_session_id LIKE '%e1c84ba5'"
    ).fetchall() == [(
        "sidechain_main", FLAT_AGENT, "toolu_01JA2mLseQCAW3MdwPE4qWEk", 119249, 59967,
        "general-purpose", "Research data-border-color usage and CSS class mat...",
    )]
    assert db.execute("SELECT agent_type FROM sessions WHERE id = ?", [FLAT_AGENT]).fetchone() == ("general-purpose",)
    assert db.execute(
        "SELECT session_id, agent_id, COUNT(*) FROM messages WHERE session_id IN (?, 'sidechain_main', 'sidechain_agent') "
        "GROUP BY session_id ORDER BY session_id",
        [FLAT_AGENT],
    ).fetchall() == [(FLAT_AGENT, "e1c84ba5", 3), ("sidechain_main", None, 3)]
    assert db.execute(
        "SELECT id, session_id FROM tool_calls WHERE session_id IN (?, 'sidechain_main') ORDER BY id", [FLAT_AGENT]
    ).fetchall() == [("toolu_01BWgwmyj8gGuqFNHMPqqtN2", FLAT_AGENT), ("toolu_01JA2mLseQCAW3MdwPE4qWEk", "sidechain_main")]
    assert db.execute(
        "SELECT tool_use_id, session_id, agent_id FROM tool_results WHERE session_id IN (?, 'sidechain_main') ORDER BY tool_use_id",
        [FLAT_AGENT],
    ).fetchall() == [
        ("toolu_011V1hetiJ3pC79EoLTY53Ni", FLAT_AGENT, None),
        ("toolu_01JA2mLseQCAW3MdwPE4qWEk", "sidechain_main", "e1c84ba5"),
    ]


def test_the_compaction_summariser_is_typed_by_its_file_name(db):
    # marot__spotter: fa812bfe-…/subagents/agent-acompact-70d8e7.jsonl, no .meta.json, no Task call.
    assert db.execute(
        "SELECT s.id, s.agent_type, sa.agent_type, sa.parent_tool_use_id FROM sessions s "
        "JOIN subagents sa ON sa.child_session_id = s.id WHERE s.agent_type IS NOT NULL AND s.agent_id LIKE 'acompact-%'"
    ).fetchall() == [("fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-acompact-70d8e7", "compaction", "compaction", None)]


def test_inline_agents_take_their_totals_from_the_task_result(db):
    # d-kimuson's five Task results (toolUseResult.totalDurationMs / totalTokens); 1.0 logs name no agent.
    assert db.execute(
        "SELECT description, duration_ms, total_tokens, description_source FROM subagents "
        "WHERE session_id LIKE 'fe5e1c67-%' ORDER BY description"
    ).fetchall() == [  # described by their Task calls
        ("Build TODO components", 45626, 14957, "call"),
        ("Create data models", 210145, 29323, "call"),
        ("Create main page integration", 271604, 43077, "call"),
        ("Implement state management", 173228, 26946, "call"),
        ("Setup Next.js project", 174655, 41466, "call"),
    ]
    # Every described agent says by what.
    assert db.execute("SELECT COUNT(*) FROM subagents WHERE (agent_type IS NULL) != (agent_type_source IS NULL) "
                      "OR (description IS NULL) != (description_source IS NULL)").fetchone() == (0,)


def test_subagents_belong_to_their_parents_project(db):
    # The five inline sidechain agents of d-kimuson's 1.0 log ran in
    # /path/to/Demo/todo-app, but the log sits in the d-kimuson project folder.
    assert db.execute(
        "SELECT COUNT(*) FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        "WHERE c.relationship = 'subagent' AND c.project IS NOT p.project"
    ).fetchone() == (0,)
    assert db.execute(
        "SELECT project, COUNT(*) FROM sessions WHERE id LIKE 'fe5e1c67-%' GROUP BY project"
    ).fetchall() == [("d-kimuson__claude-code-viewer", 6)]


def test_a_repeated_uuid_with_other_text_is_kept_and_its_children_follow_it(db):
    assert db.execute(
        "SELECT uuid, substr(text, 1, 27) FROM messages WHERE uuid LIKE 'edge_01%' ORDER BY line_no"
    ).fetchall() == [
        ("edge_010", ""), ("edge_011", ""),
        ("edge_011@7861", "Testing special characters:"), ("edge_010@9179", "wow error"),
    ]
    chain = db.execute(
        "SELECT uuid, parent_uuid FROM messages WHERE uuid IN ('u1@1752', 'a1@2219', 'u2', 'u2b') ORDER BY line_no"
    ).fetchall()
    assert chain == [("u1@1752", "sys1"), ("a1@2219", "u1@1752"), ("u2", "a1@2219"), ("u2b", "a1@2219")]
    assert db.execute("SELECT uuid, stored_as FROM message_aliases ORDER BY stored_as").fetchall() == [
        ("[trimmed for fixture]", "[trimmed for fixture]@48497"),
        ("a1", "a1@2219"), ("edge_010", "edge_010@9179"), ("edge_011", "edge_011@7861"), ("u1", "u1@1752"),
    ]


def test_a_renamed_message_keeps_its_lines_tool_calls(db):
    # small.jsonl line 8 (a1, stored as a1@2219) calls bash with no block id, line 55
    # (stored as "[trimmed for fixture]@24012") calls a tool whose id is "[trimmed for fixture]".
    assert db.execute(
        "SELECT t.id, t.message_uuid, m.line_no, t.name FROM tool_calls t JOIN messages m ON m.uuid = t.message_uuid "
        "WHERE t.id IN ('a1:2', '[trimmed for fixture]') ORDER BY t.id"
    ).fetchall() == [
        ("[trimmed for fixture]", "[trimmed for fixture]@24012", 55, "[trimmed for fixture]"),
        ("a1:2", "a1@2219", 8, "bash"),
    ]


def test_tool_results_and_outcomes(db):
    assert db.execute(
        "SELECT COUNT(*), SUM(is_error), SUM(outcome = 'failed'), SUM(outcome = 'blocked'), SUM(outcome = 'cancelled') FROM tool_results"
    ).fetchone() == (262, 31, 24, 7, 0)
    # The 1.0.98 session's 23 errored results stay with the sessions that made them.
    assert db.execute(
        "SELECT SUM(is_error) FROM tool_results WHERE session_id LIKE 'fe5e1c67-%'"
    ).fetchone() == (23,)


def test_results_name_their_file_and_turns_their_duration(db):
    # A Read/Edit/Write result's toolUseResult.filePath (a Read's file.filePath), else its call's
    # file_path: 72 in fe5e1c67, 18 in agent-a93ccab, 4 in agent-a36efb2a…, 3 in the forked
    # session, one each in 2b4ed4c0, sidechain_agent and sample_session.
    assert db.execute("SELECT COUNT(*) FROM tool_results WHERE file_path IS NOT NULL").fetchone() == (100,)
    assert db.execute(
        "SELECT COUNT(*) FROM tool_results r JOIN tool_calls c ON c.id = r.tool_use_id "
        "WHERE r.file_path IS NOT c.file_path"
    ).fetchone() == (0,)
    # ef958aa1 lines 114 and 173: system/turn_duration; small.jsonl line 66 ("durationMs": 0, after
    # the thinking line 65, both under the fixture's placeholder uuid).
    assert db.execute(
        "SELECT uuid, parent_uuid, turn_duration_ms FROM messages WHERE turn_duration_ms IS NOT NULL ORDER BY seq"
    ).fetchall() == [
        ("[trimmed for fixture]@33053", "[trimmed for fixture]@31682", 0),
        ("bf504594-c6d1-4610-84cc-a964b4a32285", "cd995d50-71a2-4d8e-86ab-e99a5ab79728", 247515),
        ("bcdf1fc1-cb36-4295-aee3-9b721fe31a12", "fe5fb658-7e15-4323-9d8b-d9cce7b047f1", 152878),
    ]


def test_an_async_agent_takes_its_totals_from_its_task_notification(db):
    # eb000000 line 3 launches it ("async_launched": no totals); line 6's <usage> has them.
    assert db.execute(
        "SELECT parent_tool_use_id, duration_ms, total_tokens FROM subagents WHERE agent_id = 'cccc333'"
    ).fetchall() == [("tu_Task_async_001", 15506, 23099)]


def test_the_reasoning_effort_is_the_last_an_assistant_line_of_the_session_names(db):
    # small.jsonl: "medium" on line 29, then the fixture's placeholder on lines 65 and 78
    # (lines 8, 18 and 19 are inline agents' lines, which never change their session's).
    assert db.execute("SELECT id, reasoning_effort FROM sessions WHERE reasoning_effort IS NOT NULL").fetchall() == [
        ("small", "[trimmed for fixture]")]


def test_the_entrypoint_is_the_originator_and_a_session_names_its_own_log(db):
    # "entrypoint": "cli" on the lines of these files (small.jsonl's first one that has it).
    assert db.execute("SELECT id, originator FROM sessions WHERE originator IS NOT NULL ORDER BY id").fetchall() == [
        ("0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f", "cli"),
        ("0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f:agent-a0ad4f44468bdf20d", "cli"),
        ("ef958aa1-0e93-49f0-bb71-150f63befcd1", "cli"),
        ("ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a36efb2a1231c41e2", "cli"),
        ("small", "cli"),
        ("small:agent-sidechain-sys1", "cli"),
    ]
    # An inline agent's lines are in its parent's file, written by the same program: it takes
    # its parent's version ("1.0.98" on all of fe5e1c67's lines; small.jsonl's last is the
    # fixture's placeholder).
    assert db.execute(
        "SELECT substr(id, 1, 8), version FROM sessions WHERE agent_id LIKE 'sidechain-%' ORDER BY id"
    ).fetchall() == [("fe5e1c67", "1.0.98")] * 5 + [("small:ag", "[trimmed for fixture]")]
    # The parent's log, though its agent's file (4 lines) has more lines than it (3).
    [(path,)] = db.execute("SELECT jsonl_path FROM sessions WHERE id = '0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f'")
    assert path.endswith("jazzyalex__agent-sessions/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl")


def test_pull_requests_come_from_pr_link_lines(db):
    # small.jsonl line 24, the corpus's one pr-link line.
    assert db.execute(
        "SELECT session_id, number, url, repository, timestamp FROM pull_requests"
    ).fetchall() == [("small", 1, "https://example.invalid/org/repo/pull/1", "org/repo", "2025-12-16T00:00:10.000Z")]


def test_the_folder_and_worktree_claude_code_moved_a_session_to_come_from_its_lines(db):
    # small.jsonl line 27 (relocated) makes its project path, which its lines' cwd
    # ("[trimmed for fixture]" on 45 of them) would otherwise give; of its two
    # worktree-state lines (28, 46) the last names the worktree, trimmed, and no base branch.
    assert db.execute(
        "SELECT id, project_path, relocated_cwd, worktree_path, worktree_branch, worktree_base_branch, cost_usd, "
        "ended_by_model FROM sessions WHERE relocated_cwd IS NOT NULL OR worktree_path IS NOT NULL"
    ).fetchall() == [("small", "/tmp/repo/worktrees/example", "/tmp/repo/worktrees/example",
                      "[trimmed for fixture]", "[trimmed for fixture]", None, None, None)]


def test_inline_agents_take_the_directory_and_branch_of_their_last_line(db):
    assert db.execute(
        "SELECT agent_id, cwd, git_branch FROM sessions WHERE agent_id LIKE 'sidechain-%' ORDER BY agent_id"
    ).fetchall() == [
        ("sidechain-0d692b0f17cb", "/path/to/Demo/todo-app", None),
        ("sidechain-60dade7020bb", "/path/to/Demo/todo-app/types", None),
        ("sidechain-6690d10ef521", "/path/to/Demo/todo-app", None),
        ("sidechain-f4546a51ea10", "/path/to/Demo", None),
        ("sidechain-f4ab2bf6d642", "/path/to/Demo/todo-app", None),
        ("sidechain-sys1", "/tmp", "main"),
    ]


def test_summaries(db):
    assert db.execute("SELECT source, session_id FROM summaries ORDER BY session_id, id").fetchall() == [
        ("compaction", "dag_compact_after_rewind_preserved"),
        ("away_summary", "ef958aa1-0e93-49f0-bb71-150f63befcd1"),
        ("away_summary", "ef958aa1-0e93-49f0-bb71-150f63befcd1"),
        # small.jsonl line 22 (u3) is an inline agent's line: its summary goes with it.
        ("compaction", "small:agent-sidechain-sys1"),
    ]
    assert db.execute("SELECT session_id FROM messages WHERE uuid = 'u3'").fetchall() == [("small:agent-sidechain-sys1",)]


def test_ingest_errors_name_file_and_line(db):
    assert db.execute("SELECT substr(path, -40), line_no, reason FROM ingest_errors ORDER BY line_no").fetchall() == [
        ("daaain__claude-code-log/edge_cases.jsonl", 13, "not a JSON object: str"),
        ("daaain__claude-code-log/edge_cases.jsonl", 15, "not a JSON object: int"),
        ("daaain__claude-code-log/edge_cases.jsonl", 16, "not a JSON object: list"),
    ]


def test_rewind_then_compaction_surfaces(db):
    got = db.execute(
        "SELECT uuid, surface, visibility, replaced_by FROM messages "
        "WHERE session_id = 'dag_compact_after_rewind_preserved' ORDER BY seq"
    ).fetchall()
    assert got == [
        ("u1", "shadowed", "visible", "cs"),
        ("a1", "shadowed", "visible", "cs"),
        ("b1u", "shadowed", "inactive", "b2u"),   # the first attempt, rewound away
        ("b1a", "shadowed", "inactive", "b2u"),
        ("b2u", "shadowed", "visible", "cs"),
        ("b2a", "current", "visible", None),      # preserved by the compaction
        ("b2u2", "current", "visible", None),
        ("cb", "log-only", "visible", None),       # the boundary was never context: nothing replaced it
        ("cs", "current", "visible", None),
        ("b2a2", "current", "visible", None),
        ("p1u", "current", "visible", None),
        ("p1a", "current", "visible", None),
    ]


def test_a_boundary_linked_by_an_older_derivation_is_derived_again(tmp_path, corpus_root):
    from datasette_obelisk.store.db import open_db

    logs = tmp_path / "claude" / "daaain__claude-code-log"
    logs.mkdir(parents=True)
    shutil.copyfile(corpus_root / "claude-code" / "daaain__claude-code-log" / f"{DAG}.jsonl", logs / f"{DAG}.jsonl")
    path = tmp_path / "obelisk.db"
    ingest(path, {"claude": tmp_path / "claude"})
    (logs / f"{DAG}.jsonl").unlink()  # archived: only derivation can mend it
    ingest(path, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE messages SET replaced_by = 'cs' WHERE uuid = 'cb'")  # as derived before m010
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm010_rederive_compaction_boundaries'")
    conn.close()
    open_db(path).close()
    boundary = "SELECT replaced_by FROM messages WHERE uuid = 'cb'"
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT session_id FROM derive_queue").fetchall() == [(DAG,)]
    assert conn.execute(boundary).fetchall() == [("cs",)]
    ingest(path, {"claude": tmp_path / "claude"})
    assert conn.execute(boundary).fetchall() == [(None,)]
    assert conn.execute("SELECT COUNT(*) FROM derive_queue").fetchone() == (0,)
    assert conn.execute("SELECT availability FROM sessions").fetchall() == [("archived",)]


def test_m028_reads_again_only_the_files_holding_hook_errors_or_todo_reminders(tmp_path, corpus_root):
    from datasette_obelisk.store.db import open_db

    logs = tmp_path / "claude" / "p"
    logs.mkdir(parents=True)
    for name in ("small", DAG):  # small.jsonl holds two todo reminders and two hook errors
        folder = "jazzyalex__agent-sessions" if name == "small" else "daaain__claude-code-log"
        shutil.copyfile(corpus_root / "claude-code" / folder / f"{name}.jsonl", logs / f"{name}.jsonl")
    path = tmp_path / "obelisk.db"
    ingest(path, {"claude": tmp_path / "claude"})
    details = "SELECT seq, length(text) FROM messages WHERE type = 'attachment' AND subtype LIKE 'hook_%error' ORDER BY seq"
    conn = sqlite3.connect(path, isolation_level=None)
    expected = conn.execute(details).fetchall()
    assert expected == [(47, 43), (49, 43)]
    conn.execute("UPDATE messages SET text = '' WHERE type = 'attachment'")  # as the parser stored them before
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm028_reread_attachment_details'")
    conn.close()
    open_db(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT path LIKE '%small.jsonl' FROM source_files WHERE parser_version IS NULL").fetchall() == [(1,)]
    summary = ingest(path, {"claude": tmp_path / "claude"})
    assert (summary.files_read, summary.files_skipped) == (1, 1)
    assert conn.execute(details).fetchall() == expected
    conn.close()


def test_rewound_branch_is_kept_but_inactive(db):
    inactive = db.execute(
        "SELECT uuid FROM messages WHERE session_id = 'claude_forked_session' AND visibility = 'inactive' ORDER BY seq"
    ).fetchall()
    assert inactive == [("fu2a-fork",), ("fa2a-fork",), ("fu3a-fork",), ("fa3a-fork",)]


def test_usage_counted_once_per_api_message(db):
    # 88 API messages span several lines in this file; the trunk has 9 responses.
    assert db.execute(
        "SELECT input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens FROM sessions "
        "WHERE id = 'fe5e1c67-53e7-4862-81ae-d0e013e3270b'"
    ).fetchone() == (373, 2636, 161313, 6672)


def test_full_text_search_finds_thinking_and_tool_output(db):
    assert db.execute(
        "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'orchestrator'"
    ).fetchone()[0] > 0
    # Every failure listed: 24 failed, 7 refused or blocked (flagged an error).
    assert db.execute(
        "SELECT COUNT(*) FROM tool_errors_fts_docsize"
    ).fetchone()[0] == db.execute(
        "SELECT COUNT(*) FROM tool_results WHERE outcome = 'failed' OR is_error = 1"
    ).fetchone()[0] == 31


def test_no_base64_is_stored(db):
    assert db.execute("SELECT COUNT(*) FROM messages WHERE text LIKE '%iVBORw0KGgo%'").fetchone()[0] == 0


def test_one_projects_folder_given_directly_reads_as_it_does_below_projects(tmp_path, corpus_root):
    """``--claude-dir`` may name one project's folder: its sessions (and their
    agents' folders) sit at its top and take its name as their project."""
    project = corpus_root / "claude-code" / "handgemacht-ai__claude-code-log"
    shutil.copytree(project, tmp_path / "config" / "projects" / project.name)
    shutil.copytree(project, tmp_path / project.name)
    found = []
    for n, root in enumerate((tmp_path / "config", tmp_path / project.name)):
        summary = ingest(tmp_path / f"{n}.db", {"claude": root})
        assert (summary.files, summary.errors, summary.warnings) == (8, 0, [])
        conn = sqlite3.connect(tmp_path / f"{n}.db")
        found.append((
            conn.execute("SELECT id, project FROM sessions ORDER BY id").fetchall(),
            conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
            {(s, a): t for s, a, t in conn.execute("SELECT session_id, agent_id, parent_tool_use_id FROM subagents")},
        ))
        conn.close()
    assert found[0] == found[1]
    sessions, messages, links = found[0]
    assert {project for _, project in sessions} == {project.name}
    assert messages == sum(counts[1] for path, counts in FILES.items() if path.startswith(project.name + "/"))
    assert links == {k: v for k, v in SUBAGENT_LINKS.items() if k[0] in {s for s, _ in sessions}}


def test_a_line_that_opens_with_thinking_says_how_long_its_thinking_is(db):
    # The corpus's only lines whose content opens with a thinking block and goes on
    # (small.jsonl lines 8, 29 and 55: "Reasoning goes here." or "[trimmed for fixture]", then text and a call).
    assert db.execute(
        "SELECT line_no, meta_json, substr(text, 1, json_extract(meta_json, '$.thinking_chars')) FROM messages "
        "WHERE meta_json LIKE '%thinking_chars%' ORDER BY line_no"
    ).fetchall() == [
        (8, '{"thinking_chars":20,"effort":"medium"}', "Reasoning goes here."),
        (29, '{"thinking_chars":21,"effort":"medium"}', "[trimmed for fixture]"),
        (55, '{"thinking_chars":21}', "[trimmed for fixture]"),
    ]


def test_an_assistant_line_keeps_the_reasoning_effort_it_names(db):
    # The corpus's only lines naming an effort (small.jsonl lines 8, 18, 19, 29: medium; 65, 78: the
    # placeholder, line 78 a part of the reply its placeholder id names, merged into it); the session
    # keeps only the last, each line its own
    assert db.execute(
        "SELECT line_no, json_extract(meta_json, '$.effort') FROM messages WHERE meta_json LIKE '%\"effort\"%' "
        "ORDER BY line_no"
    ).fetchall() == [
        (8, "medium"), (18, "medium"), (19, "medium"), (29, "medium"),
        (65, "[trimmed for fixture]"),
    ]


def _continued_logs(old, new):
    def line(**fields):
        return json.dumps({"cwd": "/w", "version": "2.1.332", "timestamp": "2026-11-25T10:00:00.000Z", **fields}) + "\n"

    prompt = {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Fix it"}}
    return {
        old: line(**prompt, sessionId=old)
        + '{"type":"agent-name","agentName":"fix-it","sessionId":"%s"}\n' % old
        + '{"type":"tag","tag":"auth","sessionId":"%s"}\n' % old
        + '{"type":"continued-in","timestamp":"2026-11-25T10:04:00.000Z","sessionId":"%s","continuedInSessionId":"%s"}\n'
        % (old, new),
        new: line(**prompt, sessionId=new),
    }


@pytest.mark.parametrize("first", ["old", "new"])
def test_a_session_continued_in_another_is_its_parent_whichever_is_read_first(tmp_path, first):
    old, new = "ffffffff-1111-4111-8111-111111111111", "00000000-2222-4222-8222-222222222222"
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    logs = _continued_logs(old, new)
    path = tmp_path / "obelisk.db"
    order = [old, new] if first == "old" else [new, old]
    (project / f"{order[0]}.jsonl").write_text(logs[order[0]])
    ingest(path, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(path)
    if first == "old":  # (the background session is not stored yet: no empty session stands in for it)
        assert conn.execute("SELECT id, title, title_source, tag, continued_in FROM sessions").fetchall() == [
            (old, "fix-it", "name", "auth", new)]
    (project / f"{order[1]}.jsonl").write_text(logs[order[1]])
    ingest(path, {"claude": tmp_path / "claude"})
    assert conn.execute("SELECT id, parent_session_id, relationship FROM sessions ORDER BY id").fetchall() == [
        (new, old, "continuation"), (old, None, None)]


def test_sessions_continued_in_others_read_together_are_all_linked(tmp_path):
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    pairs = [("aaaaaaaa-1111-4111-8111-111111111111", "bbbbbbbb-2222-4222-8222-222222222222"),
             ("cccccccc-3333-4333-8333-333333333333", "dddddddd-4444-4444-8444-444444444444")]
    for old, new in pairs:
        for session, log in _continued_logs(old, new).items():
            (project / f"{session}.jsonl").write_text(log)
    path = tmp_path / "obelisk.db"
    ingest(path, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT id, parent_session_id FROM sessions WHERE relationship = 'continuation' "
                        "ORDER BY id").fetchall() == [(new, old) for old, new in pairs]


@pytest.mark.parametrize("meta_first", [True, False])
def test_a_named_agent_and_an_agent_team_s_members_are_titled_by_their_names(tmp_path, meta_first):
    lead, pane, agent = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "a0123456789abcdef"
    project = tmp_path / "claude" / "projects" / "-w"
    agents = project / lead / "subagents"
    agents.mkdir(parents=True)

    def line(uuid, role, content, **fields):
        return json.dumps({"type": role, "uuid": uuid, "parentUuid": None, "cwd": "/w", "version": "2.1.332",
                           "timestamp": "2026-11-25T10:00:00.000Z", "message": {"role": role, "content": content},
                           **fields}) + "\n"

    # (a team's lead writes its lines as the team's reserved "team-lead": no name it was given)
    (project / f"{lead}.jsonl").write_text(line("l1", "user", "Fix the login bug", sessionId=lead,
                                                agentName="team-lead", teamName="alpha"))
    agent_log = line("n1", "user", "Audit the DB schema", sessionId=lead, isSidechain=True, agentId=agent)
    meta = json.dumps({"agentType": "Explore", "description": "Audit DB", "name": "db-auditor", "spawnDepth": 1})
    (agents / f"agent-{agent}.meta.json").write_text(meta)
    if not meta_first:
        (agents / f"agent-{agent}.jsonl").write_text(agent_log)
    (project / f"{pane}.jsonl").write_text(
        line("p1", "user", '<teammate-message teammate_id="team-lead">\nWrite tests\n</teammate-message>',
             sessionId=pane, agentName="tester", teamName="alpha"))
    path = tmp_path / "obelisk.db"
    ingest(path, {"claude": tmp_path / "claude"})
    if meta_first:
        (agents / f"agent-{agent}.jsonl").write_text(agent_log)
        ingest(path, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(path)
    assert conn.execute(
        "SELECT id, title, title_source, agent_name, team_name, relationship, message_count FROM sessions ORDER BY id"
    ).fetchall() == [
        (lead, "Fix the login bug", "first_prompt", "team-lead", "alpha", None, 1),
        (f"{lead}:agent-{agent}", "db-auditor", "name", "db-auditor", None, "subagent", 1),
        (pane, "tester", "name", "tester", "alpha", None, 0),
    ]


def test_what_claude_code_last_reported_of_a_session_stands_however_its_lines_arrive(tmp_path):
    # A 2.1.332 session enters a worktree (its log moves there: relocated) and its
    # process exits (cost-state: the session's totals so far); a resume restores the
    # totals and goes on, leaves the worktree (null; the log moves back) and the model
    # ends the conversation. Read as it grows, or whole: the last totals, not their sum.
    session = "33333333-3333-4333-8333-333333333333"
    worktree = "/w/.claude/worktrees/fix-login"

    def line(uuid, role, text, parent, cwd):
        return {"type": role, "uuid": uuid, "parentUuid": parent, "cwd": cwd, "sessionId": session,
                "version": "2.1.332", "timestamp": "2026-11-25T10:00:00.000Z", "message": {"role": role, "content": text}}

    def cost(usd, added, removed):
        return {"type": "cost-state", "sessionId": session, "totalCostUSD": usd, "totalAPIDuration": 1000,
                "totalAPIDurationWithoutRetries": 1000, "totalToolDuration": 10, "totalLinesAdded": added,
                "totalLinesRemoved": removed, "totalDuration": 5000, "startTime": 1764064800000, "modelUsage": {}}

    state = {"originalCwd": "/w", "worktreePath": worktree, "worktreeName": "fix-login",
             "worktreeBranch": "worktree-fix-login", "originalBranch": "main", "sessionId": session}
    parts = [
        [line("u1", "user", "Fix the login bug", None, "/w"), line("a1", "assistant", "In a worktree", "u1", worktree),
         {"type": "worktree-state", "worktreeSession": state, "sessionId": session},
         {"type": "relocated", "sessionId": session, "relocatedCwd": worktree}, cost(0.42, 12, 3)],
        [line("u2", "user", "Go on", "a1", worktree), line("a2", "assistant", "Done", "u2", worktree),
         cost(1.84, 214, 61)],
        [{"type": "worktree-state", "worktreeSession": None, "sessionId": session},
         {"type": "relocated", "sessionId": session, "relocatedCwd": "/w"},
         {"type": "ended-by-model", "timestamp": "2026-11-25T11:00:05.000Z", "sessionId": session}],
    ]
    read = ("SELECT project_path, cost_usd, lines_added, lines_removed, worktree_path, worktree_branch, "
            "worktree_base_branch, ended_by_model FROM sessions")
    in_worktree = (worktree, "worktree-fix-login", "main")
    expected = [(worktree, 0.42, 12, 3, *in_worktree, None), (worktree, 1.84, 214, 61, *in_worktree, None),
                ("/w", 1.84, 214, 61, *in_worktree, 1)]  # (three of its four lines were in the worktree)
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    log = project / f"{session}.jsonl"
    path = tmp_path / "obelisk.db"
    for part, rows in zip(parts, expected):
        with log.open("a") as out:
            out.writelines(json.dumps(obj) + "\n" for obj in part)
        ingest(path, {"claude": tmp_path / "claude"})
        assert sqlite3.connect(path).execute(read).fetchall() == [rows]
    ingest(tmp_path / "whole.db", {"claude": tmp_path / "claude"})
    assert sqlite3.connect(tmp_path / "whole.db").execute(read).fetchall() == [expected[-1]]


def test_a_log_back_with_other_bytes_is_as_a_first_ingest_of_it_inline_agents_too(tmp_path, corpus_root):
    """A log deleted, then back re-serialized (every line the same, in other bytes): its rows,
    those its inline agents' sessions took too, are the new file's, as a first ingest has them."""
    from dbsnapshot import diff, snapshot
    from datasette_obelisk.query import obelisk

    log = corpus_root / "claude-code" / "d-kimuson__claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    root = tmp_path / "claude"
    path = root / "projects" / "-p" / log.name
    path.parent.mkdir(parents=True)
    shutil.copy(log, path)
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": root}, sources=None)
    path.unlink()
    assert ingest(db, {"claude": root}, sources=None).files_missing == 1
    back = b"".join(json.dumps(json.loads(text), ensure_ascii=False).encode() + b"\n"
                    for text in log.read_bytes().splitlines())
    assert back != log.read_bytes()
    path.write_bytes(back)
    ingest(db, {"claude": root}, sources=None)
    ingest(tmp_path / "clean.db", {"claude": root}, sources=None)
    assert diff(snapshot(db), snapshot(tmp_path / "clean.db")) == []
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    assert [tuple(row) for row in conn.execute("SELECT path, missing FROM source_files")] == [(str(path), 0)]
    uuids = [row[0] for row in conn.execute("SELECT uuid FROM messages ORDER BY uuid")]
    assert len(uuids) == 437
    assert all(obelisk.raw(conn, uuid, redact=str)["totalLength"] > 0 for uuid in uuids)
    assert {row[0] for row in conn.execute("SELECT availability FROM sessions")} == {"live"}
    conn.close()
