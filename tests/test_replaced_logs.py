"""A log replaced by another file at its path (a new file renamed over it, as Claude Code does
when it prunes a session log to its last compaction) is the old file gone and a new one
arrived: the archive keeps the rows only the old one held, just as when an ingest runs between
the old file's deletion and the new one's arrival."""

import json
import os
import sqlite3

import pytest

from datasette_obelisk.store.ingest import ingest
from dbsnapshot import diff, rows, snapshot

SESSION = "5e551011-0000-4000-8000-00000000abcd"
THREAD = "019c0000-0000-7000-8000-0000000000aa"


def jsonl(*objects) -> bytes:
    return b"".join((json.dumps(o) + "\n").encode() for o in objects)


CLAUDE = {"sessionId": SESSION, "isSidechain": False, "cwd": "/p", "version": "2.1.334"}


def said(kind: str, uuid: str, parent: str, minute: str, text: str) -> dict:
    """A Claude Code user or assistant line of ``SESSION`` at 2026-12-01T``minute``Z."""
    if kind == "user":
        message = {"role": kind, "content": text}
    else:  # (a1's API message is msg_1)
        message = {"role": kind, "id": f"msg_{uuid[1:]}", "content": [{"type": "text", "text": text}]}
    return {**CLAUDE, "type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": f"2026-12-01T{minute}Z",
            "message": message}


def compaction(n: int, after: str, minute: str, topic: str, pre_tokens: int) -> tuple[dict, dict]:
    """A compact boundary ``b<n>`` after ``after``, and its summary ``s<n>`` about ``topic``."""
    boundary = {**CLAUDE, "type": "system", "subtype": "compact_boundary", "uuid": f"b{n}", "parentUuid": None,
                "logicalParentUuid": after, "timestamp": f"2026-12-01T{minute}:00Z",
                "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": pre_tokens}}
    summary = {**said("user", f"s{n}", f"b{n}", f"{minute}:01",
                      f"This session is being continued from a previous conversation. Summary: {topic}"),
               "isCompactSummary": True}
    return boundary, summary


def claude_generations():
    """A Claude Code log before and after its transcript cleanup: the new one holds the rows
    from the last compact boundary on, with a message kept from before it and the latest
    metadata line."""
    u1 = said("user", "u1", None, "10:00:00", "Old question about zebras")
    a1 = said("assistant", "a1", "u1", "10:00:05", "Old answer about zebras")
    u0 = said("user", "u0", "a1", "10:30:00", "A word kept across the compaction")
    b1, s1 = compaction(1, "u0", "11:00", "zebras", 100)
    u2 = said("user", "u2", "s1", "11:01:00", "New question about lions")
    mode = {"type": "permission-mode", "permissionMode": "default", "sessionId": SESSION}
    return jsonl(u1, a1, u0, mode, b1, s1, u2), jsonl(u0, b1, s1, u2, mode)


def codex_generations():
    """A Codex rollout, then the same path holding a rewritten rollout: its session_meta and
    last turn, and a new one."""
    def item(at, kind, payload):
        return {"timestamp": at, "type": kind, "payload": payload}

    def said(at, role, text):
        kind = "input_text" if role == "user" else "output_text"
        return item(at, "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]})

    meta = item("2026-12-01T10:00:00.000Z", "session_meta",
                {"id": THREAD, "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/w", "cli_version": "0.99.0"})
    first = [said("2026-12-01T10:00:01.000Z", "user", "Old question about zebras"),
             said("2026-12-01T10:00:02.000Z", "assistant", "Old answer about zebras")]
    last = [said("2026-12-01T10:05:00.000Z", "user", "Second question about giraffes"),
            said("2026-12-01T10:05:02.000Z", "assistant", "Second answer about giraffes")]
    new = [said("2026-12-01T11:00:00.000Z", "user", "New question about lions")]
    return jsonl(meta, *first, *last), jsonl(meta, *last, *new)


CASES = {
    "claude": (lambda base: base / "projects" / "-p" / f"{SESSION}.jsonl", claude_generations),
    "codex": (lambda base: base / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl",
              codex_generations),
}


def replace_over(path, data: bytes) -> None:
    """Written beside the log, then renamed over it (a new inode), as Claude Code prunes a log."""
    tmp = path.with_name(path.name + ".compact.tmp.deadbeef")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def files(db, base):
    return rows(db, "SELECT substr(path, ?), missing, lines_read, lines_stored, lines_merged, lines_failed "
                    "FROM source_files ORDER BY id", [len(str(base)) + 1])


def ingested_once(folder, source: str, where, content: bytes):
    """A database (``<folder>.db``) holding one log of ``source`` written with ``content``
    where ``where`` puts it under ``folder/<source>``: the database, that folder and the log."""
    base = folder / source
    path = where(base)
    path.parent.mkdir(parents=True)
    db = folder.parent / f"{folder.name}.db"
    path.write_bytes(content)
    ingest(db, {source: base})
    return db, base, path


@pytest.mark.parametrize("source", sorted(CASES))
def test_a_log_replaced_at_its_path_keeps_the_rows_only_the_old_one_held(tmp_path, source):
    where, generations = CASES[source]
    old, new = generations()
    # Deleted, found gone by an ingest, then the new file: the archived rows stay.
    apart, base, path = ingested_once(tmp_path / "apart", source, where, old)
    path.unlink()
    assert ingest(apart, {source: base}).files_missing == 1
    path.write_bytes(new)
    ingest(apart, {source: base})
    # Replaced with no ingest in between: the same end.
    at_once, base, path = ingested_once(tmp_path / "at_once", source, where, old)
    first = snapshot(at_once)
    inode = os.stat(path).st_ino
    replace_over(path, new)
    assert os.stat(path).st_ino != inode
    summary = ingest(at_once, {source: base})
    assert diff(snapshot(at_once), snapshot(apart)) == []
    assert files(at_once, tmp_path / "at_once") == files(apart, tmp_path / "apart")
    assert (summary.files_replayed, summary.files_missing, summary.errors) == (0, 1, 0)  # (the old one is gone)
    # Nothing the old log held is lost, and the session keeps its title and start.
    assert {m["text"] for m in first["messages"]} <= {r[0] for r in rows(at_once, "SELECT text FROM messages")}
    assert [(s["title"], s["started_at"]) for s in snapshot(at_once)["sessions"]] == [
        (s["title"], s["started_at"]) for s in first["sessions"]]
    assert rows(at_once, "SELECT availability FROM sessions") == [("live",)]
    assert ingest(at_once, {source: base}).files_skipped == 1


def test_a_claude_log_pruned_after_a_compaction_keeps_its_first_prompt_and_title(tmp_path):
    where, generations = CASES["claude"]
    old, new = generations()
    db, base, path = ingested_once(tmp_path / "one", "claude", where, old)
    replace_over(path, new)
    ingest(db, {"claude": base})
    assert rows(db, "SELECT uuid FROM messages ORDER BY seq") == [("u1",), ("a1",), ("u0",), ("b1",), ("s1",), ("u2",)]
    assert rows(db, "SELECT title, title_source FROM sessions") == [("Old question about zebras", "first_prompt")]
    # The rows the new file holds again are its own; the gone file keeps the others.
    assert rows(db, "SELECT m.uuid, f.path LIKE '%#gone-%' FROM messages m JOIN source_files f ON f.id = m.file_id "
                    "ORDER BY m.seq") == [("u1", 1), ("a1", 1), ("u0", 0), ("b1", 0), ("s1", 0), ("u2", 0)]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'zebras'").fetchone()[0] >= 2
    finally:
        conn.close()


# Claude Code 2.1.3xx with CLAUDE_CODE_TRANSCRIPT_LOCAL_GC=keep (a print-mode or SDK session)
# hard-links the log as <session>/before-cleanup/<Date.now()>-<4 random bytes, hex>.jsonl.replaced
# before it renames the pruned copy over the log.
KEPT = ("1764583200000-0a1b2c3d", "1764586800000-4e5f6a7b")


def prune_keeping(path, data: bytes, stamp: str):
    """The log linked where Claude Code keeps it before its cleanup, then replaced by ``data``."""
    folder = path.with_suffix("") / "before-cleanup"
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / f"{stamp}.jsonl.replaced"
    os.link(path, kept)
    replace_over(path, data)
    return kept


def owners(db, base):
    """Each message in its session's order, with the file holding it (below ``base``)."""
    return rows(db, "SELECT m.uuid, substr(f.path, ?) FROM messages m JOIN source_files f ON f.id = m.file_id "
                    "ORDER BY m.seq", [len(str(base)) + 2])


def matches(db, words: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", [words]).fetchone()[0]
    finally:
        conn.close()


def claude_later_generations():
    """Lines the pruned log goes on with, up to a second compaction, and the log pruned to it."""
    a2 = said("assistant", "a2", "u2", "11:01:05", "Answer about lions")
    b2, s2 = compaction(2, "a2", "12:00", "lions", 200)
    u3 = said("user", "u3", "s2", "12:01:00", "Third question about tigers")
    return jsonl(a2, b2), jsonl(b2, s2, u3)


def test_a_claude_log_pruned_before_its_first_ingest_keeps_what_claude_code_kept_before_cleanup(tmp_path):
    where, generations = CASES["claude"]
    old, new = generations()
    base = tmp_path / "first" / "claude"
    path = where(base)
    path.parent.mkdir(parents=True)
    path.write_bytes(old)
    prune_keeping(path, new, KEPT[0])
    db = tmp_path / "first.db"
    summary = ingest(db, {"claude": base})
    assert (summary.files, summary.errors, summary.files_missing) == (2, 0, 0)
    live, kept = f"projects/-p/{SESSION}.jsonl", f"projects/-p/{SESSION}/before-cleanup/{KEPT[0]}.jsonl.replaced"
    # The whole conversation, each message once and in its order: the lines the log holds
    # again are the log's, those only the kept copy holds are the copy's.
    assert owners(db, base) == [("u1", kept), ("a1", kept), ("u0", live), ("b1", live), ("s1", live), ("u2", live)]
    assert rows(db, "SELECT text FROM messages WHERE uuid IN ('u1', 'a1') ORDER BY seq") == [
        ("Old question about zebras",), ("Old answer about zebras",)]
    assert (matches(db, "zebras"), matches(db, "across"), matches(db, "lions")) == (3, 1, 1)
    assert rows(db, "SELECT id, title, title_source, started_at, availability, message_count, jsonl_path "
                    "FROM sessions") == [(SESSION, "Old question about zebras", "first_prompt",
                                          "2026-12-01T10:00:00.000Z", "live", 4, str(path))]
    assert rows(db, "SELECT substr(path, ?), missing, lines_read, lines_stored, lines_merged, lines_failed "
                    "FROM source_files ORDER BY path", [len(str(base)) + 2]) == [
        (live, 0, 5, 4, 1, 0), (kept, 0, 7, 2, 5, 0)]
    assert ingest(db, {"claude": base}).files_skipped == 2
    # The log ingested before it was pruned too: the same end.
    once, base_once, path_once = ingested_once(tmp_path / "once", "claude", where, old)
    prune_keeping(path_once, new, KEPT[0])
    summary = ingest(once, {"claude": base_once})
    assert (summary.files_missing, summary.errors) == (1, 0)  # (the old log, gone from its path)
    assert diff(snapshot(once), snapshot(db)) == []
    assert owners(once, base_once) == owners(db, base)


def test_a_claude_log_pruned_twice_keeps_each_copy_once_however_often_it_was_ingested(tmp_path):
    where, generations = CASES["claude"]
    old, new = generations()
    more, newest = claude_later_generations()

    def pruned_twice(folder, between):
        base = folder / "claude"
        path = where(base)
        path.parent.mkdir(parents=True)
        db = folder.parent / f"{folder.name}.db"
        path.write_bytes(old)
        between(db, base)
        prune_keeping(path, new, KEPT[0])
        between(db, base)
        with open(path, "ab") as log:
            log.write(more)
        between(db, base)
        prune_keeping(path, newest, KEPT[1])
        assert ingest(db, {"claude": base}).errors == 0
        return db, base, path

    at_once, base, path = pruned_twice(tmp_path / "at_once", lambda db, base: None)
    apart, base_apart, _ = pruned_twice(tmp_path / "apart", lambda db, base: ingest(db, {"claude": base}))
    first, second = (f"projects/-p/{SESSION}/before-cleanup/{stamp}.jsonl.replaced" for stamp in KEPT)
    live = f"projects/-p/{SESSION}.jsonl"
    expected = [("u1", first), ("a1", first), ("u0", second), ("b1", second), ("s1", second), ("u2", second),
                ("a2", second), ("b2", live), ("s2", live), ("u3", live)]
    assert owners(at_once, base) == owners(apart, base_apart) == expected
    assert diff(snapshot(apart), snapshot(at_once)) == []
    assert rows(at_once, "SELECT title, started_at, message_count, jsonl_path FROM sessions") == [
        ("Old question about zebras", "2026-12-01T10:00:00.000Z", 6, str(path))]
    assert (matches(at_once, "zebras"), matches(at_once, "lions"), matches(at_once, "tigers")) == (3, 3, 1)
    # Read again whole (after a parser change): the same.
    before = snapshot(at_once)
    conn = sqlite3.connect(at_once)
    conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.commit()
    conn.close()
    assert ingest(at_once, {"claude": base}).files_replayed == 3
    assert diff(snapshot(at_once), before) == []
    assert owners(at_once, base) == expected


def rewrite_in_place(path, data: bytes) -> None:
    """Truncated and written again where it is (``open(path, "w")``): the same inode."""
    inode = os.stat(path).st_ino
    with open(path, "wb") as fp:
        fp.write(data)
    assert os.stat(path).st_ino == inode


def messages(db):
    """Each message, its text and whether the file holding it is a gone one (``#gone-``), in session order."""
    return rows(db, "SELECT m.uuid, m.text, f.path LIKE '%#gone-%' FROM messages m "
                    "JOIN source_files f ON f.id = m.file_id ORDER BY m.seq")


def found(db, word: str):
    return rows(db, "SELECT m.uuid FROM messages_fts x JOIN messages m ON m.id = x.rowid "
                    "WHERE messages_fts MATCH ? ORDER BY m.seq", [word])


def shown(db):
    """The texts of the messages the session's transcript shows, meta lines and all."""
    from datasette_obelisk.query.transcript import transcript

    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        (session,) = conn.execute("SELECT id FROM sessions").fetchone()
        entries = transcript(conn, session, meta=True, log=True, rewound=True)["entries"]
    finally:
        conn.close()
    texts = []
    for entry in entries:
        texts.append(entry["message"]["text"])
        if entry.get("summary") is not None and entry["summary"] is not entry["message"]:
            texts.append(entry["summary"]["text"])  # (a compaction's summary, shown with its boundary)
    return texts


CODEX = f"codex:{THREAD}"
REWRITTEN = {
    "claude": (
        [("u1", "Old question about zebras", 0), ("a1", "Old answer about zebras", 0),
         ("u0", "A word kept across the compaction", 0), ("b1", "Conversation compacted", 0),
         ("s1", "This session is being continued from a previous conversation. Summary: zebras", 0),
         ("u2", "New question about lions", 0)],
        [("u1", "Old question about zebras", 1), ("a1", "Old answer about zebras", 1),
         ("u0", "A word kept across the compaction", 0), ("b1", "Conversation compacted", 0),
         ("s1", "This session is being continued from a previous conversation. Summary: zebras", 0),
         ("u2", "New question about lions", 0)],
        [("u1",), ("a1",), ("s1",)],
    ),
    "codex": (
        [(f"{CODEX}:204", "Old question about zebras", 0), (f"{CODEX}:393", "Old answer about zebras", 0),
         (f"{CODEX}:586", "Second question about giraffes", 0), (f"{CODEX}:780", "Second answer about giraffes", 0)],
        # (the second turn's lines moved up: their rows are the new file's, named after their new place,
        # the first a copy apart (``@``) as the archived first question holds that place's name)
        [(f"{CODEX}:204", "Old question about zebras", 1), (f"{CODEX}:393", "Old answer about zebras", 1),
         (f"{CODEX}:204@204", "Second question about giraffes", 0), (f"{CODEX}:398", "Second answer about giraffes", 0),
         (f"{CODEX}:596", "New question about lions", 0)],
        [(f"{CODEX}:204",), (f"{CODEX}:393",)],
    ),
}


@pytest.mark.parametrize("source", sorted(CASES))
def test_a_log_rewritten_in_place_keeps_the_rows_only_the_old_content_held(tmp_path, source):
    """The same file (its inode) truncated and written again is the old file gone as when
    another file is renamed over it: the same rows, ids and texts."""
    where, generations = CASES[source]
    old, new = generations()
    before, after, zebras = REWRITTEN[source]
    replaced, base, path = ingested_once(tmp_path / "replaced", source, where, old)
    replace_over(path, new)
    ingest(replaced, {source: base})
    db, base, path = ingested_once(tmp_path / "in_place", source, where, old)
    assert messages(db) == before
    assert found(db, "zebras") == zebras
    first = shown(db)
    assert first == [m[1] for m in before]
    rewrite_in_place(path, new)
    summary = ingest(db, {source: base})
    assert (summary.files_replayed, summary.files_missing, summary.errors) == (0, 1, 0)
    assert messages(db) == after
    assert found(db, "zebras") == zebras  # (the archived rows are found as they were)
    assert shown(db) == [m[1] for m in after]  # (the archived rows are shown in their place)
    assert rows(db, "SELECT m.uuid FROM messages m WHERE m.id NOT IN (SELECT rowid FROM messages_fts)") == []
    assert diff(snapshot(db), snapshot(replaced)) == []
    assert files(db, tmp_path / "in_place") == files(replaced, tmp_path / "replaced")
    assert rows(db, "SELECT availability FROM sessions") == [("live",)]
    assert ingest(db, {source: base}).files_skipped == 1


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


@pytest.mark.parametrize("source", sorted(CASES))
def test_a_log_cut_short_in_place_keeps_the_lines_past_the_cut_archived(tmp_path, source):
    """A log cut to a prefix of itself (a tool truncating it) holds again the lines before the
    cut, which stay its own, and no more those past it, which stay archived; written on with
    them again, it takes them back and nothing is left apart: a first ingest's rows."""
    where, generations = CASES[source]
    old, _ = generations()
    before = REWRITTEN[source][0]
    kept = b"".join(lines_of(old)[:3])
    cut = len(kept) + 20  # (in the fourth line: an unfinished last line)
    replaced, base, path = ingested_once(tmp_path / "replaced", source, where, old)
    replace_over(path, old[:cut])
    ingest(replaced, {source: base})
    db, base, path = ingested_once(tmp_path / "cut", source, where, old)
    first = snapshot(db)
    os.truncate(path, cut)
    summary = ingest(db, {source: base})
    assert (summary.files_replayed, summary.files_missing, summary.errors) == (0, 1, 0)
    held = {"claude": 3, "codex": 2}[source]  # (the lines before the cut that are messages: a rollout's first is its meta)
    assert messages(db) == [(uuid, text, 0) for uuid, text, _ in before[:held]] + [
        (uuid, text, 1) for uuid, text, _ in before[held:]]
    assert rows(db, "SELECT m.uuid FROM messages m JOIN source_files f ON f.id = m.file_id "
                    "WHERE f.path NOT LIKE '%#gone-%' AND m.byte_offset + m.byte_length > ?", [len(kept)]) == []
    assert diff(snapshot(db), snapshot(replaced)) == []
    assert files(db, tmp_path / "cut") == files(replaced, tmp_path / "replaced")
    # Written on with what was cut off: every row is the log's again, the gone file goes.
    with open(path, "ab") as fp:
        fp.write(old[cut:])
    summary = ingest(db, {source: base})
    assert (summary.files_replayed, summary.files_missing, summary.errors) == (0, 0, 0)
    assert messages(db) == before
    assert rows(db, "SELECT COUNT(*) FROM source_files WHERE path LIKE '%#gone-%'") == [(0,)]
    assert diff(snapshot(db), first) == []


def test_a_growing_log_is_read_on_from_its_cursor_without_a_look_at_its_rows(tmp_path, monkeypatch):
    """A live log that grew is read on from where it was: no row count, no second look at its bytes."""
    from datasette_obelisk.store import ingest as ingest_module

    where, generations = CASES["claude"]
    old, _ = generations()
    lines = lines_of(old)
    db, base, path = ingested_once(tmp_path / "live", "claude", where, b"".join(lines[:4]))

    def unexpected(*args, **kwargs):
        raise AssertionError("looked at on the way of a grown log")

    opened = []

    def counted(name, *args, **kwargs):
        opened.append(str(name))
        return open(name, *args, **kwargs)

    monkeypatch.setattr(ingest_module, "file_holds_rows", unexpected)
    monkeypatch.setattr(ingest_module, "still_holds", unexpected)
    monkeypatch.setattr(ingest_module, "open", counted, raising=False)
    with open(path, "ab") as fp:
        fp.write(b"".join(lines[4:]))
    summary = ingest(db, {"claude": base})
    assert opened == [str(path)]  # (once, to tell where to read on from)
    assert (summary.files_replayed, summary.files_missing, summary.bytes_read) == (0, 0, len(b"".join(lines[4:])))
    assert messages(db) == REWRITTEN["claude"][0]


@pytest.mark.parametrize("how", [rewrite_in_place, replace_over], ids=["in_place", "renamed_over"])
def test_a_replaced_log_is_archived_and_named_apart_at_once(tmp_path, monkeypatch, how):
    """A run stopped between archiving the old file and naming it apart leaves it as it was:
    the next run ends as one not stopped."""
    from datasette_obelisk.store import ingest as ingest_module

    where, generations = CASES["claude"]
    old, new = generations()
    whole, base, path = ingested_once(tmp_path / "whole", "claude", where, old)
    how(path, new)
    ingest(whole, {"claude": base})
    db, base, path = ingested_once(tmp_path / "stopped", "claude", where, old)
    first = snapshot(db)
    stored = files(db, tmp_path / "stopped")
    how(path, new)

    def stopped(self, row):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_module.Ingester, "retire", stopped)
    with pytest.raises(KeyboardInterrupt):
        ingest(db, {"claude": base})
    assert files(db, tmp_path / "stopped") == stored
    assert diff(snapshot(db), first) == []
    monkeypatch.undo()
    ingest(db, {"claude": base})
    assert diff(snapshot(db), snapshot(whole)) == []
    assert files(db, tmp_path / "stopped") == files(whole, tmp_path / "whole")
