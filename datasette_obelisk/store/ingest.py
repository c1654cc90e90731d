"""Incremental, crash-safe ingest of source files into the database.

Each file is read from its byte cursor; rows, cursor, parser state and
fingerprint are committed together in short ``BEGIN IMMEDIATE``
transactions, so a crash at any moment loses nothing and duplicates nothing.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat as stat_module
import time
from collections import Counter
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import orjson

from ..records import LineError, Position
from ..sources.base import Source, SourceFile
from ..sources.lines import Line, decode_object, read_lines
from . import cold_load, derive, redacting
from .db import get_state, open_db, set_state
from .writer import Writer, delete_file_rows

HASH_BYTES = 4096
CHUNK_BYTES = 8 << 20
COLD_LOAD_BYTES = 64 << 20
SETTLE_SECONDS = 10.0
BATCH_SECONDS = 1.0
WAL_AUTOCHECKPOINT_PAGES = 8192


@dataclass
class IngestSummary:
    files: int = 0
    files_skipped: int = 0
    files_read: int = 0
    files_replayed: int = 0
    files_missing: int = 0
    bytes_read: int = 0
    lines: int = 0
    messages: int = 0
    merged: int = 0
    errors: int = 0
    sessions: int = 0
    seconds: float = 0.0
    error_samples: list = field(default_factory=list)
    empty_files: list = field(default_factory=list)  # lines read, no message stored

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "files_skipped": self.files_skipped,
            "files_read": self.files_read,
            "files_replayed": self.files_replayed,
            "files_missing": self.files_missing,
            "bytes_read": self.bytes_read,
            "lines": self.lines,
            "messages": self.messages,
            "merged": self.merged,
            "errors": self.errors,
            "sessions": self.sessions,
            "seconds": round(self.seconds, 3),
            "error_samples": [
                {"path": p, "line": n, "reason": r} for p, n, r in self.error_samples
            ],
            "files_without_messages": self.empty_files,
        }


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _read_range(fp, start: int, end: int) -> bytes:
    """Bytes ``start:end`` of an open file, without moving its position.

    The ingester hashes ranges of the file it is in the middle of reading.
    """
    return os.pread(fp.fileno(), end - start, start)


@dataclass
class Fingerprint:
    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> "Fingerprint":
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def matches(self, row: sqlite3.Row) -> bool:
        return (self.device, self.inode, self.size, self.mtime_ns) == (
            row["device"], row["inode"], row["size"], row["mtime_ns"],
        )


def hashes_at(fp, cursor: int) -> tuple[str, str]:
    """Hash of the head of the file and of the bytes just before ``cursor``."""
    head = _read_range(fp, 0, min(HASH_BYTES, cursor))
    tail = _read_range(fp, max(0, cursor - HASH_BYTES), cursor)
    return _hash(head), _hash(tail)


@contextmanager
def open_stream(path: Path, compression: str | None) -> Iterator:
    with open(path, "rb") as raw:
        if compression == "zstd":
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
                yield raw, stream
        else:
            yield raw, raw


class Ingester:
    """Ingest every file the given sources discover under their roots."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        sources: Mapping[str, Source],
        roots: Mapping[str, Path],
        *,
        redact: Callable | None = None,
        chunk_bytes: int = CHUNK_BYTES,
        cold_load_bytes: int | None = COLD_LOAD_BYTES,
        settle_seconds: float = SETTLE_SECONDS,
        progress: Callable[[int, int], None] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        conn.row_factory = sqlite3.Row
        # Fewer, larger checkpoints while ingesting; readers are unaffected.
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        self.conn = conn
        self.sources = sources
        self.roots = roots
        self.redact = redact
        self.chunk_bytes = chunk_bytes
        self.cold_load_bytes = cold_load_bytes
        self.settle_seconds = settle_seconds
        self.progress = progress
        self.clock = clock
        self.summary = IngestSummary()
        self._sessions: set[str] = set()

    # -- the run -------------------------------------------------------

    def discover(self) -> list[SourceFile]:
        units = []
        for name, root in self.roots.items():
            units.extend(self.sources[name].discover(root))
        units.sort(key=lambda u: (u.priority, str(u.path)))
        return units

    def run(self) -> IngestSummary:
        started = time.perf_counter()
        units = self.discover()
        self.summary.files = len(units)
        total = sum(_size(u.path) for u in units)
        done = 0
        self.finish_cold_load()  # left over by a run that was killed
        self.derive_pending()
        self.begin_cold_load(total)
        for unit in units:
            self.ingest_file(unit)
            done += _size(unit.path)
            if self.progress:
                self.progress(done, total)
        self.mark_missing({str(u.path) for u in units})
        self.flush(force=True)
        self.finish_cold_load()
        self.derive_pending()
        self.summary.sessions = len(self._sessions)
        self.summary.seconds = time.perf_counter() - started
        return self.summary

    def begin_cold_load(self, total_bytes: int) -> None:
        """Defer index upkeep when this run loads many bytes into an empty database."""
        if self.cold_load_bytes is None or total_bytes < self.cold_load_bytes:
            return
        with self.transaction():
            cold_load.begin(self.conn)

    def finish_cold_load(self) -> None:
        with self.transaction():
            cold_load.finish(self.conn)

    def derive_pending(self) -> None:
        while True:
            batch = [
                r[0] for r in self.conn.execute("SELECT session_id FROM derive_queue LIMIT 200")
            ]
            if not batch:
                return
            with self.transaction():
                derive.derive_sessions(self.conn, batch)
                self.conn.executemany(
                    "DELETE FROM derive_queue WHERE session_id = ?", [(s,) for s in batch]
                )

    def transaction(self):
        """A transaction, or a part of the batch already open."""
        if self.conn.in_transaction:
            return nullcontext()
        return transaction(self.conn)

    def begin_batch(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self._batch_started = time.perf_counter()
            self._batch_bytes = 0

    def flush(self, force: bool = False) -> None:
        """Commit the open batch when it is big or old enough (or ``force``).

        Small files share a transaction; none stays open for long, so other
        writers (memory writes through the web face) never wait more than
        about ``BATCH_SECONDS``.
        """
        if not self.conn.in_transaction:
            return
        due = self._batch_bytes >= self.chunk_bytes or time.perf_counter() - self._batch_started >= BATCH_SECONDS
        if force or due:
            self.conn.execute("COMMIT")

    def mark_missing(self, seen: set[str]) -> None:
        """Files gone from disk keep their rows; their sessions become archived."""
        prefixes = tuple(str(root) for root in self.roots.values())
        if not prefixes:
            return
        gone = [
            row
            for row in self.conn.execute(
                "SELECT id, path FROM source_files WHERE missing = 0 AND source IN (%s)"
                % ",".join("?" * len(self.roots)),
                list(self.roots),
            )
            if row["path"].startswith(prefixes) and row["path"] not in seen
        ]
        if not gone:
            return
        with self.transaction():
            for row in gone:
                self.conn.execute("UPDATE source_files SET missing = 1 WHERE id = ?", [row["id"]])
                self.queue_sessions_of_file(row["id"])
            self.bump_generation()
        self.summary.files_missing += len(gone)

    def queue_sessions_of_file(self, file_id: int) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO derive_queue (session_id) "
            "SELECT session_id FROM file_sessions WHERE file_id = ?",
            [file_id],
        )

    def bump_generation(self) -> None:
        set_state(self.conn, "generation", str(int(get_state(self.conn, "generation", "0")) + 1))

    # -- one file ------------------------------------------------------

    def ingest_file(self, unit: SourceFile) -> None:
        path = str(unit.path)
        source = self.sources[unit.source]
        row = self.conn.execute("SELECT * FROM source_files WHERE path = ?", [path]).fetchone()
        try:
            st = os.stat(unit.path)
            if not stat_module.S_ISREG(st.st_mode):
                raise OSError(f"not a regular file (mode {stat_module.filemode(st.st_mode)})")
        except OSError as exc:
            self.file_error(unit, row, f"cannot read file: {exc}")
            return
        fingerprint = Fingerprint.of(st)
        if row is not None and self.is_unchanged(row, fingerprint, source, st):
            self.summary.files_skipped += 1
            return
        try:
            with open_stream(unit.path, unit.compression) as (raw, stream):
                self.read_file(unit, source, row, fingerprint, raw, stream, st)
        except OSError as exc:
            self.file_error(unit, row, f"cannot read file: {exc}")

    def is_unchanged(self, row, fingerprint: Fingerprint, source: Source, st) -> bool:
        if row["parser_version"] != source.parser_version or row["missing"]:
            return False
        if not fingerprint.matches(row):
            return False
        # An unterminated last line is reported once its writer has gone quiet.
        return not (row["pending_bytes"] and self.is_settled(st) and not row["last_error"])

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
        cursor = self.conn.execute(
            "INSERT INTO source_files (path, source, kind, layout, compression, first_seen_at) "
            "VALUES (?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
            [str(unit.path), unit.source, unit.kind, unit.layout, unit.compression],
        )
        return cursor.lastrowid

    def resume_point(self, row, fingerprint: Fingerprint, source: Source, unit: SourceFile, raw) -> tuple[int, int, Any, bool] | None:
        """(cursor, line_no, parser state, open line) to continue from, or None to re-read."""
        if row is None or row["parser_version"] != source.parser_version:
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

    def read_file(self, unit, source, row, fingerprint, raw, stream, st) -> None:
        resume = self.resume_point(row, fingerprint, source, unit, raw)
        replay = row is not None and resume is None
        with self.transaction():
            file_id = self.ensure_file_row(unit, row)
            if replay:
                cold_load.index_pending_text(self.conn)
                touched = delete_file_rows(self.conn, file_id)
                self._sessions |= touched
                self.conn.executemany(
                    "INSERT OR IGNORE INTO derive_queue (session_id) VALUES (?)", [(s,) for s in touched]
                )
                self.conn.execute(
                    "UPDATE source_files SET lines_read = 0, lines_stored = 0, lines_merged = 0, "
                    "lines_failed = 0, generation = generation + 1, missing = 0, last_error = NULL "
                    "WHERE id = ?",
                    [file_id],
                )
                self.summary.files_replayed += 1
            elif row is not None and row["missing"]:
                self.conn.execute("UPDATE source_files SET missing = 0 WHERE id = ?", [file_id])
                self.queue_sessions_of_file(file_id)
            if resume is not None:
                # Errors past the cursor were about an unfinished last line,
                # which is about to be read again.
                self.conn.execute(
                    "DELETE FROM ingest_errors WHERE file_id = ? AND byte_offset >= ?", [file_id, resume[0]]
                )
        cursor, line_no, state, open_line = resume or (0, 0, None, False)
        self._file_cursor = cursor
        self._file_reasons = Counter()
        parser = source.open_parser(unit, state)
        self.summary.files_read += 1
        if unit.layout == "document":
            data = stream.read()
            self.commit(unit, file_id, parser, self.document_records(parser, data), len(data), 1, raw, fingerprint, 1)
            return
        stream.seek(cursor) if stream is raw else _skip(stream, cursor)
        if open_line and stream.read(1) != b"\n":
            # The previous run consumed an unterminated line that has since
            # been extended: the file was rewritten after all.
            self.conn.execute("UPDATE source_files SET parser_version = NULL WHERE id = ?", [file_id])
            return self.ingest_file(unit)
        if open_line:
            cursor += 1
            self._file_cursor = cursor
        self.read_lines(unit, file_id, parser, stream, cursor, line_no, raw, fingerprint, st)
        self.check_drift(unit, file_id)

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

    def document_records(self, parser, data: bytes) -> Iterable:
        try:
            return list(parser.document(data))
        except Exception as exc:  # a parser bug must not stop the run
            return [LineError(Position(1, 0, len(data)), f"parser error: {exc!r}")]

    def read_lines(self, unit, file_id, parser, stream, cursor, line_no, raw, fingerprint, st) -> None:
        batch: list = []
        batch_bytes = 0
        lines = 0
        for line in read_lines(stream, cursor, line_no + 1):
            end = line.position.byte_offset + line.position.byte_length
            if not line.terminated:
                if self.is_complete(line):
                    batch.extend(self.feed(parser, line))
                    self.commit(unit, file_id, parser, batch, end, line.position.line_no, raw, fingerprint, lines + 1, open_line=True)
                else:
                    self.commit(unit, file_id, parser, batch, cursor, line_no, raw, fingerprint, lines, pending=end - cursor)
                    if self.is_settled(st):
                        self.pending_error(unit, file_id, line)
                return
            if line.data is not None and not line.data.strip():
                cursor, line_no = end + 1, line.position.line_no
                continue
            batch.extend(self.feed(parser, line))
            lines += 1
            batch_bytes += line.position.byte_length + 1
            cursor, line_no = end + 1, line.position.line_no
            if batch_bytes >= self.chunk_bytes:
                self.commit(unit, file_id, parser, batch, cursor, line_no, raw, fingerprint, lines, at_eof=False)
                batch, batch_bytes, lines = [], 0, 0
        self.commit(unit, file_id, parser, batch, cursor, line_no, raw, fingerprint, lines)

    @staticmethod
    def is_complete(line: Line) -> bool:
        """Whether an unterminated last line already holds a whole JSON object."""
        if line.data is None:
            return False
        try:
            return isinstance(orjson.loads(line.data), dict)
        except orjson.JSONDecodeError:
            return False

    def pending_error(self, unit, file_id: int, line: Line) -> None:
        """Report an unterminated last line whose writer has gone quiet.

        The cursor stays before it, so if the line is ever completed it is
        still read whole; ``last_error`` keeps the file from being re-read
        for this until it changes.
        """
        reason = "unterminated last line that is not valid JSON"
        with self.transaction():
            Writer(self.conn, file_id, str(unit.path)).write([LineError(line.position, reason)])
            self.conn.execute("UPDATE source_files SET last_error = ? WHERE id = ?", [reason, file_id])
        self.summary.errors += 1
        self.summary.error_samples.append((str(unit.path), line.position.line_no, reason))

    def feed(self, parser, line: Line) -> list:
        if line.data is None:
            return [decode_object(line)]
        try:
            return list(parser.feed(line.data, line.position))
        except Exception as exc:  # a parser bug must not stop the run
            return [LineError(line.position, f"parser error: {exc!r}")]

    def commit(self, unit, file_id, parser, records, cursor, line_no, raw, fingerprint, lines=0, *, open_line=False, pending=0, at_eof=True) -> None:
        """Write ``records`` and move the file's cursor, in one transaction.

        Before the end of the file is reached the stored fingerprint has no
        mtime, so an interrupted run never mistakes the file for done.
        """
        if self.redact is not None:
            records = [self.redact(r) for r in records]
        head_hash, tail_hash = hashes_at(raw, cursor) if unit.layout == "jsonl" and not unit.compression else (None, None)
        self.begin_batch()
        try:
            self.conn.execute("INSERT OR REPLACE INTO obelisk_state (key, value) VALUES ('bulk', '1')")
            deferred = cold_load.active(self.conn)  # then the cold load indexes the text at its end
            if not deferred:
                watermark_messages = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
                watermark_results = self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM tool_results").fetchone()[0]
            writer = Writer(self.conn, file_id, str(unit.path))
            writer.write(records)
            if not deferred:
                cold_load.index_text_after(self.conn, watermark_messages, watermark_results)
            self.conn.execute("DELETE FROM obelisk_state WHERE key = 'bulk'")
            counts = writer.counts
            if unit.layout == "document":  # one file, many items: count the items
                lines = counts.stored + counts.merged + counts.failed
            self.conn.executemany(
                "INSERT OR IGNORE INTO derive_queue (session_id) VALUES (?)",
                [(s,) for s in counts.sessions | counts.mentioned],
            )
            self.conn.execute(
                """UPDATE source_files SET device = ?, inode = ?, size = ?, mtime_ns = ?,
                   head_hash = ?, tail_hash = ?, cursor = ?, line_no = ?, pending_bytes = ?,
                   parser_version = ?, parser_state = ?, missing = 0,
                   last_error = CASE WHEN ? THEN last_error END,
                   lines_read = lines_read + ?, lines_stored = lines_stored + ?,
                   lines_merged = lines_merged + ?, lines_failed = lines_failed + ?,
                   ingested_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                   WHERE id = ?""",
                [
                    fingerprint.device, fingerprint.inode, fingerprint.size,
                    fingerprint.mtime_ns if at_eof else None,
                    head_hash, tail_hash, cursor, line_no, pending,
                    self.sources[unit.source].parser_version,
                    orjson.dumps({"parser": parser.state(), "open_line": open_line}).decode(),
                    bool(pending and not lines),
                    lines,
                    counts.stored, counts.merged, counts.failed, file_id,
                ],
            )
            if records:
                self.bump_generation()
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self._batch_bytes += max(0, cursor - self._file_cursor)
        self.flush()
        self._sessions |= counts.sessions
        self._file_reasons.update(counts.merged_reasons)
        s = self.summary
        s.lines += lines
        s.messages += counts.stored
        s.merged += counts.merged
        s.errors += counts.failed
        s.bytes_read += max(0, cursor - self._file_cursor)
        self._file_cursor = cursor
        s.error_samples.extend(counts.errors[: max(0, 20 - len(s.error_samples))])


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _skip(stream, count: int) -> None:
    while count > 0:
        block = stream.read(min(count, 1 << 20))
        if not block:
            return
        count -= len(block)


def default_roots(sources: Mapping[str, Source], environ=os.environ) -> dict[str, Path]:
    """Each source's own folder, where it exists."""
    roots = {}
    for name, source in sources.items():
        root = source.default_root(environ)
        if root is not None and Path(root).exists():
            roots[name] = Path(root)
    return roots


def ingest(
    db_path: str | Path,
    roots: Mapping[str, Path] | None = None,
    *,
    sources: Mapping[str, Source] | None = None,
    redact: bool = True,
    **options,
) -> IngestSummary:
    """Ingest into the database at ``db_path``; the Python entry point.

    With ``redact`` (the default) every stored text passes through the
    secret redactor first; ``redact=False`` is recorded in the database so a
    publish step can refuse it.
    """
    from ..plugins import get_sources

    sources = sources or get_sources()
    if roots is None:
        roots = default_roots(sources)
    conn = open_db(db_path)
    try:
        record_redactor = None
        with transaction(conn):
            cold_load.finish(conn)  # a killed cold load is finished before stored text changes
            rules_changed = redacting.prepare(conn, redact)
        if redact:
            redactor = redacting.redactor_for(db_path)
            record_redactor = redacting.RecordRedactor(redactor)
            if rules_changed:
                apply_new_rules(conn, redactor)
        ingester = Ingester(
            conn, sources, {k: Path(v) for k, v in roots.items()}, redact=record_redactor, **options
        )
        return ingester.run()
    finally:
        conn.close()


def apply_new_rules(conn: sqlite3.Connection, redactor) -> None:
    """New redaction rules: files still on disk are read again, the rest redacted in place."""
    with transaction(conn):
        conn.execute("UPDATE source_files SET parser_version = NULL WHERE missing = 0")
        gone = [row[0] for row in conn.execute("SELECT id FROM source_files WHERE missing = 1")]
        if gone:
            redacting.redact_stored_rows(conn, redactor, gone)
            conn.execute(
                "INSERT OR IGNORE INTO derive_queue (session_id) SELECT DISTINCT session_id "
                f"FROM messages WHERE file_id IN ({','.join('?' * len(gone))})",
                gone,
            )


@contextmanager
def transaction(conn: sqlite3.Connection):
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
