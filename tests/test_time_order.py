"""``sessions.time_ordered``: whether a session's stored times are canonical and never go
back, so that a page of its thread is read in log order. Derivation keeps it, whole or
appended; every change to the rows leaves it as the migration's one pass works it out."""

import re
import sqlite3

import sqlite_utils

from datasette_obelisk.query import obelisk as o
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.store.migrations import TIME_ORDER_SCAN, migrations
from datasette_obelisk.utc import CANONICAL
from dbsnapshot import rows
from helper_fixtures import build_toy_db
from test_derive_appended import SID, append, claude, claude_line, conversation, log, plans_of, reply  # noqa: F401

# The flag stated apart, in SQL: the sessions whose flag must be 0 (a time not canonical,
# or earlier than the one before it in log order).
OUT_OF_ORDER = f"""SELECT DISTINCT session_id FROM (
    SELECT session_id, timestamp AS t, LAG(timestamp) OVER (PARTITION BY session_id ORDER BY seq) AS p
    FROM messages WHERE timestamp IS NOT NULL)
  WHERE NOT (typeof(t) = 'text' AND t >= '0001' AND strftime('{CANONICAL}', t) IS t AND substr(t, 12, 2) < '24'
             AND date(substr(t, 1, 10), '+0 days') = substr(t, 1, 10) AND (p IS NULL OR t >= p))"""


def flags(db) -> dict:
    return dict(rows(db, "SELECT id, time_ordered FROM sessions ORDER BY id"))


def assert_exact(db) -> dict:
    """Every session's flag is what its stored rows say."""
    out = {r[0] for r in rows(db, OUT_OF_ORDER)}
    got = flags(db)
    assert got == {s: int(s not in out) for s in got}
    return got


def at(minute: int, second: int = 0) -> str:
    return f"2026-03-01T10:{minute:02d}:{second:02d}.000Z"


def test_a_whole_derivation_sets_the_flag(tmp_path):
    db = build_toy_db(tmp_path, {
        "ordered": [{"id": "o1", "ts": at(0)}, {"id": "o2"}, {"id": "o3", "ts": at(0)}, {"id": "o4", "ts": at(1)}],
        "untimed": [{"id": "u1"}, {"id": "u2"}],
        "back": [{"id": "b1", "ts": at(1)}, {"id": "b2", "ts": at(0)}],
        "spelled": [{"id": "s1", "ts": at(0)}, {"id": "s2", "ts": "2026-03-01T10:01:00Z"}],
        "offset": [{"id": "f1", "ts": "2026-03-01T11:01:00.000+01:00"}],
        "no-day": [{"id": "d1", "ts": "2026-02-30T10:00:00.000Z"}],
        "hour-24": [{"id": "h1", "ts": "2026-01-01T24:00:00.000Z"}],
        "year-0": [{"id": "y1", "ts": "0000-01-01T10:00:00.000Z"}],
        "placeholder": [{"id": "p1", "ts": at(0)}, {"id": "p2", "ts": "[trimmed]"}],
        "late-month": [{"id": "l1", "ts": "2026-01-31T10:00:00.000Z"}, {"id": "l2", "ts": "2026-03-31T23:59:59.999Z"}],
    })
    assert assert_exact(db) == {"back": 0, "hour-24": 0, "year-0": 0, "late-month": 1, "no-day": 0, "offset": 0, "ordered": 1, "placeholder": 0,
                                "spelled": 0, "untimed": 1}


def test_lines_appended_keep_or_clear_the_flag(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), conversation(3))
    assert plans_of(db, claude) == (1, 0)
    assert assert_exact(db) == {SID: 1}
    # Later, or as late as the last, or with no time: still in order, derived alone.
    append(log(claude), claude_line("u3", "a2", 6) + reply("a3", "u3", 6, timestamp=None))
    assert plans_of(db, claude) == (0, 1)
    assert assert_exact(db) == {SID: 1}
    # Earlier than the last: cleared, derived alone; a later line does not set it again.
    append(log(claude), claude_line("u4", "a3", 5))
    assert plans_of(db, claude) == (0, 1)
    assert assert_exact(db) == {SID: 0}
    append(log(claude), claude_line("u5", "u4", 20))
    assert plans_of(db, claude) == (0, 1)
    assert assert_exact(db) == {SID: 0}


def test_a_line_appended_in_another_spelling_clears_the_flag(tmp_path, claude):
    db = tmp_path / "o.db"
    append(log(claude), conversation(2))
    ingest(db, {"claude": claude})
    assert assert_exact(db) == {SID: 1}
    append(log(claude), claude_line("u2", "a1", 30, timestamp="2026-03-01T10:00:30Z"))
    assert plans_of(db, claude) == (0, 1)
    assert assert_exact(db) == {SID: 0}


def test_a_session_read_again_whole_has_its_flag_worked_out_again(tmp_path, claude):
    # Rewritten with its last line earlier, then read again from its start (a new parser version).
    db = tmp_path / "o.db"
    append(log(claude), conversation(2) + claude_line("u2", "a1", 9))
    ingest(db, {"claude": claude})
    assert assert_exact(db) == {SID: 1}
    log(claude).write_bytes(conversation(2) + claude_line("u2", "a1", 1))
    assert plans_of(db, claude) == (1, 0)
    assert assert_exact(db) == {SID: 0}
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.close()
    assert plans_of(db, claude) == (1, 0)
    assert assert_exact(db) == {SID: 0}


def test_rows_moved_to_another_session_and_renumbered_leave_both_flags_right(tmp_path, claude):
    # An inline sidechain line written earlier than the line before it moves to its agent's
    # session: the session it leaves (renumbered) is in order, and so is the agent's.
    db = tmp_path / "o.db"
    append(log(claude), conversation(2) + claude_line("s0", "a1", 0, isSidechain=True)
           + claude_line("u2", "a1", 8))
    ingest(db, {"claude": claude})
    got = assert_exact(db)
    assert got[SID] == 1 and len(got) == 2 and set(got.values()) == {1}
    assert rows(db, "SELECT uuid FROM messages WHERE session_id = ? ORDER BY seq", [SID])[-1] == ("u2",)
    # More of the agent's lines appended, one earlier than its first: its flag alone is cleared.
    append(log(claude), claude_line("s1", "s0", -1, isSidechain=True, timestamp="2026-03-01T09:59:00.000Z"))
    ingest(db, {"claude": claude})
    got = assert_exact(db)
    assert got[SID] == 1 and sorted(got.values()) == [0, 1]


def test_a_cold_load_and_a_reload_set_the_flags_a_row_by_row_load_does(tmp_path):
    from datasette_obelisk.demo.generator import generate

    generate(tmp_path / "gen", seed=7, target_bytes=400_000)
    logs = {"claude": tmp_path / "gen" / ".claude", "codex": tmp_path / "gen" / ".codex"}
    first = sorted(logs["claude"].rglob("*.jsonl"))[0]  # its first time set late: out of order
    lines = first.read_text().splitlines(keepends=True)
    n = next(i for i, line in enumerate(lines) if '"parentUuid"' in line and '"timestamp"' in line)
    lines[n] = re.sub(r'("timestamp": ?")[0-9]{4}', r"\g<1>2099", lines[n])
    first.write_text("".join(lines))
    ingest(tmp_path / "rows.db", logs, cold_load_bytes=None)
    ingest(tmp_path / "cold.db", logs, cold_load_bytes=0)
    got = assert_exact(tmp_path / "cold.db")
    assert got == flags(tmp_path / "rows.db") and set(got.values()) == {0, 1}
    conn = sqlite3.connect(tmp_path / "cold.db")
    with conn:
        conn.execute("UPDATE source_files SET parser_version = NULL")
    conn.close()
    ingest(tmp_path / "cold.db", logs, cold_load_bytes=0)
    assert assert_exact(tmp_path / "cold.db") == got


def test_the_migration_works_the_flag_out_for_the_sessions_stored(tmp_path):
    path = tmp_path / "old.db"
    migrations.apply(sqlite_utils.Database(path), stop_before="m057_record_time_order")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("INSERT INTO source_files (id, path, source, kind) VALUES (1, '/toy.jsonl', 'toy', 'session')")
        for session_id in ("ordered", "back", "spelled", "empty"):
            conn.execute("INSERT INTO sessions (id, source) VALUES (?, 'toy')", [session_id])
        stamps = {"ordered": [at(0), None, at(0), at(1)], "back": [at(1), None, at(0)],
                  "spelled": [at(0), "2026-03-01T10:01:00Z"]}
        for session_id, times in stamps.items():
            for seq, stamp in enumerate(times, 1):
                conn.execute("INSERT INTO messages (uuid, session_id, source, type, seq, timestamp, file_id, line_no, "
                             "byte_offset, byte_length) VALUES (?, ?, 'toy', 'user', ?, ?, 1, 0, 0, 0)", [f"{session_id}{seq}", session_id, seq, stamp])
    conn.close()
    open_db(path).close()
    assert assert_exact(path) == {"back": 0, "empty": 1, "ordered": 1, "spelled": 0}
    # One pass in the index's order: no sort of the messages.
    conn = sqlite3.connect(path)
    plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + TIME_ORDER_SCAN)]
    conn.close()
    assert plan == ["SCAN messages USING INDEX messages_session_seq"], plan


def test_a_thread_page_reads_the_timestamps_of_its_page_alone(tmp_path):
    # What a page costs does not grow with the session: no statement but the page's reads a
    # timestamp (none places the session), and a first page, or the page after an early
    # message, runs as many steps in a session 20 times as long.
    def steps(n):
        lines = [{"id": f"m{i:05d}", "ts": f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"}
                 for i in range(n)]
        db = build_toy_db(tmp_path / str(n), {"s1": lines})
        assert flags(db) == {"s1": 1}
        counted, current = {}, [None]
        with connect_readonly(db) as conn:
            def step():
                counted[current[0]] = counted.get(current[0], 0) + 1

            conn.set_trace_callback(lambda statement: (current.__setitem__(0, statement), counted.setdefault(statement, 0)))
            conn.set_progress_handler(step, 1)
            for args in ({"limit": 10}, {"limit": 10, "afterUuid": "m00010"}, {"limit": 10, "offset": n // 2}):
                page = o.thread_page(conn, "s1", args)
                assert len(page.items) == 10
            conn.set_progress_handler(None, 1)
        assert not [s for s in counted if "OVER (" in s]
        timed = {s: c for s, c in counted.items() if "timestamp" in s}
        assert len(timed) == 3 and all("LIMIT" in s for s in timed), list(timed)
        return sum(c for s, c in timed.items() if f"OFFSET {n // 2}" not in s)

    small, large = steps(200), steps(4000)
    assert large < small * 1.2, (small, large)
