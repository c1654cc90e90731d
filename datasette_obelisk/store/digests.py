"""Session digests: a session's title and latest visible summary, full-text indexed.

``history.search`` shows a digest for each session and also matches it, so
digests have an index of their own: ``session_digests`` holds one row per
session with a title or a summary, and the external-content
``session_digests_fts`` (same tokenizer as ``messages_fts``) follows it.
Triggers on ``sessions`` (its title) and ``summaries`` keep the rows
current, whoever writes (see migration m013).
"""

from __future__ import annotations

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


def refresh_sql(session: str) -> str:
    """Statements that bring the digest of ``session`` (an SQL expression) up to date."""
    return f"""
        DELETE FROM session_digests WHERE session_id = {session}
            AND NOT EXISTS ({digest_rows_sql(f"WHERE s.id = {session}")});
        INSERT INTO session_digests (session_id, title, summary) {digest_rows_sql(f"WHERE s.id = {session}")}
        ON CONFLICT (session_id) DO UPDATE SET title = excluded.title, summary = excluded.summary
            WHERE title != excluded.title OR summary != excluded.summary;"""
