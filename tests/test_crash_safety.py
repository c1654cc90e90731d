"""Killing the ingester at any moment, then re-running, loses and duplicates nothing."""

import json
import random
import shutil
import signal
import subprocess
import sys
import sqlite3
import time
from pathlib import Path

import pytest

from dbsnapshot import diff, snapshot

RUNNER = """
import sys
sys.path.insert(0, {tests!r})
from datasette_obelisk.store.ingest import ingest
from toy_source import ToySource
ingest({db!r}, {{"toy": {root!r}}}, sources={{"toy": ToySource()}}, chunk_bytes=2000, cold_load_bytes={cold}, read_ahead_bytes={ahead})
"""


def write_corpus(root: Path, rng: random.Random) -> None:
    for f in range(12):
        with open(root / f"s{f}.jsonl", "w") as fp:
            for i in range(1000):
                fp.write(json.dumps({
                    "id": f"s{f}-m{i}",
                    "parent": f"s{f}-m{i-1}" if i else None,
                    "ts": f"2026-01-{f+1:02d}T00:{i // 60:02d}:{i % 60:02d}Z",
                    "text": " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "pytest", "docker"]) for _ in range(rng.randint(1, 80))),
                    **({"tool": "Bash", "output": "Exit code 1", "outcome": "failed"} if i % 17 == 0 else {}),
                }) + "\n")


def ingest_command(db, root, cold=None, ahead=None):
    code = RUNNER.format(tests=str(Path(__file__).parent), db=str(db), root=str(root), cold=cold, ahead=ahead)
    return [sys.executable, "-c", code]


def schema(db) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        conn.close()


# cold=0: the killed runs are cold loads (indexes dropped, FTS deferred)
# that the next run must finish. ahead=0: a forked reader process parses
# ahead of the writer, and is killed with it.
@pytest.mark.parametrize("cold, ahead", [(None, None), (0, None), (0, 0)])
def test_sigkill_at_random_moments_then_rerun(tmp_path, cold, ahead):
    rng = random.Random(11)
    root = tmp_path / "logs"
    root.mkdir()
    write_corpus(root, rng)
    clean = tmp_path / "clean.db"
    started = time.perf_counter()
    subprocess.run(ingest_command(clean, root), check=True)
    duration = time.perf_counter() - started
    expected = snapshot(clean)

    killed = tmp_path / "killed.db"
    kills = 0
    for attempt in range(60):
        if kills == 6:
            break
        proc = subprocess.Popen(ingest_command(killed, root, cold, ahead))
        time.sleep(rng.uniform(0.05, 0.6) * duration)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        else:
            # It finished first (reading ahead, a run can be much faster than
            # the clean one): it must have mended what the kills left, and
            # the runs after it start over, or they would all be no-ops.
            assert proc.returncode == 0
            got = snapshot(killed)
            assert got == expected, diff(got, expected)
            for suffix in ("", "-wal", "-shm", ".redaction-key"):
                Path(f"{killed}{suffix}").unlink(missing_ok=True)
        proc.wait()
    subprocess.run(ingest_command(killed, root, cold, ahead), check=True)
    assert kills >= 3, f"only {kills} kills landed before the ingester finished"
    got = snapshot(killed)
    assert got == expected, diff(got, expected)
    assert schema(killed) == schema(clean)


CLAUDE_RUNNER = """
from datasette_obelisk.store.ingest import ingest
ingest({db!r}, {{"claude": {root!r}}}, chunk_bytes=2000, cold_load_bytes={cold})
"""


# cold=0: the files read again hold every message, so the run is a reload
# (FTS tables emptied, indexes and triggers dropped until its end).
@pytest.mark.parametrize("cold", [None, 0])
def test_sigkill_while_families_are_read_again_then_rerun(tmp_path, cold):
    # A parser change has every log read again with its family, sessions
    # forgotten first; a main log rewritten without a line is the old file gone,
    # archived with its rows, and the new one read as a new file.
    from datasette_obelisk.demo.generator import generate
    from datasette_obelisk.store.ingest import ingest

    generate(tmp_path / "corpus", seed=3, target_bytes=4_000_000, codex=False)
    claude = tmp_path / "corpus" / ".claude"
    killed = tmp_path / "killed.db"
    ingest(killed, {"claude": claude})
    main = next(p.parent.with_suffix(".jsonl") for p in sorted(claude.rglob("subagents")))
    lines = main.read_bytes().splitlines(keepends=True)
    main.write_bytes(b"".join(lines[:1] + lines[2:]))
    conn = sqlite3.connect(killed)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    before = tmp_path / "before.db"
    conn.execute("VACUUM INTO ?", [str(before)])
    conn.close()

    # What one run not stopped gives: a first ingest's rows, and the dropped line's, archived.
    whole = tmp_path / "whole.db"
    whole.write_bytes(before.read_bytes())
    command = [sys.executable, "-c", CLAUDE_RUNNER.format(db=str(whole), root=str(claude), cold=None)]
    started = time.perf_counter()
    subprocess.run(command, check=True)
    duration = time.perf_counter() - started
    expected = snapshot(whole)
    ingest(tmp_path / "clean.db", {"claude": claude})
    first = snapshot(tmp_path / "clean.db")
    kept = {m["uuid"] for m in expected["messages"]} - {m["uuid"] for m in first["messages"]}
    assert kept == {json.loads(lines[1])["uuid"]}
    assert {k: v for k, v in expected.items() if k not in ("messages", "fts", "sessions")} == {
        k: v for k, v in first.items() if k not in ("messages", "fts", "sessions")}

    rng = random.Random(5)
    command = [sys.executable, "-c", CLAUDE_RUNNER.format(db=str(killed), root=str(claude), cold=cold)]
    kills = 0
    for attempt in range(30):
        if kills == 5:
            break
        proc = subprocess.Popen(command)
        time.sleep(rng.uniform(0.2, 0.9) * duration)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
            proc.wait()
            continue
        # It finished first: it mended what the kills left; start over from before the change.
        assert proc.returncode == 0
        got = snapshot(killed)
        assert got == expected, diff(got, expected)
        for suffix in ("-wal", "-shm"):
            Path(f"{killed}{suffix}").unlink(missing_ok=True)
        killed.write_bytes(before.read_bytes())
    subprocess.run(command, check=True)
    assert kills >= 3, f"only {kills} kills landed before the ingester finished"
    got = snapshot(killed)
    assert got == expected, diff(got, expected)


def test_ingests_running_at_once_read_each_line_once(tmp_path):
    """Three ingests start together over lines just appended: each file's
    line counts are those of one ingest, whoever wrote which lines."""
    rng = random.Random(5)
    root = tmp_path / "logs"
    root.mkdir()
    write_corpus(root, rng)
    db = tmp_path / "o.db"
    subprocess.run(ingest_command(db, root), check=True)
    for f in range(12):
        with open(root / f"s{f}.jsonl", "a") as fp:
            for i in range(1000, 1400):
                fp.write(json.dumps({"id": f"s{f}-m{i}", "parent": f"s{f}-m{i - 1}", "text": "appended " * 20}) + "\n")
    runs = [subprocess.Popen(ingest_command(db, root)) for _ in range(3)]
    assert [run.wait(timeout=120) for run in runs] == [0, 0, 0]
    conn = sqlite3.connect(db)
    counts = conn.execute("SELECT line_no, lines_read, lines_stored, lines_merged, lines_failed FROM source_files").fetchall()
    conn.close()
    assert counts == [(1400, 1400, 1400, 0, 0)] * 12
    clean = tmp_path / "clean.db"
    subprocess.run(ingest_command(clean, root), check=True)
    assert snapshot(db) == snapshot(clean)


def test_an_ingest_deriving_between_anothers_plans_and_its_writes(tmp_path, monkeypatch):
    """A cold load plans its derivations ahead; another ingest derives those
    sessions before the first takes its write lock: the first plans again."""
    from datasette_obelisk.store import ingest as ingest_module
    from toy_source import ToySource

    root = tmp_path / "logs"
    root.mkdir()
    write_corpus(root, random.Random(7))
    db = tmp_path / "o.db"
    planned = []
    plan_ahead = ingest_module.Ingester.finish_cold_load_while_planning

    def planning(self):
        plan_ahead(self)
        planned.append(len(self.plans))

    real_transaction = ingest_module.transaction

    def transaction(conn):
        if len(planned) == 1:  # once, right after the plans were made
            planned.append("other")
            subprocess.run(ingest_command(db, root), check=True)
        return real_transaction(conn)

    monkeypatch.setattr(ingest_module.Ingester, "finish_cold_load_while_planning", planning)
    monkeypatch.setattr(ingest_module, "transaction", transaction)
    summary = ingest_module.ingest(db, {"toy": root}, sources={"toy": ToySource()}, cold_load_bytes=0)
    assert planned[0] > 0 and planned[1:] == ["other"] and summary.errors == 0
    clean = tmp_path / "clean.db"
    subprocess.run(ingest_command(clean, root), check=True)
    assert snapshot(db) == snapshot(clean)


STOPPED_RUNNER = """
import os, signal
from datasette_obelisk.store import ingest as ingest_module

ingest_module.ATOMIC_REREAD_BYTES = 0  # committed as it goes, as a run reading more than 32 MB again is
write = ingest_module.Ingester.commit
batches = 0


def commit(self, *args):
    global batches
    done = write(self, *args)
    batches += 1
    if batches == {at}:
        os.kill(os.getpid(), signal.{signal})
    return done


ingest_module.Ingester.commit = commit
ingest_module.ingest({db!r}, {{"claude": {root!r}}}, chunk_bytes=2000, read_ahead_bytes={ahead})
"""
SESSION_MESSAGES = (
    "SELECT id, availability, (SELECT COUNT(*) FROM messages WHERE session_id = s.id) FROM sessions s ORDER BY id"
)


# SIGKILL, or Ctrl-C (SIGINT); ahead=0: forked readers parse ahead of the writer.
@pytest.mark.parametrize("stop, ahead", [("SIGKILL", None), ("SIGINT", None), ("SIGKILL", 0)])
def test_a_re_read_stopped_partway_then_the_logs_pruned_archives_every_row(tmp_path, stop, ahead):
    # A parser change has every log read again, more than is read in one
    # transaction; the run is stopped partway, and the agent prunes its old
    # logs before the next ingest. Every session is archived with all its
    # messages, as when the logs are pruned without the stopped run between.
    from datasette_obelisk.demo.generator import generate
    from datasette_obelisk.store.ingest import ingest
    from processes import ctrl_c_default

    generate(tmp_path / "corpus", seed=3, target_bytes=4_000_000, codex=False)
    claude = tmp_path / "corpus" / ".claude"
    db, reference = tmp_path / "o.db", tmp_path / "reference.db"
    ingest(db, {"claude": claude}, redact=False)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.execute("VACUUM INTO ?", [str(reference)])
    before = conn.execute(SESSION_MESSAGES).fetchall()
    conn.close()
    assert len(before) > 10 and {availability for _, availability, _ in before} == {"live"}

    code = STOPPED_RUNNER.format(db=str(db), root=str(claude), at=300, signal=stop, ahead=ahead)
    stopped = subprocess.run([sys.executable, "-c", code], preexec_fn=ctrl_c_default, capture_output=True)
    assert stopped.returncode == -getattr(signal, stop), stopped.stderr.decode()
    conn = sqlite3.connect(db)
    read, left = conn.execute("SELECT COUNT(parser_version), COUNT(*) - COUNT(parser_version) FROM source_files").fetchone()
    conn.close()
    assert read and left  # stopped partway

    shutil.rmtree(claude / "projects")
    (claude / "projects").mkdir()
    for path in (db, reference):
        assert ingest(path, {"claude": claude}, redact=False).files_missing
    conn = sqlite3.connect(db)
    assert conn.execute(SESSION_MESSAGES).fetchall() == [(session, "archived", count) for session, _, count in before]
    conn.close()
    got, expected = snapshot(db), snapshot(reference)
    assert got == expected, diff(got, expected)
