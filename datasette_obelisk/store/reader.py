"""Reading source files into batches of redacted records: ingest's half that needs no database.

The ingester plans each file (where to resume, with which parser state),
then consumes what ``Reader.read_job`` yields for it: ``Batch``es to commit,
and at most one closing ``PendingLine``, ``Reopen`` or ``ReadFailed``. Every
item carries what the commit needs (cursor, parser state, hashes at the
cursor), so reading can run ahead of writing (see ``read_ahead``).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterator, Mapping

import orjson

from ..records import LineError, LineRepaired, Message, Position
from ..sources.base import Source, SourceFile
from ..sources.lines import (
    BOM, CHUNK, MAX_LINE, REPAIRED, Line, decode_object, load_json, original_offset, read_lines, repair_note, repair_utf8,
)
from .fingerprint import compressed_hashes_at, hashes_at
from .record_check import checked_document, checked_line
from .session_index import SessionWords, count_session_words
from .writer import latest_ends, split_messages

# A text file (``layout == "text"``) is held up to this many bytes, as a line
# is; the rest is counted, not held.
MAX_TEXT = MAX_LINE
# UTF-8 continuation bytes: every other byte starts a character.
CONTINUATION = bytes(range(0x80, 0xC0))


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

    records: list  # every record but messages
    cursor: int
    line_no: int
    lines: int
    parser_state: str  # JSON, taken when the batch was cut
    head_hash: str | None = None
    tail_hash: str | None = None
    pending: int = 0  # bytes of an unfinished last line left after the cursor
    at_eof: bool = True
    words: dict[str, SessionWords] = field(default_factory=dict)
    message_rows: list[tuple] = field(default_factory=list)  # see writer.message_row
    message_marks: list[int] = field(default_factory=list)  # see writer.split_messages


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


# A batch ends after this many lines too, whatever their bytes: the records of
# 8 MB of 10-byte lines (a million of them, two batches alive at once) took
# 300 MB, while ordinary lines reach ``chunk_bytes`` first.
CHUNK_LINES = 20_000

@dataclass
class Reader:
    """How to read: the sources, the redactor and the batch size.

    ``kept_open`` (path -> descriptor) holds the files the ingester cleared to
    read again from their start, open until they are read: one deleted before
    its turn (an agent pruning old logs) is still read, through ``/proc``, and
    so still archived. Reader processes forked by the run inherit them."""

    sources: Mapping[str, Source]
    redact: Callable | None
    chunk_bytes: int
    kept_open: dict = field(default_factory=dict)
    chunk_lines: int = CHUNK_LINES

    def read_job(self, job: Job) -> Iterator:
        try:
            with open_stream(job.unit.path, job.unit.compression, self.kept_open) as (raw, stream):
                yield from self._read(job, raw, stream)
        except OSError as exc:
            yield ReadFailed(f"cannot read file: {exc}")
        except Exception as exc:  # a parser that cannot open or save its state fails its file, not the run
            yield ReadFailed(f"parser error: {exc!r}")

    def _read(self, job: Job, raw, stream) -> Iterator:
        unit = job.unit
        source = self.sources[unit.source]
        parser = source.open_parser(unit, job.state)
        trusted = getattr(source, "trusted_records", False)
        feed = self.feed if trusted else partial(self.checked_feed, source=unit.source)
        if unit.layout == "document":
            data = stream.read()
            repaired = repair_utf8(data)
            found = self.document_records(parser, repaired[0] if repaired else data)
            if repaired:
                moved_back(found, repaired[1], data)
            if not trusted:
                found = checked_document(found, Position(1, 0, len(data)), unit.source)
            if repaired:
                found = document_repaired(found, repaired[1], data)
            yield self.batch(unit, parser, raw, found, len(data), 1, 1)
            return
        if unit.layout == "text":
            data, size, left = read_text(stream, MAX_TEXT)
            try:
                found = list(parser.text(data, size, left))
            except Exception as exc:  # a parser bug must not stop the run
                found = [LineError(Position(1, 0, len(data)), f"parser error: {exc!r}")]
            if not trusted:
                found = checked_document(found, Position(1, 0, len(data)), unit.source)
            repaired = repair_utf8(data)  # (the parser reads such bytes as U+FFFD: said here, as of a line)
            if repaired:
                found = with_repair(found, LineRepaired(Position(1, 0, len(data)), repair_note(repaired[1], 0, "file")))
            yield self.batch(unit, parser, raw, found, size, 1, 1)
            return
        cursor, line_no = job.cursor, job.line_no
        stream.seek(cursor) if stream is raw else _skip(stream, cursor)
        if job.open_line:
            following = stream.read(1)
            if not following:  # nothing written after it (the file was touched): nothing to read
                yield self.batch(unit, parser, raw, [], cursor, line_no, 0, open_line=True)
                return
            if following != b"\n":
                yield Reopen()
                return
            cursor += 1
        records: list = []
        size = lines = 0
        try:
            for line in read_lines(stream, cursor, line_no + 1):
                end = line.position.byte_offset + line.position.byte_length
                # Bytes that are not UTF-8 are read as U+FFFD (checked strictly, the fallback only on failure)
                repair = None if line.data is None or line.data.isascii() else repaired_line(line)
                if not line.terminated:
                    if is_complete(line):
                        records.extend(with_repair(feed(parser, line), repair))
                        yield self.batch(unit, parser, raw, records, end, line.position.line_no, lines + 1, open_line=True)
                    else:
                        yield self.batch(unit, parser, raw, records, cursor, line_no, lines, pending=end - cursor)
                        if job.settled:
                            yield PendingLine(line.position)
                    return
                if line.data is not None and not line.data.strip():
                    cursor, line_no = end + 1, line.position.line_no
                    continue
                records.extend(with_repair(feed(parser, line), repair))
                lines += 1
                size += line.position.byte_length + 1
                cursor, line_no = end + 1, line.position.line_no
                if size >= self.chunk_bytes or lines >= self.chunk_lines:
                    yield self.batch(unit, parser, raw, records, cursor, line_no, lines, at_eof=False)
                    records, size, lines = [], 0, 0
        except CompressedDataError as exc:
            # A compressed file that cannot be read to its end keeps what was read before
            # (one cut short may still be being written: read again once it has gone quiet).
            if exc.cut_short and not job.settled:
                yield self.batch(unit, parser, raw, records, cursor, line_no, lines, pending=1)
                return
            if cursor == job.cursor and not records:
                raise  # nothing read: the file cannot be read (a re-read keeps what it held)
            records.append(LineError(Position(line_no + 1, cursor, 0), f"cannot read file: {exc}"))
            lines += 1
        yield self.batch(unit, parser, raw, records, cursor, line_no, lines)

    def batch(self, unit, parser, raw, records, cursor, line_no, lines, *, open_line=False, pending=0, at_eof=True) -> Batch:
        records = latest_ends(records)  # (a session's end said by many lines: sent once)
        if self.redact is not None:
            records = [self.redact(r) for r in records]
        messages = [r for r in records if type(r) is Message]
        others, rows, marks = split_messages(records) if messages else (records, [], [])
        # (a document's too, whole: a copy of it elsewhere is known by them, see relocate;
        # a compressed file is never read on from its cursor, but the hashes of its
        # decompressed text, once read to its end, let its rows follow it when it moves)
        if not unit.compression:
            hashes = hashes_at(raw, cursor)
        elif at_eof:
            hashes = compressed_hashes_at(raw, cursor) or (None, None)
        else:
            hashes = (None, None)
        return Batch(
            others, cursor, line_no, lines,
            orjson.dumps({"parser": parser.state(), "open_line": open_line}).decode(),
            *hashes, pending=pending, at_eof=at_eof,
            words=count_session_words(messages),
            message_rows=rows, message_marks=marks,
        )

    @staticmethod
    def feed(parser, line: Line) -> list:
        if line.data is None:
            return [decode_object(line)]
        try:
            return list(parser.feed(line.data, line.position))
        except Exception as exc:  # a parser bug must not stop the run
            return [LineError(line.position, f"parser error: {exc!r}")]

    @classmethod
    def checked_feed(cls, parser, line: Line, source: str) -> list:
        """``feed`` for a parser whose records are not known to be well formed."""
        return checked_line(cls.feed(parser, line), line.position, source)

    @staticmethod
    def document_records(parser, data: bytes) -> list:
        try:
            return list(parser.document(data.removeprefix(BOM)))  # an editor's byte order mark is no JSON
        except Exception as exc:  # a parser bug must not stop the run
            return [LineError(Position(1, 0, len(data)), f"parser error: {exc!r}")]


def repaired_line(line: Line) -> LineRepaired | None:
    """``line`` with its bytes that are not UTF-8 read as U+FFFD, and what says so (None when it is UTF-8)."""
    repaired = repair_utf8(line.data)
    if repaired is None:
        return None
    line.data, spans = repaired
    return LineRepaired(line.position, repair_note(spans))


def with_repair(found: list, repair: LineRepaired | None) -> list:
    """The records of a line, and the word that it was read with repairs: added to the
    line's error instead when it failed all the same (one row a line)."""
    if repair is None:
        return found
    for record in found:
        if type(record) is LineError and record.position == repair.position:
            record.reason = f"{record.reason}; {repair.reason.removeprefix(REPAIRED)}"
            return found
    found.append(repair)
    return found


def moved_back(found: list, spans: list[tuple[int, int]], data: bytes) -> None:
    """The places the records of a document read with repairs (``repair_utf8``: bytes
    at ``spans`` of ``data`` read as U+FFFD, three bytes each) name, moved back to the
    bytes on disk, so a re-read of an item (``raw``) finds it there."""
    bom = len(BOM) if data.startswith(BOM) else 0  # (the parser read it without its byte order mark)

    def back(offset: int) -> int:
        return original_offset(spans, offset + bom) - bom

    moved: dict[tuple, Position] = {}
    for record in found:
        p = getattr(record, "position", None)
        if isinstance(p, Position):
            key = (p.line_no, p.byte_offset, p.byte_length)
            if key not in moved:
                start = back(p.byte_offset)
                moved[key] = Position(p.line_no, start, back(p.byte_offset + p.byte_length) - start)
            record.position = moved[key]


def document_repaired(found: list, spans: list[tuple[int, int]], data: bytes) -> list:
    """The records of a document read with repairs (places moved back, ``moved_back``) and
    a ``LineRepaired`` for each item holding bytes that are not UTF-8: the smallest place
    a record names around them (an item), else the whole file."""
    bom = len(BOM) if data.startswith(BOM) else 0
    places = sorted({(p.line_no, p.byte_offset, p.byte_length) for r in found
                     if isinstance(p := getattr(r, "position", None), Position)}, key=lambda k: (k[2], k[0]))
    whole = (1, 0, len(data) - bom)
    held: dict[tuple, list] = {}
    for start, end in spans:
        at = start - bom
        place = next((k for k in places if k[1] <= at < k[1] + k[2]), whole)
        held.setdefault(place, []).append((at, end - bom))
    for (line_no, offset, length), inside in held.items():
        what = "file" if offset == 0 and length >= len(data) - bom else "item"
        found = with_repair(found, LineRepaired(Position(line_no, offset, length), repair_note(inside, offset, what)))
    return found


def read_text(stream, limit: int) -> tuple[bytes, int, int]:
    """A text file's first bytes, at most ``limit`` (cut before a character, not
    inside one), its size in bytes and how many characters follow what is held.
    Bounded memory: what is not held is read a block at a time and counted."""
    data = stream.read(limit)
    held = len(data)
    rest = stream.read(CHUNK) if held == limit else b""
    if not rest:
        return data, held, 0
    cut = held
    if rest[0] in CONTINUATION:  # the character at the cut began before it: left out whole
        while cut > held - 3 and data[cut - 1] in CONTINUATION:
            cut -= 1
        cut = max(0, cut - 1)
    if cut < held:
        data, rest = data[:cut], data[cut:] + rest
    size, left = cut, 0
    while rest:
        size += len(rest)
        left += len(rest.translate(None, CONTINUATION))
        rest = stream.read(CHUNK)
    return data, size, left


def is_complete(line: Line) -> bool:
    """Whether an unterminated last line already holds a whole JSON object."""
    if line.data is None:
        return False
    try:
        return isinstance(load_json(line.data), dict)
    except orjson.JSONDecodeError:
        return False


def open_log(path, kept_open: Mapping[str, int]):
    """``path`` opened for reading; when it is gone, the descriptor held for it, if any."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        kept = kept_open.get(str(path))
        if kept is None or not os.path.isdir("/proc/self/fd"):
            raise
        return open(f"/proc/self/fd/{kept}", "rb")


@contextmanager
def open_stream(path, compression: str | None, kept_open: Mapping[str, int] | None = None) -> Iterator:
    with open_log(path, kept_open or {}) as raw:
        if compression == "zstd":
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
                yield raw, ZstdStream(stream, raw)
        else:
            yield raw, raw


class CompressedDataError(OSError):
    """A compressed file that cannot be decompressed to its end: corrupt, or ``cut_short``."""

    def __init__(self, reason: str, cut_short: bool = False):
        super().__init__(reason)
        self.cut_short = cut_short


class ZstdStream:
    """The decompressed bytes of a zstd file (``stream``, read across frames from ``raw``).

    The decompressor takes a file cut short inside a frame for its end, without
    a word: that is told here, from the frame and block headers, once it gives
    no more. Both that and corrupt data are ``CompressedDataError``s."""

    def __init__(self, stream, raw):
        self.stream, self.raw = stream, raw

    def read(self, size: int = -1) -> bytes:
        import zstandard

        try:
            data = self.stream.read(size)
        except zstandard.ZstdError as exc:
            raise CompressedDataError(f"its zstd data is corrupt ({exc})") from None
        if not data and size and zstd_cut_short(self.raw.fileno()):
            raise CompressedDataError("its zstd data is cut short (the file ends inside a frame)", cut_short=True)
        return data

    def seek(self, offset: int) -> int:
        import zstandard

        try:
            return self.stream.seek(offset)
        except zstandard.ZstdError as exc:
            raise CompressedDataError(f"its zstd data is corrupt ({exc})") from None


ZSTD_MAGIC = 0xFD2FB528
SKIPPABLE_MAGIC = 0x184D2A5  # the first 28 bits of a skippable frame's magic number


def zstd_cut_short(fd: int) -> bool:
    """Whether the zstd frames of the file ``fd`` end inside a frame (RFC 8878: a frame is
    its header, then blocks up to the one marked last, then its checksum if it has one).
    Only headers are read. What is no zstd data at all is the decompressor's to report."""
    size = os.fstat(fd).st_size
    at = 0
    while at < size:
        head = os.pread(fd, 8, at)
        magic = int.from_bytes(head[:4], "little")
        if len(head) < 5 or (magic >> 4 == SKIPPABLE_MAGIC and len(head) < 8):
            return True
        if magic >> 4 == SKIPPABLE_MAGIC:
            at += 8 + int.from_bytes(head[4:8], "little")
            continue
        if magic != ZSTD_MAGIC:
            return False
        descriptor = head[4]
        single_segment = descriptor >> 5 & 1
        at += 5 + (not single_segment) + (0, 1, 2, 4)[descriptor & 3] + (single_segment, 2, 4, 8)[descriptor >> 6]
        last = False
        while not last:
            block = os.pread(fd, 3, at)
            if len(block) < 3:
                return True
            header = int.from_bytes(block, "little")
            last = bool(header & 1)
            at += 3 + (1 if header >> 1 & 3 == 1 else header >> 3)  # (an RLE block holds one byte)
        at += 4 * (descriptor >> 2 & 1)
    return at > size


def _skip(stream, count: int) -> None:
    while count > 0:
        block = stream.read(min(count, 1 << 20))
        if not block:
            return
        count -= len(block)
