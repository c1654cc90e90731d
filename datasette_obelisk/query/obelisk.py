"""The Obelisk helper API: plain functions over a (read-only) sqlite3 connection.

Names, options, defaults, ordering and return shapes follow the Obelisk
helper reference. Every helper takes the connection first, then the
reference's arguments; options come as a dict (the reference's camelCase
keys, e.g. ``{"sessionId": ..., "includeMeta": True}``) and/or as keyword
arguments (``session_id=...``). A string where options are expected means
``sessionId`` (``project`` for ``overview``), a number means ``limit``.
Unknown option names are refused, so a typo never widens a query silently,
and so is an option given twice (``sessionId`` and ``session_id``, or in the
dict and as a keyword): which one was meant?
``after`` / ``before`` are ISO 8601 dates or times, compared with stored
timestamps as instants (``moments.py``); anything else is refused. Lists
ordered by time are ordered by those instants too.

``helpers(conn)`` returns the same functions bound to ``conn`` under the
reference's exact global names, for ``obelisk query`` scripts.

Texts longer than ``MAX_TEXT`` characters are clipped (a search hit around
its first matching term); ``raw()`` re-reads the whole original line.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import os
import re
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from .. import cjk
from ..sources.common import normal_path
from ..sources.lines import BOM
from ..store.db import INDEXED_FORMS, splits_cjk
from ..store.fingerprint import still_holds
from ..store.reader import open_stream
from ..store.redacting import redaction_for_connection
from ..store.tool_output import full_content_sql
from ..store.units import retired_from
from . import fts, snapshots
from .cursors import decode_cursor, encode_cursor, fingerprint, is_count
from .cursors import invalid as cursor_invalid
from .errors import QueryError, holds_lone_surrogate, refusing_unencodable
from .filters import Filters
from ..utc import canonical
from .moments import moment_sql
from .readonly import error_for, run_sql, translated_errors
from .text import parse_json as text_parse_json

MAX_LIMIT = 1_000
MAX_THREAD = 10_000  # messages one thread() call returns
MAX_CHAIN = 10_000
MAX_TEXT = 10_000
NEIGHBOUR_TEXT = 2_000
NEIGHBOURS = 6
NEIGHBOUR_WINDOW = 200  # lines either side of a hit searched for neighbours
RAW_LIMIT = 10_000
MAX_RAW_LIMIT = 10_000_000
BRANCHES_PER_PROJECT = 3

MESSAGE_FIELDS = ("uuid", "text", "content_type", "is_meta", "role", "timestamp", "model", "cwd", "source")
OVERVIEW_SESSION_FIELDS = (
    "id", "title", "project", "project_path", "started_at", "ended_at", "git_branch", "message_count", "source",
)
MEMORY_FIELDS = (
    "id", "session_id", "project", "message_start", "message_end", "path", "anchors", "summary",
    "created_at", "deleted_at", "deleted_reason",
)
OVERVIEW_MEMORY_FIELDS = ("id", "path", "anchors", "summary", "session_id", "project", "created_at")
WORKFLOW_RUN_FIELDS = (
    "run_id", "session_id", "workflow_name", "status", "timestamp", "agent_count", "duration_ms", "total_tokens",
)
TOOL_CALL_FIELDS = ("id", "message_uuid", "name", "input_json")

# Sessions people start; subagent and workflow transcripts are reached
# through subagents() / workflowTree(), guardian threads not at all. A
# transcript whose parent session is not stored (its log was never seen)
# has nothing to be reached through: it counts as a session of its own.
def top_level_sql(stored_by: bool = False) -> str:
    """``TOP_LEVEL``; ``stored_by``: a parent counts only when its rowid is at most a parameter
    (a list of the sessions there were then)."""
    parent = "p.id = s.parent_session_id" + (" AND p.rowid <= ?" if stored_by else "")
    return (
        "(COALESCE(s.relationship, '') NOT IN ('subagent', 'workflow') "
        f"OR NOT EXISTS (SELECT 1 FROM sessions p WHERE {parent})) AND COALESCE(s.is_excluded, 0) = 0"
    )


TOP_LEVEL = top_level_sql()
NOT_EXCLUDED = "m.session_id NOT IN (SELECT id FROM sessions WHERE is_excluded)"


# -- options -------------------------------------------------------------

CAMEL = {
    "sessionId": "session_id",
    "includeMeta": "include_meta",
    "projectLimit": "project_limit",
    "memoryLimit": "memory_limit",
    "afterUuid": "after_uuid",
}
SNAKE_TO_CAMEL = {v: k for k, v in CAMEL.items()}
OPTION_TYPES = {
    "limit": int, "offset": int, "project_limit": int, "memory_limit": int,
    "session_id": str, "project": str, "after": str, "before": str, "cwd": str,
    "source": str, "branch": str, "query": str, "mode": str,
    "include_meta": bool, "sessions": list, "after_uuid": str,
}
LIMIT_KEYS = ("limit", "project_limit", "memory_limit")
MAX_OFFSET = 2**62  # an offset plus a limit still fits SQLite's 64-bit integers
PATTERN_KEYS = ("project", "cwd")  # SQL LIKE patterns
MAX_PATTERN_CHARS = 10_000  # SQLite refuses a LIKE pattern over 50,000 bytes
TIME_BOUNDS = ("after", "before")


def options(helper: str, given, kwargs: dict, defaults: dict, keys=(), *, string_key="session_id", max_limit=MAX_LIMIT) -> dict:
    """Normalise a helper's options: shorthands, camelCase, types and bounds."""
    if given is None:
        given = {}
    elif isinstance(given, bool):
        raise invalid(f"{helper}() options must be {option_forms(string_key)}")
    elif isinstance(given, int):
        given = {"limit": given}
    elif isinstance(given, str) and string_key:
        given = {string_key: given}
    elif not isinstance(given, dict):
        raise invalid(f"{helper}() options must be {option_forms(string_key)}")
    allowed = set(defaults) | set(keys)
    result = dict(defaults)
    spelt: dict[str, str] = {}  # option name -> the key that gave it
    for key, value in [*given.items(), *kwargs.items()]:
        name = CAMEL.get(key, key)
        if name in spelt:  # (sessionId and session_id, or an option and a keyword): which one was meant?
            raise invalid(f"{helper}() was given {SNAKE_TO_CAMEL.get(name, name)} twice ({spelt[name]!r} and {key!r})")
        spelt[name] = key
        if name not in allowed:
            names = ", ".join(sorted(SNAKE_TO_CAMEL.get(k, k) for k in allowed))
            raise invalid(f"{helper}() has no option {key!r}; its options are: {names}")
        if value is not None:
            result[name] = check_type(helper, name, value, max_limit)
    return result


def option_forms(string_key: str | None) -> str:
    """What a helper takes in place of its options dict, for error messages."""
    if string_key is None:
        return "a dict or an integer (its limit)"
    return f"a dict, a string (its {SNAKE_TO_CAMEL.get(string_key, string_key)}) or an integer (its limit)"


def check_type(helper: str, name: str, value, max_limit: int):
    expected = OPTION_TYPES.get(name, object)
    display = SNAKE_TO_CAMEL.get(name, name)
    if expected is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise invalid(f"{helper}(): {display} must be an integer")
    if expected is list:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set)) \
                or not all(isinstance(v, str) for v in value):
            raise invalid(f"{helper}(): {display} must be a list of strings")
        value = list(value)
    elif not isinstance(value, expected):
        raise invalid(f"{helper}(): {display} must be a {expected.__name__}")
    if name in LIMIT_KEYS and not 1 <= value <= max_limit:
        raise invalid(f"{helper}(): {display} must be between 1 and {max_limit}")
    if name == "offset" and not 0 <= value < MAX_OFFSET:
        raise invalid(f"{helper}(): offset must not be negative" if value < 0 else f"{helper}(): offset is too large")
    if name in PATTERN_KEYS and len(value) > MAX_PATTERN_CHARS:
        raise invalid(f"{helper}(): {display} is longer than {MAX_PATTERN_CHARS:,} characters")
    if name == "session_id" and not value.strip():  # (no session's id is blank: it names none)
        raise invalid(f"{helper}(): {display} must not be empty or only whitespace")
    if name == "mode":
        return fts.search_mode(value)
    if name in TIME_BOUNDS:
        return time_bound(helper, display, value)
    return value


def time_bound(helper: str, display: str, value: str) -> str:
    """An ``after`` / ``before`` value as the canonical instant stored times are compared with
    (a fraction finer than a millisecond rounded inward: ``after`` up, ``before`` down)."""
    instant = canonical(value, "up" if display == "after" else "down")
    if instant is None:
        raise invalid(
            f"{helper}(): {display} must be an ISO 8601 date or time, such as 2025-06-14 or "
            f"2025-06-14T11:01:31Z, not {value!r}"
        )
    return instant


def known_source(conn, opts: dict, helper: str | None = None) -> dict:
    """``opts`` when its ``source`` (if any) is installed or has sessions in the database,
    spelt as that source is (a name is read in any case: ``Claude`` is ``claude``), else
    OBELISK_INVALID_ARGUMENT: a misspelt source would otherwise match nothing (its message
    headed ``helper():`` as the helper's other refusals are, when ``helper`` is given).
    ``"all"`` (in any case) is the same as no source."""
    from ..plugins import get_sources, source_spelled, unknown_sources

    source = opts.get("source")
    if not isinstance(source, str):
        return opts
    if source.casefold() == "all":
        return {**opts, "source": None}
    installed = get_sources()
    if source in installed:
        return opts
    stored = stored_sources(conn)
    source = source_spelled(source, installed, stored)
    message = unknown_sources([source], installed, stored)
    if message:
        raise invalid(f"{helper}(): {message}" if helper else message)
    return {**opts, "source": source}


def source_options(conn, helper: str, *args, **kwargs) -> dict:
    """``options(helper, ...)`` with its source checked (``known_source``)."""
    return known_source(conn, options(helper, *args, **kwargs), helper)


def known_role(conn, role: str) -> str:
    """``role`` as a speaker of ``events.SPEAKERS`` spells it (read in any case), or as given
    when a stored message has it (a source plugin's own role, read from its index), else
    OBELISK_INVALID_ARGUMENT naming the speakers: a misspelt role would otherwise match nothing."""
    from .events import SPEAKERS, stored_role

    spelt = role.strip()
    if not spelt:
        raise invalid("role must not be blank")
    if spelt.casefold() in SPEAKERS:
        return spelt.casefold()
    if not stored_role(conn, spelt):
        raise invalid(f"unknown role {role}; the roles are {', '.join(SPEAKERS)}")
    return spelt


def known_tools(conn, tool: str) -> tuple[str, ...]:
    """The tool names ``tool`` names: itself when a stored call has it, else those it spells
    in another case (``bash``: Bash), else OBELISK_INVALID_ARGUMENT: a name no call has would
    match nothing, and say nothing of it. (Read from the names' index, ``tool_calls_name``.)"""
    spelt = tool.strip()
    if not spelt:
        raise invalid("tool must not be blank")
    if conn.execute("SELECT 1 FROM tool_calls WHERE name = ? LIMIT 1", [spelt]).fetchone() is not None:
        return (spelt,)
    folded = spelt.casefold()
    names = tuple(name for (name,) in conn.execute("SELECT DISTINCT name FROM tool_calls ORDER BY name")
                  if name.casefold() == folded)
    if not names:
        raise invalid(f"no tool call is named {tool}: the archive holds no call of that tool")
    return names


SESSION_FACETS = {"branch": "git_branch", "model": "model"}  # facet -> its ``sessions`` column


def session_spellings(conn, chosen: dict) -> list[dict]:
    """For each branch or model of ``chosen`` (``{facet: values}``) no session holds as
    given, the values sessions hold that differ from it in case alone, when there are any:
    ``[{"facet", "value", "spelt"}]``, a hint for a list that came out empty. Read from the
    sessions, far fewer than the messages, whose own branch or model may differ from their
    session's (so none is refused by it)."""
    found = []
    for facet, column in SESSION_FACETS.items():
        values = chosen.get(facet) or ()
        if not values:
            continue
        held = {value for (value,) in conn.execute(f"SELECT DISTINCT {column} FROM sessions WHERE {column} IS NOT NULL")}
        for value in values:
            spelt = sorted(v for v in held if v.casefold() == value.casefold() and v != value)
            if value not in held and spelt:
                found.append({"facet": facet, "value": value, "spelt": spelt})
    return found


def stored_sources(conn) -> list[str]:
    """The sources of the stored sessions, in order."""
    return [row[0] for row in conn.execute("SELECT DISTINCT source FROM sessions ORDER BY source")]


def invalid(message: str) -> QueryError:
    return QueryError("OBELISK_INVALID_ARGUMENT", message)


def require_text(helper: str, name: str, value) -> str:
    """A required identifier (a session id, a message uuid, a run id, a path): a string
    that is neither empty nor only whitespace, which could name nothing stored."""
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"{helper}() needs {name} as a non-empty string (not only whitespace)")
    return value


# -- filters -------------------------------------------------------------

# after / before compare instants: the column's canonical form (see moments.py).
OPERATORS = {
    "session_id": "{} = ?", "project": "{} LIKE ?", "cwd": "{} LIKE ?",
    "after": moment_sql("{}") + " >= ?", "before": moment_sql("{}") + " <= ?",
    "branch": "{} = ?", "source": "{} = ?",
}


class Where:
    """AND-ed SQL conditions and their parameters."""

    def __init__(self, *clauses: str):
        self.clauses = list(clauses)
        self.params: list = []

    def add(self, clause: str, *params) -> "Where":
        self.clauses.append(clause)
        self.params.extend(params)
        return self

    def scope(self, opts: dict, columns: dict[str, str]) -> "Where":
        """Conditions for the scope options a helper maps onto columns."""
        for name, column in columns.items():
            value = opts.get(name)
            if value is None:
                continue
            if name == "sessions":
                self.add(f"{column} IN ({', '.join('?' * len(value))})" if value else "0", *value)
            else:
                self.add(OPERATORS[name].format(column), value)
        return self

    def __str__(self) -> str:
        return " AND ".join(f"({c})" for c in self.clauses) or "1"


def rows(conn, sql: str, params=()) -> list[sqlite3.Row]:
    with translated_errors():
        return named(conn).execute(sql, params).fetchall()


def one(conn, sql: str, params=()) -> sqlite3.Row | None:
    with translated_errors():
        return named(conn).execute(sql, params).fetchone()


def named(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor whose rows are ``sqlite3.Row``, whatever the connection's row factory
    (the helpers take any connection: one of ``connect_readonly`` or the caller's own)."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor


# -- text ----------------------------------------------------------------


def safe_match(text: str) -> str | None:
    """Every token double-quoted, AND-ed: an FTS5 query that cannot fail.

    Tokens split as FTS5's unicode61 tokenizer does (a CJK run is the phrase
    of its characters). None is dropped (a repeated token is quoted once:
    AND-ing it again changes nothing).
    """
    found = dict.fromkeys(fts.words(text))
    phrases = [fts.phrase(t) for t in found]
    # (space-joined, as the seed writes it; an alternative in parentheses needs its AND written)
    return (" AND " if any(p.startswith("(") for p in phrases) else " ").join(phrases) if phrases else None


def clip(text: str | None, limit: int = MAX_TEXT, around: int = 0) -> str | None:
    """At most ``limit`` characters of ``text``, centred on ``around``."""
    if text is None or len(text) <= limit:
        return text
    start = max(0, min(around - limit // 2, len(text) - limit))
    head = "…" if start else ""
    tail = f"…[+{len(text) - start - limit} chars]" if start + limit < len(text) else ""
    return head + text[start : start + limit] + tail


def first_hit(text: str, terms: list[str]) -> int:
    """Where the first of ``terms`` occurs in ``text`` (0 when none does)."""
    found = [m.start() for t in terms if (m := re.search(re.escape(t), text, re.IGNORECASE))]
    return min(found) if found else 0


def message_row(row: sqlite3.Row | None, clipped: bool = False, conn=None) -> dict | None:
    """A full ``messages`` row with its text clipped (``clipped``: SQLite began it, as
    ``message_columns`` selects it; ``conn`` finishes it)."""
    if row is None:
        return None
    result = dict(row)
    result.pop(INDEXED_FORMS["messages"], None)
    if clipped:
        result["text"] = clipped_in_sql(conn, result["id"], result.get("text"), result["text_length"])
    else:
        result["text"] = clip(result.get("text"))
    return result


def compact_message(row, text_limit: int = MAX_TEXT, around: int = 0) -> dict:
    """The reference's message shape: ``uuid, text, content_type, ... source``."""
    result = {name: row[name] for name in MESSAGE_FIELDS}
    result["text"] = clip(result["text"], text_limit, around)
    return result


def parse_json(value):
    """Stored JSON text decoded (``text.parse_json``: undecodable or too deep, as it is)."""
    return text_parse_json(value) if isinstance(value, str) else value


def memory_row(row, fields=MEMORY_FIELDS) -> dict:
    result = {name: row[name] for name in fields}
    result["anchors"] = parse_json(result["anchors"])
    return result


# -- core helpers --------------------------------------------------------


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def search(conn, text, opts=None, **kwargs) -> list[dict]:
    """Full-text search over message text, best FTS5 rank first.

    ``text`` is tried as an FTS5 expression; when FTS5 rejects it, its
    letter/digit tokens are quoted and AND-ed instead, so ordinary text never
    errors. ``mode`` (an extension) forces one form of ``fts.parse_query``:
    ``terms`` (every term), ``phrase`` or ``raw`` (FTS5 syntax, errors
    reported as ``SESSION_QUERY_INVALID_QUERY``). An empty or whitespace-only
    ``text`` is ``OBELISK_INVALID_ARGUMENT`` (as a missing ``q`` over HTTP), and
    so is one over ``fts.MAX_QUERY_CHARS`` characters. Excluded sessions (guardian
    threads) are left out unless ``sessionId`` names one.
    """
    o = source_options(
        conn, "search", opts, kwargs, {"limit": 20, "include_meta": False, "mode": None},
        ("session_id", "project", "after", "before", "cwd", "source"),
    )
    if not isinstance(text, str):
        raise invalid("search() needs the query text as a string")
    if not text.strip():
        raise invalid("search() needs query text: it is empty or only whitespace")
    if len(text) > fts.MAX_QUERY_CHARS:
        raise invalid(f"search() takes at most {fts.MAX_QUERY_CHARS:,} characters of query text, not {len(text):,}")
    where = Where("messages_fts MATCH ?").scope(o, {
        "session_id": "m.session_id", "after": "m.timestamp", "before": "m.timestamp",
        "cwd": "m.cwd", "source": "m.source",
    })
    if o.get("session_id") is None:  # (an excluded session asked for by id is searched, as sessions() lists it)
        where.add(NOT_EXCLUDED)
    if o.get("project") is not None:
        where.add("m.session_id IN (SELECT id FROM sessions WHERE project LIKE ?)", o["project"])
    if not o["include_meta"]:
        where.add("m.is_meta = 0")
    limit, terms = o["limit"], fts.words(text)
    # Rank on ids first, with bm25() (FTS5's own ORDER BY rank is slower), and
    # put off the time tie-break to the rows kept: when the rows fetched end
    # past the last kept rank, every row tied with a kept one is among them.
    found = match_rows(conn, search_sql(where, "m.id DESC"), text, o["mode"], where.params + [limit + TIE_ROOM])
    if len(found) > limit and found[-1]["rank"] == found[limit - 1]["rank"]:
        found = match_rows(conn, search_sql(where, f"{moment_sql('m.timestamp')} DESC, m.id DESC"),
                           text, o["mode"], where.params + [limit])
    found = found[:limit]
    context = neighbours_of(conn, found, o["include_meta"])
    return [search_hit(conn, row, terms, context[row["id"]]) for row in found]


TIE_ROOM = 20  # rows fetched past a search's limit, to see where its last rank's ties end


def search_sql(where: Where, tie_break: str) -> str:
    """The best matches by rank then ``tie_break`` (a LIMIT parameter follows ``where``'s),
    with their sessions, best first and, at equal rank, newest first (``search_hit`` reads their texts)."""
    return f"""WITH hits AS (
        SELECT m.id, bm25(messages_fts) AS rank
        FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
        WHERE {where} ORDER BY rank, {tie_break} LIMIT ?
      )
      SELECT m.id, m.session_id, m.seq, {', '.join('m.' + f for f in MESSAGE_FIELDS if f != "text")},
        s.title AS session_title, s.project AS session_project, s.started_at AS session_started_at,
        s.source AS session_source, hits.rank
      FROM hits JOIN messages m ON m.id = hits.id LEFT JOIN sessions s ON s.id = m.session_id
      ORDER BY hits.rank, {moment_sql('m.timestamp')} DESC, hits.id DESC"""


def match_rows(conn, sql: str, text: str, mode: str | None, params: list) -> list:
    """Run ``sql`` with the MATCH expression ``text`` gives in ``mode``.

    Without a mode, ``text`` is tried as FTS5 syntax first and quoted token
    by token when FTS5 rejects it; a mode uses ``fts.parse_query``.
    """
    if mode is not None:
        expression = fts.parse_query(text, mode).expression
        return rows(conn, sql, [expression, *params]) if expression else []
    try:
        return named(conn).execute(sql, [cjk.split(text) if splits_cjk(conn) else text, *params]).fetchall()
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_ERROR:
            raise error_for(exc) from None
    except sqlite3.Error as exc:  # a damaged archive: reported as every other read of the helpers reports it
        raise error_for(exc) from None
    expression = safe_match(text)
    return rows(conn, sql, [expression, *params]) if expression else []


def search_hit(conn, row, terms: list[str], context: list[dict]) -> dict:
    """A hit's shape; its text is read here, one hit at a time (it may be a multi-MB output)."""
    stored = one(conn, "SELECT text FROM messages WHERE id = ?", [row["id"]])
    message = {**dict(row), "text": stored[0] if stored else ""}  # ("": deleted since, by an ingest)
    return {
        "message": compact_message(message, MAX_TEXT, first_hit(message["text"], terms)),
        "session": {
            "id": row["session_id"],
            "title": row["session_title"],
            "project": row["session_project"],
            "started_at": row["session_started_at"],
            "source": row["session_source"],
        },
        "rank": row["rank"],
        "context": context,
    }


def neighbours(conn, hit, include_meta: bool) -> list[dict]:
    """Up to six messages of the hit's session closest to it in time, in log order.

    Of the lines within ``NEIGHBOUR_WINDOW`` lines of the hit (not itself;
    meta lines only with ``include_meta``): the nearest in time, then in the
    log, then the earlier line. Lines without a usable timestamp come last;
    without one on the hit, timed lines come first, each kind nearest in the
    log first. Times compare as SQLite's ``julianday`` reads them.
    """
    return neighbours_of(conn, [hit], include_meta)[hit["id"]]


def neighbours_of(conn, hits, include_meta: bool) -> dict[int, list[dict]]:
    """``neighbours`` of every hit, by hit id.

    A search of 1,000 hits sorted each hit's window of 400 lines in SQL
    (most of its time). The lines of the hits' windows are read once a
    session here, with their times, and each hit's six nearest are found by
    walking outward from it in time; their texts are read once, however
    many hits they are near."""
    by_session: dict[str, list] = {}
    for hit in hits:
        by_session.setdefault(hit["session_id"], []).append(hit)
    instants = dict(zip(
        [hit["id"] for hit in hits],
        [r[0] for r in conn.execute("SELECT julianday(value) FROM json_each(?) ORDER BY key",
                                    [json.dumps([hit["timestamp"] for hit in hits])])],
    ))
    meta = "" if include_meta else "AND is_meta = 0"
    chosen: dict[int, list[int]] = {}
    for session_id, session_hits in by_session.items():
        lines: list[tuple] = []  # (seq, julianday, id), in seq order
        for low, high in _windows(sorted(hit["seq"] for hit in session_hits)):
            lines += map(tuple, conn.execute(
                f"SELECT seq, julianday(timestamp), id FROM messages WHERE session_id = ? AND seq BETWEEN ? AND ? {meta} "
                "ORDER BY seq", [session_id, low, high]))
        seqs = [line[0] for line in lines]
        timed = sorted((jd, seq, i) for seq, jd, i in lines if jd is not None)
        instants_read = [line[0] for line in timed]
        for hit in session_hits:
            first = bisect.bisect_left(seqs, hit["seq"] - NEIGHBOUR_WINDOW)
            last = bisect.bisect_right(seqs, hit["seq"] + NEIGHBOUR_WINDOW)
            chosen[hit["id"]] = _nearest(lines[first:last], timed, instants_read, hit, instants[hit["id"]])
    wanted = sorted({i for ids in chosen.values() for i in ids})
    found = {r["id"]: r for r in rows(
        conn,
        f"""SELECT id, seq, text_length, {', '.join(f for f in MESSAGE_FIELDS if f != "text")},
                   {clipped_text_sql("messages", NEIGHBOUR_TEXT)} AS text
            FROM messages WHERE id IN (SELECT value FROM json_each(?))""",
        [json.dumps(wanted)],
    )} if wanted else {}
    texts = {i: clipped_in_sql(conn, r["id"], r["text"], r["text_length"], NEIGHBOUR_TEXT) for i, r in found.items()}
    return {
        hit_id: [{name: texts[i] if name == "text" else found[i][name] for name in MESSAGE_FIELDS}
                 for i in sorted((i for i in ids if i in found), key=lambda i: found[i]["seq"])]
        for hit_id, ids in chosen.items()
    }


def _windows(seqs: list[int]) -> list[tuple[int, int]]:
    """The seq ranges the ``NEIGHBOUR_WINDOW`` windows of hits at ``seqs`` (sorted) cover, merged."""
    ranges: list[list[int]] = []
    for seq in seqs:
        low, high = seq - NEIGHBOUR_WINDOW, seq + NEIGHBOUR_WINDOW
        if ranges and low <= ranges[-1][1] + 1:
            ranges[-1][1] = max(ranges[-1][1], high)
        else:
            ranges.append([low, high])
    return [(low, high) for low, high in ranges]


def _nearest(window: list[tuple], timed: list[tuple], times: list[float], hit, instant) -> list[int]:
    """The ids of the ``NEIGHBOURS`` lines of ``window`` (``(seq, julianday, id)`` in seq
    order) nearest ``hit``: by distance in time (``instant``; untimed lines last), then
    in the log, then the earlier line. ``timed``: the session's timed lines read, as
    ``(julianday, seq, id)`` in that order; ``times`` their julianday."""
    seq, low, high = hit["seq"], hit["seq"] - NEIGHBOUR_WINDOW, hit["seq"] + NEIGHBOUR_WINDOW
    kept = [line for line in window if line[2] != hit["id"]]
    if instant is None:  # timed lines nearest in the log, then untimed ones
        order = sorted(kept, key=lambda line: (line[1] is None, abs(line[0] - seq), line[0]))
        return [line[2] for line in order[:NEIGHBOURS]]
    found: list[tuple] = []
    after = bisect.bisect_left(times, instant)
    before = after - 1
    while len(found) < NEIGHBOURS and (before >= 0 or after < len(timed)):
        # The next distance in time, from either side, and every line at that distance.
        distance = min(abs(times[before] - instant) if before >= 0 else math.inf,
                       abs(times[after] - instant) if after < len(timed) else math.inf)
        group = []
        while before >= 0 and abs(times[before] - instant) == distance:
            group.append(timed[before])
            before -= 1
        while after < len(timed) and abs(times[after] - instant) == distance:
            group.append(timed[after])
            after += 1
        found += sorted(((line_seq, i) for _, line_seq, i in group if low <= line_seq <= high and i != hit["id"]),
                        key=lambda line: (abs(line[0] - seq), line[0]))
    if len(found) < NEIGHBOURS:
        found += sorted(((line[0], line[2]) for line in kept if line[1] is None),
                        key=lambda line: (abs(line[0] - seq), line[0]))
    return [i for _, i in found[:NEIGHBOURS]]


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def context(conn, uuid) -> dict | None:
    """The message, its ancestors (root first; a chain cut at ``MAX_CHAIN`` says so on its
    first message, as ``trace``'s does), its session and agent metadata."""
    require_text("context", "a message uuid", uuid)
    row = one(conn, "SELECT * FROM messages WHERE uuid = ?", [uuid])
    if row is None:
        return None
    session = one(conn, "SELECT * FROM sessions WHERE id = ?", [row["session_id"]])
    subagent = one(conn, "SELECT * FROM subagents WHERE child_session_id = ?", [row["session_id"]])
    return {
        "message": message_row(row),
        "parentChain": marked_chain(conn, [message_row(r) for r in ancestors(conn, row)], row["uuid"]),
        "session": dict(session) if session else None,
        "subagent": dict(subagent) if subagent else None,
        "workflow": workflow_of(conn, session),
    }


def workflow_of(conn, session) -> dict | None:
    """The workflow agent a session is the transcript of, with its run."""
    if session is None or session["relationship"] != "workflow" or not session["agent_id"]:
        return None
    agent = one(
        conn,
        "SELECT * FROM workflow_agents WHERE agent_id = ? AND session_id = ?",
        [session["agent_id"], session["parent_session_id"]],
    )
    if agent is None:
        return None
    run = one(
        conn,
        f"SELECT {', '.join(WORKFLOW_RUN_FIELDS)} FROM workflows WHERE run_id = ?",
        [agent["run_id"]],
    )
    return {**dict(agent), "run": dict(run) if run else None}


def ancestor_uuids(conn, row) -> list[str]:
    """The uuids of the parents up to the root, root first; a compact boundary's logical parent counts.

    The walk reads only the link columns, never a message's text.
    """
    chain = []
    seen = {row["uuid"]}
    parent = row["parent_uuid"] or row["logical_parent_uuid"]
    while parent and parent not in seen and len(chain) < MAX_CHAIN:
        seen.add(parent)
        found = one(conn, "SELECT parent_uuid, logical_parent_uuid FROM messages WHERE uuid = ?", [parent])
        if found is None:
            break
        chain.append(parent)
        parent = found["parent_uuid"] or found["logical_parent_uuid"]
    chain.reverse()
    return chain


def goes_on_above(conn, chain: list[str]) -> bool:
    """Whether a chain ``trace`` walked (its uuids, root first) stopped at ``MAX_CHAIN``
    below the conversation's root: its first message still has a stored parent."""
    if len(chain) <= MAX_CHAIN:
        return False
    row = one(conn, "SELECT parent_uuid, logical_parent_uuid FROM messages WHERE uuid = ?", [chain[0]])
    parent = row and (row["parent_uuid"] or row["logical_parent_uuid"])
    return bool(parent) and one(conn, "SELECT 1 FROM messages WHERE uuid = ?", [parent]) is not None


def ancestors(conn, row) -> list[sqlite3.Row]:
    """Parents up to the root, root first, as whole rows (``ancestor_uuids``)."""
    return messages_by_uuid(conn, ancestor_uuids(conn, row))


def messages_by_uuid(conn, uuids: list[str], columns: str = "*") -> list[sqlite3.Row]:
    """The ``columns`` (``uuid`` among them) of the stored messages with these uuids, in their order."""
    found = rows(conn, f"SELECT {columns} FROM messages WHERE uuid IN (SELECT value FROM json_each(?))", [json.dumps(uuids)])
    by_uuid = {row["uuid"]: row for row in found}
    return [by_uuid[uuid] for uuid in uuids if uuid in by_uuid]


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def sql(conn, query, *params) -> list[dict]:
    """Rows of one read-only statement.

    ``?`` bindings are the arguments after ``query``, or one list (or
    tuple) of them; one dict binds ``:name`` placeholders.
    """
    if len(params) == 1 and isinstance(params[0], dict):
        return run_sql(conn, query, params[0])
    if len(params) == 1 and isinstance(params[0], (list, tuple)):
        params = tuple(params[0])
    return run_sql(conn, query, params)


# -- structural expansion ----------------------------------------------------


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def trace(conn, uuid) -> list[dict]:
    """The parent chain from the root down to the message itself. A chain cut at
    ``MAX_CHAIN`` ancestors, below the conversation's root, says so on its first
    message: ``"chain_cut": true`` (a key no other message has)."""
    require_text("trace", "a message uuid", uuid)
    row = one(conn, "SELECT * FROM messages WHERE uuid = ?", [uuid])
    if row is None:
        return []
    return marked_chain(conn, [message_row(r) for r in ancestors(conn, row) + [row]])


def marked_chain(conn, chain: list[dict], below: str | None = None) -> list[dict]:
    """``chain`` (messages, root first, then the message ``below`` when it is not
    among them) with ``"chain_cut": true`` on its first message when the walk
    stopped at ``MAX_CHAIN`` below the conversation's root."""
    uuids = [message["uuid"] for message in chain] + ([below] if below else [])
    if chain and goes_on_above(conn, uuids):
        chain[0]["chain_cut"] = True
    return chain


def trace_uuids(conn, uuid: str) -> list[str]:
    """``trace``'s uuids alone (``[]`` for an unknown uuid), without reading any text."""
    row = one(conn, "SELECT uuid, parent_uuid, logical_parent_uuid FROM messages WHERE uuid = ?", [uuid])
    return [] if row is None else ancestor_uuids(conn, row) + [row["uuid"]]


# The messages of session :session_id with the instant a thread sorts them by
# (then by seq). An untimed row takes the instant of the last timed row
# before it in the log: the greatest of the instants so far, each prefixed
# with its row's seq (fixed width, offset to be positive), is that row's. One
# window, in the index's seq order: counting runs of rows and taking each
# run's instant took two windows and two more sorts, most of a page's time.
THREAD_PLACEMENT = f"""WITH placed AS (
    SELECT id, seq, is_meta,
           substr(MAX(printf('%020d', seq + {1 << 62}) || {moment_sql('timestamp')}) OVER (ORDER BY seq), 21) AS at
    FROM messages WHERE session_id = :session_id
  )"""
# The session's messages in thread order, ids only (``thread_pages``).
THREAD_ORDER_SQL = THREAD_PLACEMENT + """
  SELECT id FROM placed WHERE is_meta = 0 OR :include_meta ORDER BY at, seq"""
# Messages by id, in the order of the ids given.
THREAD_ROWS_SQL = "SELECT {columns} FROM json_each(:ids) AS wanted JOIN messages m ON m.id = wanted.value ORDER BY wanted.key"
# The page is chosen first, so only its messages' texts are read.
THREAD_SQL = THREAD_PLACEMENT + """, page AS (
    SELECT id, at, seq FROM placed WHERE is_meta = 0 OR :include_meta
    ORDER BY at, seq LIMIT :limit OFFSET :offset
  )
  SELECT {columns} FROM page JOIN messages m ON m.id = page.id ORDER BY page.at, page.seq"""
# A page of the thread of a session whose log order is its time order (``in_log_order``):
# the session's index in seq order, no window and no sort of the whole session.
LOG_ORDER_SQL = """WITH page AS (
    SELECT id, seq FROM messages WHERE session_id = :session_id AND (is_meta = 0 OR :include_meta)
    ORDER BY seq LIMIT :limit OFFSET :offset
  )
  SELECT {columns} FROM page JOIN messages m ON m.id = page.id ORDER BY page.seq"""
LOG_ORDER_POSITION_SQL = """SELECT COUNT(*) FROM messages
  WHERE session_id = :session_id AND (is_meta = 0 OR :include_meta) AND seq <= (SELECT seq FROM messages WHERE id = :id)"""
# Whether a session's thread order is its log order (``sessions.time_ordered``, kept by
# derivation), unless the session is queued to be derived again (its rows changed since).
LOG_ORDER_FLAG_SQL = """SELECT time_ordered FROM sessions WHERE id = :s
  AND NOT EXISTS (SELECT 1 FROM derive_queue WHERE session_id = :s)"""


def in_log_order(conn, session_id: str) -> bool:
    """Whether a session's thread order (``THREAD_PLACEMENT``: by instant, an untimed
    message after the one it follows) is its log (seq) order: every stored timestamp
    is canonical, so its text is its instant, and none is earlier than one before it.

    Then a page of its thread is read from the (session_id, seq) index like any
    list, instead of placing and sorting the whole session for every page (a page
    of 10 of a 300,000-message session took past a second). Derivation records it
    (``sessions.time_ordered``, ``derive.Tally.ordered``), so asking reads one row;
    a session not derived since its rows changed (still in ``derive_queue``), or
    whose order is not known, is placed in SQL as before."""
    cursor = conn.cursor()
    cursor.row_factory = None  # (plain tuples, whatever the connection's factory)
    with translated_errors():
        try:
            row = cursor.execute(LOG_ORDER_FLAG_SQL, {"s": session_id}).fetchone()
        except sqlite3.OperationalError as error:
            if "time_ordered" not in str(error):  # (a database not migrated yet: placed)
                raise
            return False
    return row is not None and row[0] == 1


# How many of the session's messages a thread lists up to and with message :id (the offset
# of the one after it). A row before any timestamp has no instant: it sorts first.
THREAD_POSITION_SQL = THREAD_PLACEMENT + """, target AS (SELECT IFNULL(at, '') AS at, seq FROM placed WHERE id = :id)
  SELECT COUNT(*) FROM placed, target WHERE (placed.is_meta = 0 OR :include_meta)
    AND (IFNULL(placed.at, '') < target.at OR (IFNULL(placed.at, '') = target.at AND placed.seq <= target.seq))"""


def clipped_text_sql(alias: str, limit: int = MAX_TEXT) -> str:
    """The start of ``clip(text, limit)`` done by SQLite: a long text is never read whole
    into Python, nor scanned (``length``, ``instr``: 100 ms for a 25 MB output).

    A text of at most ``limit`` characters (``text_length``, as the ingest
    counts them) comes whole, a longer one as its first ``limit``
    characters; ``clipped_in_sql`` adds the marker. SQLite's ``substr``
    stops at a NUL character, so a text holding one within those comes
    short, and ``clipped_in_sql`` reads and clips it whole."""
    return f"CASE WHEN {alias}.text_length <= {limit} THEN {alias}.text ELSE substr({alias}.text, 1, {limit}) END"


def clipped_in_sql(conn, message_id: int, text: str | None, text_length: int, limit: int = MAX_TEXT) -> str | None:
    """``clip(text, limit)`` of the message whose text ``clipped_text_sql`` gave as ``text``."""
    if text is None or text_length <= limit:
        return clip(text, limit)
    if len(text) == limit:
        return text + f"…[+{text_length - limit} chars]"
    whole = one(conn, "SELECT text FROM messages WHERE id = ?", [message_id])  # a NUL cut it short
    return clip(whole[0] if whole else text, limit)


def message_columns(conn, alias: str = "m") -> str:
    """Every ``messages`` column of ``alias``, its text clipped (``clipped_text_sql``) as ``text``."""
    names = [row[1] for row in conn.execute("PRAGMA table_info(messages)")]
    return ", ".join(
        f"{clipped_text_sql(alias)} AS text" if name == "text" else f"{alias}.{name}" for name in names
    )


class Page(NamedTuple):
    """Part of a list: its items, where they start, and how long the whole list is;
    ``after``, for a list that goes on after an item rather than an offset (a thread
    after a message's uuid), what the next page goes on after."""

    items: list
    offset: int
    total: int
    after: str | None = None

    @property
    def remaining(self) -> int:
        """How many items come after this page."""
        return max(0, self.total - self.offset - len(self.items))


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def thread(conn, session_id, opts=None, **kwargs) -> list[dict]:
    """A session's messages ordered by timestamp: the whole session.

    Timestamps compare as instants (``moments.py``); log order breaks ties.
    A message without a usable timestamp stays right after the message it
    follows in the log (the session's first messages, before any timestamp,
    come first). Meta rows count for that placement whether or not
    ``includeMeta`` shows them, so it never reorders the other messages.

    ``limit`` / ``offset`` (extensions) take a page; ``thread_page()`` also
    says how many messages there are. Without a ``limit``, more than
    ``MAX_THREAD`` messages is ``OBELISK_PAYLOAD_TOO_LARGE``: never a cut.

    ``afterUuid`` (an extension, instead of ``offset``) goes on after a message
    (the last of the page before), wherever it now stands: an ingest may renumber
    a session between two pages (a Codex fork giving up its copy of the log it
    forked from), and an offset then skips messages or repeats them. A message
    the session no longer holds is ``OBELISK_NOT_FOUND``.
    """
    return thread_page(conn, session_id, opts, **kwargs).items


def thread_page(conn, session_id, opts=None, **kwargs) -> Page:
    """``thread()`` as a ``Page``: the messages, their offset and the session's total."""
    require_text("thread", "a session id", session_id)
    o = thread_options(conn, session_id, opts, kwargs)
    total = one(conn, "SELECT COUNT(*) FROM messages WHERE session_id = ? AND (is_meta = 0 OR ?)",
                [session_id, o["include_meta"]])[0]
    if o["limit"] is None and total - o["offset"] > MAX_THREAD:
        raise too_long_a_thread(session_id, total, o["offset"])
    page_sql = LOG_ORDER_SQL if in_log_order(conn, session_id) else THREAD_SQL
    found = rows(conn, page_sql.format(columns=message_columns(conn)), {
        "session_id": session_id, "include_meta": o["include_meta"], "limit": o["limit"] or -1, "offset": o["offset"],
    })
    items = [message_row(r, clipped=True, conn=conn) for r in found]
    return Page(items, o["offset"], total, after_of(items, o["offset"], total))


def after_of(items: list, offset: int, total: int) -> str | None:
    """What a thread page's next page goes on after: its last message, while more remain."""
    return items[-1]["uuid"] if items and offset + len(items) < total else None


def thread_options(conn, session_id: str, opts, kwargs) -> dict:
    """``thread``'s options, ``afterUuid`` turned into the offset of the message after it."""
    o = options("thread", opts, kwargs, {"include_meta": False, "limit": None, "offset": 0}, ("after_uuid",),
                string_key=None, max_limit=MAX_THREAD)
    after = o.pop("after_uuid", None)
    if after is None:
        return o
    if o["offset"]:
        raise invalid("thread(): give afterUuid or offset, not both")
    found = one(conn, "SELECT id FROM messages WHERE uuid = ? AND session_id = ?", [after, session_id])
    if found is None:
        raise QueryError(
            "OBELISK_NOT_FOUND",
            f"thread(): session {session_id!r} has no message {after!r} to go on after (an ingest moved or "
            "removed it since): read the session again from its start",
        )
    o["offset"] = one(conn, LOG_ORDER_POSITION_SQL if in_log_order(conn, session_id) else THREAD_POSITION_SQL, {
        "session_id": session_id, "include_meta": o["include_meta"], "id": found[0]})[0]
    return o


def thread_pages(conn, session_id, opts=None, *, step: int = MAX_THREAD, **kwargs):
    """``thread_page`` after ``thread_page`` of ``step`` messages, from ``offset`` to
    the end of the session (one page, empty, for a session with none left).

    The session is put in thread order once (its messages' ids, a few bytes
    each), not once a page: reading a 300,000-message session as 30 pages of
    ``thread_page`` took 41 s, each page ordering the whole session again."""
    require_text("thread", "a session id", session_id)
    o = thread_options(conn, session_id, opts, kwargs)
    order = [row[0] for row in conn.execute(
        THREAD_ORDER_SQL, {"session_id": session_id, "include_meta": o["include_meta"]})]
    sql = THREAD_ROWS_SQL.format(columns=message_columns(conn))
    offset = o["offset"]
    while True:
        ids = order[offset:offset + step]
        found = rows(conn, sql, {"ids": json.dumps(ids)}) if ids else []
        items = [message_row(r, clipped=True, conn=conn) for r in found]
        yield Page(items, offset, len(order), after_of(items, offset, len(order)))
        offset += len(ids)
        if not ids or offset >= len(order):
            return


def too_long_a_thread(session_id: str, total: int, offset: int) -> QueryError:
    after = f" ({total - offset} from offset {offset})" if offset else ""
    return QueryError(
        "OBELISK_PAYLOAD_TOO_LARGE",
        f"thread(): session {session_id!r} has {total} messages{after}, more than the {MAX_THREAD} "
        "one call returns: page through it with limit and offset",
    )


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def raw(conn, uuid, opts=None, *, redact=None, **kwargs) -> dict | None:
    """A character window of the original log line of a message.

    The line is re-read by seeking to its byte offset (streaming through a
    ``.zst`` file). None for an unknown uuid; ``OBELISK_NOT_FOUND`` when the
    source file is gone or was rewritten since it was indexed, or its bytes
    cannot be checked against the ingest's fingerprint (``read_line``). The source's
    line goes through the database's secret redaction (``redact``, text ->
    text, overrides it) unless the database was ingested with --no-redact.
    """
    require_text("raw", "a message uuid", uuid)
    o = options("raw", opts, kwargs, {"offset": 0, "limit": RAW_LIMIT}, string_key=None, max_limit=MAX_RAW_LIMIT)
    row = one(
        conn,
        """SELECT m.byte_offset, m.byte_length, f.path, f.compression, f.layout, f.cursor,
                  f.head_hash, f.tail_hash
           FROM messages m JOIN source_files f ON f.id = m.file_id WHERE m.uuid = ?""",
        [uuid],
    )
    if row is None:
        return None
    text = read_line(row, uuid).decode("utf-8", errors="replace")
    if redact is None:
        redact = redaction_for_connection(conn)
    if redact is not None:
        text = redact(text)
    offset, limit = o["offset"], o["limit"]
    return {
        "text": text[offset : offset + limit],
        "totalLength": len(text),
        "offset": offset,
        "limit": limit,
        "hasMore": offset + limit < len(text),
    }


def read_line(row, uuid: str) -> bytes:
    """The bytes of a message's line, read again from its log file.

    Only bytes the archive fingerprinted are read: the line must lie within
    the ``cursor`` bytes the ingest read, of a regular file whose head and
    whose bytes just before the cursor still hash as recorded. A database
    names the paths it read, and can be made anywhere (by hand too): a row
    without a fingerprint, or a line outside it, is never read, so serving a
    database cannot serve other files of the machine that serves it.
    """
    path = Path(row["path"])
    if (replaced := retired_from(row["path"])) is not None:
        raise line_gone(uuid, Path(replaced), "was replaced by another file since it was indexed")
    start, length, cursor = row["byte_offset"], row["byte_length"], row["cursor"]
    if (not (row["head_hash"] and row["tail_hash"])
            or not all(isinstance(n, int) and n >= 0 for n in (start, length, cursor)) or start + length > cursor):
        raise line_gone(uuid, path, "cannot be checked against what was indexed")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # (a FIFO would block, a device never ends)
            raise line_gone(uuid, path, "is not a regular file")
        with open_stream(path, row["compression"]) as (fp, stream):
            if not stat.S_ISREG(os.fstat(fp.fileno()).st_mode):
                raise line_gone(uuid, path, "is not a regular file")
            if not still_holds(fp, row):
                raise line_gone(uuid, path, "was rewritten since it was indexed")
            stream.seek(start)
            data = stream.read(length)
    except OSError:
        raise line_gone(uuid, path, "is no longer on disk") from None
    if len(data) != length:
        raise line_gone(uuid, path, "was rewritten since it was indexed")
    # The line without a byte order mark opening the file or the CR of a CRLF ending, as it was parsed.
    return (data.removeprefix(BOM) if start == 0 else data).removesuffix(b"\r")


def line_gone(uuid: str, path: Path, why: str) -> QueryError:
    return QueryError(
        "OBELISK_NOT_FOUND",
        f"raw(): the source file of message {uuid} {why}: {path} "
        "(its indexed text is still available through search/context/thread)",
    )


# -- orientation and lists ---------------------------------------------------


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def overview(conn, opts=None, *, use_process_cwd: bool = True, **kwargs) -> dict:
    """A compact map for choosing scope: the current project, projects, totals.

    Without ``project`` the current project is looked up from the working
    directory (``cwd``, an extension, overrides ``os.getcwd()``; with
    ``use_process_cwd=False``, as over HTTP where the server's directory is
    not the caller's, only a given ``cwd`` is used):

    1. a session whose ``project_path`` is the cwd: ``cwd_project_path``, ``exact``;
    2. a message that ran in exactly the cwd: ``cwd_messages``, ``inferred``;
    3. a session whose ``project_path`` contains the cwd: ``cwd_project_path``, ``inferred``
       (up to the first of ``shared_folders()``: a session run in the home folder is no
       project of every folder in it).

    A given ``project`` (slug or LIKE pattern) is ``opts``: ``exact`` when a
    session has exactly that project, ``inferred`` when the pattern matched
    (the most recently active project wins), ``unknown`` when nothing did.
    """
    o = options(
        "overview", opts, kwargs, {"limit": 8, "project_limit": 20, "memory_limit": 100},
        ("project", "cwd"), string_key="project",
    )
    # (a given folder as os.getcwd() writes one: no trailing "/", no "." or ".." steps)
    cwd = os.path.normpath(o["cwd"]) if o.get("cwd") else (os.getcwd() if use_process_cwd else None)
    if cwd and holds_lone_surrogate(cwd):  # a folder named in bytes that are no UTF-8: no project's
        cwd = cwd.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if o.get("project") is not None:
        current = project_from_option(conn, o["project"])
    else:
        current = project_from_cwd(conn, cwd) if cwd else None
    return {
        "current": {"cwd": cwd, "project": current},
        "current_project": project_detail(conn, current, o["limit"], o["memory_limit"]) if current else None,
        "projects": project_list(conn, o["project_limit"]),
        "totals": totals(conn),
    }


def scope_result(row, source: str, confidence: str) -> dict:
    return {"project": row["project"], "project_path": row["project_path"], "source": source, "confidence": confidence}


def project_from_option(conn, project: str) -> dict:
    latest = "ORDER BY s.ended_at DESC LIMIT 1"
    row = one(conn, f"SELECT s.project, s.project_path FROM sessions s WHERE s.project = ? {latest}", [project])
    if row is not None:
        return scope_result(row, "opts", "exact")
    row = one(conn, f"SELECT s.project, s.project_path FROM sessions s WHERE s.project LIKE ? {latest}", [project])
    if row is not None:
        return scope_result(row, "opts", "inferred")
    return {"project": project, "project_path": None, "source": "opts", "confidence": "unknown"}


def project_from_cwd(conn, cwd: str) -> dict | None:
    known = "s.project IS NOT NULL ORDER BY s.ended_at DESC LIMIT 1"
    row = one(conn, f"SELECT s.project, s.project_path FROM sessions s WHERE s.project_path = ? AND {known}", [cwd])
    if row is not None:
        return scope_result(row, "cwd_project_path", "exact")
    row = one(
        conn,
        f"SELECT s.project, s.project_path FROM messages m JOIN sessions s ON s.id = m.session_id "
        f"WHERE m.cwd = ? AND {known}",
        [cwd],
    )
    if row is not None:
        return scope_result(row, "cwd_messages", "inferred")
    shared = shared_folders()
    for parent in Path(cwd).parents:
        if str(parent) in shared:
            break
        row = one(conn, f"SELECT s.project, s.project_path FROM sessions s WHERE s.project_path = ? AND {known}", [str(parent)])
        if row is not None:
            return scope_result(row, "cwd_project_path", "inferred")
    return None


def shared_folders() -> set[str]:
    """Folders that hold many projects, so a session run there says nothing of the folders
    below: the root, the home folder and the folders above it, the temporary folder."""
    home = Path.home()
    # The temporary folders by name: tempfile.gettempdir() would try writing a file, which a script may not.
    temporary = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")] + [tempfile.tempdir, "/tmp", "/var/tmp"]
    return {str(home), *map(str, home.parents), os.sep, *(os.path.normpath(t) for t in temporary if t)}


def project_detail(conn, current: dict, limit: int, memory_limit: int) -> dict:
    project = current["project"]
    in_project = f"s.project = ? AND {TOP_LEVEL}"
    session_rows = rows(
        conn,
        f"SELECT {', '.join('s.' + f for f in OVERVIEW_SESSION_FIELDS)} FROM sessions s "
        f"WHERE {in_project} ORDER BY s.ended_at DESC, s.id LIMIT ?",
        [project, limit],
    )
    memory_rows = rows(
        conn,
        f"SELECT {', '.join(OVERVIEW_MEMORY_FIELDS)} FROM memories WHERE project = ? AND deleted_at IS NULL "
        "ORDER BY created_at DESC, pk DESC LIMIT ?",
        [project, memory_limit],
    )
    return {
        "project": project,
        "project_path": current["project_path"] or project_path_of(conn, project),
        "session_total": one(conn, f"SELECT COUNT(*) FROM sessions s WHERE {in_project}", [project])[0],
        "sessions": [dict(r) for r in session_rows],
        "memory_total": one(
            conn, "SELECT COUNT(*) FROM memories WHERE project = ? AND deleted_at IS NULL", [project]
        )[0],
        "memories": [memory_row(r, OVERVIEW_MEMORY_FIELDS) for r in memory_rows],
    }


def project_path_of(conn, project: str) -> str | None:
    """The folder most of a project's sessions ran in."""
    row = one(
        conn,
        f"SELECT s.project_path FROM sessions s WHERE s.project = ? AND s.project_path IS NOT NULL "
        f"AND {TOP_LEVEL} GROUP BY s.project_path ORDER BY COUNT(*) DESC, MAX(s.ended_at) DESC LIMIT 1",
        [project],
    )
    return row[0] if row else None


def project_list(conn, limit: int) -> list[dict]:
    found = rows(
        conn,
        f"""WITH p AS (
              SELECT s.project, COUNT(*) AS session_count, MAX(COALESCE(s.ended_at, s.started_at)) AS last_session_at
              FROM sessions s WHERE s.project IS NOT NULL AND {TOP_LEVEL} GROUP BY s.project
            ), m AS (
              SELECT project, COUNT(*) AS memory_count, MAX(created_at) AS last_memory_at
              FROM memories WHERE deleted_at IS NULL AND project IS NOT NULL GROUP BY project
            ), names AS (SELECT project FROM p UNION SELECT project FROM m)
            SELECT names.project, COALESCE(p.session_count, 0) AS session_count,
                   COALESCE(m.memory_count, 0) AS memory_count, p.last_session_at, m.last_memory_at
            FROM names LEFT JOIN p ON p.project = names.project LEFT JOIN m ON m.project = names.project
            ORDER BY MAX(COALESCE(p.last_session_at, ''), COALESCE(m.last_memory_at, '')) DESC, names.project
            LIMIT ?""",
        [limit],
    )
    return [
        {
            "project": r["project"],
            "project_path": project_path_of(conn, r["project"]),
            "session_count": r["session_count"],
            "memory_count": r["memory_count"],
            "last_session_at": r["last_session_at"],
            "last_memory_at": r["last_memory_at"],
            "recent_branches": recent_branches(conn, r["project"]),
        }
        for r in found
    ]


def recent_branches(conn, project: str) -> list[str]:
    found = rows(
        conn,
        f"SELECT s.git_branch FROM sessions s WHERE s.project = ? AND s.git_branch IS NOT NULL "
        f"AND s.git_branch != '' AND {TOP_LEVEL} GROUP BY s.git_branch ORDER BY MAX(s.ended_at) DESC LIMIT ?",
        [project, BRANCHES_PER_PROJECT],
    )
    return [r[0] for r in found]


def totals(conn) -> dict:
    sources = rows(
        conn,
        f"SELECT s.source, COUNT(*) AS session_count, MAX(COALESCE(s.ended_at, s.started_at)) AS last_session_at "
        f"FROM sessions s WHERE {TOP_LEVEL} GROUP BY s.source ORDER BY s.source",
    )
    return {
        "projects": one(
            conn,
            f"SELECT COUNT(*) FROM (SELECT s.project FROM sessions s WHERE s.project IS NOT NULL AND {TOP_LEVEL} "
            "UNION SELECT project FROM memories WHERE deleted_at IS NULL AND project IS NOT NULL)",
        )[0],
        "sessions": one(conn, f"SELECT COUNT(*) FROM sessions s WHERE {TOP_LEVEL}")[0],
        "memories": one(conn, "SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL")[0],
        "sources": [dict(r) for r in sources],
    }


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def sessions(conn, opts=None, **kwargs) -> list[dict]:
    """Session rows, most recently ended first.

    Subagent and workflow transcripts (sessions of their own here) are left
    out unless asked for by ``sessionId`` / ``sessions``, or their parent
    session is not stored (``TOP_LEVEL``).
    """
    o = source_options(
        conn, "sessions", opts, kwargs, {"limit": 50},
        ("project", "after", "before", "branch", "source", "session_id", "sessions"),
    )
    where = Where().scope(o, {
        "project": "s.project", "after": "s.started_at", "before": "s.started_at", "branch": "s.git_branch",
        "source": "s.source", "session_id": "s.id", "sessions": "s.id",
    })
    if o.get("session_id") is None and o.get("sessions") is None:
        where.add(TOP_LEVEL)
    found = rows(
        conn, f"SELECT s.* FROM sessions s WHERE {where} ORDER BY {moment_sql('s.ended_at')} DESC, s.id LIMIT ?",
        where.params + [o["limit"]],
    )
    return [dict(r) for r in found]


# The event filters the search page's facets choose (role, branch, model, tool).
EVENT_NARROWING = ("roles", "branches", "models", "tools")


def recent_in(conn, filters, limit: int, cursor: str | None = None) -> dict:
    """Top-level sessions a ``Filters`` selects (its session filters, and with a
    role, branch, model or tool chosen, only sessions with a message that has
    one, as the search counts them), most recently ended first: the search page
    before any query. ``{"items", "next_cursor"}``: ``limit`` sessions, and the
    cursor that lists those after them, None after the last. The pages list the
    sessions there were when the first was read, in the order they had then
    (``query.snapshots``): a session stored since is left out, one that grew
    since keeps its place (the time of its last message then)."""
    where, params = filters.session_sql("s")
    narrowing = {name: getattr(filters, name) for name in EVENT_NARROWING if getattr(filters, name) is not None}
    event_where, event_params = Filters.build(**narrowing).event_sql("m") if narrowing else (None, [])
    # (a session with no end time comes last, as NULL does in a descending order)
    ended, ended_params = f"COALESCE({moment_sql('s.ended_at')}, '')", []
    request = fingerprint({"where": where, "params": params, "events": [event_where, event_params]})
    if cursor is None:
        upto, bound = snapshots.archive_edge(conn)
        after = None
    else:
        position = decode_cursor(conn, cursor, "recent", request, None)
        if isinstance(position, list) and len(position) == 2 and all(isinstance(p, str) for p in position):
            raise QueryError("SESSION_QUERY_STALE_CURSOR", "the cursor is an earlier version's: list the sessions again")
        if not (isinstance(position, dict) and set(position) == {"after", "upto", "bound"}
                and is_count(position["upto"]) and is_count(position["bound"]) and isinstance(position["after"], list)
                and len(position["after"]) == 2 and all(isinstance(p, str) for p in position["after"])):
            raise cursor_invalid("the cursor is not one this service returned")
        upto, bound, after = position["upto"], position["bound"], position["after"]
        grown = snapshots.grown_since(conn, upto, bound)
        if grown is None:
            raise QueryError("SESSION_QUERY_STALE_CURSOR", "too much was written since the first page: list the sessions again")
        ended, ended_params = snapshots.recency_as_of(ended, upto, grown)
    if narrowing:
        where = f"{where} AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.id <= ? AND {event_where})"
        params = [*params, upto, *event_params]
    # Sessions stored after the first page are left out, and so is a parent stored since.
    where, params = f"{top_level_sql(stored_by=True)} AND s.rowid <= ? AND {where}", [bound, bound, *params]
    if after is not None:
        where = f"{where} AND ({ended} < ? OR ({ended} = ? AND s.id > ?))"
        params = [*params, *ended_params, after[0], *ended_params, after[0], after[1]]
    found = rows(
        conn,
        f"SELECT s.*, {ended} AS _ended FROM sessions s WHERE {where} ORDER BY _ended DESC, s.id LIMIT ?",
        [*ended_params, *params, limit + 1],
    )
    next_cursor = None
    if len(found) > limit:
        edge = found[limit - 1]
        following = {"after": [edge["_ended"], edge["id"]], "upto": upto, "bound": bound}
        next_cursor = encode_cursor(conn, "recent", request, None, following)
    items = [{k: row[k] for k in row.keys() if k != "_ended"} for row in found[:limit]]
    return {"items": items, "next_cursor": next_cursor}


def top_level_count(conn, source: str | None = None) -> int:
    """How many sessions the session lists count (no agent whose parent is stored), of one source or all."""
    return conn.execute(
        f"SELECT COUNT(*) FROM sessions s WHERE {TOP_LEVEL} AND (? IS NULL OR s.source = ?)", [source, source]
    ).fetchone()[0]


SHORT_ID = 6  # the fewest characters of an id whose longer ids are named


def unknown_session(conn, session_id: str) -> QueryError:
    """``OBELISK_NOT_FOUND`` for a session id, naming the stored ids it may have meant
    (``near_session_ids``)."""
    return session_not_found(session_id, near_session_ids(conn, session_id))


def near_session_ids(conn, session_id: str, table: str = "sessions", column: str = "id") -> list[str]:
    """The ids of ``table`` (at most 3) a session id not found there may have meant: the same id
    under a source's prefix (``codex:<id>``, as a rollout's file name gives it), else, for an id
    of at least ``SHORT_ID`` characters, the ids it begins (``0a1b2c3d`` for
    ``0a1b2c3d-4e5f-...``, under a source's prefix or not): ids are never matched by their
    beginning, only named."""
    near = [r[0] for r in conn.execute(
        f"SELECT DISTINCT {column} FROM {table} WHERE substr({column}, -length(:id) - 1) = ':' || :id "
        f"ORDER BY {column} LIMIT 3",
        {"id": session_id},
    )] if session_id else []
    if not near and len(session_id.strip()) >= SHORT_ID:
        near = [r[0] for r in conn.execute(
            f"SELECT DISTINCT {column} FROM {table} WHERE substr({column}, 1, length(:id)) = :id "
            f"OR substr({column}, instr({column}, ':') + 1, length(:id)) = :id ORDER BY {column} LIMIT 3",
            {"id": session_id},
        )]
    return near


def session_not_found(session_id: str, near: list[str]) -> QueryError:
    hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
    shown = session_id if len(session_id) <= 200 else session_id[:200] + "…"
    return QueryError("OBELISK_NOT_FOUND", f"no session {shown!r}{hint}")


# The tables whose ``project`` a --project pattern is matched against: the sessions' slugs,
# the folders the prompt logs' prompts were typed in.
PROJECT_TABLES = ("sessions", "prompt_log")


def projects_near(conn, project: str, table: str = "sessions") -> list[str] | None:
    """None when a row of ``table`` (of ``PROJECT_TABLES``) has a project matching the LIKE
    pattern ``project``; else the projects (at most 3) that hold it, as ``%project%`` matches
    them: a name given without its ``%`` matches only a project of exactly that name, and a
    list comes out empty."""
    if table not in PROJECT_TABLES:
        raise ValueError(f"no project column in {table!r}")
    if one(conn, f"SELECT 1 FROM {table} WHERE project LIKE ? LIMIT 1", [project]) is not None:
        return None
    return [r[0] for r in conn.execute(
        f"SELECT DISTINCT project FROM {table} WHERE project LIKE ? ORDER BY project LIMIT 3", [f"%{project}%"])]


def stored_session_title(conn, session_id: str) -> str:
    """A stored session's title (its id when it has none), else ``unknown_session``'s error."""
    found = conn.execute("SELECT id, title FROM sessions WHERE id = ?", [session_id]).fetchone()
    if found is None:
        raise unknown_session(conn, session_id)
    return found[1] or found[0]


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def recent(conn, n=10) -> list[dict]:
    """The ``n`` most recently ended sessions (``None``: 10)."""
    n = 10 if n is None else n
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_LIMIT:
        raise invalid(f"recent(): n must be an integer between 1 and {MAX_LIMIT}, not {n!r}")
    return sessions(conn, {"limit": n})


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def summaries(conn, opts=None, **kwargs) -> list[dict]:
    """Summary rows with their session's title and project, newest first."""
    o = source_options(
        conn, "summaries", opts, kwargs, {"limit": 100},
        ("session_id", "sessions", "project", "after", "before", "branch", "source"),
    )
    where = Where().scope(o, {
        "session_id": "su.session_id", "sessions": "su.session_id", "project": "s.project",
        "after": "su.timestamp", "before": "su.timestamp", "branch": "s.git_branch", "source": "s.source",
    })
    found = rows(
        conn,
        f"SELECT su.*, s.title AS session_title, s.project AS project FROM summaries su "
        f"LEFT JOIN sessions s ON s.id = su.session_id WHERE {where} "
        f"ORDER BY {moment_sql('su.timestamp')} DESC, su.id LIMIT ?",
        where.params + [o["limit"]],
    )
    result = [dict(r) for r in found]
    for row in result:
        row["content"] = clip(row["content"])
    return result


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def memories(conn, opts=None, **kwargs) -> list[dict]:
    """Active memories: newest first, or FTS-ranked by an English ``query`` (a blank one is none)."""
    o = source_options(
        conn, "memories", opts, kwargs, {"limit": 50},
        ("query", "project", "session_id", "sessions", "after", "before", "branch", "source"),
    )
    where = Where("mem.deleted_at IS NULL").scope(o, {
        "project": "mem.project", "session_id": "mem.session_id", "sessions": "mem.session_id",
        "after": "mem.created_at", "before": "mem.created_at", "branch": "s.git_branch", "source": "s.source",
    })
    columns = ", ".join("mem." + f for f in MEMORY_FIELDS)
    joins = "FROM memories mem LEFT JOIN sessions s ON s.id = mem.session_id"
    newest = f"{moment_sql('mem.created_at')} DESC"
    if o.get("query") is None or (isinstance(o["query"], str) and not o["query"].strip()):
        found = rows(
            conn, f"SELECT {columns} {joins} WHERE {where} ORDER BY {newest}, mem.pk DESC LIMIT ?",
            where.params + [o["limit"]],
        )
        return [memory_row(r) for r in found]
    expression = safe_match(o["query"])
    if expression is None:
        return []
    found = rows(
        conn,
        f"SELECT {columns}, memories_fts.rank AS rank {joins} JOIN memories_fts ON memories_fts.rowid = mem.pk "
        f"WHERE memories_fts MATCH ? AND {where} ORDER BY memories_fts.rank, {newest} LIMIT ?",
        [expression, *where.params, o["limit"]],
    )
    return [{**memory_row(r), "rank": r["rank"]} for r in found]


# -- agents and workflows ----------------------------------------------------


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def subagents(conn, opts=None, **kwargs) -> list[dict]:
    """Subagent rows with the number of messages in their transcript.

    An agent whose parent's log is missing takes its own session's project
    and source."""
    o = source_options(conn, "subagents", opts, kwargs, {"limit": 100}, ("session_id", "project", "source"))
    where = Where().scope(o, {
        "session_id": "sa.session_id", "project": "COALESCE(s.project, c.project)",
        "source": "COALESCE(s.source, c.source)",
    })
    found = rows(
        conn,
        f"""SELECT sa.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = sa.child_session_id) AS messageCount
            FROM subagents sa LEFT JOIN sessions s ON s.id = sa.session_id
            LEFT JOIN sessions c ON c.id = sa.child_session_id
            WHERE {where} ORDER BY c.started_at DESC, sa.id DESC LIMIT ?""",
        where.params + [o["limit"]],
    )
    return [dict(r) for r in found]


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def workflows(conn, opts=None, **kwargs) -> list[dict]:
    """Workflow runs, newest first."""
    o = source_options(conn, "workflows", opts, kwargs, {"limit": 100}, ("session_id", "project", "after", "before", "source"))
    where = Where().scope(o, {
        "session_id": "w.session_id", "project": "s.project", "after": "w.timestamp",
        "before": "w.timestamp", "source": "s.source",
    })
    found = rows(
        conn,
        f"SELECT w.* FROM workflows w LEFT JOIN sessions s ON s.id = w.session_id WHERE {where} "
        f"ORDER BY {moment_sql('w.timestamp')} DESC, w.run_id LIMIT ?",
        where.params + [o["limit"]],
    )
    return [dict(r) for r in found]


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def workflow_tree(conn, run_id) -> dict | None:
    """A workflow run, its parsed result and its agents with message counts."""
    require_text("workflowTree", "a run id", run_id)
    run = one(conn, "SELECT * FROM workflows WHERE run_id = ?", [run_id])
    if run is None:
        return None
    agents = rows(
        conn,
        """SELECT wa.*, (SELECT COUNT(*) FROM sessions c JOIN messages m ON m.session_id = c.id
                         WHERE c.parent_session_id = wa.session_id AND c.agent_id = wa.agent_id
                           AND c.relationship = 'workflow') AS messageCount
           FROM workflow_agents wa WHERE wa.run_id = ? ORDER BY wa.rowid""",
        [run_id],
    )
    result = parse_json(run["result_json"])
    return {
        **dict(run),
        "result": result if isinstance(result, (dict, list)) else None,
        "agents": [dict(a) for a in agents],
    }


# -- evidence ----------------------------------------------------------------


FILE_CALL_AT = "COALESCE(tc.timestamp, m.timestamp)"
FILE_CALLS_FROM = """FROM tool_call_files f JOIN tool_calls tc ON tc.id = f.tool_call_id
            LEFT JOIN messages m ON m.uuid = tc.message_uuid
            LEFT JOIN sessions s ON s.id = tc.session_id"""


def _file_history_scope(conn, file_path, opts, kwargs) -> tuple[dict, "Where"]:
    require_text("fileHistory", "an absolute file path", file_path)
    o = source_options(
        conn, "fileHistory", opts, kwargs, {"limit": 200, "offset": 0}, ("after", "before", "source", "session_id", "project"),
        string_key=None,
    )
    # (stored paths are normal: another spelling of the path finds the same calls)
    where = Where().add("f.path = ?", normal_path(file_path)).scope(o, {
        "after": FILE_CALL_AT, "before": FILE_CALL_AT, "source": "s.source", "session_id": "tc.session_id",
        "project": "s.project",
    })
    return o, where


def file_history_count(conn, file_path, opts=None, **kwargs) -> int:
    """How many calls ``file_history`` with these options could list (its ``limit`` aside)."""
    _, where = _file_history_scope(conn, file_path, opts, kwargs)
    return conn.execute(f"SELECT COUNT(*) {FILE_CALLS_FROM} WHERE {where}", where.params).fetchone()[0]


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def file_history(conn, file_path, opts=None, **kwargs) -> list[dict]:
    """Tool calls that touched ``file_path`` (any file tool, Codex patches), oldest first;
    besides the reference's options, ``sessionId`` and ``project`` narrow them as for ``failures()``,
    and ``offset`` skips the oldest ones (``file_history_count`` says how many there are)."""
    o, where = _file_history_scope(conn, file_path, opts, kwargs)
    found = rows(
        conn,
        f"""SELECT tc.id, tc.message_uuid, tc.name, tc.input_json, tc.session_id, s.title, s.project,
                   {FILE_CALL_AT} AS at
            {FILE_CALLS_FROM}
            WHERE {where} ORDER BY {moment_sql(FILE_CALL_AT)}, tc.id LIMIT ? OFFSET ?""",
        [*where.params, o["limit"], o["offset"]],
    )
    return [
        {
            "toolCall": tool_call(r),
            "session": {"id": r["session_id"], "title": r["title"], "project": r["project"]},
            "timestamp": r["at"],
        }
        for r in found
    ]


def rows_in(conn, sql: str, values) -> list[sqlite3.Row]:
    """The rows of ``sql`` whose ``{values}`` is a list of ``?`` bound to ``values``
    (distinct, 500 at a time: SQLite binds a bounded number)."""
    values = list(dict.fromkeys(values))
    found = []
    for start in range(0, len(values), 500):
        part = values[start:start + 500]
        found += rows(conn, sql.format(values=",".join("?" * len(part))), part)
    return found


def message_states(conn, uuids) -> dict[str, tuple[str, str]]:
    """``{uuid: (surface, visibility)}`` of stored messages: whether the model still sees each."""
    found = rows_in(conn, "SELECT uuid, surface, visibility FROM messages WHERE uuid IN ({values})", uuids)
    return {r["uuid"]: (r["surface"], r["visibility"]) for r in found}


def call_outcomes(conn, call_ids) -> dict[str, str]:
    """``{tool call id: its result's outcome}`` for the calls that have a result."""
    found = rows_in(conn, "SELECT tool_use_id, outcome FROM tool_results WHERE tool_use_id IN ({values})", call_ids)
    return {r["tool_use_id"]: r["outcome"] for r in found}


def message_notes(conn, uuids) -> dict[str, list[str]]:
    """What a transcript says of each of these messages besides its text: the outcome
    of a tool result that did not succeed, the transcript of an agent a call started
    (when the logs hold it)."""
    notes: dict[str, list[str]] = {}
    for r in rows_in(conn, "SELECT message_uuid, outcome FROM tool_results "
                           "WHERE message_uuid IN ({values}) AND outcome != 'succeeded' ORDER BY id", uuids):
        notes.setdefault(r["message_uuid"], []).append(r["outcome"])
    for r in rows_in(conn, "SELECT tc.message_uuid, c.id AS child FROM tool_calls tc "
                           "JOIN subagents sa ON sa.parent_tool_use_id = tc.id "
                           "LEFT JOIN sessions c ON c.id = sa.child_session_id "
                           "WHERE tc.message_uuid IN ({values}) ORDER BY sa.id", uuids):
        transcript = r["child"] or "its transcript is not in the logs"
        notes.setdefault(r["message_uuid"], []).append(f"agent: {transcript}")
    return notes


def thinking_lengths(conn, uuids) -> dict[str, int]:
    """How many characters of each of these messages' text are the model's thinking,
    for those whose text holds thinking and an answer (``meta.thinking_chars``)."""
    return {
        r["uuid"]: r["chars"]
        for r in rows_in(conn, "SELECT uuid, json_extract(meta_json, '$.thinking_chars') AS chars FROM messages "
                               "WHERE uuid IN ({values}) AND json_extract(meta_json, '$.thinking_chars') > 0", uuids)
    }


def tool_call(row) -> dict:
    return {name: row[name] for name in TOOL_CALL_FIELDS}


FAILURE_AT = "COALESCE(tr.timestamp, m.timestamp)"
FAILURE_FROM = (
    "FROM tool_results tr LEFT JOIN messages m ON m.uuid = tr.message_uuid LEFT JOIN sessions s ON s.id = tr.session_id"
)


def _failure_scope(conn, opts, kwargs) -> tuple[dict, "Where"]:
    o = source_options(conn, "failures", opts, kwargs, {"limit": 50}, ("session_id", "project", "after", "before", "source"))
    where = Where("tr.outcome = 'failed' OR tr.is_error = 1").scope(o, {
        "session_id": "tr.session_id", "project": "s.project", "after": FAILURE_AT, "before": FAILURE_AT,
        "source": "s.source",
    })
    return o, where


@refusing_unencodable("OBELISK_INVALID_ARGUMENT")
def failures(conn, opts=None, **kwargs) -> list[dict]:
    """Failed tool results with their call, session and the next three messages; newest first."""
    o, where = _failure_scope(conn, opts, kwargs)
    return [failure(conn, r) for r in _failure_rows(conn, where, o["limit"])]


# (a failure with no time comes last, as NULL does in a descending order)
FAILURE_KEY = f"COALESCE({moment_sql(FAILURE_AT)}, '')"


def _failure_rows(conn, where: "Where", limit: int) -> list:
    return rows(
        conn,
        f"""SELECT tr.*, {full_content_sql('tr')} AS whole_content, m.seq AS message_seq, m.session_id AS message_session, s.title AS session_title,
                   s.project AS session_project, {FAILURE_KEY} AS _at
            {FAILURE_FROM}
            WHERE {where} ORDER BY _at DESC, tr.id DESC LIMIT ?""",
        where.params + [limit],
    )


def failures_paged(conn, opts=None, cursor: str | None = None) -> dict:
    """``failures`` a page at a time (the failures page; not a helper): ``{"items", "next_cursor",
    "before"}``: the ``limit`` failures after those ``cursor`` stands for (from the newest without
    one), as ``failures`` lists them; the cursor (keyset: it stays valid as failures are added)
    that lists those after them, None after the last; how many of these options' failures come
    before the page. A cursor of other options is refused (``SESSION_QUERY_INVALID_CURSOR``)."""
    o, where = _failure_scope(conn, opts, {})
    request = fingerprint({"where": str(where), "params": where.params})
    before = 0
    if cursor is not None:
        position = decode_cursor(conn, cursor, "failures", request, None)
        if not (isinstance(position, list) and len(position) == 2 and isinstance(position[0], str)
                and is_count(position[1])):
            raise cursor_invalid("the cursor is not one this service returned")
        at, last = position
        before = conn.execute(
            f"SELECT COUNT(*) {FAILURE_FROM} WHERE {where} AND ({FAILURE_KEY} > ? OR ({FAILURE_KEY} = ? AND tr.id >= ?))",
            [*where.params, at, at, last],
        ).fetchone()[0]
        where.add(f"{FAILURE_KEY} < ? OR ({FAILURE_KEY} = ? AND tr.id < ?)", at, at, last)
    found = _failure_rows(conn, where, o["limit"] + 1)
    next_cursor = None
    if len(found) > o["limit"]:
        edge = found[o["limit"] - 1]
        next_cursor = encode_cursor(conn, "failures", request, None, [edge["_at"], edge["id"]])
    return {"items": [failure(conn, r) for r in found[:o["limit"]]], "next_cursor": next_cursor, "before": before}


def failure_count(conn, opts=None, **kwargs) -> int:
    """How many failures ``failures`` with these options could list (its ``limit`` aside)."""
    _, where = _failure_scope(conn, opts, kwargs)
    return conn.execute(f"SELECT COUNT(*) {FAILURE_FROM} WHERE {where}", where.params).fetchone()[0]


def failure(conn, row) -> dict:
    hidden = ("whole_content", "message_seq", "message_session", "session_title", "session_project", "_at",
              INDEXED_FORMS["tool_results"])
    result = {k: row[k] for k in row.keys() if k not in hidden}
    result["content"] = clip(row["whole_content"])
    call = one(conn, f"SELECT {', '.join(TOOL_CALL_FIELDS)} FROM tool_calls WHERE id = ?", [row["tool_use_id"]])
    following = rows(
        conn,
        f"SELECT {', '.join(MESSAGE_FIELDS)} FROM messages WHERE session_id = ? AND seq > ? AND is_meta = 0 "
        "ORDER BY seq LIMIT 3",
        [row["message_session"], row["message_seq"]],
    ) if row["message_seq"] is not None else []
    return {
        "toolCall": tool_call(call) if call else None,
        "result": result,
        "session": {"id": row["session_id"], "title": row["session_title"], "project": row["session_project"]},
        "nextMessages": [compact_message(r) for r in following],
    }


# -- the seed's names ------------------------------------------------------------

workflowTree = workflow_tree
fileHistory = file_history

HELPERS = {
    "sql": sql, "search": search, "context": context, "trace": trace, "thread": thread, "raw": raw,
    "overview": overview, "sessions": sessions, "recent": recent, "summaries": summaries,
    "memories": memories, "subagents": subagents, "workflows": workflows,
    "workflowTree": workflow_tree, "fileHistory": file_history, "failures": failures,
}


def helpers(conn: sqlite3.Connection, *, redact=None) -> dict[str, Any]:
    """The read helpers bound to ``conn``, under the reference's global names.

    ``redact`` is applied to what ``raw()`` re-reads (default: the database's
    own redaction). The bound ``raw`` refuses a ``redact`` argument, so a
    script cannot turn redaction off.
    """
    bound = {name: functools.update_wrapper(functools.partial(fn, conn), fn) for name, fn in HELPERS.items()}

    def redacted_raw(uuid, opts=None, **kwargs):
        if "redact" in kwargs:
            raise QueryError("OBELISK_INVALID_ARGUMENT", "raw() has no redact option: the database decides")
        return raw(conn, uuid, opts, redact=redact, **kwargs)

    bound["raw"] = functools.update_wrapper(redacted_raw, raw)
    return bound
