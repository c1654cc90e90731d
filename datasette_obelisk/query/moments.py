"""Points in time: how the helpers bound and sort by time.

Timestamps are stored as the logs wrote them, and logs write one instant
several ways (``…31Z``, ``…31.000Z``, ``…+02:00``), so text order is not
time order. Every time bound and time sort goes through one canonical form,
UTC ``YYYY-MM-DDTHH:MM:SS.fffZ``, which sorts as text in time order:

- ``moment_sql(column)``: a stored value in that form, by SQLite's
  ``strftime``; NULL when the value is not a date and time (a log's
  ``[trimmed]`` placeholder), so such a row is outside every bound.
- ``canonical(text)`` (``utc.py``): a caller's ISO 8601 value in that form, read as
  SQLite reads stored ones: without an offset it is UTC, a date alone is its
  midnight (a year or a month alone, its first day), and a fraction is
  rounded to the millisecond. Anything else is not a time: None.
- ``bound_sql(value)``: ``canonical`` in SQL, for stored queries, as far as
  SQLite's date functions read ISO 8601: the same value for a year, a
  year-month, a date, and a date with ``HH:MM[:SS[.fff]]`` and an optional
  ``Z`` / ``±HH:MM``; NULL for anything else, including forms Python reads
  and SQLite does not (``2025-06-14T11``, ``20250614``, week dates) and
  numbers SQLite would read as Julian days or Unix times. Two known
  differences remain: a lowercase ``z`` is read as UTC, and a fraction
  within half a millisecond of midnight stays on its day (``…59.999Z``).
"""

from __future__ import annotations

from ..utc import CANONICAL


def moment_sql(column: str) -> str:
    """SQL for the canonical form of a stored timestamp ``column`` (NULL if it is none)."""
    return f"strftime('{CANONICAL}', {column})"


DATE_GLOB = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"


def bound_sql(value: str) -> str:
    """SQL for ``canonical(value)`` of an SQL text ``value`` (a parameter), NULL if it is no time."""
    text = f"trim({value})"
    return f"""(SELECT {moment_sql('v')} FROM (SELECT CASE
      WHEN {text} GLOB '[0-9][0-9][0-9][0-9]' THEN {text} || '-01-01'
      WHEN {text} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]' THEN {text} || '-01'
      ELSE {text} END AS v)
    WHERE v GLOB '{DATE_GLOB}*' AND v NOT GLOB '0000*' AND date(substr(v, 1, 10), '+0 days') = substr(v, 1, 10))"""

