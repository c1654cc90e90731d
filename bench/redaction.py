"""Throughput of secret redaction alone (no JSON parsing, no database).

    .venv/bin/python bench/redaction.py [--mb 30] [--engine re2|re] [--seed 0]

1. A realistic mix: str fields shaped like those an ingester stores (ids,
   messages, code listings, shell and JSON output, a few base64 blobs), one in
   300 holding a planted fake secret: once with ``Redactor.redact`` per field,
   once with ``Redactor.redact_many`` over all of them.
2. Adversarial inputs, 1 MB and 4 MB each: the time per MB must not grow with
   the size (linear time).

Prints MB/s (1 MB = 10^6 characters) of CPU time, best of --repeat runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from datasette_obelisk.store.redaction import Redactor  # noqa: E402
from secret_samples import agent_log_texts  # noqa: E402


def adversarial_inputs(size: int) -> dict[str, str]:
    """Inputs built to make a naive regex engine slow, each about ``size`` chars."""

    def repeat(unit: str) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    return {
        "repeated -----BEGIN headers": repeat("-----BEGIN RSA PRIVATE KEY-----AAAA"),
        "BEGIN header, endless body": "-----BEGIN PRIVATE KEY-----\n" + repeat("QUJD\n"),
        "run of key-like chars": repeat("A"),
        "run of base64url chars": repeat("aZ09-_"),
        "repeated ghp_ prefixes": repeat("ghp_"),
        "repeated eyJ segments": repeat("eyJhbGciOi."),
        "repeated password= keys": repeat("password="),
        "repeated token: keys": repeat("token: "),
        "repeated scheme://user:": repeat("a://b:"),
        "repeated sk- prefixes": repeat(" sk-"),
        "repeated Authorization: Bearer": repeat("Authorization: Bearer "),
        "many real-shaped tokens": repeat("ghp_" + "aB3dE5" * 6 + " "),
        "repeated [REDACTED: markers": repeat("[REDACTED:github-pat:0123abcd]"),
    }


def best_time(function, repeat: int, make_redactor) -> float:
    """Best CPU time of ``function(redactor)``, a fresh redactor each run (its
    memo of short texts starts empty). CPU time, not wall time, so that other
    jobs on the machine do not count; redaction is single-threaded."""
    times = []
    for _ in range(repeat):
        redactor = make_redactor()
        start = time.process_time()
        function(redactor)
        times.append(time.process_time() - start)
    return min(times)


def run_realistic(make_redactor, texts: list[str], repeat: int) -> None:
    total = sum(len(text) for text in texts)
    redactor = make_redactor()
    changed = sum(1 for text in texts if redactor.redact(text) is not text)
    print(f"realistic mix: {total / 1e6:.1f} MB in {len(texts):,} fields, {changed} fields redacted")
    ways = {
        "redact(field), one call per field": lambda r: [r.redact(text) for text in texts],
        "redact_many(fields), one call": lambda r: r.redact_many(texts),
    }
    for name, function in ways.items():
        seconds = best_time(function, repeat, make_redactor)
        print(f"  {name:36s} {total / 1e6 / seconds:6.1f} MB/s ({seconds:.2f} s)")


def run_adversarial(make_redactor, repeat: int) -> None:
    print("adversarial inputs (MB/s at 1 MB -> 4 MB; equal figures mean linear time):")
    small, large = adversarial_inputs(1_000_000), adversarial_inputs(4_000_000)
    for name in small:
        rates = []
        for text in (small[name], large[name]):
            seconds = best_time(lambda r: r.redact(text), repeat, make_redactor)
            rates.append(len(text) / 1e6 / seconds)
        print(f"  {name:34s} {rates[0]:8.1f} -> {rates[1]:8.1f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=30, help="size of the realistic mix")
    parser.add_argument("--engine", choices=["re2", "re"], default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-adversarial", action="store_true")
    args = parser.parse_args()

    def make_redactor():
        return Redactor(key=b"bench-key", engine=args.engine)

    print(f"{make_redactor()!r}, Python {sys.version.split()[0]}")
    texts = agent_log_texts(args.seed, int(args.mb * 1_000_000))
    run_realistic(make_redactor, texts, args.repeat)
    if not args.skip_adversarial:
        run_adversarial(make_redactor, args.repeat)


if __name__ == "__main__":
    main()
