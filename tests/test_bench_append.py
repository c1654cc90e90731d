"""bench/append.py: a long session, then one line appended at a time, each ingest in a child."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_each_appended_line_is_read_alone(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "append.py"), "--lines", "40", "--appends", "2", "--workdir", str(tmp_path)],
        capture_output=True, text=True, check=True, env=env, cwd=tmp_path,
    ).stdout.splitlines()
    assert [re.sub(r"[0-9.]+ s|[0-9]+ MB", "_", row) for row in out] == [
        "cold ingest of 40 lines: _, _ CPU, peak RSS _",
        "line 41 appended: _, _ CPU, peak RSS _ (1 line read)",
        "line 42 appended: _, _ CPU, peak RSS _ (1 line read)",
    ]
    log = tmp_path / "long-session-40" / ".claude" / "projects" / "-home-dev-long"
    assert [len(p.read_text().splitlines()) for p in log.glob("*.jsonl")] == [42]
