"""The generator's newer shapes (``newer_shapes=True``), as written and as the store keeps them.

Late Claude Code 2.1.x (a title in ``custom-title.json``, file paths in other spellings) and
Codex 0.171 (a fork of a fork, the items and context of a multi-agent parent) are planted once
each, after the rest of the corpus, which stays byte for byte what it is without the option.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from datasette_obelisk.demo.generator import generate
from datasette_obelisk.query.obelisk import file_history
from datasette_obelisk.records import Merged
from datasette_obelisk.sources.base import SourceFile
from datasette_obelisk.sources.codex import CodexSource
from datasette_obelisk.sources.lines import read_lines
from datasette_obelisk.store.ingest import ingest

SEED, TARGET = 3, 300_000
CWD = "/home/dev/projects/ledger-sync"
FILE = f"{CWD}/src/ledger_sync/reconcile.py"


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    plain, newer = tmp_path_factory.mktemp("plain"), tmp_path_factory.mktemp("newer")
    plain_stats = generate(plain, seed=SEED, target_bytes=TARGET)
    stats = generate(newer, seed=SEED, target_bytes=TARGET, newer_shapes=True)
    db = tmp_path_factory.mktemp("db") / "obelisk.db"
    summary = ingest(db, {"claude": newer / ".claude", "codex": newer / ".codex"})
    added = sorted(set(tree_hashes(newer)) - set(tree_hashes(plain)))
    return plain, plain_stats, newer, stats, db, summary, added


@pytest.fixture(scope="module")
def conn(corpora):
    conn = sqlite3.connect(corpora[4])
    yield conn
    conn.close()


def heads(newer: Path, added: list[str]) -> dict[str, dict]:
    """The first line's payload of each added Codex rollout, by path."""
    return {rel: json.loads((newer / rel).read_bytes().split(b"\n", 1)[0])["payload"]
            for rel in added if rel.startswith(".codex/")}


def payloads(path: Path) -> list[bytes]:
    """Each line without its timestamp (a fork re-stamps what it copies)."""
    return [line.split(b'"type"', 1)[1] for line in path.read_bytes().splitlines()]


def test_the_newer_shapes_only_add_files(corpora):
    plain, plain_stats, newer, stats, _, _, added = corpora
    before, after = tree_hashes(plain), tree_hashes(newer)
    assert {rel: after[rel] for rel in before} == before
    claude = [rel for rel in added if rel.startswith(".claude/")]
    assert [Path(rel).name for rel in claude if rel.endswith(".json")] == ["custom-title.json"] * 2
    assert sum(rel.endswith(".jsonl") for rel in claude) == 2
    assert sum(rel.startswith(".codex/") for rel in added) == 5
    assert len(added) == 9
    grown = {name: getattr(stats.codex, name) - getattr(plain_stats.codex, name)
             for name in ("files", "sessions", "main_sessions", "subagent_transcripts", "forks")}
    assert grown == {"files": 5, "sessions": 5, "main_sessions": 4, "subagent_transcripts": 1, "forks": 2}
    assert (stats.claude.files - plain_stats.claude.files, stats.claude.main_sessions - plain_stats.claude.main_sessions) == (4, 2)
    assert stats.bytes - plain_stats.bytes == sum((newer / rel).stat().st_size for rel in added)


def test_the_stats_count_what_the_files_hold(corpora):
    from test_generator import test_claude_counts_match_stats, test_codex_counts_match_stats

    _, _, newer, stats, _, _, _ = corpora
    test_claude_counts_match_stats((newer, stats))
    test_codex_counts_match_stats((newer, stats))


def test_every_codex_line_planted_has_a_type_the_parser_knows(corpora):
    _, _, newer, _, _, _, added = corpora
    reasons = []
    for rel in added:
        if rel.startswith(".codex/"):
            unit = SourceFile(newer / rel, "codex", kind="rollout")
            parser = CodexSource().open_parser(unit, None)
            for line in read_lines(open(newer / rel, "rb")):
                reasons += [r.reason for r in parser.feed(line.data, line.position) if isinstance(r, Merged)]
    assert "unknown-type" not in reasons
    assert len(reasons) == 177


def test_the_store_reads_the_newer_corpus_without_error(corpora):
    assert corpora[5].errors == 0


def test_every_line_of_the_newer_corpus_has_a_type_its_parser_knows(corpora):
    assert (corpora[5].unknown, corpora[5].unknown_samples) == (0, [])


def test_a_title_kept_in_custom_title_json_titles_the_session_unless_a_line_gives_one(corpora, conn):
    _, _, newer, _, _, _, added = corpora
    found = {}
    for rel in added:
        if rel.endswith("custom-title.json"):
            session = Path(rel).parent.name
            log = (newer / rel).parent.parent / f"{session}.jsonl"
            lines = [json.loads(line) for line in log.read_bytes().splitlines()]
            line_titles = [d["customTitle"] for d in lines if d["type"] == "custom-title"]
            kept = json.loads((newer / rel).read_bytes())["customTitle"]
            stored = conn.execute("SELECT title, title_source FROM sessions WHERE id = ?", [session]).fetchone()
            found[session] = (len(line_titles), stored == ((line_titles or [kept])[-1], "custom"), stored[0] == kept)
    assert sorted(found.values()) == [(0, True, True), (1, True, False)]


def test_one_file_named_in_other_spellings_has_one_history(corpora, conn):
    calls = [(h["toolCall"]["name"], h["session"]["id"].split(":")[0] == "codex") for h in file_history(conn, FILE)]
    assert calls == [("Read", False), ("Edit", False), ("Read", False), ("Read", False),
                     ("apply_patch", True), ("apply_patch", True)]
    assert len(file_history(conn, f"{CWD}//src/./ledger_sync/reconcile.py/")) == 6
    dotted = f"{CWD}/src/ledger_sync/../ledger_sync/reconcile.py"  # (a link may lie on the way: kept)
    assert [h["toolCall"]["name"] for h in file_history(conn, dotted)] == ["Read"]
    assert conn.execute("SELECT DISTINCT path FROM tool_call_files WHERE path LIKE '%reconcile.py%' ORDER BY path"
                        ).fetchall() == [(dotted,), (FILE,)]


def _fork_chain(newer: Path, added: list[str]) -> list[tuple[str, Path]]:
    """(thread, path) of the root, its fork, and the fork of that fork."""
    metas = heads(newer, added)
    forks = {meta["forked_from_id"]: rel for rel, meta in metas.items() if meta.get("forked_from_id")}
    [root] = [rel for rel, meta in metas.items() if meta["id"] in forks and not meta.get("forked_from_id")]
    chain = [root]
    while metas[chain[-1]]["id"] in forks:
        chain.append(forks[metas[chain[-1]]["id"]])
    return [(metas[rel]["id"], newer / rel) for rel in chain]


def copied(child: Path, parent: Path) -> int:
    """How many lines after its first the fork ``child`` copied from ``parent``'s start."""
    mine, theirs = payloads(child)[1:], payloads(parent)
    n = 0
    while n < min(len(mine), len(theirs)) and mine[n] == theirs[n]:
        n += 1
    return n


def test_a_fork_of_a_fork_stores_its_ancestors_lines_once(corpora, conn, tmp_path):
    _, _, newer, _, _, _, added = corpora
    (root, root_path), (fork, fork_path), (grandchild, grandchild_path) = _fork_chain(newer, added)
    assert copied(fork_path, root_path) == 25
    assert copied(grandchild_path, fork_path) == len(payloads(fork_path)) == 69  # the fork's whole log
    count = "SELECT COUNT(*), MIN(line_no) FROM messages WHERE session_id = ?"
    assert conn.execute(count, [f"codex:{root}"]).fetchone() == (26, 2)
    # (a fork's own lines: its session_meta, the copies, then task_started, turn_context, its prompt)
    assert conn.execute(count, [f"codex:{fork}"]).fetchone() == (29, 1 + 25 + 3)
    assert conn.execute(count, [f"codex:{grandchild}"]).fetchone() == (13, 1 + 69 + 3)
    # the middle log gone: the grandchild keeps the copy of it, and leaves the root's lines to the root
    alone = tmp_path / "codex"
    for _, path in ((root, root_path), (grandchild, grandchild_path)):
        target = alone / path.relative_to(newer / ".codex")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    ingest(tmp_path / "alone.db", {"codex": alone})
    other = sqlite3.connect(tmp_path / "alone.db")
    assert other.execute(count, [f"codex:{root}"]).fetchone() == (26, 2)
    # (the copy of the fork's log, from its first own line: after the two session_meta and the root's lines)
    assert other.execute(count, [f"codex:{grandchild}"]).fetchone() == (29 + 13, 2 + 25 + 3)
    other.close()


def test_a_multi_agent_parent_links_its_worker_and_keeps_what_codex_wrote_for_it(corpora, conn):
    _, _, newer, _, _, _, added = corpora
    metas = heads(newer, added)
    [parent] = [meta["id"] for meta in metas.values() if meta.get("history_mode") == "paginated"]
    [(child, nickname)] = [(meta["id"], meta["agent_nickname"]) for meta in metas.values()
                           if isinstance(meta["source"], dict)]
    [spawn] = [json.loads(line)["payload"]["call_id"] for rel in added if parent in rel
               for line in (newer / rel).read_bytes().splitlines() if b'"name":"spawn_agent"' in line]
    assert conn.execute("SELECT agent_id, child_session_id, parent_tool_use_id, agent_type, description "
                        "FROM subagents WHERE session_id = ?", [f"codex:{parent}"]).fetchall() == [
        (child, f"codex:{child}", f"codex:{parent}:{spawn}", "worker", nickname)]
    assert conn.execute("SELECT parent_session_id, relationship FROM sessions WHERE id = ?",
                        [f"codex:{child}"]).fetchone() == (f"codex:{parent}", "subagent")
    kept = conn.execute(
        "SELECT subtype, is_meta, substr(text, 1, 30) FROM messages WHERE session_id = ? AND (is_meta = 1 OR "
        "subtype IN ('item_completed', 'entered_review_mode', 'exited_review_mode') OR text LIKE '[/root/%') "
        "AND subtype NOT IN ('token_count') ORDER BY seq", [f"codex:{parent}"]).fetchall()
    assert kept == [
        ("message", 1, "<permissions instructions>\nFil"),
        ("message", 1, "# AGENTS.md instructions for /"),
        ("message", 1, "<environment_context>\n  <cwd>/"),
        ("agent_message", 0, "[/root/worker → /root]\nMessage"),  # the worker's end, told to the model: once
        ("item_completed", 1, "Agent final answer from `/root"),  # an end the model was not told of
        ("message", 1, "<user_agent_task>\n{\"agent_id\":"),
        ("message", 1, "<context_rewind_carry_forward>"),
        ("entered_review_mode", 1, "current changes"),
        ("exited_review_mode", 1, "[P1] The webhook fires twice\n`"),
    ]
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", [f"codex:{parent}"]).fetchone() == (26,)
