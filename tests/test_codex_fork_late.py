"""A fork first read after the log up its chain whose history its copy begins with was
deleted (its rows stay, archived): the copy replays that log as when read with it there,
told from the rows stored of it; each text is stored once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dbsnapshot import diff, rows, snapshot
from test_codex_fork_ancestry import (
    COUNTS, DUPLICATES, LINKS, _turn, chain, ingest_runs, place, read_again, rel, s,
)

import datasette_obelisk.sources.codex as codex
from datasette_obelisk.store.ingest import ingest


@pytest.mark.parametrize("late, read_with", [
    (["A", "-AB"], ["AB", "-A"]),  # (its parent's log stored: the copy is a replay of it)
    (["AB", "-A-BC"], ["ABC", "-A-B"]),
    (["A", "-AB", "-BC"], ["ABC", "-A-B"]),
    (["A", "-AC"], ["AC", "-A"]),  # (the thread between stored nowhere: the copy kept but A's lines)
    (["A", "-AD"], ["AD", "-A"]),
    (["AB", "-A-BD"], ["ABD", "-A-B"]),
    (["AB", "-BD"], ["ABD", "-B"]),
    (["AC", "-A-CD"], ["ACD", "-A-C"]),
    (["A", "-AB", "-BD"], ["ABD", "-A-B"]),
    (["A", "-AC", "A"], ["AC"]),  # (the log there again: the copy replays it as read with it)
    (["AB", "-A-BD", "AB"], ["ABD"]),
])
@pytest.mark.parametrize("older", [False, True])
def test_a_fork_first_read_once_the_log_it_replays_is_gone_ends_as_read_with_it(tmp_path, late, read_with, older):
    expected = ingest_runs(tmp_path, read_with, label="with-", older=older)[0]
    db_path, home = ingest_runs(tmp_path, late, older=older)
    assert rows(db_path, DUPLICATES) == rows(expected, DUPLICATES)  # (older builds: each thread's "continue")
    assert older or rows(db_path, DUPLICATES) == []
    assert rows(db_path, COUNTS) == rows(expected, COUNTS)
    assert rows(db_path, LINKS) == rows(expected, LINKS)
    assert diff(snapshot(expected), snapshot(db_path)) == []
    ingest(db_path, {"codex": home})  # (nothing new: nothing changes)
    assert diff(snapshot(expected), snapshot(db_path)) == []
    fork = max("".join(late).replace("-", ""))
    read_again(db_path, home, fork, "parser")  # (read again from its start, as by a new parser version)
    assert diff(snapshot(expected), snapshot(db_path)) == []


def test_a_fork_first_read_once_the_log_is_gone_keeps_its_history_once(tmp_path):
    db_path, _ = ingest_runs(tmp_path, ["A", "-AD"])
    assert rows(db_path, COUNTS) == [(s("A"), 4, 0), (s("D"), 12, 8)]
    assert rows(db_path, "SELECT session_id FROM messages WHERE text = ?", ["A's own prompt"]) == [(s("A"),)]
    assert rows(db_path, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", ['"Answer to A"']) == [(1,)]


def _runs(tmp_path: Path, name: str, logs: dict[str, bytes], runs: list[str]) -> Path:
    db_path, home = tmp_path / f"{name}.db", tmp_path / name / ".codex"
    for run in runs:
        for step in run.split():
            place(home, logs, step.lstrip("-"), step.startswith("-"))
        ingest(db_path, {"codex": home})
    return db_path


def test_a_fork_first_read_once_a_log_that_went_on_after_it_is_gone_replays_what_it_copied(tmp_path):
    """A went on after B forked it (a turn more): C's copy replays A's lines up to where B's own begin."""
    logs = chain()
    logs["A"] += _turn("A-again", "2026-01-02T04:30:00.000Z")
    expected = _runs(tmp_path, "with", logs, ["A C", "-A"])
    assert rows(expected, COUNTS) == [(s("A"), 8, 0), (s("C"), 8, 4)]
    db_path = _runs(tmp_path, "late", logs, ["A", "-A C"])
    assert rows(db_path, DUPLICATES) == []
    assert diff(snapshot(expected), snapshot(db_path)) == []


def test_a_fork_first_read_within_its_copy_once_the_log_is_gone_replays_all_of_it_once_written(tmp_path):
    logs = chain()
    head = logs["D"].splitlines(keepends=True)
    logs["D-head"] = b"".join(head[:7])  # (its session_meta, C's, B's, A's, 3 of A's lines)
    expected = _runs(tmp_path, "with", logs, ["A D", "-A"])
    db_path = _runs(tmp_path, "late", logs, ["A", "-A D-head", "D"])
    assert rows(db_path, DUPLICATES) == []
    assert diff(snapshot(expected), snapshot(db_path)) == []


def test_a_fork_whose_copy_differs_from_the_gone_log_gives_up_only_the_lines_it_repeats(tmp_path):
    logs = chain()
    logs["C-other"] = logs["C"].replace(b"Answer to A's own prompt", b"Another answer")
    expected = _runs(tmp_path, "with", logs, ["A C-other", "-A"])
    assert rows(expected, COUNTS) == [(s("A"), 4, 0), (s("C"), 9, 5)]
    db_path = _runs(tmp_path, "late", logs, ["A", "-A C-other"])
    assert diff(snapshot(expected), snapshot(db_path)) == []


def test_files_that_replay_no_gone_log_are_not_read_for_it(tmp_path, monkeypatch):
    calls = []
    real = codex.archived_replay_extent
    monkeypatch.setattr(codex, "archived_replay_extent", lambda *a, **k: calls.append(a[0].path) or real(*a, **k))
    db_path, home = ingest_runs(tmp_path, ["ABC", "D"])
    assert calls == []
    os.remove(home / rel("A"))
    os.remove(home / rel("B"))
    ingest(db_path, {"codex": home})
    assert calls == []  # (C's parent's log is stored: its copy is a replay of that one)
    db_path, home = ingest_runs(tmp_path, ["A", "-AD", "", ""], label="late-")
    assert calls == [home / rel("D")]  # (read once: how far it replays A is kept in its hints)


@pytest.mark.parametrize("late, read_with", [(["A", "-AC"], ["AC", "-A"]), (["AB", "-A-BD"], ["ABD", "-A-B"])])
def test_a_fork_stored_with_the_lines_it_replays_of_a_gone_log_gives_them_up_when_next_read(
        tmp_path, monkeypatch, late, read_with):
    """Stored by a run that could not tell how far its copy replays the gone log (it kept it
    whole, the texts twice), the fork gives those lines up at the next run."""
    with monkeypatch.context() as patched:
        patched.setattr(codex.CodexSource, "settle_archived_replays", lambda *args: None)
        db_path, home = ingest_runs(tmp_path, late)
    assert rows(db_path, DUPLICATES) != []
    ingest(db_path, {"codex": home})
    assert rows(db_path, DUPLICATES) == []
    assert diff(snapshot(ingest_runs(tmp_path, read_with, label="with-")[0]), snapshot(db_path)) == []
