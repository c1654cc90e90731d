"""SQL functions for Datasette connections and sqlite-utils.

Their contract, as SQL's own functions behave: a NULL argument gives NULL,
and so does an argument of the wrong kind (a mode not listed, a width that
is not a positive integer), never an error that would abort the query.
Text arguments may be numbers (read as their text) or BLOBs (decoded as
UTF-8, invalid bytes replaced); modes are case-insensitive.

``obelisk_trace(uuid)``
    JSON array of the message uuids from the root of the conversation down
    to ``uuid`` (the helper ``trace()``), ``[]`` for an unknown uuid, NULL on
    a database that is not an obelisk database::

        select value from json_each(obelisk_trace(:uuid))

``obelisk_snippet(text, query[, width])``
    A plain-text excerpt of about ``width`` (default 240) characters of
    ``text``, centred on the first word of ``query`` it contains (a query
    over 10,000 characters gives NULL)::

        select obelisk_snippet(text, 'migration', 120) from messages limit 5

``obelisk_fts(text[, mode])``
    A safe FTS5 expression for user text: ``terms`` (every word must match,
    the default) or ``phrase``. Punctuation never causes a syntax error;
    blank or unindexable text gives ``""``, which matches nothing. Text over
    10,000 characters gives NULL (the helpers refuse more than 1,000): SQLite
    cannot interrupt a function, so its work is bounded here::

        select rowid from messages_fts where messages_fts match obelisk_fts('foo-bar c++')

``obelisk_normal_path(path)``
    ``path`` in the one spelling the archive stores tool calls' paths in
    (``tool_call_files.path``, ``file_path``): no doubled slashes, ``.``
    segments or trailing slash (``sources.common.normal_path``)::

        select tool_call_id from tool_call_files where path = obelisk_normal_path('/repo//src/./app.py')

``escape_fts(text)``
    Datasette's own (what a table page's ``?_search=`` matches), but on an
    obelisk database a term holding CJK characters is also matched with them
    set apart, as the message and tool output indexes read them, so
    ``?_search=数据`` finds the word inside a sentence; a term holding an
    emoji is matched as those indexes write it (``?_search=✅``). (``_searchmode=raw``
    passes the text as it is: there, write a CJK word with spaces between
    its characters.)
"""

from __future__ import annotations

import json
import re
import sqlite3

from .. import cjk
from ..query import fts, obelisk
from ..query.errors import QueryError
from ..query.text import SNIPPET_CHARS, approximate_snippet
from ..sources.common import normal_path
from ..store.db import has_schema, splits_cjk

SAFE_MODES = ("terms", "phrase")
FTS_STRING = re.compile(r'"(?:[^"]|"")*"')
MAX_QUERY_CHARS = 10_000
MATCH_NOTHING = '""'


def as_text(value) -> str | None:
    """An SQL value read as text: BLOBs decoded as UTF-8, NULL as None."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None if value is None else str(value)


def as_width(value) -> int | None:
    """A positive whole number (integer, integral real or its text), else None."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, (str, bytes)):
        try:
            value = int(as_text(value).strip())
        except ValueError:
            return None
    return value if isinstance(value, int) and value >= 1 else None


def as_mode(value) -> str | None:
    """A safe mode, case-insensitive, else None."""
    mode = as_text(value)
    mode = mode.strip().lower() if mode is not None else None
    return mode if mode in SAFE_MODES else None


def stop_if_interrupted(conn: sqlite3.Connection, exc: Exception) -> bool:
    """Whether ``exc`` is the time limit stopping a function's own read; if so the statement
    calling the function is stopped too, with the usual message ("interrupted"), even one too
    short to reach the time limit's next check. (Raised from the function it would read "user-defined
    function raised exception", which Datasette does not take for a query it stopped: a table
    page's facet answered 500; a NULL returned instead would be taken for the answer.)"""
    stopped = (str(exc) == "interrupted" if isinstance(exc, sqlite3.Error)
               else getattr(exc, "code", None) in ("OBELISK_TIMEOUT", "SESSION_QUERY_ABORTED"))
    if stopped:
        conn.interrupt()
    return stopped


def trace_json(conn: sqlite3.Connection, uuid) -> str | None:
    uuid = as_text(uuid)
    if uuid is None:
        return None
    # The helpers read rows by name; sqlite-utils connections return tuples.
    # A cursor keeps the factory it was made with, so the caller's is safe.
    saved, conn.row_factory = conn.row_factory, sqlite3.Row
    try:
        # Only the connection's own database: --crossdb's _memory would find
        # an attached database's messages under the bare name.
        if not has_schema(conn):  # another file, or --crossdb's _memory: no chains
            return None
        return json.dumps(obelisk.trace_uuids(conn, uuid) if uuid else [])
    except (QueryError, sqlite3.Error) as exc:
        stop_if_interrupted(conn, exc)
        return None
    finally:
        conn.row_factory = saved


def snippet_text(text, query, width=SNIPPET_CHARS) -> str | None:
    text, query, width = as_text(text), as_text(query), as_width(width)
    if text is None or query is None or width is None or len(query) > MAX_QUERY_CHARS:
        return None
    return approximate_snippet(text, fts.words(query), width)["text"]


def fts_expression(text, mode="terms") -> str | None:
    text, mode = as_text(text), as_mode(mode)
    if text is None or mode is None or len(text) > MAX_QUERY_CHARS:
        return None
    try:
        expression = fts.parse_query(text, mode, max_chars=None).expression
    except QueryError:  # blank text
        return MATCH_NOTHING
    return expression or MATCH_NOTHING


def stored_path(path) -> str | None:
    path = as_text(path)
    return None if path is None else normal_path(path)


def register_functions(conn: sqlite3.Connection) -> None:
    conn.create_function("obelisk_trace", 1, lambda uuid: trace_json(conn, uuid))
    for arity in (2, 3):
        conn.create_function("obelisk_snippet", arity, snippet_text, deterministic=True)
    for arity in (1, 2):
        conn.create_function("obelisk_fts", arity, fts_expression, deterministic=True)
    conn.create_function("obelisk_normal_path", 1, stored_path, deterministic=True)


def register_escape_fts(conn: sqlite3.Connection) -> None:
    """Datasette's ``escape_fts``, CJK characters and emoji set apart on an obelisk database
    (register it after Datasette's own)."""
    from datasette.utils import escape_fts

    splits = []  # [True] once the database is known to split CJK (a schema is never downgraded)

    def split_here() -> bool:
        if not splits:
            try:
                if not splits_cjk(conn):
                    return False
            except sqlite3.OperationalError as exc:
                if not stop_if_interrupted(conn, exc):
                    raise
                return False
            splits.append(True)
        return True

    def escape(text):
        text = as_text(text)  # (as the other functions: NULL gives NULL, a number or BLOB is read as text)
        if text is None:
            return None
        escaped = escape_fts(text.replace("\x00", " "))  # (FTS5 ends a string at a NUL: "unterminated string")
        if isinstance(escaped, str) and cjk.sets_apart(escaped) and split_here():
            terms = FTS_STRING.findall(escaped)
            if " ".join(terms) == escaped:  # (as Datasette writes it: quoted terms, one space apart)
                return " AND ".join(fts.phrase(term[1:-1].replace('""', '"')) for term in terms)
            return cjk.split(escaped)  # (anything else: as the message index reads it)
        return escaped

    conn.create_function("escape_fts", 1, escape)
