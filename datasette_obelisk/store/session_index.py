"""The session-level search index: one small document per session.

Grouped search must pick the best sessions without ranking every matching
message (that costs time linear in the matches; see bench/README.md). So
each session also has one *bag of words* document in ``session_docs_fts``:
every distinct word of the session once, repeated ``1 + log2(count)`` times
(at most ``MAX_REPEAT``) so bm25 still sees how often a word occurs. Column
``body`` holds the words of ordinary messages, ``meta`` those of ``is_meta``
or ``hidden`` ones. ``session_docs.body_words`` / ``meta_words`` keep the
counts behind the bags (JSON ``{word: count}`` sorted by word, words
lower-cased as written), which also tell the search which real words a
prefix stands for in that session. The FTS table is contentless: the bags
are not stored but rebuilt from the counts, also to delete them.

Updates are incremental for the common case, a session that grew: the
document remembers which messages it counted (``last_id`` and the count,
characters and meta lines up to it); when those still match, only newer
messages are counted and added. Anything else (a file re-read, lines moved
to another session, a visibility change) recounts the session; when the
counts come out the same (a file read again, its rows under new ids), only
the document's stats change and its indexed bags stay.

A bag says that a session *may* match: query/search.py confirms each
candidate with ``messages_fts`` inside the session's id range.

    update_session_documents(conn, session_ids) -> int
        Bring these sessions' documents up to date, inside the caller's
        transaction (call it wherever sessions are derived). Returns how
        many documents changed; when that is not zero it bumps
        ``obelisk_state.generation``.
    rebuild_session_documents(conn) -> int
        Every session from scratch (migration, repair, benchmarks).
    index_bags_again(conn)
        Every bag indexed again from the stored counts (migration).
    index_bags_anew(conn, doc_ids, indexed)
        These documents' bags indexed again, ``indexed(bag)`` giving the form
        the index holds of each (migration).
    recount_documents(conn, session_ids)
        Have these documents counted again when next planned (a file's rows
        deleted to be read again).
    plan_document(conn, session_id, precounted) -> DocumentPlan | None
    write_document(conn, plan) -> int
        The two halves of one update. Planning only reads (and does the
        counting and JSON), so it can run while another connection writes.
        Whether a document's counted rows are still there is asked of the
        index (``stats_up_to``: the rows after it, its first and last id),
        so a line appended to a long session does not add up all its rows.

Counting words is the costly part, so the ingester's reader counts the
words of the messages it reads (``count_session_words``) and passes them
in as ``precounted``: they are used when they cover exactly the messages
the session gained (same number, characters and meta messages); otherwise
the session's stored text is counted again.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import orjson

from .. import cjk

MAX_REPEAT = 8
IS_META_SQL = "(is_meta != 0 OR visibility = 'hidden')"

# Every ASCII byte FTS5's unicode61 tokenizer treats as a separator becomes
# a space and ASCII letters become lower case, in one pass; other bytes
# (UTF-8 sequences) are left alone, and FTS5 splits a bag word again if it
# holds a non-ASCII separator. Working on bytes is ten times faster than
# ``str.translate``.
_FOLD = bytes((c | 32 if 65 <= c <= 90 else c) if chr(c).isalnum() or c >= 128 else 32 for c in range(256))


SLICE_BYTES = 1 << 20
SHORT_TEXT = 1 << 12  # characters: texts shorter are counted together


def count_words(texts: Iterable[str]) -> Counter:
    """Word counts of ``texts``, read in slices so a multi-MB text stays cheap in memory
    (short texts joined by a space, in slices of about the same size: a pass per slice,
    not per text)."""
    raw: Counter = Counter()
    short: list[str] = []
    held = 0
    for text in texts:
        if len(text) < SHORT_TEXT:
            short.append(text)
            held += len(text)
            if held >= SLICE_BYTES // 4:
                raw.update(" ".join(short).encode("utf-8", "replace").translate(_FOLD).split())
                short, held = [], 0
            continue
        data = text.encode("utf-8", "replace")
        start = 0
        while start < len(data):
            end = min(start + SLICE_BYTES, len(data))
            piece = data[start:end].translate(_FOLD)
            cut = piece.rfind(b" ") if end < len(data) else -1
            if cut > 0:  # end the slice between words
                piece, end = piece[:cut], start + cut
            elif end < len(data):  # no space (a CJK text): at least between characters
                while end > start + 1 and data[end] & 0xC0 == 0x80:
                    end -= 1
                piece = data[start:end].translate(_FOLD)
            raw.update(piece.split())
            start = end
    if short:
        raw.update(" ".join(short).encode("utf-8", "replace").translate(_FOLD).split())
    return _lowered(raw)


def _lowered(raw: Counter) -> Counter:
    """``raw``'s byte words decoded and lower-cased, counts of words that become one added up.

    All words go through ``str.lower`` at once, joined by newlines (which no
    word holds and which end a word for its final-sigma rule as the end of
    the text does): half the cost of a call per word. Only when two
    words fold into one (non-ASCII capitals) are they added up one by one."""
    lowered = b"\n".join(raw).decode("utf-8", "replace").lower().split("\n")
    counts = Counter(dict(zip(lowered, raw.values())))
    if len(counts) < len(raw):
        counts = Counter()
        for word, count in zip(lowered, raw.values()):
            counts[word] += count
    return counts


# Extra copies of a word counted n times, for n below 2 ** MAX_REPEAT (above: MAX_REPEAT - 1).
_REPEATS = [min(MAX_REPEAT, n.bit_length()) - 1 for n in range(1 << MAX_REPEAT)]


def bag(counts: dict) -> str:
    """Each word ``1 + log2(count)`` times (at most ``MAX_REPEAT``); order is irrelevant to FTS5.

    Every word once, then the extra copies, word by word; CJK characters set
    apart, as ``messages_fts`` reads them."""
    extra = [
        (" " + word) * (_REPEATS[count] if count < len(_REPEATS) else MAX_REPEAT - 1)
        for word, count in counts.items()
        if count > 1
    ]
    return cjk.split(" ".join(counts) + "".join(extra))


@dataclass
class SessionWords:
    """Word counts of some messages of a session, and which messages they cover."""

    body: Counter = field(default_factory=Counter)
    meta: Counter = field(default_factory=Counter)
    messages: int = 0
    chars: int = 0
    meta_messages: int = 0

    def add(self, other: "SessionWords") -> None:
        self.body.update(other.body)
        self.meta.update(other.meta)
        self.messages += other.messages
        self.chars += other.chars
        self.meta_messages += other.meta_messages

    def remove(self, other: "SessionWords") -> None:
        self.body.subtract(other.body)
        self.meta.subtract(other.meta)
        self.body, self.meta = +self.body, +self.meta  # drop words no longer counted
        self.messages -= other.messages
        self.chars -= other.chars
        self.meta_messages -= other.meta_messages

    def size(self) -> int:
        return len(self.body) + len(self.meta)


def count_session_words(messages) -> dict[str, SessionWords]:
    """Word counts per session of message records (``session_id``, ``text``, ``is_meta``)."""
    texts: dict[str, tuple[list, list]] = {}
    found: dict[str, SessionWords] = {}
    for m in messages:
        words = found.get(m.session_id)
        if words is None:
            words = found[m.session_id] = SessionWords()
            texts[m.session_id] = ([], [])
        words.messages += 1
        words.chars += len(m.text)
        if m.is_meta:
            words.meta_messages += 1
        texts[m.session_id][1 if m.is_meta else 0].append(m.text)
    for session_id, (body, meta) in texts.items():
        found[session_id].body = count_words(body)
        found[session_id].meta = count_words(meta)
    return found


def update_session_documents(
    conn: sqlite3.Connection,
    session_ids: Iterable[str],
    precounted: Mapping[str, SessionWords] | None = None,
    planned: Mapping[str, "DocumentPlan | None"] | None = None,
) -> int:
    """``planned``: documents ``plan_document`` worked out ahead, used as they are."""
    precounted = precounted or {}
    planned = planned or {}
    changed = sum(
        write_document(
            conn,
            planned[session_id] if session_id in planned
            else plan_document(conn, session_id, precounted.get(session_id)),
        )
        for session_id in sorted(set(session_ids))
    )
    if changed:
        conn.execute(
            "INSERT INTO obelisk_state (key, value) VALUES ('generation', '1') "
            "ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )
    return changed


def index_bags_again(conn: sqlite3.Connection) -> None:
    """Index every session's bags again from their stored counts (when the form of a bag changes)."""
    conn.execute("INSERT INTO session_docs_fts (session_docs_fts) VALUES ('delete-all')")
    for doc_id, body, meta in conn.cursor().execute("SELECT id, body_words, meta_words FROM session_docs"):
        conn.execute(
            "INSERT INTO session_docs_fts (rowid, body, meta) VALUES (?, ?, ?)", [doc_id, _bag_of(body), _bag_of(meta)]
        )


def index_bags_anew(conn: sqlite3.Connection, doc_ids: list[int], indexed: Callable[[str], str]) -> None:
    """Index these documents' bags again from their stored counts; ``indexed(bag)`` is
    what the index holds now of a bag (to delete it from the contentless table)."""
    for doc_id in doc_ids:
        body, meta = conn.execute("SELECT body_words, meta_words FROM session_docs WHERE id = ?", [doc_id]).fetchone()
        bags = _bag_of(body), _bag_of(meta)
        conn.execute(
            "INSERT INTO session_docs_fts (session_docs_fts, rowid, body, meta) VALUES ('delete', ?, ?, ?)",
            [doc_id, *map(indexed, bags)],
        )
        conn.execute("INSERT INTO session_docs_fts (rowid, body, meta) VALUES (?, ?, ?)", [doc_id, *bags])


def rebuild_session_documents(conn: sqlite3.Connection) -> int:
    conn.execute("DELETE FROM session_docs")
    conn.execute("INSERT INTO session_docs_fts (session_docs_fts) VALUES ('delete-all')")
    sessions = [row[0] for row in conn.execute("SELECT DISTINCT session_id FROM messages")]
    return update_session_documents(conn, sessions)


def document_stamp(conn, session_id: str) -> tuple | None:
    """(id, first id, last id, messages, chars, meta messages) of the session's stored
    document: a plan made while it was so still applies."""
    row = conn.execute(
        "SELECT id, first_id, last_id, messages, chars, meta_messages FROM session_docs WHERE session_id = ?",
        [session_id],
    ).fetchone()
    return tuple(row) if row is not None else None


def session_stats(conn, session_id: str, up_to: int | None = None) -> tuple:
    """(first id, last id, messages, chars, meta messages) of a session, up to an id."""
    return tuple(conn.execute(
        f"SELECT MIN(id), MAX(id), COUNT(*), COALESCE(SUM(text_length), 0), "
        f"COALESCE(SUM({IS_META_SQL}), 0) FROM messages WHERE session_id = ? AND id <= ?",
        [session_id, up_to if up_to is not None else 1 << 62],
    ).fetchone())


def stats_up_to(conn, session_id: str, stats: tuple, up_to: int) -> tuple:
    """``session_stats(conn, session_id, up_to)`` from the whole session's ``stats``: less
    the rows after ``up_to`` (those a pass appended), read by index, not every row again."""
    if stats[1] is None or stats[1] <= up_to:
        return stats
    later = session_stats_after(conn, session_id, up_to)
    bounds = conn.execute(
        "SELECT (SELECT id FROM messages WHERE session_id = ?1 AND id <= ?2 ORDER BY id LIMIT 1),"
        " (SELECT id FROM messages WHERE session_id = ?1 AND id <= ?2 ORDER BY id DESC LIMIT 1)",
        [session_id, up_to],
    ).fetchone()
    return (bounds[0], bounds[1], stats[2] - later[0], stats[3] - later[1], stats[4] - later[2])


def session_stats_after(conn, session_id: str, after: int) -> tuple:
    """(messages, chars, meta messages) of a session's rows with an id after ``after``."""
    return tuple(conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM(text_length), 0), COALESCE(SUM({IS_META_SQL}), 0) "
        f"FROM messages WHERE session_id = ? AND id > ?",
        [session_id, after],
    ).fetchone())


@dataclass(slots=True)
class DocumentPlan:
    """What bringing one session's document up to date writes (see ``plan_document``)."""

    session_id: str
    old: tuple | None  # (id, body bag, meta bag) of the stored document, to unindex
    stats: tuple  # first id, last id, messages, chars, meta messages
    words: tuple[str, str] | None = None  # body and meta counts as JSON; None: no messages left
    bags: tuple[str, str] | None = None
    kept: int | None = None  # the stored document's id, when its counts (so its indexed bags) stay

    def size(self) -> int:
        """Roughly, the bytes its texts hold."""
        return sum(len(text) for pair in (self.words, self.bags, self.old and self.old[1:]) if pair for text in pair)


def plan_document(
    conn: sqlite3.Connection, session_id: str, precounted: SessionWords | None = None, stats: tuple | None = None
) -> DocumentPlan | None:
    """Read only: how the session's document changes, or None when it is up to date.

    ``stats``: the session's ``session_stats``, when the caller has them."""
    stats = stats or session_stats(conn, session_id)
    old = conn.execute(
        "SELECT id, first_id, last_id, messages, chars, meta_messages, body_words, meta_words "
        "FROM session_docs WHERE session_id = ?",
        [session_id],
    ).fetchone()
    if old is not None and tuple(old[1:6]) == stats:
        return None
    if not stats[2] and old is None:
        return None
    if not stats[2]:
        return DocumentPlan(session_id, _unindex(old), stats)
    grew = old is not None and tuple(old[1:6]) == stats_up_to(conn, session_id, stats, old[2])
    body = Counter(orjson.loads(old[6])) if grew else Counter()
    meta = Counter(orjson.loads(old[7])) if grew else Counter()
    gained = (stats[2] - old[3], stats[3] - old[4], stats[4] - old[5]) if grew else stats[2:]
    if precounted is not None and (precounted.messages, precounted.chars, precounted.meta_messages) == gained:
        new_body, new_meta = precounted.body, precounted.meta
    else:
        new_body, new_meta = _count(conn, session_id, old[2] if grew else None)
    body, meta = _merged(body, new_body), _merged(meta, new_meta)
    words = (orjson.dumps(body).decode(), orjson.dumps(meta).decode())
    if old is not None and words == (old[6], old[7]):
        return DocumentPlan(session_id, None, stats, words, kept=old[0])
    return DocumentPlan(
        session_id,
        _unindex(old) if old is not None else None,
        stats,
        words,
        (bag(body), bag(meta)),  # as _bag_of would rebuild them from the JSON
    )


def write_document(conn: sqlite3.Connection, plan: DocumentPlan | None) -> int:
    """Write a planned document inside the caller's transaction; 1 when something changed."""
    if plan is None:
        return 0
    if plan.kept is not None:
        conn.execute(
            "UPDATE session_docs SET first_id = ?, last_id = ?, messages = ?, chars = ?, meta_messages = ? "
            "WHERE id = ?",
            [*plan.stats, plan.kept],
        )
        return 1
    if plan.old is not None:
        conn.execute(
            "INSERT INTO session_docs_fts (session_docs_fts, rowid, body, meta) VALUES ('delete', ?, ?, ?)",
            plan.old,
        )
    if plan.words is None:
        conn.execute("DELETE FROM session_docs WHERE id = ?", [plan.old[0]])
        return 1
    if plan.old is None:
        doc_id = conn.execute(
            "INSERT INTO session_docs (first_id, last_id, messages, chars, meta_messages, body_words, "
            "meta_words, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [*plan.stats, *plan.words, plan.session_id],
        ).lastrowid
    else:
        doc_id = plan.old[0]
        conn.execute(
            "UPDATE session_docs SET first_id = ?, last_id = ?, messages = ?, chars = ?, "
            "meta_messages = ?, body_words = ?, meta_words = ? WHERE id = ?",
            [*plan.stats, *plan.words, doc_id],
        )
    conn.execute("INSERT INTO session_docs_fts (rowid, body, meta) VALUES (?, ?, ?)", [doc_id, *plan.bags])
    return 1


def _unindex(old) -> tuple:
    """What deletes a stored document's bags from the contentless index: its id and bags."""
    return old[0], _bag_of(old[6]), _bag_of(old[7])


def recount_documents(conn: sqlite3.Connection, session_ids) -> None:
    """Count these sessions' documents again when next planned, whatever their stats say
    (their rows were deleted, to be read again: they may come back under the same ids)."""
    conn.executemany("UPDATE session_docs SET messages = -1 WHERE session_id = ?", [[s] for s in sorted(session_ids)])


def _merged(counts: Counter, more: Counter) -> dict:
    """``counts`` plus ``more``, sorted by word."""
    if counts:
        counts.update(more)
        more = counts
    return dict(sorted(more.items()))


def _bag_of(words_json: str) -> str:
    """The bag indexed for stored counts: always rebuilt from the same JSON,
    so the contentless index can be told exactly what to delete."""
    return bag(orjson.loads(words_json))


def _count(conn, session_id: str, after: int | None) -> tuple[Counter, Counter]:
    body: list[str] = []
    meta: list[str] = []
    for text, is_meta in conn.execute(
        f"SELECT text, {IS_META_SQL} FROM messages WHERE session_id = ? AND id > ?",
        [session_id, after if after is not None else -1],
    ):
        (meta if is_meta else body).append(text)
    return count_words(body), count_words(meta)
