"""Id columns on Datasette's pages link to the row they name, as a foreign key's would."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils
from datasette.utils import tilde_encode
from markupsafe import escape

from web_fixtures import make_datasette, web_db  # noqa: F401 (fixture)


def first(db, sql: str):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchone()
    finally:
        conn.close()


def link(table: str, value) -> str:
    return f'<a href="/obelisk/{table}/{tilde_encode(str(value))}">{escape(str(value))}</a>'


@pytest.mark.asyncio
async def test_table_pages_link_session_file_and_call_ids(web_db):
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    session_id, file_id = first(web_db, "SELECT session_id, file_id FROM messages ORDER BY id LIMIT 1")
    html = (await ds.client.get("/obelisk/messages?_sort=id&_size=1")).text
    assert f'<td class="col-session_id type-str">{link("sessions", session_id)}</td>' in html
    assert f'<td class="col-file_id type-int">{link("source_files", file_id)}</td>' in html
    (call,) = first(web_db, "SELECT tool_use_id FROM tool_results ORDER BY id LIMIT 1")
    html = (await ds.client.get("/obelisk/tool_results?_sort=id&_size=1")).text
    assert link("tool_calls", call) in html
    child, parent = first(web_db, "SELECT id, parent_session_id FROM sessions WHERE parent_session_id LIKE 'codex:%' "
                                  "ORDER BY id LIMIT 1")
    assert ":" in parent  # (tilde-encoded in the link, as Datasette's own row links are)
    html = (await ds.client.get(f"/obelisk/sessions?id={child}")).text
    assert link("sessions", parent) in html
    assert (await ds.client.get(f"/obelisk/sessions/{tilde_encode(parent)}")).status_code == 200


@pytest.mark.asyncio
async def test_stored_query_pages_link_session_ids_and_exports_keep_the_value(web_db):
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    html = (await ds.client.get("/obelisk/obelisk_failures?limit=1")).text
    (session_id,) = (await ds.client.get("/obelisk/obelisk_failures.json?limit=1&_shape=arrays")).json()["rows"][0][4:5]
    assert f'<td class="col-session_id">{link("sessions", session_id)}</td>' in html
    session_id, _ = first(web_db, "SELECT session_id, file_id FROM messages ORDER BY id LIMIT 1")
    csv = (await ds.client.get("/obelisk/messages.csv?_sort=id&_size=1&_col=session_id")).text
    assert csv.splitlines()[1] == f"1,{session_id}"


@pytest.mark.asyncio
async def test_a_database_of_another_tool_is_left_as_it_is(web_db, tmp_path):
    other = tmp_path / "other.db"
    sqlite_utils.Database(other)["things"].insert({"id": 1, "session_id": "s1", "file_id": 7})
    ds = make_datasette(web_db)
    ds.add_database(ds.databases["obelisk"].__class__(ds, path=str(other)), name="other")
    await ds.invoke_startup()
    html = (await ds.client.get("/other/things")).text
    assert '<td class="col-session_id type-str">s1</td>' in html
    assert '<td class="col-file_id type-int">7</td>' in html
