"""Keeping a database current: ingest again whenever the logs may have changed.

Each pass is an ordinary incremental ingest: new files are found, grown ones
are read from their cursor, unchanged ones are skipped on ``stat`` (about
0.3 s per GB of logs). Passes start at least ``interval`` seconds apart and
are spaced so that watching takes at most ``BUSY_SHARE`` of one core.

    watch(db, roots, interval=2.0, report=print, should_stop=lambda: False)
        Run passes until ``should_stop()`` is true (checked every
        ``TICK`` seconds while waiting); ``report`` gets each pass's summary.
        ``roots`` is called before each pass for the folders to read.
"""

from __future__ import annotations

import time
from typing import Callable

from .ingest import IngestSummary, ingest

BUSY_SHARE = 0.2
TICK = 0.2


def watch(
    db,
    roots: Callable[[], dict],
    *,
    interval: float,
    report: Callable[[IngestSummary], None],
    should_stop: Callable[[], bool],
    **options,
) -> None:
    while not should_stop():
        started = time.monotonic()
        report(ingest(db, roots(), **options))
        took = time.monotonic() - started
        resume = started + max(interval, took / BUSY_SHARE)
        while not should_stop():
            left = resume - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(TICK, left))
