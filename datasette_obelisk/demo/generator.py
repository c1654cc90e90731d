"""Deterministic synthetic corpus of Claude Code, Codex CLI and Gemini CLI session logs.

Used by the demo (when a user has no logs of their own), by tests and by
benchmarks::

    from datasette_obelisk.demo.generator import generate
    stats = generate(Path("/tmp/corpus"), seed=1, target_bytes=50_000_000)

writes, exactly as the real tools lay them out::

    /tmp/corpus/.claude/projects/<escaped cwd>/<session id>.jsonl
    /tmp/corpus/.claude/projects/<escaped cwd>/agent-<8 hex>.jsonl                    (2.0.x)
    /tmp/corpus/.claude/projects/<escaped cwd>/<session id>/subagents/agent-<id>.jsonl (2.1.x)
    /tmp/corpus/.claude/projects/<escaped cwd>/<session id>/subagents/agent-<id>.meta.json
    /tmp/corpus/.codex/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl
    /tmp/corpus/.gemini/tmp/<sha256 of cwd>/chats/session-<YYYY-MM-DDThh-mm>-<8 hex>.json[l]  (gemini=True)
    /tmp/corpus/.claude/history.jsonl, /tmp/corpus/.codex/history.jsonl                      (prompt_logs=True)

The same seed and arguments always produce byte-identical trees: every id,
timestamp and word comes from ``random.Random`` streams derived from the seed.
Lines are written as they are produced; multi-megabyte tool outputs are
streamed from a repeated chunk, so memory stays small at any corpus size.

Every shape a parser has to handle is planted at least once: Claude Code
files of the 1.0.x, 2.0.x, early 2.1.x and late 2.1.x eras with all three
subagent layouts and a compaction summariser transcript, streaming-split
assistant lines, rewinds, compactions (one of them going on in a new file),
titles, meta / progress / attachment / metadata lines; Codex rollouts with
reasoning, exec and apply_patch calls, compaction, a fork and a spawned
subagent; Gemini chats (when asked for) as whole documents and as append logs
with re-appended replies, tool responses and rewinds. That takes about 300 KB,
the smallest corpus; from about 350 KB up ``target_bytes`` is met within 10%
(usually within 1%). ``GenerateStats`` reports what was planted, counted the
way ``tests/test_generator.py`` recounts it from the files.

``newer_shapes=True`` adds, once each and after the rest (which stays byte for
byte the same), what late Claude Code 2.1.x and Codex 0.171 write besides: a
``custom-title.json``, file paths in other spellings, a fork of a fork, a
multi-agent parent's items and context, a review kept as items (about 180 KB).
"""

from __future__ import annotations

import base64
import hashlib
import math
import random
import string
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

from ..sources.codex import HANDOVER_END, HANDOVER_OPENING

__all__ = ["GenerateStats", "SourceStats", "escape_cwd", "generate"]

KB = 1024
MB = 1024 * 1024
BIG_SHARE = 0.25  # share of bytes in multi-MB tool outputs (default mix)
CHUNK_BYTES = 48 * KB  # size of the repeated chunk big outputs are built from
NEWER_BYTES = 200 * KB  # the scale the newer shapes are written at (short texts, small files)


# ---------------------------------------------------------------------------
# Statistics


@dataclass
class SourceStats:
    """What was written for one source, and the shapes planted in it.

    Claude: ``main_sessions`` are ``<session id>.jsonl`` files,
    ``subagent_transcripts`` every ``agent-*.jsonl`` (``compact_agents`` of
    them are ``agent-acompact-*``), ``inline_sidechains`` the 1.0.x sidechain
    roots inside main files; ``messages`` are lines with a ``uuid``,
    ``tool_calls`` ``tool_use`` blocks, ``failed_tool_results`` ``tool_result``
    blocks with ``is_error``, ``rewinds`` the extra typed user prompts under
    one parent, ``compactions`` ``compact_boundary`` lines, ``split_responses``
    API responses written as several lines; ``continued_files`` are the main
    sessions a compaction went on in (2.1: a new file opening with the titles
    copied from the compacted one and its boundary, whose ``logicalParentUuid``
    names that one's last line).

    Codex: ``main_sessions`` are rollouts not spawned by another thread
    (``forks`` of them copy a parent's history), ``subagent_transcripts``
    spawned rollouts; ``messages`` are ``response_item/message`` lines,
    ``tool_calls`` ``function_call`` + ``custom_tool_call`` lines,
    ``failed_tool_results`` outputs reporting a non-zero exit code,
    ``compactions`` ``compacted`` lines. Raw per-line counts include the
    lines a fork copied; ``replayed_*`` say how many of them were copies.

    ``longest_line`` is in bytes, newline included; ``big_outputs`` counts the
    multi-megabyte tool outputs planted by the default mix or
    ``big_output_every``.

    ``line_types`` counts lines by ``type`` (``system/<subtype>`` for Claude
    system lines, ``<type>/<payload.type>`` for Codex items and events).
    """

    files: int = 0
    bytes: int = 0
    lines: int = 0
    sessions: int = 0
    main_sessions: int = 0
    subagent_transcripts: int = 0
    compact_agents: int = 0
    inline_sidechains: int = 0
    forks: int = 0
    messages: int = 0
    tool_calls: int = 0
    failed_tool_results: int = 0
    rewinds: int = 0
    compactions: int = 0
    continued_files: int = 0
    split_responses: int = 0
    big_outputs: int = 0
    longest_line: int = 0
    replayed_lines: int = 0
    replayed_messages: int = 0
    replayed_tool_calls: int = 0
    prompt_log_lines: int = 0  # lines of the prompt log (history.jsonl), with prompt_logs
    prompt_log_orphans: int = 0  # sessions only the prompt log names: their transcripts were cleaned up
    line_types: dict[str, int] = field(default_factory=dict)

    def count_type(self, kind: str) -> None:
        self.line_types[kind] = self.line_types.get(kind, 0) + 1


@dataclass
class GenerateStats:
    """Totals and per-source details of a generated corpus."""

    claude: SourceStats = field(default_factory=SourceStats)
    codex: SourceStats = field(default_factory=SourceStats)
    gemini: SourceStats = field(default_factory=SourceStats)
    huge_line_bytes: int = 0  # size of the planted huge line (0 if none)

    def _total(self, name: str) -> int:
        return sum(getattr(source, name) for source in (self.claude, self.codex, self.gemini))

    @property
    def files(self) -> int:
        return self._total("files")

    @property
    def bytes(self) -> int:
        return self._total("bytes")

    @property
    def lines(self) -> int:
        return self._total("lines")

    @property
    def sessions(self) -> int:
        return self._total("sessions")


# ---------------------------------------------------------------------------
# Small helpers

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def escape_cwd(cwd: str) -> str:
    """Claude Code's project folder name: every non-alphanumeric char -> '-'."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


def _ms(year: int, month: int, day: int) -> int:
    return int((datetime(year, month, day, tzinfo=timezone.utc) - _EPOCH).total_seconds() * 1000)


def _iso(ms: int) -> str:
    """ISO-8601 UTC with milliseconds and ``Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def _version_at(versions: list[str], window: tuple[int, int], ms: int) -> str:
    """The version of ``versions`` (oldest first) current at ``ms``."""
    lo, hi = window
    return versions[max(0, min(len(versions) - 1, (ms - lo) * len(versions) // max(1, hi - lo)))]


def _esc(text: str) -> bytes:
    """``text`` JSON-escaped, without the quotes."""
    return orjson.dumps(text)[1:-1]


class _Clock:
    """Milliseconds since the epoch, shared by the threads of one session."""

    __slots__ = ("ms", "rng")

    def __init__(self, ms: int, rng: random.Random):
        self.ms = ms
        self.rng = rng

    def tick(self, lo: int = 20, hi: int = 900) -> str:
        self.ms += lo + int(self.rng.random() * (hi - lo))
        return _iso(self.ms)

    def now(self) -> str:
        return _iso(self.ms)


class _Ids:
    """Identifiers derived from one RNG (never uuid4, never the wall clock)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def uuid4(self) -> str:
        h = "%032x" % self.rng.getrandbits(128)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

    def uuid7(self, ms: int) -> str:
        h = "%012x%020x" % (ms, self.rng.getrandbits(80))
        return f"{h[:8]}-{h[8:12]}-7{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

    def hex(self, n: int) -> str:
        return "%0*x" % (n, self.rng.getrandbits(4 * n))

    def b62(self, n: int) -> str:
        return "".join(self.rng.choices(_B62, k=n))


class _Big:
    """A string too large to hold: ``head + chunk * repeat + tail``.

    Written JSON-escaped piece by piece by ``_JsonlFile.write``.
    """

    __slots__ = ("head", "chunk", "repeat", "tail")

    def __init__(self, head: bytes, chunk: bytes, repeat: int, tail: bytes):
        self.head, self.chunk, self.repeat, self.tail = head, chunk, repeat, tail

    @property
    def size(self) -> int:
        return len(self.head) + len(self.chunk) * self.repeat + len(self.tail)


class _JsonlFile:
    """An output file; counts what goes into it."""

    def __init__(self, path: Path, stats: SourceStats):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.stats = stats
        self.bytes = 0
        self._f = open(path, "wb", buffering=256 * KB)
        stats.files += 1

    def write(self, obj: dict, kind: str, bigs: dict[str, _Big] | None = None) -> int:
        """Write one line; ``bigs`` maps placeholder strings to big strings."""
        data = orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
        if not bigs:
            self._f.write(data)
            size = len(data)
        else:
            size = self._write_with_bigs(data, bigs)
        self.bytes += size
        self.stats.bytes += size
        self.stats.lines += 1
        if size > self.stats.longest_line:
            self.stats.longest_line = size
        self.stats.count_type(kind)
        return size

    def _write_with_bigs(self, data: bytes, bigs: dict[str, _Big]) -> int:
        markers = sorted(
            (data.index(b'"' + token.encode() + b'"'), token) for token in bigs
        )
        size = 0
        pos = 0
        write = self._f.write
        for index, token in markers:
            big = bigs[token]
            write(data[pos : index + 1])
            write(big.head)
            for _ in range(big.repeat):
                write(big.chunk)
            write(big.tail)
            size += index + 1 - pos + big.size
            pos = index + 1 + len(token)
        write(data[pos:])
        return size + len(data) - pos

    def write_raw(self, data: bytes, kind: str) -> None:
        """Write an already serialised line (a copied one)."""
        self._f.write(data)
        self.bytes += len(data)
        self.stats.bytes += len(data)
        self.stats.lines += 1
        self.stats.count_type(kind)

    def close(self) -> None:
        self._f.close()


def _write_json_file(path: Path, obj: dict, stats: SourceStats) -> None:
    """A small JSON document (a ``.meta.json`` sidecar), newline-terminated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
    path.write_bytes(data)
    stats.files += 1
    stats.bytes += len(data)
    stats.lines += 1


# ---------------------------------------------------------------------------
# Vocabulary

PROJECTS = [
    ("billing-api", "python"), ("tidepool", "python"), ("harbor-cli", "go"),
    ("ledger-sync", "python"), ("orchard-web", "typescript"), ("nimbus-deploy", "go"),
    ("quill-docs", "typescript"), ("atlas-search", "rust"), ("beacon-notify", "python"),
    ("cobalt-auth", "go"), ("drift-etl", "python"), ("ember-ui", "typescript"),
    ("fathom-metrics", "go"), ("granite-db", "rust"), ("helix-scheduler", "python"),
    ("iris-gateway", "go"), ("juniper-mobile", "typescript"), ("kestrel-worker", "python"),
    ("lumen-reports", "python"), ("mosaic-cms", "typescript"), ("nova-chat", "typescript"),
    ("onyx-storage", "rust"), ("prism-analytics", "python"), ("quartz-ml", "python"),
    ("relay-webhooks", "go"), ("sable-inventory", "python"), ("tundra-backup", "rust"),
    ("umbra-proxy", "rust"), ("vertex-graph", "typescript"), ("willow-forms", "typescript"),
    ("xenon-bench", "rust"), ("yarrow-crm", "python"), ("zephyr-queue", "go"),
    ("acorn-blog", "typescript"), ("bramble-game", "rust"), ("cinder-pipeline", "python"),
]
SUBDIRS = ["web", "services/api", "infra", "packages/core"]

NOUNS = [
    "user", "invoice", "order", "session", "token", "report", "event", "job", "payment",
    "customer", "project", "message", "upload", "tenant", "webhook", "metric", "comment",
    "ticket", "account", "subscription", "export", "schedule", "migration", "index",
]
FN_VERBS = [
    "load", "parse", "validate", "fetch", "sync", "render", "apply", "retry", "build",
    "resolve", "normalize", "export", "import", "schedule", "refresh", "archive",
    "compute", "serialize", "migrate", "reindex", "dispatch", "flush",
]
TOPICS = [
    "database migration", "pytest fixtures", "docker compose setup", "auth middleware",
    "CI pipeline", "rate limiter", "cursor pagination", "websocket reconnect logic",
    "CSV export", "search index", "cache invalidation", "type hints", "logging config",
    "error handling", "retry with exponential backoff", "feature flags", "OAuth callback",
    "JWT refresh flow", "N+1 query", "memory leak", "flaky test", "release script",
    "Kubernetes manifests", "nginx config", "GraphQL resolvers", "serializer",
    "background worker", "cron schedule", "S3 upload path", "webhook handler",
    "timezone handling", "unicode normalization", "dependency upgrade", "lint errors",
    "mypy errors", "benchmark suite", "connection pool", "query plan", "full-text search",
    "schema validation", "API versioning", "config loader", "CLI argument parsing",
    "i18n strings", "dark mode toggle", "build cache", "Makefile targets",
    "healthcheck endpoint", "metrics exporter", "password reset flow", "email templates",
    "async task queue", "scheduler deadlock", "race condition in the cache", "CORS settings",
    "Dockerfile", "SQLite WAL mode", "Postgres index", "Redis cache", "API client",
]
PROMPT_VERBS = [
    "fix", "refactor", "add tests for", "speed up", "clean up", "document", "review",
    "migrate", "debug", "rewrite", "simplify", "harden", "profile", "split up",
]
SYMPTOMS = [
    "requests time out after 30 seconds", "the test suite hangs on CI",
    "users get a 500 on login", "the migration fails on Postgres 16",
    "memory grows until the container is OOM-killed", "the docker image is over 2 GB",
    "the build takes twelve minutes", "dates are off by one hour after the DST change",
    "pagination skips records on the last page", "the webhook fires twice",
    "mypy reports forty new errors", "pytest is flaky when run in parallel",
    "the CLI ignores the --config flag", "search returns nothing for accented words",
    "the worker stops consuming jobs after a Redis restart", "CSV exports are truncated",
    "the refactor broke the import of the settings module", "docker compose up never becomes healthy",
]
CAUSES = [
    "a missing `await` before `{fn}`", "an off-by-one in the cursor pagination",
    "a stale cache key that ignores the tenant id", "a module-scoped fixture sharing one database connection",
    "the Dockerfile copying the whole repo before installing dependencies",
    "a naive datetime compared with an aware one", "a retry loop without jitter",
    "an unbounded dict used as a cache in `{fn}`", "the migration adding a NOT NULL column without a default",
    "two workers racing on the same row without `SELECT ... FOR UPDATE`",
    "the healthcheck hitting `/` instead of `/healthz`", "the settings module reading the environment at import time",
    "a regex that backtracks catastrophically on long inputs", "the connection pool being created per request",
]
CHANGES = [
    "the query uses a single JOIN instead of one query per row",
    "the retry helper backs off exponentially with jitter",
    "the fixture is function-scoped and rolls back after each test",
    "the webhook handler is idempotent, keyed on the delivery id",
    "config values are validated at startup with a clear error message",
    "`{fn}` streams rows instead of building the whole list in memory",
    "the migration backfills the column in batches of 1,000 rows",
    "the Docker image uses a multi-stage build and a slim base",
    "timestamps are stored as UTC and converted only for display",
    "the cache key includes the tenant id and the schema version",
    "the pool is created once at startup and closed on shutdown",
    "the CLI reads `--config` before falling back to the environment",
]
CAVEATS = [
    "the migration locks the table briefly on large datasets",
    "we should add an index on `created_at` before this ships",
    "the old endpoint is still used by the mobile client",
    "I did not touch the docker-compose override file",
    "the benchmark numbers are from my laptop, not from CI",
    "this changes the error message format that the frontend parses",
    "the refactor keeps the old function as a thin wrapper for one release",
    "pytest-xdist still needs the database fixture to use separate schemas",
]
ERRORS = [
    "ModuleNotFoundError: No module named '{pkg}.{noun}s'",
    "sqlalchemy.exc.ProgrammingError: column \"archived_at\" does not exist",
    "TypeError: Cannot read properties of undefined (reading 'map')",
    "panic: runtime error: invalid memory address or nil pointer dereference",
    "error[E0382]: borrow of moved value: `config`",
    "AssertionError: assert 404 == 200",
    "connect ECONNREFUSED 127.0.0.1:5432",
    "Error response from daemon: driver failed programming external connectivity: port is already allocated",
    "KeyError: 'DATABASE_URL'",
    "django.db.utils.IntegrityError: duplicate key value violates unique constraint",
]
FOLLOW_UPS = [
    "ok go ahead", "yes, do it", "looks good, commit it with a short message",
    "can you also add a test for the empty case?", "run the full test suite again please",
    "great. now update the README", "hmm, that broke the docker build, can you check?",
    "let's keep the old behaviour behind a feature flag", "push it and open a PR",
    "why did you change the migration? revert that part",
]
BRANCHES = ["main", "main", "main", "master", "develop"]

LANG_FILES = {
    "python": [
        "src/{pkg}/models.py", "src/{pkg}/api.py", "src/{pkg}/cli.py", "src/{pkg}/db.py",
        "src/{pkg}/config.py", "src/{pkg}/cache.py", "src/{pkg}/worker.py",
        "src/{pkg}/migrations/0007_add_{noun}_index.py", "tests/test_api.py",
        "tests/test_models.py", "tests/conftest.py", "Dockerfile", "docker-compose.yml",
        "pyproject.toml", "README.md", ".github/workflows/ci.yml",
    ],
    "typescript": [
        "src/components/{Type}List.tsx", "src/components/{Type}Form.tsx", "src/lib/api.ts",
        "src/lib/cache.ts", "src/hooks/use{Type}.ts", "src/server/routes.ts",
        "src/server/db.ts", "src/__tests__/api.test.ts", "package.json", "tsconfig.json",
        "Dockerfile", "docker-compose.yml", "README.md", ".github/workflows/ci.yml",
    ],
    "go": [
        "cmd/{name}/main.go", "internal/store/store.go", "internal/store/store_test.go",
        "internal/api/handlers.go", "internal/api/middleware.go", "internal/config/config.go",
        "internal/worker/worker.go", "migrations/0007_add_{noun}_index.sql", "go.mod",
        "Dockerfile", "docker-compose.yml", "Makefile", "README.md",
    ],
    "rust": [
        "src/main.rs", "src/lib.rs", "src/config.rs", "src/store.rs", "src/api.rs",
        "src/error.rs", "tests/integration.rs", "benches/throughput.rs", "Cargo.toml",
        "Dockerfile", "README.md", ".github/workflows/ci.yml",
    ],
}
LANG_CODE_FENCE = {"python": "python", "typescript": "ts", "go": "go", "rust": "rust"}


_FORMATTER = string.Formatter()
_FIELD_POOLS = {"topic": TOPICS, "noun": NOUNS, "caveat": CAVEATS, "symptom": SYMPTOMS, "verb": PROMPT_VERBS}


def _pascal(words: str) -> str:
    return "".join(w.capitalize() for w in words.replace("-", "_").split("_"))


def _camel(words: str) -> str:
    p = _pascal(words)
    return p[0].lower() + p[1:]


class _Text:
    """Pools of English and code built once from the seed, then sampled."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.random = rng.random
        self.short = False  # terse prose for very small corpora
        self._fields: dict[str, list[str]] = {}
        self._files: dict[str, list[str]] = {}
        self._fns = {
            lang: [(_camel(f"{v}_{n}") if lang in ("typescript", "go") else f"{v}_{n}") for v in FN_VERBS for n in NOUNS]
            for lang in LANG_FILES
        }
        self.sentences = {lang: [self._sentence(lang) for _ in range(900)] for lang in LANG_FILES}
        self.thoughts = {lang: [self._thought(lang) for _ in range(400)] for lang in LANG_FILES}
        self.snippets = {lang: [self._snippet(lang) for _ in range(160)] for lang in LANG_FILES}
        self.signature_pool = base64.b64encode(rng.randbytes(96 * KB)).decode()

    # -- names ---------------------------------------------------------------

    def pick(self, seq: list):
        """``rng.choice`` without its overhead (hot path)."""
        return seq[int(self.random() * len(seq))]

    def fn(self, lang: str = "python") -> str:
        return self.pick(self._fns[lang])

    def file(self, lang: str, project: str) -> str:
        files = self._files.get(project)
        if files is None:
            files = self._files[project] = [self._new_file(lang, project) for _ in range(40)]
        return self.pick(files)

    def _new_file(self, lang: str, project: str) -> str:
        return self.rng.choice(LANG_FILES[lang]).format(
            pkg=project.split("-")[0], name=project, noun=self.rng.choice(NOUNS),
            Type=_pascal(self.rng.choice(NOUNS)),
        )

    def fill(self, template: str, lang: str, project: str = "app") -> str:
        """``template`` with each ``{field}`` it names drawn at random."""
        fields = self._fields.get(template)
        if fields is None:
            fields = self._fields[template] = [f for _, f, _, _ in _FORMATTER.parse(template) if f]
        if not fields:
            return template
        return template.format(**{f: self._field(f, lang, project) for f in fields})

    def _field(self, name: str, lang: str, project: str) -> str | int:
        pick = self.pick
        if name in ("file", "file2"):
            return self.file(lang, project)
        if name == "fn":
            return self.fn(lang)
        if name in ("n", "m"):
            return int(self.random() * (240 if name == "n" else 9)) + 1
        if name == "pkg":
            return project.split("-")[0]
        if name == "cmd":
            return pick(_TEST_COMMANDS[lang])
        if name in ("cause", "change"):
            return pick(CAUSES if name == "cause" else CHANGES).replace("{fn}", self.fn(lang))
        return pick(_FIELD_POOLS[name])

    # -- prose -----------------------------------------------------------------

    def _sentence(self, lang: str) -> str:
        return self.fill(self.rng.choice(_ANSWER_SENTENCES), lang)

    def _thought(self, lang: str) -> str:
        return self.fill(self.rng.choice(_THINKING_SENTENCES), lang)

    def prose(self, lang: str, n: int) -> str:
        return " ".join(self.rng.choices(self.sentences[lang], k=n))

    def paragraphs(self, lang: str, n: int) -> str:
        return "\n\n".join(self.prose(lang, self.rng.randint(2, 5)) for _ in range(n))

    def thinking(self, lang: str) -> str:
        return " ".join(self.rng.choices(self.thoughts[lang], k=self.rng.randint(2, 4 if self.short else 12)))

    def signature(self) -> str:
        n = self.rng.randint(100, 300) if self.short else self.rng.randint(200, 1600)
        start = self.rng.randrange(0, len(self.signature_pool) - n)
        return "E" + self.signature_pool[start : start + n]

    def prompt(self, lang: str, project: str, *, opening: bool = False) -> str:
        """A prompt; one that opens a session is never a bare follow-up ("ok go ahead")."""
        r = self.rng.random()
        if r < 0.15 and not opening:
            return self.rng.choice(FOLLOW_UPS)
        text = self.fill(self.rng.choice(_PROMPTS), lang, project)
        text = text[0].upper() + text[1:]
        if r > 0.85:
            error = self.fill(self.rng.choice(ERRORS), lang, project)
            text += f"\n\n```\n{self.traceback(lang, project)}\n{error}\n```"
        elif r > 0.75:
            text += "\n\n" + self.code_block(lang)
        return text

    def answer(self, lang: str, short: bool = False) -> str:
        if short or (self.short and self.random() < 0.8):
            return self.prose(lang, self.rng.randint(1, 3))
        text = self.paragraphs(lang, self.rng.randint(1, 3))
        if self.rng.random() < 0.35:
            text += "\n\n" + self.code_block(lang) + "\n\n" + self.prose(lang, 2)
        if self.rng.random() < 0.3:
            items = "\n".join(f"- {s}" for s in self.rng.choices(self.sentences[lang], k=self.rng.randint(2, 5)))
            text += "\n\nSummary of changes:\n" + items
        return text

    def hex_id(self) -> str:
        """A short git commit hash."""
        return "%07x" % self.rng.getrandbits(28)

    def title(self, lang: str) -> str:
        topic = self.rng.choice(TOPICS)
        verb = self.rng.choice(PROMPT_VERBS)
        return f"{verb.capitalize()} {topic}"

    # -- code --------------------------------------------------------------------

    def _snippet(self, lang: str) -> str:
        template = self.rng.choice(_SNIPPETS[lang])
        noun = self.rng.choice(NOUNS)
        fn = f"{self.rng.choice(FN_VERBS)}_{noun}"
        return template.format(
            fn=fn, Fn=_pascal(fn), fnc=_camel(fn), noun=noun, Type=_pascal(noun),
            n=self.rng.randint(2, 500), doc=self.fill(self.rng.choice(_DOC_LINES), lang),
            case=self.rng.choice(["empty", "unicode", "large_page", "expired", "duplicate", "missing_tenant"]),
        )

    def code(self, lang: str, min_lines: int) -> str:
        parts: list[str] = [_HEADERS[lang]]
        lines = 0
        while lines < min_lines:
            snippet = self.rng.choice(self.snippets[lang])
            parts.append(snippet)
            lines += snippet.count("\n") + 2
        return "\n\n".join(parts) + "\n"

    def code_block(self, lang: str) -> str:
        return f"```{LANG_CODE_FENCE[lang]}\n{self.rng.choice(self.snippets[lang])}\n```"

    def traceback(self, lang: str, project: str) -> str:
        if lang != "python":
            return f"    at {self.fn(lang)} ({self.file(lang, project)}:{self.rng.randint(3, 400)})"
        frames = [
            f'  File "/home/dev/projects/{project}/{self.file(lang, project)}", line {self.rng.randint(3, 400)}, in {self.fn(lang)}'
            for _ in range(self.rng.randint(2, 5))
        ]
        return "Traceback (most recent call last):\n" + "\n".join(frames)


_PROMPTS = [
    "{verb} the {topic} in `{file}`.",
    "The {topic} is broken: {symptom}. Can you take a look?",
    "Can you {verb} the {topic}? Keep the public API stable and add pytest coverage.",
    "`{cmd}` fails since yesterday and I think it's the {topic}. Please investigate and fix it.",
    "Let's {verb} the {topic}. Read `{file}` and `{file2}` first, then propose a plan before editing anything.",
    "Quick question: any idea why {symptom}?",
    "Write a database migration for the {topic} and make sure it runs inside docker compose.",
    "Refactor `{fn}`, it's doing too much. Split it up and keep behaviour identical.",
    "Review the changes on this branch and tell me what could break in production. Focus on the {topic}.",
    "We need to {verb} the {topic} before the release. Start with `{file}`.",
    "Add a pytest regression test for this: {symptom}.",
    "Can you profile `{fn}`? It's the hot path for the {topic} and it got slow after the refactor.",
    "Set up the {topic} for local development with docker and document it in the README.",
]
_ANSWER_SENTENCES = [
    "I'll start by reading `{file}` to see how the {topic} is wired up.",
    "Let me run `{cmd}` to reproduce the problem first.",
    "The root cause is {cause}.",
    "I've updated `{file}` so that {change}.",
    "All {n} tests pass now, including {m} new ones for the {topic}.",
    "Next I'll refactor `{fn}` so the {topic} logic lives in one place.",
    "One caveat: {caveat}.",
    "The {topic} now has pytest coverage for the edge cases you mentioned.",
    "I checked `{file2}` as well and it doesn't need changes.",
    "This keeps the public API unchanged, so existing callers of `{fn}` keep working.",
    "The docker build is green again and the image is {n} MB smaller.",
    "I added a migration that backfills the new column in batches, so it is safe to run on production.",
    "The failing test was asserting on the old error message, so I updated it alongside the fix.",
    "`{fn}` was only called from `{file}`, which made the refactor straightforward.",
    "There are still {m} lint warnings, but they predate this change.",
    "I'd suggest a follow-up to {verb} the {topic}, since {caveat}.",
    "The fix is small: {change}.",
    "Running `{cmd}` again shows the regression is gone.",
    "I looked at the query plan and the {topic} now uses the index instead of a sequential scan.",
    "Everything is committed on the current branch; nothing was pushed.",
    "I reverted the unrelated formatting changes in `{file2}` to keep the diff focused.",
    "The retry logic is covered by a test that simulates three consecutive timeouts.",
]
_THINKING_SENTENCES = [
    "The user wants me to {verb} the {topic}.",
    "I should look at `{file}` first.",
    "If the problem is {cause}, then the failing test makes sense.",
    "Maybe the simplest fix is to change `{fn}`.",
    "I need to be careful: {caveat}.",
    "Let me check whether `{fn}` is called anywhere else before changing its signature.",
    "The traceback points at `{file}`, so the {topic} is the likely culprit.",
    "Running `{cmd}` will tell me whether the refactor broke anything.",
    "I could also grep for `{fn}` to find other callers.",
    "The cleanest approach is probably that {change}.",
    "Hmm, the docker setup might hide the real error here.",
    "Before editing, I want to confirm the migration order.",
]
_DOC_LINES = [
    "Return the {noun} rows for one page of the {topic}.",
    "Validate the payload and raise a helpful error when it is malformed.",
    "Retry the call with exponential backoff and jitter.",
    "Build the cache key from the tenant id and the schema version.",
    "Stream results so large exports do not load everything into memory.",
]
_HEADERS = {
    "python": "from __future__ import annotations\n\nimport logging\nfrom dataclasses import dataclass\n\nlogger = logging.getLogger(__name__)",
    "typescript": 'import { z } from "zod";\nimport { db } from "./db";',
    "go": 'package store\n\nimport (\n\t"context"\n\t"database/sql"\n\t"fmt"\n\t"time"\n)',
    "rust": "use std::collections::HashMap;\nuse std::time::Duration;\n\nuse crate::error::Error;",
}
_SNIPPETS = {
    "python": [
        'def {fn}(session, {noun}_id: int, *, timeout: float = 30.0):\n    """{doc}"""\n    if {noun}_id <= 0:\n        raise ValueError("{noun}_id must be positive")\n    row = session.execute(\n        "SELECT * FROM {noun}s WHERE id = :id", {{"id": {noun}_id}}\n    ).one_or_none()\n    logger.debug("{fn} took %.2fs", timeout)\n    return row',
        '@dataclass\nclass {Type}Page:\n    """{doc}"""\n\n    items: list[dict]\n    cursor: str | None = None\n    total: int = 0\n\n    def has_more(self) -> bool:\n        return self.cursor is not None',
        'def test_{fn}_{case}(db_session, client):\n    response = client.get("/api/{noun}s?page=2")\n    assert response.status_code == 200\n    assert len(response.json()["items"]) == {n}',
        'async def {fn}(client, url: str, retries: int = 3):\n    """{doc}"""\n    for attempt in range(retries):\n        try:\n            return await client.get(url, timeout=10)\n        except TimeoutError:\n            await asyncio.sleep(2 ** attempt + random.random())\n    raise RuntimeError(f"{fn} failed after {{retries}} attempts")',
        'def upgrade() -> None:\n    op.add_column("{noun}s", sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))\n    op.create_index("ix_{noun}s_created_at", "{noun}s", ["created_at"])\n\n\ndef downgrade() -> None:\n    op.drop_index("ix_{noun}s_created_at")\n    op.drop_column("{noun}s", "archived_at")',
        '@pytest.fixture\ndef {noun}_factory(db_session):\n    def make(**overrides):\n        {noun} = {Type}(name="test-{noun}", **overrides)\n        db_session.add({noun})\n        db_session.flush()\n        return {noun}\n    return make',
    ],
    "typescript": [
        'export async function {fnc}(id: string): Promise<{Type}> {{\n  const res = await fetch(`/api/{noun}s/${{id}}`);\n  if (!res.ok) {{\n    throw new Error(`{fnc} failed: ${{res.status}}`);\n  }}\n  return (await res.json()) as {Type};\n}}',
        'export const {Type}Schema = z.object({{\n  id: z.string().uuid(),\n  name: z.string().min(1),\n  createdAt: z.coerce.date(),\n  archived: z.boolean().default(false),\n}});\n\nexport type {Type} = z.infer<typeof {Type}Schema>;',
        'describe("{fnc}", () => {{\n  it("handles the {case} case", async () => {{\n    const result = await {fnc}("{noun}-{n}");\n    expect(result).toMatchObject({{ id: "{noun}-{n}" }});\n  }});\n}});',
        'export function use{Type}s(page: number) {{\n  return useQuery({{\n    queryKey: ["{noun}s", page],\n    queryFn: () => api.get(`/{noun}s?page=${{page}}`),\n    staleTime: 30_000,\n  }});\n}}',
    ],
    "go": [
        'func (s *Store) {Fn}(ctx context.Context, id int64) (*{Type}, error) {{\n\trow := s.db.QueryRowContext(ctx, "SELECT id, name, created_at FROM {noun}s WHERE id = $1", id)\n\tvar out {Type}\n\tif err := row.Scan(&out.ID, &out.Name, &out.CreatedAt); err != nil {{\n\t\treturn nil, fmt.Errorf("{fn}: %w", err)\n\t}}\n\treturn &out, nil\n}}',
        'type {Type} struct {{\n\tID        int64     `json:"id"`\n\tName      string    `json:"name"`\n\tCreatedAt time.Time `json:"created_at"`\n}}',
        'func Test{Fn}_{case}(t *testing.T) {{\n\ts := newTestStore(t)\n\tgot, err := s.{Fn}(context.Background(), {n})\n\tif err != nil {{\n\t\tt.Fatalf("{fn}: %v", err)\n\t}}\n\tif got.ID != {n} {{\n\t\tt.Errorf("got %d, want {n}", got.ID)\n\t}}\n}}',
    ],
    "rust": [
        'pub fn {fn}(input: &str) -> Result<{Type}, Error> {{\n    let trimmed = input.trim();\n    if trimmed.is_empty() {{\n        return Err(Error::Empty("{noun}"));\n    }}\n    trimmed.parse::<{Type}>().map_err(Error::from)\n}}',
        '#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]\npub struct {Type} {{\n    pub id: u64,\n    pub name: String,\n    pub tags: Vec<String>,\n}}',
        '#[test]\nfn {fn}_{case}() {{\n    let store = Store::in_memory();\n    let got = store.{fn}({n}).expect("{fn} failed");\n    assert_eq!(got.id, {n});\n}}',
    ],
}
_TEST_COMMANDS = {
    "python": ["pytest -q", "pytest tests/test_api.py -x -q", "ruff check .", "mypy src", "alembic upgrade head"],
    "typescript": ["npm test", "npx tsc --noEmit", "npm run lint", "npm run build", "npx vitest run"],
    "go": ["go test ./...", "go vet ./...", "go build ./...", "golangci-lint run"],
    "rust": ["cargo test", "cargo clippy -- -D warnings", "cargo build --release"],
}


# ---------------------------------------------------------------------------
# Shell commands and their outputs


class _Shell:
    """Plausible shell commands and outputs, ordinary and multi-megabyte."""

    def __init__(self, text: _Text, rng: random.Random):
        self.text = text
        self.rng = rng
        self.chunks = {kind: self._chunk(kind) for kind in _BIG_KINDS}  # raw text, JSON-escaped

    def command(self, lang: str, project: str) -> tuple[str, str, str, int]:
        """``(command, description, output, exit_code)``."""
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            cmd = rng.choice(_TEST_COMMANDS[lang])
            ok = rng.random() > 0.25
            return cmd, "Run the checks", self._checks(lang, project, cmd, ok), 0 if ok else 1
        if r < 0.7:
            cmd = rng.choice(["git status", "git diff --stat", "git log --oneline -8"])
            return cmd, "Inspect the git state", self._git(cmd, lang, project), 0
        if r < 0.8:
            cmd = rng.choice(["docker compose up -d --build", "docker compose ps", "docker compose logs --tail=30 api"])
            ok = rng.random() > 0.2
            return cmd, "Start the services", self._docker(cmd, ok), 0 if ok else 1
        if r < 0.9:
            target = rng.choice(["src", "tests", ".", "migrations"])
            return f"ls -la {target}", "List files", self._ls(lang, project), 0
        word = rng.choice(FN_VERBS)
        hits = [
            f"{self.text.file(lang, project)}:{rng.randint(1, 400)}:    {word}_{rng.choice(NOUNS)}(...)"
            for _ in range(rng.randint(0, 12))
        ]
        return f"grep -rn '{word}' src | head -20", "Search the sources", "\n".join(hits), 0 if hits else 1

    def _checks(self, lang: str, project: str, cmd: str, ok: bool) -> str:
        rng = self.rng
        n = rng.randint(12, 400)
        if cmd.startswith("pytest"):
            dots = "".join(rng.choice("....................s") for _ in range(min(n, 80)))
            if ok:
                return f"{dots}{' ' * 3}[100%]\n{n} passed, {rng.randint(0, 3)} skipped in {rng.uniform(0.5, 40):.2f}s"
            test = f"tests/test_{rng.choice(NOUNS)}.py::test_{self.text.fn()}"
            error = self.text.fill(rng.choice(ERRORS), lang, project)
            return (
                f"{dots[:-1]}F\n=================================== FAILURES ===================================\n"
                f"_____________________ {test.split('::')[1]} _____________________\n\n"
                f"{self.text.traceback(lang, project)}\nE   {error}\n\n"
                f"=========================== short test summary info ============================\n"
                f"FAILED {test} - {error}\n1 failed, {n - 1} passed in {rng.uniform(0.5, 40):.2f}s"
            )
        if ok:
            return self._success(cmd, project, n)
        return (
            f"{self.text.file(lang, project)}:{rng.randint(1, 400)}:{rng.randint(1, 60)}: "
            f"{self.text.fill(rng.choice(ERRORS), lang, project)}\n"
            f"Found {rng.randint(1, 40)} errors in {rng.randint(1, 9)} files (checked {n} source files)"
        )

    def _success(self, cmd: str, project: str, n: int) -> str:
        rng = self.rng
        tool = cmd.split()[0] if not cmd.startswith("npx") else cmd.split()[1]
        if tool == "go" and "test" in cmd:
            return "\n".join(f"ok  \tgithub.com/dev/{project}/internal/{pkg}\t{rng.uniform(0.1, 9):.3f}s"
                             for pkg in ("store", "api", "config", "worker"))
        if tool == "cargo" and "test" in cmd:
            return f"running {n} tests\n\ntest result: ok. {n} passed; 0 failed; 0 ignored; finished in {rng.uniform(0.1, 9):.2f}s"
        if cmd in ("npm test", "npx vitest run"):
            return f" Test Files  {rng.randint(3, 40)} passed\n      Tests  {n} passed\n   Duration  {rng.uniform(0.5, 20):.2f}s"
        if tool == "alembic":
            return f"INFO  [alembic.runtime.migration] Running upgrade 0006 -> 0007, add {rng.choice(NOUNS)} index"
        if tool == "mypy":
            return f"Success: no issues found in {n} source files"
        if tool in ("ruff", "golangci-lint"):
            return "All checks passed!" if tool == "ruff" else "0 issues."
        if tool == "cargo":
            verb, profile = ("Checking", "dev") if "clippy" in cmd else ("Compiling", "release")
            return f"    {verb} {project} v0.4.2\n    Finished `{profile}` profile target(s) in {rng.uniform(5, 90):.2f}s"
        if cmd == "npm run build":
            return f"> {project}@1.4.0 build\n> vite build\n\n✓ {n} modules transformed.\n✓ built in {rng.uniform(1, 30):.2f}s"
        return ""  # tsc --noEmit, go vet, go build, npm run lint: silent on success

    def _git(self, cmd: str, lang: str, project: str) -> str:
        rng = self.rng
        if cmd == "git status":
            files = "\n".join(f"\tmodified:   {self.text.file(lang, project)}" for _ in range(rng.randint(1, 6)))
            return f"On branch main\nChanges not staged for commit:\n  (use \"git add <file>...\" to update what will be committed)\n{files}\n\nno changes added to commit (use \"git add\" and/or \"git commit -a\")"
        if cmd == "git diff --stat":
            files = [self.text.file(lang, project) for _ in range(rng.randint(1, 8))]
            lines = "\n".join(f" {f:<50} | {rng.randint(1, 90):>3} {'+' * rng.randint(1, 20)}{'-' * rng.randint(0, 9)}" for f in files)
            return f"{lines}\n {len(files)} files changed, {rng.randint(5, 400)} insertions(+), {rng.randint(0, 200)} deletions(-)"
        return "\n".join(
            f"{self.text.hex_id()} {rng.choice(['Fix', 'Add', 'Refactor', 'Update', 'Remove'])} {rng.choice(TOPICS)}"
            for _ in range(8)
        )

    def _docker(self, cmd: str, ok: bool) -> str:
        rng = self.rng
        if not ok:
            return "[+] Running 2/3\n ✔ Network app_default  Created\n ✘ Container app-db-1   Error\nError response from daemon: driver failed programming external connectivity on endpoint app-db-1: Bind for 0.0.0.0:5432 failed: port is already allocated"
        services = ["db", "redis", "api", "worker", "web"][: rng.randint(2, 5)]
        return "\n".join(f" ✔ Container app-{s}-1  {rng.choice(['Started', 'Healthy', 'Running'])}" for s in services)

    def _ls(self, lang: str, project: str) -> str:
        rng = self.rng
        rows = ["total 48", "drwxr-xr-x  8 dev dev  4096 .", "drwxr-xr-x 12 dev dev  4096 .."]
        for _ in range(rng.randint(3, 14)):
            name = self.text.file(lang, project).rsplit("/", 1)[-1]
            rows.append(f"-rw-r--r--  1 dev dev {rng.randint(120, 40000):>5} {name}")
        return "\n".join(rows)

    # -- multi-megabyte outputs --------------------------------------------------

    def _chunk(self, kind: str) -> tuple[str, bytes]:
        """About CHUNK_BYTES of output of one kind, raw and JSON-escaped."""
        rng = self.rng
        lines: list[str] = []
        size = 0
        i = 0
        while size < CHUNK_BYTES:
            i += 1
            noun = rng.choice(NOUNS)
            if kind == "pytest":
                line = f"tests/test_{noun}s.py::test_{rng.choice(FN_VERBS)}_{noun}[case{i}] PASSED{' ' * 10}[{i % 100:>3}%]"
            elif kind == "docker":
                line = f"#{i % 40 + 5} {rng.uniform(0.1, 90):.3f} Collecting {noun}-utils=={rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)} (from -r requirements.txt (line {i % 80}))"
            elif kind == "diff":
                sign = rng.choice(" +-")
                line = f"{sign}    {rng.choice(self.text.sentences['python'])[:90]}"
                if i % 40 == 0:
                    line = f"@@ -{i},{rng.randint(3, 40)} +{i},{rng.randint(3, 40)} @@ def {rng.choice(FN_VERBS)}_{noun}():"
            elif kind == "build":
                line = f"  ./src/components/{_pascal(noun)}List.tsx {rng.randint(1, 900)} KiB [built] [code generated] webpack compiled module {i}"
            else:  # csv
                line = f"{i},{noun}-{rng.randint(1000, 99999)},{rng.choice(TOPICS)},{rng.randint(0, 10**6)},2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T0{rng.randint(0, 9)}:00:00Z"
            lines.append(line)
            size += len(line) + 2
        raw = "\n".join(lines) + "\n"
        return raw, _esc(raw)

    def big(self, size: int) -> tuple[str, str, _Big]:
        """``(command, description, output)`` with an output of about ``size`` bytes."""
        kind = self.rng.choice(list(_BIG_KINDS))
        cmd, description, head, tail = _BIG_KINDS[kind]
        raw, chunk = self.chunks[kind]
        head_b, tail_b = _esc(head), _esc(tail)
        body = size - len(head_b) - len(tail_b)
        if body < len(chunk):  # smaller than one chunk: cut it at a line end
            chunk = _esc(raw[: raw.rfind("\n", 0, max(body, 200)) + 1])
        repeat = max(1, math.ceil(body / len(chunk)))
        return cmd, description, _Big(head_b, chunk, repeat, tail_b)


_BIG_KINDS = {
    "pytest": ("pytest -vv --no-header -p no:cacheprovider", "Run the whole test suite verbosely",
               "============================= test session starts ==============================\ncollected 48211 items\n\n",
               "\n====================== 48211 passed in 812.44s (0:13:32) ======================="),
    "docker": ("docker build --progress=plain --no-cache -t app:dev .", "Rebuild the docker image without cache",
               "#0 building with \"default\" instance using docker driver\n\n#1 [internal] load build definition from Dockerfile\n",
               "\n#42 exporting to image\n#42 writing image sha256:3f1c0d2e done\n#42 DONE 4.1s"),
    "diff": ("git diff main...HEAD", "Show the full branch diff",
             "diff --git a/src/app/models.py b/src/app/models.py\nindex 4b1d2c3..9e8f7a6 100644\n--- a/src/app/models.py\n+++ b/src/app/models.py\n",
             "\n"),
    "build": ("npm run build -- --stats=verbose", "Build the frontend bundle with verbose stats",
              "> app@1.4.0 build\n> webpack --mode production --stats=verbose\n\n",
              "\nwebpack 5.94.0 compiled with 3 warnings in 48211 ms"),
    "csv": ("cat data/export/full_export.csv", "Show the exported CSV",
            "id,slug,topic,amount,created_at\n", ""),
}


# ---------------------------------------------------------------------------
# Corpus-wide state


class _Corpus:
    """RNG streams, text pools and big-output scheduling for one source."""

    def __init__(self, seed: int, source: str, target: int, stats: SourceStats, big_every: int):
        self.rng = random.Random(f"obelisk:{seed}:{source}")
        text_rng = random.Random(f"obelisk:{seed}:text")
        self.text = _Text(text_rng)
        self.shell = _Shell(self.text, text_rng)
        self.ids = _Ids(self.rng)
        self.target = target
        self.stats = stats
        self.big_every = big_every
        self.big_bytes = 0
        self.exec_count = 0
        self.next_big = self._draw_big_size()
        self.huge_pending = 0  # bytes of the huge line still to plant
        self.suppress_big = False
        self.typed: list | None = None  # (ms, session id, cwd, text) of each typed prompt, with prompt_logs
        # small corpora get smaller files and fewer steps so every shape still fits
        self.scale = max(0.1, min(1.0, target / (4 * MB)))
        self.text.short = target < 1 * MB

    def lines(self, lo: int, hi: int) -> int:
        """A file length in lines, shrunk for small corpora."""
        return self.rng.randint(max(4, int(lo * self.scale)), max(6, int(hi * self.scale)))

    def _draw_big_size(self) -> int:
        size = int(math.exp(self.rng.uniform(math.log(1 * MB), math.log(8 * MB))))
        return max(16 * KB, min(size, self.target // 10))

    def take_big(self) -> int:
        """Size of a big output to emit for this exec call, or 0."""
        if self.huge_pending:
            size, self.huge_pending = self.huge_pending, 0
            return size
        if self.suppress_big:
            return 0
        self.exec_count += 1
        remaining = self.target - self.stats.bytes
        if self.big_every:
            due = self.exec_count % self.big_every == 0
        else:
            due = self.big_bytes + self.next_big <= BIG_SHARE * (self.stats.bytes + self.next_big)
        if not due or remaining < 2 * self.next_big:
            return 0
        size = self.next_big
        self.big_bytes += size
        self.next_big = self._draw_big_size()
        return size

    def session_budget(self, remaining: int) -> int:
        budget = int(math.exp(self.rng.gauss(math.log(220 * KB), 0.9)))
        budget = max(24 * KB, min(budget, 4 * MB))
        if remaining - budget < 40 * KB:
            budget = remaining
        return max(budget, 8 * KB)

    def project(self) -> tuple[str, str, str]:
        """``(name, language, cwd)``."""
        name, lang = self.rng.choice(PROJECTS)
        cwd = f"/home/dev/projects/{name}"
        if self.rng.random() < 0.08:
            cwd += "/" + self.rng.choice(SUBDIRS)
        return name, lang, cwd


# ---------------------------------------------------------------------------
# Claude Code

_CLAUDE_ERAS = {
    # era: versions, date window, models, subagent layout
    "1.0": (["1.0.51", "1.0.72", "1.0.98", "1.0.113"], (_ms(2025, 6, 2), _ms(2025, 9, 26)),
            ["claude-sonnet-4-20250514", "claude-sonnet-4-20250514", "claude-opus-4-1-20250805"]),
    "2.0": (["2.0.14", "2.0.28", "2.0.46", "2.0.64", "2.0.76"], (_ms(2025, 10, 1), _ms(2025, 12, 30)),
            ["claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101"]),
    "2.1a": (["2.1.17", "2.1.39", "2.1.63", "2.1.80"], (_ms(2026, 1, 12), _ms(2026, 3, 31)),
             ["claude-opus-4-5-20251101", "claude-opus-4-6", "claude-sonnet-4-5-20250929"]),
    "2.1b": (["2.1.114", "2.1.145", "2.1.172", "2.1.207"], (_ms(2026, 4, 6), _ms(2026, 10, 30)),
             ["claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6"]),
}
_CLAUDE_ERA_WEIGHTS = [("1.0", 0.15), ("2.0", 0.25), ("2.1a", 0.25), ("2.1b", 0.35)]
_HAIKU = "claude-haiku-4-5-20251001"
_CAVEAT = (
    "Caveat: The messages below were generated by the user while running local commands. "
    "DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to."
)
_CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)
_SUMMARISER_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the user's "
    "explicit requests and your previous actions.\nThis summary should be thorough in capturing technical details, "
    "code patterns, and architectural decisions that would be essential for continuing development work without losing context."
)
_REMINDERS = [
    "The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from tracking progress, consider using the TodoWrite tool.",
    "Note: the file was modified by the user or a linter since you last read it. Read it again before editing.",
    "PostToolUse:Edit hook additional context: ruff found 2 fixable issues (run `ruff check --fix`).",
]
_SLASH_COMMANDS = [
    ("/model", "model", "", "Set model to opus (claude-opus-4-6)"),
    ("/cost", "cost", "", "Total cost: $1.84\nTotal duration (API): 6m 12.4s\nTotal code changes: 214 lines added, 61 lines removed"),
    ("/memory", "memory", "", "Opened memory file at ./CLAUDE.md"),
    ("/mcp", "mcp", "", "No MCP servers configured."),
]


@dataclass
class _ClaudePlan:
    era: str
    features: set[str]
    project: tuple[str, str, str] | None = None
    budget: int = 0


class _ClaudeThread:
    """One ``parentUuid`` chain written to one file: a session or a subagent."""

    def __init__(self, corpus: _Corpus, out: _JsonlFile, *, era: str, session_id: str, cwd: str,
                 lang: str, project: str, branch: str, version: str, model: str, clock: _Clock,
                 sidechain: bool = False, agent_id: str | None = None, slug: str | None = None):
        self.c = corpus
        self.rng = corpus.rng
        self.text = corpus.text
        self.out = out
        self.era = era
        self.late = era == "2.1b"
        self.session_id = session_id
        self.cwd, self.lang, self.project = cwd, lang, project
        self.version, self.model = version, model
        self.clock = clock
        self.sidechain = sidechain
        self.agent_id = agent_id
        self.parent: str | None = None
        self.folder: Path | None = None
        self.last_prompt = ""
        self.titles: dict[str, dict] = {}  # the latest title line of each type (a continued file copies them)
        self.tokens = self.rng.randint(9000, 24000)
        head = {"userType": "external"}
        if self.late:
            head["entrypoint"] = "cli"
        head.update(cwd=cwd, sessionId=session_id, version=version, gitBranch=branch)
        if agent_id and not self.late:
            head["agentId"] = agent_id
        if slug:
            head["slug"] = slug
        self.ctx = head

    # -- raw lines -----------------------------------------------------------------

    def line(self, type_: str, body: dict, *, kind: str | None = None, lead: dict | None = None,
             extra: dict | None = None, uuid: str | None = None, parent: object = ...,
             bigs: dict[str, _Big] | None = None, ts: str | None = None) -> str:
        """Write a conversation line (with ``uuid``) and make it the chain's tip."""
        uuid = uuid or self.c.ids.uuid4()
        d = {"parentUuid": self.parent if parent is ... else parent}
        if lead:
            d.update(lead)
        d["isSidechain"] = self.sidechain
        if self.late:
            if self.agent_id:
                d["agentId"] = self.agent_id
            d["type"] = type_
            d.update(body)
        else:
            d.update(self.ctx)
            if type_ != "assistant":
                d["type"] = type_
            d.update(body)
            if type_ == "assistant":
                d["type"] = type_
        d["uuid"] = uuid
        d["timestamp"] = ts or self.clock.tick()
        if extra:
            d.update(extra)
        if self.late:
            d.update(self.ctx)
        self.out.write(d, kind or type_, bigs)
        self.c.stats.messages += 1
        self.parent = uuid
        return uuid

    def meta(self, obj: dict) -> None:
        """Write a metadata line (no uuid, not part of the chain)."""
        self.out.write(obj, obj["type"])

    def title(self, obj: dict) -> None:
        """Write a title line (``ai-title``, ``custom-title``), the latest of its type."""
        self.titles[obj["type"]] = obj
        self.meta(obj)

    # -- user side -------------------------------------------------------------------

    def prompt(self, text: str | list, *, uuid: str | None = None, meta: bool = False,
               extra: dict | None = None) -> str:
        body: dict = {}
        if self.late and not self.sidechain:
            body["promptId"] = self.c.ids.uuid4()
        body["message"] = {"role": "user", "content": text}
        if meta:
            body["isMeta"] = True
        if self.era == "2.1a" and not meta and not self.sidechain and not extra:
            extra = {"permissionMode": "default"}
        return self.line("user", body, extra=extra, uuid=uuid)

    def tool_result(self, call: dict, source_uuid: str) -> str:
        block = {"tool_use_id": call["id"], "type": "tool_result", "content": call["content"]}
        if call["is_error"]:
            block["is_error"] = True
            self.c.stats.failed_tool_results += 1
        elif self.era != "1.0" or call["name"] == "Bash":
            block["is_error"] = False
        extra: dict = {}
        if call.get("agent_ref") and self.era == "2.0":
            extra["agentId"] = call["agent_ref"]  # 2.0.x trunk results name the agent
        extra["toolUseResult"] = call["result"]
        if self.era in ("2.1a", "2.1b"):
            extra["sourceToolAssistantUUID"] = source_uuid
        self.tokens += call.get("tokens", 200)
        body = {"message": {"role": "user", "content": [block]}}
        return self.line("user", body, extra=extra, bigs=call.get("bigs"))

    # -- assistant side ----------------------------------------------------------------

    def usage(self, output_tokens: int) -> dict:
        created = self.rng.randint(0, 4000)
        u = {"input_tokens": self.rng.randint(1, 12), "cache_creation_input_tokens": created,
             "cache_read_input_tokens": self.tokens}
        if self.late:
            u["output_tokens"] = output_tokens
            u["server_tool_use"] = {"web_search_requests": 0, "web_fetch_requests": 0}
            u["service_tier"] = "standard"
            u["cache_creation"] = {"ephemeral_1h_input_tokens": created, "ephemeral_5m_input_tokens": 0}
            u["inference_geo"] = ""
            u["iterations"] = [{"input_tokens": u["input_tokens"], "output_tokens": output_tokens,
                                "cache_read_input_tokens": self.tokens, "cache_creation_input_tokens": created,
                                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": created},
                                "type": "message"}]
            u["speed"] = "standard"
        else:
            u["cache_creation"] = {"ephemeral_5m_input_tokens": created, "ephemeral_1h_input_tokens": 0}
            u["output_tokens"] = output_tokens
            u["service_tier"] = "standard"
        return u

    def respond(self, blocks: list[dict], stop_reason: str) -> str:
        """One API response, written one line per content block."""
        msg_id = "msg_01" + self.c.ids.b62(22)
        request_id = "req_011C" + self.c.ids.b62(18)
        final_tokens = sum(len(str(b.get("text") or b.get("thinking") or b.get("input"))) for b in blocks) // 4 + 5
        usage = self.usage(final_tokens)  # repeated on every line of the response
        n = len(blocks)
        uuid = ""
        for i, block in enumerate(blocks):
            last = i == n - 1
            if self.era == "1.0":
                message = {"id": msg_id, "type": "message", "role": "assistant", "model": self.model}
            else:
                message = {"model": self.model, "id": msg_id, "type": "message", "role": "assistant"}
            message["content"] = [block]
            message["stop_reason"] = stop_reason if last or self.late else None
            message["stop_sequence"] = None
            if self.late:
                message["stop_details"] = None
            if last or self.late:
                message["usage"] = usage
            else:  # older versions wrote a partial output count on earlier lines
                message["usage"] = {**usage, "output_tokens": self.rng.randint(1, max(2, final_tokens))}
            uuid = self.line("assistant", {"message": message, "requestId": request_id},
                             ts=self.clock.tick(15, 600) if i else self.clock.tick(1500, 9000))
            if block["type"] == "tool_use":
                self.c.stats.tool_calls += 1
        if n > 1:
            self.c.stats.split_responses += 1
        self.tokens += final_tokens
        return uuid

    def thinking_block(self) -> dict:
        text = "" if self.late and self.rng.random() < 0.6 else self.text.thinking(self.lang)
        return {"type": "thinking", "thinking": text, "signature": self.text.signature()}

    def tool_use_block(self, call: dict) -> dict:
        block = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["input"]}
        if self.late:
            block["caller"] = {"type": "direct"}
        return block

    # -- 2.1 structural lines ------------------------------------------------------------

    def hook_line(self, event: str, name: str, tool_use_id: str | None, *, root: bool = False) -> None:
        """A hook record: ``progress`` (early 2.1) or ``attachment`` (late 2.1)."""
        parent = None if root else ...
        hook_id = tool_use_id or self.c.ids.uuid4()
        command = '"${CLAUDE_PROJECT_DIR}"/.claude/hooks/' + ("format.sh" if event == "PostToolUse" else "status.sh")
        if self.late:
            attachment = {"type": "hook_success", "hookName": name, "toolUseID": hook_id, "hookEvent": event,
                          "content": "", "stdout": "", "stderr": "", "exitCode": 0, "command": command,
                          "durationMs": self.rng.randint(40, 1400)}
            self.line("attachment", {"attachment": attachment}, parent=parent, kind="attachment")
        else:
            data = {"type": "hook_progress", "hookEvent": event, "hookName": name, "command": command}
            self.line("progress", {"data": data, "parentToolUseID": hook_id, "toolUseID": hook_id},
                      parent=parent, kind="progress")

    def system(self, subtype: str, body: dict, *, lead: dict | None = None, parent: object = ...) -> str:
        return self.line("system", {"subtype": subtype, **body}, kind=f"system/{subtype}", lead=lead, parent=parent)


class _ClaudeGenerator:
    """Writes Claude Code sessions under ``projects/`` until the budget is spent."""

    def __init__(self, corpus: _Corpus, root: Path, huge: int | None):
        self.c = corpus
        self.rng = corpus.rng
        self.text = corpus.text
        self.root = root
        self.stats = corpus.stats
        self.huge = huge
        self.last_leaf: dict[str, str] = {}  # cwd -> leaf uuid of the latest session
        self.last_end: dict[str, int] = {}  # cwd -> when that session ended

    def run(self) -> None:
        if self.huge:
            self.c.huge_pending = self.huge
        home = self.c.project()
        mandatory = [
            _ClaudePlan("1.0", {"task", "rewind", "slash", "huge"}, home),
            _ClaudePlan("1.0", {"summary", "task"}, home),
            _ClaudePlan("2.0", {"task", "compact", "rewind", "slash"}),
            _ClaudePlan("2.1a", {"task", "compact", "acompact", "queue", "hooks", "reminder"}),
            _ClaudePlan("2.1b", {"task", "compact", "rewind", "custom_title", "ai_title", "away", "queue",
                                 "hooks", "permission", "reminder", "continued_file"}),
        ]
        for plan in mandatory:
            plan.budget = min(self.c.session_budget(self.remaining()), self.c.target // 10)
            self.session(plan)
        while self.remaining() > max(6 * KB, self.c.target // 200):
            self.session(self.random_plan(self.c.session_budget(self.remaining())))

    def remaining(self) -> int:
        return self.c.target - self.stats.bytes

    def random_plan(self, budget: int) -> _ClaudePlan:
        rng = self.rng
        era = rng.choices([e for e, _ in _CLAUDE_ERA_WEIGHTS], [w for _, w in _CLAUDE_ERA_WEIGHTS])[0]
        late = era == "2.1b"
        chances = {
            "task": 0.3, "rewind": 0.2, "slash": 0.12, "summary": 0.6 if era in ("1.0", "2.0") else 0,
            "compact": 0.35 if era != "1.0" and budget > 160 * KB else 0,
            "queue": 0.2 if era.startswith("2.1") else 0, "hooks": 0.6 if era.startswith("2.1") else 0,
            "custom_title": 0.15 if late else 0, "ai_title": 0.8 if late else 0, "away": 0.3 if late else 0,
            "permission": 0.7 if late else 0, "reminder": 0.3 if era.startswith("2.1") else 0,
        }
        features = {name for name, p in chances.items() if rng.random() < p}
        if "compact" in features and era == "2.1a" and rng.random() < 0.5:
            features.add("acompact")
        return _ClaudePlan(era, features, budget=budget)

    # -- one session -----------------------------------------------------------------

    def session(self, plan: _ClaudePlan) -> _ClaudeThread:
        rng, ids = self.rng, self.c.ids
        versions, window, models = _CLAUDE_ERAS[plan.era]
        name, lang, cwd = plan.project or self.c.project()
        session_id = ids.uuid4()
        folder = self.root / escape_cwd(cwd)
        out = _JsonlFile(folder / f"{session_id}.jsonl", self.stats)
        if "summary" in plan.features and cwd in self.last_end:
            start = self.last_end[cwd] + rng.randint(3_600_000, 3 * 86_400_000)  # resumed later
        else:
            start = rng.randint(*window)
        clock = _Clock(start, rng)
        slug = None
        if plan.era.startswith("2.1"):
            slug = "-".join(rng.choice(_SLUG_WORDS) for _ in range(3))
        branch = rng.choice(BRANCHES)
        if rng.random() < 0.3:
            branch = f"feature/{rng.choice(TOPICS).split()[0].lower()}-{rng.choice(NOUNS)}"
        t = _ClaudeThread(self.c, out, era=plan.era, session_id=session_id, cwd=cwd, lang=lang,
                          project=name, branch=branch, version=_version_at(versions, window, start),
                          model=rng.choice(models), clock=clock, slug=slug)
        t.folder = folder
        self.stats.main_sessions += 1
        self.stats.sessions += 1
        pending = set(plan.features) & {"task", "compact", "rewind", "slash", "custom_title", "away",
                                        "queue", "reminder", "huge"}
        if "huge" in pending and not self.c.huge_pending:
            pending.discard("huge")
        start_bytes = self.stats.bytes
        self.open_session(t, plan)
        turn = 0
        rewind_anchor: str | None = None
        while turn < 2 or self.stats.bytes - start_bytes < plan.budget or pending:
            turn += 1
            used = self.stats.bytes - start_bytes
            if "compact" in pending and turn > 2 and (used > 0.45 * plan.budget or pending <= {"compact"}):
                self.compact(t, "acompact" in plan.features, "continued_file" in plan.features)
                pending.discard("compact")
                rewind_anchor = None  # never rewind across a compaction
            rewind = "rewind" in pending and rewind_anchor is not None and turn > 2
            if rewind:
                t.parent = rewind_anchor  # the new prompt becomes a sibling of the last one
                self.stats.rewinds += 1
                pending.discard("rewind")
            slash = "slash" in pending and turn > 1 and not rewind
            if slash:
                pending.discard("slash")
            left = plan.budget - used
            rewind_anchor = self.turn(t, plan, pending, first=turn == 1, slash=slash, left=left)
            self.after_turn(t, plan, pending, turn)
        self.last_leaf[cwd] = t.parent
        self.last_end[cwd] = clock.ms
        t.out.close()
        return t

    def open_session(self, t: _ClaudeThread, plan: _ClaudePlan) -> None:
        if "summary" in plan.features and t.cwd in self.last_leaf:
            for _ in range(self.rng.randint(1, 2)):
                t.meta({"type": "summary", "summary": self.text.title(t.lang), "leafUuid": self.last_leaf[t.cwd]})
        if plan.era == "2.1b" and "permission" in plan.features:
            t.meta({"type": "permission-mode", "permissionMode": self.rng.choice(["default", "acceptEdits", "plan"]),
                    "sessionId": t.session_id})
        if plan.era == "2.1a":
            t.meta({"type": "queue-operation", "operation": "dequeue", "timestamp": t.clock.now(),
                    "sessionId": t.session_id})
        if plan.era.startswith("2.1"):
            t.hook_line("SessionStart", "SessionStart:startup", None, root=True)

    def turn(self, t: _ClaudeThread, plan: _ClaudePlan, pending: set, *, first: bool, slash: bool,
             left: int) -> str | None:
        """A user prompt and the agent's work on it; returns the prompt's parent."""
        rng = self.rng
        t.clock.tick(20_000, 600_000)
        prompt_uuid = self.c.ids.uuid4()
        text = self.text.prompt(t.lang, t.project)
        if plan.era != "1.0":
            self.snapshot(t, prompt_uuid, update=False)
        if "queue" in pending and not first:
            pending.discard("queue")
            t.meta({"type": "queue-operation", "operation": "enqueue", "timestamp": t.clock.now(),
                    "sessionId": t.session_id, "content": text})
            t.meta({"type": "queue-operation", "operation": "dequeue", "timestamp": t.clock.tick(),
                    "sessionId": t.session_id})
        anchor = t.parent
        if slash:
            self.slash_command(t)
            anchor = None
        t.prompt(text, uuid=prompt_uuid)
        if self.c.typed is not None and not t.sidechain:
            self.c.typed.append((t.clock.ms, t.session_id, t.cwd, text))
        t.last_prompt = text
        if t.late:
            if first:
                t.line("attachment", {"attachment": {"type": "skill_listing", "content": _SKILLS}},
                       kind="attachment")
            if "hooks" in plan.features:
                t.hook_line("UserPromptSubmit", "UserPromptSubmit", None)
        steps = max(1, min(rng.randint(1, 1 + int(6 * self.c.scale)), left // (8 * KB)))
        for _ in range(steps):
            self.step(t, plan, pending, prompt_uuid)
            if "huge" in pending and not self.c.huge_pending:
                pending.discard("huge")
        blocks = []
        if rng.random() < 0.4:
            blocks.append(t.thinking_block())
        blocks.append({"type": "text", "text": self.text.answer(t.lang)})
        t.respond(blocks, "end_turn")
        return anchor

    def step(self, t: _ClaudeThread, plan: _ClaudePlan, pending: set, prompt_uuid: str) -> None:
        """One API response with tool calls, then their results."""
        rng = self.rng
        task = "task" in pending or ("task" in plan.features and rng.random() < 0.06)
        calls = [self.plan_task(t)] if task else [self.plan_tool(t) for _ in range(rng.choice((1, 1, 1, 1, 2, 3)))]
        if task:
            pending.discard("task")
        blocks = []
        if rng.random() < 0.3:
            blocks.append(t.thinking_block())
        if rng.random() < 0.5:
            blocks.append({"type": "text", "text": self.text.prose(t.lang, rng.randint(1, 3))})
        blocks.extend(t.tool_use_block(call) for call in calls)
        source = t.respond(blocks, "tool_use")
        for call in calls:
            if call["name"] in ("Task", "Agent"):
                self.run_subagent(t, call)
            elif call["name"] == "Bash" and t.era == "2.1a" and not call.get("bigs") and rng.random() < 0.2:
                data = {"type": "bash_progress", "output": call["content"][:200] if isinstance(call["content"], str) else "",
                        "fullOutput": "", "elapsedTimeSeconds": rng.randint(3, 40), "totalLines": 12, "timeoutMs": 120000}
                t.line("progress", {"data": data, "toolUseID": "bash-progress-0", "parentToolUseID": call["id"]},
                       kind="progress")
            hook = "hooks" in plan.features and rng.random() < 0.5
            if hook and not t.late:  # early 2.1: hook progress is a side branch off the tool_use
                tip = t.parent
                for _ in range(rng.randint(1, 2)):
                    t.hook_line("PostToolUse", f"PostToolUse:{call['name']}", call["id"])
                t.parent = tip
            t.tool_result(call, source)
            if call["name"] in ("Edit", "Write") and t.era != "1.0":
                self.snapshot(t, prompt_uuid, update=True, path=call["input"]["file_path"])
            if hook and t.late:  # late 2.1: hook attachments follow the result in the chain
                t.hook_line("PostToolUse", f"PostToolUse:{call['name']}", call["id"])
            if "reminder" in pending or ("reminder" in plan.features and rng.random() < 0.05):
                pending.discard("reminder")
                t.prompt(f"<system-reminder>\n{rng.choice(_REMINDERS)}\n</system-reminder>", meta=True)

    def after_turn(self, t: _ClaudeThread, plan: _ClaudePlan, pending: set, turn: int) -> None:
        rng = self.rng
        if plan.era.startswith("2.1"):
            if "hooks" in plan.features:
                t.system("stop_hook_summary", {
                    "hookCount": 1, "hookInfos": [{"command": ".claude/hooks/status.sh idle", "durationMs": rng.randint(40, 300)}],
                    "hookErrors": [], "preventedContinuation": False, "stopReason": "", "hasOutput": True,
                    "level": "suggestion", "toolUseID": self.c.ids.uuid4()})
            t.system("turn_duration", {"durationMs": rng.randint(4_000, 400_000), "messageCount": rng.randint(4, 160),
                                       "isMeta": False})
        if not t.late:
            return
        if "ai_title" in plan.features and (turn == 1 or rng.random() < 0.1):
            t.title({"type": "ai-title", "aiTitle": self.text.title(t.lang), "sessionId": t.session_id})
        if "away" in pending or ("away" in plan.features and rng.random() < 0.2):
            pending.discard("away")
            t.system("away_summary", {"content": self.text.prose(t.lang, 2) + " (disable recaps in /config)",
                                      "isMeta": False})
        if "custom_title" in pending and turn >= 2:
            pending.discard("custom_title")
            t.title({"type": "custom-title", "customTitle": self.text.title(t.lang), "sessionId": t.session_id})
        if t.version == "2.1.114":
            t.meta({"type": "last-prompt", "lastPrompt": t.last_prompt[:200], "sessionId": t.session_id})
        else:
            t.meta({"type": "last-prompt", "leafUuid": t.parent, "sessionId": t.session_id})

    # -- pieces ------------------------------------------------------------------

    def snapshot(self, t: _ClaudeThread, message_id: str, *, update: bool, path: str | None = None) -> None:
        backups = {}
        if path:
            backups[path] = {"backupFileName": f"{self.c.ids.hex(16)}@v2", "version": 2, "backupTime": t.clock.now()}
        t.meta({"type": "file-history-snapshot", "messageId": message_id,
                "snapshot": {"messageId": message_id, "trackedFileBackups": backups, "timestamp": t.clock.now()},
                "isSnapshotUpdate": update})

    def slash_command(self, t: _ClaudeThread) -> None:
        command, name, args, output = self.rng.choice(_SLASH_COMMANDS)
        t.prompt(_CAVEAT, meta=True)
        t.prompt(f"<command-name>{command}</command-name>\n<command-message>{name}</command-message>\n"
                 f"<command-args>{args}</command-args>")
        stdout = f"<local-command-stdout>{output}</local-command-stdout>"
        if t.era == "1.0":
            t.prompt(stdout)
        else:
            t.system("local_command", {"content": stdout, "level": "info", "isMeta": False})

    def compact(self, t: _ClaudeThread, summariser: bool, new_file: bool = False) -> None:
        """A compaction: optional summariser transcript, boundary, summary; with
        ``new_file`` the session goes on in a new one (``continue_in_new_file``)."""
        before = t.parent
        summary = self.text.paragraphs(t.lang, 3)
        if summariser:
            self.acompact_transcript(t, before, summary)
        if new_file:
            self.continue_in_new_file(t)
        pre = t.tokens
        t.tokens = self.rng.randint(12000, 30000)
        t.system("compact_boundary", {
            "content": "Conversation compacted", "level": "info", "isMeta": False,
            "compactMetadata": {"trigger": self.rng.choice(["auto", "manual"]), "preTokens": pre + 150_000}},
            lead={"logicalParentUuid": before}, parent=None)
        t.prompt(f"{_CONTINUED}\n{summary}", extra={"isVisibleInTranscriptOnly": True, "isCompactSummary": True})
        if t.era.startswith("2.1"):
            t.hook_line("SessionStart", "SessionStart:compact", None)
        self.stats.compactions += 1

    def continue_in_new_file(self, t: _ClaudeThread) -> None:
        """Claude Code 2.1 going on after a compaction in a new session: its file
        opens with the compacted session's titles, copied under the new id; the
        boundary written next names the compacted one's last line, in the old file."""
        t.out.close()
        t.session_id = self.c.ids.uuid4()
        t.ctx["sessionId"] = t.session_id
        t.out = _JsonlFile(t.folder / f"{t.session_id}.jsonl", self.stats)
        for line in list(t.titles.values()):
            t.title({**line, "sessionId": t.session_id})
        self.stats.main_sessions += 1
        self.stats.sessions += 1
        self.stats.continued_files += 1

    def acompact_transcript(self, t: _ClaudeThread, before: str | None, summary: str) -> None:
        agent_id = f"acompact-{self.c.ids.hex(6)}"
        out = _JsonlFile(t.folder / t.session_id / "subagents" / f"agent-{agent_id}.jsonl", self.stats)
        a = self.sub_thread(t, out, agent_id)
        a.parent = before
        for _ in range(self.rng.randint(1, 3)):
            a.prompt(f"<system-reminder>\n{self.rng.choice(_REMINDERS)}\n</system-reminder>", meta=True)
        a.prompt(_SUMMARISER_PROMPT)
        a.respond([{"type": "text", "text": f"<analysis>\n{self.text.thinking(t.lang)}\n</analysis>\n\n<summary>\n{summary}\n</summary>"}],
                  "end_turn")
        out.close()
        self.stats.subagent_transcripts += 1
        self.stats.compact_agents += 1
        self.stats.sessions += 1

    def sub_thread(self, t: _ClaudeThread, out: _JsonlFile, agent_id: str | None, model: str | None = None) -> _ClaudeThread:
        return _ClaudeThread(self.c, out, era=t.era, session_id=t.session_id, cwd=t.cwd, lang=t.lang,
                             project=t.project, branch=t.ctx["gitBranch"], version=t.version,
                             model=model or t.model, clock=t.clock, sidechain=True, agent_id=agent_id,
                             slug=t.ctx.get("slug"))

    def run_subagent(self, t: _ClaudeThread, call: dict) -> None:
        """The subagent's own transcript, in the layout of the session's era."""
        rng, ids = self.rng, self.c.ids
        agent_type = call["input"]["subagent_type"]
        model = _HAIKU if agent_type == "Explore" else t.model
        if t.era == "1.0":
            agent_id, out = None, t.out
            self.stats.inline_sidechains += 1
        else:
            if t.era == "2.0":
                agent_id = ids.hex(8)
                path = t.folder / f"agent-{agent_id}.jsonl"
            else:
                agent_id = ids.hex(7) if t.era == "2.1a" else "a" + ids.hex(16)
                path = t.folder / t.session_id / "subagents" / f"agent-{agent_id}.jsonl"
            out = _JsonlFile(path, self.stats)
            self.stats.subagent_transcripts += 1
            self.stats.sessions += 1
        if t.era == "2.1a":
            self.agent_progress(t, call, agent_id)
        a = self.sub_thread(t, out, agent_id, model)
        a.tokens = rng.randint(3000, 12000)
        a.prompt(call["input"]["prompt"])
        tool_count = 0
        for _ in range(rng.randint(1, 1 + int(3 * self.c.scale))):
            calls = [self.plan_tool(a, explore=True) for _ in range(rng.choice((1, 1, 2)))]
            blocks = [{"type": "text", "text": self.text.prose(t.lang, 1)}] if rng.random() < 0.4 else []
            source = a.respond(blocks + [a.tool_use_block(c) for c in calls], "tool_use")
            for c in calls:
                a.tool_result(c, source)
            tool_count += len(calls)
        final = self.text.answer(t.lang)
        a.respond([{"type": "text", "text": final}], "end_turn")
        if out is not t.out:
            out.close()
        if t.era == "2.1b":
            meta = {"agentType": agent_type, "description": call["input"]["description"], "toolUseId": call["id"]}
            _write_json_file(t.folder / t.session_id / "subagents" / f"agent-{agent_id}.meta.json", meta, self.stats)
        if t.era == "2.1a":
            self.agent_progress(t, call, agent_id)
        content = [{"type": "text", "text": final}]
        total_tokens = a.tokens + rng.randint(1000, 9000)
        duration = rng.randint(8_000, 400_000)
        if t.era == "2.1b":
            content.append({"type": "text", "text": (
                f"agentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)\n"
                f"<usage>total_tokens: {total_tokens}\ntool_uses: {tool_count}\nduration_ms: {duration}</usage>")})
        result: dict = {}
        if t.era != "1.0":
            result.update(status="completed", prompt=call["input"]["prompt"], agentId=agent_id)
        if t.era == "2.1b":
            result["agentType"] = agent_type
        result.update(content=content, totalDurationMs=duration, totalTokens=total_tokens,
                      totalToolUseCount=tool_count, usage=a.usage(rng.randint(200, 3000)))
        call["content"] = content
        call["result"] = result
        call["agent_ref"] = agent_id

    def agent_progress(self, t: _ClaudeThread, call: dict, agent_id: str) -> None:
        data = {"type": "agent_progress", "agentId": agent_id, "prompt": call["input"]["prompt"][:200],
                "message": {"type": "user", "message": {"role": "user", "content": call["input"]["description"]}},
                "normalizedMessages": []}
        t.line("progress", {"data": data, "toolUseID": f"agent_msg_01{self.c.ids.b62(22)}",
                            "parentToolUseID": call["id"]}, kind="progress")

    # -- tool calls ------------------------------------------------------------------

    def tool_id(self) -> str:
        return "toolu_01" + self.c.ids.b62(22)

    def plan_task(self, t: _ClaudeThread) -> dict:
        topic = self.rng.choice(TOPICS)
        agent_type = "general-purpose" if t.era == "1.0" else self.rng.choice(["general-purpose", "Explore"])
        prompt = (f"Investigate the {topic} in this repository. {self.text.prose(t.lang, 3)} "
                  f"Report back with the files involved and a short recommendation (under 200 words).")
        name = "Agent" if t.late else "Task"
        inp = {"description": f"Investigate {topic}", "subagent_type": agent_type, "prompt": prompt}
        return {"id": self.tool_id(), "name": name, "input": inp, "is_error": False, "content": "", "result": {}}

    def plan_tool(self, t: _ClaudeThread, explore: bool = False) -> dict:
        rng = self.rng
        if explore:
            name = rng.choice(["Read", "Read", "Grep", "Bash", "Glob"])
        else:
            name = rng.choices(["Read", "Bash", "Edit", "Grep", "Write", "Glob", "TodoWrite"],
                               [30, 30, 15, 10, 5, 4, 3])[0]
        call = getattr(self, f"tool_{name.lower()}")(t)
        call["id"] = self.tool_id()
        call["name"] = name
        call.setdefault("is_error", False)
        return call

    def path(self, t: _ClaudeThread) -> str:
        return f"{t.cwd}/{self.text.file(t.lang, t.project)}"

    def tool_read(self, t: _ClaudeThread) -> dict:
        path = self.path(t)
        if self.rng.random() < 0.03:
            return {"input": {"file_path": path}, "is_error": True,
                    "content": "<tool_use_error>File does not exist.</tool_use_error>",
                    "result": "Error: File does not exist."}
        raw = self.text.code(t.lang, self.c.lines(15, 220))
        lines = raw.split("\n")[:-1]
        numbered = "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(lines, 1))
        return {"input": {"file_path": path}, "content": numbered,
                "result": {"type": "text", "file": {"filePath": path, "content": raw, "numLines": len(lines),
                                                    "startLine": 1, "totalLines": len(lines)}}}

    def tool_bash(self, t: _ClaudeThread) -> dict:
        big = self.c.take_big()
        if big:
            # the output is stored twice (tool_result and toolUseResult): half each
            cmd, description, output = self.c.shell.big(big // 2)
            self.stats.big_outputs += 1
            return {"input": {"command": cmd, "description": description, "timeout": 600000},
                    "content": "@@BIG_CONTENT@@",
                    "result": {"stdout": "@@BIG_STDOUT@@", "stderr": "", "interrupted": False, "isImage": False},
                    "bigs": {"@@BIG_CONTENT@@": output, "@@BIG_STDOUT@@": output}, "tokens": 25000}
        cmd, description, output, code = self.c.shell.command(t.lang, t.project)
        inp = {"command": cmd, "description": description}
        if code:
            return {"input": inp, "is_error": True, "content": f"Exit code {code}\n{output}",
                    "result": f"Error: Exit code {code}\n{output}"}
        return {"input": inp, "content": output,
                "result": {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}}

    def tool_edit(self, t: _ClaudeThread) -> dict:
        rng = self.rng
        path = self.path(t)
        original = self.text.code(t.lang, self.c.lines(20, 160))
        lines = original.split("\n")
        start = rng.randint(0, max(0, len(lines) - 6))
        old = "\n".join(lines[start : start + rng.randint(1, 5)])
        new = old.replace("return", "return  # " + rng.choice(CHANGES)[:40], 1) + f"\n    # {rng.choice(TOPICS)}"
        inp = {"file_path": path, "old_string": old, "new_string": new}
        if rng.random() < 0.05:
            error = f"String to replace not found in file.\nString: {old[:120]}"
            return {"input": inp, "is_error": True, "content": f"<tool_use_error>{error}</tool_use_error>",
                    "result": f"Error: {error}"}
        snippet_lines = new.split("\n")
        snippet = "\n".join(f"{start + i + 1:>6}\u2192{line}" for i, line in enumerate(snippet_lines))
        content = (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of "
                   f"the edited file:\n{snippet}")
        patch = [{"oldStart": start + 1, "oldLines": old.count("\n") + 1, "newStart": start + 1,
                  "newLines": len(snippet_lines),
                  "lines": [f"-{x}" for x in old.split("\n")] + [f"+{x}" for x in snippet_lines]}]
        return {"input": inp, "content": content,
                "result": {"filePath": path, "oldString": old, "newString": new, "originalFile": original,
                           "structuredPatch": patch, "userModified": False, "replaceAll": False}}

    def tool_write(self, t: _ClaudeThread) -> dict:
        name = f"{self.rng.choice(NOUNS)}_{self.rng.choice(FN_VERBS)}"
        path = t.cwd + {"python": f"/tests/test_{name}.py", "typescript": f"/src/__tests__/{name}.test.ts",
                        "go": f"/internal/store/{name}_test.go", "rust": f"/tests/{name}.rs"}[t.lang]
        body = self.text.code(t.lang, self.c.lines(10, 80))
        return {"input": {"file_path": path, "content": body}, "content": f"File created successfully at: {path}",
                "result": {"type": "create", "filePath": path, "content": body, "structuredPatch": []}}

    def tool_grep(self, t: _ClaudeThread) -> dict:
        rng = self.rng
        pattern = rng.choice([f"def {self.text.fn()}", rng.choice(FN_VERBS), "TODO", "migration", "docker", "pytest"])
        files = sorted({self.text.file(t.lang, t.project) for _ in range(rng.randint(0, 9))})
        content = f"Found {len(files)} files\n" + "\n".join(files) if files else "No files found"
        return {"input": {"pattern": pattern, "output_mode": "files_with_matches"}, "content": content,
                "result": {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}}

    def tool_glob(self, t: _ClaudeThread) -> dict:
        files = sorted({f"{t.cwd}/{self.text.file(t.lang, t.project)}" for _ in range(self.rng.randint(1, 12))})
        return {"input": {"pattern": "**/*." + {"python": "py", "typescript": "ts", "go": "go", "rust": "rs"}[t.lang]},
                "content": "\n".join(files),
                "result": {"filenames": files, "durationMs": self.rng.randint(2, 80), "numFiles": len(files),
                           "truncated": False}}

    def tool_todowrite(self, t: _ClaudeThread) -> dict:
        todos = [{"content": f"{v.capitalize()} the {self.rng.choice(TOPICS)}", "status": s,
                  "activeForm": f"Working on the {self.rng.choice(TOPICS)}"}
                 for v, s in zip(self.rng.sample(PROMPT_VERBS, 3), ["completed", "in_progress", "pending"])]
        return {"input": {"todos": todos},
                "content": "Todos have been modified successfully. Ensure that you continue to use the todo list "
                           "to track your progress. Please proceed with the current tasks if applicable",
                "result": {"oldTodos": [], "newTodos": todos}}


_SLUG_WORDS = [
    "linked", "soaring", "curried", "brewing", "quiet", "amber", "rapid", "gentle", "hidden", "lucky",
    "matsumoto", "kahn", "lovelace", "hopper", "turing", "noether", "curie", "ramanujan", "dijkstra",
]
_SKILLS = (
    "- update-config: Configure the harness via settings.json (hooks, permissions, env vars).\n"
    "- review: Review the current branch for bugs, missing tests and risky migrations.\n"
    "- release-notes: Draft release notes from the commits since the last tag."
)


# ---------------------------------------------------------------------------
# Codex CLI

_CODEX_ERAS = {
    # era: versions, date window, models, originators
    "legacy": (["0.46.0", "0.53.0", "0.63.0", "0.77.0"], (_ms(2025, 10, 1), _ms(2025, 12, 30)),
               ["gpt-5-codex", "gpt-5.1-codex", "gpt-5.1-codex-max"], ["codex_cli_rs", "codex_vscode"]),
    "unified": (["0.98.0", "0.104.0", "0.110.0", "0.118.0"], (_ms(2026, 1, 16), _ms(2026, 4, 30)),
                ["gpt-5.2-codex", "gpt-5.3-codex"], ["codex_cli_rs", "codex_vscode", "Codex Desktop"]),
    "multi": (["0.128.0", "0.136.0", "0.146.0"], (_ms(2026, 5, 4), _ms(2026, 9, 28)),
              ["gpt-5.3-codex", "gpt-5.4-codex"], ["codex_cli_rs", "Codex Desktop", "codex_exec"]),
}
_CODEX_ERA_WEIGHTS = [("legacy", 0.3), ("unified", 0.4), ("multi", 0.3)]
_CODEX_SOURCES = {"codex_cli_rs": "cli", "codex_vscode": "vscode", "Codex Desktop": "vscode", "codex_exec": "exec"}
_NICKNAMES = ["Huygens", "Noether", "Kepler", "Hypatia", "Euler", "Lovelace"]
_BASE_INSTRUCTIONS = (
    "You are Codex, a coding agent based on GPT-5. You and the user share the same workspace and collaborate "
    "to achieve the user's goals.\n\n## General\n\n- When searching for text or files, prefer using `rg`.\n"
    "- Default to ASCII when editing or creating files.\n- Add succinct code comments only where the code is not "
    "self-explanatory.\n\n## Editing constraints\n\n- Use apply_patch for single file edits.\n- Never revert "
    "changes you did not make unless explicitly requested.\n\n## Testing\n\n- Run the project's test suite "
    "(pytest, npm test, go test, cargo test) after changes when it is fast enough.\n"
) * 3


class _CodexRollout:
    """One rollout file: ``{timestamp, type, payload}`` lines."""

    def __init__(self, corpus: _Corpus, root: Path, *, era: str, cwd: str, lang: str, project: str,
                 start_ms: int, thread_id: str | None = None):
        self.c = corpus
        self.rng = corpus.rng
        self.text = corpus.text
        self.era = era
        versions, window, models, originators = _CODEX_ERAS[era]
        self.version = _version_at(versions, window, start_ms)
        self.model = self.rng.choice(models)
        self.originator = self.rng.choice(originators)
        self.cwd, self.lang, self.project = cwd, lang, project
        self.clock = _Clock(start_ms, self.rng)
        self.id = thread_id or corpus.ids.uuid7(start_ms)
        stamp = (_EPOCH + timedelta(milliseconds=start_ms)).strftime("%Y-%m-%dT%H-%M-%S")
        day = stamp[:10].replace("-", "/")
        self.out = _JsonlFile(root / day / f"rollout-{stamp}-{self.id}.jsonl", corpus.stats)
        self.history: list[tuple[str, str]] = []  # (role, text) for compaction
        self.turn_ends: list[int] = []  # byte offsets after each turn
        self.total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
                      "reasoning_output_tokens": 0, "total_tokens": 0}
        self.turns = 0
        corpus.stats.sessions += 1

    def emit(self, type_: str, payload: dict, *, ts: str | None = None) -> None:
        kind = type_ if type_ in ("session_meta", "turn_context", "compacted") else f"{type_}/{payload['type']}"
        self.out.write({"timestamp": ts or self.clock.tick(), "type": type_, "payload": payload}, kind)

    def item(self, payload: dict, bigs: dict[str, _Big] | None = None) -> None:
        kind = f"response_item/{payload['type']}"
        self.out.write({"timestamp": self.clock.tick(), "type": "response_item", "payload": payload}, kind, bigs)
        if payload["type"] == "message":
            self.c.stats.messages += 1
        elif payload["type"] in ("function_call", "custom_tool_call"):
            self.c.stats.tool_calls += 1

    # -- session start -------------------------------------------------------------

    def session_meta(self, *, source: object = "cli", forked_from: str | None = None,
                     extra: dict | None = None) -> None:
        rng = self.rng
        payload: dict = {"id": self.id}
        if self.era == "multi":
            payload["session_id"] = self.id
        if forked_from:
            payload["forked_from_id"] = forked_from
        payload.update(timestamp=self.clock.now(), cwd=self.cwd, originator=self.originator,
                       cli_version=self.version, source=source)
        if self.era == "multi":
            payload["thread_source"] = "subagent" if isinstance(source, dict) else "user"
        if extra:
            payload.update(extra)
        payload["model_provider"] = "openai"
        if self.era == "legacy":
            payload["instructions"] = None
        else:
            payload["base_instructions"] = {"text": _BASE_INSTRUCTIONS}
        payload["git"] = {"commit_hash": self.c.ids.hex(40), "branch": rng.choice(BRANCHES),
                          "repository_url": f"https://github.com/dev/{self.project}.git"}
        self.emit("session_meta", payload)

    def preamble(self) -> None:
        if self.era != "legacy":
            self.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": (
                "<permissions instructions>\nFilesystem sandboxing defines which files can be read or written. "
                "`sandbox_mode` is `workspace-write`: The sandbox permits reading files, and editing files in `cwd` "
                "and `writable_roots`. Network access is restricted.\n</permissions instructions>")}]})
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": (
            f"# AGENTS.md instructions for {self.cwd}\n\n<INSTRUCTIONS>\n- Run the tests before committing.\n"
            f"- Use the docker compose stack for integration tests.\n</INSTRUCTIONS>")}]})
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": (
            f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
            f"  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
            f"  <shell>bash</shell>\n</environment_context>")}]})

    def turn_context(self, turn_id: str) -> None:
        payload: dict = {}
        if self.era != "legacy":
            payload["turn_id"] = turn_id
        payload.update(cwd=self.cwd, approval_policy="on-request")
        if self.era == "legacy":
            payload["sandbox_policy"] = {"mode": "workspace-write", "network_access": False}
        else:
            payload["sandbox_policy"] = {"type": "workspace-write", "writable_roots": [self.cwd],
                                         "network_access": False, "exclude_tmpdir_env_var": False,
                                         "exclude_slash_tmp": False}
        payload.update(model=self.model, effort=self.rng.choice(["medium", "high", "xhigh"]), summary="auto")
        if self.era != "legacy":
            payload["truncation_policy"] = {"mode": "tokens", "limit": 10000}
        self.emit("turn_context", payload)

    # -- turns -----------------------------------------------------------------------

    def token_count(self, tokens: int | None) -> None:
        info = None
        if tokens is not None:
            last = {"input_tokens": tokens, "cached_input_tokens": tokens * 3 // 4,
                    "output_tokens": self.rng.randint(40, 900), "reasoning_output_tokens": self.rng.randint(0, 400)}
            last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
            for key, value in last.items():
                self.total[key] += value
            info = {"total_token_usage": dict(self.total), "last_token_usage": last, "model_context_window": 258400}
        self.emit("event_msg", {"type": "token_count", "info": info, "rate_limits": {
            "primary": {"used_percent": float(self.rng.randint(1, 90)), "window_minutes": 300, "resets_at": 1771864834},
            "secondary": {"used_percent": float(self.rng.randint(1, 60)), "window_minutes": 10080, "resets_at": 1772355702}}})

    def turn(self, prompt: str | None = None, *, spawn: _CodexGenerator | None = None, steps: int | None = None,
             typed: bool = True) -> None:
        rng = self.rng
        self.clock.tick(20_000, 900_000)
        turn_id = self.c.ids.uuid7(self.clock.ms)
        if self.era != "legacy":
            self.emit("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 258400})
        self.turn_context(turn_id)
        prompt = prompt or self.text.prompt(self.lang, self.project)
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
        if typed and self.c.typed is not None:  # (a spawned agent's task is not typed)
            self.c.typed.append((self.clock.ms, self.id, self.cwd, prompt))
        self.emit("event_msg", {"type": "user_message", "message": prompt, "images": [], "local_images": [],
                                "text_elements": []})
        self.history.append(("user", prompt))
        self.token_count(None)
        tokens = rng.randint(9000, 40000)
        for step in range(steps or rng.randint(1, 7)):
            self.reasoning()
            if rng.random() < 0.5:
                self.agent_message(self.text.prose(self.lang, rng.randint(1, 2)), "commentary")
            if spawn is not None and step == 0:
                spawn.spawn_child(self)
            else:
                self.tool_call()
            tokens += rng.randint(500, 6000)
            self.token_count(tokens)
        final = self.text.answer(self.lang)
        self.agent_message(final, "final_answer")
        self.history.append(("assistant", final))
        del self.history[:-24]
        self.token_count(tokens)
        if self.era != "legacy":
            self.emit("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": final})
        self.turns += 1
        self.turn_ends.append(self.out.bytes)

    def reasoning(self) -> None:
        summary = self.text.thinking(self.lang)
        self.emit("event_msg", {"type": "agent_reasoning", "text": summary})
        self.item({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": None,
                   "encrypted_content": "gAAAAA" + self.text.signature()})

    def agent_message(self, text: str, phase: str) -> None:
        self.emit("event_msg", {"type": "agent_message", "message": text})
        item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        if self.era != "legacy":
            item["phase"] = phase
        self.item(item)

    def call_id(self) -> str:
        return "call_" + self.c.ids.b62(24)

    def tool_call(self) -> None:
        r = self.rng.random()
        if r < 0.65:
            self.exec_call()
        elif r < 0.92:
            self.apply_patch()
        else:
            self.update_plan()

    def exec_call(self) -> None:
        rng = self.rng
        call_id = self.call_id()
        big = self.c.take_big()
        if big:
            cmd, _, output = self.c.shell.big(big)
            code = 0
            self.c.stats.big_outputs += 1
        else:
            cmd, _, text, code = self.c.shell.command(self.lang, self.project)
        if self.era == "legacy":
            args = {"command": ["bash", "-lc", cmd], "workdir": self.cwd, "timeout_ms": 120000}
            self.item({"type": "function_call", "name": "shell", "arguments": orjson.dumps(args).decode(),
                       "call_id": call_id})
        else:
            args = {"cmd": cmd, "workdir": self.cwd, "yield_time_ms": 10000, "max_output_tokens": 6000}
            self.item({"type": "function_call", "name": "exec_command", "arguments": orjson.dumps(args).decode(),
                       "call_id": call_id})
        self.clock.tick(200, 90_000)
        wall = f"{rng.uniform(0.05, 90):.1f}"
        if big:
            header = f"Exit code: 0\nWall time: {wall} seconds\nOutput:\n"
            output.head = _esc(header) + output.head
            self.item({"type": "function_call_output", "call_id": call_id, "output": "@@BIG_OUTPUT@@"},
                      {"@@BIG_OUTPUT@@": output})
            return
        if self.era == "legacy" and rng.random() < 0.5:
            out = orjson.dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": float(wall)}}).decode()
        else:
            out = f"Exit code: {code}\nWall time: {wall} seconds\nOutput:\n{text}"
        if code:
            self.c.stats.failed_tool_results += 1
        self.item({"type": "function_call_output", "call_id": call_id, "output": out})

    def apply_patch(self, path: str | None = None) -> None:
        rng = self.rng
        call_id = self.call_id()
        path = path or self.text.file(self.lang, self.project)
        snippet = rng.choice(self.text.snippets[self.lang]).split("\n")
        removed = "\n".join(f"-{line}" for line in snippet[1:3])
        added = "\n".join(f"+{line}" for line in snippet[1:3]) + f"\n+    # {rng.choice(CHANGES)}"
        patch = f"*** Begin Patch\n*** Update File: {path}\n@@ {snippet[0]}\n{removed}\n{added}\n*** End Patch\n"
        self.item({"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch",
                   "input": patch})
        failed = rng.random() < 0.05
        if failed:
            text, code = f"apply_patch verification failed: Failed to find expected lines in {path}", 1
            self.c.stats.failed_tool_results += 1
        else:
            text, code = f"Success. Updated the following files:\nM {path}\n", 0
        out = orjson.dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.0}}).decode()
        self.item({"type": "custom_tool_call_output", "call_id": call_id, "output": out})

    def update_plan(self) -> None:
        call_id = self.call_id()
        plan = [{"step": f"{v.capitalize()} the {self.rng.choice(TOPICS)}", "status": s}
                for v, s in zip(self.rng.sample(PROMPT_VERBS, 3), ["completed", "in_progress", "pending"])]
        self.item({"type": "function_call", "name": "update_plan", "arguments": orjson.dumps({"plan": plan}).decode(),
                   "call_id": call_id})
        self.item({"type": "function_call_output", "call_id": call_id, "output": "Plan updated"})

    def compact(self) -> None:
        history = [
            {"type": "message", "role": role,
             "content": [{"type": "input_text" if role == "user" else "output_text", "text": text}]}
            for role, text in self.history
        ]
        summary = self.text.paragraphs(self.lang, 2)
        if self.era == "legacy":
            payload = {"message": summary}
        else:  # a local compaction hands its summary over as the history's last prompt
            handover = f"{HANDOVER_OPENING}; its summary follows: {HANDOVER_END}\n{summary}"
            history.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": handover}]})
            payload = {"message": "", "replacement_history": history}
        self.emit("compacted", payload)
        self.emit("event_msg", {"type": "context_compacted"})
        self.c.stats.compactions += 1

    def close(self) -> None:
        self.out.close()


class _CodexGenerator:
    """Writes Codex rollouts under ``sessions/`` until the budget is spent."""

    def __init__(self, corpus: _Corpus, root: Path, huge: int | None):
        self.c = corpus
        self.rng = corpus.rng
        self.root = root
        self.stats = corpus.stats
        self.huge = huge

    def remaining(self) -> int:
        return self.c.target - self.stats.bytes

    def run(self) -> None:
        if self.huge:
            self.c.huge_pending = self.huge
        cap = self.c.target // 10
        self.rollout("unified", {"compact"}, min(cap, self.c.session_budget(self.remaining())))
        self.rollout("unified", {"fork"}, min(cap, 60 * KB))
        self.rollout("multi", {"spawn"}, min(cap, self.c.session_budget(self.remaining())))
        self.rollout("legacy", set(), min(cap, self.c.session_budget(self.remaining())))
        while self.remaining() > max(4 * KB, self.c.target // 200):
            budget = self.c.session_budget(self.remaining())
            era = self.rng.choices([e for e, _ in _CODEX_ERA_WEIGHTS], [w for _, w in _CODEX_ERA_WEIGHTS])[0]
            features = set()
            if era != "legacy" and self.rng.random() < 0.04 and budget < 200 * KB:
                features.add("fork")
            if era == "multi" and self.rng.random() < 0.1:
                features.add("spawn")
            if budget > 150 * KB and self.rng.random() < 0.3:
                features.add("compact")
            self.rollout(era, features, budget)

    def new_rollout(self, era: str, project: tuple[str, str, str] | None = None,
                    start: int | None = None) -> _CodexRollout:
        name, lang, cwd = project or self.c.project()
        _, (lo, hi), _, _ = _CODEX_ERAS[era]
        start = start if start is not None else self.rng.randint(lo, hi)
        return _CodexRollout(self.c, self.root, era=era, cwd=cwd, lang=lang, project=name, start_ms=start)

    def rollout(self, era: str, features: set[str], budget: int) -> None:
        r = self.new_rollout(era)
        r.session_meta(source=_CODEX_SOURCES[r.originator])
        r.preamble()
        self.stats.main_sessions += 1
        compact_at = budget * 0.5 if "compact" in features else None
        spawn = "spawn" in features
        self.c.suppress_big = "fork" in features  # copies of the parent are kept small
        start_bytes = self.stats.bytes
        while r.turns < 2 or self.stats.bytes - start_bytes < budget or compact_at is not None or spawn:
            if compact_at is not None and r.turns >= 2 and self.stats.bytes - start_bytes >= compact_at:
                r.compact()
                compact_at = None
            r.turn(spawn=self if spawn and r.turns >= 1 else None,
                   steps=max(1, min(self.rng.randint(1, 1 + int(6 * self.c.scale)),
                                    (budget - self.stats.bytes + start_bytes) // (3 * KB))))
            if spawn and r.turns >= 2:
                spawn = False
        r.close()
        self.c.suppress_big = False
        if "fork" in features:
            self.fork(r)

    def fork(self, parent: _CodexRollout) -> _CodexRollout:
        """A new rollout that copies the parent's history, then diverges."""
        cut = parent.turn_ends[self.rng.randrange(len(parent.turn_ends))]
        start = parent.clock.ms + self.rng.randint(60_000, 3_600_000)
        child = self.new_rollout(parent.era, (parent.project, parent.lang, parent.cwd), start)
        child.version, child.model, child.originator = parent.version, parent.model, parent.originator
        child.session_meta(source="cli", forked_from=parent.id)
        stamp = _iso(start).encode()
        with open(parent.out.path, "rb") as f:
            data = f.read(cut)
        for raw in data.splitlines(keepends=True):
            # legacy forks re-stamp the copied lines with the fork time
            line = raw[:14] + stamp + raw[14 + len(stamp):]
            obj = orjson.loads(line)
            payload = obj["payload"]
            kind = obj["type"] if obj["type"] in ("session_meta", "turn_context", "compacted") else f"{obj['type']}/{payload['type']}"
            child.out.write_raw(line, kind)
            self.stats.replayed_lines += 1
            if kind == "response_item/message":
                self.stats.messages += 1
                self.stats.replayed_messages += 1
            elif kind in ("response_item/function_call", "response_item/custom_tool_call"):
                self.stats.tool_calls += 1
                self.stats.replayed_tool_calls += 1
            elif kind in ("response_item/function_call_output", "response_item/custom_tool_call_output"):
                if _codex_exit_code(payload.get("output")):
                    self.stats.failed_tool_results += 1
            elif kind == "compacted":
                self.stats.compactions += 1
        child.clock.ms = start + 1000
        child.turn("Let's try a different approach instead: " + self.c.text.prompt(child.lang, child.project))
        child.close()
        self.stats.main_sessions += 1
        self.stats.forks += 1
        return child

    def spawn_child(self, parent: _CodexRollout) -> None:
        """``spawn_agent`` in the parent plus the child's own rollout."""
        rng = self.rng
        call_id = parent.call_id()
        nickname, role = rng.choice(_NICKNAMES), rng.choice(["explorer", "worker"])
        task = f"Look into the {rng.choice(TOPICS)} and report which files need to change."
        parent.item({"type": "function_call", "name": "spawn_agent",
                     "arguments": orjson.dumps({"message": task, "agent_type": role}).decode(), "call_id": call_id})
        child = self.new_rollout(parent.era, (parent.project, parent.lang, parent.cwd), parent.clock.ms + 500)
        child.version, child.model, child.originator = parent.version, parent.model, parent.originator
        parent.emit("event_msg", {"type": "collab_agent_spawn_end", "call_id": call_id, "sender_thread_id": parent.id,
                                  "new_thread_id": child.id, "new_agent_nickname": nickname,
                                  "new_agent_role": role, "prompt": task, "status": "running"})
        parent.item({"type": "function_call_output", "call_id": call_id,
                     "output": orjson.dumps({"agent_id": child.id, "nickname": nickname}).decode()})
        source = {"subagent": {"thread_spawn": {"parent_thread_id": parent.id, "depth": 1, "agent_path": None,
                                                "agent_nickname": nickname, "agent_role": role}}}
        child.session_meta(source=source, extra={"agent_nickname": nickname, "agent_role": role})
        child.turn(task, steps=rng.randint(1, 4), typed=False)
        child.close()
        self.stats.subagent_transcripts += 1
        parent.clock.ms = max(parent.clock.ms, child.clock.ms) + 1000
        wait_id = parent.call_id()
        parent.item({"type": "function_call", "name": "wait",
                     "arguments": orjson.dumps({"ids": [child.id], "timeout_ms": 600000}).decode(), "call_id": wait_id})
        final = child.history[-1][1] if child.history else ""
        parent.item({"type": "function_call_output", "call_id": wait_id,
                     "output": orjson.dumps({"status": {child.id: {"completed": final}}}).decode()})


# ---------------------------------------------------------------------------
# Gemini CLI

_GEMINI_ERAS = {
    # era: layout, date window, models
    "json": ("document", (_ms(2025, 9, 1), _ms(2026, 3, 20)), ["gemini-2.5-pro", "gemini-2.5-flash"]),
    "jsonl": ("log", (_ms(2026, 4, 1), _ms(2026, 10, 30)), ["gemini-3-pro-preview", "gemini-3-flash-preview"]),
}
_GEMINI_ERA_WEIGHTS = [("json", 0.3), ("jsonl", 0.7)]


class _GeminiChat:
    """One chat: a ``session-*.json`` document written once at its end, or a
    ``session-*.jsonl`` log written as gemini-cli writes it (a reply first,
    then again with its tool calls and their results; the tool responses as a
    user message; ``$set`` updates; a ``$rewindTo`` now and then)."""

    def __init__(self, corpus: _Corpus, root: Path, era: str):
        self.c = corpus
        self.rng = corpus.rng
        self.text = corpus.text
        self.layout, (lo, hi), models = _GEMINI_ERAS[era]
        self.project, self.lang, self.cwd = corpus.project()
        self.model = self.rng.choice(models)
        start = self.rng.randint(lo, hi)
        self.clock = _Clock(start, self.rng)
        self.id = corpus.ids.uuid4()
        project_hash = hashlib.sha256(self.cwd.encode()).hexdigest()
        stamp = (_EPOCH + timedelta(milliseconds=start)).strftime("%Y-%m-%dT%H-%M")
        suffix = ".jsonl" if self.layout == "log" else ".json"
        self.path = root / project_hash / "chats" / f"session-{stamp}-{self.id[:8]}{suffix}"
        self.head = {"sessionId": self.id, "projectHash": project_hash, "startTime": _iso(start),
                     "lastUpdated": _iso(start), "directories": [self.cwd]}
        self.messages: list[dict] = []  # the history, for a document
        self.pending = 0  # bytes of the document not written yet
        self.prompts: list[str] = []  # ids of the prompts, for a rewind
        self.out = _JsonlFile(self.path, corpus.stats) if self.layout == "log" else None
        if self.out:
            self.out.write({**self.head, "kind": "main"}, "metadata")
            # the history gemini-cli starts with: its environment, in the user's name
            context = (f"<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
                       f"Today's date is {_iso(start)[:10]}.\nMy operating system is: linux\n"
                       f"I'm currently working in the directory: {self.cwd}\n</session_context>")
            self.out.write({"$set": {"messages": [{"id": corpus.ids.uuid4(), "timestamp": _iso(start), "type": "user",
                                                   "content": [{"text": context}]}]}}, "$set")
        corpus.stats.sessions += 1
        corpus.stats.main_sessions += 1

    def write(self, record: dict, kind: str) -> None:
        if self.out:
            self.out.write(record, kind)
            self.out.write({"$set": {"lastUpdated": self.clock.now()}}, "$set")
        else:
            self.messages.append(record)
            self.pending += len(orjson.dumps(record)) + 1

    def tokens(self) -> dict:
        rng = self.rng
        prompt, out, thoughts = rng.randint(4000, 60000), rng.randint(8, 900), rng.choice([0, rng.randint(20, 600)])
        cached = rng.choice([0, prompt - rng.randint(400, 3000), prompt - rng.randint(100, 900)])  # mostly cached
        return {"input": prompt, "output": out, "cached": max(0, cached), "thoughts": thoughts, "tool": 0,
                "total": prompt + out + thoughts}

    def thoughts(self) -> list[dict]:
        return [{"subject": self.text.title(self.lang), "description": self.text.thinking(self.lang),
                 "timestamp": self.clock.tick()} for _ in range(self.rng.randint(0, 2))]

    def call(self) -> tuple[dict, dict]:
        """A tool call with its result, and the tool response repeating it."""
        rng, stats = self.rng, self.c.stats
        call_id = f"{rng.choice(['run_shell_command', 'read_file', 'replace'])}-{self.clock.ms}-{self.c.ids.hex(12)}"
        name = call_id.split("-")[0]
        if name == "run_shell_command":
            command, description, output, code = self.c.shell.command(self.lang, self.project)
            args = {"command": command, "description": description, "dir_path": self.cwd}
            text = (f"Command: {command}\nDirectory: {self.cwd}\nOutput: {output or '(empty)'}\nError: (none)\n"
                    f"Exit Code: {code}\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: "
                    f"{rng.randint(2000, 90000)}")
            stats.failed_tool_results += int(code != 0)
            response, status = {"output": text}, "success"
        elif name == "read_file":
            path = f"{self.cwd}/{self.text.file(self.lang, self.project)}"
            args = {"absolute_path": path}
            response, status = {"output": self.text.code(self.lang, rng.randint(4, 30))}, "success"
        else:
            path = f"{self.cwd}/{self.text.file(self.lang, self.project)}"
            args = {"file_path": path, "old_string": self.text.code(self.lang, 2), "new_string": self.text.code(self.lang, 3)}
            if rng.random() < 0.15:
                response, status = {"error": f"Failed to edit, 0 occurrences found for old_string in {path}."}, "error"
                stats.failed_tool_results += 1
            else:
                response, status = {"output": f"Successfully modified file: {path} (1 replacements)."}, "success"
        stats.tool_calls += 1
        part = {"functionResponse": {"id": call_id, "name": name, "response": response}}
        call = {"id": call_id, "name": name, "args": args, "result": [part], "status": status,
                "timestamp": self.clock.tick(300, 9000), "displayName": name, "description": "",
                "resultDisplay": response.get("output", response.get("error", ""))[:200], "renderOutputAsMarkdown": False}
        return call, part

    def turn(self, steps: int) -> None:
        prompt_id = self.c.ids.uuid4()
        self.prompts.append(prompt_id)
        self.write({"id": prompt_id, "timestamp": self.clock.tick(20_000, 300_000), "type": "user",
                    "content": [{"text": self.text.prompt(self.lang, self.project, opening=not self.prompts[:-1])}]},
                   "user")
        self.c.stats.messages += 1
        for _ in range(steps):
            reply = {"id": self.c.ids.uuid4(), "timestamp": self.clock.tick(1500, 20000), "type": "gemini",
                     "content": "", "thoughts": self.thoughts(), "tokens": self.tokens(), "model": self.model}
            made = [self.call() for _ in range(self.rng.choice([1, 1, 1, 2, 3]))]
            if self.out:
                self.write(reply, "gemini")
                self.write({**reply, "toolCalls": [call for call, _ in made]}, "reappend")
                self.write({"id": self.c.ids.uuid4(), "timestamp": self.clock.tick(), "type": "user",
                            "content": [part for _, part in made]}, "tool_response")
            else:
                self.write({**reply, "toolCalls": [call for call, _ in made]}, "gemini")
        answer = {"id": self.c.ids.uuid4(), "timestamp": self.clock.tick(1500, 30000), "type": "gemini",
                  "content": self.text.answer(self.lang), "thoughts": self.thoughts(), "tokens": self.tokens(),
                  "model": self.model}
        self.write(answer, "gemini")
        self.c.stats.messages += 1

    def rewind(self) -> None:
        """The last prompt taken back (``$rewindTo``), then asked otherwise."""
        self.out.write({"$rewindTo": self.prompts[-1]}, "$rewindTo")
        self.c.stats.rewinds += 1
        self.c.stats.messages -= 2  # the prompt and its answer no longer count

    def close(self, title: str | None) -> None:
        if self.out:
            if title:
                self.out.write({"$set": {"summary": title}}, "$set")
            self.out.close()
            return
        document = {**self.head, "lastUpdated": self.clock.now(), "messages": self.messages}
        if title:
            document["summary"] = title
        _write_json_file(self.path, document, self.c.stats)
        self.c.stats.lines += 1
        self.c.stats.count_type("document")


class _GeminiGenerator:
    """Writes Gemini CLI chats under ``tmp/`` until the budget is spent."""

    def __init__(self, corpus: _Corpus, root: Path):
        self.c = corpus
        self.rng = corpus.rng
        self.root = root

    def run(self) -> None:
        planted = ["json", "jsonl"]  # each layout at least once
        while planted or self.c.target - self.c.stats.bytes > max(4 * KB, self.c.target // 200):
            era = planted.pop() if planted else self.rng.choices(
                [e for e, _ in _GEMINI_ERA_WEIGHTS], [w for _, w in _GEMINI_ERA_WEIGHTS])[0]
            budget = self.c.session_budget(self.c.target - self.c.stats.bytes) // 3  # chats are shorter
            chat = _GeminiChat(self.c, self.root, era)
            start, turns, rewound = self.c.stats.bytes, 0, False
            while turns < 1 or self.c.stats.bytes - start + chat.pending < budget:
                chat.turn(steps=self.rng.randint(0, 1 + int(4 * self.c.scale)))
                turns += 1
                if chat.out and not rewound and turns == 2 and self.rng.random() < 0.3:
                    chat.rewind()
                    rewound = True
            chat.close(self.c.text.title(chat.lang) if self.rng.random() < 0.6 else None)


def _codex_exit_code(output: object) -> int:
    """Exit code reported by a Codex tool output (0 when it reports none)."""
    if not isinstance(output, str):
        return 0
    if output.startswith("Exit code: "):
        return int(output[11 : output.index("\n")])
    if output.startswith("{"):
        try:
            meta = orjson.loads(output).get("metadata")
        except orjson.JSONDecodeError:
            return 0
        if isinstance(meta, dict):
            return int(meta.get("exit_code") or 0)
    return 0


# ---------------------------------------------------------------------------
# Newer shapes (``newer_shapes=True``): planted once each, after the rest, from RNG
# streams of their own, so the corpus of every other option stays byte for byte the same.

_NEWER_PROJECT = ("ledger-sync", "python", "/home/dev/projects/ledger-sync")
_NEWER_FILE = "src/ledger_sync/reconcile.py"  # the one file named in several spellings
# (tool, spelling): the store keeps the paths of tool calls without ``//``, ``.`` segments or a
# trailing slash (``sources.common.normal_path``); ``..`` stays, a link may lie on the way.
_CLAUDE_SPELLINGS = [
    ("Read", "{cwd}//{file}"), ("Edit", "{cwd}/./{file}"), ("Read", "{cwd}/{file}/"),
    ("Read", "{cwd}/src/ledger_sync/../ledger_sync/reconcile.py"), ("Read", "{cwd}/{file}"),
]
_CODEX_SPELLINGS = ["./{file}", "src//ledger_sync/reconcile.py"]  # apply_patch headers, relative to the cwd
_CODEX_NEWER_VERSION = "0.171.0"


class _ClaudeNewer(_ClaudeGenerator):
    """Late 2.1.x shapes: a session titled only by its ``<session>/custom-title.json``, one whose
    ``custom-title`` line outranks that file, and tool calls naming ``_NEWER_FILE`` in other
    spellings (in the first session's first response)."""

    def run(self) -> None:
        self.c.suppress_big = True
        self.spelled: str | None = None
        self.respell = [(tool, spelling.format(cwd=_NEWER_PROJECT[2], file=_NEWER_FILE))
                        for tool, spelling in _CLAUDE_SPELLINGS]
        for features in ({"respell"}, {"custom_title"}):
            t = self.session(_ClaudePlan("2.1b", features, _NEWER_PROJECT, budget=16 * KB))
            _write_json_file(t.folder / t.session_id / "custom-title.json",
                             {"customTitle": self.text.title(t.lang), "by": "user", "at": t.clock.tick()}, self.stats)

    def path(self, t: _ClaudeThread) -> str:
        return self.spelled or super().path(t)

    def step(self, t: _ClaudeThread, plan: _ClaudePlan, pending: set, prompt_uuid: str) -> None:
        if "respell" not in plan.features or not self.respell:
            super().step(t, plan, pending, prompt_uuid)
            return
        calls = []
        for tool, self.spelled in self.respell:
            call = getattr(self, f"tool_{tool.lower()}")(t)
            call.update(id=self.tool_id(), name=tool)
            call.setdefault("is_error", False)
            calls.append(call)
        self.spelled, self.respell = None, []
        source = t.respond([t.tool_use_block(call) for call in calls], "tool_use")
        for call in calls:
            t.tool_result(call, source)
            if call["name"] == "Edit":
                self.snapshot(t, prompt_uuid, update=True, path=call["input"]["file_path"])


class _CodexNewer(_CodexGenerator):
    """0.171 shapes: a fork of a fork (the grandchild's head holds its parent's copy of the root's
    history: the ``session_meta`` of each ancestor, then their lines), and a paginated parent that
    starts a worker (multi-agent v2: a ``spawn_agent`` call whose thread only the
    CollabAgentToolCall and SubAgentActivity items name, their ``item_started`` first), waits
    for it, is told of its end (a completion context, then the completed AgentMessage with
    ``sub_agent_completion``, and one its model was not told of), observes its responses
    (``agent_response_observation``), is given context in the user's name (``<user_agent_task>``,
    ``<context_rewind_carry_forward>``), patches ``_NEWER_FILE`` in other spellings and runs a
    review kept as completed EnteredReviewMode / ExitedReviewMode items."""

    def run(self) -> None:
        self.c.suppress_big = True
        start = _ms(2026, 11, 2) + self.rng.randint(0, 86_400_000)
        root = self.at(start)
        root.session_meta(source="cli")
        root.preamble()
        root.turn(steps=2)
        root.turn(steps=2)
        root.close()
        self.stats.main_sessions += 1
        self.fork(self.fork(root))
        self.agents(start + 4 * 3_600_000)

    def at(self, start: int) -> _CodexRollout:
        r = self.new_rollout("multi", _NEWER_PROJECT, start)
        r.version = _CODEX_NEWER_VERSION
        return r

    def open_turn(self, r: _CodexRollout, **started) -> str:
        r.clock.tick(20_000, 900_000)
        turn_id = self.c.ids.uuid7(r.clock.ms)
        r.emit("event_msg", {"type": "task_started", "turn_id": turn_id, **started})
        return turn_id

    def close_turn(self, r: _CodexRollout, turn_id: str, final: str | None) -> None:
        r.emit("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": final})
        r.turns += 1
        r.turn_ends.append(r.out.bytes)

    def prompt(self, r: _CodexRollout, text: str) -> None:
        r.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        r.emit("event_msg", {"type": "user_message", "message": text, "images": [], "local_images": [],
                             "text_elements": []})

    def answer(self, r: _CodexRollout) -> str:
        final = self.c.text.answer(r.lang, short=True)
        r.agent_message(final, "final_answer")
        r.token_count(self.rng.randint(9000, 40000))
        return final

    def items(self, r: _CodexRollout, turn_id: str, item: dict, done: dict | None) -> None:
        """``item_started`` for ``item``, then (unless ``done`` is None) its ``item_completed``."""
        ms = r.clock.ms
        r.emit("event_msg", {"type": "item_started", "thread_id": r.id, "turn_id": turn_id, "item": item,
                             "started_at_ms": ms})
        if done is not None:
            r.emit("event_msg", {"type": "item_completed", "thread_id": r.id, "turn_id": turn_id,
                                 "item": {**item, **done}, "started_at_ms": ms, "completed_at_ms": r.clock.ms})

    def completed(self, r: _CodexRollout, turn_id: str, item: dict) -> None:
        r.emit("event_msg", {"type": "item_completed", "thread_id": r.id, "turn_id": turn_id, "item": item,
                             "completed_at_ms": r.clock.ms})

    def agents(self, start: int) -> None:
        rng, ids, text = self.rng, self.c.ids, self.c.text
        p = self.at(start)
        p.session_meta(source="cli", extra={"history_mode": "paginated"})
        p.preamble()
        self.stats.main_sessions += 1
        nickname, path = rng.choice(_NICKNAMES), "/root/worker"
        task = f"Look into the {rng.choice(TOPICS)} and report which files need to change."
        # turn 1: spawn the worker, wait for it
        turn = self.open_turn(p, model_context_window=258400)
        p.turn_context(turn)
        self.prompt(p, text.prompt(p.lang, p.project))
        p.reasoning()
        spawn = p.call_id()
        p.item({"type": "function_call", "name": "spawn_agent", "call_id": spawn,
                "arguments": orjson.dumps({"task_name": "worker", "message": task}).decode()})
        child = self.new_rollout("multi", _NEWER_PROJECT, p.clock.ms + 400)
        child.version, child.model = p.version, p.model
        collab = {"type": "CollabAgentToolCall", "id": spawn, "tool": "spawn_agent", "status": "in_progress",
                  "sender_thread_id": p.id, "receiver_thread_ids": [], "receiver_agents": [], "prompt": task,
                  "agents_states": {}}
        activity = {"type": "SubAgentActivity", "id": spawn, "kind": "started", "agent_thread_id": child.id,
                    "agent_path": path}
        self.items(p, turn, collab, None)
        self.items(p, turn, activity, {})
        self.completed(p, turn, {**collab, "status": "completed", "receiver_thread_ids": [child.id],
                                 "receiver_agents": [{"thread_id": child.id, "agent_nickname": nickname,
                                                      "agent_role": "worker"}],
                                 "agents_states": {child.id: "pending_init"}})
        p.item({"type": "function_call_output", "call_id": spawn,
                "output": orjson.dumps({"task_name": path, "nickname": nickname}).decode()})
        p.out.write({"timestamp": p.clock.tick(), "type": "agent_response_observation", "payload": {
            "observer_thread_id": p.id, "target_thread_id": child.id, "target_turn_id": None,
            "pending_commentary": False, "baseline_final_delivery": "none", "final_delivery": "none",
            "final_delivery_response_item_id": None, "committed_delivery_response_item_ids": []}},
            "agent_response_observation")
        source = {"subagent": {"thread_spawn": {"parent_thread_id": p.id, "depth": 1, "agent_path": path,
                                                "agent_nickname": nickname, "agent_role": "worker"}}}
        child.session_meta(source=source, extra={"agent_nickname": nickname, "agent_role": "worker",
                                                 "agent_path": path})
        child.turn(task, steps=2)
        child.close()
        self.stats.subagent_transcripts += 1
        final = child.history[-1][1]
        wait = p.call_id()
        p.item({"type": "function_call", "name": "wait", "call_id": wait,
                "arguments": orjson.dumps({"targets": [path], "timeout_ms": 600000}).decode()})
        waiting = {"type": "CollabAgentToolCall", "id": wait, "tool": "wait", "status": "in_progress",
                   "sender_thread_id": p.id, "receiver_thread_ids": [child.id], "receiver_agents": [],
                   "agents_states": {child.id: "running"}}
        p.clock.ms = max(p.clock.ms, child.clock.ms) + 1000
        self.items(p, turn, waiting, {"status": "completed", "agents_states": {child.id: {"completed": final}}})
        p.item({"type": "function_call_output", "call_id": wait,
                "output": orjson.dumps({"status": {child.id: {"completed": final}}}).decode()})
        self.close_turn(p, turn, self.answer(p))
        # the worker's end as its parent's model is told it, then as the user is shown it; and an
        # end the model was not told of (the shown note is all there is of it)
        p.out.write({"timestamp": p.clock.tick(), "type": "inter_agent_communication_metadata",
                     "payload": {"trigger_turn": False}}, "inter_agent_communication_metadata")
        p.item({"type": "agent_message", "id": f"amsg_x_{ids.uuid7(p.clock.ms)}", "author": path, "recipient": "/root",
                "content": [{"type": "input_text", "text": f"Message Type: FINAL_ANSWER\nTask name: /root\n"
                                                           f"Sender: {path}\nPayload:\n{final}"}]})
        for said, extra in ((final, {}), (text.prose(p.lang, 1), {"model_visibility": "not_visible"})):
            turn = self.open_turn(p, collaboration_mode_kind="default")
            self.completed(p, turn, {
                "type": "AgentMessage", "id": f"msg_c_{ids.uuid7(p.clock.ms)}", "phase": "commentary",
                "content": [{"type": "Text", "text": f"Agent final answer from `{path}`:\n\n{said}"}],
                "sub_agent_completion": {"agent_reference": path, "status": "completed", **extra}})
            self.close_turn(p, turn, None)
        # turn 2: context in the user's name, then a prompt; patches in other spellings
        turn = self.open_turn(p, model_context_window=258400)
        p.turn_context(turn)
        note = orjson.dumps({"agent_id": child.id, "nickname": nickname, "task_preview": task[:40]}).decode()
        p.item({"type": "message", "role": "user", "id": f"msg_{ids.hex(32)}",
                "content": [{"type": "input_text", "text": f"<user_agent_task>\n{note}\n\n</user_agent_task>"}],
                "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["multi_agent.user_agent_task"]}})
        carry = orjson.dumps({"anchor_id": ids.hex(8), "note": text.prose(p.lang, 1)}).decode()
        p.item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"<context_rewind_carry_forward>\n{carry}\n\n</context_rewind_carry_forward>"}]})
        self.prompt(p, text.prompt(p.lang, p.project))
        p.reasoning()
        for spelling in _CODEX_SPELLINGS:
            p.apply_patch(spelling.format(file=_NEWER_FILE))
        self.close_turn(p, turn, self.answer(p))
        # turn 3: a review, its start and findings as completed items (no review events)
        turn = self.open_turn(p, model_context_window=258400)
        p.turn_context(turn)
        self.completed(p, turn, {"type": "EnteredReviewMode", "id": f"review-{ids.hex(8)}",
                                 "target": {"type": "uncommittedChanges"}, "user_facing_hint": "current changes"})
        p.agent_message(text.prose(p.lang, 1), "commentary")
        finding = {"title": f"[P1] {rng.choice(SYMPTOMS).capitalize()}", "body": text.prose(p.lang, 1),
                   "confidence_score": 0.8, "priority": 1,
                   "code_location": {"absolute_file_path": f"{p.cwd}/{_NEWER_FILE}",
                                     "line_range": {"start": 12, "end": 18}}}
        self.completed(p, turn, {"type": "ExitedReviewMode", "id": f"review-{ids.hex(8)}", "review_output": {
            "findings": [finding], "overall_correctness": "patch is incorrect",
            "overall_explanation": text.prose(p.lang, 1), "overall_confidence_score": 0.8}})
        self.close_turn(p, turn, None)
        p.close()


# ---------------------------------------------------------------------------
# Entry point


def generate(root: Path, *, seed: int = 0, target_bytes: int = 2_000_000, claude: bool = True,
             codex: bool = True, gemini: bool = False, huge_line_bytes: int | None = None,
             big_output_every: int = 0, newer_shapes: bool = False, prompt_logs: bool = False) -> GenerateStats:
    """Write a synthetic corpus of about ``target_bytes`` under ``root``.

    ``root/.claude/projects/…`` holds Claude Code sessions (about 70% of the
    bytes when both sources are on), ``root/.codex/sessions/…`` Codex
    rollouts; ``target_bytes`` is met within 10% from about 350 KB up (every
    shape is planted at least once, which takes about 300 KB). Rollouts are
    not date-sorted in generation order, and existing files under ``root``
    are left alone. ``huge_line_bytes`` plants one tool-output line of at least that
    size (in Claude when enabled, else in Codex); ``big_output_every=N`` makes
    every Nth shell call a multi-megabyte output instead of the default mix
    (about a quarter of the bytes). With ``gemini``, Gemini CLI chats under
    ``root/.gemini/tmp/…`` take a tenth of the bytes. With ``newer_shapes``, some
    180 KB more plant the shapes of late Claude Code 2.1.x and Codex 0.171 once each (see
    ``_ClaudeNewer``, ``_CodexNewer``), after the rest, which stays as without it. Same arguments,
    same bytes.

    With ``prompt_logs``, the agents' prompt logs are written too, after the rest
    (which stays as without it): ``root/.claude/history.jsonl`` and
    ``root/.codex/history.jsonl`` hold every prompt typed in the sessions
    written (not a subagent's task) and those of a few sessions whose transcripts
    are not written, as if cleaned up (``prompt_log_orphans``).
    """
    root = Path(root)
    stats = GenerateStats()
    if gemini:
        corpus = _Corpus(seed, "gemini", target_bytes // 10 if claude or codex else target_bytes, stats.gemini, 0)
        _GeminiGenerator(corpus, root / ".gemini" / "tmp").run()
        target_bytes = max(0, target_bytes - stats.gemini.bytes)
    claude_share = 0.7 if claude and codex else 1.0
    typed: dict[str, list | None] = {"claude": [] if prompt_logs else None, "codex": [] if prompt_logs else None}
    if claude:
        corpus = _Corpus(seed, "claude", int(target_bytes * claude_share), stats.claude, big_output_every)
        corpus.typed = typed["claude"]
        huge = _huge_copy_size(huge_line_bytes, 1) if huge_line_bytes else None  # halved per copy
        _ClaudeGenerator(corpus, root / ".claude" / "projects", huge).run()
    if codex:
        corpus = _Corpus(seed, "codex", max(0, target_bytes - stats.claude.bytes), stats.codex, big_output_every)
        corpus.typed = typed["codex"]
        huge = _huge_copy_size(huge_line_bytes, 1) if huge_line_bytes and not claude else None
        _CodexGenerator(corpus, root / ".codex" / "sessions", huge).run()
    if newer_shapes and claude:
        corpus = _Corpus(seed, "claude-newer", NEWER_BYTES, stats.claude, 0)
        corpus.typed = typed["claude"]
        _ClaudeNewer(corpus, root / ".claude" / "projects", None).run()
    if newer_shapes and codex:
        corpus = _Corpus(seed, "codex-newer", NEWER_BYTES, stats.codex, 0)
        corpus.typed = typed["codex"]
        _CodexNewer(corpus, root / ".codex" / "sessions", None).run()
    if prompt_logs and claude:
        _write_prompt_log(root / ".claude" / "history.jsonl", "claude", typed["claude"], seed, stats.claude)
    if prompt_logs and codex:
        _write_prompt_log(root / ".codex" / "history.jsonl", "codex", typed["codex"], seed, stats.codex)
    if huge_line_bytes:
        stats.huge_line_bytes = max(stats.claude.longest_line, stats.codex.longest_line)
    return stats


CLEANED_UP = {"claude": 3, "codex": 1}  # sessions of each prompt log whose transcripts are not written


def _write_prompt_log(path: Path, source: str, typed: list, seed: int, stats: SourceStats) -> None:
    """An agent's prompt log: the prompts ``typed`` in the sessions written, and those of
    ``CLEANED_UP`` sessions whose transcripts are gone, oldest first, as the agent appends them
    (Claude Code: ``{display, pastedContents, timestamp, project, sessionId}``; Codex:
    ``{session_id, ts, text}``). Its own random stream: the sessions stay as they are."""
    rng = random.Random(f"obelisk:{seed}:{source}-prompt-log")
    text, ids = _Text(rng), _Ids(rng)
    entries = list(typed)
    if entries:
        first, last = min(ms for ms, *_ in entries), max(ms for ms, *_ in entries)
        cwds = sorted({cwd for _, _, cwd, _ in entries})
        for _ in range(CLEANED_UP[source]):
            ms = rng.randint(first, last)
            session_id = ids.uuid4() if source == "claude" else ids.uuid7(ms)
            cwd = rng.choice(cwds)
            project = Path(cwd).name
            for n in range(rng.randint(2, 4)):
                ms += rng.randint(20_000, 600_000)
                entries.append((ms, session_id, cwd, text.prompt("python", project, opening=n == 0)))
            stats.prompt_log_orphans += 1
    entries.sort(key=lambda entry: entry[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fp:
        for ms, session_id, cwd, prompt in entries:
            if source == "claude":
                obj = {"display": prompt, "pastedContents": {}, "timestamp": ms, "project": cwd, "sessionId": session_id}
            else:
                obj = {"session_id": session_id, "ts": ms // 1000, "text": prompt}
            data = orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
            fp.write(data)
            stats.bytes += len(data)
            stats.lines += 1
            stats.prompt_log_lines += 1
            stats.longest_line = max(stats.longest_line, len(data))
    stats.files += 1


def _huge_copy_size(line_bytes: int, copies: int) -> int:
    """Bytes per copy of the output so that the whole line reaches ``line_bytes``."""
    return math.ceil(line_bytes / copies) + CHUNK_BYTES

