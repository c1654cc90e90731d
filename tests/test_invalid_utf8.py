"""A log line holding bytes that are not UTF-8 (a Latin-1 byte in a tool's output, a
character cut short) is kept, those bytes read as U+FFFD, and reported with its file and
line: every source, a compressed Codex rollout and a Gemini chat document too."""

import io
import sqlite3

import orjson
import pytest
import zstandard
from click.testing import CliRunner
from datasette.app import Datasette

from datasette_obelisk.cli import cli
from datasette_obelisk.query.dashboard import totals
from datasette_obelisk.sources.lines import original_offset, read_lines, repair_utf8, repaired_offset
from datasette_obelisk.store import reader
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from dbsnapshot import rows

CLAUDE_SESSION = "5a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
CODEX_THREAD = "019fc8be-3658-7ca3-9e29-00000000aaaa"
ARCHIVED_THREAD = "019fc8be-3658-7ca3-9e29-00000000bbbb"
GEMINI_HASH = "0b7dfb1274ee51b336813b17f2ddab1f56b6591f723e7314126bbd502c69e9c9"
AT = "2026-03-01T10:00:0{}.000Z"


def dumps(value) -> bytes:
    return orjson.dumps(value)


def claude_log() -> bytes:
    def line(kind, uuid, parent, second, content):
        return dumps({
            "type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": CLAUDE_SESSION, "cwd": "/w",
            "timestamp": AT.format(second), "message": {"role": kind, "content": content},
        }) + b"\n"

    return (
        line("user", "u1", None, 1, "Create a cafXX function")  # a Latin-1 é
        + line("assistant", "a1", "u1", 2, [{"type": "text", "text": "Done: YY!"}])  # a euro sign cut short
        + line("user", "u2", "a1", 3, "thanks")
    ).replace(b"XX", b"\xe9").replace(b"YY", b"\xe2\x82")


def codex_log(thread: str) -> bytes:
    def line(second, kind, payload):
        return dumps({"timestamp": AT.format(second), "type": kind, "payload": payload}) + b"\n"

    return (
        line(0, "session_meta", {"id": thread, "timestamp": AT.format(0), "cwd": "/w",
                                 "originator": "codex_cli_rs", "cli_version": "0.146.0"})
        + line(1, "response_item", {"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": "list the files"}]})
        + line(2, "response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": "Found ZZ files."}]})
    ).replace(b"ZZ", b"\xff\xfe")


def gemini_jsonl() -> bytes:
    return (
        dumps({"sessionId": "g-jsonl", "projectHash": GEMINI_HASH, "startTime": AT.format(0),
               "lastUpdated": AT.format(0), "kind": "main"}) + b"\n"
        + dumps({"id": "g1", "timestamp": AT.format(1), "type": "user", "content": [{"text": "say hello"}]}) + b"\n"
        + dumps({"id": "g2", "timestamp": AT.format(2), "type": "gemini", "content": "HXXllo!",
                 "model": "gemini-3-flash-preview"}) + b"\n"
    ).replace(b"XX", b"\xe9")


def gemini_document() -> bytes:
    return (
        b'{\n  "sessionId": "g-doc",\n  "projectHash": "' + GEMINI_HASH.encode() + b'",\n'
        b'  "startTime": "2026-03-01T10:00:00.000Z",\n  "lastUpdated": "2026-03-01T10:00:09.000Z",\n'
        b'  "messages": [\n'
        b'    {"id": "m1", "timestamp": "2026-03-01T10:00:01.000Z", "type": "user", "content": "na\xefve caf\xe9"},\n'
        b'    {"id": "m2", "timestamp": "2026-03-01T10:00:02.000Z", "type": "gemini", "content": "ok"}\n'
        b'  ]\n}\n'
    )


def lay_out(root):
    claude = root / "claude" / "projects" / "-w"
    claude.mkdir(parents=True)
    (claude / f"{CLAUDE_SESSION}.jsonl").write_bytes(claude_log())
    sessions = root / "codex" / "sessions" / "2026" / "03" / "01"
    sessions.mkdir(parents=True)
    (sessions / f"rollout-2026-03-01T10-00-00-{CODEX_THREAD}.jsonl").write_bytes(codex_log(CODEX_THREAD))
    archived = root / "codex" / "archived_sessions"
    archived.mkdir(parents=True)
    (archived / f"rollout-2026-03-01T10-00-00-{ARCHIVED_THREAD}.jsonl.zst").write_bytes(
        zstandard.ZstdCompressor().compress(codex_log(ARCHIVED_THREAD)))
    chats = root / "gemini" / "tmp" / GEMINI_HASH / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-03-01T10-00-g-jsonl.jsonl").write_bytes(gemini_jsonl())
    (chats / "session-2026-03-01T10-00-g-doc.json").write_bytes(gemini_document())
    return {name: root / name for name in ("claude", "codex", "gemini")}


FFFD = "\ufffd"
PATHS = {
    "claude": f"claude/projects/-w/{CLAUDE_SESSION}.jsonl",
    "codex": f"codex/sessions/2026/03/01/rollout-2026-03-01T10-00-00-{CODEX_THREAD}.jsonl",
    "archived": f"codex/archived_sessions/rollout-2026-03-01T10-00-00-{ARCHIVED_THREAD}.jsonl.zst",
    "gemini": "gemini/tmp/" + GEMINI_HASH + "/chats/session-2026-03-01T10-00-g-jsonl.jsonl",
    "document": "gemini/tmp/" + GEMINI_HASH + "/chats/session-2026-03-01T10-00-g-doc.json",
}


def relative(root, path: str) -> str:
    return path.removeprefix(str(root) + "/")


def test_each_source_keeps_the_line_and_reports_it(tmp_path):
    roots = lay_out(tmp_path / "logs")
    db = tmp_path / "o.db"
    summary = ingest(db, roots)
    assert rows(db, f"SELECT source, line_no, text FROM messages WHERE instr(text, '{FFFD}') ORDER BY source, line_no, session_id") == [
        ("claude", 1, f"Create a caf{FFFD} function"),
        ("claude", 2, f"Done: {FFFD}!"),
        ("codex", 3, f"Found {FFFD}{FFFD} files."),
        ("codex", 3, f"Found {FFFD}{FFFD} files."),
        ("gemini", 1, f"na{FFFD}ve caf{FFFD}"),
        ("gemini", 3, f"H{FFFD}llo!"),
    ]
    assert (summary.errors, summary.error_samples, summary.repaired) == (0, [], 6)
    document = gemini_document()
    m1 = document.index(b'{"id": "m1"')
    item = document[m1:document.index(b"}", m1) + 1]
    errors = [(relative(tmp_path / "logs", path), *rest) for path, *rest in rows(
        db, "SELECT path, line_no, byte_offset, byte_length, reason FROM ingest_errors ORDER BY path")]
    claude, codex, gemini = claude_log().split(b"\n"), codex_log(CODEX_THREAD).split(b"\n"), gemini_jsonl().split(b"\n")
    assert errors == [
        (PATHS["claude"], 1, 0, len(claude[0]),
         f"kept with repairs: 1 byte that is not UTF-8 read as U+FFFD (the first {claude[0].index(b'caf') + 3} bytes into the line)"),
        (PATHS["claude"], 2, len(claude[0]) + 1, len(claude[1]),
         f"kept with repairs: 2 bytes that are not UTF-8 read as U+FFFD (the first {claude[1].index(b'Done') + 6} bytes into the line)"),
        (PATHS["archived"], 3, len(codex[0]) + len(codex[1]) + 2 + len(ARCHIVED_THREAD) - len(CODEX_THREAD), len(codex[2]),
         f"kept with repairs: 2 bytes that are not UTF-8 read as U+FFFD in 2 places (the first {codex[2].index(b'Found') + 6} bytes into the line)"),
        (PATHS["codex"], 3, len(codex[0]) + len(codex[1]) + 2, len(codex[2]),
         f"kept with repairs: 2 bytes that are not UTF-8 read as U+FFFD in 2 places (the first {codex[2].index(b'Found') + 6} bytes into the line)"),
        (PATHS["document"], 1, m1, len(item),
         f"kept with repairs: 2 bytes that are not UTF-8 read as U+FFFD in 2 places (the first {item.index(b'na') + 2} bytes into the item)"),
        (PATHS["gemini"], 3, len(gemini[0]) + len(gemini[1]) + 2, len(gemini[2]),
         f"kept with repairs: 1 byte that is not UTF-8 read as U+FFFD (the first {gemini[2].index(b'H') + 1} bytes into the line)"),
    ]
    # kept lines count as the lines they are (stored or merged), none as failed
    assert [(relative(tmp_path / "logs", path), *counts) for path, *counts in rows(
        db, "SELECT path, lines_read, lines_stored, lines_merged, lines_failed FROM source_files ORDER BY path")] == [
        (PATHS["claude"], 3, 3, 0, 0),
        (PATHS["archived"], 3, 2, 1, 0),
        (PATHS["codex"], 3, 2, 1, 0),
        (PATHS["document"], 2, 2, 0, 0),
        (PATHS["gemini"], 3, 2, 1, 0),
    ]
    # each stored item of the document is where it lies on disk (raw reads it there)
    assert rows(db, "SELECT line_no, byte_offset, byte_length FROM messages WHERE session_id = 'gemini:g-doc' ORDER BY line_no") == [
        (1, m1, len(item)), (2, m2 := document.index(b'{"id": "m2"'), document.index(b"}", m2) + 1 - m2)]
    conn = sqlite3.connect(db)
    assert totals(conn)["files"]["repaired_lines"] == 6
    conn.close()


def test_search_finds_the_words_around_the_replacement(tmp_path):
    roots = lay_out(tmp_path / "logs")
    db = tmp_path / "o.db"
    ingest(db, roots)
    assert rows(db, "SELECT m.uuid FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                    "WHERE messages_fts MATCH 'caf' ORDER BY m.uuid") == [("gemini:g-doc:m1",), ("u1",)]


@pytest.mark.asyncio
async def test_the_overview_links_the_repaired_lines_apart_from_those_that_could_not_be_read(tmp_path):
    roots = lay_out(tmp_path / "logs")
    db = tmp_path / "o.db"
    ingest(db, roots)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO ingest_errors (file_id, path, line_no, byte_offset, byte_length, reason, created_at) "
                 "SELECT id, path, 9, 0, 1, 'invalid JSON: unexpected end', '2026-03-01' FROM source_files LIMIT 1")
    conn.execute("UPDATE source_files SET lines_failed = 1 WHERE id = (SELECT MIN(id) FROM source_files)")
    conn.commit()
    conn.close()
    overview = (await Datasette([str(db)]).client.get("/-/obelisk/overview")).text
    assert ('<a href="/o/ingest_errors?reason__notlike=kept+with+repairs%3A%25">1 line could not be read</a>; '
            '<a href="/o/ingest_errors?reason__startswith=kept+with+repairs%3A">6 lines were kept with bytes that '
            "are not UTF-8 shown as \ufffd</a>.") in overview


def test_the_cli_warns_and_exits_zero(tmp_path):
    roots = lay_out(tmp_path / "logs")
    db = tmp_path / "o.db"
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--claude-dir", str(roots["claude"]), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "0 errors (2 lines kept with bytes that are not UTF-8 read as U+FFFD)" in result.stdout
    log = roots["claude"] / "projects" / "-w" / f"{CLAUDE_SESSION}.jsonl"
    assert f"  warning: {log}:1: kept with repairs: 1 byte that is not UTF-8 read as U+FFFD" in result.stderr
    db.unlink()
    result = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--claude-dir", str(roots["claude"]), "--json"])
    summary = orjson.loads(result.stdout)
    assert (result.exit_code, summary["errors"], summary["repaired"]) == (0, 0, 2)
    assert [(s["path"], s["line"]) for s in summary["repaired_samples"]] == [(str(log), 1), (str(log), 2)]


def test_a_line_that_fails_all_the_same_says_both(tmp_path):
    root = tmp_path / "claude" / "projects" / "-w"
    root.mkdir(parents=True)
    bad = b'{"type": "user", "uuid": \xe9}'  # not UTF-8, outside a string: no JSON with U+FFFD either
    (root / f"{CLAUDE_SESSION}.jsonl").write_bytes(claude_log().split(b"\n")[2] + b"\n" + bad + b"\n")
    db = tmp_path / "o.db"
    summary = ingest(db, {"claude": tmp_path / "claude"})
    assert (summary.errors, summary.repaired) == (1, 0)
    [(line_no, reason)] = rows(db, "SELECT line_no, reason FROM ingest_errors")
    assert line_no == 2
    assert reason.startswith("invalid JSON: unexpected character")
    assert reason.endswith("; 1 byte that is not UTF-8 read as U+FFFD (the first 25 bytes into the line)")
    assert rows(db, "SELECT lines_read, lines_stored, lines_failed FROM source_files") == [(2, 1, 1)]


def test_an_unterminated_last_line_is_settled_with_repairs(tmp_path):
    root = tmp_path / "claude" / "projects" / "-w"
    root.mkdir(parents=True)
    whole = claude_log().split(b"\n")
    (root / f"{CLAUDE_SESSION}.jsonl").write_bytes(whole[2] + b"\n" + whole[0])  # (no newline after it)
    db = tmp_path / "o.db"
    summary = ingest(db, {"claude": tmp_path / "claude"})
    assert (summary.errors, summary.repaired) == (0, 1)
    assert rows(db, "SELECT uuid, text FROM messages ORDER BY line_no") == [
        ("u2", "thanks"), ("u1", f"Create a caf{FFFD} function")]


def test_a_database_that_lost_such_lines_reads_their_files_again(tmp_path, monkeypatch):
    roots = lay_out(tmp_path / "logs")
    fresh, old = tmp_path / "fresh.db", tmp_path / "old.db"
    ingest(fresh, roots)
    with monkeypatch.context() as patched:  # the reader before: such a line was an error, its message lost
        patched.setattr(reader, "repair_utf8", lambda data: None)
        summary = ingest(old, roots)
    assert (summary.errors, summary.repaired) == (6, 0)
    assert rows(old, f"SELECT COUNT(*) FROM messages WHERE instr(text, '{FFFD}')") == [(0,)]
    conn = sqlite3.connect(old)
    with conn:
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm051_reread_invalid_utf8_lines'")
    conn.close()
    open_db(old).close()
    assert rows(old, "SELECT COUNT(*) FROM source_files WHERE parser_version IS NULL") == [(5,)]
    ingest(old, roots)
    keep = "SELECT source, session_id, uuid, line_no, byte_offset, text FROM messages ORDER BY uuid"
    assert rows(old, keep) == rows(fresh, keep)
    errors = "SELECT path, line_no, byte_offset, byte_length, reason FROM ingest_errors ORDER BY path, line_no"
    assert rows(old, errors) == rows(fresh, errors)


def test_repair_is_strict_first_and_maps_places_back():
    assert repair_utf8(b'{"a": "plain"}') is None
    assert repair_utf8('{"a": "café €"}'.encode()) is None
    data = b"ab\xe9cd\xe2\x82ef\xf0"
    fixed, spans = repair_utf8(data)
    assert (fixed.decode(), spans) == (f"ab{FFFD}cd{FFFD}ef{FFFD}", [(2, 3), (5, 7), (9, 10)])
    assert [original_offset(spans, repaired_offset(spans, at)) for at in (0, 2, 3, 5, 7, 9, 10)] == [0, 2, 3, 5, 7, 9, 10]
    assert original_offset(spans, 3) == 2  # (inside a replacement character: the bytes it replaced)


def test_read_lines_is_unchanged_for_a_parser():
    """Parsers are handed bytes by the reader; read_lines itself keeps the bytes of the file."""
    [line] = read_lines(io.BytesIO(b'{"a": "\xe9"}\n'))
    assert line.data == b'{"a": "\xe9"}'


def test_a_saved_tool_output_is_reported_too(tmp_path):
    """A tool's output saved to a file of its own was read with U+FFFD already, silently."""
    root = tmp_path / "claude" / "projects" / "-w"
    (root / CLAUDE_SESSION / "tool-results").mkdir(parents=True)
    (root / f"{CLAUDE_SESSION}.jsonl").write_bytes(claude_log().split(b"\n")[2] + b"\n")
    output = root / CLAUDE_SESSION / "tool-results" / "toolu_01Out.txt"
    output.write_bytes(b"binary \x89PNG output\n")
    db = tmp_path / "o.db"
    summary = ingest(db, {"claude": tmp_path / "claude"})
    assert (summary.errors, summary.repaired) == (0, 1)
    assert rows(db, "SELECT text FROM messages WHERE type = 'tool_output'") == [(f"binary {FFFD}PNG output\n",)]
    assert rows(db, "SELECT path, line_no, byte_offset, byte_length, reason FROM ingest_errors") == [
        (str(output), 1, 0, len(output.read_bytes()), "kept with repairs: 1 byte that is not UTF-8 read as U+FFFD (the first 7 bytes into the file)")]


FORK_THREAD = "019fc8be-3658-7ca3-9e29-00000000cccc"


def test_a_codex_fork_of_such_a_log_replays_its_lines_once(tmp_path):
    """The fork's copy of its parent's lines, the repaired one among them, is known as a
    replay of the parent's log (compared with its lines read as the reader reads them)."""
    parent = codex_log(CODEX_THREAD)
    start = "2026-08-04T11:00:00.000Z"  # (after the fork's thread was made: its id is a UUIDv7)
    copied = b"".join(b'{"timestamp":"' + start.encode() + line[line.index(b'",') :] + b"\n"
                      for line in parent.splitlines())
    meta = dumps({"timestamp": start, "type": "session_meta", "payload": {
        "id": FORK_THREAD, "timestamp": start, "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.146.0",
        "forked_from_id": CODEX_THREAD}}) + b"\n"
    own = dumps({"timestamp": "2026-08-04T11:01:00.000Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "the fork's own"}]}}) + b"\n"
    sessions = tmp_path / "codex" / "sessions" / "2026" / "03" / "01"
    sessions.mkdir(parents=True)
    (sessions / f"rollout-2026-03-01T10-00-00-{CODEX_THREAD}.jsonl").write_bytes(parent)
    (sessions / f"rollout-2026-03-01T11-00-00-{FORK_THREAD}.jsonl").write_bytes(meta + copied + own)
    db = tmp_path / "o.db"
    summary = ingest(db, {"codex": tmp_path / "codex"})
    assert (summary.errors, summary.repaired) == (0, 2)  # (the line, and its copy in the fork)
    assert rows(db, "SELECT session_id, text FROM messages WHERE role IN ('user', 'assistant') ORDER BY session_id, line_no") == [
        (f"codex:{CODEX_THREAD}", "list the files"),
        (f"codex:{CODEX_THREAD}", f"Found {FFFD}{FFFD} files."),
        (f"codex:{FORK_THREAD}", "the fork's own"),
    ]


def test_a_codex_fork_of_a_fork_without_its_parent_replays_such_a_line_once(tmp_path):
    """A fork of a fork read without its parent's log: its copy of the grandparent's
    history, a line of it not UTF-8, is a replay of the grandparent's log, as it is
    when every line is UTF-8 (the chain of the copy's lines, compared with the lines
    of its own file read again, reads them as the reader does)."""
    from conftest import CORPUS
    import test_codex_fork_chain as chain

    rollout = CORPUS / chain.ROLLOUT
    if not rollout.exists():
        import pytest

        pytest.skip(f"shared corpus not found at {CORPUS}")
    grandparent = rollout.read_bytes().replace(b"I will inspect", b"I will \xe9inspect", 1)
    assert grandparent.count(b"\xe9") == 1

    def restamp(line: bytes, at: str) -> bytes:  # (bytes that are not UTF-8 are no JSON for json.loads)
        return b'{"timestamp":"' + at.encode() + line[line.index(b'",'):]

    def fork(parent, me, parent_id, start, own_at, prompt):
        meta = {"id": me, "timestamp": start, "cwd": "/workspace/synthetic-project", "originator": "codex_cli_rs",
                "cli_version": "0.0.0-test", "source": "cli", "forked_from_id": parent_id, "model_provider": "synthetic"}
        out = chain._line("session_meta", meta, start)
        out += b"".join(restamp(line, start) for line in parent.splitlines(keepends=True))
        out += chain._line("event_msg", {"type": "user_message", "message": prompt}, own_at)
        out += chain._line("response_item", {"type": "message", "role": "user",
                                             "content": [{"type": "input_text", "text": prompt}]}, own_at)
        out += chain._line("event_msg", {"type": "agent_message", "message": "Answer to " + prompt}, own_at[:-5] + "5.000Z")
        return out

    p = fork(grandparent, chain.P, chain.G, "2026-01-02T04:00:00.000Z", "2026-01-02T04:01:00.000Z", "P's own prompt")
    c = fork(p, chain.C, chain.P, "2026-01-02T05:00:00.000Z", "2026-01-02T05:01:00.000Z", "C's own prompt")
    home = tmp_path / ".codex" / "sessions" / "2026" / "01" / "02"
    home.mkdir(parents=True)
    (home / f"rollout-2026-01-02T03-04-05-{chain.G}.jsonl").write_bytes(grandparent)
    (home / f"rollout-2026-01-02T05-00-00-{chain.C}.jsonl").write_bytes(c)
    db = tmp_path / "o.db"
    summary = ingest(db, {"codex": tmp_path / ".codex"})
    assert (summary.errors, summary.repaired) == (0, 2)
    counts = ("SELECT session_id, COUNT(*), SUM(json_extract(meta_json, '$.copied_from') IS NOT NULL) "
              "FROM messages GROUP BY session_id ORDER BY session_id")
    assert rows(db, counts) == [(f"codex:{chain.G}", 9, 0), (f"codex:{chain.C}", 4, 2)]
    assert rows(db, "SELECT text FROM messages WHERE session_id = ? AND instr(text, ?)", [f"codex:{chain.G}", FFFD]) == [
        (f"I will {FFFD}inspect the synthetic directory.",)]
    assert rows(db, "SELECT text, COUNT(*) FROM messages WHERE text != '' GROUP BY text HAVING COUNT(*) > 1") == []
