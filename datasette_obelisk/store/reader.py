"""Reading source files into batches of redacted records: ingest's half that needs no database.

The ingester plans each file (where to resume, with which parser state),
then consumes what ``read_job`` yields for it: ``Batch``es to commit, and at
most one closing ``PendingLine``, ``Reopen`` or ``ReadFailed``. Every item
carries what the commit needs (cursor, parser state, hashes at the cursor),
so reading can run ahead of writing: ``JobStream`` reads in this process for
small runs, or in a forked reader process that parses, redacts and counts
words on the second core while this one writes.
"""

from __future__ import annotations

import copyreg
import dataclasses
import functools
import multiprocessing
import operator
import os
import pickle
import queue as queue_module
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import orjson

from .. import records as record_types
from ..records import LineError, Message, Position
from ..sources.base import Source, SourceFile
from ..sources.lines import Line, decode_object, read_lines
from .fingerprint import hashes_at
from .session_index import SessionWords, count_session_words

READERS = 2
BUFFER_MB = 48  # what one reader may have read ahead of the writer
POLL_SECONDS = 0.5


@dataclass
class Job:
    """Where to read one file from."""

    unit: SourceFile
    cursor: int = 0
    line_no: int = 0
    state: Any = None
    open_line: bool = False
    settled: bool = False  # an unterminated last line has gone quiet


@dataclass
class Batch:
    """Records for the lines up to ``cursor``, and the file's state there."""

    records: list
    cursor: int
    line_no: int
    lines: int
    parser_state: str  # JSON, taken when the batch was cut
    head_hash: str | None = None
    tail_hash: str | None = None
    pending: int = 0  # bytes of an unfinished last line left after the cursor
    at_eof: bool = True
    words: dict[str, SessionWords] = field(default_factory=dict)


@dataclass
class PendingLine:
    """An unterminated last line that is not JSON, whose writer went quiet."""

    position: Position


@dataclass
class Reopen:
    """The line left open last time was extended: the file must be read anew."""


@dataclass
class ReadFailed:
    reason: str


@dataclass
class Reader:
    """How to read: the sources, the redactor and the batch size."""

    sources: Mapping[str, Source]
    redact: Callable | None
    chunk_bytes: int

    def read_job(self, job: Job) -> Iterator:
        try:
            with open_stream(job.unit.path, job.unit.compression) as (raw, stream):
                yield from self._read(job, raw, stream)
        except OSError as exc:
            yield ReadFailed(f"cannot read file: {exc}")

    def _read(self, job: Job, raw, stream) -> Iterator:
        unit = job.unit
        parser = self.sources[unit.source].open_parser(unit, job.state)
        if unit.layout == "document":
            data = stream.read()
            yield self.batch(unit, parser, raw, self.document_records(parser, data), len(data), 1, 1)
            return
        cursor, line_no = job.cursor, job.line_no
        stream.seek(cursor) if stream is raw else _skip(stream, cursor)
        if job.open_line:
            if stream.read(1) != b"\n":
                yield Reopen()
                return
            cursor += 1
        records: list = []
        size = lines = 0
        for line in read_lines(stream, cursor, line_no + 1):
            end = line.position.byte_offset + line.position.byte_length
            if not line.terminated:
                if is_complete(line):
                    records.extend(self.feed(parser, line))
                    yield self.batch(unit, parser, raw, records, end, line.position.line_no, lines + 1, open_line=True)
                else:
                    yield self.batch(unit, parser, raw, records, cursor, line_no, lines, pending=end - cursor)
                    if job.settled:
                        yield PendingLine(line.position)
                return
            if line.data is not None and not line.data.strip():
                cursor, line_no = end + 1, line.position.line_no
                continue
            records.extend(self.feed(parser, line))
            lines += 1
            size += line.position.byte_length + 1
            cursor, line_no = end + 1, line.position.line_no
            if size >= self.chunk_bytes:
                yield self.batch(unit, parser, raw, records, cursor, line_no, lines, at_eof=False)
                records, size, lines = [], 0, 0
        yield self.batch(unit, parser, raw, records, cursor, line_no, lines)

    def batch(self, unit, parser, raw, records, cursor, line_no, lines, *, open_line=False, pending=0, at_eof=True) -> Batch:
        if self.redact is not None:
            records = [self.redact(r) for r in records]
        hashes = hashes_at(raw, cursor) if unit.layout == "jsonl" and not unit.compression else (None, None)
        return Batch(
            records, cursor, line_no, lines,
            orjson.dumps({"parser": parser.state(), "open_line": open_line}).decode(),
            *hashes, pending=pending, at_eof=at_eof,
            words=count_session_words(r for r in records if type(r) is Message),
        )

    @staticmethod
    def feed(parser, line: Line) -> list:
        if line.data is None:
            return [decode_object(line)]
        try:
            return list(parser.feed(line.data, line.position))
        except Exception as exc:  # a parser bug must not stop the run
            return [LineError(line.position, f"parser error: {exc!r}")]

    @staticmethod
    def document_records(parser, data: bytes) -> list:
        try:
            return list(parser.document(data))
        except Exception as exc:  # a parser bug must not stop the run
            return [LineError(Position(1, 0, len(data)), f"parser error: {exc!r}")]


def is_complete(line: Line) -> bool:
    """Whether an unterminated last line already holds a whole JSON object."""
    if line.data is None:
        return False
    try:
        return isinstance(orjson.loads(line.data), dict)
    except orjson.JSONDecodeError:
        return False


@contextmanager
def open_stream(path, compression: str | None) -> Iterator:
    with open(path, "rb") as raw:
        if compression == "zstd":
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
                yield raw, stream
        else:
            yield raw, raw


def _skip(stream, count: int) -> None:
    while count > 0:
        block = stream.read(min(count, 1 << 20))
        if not block:
            return
        count -= len(block)


# -- reading ahead --------------------------------------------------------


class _End:
    """Marks the end of one job's items."""


def _pickle_records_as_tuples() -> None:
    """Pickle records as their field values: several times faster than the
    dataclass default, which builds a list of fields per object."""
    for cls in vars(record_types).values():
        if dataclasses.is_dataclass(cls) and isinstance(cls, type):
            values = operator.attrgetter(*[f.name for f in dataclasses.fields(cls)])
            copyreg.pickle(cls, lambda record, cls=cls, values=values: (cls, values(record)))


_pickle_records_as_tuples()


class JobStream:
    """The items of jobs, in order; read here or by forked reader processes.

    With ``ahead``, ``readers`` processes take the jobs in turn (job ``i``
    goes to reader ``i % readers``), each through its own queue holding at
    most about ``BUFFER_MB`` of pickled items; while a queue is empty,
    ``idle`` is called for work that can be done meanwhile.
    ``items(job)`` must be called for the jobs in the order they were given,
    each drained before the next. Closing stops the readers.
    """

    def __init__(self, reader: Reader, jobs: list[Job], *, ahead: bool, readers: int = READERS,
                 idle: Callable[[], bool] | None = None):
        self.reader = reader
        self.jobs = jobs
        self.idle = idle  # work to do while waiting; returns False when there is none
        self.workers: list[tuple] = []
        self.taken = 0
        if ahead and jobs and "fork" in multiprocessing.get_all_start_methods():
            context = multiprocessing.get_context("fork")
            count = max(1, min(readers, len(jobs)))
            for k in range(count):
                queue, room = context.Queue(), context.Semaphore(BUFFER_MB)
                process = context.Process(
                    target=self._work, args=(jobs[k::count], queue, room, os.getpid()), daemon=True
                )
                process.start()
                self.workers.append((process, queue, room))

    def items(self, job: Job) -> Iterator:
        if not self.workers:
            yield from self.reader.read_job(job)
            return
        assert self.jobs[self.taken] is job, "jobs must be taken in the order given"
        process, queue, room = self.workers[self.taken % len(self.workers)]
        self.taken += 1
        while True:
            item = self._get(process, queue, room)
            if isinstance(item, _End):
                return
            yield item

    def _get(self, process, queue, room):
        while True:
            if self.idle is not None:
                while queue.empty() and self.idle():
                    pass
            try:
                size, payload = queue.get(timeout=POLL_SECONDS)
            except queue_module.Empty:
                if not process.is_alive():
                    raise RuntimeError(f"a reader process died (exit status {process.exitcode})")
                continue
            for _ in range(size):
                room.release()
            item = pickle.loads(payload)
            if isinstance(item, _Crash):
                raise RuntimeError(f"a reader process failed:\n{item.text}")
            return item

    def _work(self, jobs: list[Job], queue, room, parent: int) -> None:
        put = functools.partial(self._put, queue=queue, room=room, parent=parent)
        try:
            for job in jobs:
                for item in self.reader.read_job(job):
                    put(item)
                put(_End())
        except BaseException:
            put(_Crash(traceback.format_exc()))

    @staticmethod
    def _put(item, *, queue, room, parent: int) -> None:
        # Pickled now, not later by the queue's thread: the parser may still
        # change records it has already returned.
        payload = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        size = min(BUFFER_MB, 1 + (len(payload) >> 20))
        for _ in range(size):
            while not room.acquire(timeout=POLL_SECONDS):
                if os.getppid() != parent:  # the ingester is gone
                    os._exit(0)
        queue.put((size, payload))

    def close(self) -> None:
        for process, queue, _ in self.workers:
            process.terminate()
            process.join()
            queue.close()
        self.workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclass
class _Crash:
    text: str
