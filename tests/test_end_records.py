"""A line that stores no message says its session went on to its time: a record of its own
(``Session`` with ``ended_at`` alone: a Codex turn's start or end, a Gemini chat's ``$set``,
a Claude Code queued prompt). The reader sends one of them per session and batch, the one
of the latest time, and the database is the one all of them give."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import orjson
import pytest

from datasette_obelisk.plugins import get_sources
from datasette_obelisk.records import Merged, Message, Position, Session
from datasette_obelisk.sources.codex import rollout_unit
from datasette_obelisk.store import reader as reader_module
from datasette_obelisk.store import writer as writer_module
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.store.reader import Batch, Job, Reader
from datasette_obelisk.store.writer import latest_ends, says_only_end
from dbsnapshot import diff, rows, snapshot

ID = "0199aaaa-0000-7000-8000-000000000001"
SID = f"codex:{ID}"
ROLLOUT = f"sessions/2026/03/01/rollout-2026-03-01T10-00-00-{ID}.jsonl"
LATEST = "2026-03-01T12:30:00+02:00"  # 10:30:00 UTC: the latest, written in a form of its own
TURNS = 100


def envelope(type_: str, payload: dict, timestamp: str) -> bytes:
    return orjson.dumps({"timestamp": timestamp, "type": type_, "payload": payload}) + b"\n"


def rollout_lines() -> list[bytes]:
    """A rollout of a prompt, an answer and ``TURNS`` turns started and completed: each of those
    lines stores no message. Their times rise but for one, the latest, in the middle."""
    stamp = lambda s: f"2026-03-01T10:{s // 60:02d}:{s % 60:02d}.{s % 1000:03d}Z"  # noqa: E731
    lines = [
        envelope("session_meta", {"id": ID, "cli_version": "0.104.0", "cwd": "/w/p"}, stamp(0)),
        envelope("event_msg", {"type": "user_message", "message": "go"}, stamp(1)),
        envelope("event_msg", {"type": "agent_message", "message": "done"}, stamp(2)),
    ]
    for turn in range(TURNS):
        lines.append(envelope("event_msg", {"type": "task_started", "turn_id": f"t{turn}"}, stamp(3 + 2 * turn)))
        at = LATEST if turn == TURNS // 2 else stamp(4 + 2 * turn)
        lines.append(envelope("event_msg", {"type": "task_complete", "turn_id": f"t{turn}"}, at))
    return lines


def write_rollout(root: Path, lines: list[bytes]) -> Path:
    path = root / ".codex" / ROLLOUT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def ends_sent(items) -> list[tuple[str, str]]:
    return [(r.id, r.ended_at) for item in items if isinstance(item, Batch) for r in item.records
            if type(r) is Session and says_only_end(r)]


def test_a_rollout_of_many_end_lines_sends_one_end_record_per_batch(tmp_path):
    path = write_rollout(tmp_path, rollout_lines())
    codex = get_sources()["codex"]
    parser = codex.open_parser(rollout_unit(path), None)
    said = [r for n, line in enumerate(path.read_bytes().splitlines(), 1)
            for r in parser.feed(line, Position(n, 0, len(line))) if type(r) is Session and says_only_end(r)]
    assert len(said) == 2 * TURNS  # (the session_meta's end is said by its own record)
    items = list(Reader({"codex": codex}, None, 8 << 20).read_job(Job(rollout_unit(path))))
    assert ends_sent(items) == [(SID, LATEST)]
    # batches cut every 40 lines: one each, the latest of its lines
    items = list(Reader({"codex": codex}, None, 8 << 20, chunk_lines=40).read_job(Job(rollout_unit(path))))
    assert len(items) == 6
    assert ends_sent(items) == [
        (SID, "2026-03-01T10:00:39.039Z"), (SID, "2026-03-01T10:01:19.079Z"), (SID, LATEST),
        (SID, "2026-03-01T10:02:39.159Z"), (SID, "2026-03-01T10:03:19.199Z"), (SID, "2026-03-01T10:03:22.202Z")]


def test_the_end_kept_is_the_latest_time_whatever_its_form():
    said = lambda ended_at, sid="s": Session(sid, "x", ended_at=ended_at)  # noqa: E731
    named = Session("s", "x", model="m", ended_at="2027-01-01T00:00:00.000Z")  # (says more than its end: kept)
    message = Message("u", "s", "x", "user", Position(1, 0, 1))
    merged = Merged(Position(2, 0, 1), "metadata")
    ends = [
        said("2026-01-01T10:00:00Z"),
        said("2026-01-01T11:30:00+02:00"),  # 09:30:00
        said("2026-01-01T10:00:00.500Z"),  # the latest
        said("2026-13-01T00:00:00.000Z"),  # of the canonical form but no time (sorts last)
        said("2026-01-01T10:00:00.400Z"),
        said("[trimmed]"),
    ]
    other = [said("[trimmed]", "t"), said("not a time", "t")]  # no time: the first, so that the file names it
    records = [ends[0], message, named, other[0], merged, *ends[1:], other[1]]
    folded = latest_ends(records)
    assert folded == [ends[2], message, named, other[0], merged]
    assert [r.ended_at for r in ends] == ["2026-01-01T10:00:00Z", "2026-01-01T11:30:00+02:00",
                                          "2026-01-01T10:00:00.500Z", "2026-13-01T00:00:00.000Z",
                                          "2026-01-01T10:00:00.400Z", "[trimmed]"]  # (none changed)
    # the latest of the canonical form that is no time, alone: the latest that is one
    assert latest_ends([said("2026-01-01T10:00:00.000Z"), said("2026-02-30T00:00:00.000Z")]) == [
        said("2026-01-01T10:00:00.000Z")]
    assert latest_ends([said("2026-02-30T00:00:00.000Z"), said("2026-01-01T11:00:00+00:00")]) == [
        said("2026-01-01T11:00:00+00:00")]
    unfolded = [message, said("2026-01-01T10:00:00Z"), said("2026-01-01T10:00:00Z", "t")]
    assert latest_ends(unfolded) is unfolded


def no_folding(monkeypatch) -> None:
    """Every end record sent, as before they were folded."""
    monkeypatch.setattr(reader_module, "latest_ends", lambda records: records)


@pytest.fixture
def written(monkeypatch):
    """The end records the writer is given, by session."""
    got = Counter()
    write = writer_module.Writer.write

    def counting(self, records, *args, **kwargs):
        got.update(r.id for r in records if type(r) is Session and says_only_end(r))
        return write(self, records, *args, **kwargs)

    monkeypatch.setattr(writer_module.Writer, "write", counting)
    return got


def ends(db) -> list[tuple]:
    """Each file's start and end of each of its sessions (by the file's name), and each session's."""
    by_file = rows(db, "SELECT f.path, s.session_id, s.started_at, s.ended_at FROM file_sessions s "
                       "JOIN source_files f ON f.id = s.file_id")
    return sorted((Path(path).name, *rest) for path, *rest in by_file) + rows(
        db, "SELECT id, started_at, ended_at FROM sessions ORDER BY id")


def assert_same(db, expected) -> None:
    got, want = snapshot(db), snapshot(expected)
    assert got == want, diff(got, want)
    assert ends(db) == ends(expected)


def read_again(db) -> None:
    """Have the next ingest read every file again from its start (as after a parser's upgrade)."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.close()


@pytest.mark.parametrize("options", [{}, {"chunk_bytes": 2_000}, {"read_ahead_bytes": 0}],
                         ids=["whole", "chunked", "forked-readers"])
def test_one_end_record_a_batch_gives_the_database_all_of_them_give(tmp_path, monkeypatch, written, options):
    path = write_rollout(tmp_path / "logs", rollout_lines())
    reader = Reader(get_sources(), None, options.get("chunk_bytes", 8 << 20))
    batches = sum(isinstance(item, Batch) for item in reader.read_job(Job(rollout_unit(path))))
    assert batches == (1 if "chunk_bytes" not in options else 11)
    db = tmp_path / "o.db"
    ingest(db, {"codex": tmp_path / "logs" / ".codex"}, **options)
    assert written == {SID: batches}
    assert rows(db, "SELECT ended_at FROM sessions") == [("2026-03-01T10:30:00.000Z",)]
    written.clear()
    read_again(db)
    ingest(db, {"codex": tmp_path / "logs" / ".codex"}, **options)
    assert written == {SID: batches}
    with monkeypatch.context() as patched:
        no_folding(patched)
        written.clear()
        before = tmp_path / "before.db"
        ingest(before, {"codex": tmp_path / "logs" / ".codex"}, **options)
        assert written == {SID: 2 * TURNS}
    assert_same(db, before)


def test_end_lines_appended_move_the_end_as_when_read_whole(tmp_path, written):
    lines = rollout_lines()
    live = write_rollout(tmp_path / "live", lines[:60])
    db = tmp_path / "o.db"
    ingest(db, {"codex": tmp_path / "live" / ".codex"})
    assert rows(db, "SELECT ended_at FROM sessions") == [("2026-03-01T10:00:59.059Z",)]
    done = 60
    for upto in (61, 130, len(lines)):  # one line, then many holding the latest, then the rest
        written.clear()
        with open(live, "ab") as fp:
            fp.write(b"".join(lines[done:upto]))
        done = upto
        ingest(db, {"codex": tmp_path / "live" / ".codex"})
        assert written == {SID: 1}, upto
        write_rollout(tmp_path / f"whole-{upto}", lines[:upto])
        fresh = tmp_path / f"whole-{upto}.db"
        ingest(fresh, {"codex": tmp_path / f"whole-{upto}" / ".codex"})
        assert rows(db, "SELECT ended_at FROM sessions") == rows(fresh, "SELECT ended_at FROM sessions"), upto
    assert rows(db, "SELECT ended_at FROM sessions") == [("2026-03-01T10:30:00.000Z",)]
    assert_same(db, fresh)


def by_source(written: Counter) -> Counter:
    """The end records of ``written`` by source (a Claude Code session's id is the log's own)."""
    got = Counter()
    for sid, n in written.items():
        got[sid.split(":")[0] if sid.startswith(("codex:", "gemini:")) else "claude"] += n
    return got


def test_generated_logs_send_one_end_record_per_session_and_batch(tmp_path, monkeypatch, written):
    """Codex rollouts, Gemini chats ($set lines) and Claude Code logs (queued prompts) of the
    generator, read whole, in small batches, by forked readers and again from their start:
    the database all their end records give."""
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "gen", seed=5, target_bytes=600_000, gemini=True)
    roots = {name: tmp_path / "gen" / f".{name}" for name in ("claude", "codex", "gemini")}
    with monkeypatch.context() as patched:
        no_folding(patched)
        before = tmp_path / "before.db"
        ingest(before, roots)
    sent = by_source(written)
    assert all(n > 0 for n in sent.values()), sent
    for options in ({}, {"chunk_bytes": 20_000}, {"read_ahead_bytes": 0}):
        written.clear()
        db = tmp_path / f"o-{'-'.join(options)}.db"
        ingest(db, roots, **options)
        assert_same(db, before)
        if not options:  # (a batch a file)
            assert max(written.values()) == 1
            folded = by_source(written)
            assert all(folded[source] < n for source, n in sent.items()), (folded, sent)
            read_again(db)
            ingest(db, roots)
            assert_same(db, before)
