"""Read JSONL bytes line by line with byte positions and bounded memory."""

from __future__ import annotations

import codecs
import json
import re
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

import orjson

from ..records import LineError, Position

CHUNK = 1 << 20
MAX_LINE = 64 << 20  # longer lines are skipped without being buffered


@dataclass(slots=True)
class Line:
    data: bytes | None  # None when the line was longer than ``max_line``
    position: Position
    terminated: bool = True


BOM = b"\xef\xbb\xbf"


def read_lines(
    stream: BinaryIO,
    start: int = 0,
    first_line_no: int = 1,
    *,
    max_line: int = MAX_LINE,
    chunk: int = CHUNK,
) -> Iterator[Line]:
    """Yield the lines of ``stream`` from byte ``start`` (a line boundary).

    A final line without a newline is yielded with ``terminated=False`` so the
    caller can decide whether a writer is still busy with it. A line longer
    than ``max_line`` is yielded with ``data=None`` and is never held whole.
    A UTF-8 byte order mark opening the file (an editor's) is left out of the
    first line's data, not of its position.
    """
    lines = _split_lines(stream, start, first_line_no, max_line, chunk)
    if start == 0:
        for line in lines:
            if line.data is not None and line.data.startswith(BOM):
                line.data = line.data[len(BOM):]
            yield line
            break
    yield from lines


def _split_lines(stream: BinaryIO, start: int, first_line_no: int, max_line: int, chunk: int) -> Iterator[Line]:
    offset = start
    line_no = first_line_no
    parts: list[bytes] = []
    size = 0
    oversized = False
    while True:
        block = stream.read(chunk)
        if not block:
            break
        begin = 0
        while True:
            nl = block.find(b"\n", begin)
            if nl < 0:
                tail = block[begin:]
                size += len(tail)
                if size > max_line:
                    oversized = True
                    parts.clear()
                elif tail:
                    parts.append(tail)
                break
            piece = block[begin:nl]
            length = size + len(piece)
            if oversized or length > max_line:
                data = None
            else:
                data = b"".join(parts) + piece if parts else piece
            yield Line(data, Position(line_no, offset, length))
            offset += length + 1
            line_no += 1
            parts.clear()
            size = 0
            oversized = False
            begin = nl + 1
    if size:
        data = None if oversized else b"".join(parts)
        yield Line(data, Position(line_no, offset, size), terminated=False)


# The reason of a line kept with repairs (``records.LineRepaired``) starts so.
REPAIRED = "kept with repairs: "


def repair_utf8(data: bytes) -> tuple[bytes, list[tuple[int, int]]] | None:
    """None when ``data`` is UTF-8 (the usual case: an ASCII line is known so at
    once, any other is decoded strictly); else ``data`` with each sequence that is
    not UTF-8 replaced by U+FFFD (a Latin-1 byte in a tool's output, a multi-byte
    character cut short), as ``bytes.decode(errors="replace")`` replaces them, and
    the ``(start, end)`` byte spans of ``data`` that were replaced, in order."""
    if data.isascii():
        return None
    try:
        data.decode()
        return None
    except UnicodeDecodeError:
        pass
    _noted.spans = spans = []
    try:
        text = data.decode("utf-8", "obelisk-noted-replace")
    finally:
        _noted.spans = None
    return text.encode(), spans


def as_utf8(data: bytes) -> bytes:
    """``data`` as the reader hands it to a parser: bytes that are not UTF-8 read as U+FFFD
    (``repair_utf8``), so a line read again elsewhere (a fork's copy of its parent's
    lines, compared with them) is the line its parser read."""
    repaired = repair_utf8(data)
    return repaired[0] if repaired else data


def repair_note(spans: list[tuple[int, int]], start: int = 0, what: str = "line") -> str:
    """What ``repair_utf8`` changed, for a warning: how many bytes, in how many places,
    the first at which byte of the line (or item) that begins at byte ``start``."""
    count = sum(end - begin for begin, end in spans)
    places = f" in {len(spans)} places" if len(spans) > 1 else ""
    return (
        f"{REPAIRED}{count} byte{'s' if count > 1 else ''} that {'are' if count > 1 else 'is'} not UTF-8 "
        f"read as U+FFFD{places} (the first {spans[0][0] - start} bytes into the {what})"
    )


def repaired_offset(spans: list[tuple[int, int]], offset: int) -> int:
    """Where byte ``offset`` of the original bytes lies in the repaired bytes (each span is 3 bytes there)."""
    return offset + sum(3 - (end - start) for start, end in spans if end <= offset)


def original_offset(spans: list[tuple[int, int]], offset: int) -> int:
    """Where byte ``offset`` of the repaired bytes came from in the original bytes
    (inside a replacement character: the start of the bytes it replaced)."""
    shift = 0  # how much further on the repaired bytes are before the next span
    for start, end in spans:
        at = start + shift
        if offset <= at:
            break
        if offset < at + 3:
            return start
        shift += 3 - (end - start)
    return offset - shift


_noted = threading.local()


def _noted_replace(exc: UnicodeDecodeError) -> tuple[str, int]:
    _noted.spans.append((exc.start, exc.end))
    return "\ufffd", exc.end


codecs.register_error("obelisk-noted-replace", _noted_replace)


def load_json(data: bytes | str) -> Any:
    """``orjson.loads``, except that an escaped lone surrogate (``"\\ud83d"``: a
    JavaScript string cut inside an emoji, as a tool output clipped by length)
    is read as U+FFFD instead of failing the whole line, and so is an escaped
    NUL (``"\\u0000"``): SQLite's JSON functions end a text at a NUL, so an id
    holding one was never found again through ``json_each`` (an ingest deriving
    a session of such an id looped forever)."""
    if (b"\\u0000" if isinstance(data, bytes) else "\\u0000") in data:
        data = _ESCAPED_NUL.sub(rb"\1\\ufffd", data) if isinstance(data, bytes) else _ESCAPED_NUL_TEXT.sub(r"\1\\ufffd", data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
        try:  # read as orjson reads the rest: no NaN or infinity, big integers as floats
            return _without_lone_surrogates(
                json.loads(data, parse_constant=_refused, parse_int=_as_orjson_int, parse_float=_finite)
            )
        except (ValueError, RecursionError):  # (nested deeper than Python goes)
            raise exc from None


def dump_json(value: Any) -> bytes:
    """``orjson.dumps`` (compact JSON), also for a value nested deeper than orjson
    writes: it reads 1,024 levels of nesting but writes only 255, so a tool's
    input or output nested deeper, valid JSON on its line, is written here, the
    same bytes, without recursion."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        if "Recursion limit" not in str(exc):
            raise
    out = []
    stack = [value]  # values still to write; bytes on it are written as they are
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):
            out.append(item)
        elif isinstance(item, dict):
            stack.append(b"}")
            for i, (key, v) in reversed(list(enumerate(item.items()))):
                stack.append(v)
                stack.append((b"," if i else b"") + orjson.dumps(key) + b":")
            stack.append(b"{")
        elif isinstance(item, (list, tuple)):
            stack.append(b"]")
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(b",")
            stack.append(b"[")
        else:
            out.append(orjson.dumps(item))
    return b"".join(out)


# "\u0000" not written as text (after an escaped backslash): keeps the backslashes before it
_ESCAPED_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")
_ESCAPED_NUL_TEXT = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")


def _refused(text: str):
    raise ValueError(f"{text} is no JSON value")


def _as_orjson_int(text: str) -> int | float:
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 64) else float(value)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is infinite as a double")
    return value


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


def decode_object(line: Line) -> dict | LineError:
    """The JSON object on ``line``, or a ``LineError`` saying why not.

    Invalid UTF-8, nesting deeper than orjson allows, a value that is not
    an object and a line too long to hold all become errors with a reason,
    never exceptions; an escaped lone surrogate is U+FFFD (``load_json``).
    """
    if line.data is None:
        return LineError(
            line.position,
            f"line of {line.position.byte_length} bytes exceeds the {MAX_LINE} byte limit",
        )
    try:
        value = load_json(line.data)
    except orjson.JSONDecodeError as exc:
        return LineError(line.position, f"invalid JSON: {exc}")
    if not isinstance(value, dict):
        return LineError(line.position, f"not a JSON object: {type(value).__name__}")
    return value
