"""The synthetic corpus generator: determinism, size, layout and shapes.

Counts are recomputed here from the files themselves, independently of the
generator's bookkeeping, and compared with ``GenerateStats``.
"""

from __future__ import annotations

import hashlib
import json
import re
import tracemalloc
from datetime import datetime, timezone
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from datasette_obelisk.demo.generator import FOLLOW_UPS, GenerateStats, escape_cwd, generate
from datasette_obelisk.records import Merged, Message
from datasette_obelisk.sources.claude_code import ClaudeCodeSource
from datasette_obelisk.sources.lines import read_lines as read_file_lines

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SEARCH_WORDS = ["migration", "pytest", "docker", "refactor"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, GenerateStats]:
    root = tmp_path_factory.mktemp("corpus")
    return root, generate(root, seed=5, target_bytes=6_000_000)


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def claude_files(root: Path) -> list[Path]:
    return sorted((root / ".claude" / "projects").rglob("*.jsonl"))


def codex_files(root: Path) -> list[Path]:
    return sorted((root / ".codex" / "sessions").rglob("*.jsonl"))


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# -- determinism and size -------------------------------------------------------


def test_same_seed_same_bytes(tmp_path):
    first = generate(tmp_path / "a", seed=11, target_bytes=1_000_000)
    second = generate(tmp_path / "b", seed=11, target_bytes=1_000_000)
    assert tree_hashes(tmp_path / "a") == tree_hashes(tmp_path / "b")
    assert first == second


def test_other_seed_other_corpus(tmp_path):
    generate(tmp_path / "a", seed=1, target_bytes=600_000)
    generate(tmp_path / "b", seed=2, target_bytes=600_000)
    assert tree_hashes(tmp_path / "a") != tree_hashes(tmp_path / "b")


@pytest.mark.parametrize(
    "target,options",
    [
        (800_000, {}),
        (3_000_000, {}),
        (12_000_000, {}),
        (2_000_000, {"codex": False}),
        (2_000_000, {"claude": False}),
        (2_000_000, {"gemini": True}),
        (1_000_000, {"claude": False, "codex": False, "gemini": True}),
    ],
)
def test_size_within_ten_percent(tmp_path, target, options):
    stats = generate(tmp_path, seed=3, target_bytes=target, **options)
    on_disk = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert on_disk == stats.bytes
    assert abs(on_disk - target) <= 0.1 * target
    assert (tmp_path / ".claude").exists() == options.get("claude", True)
    assert (tmp_path / ".codex").exists() == options.get("codex", True)
    assert (tmp_path / ".gemini").exists() == options.get("gemini", False)


def test_mostly_claude_by_bytes(corpus):
    _, stats = corpus
    assert 0.6 <= stats.claude.bytes / stats.bytes <= 0.8


# -- file format ------------------------------------------------------------------------


def test_every_line_is_a_json_object_with_lf_endings(corpus):
    root, stats = corpus
    lines = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        assert data.endswith(b"\n") and b"\r" not in data, path
        for raw in data.splitlines():
            obj = json.loads(raw)
            assert isinstance(obj, dict)
            lines += 1
            for key in ("timestamp", "backupTime"):
                if isinstance(obj.get(key), str):
                    assert ISO.match(obj[key]), obj[key]
    assert lines == stats.lines


def test_size_mix(corpus):
    root, _ = corpus
    sizes = sorted(len(line) for path in claude_files(root) for line in path.read_bytes().splitlines())
    assert 700 <= sizes[len(sizes) // 2] <= 2500
    assert sizes[-1] >= 200_000  # big tool outputs, capped at a tenth of the target


def test_multi_megabyte_outputs(tmp_path):
    stats = generate(tmp_path, seed=4, target_bytes=30_000_000, codex=False)
    longest = max(len(line) for path in claude_files(tmp_path) for line in path.read_bytes().splitlines())
    assert longest >= 1_000_000
    assert longest + 1 == stats.claude.longest_line  # newline included
    assert stats.claude.big_outputs >= 1


def test_big_output_every(tmp_path):
    stats = generate(tmp_path, seed=4, target_bytes=4_000_000, big_output_every=3, codex=False)
    assert stats.claude.big_outputs >= 3


def test_search_vocabulary(corpus):
    root, _ = corpus
    text = b"".join(p.read_bytes() for p in claude_files(root) + codex_files(root)).lower()
    for word in SEARCH_WORDS:
        assert text.count(word.encode()) >= 5, word


@pytest.mark.parametrize("claude", [True, False])
def test_huge_line(tmp_path, claude):
    size = 5_000_000
    stats = generate(tmp_path, seed=6, target_bytes=600_000, huge_line_bytes=size, claude=claude)
    files = claude_files(tmp_path) if claude else codex_files(tmp_path)
    huge = [line for p in files for line in p.read_bytes().splitlines() if len(line) >= size]
    assert len(huge) == 1
    assert len(huge[0]) < size + 300_000
    assert stats.huge_line_bytes == len(huge[0]) + 1
    json.loads(huge[0])


def test_huge_line_is_streamed(tmp_path):
    tracemalloc.start()
    try:
        generate(tmp_path, seed=6, target_bytes=400_000, huge_line_bytes=30_000_000, codex=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12_000_000


# -- layout ---------------------------------------------------------------------------


def test_claude_layout(corpus):
    root, _ = corpus
    projects = root / ".claude" / "projects"
    for path in claude_files(root):
        rel = path.relative_to(projects).parts
        lines = read_lines(path)
        cwds = {d["cwd"] for d in lines if "cwd" in d}
        assert cwds and all(c.startswith("/home/dev/projects/") for c in cwds)
        assert {escape_cwd(c) for c in cwds} == {rel[0]}
        sessions = {d["sessionId"] for d in lines if "sessionId" in d}
        if len(rel) == 2 and not rel[1].startswith("agent-"):
            assert re.fullmatch(UUID + r"\.jsonl", rel[1])
            assert sessions == {path.stem}
        elif len(rel) == 2:
            assert re.fullmatch(r"agent-[0-9a-f]{8}\.jsonl", rel[1])  # 2.0.x flat agent file
            assert all(d["agentId"] == path.stem[6:] for d in lines if "uuid" in d)
            assert (projects / rel[0] / f"{sessions.pop()}.jsonl").exists()
        else:
            assert len(rel) == 4 and rel[2] == "subagents", rel
            assert re.fullmatch(r"agent-(a[0-9a-f]{16}|[0-9a-f]{7}|acompact-[0-9a-f]{6})\.jsonl", rel[3])
            assert sessions == {rel[1]}
            assert (projects / rel[0] / f"{rel[1]}.jsonl").exists()
            assert all(d["isSidechain"] and d["agentId"] == path.stem[6:] for d in lines if "uuid" in d)
            if re.fullmatch(r"agent-a[0-9a-f]{16}", path.stem):
                meta = json.loads(path.with_suffix(".meta.json").read_text())
                assert set(meta) == {"agentType", "description", "toolUseId"}
                assert meta["toolUseId"].startswith("toolu_")
    assert escape_cwd("/Users/me/my_proj.x") == "-Users-me-my-proj-x"


def test_codex_layout(corpus):
    root, _ = corpus
    sessions = root / ".codex" / "sessions"
    for path in codex_files(root):
        year, month, day, name = path.relative_to(sessions).parts
        m = re.fullmatch(r"rollout-(\d{4})-(\d\d)-(\d\d)T\d\d-\d\d-\d\d-(" + UUID + r")\.jsonl", name)
        assert m and m.groups()[:3] == (year, month, day)
        first = read_lines(path)[0]
        assert first["type"] == "session_meta" and first["payload"]["id"] == m.group(4)
        assert first["payload"]["timestamp"].startswith(f"{year}-{month}-{day}T")


# -- planted counts ----------------------------------------------------------------------------


def is_typed_prompt(d: dict) -> bool:
    if d.get("type") != "user" or d.get("isMeta") or d.get("isCompactSummary") or d.get("isSidechain"):
        return False
    content = d["message"]["content"]
    return isinstance(content, str) or not any(b.get("type") == "tool_result" for b in content)


def test_claude_counts_match_stats(corpus):
    root, stats = corpus
    s = stats.claude
    counts: Counter = Counter()
    types: Counter = Counter()
    for path in claude_files(root):
        agent_file = path.name.startswith("agent-")
        counts["subagent_transcripts" if agent_file else "main_sessions"] += 1
        counts["compact_agents"] += path.name.startswith("agent-acompact-")
        lines = read_lines(path)
        first = next(d for d in lines if "uuid" in d)
        counts["continued_files"] += not agent_file and first["type"] == "system" and first["subtype"] == "compact_boundary"
        prompts_by_parent: dict[str, list[dict]] = defaultdict(list)
        lines_by_message: Counter = Counter()
        for d in lines:
            types[d["type"] if d["type"] != "system" else f"system/{d['subtype']}"] += 1
            counts["messages"] += "uuid" in d
            if d.get("isSidechain") and d.get("parentUuid") is None and not agent_file:
                counts["inline_sidechains"] += 1
            if d["type"] == "system" and d["subtype"] == "compact_boundary":
                counts["compactions"] += 1
            if d["type"] == "assistant":
                lines_by_message[d["message"]["id"]] += 1
            content = d.get("message", {}).get("content")
            if isinstance(content, list):
                counts["tool_calls"] += sum(b["type"] == "tool_use" for b in content)
                counts["failed"] += sum(b["type"] == "tool_result" and b.get("is_error") is True for b in content)
            if is_typed_prompt(d) and d["parentUuid"] is not None:
                prompts_by_parent[d["parentUuid"]].append(d)
        counts["split_responses"] += sum(n > 1 for n in lines_by_message.values())
        for siblings in prompts_by_parent.values():
            counts["rewinds"] += len(siblings) - 1
            assert len({d["timestamp"] for d in siblings}) == len(siblings)
    assert counts["main_sessions"] == s.main_sessions
    assert counts["subagent_transcripts"] == s.subagent_transcripts
    assert counts["compact_agents"] == s.compact_agents
    assert counts["inline_sidechains"] == s.inline_sidechains
    assert s.sessions == s.main_sessions + s.subagent_transcripts
    assert counts["messages"] == s.messages
    assert counts["tool_calls"] == s.tool_calls
    assert counts["failed"] == s.failed_tool_results
    assert counts["rewinds"] == s.rewinds
    assert counts["compactions"] == s.compactions
    assert counts["continued_files"] == s.continued_files >= 1
    assert counts["split_responses"] == s.split_responses
    assert dict(types) == s.line_types
    all_files = [p for p in (root / ".claude").rglob("*") if p.is_file()]
    assert len(all_files) == s.files
    assert sum(p.stat().st_size for p in all_files) == s.bytes
    assert sum(len(p.read_bytes().splitlines()) for p in all_files) == s.lines


def codex_exit_code(output: str) -> int:
    if output.startswith("Exit code: "):
        return int(output.split("\n", 1)[0].split(": ")[1])
    if output.startswith("{"):
        meta = json.loads(output).get("metadata")
        return meta["exit_code"] if meta else 0
    return 0


def test_codex_counts_match_stats(corpus):
    root, stats = corpus
    s = stats.codex
    counts: Counter = Counter()
    types: Counter = Counter()
    call_ids: set[str] = set()
    for path in codex_files(root):
        lines = read_lines(path)
        meta = lines[0]["payload"]
        spawned = isinstance(meta["source"], dict) and "subagent" in meta["source"]
        counts["subagent_transcripts" if spawned else "main_sessions"] += 1
        counts["forks"] += "forked_from_id" in meta
        for d in lines:
            payload = d["payload"]
            plain = d["type"] in ("session_meta", "turn_context", "compacted") or "type" not in payload
            kind = d["type"] if plain else f"{d['type']}/{payload['type']}"
            types[kind] += 1
            counts["messages"] += kind == "response_item/message"
            counts["compactions"] += kind == "compacted"
            if kind in ("response_item/function_call", "response_item/custom_tool_call"):
                counts["tool_calls"] += 1
                call_ids.add(payload["call_id"])
            if kind in ("response_item/function_call_output", "response_item/custom_tool_call_output"):
                counts["failed"] += codex_exit_code(payload["output"]) != 0
    assert counts["main_sessions"] == s.main_sessions
    assert counts["subagent_transcripts"] == s.subagent_transcripts
    assert counts["forks"] == s.forks
    assert s.sessions == len(codex_files(root))
    assert counts["messages"] == s.messages
    assert counts["tool_calls"] == s.tool_calls
    assert len(call_ids) == s.tool_calls - s.replayed_tool_calls
    assert counts["failed"] == s.failed_tool_results
    assert counts["compactions"] == s.compactions
    assert dict(types) == s.line_types
    all_files = [p for p in (root / ".codex").rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in all_files) == s.bytes and len(all_files) == s.files


# -- planted shapes -------------------------------------------------------------------------------


def test_claude_shapes(corpus):
    root, stats = corpus
    s = stats.claude
    for name in ("main_sessions", "subagent_transcripts", "compact_agents", "inline_sidechains", "tool_calls",
                 "failed_tool_results", "rewinds", "compactions", "split_responses"):
        assert getattr(s, name) >= 1, name
    for kind in ("summary", "custom-title", "ai-title", "system/away_summary", "progress", "attachment",
                 "file-history-snapshot", "queue-operation", "permission-mode", "last-prompt",
                 "system/compact_boundary", "system/turn_duration"):
        assert s.line_types.get(kind, 0) >= 1, kind

    by_uuid: dict[str, dict] = {}
    files: dict[Path, list[dict]] = {}
    for path in claude_files(root):
        files[path] = read_lines(path)
        by_uuid.update((d["uuid"], d) for d in files[path] if "uuid" in d)
    versions = {d["version"].rsplit(".", 1)[0] for lines in files.values() for d in lines if "version" in d}
    assert {"1.0", "2.0", "2.1"} <= versions

    seen: Counter = Counter()
    for path, lines in files.items():
        if path.name.startswith("agent-"):
            continue
        first = lines[0]
        if first["type"] == "summary":
            assert first["leafUuid"] in by_uuid  # titles a conversation by its leaf
            seen["summary"] += 1
        for i, d in enumerate(lines):
            if d["type"] == "user" and d.get("agentId") and d.get("toolUseResult", {}).get("agentId") == d["agentId"]:
                assert (path.parent / f"agent-{d['agentId']}.jsonl").exists()  # 2.0.x reference
                seen["flat_agent_ref"] += 1
            if d["type"] == "system" and d["subtype"] == "compact_boundary":
                assert d["parentUuid"] is None and d["logicalParentUuid"] in by_uuid
                summary = lines[i + 1]
                assert summary["isCompactSummary"] and summary["parentUuid"] == d["uuid"]
                assert summary["message"]["content"].startswith(
                    "This session is being continued from a previous conversation")
                seen["compaction"] += 1
            content = d.get("message", {}).get("content")
            if isinstance(content, str):
                seen["command"] += "<command-name>" in content
                seen["reminder"] += d.get("isMeta", False) and "<system-reminder>" in content
            elif isinstance(content, list):
                for block in content:
                    seen[block["type"]] += 1
                    if block["type"] == "tool_result" and block.get("is_error"):
                        seen["exit_code_1"] += isinstance(block["content"], str) and block["content"].startswith("Exit code 1")
                    if block["type"] == "tool_use":
                        seen[f"tool:{block['name']}"] += 1
    for shape in ("summary", "flat_agent_ref", "compaction", "command", "reminder", "thinking", "exit_code_1",
                  "tool:Bash", "tool:Read", "tool:Edit", "tool:Write", "tool:Grep", "tool:Task", "tool:Agent"):
        assert seen[shape] >= 1, shape


def test_every_claude_line_has_a_type_the_parser_knows(corpus):
    root, _ = corpus
    source = ClaudeCodeSource()
    reasons: Counter = Counter()
    queued = 0
    for unit in source.discover(root / ".claude"):
        if unit.layout == "jsonl":
            parser = source.open_parser(unit, None)
            with open(unit.path, "rb") as stream:
                for line in read_file_lines(stream):
                    records = parser.feed(line.data, line.position)
                    reasons.update(r.reason for r in records if isinstance(r, Merged))
                    queued += sum(isinstance(r, Message) and r.type == "queue-operation" for r in records)
    # titles, snapshots, the queue, modes, last prompts (no unknown-type); the prompts queued are messages
    assert (reasons, queued) == ({"metadata": 162}, 2)


def test_claude_streaming_split(corpus):
    root, _ = corpus
    groups: dict[str, list[dict]] = defaultdict(list)
    for path in claude_files(root):
        for d in read_lines(path):
            if d["type"] == "assistant":
                groups[d["message"]["id"]].append(d)
    split = [g for g in groups.values() if len(g) > 1]
    assert split
    for lines in split:
        assert len({d["requestId"] for d in lines}) == 1
        assert all("usage" in d["message"] and len(d["message"]["content"]) == 1 for d in lines)
        assert all(b["parentUuid"] == a["uuid"] for a, b in zip(lines, lines[1:]))


def test_claude_subagent_links(corpus):
    root, _ = corpus
    for meta_path in (root / ".claude").rglob("*.meta.json"):
        meta = json.loads(meta_path.read_text())
        session = meta_path.parents[2] / f"{meta_path.parents[1].name}.jsonl"
        agent_id = meta_path.name[len("agent-"):-len(".meta.json")]
        results = [
            d for d in read_lines(session)
            if d["type"] == "user" and isinstance(d.get("toolUseResult"), dict)
            and d["toolUseResult"].get("agentId") == agent_id
        ]
        assert len(results) == 1
        assert results[0]["message"]["content"][0]["tool_use_id"] == meta["toolUseId"]
        assert results[0]["toolUseResult"]["agentType"] == meta["agentType"]


def test_codex_shapes(corpus):
    root, stats = corpus
    rollouts = {path: read_lines(path) for path in codex_files(root)}
    ids = {lines[0]["payload"]["id"] for lines in rollouts.values()}
    seen: Counter = Counter()
    for lines in rollouts.values():
        meta = lines[0]["payload"]
        assert {"id", "cwd", "cli_version", "originator", "source", "git"} <= set(meta)
        assert {"branch", "commit_hash", "repository_url"} <= set(meta["git"])
        if "forked_from_id" in meta:
            assert meta["forked_from_id"] in ids
            assert lines[1]["type"] == "session_meta" and lines[1]["payload"]["id"] == meta["forked_from_id"]
            seen["fork"] += 1
        if isinstance(meta["source"], dict):
            assert meta["source"]["subagent"]["thread_spawn"]["parent_thread_id"] in ids
            seen["spawned"] += 1
        calls: dict[str, str] = {}
        for i, d in enumerate(lines):
            p = d["payload"]
            kind = f"{d['type']}/{p.get('type')}"
            seen[kind] += 1
            if d["type"] == "turn_context":
                assert p["cwd"] and p["model"]
            elif kind == "response_item/reasoning":
                assert p["summary"][0]["text"] and p["encrypted_content"]
            elif kind == "response_item/function_call":
                assert p["name"] in ("exec_command", "shell", "update_plan", "spawn_agent", "wait")
                json.loads(p["arguments"])
                calls[p["call_id"]] = p["name"]
            elif kind == "response_item/function_call_output":
                assert p["call_id"] in calls
                if calls[p["call_id"]] in ("exec_command", "shell") and p["output"].startswith("Exit code: "):
                    seen[f"exit_{codex_exit_code(p['output'])}"] += 1
            elif kind == "response_item/custom_tool_call":
                assert p["name"] == "apply_patch" and p["input"].startswith("*** Begin Patch\n*** Update File: ")
                calls[p["call_id"]] = p["name"]
            elif d["type"] == "compacted" and "replacement_history" in p:
                assert p["replacement_history"]
                assert lines[i + 1]["payload"]["type"] == "context_compacted"
                seen["replacement_history"] += 1
    for shape in ("fork", "spawned", "event_msg/user_message", "response_item/message", "event_msg/agent_message",
                  "event_msg/token_count", "response_item/custom_tool_call_output", "replacement_history",
                  "exit_0", "exit_1"):
        assert seen[shape] >= 1, shape
    assert stats.codex.replayed_lines >= 1


# -- Gemini CLI ----------------------------------------------------------------


@pytest.fixture(scope="module")
def gemini_corpus(tmp_path_factory) -> tuple[Path, GenerateStats]:
    root = tmp_path_factory.mktemp("gemini")
    return root, generate(root, seed=7, target_bytes=1_500_000, claude=False, codex=False, gemini=True)


def test_gemini_same_seed_same_bytes(tmp_path, gemini_corpus):
    root, stats = gemini_corpus
    again = generate(tmp_path, seed=7, target_bytes=1_500_000, claude=False, codex=False, gemini=True)
    assert tree_hashes(tmp_path) == tree_hashes(root) and again == stats


def test_gemini_layout_and_counts_match_stats(gemini_corpus):
    """Recounted from the files: chats as gemini-cli lays them out, each layout
    planted; prompts and answers, calls, failures and rewinds as the stats say."""
    root, stats = gemini_corpus
    chats = sorted((root / ".gemini" / "tmp").rglob("session-*"))
    assert {p.suffix for p in chats} == {".json", ".jsonl"}
    assert len(chats) == stats.gemini.files == stats.gemini.sessions
    counted = Counter()
    for path in chats:
        assert re.fullmatch(r"[0-9a-f]{64}", path.parent.parent.name) and path.parent.name == "chats"
        records = read_lines(path) if path.suffix == ".jsonl" else json.loads(path.read_text())["messages"]
        head = read_lines(path)[0] if path.suffix == ".jsonl" else json.loads(path.read_text())
        assert hashlib.sha256(head["directories"][0].encode()).hexdigest() == path.parent.parent.name
        assert path.name.endswith(head["sessionId"][:8] + path.suffix)
        seen, rewound = set(), None
        if path.suffix == ".jsonl":  # the environment gemini-cli writes first, as the user's
            assert records[1]["$set"]["messages"][0]["content"][0]["text"].startswith("<session_context>")
        opening = next(r for r in records if r.get("type") == "user")["content"][0]["text"]
        assert opening not in FOLLOW_UPS  # a session opens with a task, not "ok go ahead"
        for record in records:
            if "$rewindTo" in record:
                counted["rewinds"] += 1
                rewound = record["$rewindTo"]
            if "id" not in record or record["id"] in seen:
                continue
            seen.add(record["id"])
            calls = [r for r in records if r.get("id") == record["id"] and r.get("toolCalls")]
            for call in (calls[-1]["toolCalls"] if calls else []):
                counted["tool_calls"] += 1
                response = call["result"][0]["functionResponse"]["response"]
                code = re.search(r"\nExit Code: (\d+)\n", response.get("output", ""))
                counted["failed"] += int("error" in response or bool(code) and code.group(1) != "0")
            said = record["type"] == "user" and "text" in record["content"][0] or record["type"] == "gemini" and record["content"]
            counted["messages"] += int(bool(said))
        if rewound:  # the prompt taken back and its answer
            counted["messages"] -= 2
    assert counted == Counter(messages=stats.gemini.messages, tool_calls=stats.gemini.tool_calls,
                              failed=stats.gemini.failed_tool_results, rewinds=stats.gemini.rewinds)
    assert stats.gemini.rewinds > 0


def test_gemini_chats_ingest_as_written(tmp_path, gemini_corpus):
    from datasette_obelisk.store.ingest import ingest

    root, stats = gemini_corpus
    db = tmp_path / "obelisk.db"
    summary = ingest(db, {"gemini": root / ".gemini"})
    assert summary.errors == 0
    import sqlite3

    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*), SUM(message_count) FROM sessions").fetchone() == (
        stats.gemini.sessions, stats.gemini.messages)
    assert conn.execute("SELECT COUNT(*) FROM tool_calls").fetchone() == (stats.gemini.tool_calls,)
    assert conn.execute("SELECT COUNT(*) FROM tool_results WHERE outcome = 'failed'").fetchone() == (
        stats.gemini.failed_tool_results,)
    # no blank row: a reply is typed by what it holds, tool responses repeat their calls' results
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE is_meta = 0 AND COALESCE(text, '') = ''").fetchone() == (0,)
    conn.close()


# -- prompt logs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prompt_log_corpus(tmp_path_factory) -> tuple[Path, GenerateStats]:
    root = tmp_path_factory.mktemp("prompt-logs")
    return root, generate(root, seed=5, target_bytes=1_000_000, prompt_logs=True)


def test_prompt_logs_are_written_after_the_rest_which_stays_the_same(tmp_path, prompt_log_corpus):
    root, stats = prompt_log_corpus
    plain = generate(tmp_path, seed=5, target_bytes=1_000_000)
    with_logs, without = tree_hashes(root), tree_hashes(tmp_path)
    assert sorted(set(with_logs) - set(without)) == [".claude/history.jsonl", ".codex/history.jsonl"]
    assert all(with_logs[name] == digest for name, digest in without.items())
    assert (with_logs[".claude/history.jsonl"], with_logs[".codex/history.jsonl"]) == (
        "0a1679ce15758f112d97a62bff85d766d2a58eee0a58794e4c02d185aba025c1",
        "440d078395587e70702e9d9aac554e2f8e24690005fe7f7f3bd50f7070e01857",
    )
    assert (stats.claude.prompt_log_lines, stats.claude.prompt_log_orphans) == (61, 3)
    assert (stats.codex.prompt_log_lines, stats.codex.prompt_log_orphans) == (35, 1)
    assert (plain.claude.prompt_log_lines, plain.codex.prompt_log_lines) == (0, 0)
    for source, name in (("claude", ".claude"), ("codex", ".codex")):
        log = root / name / "history.jsonl"
        counted, without_log = getattr(stats, source), getattr(plain, source)
        assert counted.files == without_log.files + 1
        assert counted.bytes == without_log.bytes + log.stat().st_size
        assert counted.lines == without_log.lines + len(log.read_bytes().splitlines()) == without_log.lines + counted.prompt_log_lines
    again = tmp_path / "again"
    assert generate(again, seed=5, target_bytes=1_000_000, prompt_logs=True) == stats
    assert tree_hashes(again) == with_logs


def test_the_prompt_logs_hold_the_typed_prompts_of_the_sessions_and_of_cleaned_up_ones(prompt_log_corpus):
    root, stats = prompt_log_corpus
    typed = {}  # (session, ms) -> text of each typed prompt of a main Claude session
    for path in claude_files(root):
        for d in read_lines(path):
            if is_typed_prompt(d) and not d.get("isSidechain") and isinstance(d["message"]["content"], str) \
                    and not d["message"]["content"].startswith("<"):
                moment = datetime.strptime(d["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
                typed[(d["sessionId"], round(moment.timestamp() * 1000))] = d["message"]["content"]
    entries = read_lines(root / ".claude" / "history.jsonl")
    assert all(set(e) == {"display", "pastedContents", "timestamp", "project", "sessionId"} for e in entries)
    assert [e["timestamp"] for e in entries] == sorted(e["timestamp"] for e in entries)
    held = [e for e in entries if (e["sessionId"], e["timestamp"]) in typed]
    assert all(typed[(e["sessionId"], e["timestamp"])] == e["display"] for e in held)
    sessions = {path.stem for path in claude_files(root)}
    gone = {e["sessionId"] for e in entries if e["sessionId"] not in sessions}
    assert len(gone) == stats.claude.prompt_log_orphans == 3
    assert len(held) + sum(e["sessionId"] in gone for e in entries) == len(entries)
    codex = read_lines(root / ".codex" / "history.jsonl")
    assert all(set(e) == {"session_id", "ts", "text"} and isinstance(e["ts"], int) for e in codex)
    rollouts = {path.stem[-36:] for path in codex_files(root)}
    assert len({e["session_id"] for e in codex} - rollouts) == stats.codex.prompt_log_orphans == 1


def test_prompt_logs_ingest_with_the_sessions_they_cleaned_up(tmp_path, prompt_log_corpus):
    import sqlite3

    from datasette_obelisk.query import prompts
    from datasette_obelisk.store.ingest import ingest

    root, stats = prompt_log_corpus
    summary = ingest(tmp_path / "o.db", {"claude": root / ".claude", "codex": root / ".codex"})
    assert (summary.prompts, summary.errors) == (96, 0)
    conn = sqlite3.connect(tmp_path / "o.db")
    assert conn.execute("SELECT source, in_transcript, count(*), count(DISTINCT session_id) FROM browse_prompts "
                        "GROUP BY 1, 2 ORDER BY 1, 2").fetchall() == [
        ("claude", 0, 9, 3), ("claude", 1, 52, 8), ("codex", 0, 2, 1), ("codex", 1, 33, 6)]
    assert prompts.orphan_count(conn) == 4
