"""Helpers shared by the line-oriented sources (Codex, Gemini).

Everything here is pure: bytes and strings in, values out.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shlex
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Iterator
from urllib.parse import urlsplit

import orjson

from ..records import LineError, Message, Position, Session, TitleCandidate
from .lines import Line, decode_object, dump_json, load_json

# -- decoding ---------------------------------------------------------------

BLOB_MIN_CHARS = 1024  # a base64 run at least this long is a blob
BLOB_SCAN_MIN_LINE = BLOB_MIN_CHARS + 2  # shorter lines cannot hold one

_BLOB = re.compile(
    rb'"(?:data:([A-Za-z0-9.+/-]{1,64});base64,)?([A-Za-z0-9+/]{%d,}={0,2})"'
    % BLOB_MIN_CHARS
)


def base64_size(text: str | bytes) -> int:
    """Decoded size of a base64 text."""
    pad = text[-2:].count("=" if isinstance(text, str) else b"=")
    return len(text) * 3 // 4 - pad


def blob_label(mime: str | None, size: int) -> str:
    """``[image image/png 1234 bytes]``: what inline data was, and its
    decoded size; never the data itself."""
    kind = "image" if mime and mime.startswith("image/") else "data"
    return f"[{kind} {mime} {size} bytes]" if mime else f"[{kind} {size} bytes]"


_UNLABELLED_BLOB = re.compile(r"^\[data (\d+) bytes\]$")
DATA_URL_MIN_CHARS = 64  # a data: URL inside a text is replaced from this payload size on
_DATA_URL = re.compile(rb"data:([A-Za-z0-9.+/-]{1,64});base64,([A-Za-z0-9+/]{%d,}={0,2})" % DATA_URL_MIN_CHARS)


def _blob_placeholder(match: re.Match) -> bytes:
    mime = match.group(1)
    return b'"%s"' % blob_label(mime.decode() if mime else None, base64_size(match.group(2))).encode()


def _data_url_placeholder(match: re.Match) -> bytes:
    return blob_label(match.group(1).decode(), base64_size(match.group(2))).encode()


def strip_inline_blobs(line: bytes) -> bytes:
    """``line`` with every long base64 string (inline images, data URLs)
    replaced by a ``"[image image/png N bytes]"`` placeholder, and every
    ``data:<mime>;base64,`` URL inside a longer text (a markdown image) by
    the same placeholder without quotes.

    Works on the raw bytes so the blobs are never decoded or held as Python
    strings; short lines are returned unchanged without scanning.
    """
    if len(line) >= BLOB_SCAN_MIN_LINE:
        line = _BLOB.sub(_blob_placeholder, line)
    if b";base64," in line:
        line = _DATA_URL.sub(_data_url_placeholder, line)
    return line


def blob_note(value: Any, mime: Any = None) -> str:
    """The placeholder for an inline data value or ``data:`` URL (values
    already replaced by ``strip_inline_blobs`` are returned as they are)."""
    mime = mime if isinstance(mime, str) and mime else None
    if not isinstance(value, str):
        return blob_label(mime, 0)
    unlabelled = _UNLABELLED_BLOB.match(value)
    if unlabelled and mime:  # stripped before its mime type was known
        return blob_label(mime, int(unlabelled.group(1)))
    if value.startswith("[") and value.endswith("]"):
        return value
    if value.startswith("data:"):
        header, _, value = value[5:].partition(",")
        mime = header.split(";", 1)[0] or mime
    return blob_label(mime, base64_size(value))


def decode_line(line: bytes | None, position: Position) -> dict | LineError:
    """The JSON object on ``line`` (inline blobs replaced), or a LineError
    (also for ``None``, the reader's stand-in for an oversized line)."""
    return decode_object(Line(strip_inline_blobs(line) if line is not None else None, position))


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def is_json_object(line: bytes) -> bool:
    """Whether ``line`` is one well-formed JSON object, checked without
    building its strings: every string literal is emptied first, so a record
    of megabytes is validated through a skeleton of a few kilobytes."""
    skeleton = _JSON_STRING.sub(b'""', line)
    try:
        return isinstance(orjson.loads(skeleton), dict)
    except orjson.JSONDecodeError:
        return False


def looks_complete(line: bytes) -> bool:
    """Cheap check that a line we skip without decoding is not truncated."""
    return line.rstrip().endswith(b"}")


def project_slug(path: Any) -> str | None:
    """The project name Claude Code would give a working folder (its
    ``projects/`` folder name: every character but ASCII letters and digits
    a dash), so sessions of every source group by the same key.

    Sources that know where a session started name its project with it; the
    store only falls back to the most used folder, which moves as a live
    file grows.
    """
    if not isinstance(path, str) or not path:
        return None
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in path)


def absolute_path(path: str, cwd: str | None) -> str:
    """``path`` made absolute against ``cwd`` when it is relative and cwd is known."""
    if not cwd or path.startswith(("/", "~")) or ntpath_like(path):
        return path
    return posixpath.normpath(posixpath.join(cwd, path))


def ntpath_like(path: str) -> bool:
    return len(path) > 2 and path[1] == ":" and path[2] in "\\/"


def normal_path(path: str) -> str:
    """``path`` without doubled slashes, ``.`` segments or a trailing slash (the root keeps its own).

    Only the spelling changes: ``..`` stays (``a/link/../b`` need not be ``a/b``), as do ``~``,
    symlinks and backslashes (a Windows path is matched as written). The store keeps the paths
    of tool calls in this form (``writer``), so one file has one spelling; the call's input keeps
    the agent's.
    """
    if "/" not in path:
        return path
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if path.startswith("/"):
        return "/" + "/".join(parts)
    if len(parts) == 1 and len(path) > 2 and path[1] == ":":  # a drive's root, C:/
        return parts[0] + "/"
    return "/".join(parts) or "."


def load_document(data: bytes, items_key: str, what: str) -> dict | LineError:
    """A whole-file JSON document holding a list under ``items_key``, or why not."""
    whole = Position(0, 0, len(data))
    try:
        value = load_json(data)
    except orjson.JSONDecodeError as exc:
        return LineError(whole, f"invalid JSON: {exc}")
    if not isinstance(value, dict) or not isinstance(value.get(items_key), list):
        return LineError(whole, f"not a {what} document")
    return value


_SPACE = re.compile(r"[ \t\n\r]*")
_ITEM_DECODER = json.JSONDecoder(strict=False)


def item_positions(data: bytes, items_key: str, count: int) -> list[Position]:
    """Where each of the ``count`` items of a document's top-level ``items_key``
    list lies: line = its 1-based index, offset and length = its bytes, so a
    re-read of one item (``raw``) finds that item, not the whole file. A
    document the standard library cannot walk (nested deeper than Python
    recurses) gives every item the whole file as its place."""
    text = data.decode("utf-8", "surrogateescape")
    try:
        spans = _item_spans(text, items_key)
    except (ValueError, IndexError, RecursionError):
        spans = None
    return _positions(data, text, spans, count)


def array_positions(data: bytes, count: int) -> list[Position]:
    """Where each of the ``count`` items of a top-level JSON array lies, as ``item_positions``
    has them (every item gets the whole file when it cannot be walked)."""
    text = data.decode("utf-8", "surrogateescape")
    try:
        at = _SPACE.match(text, 1 if text.startswith("\ufeff") else 0).end()
        spans = _array_spans(text, at)[0] if text[at] == "[" else None
    except (ValueError, IndexError, RecursionError):
        spans = None
    return _positions(data, text, spans, count)


def _positions(data: bytes, text: str, spans: list[tuple[int, int]] | None, count: int) -> list[Position]:
    if spans is None or len(spans) != count:
        return [Position(index, 0, len(data)) for index in range(1, count + 1)]
    positions, chars, offset = [], 0, 0
    for index, (start, end) in enumerate(spans, start=1):
        offset += _byte_length(text[chars:start])
        length = _byte_length(text[start:end])
        positions.append(Position(index, offset, length))
        offset, chars = offset + length, end
    return positions


def _byte_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _array_spans(text: str, at: int) -> tuple[list[tuple[int, int]], int]:
    """``(start, end)`` character offsets of each item of the JSON array opening at ``at``,
    and where the array ends."""
    space, decode = _SPACE.match, _ITEM_DECODER.raw_decode
    found, at = [], space(text, at + 1).end()
    while text[at] != "]":
        start = at
        _, at = decode(text, at)
        found.append((start, at))
        at = space(text, at).end()
        if text[at] == ",":
            at = space(text, at + 1).end()
    return found, at + 1


def _item_spans(text: str, items_key: str) -> list[tuple[int, int]] | None:
    """``(start, end)`` character offsets of each item of the last top-level ``items_key`` list."""
    space, decode = _SPACE.match, _ITEM_DECODER.raw_decode
    at = space(text, 1 if text.startswith("\ufeff") else 0).end()
    if text[at] != "{":
        return None
    found, at = None, space(text, at + 1).end()
    while text[at] != "}":
        key, at = decode(text, at)
        at = space(text, at).end()
        if text[at] != ":":
            return None
        at = space(text, at + 1).end()
        if key == items_key and text[at] == "[":
            found, at = _array_spans(text, at)
        else:
            _, at = decode(text, at)
        at = space(text, at).end()
        if text[at] == ",":
            at = space(text, at + 1).end()
    return found


def strings_in(value: Any) -> Iterator[str]:
    """Every string inside nested lists and dicts, in order, unescaped (without
    recursion: JSON is read up to 1,024 levels deep, deeper than Python recurses)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(item.values()))


def call_text(name: str, arguments: Any) -> str:
    """A tool call's searchable text: its name, then each string of its arguments on a line.

    Arguments given as JSON text are decoded first: indexed as JSON, an
    escaped newline would glue the next word to an ``n`` (``\\ncat``).
    Text that is not JSON (a patch, a shell line) is kept as it is.
    """
    if isinstance(arguments, str):
        decoded = loads_or_none(arguments)
        if isinstance(decoded, (dict, list)):
            arguments = decoded
    return "\n".join([name, *strings_in(arguments)])


def as_json(value: Any) -> str:
    return dump_json(value).decode()  # (orjson.dumps writes only 255 levels of nesting)


def loads_or_none(text: Any) -> Any:
    if not isinstance(text, (str, bytes)):
        return None
    try:
        return load_json(text)
    except orjson.JSONDecodeError:
        return None


def first_prompt_title(message: Message, typed: str | None = None) -> TitleCandidate:
    """The title candidate made of a session's first real prompt (``typed``: what the
    user typed, when the log keeps it apart from what the model was sent)."""
    return TitleCandidate(
        message.session_id,
        "first_prompt",
        (typed or message.text).strip(),
        timestamp=message.timestamp,
        leaf_uuid=message.uuid,
        position=message.position,
    )


# -- time and ids -----------------------------------------------------------


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_ms(value: Any) -> int | None:
    """Milliseconds since the epoch of an ISO 8601 timestamp, else None."""
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return (moment - EPOCH) // timedelta(milliseconds=1)


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-([0-9a-fA-F])[0-9a-fA-F]{3}-")


def uuid7_ms(value: Any) -> int | None:
    """The creation time (ms) embedded in a UUIDv7 string, else None."""
    if not isinstance(value, str):
        return None
    match = _UUID.match(value)
    if not match or match.group(1) != "7":
        return None
    return int(value[:8] + value[9:13], 16)


def said_end(records: list, end: Session) -> None:
    """Add that a line says its session went on to ``end.ended_at``: to a record of the
    line's about the same session (no other end said), else as a record of its own."""
    for record in records:
        if type(record) is Session and record.id == end.id and record.ended_at is None:
            record.ended_at = end.ended_at
            return
    records.append(end)


def first_text(*values: Any) -> str | None:
    """The first value that is a non-empty string."""
    for value in values:
        if isinstance(value, str) and value:
            return value
    return None


MAX_LABEL = 100


def label(value: Any) -> str | None:
    """A short setting's value as a log names it (a reasoning effort): a non-empty
    string, cut at ``MAX_LABEL`` characters."""
    if not isinstance(value, str) or not value:
        return None
    return value if len(value) <= MAX_LABEL else value[: MAX_LABEL - 1] + "…"


def dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]…`` or None when any step is missing or not a dict."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


# -- repositories -----------------------------------------------------------

_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?([^:/\s]+):(?!//)([^\s]+)$")


def normalize_repository(url: Any) -> str | None:
    """``host/owner/repo`` for a git remote URL (https, ssh, scp-like).

    Credentials, ports and a trailing ``.git`` are dropped; the host is
    lower-cased. Values that are not URLs give None.
    """
    if not isinstance(url, str):
        return None
    url = url.strip()
    if not url or any(c.isspace() for c in url):
        return None
    if "://" in url:
        parts = urlsplit(url)
        host, path = (parts.hostname or ""), parts.path
    else:
        match = None if ntpath_like(url) else _SCP_LIKE.match(url)
        if not match:
            return None
        host, path = match.group(1), match.group(2)
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.rstrip("/")
    if not host or not path:
        return None
    return f"{host.lower()}/{path}"


# -- file paths -------------------------------------------------------------

_PATCH_HEADER = re.compile(
    r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.MULTILINE
)


def patch_paths(text: str) -> list[str]:
    """Every path named by an apply_patch header in ``text``."""
    if "*** " not in text:
        return []
    return _PATCH_HEADER.findall(text)


_REDIRECTS = {">", ">>", ">|"}
SHELL_SCAN_CHARS = 8192  # commands that write files say so early


def shell_written_paths(command: str) -> list[str]:
    """Files a shell command obviously writes.

    Only output redirections (``> f``, ``>> f``) and ``tee f`` are
    recognised, outside quotes; ``/dev/*`` targets are ignored. Heredoc
    bodies are never scanned, nor anything after the first 8 KB.
    """
    head = _before_heredoc_body(command)[:SHELL_SCAN_CHARS]
    if ">" not in head and "tee" not in head:
        return []
    lexer = shlex.shlex(head, posix=True, punctuation_chars=True)
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    found = []
    for i, token in enumerate(tokens[:-1]):
        if token in _REDIRECTS:
            found.append(tokens[i + 1])
        elif token == "tee":
            rest = [t for t in tokens[i + 1 :] if not t.startswith("-")]
            if rest and rest[0] not in {"|", "&&", ";", "||"}:
                found.append(rest[0])
    return [p for p in found if not p.startswith(("/dev/", "&")) and p not in {"|", ";"}]


def _before_heredoc_body(command: str) -> str:
    """``command`` up to the end of the line that opens its first heredoc."""
    start = command.find("<<")
    if start < 0:
        return command
    end = command.find("\n", start)
    return command if end < 0 else command[:end]


def said_key(role: str, text: str) -> str:
    """A short digest of what a user or assistant said, to recognise it repeated."""
    return hashlib.blake2b(f"{role}\0{text}".encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def unique(values: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        if value:
            seen.setdefault(value, None)
    return list(seen)


# -- usage ------------------------------------------------------------------


def usage_fields(
    *, input_total: int, cached: int, output: int, cache_write: int = 0
) -> dict[str, int | None]:
    """Token counts in the ``Message`` convention (Anthropic's):
    ``input_tokens`` excludes cache reads and writes, which are counted in
    ``cache_read_tokens`` / ``cache_creation_tokens``."""
    return {
        "input_tokens": max(input_total - cached - cache_write, 0),
        "output_tokens": output,
        "cache_read_tokens": cached,
        "cache_creation_tokens": cache_write or None,
    }


SQLITE_INTEGERS = range(-(2**63), 2**63)


def int_or_none(value: Any) -> int | None:
    """``value`` when it is an integer SQLite can store, else None (a bool is no integer here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value in SQLITE_INTEGERS else None


def as_int(value: Any) -> int:
    found = int_or_none(value)
    return 0 if found is None else found


def thinking_meta(thinking: str, text: str) -> dict | None:
    """``{"thinking_chars": n}`` when a message's ``text`` opens with the model's
    ``thinking`` and goes on with what it said (``query.text.split_thinking``)."""
    opens = thinking and len(text) > len(thinking) and text.startswith(thinking)
    return {"thinking_chars": len(thinking)} if opens else None
