"""Watching: `obelisk ingest --watch` and `obelisk up` keep the database current by themselves."""

import json
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from datasette_obelisk.store import watch as watch_module
from datasette_obelisk.store.ingest import IngestSummary
from processes import children, ctrl_c_default, exited, free_port

OBELISK = [sys.executable, "-m", "datasette_obelisk"]


def add_prompts(path: Path, session: str, prompts: list[str]) -> Path:
    """Append user prompts to a Claude Code session log, each line written whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = None
    if path.exists():
        previous = json.loads(path.read_text().splitlines()[-1])["uuid"]
    with open(path, "a") as fp:
        for text in prompts:
            uuid = f"{session}-{text.replace(' ', '-')}"
            line = {
                "type": "user", "uuid": uuid, "parentUuid": previous, "sessionId": session,
                "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/tmp/watched",
                "message": {"role": "user", "content": text},
            }
            fp.write(json.dumps(line) + "\n")
            fp.flush()
            previous = uuid
    return path


def stored(db: Path) -> set:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return set(conn.execute("SELECT session_id, text FROM messages"))
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet
        return set()


def until(predicate, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


@pytest.fixture
def project(isolated_home) -> Path:
    return isolated_home / ".claude" / "projects" / "-tmp-watched"


def test_watch_passes_until_told_to_stop(monkeypatch):
    passes = []

    def fake_ingest(db, roots, **options):
        passes.append((roots, options))
        return IngestSummary(files_read=1)

    monkeypatch.setattr(watch_module, "ingest", fake_ingest)
    reports = []
    watch_module.watch("x.db", lambda: {"claude": len(passes)}, interval=0.01, report=reports.append,
                       should_stop=lambda: len(passes) == 3, redact=False)
    assert passes == [({"claude": n}, {"redact": False}) for n in range(3)]
    assert [r.files_read for r in reports] == [1, 1, 1]


def watching(db: Path, options: list, steps) -> tuple[int, str, str]:
    """Run ``obelisk ingest --watch`` on ``db`` while ``steps(printed)`` runs, then Ctrl-C it:
    (status, out, err). ``printed`` fills with the lines of stdout as they come, so a step
    can wait for a pass's report: rows are visible before the pass that wrote them ends."""
    process = subprocess.Popen(
        OBELISK + ["ingest", "--watch", "--interval", "0.1", "--db", str(db), *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_default,
    )
    printed: list[str] = []

    def read() -> None:
        for line in process.stdout:
            printed.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        steps(printed)
    finally:
        process.send_signal(signal.SIGINT)
        err = process.communicate(timeout=30)[1]
        reader.join(timeout=30)
    return process.returncode, "\n".join(printed), err


PASS = re.compile(r"\d\d:\d\d:\d\d (\d+) files read: (\d+) lines, (\d+) messages, 0 errors")


def read_by_passes(printed: list[str]) -> int:
    """Lines read by the passes after the first that reported so far."""
    return sum(int(m[2]) for line in printed[1:] if (m := PASS.fullmatch(line)))


def test_ingest_watch_reads_new_and_grown_files(tmp_path, project):
    first = add_prompts(project / "s1.jsonl", "s1", ["hello one"])
    db = tmp_path / "o.db"

    def steps(printed):
        until(lambda: stored(db) == {("s1", "hello one")})
        add_prompts(first, "s1", ["hello two"])
        add_prompts(project / "s2.jsonl", "s2", ["a new session"])
        until(lambda: stored(db) == {("s1", "hello one"), ("s1", "hello two"), ("s2", "a new session")})
        until(lambda: read_by_passes(printed) == 2)

    status, out, err = watching(db, ["--source", "claude", "--no-progress"], steps)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("1 files (1 read, 0 unchanged, 0 gone from disk), 1 lines, 1 sessions, 1 messages, 0 errors")
    passes = [PASS.fullmatch(line) for line in lines[1:]]
    assert all(passes), lines
    assert sum(int(p[2]) for p in passes) == 2 and sum(int(p[3]) for p in passes) == 2


def test_ingest_watch_finds_a_log_folder_that_appears_later(tmp_path, project):
    db = tmp_path / "o.db"

    def steps(printed):
        until(lambda: db.exists())
        add_prompts(project / "s1.jsonl", "s1", ["first words"])  # creates ~/.claude
        until(lambda: stored(db) == {("s1", "first words")})

    status, out, err = watching(db, ["--no-progress"], steps)
    assert status == 0
    assert "No agent log folders found" in err
    assert out.splitlines()[0].startswith("0 files")


def archive(db: Path) -> list:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, availability FROM sessions ORDER BY id").fetchall()
    finally:
        conn.close()


def test_ingest_watch_keeps_going_when_a_given_folder_is_deleted(tmp_path):
    import shutil

    logs = tmp_path / "logs" / "projects" / "-tmp-watched"
    add_prompts(logs / "s1.jsonl", "s1", ["kept after deletion"])
    db = tmp_path / "o.db"

    def steps(printed):
        until(lambda: stored(db) == {("s1", "kept after deletion")})
        # Moved away in one step, then deleted: a pass never sees half a tree.
        (tmp_path / "logs").rename(tmp_path / "deleted")
        shutil.rmtree(tmp_path / "deleted")
        until(lambda: archive(db) == [("s1", "archived")])
        until(lambda: len(printed) == 2)
        add_prompts(logs / "s2.jsonl", "s2", ["the folder is back"])  # the watcher is still there
        until(lambda: archive(db) == [("s1", "archived"), ("s2", "live")])
        until(lambda: read_by_passes(printed[1:]) == 1)

    status, out, err = watching(db, ["--no-progress", "--claude-dir", str(tmp_path / "logs")], steps)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert re.fullmatch(r"\d\d:\d\d:\d\d 0 files read: 0 lines, 0 messages, 0 errors, 1 gone from disk \(kept\)", lines[1])
    later = [PASS.fullmatch(line) for line in lines[2:]]
    assert all(later) and sum(int(m[2]) for m in later) == sum(int(m[3]) for m in later) == 1
    assert stored(db) == {("s1", "kept after deletion"), ("s2", "the folder is back")}


def test_ingest_watch_json_lines_all_have_the_same_keys(tmp_path, project):
    first = add_prompts(project / "s1.jsonl", "s1", ["hello one"])
    db = tmp_path / "o.db"

    def steps(printed):
        until(lambda: stored(db) == {("s1", "hello one")})
        add_prompts(first, "s1", ["hello two"])
        until(lambda: len(stored(db)) == 2)
        until(lambda: sum(json.loads(line)["messages"] for line in printed) == 2)

    status, out, err = watching(db, ["--source", "claude", "--json"], steps)
    assert status == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) >= 2 and len({frozenset(record) for record in records}) == 1
    assert {"at", "db", "roots", "files_read", "messages"} <= set(records[0])
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["at"]) for record in records)  # UTC
    assert sum(record["messages"] for record in records) == 2


def test_watch_stops_when_its_parent_exits(tmp_path, project):
    # The parent starts the watcher and exits at once; the watcher's output
    # pipe stays open until the watcher is gone, so this returns only then.
    add_prompts(project / "s1.jsonl", "s1", ["hello"])
    starter = "import os, subprocess, sys; subprocess.Popen(sys.argv[1:] + ['--parent', str(os.getpid())])"
    db = tmp_path / "o.db"
    result = subprocess.run(
        [sys.executable, "-c", starter] + OBELISK
        + ["ingest", "--watch", "--interval", "0.1", "--db", str(db), "--source", "claude", "--json"],
        capture_output=True, text=True, timeout=60,
    )
    first = json.loads(result.stdout.splitlines()[0])
    assert (first["files"], first["messages"], first["db"]) == (1, 1, str(db))
    assert {"at", "roots", "db"} <= set(first)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the watcher through /proc")
def test_up_serves_sessions_written_after_it_started(tmp_path, project):
    add_prompts(project / "s1.jsonl", "s1", ["before serving"])
    port, db = free_port(), tmp_path / "obelisk.db"
    log = open(tmp_path / "server.log", "w")  # a file: an unread pipe would fill with access lines
    server = subprocess.Popen(
        OBELISK + ["up", "--db", str(db), "--claude-dir", str(project.parent.parent), "--port", str(port)],
        stdout=log, stderr=log, preexec_fn=ctrl_c_default,
    )

    def session_ids() -> list:
        url = f"http://127.0.0.1:{port}/obelisk/sessions.json?_shape=array&_col=id&_sort=id"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return [row["id"] for row in json.load(response)]
        except OSError:
            return []

    try:
        until(lambda: session_ids() == ["s1"], timeout=60)
        [watcher] = children(server.pid)
        add_prompts(project / "s2.jsonl", "s2", ["after serving"])
        until(lambda: session_ids() == ["s1", "s2"])
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        log.close()
    until(lambda: exited(watcher))
