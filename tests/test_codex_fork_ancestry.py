"""A fork of a fork of a fork: the history its copy holds of every log stored (or
found), however far up its chain, is a replay of that log; the copies of the
threads stored nowhere between are kept, once."""

from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
from pathlib import Path

import pytest
from codex_lines import line as _line, restamp as _restamp
from dbsnapshot import diff, rows, snapshot

from datasette_obelisk.store.ingest import ingest

A = "a1a1a1a1-0000-4000-8000-00000000000a"
B = "b2b2b2b2-0000-4000-8000-00000000000b"
C = "c3c3c3c3-0000-4000-8000-00000000000c"
D = "d4d4d4d4-0000-4000-8000-00000000000d"
IDS = {"A": A, "B": B, "C": C, "D": D}
STARTS = {"A": "2026-01-02T03:00:00.000Z", "B": "2026-01-02T04:00:00.000Z",
          "C": "2026-01-02T05:00:00.000Z", "D": "2026-01-02T06:00:00.000Z"}


def _meta(me: str, start: str, parent: str | None) -> bytes:
    meta = {"id": me, "timestamp": start, "cwd": "/workspace/synthetic-project", "originator": "codex_cli_rs",
            "cli_version": "0.0.0-test", "source": "cli", "model_provider": "synthetic"}
    if parent:
        meta["forked_from_id"] = parent
    return _line("session_meta", meta, start)


def _turn(name: str, at: str, older: bool = False) -> bytes:
    """A turn of ``name``'s own: a prompt, a shell call and its output, an answer. ``older``:
    as builds that name no turn write it, its prompt the same in every thread (its turn
    context and prompt lines repeat those of the thread it forked from, all but their time)."""
    call = f"call_{name}"
    later = at[:-5] + "5.000Z"
    prompt = "continue" if older else f"{name}'s own prompt"
    return b"".join([
        _line("turn_context", {**({} if older else {"turn_id": f"turn-{name}"}),
                               "cwd": "/workspace/synthetic-project", "approval_policy": "never",
                               "sandbox_policy": {"type": "danger-full-access"}, "model": "gpt-test"}, at),
        _line("event_msg", {"type": "user_message", "message": prompt}, at),
        _line("response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": prompt}]}, at),
        _line("response_item", {"type": "function_call", "name": "shell", "call_id": call,
                                "arguments": json.dumps({"command": ["echo", name]})}, later),
        _line("response_item", {"type": "function_call_output", "call_id": call,
                                "output": json.dumps({"output": f"{name}\n", "metadata": {"exit_code": 0}})}, later),
        _line("event_msg", {"type": "agent_message", "message": f"Answer to {name}'s own prompt"}, later),
    ])


def chain(older: bool = False) -> dict[str, bytes]:
    """A, and B forked from A, C from B, D from C: each fork its session_meta, its parent's
    lines re-stamped, a turn of its own."""
    logs, parent = {}, None
    for name in "ABCD":
        start = STARTS[name]
        own_at = start[:-10] + "01:00.000Z"
        copied = b"".join(_restamp(line, start) for line in logs[parent].splitlines(keepends=True)) if parent else b""
        logs[name] = _meta(IDS[name], start, IDS[parent] if parent else None) + copied + _turn(name, own_at, older)
        parent = name
    return logs


def rel(name: str) -> str:
    return f"sessions/2026/01/02/rollout-2026-01-02T0{3 + 'ABCD'.index(name)}-00-00-{IDS[name]}.jsonl"


def ingest_runs(tmp_path: Path, runs: list[str], *, label: str = "", older: bool = False) -> tuple[Path, Path]:
    """Ingest, one run after another, the logs each run names (added to one Codex home); a
    run's ``-X`` deletes X's log before it (its sessions stay)."""
    name = label + ("older-" if older else "") + "_".join(runs)
    db_path, home = tmp_path / f"{name}.db", tmp_path / name / ".codex"
    logs = chain(older)
    for run in runs:
        for gone, key in re.findall(r"(-?)([A-D])", run):
            place(home, logs, key, bool(gone))
        ingest(db_path, {"codex": home})
    return db_path, home


def place(home: Path, logs: dict[str, bytes], key: str, gone: bool = False) -> None:
    """Write ``logs[key]`` where the log of thread ``key[0]`` lies in the Codex ``home``
    (``key`` may name a variant of it: ``"D-head"``), or (``gone``) delete that log."""
    path = home / rel(key[0])
    if gone:
        os.remove(path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(logs[key])


COUNTS = ("SELECT session_id, COUNT(*), SUM(json_extract(meta_json, '$.copied_from') IS NOT NULL) "
          "FROM messages GROUP BY session_id ORDER BY session_id")
DUPLICATES = "SELECT text, COUNT(*) FROM messages WHERE text != '' GROUP BY text HAVING COUNT(*) > 1"
LINKS = "SELECT id, parent_session_id, relationship FROM sessions ORDER BY id"
CHILDREN = "SELECT id FROM sessions WHERE parent_session_id = ? ORDER BY id"


def s(name: str) -> str:
    return f"codex:{IDS[name]}"


def texts(db_path: Path, name: str) -> list[tuple]:
    return rows(db_path, "SELECT text, json_extract(meta_json, '$.copied_from') FROM messages "
                         "WHERE session_id = ? AND role = 'user' AND type = 'event_msg' ORDER BY seq", [s(name)])


def test_a_fork_whose_two_parents_are_stored_nowhere_leaves_the_stored_root_s_history_to_it(tmp_path):
    db_path, _ = ingest_runs(tmp_path, ["AD"])
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("D"), 12, 8)]
    assert texts(db_path, "D") == [("B's own prompt", s("C")), ("C's own prompt", s("C")), ("D's own prompt", None)]
    assert rows(db_path, DUPLICATES) == []
    assert rows(db_path, "SELECT COUNT(*) FROM tool_calls WHERE session_id = ?", [s("D")]) == [(3,)]
    assert rows(db_path, LINKS) == [(s("A"), None, None), (s("D"), s("C"), "fork")]
    assert rows(db_path, CHILDREN, [s("A")]) == []


def test_a_fork_read_while_its_head_is_written_reads_its_chain_again_once_it_is(tmp_path):
    db_path, home = tmp_path / "parts.db", tmp_path / "parts" / ".codex"
    logs = chain()
    (home / rel("A")).parent.mkdir(parents=True)
    (home / rel("A")).write_bytes(logs["A"])
    (home / rel("D")).write_bytes(b"".join(logs["D"].splitlines(keepends=True)[:2]))  # (C's copied session_meta)
    ingest(db_path, {"codex": home})
    (home / rel("D")).write_bytes(logs["D"])
    ingest(db_path, {"codex": home})
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("D"), 12, 8)]
    assert rows(db_path, DUPLICATES) == []
    together, _ = ingest_runs(tmp_path, ["AD"])
    assert diff(snapshot(together), snapshot(db_path)) == []


@pytest.mark.parametrize("runs, kept", [(["AC", "-A"], [(s("A"), 4, 0), (s("C"), 8, 4)]),
                                        (["AD", "-A"], [(s("A"), 4, 0), (s("D"), 12, 8)])])
def test_a_fork_is_not_read_again_when_the_log_up_its_chain_it_replays_is_gone(tmp_path, runs, kept):
    db_path, _ = ingest_runs(tmp_path, runs)
    assert rows(db_path, COUNTS) == kept
    assert rows(db_path, DUPLICATES) == []


def test_a_fork_alone_keeps_all_it_copied(tmp_path):
    db_path, _ = ingest_runs(tmp_path, ["D"])
    assert rows(db_path, COUNTS) == [(s("D"), 16, 12)]
    assert texts(db_path, "D") == [("A's own prompt", s("C")), ("B's own prompt", s("C")),
                                   ("C's own prompt", s("C")), ("D's own prompt", None)]
    assert rows(db_path, LINKS) == [(s("D"), s("C"), "fork")]


def test_a_fork_leaves_its_copy_to_the_nearest_stored_log_up_its_chain(tmp_path):
    db_path, _ = ingest_runs(tmp_path, ["ABD"])
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("B"), 4, 0), (s("D"), 8, 4)]
    assert texts(db_path, "D") == [("C's own prompt", s("C")), ("D's own prompt", None)]
    assert rows(db_path, DUPLICATES) == []
    assert rows(db_path, LINKS) == [(s("A"), None, None), (s("B"), s("A"), "fork"), (s("D"), s("C"), "fork")]
    assert rows(db_path, CHILDREN, [s("A")]) == [(s("B"),)]
    db_path, _ = ingest_runs(tmp_path, ["ABCD"])
    assert rows(db_path, COUNTS) == [(s(name), 4, 0) for name in "ABCD"]
    assert rows(db_path, DUPLICATES) == []
    assert rows(db_path, LINKS) == [(s("A"), None, None), (s("B"), s("A"), "fork"),
                                    (s("C"), s("B"), "fork"), (s("D"), s("C"), "fork")]
    assert [rows(db_path, CHILDREN, [s(name)]) for name in "ABC"] == [[(s("B"),)], [(s("C"),)], [(s("D"),)]]


def _orders() -> list[tuple[str, list[str]]]:
    """Each set of logs holding D, and each order its logs can come in one by one."""
    out = []
    for k in range(1, 4):
        for others in itertools.combinations("ABC", k):
            logs = "".join(others) + "D"
            out += [(logs, list(order)) for order in itertools.permutations(logs)]
    return out


@pytest.mark.parametrize("logs, runs", _orders())
def test_a_fork_of_a_fork_of_a_fork_ends_as_read_at_once_however_its_logs_arrive(tmp_path, logs, runs):
    together, _ = ingest_runs(tmp_path, [logs], label="together-")
    assert diff(snapshot(together), snapshot(ingest_runs(tmp_path, runs)[0])) == []


def test_a_gone_fork_leaves_the_history_a_log_up_its_chain_holds_once_that_log_comes(tmp_path):
    db_path, _ = ingest_runs(tmp_path, ["C", "-C", "A"])
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("C"), 8, 4)]
    assert texts(db_path, "C") == [("B's own prompt", s("B")), ("C's own prompt", None)]
    assert rows(db_path, DUPLICATES) == []
    assert rows(db_path, "SELECT COUNT(*) FROM tool_calls WHERE session_id = ?", [s("C")]) == [(2,)]
    assert rows(db_path, "SELECT id, parent_session_id, relationship, availability FROM sessions ORDER BY id") == [
        (s("A"), None, None, "live"), (s("C"), s("B"), "fork", "archived")]
    read_with_it, _ = ingest_runs(tmp_path, ["AC", "-C"])
    assert diff(snapshot(read_with_it), snapshot(db_path)) == []


def test_a_gone_fork_leaves_each_log_up_its_chain_what_it_holds_as_they_come(tmp_path):
    db_path, home = ingest_runs(tmp_path, ["D", "-D"])
    assert rows(db_path, COUNTS) == [(s("D"), 16, 12)]
    expected = {"A": [(s("A"), 4, 0), (s("D"), 12, 8)],
                "B": [(s("A"), 4, 0), (s("B"), 4, 0), (s("D"), 8, 4)],
                "C": [(s("A"), 4, 0), (s("B"), 4, 0), (s("C"), 4, 0), (s("D"), 4, 0)]}
    for name in "ABC":
        (home / rel(name)).write_bytes(chain()[name])
        ingest(db_path, {"codex": home})
        assert rows(db_path, COUNTS) == expected[name]
        assert rows(db_path, DUPLICATES) == []
        assert rows(db_path, "SELECT availability FROM sessions WHERE id = ?", [s("D")]) == [("archived",)]
        assert rows(db_path, LINKS) == [(s(n), s(p) if p else None, "fork" if p else None)
                                        for n, p in [("A", None), ("B", "A"), ("C", "B"), ("D", "C")]
                                        if n == "D" or n <= name]
        assert [rows(db_path, CHILDREN, [s(n)]) for n in "ABC"] == [
            [(s(chr(ord(n) + 1)),)] if chr(ord(n) + 1) <= name or n == "C" else [] for n in "ABC"]


def _gone_orders() -> list[tuple[str, list[str]]]:
    """Each set of logs up D's chain, D read with some of them, then gone, the others coming
    one by one (the first in the run that finds D gone, or after)."""
    out = []
    for k in range(1, 4):
        for logs in map("".join, itertools.combinations("ABC", k)):
            for j in range(len(logs)):
                for read_with in map("".join, itertools.combinations(logs, j)):
                    for order in itertools.permutations(c for c in logs if c not in read_with):
                        out.append((logs, [read_with + "D", "-D", *order]))
                        out.append((logs, [read_with + "D", "-D" + order[0], *order[1:]]))
    return out


@pytest.mark.parametrize("logs, runs", _gone_orders())
def test_a_gone_fork_ends_as_when_read_with_the_logs_up_its_chain_however_they_come(tmp_path, logs, runs):
    read_with_them, _ = ingest_runs(tmp_path, [logs + "D", "-D"], label="with-")
    assert diff(snapshot(read_with_them), snapshot(ingest_runs(tmp_path, runs)[0])) == []


def test_a_line_of_a_thread_between_that_repeats_one_of_the_stored_log_s_is_no_replay(tmp_path):
    db_path, _ = ingest_runs(tmp_path, ["AC"], older=True)
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("C"), 8, 4)]
    assert texts(db_path, "C") == [("continue", s("B")), ("continue", None)]
    assert rows(db_path, "SELECT text, model FROM messages WHERE session_id = ? AND role = 'assistant' "
                         "AND json_extract(meta_json, '$.copied_from') IS NOT NULL ORDER BY seq", [s("C")]) == [
        ("shell\necho\nB", "gpt-test"), ("Answer to B's own prompt", "gpt-test")]
    assert rows(db_path, "SELECT COUNT(*) FROM messages WHERE session_id = ? AND text IN (?, ?, ?)",
                [s("C"), "shell\necho\nA", "A\n", "Answer to A's own prompt"]) == [(0,)]


@pytest.mark.parametrize("runs, read_with", [
    (["C", "-C", "A"], ["AC", "-C"]), (["D", "-D", "A", "B"], ["ABD", "-D"]), (["D", "-DB", "A"], ["ABD", "-D"]),
    (["AD", "-D", "B"], ["ABD", "-D"]), (["D", "-D", "A", "C"], ["ACD", "-D"]),
])
def test_a_gone_fork_of_older_builds_ends_as_when_read_with_the_logs_up_its_chain(tmp_path, runs, read_with):
    expected = ingest_runs(tmp_path, read_with, label="with-", older=True)[0]
    assert diff(snapshot(expected), snapshot(ingest_runs(tmp_path, runs, older=True)[0])) == []


@pytest.mark.parametrize("logs, runs", [("AD", ["D", "A"]), ("ABD", ["D", "B", "A"]), ("ABCD", ["D", "A", "C", "B"])])
def test_a_fork_of_older_builds_ends_as_read_at_once_however_its_logs_arrive(tmp_path, logs, runs):
    together, _ = ingest_runs(tmp_path, [logs], label="together-", older=True)
    assert diff(snapshot(together), snapshot(ingest_runs(tmp_path, runs, older=True)[0])) == []


# What a fork's copy replays of a log up its chain is given up again when the fork is read
# again from its start once that log is gone (its rows stay, archived): as a new parser
# version reads every log again, or as a log replaced by a copy of it renamed over it is.
FORK_MESSAGES = ("SELECT uuid, seq, text, json_extract(meta_json, '$.copied_from') FROM messages "
                 "WHERE session_id = ? ORDER BY seq")
FTS_HITS = "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?"


def read_again(db_path: Path, home: Path, name: str, how: str, data: bytes | None = None) -> None:
    path = home / rel(name)
    if how == "parser":
        conn = sqlite3.connect(db_path)
        conn.execute("UPDATE source_files SET parser_version = NULL WHERE path = ?", [str(path)])
        conn.commit()
        conn.close()
    else:
        (home / "new.jsonl").write_bytes(path.read_bytes() if data is None else data)
        os.replace(home / "new.jsonl", path)
    ingest(db_path, {"codex": home})


def first_row_offset(name: str) -> int:
    """The byte offset, in ``name``'s log, of the first line after the history it copies of
    A to give a row: its copy of B's prompt."""
    log = chain()[name]
    return log.rfind(b"\n", 0, log.index(b"B's own prompt")) + 1


@pytest.mark.parametrize("how", ["parser", "replaced"])
@pytest.mark.parametrize("runs, fork, kept", [(["AC", "-A"], "C", [(s("A"), 4, 0), (s("C"), 8, 4)]),
                                              (["AD", "-A"], "D", [(s("A"), 4, 0), (s("D"), 12, 8)])])
def test_a_fork_read_again_once_the_log_it_replays_is_gone_gives_up_the_same_lines(tmp_path, runs, fork, kept, how):
    db_path, home = ingest_runs(tmp_path, runs, label=how)
    before, whole = rows(db_path, FORK_MESSAGES, [s(fork)]), snapshot(db_path)
    assert rows(db_path, COUNTS) == kept
    assert before[0][:2] == (f"{s(fork)}:{first_row_offset(fork)}", 1)
    assert rows(db_path, FTS_HITS, ['"Answer to A"']) == [(1,)]
    read_again(db_path, home, fork, how)
    assert rows(db_path, COUNTS) == kept
    assert rows(db_path, DUPLICATES) == []
    assert rows(db_path, FTS_HITS, ['"Answer to A"']) == [(1,)]
    assert rows(db_path, "SELECT session_id FROM messages WHERE text = ?", ["A's own prompt"]) == [(s("A"),)]
    assert rows(db_path, FORK_MESSAGES, [s(fork)]) == before
    assert diff(whole, snapshot(db_path)) == []


def test_a_fork_read_while_its_copy_is_written_replays_all_of_it_once_the_log_is_gone(tmp_path):
    """Read first while its log ends within the lines it replays of A (more are written
    after), D gives up all those lines when read again with A gone."""
    db_path, home = tmp_path / "written.db", tmp_path / "written" / ".codex"
    logs = chain()
    (home / rel("A")).parent.mkdir(parents=True)
    (home / rel("A")).write_bytes(logs["A"])
    head = logs["D"].splitlines(keepends=True)
    (home / rel("D")).write_bytes(b"".join(head[:7]))  # (its session_meta, C's, B's, A's, 3 of A's lines)
    ingest(db_path, {"codex": home})
    with open(home / rel("D"), "ab") as log:
        log.write(b"".join(head[7:]))
    ingest(db_path, {"codex": home})
    os.remove(home / rel("A"))
    ingest(db_path, {"codex": home})
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("D"), 12, 8)]
    before = rows(db_path, FORK_MESSAGES, [s("D")])
    read_again(db_path, home, "D", "parser")
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("D"), 12, 8)]
    assert rows(db_path, DUPLICATES) == []
    assert rows(db_path, FORK_MESSAGES, [s("D")]) == before
    assert before[0][:2] == (f"{s('D')}:{first_row_offset('D')}", 1)


def test_a_fork_replaced_by_another_copy_once_the_log_is_gone_keeps_what_it_cannot_tell_a_replay(tmp_path):
    """C replaced, once A is gone, by a log whose copy of A differs from the one read with A:
    none of its lines is known to be A's, so it keeps them all."""
    db_path, home = ingest_runs(tmp_path, ["AC", "-A"])
    other = chain()["C"].replace(b"Answer to A's own prompt", b"Another answer")
    read_again(db_path, home, "C", "replaced", other)
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("C"), 12, 8)]
    assert rows(db_path, "SELECT text FROM messages WHERE session_id = ? AND meta_json LIKE '%copied_from%' "
                         "ORDER BY text", [s("C")]) == sorted([
        ("A's own prompt",), ("A\n",), ("Another answer",), ("B's own prompt",), ("B\n",),
        ("Answer to B's own prompt",), ("shell\necho\nA",), ("shell\necho\nB",)])


def _grown_copy() -> tuple[bytes, bytes]:
    """A with a second turn of its own, and C copying it whole: its copy of A one turn longer
    than the one read first."""
    logs = chain()
    more = _turn("A-again", "2026-01-02T03:30:00.000Z")
    lines = logs["C"].splitlines(keepends=True)
    copied = b"".join(_restamp(line, STARTS["C"]) for line in more.splitlines(keepends=True))
    return logs["A"] + more, b"".join(lines[:9]) + copied + b"".join(lines[9:])


@pytest.mark.parametrize("how, kept, prompts", [
    ("shorter", [(s("A"), 4, 0), (s("C"), 9, 5)], ["A's own prompt"]),
    ("longer", [(s("A"), 8, 0), (s("C"), 8, 4)], ["A's own prompt", "A-again's own prompt"]),
])
def test_a_fork_replaced_by_another_copy_while_the_log_is_there_replays_what_the_new_copy_does(
        tmp_path, how, kept, prompts):
    """C replaced, while A is there, by a log whose copy replays fewer of A's lines (one of
    them differs) or more (A went on, and the copy with it): what C gives up as A's is read
    again from the new copy, so once A is gone and C is read again, A's history is stored
    once, in A."""
    db_path, home = ingest_runs(tmp_path, ["AC"], label=how)
    if how == "shorter":
        other = chain()["C"].replace(b"Answer to A's own prompt", b"Another answer")
    else:
        grown, other = _grown_copy()
        (home / rel("A")).write_bytes(grown)
    read_again(db_path, home, "C", "replaced", other)
    assert rows(db_path, COUNTS) == kept
    os.remove(home / rel("A"))
    ingest(db_path, {"codex": home})
    read_again(db_path, home, "C", "parser")
    assert rows(db_path, COUNTS) == kept
    for prompt in prompts:
        assert rows(db_path, "SELECT session_id FROM messages WHERE text = ?", [prompt]) == [(s("A"),)]
    assert rows(db_path, DUPLICATES) == []
