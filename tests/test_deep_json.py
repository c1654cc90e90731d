"""A log line is JSON up to 1,024 levels deep (what orjson reads): a tool's input
or output nested that deep is kept, and its line is no error. orjson writes only
255 levels and Python recurses about 1,000 deep, so a tool call nested deeper
than 255 levels cost its whole line (a parser error), in every source."""

import json
import sqlite3

import orjson
import pytest

from datasette_obelisk.sources.lines import dump_json
from datasette_obelisk.store.ingest import ingest


def deep(depth, leaf="leaf"):
    return "[" * depth + json.dumps(leaf, ensure_ascii=False) + "]" * depth


@pytest.mark.parametrize("depth", [1, 254, 256, 300, 1000, 1022])
def test_dump_json_writes_what_orjson_writes_at_any_depth_it_reads(depth):
    text = '{"a":' + deep(depth, "x \u00e9") + ',"b":{"c":[1,2.5,null,true,{}],"d":[]}}'
    value = orjson.loads(text)
    assert dump_json(value) == text.encode()


def claude(tmp_path, depth):
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1", "timestamp": "2026-03-01T10:00:00Z",
         "cwd": "/w", "message": {"role": "user", "content": "run it"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1", "timestamp": "2026-03-01T10:00:01Z",
         "cwd": "/w", "message": {"role": "assistant", "id": "m1", "content": [
             {"type": "text", "text": "running it"},
             {"type": "tool_use", "id": "toolu_1", "name": "mcp__db__put", "input": {"doc": "__DEEP__"}}]}},
        {"type": "user", "uuid": "r1", "parentUuid": "a1", "sessionId": "s1", "timestamp": "2026-03-01T10:00:02Z",
         "cwd": "/w", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}},
    ]
    folder = tmp_path / "claude" / "projects" / "-w"
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines).replace('"__DEEP__"', deep(depth)))
    return "claude", tmp_path / "claude"


def codex(tmp_path, depth, leaf="leaf"):
    thread = "019c0000-0000-7000-8000-000000000002"
    arguments = '{"cmd":"ls","x":' + deep(depth, leaf) + "}"
    lines = [
        {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": thread, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w"}},
        {"timestamp": "2026-03-01T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run it"}]}},
        {"timestamp": "2026-03-01T10:00:02.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": "call_1"}},
        {"timestamp": "2026-03-01T10:00:03.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "put", "arguments": {"doc": "__DEEP__"}, "call_id": "call_2"}},
        {"timestamp": "2026-03-01T10:00:04.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}},
    ]
    day = tmp_path / "codex" / "sessions" / "2026" / "03" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-03-01T10-00-00-{thread}.jsonl").write_text(
        "".join(json.dumps(o) + "\n" for o in lines).replace('"__DEEP__"', deep(depth, leaf)))
    return "codex", tmp_path / "codex"


def gemini(tmp_path, depth):
    lines = [
        {"sessionId": "g1", "projectHash": "p", "startTime": "2026-03-01T10:00:00.000Z", "lastUpdated": "2026-03-01T10:00:00.000Z", "kind": "main"},
        {"id": "m1", "timestamp": "2026-03-01T10:00:01.000Z", "type": "user", "content": [{"text": "run it"}]},
        {"id": "m2", "timestamp": "2026-03-01T10:00:02.000Z", "type": "gemini", "content": "running it",
         "toolCalls": [{"id": "put-1", "name": "put", "args": {"doc": "__DEEP__"}, "status": "success",
                        "timestamp": "2026-03-01T10:00:02.000Z",
                        "result": [{"functionResponse": {"id": "put-1", "name": "put", "response": {"output": "__DEEP__"}}}]}]},
    ]
    chats = tmp_path / "gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-03-01T10-00-g1.jsonl").write_text(
        "".join(json.dumps(o) + "\n" for o in lines).replace('"__DEEP__"', deep(depth)))
    return "gemini", tmp_path / "gemini"


@pytest.mark.parametrize("depth", [300, 1000])
@pytest.mark.parametrize("make", [claude, codex, gemini])
def test_a_tool_call_nested_deeper_than_orjson_writes_keeps_its_line(tmp_path, make, depth):
    source, folder = make(tmp_path, depth)
    db = tmp_path / "o.db"
    summary = ingest(db, {source: folder}, redact=False)
    assert summary.errors == 0, summary.error_samples
    conn = sqlite3.connect(db)
    inputs = [orjson.loads(text) for (text,) in conn.execute("SELECT input_json FROM tool_calls")]
    texts = " ".join(text for (text,) in conn.execute("SELECT text FROM messages"))
    conn.close()
    assert inputs and all(dump_json(value).count(b"[") == depth for value in inputs)
    assert "run it" in texts and ("running it" in texts or "done" in texts)


@pytest.mark.parametrize("depth", [960, 1000, 1018])
def test_pages_and_answers_over_a_call_nested_as_deep_as_it_is_read_do_not_fail(tmp_path, depth):
    """Python decodes JSON about 1,000 levels deep at most (less in a deep stack):
    a stored input nested deeper failed every page and answer that decodes it (500)."""
    import asyncio

    from click.testing import CliRunner
    from datasette.app import Datasette

    from datasette_obelisk.cli import cli

    source, folder = codex(tmp_path, depth)
    db = tmp_path / "o.db"
    assert ingest(db, {source: folder}, redact=False).errors == 0
    session = "codex:019c0000-0000-7000-8000-000000000002"
    urls = [
        f"/-/obelisk/session/{session}", f"/-/obelisk/session/{session}?log=1&shadowed=1&meta=1",
        "/-/obelisk/failures", "/-/obelisk/api/history/search?query=ls", f"/-/obelisk/api/history/read?sessionId={session}",
        f"/-/obelisk/api/session-query/session/{session}", f"/-/obelisk/api/session-query/session/{session}/surface",
        *(f"/-/obelisk/api/session-query/event/{session}/{seq}" for seq in range(1, 5)),
        *(f"/-/obelisk/event/{session}/{seq}" for seq in range(1, 5)),
    ]

    async def statuses():
        ds = Datasette([str(db)])
        await ds.invoke_startup()
        return {url: (await ds.client.get(url)).status_code for url in urls}

    assert {url: status for url, status in asyncio.run(statuses()).items() if status >= 500} == {}
    for args in (["read", session], ["read", session, "--json"]):
        result = CliRunner().invoke(cli, [*args, "--db", str(db)])
        assert result.exit_code == 0, result.output


def test_stored_json_in_a_blob_is_still_decoded(tmp_path):
    # parse_json's depth check must not fail on a value json.loads reads: a BLOB (a
    # database written by another tool) was decoded before the check, then raised TypeError.
    from datasette_obelisk.query import session_query, text
    from datasette_obelisk.query.readonly import connect_readonly

    assert text.parse_json(b'{"a": [1]}') == {"a": [1]}
    deep = b"[" * 401 + b"]" * 401
    assert text.parse_json(deep) == deep
    sid = "0b0b0b0b-0000-4000-8000-000000000002"
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": sid, "timestamp": "2026-01-01T00:00:00Z",
         "cwd": "/w", "message": {"role": "user", "content": "read it"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": sid, "timestamp": "2026-01-01T00:00:01Z",
         "cwd": "/w", "message": {"id": "m1", "role": "assistant", "model": "claude-x", "content": [
             {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/a.py"}}]}},
    ]
    (project / f"{sid}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    with sqlite3.connect(tmp_path / "o.db") as conn:
        conn.execute("UPDATE tool_calls SET input_json = CAST(input_json AS BLOB)")
    answer = session_query.SessionQuery(connect_readonly(str(tmp_path / "o.db"))).read_session(sid)
    calls = [call for event in answer["events"] for call in (event["data"].get("toolCalls") or [])]
    assert [call["input"] for call in calls] == [{"file_path": "/w/a.py"}]


def test_deep_json_writes_and_reads_what_the_json_module_does_at_any_depth():
    """``deep_json.dumps`` / ``loads``: ``json.dumps`` / ``json.loads``'s text and value,
    also nested deeper than they recurse (compared with a raised recursion limit)."""
    import sys

    from datasette_obelisk import deep_json

    value = []
    node = value
    for n in range(3000):
        child = {"n": n, "é": [1.5, None, True, "x\u2028\"\\"], 2: (), "descendants": []}
        node.append(child)
        node = child["descendants"]
    options = [{}, {"indent": 2, "ensure_ascii": False}, {"indent": "\t", "allow_nan": False}, {"default": str}]
    with pytest.raises(RecursionError):
        json.dumps(value)
    texts = [deep_json.dumps(value, **o) for o in options]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        assert texts == [json.dumps(value, **o) for o in options]
        assert [json.dumps(json.loads(text)) for text in texts] == [json.dumps(deep_json.loads(text)) for text in texts]
    finally:
        sys.setrecursionlimit(limit)  # (the values compared deeper than Python recurses, as their text)
    assert deep_json.dumps({"x": 1}, indent=2) == json.dumps({"x": 1}, indent=2)
    with pytest.raises(ValueError):
        deep_json.dumps([[[float("nan")]] * 2] + value, allow_nan=False)
    with pytest.raises(TypeError):
        deep_json.dumps([object()] + value)
    with pytest.raises(ValueError):
        deep_json.loads("[" * 3000 + "1," + "]" * 3000)
