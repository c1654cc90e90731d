"""Incremental, crash-safe ingest of source files into the database.

Each file is read from its byte cursor; rows, cursor, parser state and
fingerprint are committed together in short ``BEGIN IMMEDIATE``
transactions, so a crash at any moment loses nothing and duplicates nothing.
Files read again from their start with their family (``families``) are
forgotten, cleared and written again in one transaction per family (or per
few families read one after the other).
"""

from __future__ import annotations

import itertools
import os
import re
import sqlite3
import stat as stat_module
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import orjson

from ..records import LineError, Merged, Position
from ..sources.base import (
    Source, SourceFile, default_folder_warnings, default_root_of, folders_of, printable_path, unreadable_folders,
)
from ..sources.common import is_json_object
from ..sources import lines as line_reader
from ..utc import canonical
from . import cold_load, derive, families, redacting
from .db import get_state, open_db, open_rewrite_span, refuse_newer_parsers, set_state, transaction
from .fingerprint import Fingerprint, hashes_at, path_still_holds, still_holds
from .stable_ids import Held, greatest_place, held_ids, place_sessions_back, session_places
from .read_ahead import JobStream
from .reader import Batch, Job, PendingLine, ReadFailed, Reader, Reopen
from .relocate import relocate
from .session_index import SessionWords
from .units import hints_json, in_read_order, retired_path, unit_of_row
from .writer import LINE_NO, Writer, delete_copied_rows, delete_file_rows, file_holds_rows, retake_outputs

CHUNK_BYTES = 8 << 20
COLD_LOAD_BYTES = 64 << 20
# A run that reads stored files again from their start, reading at most this
# much in all, commits once: readers see the old rows until the new ones are
# derived, never a session forgotten or half read. A larger one commits
# between families (``Family``).
ATOMIC_REREAD_BYTES = 32 << 20
# Files to read again from their start held open at once (see ``keep_open``):
# a quarter of the descriptors the process may hold, at most 512.
try:
    import resource

    MAX_KEPT_OPEN = min(512, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4)
except ImportError:  # no such limits to ask about: none held
    MAX_KEPT_OPEN = 0
READ_AHEAD_BYTES = 32 << 20
PRECOUNT_WORDS = 1_000_000  # word counts kept for the session index, at most
IDLE_MESSAGES = 500  # messages indexed per step while waiting for the reader
IDLE_SESSIONS = 10  # sessions derived per step while waiting for the reader
PLAN_BYTES = 32 << 20  # derivations planned ahead while a cold load builds its indexes, at most
SETTLE_SECONDS = 10.0
BATCH_SECONDS = 1.0
WAL_AUTOCHECKPOINT_PAGES = 8192
# The columns ``Ingester.is_unchanged`` reads.
UNCHANGED_COLUMNS = "path, parser_version, missing, device, inode, size, mtime_ns, ctime_ns, pending_bytes, last_error"


@dataclass
class IngestSummary:
    files: int = 0
    files_skipped: int = 0
    files_read: int = 0
    files_replayed: int = 0
    files_missing: int = 0
    files_linked: int = 0  # links to a file found under another path too, not read
    files_unseen: list = field(default_factory=list)  # stored files not found that may still be there (unreadable folder)
    bytes_read: int = 0
    lines: int = 0
    messages: int = 0
    prompts: int = 0  # prompt_log rows written (prompt logs' lines)
    merged: int = 0
    errors: int = 0
    sessions: int = 0
    seconds: float = 0.0
    error_samples: list = field(default_factory=list)
    repaired: int = 0  # lines kept with repairs (bytes that are not UTF-8 read as U+FFFD): stored, not errors
    repaired_samples: list = field(default_factory=list)
    unknown: int = 0  # lines of types their parser does not know: merged, stored nowhere
    unknown_samples: list = field(default_factory=list)
    empty_files: list = field(default_factory=list)  # lines read, no message stored
    warnings: list = field(default_factory=list)  # default folders skipped: sources.base.default_folder_warnings

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "files_skipped": self.files_skipped,
            "files_read": self.files_read,
            "files_replayed": self.files_replayed,
            "files_missing": self.files_missing,
            "files_linked": self.files_linked,
            "files_unseen": self.files_unseen,
            "bytes_read": self.bytes_read,
            "lines": self.lines,
            "messages": self.messages,
            "prompts": self.prompts,
            "merged": self.merged,
            "errors": self.errors,
            "sessions": self.sessions,
            "seconds": round(self.seconds, 3),
            "error_samples": [
                {"path": p, "line": n, "reason": r} for p, n, r in self.error_samples
            ],
            "repaired": self.repaired,
            "repaired_samples": [
                {"path": p, "line": n, "reason": r} for p, n, r in self.repaired_samples
            ],
            "unknown_lines": self.unknown,
            "unknown_samples": [
                {"path": p, "line": n, "reason": r} for p, n, r in self.unknown_samples
            ],
            "files_without_messages": self.empty_files,
            "warnings": self.warnings,
        }


@dataclass(eq=False)
class Family:
    """Files read again from their start together (``families``), and the sessions they hold.

    Its sessions are forgotten and its files' rows deleted in the transaction
    that writes the first of them again (with the families read next to it,
    ``Ingester.together``), which is not committed before the last is
    written: a run stopped at any moment leaves every family either as it
    was or read again whole, so one whose files are deleted before the next
    run (an agent pruning old logs) is archived with every row.
    """

    files: dict[int, str]  # source_files id -> path
    sessions: set[str]
    rows: dict[int, dict] = field(default_factory=dict)  # the rows its files were planned from
    left: set[int] | None = field(default_factory=set)  # files planned and not written yet; None: no family
    opened: bool = False
    group: list["Family"] | None = None  # the families cleared with it (``Ingester.together``)


@dataclass
class Plan:
    """What to do with one file, decided before any of it is read."""

    unit: SourceFile
    row: dict | None
    fingerprint: Fingerprint | None = None
    resume: tuple | None = None  # (cursor, line_no, parser state, open line)
    error: str | None = None
    job: Job | None = None


def unreadable_document(item) -> str | None:
    """Why a whole document could not be read, when ``item`` (its first) says only that."""
    if isinstance(item, ReadFailed):
        return item.reason
    if isinstance(item, Batch) and not item.message_rows and len(item.records) == 1:
        [record] = item.records
        if isinstance(record, LineError) and record.position.line_no == 0:
            return record.reason
    return None


class Ingester:
    """Ingest every file the given sources discover under their roots."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        sources: Mapping[str, Source],
        roots: Mapping[str, Path],
        *,
        redact: "redacting.RecordRedactor | None" = None,
        chunk_bytes: int = CHUNK_BYTES,
        cold_load_bytes: int | None = COLD_LOAD_BYTES,
        read_ahead_bytes: int | None = READ_AHEAD_BYTES,
        settle_seconds: float = SETTLE_SECONDS,
        progress: Callable[[int, int], None] | None = None,  # may also have note(text)
        clock: Callable[[], float] = time.time,
    ):
        conn.row_factory = sqlite3.Row
        # Fewer, larger checkpoints while ingesting; readers are unaffected.
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        self.conn = conn
        self.sources = sources
        self.roots = dict(roots)
        self.reader = Reader(sources, redact, chunk_bytes)
        self.redact = redact
        self.chunk_bytes = chunk_bytes
        self.cold_load_bytes = cold_load_bytes
        self.read_ahead_bytes = read_ahead_bytes
        self.settle_seconds = settle_seconds
        self.progress = progress
        self.clock = clock
        self.summary = IngestSummary()
        self._sessions: set[str] = set()
        self._families: dict[int, Family] = {}  # file id -> the family it is read again with
        self._open: set[Family] = set()  # families cleared and not written whole yet: no commit meanwhile
        self.words: dict[str, SessionWords] = {}  # counted by the reader, for the session index
        self.plans: dict[str, derive.SessionPlan] = {}  # derivations worked out ahead
        self.plans_seen = None  # PRAGMA data_version once they were
        self._reading: set[str] = set()  # sessions of the file being written
        # file id -> {uuid: (session, seq)} of the rows a file read again alone held: they
        # keep their place among the rows of the session's other files (an archived log's)
        self._kept_seqs: dict[int, dict[str, tuple[str, int]]] = {}
        # file id -> the ids of the messages, tool results and prompts of the files read again (one
        # for the files of families cleared together): the same rows take their ids back
        self._kept_ids: dict[int, Held] = {}
        # ({session: rowid}, the greatest rowid, the greatest once they were forgotten) of the
        # sessions of the families open: they take their places back once written (``written``)
        self._places: tuple[dict[str, int], int, int] | None = None
        self._units: list[SourceFile] | None = None  # this run's files, once discovered
        self._emptied: set[str] = set()  # paths of stored files found emptied (``gone_in_place``)
        # Files outside a family that named its sessions when it was cleared (``open_family``):
        # read again with it once the files planned are written (``read_outsiders_again``).
        self._outsiders: set[int] = set()
        # file id -> the other files holding rows of lines it replays (``Writer.counts.replayed_from``),
        # while it is written; the files read again for it once (``read_before_its_copies``)
        self._replayed_from: dict[int, set[int]] = {}
        self._put_first: set[int] = set()
        self.found: dict[str, int] = {}  # how many files each source discovered
        self._files: dict[str, set[str]] = {"skipped": set(), "read": set(), "replayed": set()}  # paths
        self._discovered: set[str] = set()  # their paths
        self._unchanged_rows: dict = {}  # path -> UNCHANGED_COLUMNS of stored files, while planning
        self._by_inode: dict | None = None  # (device, inode) -> source_files ids, for same_file_row
        self._words_size = 0
        self._held = False  # one transaction for this run's reads again (ATOMIC_REREAD_BYTES)
        self._progress = (0, 0)  # (bytes done before the file being read, bytes in all)

    # -- the run -------------------------------------------------------

    def discover(self) -> list[SourceFile]:
        units = []
        for name, root in list(self.roots.items()):
            try:
                with unreadable_folders() as skipped:
                    found = list(self.sources[name].discover(root))
                stray = next((u for u in found if not isinstance(u, SourceFile) or u.source != name), None)
                if stray is not None:
                    raise TypeError(f"it found {stray!r}, which is no SourceFile of source {name!r}")
            except Exception as exc:  # a plugin's bug costs its own source only
                reason = f"the {name} source could not list its files: {exc!r}"
                self.summary.errors += 1
                self.summary.error_samples.append((str(root), None, reason))
                del self.roots[name]  # nor are its stored files taken for gone
                continue
            self.found[name] = len(found)
            for folder, exc in skipped:
                where = printable_path(folder)
                self.summary.warnings.append({"source": name, "path": where, "message": (
                    f"the {name} folder {where} cannot be read ({exc.strerror or exc}): no log in it is read")})
            units.extend(self.storable(found))
        return self.one_path_per_file(in_read_order(units))

    def storable(self, units: list[SourceFile]) -> Iterator[SourceFile]:
        """``units`` less those whose path is no text (bytes that are not UTF-8),
        which cannot be stored: each is an error of this run, named readably."""
        for unit in units:
            try:
                os.fsencode(unit.path).decode("utf-8")
            except UnicodeDecodeError:
                self.summary.errors += 1
                reason = "the file's name is not UTF-8 text, so it cannot be stored: rename it to read it"
                self.summary.error_samples.append((printable_path(unit.path), None, reason))
                continue
            yield unit

    def one_path_per_file(self, units: list[SourceFile]) -> list[SourceFile]:
        """``units`` less the links to a file found under another path too.

        A symlink or hard link inside a source's folder names a file that is
        already there: it is read once, under its own name rather than a
        symlink's (the name may be the session id), else under the name
        already stored. Rows an older version read through the other names
        are forgotten, and the file is read again under the name kept.
        """
        by_file: dict[tuple, list[SourceFile]] = {}
        for unit in units:
            try:
                st = os.stat(unit.path)
            except OSError:
                continue  # reported when planned
            if stat_module.S_ISREG(st.st_mode):
                by_file.setdefault((unit.source, st.st_dev, st.st_ino), []).append(unit)
        links: dict[str, SourceFile] = {}  # path of a link -> the unit kept for its file
        for same in by_file.values():
            if len(same) > 1:
                keep = min(same, key=lambda u: (os.path.islink(u.path), self.file_row(u) is None))
                links.update((str(u.path), keep) for u in same if u is not keep)
        self.summary.files_linked = len(links)
        if links:
            self.forget_link_rows(links)
        return [unit for unit in units if str(unit.path) not in links]

    def forget_link_rows(self, links: dict[str, SourceFile]) -> None:
        for path, keep in links.items():
            row = self.conn.execute("SELECT id FROM source_files WHERE path = ?", [path]).fetchone()
            if row is None:
                continue
            with self.transaction():
                cold_load.index_pending_text(self.conn)
                touched = delete_file_rows(self.conn, row["id"])
                self.conn.execute("DELETE FROM source_files WHERE id = ?", [row["id"]])
                self.queue_sessions(touched)
                self.conn.execute("UPDATE source_files SET parser_version = NULL WHERE path = ?", [str(keep.path)])
                self.bump_generation()
            self._by_inode = None

    def run(self) -> IngestSummary:
        started = time.perf_counter()
        self.finish_cold_load()  # left over by a run that was killed
        units = self.discover()
        units = units + self.settle_hints(units)
        self.summary.files = len(units)
        self._units = units
        self._discovered = {str(u.path) for u in units}
        self.keep_discovery(units)
        total = sum(_size(u.path) for u in units)
        self.derive_pending()
        plans = self.planned(units)
        to_read = bytes_to_read(plans)
        self.begin_cold_load(to_read, [plan.row["id"] for plan in plans if plan.job and plan.row and plan.resume is None])
        self.keep_families_open()
        ahead = self.read_ahead_bytes is not None and to_read >= self.read_ahead_bytes
        done = total - sum(_size(plan.unit.path) for plan in plans)
        jobs = [plan.job for plan in plans if plan.job]
        try:
            with JobStream(self.reader, jobs, ahead=ahead, idle=self.work_while_waiting) as stream:
                for plan in plans:
                    self._progress = (done - (plan.job.cursor if plan.job else 0), total)
                    self.apply(plan, stream.items(plan.job) if plan.job else iter(()))
                    done += _size(plan.unit.path)
                    self.report(done)
        finally:
            self.close_kept()
        self.read_outsiders_again()
        self.mark_missing({str(u.path) for u in units})
        self.follow_late_copies()
        self.flush(force=True)
        if cold_load.active(self.conn):
            self.note("building indexes")
            self.finish_cold_load_while_planning()
        self.note("deriving sessions")
        self.derive_pending()
        self.release()
        self.plans.clear()
        self.summary.sessions = self.stored_sessions(self._sessions)
        self.summary.seconds = time.perf_counter() - started
        return self.summary

    def held_with_families(self, plans: list[Plan]) -> list[Plan]:
        """``with_families(plans)``; when they read stored files again from their start, in a
        transaction held until ``release`` (``ATOMIC_REREAD_BYTES``), opened here (``begin_batch``)."""
        if any(plan.job and plan.row and plan.resume is None for plan in plans):
            self.begin_batch()
            self._held = True
        plans = self.with_families(plans)
        to_read = bytes_to_read(plans)
        if to_read > ATOMIC_REREAD_BYTES or (self.cold_load_bytes is not None and to_read >= self.cold_load_bytes):
            self.release()  # too much to hold the lock for; a cold load commits as it goes
        return plans

    def with_families(self, plans: list[Plan]) -> list[Plan]:
        """``plans``, in which each log read again from its start takes its family along.

        Reading a log again after a parser change or a rewrite forgets the
        sessions it shares with other files, and plans to read all of those
        files again (see ``families``): they are marked to be read again now,
        and forgotten and cleared when the first of them is written
        (``open_family``). A family with a file gone from disk or
        not found by this run keeps its rows: only its changed file is read
        again. A document read again stays alone (a ``.meta.json`` rewritten
        while its agent runs does not mean reading the whole session again),
        unless it is a chat (``is_chat``): saved again whole it may hold fewer
        messages (a rewind), and another log may carry it on (a Gemini
        ``.json`` and its ``.jsonl``), whose rewinds and compressions name its
        messages in log order. A text file (a tool's output saved apart) always
        stays alone, and in no family (``families``): what it holds depends on
        no other file.
        """
        starts = [
            plan.row["id"] for plan in plans
            if plan.job is not None and plan.row is not None and plan.resume is None and plan.unit.layout != "text"
            and (plan.unit.layout == "jsonl" or plan.row["parser_version"] != self.sources[plan.unit.source].parser_version
                 or self.is_chat(plan))
        ]
        if not starts:
            return plans
        units = self.found_units()
        # (A file emptied is gone: its family keeps its rows, as one with a file deleted.)
        whole = families.families_to_read(self.conn, starts, {str(unit.path) for unit in units} - self._emptied)
        whole = [(files, sessions) for files, sessions in whole if self.documents_whole(files)]
        if not any(sessions for _, sessions in whole):
            return plans
        again = {file_id: path for files, _ in whole for file_id, path in files.items()}
        with self.transaction():
            self.conn.execute(
                "UPDATE source_files SET parser_version = NULL WHERE id IN (SELECT value FROM json_each(?))",
                [families.as_json(again)],
            )
        for files, sessions in whole:
            family = Family(files, sessions)
            self._families.update((file_id, family) for file_id in files)
        planned = {str(plan.unit.path): plan for plan in plans}
        paths = set(again.values())
        replanned = []
        for unit in units:
            path = str(unit.path)
            if path in paths:
                replanned.append(self.plan(unit))
            else:
                replanned.append(planned.get(path))
        return [plan for plan in replanned if plan is not None]

    def documents_whole(self, files: dict[int, str]) -> bool:
        """Whether each document among ``files`` (read whole) is one JSON object now.

        A family is forgotten before its files are read again: a document caught half
        written, or left so by a crash, would take what it held along. Such a family
        is not read again; its changed files are read alone, and the document keeps
        its rows until it reads again (``write_plan``)."""
        documents = self.conn.execute(
            "SELECT path FROM source_files WHERE layout = 'document' AND compression IS NULL "
            "AND id IN (SELECT value FROM json_each(?))",
            [families.as_json(files)],
        ).fetchall()
        for (path,) in documents:
            try:
                if not is_json_object(Path(path).read_bytes().removeprefix(line_reader.BOM)):
                    return False
            except OSError:
                return False
        return True

    def is_chat(self, plan: Plan) -> bool:
        """Whether a document saved again holds messages, and is whole (one caught half
        written keeps its rows, alone). Read again alone, a chat rewound to fewer
        messages would leave its session what they said (its model) and their places
        (the next message's place after theirs): read with its family (often itself
        alone), its sessions are forgotten first."""
        holds = self.conn.execute("SELECT 1 FROM messages WHERE file_id = ? LIMIT 1", [plan.row["id"]]).fetchone()
        if holds is None or plan.unit.compression:
            return False
        try:
            return is_json_object(plan.unit.path.read_bytes())
        except OSError:
            return False

    def together(self, plans: list[Plan]) -> list[Plan]:
        """``plans`` with the files of each family read again next to each other, where
        the first of them is read (so parents still come before their agents,
        originals before their copies): each family is written in one transaction
        (``Family``), and what is read between its files would wait for it.

        Families next to each other are cleared together, about ``chunk_bytes``
        to read at a time: their rows go before any of their new rows are
        written, which spares the full-text index a flush for every family
        (it takes row ids in ascending order only)."""
        blocks: list[list[Plan]] = []
        of_family: dict[Family, list[Plan]] = {}
        for plan in plans:
            family = self.family_of(plan)
            if family is None or family.opened:
                blocks.append([plan])
                continue
            if family not in of_family:
                of_family[family] = []
                blocks.append(of_family[family])
                family.left = set()
            of_family[family].append(plan)
            family.rows[plan.row["id"]] = plan.row
            family.left.add(plan.row["id"])
        group: list[Family] = []
        size = 0
        for block in blocks:
            family = self.family_of(block[0])
            if family is None or family.opened:
                group = []  # a file read alone between them ends the group
                continue
            if not group or size >= self.chunk_bytes:
                group, size = [], 0
            group.append(family)
            family.group = group
            size += bytes_to_read(block)
        return [plan for block in blocks for plan in block]

    def family_of(self, plan: Plan) -> Family | None:
        return self._families.get(plan.row["id"]) if plan.row is not None else None

    def keep_families_open(self) -> None:
        """Hold open the files of the families read again, before any is read and
        before reader processes are forked, which inherit them (``keep_open``)."""
        for family in dict.fromkeys(self._families.values()):
            if not family.opened:
                for path in family.files.values():
                    self.keep_open(path)

    def open_family(self, family: Family) -> bool:
        """In the open batch, before its first file is written: forget the sessions
        of the family (and of those cleared with it, ``together``) and delete
        their files' rows, so none read first merges its lines into the rows of
        another holding copies of them, which that file's own reading would then
        delete. Nothing is committed until the last of their files is written
        (``written``). False when the family is no family any more (``clear_family``)."""
        if not family.opened:
            cleared = [member for member in family.group or [family] if self.clear_family(member)]
            if cleared:
                cold_load.index_pending_text(self.conn)
                self.mark_outsiders(cleared)
                rowids, top = session_places(self.conn, set().union(*(member.sessions for member in cleared)))
                for member in cleared:
                    for session_id in sorted(member.sessions):
                        derive.forget_session(self.conn, session_id)
                    self.queue_sessions(member.sessions)
                if self._places is None:
                    self._places = ({}, 0, greatest_place(self.conn))
                self._places = ({**self._places[0], **rowids}, max(self._places[1], top),
                                min(self._places[2], greatest_place(self.conn)))
                files = sorted(set().union(*(member.files for member in cleared)))
                held = held_ids(self.conn, files)
                self._kept_ids.update(dict.fromkeys(files, held))
                for member in cleared:
                    for file_id in sorted(member.files):
                        delete_file_rows(self.conn, file_id)
                    set_saved_outputs_aside(self.conn, member.sessions)
                self.bump_generation()
        return family.opened

    def mark_outsiders(self, cleared: list[Family]) -> None:
        """Files outside the families ``cleared`` that hold their sessions now: written
        since the families were planned (a parent's log new in this run, read before its
        agents' logs were found rewritten; another ingester's). What they said of the
        sessions about to be forgotten would be lost: each is marked to be read again
        from its start, with its family, after this pass (and by the next run, if this
        one is stopped)."""
        sessions = set().union(*(member.sessions for member in cleared))
        files = set().union(*(member.files for member in cleared))
        outside = {
            row[0] for row in self.conn.execute(families.FILES_OF_SESSIONS, {"ids": families.as_json(sessions)})
        } - files
        if outside:
            self.conn.execute(
                "UPDATE source_files SET parser_version = NULL WHERE id IN (SELECT value FROM json_each(?))",
                [families.as_json(outside)],
            )
            self._outsiders |= outside

    def read_outsiders_again(self) -> None:
        """Read again, with their families, the files ``mark_outsiders`` marked."""
        while self._outsiders:
            ids, self._outsiders = self._outsiders, set()
            rows = self.conn.execute(
                "SELECT * FROM source_files WHERE missing = 0 AND hints IS NOT NULL AND id IN "
                "(SELECT value FROM json_each(?))",
                [families.as_json(ids)],
            ).fetchall()
            units = [unit_of_row(row) for row in rows if row["source"] in self.sources and os.path.isfile(row["path"])]
            if units:
                self.ingest_files(in_read_order(units))

    def clear_family(self, family: Family) -> bool:
        """Whether ``family`` is to be cleared now (then it is open, ``_open``).

        A family whose files another ingester wrote since they were planned, or
        one of which is gone (not held open), is no family any more: each of its
        files is written alone, as a later run would."""
        if family.opened or family.left is None:
            return False
        for file_id in family.files:
            self._families.pop(file_id, None)
        for file_id, row in family.rows.items():
            now = self.conn.execute("SELECT * FROM source_files WHERE id = ?", [file_id]).fetchone()
            if now is None or dict(now) != row:
                family.left = None
                return False
        if not all(self.keep_open(path) for path in family.files.values()):
            family.left = None
            return False
        if not family.rows:  # its files planned one by one (``ingest_file``): all of them are to come
            family.left = set(family.files)
        for file_id in family.files:
            self._families[file_id] = family
        family.opened = True
        self._open.add(family)
        return True

    def written(self, family: Family, file_id: int) -> None:
        """``file_id`` of ``family`` is written: once every family open is written whole,
        the batch may be committed."""
        family.left.discard(file_id)
        if not family.left and family in self._open:
            place_saved_outputs(self.conn, family.sessions)
            self._open.discard(family)
            if not self._open and self._places is not None:
                rowids, top, after = self._places
                place_sessions_back(self.conn, (rowids, top), after)
                self._places = None
            for member in family.files:
                if self._families.get(member) is family:
                    del self._families[member]
            self.flush()

    def keep_open(self, path: str) -> bool:
        """Hold ``path`` open until it is read (``Reader.kept_open``), as far as
        descriptors allow; False when it can no longer be opened."""
        kept = self.reader.kept_open
        if path in kept:
            return True
        try:
            descriptor = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError:
            return True  # unreadable, not gone: cleared, as before
        if len(kept) < MAX_KEPT_OPEN:
            kept[path] = descriptor
        else:
            os.close(descriptor)
        return True

    def close_kept(self) -> None:
        for descriptor in self.reader.kept_open.values():
            os.close(descriptor)
        self.reader.kept_open.clear()

    def found_units(self) -> list[SourceFile]:
        """This run's files; without a discovery (a live refresh), the stored files still on disk
        whose hints are known (see ``query.live.changed_files``)."""
        if self._units is not None:
            return self._units
        rows = self.conn.execute("SELECT * FROM source_files WHERE missing = 0 AND hints IS NOT NULL").fetchall()
        return in_read_order(
            unit_of_row(row) for row in rows if row["source"] in self.sources and os.path.isfile(row["path"])
        )

    def settle_hints(self, units: list[SourceFile]) -> list[SourceFile]:
        """Let each source that can (``settle_hints``) complete its files' hints with what
        depends on other files, stored or found now (a Codex fork whose parent's log is
        stored nowhere keeps the parent's history it copies). Returns the stored files
        this run did not find whose hints change so (their parent's log came from another
        folder): read again from their start with this run's files, as if found by it."""
        again = []
        for name, source in self.sources.items():
            settle = getattr(source, "settle_hints", None)
            if settle is None or name not in self.roots:
                continue
            stored = {  # (a file stored before hints were kept: none known)
                path: orjson.loads(hints) if hints else {} for path, hints in self.conn.execute(
                    "SELECT path, hints FROM source_files WHERE source = ?", [name])
            }
            found = {str(unit.path): unit for unit in units if unit.source == name}
            changed = settle(list(found.values()), stored)
            archived = getattr(source, "settle_archived_replays", None)
            if archived is not None:
                archived(list(found.values()), self.archived_log, self.redact)
            given_up = self.copies_given_up(stored, changed, found)
            replayed = self.copies_replayed(stored, changed, found, given_up)
            if not changed and not given_up and not replayed:
                continue
            with self.transaction():
                kept_found = {path: found[path].hints for path in (*given_up, *replayed) if path in found}
                for path, hints in (changed | kept_found).items():
                    self.conn.execute(
                        "UPDATE source_files SET hints = ?, parser_version = NULL WHERE path = ?",
                        [orjson.dumps(hints, option=orjson.OPT_SORT_KEYS).decode(), path],
                    )
                if given_up:
                    self.give_up_copies(given_up)
                if replayed:
                    self.give_up_replays(source, replayed)
            rows = self.conn.execute(
                "SELECT * FROM source_files WHERE missing = 0 AND path IN (SELECT value FROM json_each(?))",
                [orjson.dumps(sorted(changed)).decode()],
            ).fetchall()
            again += [unit_of_row(row) for row in rows if os.path.isfile(row["path"])]
        return in_read_order(again)

    def archived_log(self, path: str) -> tuple[dict, int, sqlite3.Cursor] | None:
        """What is stored of the file at ``path`` (see ``settle_archived_replays``): its hints,
        how many of its lines were read, and the line number, type, subtype, role, content type
        and text of each message it gave, in the order of its lines (a cursor, read as they are
        asked for, closed by whoever asked); None when no such file is stored."""
        row = self.conn.execute("SELECT id, hints, line_no FROM source_files WHERE path = ?", [path]).fetchone()
        if row is None:
            return None
        rows = self.conn.execute(
            "SELECT line_no, type, subtype, role, content_type, text FROM messages WHERE file_id = ? "
            "ORDER BY byte_offset, id", [row["id"]])
        return (orjson.loads(row["hints"]) if row["hints"] else {}), row["line_no"], rows

    def copies_replayed(
        self, stored: dict[str, dict], changed: dict[str, dict], found: dict[str, SourceFile], given_up: dict[str, int]
    ) -> dict[str, tuple[int, str]]:
        """The stored files of a source (``stored``: their hints) that still keep the history
        they copy of a session stored nowhere (``copies_of``), of which a log of a session
        further up its chain now holds a part (``replays_in`` changed to it), yet are gone
        (as ``copies_given_up``), so are not read again to leave that part to it. Maps each
        one's path to its id and that log's path."""
        candidates = {}
        for path, before in stored.items():
            if not before.get("copies_of") or path in given_up:
                continue
            after = changed.get(path) or (found[path].hints if path in found else None)
            if (after and after.get("copies_of") == before["copies_of"] and after.get("replays_in")
                    and after["replays_in"] != before.get("replays_in")):
                candidates[path] = after["replays_in"]
        if not candidates:
            return {}
        gone = self.gone_files(candidates, found)
        return {path: (file_id, candidates[path]) for path, file_id in gone.items()}

    def give_up_replays(self, source, replayed: dict[str, tuple[int, str]]) -> None:
        """In the open transaction: the gone files ``replayed`` (``copies_replayed``) lose the
        rows they kept of the lines of the copy the log now named holds (``replayed_lines``
        of their source), as if read again with it; their sessions are derived again."""
        lines_of = getattr(source, "replayed_lines", None)
        if lines_of is not None:
            self._drop_copies((file_id, lines_of(log, self.copied_lines(file_id)))
                              for file_id, log in sorted(replayed.values()))

    def copied_lines(self, file_id: int) -> set[str]:
        """The ``meta.copied_line`` of the rows the file ``file_id`` kept of a copy."""
        return {line for (line,) in self.conn.execute(
            "SELECT DISTINCT json_extract(meta_json, '$.copied_line') FROM messages "
            "WHERE file_id = ? AND json_extract(meta_json, '$.copied_line') IS NOT NULL", [file_id])}

    def copies_given_up(
        self, stored: dict[str, dict], changed: dict[str, dict], found: dict[str, SourceFile]
    ) -> dict[str, int]:
        """The stored files of a source (``stored``: their hints) that kept the history they copy of a
        session stored nowhere (``copies_of`` in their hints) and no longer do (their
        parent's log is stored or found now), yet are gone, so are not read again to
        leave the copy to it: deleted (or not read: ``missing``), or found emptied
        (``gone_in_place``). Maps each one's path to its id."""
        candidates = set()
        for path, before in stored.items():
            parent = before.get("copies_of")
            if not parent:
                continue
            if path in changed:
                after = changed[path]
            elif path in found:
                after = found[path].hints
            else:
                continue
            if after.get("copies_of") != parent:
                candidates.add(path)
        if not candidates:
            return {}
        return self.gone_files(candidates, found)

    def gone_files(self, candidates: Iterable[str], found: dict[str, SourceFile]) -> dict[str, int]:
        """Of the stored files at ``candidates``, those gone: deleted (or not read:
        ``missing``), or found emptied (``gone_in_place``). Maps each one's path to its id."""
        given_up = {}
        for row in self.conn.execute(
            "SELECT id, path, missing, layout FROM source_files WHERE path IN (SELECT value FROM json_each(?))",
            [orjson.dumps(sorted(candidates)).decode()],
        ):
            path = row["path"]
            if path in found:
                gone = row["layout"] != "document" and _size(found[path].path) == 0 and os.path.isfile(path)
            else:
                gone = bool(row["missing"]) or is_gone(path)
            if gone:
                given_up[path] = row["id"]
        return given_up

    def give_up_copies(self, given_up: dict[str, int]) -> None:
        """In the open transaction: the gone files ``given_up`` (``copies_given_up``) lose
        the rows they kept of the history they copied, as if read again with their
        parent's log; their sessions are derived again."""
        self._drop_copies((file_id, None) for file_id in sorted(given_up.values()))

    def _drop_copies(self, drops: Iterable[tuple[int, Any]]) -> None:
        """Delete the copied rows of each ``(file id, lines)`` (``delete_copied_rows``: ``lines``
        None for every copied line), then derive their sessions again."""
        cold_load.index_pending_text(self.conn)
        deleted = False
        for file_id, copied_lines in drops:
            touched, lines = delete_copied_rows(self.conn, file_id, copied_lines)
            if not touched:
                continue
            # (the lines that held the copy merge into the parent's rows, as when read with them)
            self.conn.execute(
                "UPDATE source_files SET lines_stored = max(lines_stored - ?, 0), lines_merged = lines_merged + ? "
                "WHERE id = ?",
                [lines, lines, file_id],
            )
            self.queue_sessions(touched)
            deleted = True
        if deleted:
            self.bump_generation()

    def keep_discovery(self, units: list[SourceFile]) -> None:
        """Store the hints and read order of the files stored before they were kept; a file
        whose hints changed since (a Gemini chat's folder now names its project) is read again."""
        stored = dict(self.conn.execute("SELECT path, hints FROM source_files"))
        found, changed = [], []
        for unit in units:
            path = str(unit.path)
            if path in stored and stored[path] != (hints := hints_json(unit)):
                (found if stored[path] is None else changed).append((hints, unit.priority, path))
        if found or changed:
            with self.transaction():
                self.conn.executemany("UPDATE source_files SET hints = ?, priority = ? WHERE path = ?", found)
                self.conn.executemany(
                    "UPDATE source_files SET hints = ?, priority = ?, parser_version = NULL WHERE path = ?", changed
                )

    def report(self, done: int) -> None:
        if self.progress is not None:
            self.progress(min(done, self._progress[1]), self._progress[1])

    def note(self, text: str) -> None:
        if hasattr(self.progress, "note"):
            self.progress.note(text)

    def begin_cold_load(self, total_bytes: int, files_read_again=()) -> None:
        """Defer index upkeep when this run loads many bytes into an empty
        database, or reads again (from their start) the files holding most
        of its messages."""
        if self.cold_load_bytes is None or total_bytes < self.cold_load_bytes:
            return
        with self.transaction():
            cold_load.begin(self.conn, files_read_again)

    def finish_cold_load(self) -> None:
        with self.transaction():
            cold_load.finish(self.conn)

    def finish_cold_load_while_planning(self) -> None:
        """End the cold load on a second connection while this one plans the
        queued derivations (reading only), within ``PLAN_BYTES``.

        Sessions with inline sidechain lines still to regroup are left to
        ``derive_sessions``: moving those lines would make their plans stale.
        A plan takes over its session's word counts, which are let go.
        """
        sessions = iter(sorted(row[0] for row in self.conn.execute("SELECT session_id FROM derive_queue")))
        planned = 0

        def plan_one() -> bool:
            nonlocal planned
            session_id = next(sessions, None)
            if session_id is None or planned >= PLAN_BYTES:
                return False
            if not derive.has_ungrouped_sidechain(self.conn, session_id):
                plan = self.plans[session_id] = derive.plan_session(self.conn, session_id, self.words)
                planned += plan.size()
                words = self.words.pop(session_id, None)
                self._words_size -= words.size() if words else 0
            return True

        cold_load.finish_alongside(self.conn, plan_one)
        self.plans_seen = data_version(self.conn)  # what the plans were made from

    def work_while_waiting(self) -> bool:
        """Do a step of the end-of-run work while the reader is busy; False when none is left.

        The step indexes text a cold load deferred, or derives sessions no
        file being read still adds to (one that gains lines later is
        derived again).
        """
        if cold_load.active(self.conn):
            self.begin_batch()
            left = cold_load.index_pending_text(self.conn, IDLE_MESSAGES)
            self.flush()
            if left:
                return True
        return self.derive_some(IDLE_SESSIONS, skip=self._reading)

    def derive_pending(self) -> None:
        """Derive every queued session (no file is being read: ones left empty may go)."""
        while self.derive_some(200, forget_empty=True):
            pass

    def derive_some(self, limit: int, skip=frozenset(), forget_empty=False) -> bool:
        """Derive up to ``limit`` queued sessions not in ``skip``; False when there were none.

        Another process may have written since the derivations were planned
        ahead (an ingest running at once): they are planned again."""
        batch = [
            r[0]
            for r in self.conn.execute("SELECT session_id FROM derive_queue LIMIT ?", [limit + len(skip)])
            if r[0] not in skip
        ][:limit]
        if not batch:
            return False
        with self.transaction():
            batch = [
                r[0] for r in self.conn.execute(
                    "SELECT session_id FROM derive_queue WHERE session_id IN (SELECT value FROM json_each(?))",
                    [families.as_json(batch)],
                )
            ]
            if self.plans and data_version(self.conn) != self.plans_seen:
                self.plans.clear()
            derived = derive.derive_sessions(self.conn, batch, self.words, self.plans, forget_empty=forget_empty)
            self.conn.executemany("DELETE FROM derive_queue WHERE session_id = ?", [(s,) for s in derived])
        self._sessions |= derived  # with the agents inline lines made
        for session_id in derived:
            self.words.pop(session_id, None)
        self._words_size = sum(words.size() for words in self.words.values())
        return True

    def stored_sessions(self, session_ids) -> int:
        """How many of ``session_ids`` have a ``sessions`` row (a file may name a parent it does not hold)."""
        return self.conn.execute(
            "SELECT COUNT(*) FROM sessions WHERE id IN (SELECT value FROM json_each(?))", [families.as_json(session_ids)]
        ).fetchone()[0]

    def transaction(self):
        """A transaction, or a part of the batch already open."""
        if self.conn.in_transaction:
            return nullcontext()
        return transaction(self.conn)

    def release(self) -> None:
        """Commit what a run held back (see ``ATOMIC_REREAD_BYTES``)."""
        if self._held:
            self._held = False
            self.flush(force=True)

    def begin_batch(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            open_rewrite_span(self.conn)
            self._batch_started = time.perf_counter()
            self._batch_bytes = 0

    def flush(self, force: bool = False) -> None:
        """Commit the open batch when it is big or old enough (or ``force``).

        Small files share a transaction; none stays open for long, so other
        writers (memory writes through the web face) never wait more than
        about ``BATCH_SECONDS``, except while a run that reads stored files
        again holds its one transaction (``ATOMIC_REREAD_BYTES``), or a
        family read again is not written whole yet (``Family``).
        """
        if not self.conn.in_transaction or self._held or (self._open and not force):
            return
        due = self._batch_bytes >= self.chunk_bytes or time.perf_counter() - self._batch_started >= BATCH_SECONDS
        if force or due:
            self.conn.execute("COMMIT")

    def mark_missing(self, seen: set[str]) -> None:
        """Files gone from disk keep their rows; their sessions become archived,
        unless the file moved or was compressed: then its rows follow the copy."""
        prefixes = tuple(  # /a/b/, never /a/bc
            os.path.join(str(folder), "") for name, root in self.roots.items()
            for folder in {Path(root), *folders_of(self.sources[name], root)})
        if not prefixes:
            return
        unseen = [
            row
            for row in self.conn.execute(
                "SELECT id, path, parser_version, lines_read FROM source_files WHERE missing = 0 AND source IN (%s)"
                % ",".join("?" * len(self.roots)),
                list(self.roots),
            )
            if row["path"].startswith(prefixes) and row["path"] not in seen
        ]
        gone = [row for row in unseen if is_gone(row["path"])]
        # Not found, yet not known to be gone (a folder that cannot be read): kept as they are.
        self.summary.files_unseen += [row["path"] for row in unseen if row not in gone]
        if not gone:
            return
        with self.transaction():
            # A file no line was ever read from (a dangling link, an empty file)
            # leaves nothing to archive: it goes, with the error that it could
            # not be read. (One whose rows a re-read cleared stays, as a trace.)
            empty = [row for row in gone if not row["lines_read"] and not file_holds_rows(self.conn, row["id"])]
            for row in empty:
                self.conn.execute("DELETE FROM ingest_errors WHERE file_id = ?", [row["id"]])
                self.conn.execute("DELETE FROM source_files WHERE id = ?", [row["id"]])
            gone = [row for row in gone if row not in empty]
            self.archive(gone)
        self.summary.files_missing += len(gone)

    def archive(self, gone) -> None:
        """In the open transaction: the stored files ``gone`` (rows with their id and
        parser version) are gone from disk; their rows stay, their sessions become
        archived, unless a copy of a file holds them now (``relocate``)."""
        for row in gone:
            self.conn.execute("UPDATE source_files SET missing = 1 WHERE id = ?", [row["id"]])
            self.queue_sessions_of_file(row["id"])
            relocate(self.conn, row["id"], self.redact.redact_context if self.redact else None)
        # Files that were to be read again (after new redaction rules too) and never will be.
        pending = [row["id"] for row in gone if row["parser_version"] is None]
        if pending and self.redact is not None:
            redact_in_place(self.conn, self.redact.redactor, pending)
        self.bump_generation()

    def gone_in_place(self, unit: SourceFile, row: dict, st) -> bool:
        """Whether the stored file ``row``, whose rows are kept, is gone though a file is at its path.

        A log emptied in place (by a tool, or a crash) is gone like a deleted one: its
        rows stay, archived, and it is not read again while it is empty. (A document
        found empty was most likely caught half-written, as it is saved again whole:
        it keeps what it held, with an error, until it reads again.) A file found
        gone by an earlier run (or emptied) whose path now holds other bytes (a new
        session written there) is another file: the stored one takes a name of its own
        (``retire``) with its rows, and the path is read as a new file, whose lines the
        archived rows already hold merge into them: those rows become the new file's
        (``Writer._take_over_retired``), and the retired file, once it holds nothing,
        goes. One that still holds what was read
        (the file back, maybe grown), or a document (saved again whole, changed or not:
        the same chat), is read again as before."""
        if not file_holds_rows(self.conn, row["id"]):
            return False
        if not st.st_size and unit.layout != "document":
            if row["missing"]:
                self.count_file("skipped", unit)  # (archived by an earlier run)
            else:
                with self.transaction():
                    self.archive([row])
                self.summary.files_missing += 1
            self._emptied.add(str(unit.path))
            return True
        if not row["missing"] or unit.layout == "document":
            return False
        if path_still_holds(unit.path, row) is False:  # (None, not opened now: planned as before, it is reported)
            self.retire(row)
        return False

    def replaced_in_place(self, unit: SourceFile, row: dict, fp) -> bool:
        """Whether the stored file ``row`` (not missing), whose rows are kept and which is not
        read on from its cursor, was replaced at its path, and is now gone like a deleted one
        (``fp``: the file at its path, open).

        A log that does not hold what was read from it (``still_holds``), whether another
        file took its path (another inode: a new file renamed over it, as Claude Code does
        when it prunes a session log to its last compaction) or it was rewritten or cut
        short in place, is the old file gone and a new one arrived: the old one is archived
        and keeps its rows under a name of its own (``retire``), and the new one, read as a
        new file, takes over the rows whose lines it holds again
        (``Writer._take_over_retired``), just as when a run finds the path empty in between.
        A log cut short keeps the lines past the cut so, archived. A file that holds what
        was read (read again for a new parser version, say), one of the same inode untouched
        since it was read (its size and times as stored), a document (saved again whole:
        the same chat) and the same text file changed, are read again as before."""
        if row["missing"] or unit.layout == "document":
            return False
        st = os.fstat(fp.fileno())
        if (st.st_dev, st.st_ino) == (row["device"], row["inode"]) and (
            unit.layout != "jsonl" or Fingerprint.of(st).untouched(row)
        ):
            return False  # (the same file: changed as a text is, or read again as it was)
        if not file_holds_rows(self.conn, row["id"]) or still_holds(fp, row):
            return False
        with self.transaction():  # (archived and retired at once)
            self.archive([row])
            self.retire(row)
        self.summary.files_missing += 1
        return True

    def retire(self, row: dict) -> None:
        """The stored file ``row``, gone, keeps its rows under a name no file has (its path,
        ``#gone-`` and its id), so that its path is stored anew for the file there now."""
        retired = retired_path(row["path"], row["id"])
        with self.transaction():
            self.conn.execute("UPDATE source_files SET path = ?, missing = 1 WHERE id = ?", [retired, row["id"]])
            self.conn.execute("UPDATE ingest_errors SET path = ? WHERE file_id = ?", [retired, row["id"]])
            self.queue_sessions_of_file(row["id"])  # (sessions.jsonl_path named it)
            self.bump_generation()
        self._by_inode = None

    def follow_late_copies(self) -> None:
        """Files found gone by an earlier run whose rows stayed with them, no copy being
        there then, follow a copy read by this run (a rollout deleted, then back
        compressed in ``archived_sessions/``), as they do when the copy comes first."""
        read = [path for path in self._files["read"] if path in self._discovered]
        if not read:
            return
        stranded = [row[0] for row in self.conn.execute(
            """SELECT DISTINCT g.id FROM source_files g
               JOIN file_sessions a ON a.file_id = g.id
               JOIN file_sessions b ON b.session_id = a.session_id AND b.file_id != g.id
               JOIN source_files c ON c.id = b.file_id
               WHERE g.missing = 1 AND g.lines_stored > 0 AND c.missing = 0
                 AND c.path IN (SELECT value FROM json_each(?))
               ORDER BY g.id""",
            [orjson.dumps(sorted(read)).decode()],
        )]
        if not stranded:
            return
        with self.transaction():
            moved = False
            for file_id in stranded:
                copy = relocate(self.conn, file_id, self.redact.redact_context if self.redact else None)
                if copy is not None:
                    self.queue_sessions_of_file(copy)
                    moved = True
            if moved:
                self.bump_generation()

    def queue_sessions(self, session_ids) -> None:
        self.conn.executemany(
            "INSERT OR IGNORE INTO derive_queue (session_id) VALUES (?)", [(s,) for s in sorted(session_ids)]
        )

    def queue_sessions_of_file(self, file_id: int) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO derive_queue (session_id) "
            "SELECT session_id FROM file_sessions WHERE file_id = ?",
            [file_id],
        )

    def bump_generation(self) -> None:
        set_state(self.conn, "generation", str(int(get_state(self.conn, "generation", "0")) + 1))

    # -- one file ------------------------------------------------------

    def count_file(self, kind: str, unit: SourceFile) -> None:
        """Count a file once as ``skipped``, ``read`` or ``replayed``; one read
        after all (with a family, or planned anew) is no longer skipped."""
        path = str(unit.path)
        if path in self._files[kind]:
            return
        self._files[kind].add(path)
        if kind == "read" and path in self._files["skipped"]:
            self.summary.files_skipped -= 1
        if kind != "skipped" or path not in self._files["read"]:
            setattr(self.summary, f"files_{kind}", getattr(self.summary, f"files_{kind}") + 1)

    def ingest_file(self, unit: SourceFile) -> None:
        """Ingest one file now, reading it in this process."""
        plan = self.plan(unit)
        if plan is not None:
            self.apply(plan, self.reader.read_job(plan.job) if plan.job else iter(()))

    def planned(self, units: list[SourceFile]) -> list:
        """The plans of ``units`` that read something, their families along, in read order.

        What tells an unchanged file (``UNCHANGED_COLUMNS``) is read for every
        stored file at once: a pass over 30,000 unchanged files spent half its
        time reading their rows one by one."""
        self._unchanged_rows = {row["path"]: row for row in self.conn.execute(f"SELECT {UNCHANGED_COLUMNS} FROM source_files")}
        try:
            found = [p for p in map(self.plan, units) if p is not None]
        finally:
            self._unchanged_rows = {}
        return self.together(in_log_order(self.held_with_families(found)))

    def ingest_files(self, units: list[SourceFile]) -> None:
        """Ingest ``units`` now, in this process; a log read again from its
        start takes its family along."""
        plans = self.planned(units)
        kept_before = set(self.reader.kept_open)  # the run's own, when it reads a family again
        self.keep_families_open()
        try:
            for plan in plans:
                self.apply(plan, self.reader.read_job(plan.job) if plan.job else iter(()))
        finally:
            if not kept_before:
                self.close_kept()

    def plan(self, unit: SourceFile) -> Plan | None:
        """Where to read ``unit`` from; None when it is unchanged."""
        known = self._unchanged_rows.get(str(unit.path))
        if known is not None:
            try:
                st = os.stat(unit.path)
            except OSError:
                st = None
            if st is not None and stat_module.S_ISREG(st.st_mode) and self.is_unchanged(
                known, Fingerprint.of(st), self.sources[unit.source], st
            ):
                self.count_file("skipped", unit)
                return None
        row = self.file_row(unit)
        try:
            st = os.stat(unit.path)
            if not stat_module.S_ISREG(st.st_mode):
                raise OSError(f"not a regular file (mode {stat_module.filemode(st.st_mode)})")
        except OSError as exc:
            return Plan(unit, row, error=f"cannot read file: {exc}")
        fingerprint = Fingerprint.of(st)
        source = self.sources[unit.source]
        if row is None:
            if unit.source not in self.roots:  # a refresh of stored files (``query.live``): stored no more
                return None
            row = self.same_file_row(unit, st)
        if row is not None and self.is_unchanged(row, fingerprint, source, st):
            self.count_file("skipped", unit)
            return None
        if row is not None and (row["missing"] or not st.st_size):
            if self.gone_in_place(unit, row, st):
                return None
            row = self.file_row(unit)  # (None once retired: a new file)
        try:
            with open(unit.path, "rb") as raw:
                resume = self.resume_point(row, fingerprint, source, unit, raw)
                if resume is None and row is not None and self.replaced_in_place(unit, row, raw):
                    row = self.file_row(unit)  # (None: a new file)
        except OSError as exc:
            return Plan(unit, row, error=f"cannot read file: {exc}")
        cursor, line_no, state, open_line = resume or (0, 0, None, False)
        job = Job(unit, cursor, line_no, state, open_line, settled=self.is_settled(st))
        return Plan(unit, row, fingerprint, resume, job=job)

    def same_file_row(self, unit: SourceFile, st) -> dict | None:
        """The row of this very file stored under another path, which then takes this one.

        The same folder reached another way (a symlink and its target) or moved
        whole: same device and inode, the same path below the folder, and the
        old path either names this file too or is gone while this file still
        holds what was read from it. So it is not read or counted again.
        """
        if self._by_inode is None:  # once a run: most runs find no new file
            self._by_inode = {}
            for file_id, device, inode in self.conn.execute("SELECT id, device, inode FROM source_files"):
                self._by_inode.setdefault((device, inode), []).append(file_id)
        relative = os.sep + os.path.relpath(unit.path, self.roots[unit.source])
        for file_id in self._by_inode.get((st.st_dev, st.st_ino), ()):
            row = self.conn.execute("SELECT * FROM source_files WHERE id = ?", [file_id]).fetchone()
            old = row["path"] if row is not None else None
            if old is None or old in self._discovered or not old.endswith(relative) or (
                row["source"], row["kind"], row["compression"]) != (unit.source, unit.kind, unit.compression):
                continue
            if not (_same_file(old, unit.path) if os.path.exists(old) else _still_holds(row, unit, st)):
                continue
            with self.transaction():
                self.conn.execute(  # (a row stored before hints were kept gets them too)
                    "UPDATE source_files SET path = ?, hints = COALESCE(hints, ?), priority = COALESCE(priority, ?) "
                    "WHERE id = ?",
                    [str(unit.path), hints_json(unit), unit.priority, file_id],
                )
                self.conn.execute("UPDATE ingest_errors SET path = ? WHERE file_id = ?", [str(unit.path), file_id])
                self.queue_sessions_of_file(file_id)  # sessions.jsonl_path names it
            return self.file_row(unit)
        return None

    def file_row(self, unit: SourceFile) -> dict | None:
        row = self.conn.execute("SELECT * FROM source_files WHERE path = ?", [str(unit.path)]).fetchone()
        return dict(row) if row is not None else None

    def apply(self, plan: Plan, items) -> None:
        """Write what was read for ``plan``'s file, in order; the first file of a
        family read again clears the family first (``open_family``)."""
        family = self.family_of(plan)
        if family is not None:
            self.begin_batch()
            if not self.open_family(family):
                family = None
        self.write_plan(plan, items)
        if family is not None:  # (not after an exception: the family's transaction is rolled back)
            self.written(family, plan.row["id"])

    def write_plan(self, plan: Plan, items) -> None:
        unit, row = plan.unit, plan.row
        if plan.error is not None:
            self.file_error(unit, row, plan.error)
            return
        # Under the write lock: another ingester may have written this file
        # since it was planned, and then it is planned again.
        self.begin_batch()
        if self.file_row(unit) != row:
            for _ in items:
                pass
            return self.ingest_file(unit)
        replay = row is not None and plan.resume is None
        if replay:
            items = iter(items)
            first = next(items, None)
            reason = unreadable_document(first) if unit.layout == "document" else None
            if isinstance(first, ReadFailed):
                reason = first.reason
            if reason is not None:
                # A file gone or unreadable since it was planned keeps what it
                # held (a log the agent deleted is archived), and a document,
                # rewritten whole, was most likely caught half-written: what
                # it held stays until it reads again.
                for _ in items:
                    pass
                return self.file_error(unit, row, reason)
            items = itertools.chain([first], items)
        with self.transaction():
            file_id = self.ensure_file_row(unit, row)
            if replay:
                cold_load.index_pending_text(self.conn)
                self._kept_seqs[file_id] = {
                    uuid: (session_id, seq) for uuid, session_id, seq in
                    self.conn.execute("SELECT uuid, session_id, seq FROM messages WHERE file_id = ?", [file_id])
                }
                held = held_ids(self.conn, [file_id])
                if held:  # (else its family's rows are deleted already: ``open_family``)
                    self._kept_ids[file_id] = held
                touched = delete_file_rows(self.conn, file_id)
                self._sessions |= touched
                self.queue_sessions(touched)
                self.conn.execute(
                    "UPDATE source_files SET lines_read = 0, lines_stored = 0, lines_merged = 0, "
                    "lines_failed = 0, generation = generation + 1, missing = 0, last_error = NULL "
                    "WHERE id = ?",
                    [file_id],
                )
                self.count_file("replayed", unit)
            if plan.resume is not None:
                # Errors past the cursor were about an unfinished last line,
                # which is about to be read again; one saying the file could
                # not be read (line 0) is over now that it can.
                self.conn.execute(
                    "DELETE FROM ingest_errors WHERE file_id = ? AND (byte_offset >= ? OR (line_no = 0 "
                    "AND (reason LIKE 'cannot read file:%' OR reason LIKE 'parser error:%')))",
                    [file_id, plan.job.cursor],
                )
        self._file_cursor = plan.job.cursor + plan.job.open_line  # the reader steps over the newline
        self._stored_cursor = self.conn.execute("SELECT cursor FROM source_files WHERE id = ?", [file_id]).fetchone()[0]
        self._file_reasons = Counter()
        self.count_file("read", unit)
        self._reading = set()
        for item in items:
            if isinstance(item, Batch) and not self.commit(unit, file_id, plan.fingerprint, item):
                for _ in items:  # another ingester wrote this file meanwhile: plan it again
                    pass
                return self.ingest_file(unit)
            elif isinstance(item, PendingLine):
                self.pending_error(unit, file_id, item.position)
            elif isinstance(item, ReadFailed):
                self.file_error(unit, row, item.reason)
            elif isinstance(item, Reopen):
                # The previous run consumed an unterminated line that has since
                # been extended: the file was rewritten after all, and is read
                # again with its family. The job's items are taken to their
                # end first, so that a reader working ahead hands over its
                # next job from that job's start. (A family file still to come
                # in this run is planned again when its turn comes.)
                for _ in items:
                    pass
                self.conn.execute("UPDATE source_files SET parser_version = NULL WHERE id = ?", [file_id])
                return self.ingest_files([unit])
        if unit.layout == "jsonl":
            self.check_drift(unit, file_id)
        self.read_before_its_copies(plan, file_id)

    def read_before_its_copies(self, plan: Plan, file_id: int) -> None:
        """A log read from its start whose lines another stored log holds, that one
        ingest would read after it (``in_log_order``: a log resumed or branched into a
        new file, read first, the one it copies only now): both are read again, in
        that order, after this pass (and by the next run, if this one is stopped), so
        the lines are the older one's, as when the files arrive together. (The two
        name each other's sessions now: one family, ``Writer._note_replayed``; one read
        again with it in this pass was read in log order already.)"""
        holders = self._replayed_from.pop(file_id, None)
        if not holders or plan.resume is not None or plan.job is None or file_id in self._put_first:
            return
        family = self.family_of(plan)
        holders -= set(family.files) if family is not None else set()
        later = None  # a log holding some of them that one ingest reads after this one
        for row in self.conn.execute(
            "SELECT * FROM source_files WHERE missing = 0 AND id IN (SELECT value FROM json_each(?)) ORDER BY id",
            [families.as_json(holders)],
        ).fetchall():
            try:
                st = os.stat(row["path"])
            except OSError:
                continue
            if not stat_module.S_ISREG(st.st_mode) or row["source"] not in self.sources:
                continue
            other = Plan(unit_of_row(row), dict(row), Fingerprint.of(st), job=_FROM_START)
            if in_log_order([other, plan])[0] is plan:
                later = row["id"]
                break
        if later is None:
            return
        # (read again only as a family holding both: else this log would be read alone, again each run)
        found = {str(unit.path) for unit in self.found_units()} - self._emptied
        if any(file_id in files and later in files for files, _ in families.families_to_read(self.conn, [file_id], found)):
            self._put_first.add(file_id)
            with self.transaction():
                self.conn.execute("UPDATE source_files SET parser_version = NULL WHERE id = ?", [file_id])
            self._outsiders.add(file_id)

    def is_unchanged(self, row, fingerprint: Fingerprint, source: Source, st) -> bool:
        if row["parser_version"] != source.parser_version or row["missing"]:
            return False
        if not fingerprint.matches(row):
            return False
        if not fingerprint.untouched(row) and not self.survived_status_change(row["path"], st):
            return False
        # An unterminated last line is reported once its writer has gone quiet.
        return not (row["pending_bytes"] and self.is_settled(st) and not row["last_error"])

    def survived_status_change(self, path: str, st) -> bool:
        """Whether the stored file at ``path``, whose status changed (``st``: its ctime)
        though its size and modification time did not, holds the bytes read from it
        (``still_holds``): rewritten in place with as many bytes and its time kept, it
        is read again. One that does keeps its new ctime, so it is not checked again."""
        row = self.conn.execute("SELECT * FROM source_files WHERE path = ?", [path]).fetchone()
        same = row is not None and path_still_holds(path, row, inode=st.st_ino) is True
        if same:
            with self.transaction():
                self.conn.execute("UPDATE source_files SET ctime_ns = ? WHERE id = ?", [st.st_ctime_ns, row["id"]])
        return same

    def is_settled(self, st) -> bool:
        return self.clock() - st.st_mtime_ns / 1e9 >= self.settle_seconds

    def file_error(self, unit: SourceFile, row, reason: str) -> None:
        with self.transaction():
            file_id = self.ensure_file_row(unit, row)
            writer = Writer(self.conn, file_id, str(unit.path))
            writer.write([LineError(Position(0, 0, 0), reason)])
            self.conn.execute("UPDATE source_files SET last_error = ? WHERE id = ?", [reason, file_id])
        self.summary.errors += 1
        self.summary.error_samples.append((str(unit.path), None, reason))

    def ensure_file_row(self, unit: SourceFile, row) -> int:
        if row is not None:
            return row["id"]
        found = self.conn.execute("SELECT id FROM source_files WHERE path = ?", [str(unit.path)]).fetchone()
        if found is not None:
            return found[0]
        cursor = self.conn.execute(
            "INSERT INTO source_files (path, source, kind, layout, compression, hints, priority, first_seen_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            [str(unit.path), unit.source, unit.kind, unit.layout, unit.compression, hints_json(unit), unit.priority],
        )
        return cursor.lastrowid

    def resume_point(self, row, fingerprint: Fingerprint, source: Source, unit: SourceFile, raw) -> tuple[int, int, Any, bool] | None:
        """(cursor, line_no, parser state, open line) to continue from, or None to re-read.

        A file back on disk after it was missing is read again: its rows may
        have followed a copy elsewhere (``relocate``), and they come back
        with it when that copy is gone in turn."""
        if row is None or row["parser_version"] != source.parser_version or row["missing"]:
            return None
        if unit.layout != "jsonl" or unit.compression:
            return None
        cursor = row["cursor"]
        if fingerprint.size < cursor or (fingerprint.device, fingerprint.inode) != (row["device"], row["inode"]):
            return None
        if hashes_at(raw, cursor) != (row["head_hash"], row["tail_hash"]):
            return None
        saved = orjson.loads(row["parser_state"]) if row["parser_state"] else {}
        return cursor, row["line_no"], saved.get("parser"), bool(saved.get("open_line"))

    def check_drift(self, unit: SourceFile, file_id: int) -> None:
        """Say loudly when a file's lines are all of types the parser does not know.

        A format change in a new agent version otherwise looks like an empty
        but successful ingest.
        """
        row = self.conn.execute(
            "SELECT lines_read, lines_stored, lines_failed FROM source_files WHERE id = ?", [file_id]
        ).fetchone()
        reasons = self._file_reasons
        if row["lines_stored"] or not row["lines_read"] or set(reasons) != {"unknown-type"}:
            return
        reason = (
            f"none of the {row['lines_read']} lines has a type the {unit.source} parser knows: "
            "format drift? (0 messages ingested)"
        )
        with self.transaction():
            Writer(self.conn, file_id, str(unit.path)).write([LineError(Position(0, 0, 0), reason)])
        self.summary.errors += 1
        self.summary.error_samples.append((str(unit.path), None, reason))
        self.summary.empty_files.append(str(unit.path))

    def pending_error(self, unit, file_id: int, position: Position) -> None:
        """Report an unterminated last line whose writer has gone quiet.

        The cursor stays before it, so if the line is ever completed it is
        still read whole; ``last_error`` keeps the file from being re-read
        for this until it changes.
        """
        limit = line_reader.MAX_LINE
        reason = ("unterminated last line that is not valid JSON" if position.byte_length <= limit
                  else f"unterminated last line of {position.byte_length} bytes, over the {limit} byte limit")
        with self.transaction():
            Writer(self.conn, file_id, str(unit.path)).write([LineError(position, reason)])
            self.conn.execute("UPDATE source_files SET last_error = ? WHERE id = ?", [reason, file_id])
        self.summary.errors += 1
        self.summary.error_samples.append((str(unit.path), position.line_no, reason))

    def commit(self, unit: SourceFile, file_id: int, fingerprint: Fingerprint, batch: Batch) -> bool:
        """Write a batch's records and move the file's cursor, in one transaction;
        False, writing nothing, when another ingester moved the cursor since.

        Before the end of the file is reached the stored fingerprint has no
        mtime, so an interrupted run never mistakes the file for done.
        """
        records, cursor, lines = batch.records, batch.cursor, batch.lines
        self.begin_batch()
        stored = self.conn.execute("SELECT cursor FROM source_files WHERE id = ?", [file_id]).fetchone()
        if stored is None or stored[0] != self._stored_cursor:
            return False
        try:
            self.conn.execute("INSERT OR REPLACE INTO obelisk_state (key, value) VALUES ('bulk', '1')")
            deferred = cold_load.active(self.conn)  # then the cold load indexes the text at its end
            if not deferred:
                watermark_messages = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
                watermark_results = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM tool_results").fetchone()[0]
            writer = Writer(self.conn, file_id, str(unit.path), self._kept_seqs.get(file_id), self._kept_ids.get(file_id))
            writer.write(records, batch.message_rows, batch.message_marks)
            if not deferred:
                if writer.ids_after_deletes is not None:  # (rows written since may have taken the ids of rows deleted)
                    watermark_messages = min(watermark_messages, writer.ids_after_deletes[0])
                    watermark_results = min(watermark_results, writer.ids_after_deletes[1])
                cold_load.index_text_after(self.conn, watermark_messages, watermark_results)
            if writer.ids_taken_back:  # (below the mark the pass above reads from)
                cold_load.index_taken_back(self.conn, "messages", writer.ids_taken_back,
                                           None if deferred else watermark_messages)
            if writer.results_taken_back:
                cold_load.index_taken_back(self.conn, "tool_results", writer.results_taken_back,
                                           None if deferred else watermark_results)
            self.conn.execute("DELETE FROM obelisk_state WHERE key = 'bulk'")
            counts = writer.counts
            if counts.replayed_from:
                self._replayed_from.setdefault(file_id, set()).update(counts.replayed_from)
            if unit.layout == "document":  # one file, many items: count the items
                lines = document_items(records, batch.message_rows)
            self.queue_sessions(counts.sessions | counts.mentioned)
            self.conn.execute(
                """UPDATE source_files SET device = ?, inode = ?, size = ?, mtime_ns = ?, ctime_ns = ?,
                   head_hash = ?, tail_hash = ?, cursor = ?, line_no = ?, pending_bytes = ?,
                   parser_version = ?, parser_state = ?, missing = 0,
                   last_error = CASE WHEN ? THEN last_error END,
                   lines_read = lines_read + ?, lines_stored = lines_stored + ?,
                   lines_merged = lines_merged + ?, lines_failed = lines_failed + ?,
                   ingested_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                   WHERE id = ?""",
                [
                    fingerprint.device, fingerprint.inode, fingerprint.size,
                    fingerprint.mtime_ns if batch.at_eof else None,
                    fingerprint.ctime_ns if batch.at_eof else None,
                    batch.head_hash, batch.tail_hash, cursor, batch.line_no, batch.pending,
                    self.sources[unit.source].parser_version, batch.parser_state,
                    bool(batch.pending and not lines),
                    lines,
                    counts.stored, counts.merged, counts.failed, file_id,
                ],
            )
            if records or batch.message_rows:
                self.bump_generation()
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        if batch.at_eof:
            self._kept_seqs.pop(file_id, None)  # (what is left named lines the file no longer holds)
            self._kept_ids.pop(file_id, None)
        self._batch_bytes += max(0, cursor - self._file_cursor)
        self.flush()
        self._sessions |= counts.sessions
        self._reading |= counts.sessions | counts.mentioned
        self._file_reasons.update(counts.merged_reasons)
        self.keep_words(batch.words)
        self.report(self._progress[0] + cursor)
        s = self.summary
        s.lines += lines
        s.messages += counts.stored
        s.prompts += counts.prompts
        s.merged += counts.merged
        s.errors += counts.failed
        s.bytes_read += max(0, cursor - self._file_cursor)
        s.error_samples.extend(counts.errors[: max(0, 20 - len(s.error_samples))])
        s.repaired += len(counts.repaired)
        s.repaired_samples.extend(counts.repaired[: max(0, 20 - len(s.repaired_samples))])
        s.unknown += len(counts.unknown)
        s.unknown_samples.extend(counts.unknown[: max(0, 20 - len(s.unknown_samples))])
        self._file_cursor = self._stored_cursor = cursor
        return True

    def keep_words(self, words: dict[str, SessionWords]) -> None:
        """Keep the reader's word counts for the session index, within ``PRECOUNT_WORDS``.

        When they would not fit, sessions no file being read adds to are
        derived now, which frees their counts.
        """
        for session_id, counted in words.items():
            kept = self.words.get(session_id)
            if kept is None:
                while self._words_size + counted.size() > PRECOUNT_WORDS:
                    if not self.derive_some(IDLE_SESSIONS, skip=self._reading | {session_id}):
                        break
                if self._words_size + counted.size() > PRECOUNT_WORDS:
                    continue  # this session's words are counted again from its stored text
                kept = self.words[session_id] = SessionWords()
            before = kept.size()
            kept.add(counted)
            self._words_size += kept.size() - before


def set_saved_outputs_aside(conn: sqlite3.Connection, session_ids) -> None:
    """Before a family's logs are written again: the messages of its sessions read from
    text files (a tool's output saved apart, in no family) step out of the sessions'
    order (their places negated), so the logs' lines take their places from the start
    again, as in a run that reads them first (``place_saved_outputs`` puts them back)."""
    conn.execute(
        "UPDATE messages SET seq = -seq WHERE session_id IN (SELECT value FROM json_each(?)) AND seq > 0 "
        "AND file_id IN (SELECT id FROM source_files WHERE layout = 'text')",
        [families.as_json(session_ids)],
    )
    derive.forget_tallies(conn, session_ids)  # (reordered)


def place_saved_outputs(conn: sqlite3.Connection, session_ids) -> None:
    """Once a family is written whole: the messages ``set_saved_outputs_aside`` set aside
    come after its logs' lines, in the order they had, where a run reading the files
    anew puts them (text files are read last); their sessions are derived again."""
    for session_id in sorted(session_ids):
        aside = [row[0] for row in conn.execute(
            "SELECT id FROM messages WHERE session_id = ? AND seq < 0 ORDER BY seq DESC", [session_id])]
        if not aside:
            continue
        (last,) = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ? AND seq > 0", [session_id]
        ).fetchone()
        conn.executemany("UPDATE messages SET seq = ? WHERE id = ?", [(last + i, id_) for i, id_ in enumerate(aside, 1)])
        derive.forget_tallies(conn, [session_id])  # (reordered)
        conn.execute("INSERT OR IGNORE INTO derive_queue (session_id) VALUES (?)", [session_id])


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _still_holds(row, unit: SourceFile, st) -> bool:
    """Whether the file at ``unit.path`` still holds the bytes ``row`` read (up to its cursor)."""
    if Fingerprint.of(st).matches(row):
        return True
    if unit.layout != "jsonl" or unit.compression or not row["head_hash"]:
        return False
    return path_still_holds(unit.path, row) is True


FIRST_MOMENT = re.compile(rb'"(?:timestamp|startTime)"\s*:\s*"(\d{4}-[^"]{1,40})"')
SESSION_NAMED = re.compile(rb'"sessionId"\s*:\s*"([^"]{1,200})"')
HEAD_BYTES = 65536
FORKED_FROM = re.compile(rb'"forkedFrom"\s*:\s*\{\s*"sessionId"\s*:\s*"([^"]{1,200})"')
TAIL_BYTES = 4096


def data_version(conn: sqlite3.Connection) -> int:
    """Changes whenever another connection commits (``PRAGMA data_version``)."""
    return conn.execute("PRAGMA data_version").fetchone()[0]


@dataclass(frozen=True)
class _FromStart:
    """A job reading a stored file from its start, as ``in_log_order`` sees it."""

    cursor: int = 0


_FROM_START = _FromStart()


def in_log_order(plans: list[Plan]) -> list[Plan]:
    """``plans`` with the logs read from their start in the order they began
    (their first timestamp; on a tie, a log whose first line names another
    session after the others, then the one whose tail's last time is earlier,
    then by last write; by path without one), each
    branch after the log it copies, after those read on from a cursor, parents
    before their agents as ever. A log resumed into a new file replays lines of
    the one it resumed, a branch copies them (``forkedFrom``, under their times,
    which may be earlier than its original's first line): read first, the
    older one keeps them, as it does when the files arrive one at a time. (A
    resumed log replaying another under its own session id begins as that one
    does and goes on after it ends, whenever either file was last written:
    copied without their times, the copy may be the older file.)"""
    heads = {id(plan): first_moment(plan.unit.path) for plan in plans
             if not (plan.job is None or plan.job.cursor or plan.unit.compression)}
    by_session = {plan.unit.path.stem: plan for plan in plans if id(plan) in heads}

    def depth(plan: Plan) -> int:
        """How many branches deep the log is, as far as these logs tell."""
        level, forked = 0, heads[id(plan)][2]
        while forked is not None and level < len(plans):
            level += 1
            parent = by_session.get(forked)
            forked = heads[id(parent)][2] if parent is not None else None
        return level

    def start(plan: Plan):
        moment, named, _ = heads[id(plan)]
        return plan.unit.priority, depth(plan), moment, int(named is not None and named != plan.unit.path.stem)

    starts = {id(plan): start(plan) for plan in plans if id(plan) in heads}
    # (the tails of the logs beginning alike only: no other log need be read twice)
    ties = Counter(start for start in starts.values() if start[2])

    def key(plan: Plan):
        if id(plan) not in heads:
            return (plan.unit.priority, 0, 0, "", 0, "", 0, str(plan.unit.path))
        priority, level, moment, copied = starts[id(plan)]
        last = last_moment(plan.unit.path) if ties[starts[id(plan)]] > 1 else ""
        return (priority, 1, level, moment, copied, last, plan.fingerprint.mtime_ns if moment else 0,
                str(plan.unit.path))

    return sorted(plans, key=key)


LAST_MOMENTS = re.compile(rb'"timestamp"\s*:\s*"(\d{4}-[^"]{1,40})"')


def last_moment(path) -> str:
    """The latest timestamp in a log's last ``HEAD_BYTES``, canonical ("" when there is none there)."""
    try:
        with open(path, "rb") as raw:
            size = raw.seek(0, os.SEEK_END)
            raw.seek(max(0, size - HEAD_BYTES))
            tail = raw.read(HEAD_BYTES)
    except OSError:
        return ""
    moments = (canonical(found.group(1).decode("ascii", "replace")) for found in LAST_MOMENTS.finditer(tail))
    return max((moment for moment in moments if moment), default="")


def first_moment(path) -> tuple[str, str | None, str | None]:
    """The first timestamp in a log's head ("" when there is none there), the
    session its line names, if it names one, and the session that line was
    copied from (a branch's ``forkedFrom``, written near the line's end)."""
    head = b""
    try:
        with open(path, "rb") as raw:
            while len(head) < HEAD_BYTES:  # most logs name one in their first line
                chunk = raw.read(4096)
                head += chunk
                found = FIRST_MOMENT.search(head)
                if found or not chunk:
                    break
            # that line (the first, when its time is past the head: a long first prompt)
            start = head.rfind(b"\n", 0, found.start()) + 1 if found else 0
            end = head.find(b"\n", found.end() if found else 0)
            line = head[start:end] if end >= 0 else head[start:]
            tail = b"" if end >= 0 else line_tail(raw, line[-TAIL_BYTES:])
    except OSError:
        return "", None, None
    named = SESSION_NAMED.search(line) if found else None
    forked = FORKED_FROM.search(line) or FORKED_FROM.search(tail)
    return (
        found.group(1).decode("ascii", "replace") if found else "",
        named.group(1).decode("utf-8", "replace") if named else None,
        forked.group(1).decode("utf-8", "replace") if forked else None,
    )


def line_tail(raw, tail: bytes) -> bytes:
    """The last ``TAIL_BYTES`` of the line ``raw`` is in, read on from where it is
    (``tail``: the line's end so far), holding no more of it than that."""
    while chunk := raw.read(1 << 20):
        cut = chunk.find(b"\n")
        tail = (tail + (chunk if cut < 0 else chunk[:cut]))[-TAIL_BYTES:]
        if cut >= 0:
            break
    return tail


def is_gone(path: str) -> bool:
    """Whether nothing is at ``path`` any more (not merely unreadable)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def bytes_to_read(plans) -> int:
    """How much the planned jobs read, from their cursors to the ends of their files."""
    return sum(plan.fingerprint.size - plan.job.cursor for plan in plans if plan.job)


def default_roots(sources: Mapping[str, Source], environ=os.environ) -> dict[str, Path]:
    """Each source's own folder, where it exists and is a folder (one that is a file is
    skipped with a warning: ``sources.base.default_folder_warnings``)."""
    roots = {}
    for name, source in sources.items():
        root = default_root_of(source, environ)[0]
        if root is not None and Path(root).is_dir():
            roots[name] = Path(root)
    return roots


def ingest(
    db_path: str | Path,
    roots: Mapping[str, Path] | None = None,
    *,
    sources: Mapping[str, Source] | None = None,
    redact: bool = True,
    expect_logs: Iterable[str] | None = None,
    **options,
) -> IngestSummary:
    """Ingest into the database at ``db_path``; the Python entry point.

    ``roots`` maps source names to their folders (default: each source's own);
    a name that is not among ``sources`` is a ``ValueError``. A folder of a
    source in ``expect_logs`` (default: every one given in ``roots``) in
    which the source finds no file gets a warning in the summary. With ``redact``
    (the default) every stored text passes through the secret redactor first;
    ``redact=False`` is recorded in the database so a publish step can refuse it.
    """
    from ..plugins import get_sources, unknown_sources

    sources = sources or get_sources()
    if expect_logs is None:
        expect_logs = () if roots is None else list(roots)
    if roots is None:
        roots = default_roots(sources)
        warnings = default_folder_warnings(sources)
    else:
        unknown = unknown_sources(list(roots), sources)
        if unknown:
            raise ValueError(unknown)
        roots = {name: Path(path).expanduser() for name, path in roots.items()}
        warnings = [
            {"source": name, "path": str(path),
             "message": f"the {name} folder {path} is not a folder; nothing read from it (files stored from it count as gone from disk)"}
            for name, path in roots.items() if not path.is_dir()
        ]
    conn = open_db(db_path)
    try:
        refuse_newer_parsers(conn, {name: source.parser_version for name, source in sources.items()})
        record_redactor = None
        with transaction(conn):
            cold_load.finish(conn)  # a killed cold load is finished before stored text changes
            rules_changed = redacting.prepare(conn, redact)
        if redact:
            redactor = redacting.redactor_for(db_path)
            record_redactor = redacting.RecordRedactor(redactor)
            if rules_changed:
                apply_new_rules(conn, redactor)
        # Absolute, so raw() and the web face find the files from any directory.
        ingester = Ingester(
            conn, sources, {k: Path(v).absolute() for k, v in roots.items()}, redact=record_redactor, **options
        )
        summary = ingester.run()
        summary.warnings = warnings + summary.warnings + empty_folder_warnings(
            sources, {name: roots[name] for name in expect_logs if name in roots}, ingester.found
        )
        return summary
    finally:
        conn.close()


def empty_folder_warnings(sources: Mapping[str, Source], roots: Mapping[str, Path], found: dict) -> list[dict]:
    """A warning for each given folder in which its source found no file: most often the wrong folder."""
    warnings = []
    for name, path in roots.items():
        if found.get(name) == 0 and path.is_dir():
            layout = getattr(sources[name], "folder_layout", None)
            expected = f": it should hold {layout}" if layout else ""
            warnings.append({"source": name, "path": str(path), "message": f"no {name} logs found in {path}{expected}"})
    return warnings


def redact_in_place(conn: sqlite3.Connection, redactor, file_ids: list[int]) -> None:
    """The rows of files not read again (gone from disk) take the current rules where
    they are. Their sessions are derived whole next: what their last derivations
    counted (``derive_tallies``: cwds, the last branch) still says what was redacted."""
    redacting.redact_stored_rows(conn, redactor, file_ids)
    retake_outputs(conn, file_ids)  # (a log read again this run took a saved output before)
    derive.forget_tallies(conn, [row[0] for row in conn.execute(
        "SELECT DISTINCT session_id FROM messages WHERE file_id IN (SELECT value FROM json_each(?))",
        [orjson.dumps(list(file_ids)).decode()],
    )])


def apply_new_rules(conn: sqlite3.Connection, redactor) -> None:
    """New redaction rules: files still on disk are read again, the rest redacted in place."""
    with transaction(conn):
        conn.execute("UPDATE source_files SET parser_version = NULL WHERE missing = 0")
        gone = [row[0] for row in conn.execute("SELECT id FROM source_files WHERE missing = 1")]
        if gone:
            redact_in_place(conn, redactor, gone)
            conn.execute(
                "INSERT OR IGNORE INTO derive_queue (session_id) SELECT DISTINCT session_id "
                f"FROM messages WHERE file_id IN ({','.join('?' * len(gone))})",
                gone,
            )


def document_items(records, message_rows) -> int:
    """How many items of a document a batch read: each item is one position, whether
    it gave one message row, two (a Gemini reply holding its call's output), was
    merged or failed, as a line of a log is counted once."""
    positions = {row[LINE_NO] for row in message_rows}
    positions.update(r.position.line_no for r in records if type(r) in (Merged, LineError))
    return len(positions)
