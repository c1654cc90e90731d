"""Which tables a piece of work reads, recorded by SQLite itself.

An authorizer on the connection sees every table a statement reads as it
is prepared (through views, subqueries and SQL functions alike), so the
list cannot drift from the code the way a hand-kept declaration would.
"""

from __future__ import annotations

import sqlite3

from datasette.utils import named_parameters


class TableReads:
    """The names of the tables of ``main`` read while ``recording`` is active."""

    def __init__(self):
        self.tables: set[str] = set()

    def authorizer(self, action, table, _column, database, _trigger_or_view):
        if action == sqlite3.SQLITE_READ and database == "main" and table and not table.startswith("sqlite_"):
            self.tables.add(table)
        return sqlite3.SQLITE_OK

    def recording(self, fn):
        """``fn(conn)`` run with the authorizer on, and off again afterwards."""

        def run(conn):
            conn.set_authorizer(self.authorizer)
            try:
                return fn(conn)
            finally:
                conn.set_authorizer(None)

        return run


def tables_read(conn, sql: str) -> set[str]:
    """The tables ``sql`` reads, found by preparing it (EXPLAIN runs nothing)."""
    reads = TableReads()
    params = {name: "" for name in named_parameters(sql)}
    reads.recording(lambda c: c.execute("EXPLAIN " + sql, params).fetchall())(conn)
    return reads.tables
