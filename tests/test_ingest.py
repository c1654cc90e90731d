import json
import os
import shutil
import sqlite3

import pytest

from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from toy_source import ToySource
from dbsnapshot import diff, rows, snapshot

SOURCES = {"toy": ToySource()}


def line(**fields):
    return (json.dumps(fields) + "\n").encode()


def run(db, root, **options):
    return ingest(db, {"toy": root}, sources=SOURCES, **options)


@pytest.fixture
def root(tmp_path):
    path = tmp_path / "logs"
    path.mkdir()
    return path


@pytest.fixture
def db(tmp_path):
    return tmp_path / "obelisk.db"


def change(db, *statements):
    """Run (sql, params) pairs or plain sql in one transaction, as an older version or a line would have."""
    conn = sqlite3.connect(db)
    with conn:
        for statement in statements:
            sql, params = statement if isinstance(statement, tuple) else (statement, ())
            conn.execute(sql, params)
    conn.close()


def test_ingest_counts_every_line(db, root):
    head = line(id="a", text="hello world", ts="2026-01-01T00:00:00Z") + line(kind="meta")
    (root / "s1.jsonl").write_bytes(
        head
        + b"{not json\n"
        + b"\n"
        + line(id="b", parent="a", text="second line", ts="2026-01-01T00:01:00Z", tool="Read", paths=["/x.py"], output="boom", outcome="failed")
    )
    summary = run(db, root)
    assert (summary.files, summary.lines, summary.messages, summary.merged, summary.errors) == (1, 4, 2, 1, 1)
    assert rows(db, "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [(4, 2, 1, 1)]
    assert rows(db, "SELECT line_no, byte_offset, reason FROM ingest_errors") == [
        (3, len(head), "invalid JSON: unexpected character, expected a string key: line 1 column 2 (char 1)")
    ]
    assert rows(db, "SELECT uuid, seq, session_id FROM messages ORDER BY seq") == [("a", 1, "s1"), ("b", 2, "s1")]
    assert rows(db, "SELECT m.uuid FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid WHERE messages_fts MATCH 'second'") == [("b",)]
    assert rows(db, "SELECT t.tool_use_id FROM tool_errors_fts JOIN tool_results t ON t.id = tool_errors_fts.rowid WHERE tool_errors_fts MATCH 'boom'") == [("b:call",)]
    assert rows(db, "SELECT path FROM tool_call_files") == [("/x.py",)]
    assert rows(db, "SELECT id, title, title_source, started_at, ended_at, message_count FROM sessions") == [
        ("s1", None, None, "2026-01-01T00:00:00.000Z", "2026-01-01T00:01:00.000Z", 2)
    ]


def test_rerun_is_a_no_op(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="x"))
    run(db, root)
    before = snapshot(db)
    summary = run(db, root)
    assert (summary.files_skipped, summary.files_read, summary.lines) == (1, 0, 0)
    assert snapshot(db) == before


def test_appended_lines_are_read_from_the_cursor(db, root):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="first"))
    run(db, root)
    with open(path, "ab") as fp:
        fp.write(line(id="b", text="appended"))
    summary = run(db, root)
    assert (summary.files_replayed, summary.lines, summary.bytes_read) == (0, 1, len(line(id="b", text="appended")))
    assert rows(db, "SELECT uuid, seq FROM messages ORDER BY seq") == [("a", 1), ("b", 2)]
    assert rows(db, "SELECT count FROM (SELECT json_extract(parser_state, '$.parser.count') AS count FROM source_files)") == [(2,)]


def test_a_rewritten_file_is_the_old_one_gone_and_a_new_one(db, root):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="first") + line(id="b", text="second"))
    run(db, root)
    path.write_bytes(line(id="c", text="rewritten entirely, and longer than before"))
    summary = run(db, root)
    # The same file (its inode) rewritten in place, by hand, an editor or a tool, is the old
    # one gone, as another file renamed over it is (tests/test_replaced_logs.py): its rows
    # stay archived under a name of its own, and the file is read as a new one.
    assert (summary.files_replayed, summary.files_missing) == (0, 1)
    assert rows(db, "SELECT m.uuid, m.seq, f.path FROM messages m JOIN source_files f ON f.id = m.file_id ORDER BY m.seq") == [
        ("a", 1, f"{path}#gone-1"), ("b", 2, f"{path}#gone-1"), ("c", 3, str(path))]
    assert rows(db, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'first'") == [(1,)]


def test_a_truncated_file_keeps_the_lines_past_its_end_archived(db, root):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="first") + line(id="b", text="second"))
    run(db, root)
    path.write_bytes(line(id="a", text="first"))
    assert run(db, root).files_replayed == 0
    assert rows(db, "SELECT m.uuid, f.path FROM messages m JOIN source_files f ON f.id = m.file_id ORDER BY m.seq") == [
        ("a", str(path)), ("b", f"{path}#gone-1")]


def test_parser_version_bump_replays(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="x"))
    run(db, root)
    newer = ToySource()
    newer.parser_version = 2
    summary = ingest(db, {"toy": root}, sources={"toy": newer})
    assert (summary.files_replayed, summary.messages) == (1, 1)
    assert rows(db, "SELECT parser_version FROM source_files") == [(2,)]


def test_deleted_file_keeps_its_session_archived(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="keep me"))
    (root / "s2.jsonl").write_bytes(line(id="b", text="still here"))
    run(db, root)
    (root / "s1.jsonl").unlink()
    summary = run(db, root)
    assert summary.files_missing == 1
    assert rows(db, "SELECT id, availability FROM sessions ORDER BY id") == [("s1", "archived"), ("s2", "live")]
    assert rows(db, "SELECT uuid FROM messages ORDER BY uuid") == [("a",), ("b",)]
    # It comes back to life if the file returns.
    (root / "s1.jsonl").write_bytes(line(id="a", text="keep me"))
    run(db, root)
    assert rows(db, "SELECT id, availability FROM sessions ORDER BY id") == [("s1", "live"), ("s2", "live")]


def test_a_gone_file_nothing_was_read_from_leaves_no_row_and_no_error(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="keep me"))
    (root / "dangling.jsonl").symlink_to(root / "nowhere.jsonl")
    (root / "empty.jsonl").write_bytes(b"")
    assert run(db, root).errors == 1
    assert rows(db, "SELECT count(*) FROM ingest_errors WHERE reason LIKE 'cannot read file:%'") == [(1,)]
    (root / "dangling.jsonl").unlink()
    (root / "empty.jsonl").unlink()
    (root / "s1.jsonl").unlink()
    assert run(db, root).files_missing == 1
    assert rows(db, "SELECT path, missing FROM source_files") == [(str(root / "s1.jsonl"), 1)]
    assert rows(db, "SELECT count(*) FROM ingest_errors") == [(0,)]
    assert rows(db, "SELECT uuid FROM messages") == [("a",)]
    # A file read before whose rows a re-read cleared, gone before it was read again, stays as a trace.
    (root / "s2.jsonl").write_bytes(line(id="b", text="read once"))
    run(db, root)
    change(db, "DELETE FROM messages WHERE uuid = 'b'", "DELETE FROM file_sessions WHERE session_id = 's2'")
    (root / "s2.jsonl").unlink()
    assert run(db, root).files_missing == 1
    assert rows(db, "SELECT path, missing FROM source_files ORDER BY path") == [
        (str(root / "s1.jsonl"), 1), (str(root / "s2.jsonl"), 1)]


def test_a_file_whose_name_is_not_utf_8_is_an_error_and_the_others_are_read(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="keep me"))
    (root / "s\udcff.jsonl").write_bytes(line(id="b", text="unnamed"))  # the byte 0xff
    summary = run(db, root)
    assert (summary.files, summary.messages, summary.errors) == (1, 1, 1)
    assert summary.error_samples == [(
        str(root) + "/s\\xff.jsonl", None, "the file's name is not UTF-8 text, so it cannot be stored: rename it to read it"
    )]
    assert rows(db, "SELECT uuid FROM messages") == [("a",)]


@pytest.mark.parametrize("read_ahead", [None, 0])  # read here, or by forked readers
def test_a_log_deleted_before_its_turn_in_a_re_read_is_still_read(db, root, monkeypatch, read_ahead):
    # A parser change reads every log again, holding them open before any is read
    # and clearing each family's rows as it is read; the agent prunes one before
    # its turn. It is read from the descriptor held since.
    from datasette_obelisk.store import ingest as ingest_module

    (root / "s1.jsonl").write_bytes(line(id="a", text="keep me") + line(id="b", text="and me"))
    (root / "s2.jsonl").write_bytes(line(id="c", text="other"))
    run(db, root)
    keep = ingest_module.Ingester.keep_families_open

    def pruned_meanwhile(self):
        keep(self)
        if (root / "s1.jsonl").exists():
            (root / "s1.jsonl").unlink()

    monkeypatch.setattr(ingest_module.Ingester, "keep_families_open", pruned_meanwhile)
    newer = ToySource()
    newer.parser_version = 2
    descriptors = set(os.listdir("/proc/self/fd"))
    summary = ingest(db, {"toy": root}, sources={"toy": newer}, read_ahead_bytes=read_ahead)
    assert set(os.listdir("/proc/self/fd")) <= descriptors  # every one held closed again
    assert (summary.files_replayed, summary.errors) == (2, 0)
    assert rows(db, "SELECT uuid FROM messages ORDER BY uuid") == [("a",), ("b",), ("c",)]
    assert ingest(db, {"toy": root}, sources={"toy": newer}).files_missing == 1
    assert rows(db, "SELECT id, availability FROM sessions ORDER BY id") == [("s1", "archived"), ("s2", "live")]


def test_a_log_deleted_before_its_turn_and_not_held_open_keeps_its_rows(db, root, monkeypatch):
    # More files to read again than descriptors to hold: one the agent prunes
    # before its turn cannot be read, and its family keeps every row (archived next).
    from datasette_obelisk.store import ingest as ingest_module

    (root / "s1.jsonl").write_bytes(line(id="a", text="keep me") + line(id="b", text="and me"))
    (root / "s2.jsonl").write_bytes(line(id="c", text="other"))
    run(db, root)
    monkeypatch.setattr(ingest_module, "MAX_KEPT_OPEN", 0)
    keep = ingest_module.Ingester.keep_families_open

    def pruned_meanwhile(self):
        keep(self)
        (root / "s1.jsonl").unlink(missing_ok=True)

    monkeypatch.setattr(ingest_module.Ingester, "keep_families_open", pruned_meanwhile)
    newer = ToySource()
    newer.parser_version = 2
    summary = ingest(db, {"toy": root}, sources={"toy": newer})
    assert (summary.files_replayed, summary.errors) == (1, 1)
    assert rows(db, "SELECT uuid FROM messages ORDER BY uuid") == [("a",), ("b",), ("c",)]
    assert ingest(db, {"toy": root}, sources={"toy": newer}).files_missing == 1
    assert rows(db, "SELECT id, availability, message_count FROM sessions ORDER BY id") == [
        ("s1", "archived", 2), ("s2", "live", 1)]


def test_a_folder_whose_name_extends_the_roots_is_not_under_it(db, tmp_path):
    # /logs and /logs2 share a prefix; reading /logs alone leaves /logs2's files alone.
    first, second = tmp_path / "logs", tmp_path / "logs2"
    for folder, session in [(first, "s1"), (second, "s2")]:
        folder.mkdir()
        (folder / f"{session}.jsonl").write_bytes(line(id=session, text="hello"))
        run(db, folder)
    summary = run(db, first)
    assert summary.files_missing == 0
    assert rows(db, "SELECT id, availability FROM sessions ORDER BY id") == [("s1", "live"), ("s2", "live")]


def test_a_folder_reached_through_a_symlink_and_then_directly_is_read_once(db, tmp_path):
    real, link = tmp_path / "real", tmp_path / "link"
    (real / "p").mkdir(parents=True)
    link.symlink_to(real)
    (real / "p" / "s1.jsonl").write_bytes(line(id="a", text="hello") + b"{bad json\n")
    assert (run(db, link).files_read, run(db, real).files_read) == (1, 0)
    path = str(real / "p" / "s1.jsonl")
    assert rows(db, "SELECT path, lines_read, lines_stored, lines_failed FROM source_files") == [(path, 2, 1, 1)]
    assert rows(db, "SELECT path FROM ingest_errors") == [(path,)]
    assert rows(db, "SELECT id, jsonl_path FROM sessions") == [("s1", path)]
    with open(path, "ab") as fp:  # and it goes on from its cursor under the new name
        fp.write(line(id="b", text="more"))
    summary = run(db, real)
    assert (summary.files_read, summary.lines, summary.messages, summary.files_replayed) == (1, 1, 1, 0)
    assert rows(db, "SELECT COUNT(*), SUM(missing) FROM source_files") == [(1, 0)]


def test_a_folder_linked_inside_the_folder_is_read_once_and_files_keep_their_real_paths(db, root, tmp_path):
    elsewhere = tmp_path / "elsewhere"  # a project kept outside, linked in
    elsewhere.mkdir()
    (elsewhere / "s1.jsonl").write_bytes(line(id="a", text="kept elsewhere"))
    (root / "a-link").symlink_to(elsewhere)
    (root / "z-real").mkdir()
    (root / "z-real" / "s2.jsonl").write_bytes(line(id="b", text="kept here"))
    (root / "b-link").symlink_to(root / "z-real")  # sorts before the folder it names
    (root / "z-real" / "up").symlink_to(root)  # a loop
    summary = run(db, root)
    assert (summary.files, summary.messages, summary.errors) == (2, 2, 0)
    assert rows(db, "SELECT path FROM source_files ORDER BY path") == [
        (str(root / "a-link" / "s1.jsonl"),), (str(root / "z-real" / "s2.jsonl"),),
    ]
    assert run(db, root).files_skipped == 2


def test_a_file_linked_inside_the_folder_is_read_once_under_its_own_name(db, root):
    (root / "s2.jsonl").write_bytes(line(id="a", text="hello") + line(id="b", text="again"))
    (root / "s1.jsonl").symlink_to("s2.jsonl")  # sorts first
    os.link(root / "s2.jsonl", root / "s3.jsonl")
    summary = run(db, root)
    assert (summary.files, summary.files_linked, summary.files_read, summary.messages) == (1, 2, 1, 2)
    assert rows(db, "SELECT path FROM source_files") == [(str(root / "s2.jsonl"),)]
    assert rows(db, "SELECT id, message_count FROM sessions") == [("s2", 2)]
    again = run(db, root)
    assert (again.files, again.files_linked, again.files_read, again.files_skipped) == (1, 2, 0, 1)
    (root / "s1.jsonl").unlink()
    (root / "s3.jsonl").unlink()
    alone = run(db, root)
    assert (alone.files, alone.files_linked, alone.files_skipped, alone.files_missing) == (1, 0, 1, 0)


def test_rows_an_older_version_read_through_a_link_are_forgotten_and_the_file_read_again(db, root):
    (root / "s2.jsonl").write_bytes(line(id="a", text="hello"))
    (root / "s1.jsonl").write_bytes(line(id="a", text="hello"))  # read first: s2's line is its replay
    run(db, root)
    assert rows(db, "SELECT id, message_count FROM sessions ORDER BY id") == [("s1", 1), ("s2", 0)]
    (root / "s1.jsonl").unlink()
    (root / "s1.jsonl").symlink_to("s2.jsonl")  # what the older version saw as two files
    summary = run(db, root)
    assert (summary.files, summary.files_linked, summary.files_replayed, summary.messages) == (1, 1, 1, 1)
    assert rows(db, "SELECT path FROM source_files") == [(str(root / "s2.jsonl"),)]
    assert rows(db, "SELECT id, message_count FROM sessions") == [("s2", 1)]
    assert rows(db, "SELECT m.session_id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                    "WHERE messages_fts MATCH 'hello'") == [("s2",)]


def test_a_folder_moved_whole_keeps_its_files_rows(db, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    (old / "p").mkdir(parents=True)
    (old / "p" / "s1.jsonl").write_bytes(line(id="a", text="hello"))
    run(db, old)
    hints = rows(db, "SELECT hints, priority FROM source_files")
    conn = sqlite3.connect(db)
    with conn:  # as stored before m019 (hints kept) and m008 (paths made absolute)
        conn.execute("UPDATE source_files SET hints = NULL, priority = NULL")
    conn.close()
    old.rename(new)
    summary = run(db, new)
    assert (summary.files_read, summary.files_skipped, summary.files_missing) == (0, 1, 0)
    assert rows(db, "SELECT hints, priority FROM source_files") == hints
    assert rows(db, "SELECT path, missing FROM source_files") == [(str(new / "p" / "s1.jsonl"), 0)]
    # Nothing is left under the old name to be reported gone.
    assert run(db, old).files_missing == 0
    assert rows(db, "SELECT id, availability FROM sessions") == [("s1", "live")]


def test_another_file_on_a_reused_inode_is_not_taken_for_a_moved_one(db, tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        (folder / "p").mkdir(parents=True)
    (old / "p" / "s1.jsonl").write_bytes(line(id="a", text="the archived line"))
    run(db, old)
    (old / "p" / "s1.jsonl").unlink()
    run(db, old)  # gone from disk: archived
    other = new / "p" / "s1.jsonl"
    other.write_bytes(line(id="b", text="another session's line"))
    st = other.stat()  # as if the file system had given the old file's inode to this one
    change(db, ("UPDATE source_files SET device = ?, inode = ?", [st.st_dev, st.st_ino]))
    summary = run(db, new)
    assert (summary.files_read, summary.messages) == (1, 1)
    assert rows(db, "SELECT path, missing FROM source_files ORDER BY id") == [
        (str(old / "p" / "s1.jsonl"), 1), (str(other), 0)
    ]
    assert rows(db, "SELECT uuid, text FROM messages ORDER BY id") == [("a", "the archived line"), ("b", "another session's line")]


def test_a_byte_order_mark_opening_a_file_is_not_an_error(db, root):
    import io

    from datasette_obelisk.sources.lines import read_lines

    bom = b"\xef\xbb\xbf"
    data = bom + line(id="a", text="first") + line(id="b", text="second")
    lines = list(read_lines(io.BytesIO(data)))
    assert [(x.data, x.position.byte_offset, x.position.byte_length) for x in lines] == [
        (line(id="a", text="first")[:-1], 0, len(bom + line(id="a", text="first")) - 1),
        (line(id="b", text="second")[:-1], len(bom + line(id="a", text="first")), len(line(id="b", text="second")) - 1),
    ]
    resumed = io.BytesIO(data)
    resumed.seek(lines[1].position.byte_offset)  # as the reader resumes at a cursor
    assert [x.data for x in read_lines(resumed, lines[1].position.byte_offset, 2)] == [line(id="b", text="second")[:-1]]
    (root / "s1.jsonl").write_bytes(data)
    summary = run(db, root)
    assert (summary.messages, summary.errors) == (2, 0)
    assert rows(db, "SELECT uuid, byte_offset, byte_length FROM messages ORDER BY seq") == [
        ("a", 0, lines[0].position.byte_length), ("b", lines[1].position.byte_offset, lines[1].position.byte_length)
    ]
    from datasette_obelisk.query.obelisk import raw

    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    assert raw(conn, "a")["text"] == '{"id": "a", "text": "first"}'  # the line as parsed


def test_raw_gives_a_crlf_line_without_its_cr(db, root):
    from datasette_obelisk.query.obelisk import raw

    (root / "s1.jsonl").write_bytes(line(id="a", text="windows").replace(b"\n", b"\r\n"))
    assert run(db, root).messages == 1
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    assert raw(conn, "a")["text"] == '{"id": "a", "text": "windows"}'


def test_python_ingest_expands_a_home_folder_and_warns_about_a_missing_one(db, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "s1.jsonl").write_bytes(line(id="a", text="hello"))
    summary = ingest(db, {"toy": "~/logs"}, sources=SOURCES)
    assert (summary.files, summary.messages, summary.warnings) == (1, 1, [])
    assert rows(db, "SELECT path FROM source_files") == [(str(tmp_path / "logs" / "s1.jsonl"),)]
    with pytest.raises(ValueError, match="^unknown source tyo; installed: toy$"):
        ingest(tmp_path / "other.db", {"tyo": "~/logs"}, sources=SOURCES)
    assert not (tmp_path / "other.db").exists()
    missing = tmp_path / "nowhere"
    summary = ingest(db, {"toy": missing}, sources=SOURCES)
    assert (summary.files, summary.as_dict()["warnings"]) == (0, [{
        "source": "toy", "path": str(missing),
        "message": f"the toy folder {missing} is not a folder; nothing read from it (files stored from it count as gone from disk)",
    }])


def test_a_session_a_newer_parser_names_otherwise_is_not_left_behind_empty(db, root):
    from toy_source import ToyParser

    class RenamingParser(ToyParser):
        def __init__(self, unit, state):
            super().__init__(unit, state)
            self.session_id = "renamed-" + self.session_id

    class Newer(ToySource):
        parser_version = 2

        def open_parser(self, unit, state):
            return RenamingParser(unit, state)

    (root / "s1.jsonl").write_bytes(line(id="a", text="kept words") + line(id="b", text="more"))
    (root / "s2.jsonl").write_bytes(line(id="c", text="other"))
    run(db, root)
    assert rows(db, "SELECT id FROM sessions ORDER BY id") == [("s1",), ("s2",)]
    change(db, "UPDATE sessions SET title = 'An old title' WHERE id = 's1'")  # as a title line would
    assert rows(db, "SELECT session_id, title FROM session_digests") == [("s1", "An old title")]
    summary = ingest(db, {"toy": root}, sources={"toy": Newer()})
    assert summary.files_replayed == 2
    assert rows(db, "SELECT id, message_count FROM sessions ORDER BY id") == [("renamed-s1", 2), ("renamed-s2", 1)]
    assert rows(db, "SELECT session_id FROM session_docs ORDER BY session_id") == [("renamed-s1",), ("renamed-s2",)]
    assert rows(db, "SELECT COUNT(*) FROM session_digests WHERE session_id = 's1'") == [(0,)]
    assert rows(db, "SELECT COUNT(*) FROM session_digests_fts WHERE session_digests_fts MATCH 'old'") == [(0,)]
    conn = sqlite3.connect(db)
    doc_ids = conn.execute("SELECT id FROM session_docs ORDER BY id").fetchall()
    assert conn.execute("SELECT rowid FROM session_docs_fts WHERE session_docs_fts MATCH 'kept'").fetchall() == doc_ids[:1]
    conn.close()


def test_m017_queues_the_empty_sessions_an_older_version_left(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="x"))
    run(db, root)
    change(db, "INSERT INTO sessions (id, source) VALUES ('left-behind', 'toy')",
           "DELETE FROM _sqlite_migrations WHERE name = 'm017_queue_empty_sessions'")
    open_db(db).close()  # the migration runs again, as on a database from before it
    assert rows(db, "SELECT session_id FROM derive_queue") == [("left-behind",)]
    run(db, root)
    assert rows(db, "SELECT id FROM sessions") == [("s1",)]


def test_an_empty_session_a_file_still_names_stays(db, root):
    # A session whose only lines so far are merged (no message) is still its file's.
    (root / "s1.jsonl").write_bytes(line(id="a", text="x"))
    run(db, root)
    change(db, "DELETE FROM messages", "INSERT INTO derive_queue (session_id) VALUES ('s1')")
    run(db, root)
    assert rows(db, "SELECT id, message_count FROM sessions") == [("s1", 0)]


def test_a_session_starts_at_its_earliest_record_or_message_and_a_rewrite_keeps_it(db, root):
    first = line(id="a", text="x", ts="2026-01-01T00:01:00Z", start="2026-01-01T00:00:00Z")
    (root / "s1.jsonl").write_bytes(first + line(id="b", text="y", ts="2026-01-01T00:02:00Z"))
    run(db, root)
    assert rows(db, "SELECT started_at, ended_at FROM sessions") == [("2026-01-01T00:00:00.000Z", "2026-01-01T00:02:00.000Z")]
    assert rows(db, "SELECT started_at FROM file_sessions") == [("2026-01-01T00:00:00Z",)]
    (root / "s1.jsonl").write_bytes(line(id="b", text="y", ts="2026-01-01T00:02:00Z"))  # rewritten
    assert (run(db, root).files_replayed, rows(db, "SELECT COUNT(*) FROM source_files")) == (0, [(2,)])
    # The record the rewrite dropped stays with the old file, archived: the session starts as it did.
    assert rows(db, "SELECT started_at, ended_at FROM sessions") == [("2026-01-01T00:00:00.000Z", "2026-01-01T00:02:00.000Z")]
    assert rows(db, "SELECT started_at FROM file_sessions ORDER BY file_id") == [("2026-01-01T00:00:00Z",), (None,)]


def test_a_derived_title_goes_with_its_last_candidate_and_a_sources_own_title_stays(db, root):
    for name in ("s1", "s2"):
        (root / f"{name}.jsonl").write_bytes(line(id=name, text="x"))
    run(db, root)
    change(db, "INSERT INTO titles (session_id, kind, title, file_id) VALUES ('s1', 'first_prompt', 'An old prompt', 1)",
           "UPDATE sessions SET title = 'Named by its source' WHERE id = 's2'",
           "INSERT INTO derive_queue (session_id) VALUES ('s1'), ('s2')")
    run(db, root)
    assert rows(db, "SELECT id, title, title_source FROM sessions ORDER BY id") == [
        ("s1", "An old prompt", "first_prompt"), ("s2", "Named by its source", None)
    ]
    change(db, "DELETE FROM titles", "INSERT INTO derive_queue (session_id) VALUES ('s1'), ('s2')")
    run(db, root)
    assert rows(db, "SELECT id, title, title_source FROM sessions ORDER BY id") == [
        ("s1", None, None), ("s2", "Named by its source", None)
    ]


def test_session_times_are_utc_so_text_order_is_time_order(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="x", ts="2026-05-01T10:00:00+05:00"))  # 05:00 UTC
    (root / "s2.jsonl").write_bytes(line(id="b", text="y", ts="2026-05-01T06:00:00.000Z"))
    (root / "s3.jsonl").write_bytes(line(id="c", text="z", ts="2026-05-01T05:30:00Z"))
    run(db, root)
    assert rows(db, "SELECT id, started_at, ended_at FROM sessions ORDER BY ended_at DESC") == [
        ("s2", "2026-05-01T06:00:00.000Z", "2026-05-01T06:00:00.000Z"),
        ("s3", "2026-05-01T05:30:00.000Z", "2026-05-01T05:30:00.000Z"),
        ("s1", "2026-05-01T05:00:00.000Z", "2026-05-01T05:00:00.000Z"),
    ]
    assert rows(db, "SELECT timestamp FROM messages WHERE uuid = 'a'") == [("2026-05-01T10:00:00+05:00",)]  # as written
    # A time no calendar has is no session time; a lowercase z is UTC, as SQLite reads it.
    (root / "s4.jsonl").write_bytes(line(id="e", text="q", ts="2024-13-45T00:00:00Z")
                                    + line(id="f", text="r", ts="2024-05-01T07:00:00z")
                                    + line(id="g", text="s", ts="0000-00-00T00:00:00Z"))
    run(db, root)
    assert rows(db, "SELECT started_at, ended_at FROM sessions WHERE id = 's4'") == [
        ("2024-05-01T07:00:00.000Z", "2024-05-01T07:00:00.000Z")]
    change(db, "UPDATE sessions SET started_at = '2026-05-01T10:00:00+05:00', ended_at = '[trimmed]' WHERE id = 's1'",
           "DELETE FROM _sqlite_migrations WHERE name = 'm025_canonical_session_times'")
    open_db(db).close()  # m025 runs again, as on a database from before it
    assert rows(db, "SELECT started_at, ended_at FROM sessions WHERE id = 's1'") == [("2026-05-01T05:00:00.000Z", "[trimmed]")]
    # Its first and last may have been picked in text order: it is derived again (no file read).
    assert rows(db, "SELECT session_id FROM derive_queue") == [("s1",)]
    run(db, root)
    assert rows(db, "SELECT started_at, ended_at FROM sessions WHERE id = 's1'") == [
        ("2026-05-01T05:00:00.000Z", "2026-05-01T05:00:00.000Z")]


def test_m026_recounts_the_sessions_holding_a_compaction_summary(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="x") + line(id="b", text="summary") + line(id="c", text="y"))
    (root / "s2.jsonl").write_bytes(line(id="d", text="z"))
    run(db, root)
    assert rows(db, "SELECT id, message_count FROM sessions ORDER BY id") == [("s1", 3), ("s2", 1)]
    change(db, "UPDATE messages SET is_compact_summary = 1 WHERE uuid = 'b'",  # as a source marks one
           "DELETE FROM _sqlite_migrations WHERE name = 'm026_recount_compacted_sessions'")
    open_db(db).close()  # m026 runs again, as on a database from before it
    assert rows(db, "SELECT session_id FROM derive_queue") == [("s1",)]
    summary = run(db, root)
    assert summary.files_read == 0  # derived again, no file read
    assert rows(db, "SELECT id, message_count FROM sessions ORDER BY id") == [("s1", 2), ("s2", 1)]


def test_m026_moves_an_inline_agents_summary_and_gives_it_its_parents_program(tmp_path):
    # small.jsonl line 22 (u3) is an inline agent's compaction summary; its file is gone (archived).
    import shutil

    from conftest import CORPUS as corpus_root

    if not corpus_root.exists():
        pytest.skip("shared corpus not found")

    folder = tmp_path / "claude" / "projects" / "p"
    folder.mkdir(parents=True)
    shutil.copy(corpus_root / "claude-code" / "jazzyalex__agent-sessions" / "small.jsonl", folder)
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    expected = rows(db, "SELECT s.id, s.version, s.originator, s.message_count, (SELECT COUNT(*) FROM summaries "
                        "WHERE session_id = s.id) FROM sessions s ORDER BY id")
    (folder / "small.jsonl").unlink()
    change(db, "UPDATE summaries SET session_id = 'small' WHERE message_uuid = 'u3'",  # as an older version left them
           "UPDATE sessions SET version = NULL, originator = NULL, message_count = 5 WHERE agent_id GLOB 'sidechain-*'",
           "DELETE FROM _sqlite_migrations WHERE name = 'm026_recount_compacted_sessions'")
    open_db(db).close()
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT s.id, s.version, s.originator, s.message_count, (SELECT COUNT(*) FROM summaries "
                    "WHERE session_id = s.id) FROM sessions s ORDER BY id") == expected
    # (line 39: a queued prompt; lines 49 and 60: prompts of origins no person's)
    assert expected == [("small", "[trimmed for fixture]", "cli", 5, 0),
                        ("small:agent-sidechain-sys1", "[trimmed for fixture]", "cli", 4, 1)]


@pytest.mark.parametrize("text", [
    "[Request interrupted by user]", "[Request interrupted by user for tool use]", "[Request interrupted by user]  \r\n\t",
    "[Request interrupted by user] then typed", "[Request interrupted by user]\nNot that file", " [Request interrupted by user]",
    "[Request interrupted by user] ]", "[Request interrupted by user\u00a0]", "[Request interrupted by user]\u00a0",
    "[Request interrupted by user]\u2028", "[request interrupted by user]", "[Request interrupted by user",
])
def test_m027_reads_an_interruption_note_as_the_parser_does(tmp_path, text):
    from datasette_obelisk.sources.claude_code import INTERRUPTION_NOTE
    from datasette_obelisk.store.migrations import m027_mark_interruptions

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE messages (session_id, source, type, content_type, text)")
    conn.execute("CREATE TABLE derive_queue (session_id UNIQUE)")
    conn.execute("INSERT INTO messages VALUES ('s', 'claude', 'user', 'text', ?)", [text])
    m027_mark_interruptions(conn)
    marked = conn.execute("SELECT content_type FROM messages").fetchone()[0] == "interruption"
    assert marked == bool(INTERRUPTION_NOTE.fullmatch(text))


def test_an_interruption_is_no_prompt_and_m027_marks_those_stored_before(tmp_path):
    folder = tmp_path / "claude" / "projects" / "p"
    folder.mkdir(parents=True)
    lines = [("u1", "user", "Fix the bug"), ("a1", "assistant", "Looking"), ("u2", "user", "[Request interrupted by user]"),
             ("u3", "user", "Go on"), ("u4", "user", "[Request interrupted by user]\nNot that file")]  # u4: typed too
    (folder / "s1.jsonl").write_text("".join(json.dumps({
        "type": role, "uuid": uuid, "sessionId": "s1", "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
    }) + "\n" for uuid, role, text in lines))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT message_count FROM sessions") == [(4,)]
    assert rows(db, "SELECT uuid FROM messages WHERE content_type = 'interruption'") == [("u2",)]
    (folder / "s1.jsonl").unlink()  # archived: only the stored rows are left
    change(db, "UPDATE messages SET content_type = 'text' WHERE uuid = 'u2'",  # as an older version stored it
           "UPDATE sessions SET message_count = 5",
           "DELETE FROM _sqlite_migrations WHERE name = 'm027_mark_interruptions'")
    open_db(db).close()
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT uuid FROM messages WHERE content_type = 'interruption'") == [("u2",)]
    assert rows(db, "SELECT message_count FROM sessions") == [(4,)]


def test_m018_keeps_the_start_an_older_version_stored(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="x", ts="2026-01-01T00:01:00Z"))
    run(db, root)
    change(db, "ALTER TABLE file_sessions DROP COLUMN started_at",
           "DELETE FROM _sqlite_migrations WHERE name = 'm018_add_file_sessions_started_at'",
           "UPDATE sessions SET started_at = '2026-01-01T00:00:00Z'")  # as a session record would have
    open_db(db).close()
    assert rows(db, "SELECT started_at FROM file_sessions") == [("2026-01-01T00:00:00Z",)]
    with open(root / "s1.jsonl", "ab") as fp:
        fp.write(line(id="b", text="y", ts="2026-01-01T00:02:00Z"))
    assert run(db, root).files_replayed == 0
    assert rows(db, "SELECT started_at, ended_at FROM sessions") == [("2026-01-01T00:00:00.000Z", "2026-01-01T00:02:00.000Z")]


def test_a_stored_file_in_a_folder_that_cannot_be_read_is_not_gone(db, root, monkeypatch):
    """Discovery skips a folder it cannot list (mode 000, as another user):
    its stored files are kept as they were, not archived, and named."""
    import toy_source
    from datasette_obelisk.store import ingest as ingest_module

    (root / "locked").mkdir()
    (root / "locked" / "s1.jsonl").write_bytes(line(id="a", text="x", ts="2026-01-01T00:00:00Z"))
    run(db, root)
    locked = str(root / "locked")
    real_walk, real_lstat = toy_source.walk_files, os.lstat

    def walk(folder):
        return (p for p in real_walk(folder) if not str(p).startswith(locked))

    def lstat(path, *args, **kwargs):
        if str(path).startswith(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(toy_source, "walk_files", walk)
    monkeypatch.setattr(ingest_module.os, "lstat", lstat)
    summary = run(db, root)
    assert (summary.files, summary.files_missing, summary.files_unseen) == (0, 0, [f"{locked}/s1.jsonl"])
    assert rows(db, "SELECT missing FROM source_files") == [(0,)]
    assert rows(db, "SELECT availability FROM sessions") == [("live",)]


def test_a_folder_that_cannot_be_read_is_named(db, root, monkeypatch):
    """Its logs were missed without a word (mode 000, as another user; simulated, as root reads any)."""
    from datasette_obelisk.sources import base

    (root / "ok.jsonl").write_bytes(line(id="a", text="fine"))
    (root / "locked").mkdir()
    (root / "locked" / "s1.jsonl").write_bytes(line(id="b", text="unseen"))
    real_scandir = base.os.scandir

    def scandir(path):
        if str(path) == str(root / "locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(base.os, "scandir", scandir)
    summary = run(db, root)
    assert (summary.files, summary.messages, summary.errors) == (1, 1, 0)
    assert summary.warnings == [{"source": "toy", "path": str(root / "locked"),
                                 "message": f"the toy folder {root / 'locked'} cannot be read (Permission denied): no log in it is read"}]
    assert run(db, root).warnings == summary.warnings  # each run, while it cannot be read


def test_replayed_uuid_is_stored_once(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="original"))
    (root / "s2.jsonl").write_bytes(line(id="a", text="original") + line(id="b", text="new"))
    summary = run(db, root)
    assert (summary.messages, summary.merged) == (2, 1)
    assert rows(db, "SELECT uuid, session_id FROM messages ORDER BY uuid") == [("a", "s1"), ("b", "s2")]


def test_a_repeated_uuid_on_another_kind_of_line_is_no_replay(db, root):
    # A replay repeats the whole line: the same text on a line of another type or role is kept.
    (root / "s1.jsonl").write_bytes(line(id="a", text="same") + line(id="a", text="same", role="assistant"))
    (root / "s2.jsonl").write_bytes(line(id="a", text="same", type="system", role=None) + line(id="a", text="same"))
    summary = run(db, root)
    assert (summary.messages, summary.merged) == (3, 1)
    assert rows(db, "SELECT uuid LIKE 'a@%', session_id, type, role FROM messages ORDER BY session_id, seq") == [
        (0, "s1", "user", "user"), (1, "s1", "user", "assistant"), (1, "s2", "system", None),
    ]


def test_a_repeated_uuid_with_other_text_is_kept_and_later_children_point_to_it(db, root):
    first = line(id="a", text="damaged") + line(id="b", parent="a", text="child of the first")
    (root / "s1.jsonl").write_bytes(first + line(id="a", text="the real line"))
    summary = run(db, root)
    assert (summary.messages, summary.merged) == (3, 0)
    with open(root / "s1.jsonl", "ab") as fp:  # a later run: the link is remembered
        fp.write(line(id="c", parent="a", text="child of the second") + line(id="a", text="the real line"))
    summary = run(db, root)
    assert (summary.messages, summary.merged) == (1, 1)
    second = f"a@{len(first)}"
    assert rows(db, "SELECT uuid, parent_uuid, text FROM messages ORDER BY seq") == [
        ("a", None, "damaged"),
        ("b", "a", "child of the first"),
        (second, None, "the real line"),
        ("c", second, "child of the second"),
    ]


def test_m016_has_the_files_holding_a_renamed_message_read_again(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="damaged") + line(id="a", text="the real line"))
    (root / "s2.jsonl").write_bytes(line(id="b", text="plain"))
    run(db, root)
    change(db, "DELETE FROM _sqlite_migrations WHERE name = 'm016_reread_files_with_renamed_messages'")
    open_db(db).close()  # the migration runs again, as on a database from before it
    assert rows(db, "SELECT path LIKE '%s1.jsonl', parser_version FROM source_files ORDER BY path") == [(1, None), (0, 1)]
    summary = run(db, root)
    assert (summary.files_replayed, summary.files_skipped, summary.messages) == (1, 1, 2)
    assert rows(db, "SELECT uuid FROM messages ORDER BY uuid") == [("a",), (f"a@{len(line(id='a', text='damaged'))}",), ("b",)]


def test_partial_last_line_waits_for_its_writer(db, root):
    path = root / "s1.jsonl"
    whole = line(id="a", text="first") + line(id="b", text="second")
    path.write_bytes(whole[:-10])
    summary = run(db, root)
    assert (summary.messages, summary.errors) == (1, 0)
    assert rows(db, "SELECT pending_bytes FROM source_files") == [(len(line(id="b", text="second")) - 10,)]
    path.write_bytes(whole)
    run(db, root)
    assert rows(db, "SELECT uuid FROM messages ORDER BY seq") == [("a",), ("b",)]


def test_settled_garbage_tail_is_reported_once(db, root):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="first") + b'{"id": "b", "text": "trunc')
    old = 1_000_000_000
    os.utime(path, (old, old))
    assert run(db, root).errors == 1
    assert run(db, root).errors == 0  # unchanged since: not reported again
    assert rows(db, "SELECT line_no, reason FROM ingest_errors") == [(2, "unterminated last line that is not valid JSON")]


def test_a_settled_last_line_with_a_lone_surrogate_is_read(db, root):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="first") + b'{"id": "b", "text": "cut \\ud83d"}')  # no newline
    old = 1_000_000_000
    os.utime(path, (old, old))
    assert run(db, root).errors == 0
    assert rows(db, "SELECT uuid, text FROM messages ORDER BY seq") == [("a", "first"), ("b", "cut \ufffd")]


def chunks_of(data, sizes):
    start = 0
    for size in sizes:
        yield data[start:start + size]
        start += size
    yield data[start:]


def test_live_writer_in_random_chunks_gives_the_same_database(tmp_path, root):
    import random

    rng = random.Random(7)
    data = b"".join(
        line(id=f"m{i}", parent=f"m{i-1}" if i else None, text=f"message {i} " + "word " * rng.randint(0, 40), ts=f"2026-01-01T00:{i:02d}:00Z")
        for i in range(60)
    )
    one = tmp_path / "one.db"
    (root / "s.jsonl").write_bytes(data)
    run(one, root)
    expected = snapshot(one)

    live_root = tmp_path / "live"
    live_root.mkdir()
    many = tmp_path / "many.db"
    path = live_root / "s.jsonl"
    cuts = sorted(rng.sample(range(1, len(data)), 40))
    sizes = [b - a for a, b in zip([0] + cuts, cuts)]
    with open(path, "wb") as fp:
        for piece in chunks_of(data, sizes):
            fp.write(piece)
            fp.flush()
            ingest(many, {"toy": live_root}, sources=SOURCES)
    assert snapshot(many) == expected


def test_small_chunks_commit_many_times_with_the_same_result(tmp_path, root):
    data = b"".join(line(id=f"m{i}", text=f"row {i}") for i in range(100))
    (root / "s.jsonl").write_bytes(data)
    run(tmp_path / "a.db", root)
    run(tmp_path / "b.db", root, chunk_bytes=100)
    assert snapshot(tmp_path / "a.db") == snapshot(tmp_path / "b.db")


BAD_LINES = [
    (b"{not json", "invalid JSON"),
    (b"[1, 2]", "not a JSON object: list"),
    (b'"just a string"', "not a JSON object: str"),
    (b'{"id": "x", "text": \xff"\xfe"}', "invalid JSON: unexpected character"),  # (not UTF-8, outside a string)
    (b'{"id": "x", "text": "\\ud800" oops}', "invalid JSON"),  # a lone surrogate alone is read (U+FFFD)
    (b"[" * 5000 + b"]" * 5000, "invalid JSON: depth limit exceeded"),
]


def test_bad_lines_are_reported_with_file_and_line(db, root):
    data = line(id="ok1", text="fine") + b"\n".join(bad for bad, _ in BAD_LINES) + b"\n" + line(id="ok2", text="fine")
    (root / "bad.jsonl").write_bytes(data)
    summary = run(db, root)
    assert (summary.messages, summary.errors) == (2, len(BAD_LINES))
    errors = rows(db, "SELECT path, line_no, reason FROM ingest_errors ORDER BY line_no")
    assert [e[1] for e in errors] == list(range(2, 2 + len(BAD_LINES)))
    assert all(e[0] == str(root / "bad.jsonl") for e in errors)
    for (_, _, reason), (_, expected) in zip(errors, BAD_LINES):
        assert reason.startswith(expected)


def test_huge_line_is_reported_without_being_held(db, root, monkeypatch):
    monkeypatch.setattr("datasette_obelisk.sources.lines.MAX_LINE", 1000)
    from datasette_obelisk.sources import lines

    monkeypatch.setattr(lines, "read_lines", lines.read_lines)
    big = line(id="big", text="x" * 5000)
    (root / "s.jsonl").write_bytes(line(id="a", text="small") + big + line(id="b", text="after"))
    import datasette_obelisk.store.reader as reader_module

    original = reader_module.read_lines
    monkeypatch.setattr(reader_module, "read_lines", lambda *a, **k: original(*a, max_line=1000, **k))
    summary = run(db, root)
    assert (summary.messages, summary.errors) == (2, 1)
    assert rows(db, "SELECT line_no, byte_length, reason FROM ingest_errors") == [
        (2, len(big) - 1, f"line of {len(big) - 1} bytes exceeds the 1000 byte limit")
    ]


def test_a_huge_unterminated_last_line_is_reported_as_too_long(db, root, monkeypatch):
    import datasette_obelisk.store.reader as reader_module

    monkeypatch.setattr("datasette_obelisk.sources.lines.MAX_LINE", 1000)
    original = reader_module.read_lines
    monkeypatch.setattr(reader_module, "read_lines", lambda *a, **k: original(*a, max_line=1000, **k))
    big = line(id="big", text="x" * 5000).rstrip(b"\n")  # whole JSON, but no newline yet
    path = root / "s.jsonl"
    path.write_bytes(line(id="a", text="small") + big)
    os.utime(path, (1_000_000_000, 1_000_000_000))  # its writer went quiet long ago
    assert run(db, root).errors == 1
    assert rows(db, "SELECT line_no, reason FROM ingest_errors") == [
        (2, f"unterminated last line of {len(big)} bytes, over the 1000 byte limit")]


def test_unreadable_entries_are_reported(db, root):
    (root / "ok.jsonl").write_bytes(line(id="a", text="fine"))
    os.symlink(root / "loop.jsonl", root / "loop.jsonl")
    os.mkfifo(root / "fifo.jsonl")
    locked = root / "locked.jsonl"
    locked.write_bytes(line(id="b", text="secret"))
    locked.chmod(0)
    summary = run(db, root)
    reasons = dict(rows(db, "SELECT path, reason FROM ingest_errors"))
    assert summary.messages == (1 if os.geteuid() != 0 else 2)
    assert "Too many levels of symbolic links" in reasons[str(root / "loop.jsonl")]
    assert "not a regular file" in reasons[str(root / "fifo.jsonl")]
    if os.geteuid() != 0:  # root reads any file
        assert "Permission denied" in reasons[str(locked)]


def test_source_plugin_registers_through_the_hookspec(db, root):
    import toy_source
    from datasette_obelisk.plugins import get_sources, pm

    pm.register(toy_source, "toy-test")
    try:
        assert "toy" in get_sources()
        (root / "s.jsonl").write_bytes(line(id="a", text="via plugin"))
        summary = ingest(db, {"toy": root})
        assert summary.messages == 1
    finally:
        pm.unregister(toy_source)
    assert "toy" not in get_sources()


def test_schema_is_wal_with_busy_timeout(db):
    conn = open_db(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000


@pytest.mark.parametrize(
    "name",
    [
        "d-kimuson__claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "daaain__claude-code-log/dag_compact_after_rewind_preserved.jsonl",
        "daaain__claude-code-log/edge_cases.jsonl",
        "handgemacht-ai__claude-code-log/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
        "jazzyalex__agent-sessions/small.jsonl",
    ],
)
def test_real_log_written_in_random_chunks_gives_the_same_database(tmp_path, corpus, name):
    import random

    from datasette_obelisk.plugins import get_sources

    sources = {"claude": get_sources()["claude"]}
    data = (corpus / "claude-code" / name).read_bytes()
    whole = tmp_path / "whole" / "project"
    whole.mkdir(parents=True)
    (whole / "session.jsonl").write_bytes(data)
    ingest(tmp_path / "whole.db", {"claude": whole.parent}, sources=sources)

    rng = random.Random(name)
    live = tmp_path / "live" / "project"
    live.mkdir(parents=True)
    cuts = sorted(rng.sample(range(1, len(data)), 25))
    with open(live / "session.jsonl", "wb") as fp:
        for start, end in zip([0] + cuts, cuts + [len(data)]):
            fp.write(data[start:end])
            fp.flush()
            ingest(tmp_path / "live.db", {"claude": live.parent}, sources=sources)
    got, expected = snapshot(tmp_path / "live.db"), snapshot(tmp_path / "whole.db")
    assert got == expected, diff(got, expected)


def test_file_of_unknown_line_types_is_reported_as_drift(db, root, monkeypatch):
    from datasette_obelisk.records import Merged

    monkeypatch.setattr(
        "toy_source.ToyParser.feed", lambda self, data, position: [Merged(position, "unknown-type")]
    )
    (root / "s.jsonl").write_bytes(line(kind="future") * 3)
    summary = run(db, root)
    assert (summary.messages, summary.errors, summary.empty_files) == (0, 1, [str(root / "s.jsonl")])
    assert rows(db, "SELECT line_no, reason FROM ingest_errors") == [
        (0, "none of the 3 lines has a type the toy parser knows: format drift? (0 messages ingested)")
    ]


def test_commits_in_the_middle_of_a_file_do_not_disturb_reading(db, root):
    # A chunk commit hashes the file it is reading; that must not move the read position.
    data = b"".join(line(id=f"m{i}", text="x" * (i * 300)) for i in range(80))
    (root / "s.jsonl").write_bytes(data)
    summary = run(db, root, chunk_bytes=5000)
    assert (summary.messages, summary.errors) == (80, 0)
    assert rows(db, "SELECT SUM(text_length) FROM messages") == [(sum(i * 300 for i in range(80)),)]


def claude_lines(*objects):
    return b"".join(line(**obj) for obj in objects)


SESSION = "5e551011-0000-4000-8000-000000000001"
AGENT = "e1c84ba5"


def main_lines(session_id=SESSION):
    """A 2.0.x main transcript whose Task call ran agent e1c84ba5."""
    common = {"sessionId": session_id, "isSidechain": False, "cwd": "/p", "version": "2.0.46"}
    task = {"type": "tool_use", "id": "toolu_task", "name": "Task", "input": {"description": "Look", "prompt": "Look around"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_task", "content": [{"type": "text", "text": "Found it"}]}
    return claude_lines(
        {**common, "type": "user", "uuid": "m1", "parentUuid": None, "timestamp": "2025-11-19T22:53:30Z",
         "message": {"role": "user", "content": "Find the thing"}},
        {**common, "type": "assistant", "uuid": "m2", "parentUuid": "m1", "timestamp": "2025-11-19T22:53:34Z",
         "message": {"role": "assistant", "id": "msg_1", "content": [task]}},
        {**common, "type": "user", "uuid": "m3", "parentUuid": "m2", "timestamp": "2025-11-19T22:55:34Z",
         "message": {"role": "user", "content": [result]},
         "toolUseResult": {"status": "completed", "agentId": AGENT, "totalDurationMs": 120000, "totalTokens": 600}},
    )


def agent_lines():
    """Its 2.0.x agent transcript: sidechain lines naming the agent and the parent's sessionId."""
    common = {"sessionId": SESSION, "isSidechain": True, "agentId": AGENT, "cwd": "/p", "version": "2.0.46"}
    return claude_lines(
        {**common, "type": "user", "uuid": "s1", "parentUuid": None, "timestamp": "2025-11-19T22:53:35Z",
         "message": {"role": "user", "content": "Look around"}},
        {**common, "type": "assistant", "uuid": "s2", "parentUuid": "s1", "timestamp": "2025-11-19T22:54:00Z",
         "message": {"role": "assistant", "id": "msg_2", "content": [{"type": "text", "text": "Found it"}]}},
    )


def linkage(db):
    return (
        rows(db, "SELECT id, parent_session_id, relationship, agent_id, message_count, title FROM sessions ORDER BY id"),
        rows(db, "SELECT session_id, agent_id, child_session_id, parent_tool_use_id, duration_ms FROM subagents"),
        rows(db, "SELECT uuid, session_id, agent_id FROM messages ORDER BY uuid"),
    )


@pytest.mark.parametrize("main_name", [f"{SESSION}.jsonl", "renamed main.jsonl"])
@pytest.mark.parametrize("agent_first", [False, True])
def test_a_renamed_claude_agent_file_links_like_a_correctly_named_one(tmp_path, main_name, agent_first):
    def ingest_files(name, files):
        project = tmp_path / name / "projects" / "-p"
        project.mkdir(parents=True)
        path = tmp_path / f"{name}.db"
        order = reversed(list(files.items())) if agent_first else files.items()
        for file_name, data in order:  # one run each: either file may come first
            (project / file_name).write_bytes(data)
            ingest(path, {"claude": tmp_path / name})
        return path

    main = main_name[: -len(".jsonl")]
    named = ingest_files("named", {main_name: main_lines(), f"agent-{AGENT}.jsonl": agent_lines()})
    renamed = ingest_files("renamed", {main_name: main_lines(), "agent-copy (2).jsonl.bak.jsonl": agent_lines()})
    child = f"{SESSION}:agent-{AGENT}"
    expected = (
        sorted([(main, None, None, None, 1, "Find the thing"), (child, main, "subagent", AGENT, 2, "Look around")]),
        [(main, AGENT, child, "toolu_task", 120000)],
        [("m1", main, None), ("m2", main, None), ("m3", main, None), ("s1", child, AGENT), ("s2", child, AGENT)],
    )
    assert linkage(renamed) == linkage(named) == expected


def test_an_agent_whose_spawning_row_predates_its_name_is_still_adopted(tmp_path):
    # Parser version 2 named a main file's agents after the file
    # ("renamed main:agent-…"), and the row keeps its first child: the agent's
    # session, read again, is still adopted by the one call that names it.
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    (project / "renamed main.jsonl").write_bytes(main_lines())
    (project / "agent copy.jsonl").write_bytes(agent_lines())
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    expected = linkage(db)
    child = f"{SESSION}:agent-{AGENT}"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE subagents SET child_session_id = 'renamed main:agent-e1c84ba5'")
        conn.execute("INSERT INTO subagents (agent_id, session_id, child_session_id) VALUES (?, ?, ?)", [AGENT, SESSION, child])
        conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", [SESSION, child])
        conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.close()
    ingest(db, {"claude": tmp_path / "claude"})
    assert linkage(db) == expected
    assert expected[1] == [("renamed main", AGENT, child, "toolu_task", 120000)]


def test_a_session_renamed_back_takes_the_title_it_had(tmp_path):
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    renames = [{"type": "custom-title", "customTitle": t, "sessionId": SESSION} for t in ("C1", "C2", "C1")]
    ai = [{"type": "ai-title", "aiTitle": t, "sessionId": SESSION} for t in ("AI one", "AI two", "AI one")]
    (project / f"{SESSION}.jsonl").write_bytes(main_lines() + claude_lines(*ai))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions") == [("AI one", "ai")]
    with (project / f"{SESSION}.jsonl").open("ab") as log:
        log.write(claude_lines(*renames[:2]))
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions") == [("C2", "custom")]
    with (project / f"{SESSION}.jsonl").open("ab") as log:
        log.write(claude_lines(renames[2]))
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions") == [("C1", "custom")]
    assert rows(db, "SELECT kind, title FROM titles ORDER BY id") == [
        ("first_prompt", "Find the thing"), ("ai", "AI two"), ("ai", "AI one"), ("custom", "C2"), ("custom", "C1")
    ]


def test_a_title_kept_in_custom_title_json_titles_a_session_whose_log_gives_none(tmp_path):
    # Claude Code 2.1.3xx writes the title to <session>/custom-title.json after
    # appending its custom-title line, also when that append failed.
    project = tmp_path / "claude" / "projects" / "-p"
    (project / SESSION).mkdir(parents=True)
    log = project / f"{SESSION}.jsonl"
    log.write_bytes(main_lines())
    sidecar = project / SESSION / "custom-title.json"
    sidecar.write_text(json.dumps({"customTitle": " Kept aside ", "by": "user", "at": "2026-12-01T12:00:00.000Z"}))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions WHERE id = ?", [SESSION]) == [("Kept aside", "custom")]
    # A custom-title line outranks it, read before or after it.
    with log.open("ab") as out:
        out.write(claude_lines({"type": "custom-title", "customTitle": "From the log", "sessionId": SESSION}))
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions WHERE id = ?", [SESSION]) == [("From the log", "custom")]
    sidecar.write_text(json.dumps({"customTitle": "Set aside later", "by": "user", "at": "2026-12-01T13:00:00.000Z"}))
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions WHERE id = ?", [SESSION]) == [("From the log", "custom")]
    # The file names the session, but is not its log: the session is archived once its log is gone.
    log.unlink()
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, availability FROM sessions WHERE id = ?", [SESSION]) == [("From the log", "archived")]


def test_a_log_rewritten_with_words_of_the_same_length_is_found_by_its_new_words_and_its_old_ones(tmp_path):
    from datasette_obelisk.query.search import search_sessions

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    log = project / f"{SESSION}.jsonl"
    log.write_bytes(main_lines())
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    log.write_bytes(main_lines().replace(b"Find the thing", b"Seek the thing"))  # the old file gone, archived
    ingest(db, {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    assert [hit["session"]["id"] for hit in search_sessions(conn, "see", prefix=True)["items"]] == [SESSION]
    assert [hit["session"]["id"] for hit in search_sessions(conn, "fin", prefix=True)["items"]] == [SESSION]
    assert json.loads(conn.execute("SELECT body_words FROM session_docs").fetchone()[0]) == {
        "around": 1, "find": 1, "found": 1, "it": 1, "look": 2, "seek": 1, "task": 1, "the": 2, "thing": 2}


def test_a_session_s_name_titles_it_below_an_ai_title(tmp_path):
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    (project / f"{SESSION}.jsonl").write_bytes(
        main_lines() + claude_lines({"type": "agent-name", "agentName": "thing-finder", "sessionId": SESSION}))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions") == [("thing-finder", "name")]  # over the first prompt
    with (project / f"{SESSION}.jsonl").open("ab") as log:
        log.write(claude_lines({"type": "ai-title", "aiTitle": "Finding the thing", "sessionId": SESSION}))
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions") == [("Finding the thing", "ai")]


WORKFLOW_SESSION = "3f000000-0000-4000-8000-000000000002"


def workflow_files():
    """A main log whose Workflow call launched run wf_sp01, the run's document (naming no call) and its agent."""
    common = {"sessionId": WORKFLOW_SESSION, "isSidechain": False, "cwd": "/p", "version": "2.1.50"}
    call = {"type": "tool_use", "id": "toolu_wf1", "name": "Workflow", "input": {"scriptPath": "/s.js"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_wf1", "content": "Workflow launched in background. Task ID: task_sp01"}
    # An earlier run whose task id begins with this one's: not its call.
    other = {"type": "tool_use", "id": "toolu_wf0", "name": "Workflow", "input": {"scriptPath": "/t.js"}}
    other_result = {"type": "tool_result", "tool_use_id": "toolu_wf0", "content": "Task ID: task_sp011"}
    main = claude_lines(
        {**common, "type": "user", "uuid": "w-u1", "parentUuid": None, "timestamp": "2025-03-01T10:00:00Z",
         "message": {"role": "user", "content": "Run the docs sweep"}},
        {**common, "type": "assistant", "uuid": "w-a0", "parentUuid": "w-u1", "timestamp": "2025-03-01T10:00:00.100Z",
         "message": {"role": "assistant", "id": "mw0", "content": [other]}},
        {**common, "type": "user", "uuid": "w-r0", "parentUuid": "w-a0", "timestamp": "2025-03-01T10:00:00.200Z",
         "message": {"role": "user", "content": [other_result]}},
        {**common, "type": "assistant", "uuid": "w-a1", "parentUuid": "w-r0", "timestamp": "2025-03-01T10:00:01Z",
         "message": {"role": "assistant", "id": "mw1", "content": [call]}},
        {**common, "type": "user", "uuid": "w-r1", "parentUuid": "w-a1", "timestamp": "2025-03-01T10:00:02Z",
         "message": {"role": "user", "content": [result]},
         "toolUseResult": {"isAsync": True, "status": "async_launched", "runId": "wf_sp01", "taskId": "task_sp01"}},
        # A later call whose result names the run itself: a status check, not the launch.
        {**common, "type": "assistant", "uuid": "w-a2", "parentUuid": "w-r1", "timestamp": "2025-03-01T10:00:05Z",
         "message": {"role": "assistant", "id": "mw2", "content": [{**call, "id": "toolu_wf2"}]}},
        {**common, "type": "user", "uuid": "w-r2", "parentUuid": "w-a2", "timestamp": "2025-03-01T10:00:06Z",
         "message": {"role": "user", "content": [{**result, "tool_use_id": "toolu_wf2", "content": "Run wf_sp01: completed"}]}},
    )
    document = {"runId": "wf_sp01", "taskId": "task_sp01", "status": "completed", "workflowName": "docs-sweep",
                "workflowProgress": [{"type": "workflow_agent", "agentId": "agsp0001", "label": "sweep:a"}]}
    agent = claude_lines({**common, "isSidechain": True, "agentId": "agsp0001", "type": "user", "uuid": "g-u1",
                          "parentUuid": None, "timestamp": "2025-03-01T10:00:03Z",
                          "message": {"role": "user", "content": "Sweep the docs"}})
    run = f"{WORKFLOW_SESSION}/subagents/workflows/wf_sp01"
    return {
        f"{WORKFLOW_SESSION}.jsonl": main,
        f"{WORKFLOW_SESSION}/workflows/wf_sp01.json": json.dumps(document).encode(),
        f"{run}/agent-agsp0001.jsonl": agent,
        f"{run}/agent-agsp0001.meta.json": b'{"agentType": "workflow-subagent"}',
    }


@pytest.mark.parametrize("main_first", [True, False])
def test_a_workflow_run_is_linked_to_the_call_whose_result_names_its_task(tmp_path, main_first):
    project = tmp_path / "claude" / "projects" / "-p"
    db = tmp_path / "obelisk.db"
    files = list(workflow_files().items())
    for batch in (files[:1], files[1:]) if main_first else (files[1:], files[:1]):
        for name, data in batch:
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_bytes(data)
        ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT run_id, session_id, parent_tool_use_id FROM workflows") == [
        ("wf_sp01", WORKFLOW_SESSION, "toolu_wf1")]
    assert rows(db, "SELECT id, relationship, agent_type FROM sessions ORDER BY id") == [
        (WORKFLOW_SESSION, None, None), (f"{WORKFLOW_SESSION}:agent-agsp0001", "workflow", "workflow-subagent")]


def test_a_workflow_agent_s_meta_json_read_after_its_session_types_it(tmp_path):
    """The ``.meta.json`` naming a workflow agent's type read in a later ingest
    than the agent's log gives the rows of one ingest."""
    files = workflow_files()
    db, once = tmp_path / "obelisk.db", tmp_path / "once.db"
    for batch in ([n for n in files if not n.endswith(".meta.json")], [n for n in files if n.endswith(".meta.json")]):
        for name in batch:
            (tmp_path / "claude" / "projects" / "-p" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / "claude" / "projects" / "-p" / name).write_bytes(files[name])
        ingest(db, {"claude": tmp_path / "claude"})
    ingest(once, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT id, relationship, agent_type FROM sessions ORDER BY id") == [
        (WORKFLOW_SESSION, None, None), (f"{WORKFLOW_SESSION}:agent-agsp0001", "workflow", "workflow-subagent")]
    assert snapshot(db) == snapshot(once)


def nested_agent_files(named: bool = False, footer: bool = False):
    """A 2.1.172+ session whose agent ab1 started agent ab2 (files flat under subagents/);
    ``named``: ab1's result names ab2 too, and its call asks for another type than ab2's own;
    ``footer``: the result's text ends as Claude Code ends it (the agent and its figures)."""
    common = {"sessionId": "cc1", "cwd": "/p", "version": "2.1.180"}

    def exchange(prefix, prompt, call, agent=None, sidechain=False, kind=None):
        said = ("done\nagentId: ab2 (use SendMessage with to: 'ab2' to continue this agent)\n"
                "<usage>total_tokens: 4321\ntool_uses: 3\nduration_ms: 8765</usage>") if footer and sidechain else "done"
        result = {"type": "tool_result", "tool_use_id": call, "content": said}
        details = {"toolUseResult": {"status": "completed", "agentId": agent}} if agent else {}
        head = {**common, "isSidechain": sidechain, **({"agentId": prefix} if sidechain else {})}
        return claude_lines(
            {**head, "type": "user", "uuid": f"{prefix}-u", "parentUuid": None, "timestamp": "2026-05-01T10:00:00Z",
             "message": {"role": "user", "content": prompt}},
            {**head, "type": "assistant", "uuid": f"{prefix}-a", "parentUuid": f"{prefix}-u",
             "timestamp": "2026-05-01T10:00:01Z", "message": {"role": "assistant", "id": f"m-{prefix}", "content": [
                 {"type": "tool_use", "id": call, "name": "Agent", "input": {
                     "description": "dig", "prompt": "Dig", **({"subagent_type": kind} if kind else {})}}]}},
            {**head, "type": "user", "uuid": f"{prefix}-r", "parentUuid": f"{prefix}-a", **details,
             "timestamp": "2026-05-01T10:00:09Z", "message": {"role": "user", "content": [result]}},
        )

    return {
        "cc1.jsonl": exchange("m", "Look into it", "toolu_top", agent="ab1"),
        "cc1/subagents/agent-ab1.jsonl": exchange("ab1", "Dig", "toolu_nested", sidechain=True,
                                                  **({"agent": "ab2", "kind": "from-call"} if named else {})),
        "cc1/subagents/agent-ab1.meta.json": b'{"agentType": "general-purpose", "toolUseId": "toolu_top"}',
        "cc1/subagents/agent-ab2.jsonl": claude_lines(
            {**common, "isSidechain": True, "agentId": "ab2", "type": "user", "uuid": "ab2-u", "parentUuid": None,
             "timestamp": "2026-05-01T10:00:02Z", "message": {"role": "user", "content": "Dig deeper"}}),
        "cc1/subagents/agent-ab2.meta.json": b'{"agentType": "Explore", "toolUseId": "toolu_nested", "spawnDepth": 2}',
    }


@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("split", [0, 1, 2, 3, 4])
def test_an_agent_another_agent_started_is_under_that_agent(tmp_path, split, named):
    project = tmp_path / "claude" / "projects" / "-p"
    db = tmp_path / "obelisk.db"
    files = list(nested_agent_files(named).items())
    files = files[split:] + files[:split]  # the nesting call read before or after the nested agent
    for batch in (files[:2], files[2:]):
        for name, data in batch:
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_bytes(data)
        ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT agent_id, session_id, child_session_id, parent_tool_use_id FROM subagents ORDER BY agent_id") == [
        ("ab1", "cc1", "cc1:agent-ab1", "toolu_top"),
        ("ab2", "cc1:agent-ab1", "cc1:agent-ab2", "toolu_nested"),
    ]
    assert rows(db, "SELECT id, parent_session_id, agent_type FROM sessions WHERE agent_id IS NOT NULL ORDER BY id") == [
        ("cc1:agent-ab1", "cc1", "general-purpose"), ("cc1:agent-ab2", "cc1:agent-ab1", "Explore")]  # (.meta.json's)
    once = tmp_path / "once.db"
    ingest(once, {"claude": tmp_path / "claude"})
    assert snapshot(once) == snapshot(db)


@pytest.mark.parametrize("footer", [False, True])
def test_a_nested_agent_ingested_one_file_at_a_time_takes_its_type(tmp_path, footer):
    project = tmp_path / "claude" / "projects" / "-p"
    db = tmp_path / "obelisk.db"
    files = nested_agent_files(named=not footer, footer=footer)
    for name in ["cc1/subagents/agent-ab1.jsonl", "cc1/subagents/agent-ab2.jsonl", "cc1/subagents/agent-ab2.meta.json",
                 "cc1/subagents/agent-ab1.meta.json", "cc1.jsonl"]:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_bytes(files[name])
        ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT id, parent_session_id, agent_type FROM sessions WHERE agent_id IS NOT NULL ORDER BY id") == [
        ("cc1:agent-ab1", "cc1", "general-purpose"), ("cc1:agent-ab2", "cc1:agent-ab1", "Explore")]
    once = tmp_path / "once.db"
    ingest(once, {"claude": tmp_path / "claude"})
    assert snapshot(once) == snapshot(db)


def test_a_file_read_again_alone_keeps_its_lines_places_renamed_copies_too(tmp_path):
    """Two files of one agent, the first gone from disk; the second, holding a changed
    copy of a line of the first (stored as ``x@<offset>``), is replaced and read again alone."""
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)

    def agent_line(uuid, parent, role, text, second):
        content = text if role == "user" else [{"type": "text", "text": text}]
        return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1", "isSidechain": True,
                "agentId": "abc", "timestamp": f"2026-01-01T00:00:{second:02d}Z",
                "message": {"role": role, "content": content, **({"id": f"m-{uuid}"} if role == "assistant" else {})}}

    first, second = project / "agent-abc.jsonl", project / "agent-abc-2.jsonl"
    first.write_bytes(claude_lines(agent_line("x", None, "user", "first prompt", 1), agent_line("a2", "x", "assistant", "a", 2)))
    second.write_bytes(claude_lines(agent_line("b1", "a2", "user", "b prompt", 3),
                                    agent_line("x", "b1", "user", "first prompt CHANGED", 4),
                                    agent_line("b3", "x", "assistant", "b", 5)))
    os.utime(first, (1e9, 1e9))
    os.utime(second, (1e9 + 10, 1e9 + 10))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    first.unlink()
    ingest(db, {"claude": tmp_path / "claude"})
    placed = "SELECT uuid, seq FROM messages ORDER BY seq"
    expected = rows(db, placed)
    assert [uuid for uuid, _ in expected][2:] == ["b1", next(u for u, _ in expected if u.startswith("x@")), "b3"]
    (project / "copy.tmp").write_bytes(second.read_bytes())
    os.replace(project / "copy.tmp", second)  # (a new inode: read again from its start)
    assert ingest(db, {"claude": tmp_path / "claude"}).files_replayed == 1
    assert rows(db, placed) == expected


@pytest.mark.parametrize("split", [0, 2])
def test_a_nested_agent_takes_its_figures_from_its_result_s_footer(tmp_path, split):
    project = tmp_path / "claude" / "projects" / "-p"
    db = tmp_path / "obelisk.db"
    files = list(nested_agent_files(footer=True).items())
    for batch in (files[split:], files[:split]):
        for name, data in batch:
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            (project / name).write_bytes(data)
        ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT agent_id, session_id, parent_tool_use_id, duration_ms, total_tokens FROM subagents "
                    "WHERE agent_id = 'ab2'") == [("ab2", "cc1:agent-ab1", "toolu_nested", 8765, 4321)]
    once = tmp_path / "once.db"
    ingest(once, {"claude": tmp_path / "claude"})
    assert snapshot(once) == snapshot(db)


def test_m035_puts_an_archived_nested_agent_under_its_agent(tmp_path):
    from datasette_obelisk.store.db import open_db

    project = tmp_path / "claude" / "projects" / "-p"
    for name, data in nested_agent_files().items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_bytes(data)
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    shutil.rmtree(project)  # the agent pruned its logs: the archive keeps them
    ingest(db, {"claude": tmp_path / "claude"})
    placed = "SELECT sa.agent_id, sa.session_id, s.parent_session_id FROM subagents sa JOIN sessions s ON s.id = sa.child_session_id ORDER BY 1"
    expected = rows(db, placed)
    assert expected == [("ab1", "cc1", "cc1"), ("ab2", "cc1:agent-ab1", "cc1:agent-ab1")]
    change(db, "UPDATE subagents SET session_id = 'cc1' WHERE agent_id = 'ab2'",  # as derived before
           "UPDATE sessions SET parent_session_id = 'cc1' WHERE id = 'cc1:agent-ab2'",
           "DELETE FROM _sqlite_migrations WHERE name = 'm035_rederive_archived_agents_and_titles'")
    open_db(db).close()
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, placed) == expected
    assert rows(db, "SELECT DISTINCT availability FROM sessions") == [("archived",)]


def test_m029_reads_again_the_files_whose_lines_failed_on_a_lone_surrogate(tmp_path):
    from datasette_obelisk.store.db import open_db

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    cut = b'{"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "fine \\ud83d"}}\n'
    (project / "s1.jsonl").write_bytes(cut)
    (project / "s2.jsonl").write_bytes(claude_lines({"type": "user", "uuid": "v1", "sessionId": "s2",
                                                     "message": {"role": "user", "content": "other"}}))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT uuid, text FROM messages ORDER BY uuid") == [("u1", "fine \ufffd"), ("v1", "other")]
    change(db, "DELETE FROM messages WHERE uuid = 'u1'",  # as the line was stored before
           "INSERT INTO ingest_errors (file_id, path, line_no, byte_offset, byte_length, reason, created_at) "
           "SELECT id, path, 1, 0, 10, 'invalid JSON: no low surrogate in string: line 1 column 8 (char 7)', '' "
           "FROM source_files WHERE path LIKE '%s1.jsonl'",
           "DELETE FROM _sqlite_migrations WHERE name = 'm029_reread_lone_surrogate_lines'")
    open_db(db).close()
    assert rows(db, "SELECT path LIKE '%s1.jsonl' FROM source_files WHERE parser_version IS NULL") == [(1,)]
    summary = ingest(db, {"claude": tmp_path / "claude"})
    assert (summary.files_read, summary.files_skipped, summary.errors) == (1, 1, 0)
    assert rows(db, "SELECT uuid, text FROM messages ORDER BY uuid") == [("u1", "fine \ufffd"), ("v1", "other")]
    assert rows(db, "SELECT count(*) FROM ingest_errors") == [(0,)]


def test_m030_reads_again_the_files_that_named_a_session_twice(tmp_path):
    from datasette_obelisk.store.db import open_db

    thread, other = "019c8a59-e9dd-71f0-9ae3-4079fe9726a9", "019c8a59-0000-7000-8000-000000000002"
    home = tmp_path / "codex"
    day = home / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    for session in (thread, other):
        meta = {"timestamp": "2026-02-23T12:00:00.000Z", "type": "session_meta",
                "payload": {"id": session, "timestamp": "2026-02-23T12:00:00.000Z", "cwd": "/w"}}
        (day / f"rollout-2026-02-23T12-00-00-{session}.jsonl").write_text(json.dumps(meta) + "\n")
    names = [(thread, "I1"), (thread, "I2"), (thread, "I1"), (other, "Only one")]
    (home / "session_index.jsonl").write_text(
        "".join(json.dumps({"id": s, "thread_name": n, "updated_at": "2026-02-23T12:00:00Z"}) + "\n" for s, n in names))
    db = tmp_path / "obelisk.db"
    ingest(db, {"codex": home})
    assert rows(db, "SELECT id, title FROM sessions ORDER BY id") == [(f"codex:{other}", "Only one"), (f"codex:{thread}", "I1")]
    change(db, "DELETE FROM _sqlite_migrations WHERE name = 'm030_reread_retitled_files'")
    open_db(db).close()
    assert rows(db, "SELECT path LIKE '%session_index.jsonl' FROM source_files WHERE parser_version IS NULL") == [(1,)]
    assert ingest(db, {"codex": home}).files_read == 3  # the index, and with it the logs of the sessions it names
    assert rows(db, "SELECT id, title FROM sessions ORDER BY id") == [(f"codex:{other}", "Only one"), (f"codex:{thread}", "I1")]


def test_m031_forgets_gone_files_nothing_was_read_from(db, root):
    (root / "s1.jsonl").write_bytes(line(id="a", text="keep me"))
    run(db, root)
    change(db, "INSERT INTO source_files (path, source, kind, missing) VALUES ('/gone/dangling.jsonl', 'toy', 'session', 1)",
           "INSERT INTO ingest_errors (file_id, path, line_no, byte_offset, reason, created_at) SELECT id, path, 0, 0, "
           "'cannot read file: [Errno 2] No such file or directory', '' FROM source_files WHERE path = '/gone/dangling.jsonl'",
           "UPDATE source_files SET missing = 1 WHERE path LIKE '%s1.jsonl'",  # gone, but it holds a message
           "DELETE FROM _sqlite_migrations WHERE name = 'm031_forget_gone_files_never_read'")
    open_db(db).close()
    assert rows(db, "SELECT path, missing FROM source_files") == [(str(root / "s1.jsonl"), 1)]
    assert rows(db, "SELECT count(*) FROM ingest_errors") == [(0,)]


def test_m032_fixes_what_logs_gone_from_disk_left_and_derives_their_sessions_again(tmp_path):
    from datasette_obelisk.store.db import open_db

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    summary = "This session is being continued from a previous conversation that ran out of context. Walrus."
    (project / "s1.jsonl").write_bytes(claude_lines(
        {"type": "user", "uuid": "c1", "parentUuid": None, "sessionId": "s1", "timestamp": "2025-05-01T11:00:00Z",
         "message": {"role": "user", "content": summary}},
        {"type": "user", "uuid": "c2", "parentUuid": "c1", "sessionId": "s1", "timestamp": "2025-05-01T11:00:01Z",
         "message": {"role": "user", "content": "Go on"}}))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    fresh = rows(db, "SELECT uuid, is_compact_summary FROM messages ORDER BY uuid"), rows(db, "SELECT id, source FROM summaries")
    assert fresh == ([("c1", 1), ("c2", 0)], [("c1", "compaction")])
    (project / "s1.jsonl").unlink()
    ingest(db, {"claude": tmp_path / "claude"})  # gone: archived
    change(db, "UPDATE messages SET is_compact_summary = 0", "DELETE FROM summaries", "DELETE FROM titles",  # as parser 8 left them
           "INSERT INTO titles (session_id, kind, title, file_id) VALUES ('s1', 'first_prompt', 'This session is being continued from a previous conversation that ran out of context. Walrus.', 1)",
           "DELETE FROM _sqlite_migrations WHERE name = 'm032_rederive_archived_sessions'")
    open_db(db).close()
    assert rows(db, "SELECT session_id FROM derive_queue") == [("s1",)]
    ingest(db, {"claude": tmp_path / "claude"})
    assert (rows(db, "SELECT uuid, is_compact_summary FROM messages ORDER BY uuid"), rows(db, "SELECT id, source FROM summaries")) == fresh
    assert rows(db, "SELECT title, title_source FROM sessions") == [("Go on", "first_prompt")]
    assert rows(db, "SELECT kind, title FROM titles") == [("first_prompt", "Go on")]


def test_a_summary_title_reaches_its_session_through_a_chain_of_summaries(tmp_path):
    """Deriving a session also derives the sessions whose leaf its summary lines
    name, and theirs in turn: a session derived that way leaves the queue, so
    the sessions its own summaries name must not wait for it."""
    from datasette_obelisk.plugins import get_sources
    from datasette_obelisk.store import derive
    from datasette_obelisk.store.db import transaction
    from datasette_obelisk.store.ingest import Ingester

    project = tmp_path / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)

    def session(sid, prompt, summary=None):
        lines = [{"type": "summary", "summary": summary[0], "leafUuid": summary[1]}] if summary else []
        lines += [
            {"type": "user", "uuid": f"{sid}-u", "parentUuid": None, "sessionId": sid,
             "timestamp": "2026-03-01T10:00:00.000Z", "message": {"role": "user", "content": prompt}},
            {"type": "assistant", "uuid": f"{sid}-a", "parentUuid": f"{sid}-u", "sessionId": sid,
             "timestamp": "2026-03-01T10:00:01.000Z",
             "message": {"role": "assistant", "id": f"msg-{sid}", "content": [{"type": "text", "text": "done"}]}},
        ]
        (project / f"{sid}.jsonl").write_text("".join(json.dumps(item) + "\n" for item in lines))

    roots = {"claude": tmp_path / ".claude"}
    sources = {"claude": get_sources()["claude"]}
    db = tmp_path / "o.db"
    session("a", "alpha prompt")
    ingest(db, roots, sources=sources)
    session("b", "beta prompt", ("Title of a", "a-a"))
    session("y", "gamma prompt", ("Title of b", "b-a"))
    conn = open_db(db)
    ingester = Ingester(conn, sources, roots)
    for unit in ingester.discover():
        ingester.ingest_file(unit)
    ingester.flush(force=True)
    with transaction(conn):  # y first, alone, as the writer may while it waits for a reader
        derived = derive.derive_sessions(conn, ["y"])
        conn.executemany("DELETE FROM derive_queue WHERE session_id = ?", [(s,) for s in derived])
    ingester.derive_pending()
    conn.close()
    assert rows(db, "SELECT id, title, title_source FROM sessions ORDER BY id") == [
        ("a", "Title of a", "summary"), ("b", "Title of b", "summary"), ("y", "gamma prompt", "first_prompt"),
    ]


@pytest.mark.parametrize("first, last", [("00", "ff"), ("ff", "00")])
def test_the_summary_of_the_latest_leaf_titles_the_session_whatever_file_holds_it(tmp_path, first, last):
    project = tmp_path / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    chain = [("u1", "user", "Original prompt"), ("a1", "assistant", "one"), ("u2", "user", "go on"), ("a2", "assistant", "two")]
    lines, parent = [], None
    for i, (uuid, role, text) in enumerate(chain):
        lines.append({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "timestamp": f"2026-03-01T10:00:0{i}Z",
                      "message": {"role": role, "content": [{"type": "text", "text": text}], "id": f"msg-{uuid}"}})
        parent = uuid
    (project / "s.jsonl").write_text("".join(json.dumps(item) + "\n" for item in lines))
    for name, summary, leaf in [(first, "About the latest leaf", "a2"), (last, "About an older leaf", "a1")]:
        (project / f"{name}.jsonl").write_text(json.dumps({"type": "summary", "summary": summary, "leafUuid": leaf}) + "\n")
    ingest(tmp_path / "o.db", {"claude": tmp_path / ".claude"})
    assert rows(tmp_path / "o.db", "SELECT title, title_source FROM sessions") == [("About the latest leaf", "summary")]


def test_a_given_folder_in_which_its_source_finds_no_log_is_warned_about(db, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a log")
    summary = ingest(db, {"toy": empty}, sources=SOURCES)
    assert (summary.files, summary.as_dict()["warnings"]) == (0, [
        {"source": "toy", "path": str(empty), "message": f"no toy logs found in {empty}"}
    ])
    assert ingest(db, {"toy": empty}, sources=SOURCES, expect_logs=()).warnings == []  # e.g. a default folder


def test_a_renamed_claude_project_folder_names_its_sessions_as_a_fresh_ingest_does(tmp_path):
    projects = tmp_path / "claude" / "projects"
    (projects / "-p").mkdir(parents=True)
    (projects / "-p" / f"{SESSION}.jsonl").write_bytes(main_lines())
    (projects / "-p" / f"agent-{AGENT}.jsonl").write_bytes(agent_lines())
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    (projects / "-p").rename(projects / "-p-renamed")
    ingest(db, {"claude": tmp_path / "claude"})
    fresh = tmp_path / "fresh.db"
    ingest(fresh, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT DISTINCT project FROM sessions") == [("-p-renamed",)]
    assert diff(snapshot(db), snapshot(fresh)) == []


@pytest.mark.parametrize("replaced", ["deleted first", "rewritten in place"])
def test_a_file_holding_copies_of_anothers_lines_can_be_replaced_without_losing_them(tmp_path, replaced):
    """Codex rollout B copies lines A has not written yet (ids are A's thread and byte
    offset, the same in both), so B's rows hold them; A later writes them as
    duplicates. B replaced by other lines must not take them away."""
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "gen", seed=2, target_bytes=1_000_000, claude=False)
    first, second = sorted((tmp_path / "gen" / ".codex").rglob("rollout-*.jsonl"))[:2]
    a_bytes, own = first.read_bytes(), second.read_bytes()
    live = tmp_path / "live" / ".codex" / "sessions"
    live.mkdir(parents=True)
    a, b = live / first.name, live / second.name
    roots = {"codex": tmp_path / "live" / ".codex"}
    db, fresh = tmp_path / "obelisk.db", tmp_path / "fresh.db"
    a.write_bytes(a_bytes[: a_bytes.index(b"\n", len(a_bytes) // 3) + 1])
    b.write_bytes(a_bytes[: a_bytes.index(b"\n", 2 * len(a_bytes) // 3) + 1])
    ingest(db, roots)
    if replaced == "deleted first":
        b.unlink()
        ingest(db, roots)
        b.write_bytes(own)
    else:
        with open(b, "r+b") as fp:
            fp.truncate(0)
        b.write_bytes(own)
    a.write_bytes(a_bytes)
    ingest(db, roots)
    ingest(fresh, roots)
    assert diff(snapshot(db), snapshot(fresh)) == []


def claude_session(tmp_path, *objects):
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True, exist_ok=True)
    common = {"sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z"}
    (project / "s1.jsonl").write_bytes(claude_lines(*({**common, **o} for o in objects)))
    return tmp_path / "claude"


def test_reasoning_lines_are_no_messages_and_absurd_counts_are_dropped(tmp_path):
    root = claude_session(
        tmp_path,
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Why?"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": {
            "role": "assistant", "id": "m1", "content": [{"type": "thinking", "thinking": "hmm"}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "a1", "message": {
            "role": "assistant", "id": "m1", "content": [{"type": "redacted_thinking", "data": "EpAx"}]}},
        {"type": "assistant", "uuid": "a3", "parentUuid": "a2", "message": {
            "role": "assistant", "id": "m1", "content": [{"type": "text", "text": "Because."}],
            "usage": {"input_tokens": 2**64 - 1, "output_tokens": 5}}},
    )
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": root})
    assert rows(db, "SELECT message_count, input_tokens, output_tokens FROM sessions") == [(2, 0, 5)]


def test_an_inline_agent_takes_the_last_folder_and_branch_its_lines_name_however_they_arrive(tmp_path):
    main = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "Start"}, "cwd": "/p"}
    side = {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "Look"}}
    lines = [
        main,
        {**side, "uuid": "x1", "parentUuid": "u1", "cwd": "/p/a", "gitBranch": "b1"},
        {**side, "uuid": "x2", "parentUuid": "x1", "cwd": "/p/b"},
        {**side, "uuid": "x3", "parentUuid": "x2", "gitBranch": "b2"},
    ]
    whole = claude_session(tmp_path / "whole", *lines)
    ingest(tmp_path / "whole.db", {"claude": whole})
    parts = tmp_path / "parts"
    for end in range(1, len(lines) + 1):
        ingest(tmp_path / "parts.db", {"claude": claude_session(parts, *lines[:end])})
    expected = [("s1:agent-sidechain-x1", "/p/b", "b2")]
    query = "SELECT id, cwd, git_branch FROM sessions WHERE agent_id IS NOT NULL"
    assert rows(tmp_path / "whole.db", query) == rows(tmp_path / "parts.db", query) == expected


def test_a_title_of_any_size_is_stored_cut(tmp_path):
    # A log may hold a title of any size: 50 MB was copied into the session row, its digest and their indexes.
    from datasette_obelisk.plugins import get_sources

    project = tmp_path / ".claude" / "projects" / "-p"
    project.mkdir(parents=True)
    prompt = {"type": "user", "uuid": "u1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
              "message": {"role": "user", "content": "word " * 2_000}}
    title = {"type": "custom-title", "sessionId": "s1", "customTitle": "long " * 1_000}
    (project / "s1.jsonl").write_text(json.dumps(prompt) + "\n" + json.dumps(title) + "\n")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / ".claude"}, sources={"claude": get_sources()["claude"]})
    stored = rows(db, "SELECT kind, length(title), substr(title, -6) FROM titles ORDER BY kind")
    assert stored == [("custom", 1_000, " long…"), ("first_prompt", 1_000, " word…")]
    assert rows(db, "SELECT length(title), title_source FROM sessions") == [(1_000, "custom")]


def test_a_long_first_prompt_is_folded_before_it_is_cut():
    from datasette_obelisk.records import TitleCandidate
    from datasette_obelisk.store.writer import stored_title

    prompt = "Please review this log:" + "\n" * 1_200 + "the build fails on step 3"
    assert stored_title(TitleCandidate("s", "first_prompt", prompt)) == "Please review this log: the build fails on step 3"
    assert stored_title(TitleCandidate("s", "custom", prompt)) == prompt[:999] + "…"


SEEN_BY_A_READER = (
    "SELECT (SELECT COUNT(*) FROM messages WHERE session_id = 's1'), "
    "(SELECT message_count FROM sessions WHERE id = 's1'), "
    "(SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'before')"
)


def watched_source(db, seen: list) -> ToySource:
    """A toy source whose parser records, before each line, what a reader of ``db`` sees."""
    from toy_source import ToyParser

    class WatchedParser(ToyParser):
        def feed(self, data, position):
            conn = sqlite3.connect(db)  # a reader, as Datasette is, while the ingest writes
            seen.append(conn.execute(SEEN_BY_A_READER).fetchone())
            conn.close()
            return super().feed(data, position)

    class WatchedSource(ToySource):
        def open_parser(self, unit, state):
            return WatchedParser(unit, state)

    return WatchedSource()


def rewrite_session(db, root):
    """s1 with three lines ingested, then one line more, to be read again from its start
    (as after a new parser version)."""
    path = root / "s1.jsonl"
    path.write_bytes(b"".join(line(id=f"m{i}", text=f"before {i}", ts="2026-01-01T00:00:00Z") for i in range(3)))
    run(db, root)
    with open(path, "ab") as fp:
        fp.write(line(id="n3", text="after 3", ts="2026-01-01T00:00:01Z"))
    change(db, "UPDATE source_files SET parser_version = NULL")
    return path


def test_a_file_read_again_from_its_start_is_seen_whole_by_readers_until_its_new_rows_are_in(db, root):
    """Forgetting its sessions, deleting its rows, reading it and deriving again are one commit."""
    seen = []
    rewrite_session(db, root)
    ingest(db, {"toy": root}, sources={"toy": watched_source(db, seen)})
    assert seen == [(3, 3, 3)] * 4
    assert rows(db, "SELECT COUNT(*), (SELECT message_count FROM sessions) FROM messages") == [(4, 4)]


def test_an_error_about_a_whole_file_goes_once_the_file_is_read(db, root, monkeypatch):
    from datasette_obelisk.store import ingest as ingest_module

    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="first"))
    run(db, root)
    with open(path, "ab") as f:
        f.write(line(id="b", text="second"))

    def locked(name, *args, **kwargs):
        if str(name) == str(path):
            raise PermissionError(13, "Permission denied", str(name))
        return open(name, *args, **kwargs)

    monkeypatch.setattr(ingest_module, "open", locked, raising=False)
    assert run(db, root).errors == 1
    assert rows(db, "SELECT line_no, reason LIKE 'cannot read file:%Permission denied%' FROM ingest_errors") == [(0, 1)]
    monkeypatch.undo()
    assert run(db, root).errors == 0
    assert rows(db, "SELECT COUNT(*) FROM ingest_errors") == [(0,)]
    assert rows(db, "SELECT uuid FROM messages ORDER BY uuid") == [("a",), ("b",)]


def test_a_changed_copy_is_named_apart_from_one_stored_by_another_file(db, root):
    # s1 holds a changed copy of "a" at byte offset X; s2's changed copy of "a" is at the same offset.
    first = line(id="a", text="hello one")
    (root / "s1.jsonl").write_bytes(first + line(id="a", text="hello two"))
    (root / "s2.jsonl").write_bytes(first + line(id="a", text="hello 333"))
    assert run(db, root).errors == 0
    offset = len(first)
    assert rows(db, "SELECT uuid, session_id, text FROM messages ORDER BY session_id, seq") == [
        ("a", "s1", "hello one"), (f"a@{offset}", "s1", "hello two"), (f"a@{offset}.2", "s2", "hello 333"),
    ]


def test_a_live_refresh_that_reads_a_file_again_is_seen_whole_by_readers(db, root):
    from datasette_obelisk.query.live import refresh
    from datasette_obelisk.store.db import open_db

    seen = []
    path = rewrite_session(db, root)
    conn = open_db(db)
    try:
        assert refresh(conn, sources={"toy": watched_source(db, seen)}) == [str(path)]
    finally:
        conn.close()
    assert seen == [(3, 3, 3)] * 4
    assert rows(db, "SELECT COUNT(*), (SELECT message_count FROM sessions) FROM messages") == [(4, 4)]


def test_a_live_refresh_leaves_a_file_another_ingest_stored_under_another_name_meanwhile(db, root, monkeypatch):
    from datasette_obelisk.query import live

    (root / "s1.jsonl").write_bytes(line(id="a", text="hello one", ts="2026-01-01T00:00:00Z"))
    run(db, root)
    other_name = root / "other.jsonl"
    os.link(root / "s1.jsonl", other_name)  # the same file, reached another way
    with open(root / "s1.jsonl", "ab") as fp:
        fp.write(line(id="b", text="hello two", ts="2026-01-01T00:00:01Z"))
    changed_files = live.changed_files

    def renamed_meanwhile(conn, session_ids=None):
        found = changed_files(conn, session_ids)
        change(db, ("UPDATE source_files SET path = ?", [str(other_name)]))
        return found

    monkeypatch.setattr(live, "changed_files", renamed_meanwhile)
    conn = open_db(db)
    try:
        assert live.refresh(conn, sources=SOURCES) == [str(root / "s1.jsonl")]
    finally:
        conn.close()
    # nothing read twice under two rows: the next ingest reads the new line
    assert rows(db, "SELECT path FROM source_files") == [(str(other_name),)]
    assert rows(db, "SELECT uuid FROM messages") == [("a",)]


def test_a_document_in_a_renamed_folder_takes_its_rows_along(db, tmp_path):
    """A Gemini chat document (read whole, not by cursor) whose project folder was
    renamed: its rows follow it, so its raw lines are still found."""
    from datasette_obelisk.plugins import get_sources
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.errors import QueryError

    gemini = tmp_path / ".gemini"
    chats = gemini / "tmp" / "abc" / "chats"
    chats.mkdir(parents=True)
    chat = {"sessionId": "s-1", "projectHash": "abc", "startTime": "2026-01-01T00:00:00Z", "messages": [
        {"id": "u1", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": "hello there"}]}
    (chats / "session-2026-01-01T00-00-s1.json").write_text(json.dumps(chat))
    sources = {"gemini": get_sources()["gemini"]}
    ingest(db, {"gemini": gemini}, sources=sources)
    (gemini / "tmp" / "abc").rename(gemini / "tmp" / "def")
    ingest(db, {"gemini": gemini}, sources=sources)
    moved = str(gemini / "tmp" / "def" / "chats" / "session-2026-01-01T00-00-s1.json")
    assert rows(db, "SELECT f.path, f.missing FROM messages m JOIN source_files f ON f.id = m.file_id") == [(moved, 0)]
    assert rows(db, "SELECT availability FROM sessions") == [("live",)]
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    assert '"hello there"' in obelisk.raw(conn, "gemini:s-1:u1")["text"]
    # Saved again since (it grew): what the stored offsets name is no longer that chat.
    chat["messages"].append({"id": "u2", "timestamp": "2026-01-01T00:00:09Z", "type": "user", "content": "more"})
    (gemini / "tmp" / "def" / "chats" / "session-2026-01-01T00-00-s1.json").write_text(json.dumps(chat))
    with pytest.raises(QueryError) as error:
        obelisk.raw(conn, "gemini:s-1:u1")
    assert error.value.code == "OBELISK_NOT_FOUND" and "was rewritten since it was indexed" in error.value.message


@pytest.mark.parametrize("log_gone", [False, True])  # the log carrying it on archived: the chat is read alone
@pytest.mark.parametrize("after", ["$rewindTo", "$set"])
def test_a_legacy_chat_saved_again_keeps_what_its_carried_on_log_took_back(db, tmp_path, after, log_gone):
    """gemini-cli carries an old ``.json`` chat on in a ``.jsonl`` (the ``.json`` stays),
    may rewrite the ``.json`` later (a summary), and the log rewinds or compresses
    what the ``.json`` holds: read again, the ``.json`` is read with that log."""
    from datasette_obelisk.plugins import get_sources

    gemini = tmp_path / ".gemini"
    chats = gemini / "tmp" / "h1" / "chats"
    chats.mkdir(parents=True)
    head = {"sessionId": "s-1", "projectHash": "h1", "startTime": "2026-05-01T10:00:00.000Z"}
    said = [{"id": uid, "timestamp": f"2026-05-01T10:00:0{n}.000Z", "type": kind, "content": text}
            for n, (uid, kind, text) in enumerate([("u1", "user", "first ask"), ("g1", "gemini", "ans1"),
                                                    ("u2", "user", "second"), ("g2", "gemini", "ans2")], 1)]
    legacy = chats / "session-2026-05-01T10-00-s1.json"
    legacy.write_text(json.dumps({**head, "messages": said}))
    took_back = {"$rewindTo": "u2"} if after == "$rewindTo" else {"$set": {"messages": said[2:]}}
    third = {"id": "u3", "timestamp": "2026-05-01T10:00:07.000Z", "type": "user", "content": "third"}
    (chats / "session-2026-05-01T10-00-s1.jsonl").write_text(
        "".join(json.dumps(item) + "\n" for item in [head, *said, {"$set": {"sessionId": "s-1"}}, took_back, third]))
    sources = {"gemini": get_sources()["gemini"]}
    ingest(db, {"gemini": gemini}, sources=sources)
    derived = "SELECT uuid, surface, visibility FROM messages ORDER BY seq"
    expected = rows(db, derived) + rows(db, "SELECT message_count FROM sessions")
    if log_gone:
        (chats / "session-2026-05-01T10-00-s1.jsonl").unlink()
        ingest(db, {"gemini": gemini}, sources=sources)
    legacy.write_text(json.dumps({**head, "messages": said, "summary": "A chat"}))  # saved again, a summary added
    ingest(db, {"gemini": gemini}, sources=sources)
    assert rows(db, derived) + rows(db, "SELECT message_count FROM sessions") == expected
    taken = "gemini:s-1:u2" if after == "$rewindTo" else "gemini:s-1:u1"
    assert (taken, "shadowed") in [row[:2] for row in expected]


def test_a_legacy_chat_rewound_to_fewer_messages_is_what_one_ingest_of_it_gives(db, tmp_path):
    """A Gemini chat document saved again whole after a rewind: the replies it no
    longer holds leave nothing behind (the session's model), and what follows the
    rewind takes the next place, as in one ingest of the chat."""
    from datasette_obelisk.plugins import get_sources

    gemini = tmp_path / ".gemini"
    chats = gemini / "tmp" / "h1" / "chats"
    chats.mkdir(parents=True)
    head = {"sessionId": "s-1", "projectHash": "h1", "startTime": "2026-05-01T10:00:00.000Z"}
    said = [{"id": uid, "timestamp": f"2026-05-01T10:00:0{n}.000Z", "type": kind, "content": text,
             **({"model": "gemini-2.5-pro"} if kind == "gemini" else {})}
            for n, (uid, kind, text) in enumerate([("u1", "user", "first ask"), ("g1", "gemini", "ans1"),
                                                    ("u2", "user", "second"), ("g2", "gemini", "ans2")], 1)]
    legacy = chats / "session-2026-05-01T10-00-s1.json"
    legacy.write_text(json.dumps({**head, "messages": said}))
    sources = {"gemini": get_sources()["gemini"]}
    ingest(db, {"gemini": gemini}, sources=sources)
    assert rows(db, "SELECT model, message_count FROM sessions") == [("gemini-2.5-pro", 4)]
    retyped = {"id": "u3", "timestamp": "2026-05-01T10:00:09.000Z", "type": "user", "content": "first ask, again"}
    legacy.write_text(json.dumps({**head, "messages": [said[0], retyped]}))  # rewound to before the first reply
    ingest(db, {"gemini": gemini}, sources=sources)
    assert rows(db, "SELECT uuid, seq FROM messages ORDER BY seq") == [("gemini:s-1:u1", 1), ("gemini:s-1:u3", 2)]
    assert rows(db, "SELECT model, message_count FROM sessions") == [(None, 2)]
    ingest(tmp_path / "once.db", {"gemini": gemini}, sources=sources)
    got, once = snapshot(db), snapshot(tmp_path / "once.db")
    assert got == once, diff(got, once)


@pytest.mark.parametrize("parser_changed", [False, True])
def test_a_chat_left_half_written_keeps_its_rows_also_when_a_newer_parser_reads_the_logs_again(db, tmp_path, parser_changed):
    """A Gemini chat document caught half written (or left so by a crash) keeps what
    it held until it reads again, also when a newer parser has the logs read again
    with their families (which forgets a family's sessions before its files are read)."""
    from datasette_obelisk.plugins import get_sources

    gemini = tmp_path / ".gemini"
    chats = gemini / "tmp" / "h1" / "chats"
    chats.mkdir(parents=True)
    chat = {"sessionId": "s-1", "projectHash": "h1", "startTime": "2026-05-01T10:00:00.000Z", "messages": [
        {"id": "u1", "timestamp": "2026-05-01T10:00:01.000Z", "type": "user", "content": "first ask"},
        {"id": "g1", "timestamp": "2026-05-01T10:00:02.000Z", "type": "gemini", "content": "an answer"}]}
    legacy = chats / "session-2026-05-01T10-00-s1.json"
    legacy.write_text(json.dumps(chat))
    sources = {"gemini": get_sources()["gemini"]}
    ingest(db, {"gemini": gemini}, sources=sources)
    stored = "SELECT uuid, session_id, text FROM messages ORDER BY seq"
    assert rows(db, stored) == [("gemini:s-1:u1", "gemini:s-1", "first ask"), ("gemini:s-1:g1", "gemini:s-1", "an answer")]
    whole = legacy.read_bytes()
    legacy.write_bytes(whole[:60])
    if parser_changed:
        change(db, "UPDATE source_files SET parser_version = NULL")  # as an older version left it
    summary = ingest(db, {"gemini": gemini}, sources=sources)
    assert [reason[:26] for _, _, reason in summary.error_samples] == ["invalid JSON: unexpected e"]
    assert rows(db, stored) == [("gemini:s-1:u1", "gemini:s-1", "first ask"), ("gemini:s-1:g1", "gemini:s-1", "an answer")]
    assert rows(db, "SELECT id, message_count, availability FROM sessions") == [("gemini:s-1", 2, "live")]
    legacy.write_bytes(whole)  # saved whole again: read again
    assert ingest(db, {"gemini": gemini}, sources=sources).errors == 0
    assert rows(db, stored) == [("gemini:s-1:u1", "gemini:s-1", "first ask"), ("gemini:s-1:g1", "gemini:s-1", "an answer")]
    assert rows(db, "SELECT parser_version FROM source_files") == [(sources["gemini"].parser_version,)]


def said(uuid, parent, role, text, second):
    """A Claude Code line of session s1 (a prompt or a reply) at second ``second``."""
    return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
            "timestamp": f"2026-01-01T00:00:{second:02d}Z", "message": {"role": role, "content": text}}


HOOK = {"type": "progress", "uuid": "h1", "parentUuid": None, "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00Z", "data": {"type": "hook_progress", "hookEvent": "SessionStart"}}


@pytest.mark.parametrize("head", [None, "h1"])  # 2.1.x: a SessionStart hook's line may come first
def test_the_first_prompt_edited_and_sent_again_titles_its_session(tmp_path, head):
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)

    log = project / "s1.jsonl"
    log.write_bytes(claude_lines(*[HOOK] * bool(head), said("u1", head, "user", "first try", 1),
                                 said("a1", "u1", "assistant", "ok", 2)))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, title_source FROM sessions") == [("first try", "first_prompt")]
    with open(log, "ab") as fp:  # edited and sent again
        fp.write(claude_lines(said("u2", head, "user", "second try", 3), said("a2", "u2", "assistant", "ok", 4)))
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, "SELECT title, message_count FROM sessions") == [("second try", 2)]
    once = tmp_path / "once.db"
    ingest(once, {"claude": tmp_path / "claude"})
    assert rows(once, "SELECT title, message_count FROM sessions") == [("second try", 2)]


def test_what_answers_a_prompt_stored_anew_goes_with_it(tmp_path):
    # Claude Code 2.1.332 writes a prompt sent again after a compaction under a
    # fresh uuid (sentAsUuid: the one it was sent as), and its answer names that
    # one. A rewind to the copy takes its answer back too; its trace goes through it.
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.store.db import connect

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
                "logicalParentUuid": "a1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:03Z"}
    summary = {**said("s", "b1", "user", "This session is being continued from a previous conversation.", 3),
               "isCompactSummary": True}
    log = project / "s1.jsonl"
    log.write_bytes(claude_lines(said("u1", None, "user", "do X", 1), said("a1", "u1", "assistant", "working", 2),
                                 boundary, summary, said("a2", "s", "assistant", "going on", 4),
                                 {**said("u1copy", "a2", "user", "do X", 5), "sentAsUuid": "u1"}))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    with open(log, "ab") as fp:  # answered, then rewound to the copy: "do Y" sent in its place
        fp.write(claude_lines(said("a3", "u1", "assistant", "X is done", 6), said("u2", "a2", "user", "do Y", 7),
                              said("a4", "u2", "assistant", "Y is done", 8)))
    ingest(db, {"claude": tmp_path / "claude"})
    derived = "SELECT uuid, surface, visibility, replaced_by FROM messages WHERE seq > 5 ORDER BY seq"
    assert rows(db, derived) == [
        ("u1copy", "shadowed", "inactive", "u2"), ("a3", "shadowed", "inactive", "u2"),
        ("u2", "current", "visible", None), ("a4", "current", "visible", None),
    ]
    assert rows(db, "SELECT message_count FROM sessions") == [(5,)]  # u1, a1, a2, u2, a4
    conn = connect(db)
    assert obelisk.trace_uuids(conn, "a3") == ["u1", "a1", "b1", "s", "a2", "u1copy", "a3"]
    conn.close()


def test_m034_derives_again_the_sessions_of_logs_gone_from_disk(tmp_path):
    from datasette_obelisk.store.db import open_db

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)

    (project / "s1.jsonl").write_bytes(claude_lines(
        said("u1", None, "user", "first try", 1), said("a1", "u1", "assistant", "ok", 2),
        said("u2", None, "user", "second try", 3), said("a2", "u2", "assistant", "ok", 4)))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    (project / "s1.jsonl").unlink()
    ingest(db, {"claude": tmp_path / "claude"})
    derived = "SELECT uuid, surface, visibility, replaced_by FROM messages ORDER BY seq"
    expected = rows(db, derived)
    assert expected[0] == ("u1", "shadowed", "inactive", "u2")
    change(db, "UPDATE messages SET surface = 'current', visibility = 'visible', replaced_by = NULL",
           "UPDATE sessions SET message_count = 4",  # as derived before
           "DELETE FROM _sqlite_migrations WHERE name = 'm034_rederive_archived_rewinds'")
    open_db(db).close()
    ingest(db, {"claude": tmp_path / "claude"})
    assert rows(db, derived) == expected
    assert rows(db, "SELECT message_count, availability FROM sessions") == [(2, "archived")]


def test_a_gemini_chat_whose_folder_names_its_project_later_takes_it(tmp_path):
    chats = tmp_path / "gemini" / "tmp" / "myapp" / "chats"
    chats.mkdir(parents=True)
    chat = chats / "session-2026-04-29T21-39-aaaa.jsonl"
    meta = {"sessionId": "s-1", "projectHash": "abc", "startTime": "2026-04-29T21:39:22.319Z", "kind": "main"}
    chat.write_text(json.dumps(meta) + "\n" + json.dumps({"id": "u1", "type": "user", "content": "Hi"}) + "\n")
    db = tmp_path / "obelisk.db"
    ingest(db, {"gemini": tmp_path / "gemini"})
    assert rows(db, "SELECT cwd, project FROM sessions") == [(None, "gemini-tmp:myapp")]  # (grouped by its folder until a file names the root)
    (chats.parent / ".project_root").write_text("/home/u/myapp\n")  # (and the chat does not change)
    ingest(db, {"gemini": tmp_path / "gemini"})
    assert rows(db, "SELECT cwd, project FROM sessions") == [("/home/u/myapp", "-home-u-myapp")]
    once = tmp_path / "once.db"
    ingest(once, {"gemini": tmp_path / "gemini"})
    assert snapshot(once) == snapshot(db)
    assert ingest(db, {"gemini": tmp_path / "gemini"}).files_replayed == 0  # (read again once only)


def test_a_pass_over_unchanged_files_reads_their_rows_at_once(root, db, monkeypatch):
    """Whether a file is unchanged is told from its stored fingerprint, read for
    every stored file at once: a no-op pass over 30,000 files spent half its CPU
    (0.66 s of 1.4 s) reading their source_files rows one query at a time."""
    from datasette_obelisk.store.ingest import Ingester

    for n in range(30):
        (root / f"s{n}.jsonl").write_bytes(line(id=f"s{n}-1", text="hello", ts="2026-01-01T00:00:00Z"))
    run(db, root)
    read = []
    original = Ingester.file_row
    monkeypatch.setattr(Ingester, "file_row", lambda self, unit: read.append(unit.path.name) or original(self, unit))
    summary = run(db, root)
    assert (summary.files_skipped, summary.files_read) == (30, 0)
    assert read == []  # not one row read by itself
    with open(root / "s7.jsonl", "ab") as fp:
        fp.write(line(id="s7-2", text="more", ts="2026-01-01T00:00:01Z"))
    summary = run(db, root)
    assert (summary.files_skipped, summary.files_read, summary.messages) == (29, 1, 1)
    assert set(read) == {"s7.jsonl"}


def test_logs_naming_each_other_their_parent_make_no_lineage_cycle(tmp_path):
    """Two Claude Code branches each naming the other in ``forkedFrom``, a Codex
    rollout naming itself in ``forked_from_id``: stored as they were, each session
    was its own ancestor, and its lineage failed (SESSION_QUERY_INVALID_LINEAGE,
    a 500 on the lineage page and the trace answer), whichever order they came in."""
    from datasette_obelisk.query.session_query import SessionQuery

    def claude_session(root, session, parent):
        folder = root / "claude" / "projects" / "-w"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            {"type": "user", "uuid": f"{session}-u", "parentUuid": None, "sessionId": session, "cwd": "/w",
             "timestamp": "2026-03-01T10:00:00Z", "message": {"role": "user", "content": "hello"},
             "forkedFrom": {"sessionId": parent, "messageUuid": f"{parent}-u"}},
            {"type": "assistant", "uuid": f"{session}-a", "parentUuid": f"{session}-u", "sessionId": session, "cwd": "/w",
             "timestamp": "2026-03-01T10:00:01Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
             "forkedFrom": {"sessionId": parent, "messageUuid": f"{parent}-a"}},
        ]
        (folder / f"{session}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))

    thread = "019c0000-0000-7000-8000-000000000003"
    day = tmp_path / "both" / "codex" / "sessions" / "2026" / "03" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-03-01T10-00-00-{thread}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in [
        {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": thread, "forked_from_id": thread, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w"}},
        {"timestamp": "2026-03-01T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}},
    ]))
    claude_session(tmp_path / "both", "sa", "sb")
    claude_session(tmp_path / "both", "sb", "sa")
    together = tmp_path / "together.db"
    ingest(together, {"claude": tmp_path / "both" / "claude", "codex": tmp_path / "both" / "codex"})
    one_by_one = tmp_path / "one_by_one.db"
    claude_session(tmp_path / "later", "sa", "sb")
    ingest(one_by_one, {"claude": tmp_path / "later" / "claude"})
    claude_session(tmp_path / "later", "sb", "sa")
    ingest(one_by_one, {"claude": tmp_path / "later" / "claude"})
    parents = []
    for db in (together, one_by_one):
        conn = sqlite3.connect(db)
        conn.row_factory = sqlite3.Row
        for session in [r[0] for r in conn.execute("SELECT id FROM sessions")]:
            trace = SessionQuery(conn).traceSession(session)
            assert trace["complete"] is True
        parents.append(sorted(tuple(r) for r in conn.execute("SELECT id, parent_session_id FROM sessions WHERE id GLOB 's?'")))
        conn.close()
    assert parents[0] == parents[1] == [("sa", None), ("sb", "sa")]
    assert rows(together, "SELECT parent_session_id FROM sessions WHERE source = 'codex'") == [(None,)]


def test_a_gemini_document_counts_its_items_not_its_rows(tmp_path):
    """A legacy Gemini .json chat is read item by item: a reply holding its call's output
    gives two message rows but is one item, counted once, as a log's line is."""
    chat = {
        "sessionId": "d0c00000-0000-4000-8000-000000000001", "projectHash": "h",
        "startTime": "2026-01-01T00:00:00.000Z", "lastUpdated": "2026-01-01T00:00:05.000Z",
        "messages": [
            {"id": "m1", "timestamp": "2026-01-01T00:00:00.000Z", "type": "user", "content": [{"text": "list files"}]},
            {"id": "m2", "timestamp": "2026-01-01T00:00:03.000Z", "type": "gemini", "content": "", "model": "gemini-2.5-pro",
             "toolCalls": [{"id": "ls-1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
                            "timestamp": "2026-01-01T00:00:04.000Z",
                            "result": [{"functionResponse": {"id": "ls-1", "name": "run_shell_command",
                                                             "response": {"output": "README.md"}}}]}]},
        ],
    }
    chats = tmp_path / "gemini" / "tmp" / "h" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-01-01T00-00-d0c00000.json").write_text(json.dumps(chat))
    summary = ingest(tmp_path / "o.db", {"gemini": tmp_path / "gemini"})
    assert (summary.lines, summary.messages, summary.errors) == (2, 3, 0)
    assert rows(tmp_path / "o.db", "SELECT lines_read, lines_stored, lines_merged, lines_failed FROM source_files") == [
        (2, 3, 0, 0)
    ]


def test_an_emptied_log_keeps_its_rows_archived_and_what_is_written_in_it_next_is_added(db, root):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one") + line(id="b", text="two"))
    (root / "s2.jsonl").write_bytes(line(id="c", text="other"))
    run(db, root)
    path.write_bytes(b"")  # emptied in place (a tool, a crash): gone, as if deleted
    summary = run(db, root)
    assert (summary.files_missing, summary.files_replayed, summary.files_read) == (1, 0, 0)
    assert rows(db, "SELECT uuid FROM messages ORDER BY uuid") == [("a",), ("b",), ("c",)]
    assert rows(db, "SELECT id, availability, message_count FROM sessions ORDER BY id") == [
        ("s1", "archived", 2), ("s2", "live", 1)]
    before = snapshot(db)
    summary = run(db, root)
    assert (summary.files_missing, summary.files_replayed, summary.files_read) == (0, 0, 0)
    assert snapshot(db) == before
    # Written again with one of its lines and a new one: that line is not stored twice.
    path.write_bytes(line(id="b", text="two") + line(id="d", text="new"))
    summary = run(db, root)
    assert (summary.files_read, summary.files_replayed, summary.messages, summary.merged) == (1, 0, 1, 1)
    assert rows(db, "SELECT uuid, seq FROM messages WHERE session_id = 's1' ORDER BY seq") == [
        ("a", 1), ("b", 2), ("d", 3)]
    assert rows(db, "SELECT id, availability, message_count FROM sessions ORDER BY id") == [
        ("s1", "live", 3), ("s2", "live", 1)]
    assert rows(db, "SELECT path, missing, lines_read FROM source_files ORDER BY id") == [
        (str(path) + "#gone-1", 1, 2), (str(root / "s2.jsonl"), 0, 1), (str(path), 0, 2)]
    assert run(db, root).files_skipped == 2


def test_an_emptied_log_written_again_with_its_lines_and_more_is_as_a_first_ingest(db, root, tmp_path):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one") + line(id="b", text="two"))
    run(db, root)
    path.write_bytes(b"")
    run(db, root)
    path.write_bytes(line(id="a", text="one") + line(id="b", text="two") + line(id="c", text="three"))
    assert run(db, root).files_replayed == 1
    assert rows(db, "SELECT id, availability, message_count FROM sessions") == [("s1", "live", 3)]
    assert rows(db, "SELECT path, missing FROM source_files") == [(str(path), 0)]
    run(tmp_path / "clean.db", root)
    assert diff(snapshot(db), snapshot(tmp_path / "clean.db")) == []


def test_a_new_log_where_a_deleted_one_was_leaves_the_archived_rows(db, root, tmp_path):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one") + line(id="b", text="two"))
    run(db, root)
    path.unlink()
    assert run(db, root).files_missing == 1
    path.write_bytes(line(id="c", text="another session, longer than the first one was"))
    summary = run(db, root)
    assert (summary.files_read, summary.files_replayed, summary.messages) == (1, 0, 1)
    assert rows(db, "SELECT uuid, seq FROM messages ORDER BY seq") == [("a", 1), ("b", 2), ("c", 3)]
    assert rows(db, "SELECT path, missing, lines_stored FROM source_files ORDER BY id") == [
        (str(path) + "#gone-1", 1, 2), (str(path), 0, 1)]
    # Deleted again, and back as it was: nothing is stored twice.
    path.unlink()
    run(db, root)
    path.write_bytes(line(id="c", text="another session, longer than the first one was"))
    assert run(db, root).files_replayed == 1
    assert rows(db, "SELECT uuid FROM messages ORDER BY seq") == [("a",), ("b",), ("c",)]


def test_a_deleted_log_back_with_more_lines_is_as_a_first_ingest(db, root, tmp_path):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one") + line(id="b", text="two"))
    run(db, root)
    path.unlink()
    run(db, root)
    path.write_bytes(line(id="a", text="one") + line(id="b", text="two") + line(id="c", text="three"))
    assert run(db, root).files_replayed == 1
    run(tmp_path / "clean.db", root)
    assert diff(snapshot(db), snapshot(tmp_path / "clean.db")) == []


def test_a_log_rewritten_in_place_with_as_many_bytes_and_its_time_kept_is_seen(db, root, tmp_path, monkeypatch):
    from datasette_obelisk.store import ingest as ingest_module

    path = root / "s1.jsonl"
    head = line(id="a", text="x" * 5000)  # more than the head hashed: only the bytes before the cursor tell
    path.write_bytes(head + line(id="b", text="earth"))
    os.utime(path, ns=(1_700_000_000_000_000_000,) * 2)
    run(db, root)
    st = os.stat(path)
    checked = []
    path_still_holds = ingest_module.path_still_holds
    monkeypatch.setattr(ingest_module, "path_still_holds",
                        lambda at, row, **how: checked.append(row["path"]) or path_still_holds(at, row, **how))
    # Its mode changed (a new ctime), its bytes not: checked once, then known by its stat alone.
    os.chmod(path, 0o600)
    assert (run(db, root).files_skipped, checked) == (1, [str(path)])
    assert (run(db, root).files_skipped, len(checked)) == (1, 1)
    assert rows(db, "SELECT ctime_ns FROM source_files") == [(os.stat(path).st_ctime_ns,)]
    # Rewritten where it is, as long as it was, its modification time set back.
    with open(path, "r+b") as fp:
        fp.write(head + line(id="b", text="venus"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (os.stat(path).st_size, os.stat(path).st_mtime_ns, os.stat(path).st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    summary = run(db, root)
    # The old file gone (its line "earth" archived), the file is read as a new one.
    assert (summary.files_skipped, summary.files_replayed, summary.files_missing) == (0, 0, 1)
    assert rows(db, "SELECT m.uuid, m.text, f.path FROM messages m JOIN source_files f ON f.id = m.file_id ORDER BY m.seq") == [
        ("a", "x" * 5000, str(path)), ("b", "earth", f"{path}#gone-1"), (f"b@{len(head)}", "venus", str(path))]
    # A file stored before its ctime was kept is known by its size and time alone until it is read.
    change(db, "UPDATE source_files SET ctime_ns = NULL")
    os.chmod(path, 0o644)
    checked.clear()
    assert (run(db, root).files_skipped, checked) == (1, [])


def test_an_emptied_log_archived_by_an_earlier_run_counts_as_unchanged(db, root):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one"))
    (root / "s2.jsonl").write_bytes(line(id="c", text="other"))
    run(db, root)
    path.write_bytes(b"")
    assert run(db, root).files_missing == 1
    summary = run(db, root)
    assert (summary.files, summary.files_skipped, summary.files_read, summary.files_missing) == (2, 2, 0, 0)


def test_raw_of_a_line_of_a_file_another_took_the_place_of_names_its_path(db, root):
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.errors import QueryError

    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one"))
    run(db, root)
    path.unlink()
    run(db, root)
    path.write_bytes(line(id="c", text="another session, longer than the first one was"))
    run(db, root)
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    with pytest.raises(QueryError) as caught:
        obelisk.raw(conn, "a", redact=str)
    assert str(caught.value).startswith(
        f"raw(): the source file of message a was replaced by another file since it was indexed: {path} (")
    assert "#gone-" not in str(caught.value)


def raw_text(db, uuid):
    from datasette_obelisk.query import obelisk

    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return obelisk.raw(conn, uuid, redact=str)["text"]
    finally:
        conn.close()


def test_a_log_back_shorter_with_other_bytes_takes_over_the_rows_of_the_lines_it_holds(db, root):
    from datasette_obelisk.query.errors import QueryError

    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one") + line(id="b", text="two") + line(id="c", text="three"))
    run(db, root)
    path.unlink()
    assert run(db, root).files_missing == 1
    # Back with other bytes: one line the same (its keys in another order), two gone, one new.
    back_b = (json.dumps({"text": "two", "id": "b"}) + "\n").encode()
    path.write_bytes(back_b + line(id="d", text="new"))
    summary = run(db, root)
    assert (summary.files_read, summary.files_replayed, summary.messages, summary.merged) == (1, 0, 1, 1)
    assert rows(db, "SELECT path, missing, lines_read, lines_stored, lines_merged FROM source_files ORDER BY id") == [
        (str(path) + "#gone-1", 1, 3, 2, 1), (str(path), 0, 2, 2, 0)]
    assert rows(db, "SELECT m.uuid, m.seq, f.path, m.line_no, m.byte_offset, m.byte_length FROM messages m "
                    "JOIN source_files f ON f.id = m.file_id ORDER BY m.seq") == [
        ("a", 1, str(path) + "#gone-1", 1, 0, len(line(id="a", text="one")) - 1),
        ("b", 2, str(path), 1, 0, len(back_b) - 1),
        ("c", 3, str(path) + "#gone-1", 3, len(line(id="a", text="one") + line(id="b", text="two")),
         len(line(id="c", text="three")) - 1),
        ("d", 4, str(path), 2, len(back_b), len(line(id="d", text="new")) - 1)]
    assert rows(db, "SELECT id, availability, message_count, jsonl_path FROM sessions") == [
        ("s1", "live", 4, str(path))]
    assert raw_text(db, "b") == back_b.decode().rstrip("\n")
    assert raw_text(db, "d") == line(id="d", text="new").decode().rstrip("\n")
    for gone in ("a", "c"):
        with pytest.raises(QueryError, match="was replaced by another file"):
            raw_text(db, gone)
    assert run(db, root).files_skipped == 1


def test_a_log_back_with_other_bytes_holding_every_line_leaves_no_gone_file(db, root, tmp_path):
    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one", tool="Bash", paths=["x.py"]) + line(id="b", text="two"))
    (root / "s2.jsonl").write_bytes(line(id="x", text="other"))
    run(db, root)
    path.unlink()
    assert run(db, root).files_missing == 1
    back = [(json.dumps({"text": "one", "id": "a", "paths": ["x.py"], "tool": "Bash"}) + "\n").encode(),
            (json.dumps({"text": "two", "id": "b"}) + "\n").encode()]
    path.write_bytes(back[0] + back[1] + line(id="c", text="three"))
    summary = run(db, root)
    assert (summary.files_read, summary.messages, summary.merged, summary.files_missing) == (1, 1, 2, 0)
    assert rows(db, "SELECT path, missing, lines_read, lines_stored, lines_merged FROM source_files ORDER BY path") == [
        (str(path), 0, 3, 3, 0), (str(root / "s2.jsonl"), 0, 1, 1, 0)]
    assert rows(db, "SELECT t.id, f.path FROM tool_calls t JOIN source_files f ON f.id = t.file_id") == [
        ("a:call", str(path))]
    assert rows(db, "SELECT r.tool_use_id, f.path FROM tool_results r JOIN source_files f ON f.id = r.file_id") == [
        ("a:call", str(path))]
    assert rows(db, "SELECT COUNT(*) FROM file_sessions WHERE file_id NOT IN (SELECT id FROM source_files)") == [(0,)]
    assert rows(db, "SELECT COUNT(*) FROM message_aliases WHERE file_id NOT IN (SELECT id FROM source_files)") == [(0,)]
    assert [raw_text(db, uuid) for uuid in "abc"] == [
        back[0].decode().rstrip("\n"), back[1].decode().rstrip("\n"), line(id="c", text="three").decode().rstrip("\n")]
    assert rows(db, "SELECT id, availability, message_count, jsonl_path FROM sessions ORDER BY id") == [
        ("s1", "live", 3, str(path)), ("s2", "live", 1, str(root / "s2.jsonl"))]
    run(tmp_path / "clean.db", root)
    assert diff(snapshot(db), snapshot(tmp_path / "clean.db")) == []
    summary = run(db, root)
    assert (summary.files_skipped, summary.files_missing) == (2, 0)


def test_a_gone_log_kept_only_by_its_unreadable_line_is_counted_once_with_the_log_back_at_its_path(db, root):
    from datasette_obelisk.query import dashboard
    from datasette_obelisk.query.readonly import connect_readonly

    def files():
        conn = connect_readonly(db)
        try:
            return dashboard.totals(conn)["files"]
        finally:
            conn.close()

    path = root / "s1.jsonl"
    path.write_bytes(line(id="a", text="one") + b"{not json\n")
    run(db, root)
    path.unlink()
    run(db, root)
    assert {key: files()[key] for key in ("files", "gone", "bad_lines")} == {"files": 1, "gone": 1, "bad_lines": 1}
    path.write_bytes(line(id="a", text="one"))  # back without its unreadable line: "a" goes to it
    run(db, root)
    # The file gone from the path holds nothing now but its error: it is not a second log file.
    assert rows(db, "SELECT path, missing, lines_stored, lines_failed FROM source_files ORDER BY id") == [
        (str(path) + "#gone-1", 1, 0, 1), (str(path), 0, 1, 0)]
    assert rows(db, "SELECT file_id, line_no FROM ingest_errors") == [(1, 2)]
    assert {key: files()[key] for key in ("files", "gone", "bad_lines")} == {"files": 1, "gone": 0, "bad_lines": 1}
    # One back with other lines keeps what it held apart: two log files, one gone.
    path.unlink()
    run(db, root)
    path.write_bytes(line(id="b", text="two"))
    run(db, root)
    assert {key: files()[key] for key in ("files", "gone", "bad_lines")} == {"files": 2, "gone": 1, "bad_lines": 1}


def test_a_log_back_with_its_lines_at_other_offsets_stores_each_message_once(db, root, tmp_path):
    # Messages named after their byte offset (``<session>:<offset>``, as Codex's are): the
    # lines the new file holds again at other offsets are the archived rows, moved to it.
    path = root / "s1.jsonl"
    one, two = line(text="one", ts="2026-01-01T00:00:01Z"), line(text="two", ts="2026-01-01T00:00:02Z")
    three = line(text="three", ts="2026-01-01T00:00:03Z", tool="Bash", paths=["x.py"])
    path.write_bytes(one + two + three)
    run(db, root)
    path.unlink()
    assert run(db, root).files_missing == 1
    # Back with its first line written longer (the same message), every later line moved on, and one more.
    longer = (json.dumps({"text": "one", "ts": "2026-01-01T00:00:01Z", "cwd": "/work"}) + "\n").encode()
    four = line(text="four", ts="2026-01-01T00:00:04Z")
    path.write_bytes(longer + two + three + four)
    summary = run(db, root)
    assert (summary.files_read, summary.messages, summary.merged) == (1, 3, 1)
    at = [0, len(longer), len(longer + two), len(longer + two + three)]
    assert rows(db, "SELECT m.uuid, m.seq, m.text, m.byte_offset, f.path FROM messages m "
                    "JOIN source_files f ON f.id = m.file_id ORDER BY m.seq") == [
        ("s1:0", 1, "one", 0, str(path)), (f"s1:{at[1]}", 2, "two", at[1], str(path)),
        (f"s1:{at[2]}", 3, "three", at[2], str(path)), (f"s1:{at[3]}", 4, "four", at[3], str(path))]
    assert rows(db, "SELECT id, message_uuid FROM tool_calls") == [(f"s1:{at[2]}:call", f"s1:{at[2]}")]
    assert rows(db, "SELECT path, missing, lines_read, lines_stored, lines_merged FROM source_files") == [
        (str(path), 0, 4, 4, 0)]
    assert [raw_text(db, f"s1:{offset}") for offset in at] == [
        data.decode().rstrip("\n") for data in (longer, two, three, four)]
    run(tmp_path / "clean.db", root)
    assert diff(snapshot(db), snapshot(tmp_path / "clean.db")) == []
    assert run(db, root).files_skipped == 1


def test_a_log_back_shorter_with_its_lines_at_other_offsets_leaves_the_rest_archived(db, root):
    path = root / "s1.jsonl"
    lines = [line(text="one", ts="2026-01-01T00:00:01Z"), line(text="two", ts="2026-01-01T00:00:02Z")]
    lines.append(line(text="three", ts="2026-01-01T00:00:03Z", parent=f"s1:{len(lines[0])}"))
    lines.append(line(text="four", ts="2026-01-01T00:00:04Z"))
    path.write_bytes(b"".join(lines))
    run(db, root)
    path.unlink()
    run(db, root)
    # Back holding its second and fourth lines only: the first and third stay archived.
    path.write_bytes(lines[1] + lines[3])
    summary = run(db, root)
    assert (summary.messages, summary.merged) == (2, 0)
    gone = str(path) + "#gone-1"
    offsets = [0, len(lines[0]), len(lines[0] + lines[1]), len(lines[0] + lines[1] + lines[2])]
    # (the second line, at offset 0 now, is named apart from the archived first line that holds that name)
    # (the archived third line follows the second's row)
    assert rows(db, "SELECT m.uuid, m.seq, m.text, m.byte_offset, f.path, m.parent_uuid FROM messages m "
                    "JOIN source_files f ON f.id = m.file_id ORDER BY m.seq") == [
        ("s1:0", 1, "one", 0, gone, None), ("s1:0@0", 2, "two", 0, str(path), None),
        (f"s1:{offsets[2]}", 3, "three", offsets[2], gone, "s1:0@0"),
        (f"s1:{len(lines[1])}", 4, "four", len(lines[1]), str(path), None)]
    assert rows(db, "SELECT path, missing, lines_read, lines_stored, lines_merged FROM source_files ORDER BY id") == [
        (gone, 1, 4, 2, 2), (str(path), 0, 2, 2, 0)]
    assert rows(db, "SELECT id, availability, message_count FROM sessions") == [("s1", "live", 4)]


def test_a_log_back_holding_a_renamed_copy_again_keeps_its_children_on_that_copy(db, root):
    from datasette_obelisk.query import obelisk

    # "a" is said twice: the second, changed, is stored as a@<offset>, and "b" follows it.
    path = root / "s1.jsonl"
    first = line(id="a", text="hello one")
    path.write_bytes(first + line(id="a", text="hello two") + line(id="b", parent="a", text="child of two"))
    run(db, root)
    copy = f"a@{len(first)}"
    assert rows(db, "SELECT uuid, parent_uuid FROM messages ORDER BY seq") == [("a", None), (copy, None), ("b", copy)]
    path.unlink()
    run(db, root)
    # Back without the first: its lines naming "a" name the copy it holds, in this batch and the next.
    back = line(id="a", text="hello two") + line(id="b", parent="a", text="child of two")
    path.write_bytes(back + line(id="c", parent="a", text="second child of two"))
    run(db, root)
    with open(path, "ab") as fp:
        fp.write(line(id="d", parent="a", text="third child of two"))
    run(db, root)
    assert rows(db, "SELECT uuid, parent_uuid, text, byte_offset FROM messages ORDER BY seq") == [
        ("a", None, "hello one", 0), (copy, None, "hello two", 0), ("b", copy, "child of two", len(line(id="a", text="hello two"))),
        ("c", copy, "second child of two", len(back)), ("d", copy, "third child of two", path.stat().st_size - len(
            line(id="d", parent="a", text="third child of two")))]
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        assert [m["text"] for m in obelisk.context(conn, "c")["parentChain"]] == ["hello two"]
        assert obelisk.raw(conn, copy, redact=str)["text"] == line(id="a", text="hello two").decode().rstrip("\n")
    finally:
        conn.close()
