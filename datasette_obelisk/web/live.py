"""Live-preferred web answers: logs that grew since the last ingest are read first.

Only for a mutable, file-backed database on an instance that is not
``read_only``; at most once a second per database, on a connection of our
own (never Datasette's write connection), in a worker thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time

from ..query import live
from ..store.db import connect, has_schema
from .config import settings

MIN_INTERVAL_SECONDS = 1.0
_last_refresh: dict[str, float] = {}


async def refresh_if_live(datasette, db) -> None:
    if settings(datasette).read_only or not db.is_mutable or not db.path:
        return
    now = time.monotonic()
    if now - _last_refresh.get(db.path, 0.0) < MIN_INTERVAL_SECONDS:
        return
    _last_refresh[db.path] = now
    await asyncio.to_thread(refresh_file, db.path)


def refresh_file(path: str) -> None:
    try:
        conn = connect(path)
    except sqlite3.Error:
        return
    try:
        if has_schema(conn):
            live.refresh(conn)
    except sqlite3.Error:
        pass  # busy or read-only: answer from what is stored
    finally:
        conn.close()
