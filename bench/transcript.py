"""How long a transcript page takes: the whole request and its template rendering.

    .venv/bin/python bench/transcript.py                  # builds bench/out/transcript-16MB once
    .venv/bin/python bench/transcript.py --repeat 20

Writes one long Claude Code session with the demo generator (seed 1: prompts, tool
calls and their results, subagents, a compaction, a rewind, hooks; about 5,000
lines), ingests it, then asks Datasette's test client for pages of its transcript
(``?start=`` at several places, default options and every option on) and prints,
for each, the best and median of ``--repeat`` requests in CPU seconds (of every
thread: the machine is shared, and wall time there measures the neighbours): the
whole request and the part spent in ``datasette.render_template``. The corpus and database are kept;
run the script at two commits to compare them (rendering does not change the
database).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datasette.app import Datasette  # noqa: E402

from datasette_obelisk.demo import generator  # noqa: E402
from datasette_obelisk.store.ingest import ingest  # noqa: E402

FEATURES = {"task", "compact", "rewind", "hooks", "reminder", "queue", "slash"}
STARTS = (1, 1001, 2501, 4001)


def build(work: Path, size: int) -> Path:
    """The long session's log and its database under ``work`` (once)."""
    db = work / "obelisk.db"
    if db.exists():
        return db
    stats = generator.SourceStats()
    corpus = generator._Corpus(1, "claude", size, stats, 0)
    writer = generator._ClaudeGenerator(corpus, work / ".claude" / "projects", None)
    writer.session(generator._ClaudePlan("2.1b", set(FEATURES), budget=size))
    ingest(db, {"claude": work / ".claude"})
    return db


async def measure(db: Path, repeat: int) -> None:
    conn = sqlite3.connect(db)
    session_id, lines = conn.execute(
        "SELECT session_id, count(*) FROM messages GROUP BY session_id ORDER BY 2 DESC LIMIT 1"
    ).fetchone()
    conn.close()
    print(f"session {session_id}: {lines:,} lines")
    datasette = Datasette([str(db)])
    await datasette.invoke_startup()
    render = datasette.render_template
    spent = []

    async def timed_render(*args, **kwargs):
        began = time.process_time()
        try:
            return await render(*args, **kwargs)
        finally:
            spent.append(time.process_time() - began)

    datasette.render_template = timed_render
    print(f"{'page (CPU seconds)':<30} {'entries':>7}  {'request best/median':>19}  {'render best/median':>18}")
    for start in STARTS:
        for options in ("", "&shadowed=1&meta=1&log=1"):
            url = f"/-/obelisk/session/{session_id}?start={start}{options}"
            first = await datasette.client.get(url)  # (templates compiled, caches warm)
            assert first.status_code == 200, (url, first.status_code)
            totals, spent[:] = [], []
            for _ in range(repeat):
                began = time.process_time()
                await datasette.client.get(url)
                totals.append(time.process_time() - began)
            entries = first.text.count('<li class="ob-')
            page = f"start={start}" + (" (all options)" if options else "")
            print(f"{page:<30} {entries:>7}  {min(totals):>13.3f}/{statistics.median(totals):.3f}"
                  f"  {min(spent):>12.3f}/{statistics.median(spent):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16, help="MB of log for the session (default 16)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--workdir", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    db = build(args.workdir / f"transcript-{args.size}MB", args.size * 1_000_000)
    asyncio.run(measure(db, args.repeat))


if __name__ == "__main__":
    main()
