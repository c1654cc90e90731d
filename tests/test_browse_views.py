"""The browse views behind Datasette's table pages: the rows they keep from
one migration to the next, the plans of the facet queries Datasette runs
over them, their default facets, and the page cache of their connections."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from datasette_obelisk.store.migrations import migrations
from datasette_obelisk.web.browse import DATE, TABLE_DEFAULTS
from datasette_obelisk.web.connections import CACHE_KIB
from web_fixtures import make_datasette, web_db  # noqa: F401 (fixture)

DEFAULT_FACETS = {
    "browse_messages": ["source", "project"],
    "browse_tool_calls": ["tool_name", "outcome", "source", "project", "timestamp"],
}


def view_as_of(tmp_path, view: str, migration: str) -> str:
    """The CREATE VIEW statement of ``view`` in a database migrated up to ``migration``."""
    db = sqlite_utils.Database(tmp_path / f"{migration}.db")
    migrations.apply(db, stop_before=migration)
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'view' AND name = ?", [view]).fetchone()
    db.close()
    return sql


def read_only(path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


@pytest.mark.parametrize("view", ["browse_messages", "browse_tool_calls"])
def test_views_keep_the_rows_and_columns_of_m014(web_db, tmp_path, view):
    old = view_as_of(tmp_path, view, "m015_look_up_model_in_browse_tool_calls")
    conn = read_only(web_db)
    conn.execute(old.replace(f"CREATE VIEW {view}", f"CREATE TEMP VIEW old_{view}", 1))
    current = conn.execute(f"SELECT * FROM {view} ORDER BY rowid")
    names = [d[0] for d in current.description]
    rows = current.fetchall()
    before = conn.execute(f"SELECT * FROM old_{view} ORDER BY rowid")
    assert names == [d[0] for d in before.description]
    assert rows == before.fetchall()
    assert len(rows) > 100
    filled = {name for row in rows for name, value in zip(names, row) if value is not None}
    assert {"model", "tool_name", "outcome"} & set(names) <= filled


async def datasette_sql(ds, path: str) -> list[str]:
    """The SQL Datasette runs for ``path`` (with ``trace_debug`` on)."""
    response = await ds.client.get(path + "&_trace=1")
    assert response.status_code == 200, response.text[:500]
    return [trace["sql"] for trace in response.json()["_trace"]["traces"]]


def plan(conn, sql: str) -> list[str]:
    return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]


ASKED = {
    # Facets a user may add: each reads only the view's own rows and joins.
    "browse_messages": "_facet=role&_facet=type&_facet=model&_facet=branch&_facet_date=timestamp",
    "browse_tool_calls": "_facet=branch&_facet=exit_code",
}
# Names of the indexes (and so tables) a facet must not read.
AVOIDED = {"browse_messages": ("tool_calls", "tool_results"), "browse_tool_calls": ("messages",)}


@pytest.mark.asyncio
@pytest.mark.parametrize("view", ["browse_messages", "browse_tool_calls"])
async def test_facet_queries_run_no_lookup_they_do_not_need(web_db, view):
    # No facet on a column other than the looked-up ones runs a correlated
    # subquery per row: not the four tool lookups of browse_messages, not
    # the calling message of browse_tool_calls (m015: a join would be kept).
    ds = make_datasette(web_db, settings={"trace_debug": True})
    await ds.invoke_startup()
    statements = await datasette_sql(ds, f"/obelisk/{view}.json?_extra=facet_results&{ASKED[view]}")
    facet_sql = [sql for sql in statements if "as value, count(*) as count" in sql]
    assert len(facet_sql) == len(DEFAULT_FACETS[view]) + ASKED[view].count("_facet")
    conn = read_only(web_db)
    for sql in facet_sql:
        steps = plan(conn, sql)
        assert not [step for step in steps if "SUBQUERY" in step], (sql, steps)
        assert not [step for step in steps if any(table in step for table in AVOIDED[view])], (sql, steps)


@pytest.mark.asyncio
async def test_tool_calls_sorted_by_time_are_read_in_order_not_sorted(web_db):
    ds = make_datasette(web_db, settings={"trace_debug": True})
    await ds.invoke_startup()
    statements = await datasette_sql(ds, "/obelisk/browse_tool_calls.json?_sort_desc=timestamp&_nofacet=1")
    (page,) = [sql for sql in statements if "order by timestamp desc" in sql and "count(*)" not in sql]
    steps = plan(read_only(web_db), page)
    assert steps[0] == "SCAN c USING INDEX tool_calls_timestamp" and not [s for s in steps if "TEMP B-TREE" in s], steps


@pytest.mark.asyncio
async def test_the_model_of_a_tool_call_is_looked_up_only_when_read(web_db):
    ds = make_datasette(web_db, settings={"trace_debug": True})
    await ds.invoke_startup()
    statements = await datasette_sql(ds, "/obelisk/browse_tool_calls.json?_extra=facet_results&_facet=model")
    (model,) = [sql for sql in statements if sql.startswith("select model as value")]
    conn = read_only(web_db)
    steps = plan(conn, model)
    assert any(step.startswith("CORRELATED SCALAR SUBQUERY") for step in steps), steps
    assert "SEARCH m USING INDEX sqlite_autoindex_messages_1 (uuid=?)" in steps
    (tool_name,) = [sql for sql in statements if sql.startswith("select tool_name as value")]
    assert plan(conn, tool_name)[:3] == [  # (in name order: no sort for the grouping)
        "SCAN c USING INDEX tool_calls_name",
        "SEARCH r USING COVERING INDEX sqlite_autoindex_tool_results_1 (tool_use_id=?) LEFT-JOIN",
        "SEARCH s USING COVERING INDEX sqlite_autoindex_sessions_1 (id=?) LEFT-JOIN",
    ]


@pytest.mark.asyncio
async def test_default_facets_are_the_cheap_ones(web_db):
    assert TABLE_DEFAULTS["browse_messages"]["facets"] == ["source", "project"]
    assert TABLE_DEFAULTS["browse_tool_calls"]["facets"] == ["tool_name", "outcome", "source", "project", DATE]
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    for view, expected in DEFAULT_FACETS.items():
        response = await ds.client.get(f"/obelisk/{view}.json?_extra=facet_results,facets_timed_out&_size=1")
        body = response.json()
        assert list(body["facet_results"]["results"]) == expected
        assert body["facets_timed_out"] == []


@pytest.mark.asyncio
async def test_connections_to_an_obelisk_database_get_a_larger_page_cache(web_db, tmp_path):
    other = tmp_path / "other.db"
    sqlite_utils.Database(other)["things"].insert({"id": 1})
    ds = make_datasette(web_db)
    ds.add_database(ds.databases["obelisk"].__class__(ds, path=str(other)), name="other")
    await ds.invoke_startup()
    (size,) = (await ds.get_database("obelisk").execute("PRAGMA cache_size")).first()
    assert size == -CACHE_KIB
    (default,) = (await ds.get_database("other").execute("PRAGMA cache_size")).first()
    assert default == sqlite3.connect(":memory:").execute("PRAGMA cache_size").fetchone()[0]
