"""?_search= on every table and view an obelisk full-text index reads, with no configuration."""

from __future__ import annotations

import sqlite3

import pytest

from web_fixtures import make_datasette, web_db  # noqa: F401 (fixture)

# (table or view, its key column, the index, a word, how many rows hold it)
SEARCHED = [
    ("session_digests", "id", "session_digests_fts", "test", 1),
    ("session_digests_search", "id", "session_digests_fts", "test", 1),
    ("messages_search", "id", "messages_fts", "test", 53),
    ("tool_errors_search", "id", "tool_errors_fts", "error", 20),
    ("memories_search", "pk", "memories_fts", "aquarium", 0),  # (its one memory does not hold it)
    ("prompt_log_search", "id", "prompt_log_fts", "zebrafish", 3),
]


def matched(db, index: str, word: str) -> set[int]:
    """The rowids ``index`` matches for ``word``."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute(f"SELECT rowid FROM {index} WHERE {index} MATCH ?", [f'"{word}"'])}
    finally:
        conn.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("table, key, index, word, count", SEARCHED)
async def test_search_on_a_table_an_index_reads_returns_its_matches(web_db, table, key, index, word, count):
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    everything = (await ds.client.get(f"/obelisk/{table}.json?_extra=count&_size=0")).json()["count"]
    found = matched(web_db, index, word)
    assert len(found) == count != everything  # (so the search narrows the rows)
    response = await ds.client.get(f"/obelisk/{table}.json?_search={word}&_extra=count&_size=max&_shape=objects")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == count
    assert {row[key] for row in body["rows"]} == found


@pytest.mark.asyncio
async def test_the_session_digests_page_offers_a_search_box(web_db):
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    html = (await ds.client.get("/obelisk/session_digests")).text
    assert '<input id="_search" type="search" name="_search"' in html
