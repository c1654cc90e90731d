"""bm25 for the events of one session, computed in SQL rather than by FTS5.

FTS5's ``bm25()`` first counts, over the *whole* table, the rows holding each
phrase (its IDF); for a common word that is most of the table, and every
statement pays it again. Grouped search confirms one candidate session per
statement, so it scores a session's matching events with its own expression:

    score = sum over terms t of  idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg))

- ``idf(t)`` from the session index (sessions holding the term), looked up
  once per search, and only when the query has more than one term;
- ``tf`` the occurrences of the term in the lower-cased first ``TF_WINDOW``
  characters of the message (a substring count, at least 1 since FTS5
  matched);
- ``len`` the message's length in characters, ``avg`` the mean length of a
  message of that session.

Higher is better; ties go to the newer event.

    EventScorer(conn, fts).sql(avg_length_sql, params) -> (sql expression over ``m``, params)
"""

from __future__ import annotations

import math

from .. import cjk
from .fts import FtsQuery, quote

K1 = 1.2
B = 0.75
TF_WINDOW = 20_000
WINDOW_SQL = "lower(substr({0}.text, 1, %d))" % TF_WINDOW  # where term frequencies are counted


class EventScorer:
    def __init__(self, conn, fts: FtsQuery):
        self.terms = list(dict.fromkeys(fts.terms))
        self.weights = self._idf(conn, fts) if len(self.terms) > 1 else [1.0] * len(self.terms)

    def _idf(self, conn, fts: FtsQuery) -> list[float]:
        total = conn.execute("SELECT COUNT(*) FROM session_docs").fetchone()[0] or 1
        weights = []
        for term in self.terms:
            expression = quote(cjk.split(term)) + ("*" if term == fts.prefix_term else "")  # (an emoji as indexed)
            found = conn.execute(
                "SELECT COUNT(*) FROM session_docs_fts WHERE session_docs_fts MATCH ?", [expression]
            ).fetchone()[0]
            weights.append(round(math.log((total - found + 0.5) / (found + 0.5) + 1), 6))
        return weights

    def sql(self, avg_length: str, avg_params: list = (), alias: str = "m", window: str | None = None) -> tuple[str, list]:
        """The score of message ``alias``; ``avg_length`` is an SQL expression (with
        ``avg_params``) for its session's mean message length, at least 1. ``window``:
        a column holding ``WINDOW_SQL`` of the message, computed once (each mention of
        a multi-MB text reads all of it again)."""
        if not self.terms:
            return "0", []
        window = window or WINDOW_SQL.format(alias)
        norm = f"({K1} * ({1 - B} + {B} * MAX({alias}.text_length, 1) / {avg_length}))"
        parts, params = [], []
        for term, weight in zip(self.terms, self.weights):
            tf = f"MAX(1, (length({window}) - length(replace({window}, ?, ''))) / {len(term)})"
            parts.append(f"{weight} * {tf} * {K1 + 1} / ({tf} + {norm})")
            params += [term, term, *avg_params]
        return "(" + " + ".join(parts) + ")", params
