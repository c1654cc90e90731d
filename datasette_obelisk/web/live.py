"""Live-preferred web answers: logs that grew since the last ingest are read first.

Only for a mutable, file-backed database on an instance that is not
``read_only``; at most once a second per database, on a connection of our
own (never Datasette's write connection), in a worker thread. Only a log in
the sources' own folders, or one whose bytes up to its cursor still hash as
the ingest recorded, is read (``live.own_folders``, ``live.fingerprint_holds``):
the paths come from the database, which may have been made anywhere. A request
waits for at most ``INLINE_BYTES`` of new log; a larger catch-up (a long
session appended in bulk, logs rewritten) goes on in the background, one
at a time per database, and requests answer from what is stored meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time

from ..query import live
from ..store.db import connect, has_schema
from .config import settings

MIN_INTERVAL_SECONDS = 1.0
INLINE_BYTES = 4 << 20
_last_refresh: dict[str, float] = {}
_catching_up: dict[str, asyncio.Future] = {}


async def refresh_if_live(datasette, db) -> None:
    if settings(datasette).read_only or not db.is_mutable or not db.path:
        return
    if db.path in _catching_up:
        return
    now = time.monotonic()
    if now - _last_refresh.get(db.path, 0.0) < MIN_INTERVAL_SECONDS:
        return
    _last_refresh[db.path] = now
    if not await asyncio.to_thread(refresh_file, db.path, INLINE_BYTES):
        future = asyncio.ensure_future(asyncio.to_thread(refresh_file, db.path))
        _catching_up[db.path] = future
        future.add_done_callback(lambda _: _catching_up.pop(db.path, None))


def refresh_file(path: str, max_bytes: int | None = None) -> bool:
    """Read what the logs gained into ``path``; False when that is more than ``max_bytes`` (nothing read)."""
    if not os.path.isfile(path):
        return True  # gone or replaced since Datasette opened it: never create an empty one
    try:
        conn = connect(path)
    except sqlite3.Error:
        return True
    try:
        if has_schema(conn):
            return live.refresh(conn, max_bytes=max_bytes, fingerprinted=True) is not None
    except sqlite3.Error:
        pass  # busy or read-only: answer from what is stored
    finally:
        conn.close()
    return True
