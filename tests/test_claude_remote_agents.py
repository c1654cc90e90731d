"""Claude Code agents and workflows run in a cloud session (``remote_launched``)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import orjson
import pytest

from datasette_obelisk.query import obelisk, transcript
from datasette_obelisk.query.session_query import SessionQuery
from datasette_obelisk.records import Position, SessionLink, Subagent
from datasette_obelisk.sources.base import SourceFile
from datasette_obelisk.sources.claude_code import ClaudeCodeSource
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.web.template_helpers import TemplateHelpers

PARENT = "7f1c2a9e-3b4d-4e5f-8a6b-0c1d2e3f4a5b"
AGENT_TASK, WORKFLOW_TASK = "r4k2m9x7q", "r8w3c5n1z"
AGENT_CLOUD, WORKFLOW_CLOUD = "session_01AbCdEfGhJkLmNpQrStUvWx", "session_01WfWfWfWfWfWfWfWfWfWfWf"
AGENT_URL = f"https://claude.ai/code/{AGENT_CLOUD}?from=cli"
WORKFLOW_URL = f"https://claude.ai/code/{WORKFLOW_CLOUD}?from=cli"
HOSTILE = "javascript:alert(document.domain)//claude.ai/code/session_01Hostile"

AGENT_TEXT = (
    "Cloud agent launched. (This tool result is internal metadata \u2014 never quote or paste any part of it, "
    "including the ID below, into a user-facing reply.)\n"
    f"taskId: {AGENT_TASK}\nsession_url: {AGENT_URL}\n"
    f"output_file: /tmp/claude-1000/-p/{PARENT}/tasks/{AGENT_TASK}.output (final results land here only after the "
    "completion notification; until then it holds a partial, still-growing event log)\n"
    "The agent is running in the cloud. You will be notified automatically when it completes. Do not report or "
    "predict its results before that notification arrives.\n"
    "In your own words, briefly tell the user what you launched \u2014 do not echo this tool result \u2014 and end "
    "your response."
)
WORKFLOW_TEXT = (
    f"Workflow launched in a remote CCR session. Task ID: {WORKFLOW_TASK}\nSession: {WORKFLOW_URL}\n"
    "Summary: Review the parser in three phases\n\n"
    "The workflow runs against a fresh clone of the pushed branch; phase progress is visible at the session URL, "
    "not in /workflows. You will be notified when it completes."
)


def line(kind, uuid, parent, content, session=PARENT, minute=0, **extra):
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": session, "isSidechain": False,
            "timestamp": f"2026-11-20T10:{minute:02d}:00.000Z", "cwd": "/p", "version": "2.1.332",
            "message": {"role": kind, "content": content}, **extra}


def parent_lines(agent_url=AGENT_URL, session=PARENT, prefix=""):
    """The parent's lines; another ``session`` with its own ids (``prefix``) and task ids."""
    lines = _parent_lines(agent_url)
    text = orjson.dumps(lines).decode()
    for name in ("u0", "a1", "r1", "a2", "r2", "toolu_agent", "toolu_workflow", AGENT_TASK, WORKFLOW_TASK):
        text = text.replace(f'"{name}"', f'"{prefix}{name}"')
    return [{**x, "sessionId": session} for x in orjson.loads(text)]


def _parent_lines(agent_url):
    return [
        line("user", "u0", None, "Audit the parser in the cloud"),
        line("assistant", "a1", "u0", [{"type": "tool_use", "id": "toolu_agent", "name": "Agent", "input": {
            "description": "Audit the parser", "prompt": "Read the parser and list its gaps",
            "subagent_type": "general-purpose", "isolation": "remote"}}], minute=1),
        line("user", "r1", "a1", [{"type": "tool_result", "tool_use_id": "toolu_agent",
                                   "content": [{"type": "text", "text": AGENT_TEXT.replace(AGENT_URL, agent_url)}]}],
             minute=2, sourceToolAssistantUUID="a1", toolUseResult={
                 "status": "remote_launched", "taskId": AGENT_TASK, "sessionUrl": agent_url,
                 "description": "Audit the parser", "prompt": "Read the parser and list its gaps",
                 "outputFile": f"/tmp/claude-1000/-p/{PARENT}/tasks/{AGENT_TASK}.output"}),
        line("assistant", "a2", "r1", [{"type": "tool_use", "id": "toolu_workflow", "name": "Workflow", "input": {
            "name": "review", "remote": True}}], minute=3),
        line("user", "r2", "a2", [{"type": "tool_result", "tool_use_id": "toolu_workflow", "content": WORKFLOW_TEXT,
                                   "is_error": False}],
             minute=4, sourceToolAssistantUUID="a2", toolUseResult={
                 "status": "remote_launched", "taskId": WORKFLOW_TASK, "taskType": "remote_agent",
                 "workflowName": "review", "summary": "Review the parser in three phases", "sessionUrl": WORKFLOW_URL}),
    ]


def teleported_lines():
    return [line("user", "t0", None, "Read the parser and list its gaps", session=AGENT_CLOUD, minute=5),
            line("assistant", "t1", "t0", [{"type": "text", "text": "Three gaps."}], session=AGENT_CLOUD, minute=6)]


def write(root, session, lines):
    folder = root / ".claude" / "projects" / "-p"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session}.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


def run(tmp_path, **options):
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"}, sources={"claude": ClaudeCodeSource()}, **options)
    return db


def feed(lines):
    unit = SourceFile(Path("/projects/-p") / f"{PARENT}.jsonl", "claude", "session", "jsonl",
                      hints={"session_id": PARENT})
    parser = ClaudeCodeSource().open_parser(unit, None)
    records, offset = [], 0
    for number, obj in enumerate(lines, 1):
        data = orjson.dumps(obj)
        records.extend(parser.feed(data, Position(number, offset, len(data))))
        offset += len(data) + 1
    return records


def test_a_remote_launch_is_a_subagent_with_its_cloud_session_and_a_link_to_it():
    records = feed(parent_lines())
    assert [r for r in records if isinstance(r, Subagent)] == [
        Subagent(f"remote-{AGENT_TASK}", PARENT, parent_tool_use_id="toolu_agent", description="Audit the parser",
                 described_by="result", remote_url=AGENT_URL, remote_session_id=AGENT_CLOUD),
        Subagent(f"remote-{WORKFLOW_TASK}", PARENT, parent_tool_use_id="toolu_workflow", description="review",
                 described_by="result", remote_url=WORKFLOW_URL, remote_session_id=WORKFLOW_CLOUD),
    ]
    assert [r for r in records if isinstance(r, SessionLink)] == [
        SessionLink(AGENT_CLOUD, PARENT, "remote"), SessionLink(WORKFLOW_CLOUD, PARENT, "remote"),
    ]


@pytest.mark.parametrize("url, cloud", [
    ("https://claude.ai/code/cse_01Zz9?from=cli", "cse_01Zz9"),
    ("https://claude.ai/code/session_01Ab#top", "session_01Ab"),
    ("https://claude.ai/code/", None),
    ("https://claude.ai/code/session_01Ab-x", None),  # (not an id Claude Code writes)
    ("https://claude.ai/code?s=session_01Ab", None),  # (a query is no session)
    ("https://session_01Ab/code", None),  # (nor a host)
    (HOSTILE, None),  # (nor what no web address says)
])
def test_the_cloud_session_is_the_url_path_s_id_segment(url, cloud):
    records = feed(parent_lines(agent_url=url)[:3])
    (agent,) = [r for r in records if isinstance(r, Subagent)]
    assert (agent.remote_url, agent.remote_session_id) == (url, cloud)
    assert [r for r in records if isinstance(r, SessionLink)] == ([SessionLink(cloud, PARENT, "remote")] if cloud else [])


def test_an_async_launch_or_a_launch_without_a_task_adds_no_remote_agent():
    lines = parent_lines()[:3]
    lines[2]["toolUseResult"] = {"status": "async_launched", "agentId": "a1b2c3", "description": "Audit the parser"}
    assert not any(r.remote_url for r in feed(lines) if isinstance(r, Subagent))
    lines[2]["toolUseResult"] = {"status": "remote_launched", "sessionUrl": AGENT_URL}
    assert not [r for r in feed(lines) if isinstance(r, (Subagent, SessionLink))]


SUBAGENT_ROWS = [
    (f"remote-{AGENT_TASK}", PARENT, None, "toolu_agent", "general-purpose", "call", "Audit the parser", "result",
     AGENT_URL, AGENT_CLOUD),
    (f"remote-{WORKFLOW_TASK}", PARENT, None, "toolu_workflow", None, None, "review", "result",
     WORKFLOW_URL, WORKFLOW_CLOUD),
]
SUBAGENT_COLUMNS = ("agent_id, session_id, child_session_id, parent_tool_use_id, agent_type, agent_type_source, "
                    "description, description_source, remote_url, remote_session_id")


@pytest.mark.parametrize("cold_load_bytes", [None, 0], ids=["row-by-row", "cold-load"])
@pytest.mark.parametrize("teleported_first", [False, True, None], ids=["parent-first", "teleported-first", "together"])
def test_the_rows_and_a_teleported_session_s_link_whichever_is_read_first(tmp_path, teleported_first, cold_load_bytes):
    first, second = [(AGENT_CLOUD, teleported_lines()), (PARENT, parent_lines())][::-1 if teleported_first else 1]
    write(tmp_path, *first)
    if teleported_first is None:
        write(tmp_path, *second)
    db = run(tmp_path, cold_load_bytes=cold_load_bytes)
    write(tmp_path, *second)
    run(tmp_path)
    conn = sqlite3.connect(db)
    assert conn.execute(f"SELECT {SUBAGENT_COLUMNS} FROM subagents ORDER BY agent_id").fetchall() == SUBAGENT_ROWS
    assert conn.execute("SELECT id, parent_session_id, relationship FROM sessions ORDER BY id").fetchall() == [
        (PARENT, None, None), (AGENT_CLOUD, PARENT, "remote"),
    ]
    conn.row_factory = sqlite3.Row
    trace = SessionQuery(conn).trace_session(PARENT)
    assert [(n["session"]["header"]["id"], n["session"]["header"]["relationship"]) for n in trace["descendants"]] == [
        (AGENT_CLOUD, "remote")]
    assert [(r["agent_id"], r["remote_url"]) for r in obelisk.subagents(conn, {"session_id": PARENT})] == [
        (f"remote-{WORKFLOW_TASK}", WORKFLOW_URL), (f"remote-{AGENT_TASK}", AGENT_URL)]
    assert [(r["agent_id"], r["remote_archived"]) for r in transcript.subagents(conn, PARENT)] == [
        (f"remote-{AGENT_TASK}", 1), (f"remote-{WORKFLOW_TASK}", 0)]


@pytest.mark.parametrize("url, href", [
    (AGENT_URL, AGENT_URL),
    ("http://localhost:8080/code/session_01Ab", "http://localhost:8080/code/session_01Ab"),
    (HOSTILE, None),
    ("JavaScript:alert(1)", None),
    (" javascript:alert(1)", None),
    ("java\tscript:alert(1)", None),
    ("data:text/html,<script>alert(1)</script>", None),
    ("https:///session_01Ab", None),
    ("//evil.example/session_01Ab", None),
    (None, None),
])
def test_a_page_links_out_only_to_an_http_url(url, href):
    assert TemplateHelpers.external(url) == href


# The pages


async def page(datasette, url: str) -> str:
    response = await datasette.client.get(url)
    assert response.status_code == 200, response.text[:500]
    return response.text


def external_links(html: str) -> list[tuple[str, str]]:
    """``(href, rel)`` of each link out of the archive a page shows."""
    return re.findall(r'<a class="ob-external" href="([^"]*)" rel="([^"]*)"', html)


EVENT_SEQ = 1  # the Agent call's line


async def pages_of(tmp_path, lines, teleported=False):
    from web_fixtures import make_datasette

    write(tmp_path, PARENT, lines)
    if teleported:
        write(tmp_path, AGENT_CLOUD, teleported_lines())
    datasette = make_datasette(run(tmp_path))
    await datasette.invoke_startup()
    return [await page(datasette, f"/-/obelisk/{path}") for path in (
        f"session/{PARENT}/lineage", f"session/{PARENT}", f"event/{PARENT}/{EVENT_SEQ}")]


@pytest.mark.asyncio
async def test_the_lineage_transcript_and_event_pages_link_to_the_cloud_sessions(tmp_path):
    lineage, session, event = await pages_of(tmp_path, parent_lines(), teleported=True)
    both = [(AGENT_URL, "noopener noreferrer"), (WORKFLOW_URL, "noopener noreferrer")]
    assert external_links(lineage) == external_links(session) == both
    assert external_links(event) == both  # (its window shows both calls)
    assert re.search(r'data-agent-id="remote-r4k2m9x7q">Cloud agent \(general-purpose\):\s*Audit the parser', lineage)
    assert re.search(r'data-agent-id="remote-r8w3c5n1z">Cloud workflow:\s*review', lineage)
    # The teleported session is the parent's child in the forest, and the agent links to it.
    assert f'<a href="/-/obelisk/session/{AGENT_CLOUD}">its log here</a>' in lineage
    assert re.search(rf'<a href="/-/obelisk/session/{AGENT_CLOUD}">[^<]*</a>\s*<span class="kind">remote</span>', lineage)


@pytest.mark.asyncio
async def test_a_url_that_is_no_web_address_is_shown_never_linked(tmp_path):
    for html in await pages_of(tmp_path, parent_lines(agent_url=HOSTILE)):
        assert "javascript:" not in "".join(re.findall(r'href="([^"]*)"', html)).lower()
        assert f"<code>{HOSTILE}</code>" in html  # (shown as text)
    lineage = (await pages_of(tmp_path / "again", parent_lines(agent_url=HOSTILE)))[0]
    assert external_links(lineage) == [(WORKFLOW_URL, "noopener noreferrer")]
    assert "(not a web address)" in lineage
