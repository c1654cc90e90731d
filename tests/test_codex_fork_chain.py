"""A fork of a fork read without its parent's log: the grandparent's history the
parent's copy begins with is a replay of the grandparent's log when that is stored;
only the parent's own lines are kept as its copy."""

from __future__ import annotations

from pathlib import Path

import pytest
from codex_lines import line as _line, restamp as _restamp
from dbsnapshot import diff, rows, snapshot

from datasette_obelisk.store.ingest import ingest

ROLLOUT = ("codex/daaain__claude-code-log/sessions/2026/01/02/"
           "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl")
G = "11111111-1111-4111-8111-111111111111"
P = "77777777-7777-4777-8777-777777777777"
C = "88888888-8888-4888-8888-888888888888"


@pytest.fixture(scope="module")
def grandparent():
    from conftest import CORPUS

    if not (CORPUS / ROLLOUT).exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return (CORPUS / ROLLOUT).read_bytes()


def fork(parent: bytes, me: str, parent_id: str, start: str, own_at: str, prompt: str) -> bytes:
    """A fork as Codex writes one: its session_meta, the parent's lines re-stamped, a turn of its own."""
    meta = {"id": me, "timestamp": start, "cwd": "/workspace/synthetic-project", "originator": "codex_cli_rs",
            "cli_version": "0.0.0-test", "source": "cli", "forked_from_id": parent_id, "model_provider": "synthetic"}
    out = _line("session_meta", meta, start)
    out += b"".join(_restamp(line, start) for line in parent.splitlines(keepends=True))
    out += _line("event_msg", {"type": "user_message", "message": prompt}, own_at)
    out += _line("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": prompt}]}, own_at)
    out += _line("event_msg", {"type": "agent_message", "message": "Answer to " + prompt}, own_at[:-5] + "5.000Z")
    return out


def logs(grandparent: bytes) -> dict[str, tuple[str, bytes]]:
    p = fork(grandparent, P, G, "2026-01-02T04:00:00.000Z", "2026-01-02T04:01:00.000Z", "P's own prompt")
    c = fork(p, C, P, "2026-01-02T05:00:00.000Z", "2026-01-02T05:01:00.000Z", "C's own prompt")
    return {
        "G": (f"sessions/2026/01/02/rollout-2026-01-02T03-04-05-{G}.jsonl", grandparent),
        "P": (f"sessions/2026/01/02/rollout-2026-01-02T04-00-00-{P}.jsonl", p),
        "C": (f"sessions/2026/01/02/rollout-2026-01-02T05-00-00-{C}.jsonl", c),
    }


def ingest_runs(tmp_path: Path, grandparent: bytes, runs: list[str]) -> Path:
    """Ingest, one run after another, the logs each of ``runs`` names (added to one Codex home)."""
    name = "-".join(runs)
    db_path, home = tmp_path / f"{name}.db", tmp_path / name / ".codex"
    for run in runs:
        for key in run:
            rel, data = logs(grandparent)[key]
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_bytes(data)
        ingest(db_path, {"codex": home})
    return db_path


def test_a_fork_of_a_fork_without_its_parent_keeps_only_the_parent_s_own_lines(tmp_path, grandparent):
    db_path = ingest_runs(tmp_path, grandparent, ["GC"])
    counts = ("SELECT session_id, COUNT(*), SUM(json_extract(meta_json, '$.copied_from') IS NOT NULL) "
              "FROM messages GROUP BY session_id ORDER BY session_id")
    assert rows(db_path, counts) == [(f"codex:{G}", 9, 0), (f"codex:{C}", 4, 2)]
    assert rows(db_path, "SELECT text FROM messages WHERE session_id = ? AND meta_json LIKE '%copied_from%' "
                         "ORDER BY seq", [f"codex:{C}"]) == [("P's own prompt",), ("Answer to P's own prompt",)]
    assert rows(db_path, "SELECT text, COUNT(*) FROM messages WHERE text != '' GROUP BY text HAVING COUNT(*) > 1") == []
    assert rows(db_path, "SELECT COUNT(*) FROM tool_calls WHERE session_id = ?", [f"codex:{C}"]) == [(0,)]


@pytest.mark.parametrize("runs", [["GC", "P"], ["C", "G", "P"], ["G", "C", "P"], ["C", "P", "G"]])
def test_a_fork_of_a_fork_gives_its_copy_up_however_the_logs_arrive(tmp_path, grandparent, runs):
    together = ingest_runs(tmp_path, grandparent, ["GPC"])
    assert diff(snapshot(together), snapshot(ingest_runs(tmp_path, grandparent, runs))) == []


@pytest.mark.parametrize("runs", [["C", "G"], ["G", "C"]])
def test_a_fork_of_a_fork_read_before_its_grandparent_is_read_again(tmp_path, grandparent, runs):
    together = ingest_runs(tmp_path, grandparent, ["GC"])
    assert diff(snapshot(together), snapshot(ingest_runs(tmp_path, grandparent, runs))) == []
