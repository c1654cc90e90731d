"""One canonical instant for a caller's bound and a stored timestamp."""

import sqlite3

import pytest

from datasette_obelisk.query.moments import bound_sql, moment_sql
from datasette_obelisk.utc import canonical


def stored(value):
    conn = sqlite3.connect(":memory:")
    try:
        return conn.execute(f"SELECT {moment_sql('?')}", [value]).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2025-06-14T11:01:31Z", "2025-06-14T11:01:31.000Z"),
        ("2025-06-14T11:01:31.000Z", "2025-06-14T11:01:31.000Z"),
        ("2025-06-14T11:01:31.5Z", "2025-06-14T11:01:31.500Z"),
        ("2025-06-14T11:01:31.1235Z", "2025-06-14T11:01:31.124Z"),
        ("2025-06-14T11:01:31.123456789Z", "2025-06-14T11:01:31.123Z"),
        ("2025-06-14T11:01:31.9999Z", "2025-06-14T11:01:32.000Z"),
        ("2025-06-14T12:00:00+02:00", "2025-06-14T10:00:00.000Z"),
        ("2025-06-14T00:30:00-01:00", "2025-06-14T01:30:00.000Z"),
        ("2025-06-14T11:01:31.5+05:30", "2025-06-14T05:31:31.500Z"),
        ("2025-06-14T11:01:31", "2025-06-14T11:01:31.000Z"),
        ("2025-06-14 11:01:31", "2025-06-14T11:01:31.000Z"),
        ("2025-06-14T11:01", "2025-06-14T11:01:00.000Z"),
        ("2025-06-14", "2025-06-14T00:00:00.000Z"),
    ],
)
def test_a_bound_and_a_stored_value_normalise_alike(value, expected):
    assert canonical(value) == expected
    assert stored(value) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2025", "2025-01-01T00:00:00.000Z"),
        ("2025-06", "2025-06-01T00:00:00.000Z"),
        ("  2025-06-14T11:01:31Z ", "2025-06-14T11:01:31.000Z"),
        ("2025-06-14T12:00:00+0200", "2025-06-14T10:00:00.000Z"),
    ],
)
def test_reduced_and_basic_forms_are_read_as_bounds(value, expected):
    assert canonical(value) == expected


@pytest.mark.parametrize("value", ["", "yesterday", "now", "2460000.5", "2025-13-01", "2025-06-14T24:00:00Z", "[trimmed]"])
def test_what_is_no_time(value):
    assert canonical(value) is None


def test_stored_text_that_is_no_time_is_null():
    assert stored("[trimmed for fixture]") is None
    assert stored(None) is None


@pytest.mark.parametrize(
    "value",
    ["2026", "2026-04", "2026-04-01", " 2026-04-01 ", "2026-04-01T10:00", "2026-04-01 10:00:00",
     "2026-04-01T10:00:00Z", "2026-04-01T10:00:00.1234+02:00", "2026-04-01T10:00:00-05:30", "2024-02-29",
     "2026-02-29", "2026-13", "2026-00", "0000", "2026-13-01", "2026-04-01T25:00", "bogus", "", "2461000.5",
     "1700000000", "10:00", "now", "2026-04-01x", "2026-4-1"],
)
def test_bound_sql_reads_bounds_as_canonical_does(value):
    conn = sqlite3.connect(":memory:")
    assert conn.execute(f"select {bound_sql(':v')}", {"v": value}).fetchone()[0] == canonical(value)


@pytest.mark.parametrize("value", ["2026-04-01T10", "20260401", "2026-W14", "2026-04-01T10:00:00+0200"])
def test_bound_sql_refuses_forms_sqlite_cannot_read(value):
    assert canonical(value) is not None
    assert sqlite3.connect(":memory:").execute(f"select {bound_sql(':v')}", {"v": value}).fetchone()[0] is None
