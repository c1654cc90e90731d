"""Forked reader processes parse ahead of the writer; the database is the same as reading inline."""

import json
import sqlite3
import subprocess
import sys
import time

import pytest

from dbsnapshot import snapshot
from processes import exited
from query_fixtures import CORPUS, corpus_roots

from datasette_obelisk.demo.generator import generate
from datasette_obelisk.plugins import get_sources
from datasette_obelisk.store import reader as reader_module
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.store.read_ahead import JobStream
from datasette_obelisk.store.reader import Batch, Job, ReadFailed, Reader
from datasette_obelisk.store.session_index import rebuild_session_documents


def session_docs(db) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT session_id, first_id, last_id, messages, chars, meta_messages, body_words, meta_words "
            "FROM session_docs ORDER BY session_id"
        ).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ahead") / "logs"
    generate(root, seed=9, target_bytes=1_200_000)
    return {"claude": root / ".claude", "codex": root / ".codex"}


def test_reading_ahead_gives_the_same_database(tmp_path, logs):
    ingest(tmp_path / "inline.db", logs, read_ahead_bytes=None, chunk_bytes=50_000)
    ingest(tmp_path / "ahead.db", logs, read_ahead_bytes=0, chunk_bytes=50_000)
    assert snapshot(tmp_path / "ahead.db") == snapshot(tmp_path / "inline.db")
    assert session_docs(tmp_path / "ahead.db") == session_docs(tmp_path / "inline.db")


def test_reading_ahead_the_shared_corpus(tmp_path):
    if not CORPUS.exists():
        pytest.skip("shared corpus not found")
    ingest(tmp_path / "inline.db", corpus_roots(), read_ahead_bytes=None)
    ingest(tmp_path / "ahead.db", corpus_roots(), read_ahead_bytes=0, cold_load_bytes=0)
    assert snapshot(tmp_path / "ahead.db") == snapshot(tmp_path / "inline.db")
    assert session_docs(tmp_path / "ahead.db") == session_docs(tmp_path / "inline.db")


@pytest.mark.parametrize("corpus", ["generated", "shared"])
def test_counted_words_equal_a_recount(tmp_path, logs, corpus):
    """The session index built from the reader's counts equals one counted from stored text.

    Both corpora hold inline sidechains, whose lines (and counts) move to
    subagent sessions when derived.
    """
    if corpus == "shared" and not CORPUS.exists():
        pytest.skip("shared corpus not found")
    db = tmp_path / "o.db"
    ingest(db, logs if corpus == "generated" else corpus_roots(), read_ahead_bytes=0)
    built = session_docs(db)
    assert sum(":agent-sidechain-" in doc[0] for doc in built) >= 3
    conn = open_db(db)
    with conn:
        rebuild_session_documents(conn)
    conn.close()
    assert session_docs(db) == built
    assert len(built) > 20


def test_reader_items_carry_what_the_commit_needs(logs):
    unit = next(u for u in get_sources()["claude"].discover(logs["claude"]) if u.layout == "jsonl")
    size = unit.path.stat().st_size
    items = list(Reader(get_sources(), None, 4000).read_job(Job(unit)))
    assert all(isinstance(i, Batch) for i in items) and len(items) > 1
    assert items[-1].cursor == size and items[-1].at_eof and not any(i.at_eof for i in items[:-1])
    assert [i.cursor for i in items] == sorted(i.cursor for i in items)
    lines = unit.path.read_bytes().count(b"\n")
    assert sum(i.lines for i in items) == lines and items[-1].line_no == lines
    counted = sum(w.messages for i in items for w in i.words.values())
    assert counted == sum(len(i.message_rows) for i in items) > 0
    assert not any(type(r).__name__ == "Message" for i in items for r in i.records)


def test_a_file_gone_before_it_is_read_is_reported(tmp_path):
    from datasette_obelisk.sources.base import SourceFile

    items = list(Reader(get_sources(), None, 4000).read_job(Job(SourceFile(tmp_path / "gone.jsonl", "claude", "session"))))
    assert len(items) == 1 and isinstance(items[0], ReadFailed)
    assert items[0].reason.startswith("cannot read file: [Errno 2] No such file or directory")


def test_a_reader_that_fails_stops_the_ingest(tmp_path, logs, monkeypatch):
    def broken(self, job):
        raise ValueError("reader bug")
        yield

    monkeypatch.setattr(reader_module.Reader, "read_job", broken)
    jobs = [Job(u) for u in get_sources()["claude"].discover(logs["claude"])]
    with JobStream(Reader(get_sources(), None, 4000), jobs, ahead=True) as stream:
        with pytest.raises(RuntimeError, match="reader bug"):
            list(stream.items(jobs[0]))


def test_a_plan_made_stale_by_another_ingester_is_made_again(tmp_path, logs):
    """Another ingester moved a file's cursor between planning and writing: nothing is written twice."""
    from datasette_obelisk.store.ingest import Ingester

    db = tmp_path / "o.db"
    ingest(db, logs)
    unit = max(
        (u for u in get_sources()["claude"].discover(logs["claude"]) if u.layout == "jsonl"),
        key=lambda u: u.path.stat().st_size,
    )
    lines = unit.path.read_bytes().splitlines(keepends=True)
    before = snapshot(db)
    unit.path.write_bytes(b"".join(lines[: len(lines) // 2]))  # the file is rewritten shorter …
    ingest(db, logs)
    unit.path.write_bytes(b"".join(lines))  # … then grows back
    conn = open_db(db)
    first = Ingester(conn, get_sources(), logs)
    plan = first.plan(unit)
    other = Ingester(open_db(db), get_sources(), logs)
    other.ingest_file(unit)
    other.flush(force=True)
    first.apply(plan, first.reader.read_job(plan.job))
    first.flush(force=True)
    first.derive_pending()
    assert first.summary.files_skipped == 1  # planned again, and found unchanged
    assert snapshot(db) == before


def test_readers_stop_when_the_writer_fails(tmp_path, logs, monkeypatch):
    from datasette_obelisk.store import ingest as ingest_module

    started = []
    original = JobStream.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        started.append(self)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(JobStream, "__init__", keep)
    monkeypatch.setattr(ingest_module.Ingester, "commit", broken)
    with pytest.raises(OSError, match="disk full"):
        ingest(tmp_path / "o.db", logs, read_ahead_bytes=0)
    assert len(started) == 1 and started[0].workers == []


def test_a_threaded_caller_reads_inline(logs):
    import threading

    jobs = [Job(u) for u in get_sources()["claude"].discover(logs["claude"])]
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with JobStream(Reader(get_sources(), None, 4000), jobs, ahead=True) as stream:
            assert stream.workers == []
            items = [item for job in jobs for item in stream.items(job)]
    finally:
        stop.set()
        thread.join()
    with JobStream(Reader(get_sources(), None, 4000), jobs, ahead=True) as stream:
        assert len(stream.workers) == 2
        assert [type(i) for job in jobs for i in stream.items(job)] == [type(i) for i in items]


READERS_OF_A_KILLED_INGESTER = """
import sys, time
from pathlib import Path
from datasette_obelisk.plugins import get_sources
from datasette_obelisk.store.read_ahead import JobStream
from datasette_obelisk.store.reader import Job, Reader
jobs = [Job(u) for u in get_sources()["claude"].discover(Path(sys.argv[1]))]
stream = JobStream(Reader(get_sources(), None, 1 << 20), jobs, ahead=True)  # few items, many bytes
print(*[process.pid for process, _, _ in stream.workers], flush=True)
time.sleep(600)  # never reads: the readers fill their pipes, then this process is killed
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="readers are forked on Linux only")
def test_readers_exit_when_the_ingester_is_killed(logs):
    ingester = subprocess.Popen(
        [sys.executable, "-c", READERS_OF_A_KILLED_INGESTER, str(logs["claude"])], stdout=subprocess.PIPE, text=True
    )
    readers = [int(pid) for pid in ingester.stdout.readline().split()]
    assert len(readers) == 2
    time.sleep(1)  # they read everything they can
    ingester.kill()
    ingester.wait()
    deadline = time.monotonic() + 10
    while not all(exited(pid) for pid in readers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in readers if not exited(pid)] == []


@pytest.mark.parametrize("read_ahead_bytes", [None, 0])
def test_empty_columns_are_stored_as_null(tmp_path, logs, read_ahead_bytes):
    # Rows are bound with NaN for None (writer.NULL); SQLite must store NULL, never a float.
    db = tmp_path / "nulls.db"
    ingest(db, logs, read_ahead_bytes=read_ahead_bytes, chunk_bytes=50_000)
    conn = sqlite3.connect(db)
    try:
        for table in ("messages", "tool_calls", "tool_results"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            reals = conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE "
                + " OR ".join(f"typeof({c}) = 'real'" for c in columns)
            ).fetchone()[0]
            assert reals == 0, table
        assert conn.execute("SELECT COUNT(*) FROM messages WHERE meta_json IS NULL").fetchone()[0] > 0
        assert conn.execute("SELECT COUNT(*) FROM tool_calls WHERE file_path IS NULL").fetchone()[0] > 0
    finally:
        conn.close()


def claude_prompt(session: str, n: int) -> bytes:
    return json.dumps({
        "type": "user", "uuid": f"{session}-{n}", "parentUuid": f"{session}-{n - 1}" if n else None,
        "sessionId": session, "timestamp": f"2026-03-01T10:00:{n:02d}.000Z",
        "message": {"role": "user", "content": f"prompt {n} of {session}"},
    }).encode()


@pytest.mark.parametrize("read_ahead_bytes", [None, 0])
def test_a_reopened_file_leaves_the_next_jobs_in_step(tmp_path, read_ahead_bytes):
    # s0's last line was whole but had no newline when first read; then the
    # agent went on writing it, so s0 must be read again from the start. With
    # readers ahead, the reader that sent that news still has the rest of
    # s0's job queued, and s2 is its next job.
    project = tmp_path / ".claude" / "projects" / "-tmp-p"
    project.mkdir(parents=True)
    names = [f"s{k}" for k in range(4)]
    for name in names:
        (project / f"{name}.jsonl").write_bytes(b"\n".join(claude_prompt(name, n) for n in range(3)))
    roots = {"claude": tmp_path / ".claude"}
    db = tmp_path / "o.db"
    ingest(db, roots, read_ahead_bytes=read_ahead_bytes, cold_load_bytes=None)
    with open(project / "s0.jsonl", "ab") as fp:
        fp.write(b', "more": true}\n' + claude_prompt("s0", 3) + b"\n")
    for name in names[1:]:
        with open(project / f"{name}.jsonl", "ab") as fp:
            fp.write(b"\n" + claude_prompt(name, 3) + b"\n")
    ingest(db, roots, read_ahead_bytes=read_ahead_bytes, cold_load_bytes=None)
    ingest(tmp_path / "fresh.db", roots, read_ahead_bytes=None)
    assert snapshot(db) == snapshot(tmp_path / "fresh.db")
    conn = sqlite3.connect(db)
    # 4 files of 4 prompts; s0's third line is now one bad line (an error, not a message)
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 15
    assert conn.execute("SELECT line_no FROM ingest_errors").fetchall() == [(3,)]
    conn.close()


def test_a_batch_of_tiny_lines_ends_at_a_number_of_lines_too(tmp_path):
    """A file of a million 10-byte lines held the records of 8 MB of them per
    batch (two batches alive at once: 318 MB); a batch also ends after
    ``chunk_lines`` lines, and nothing is lost or read twice."""
    from datasette_obelisk.sources.base import SourceFile

    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(b'{"a":%d}\n' % (1000 + i) for i in range(2_500)))
    reader = Reader(get_sources(), None, 1 << 30, chunk_lines=1_000)
    items = list(reader.read_job(Job(SourceFile(path, "claude", "session"))))
    assert [i.lines for i in items] == [1_000, 1_000, 500]
    assert [len(i.records) for i in items] == [1_000, 1_000, 500]
    assert items[-1].cursor == path.stat().st_size and items[-1].line_no == 2_500
    assert reader_module.CHUNK_LINES * 200 <= 8 << 20  # a default batch of them stays a few MB
