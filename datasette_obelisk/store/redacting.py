"""Redaction in the ingest pipeline: between parsing and storing.

The HMAC key lives in a file beside the database (``<db>.redaction-key``,
mode 0600), never inside it, so a published copy of the database does not
carry the key that would let anyone test guesses against its markers.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import sqlite3
import time
from collections import Counter
from pathlib import Path

import orjson

from ..cjk import search_text
from ..sources.lines import dump_json
from ..records import (
    Message, PromptEntry, PullRequest, Session, Subagent, Summary, TitleCandidate, ToolCall, ToolResult, Workflow, WorkflowAgent,
)
from .db import INDEXED_FORMS, database_path, get_state, set_state
from .digests import write_search_forms
from .tool_output import FAILURE_SQL
from .writer import FILE_TABLES
from .redaction import RULESET_VERSION, Redactor

TEXT_FIELDS = {
    Message: ("text",),
    ToolResult: ("content",),
    Summary: ("content",),
    TitleCandidate: ("title",),
    PromptEntry: ("text",),
    Session: ("title",),
    Subagent: ("description",),
    WorkflowAgent: ("description",),
    Workflow: ("script",),
}
# Short values that repeat (a token can sit in a clone's path or a branch
# name): redacted through a cache.
CONTEXT_FIELDS = {
    Message: ("cwd", "git_branch"),
    Session: ("project", "project_path", "cwd", "git_branch", "repository", "reasoning_effort", "tag", "agent_name",
              "team_name", "relocated_cwd", "worktree_path", "worktree_branch", "worktree_base_branch"),
    ToolResult: ("file_path",),
    PullRequest: ("url", "repository"),
    PromptEntry: ("project",),
}
# Who a message says sent it and to whom (its meta's ``from`` and ``to``: an agent
# team's member, a Codex agent; a name or a list of them), taken from its text
# before that was redacted: names, redacted as the context fields are; and the
# reasoning effort a Codex answer's turn asked for (``effort``), as the session's is.
META_NAMES = ("from", "to", "effort")
JSON_FIELDS = {ToolCall: ("input_json",), Workflow: ("result_json",), PromptEntry: ("pasted_json",)}
LIST_FIELDS = {ToolCall: ("file_paths",)}
CACHED_VALUES = 4096
# Stored text columns by table (key column first), for re-redacting rows
# whose source file is gone and for `obelisk redact --check`.
STORED_TEXT = {
    "messages": ("id", "text", "cwd", "git_branch"),
    "tool_calls": ("id", "input_json", "file_path"),
    "tool_call_files": ("rowid", "path"),
    "tool_results": ("id", "content", "file_path"),
    "summaries": ("id", "content"),
    "titles": ("id", "title"),
    "pull_requests": ("id", "url", "repository"),
    "prompt_log": ("id", "text", "project", "pasted_json"),
    "sessions": ("id", "title", "project", "project_path", "cwd", "git_branch", "repository", "reasoning_effort", "tag",
                 "agent_name", "team_name", "relocated_cwd", "worktree_path", "worktree_branch", "worktree_base_branch"),
    "subagents": ("id", "description"),
    "workflows": ("run_id", "script"),
    "workflow_agents": ("agent_id", "description"),
}
# The form the FTS tables index of a column (``cjk.search_text``), set again with it.
SEARCH_FORMS = {
    ("messages", "text"): f"{INDEXED_FORMS['messages']} = ?",
    ("tool_results", "content"): f"{INDEXED_FORMS['tool_results']} = CASE WHEN {FAILURE_SQL} THEN ? END",
    ("prompt_log", "text"): "search_text = ?",
}


# The columns a session digest copies: the sessions whose digest a change of their rows (keys) clears.
DIGESTED = {
    ("sessions", "title"): "SELECT value FROM json_each(?)",
    ("summaries", "content"): "SELECT DISTINCT session_id FROM summaries WHERE id IN (SELECT value FROM json_each(?))",
}


# What is set again with a column (``SET ... = ?``): its indexed form, a message's length.
ALSO = {
    ("messages", "text"): {SEARCH_FORMS["messages", "text"]: search_text, "text_length = ?": len},
    ("tool_results", "content"): {SEARCH_FORMS["tool_results", "content"]: search_text},
    ("prompt_log", "text"): {SEARCH_FORMS["prompt_log", "text"]: search_text},
}


def key_path(db_path: str | Path) -> Path:
    return Path(f"{db_path}.redaction-key")


def load_key(db_path: str | Path) -> bytes:
    """The database's HMAC key, created on first use.

    Processes opening a new database together agree on one key: each writes
    its own in full to a file of its own, and the first to link that file
    into place wins; the others read the winner's. Where a folder takes no
    hard links (vfat, some network shares), the key is written in place and
    a reader waits for it to be whole."""
    path = key_path(db_path)
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    key = secrets.token_bytes(32)
    draft = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}")
    try:
        _write_key(draft, key)
        os.link(draft, path)
    except FileExistsError:
        return _read_key(path)
    except OSError:
        try:
            _write_key(path, key)
        except FileExistsError:
            return _read_key(path)
    finally:
        draft.unlink(missing_ok=True)
    return key


def _write_key(path: Path, key: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fp:
        fp.write(key.hex() + "\n")


def _read_key(path: Path, wait: float = 2.0) -> bytes:
    """The key in ``path``, once whoever creates it has written it whole."""
    deadline = time.monotonic() + wait
    while True:
        text = path.read_text().strip()
        if len(text) == 64:
            return bytes.fromhex(text)
        if time.monotonic() > deadline:
            raise ValueError(f"{path} does not hold a redaction key (64 hexadecimal digits)")
        time.sleep(0.01)


def redactor_for(db_path: str | Path) -> Redactor:
    return Redactor(key=load_key(db_path))


@functools.lru_cache(maxsize=8)
def _redactor_with_key(key: bytes) -> Redactor:
    return Redactor(key=key)


def redaction_for_connection(conn: sqlite3.Connection):
    """The ``text -> text`` redaction for text re-read from source files (``raw()``).

    None for a database whose latest ingest ran with ``--no-redact``. Uses the
    database's key when its file is readable (markers then match the stored
    ones), else a one-off key: the secrets are removed either way.
    """
    if not latest_ingest_redacted(conn):
        return None
    try:
        key = bytes.fromhex(key_path(database_path(conn)).read_text().strip())
    except (OSError, ValueError, TypeError):
        key = secrets.token_bytes(32)
    return _redactor_with_key(key).redact


def record_redactor_for(conn: sqlite3.Connection) -> "RecordRedactor | None":
    """How to redact what a later, smaller ingest into this database reads
    (a live tail before an answer): as its latest ingest did, with its key;
    None when that one ran with ``--no-redact``."""
    if not latest_ingest_redacted(conn):
        return None
    return RecordRedactor(redactor_for(database_path(conn)))


def latest_ingest_redacted(conn: sqlite3.Connection) -> bool:
    """Whether the latest ingest redacted (a database of a version that did not
    record it: whether every one did)."""
    mode = get_state(conn, "redaction_mode")
    return mode == "on" if mode is not None else not get_state(conn, "unredacted_ingest")


class RecordRedactor:
    """Redacts every stored text field of a record, in place."""

    def __init__(self, redactor: Redactor):
        self.redactor = redactor
        self._last = ("", "")  # a tool result's output is usually its message's text again
        self._context: dict[str, str] = {}

    def __call__(self, record):
        kind = type(record)
        split = kind is Message and record.text and (record.meta or {}).get("thinking_chars")
        if split:  # a reply holding its thinking: each part redacted, and where the thinking ends kept
            thinking = self.redactor.redact(record.text[:split])
            record.text = thinking + self.redactor.redact(record.text[split:])
            record.meta = {**record.meta, "thinking_chars": len(thinking)}
        for name in TEXT_FIELDS.get(kind, ()):
            value = getattr(record, name)
            if value and not (split and name == "text"):
                setattr(record, name, self.redact_text(value))
        for name in CONTEXT_FIELDS.get(kind, ()):
            value = getattr(record, name)
            if value:
                setattr(record, name, self.redact_context(value))
        for name in JSON_FIELDS.get(kind, ()):
            value = getattr(record, name)
            if value:
                setattr(record, name, self.redact_json(value))
        for name in LIST_FIELDS.get(kind, ()):
            values = getattr(record, name)
            if values:
                setattr(record, name, [self.redact_context(value) for value in values])
        if kind is Message and record.meta and any(record.meta.get(key) for key in META_NAMES):
            record.meta = {**record.meta, **{key: self.redact_names(record.meta[key])
                                             for key in META_NAMES if record.meta.get(key)}}
        return record

    def redact_names(self, value):
        """A name (or a list of them) redacted as a context field; anything else as it is."""
        if isinstance(value, str):
            return self.redact_context(value)
        if isinstance(value, list):
            return [self.redact_context(v) if isinstance(v, str) else v for v in value]
        return value

    def redact_context(self, value: str) -> str:
        redacted = self._context.get(value)
        if redacted is None:
            if len(self._context) == CACHED_VALUES:
                self._context.clear()
            redacted = self._context[value] = self.redactor.redact(value)
        return redacted

    def redact_text(self, text: str) -> str:
        if text == self._last[0]:
            return self._last[1]
        redacted = self.redactor.redact(text)
        self._last = (text, redacted)
        return redacted

    def redact_json(self, text: str) -> str:
        """Redact a JSON document's decoded strings, so it stays valid JSON.

        Secrets inside escaped strings are only recognisable once decoded; a
        document the prefilter finds no keyword in is left as it is, undecoded.
        """
        if not self.redactor.may_change_json(text):
            return text
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return self.redactor.redact(text)
        redacted = self.redactor.redact_value(value)
        try:
            return text if redacted == value else dump_json(redacted).decode()  # (orjson writes only 255 levels)
        except RecursionError:  # nested deeper than Python compares (orjson reads 1,024 levels)
            written = dump_json(redacted)
            return text if written == dump_json(value) else written.decode()


def prepare(conn: sqlite3.Connection, enabled: bool) -> bool:
    """Record how this ingest redacts; True when stored rows need the new rules.

    A database ingested even once without redaction stays marked, so a
    publish step can refuse it; what is read later without an ingest (a live
    tail, ``raw()``) is redacted as the latest ingest did.
    """
    set_state(conn, "redaction_mode", "on" if enabled else "off")
    if not enabled:
        set_state(conn, "unredacted_ingest", "1")
        return False
    stored = get_state(conn, "redaction_ruleset")
    set_state(conn, "redaction_ruleset", str(RULESET_VERSION))
    has_rows = conn.execute("SELECT 1 FROM messages LIMIT 1").fetchone() is not None
    return stored != str(RULESET_VERSION) and has_rows


def redact_stored_rows(conn: sqlite3.Connection, redactor: Redactor, file_ids=None) -> int:
    """Apply the current rules to stored rows (all, or those of ``file_ids``)."""
    record_redactor = RecordRedactor(redactor)
    changed = 0
    for table, column, key, where, params in _stored_columns(file_ids):
        updates = []
        for row_key, value in conn.execute(f"SELECT {key}, {column} FROM {table}{where}", params):
            if not value:
                continue
            new = record_redactor.redact_json(value) if column.endswith("_json") else redactor.redact(value)
            if new != value:
                updates.append((new, *(forms(new) for forms in ALSO.get((table, column), {}).values()), row_key))
        also = "".join(f", {setting}" for setting in ALSO.get((table, column), {}))
        conn.executemany(f"UPDATE OR IGNORE {table} SET {column} = ?{also} WHERE {key} = ?", updates)
        changed += len(updates)
        if updates and (table, column) in DIGESTED:  # (their triggers cleared the digest's search form)
            keys = json.dumps([update[-1] for update in updates])
            write_search_forms(conn, [session for (session,) in conn.execute(DIGESTED[table, column], [keys])])
    return changed


def _stored_columns(file_ids=None):
    """``(table, column, key, where, params)`` of each stored text column, of ``file_ids``'s
    rows only when given (a table without file_id is read whole: redacting is idempotent)."""
    for table, (key, *columns) in STORED_TEXT.items():
        where, params = "", []
        if file_ids is not None and table in FILE_TABLES:
            where = f" WHERE file_id IN ({','.join('?' * len(file_ids))})"
            params = list(file_ids)
        for column in columns:
            yield table, column, key, where, params


def check(conn: sqlite3.Connection) -> dict:
    """What the current rules would still find, by table and rule; never the secrets
    (finding them needs no key: a one-off one is used)."""
    redactor = Redactor(key=secrets.token_bytes(32))
    report, present = {}, {}
    for table, column, key, _, _ in _stored_columns():
        if table not in present:
            present[table] = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in present[table]:
            continue  # (a database not migrated yet: it has no such column to hold a secret)
        rules: Counter = Counter()
        rows = []
        for row_key, value in conn.execute(f"SELECT {key}, {column} FROM {table}"):
            if not value:
                continue
            findings = redactor.scan(value)
            if findings:
                rules.update(f.rule for f in findings)
                rows.append(row_key)
        if rows:
            report[f"{table}.{column}"] = {"rows": len(rows), "findings": dict(rules), "first_rows": rows[:10]}
    return report
