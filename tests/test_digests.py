"""Session digests follow titles and summaries, whoever writes them."""

import sqlite_utils

from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.migrations import migrations


def digests(conn):
    return conn.execute("SELECT session_id, title, summary FROM session_digests ORDER BY session_id").fetchall()


def matching(conn, query):
    return [row[0] for row in conn.execute(
        "SELECT d.session_id FROM session_digests_fts f JOIN session_digests d ON d.id = f.rowid "
        "WHERE session_digests_fts MATCH ? ORDER BY d.session_id", [query]
    )]


def add_summary(conn, id, session, timestamp, content, visibility="visible"):
    conn.execute(
        "INSERT INTO summaries (id, session_id, timestamp, source, content, visibility, file_id) "
        "VALUES (?, ?, ?, 'away_summary', ?, ?, 1)",
        [id, session, timestamp, content, visibility],
    )


def test_a_digest_follows_the_title_and_the_latest_visible_summary(tmp_path):
    conn = open_db(tmp_path / "d.db")
    with conn:
        conn.execute("INSERT INTO sessions (id, source) VALUES ('s1', 'claude'), ('s2', 'claude')")
        assert digests(conn) == []
        conn.execute("UPDATE sessions SET title = 'Migrating the database' WHERE id = 's1'")
        add_summary(conn, "a", "s2", "2026-01-01T00:00:00.000Z", "Planned the indexes")
        add_summary(conn, "b", "s2", "2026-01-02T00:00:00.000Z", "Benchmarked the writer")
        add_summary(conn, "c", "s2", "2026-01-03T00:00:00.000Z", "A rewound recap", visibility="shadowed")
    assert digests(conn) == [("s1", "Migrating the database", ""), ("s2", "", "Benchmarked the writer")]
    assert matching(conn, "migrate") == ["s1"]  # stemmed, as messages_fts
    assert matching(conn, "benchmark") == ["s2"] and matching(conn, "indexes") == matching(conn, "rewound") == []
    with conn:
        conn.execute("DELETE FROM summaries WHERE id = 'b'")
        conn.execute("UPDATE sessions SET title = NULL WHERE id = 's1'")
    assert digests(conn) == [("s2", "", "Planned the indexes")]
    assert matching(conn, "migrate") == [] and matching(conn, "indexes") == ["s2"]


def test_the_migration_fills_digests_of_sessions_already_stored(tmp_path):
    path = tmp_path / "old.db"
    migrations.apply(sqlite_utils.Database(path), stop_before="m013_create_session_digests")
    old = sqlite_utils.Database(path)
    old.execute("INSERT INTO sessions (id, source, title) VALUES ('s1', 'claude', 'Fixing the parser'), ('s2', 'codex', NULL)")
    old.conn.commit()
    old.close()
    conn = open_db(path)
    assert digests(conn) == [("s1", "Fixing the parser", "")]
    assert matching(conn, "parsers") == ["s1"]
