"""What a first page saw of the archive, so that the pages after it list that and only that.

A paged list records, when its first page is read, the greatest message id
(``upto``) and the greatest session rowid (``bound``): rows written later
have greater ones. Its cursors carry both; later pages leave out sessions
stored since and the messages written since, and place a session that grew
meanwhile where the first page would have placed it.

    archive_edge(conn) -> (upto, bound)
    grown_since(conn, upto, bound) -> set[str] | None
        The sessions (rowid up to ``bound``) holding a message written after
        ``upto``; None when the rows written since are too many to read.
    log_edge(conn) -> [upto, rewrites]
    log_bound(conn, edge) -> int
        For a cursor through one session's log, which goes on after its last
        line wherever that line now is: the greatest message id a later page
        reads (``upto``), or every one when a message up to it was rewritten
        since (``cursors.rewritten_since``: renumbered lines get new ids).
    recency_as_of(key_sql, upto, grown, otherwise="''") -> (sql, params)
        A session's place in a list newest first (``key_sql`` of session
        ``s``) as it was when the greatest message id was ``upto``: for a
        session of ``grown``, the time of its last message up to ``upto``.
    SeenSet
        An order-free digest of the session ids ranked before a page
        (``digest``), and ``resume``: which of a ranking's sessions those
        were, when sessions that grew since moved in it.
"""

from __future__ import annotations

import hashlib
import json
from itertools import combinations

from .cursors import current_rewrites, rewritten_since
from .moments import moment_sql

MAX_ID = 2**63 - 1  # no id is greater (a cursor of an earlier version, bound to none)
GROWN_MAX = 12  # sessions grown since a first page that a later page can place (2**12 subsets at most)
WRITTEN_MAX = 200_000  # messages written since a first page that are read to find the sessions they grew
SEEN_CHARS = 24
_MODULUS = 1 << (4 * SEEN_CHARS)


def archive_edge(conn) -> tuple[int, int]:
    """``(upto, bound)``: the greatest message id and session rowid there are now."""
    return conn.execute(
        "SELECT (SELECT COALESCE(MAX(id), 0) FROM messages), (SELECT COALESCE(MAX(rowid), 0) FROM sessions)"
    ).fetchone()


def grown_since(conn, upto: int, bound: int | None) -> set[str] | None:
    written = conn.execute(
        "SELECT COUNT(*) FROM (SELECT 1 FROM messages WHERE id > ? LIMIT ?)", [upto, WRITTEN_MAX + 1]
    ).fetchone()[0]
    if written > WRITTEN_MAX:
        return None
    # (NOT INDEXED: the rows written since, by id; with an index SQLite scanned every session's)
    return {row[0] for row in conn.execute(
        "SELECT DISTINCT m.session_id FROM messages m NOT INDEXED JOIN sessions s ON s.id = m.session_id "
        "WHERE m.id > ? AND (? IS NULL OR s.rowid <= ?)", [upto, bound, bound]
    )}


def log_edge(conn) -> list[int]:
    return [archive_edge(conn)[0], current_rewrites(conn)]


def log_bound(conn, edge: list[int]) -> int:
    upto, rewrites = edge
    return MAX_ID if rewritten_since(conn, rewrites, upto) else upto


def recency_as_of(key_sql: str, upto: int, grown: set[str], otherwise: str = "''") -> tuple[str, list]:
    """``otherwise``: SQL for a grown session's place when none of those messages has a time.
    (A session's end is its last row's time, or a later one a line without a row gave,
    ``store.derive``: the rows' is the one that can be told again.)"""
    if not grown:
        return key_sql, []
    last = (f"(SELECT MAX({moment_sql('m.timestamp')}) FROM messages m "
            "WHERE m.session_id = s.id AND m.id <= ?)")
    return (f"(CASE WHEN s.id IN (SELECT value FROM json_each(?)) THEN COALESCE({last}, {otherwise}) ELSE {key_sql} END)",
            [json.dumps(sorted(grown)), upto])


def _weight(session_id: str) -> int:
    return int.from_bytes(hashlib.sha256(session_id.encode()).digest()[: SEEN_CHARS // 2], "big")


class SeenSet:
    """The sessions ranked before a page: how many (``count``) and an order-free digest of them
    (the sum of their ids' hashes), so that a subset can be told by its sum."""

    def __init__(self, ids=()):
        self.ids = list(dict.fromkeys(ids))

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def digest(self) -> str:
        return f"{sum(map(_weight, self.ids)) % _MODULUS:0{SEEN_CHARS}x}"

    @staticmethod
    def is_digest(value) -> bool:
        return isinstance(value, str) and len(value) == SEEN_CHARS and all(c in "0123456789abcdef" for c in value)

    @staticmethod
    def resume(ranked: list[str], count: int, digest: str, grown: set[str]) -> tuple[set[str], int] | None:
        """Which ``count`` sessions of ``ranked`` (the ranking now, its first ``count + len(grown)``
        at least) have the ``digest``: those of them that did not grow since are the first of
        the ranking's others (their order holds), and any of ``grown`` may be among them (a
        session begun since never is: its digest does not match). ``(seen, cut)``: those
        sessions, and the place in ``ranked`` after the last of them that did not grow; None
        when no such set has the digest (the ranking moved otherwise), or more than
        ``GROWN_MAX`` grew."""
        if len(grown) > GROWN_MAX:
            return None
        target = int(digest, 16)
        steady = [session for session in ranked if session not in grown]
        sums = [0]
        for session in steady[:count]:
            sums.append((sums[-1] + _weight(session)) % _MODULUS)
        movers = sorted(grown)
        for size in range(min(len(movers), count) + 1):
            if count - size >= len(sums):
                continue
            for chosen in combinations(movers, size):
                if (sums[count - size] + sum(map(_weight, chosen))) % _MODULUS == target:
                    kept = steady[: count - size]
                    cut = ranked.index(kept[-1]) + 1 if kept else 0
                    return set(kept) | set(chosen), cut
        return None
