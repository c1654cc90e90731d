"""Small text and time helpers shared by the search and read modules.

    to_ms(timestamp) -> int | None          ISO-8601 (or epoch ms) to epoch ms
    to_iso(ms) -> str                       epoch ms to ``YYYY-MM-DDTHH:MM:SS.mmmZ``
    literal_pattern(text) -> re.Pattern     literal, case-insensitive, any run of
                                            whitespace matching any other
    snippet(marked, width) -> dict          ``{"text", "matches"}`` from text whose
                                            matches are wrapped in the FTS5 markers
    approximate_snippet(text, terms, width) the same without FTS5: the terms found
                                            as word prefixes (for huge texts)
    middle_truncate(text, max_chars) -> str keep head and tail, say what was cut

Snippets are plain text, never HTML. ``matches`` are ``[start, end)`` offsets
in code points (Python string indices) into ``text``; callers escape the text
and highlight those ranges.
    parse_json(text) -> value               JSON text decoded; undecodable text as it is
"""

from __future__ import annotations

import json

import re
from datetime import datetime, timezone

from .. import cjk
from .fts import MARK_END, MARK_START, first_word_start, word_start_pattern

SNIPPET_CHARS = 240
_MARKS = re.compile(f"({MARK_START}|{MARK_END})")
ELLIPSIS = "…"


def to_ms(value) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(round(moment.timestamp() * 1000))


def to_iso(ms: int | float) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def literal_pattern(text: str) -> re.Pattern:
    pieces = text.split()
    return re.compile(r"\s+".join(re.escape(piece) for piece in pieces), re.IGNORECASE)


def snippet(marked: str, width: int = SNIPPET_CHARS) -> dict:
    """A window of ``width`` characters with the first match a third of the way in
    (``marked`` may be the text as the indexes read it: CJK characters set apart)."""
    marked = cjk.unsplit(marked)
    first = max(0, marked.find(MARK_START))
    low, high = max(0, first - 2 * width), first + 4 * width
    plain: list[str] = []
    matches: list[list[int]] = []
    length = 0
    start = None
    for part in _MARKS.split(" ".join(marked[low:high].split())):
        if part == MARK_START:
            start = length
        elif part == MARK_END:
            if start is not None and length > start:
                matches.append([start, length])
            start = None
        else:
            plain.append(part)
            length += len(part)
    return _window("".join(plain), matches, width, low > 0, high < len(marked))


def approximate_snippet(text: str, terms, width: int = SNIPPET_CHARS) -> dict:
    """Like ``snippet`` but finds the terms itself: each as the start of a word."""
    pattern = word_start_pattern(terms) if terms else None
    first = first_word_start(text, terms or ()) or 0
    low, high = max(0, first - 2 * width), first + 4 * width
    if low > 0 and text[low - 1].isalnum() and not cjk.is_apart(text[low - 1]):  # not from inside a word
        boundary = _NOT_WORD.search(text, low, first)
        low = boundary.start() if boundary else first
    flat = " ".join(text[low:high].split())
    matches = [[m.start(), m.end()] for m in pattern.finditer(flat)] if pattern else []
    return _window(flat, matches, width, low > 0, high < len(text))


_NOT_WORD = re.compile(r"[\W_]")


def _window(text: str, matches: list[list[int]], width: int, cut_before=False, cut_after=False) -> dict:
    first = matches[0][0] if matches else 0
    begin = max(0, min(first - width // 3, len(text) - width))
    end = begin + width
    head = ELLIPSIS if begin > 0 or cut_before else ""
    tail = ELLIPSIS if end < len(text) or cut_after else ""
    shift = len(head) - begin
    kept = [
        [max(s, begin) + shift, min(e, end) + shift] for s, e in matches if s < end and e > begin
    ]
    return {"text": head + text[begin:end] + tail, "matches": kept}


def middle_truncate(text: str, max_chars: int) -> str:
    """``text`` whole when short enough, else head + ``…N chars truncated…`` + tail."""
    if len(text) <= max_chars:
        return text
    kept = max_chars
    while True:
        marker = f"\n…{len(text) - kept} chars truncated…\n"
        next_kept = max(0, max_chars - len(marker))
        if next_kept == kept:
            break
        kept = next_kept
    head = (kept + 1) // 2
    tail = kept - head
    return text[:head] + marker + (text[-tail:] if tail else "")


# JSON nested deeper stays text in an answer: a log line holds up to 1,024 levels,
# and Python decodes and encodes JSON recursively (about 1,000 levels, fewer in
# a deep stack), so a value decoded in one place failed an answer encoding it.
MAX_DECODED_DEPTH = 400


def parse_json(value):
    """JSON text decoded; None stays None and undecodable text is returned as is,
    and so is JSON nested more than ``MAX_DECODED_DEPTH`` levels deep."""
    if value is None:
        return None
    try:
        decoded = json.loads(value)
    except (ValueError, RecursionError):
        return value
    return value if nested_deeper(decoded, value, MAX_DECODED_DEPTH) else decoded


def nested_deeper(decoded, text: str, depth: int) -> bool:
    """Whether ``decoded`` (the value of JSON ``text``) nests more than ``depth``
    lists and objects; text with fewer brackets is not even looked at."""
    opening = (b"[", b"{") if isinstance(text, (bytes, bytearray)) else ("[", "{")  # (a BLOB json.loads reads too)
    if text.count(opening[0]) + text.count(opening[1]) <= depth:
        return False
    level = [(decoded, 1)]
    while level:
        value, at = level.pop()
        if at > depth:
            return True
        if isinstance(value, dict):
            level.extend((v, at + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            level.extend((v, at + 1) for v in value if isinstance(v, (dict, list)))
    return False


def split_thinking(text: str, meta_json: str | None) -> tuple[str, str]:
    """``(thinking, said)`` of a message whose text opens with the model's thinking
    (``meta_json`` holds ``thinking_chars``: a Gemini reply with its thoughts, an
    early Claude Code line with thinking and text); else ``("", text)``."""
    chars = (json.loads(meta_json).get("thinking_chars") or 0) if meta_json else 0
    return (text[:chars], text[chars:].lstrip("\n")) if chars else ("", text)
