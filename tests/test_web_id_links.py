"""Id columns on Datasette's pages link to the row they name, as a foreign key's would."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlite_utils
from datasette.utils import tilde_encode
from markupsafe import escape

from web_fixtures import copy_db, make_datasette, web_db  # noqa: F401 (fixture)


def first(db, sql: str):
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchone()
    finally:
        conn.close()


def link(table: str, value, label: str | None = None) -> str:
    """A cell's link as Datasette shows a foreign key's: its label, then the id."""
    href = f"/obelisk/{table}/{tilde_encode(str(value))}"
    if label is None:
        return f'<a href="{href}">{escape(str(value))}</a>'
    return f'<a href="{href}">{escape(label)}</a>&nbsp;<em>{escape(str(value))}</em>'


@pytest.mark.asyncio
async def test_table_pages_link_session_file_and_call_ids(web_db):
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    session_id, title, file_id, path = first(
        web_db, "SELECT m.session_id, s.title, m.file_id, f.path FROM messages m JOIN sessions s ON s.id = m.session_id "
                "JOIN source_files f ON f.id = m.file_id WHERE length(s.title) < 60 ORDER BY m.id LIMIT 1")
    html = (await ds.client.get(f"/obelisk/messages?session_id={session_id}&_sort=id&_size=1")).text
    assert f'<td class="col-session_id type-str">{link("sessions", session_id, title)}</td>' in html
    assert path.endswith(f"/{session_id}.jsonl")
    assert f'<td class="col-file_id type-int">{link("source_files", file_id, f"{session_id}.jsonl")}</td>' in html
    call, name = first(web_db, "SELECT r.tool_use_id, c.name FROM tool_results r JOIN tool_calls c ON c.id = r.tool_use_id "
                               "ORDER BY r.id LIMIT 1")
    html = (await ds.client.get("/obelisk/tool_results?_sort=id&_size=1")).text
    assert link("tool_calls", call, name) in html
    child, parent, title = first(web_db, "SELECT c.id, c.parent_session_id, p.title FROM sessions c JOIN sessions p "
                                         "ON p.id = c.parent_session_id WHERE c.parent_session_id LIKE 'codex:%' "
                                         "AND length(p.title) < 60 ORDER BY c.id LIMIT 1")
    assert ":" in parent  # (tilde-encoded in the link, as Datasette's own row links are)
    html = (await ds.client.get(f"/obelisk/sessions?id={child}")).text
    assert link("sessions", parent, title) in html
    assert (await ds.client.get(f"/obelisk/sessions/{tilde_encode(parent)}")).status_code == 200


@pytest.mark.asyncio
async def test_stored_query_pages_link_session_ids_and_exports_keep_the_value(web_db):
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    html = (await ds.client.get("/obelisk/obelisk_failures?limit=1")).text
    (session_id,) = (await ds.client.get("/obelisk/obelisk_failures.json?limit=1&_shape=arrays")).json()["rows"][0][4:5]
    (title,) = first(web_db, f"SELECT title FROM sessions WHERE id = '{session_id}'")
    assert f'<td class="col-session_id"><a href="/obelisk/sessions/{session_id}"' in html
    assert title[:20] in html
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


EMOJI_TITLE = "🦓 Zebra census <script>window.__pwned = 3</script> 👩‍👩‍👧"
LONG_TITLE = "Migrate the billing service " + "and its workers " * 6


def retitled(web_db, tmp_path) -> tuple[Path, str, str]:
    """A copy in which one session has an emoji and markup title, and one of its agents a long one."""
    db = copy_db(web_db, tmp_path / "obelisk.db")
    parent, child = first(db, "SELECT parent_session_id, id FROM sessions WHERE parent_session_id IN "
                              "(SELECT id FROM sessions) ORDER BY id LIMIT 1")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (EMOJI_TITLE, parent))
        conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (LONG_TITLE, child))
    conn.close()
    return db, parent, child


@pytest.mark.asyncio
async def test_titles_are_escaped_kept_whole_when_short_and_cut_when_long(web_db, tmp_path):
    db, parent, child = retitled(web_db, tmp_path)
    ds = make_datasette(db)
    await ds.invoke_startup()
    html = (await ds.client.get(f"/obelisk/messages?session_id={quote(parent)}&_size=1")).text
    assert (f'<td class="col-session_id type-str"><a href="/obelisk/sessions/{tilde_encode(parent)}">'
            "🦓 Zebra census &lt;script&gt;window.__pwned = 3&lt;/script&gt; 👩‍👩‍👧</a>"
            f"&nbsp;<em>{parent}</em></td>") in html
    assert "<script>window.__pwned = 3" not in html
    html = (await ds.client.get(f"/obelisk/messages?session_id={quote(child)}&_size=1")).text
    assert (f'<a href="/obelisk/sessions/{tilde_encode(child)}" title="{LONG_TITLE.strip()}">'
            "Migrate the billing service and its workers and its workers…"
            f"</a>&nbsp;<em>{child}</em>") in html
    html = (await ds.client.get(f"/obelisk/sessions/{tilde_encode(child)}")).text  # the row page too
    assert f'<a href="/obelisk/sessions/{tilde_encode(parent)}">🦓 Zebra census &lt;script&gt;' in html
    # cut inside an emoji sequence, no joiner is left hanging before the ellipsis
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET title = ? WHERE id = ?", ("👩‍👩‍👧" * 20, child))
    conn.close()
    html = (await ds.client.get(f"/obelisk/messages?session_id={quote(child)}&_size=1")).text
    assert f'">{"👩‍👩‍👧" * 11}👩\u200d👩…</a>&nbsp;<em>{child}</em>' in html
    # JSON and CSV keep the value
    rows = (await ds.client.get(f"/obelisk/messages.json?session_id={quote(parent)}&_size=1&_shape=array")).json()
    assert rows[0]["session_id"] == parent
    csv = (await ds.client.get(f"/obelisk/sessions.csv?id={quote(child)}&_col=parent_session_id")).text
    assert csv.splitlines()[1] == f"{child},{parent}"


@pytest.mark.asyncio
async def test_an_id_naming_no_row_is_shown_bare(web_db, tmp_path):
    db = copy_db(web_db, tmp_path / "obelisk.db")
    (child,) = first(db, "SELECT id FROM sessions WHERE parent_session_id IS NULL ORDER BY id LIMIT 1")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET parent_session_id = 'no-such-session' WHERE id = ?", (child,))
        conn.execute("UPDATE messages SET file_id = 9999 WHERE id = (SELECT min(id) FROM messages)")
    conn.close()
    ds = make_datasette(db)
    await ds.invoke_startup()
    html = (await ds.client.get(f"/obelisk/sessions?id={quote(child)}")).text
    assert '<td class="col-parent_session_id type-str">no-such-session</td>' in html
    html = (await ds.client.get("/obelisk/messages?_sort=id&_size=1")).text
    assert '<td class="col-file_id type-int">9999</td>' in html
    body = (await ds.client.get(f"/obelisk/sessions.json?id={quote(child)}&_shape=array")).json()
    assert body[0]["parent_session_id"] == "no-such-session"


@pytest.mark.asyncio
async def test_no_label_comes_from_a_table_the_actor_may_not_view(web_db):
    ds = make_datasette(web_db, config={"databases": {"obelisk": {"tables": {"sessions": {"allow": False}}}}})
    await ds.invoke_startup()
    session_id, title, file_id = first(web_db, "SELECT m.session_id, s.title, m.file_id FROM messages m "
                                               "JOIN sessions s ON s.id = m.session_id ORDER BY m.id LIMIT 1")
    html = (await ds.client.get("/obelisk/messages?_sort=id&_size=1")).text
    assert f'<td class="col-session_id type-str">{link("sessions", session_id)}</td>' in html
    assert escape(title[:30]) not in html
    assert f'<td class="col-file_id type-int"><a href="/obelisk/source_files/{file_id}">' in html
    assert f"</a>&nbsp;<em>{file_id}</em></td>" in html


@pytest.mark.asyncio
async def test_labels_are_read_once_a_row_of_new_ids_at_most_not_once_a_cell(web_db, monkeypatch):
    ds = make_datasette(web_db)
    await ds.invoke_startup()
    db = ds.get_database("obelisk")
    reads = []
    execute_fn = db.execute_fn

    async def counting(fn):
        reads.append(fn.__qualname__)
        return await execute_fn(fn)

    monkeypatch.setattr(db, "execute_fn", counting)
    html = (await ds.client.get("/obelisk/messages?_sort=id&_size=1000")).text
    conn = sqlite3.connect(f"file:{web_db}?mode=ro", uri=True)
    rows = conn.execute("SELECT session_id, file_id FROM messages ORDER BY id LIMIT 1000").fetchall()
    conn.close()
    sessions, files, new = set(), set(), 0
    for session_id, file_id in rows:
        new += session_id not in sessions or file_id not in files
        sessions.add(session_id)
        files.add(file_id)
    assert len(rows) == 1000 and len(sessions) > 5
    # at most one read a row naming a session or file not met before (fewer: an agent's title
    # comes with its parent's), none for the other rows
    assert 0 < reads.count("read_labels.<locals>.read") <= new < 100
    assert html.count('<td class="col-session_id type-str"><a href="/obelisk/sessions/') == 1000
    # a page of agents names a new child session a row: they come with their parent's title
    reads.clear()
    html = (await ds.client.get("/obelisk/subagents?_size=100")).text
    conn = sqlite3.connect(f"file:{web_db}?mode=ro", uri=True)
    (parents, children, missing), = conn.execute(
        "SELECT count(DISTINCT session_id), count(DISTINCT child_session_id), "
        "count(DISTINCT child_session_id) FILTER (WHERE child_session_id NOT IN (SELECT id FROM sessions)) "
        "FROM subagents").fetchall()
    conn.close()
    assert missing > 0  # (agents whose transcript is gone: shown bare, each read alone)
    assert html.count('<td class="col-child_session_id type-str"><a href="/obelisk/sessions/') == children - missing
    assert reads.count("read_labels.<locals>.read") <= parents + missing < children
