"""SQL functions for Datasette connections and sqlite-utils.

``obelisk_trace(uuid)``
    JSON array of the message uuids from the root of the conversation down
    to ``uuid`` (the helper ``trace()``), ``[]`` for an unknown uuid::

        select value from json_each(obelisk_trace(:uuid))

``obelisk_snippet(text, query[, width])``
    A plain-text excerpt of about ``width`` (default 240) characters of
    ``text``, centred on the first word of ``query`` it contains::

        select obelisk_snippet(text, 'migration', 120) from messages limit 5

``obelisk_fts(text[, mode])``
    A safe FTS5 expression for user text: ``terms`` (every word must match,
    the default) or ``phrase``. Punctuation never causes a syntax error;
    blank or unindexable text gives ``""``, which matches nothing::

        select rowid from messages_fts where messages_fts match obelisk_fts('foo-bar c++')
"""

from __future__ import annotations

import json
import sqlite3

from ..query import fts, obelisk
from ..query.errors import QueryError
from ..query.text import SNIPPET_CHARS, approximate_snippet

SAFE_MODES = ("terms", "phrase")
MATCH_NOTHING = '""'


def trace_json(conn: sqlite3.Connection, uuid) -> str:
    if not isinstance(uuid, str) or not uuid:
        return "[]"
    # The helpers read rows by name; sqlite-utils connections return tuples.
    # A cursor keeps the factory it was made with, so the caller's is safe.
    saved, conn.row_factory = conn.row_factory, sqlite3.Row
    try:
        return json.dumps([message["uuid"] for message in obelisk.trace(conn, uuid)])
    finally:
        conn.row_factory = saved


def snippet_text(text, query, width=SNIPPET_CHARS) -> str | None:
    if text is None:
        return None
    return approximate_snippet(str(text), fts.tokens(str(query or "")), int(width))["text"]


def fts_expression(text, mode="terms") -> str:
    if mode not in SAFE_MODES:
        raise ValueError(f"obelisk_fts(): mode must be one of {', '.join(SAFE_MODES)}")
    try:
        expression = fts.parse_query(str(text or ""), mode).expression
    except QueryError:  # blank text
        return MATCH_NOTHING
    return expression or MATCH_NOTHING


def register_functions(conn: sqlite3.Connection) -> None:
    conn.create_function("obelisk_trace", 1, lambda uuid: trace_json(conn, uuid))
    for arity in (2, 3):
        conn.create_function("obelisk_snippet", arity, snippet_text, deterministic=True)
    for arity in (1, 2):
        conn.create_function("obelisk_fts", arity, fts_expression, deterministic=True)
