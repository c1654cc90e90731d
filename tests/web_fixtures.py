"""Datasette instances over an ingested database, for the web tests.

The database holds the shared corpus plus one small Claude session whose
text carries HTML payloads (``XSS_SESSION``), so every page can be checked
to render them as text.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import pytest_asyncio
from datasette.app import Datasette

from datasette_obelisk.store.ingest import ingest
from dbsnapshot import rows  # noqa: F401 (the web tests take it from here)

CORPUS = Path(__file__).parent.parent.parent / "shared" / "corpus"
XSS_SESSION = "xss-session-0001"
SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'


def claude_line(kind: str, uuid: str, parent: str | None, seconds: int, content) -> str:
    return json.dumps(
        {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": XSS_SESSION,
            "timestamp": f"2026-03-01T10:00:{seconds:02d}.000Z",
            "cwd": "/tmp/xss-project",
            "gitBranch": "xss-branch",
            "version": "2.1.0",
            "message": {"role": kind, "content": content, **({"model": "claude-test"} if kind == "assistant" else {})},
        }
    )


def write_xss_logs(root: Path) -> Path:
    """A Claude config folder with one session full of HTML payloads."""
    project = root / "projects" / "-tmp-xss-project"
    project.mkdir(parents=True)
    lines = [
        claude_line("user", "xss-u1", None, 1, f"Render this safely: {SCRIPT} and {IMG} zebrafish"),
        claude_line("assistant", "xss-a1", "xss-u1", 2, [{"type": "text", "text": f"Looking at {IMG} now zebrafish"}]),
        claude_line(
            "assistant", "xss-a2", "xss-a1", 3,
            [{"type": "tool_use", "id": "toolu_xss1", "name": "Bash", "input": {"command": f"echo '{SCRIPT}'"}}],
        ),
        claude_line(
            "user", "xss-u2", "xss-a2", 4,
            [{"type": "tool_result", "tool_use_id": "toolu_xss1", "content": f"{IMG}\n{SCRIPT}", "is_error": True}],
        ),
        claude_line("assistant", "xss-a3", "xss-u2", 5, [{"type": "text", "text": "The zebrafish command failed."}]),
        json.dumps({"type": "pr-link", "sessionId": XSS_SESSION, "prNumber": 7, "prUrl": "javascript:alert(1)",
                    "prRepository": SCRIPT, "timestamp": "2026-03-01T10:00:06.000Z"}),
    ]
    (project / f"{XSS_SESSION}.jsonl").write_text("\n".join(lines) + "\n")
    (root / "history.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in HISTORY))
    return root


GONE_SESSION = "gone-session-0001"  # known only from the prompt log: its transcript was cleaned up


def history_entry(session: str, seconds: int, text: str) -> dict:
    return {"display": text, "pastedContents": {}, "timestamp": 1772359200000 + seconds * 1000,
            "project": "/tmp/xss-project", "sessionId": session}


# Claude Code's prompt log: the XSS session's first prompt (held by its transcript), and
# three of a session whose transcript is gone, two of them about zebrafish.
HISTORY = [
    history_entry(XSS_SESSION, 1, f"Render this safely: {SCRIPT} and {IMG} zebrafish"),
    history_entry(GONE_SESSION, 3600, "feed the zebrafish before the tank test"),
    history_entry(GONE_SESSION, 3660, f"why did the zebrafish {SCRIPT} tank test fail"),
    history_entry(GONE_SESSION, 3720, "commit the aquarium changes"),
]


def build_web_db(folder: Path) -> Path:
    db = folder / "obelisk.db"
    ingest(db, {"claude": CORPUS / "claude-code", "codex": CORPUS / "codex", "gemini": CORPUS / "gemini"})
    ingest(db, {"claude": write_xss_logs(folder / "xss")})
    add_memory_and_workflow(db, folder / "notes")
    return db


WORKFLOW_RUN = "run-xss-1"


def add_memory_and_workflow(db: Path, notes: Path) -> None:
    """One registered memory, and one workflow run (the corpus has none) on the XSS session."""
    from datasette_obelisk.query.memories import remember

    notes.mkdir()
    (notes / "zebrafish.md").write_text("# Zebrafish\n")
    conn = sqlite3.connect(db, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        remember(conn, {"path": str(notes / "zebrafish.md"), "summary": "How zebrafish commands fail", "session_id": XSS_SESSION},
                 memory_roots=[notes], cwd=str(notes))
        conn.execute(
            "INSERT INTO workflows (run_id, session_id, parent_tool_use_id, result_json, timestamp, agent_count, "
            "status, workflow_name, file_id) VALUES (?, ?, 'toolu_xss1', '{\"ok\": true}', "
            "'2026-03-01T10:00:03.500Z', 1, 'completed', 'xss-workflow', 0)",
            [WORKFLOW_RUN, XSS_SESSION],
        )
        conn.execute(
            "INSERT INTO workflow_agents (agent_id, run_id, session_id, agent_type, state, file_id) "
            "VALUES ('wf-agent-1', ?, ?, 'general-purpose', 'completed', 0)",
            [WORKFLOW_RUN, XSS_SESSION],
        )
    finally:
        conn.close()


def copy_db(source: Path, target: Path) -> Path:
    """A private copy (WAL folded in) that a test may write to."""
    conn = sqlite3.connect(source)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    shutil.copyfile(source, target)
    return target


def make_datasette(db: Path | None, config: dict | None = None, **options) -> Datasette:
    return Datasette([str(db)] if db else [], config=config, **options)


@pytest.fixture(scope="session")
def web_db(tmp_path_factory) -> Path:
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return build_web_db(tmp_path_factory.mktemp("web"))


@pytest_asyncio.fixture
async def ds(web_db):
    datasette = make_datasette(web_db)
    await datasette.invoke_startup()
    return datasette
