"""The session-level search index: one small document per session.

Grouped search must pick the best sessions without ranking every matching
message (that costs time linear in the matches; see bench/README.md). So
each session also has one *bag of words* document in ``session_docs_fts``:
every distinct word of the session once, repeated ``1 + log2(count)`` times
so bm25 still sees how often a word occurs. Column ``body`` holds the words
of ordinary messages, ``meta`` those of ``is_meta`` or ``hidden`` ones.
``session_docs.body_words`` / ``meta_words`` keep the counts behind the bags
(JSON ``{word: count}``, words as written, lower-cased), which also tell the
search which real words a prefix stands for in that session.

To keep updates cheap for long, growing sessions the counts are kept per
*chunk* of consecutive messages (``session_chunks``, by ``messages.id``): an
update recounts only the chunks whose messages changed (an append touches
the last one), and adjusts the session's counts by the difference.

A bag says that a session *may* match: query/search.py confirms each
candidate with ``messages_fts`` inside the session's id range.

    update_session_documents(conn, session_ids) -> int
        Bring these sessions' documents up to date, inside the caller's
        transaction (derive calls it for every session it derives).
        Returns the number of chunks written or deleted; when that is not
        zero it bumps ``obelisk_state.generation``.
    rebuild_session_documents(conn) -> int
        Every session from scratch (migration, repair, benchmarks).
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import orjson

CHUNK_MESSAGES = 256
CHUNK_CHARS = 256_000
MAX_REPEAT = 8
IS_META_SQL = "(is_meta != 0 OR visibility = 'hidden')"

# Every ASCII character FTS5's unicode61 tokenizer treats as a separator.
# Other characters are left alone: FTS5 splits a bag word again if needed.
_SEPARATORS = {c: " " for c in range(128) if not chr(c).isalnum()}


@dataclass(frozen=True)
class ChunkPlan:
    first_id: int
    last_id: int
    messages: int
    chars: int
    meta_messages: int

    def key(self) -> tuple:
        return (self.first_id, self.last_id, self.messages, self.chars, self.meta_messages)


def plan_chunks(rows: Iterable[tuple[int, int, int]]) -> list[ChunkPlan]:
    """Cut ``(message id, text length, is meta)`` rows, in id order, into chunks."""
    plans: list[ChunkPlan] = []
    first = last = None
    count = chars = meta = 0
    for message_id, length, is_meta in rows:
        length = length or 0
        if count and (count >= CHUNK_MESSAGES or chars + length > CHUNK_CHARS):
            plans.append(ChunkPlan(first, last, count, chars, meta))
            first, count, chars, meta = None, 0, 0, 0
        if first is None:
            first = message_id
        last = message_id
        count += 1
        chars += length
        meta += 1 if is_meta else 0
    if count:
        plans.append(ChunkPlan(first, last, count, chars, meta))
    return plans


def count_words(texts: Iterable[str]) -> Counter:
    counts: Counter = Counter()
    for text in texts:
        if text:
            counts.update(text.lower().translate(_SEPARATORS).split())
    return counts


def bag(counts: dict) -> str:
    """Each word once, repeated by the log of its count, in a stable order."""
    return " ".join(
        " ".join([word] * min(MAX_REPEAT, 1 + int(math.log2(count))))
        for word, count in sorted(counts.items())
        if count > 0
    )


def update_session_documents(conn: sqlite3.Connection, session_ids: Iterable[str]) -> int:
    changed = 0
    for session_id in sorted(set(session_ids)):
        changed += _update_session(conn, session_id)
    if changed:
        conn.execute(
            "INSERT INTO obelisk_state (key, value) VALUES ('generation', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )
    return changed


def rebuild_session_documents(conn: sqlite3.Connection) -> int:
    conn.execute("DELETE FROM session_chunks")
    conn.execute("DELETE FROM session_docs")
    sessions = [row[0] for row in conn.execute("SELECT DISTINCT session_id FROM messages")]
    return update_session_documents(conn, sessions)


def _update_session(conn: sqlite3.Connection, session_id: str) -> int:
    rows = conn.execute(
        f"SELECT id, text_length, {IS_META_SQL} FROM messages WHERE session_id = ? ORDER BY id",
        [session_id],
    ).fetchall()
    plans = plan_chunks(rows)
    stored = {
        row[0]: row
        for row in conn.execute(
            "SELECT chunk, first_id, last_id, messages, chars, meta_messages, body_words, meta_words "
            "FROM session_chunks WHERE session_id = ?",
            [session_id],
        )
    }
    body_delta: Counter = Counter()
    meta_delta: Counter = Counter()
    changed = 0
    for number, plan in enumerate(plans):
        old = stored.pop(number, None)
        if old is not None and tuple(old[1:6]) == plan.key():
            continue
        if old is not None:
            body_delta.subtract(orjson.loads(old[6]))
            meta_delta.subtract(orjson.loads(old[7]))
        body, meta = _count_chunk(conn, session_id, plan)
        body_delta.update(body)
        meta_delta.update(meta)
        conn.execute(
            "INSERT OR REPLACE INTO session_chunks (session_id, chunk, first_id, last_id, messages, "
            "chars, meta_messages, body_words, meta_words) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [session_id, number, *plan.key(), orjson.dumps(body).decode(), orjson.dumps(meta).decode()],
        )
        changed += 1
    for number, old in stored.items():
        body_delta.subtract(orjson.loads(old[6]))
        meta_delta.subtract(orjson.loads(old[7]))
        conn.execute("DELETE FROM session_chunks WHERE session_id = ? AND chunk = ?", [session_id, number])
        changed += 1
    if changed:
        _write_document(conn, session_id, plans, body_delta, meta_delta)
    return changed


def _count_chunk(conn, session_id: str, plan: ChunkPlan) -> tuple[Counter, Counter]:
    body: list[str] = []
    meta: list[str] = []
    for text, is_meta in conn.execute(
        f"SELECT text, {IS_META_SQL} FROM messages WHERE id BETWEEN ? AND ? AND session_id = ?",
        [plan.first_id, plan.last_id, session_id],
    ):
        (meta if is_meta else body).append(text)
    return count_words(body), count_words(meta)


def _apply(stored: str | None, delta: Counter) -> dict:
    counts = Counter(orjson.loads(stored)) if stored else Counter()
    counts.update(delta)
    return {word: count for word, count in counts.items() if count > 0}


def _write_document(conn, session_id: str, plans: list[ChunkPlan], body_delta, meta_delta) -> None:
    old = conn.execute(
        "SELECT id, body_words, meta_words FROM session_docs WHERE session_id = ?", [session_id]
    ).fetchone()
    if not plans:
        if old is not None:
            conn.execute("DELETE FROM session_docs WHERE id = ?", [old[0]])
        return
    body = _apply(old[1] if old else None, body_delta)
    meta = _apply(old[2] if old else None, meta_delta)
    values = [
        plans[0].first_id, plans[-1].last_id, sum(p.messages for p in plans), sum(p.chars for p in plans),
        orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode(),
        orjson.dumps(meta, option=orjson.OPT_SORT_KEYS).decode(), bag(body), bag(meta),
    ]
    if old is None:
        conn.execute(
            "INSERT INTO session_docs (session_id, first_id, last_id, messages, chars, body_words, "
            "meta_words, body, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [session_id, *values],
        )
    else:
        conn.execute(
            "UPDATE session_docs SET first_id = ?, last_id = ?, messages = ?, chars = ?, body_words = ?, "
            "meta_words = ?, body = ?, meta = ? WHERE id = ?",
            [*values, old[0]],
        )
