"""Live-session benchmark: one line appended to a long session, then one ingest.

Writes one Claude Code session of ``--lines`` lines (a chain of prompts, tool
calls, their results and answers, one second apart), ingests it once, then
appends one line at a time and ingests after each, every ingest in a freshly
spawned interpreter so its CPU time and peak RSS are its own.

    python bench/append.py --lines 300000 --appends 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SESSION = "5e5e5e5e-0000-4000-8000-000000000001"
WORDS = ("alpha beta gamma delta epsilon zeta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
         "upsilon phi chi psi omega refactor parser cursor ingest derive session window token cache").split()
USAGE = {"input_tokens": 3, "output_tokens": 20, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}

# Run in a child: ingest, then print wall seconds, CPU seconds, peak RSS (MB) and lines read.
CHILD = """
import resource, sys, time
from datasette_obelisk.store.ingest import ingest
start = time.perf_counter()
summary = ingest(sys.argv[1], {"claude": sys.argv[2]})
used = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - start, used.ru_utime + used.ru_stime, used.ru_maxrss / 1024, summary.lines)
"""


def log_path(claude: Path) -> Path:
    return claude / "projects" / "-home-dev-long" / f"{SESSION}.jsonl"


def words(i: int, n: int = 12) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n))


def line(i: int) -> str:
    """Line ``i`` of the chain: a prompt, a tool call, its result, an answer, and again."""
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_760_000_000 + i)) + ".000Z"
    record = {"parentUuid": f"u-{i - 1:08d}" if i else None, "isSidechain": False, "userType": "external",
              "cwd": "/home/dev/long", "sessionId": SESSION, "version": "2.0.14", "gitBranch": "main",
              "uuid": f"u-{i:08d}", "timestamp": moment}
    kind = i % 4
    if kind == 0:
        record.update(type="user", message={"role": "user", "content": "please " + words(i)})
    elif kind == 2:
        record.update(type="user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i - 1}", "content": "file body " + words(i, 20)}]})
    else:
        content = ([{"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"file_path": f"/home/dev/long/f{i % 50}.py"}}]
                   if kind == 1 else [{"type": "text", "text": "done: " + words(i)}])
        record.update(type="assistant", requestId=f"req_{i}", message={
            "id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": content, "stop_reason": "tool_use" if kind == 1 else "end_turn", "usage": USAGE})
    return json.dumps(record) + "\n"


def timed_ingest(db: Path, claude: Path) -> tuple[float, float, float, int]:
    out = subprocess.run([sys.executable, "-P", "-c", CHILD, str(db), str(claude)],  # (-P: not the working folder's code)
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), int(out[3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--appends", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args()
    work = args.workdir / f"long-session-{args.lines}"
    claude, db = work / ".claude", work / "obelisk.db"
    path = log_path(claude)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fp:
        fp.writelines(line(i) for i in range(args.lines))
    for old in work.glob("obelisk.db*"):
        old.unlink()
    seconds, cpu, rss, lines = timed_ingest(db, claude)
    print(f"cold ingest of {lines:,} lines: {seconds:.2f} s, {cpu:.2f} s CPU, peak RSS {rss:.0f} MB")
    for n in range(args.lines, args.lines + args.appends):
        with open(path, "a") as fp:
            fp.write(line(n))
        seconds, cpu, rss, lines = timed_ingest(db, claude)
        print(f"line {n + 1:,} appended: {seconds:.3f} s, {cpu:.3f} s CPU, peak RSS {rss:.0f} MB ({lines} line read)")


if __name__ == "__main__":
    main()
