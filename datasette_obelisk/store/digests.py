"""Session digests: a session's title and latest visible summary, full-text indexed.

``history.search`` shows a digest for each session and also matches it, so
digests have an index of their own: ``session_digests`` holds one row per
session with a title or a summary, and the external-content
``session_digests_fts`` (same tokenizer as ``messages_fts``) follows it.
Triggers on ``sessions`` (its title) and ``summaries`` keep the rows
current, whoever writes (see migration m013).

The index reads a digest's search form (``session_digests_search``): its
``search_title`` and ``search_summary``, CJK characters and emoji set apart
(``cjk.search_text``; NULL where that is the text). The triggers clear the
form of a text they change, and ``write_search_forms`` writes it again for
the sessions just derived (m059).
"""

from __future__ import annotations

import json

from ..cjk import search_text

LATEST_SUMMARY = (
    "SELECT {columns} FROM summaries WHERE session_id = {session} AND visibility = 'visible' "
    "ORDER BY timestamp DESC, rowid DESC LIMIT 1"
)


def digest_rows_sql(where: str = "") -> str:
    """``(session_id, title, summary)`` of the sessions ``where`` picks that have a digest."""
    summary = LATEST_SUMMARY.format(columns="content", session="s.id")
    return (
        "SELECT id, title, summary FROM (SELECT s.id, COALESCE(s.title, '') AS title, "
        f"COALESCE(({summary}), '') AS summary FROM sessions s {where}) WHERE title != '' OR summary != ''"
    )


def refresh_sql(session: str, searched: bool = True) -> str:
    """Statements that bring the digest of ``session`` (an SQL expression) up to date
    (``searched``: clearing the search form of a text they change; m013 had none)."""
    cleared = (
        ", search_title = CASE WHEN title = excluded.title THEN search_title END"
        ", search_summary = CASE WHEN summary = excluded.summary THEN search_summary END"
    ) if searched else ""
    return f"""
        DELETE FROM session_digests WHERE session_id = {session}
            AND NOT EXISTS ({digest_rows_sql(f"WHERE s.id = {session}")});
        INSERT INTO session_digests (session_id, title, summary) {digest_rows_sql(f"WHERE s.id = {session}")}
        ON CONFLICT (session_id) DO UPDATE SET title = excluded.title, summary = excluded.summary{cleared}
            WHERE title != excluded.title OR summary != excluded.summary;"""


def write_search_forms(conn, session_ids=None) -> None:
    """Write the search form of the digests of ``session_ids`` (None: every digest) where it
    is not the one stored; only the digests beyond ASCII or holding one are read."""
    picked = "1" if session_ids is None else "session_id IN (SELECT value FROM json_each(:ids))"
    found = conn.execute(
        "SELECT id, title, summary, search_title, search_summary FROM session_digests "
        f"WHERE {picked} AND (title GLOB :wide OR summary GLOB :wide "
        "OR search_title IS NOT NULL OR search_summary IS NOT NULL)",
        {"ids": json.dumps(sorted(session_ids or ())), "wide": "*[^\x01-\x7f]*"},
    ).fetchall()
    forms = [(row_id, search_text(title), search_text(summary), old) for row_id, title, summary, *old in found]
    conn.executemany(
        "UPDATE session_digests SET search_title = ?, search_summary = ? WHERE id = ?",
        [(title, summary, row_id) for row_id, title, summary, old in forms if [title, summary] != old],
    )
