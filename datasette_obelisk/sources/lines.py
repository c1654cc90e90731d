"""Read JSONL bytes line by line with byte positions and bounded memory."""

from __future__ import annotations

import json
import re
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
