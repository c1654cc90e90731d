"""Naming an index in a query only while it exists.

A cold load (``store/cold_load.py``) drops the indexes nothing reads while it
loads, until it ends or, after a kill, until the next ingest finishes it. A
statement naming one of them (``INDEXED BY``) would fail all that time, so
queries that pin an index for speed name it through ``indexed_by``.
"""

from __future__ import annotations

import sqlite3


def indexed_by(conn: sqlite3.Connection, index: str) -> str:
    """``INDEXED BY index`` when the index exists, else nothing (the planner chooses)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", [index]).fetchone()
    return f"INDEXED BY {index}" if found else ""
