"""Grouped search against raw FTS5 ranking on a synthetic corpus of millions of messages.

    .venv/bin/python bench/search.py                 # 2.1M messages, builds once
    .venv/bin/python bench/search.py --queries 50    # more queries per class
    .venv/bin/python bench/search.py --messages 300000 --db bench/out/small.db

The corpus is written straight into the schema (no JSONL, no parser): the
demo generator would take hours to produce and ingest two million messages,
and search cost depends only on the rows. Text is drawn from a Zipf-weighted
vocabulary (English and programming words first, then made-up words) so there
are very common, common and rare terms; session lengths and message sizes are
log-normal like real logs. Every table the search reads is filled the way the
ingester fills it, then the session index is built by the same
``rebuild_session_documents`` the migration runs (``update_session_documents``,
which derive calls, for every session).

For each query class (common, rare, two-term, phrase, prefix) it prints
p50/p95 over the same queries of

- raw:     ``SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT 20``
- grouped: ``search_sessions(conn, query, limit=20)`` — sessions, each with its
  best event and up to three snippets.

Each query runs three times and the best time counts (the machine is shared).
Results and their reading are in bench/README.md.
"""

from __future__ import annotations

import argparse
import math
import random
import sqlite3
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datasette_obelisk.query.fts import parse_query  # noqa: E402
from datasette_obelisk.query.search import search_sessions  # noqa: E402
from datasette_obelisk.store.db import open_db  # noqa: E402
from datasette_obelisk.store.session_index import rebuild_session_documents  # noqa: E402

COMMON_WORDS = """
the a to of and in is for that it this with on be you as are i we can not file
error test function use if will by from or an at so have run code all line
should need add new value return but data set get type name check now let
update make change fix see one here path build call list more also when which
import class config output result true false string number first then just
only after into before error module user model index query table column row
server client request response message event session token cache source update
""".split()
SOURCES = ("claude", "claude", "claude", "codex")
BUILD_VERSION = 7


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words = list(dict.fromkeys(COMMON_WORDS))
    seen = set(words)
    letters = "abcdefghijklmnopqrstuvwxyz"
    while len(words) < size:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(4, 11)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def word_pool(rng: random.Random, words: list[str], size: int) -> list[str]:
    weights = [1 / (rank + 1) ** 1.07 for rank in range(len(words))]
    return rng.choices(words, weights=weights, k=size)


def lognormal_int(rng, median, sigma, low, high):
    return max(low, min(high, int(rng.lognormvariate(math.log(median), sigma))))


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def build(db_path: Path, target_messages: int, seed: int) -> dict:
    rng = random.Random(seed)
    started = time.perf_counter()
    words = vocabulary(rng, 60_000)
    pool = word_pool(rng, words, 4_000_000)
    conn = open_db(db_path)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO obelisk_state (key, value) VALUES ('bulk', '1')")
    conn.execute(
        "INSERT INTO source_files (id, path, source, kind) VALUES (1, '/bench/corpus', 'claude', 'session')"
    )
    epoch = datetime(2025, 1, 1, tzinfo=timezone.utc)
    total = 0
    number = 0
    message_id = 0
    while total < target_messages:
        number += 1
        session_id = f"bench-{number:06d}"
        source = rng.choice(SOURCES)
        project = f"/home/dev/project-{rng.randint(1, 40):02d}"
        length = min(lognormal_int(rng, 250, 1.2, 2, 30_000), target_messages - total)
        moment = epoch + timedelta(minutes=rng.randint(0, 2 * 365 * 24 * 60))
        first_moment = moment
        rows = []
        for seq in range(1, length + 1):
            message_id += 1
            kind = seq % 4
            if kind == 1:
                role, content_type, n = "user", "text", lognormal_int(rng, 18, 0.8, 1, 400)
            elif kind == 2:
                role, content_type, n = "assistant", "text", lognormal_int(rng, 40, 0.9, 1, 2_000)
            elif kind == 3:
                role, content_type, n = "assistant", "tool_use", lognormal_int(rng, 12, 0.6, 2, 200)
            else:
                role, content_type, n = "user", "tool_result", lognormal_int(rng, 60, 1.3, 1, 12_000)
            start = rng.randrange(0, len(pool) - n)
            text = " ".join(pool[start : start + n])
            is_meta = 1 if rng.random() < 0.03 else 0
            moment += timedelta(seconds=rng.randint(1, 90))
            rows.append((
                message_id, f"{session_id}:{seq}", session_id, seq, source,
                "user" if role == "user" else "assistant", role, iso(moment), text, len(text),
                content_type, is_meta, "log-only" if is_meta else "current", 1, seq, seq * 1000, 999,
            ))
        conn.executemany(
            "INSERT INTO messages (id, uuid, session_id, seq, source, type, role, timestamp, text, "
            "text_length, content_type, is_meta, surface, file_id, line_no, byte_offset, byte_length) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute(
            "INSERT INTO sessions (id, source, title, project, project_path, cwd, started_at, ended_at, "
            "message_count, availability, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'live', ?)",
            [
                session_id, source, " ".join(rng.sample(words[:2000], 4)), project.replace("/", "-"),
                project, project, iso(first_moment), iso(moment), length, iso(moment),
            ],
        )
        total += length
    conn.execute("DELETE FROM obelisk_state WHERE key = 'bulk'")
    loaded = time.perf_counter()
    conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
    indexed = time.perf_counter()
    documents = rebuild_session_documents(conn)
    documented = time.perf_counter()
    conn.execute(
        "INSERT OR REPLACE INTO obelisk_state (key, value) VALUES ('bench_build', ?)",
        [f"{BUILD_VERSION}:{target_messages}:{seed}"],
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()
    return {
        "sessions": number,
        "messages": total,
        "session_documents": documents,
        "load_s": round(loaded - started, 1),
        "messages_fts_s": round(indexed - loaded, 1),
        "session_index_s": round(documented - indexed, 1),
    }


def ensure_db(db_path: Path, messages: int, seed: int) -> None:
    if db_path.exists():
        conn = sqlite3.connect(db_path)
        try:
            row = conn.execute("SELECT value FROM obelisk_state WHERE key = 'bench_build'").fetchone()
        except sqlite3.Error:
            row = None
        conn.close()
        if row and row[0] == f"{BUILD_VERSION}:{messages}:{seed}":
            return
        for suffix in ("", "-wal", "-shm"):
            Path(str(db_path) + suffix).unlink(missing_ok=True)
    print(f"building {db_path} ({messages:,} messages)...", file=sys.stderr)
    stats = build(db_path, messages, seed)
    print(f"built: {stats}", file=sys.stderr)


# -- queries ---------------------------------------------------------------


def document_count(conn, word: str) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? LIMIT 1000)",
        [f'"{word}"'],
    ).fetchone()[0]


def query_classes(conn, count: int, seed: int) -> dict[str, list[tuple[str, dict]]]:
    """Queries per class, from the words the corpus was built from (by Zipf rank)."""
    words = vocabulary(random.Random(seed), 60_000)  # the build's first draw
    rng = random.Random(seed + 1)
    common = [w for w in words[:80] if len(w) >= 3]
    middle = words[200:3000]
    rare = []
    for word in words[20_000:]:
        if 1 <= document_count(conn, word) <= 100:
            rare.append(word)
        if len(rare) == count:
            break
    classes: dict[str, list[tuple[str, dict]]] = {
        "common": [(rng.choice(common), {}) for _ in range(count)],
        "rare": [(word, {}) for word in rare],
        "two-term": [(f"{rng.choice(middle)} {rng.choice(common)}", {}) for _ in range(count)],
        "prefix": [(rng.choice([w for w in common if len(w) >= 5])[:4], {"prefix": True}) for _ in range(count)],
    }
    phrases = []
    max_id = conn.execute("SELECT MAX(id) FROM messages").fetchone()[0]
    while len(phrases) < count:
        text = conn.execute("SELECT text FROM messages WHERE id = ?", [rng.randint(1, max_id)]).fetchone()[0]
        tokens = text.split()
        if len(tokens) >= 3:
            at = rng.randrange(0, len(tokens) - 1)
            phrases.append((f"{tokens[at]} {tokens[at + 1]}", {"mode": "phrase"}))
    classes["phrase"] = phrases
    return classes


def timed(fn, repeat: int = 1) -> float:
    best = math.inf
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return statistics.median(ordered), p95


def run(db_path: Path, queries: int, seed: int, limit: int, repeat: int = 3) -> list[dict]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.execute("PRAGMA cache_size = -262144")
    messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    print(f"{messages:,} messages, {sessions:,} sessions; limit {limit}; best of {repeat} runs per query")
    raw_sql = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?"
    results = []
    for name, items in query_classes(conn, queries, seed).items():
        raw, grouped, sizes = [], [], []
        for text, options in items:
            expression = parse_query(text, **options).expression
            conn.execute(raw_sql, [expression, limit]).fetchall()  # warm both
            search_sessions(conn, text, limit=limit, **options)
            raw.append(timed(lambda: conn.execute(raw_sql, [expression, limit]).fetchall(), repeat))
            page = {}

            def grouped_search():
                page["value"] = search_sessions(conn, text, limit=limit, **options)

            grouped.append(timed(grouped_search, repeat))
            sizes.append(len(page["value"]["items"]))
        raw_p50, raw_p95 = percentiles(raw)
        grouped_p50, grouped_p95 = percentiles(grouped)
        results.append({
            "class": name, "raw_p50": raw_p50, "raw_p95": raw_p95,
            "grouped_p50": grouped_p50, "grouped_p95": grouped_p95,
            "sessions_per_page": statistics.mean(sizes),
        })
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path("bench/out/search.db"))
    parser.add_argument("--messages", type=int, default=2_100_000)
    parser.add_argument("--queries", type=int, default=50, help="queries per class")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    ensure_db(args.db, args.messages, args.seed)
    results = run(args.db, args.queries, args.seed, args.limit)
    print(f"{'class':10} {'raw p50':>9} {'raw p95':>9} {'grouped p50':>12} {'grouped p95':>12} {'p95 ratio':>9} {'sessions':>8}")
    for r in results:
        print(
            f"{r['class']:10} {r['raw_p50']:8.2f}ms {r['raw_p95']:8.2f}ms {r['grouped_p50']:11.2f}ms "
            f"{r['grouped_p95']:11.2f}ms {r['grouped_p95'] / max(r['raw_p95'], 1e-9):8.2f}x {r['sessions_per_page']:8.1f}"
        )


if __name__ == "__main__":
    main()
