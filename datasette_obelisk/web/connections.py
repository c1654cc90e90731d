"""Settings for each connection Datasette opens to an obelisk database."""

from __future__ import annotations

import sqlite3

from ..store.db import has_schema

# Datasette leaves SQLite's default page cache, 2 MB: 125 of our 16 KB pages.
# Each row of browse_messages looks its tool call and result up in four
# indexes keyed by uuids in no order (~7 MB with the tables' pages they
# lead to on a 356 MB archive), and Datasette reads 10,001 rows to count a
# table page and 1,000 rows for each of its ~50 facet suggestions. With 2 MB
# nearly every lookup reloads a page; with 16 MB they stay cached, and the
# count and the suggestions take ~40% less time. The cache fills only as
# pages are read.
CACHE_KIB = 16_000


def tune(conn: sqlite3.Connection) -> None:
    """A larger page cache on a connection to an obelisk database; other databases are left alone."""
    try:
        if has_schema(conn):
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    except sqlite3.Error:
        pass
