"""Ingest beside agentsview: the same logs, each tool in its own process, in one run.

agentsview (``pip install agentsview``) archives Claude Code and Codex logs
into SQLite too. Each tool gets a private HOME (``CLAUDE_CONFIG_DIR`` and
``CODEX_HOME`` point into it as well), so neither reads the agent folders
of the machine it runs on, and both find the logs the way they would for a
user.

    pip install agentsview
    python bench/agentsview.py --size 500MB --rounds 3   # speed, on a generated corpus
    python bench/agentsview.py --shared ../shared/corpus  # what each keeps of the public logs
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import socket
import statistics
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ingest import add_corpus_options, append_lines, bench_corpus, corpus_bytes


@dataclass
class Run:
    seconds: float
    cpu: float  # user + system seconds, the process and the children it waited for
    peak_rss_mb: float  # its largest process
    output: str


def timed(command: list[str], env: dict) -> Run:
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):  # obelisk exits 1 when it reported bad lines
        raise SystemExit(f"{command[0]} failed with status {process.returncode}:\n{output}")
    return Run(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output)


def link_generated(corpus: Path):
    """Fill a home with links to a generated corpus's ``.claude`` and ``.codex``."""

    def populate(home: Path) -> None:
        for folder in (".claude", ".codex"):
            (home / folder).symlink_to((corpus / folder).resolve())

    return populate


def copy_shared(corpus: Path):
    """Fill a home with copies of ../shared/corpus laid out where each agent writes.

    Copies, not links: agentsview skips symlinked files. Files saved under
    another name get the name their agent gives them (``rollout-…``,
    ``session-…``); a ``sessions/`` part of the saved path is kept.
    """

    def place(source: Path, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)

    def populate(home: Path) -> None:
        shutil.copytree(corpus / "claude-code", home / ".claude" / "projects")
        for path in sorted((corpus / "codex").rglob("*.jsonl")):
            relative = path.relative_to(corpus / "codex")
            if path.name.endswith("history.jsonl"):
                target = Path("history.jsonl")
            elif "sessions" in relative.parts:
                target = Path(*relative.parts[relative.parts.index("sessions"):])
            else:
                name = path.name if path.name.startswith("rollout-") else f"rollout-2026-01-01T00-00-00-{path.name}"
                target = Path("sessions", "2026", "01", "01", name)
            place(path, home / ".codex" / target)
        for path in sorted((corpus / "gemini").rglob("*.json*")):
            owner = path.relative_to(corpus / "gemini").parts[0]
            name = "logs.json" if path.name.endswith("logs.json") else f"session-{path.name}"
            folder = "" if name == "logs.json" else "chats"
            place(path, home / ".gemini" / "tmp" / owner / folder / name)

    return populate


SESSION_FIELDS = ("start", "end", "parent", "tool calls", "output tokens")


def session_key(session_id: str) -> str:
    """A session's id as both tools know it: obelisk prefixes Codex and Gemini
    ids with their source and an agent's with its parent's."""
    key = session_id.removeprefix("codex:").removeprefix("gemini:")
    return key if ":agent-sidechain-" in key else key.rsplit(":", 1)[-1]


def session_differences(ours: dict, theirs: dict) -> list[str]:
    """Lines naming what the two keep differently of the sessions both keep
    (times compared to the second)."""
    lines = []
    for key in sorted(ours.keys() & theirs.keys()):
        cells = []
        for field in SESSION_FIELDS:
            mine, other = ours[key][field], theirs[key][field]
            if field in ("start", "end") and mine and other:
                mine, other = mine[:19].replace(" ", "T"), other[:19].replace(" ", "T")
            if (mine or None) != (other or None):
                cells.append(f"{field} {mine} / {other}")
        if cells:
            lines.append(f"{key}: " + "; ".join(cells))
    return lines


class Tool:
    name = ""
    count_sql = {"sessions": "SELECT count(*) FROM sessions", "messages": "SELECT count(*) FROM messages"}

    def __init__(self, executable: str, home: Path, populate):
        home = home.absolute()
        self.executable, self.home = executable, home
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        populate(home)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CODEX_HOME": str(home / ".codex"),
            "LANG": "C.UTF-8",
        }

    def db_mb(self) -> float:
        return sum(Path(f"{self.db}{s}").stat().st_size for s in ("", "-wal") if Path(f"{self.db}{s}").exists()) / 1e6

    def query(self, sql: str) -> list[tuple]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    def counts(self) -> dict:
        return {name: self.query(sql)[0][0] for name, sql in self.count_sql.items()}

    def sessions(self) -> dict[str, dict]:
        """Per session (by its id without the tool's prefixes): start, end, parent, tool calls, output tokens."""
        return {
            session_key(row[0]): dict(zip(SESSION_FIELDS, (*row[1:3], row[3] and session_key(row[3]), *row[4:])))
            for row in self.query(self.sessions_sql)
        }

    def per_file(self) -> dict[str, tuple[int, int]]:
        """Sessions and messages kept from each file, by path below the home."""
        return {
            str(Path(path).relative_to(self.home)): (sessions, messages)
            for path, sessions, messages in self.query(self.per_file_sql)
            if path
        }


class Obelisk(Tool):
    name = "obelisk"
    count_sql = {**Tool.count_sql, "linked": "SELECT count(*) FROM sessions WHERE parent_session_id IS NOT NULL"}
    per_file_sql = (
        "SELECT f.path, count(DISTINCT m.session_id), count(m.id) "
        "FROM source_files f LEFT JOIN messages m ON m.file_id = f.id GROUP BY f.id"
    )

    sessions_sql = (
        "SELECT s.id, s.started_at, s.ended_at, s.parent_session_id, "
        "(SELECT count(*) FROM tool_calls c WHERE c.session_id = s.id), s.output_tokens FROM sessions s"
    )

    @property
    def db(self) -> Path:
        return self.home / "obelisk.db"

    def sync(self) -> Run:
        return timed([self.executable, "ingest", "--db", str(self.db), "--json"], self.env)

    def serve_command(self, port: int) -> list[str]:
        return [sys.executable, "-m", "datasette", "serve", str(self.db), "-h", "127.0.0.1", "-p", str(port)]

    def search_path(self, word: str, limit: int) -> str:
        return f"/-/obelisk/api/session-query/sessions/search?{urllib.parse.urlencode({'query': word, 'limit': limit})}"

    @staticmethod
    def found(payload) -> int:
        return len(payload["items"])

    def files(self) -> int:
        return self.query("SELECT count(*) FROM source_files WHERE path NOT LIKE '%.meta.json'")[0][0]


class AgentsView(Tool):
    name = "agentsview"
    count_sql = {**Tool.count_sql, "linked": "SELECT count(*) FROM sessions WHERE coalesce(parent_session_id, '') != ''"}
    per_file_sql = (
        "SELECT s.file_path, count(DISTINCT s.id), count(m.id) "
        "FROM sessions s LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.file_path"
    )

    sessions_sql = (
        "SELECT s.id, s.started_at, s.ended_at, nullif(s.parent_session_id, ''), "
        "(SELECT count(*) FROM tool_calls c WHERE c.session_id = s.id), s.total_output_tokens FROM sessions s"
    )

    def __init__(self, *args):
        super().__init__(*args)
        self.env["AGENTSVIEW_NO_DAEMON"] = "1"  # a one-shot sync, no background server

    @property
    def db(self) -> Path:
        return self.home / ".agentsview" / "sessions.db"

    def sync(self) -> Run:
        return timed([self.executable, "sync"], self.env)

    def serve_command(self, port: int) -> list[str]:
        return [self.executable, "serve", "--no-sync", "--host", "127.0.0.1", "--port", str(port)]

    def search_path(self, word: str, limit: int) -> str:
        return f"/api/v1/search?{urllib.parse.urlencode({'q': word, 'limit': limit})}"

    @staticmethod
    def found(payload) -> int:
        return len(payload.get("results") or payload.get("sessions") or [])

    def files(self) -> int:
        log = (self.home / ".agentsview" / "debug.log").read_text()
        found = re.findall(r"discovered (\d+) files", log)
        return int(found[0]) if found else -1


def obelisk_executable() -> str:
    script = Path(sys.executable).with_name("obelisk")
    return str(script) if script.exists() else shutil.which("obelisk")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)


def query_words(obelisk: Obelisk, per_class: int) -> dict[str, list[str]]:
    """Words to search for: frequent ones (among the most common words of
    every 50th message) and rare ones (in one to five sessions)."""
    seen = collections.Counter()
    for (text,) in obelisk.query("SELECT substr(text, 1, 20000) FROM messages WHERE id % 50 = 0"):
        seen.update(set(re.findall(r"\b[a-z]{5,12}\b", text.lower())))
    rare = []
    for word in sorted(w for w, count in seen.items() if count == 1):
        sessions = obelisk.query(
            "SELECT count(DISTINCT session_id) FROM messages WHERE id IN "
            f"(SELECT rowid FROM messages_fts WHERE messages_fts MATCH '\"{word}\"')"
        )[0][0]
        if 1 <= sessions <= 5:
            rare.append(word)
        if len(rare) == per_class:
            break
    return {"frequent": [word for word, _ in seen.most_common()][10:10 + per_class], "rare": rare}


def search_speed(tools: list, words: dict[str, list[str]], limit: int = 20) -> dict:
    """Per tool and class: p50 and p95 milliseconds (best of three per query) and median sessions found."""
    results = {}
    for tool in tools:
        port = free_port()
        server = subprocess.Popen(tool.serve_command(port), env=tool.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"{tool.name} did not start serving")
                    time.sleep(0.2)
            for kind, queries in words.items():
                times, found = [], []
                for word in queries:
                    url = f"http://127.0.0.1:{port}{tool.search_path(word, limit)}"
                    found.append(tool.found(get_json(url)))  # also warms the caches
                    best = float("inf")
                    for _ in range(3):
                        started = time.perf_counter()
                        get_json(url)
                        best = min(best, time.perf_counter() - started)
                    times.append(best * 1000)
                times.sort()
                results[tool.name, kind] = (
                    statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))], statistics.median(found)
                )
        finally:
            server.terminate()
            server.wait(timeout=30)
    return results


def coverage(shared: Path, agentsview: str, workdir: Path) -> None:
    """Per file of the public logs: the sessions and messages each tool kept."""
    tools = [
        Obelisk(obelisk_executable(), workdir / "shared-obelisk", copy_shared(shared)),
        AgentsView(agentsview, workdir / "shared-agentsview", copy_shared(shared)),
    ]
    for tool in tools:
        tool.sync()
    ours, theirs = (tool.per_file() for tool in tools)
    files = sorted(p for p in ours.keys() | theirs.keys() if not p.endswith(".meta.json"))
    print(f"{'file (below HOME)':<100} {'obelisk':>15} {'agentsview':>15}")
    print(f"{'':<100} {'sessions  msgs':>15} {'sessions  msgs':>15}")
    for path in files:
        cells = [f"{c[0]:8} {c[1]:5}" if c else f"{'not read':>14}" for c in (ours.get(path), theirs.get(path))]
        print(f"{path:<100} {cells[0]:>15} {cells[1]:>15}")
    print("sessions both keep, where they differ (obelisk / agentsview):")
    for line in session_differences(*(tool.sessions() for tool in tools)):
        print(f"  {line}")
    for tool in tools:
        counts = tool.counts()
        kept = sum(1 for path in files if tool.per_file().get(path, (0, 0))[1])
        print(f"{tool.name}: {kept} of {len(files)} files gave messages; {counts['sessions']} sessions, "
              f"{counts['messages']} messages, {counts['linked']} sessions linked to a parent")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_corpus_options(parser)
    parser.add_argument("--rounds", type=int, default=1, help="cold-run pairs; the median pair is shown")
    parser.add_argument("--agentsview", default=shutil.which("agentsview"), help="the agentsview executable")
    parser.add_argument("--queries", type=int, default=20, help="searches per class (0: no search timing)")
    parser.add_argument("--shared", type=Path, help="compare what each keeps of this corpus folder instead")
    args = parser.parse_args(argv)
    if not args.agentsview:
        raise SystemExit("agentsview not found: pip install agentsview, or pass --agentsview PATH")
    if args.shared:
        coverage(args.shared, args.agentsview, args.workdir)
        return

    corpus = bench_corpus(args.workdir, args.size, args.seed, args.huge_line, args.newer_shapes)
    mb = corpus_bytes(corpus) / 1e6
    runs = args.workdir / "side-by-side"
    rounds = []
    for number in range(1, args.rounds + 1):
        tools = [
            Obelisk(obelisk_executable(), runs / "obelisk", link_generated(corpus)),
            AgentsView(args.agentsview, runs / "agentsview", link_generated(corpus)),
        ]
        cold = {tool.name: tool.sync() for tool in tools}
        ratio = cold["agentsview"].seconds / cold["obelisk"].seconds
        print(f"round {number}: obelisk {cold['obelisk'].seconds:.1f} s, agentsview "
              f"{cold['agentsview'].seconds:.1f} s, obelisk {ratio:.2f}x as fast", file=sys.stderr)
        rounds.append((ratio, cold, tools))
    # The homes of the last round are the ones on disk for the runs below.
    tools = rounds[-1][2]
    ratio, cold, _ = sorted(rounds, key=lambda r: r[0])[(len(rounds) - 1) // 2]
    noop = {tool.name: tool.sync() for tool in tools}
    appended, size = append_lines(corpus, 10)
    try:
        tail = {tool.name: tool.sync() for tool in tools}
    finally:
        os.truncate(appended, size)  # the next run measures the same corpus

    print(f"corpus: {mb:.1f} MB of JSONL (seed {args.seed}), cold runs: median of {len(rounds)}")
    print(f"{'':11} {'seconds':>8} {'CPU s':>7} {'MB/s':>6} {'peak RSS':>9} {'DB MB':>7} "
          f"{'files':>6} {'sessions':>9} {'messages':>9} {'no-op s':>8} {'+10 lines s':>12}")
    for tool in tools:
        run, counts = cold[tool.name], tool.counts()
        print(
            f"{tool.name:11} {run.seconds:8.1f} {run.cpu:7.1f} {mb / run.seconds:6.1f} {run.peak_rss_mb:7.0f}MB "
            f"{tool.db_mb():7.0f} {tool.files():6} {counts['sessions']:9,} {counts['messages']:9,} "
            f"{noop[tool.name].seconds:8.2f} {tail[tool.name].seconds:12.2f}"
        )
    ratios = ", ".join(f"{r:.2f}" for r, _, _ in rounds)
    print(f"obelisk cold ingest {ratio:.2f}x as fast as agentsview" + (f" (median of {ratios})" if len(rounds) > 1 else ""))
    if args.queries:
        words = query_words(tools[0], args.queries)
        speed = search_speed(tools, words)
        print(f"session search over HTTP, {args.queries} words per class, limit 20 (best of 3 per word):")
        print(f"{'':11} {'class':>9} {'p50 ms':>8} {'p95 ms':>8} {'sessions found (median)':>24}")
        for (name, kind), (p50, p95, found) in speed.items():
            print(f"{name:11} {kind:>9} {p50:8.1f} {p95:8.1f} {found:24.0f}")


if __name__ == "__main__":
    main()
