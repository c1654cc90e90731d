"""The paths of tool calls are stored in one spelling per file (``sources.common.normal_path``),
by every source and by m050 in a database written before."""

import json
import shutil
import sqlite3

import orjson

from datasette_obelisk.query import obelisk as o
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.store import writer
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from dbsnapshot import diff, rows, snapshot

CODEX_THREAD = "77777777-7777-4777-8777-777777777777"
GEMINI_HASH = "0b7dfb1274ee51b336813b17f2ddab1f56b6591f723e7314126bbd502c69e9c9"
SECRET = "Zq8vPw3LmN7xR2tY"  # a URL's password: redaction finds it after ``//`` only


def claude_line(uuid, parent, role, content, second, **extra) -> str:
    return json.dumps({
        "type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
        "timestamp": f"2026-03-01T10:00:{second:02}Z", "cwd": "/work/app",
        "message": {"role": role, "content": content}, **extra,
    })


CLAUDE_CALLS = [  # (id, tool, input, the result's toolUseResult)
    ("toolu_edit", "Edit", {"file_path": "/a//b", "old_string": "x", "new_string": "y"}, None),
    ("toolu_write", "Write", {"file_path": "/a/./b/", "content": "z"}, None),
    ("toolu_multi", "MultiEdit", {"file_path": "./rel//x", "edits": []}, None),
    # (Claude Code's NotebookEdit names notebook_path; both keys are read, one file is one row)
    ("toolu_nb", "NotebookEdit", {"notebook_path": "/a//nb.ipynb", "file_path": "/a/nb.ipynb/", "new_source": ""},
     None),
    ("toolu_read", "Read", {"file_path": "/a/b"}, {"type": "text", "file": {"filePath": "/a//b"}}),
    ("toolu_url", "Read", {"file_path": f"/srv/https://u:{SECRET}@github.com//o/r.py"}, None),
]


def write_logs(base) -> dict:
    claude = base / ".claude" / "projects" / "-work-app"
    claude.mkdir(parents=True)
    lines, parent = [claude_line("u0", None, "user", "edit them", 0)], "u0"
    for n, (call, tool, tool_input, details) in enumerate(CLAUDE_CALLS, 1):
        lines.append(claude_line(f"a{n}", parent, "assistant",
                                 [{"type": "tool_use", "id": call, "name": tool, "input": tool_input}], 2 * n))
        lines.append(claude_line(f"r{n}", f"a{n}", "user", [{"type": "tool_result", "tool_use_id": call, "content": "ok"}],
                                 2 * n + 1, **({"toolUseResult": details} if details else {})))
        parent = f"r{n}"
    (claude / "s1.jsonl").write_text("\n".join(lines) + "\n")

    codex = base / ".codex" / "sessions" / "2026" / "03" / "01"
    codex.mkdir(parents=True)
    patch = ("*** Begin Patch\n*** Update File: /x//y\n@@\n-a\n+b\n*** Add File: /x/y/\n+c\n"
             "*** Add File: rel//z.py\n+d\n*** End Patch")

    def envelope(type_, payload, second):
        return orjson.dumps({"timestamp": f"2026-03-01T11:00:{second:02}.000Z", "type": type_, "payload": payload})

    (codex / f"rollout-2026-03-01T11-00-00-{CODEX_THREAD}.jsonl").write_bytes(b"\n".join([
        envelope("session_meta", {"id": CODEX_THREAD, "cwd": "/repo", "timestamp": "2026-03-01T11:00:00.000Z"}, 0),
        envelope("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": "patch it"}]}, 1),
        envelope("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": patch,
                                   "call_id": "c1", "status": "completed"}, 2),
        envelope("response_item", {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done!"}, 3),
    ]) + b"\n")

    gemini = base / ".gemini" / "tmp" / GEMINI_HASH / "chats"
    gemini.mkdir(parents=True)

    def call(call_id, name, args):
        return {"id": call_id, "name": name, "args": args, "status": "success", "timestamp": "2026-03-01T12:00:03.000Z",
                "result": [{"functionResponse": {"id": call_id, "name": name, "response": {"output": "ok"}}}]}

    (gemini / "session-2026-03-01T12-00-gemini01.jsonl").write_bytes(b"\n".join(orjson.dumps(r) for r in [
        {"sessionId": "gemini01", "projectHash": GEMINI_HASH, "startTime": "2026-03-01T12:00:00.000Z", "kind": "main"},
        {"id": "u1", "timestamp": "2026-03-01T12:00:01.000Z", "type": "user", "content": [{"text": "write it"}]},
        {"id": "g1", "timestamp": "2026-03-01T12:00:02.000Z", "type": "gemini", "content": "", "model": "gemini-3",
         "toolCalls": [call("w1", "write_file", {"file_path": "/g//h/./i.txt", "content": "x"}),
                       call("m1", "read_many_files", {"paths": ["/g/h/i.txt/", "/g/j", "/g//j"]})]},
    ]) + b"\n")
    return {"claude": base / ".claude", "codex": base / ".codex", "gemini": base / ".gemini"}


CALL_FILES = "SELECT tool_call_id, path FROM tool_call_files ORDER BY tool_call_id, rowid"
CALL_PATHS = "SELECT id, file_path FROM tool_calls ORDER BY id"
RESULT_PATHS = "SELECT tool_use_id, file_path FROM tool_results ORDER BY tool_use_id"


def url_path(db) -> str:
    [(path,)] = rows(db, "SELECT path FROM tool_call_files WHERE tool_call_id = 'toolu_url'")
    return path


def test_every_source_stores_a_path_in_one_spelling(tmp_path):
    db = tmp_path / "o.db"
    ingest(db, write_logs(tmp_path))
    codex, gemini = f"codex:{CODEX_THREAD}:c1", "gemini:gemini01"
    url = url_path(db)  # redacted, then made normal
    assert url.startswith("/srv/https:/u:[REDACTED:url-credentials:") and url.endswith("]@github.com/o/r.py")
    assert rows(db, CALL_FILES) == sorted([
        (codex, "/x/y"), (codex, "/repo/rel/z.py"),
        (f"{gemini}:m1", "/g/h/i.txt"), (f"{gemini}:m1", "/g/j"),
        (f"{gemini}:w1", "/g/h/i.txt"),
        ("toolu_edit", "/a/b"), ("toolu_multi", "rel/x"), ("toolu_nb", "/a/nb.ipynb"), ("toolu_read", "/a/b"),
        ("toolu_url", url), ("toolu_write", "/a/b"),
    ], key=lambda row: row[0])
    assert rows(db, CALL_PATHS) == [
        (codex, "/x/y"), (f"{gemini}:m1", "/g/h/i.txt"), (f"{gemini}:w1", "/g/h/i.txt"),
        ("toolu_edit", "/a/b"), ("toolu_multi", "rel/x"), ("toolu_nb", "/a/nb.ipynb"), ("toolu_read", "/a/b"),
        ("toolu_url", url), ("toolu_write", "/a/b"),
    ]
    # A result names the file as its call does (a Read's own file.filePath too).
    assert rows(db, RESULT_PATHS) == rows(db, CALL_PATHS)
    # The call's input keeps the agent's spelling.
    assert rows(db, "SELECT json_extract(input_json, '$.file_path') FROM tool_calls WHERE id = 'toolu_edit'") == [
        ("/a//b",)]
    assert "*** Update File: /x//y" in rows(db, "SELECT input_json FROM tool_calls WHERE id = ?", [codex])[0][0]
    assert rows(db, "SELECT json_extract(input_json, '$.file_path') FROM tool_calls WHERE id = ?", [f"{gemini}:w1"]) == [
        ("/g//h/./i.txt",)]
    with connect_readonly(db) as conn:
        for spelled in ("/a/b", "/a//b", "/a/./b/"):
            found = o.file_history(conn, spelled)
            assert [r["toolCall"]["id"] for r in found] == ["toolu_edit", "toolu_write", "toolu_read"]
            assert o.file_history_count(conn, spelled) == 3
        assert [r["toolCall"]["id"] for r in o.file_history(conn, "/x/y")] == [codex]
        assert [r["toolCall"]["id"] for r in o.file_history(conn, "/g/h/i.txt")] == [f"{gemini}:m1", f"{gemini}:w1"]


def test_a_database_that_kept_the_agents_spelling_migrates_to_what_an_ingest_stores(tmp_path, monkeypatch):
    roots = write_logs(tmp_path)
    fresh, old = tmp_path / "fresh.db", tmp_path / "old.db"
    ingest(fresh, roots)
    shutil.copyfile(f"{fresh}.redaction-key", f"{old}.redaction-key")  # (the same markers)
    with monkeypatch.context() as patched:  # the writer before: paths as the agent spelled them
        patched.setattr(writer, "normal_path", lambda path: path)
        ingest(old, roots)
    assert ("toolu_edit", "/a//b") in rows(old, CALL_FILES)
    assert rows(old, "SELECT path FROM tool_call_files WHERE tool_call_id = ? ORDER BY rowid", [f"codex:{CODEX_THREAD}:c1"]) == [
        ("/x//y",), ("/x/y/",), ("/repo/rel/z.py",)]
    assert ("toolu_read", "/a//b") in rows(old, RESULT_PATHS)
    conn = sqlite3.connect(old)
    with conn:
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm050_normalise_file_paths'")
    conn.close()
    open_db(old).close()
    for sql in (CALL_FILES, CALL_PATHS, RESULT_PATHS):
        assert rows(old, sql) == rows(fresh, sql)
    assert url_path(old) == url_path(fresh) and SECRET not in url_path(old)
    before, after = snapshot(fresh), snapshot(old)
    assert before == after, diff(before, after)
