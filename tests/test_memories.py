"""remember / forget: validation, and confinement to the memory roots."""

import os
import re
import sqlite3

import pytest

from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.memories import REFUSED, forget, remember
from datasette_obelisk.query.obelisk import memories
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.store.db import connect
from helper_fixtures import build_toy_db, execute, table_counts


@pytest.fixture
def db(tmp_path):
    db = build_toy_db(tmp_path / "toy", {"s1": [{"id": "a", "text": "hello", "ts": "2026-01-01T00:00:00Z"}]})
    execute(db, "UPDATE sessions SET project = 'toy-project', project_path = ?", [str(tmp_path / "notes" / "project")])
    return db


@pytest.fixture
def conn(db):
    conn = connect(db)
    yield conn
    conn.close()


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "notes"
    (root / "project").mkdir(parents=True)
    (root / "wal.md").write_text("# WAL\n")
    (root / "project" / "design.md").write_text("# design\n")
    return root


def stored(db) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT id, path, summary, deleted_at FROM memories ORDER BY pk").fetchall()
    finally:
        conn.close()


def test_remember_registers_a_file(conn, db, root):
    memory = remember(conn, {"path": str(root / "wal.md"), "summary": "Why the ingester uses WAL", "anchors": ["wal", "locking"]}, memory_roots=[root])
    assert set(memory) == {"id", "path", "project", "anchors", "created_at"}
    assert re.fullmatch(r"mem-\d{13}-[0-9a-f]{8}", memory["id"])
    assert memory["path"] == str(root.resolve() / "wal.md")
    assert memory["anchors"] == ["wal", "locking"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", memory["created_at"])
    assert memory["project"] is None
    with connect_readonly(db) as ro:
        [row] = memories(ro)
    assert row["id"] == memory["id"] and row["summary"] == "Why the ingester uses WAL" and row["anchors"] == ["wal", "locking"]


def test_relative_paths_resolve_against_the_session_project_path(conn, root):
    memory = remember(conn, {"path": "design.md", "summary": "Design notes", "session_id": "s1"}, memory_roots=[root])
    assert memory["path"] == str(root.resolve() / "project" / "design.md")
    assert memory["project"] == "toy-project"  # from the session


def test_relative_paths_resolve_against_the_cwd(conn, root, monkeypatch):
    memory = remember(conn, {"path": "wal.md", "summary": "WAL", "project": "mine"}, memory_roots=[root], cwd=str(root))
    assert (memory["path"], memory["project"]) == (str(root.resolve() / "wal.md"), "mine")
    monkeypatch.chdir(root)
    assert remember(conn, {"path": "./wal.md", "summary": "WAL again"}, memory_roots=[root])["path"] == memory["path"]


def test_the_project_is_inferred_from_the_cwd(conn, root):
    memory = remember(conn, {"path": "design.md", "summary": "Design notes"}, memory_roots=[root], cwd=str(root / "project"))
    assert memory["project"] == "toy-project"


def test_anchors_may_be_json_text_or_null(conn, root):
    path = str(root / "wal.md")
    assert remember(conn, {"path": path, "summary": "a", "anchors": '["x", 1]'}, memory_roots=[root])["anchors"] == ["x", 1]
    assert remember(conn, {"path": path, "summary": "b", "anchors": None}, memory_roots=[root])["anchors"] is None


@pytest.mark.parametrize(
    "record, message",
    [
        ({"summary": "no path"}, None),
        ({"path": "wal.md"}, "needs summary"),
        ({"path": "wal.md", "summary": "   "}, "needs summary"),
        ({"path": "wal.md", "summary": "数据库锁定的原因"}, "in English"),
        # Korean as conjoining jamo (the decomposed form macOS file names and pasted text carry),
        # compatibility jamo, and an ideograph beyond the BMP are CJK text too
        ({"path": "wal.md", "summary": "\u1103\u1166\u110b\u1175\u1110\u1165 lock"}, "in English"),
        ({"path": "wal.md", "summary": "WAL \u314b\u314b\u314b"}, "in English"),
        ({"path": "wal.md", "summary": "\U00020bb7 lock"}, "in English"),
        ({"path": "wal.md", "summary": "ok", "anchors": "not json"}, "anchors must be"),
        ({"path": "wal.md", "summary": "ok", "anchors": {"a": 1}}, "anchors must be"),
        ({"path": "wal.md", "summary": "ok", "session_id": 5}, "session_id must be a string"),
        ({"path": "wal.md", "summary": "ok", "colour": "red"}, "unknown field"),
        ("wal.md", "takes a dict"),
    ],
)
def test_invalid_records_write_nothing(conn, db, root, record, message):
    with pytest.raises(QueryError) as error:
        remember(conn, record, memory_roots=[root], cwd=str(root))
    if message is None:
        assert (error.value.code, error.value.message) == (REFUSED.code, REFUSED.message)
    else:
        assert error.value.code == "OBELISK_INVALID_ARGUMENT" and message in error.value.message
    assert stored(db) == []


def test_a_session_not_stored_yet_is_kept_as_given(conn, db, root):
    """A live session the next ingest reads: the path resolves against the cwd."""
    memory = remember(conn, {"path": "wal.md", "summary": "x", "session_id": "live"}, memory_roots=[root], cwd=str(root))
    assert (memory["path"], memory["project"]) == (str(root.resolve() / "wal.md"), None)
    assert [m["session_id"] for m in memories(connect_readonly(db), "live")] == ["live"]


# -- confinement: one identical refusal, nothing written --------------------------------


def refusal_cases(tmp_path, root):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    (root / "link-out.md").symlink_to(outside / "secret.md")
    (root / "link-in.md").symlink_to(root / "wal.md")
    (root / "linked-dir").symlink_to(root / "project")
    (root / "dir-out").symlink_to(outside)
    os.mkfifo(root / "pipe.md")
    return {
        "outside the root": str(outside / "secret.md"),
        "dot-dot out of the root": str(root / ".." / "outside" / "secret.md"),
        "relative dot-dot": "../outside/secret.md",
        "symlink out of the root": str(root / "link-out.md"),
        "symlink inside pointing inside": str(root / "link-in.md"),
        "symlinked folder inside the root": str(root / "linked-dir" / "design.md"),
        "symlinked folder out of the root": str(root / "dir-out" / "secret.md"),
        "fifo": str(root / "pipe.md"),
        "nul byte": str(root / "wal.md") + "\x00.txt",
        "directory": str(root / "project"),
        "the root itself": str(root),
        "nonexistent": str(root / "missing.md"),
        "nonexistent outside": "/definitely/not/here.md",
        "trailing slash on a file": str(root / "wal.md") + "/",
        "empty": "",
        "not a string": 42,
    }


def test_every_path_refusal_is_identical_and_writes_nothing(tmp_path, conn, db, root):
    before = table_counts(db)
    messages = set()
    for case, path in refusal_cases(tmp_path, root).items():
        with pytest.raises(QueryError) as error:
            remember(conn, {"path": path, "summary": "probe"}, memory_roots=[root], cwd=str(root))
        assert error.value.code == "OBELISK_MEMORY_REFUSED", case
        messages.add(error.value.message)
    assert messages == {REFUSED.message}
    assert table_counts(db) == before


def test_without_memory_roots_everything_is_refused(conn, db, root):
    # With none at all, the refusal says so (it tells nothing about any file).
    none = "remember(): no memory root is configured, so no file may be registered "
    for roots, message in (([], none), (None, none), ([root / "missing-root"], REFUSED.message)):
        with pytest.raises(QueryError) as error:
            remember(conn, {"path": str(root / "wal.md"), "summary": "x"}, memory_roots=roots)
        assert (error.value.code, error.value.message[:len(message)]) == (REFUSED.code, message)
    assert stored(db) == []


def test_a_root_configured_through_a_symlink_is_honoured(tmp_path, conn, root):
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    memory = remember(conn, {"path": str(alias / "wal.md"), "summary": "via the configured alias"}, memory_roots=[alias])
    assert memory["path"] == str(root.resolve() / "wal.md")


def test_one_of_several_roots(tmp_path, conn, root):
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("x")
    memory = remember(conn, {"path": str(other / "x.md"), "summary": "x"}, memory_roots=[root, other])
    assert memory["path"] == str(other.resolve() / "x.md")


def test_remember_again_with_the_same_values_adds_no_twin(conn, db, root):
    record = {"path": str(root / "wal.md"), "summary": "WAL", "session_id": "s1", "anchors": ["wal"]}
    first = remember(conn, record, memory_roots=[root])
    again = remember(conn, {**record, "summary": " WAL ", "path": str(root / "." / "wal.md")}, memory_roots=[root])
    assert again == {**first, "already_registered": True}
    assert [row[0] for row in stored(db)] == [first["id"]]
    # any value that differs is another memory; an archived twin is not reused
    other = [
        remember(conn, {**record, "anchors": None}, memory_roots=[root]),
        remember(conn, {**record, "message_start": "a"}, memory_roots=[root]),
        remember(conn, {**record, "project": "elsewhere"}, memory_roots=[root]),
    ]
    assert all("already_registered" not in memory for memory in other)
    forget(conn, {"id": first["id"], "reason": "old"})
    renewed = remember(conn, record, memory_roots=[root])
    assert "already_registered" not in renewed and renewed["id"] != first["id"]
    assert len(stored(db)) == 5


# -- forget ----------------------------------------------------------------------------


def test_forget_archives_once(conn, db, root):
    memory = remember(conn, {"path": str(root / "wal.md"), "summary": "WAL"}, memory_roots=[root])
    archived = forget(conn, {"id": memory["id"], "reason": "  outdated  "})
    assert set(archived) == {"id", "deleted_at", "deleted_reason"}
    assert (archived["id"], archived["deleted_reason"]) == (memory["id"], "outdated")
    again = forget(conn, {"id": memory["id"], "reason": "twice"})
    assert again == {**archived, "already_deleted": True}
    assert (root / "wal.md").exists()  # the markdown file is kept
    with connect_readonly(db) as ro:
        assert memories(ro) == []
    assert stored(db)[0][3] == archived["deleted_at"]


@pytest.mark.parametrize(
    "record, code",
    [
        ({"id": "mem-1"}, "OBELISK_INVALID_ARGUMENT"),
        ({"id": "mem-1", "reason": " "}, "OBELISK_INVALID_ARGUMENT"),
        ({"reason": "x"}, "OBELISK_INVALID_ARGUMENT"),
        ({"id": "mem-missing", "reason": "x"}, "OBELISK_NOT_FOUND"),
        (["mem-1"], "OBELISK_INVALID_ARGUMENT"),
    ],
)
def test_forget_refusals(conn, record, code):
    with pytest.raises(QueryError) as error:
        forget(conn, record)
    assert error.value.code == code


def test_update_is_forget_then_remember(conn, db, root):
    old = remember(conn, {"path": str(root / "wal.md"), "summary": "WAL v1"}, memory_roots=[root])
    (root / "wal-v2.md").write_text("# WAL v2\n")
    forget(conn, {"id": old["id"], "reason": "superseded by wal-v2.md"})
    new = remember(conn, {"path": str(root / "wal-v2.md"), "summary": "WAL v2"}, memory_roots=[root])
    with connect_readonly(db) as ro:
        assert [m["id"] for m in memories(ro)] == [new["id"]]
        assert [m["id"] for m in memories(ro, {"query": "wal"})] == [new["id"]]
