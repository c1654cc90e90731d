"""Hiding a table with Datasette's ``allow`` block hides its data on every face of the plugin."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from datasette_obelisk.web.api import read_endpoints
from web_fixtures import XSS_SESSION, make_datasette, web_db  # noqa: F401 (fixture)


def hiding(*tables: str) -> dict:
    return {
        "databases": {"obelisk": {"tables": {table: {"allow": False} for table in tables}}},
        "plugins": {"datasette-obelisk": {"read_only": True}},
    }


async def started(db, config):
    ds = make_datasette(db, config)
    await ds.invoke_startup()
    return ds


def denied(*tables: str) -> dict:
    names = ", ".join(sorted(tables))
    return {
        "ok": False,
        "error": {
            "code": "OBELISK_PERMISSION_DENIED",
            "message": f"this reads tables you may not view: {names} (database 'obelisk')",
        },
    }


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path, tables",
    [
        ("/-/obelisk/api/memories", ("memories", "sessions")),
        ("/-/obelisk/api/sessions?limit=1", ("sessions",)),
        ("/-/obelisk/api/overview?project=x", ("memories", "sessions")),
        ("/-/obelisk/api/search?q=zebrafish", ("sessions",)),
        (f"/-/obelisk/api/session-query/session/{XSS_SESSION}", ("sessions",)),
    ],
)
async def test_api_endpoints_answer_403_naming_the_hidden_tables(web_db, path, tables):
    ds = await started(web_db, hiding("memories", "sessions", "audit_log"))
    response = await ds.client.get(path)
    assert response.status_code == 403
    assert response.json() == denied(*tables)


@pytest.mark.asyncio
async def test_a_hidden_table_wins_over_the_endpoints_own_error(web_db):
    ds = await started(web_db, hiding("messages"))
    response = await ds.client.get("/-/obelisk/api/context?uuid=no-such-message")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "OBELISK_PERMISSION_DENIED"


@pytest.mark.asyncio
async def test_hiding_memories_leaves_endpoints_that_do_not_read_it(web_db):
    ds = await started(web_db, hiding("memories", "audit_log"))
    response = await ds.client.get("/-/obelisk/api/sessions?limit=1")
    assert response.status_code == 200
    assert len(response.json()) == 1


@pytest.mark.asyncio
async def test_pages_answer_the_plugin_error_page_with_403(web_db):
    ds = await started(web_db, hiding("memories"))
    response = await ds.client.get("/-/obelisk/memories")
    assert response.status_code == 403
    assert "<code>OBELISK_PERMISSION_DENIED</code> this reads tables you may not view: memories" in response.text
    assert "zebrafish" not in response.text.lower()
    assert (await ds.client.get("/-/obelisk/failures")).status_code == 200


@pytest.mark.asyncio
async def test_kept_facet_counts_still_count_the_tables_they_read(web_db):
    """The search page's facet counts are kept for its next visit, which still reads tool_calls."""
    seen = await started(web_db, {})
    assert (await seen.client.get("/-/obelisk", params={"q": "zebrafish"})).status_code == 200
    ds = await started(web_db, hiding("tool_calls"))
    for _ in range(2):
        response = await ds.client.get("/-/obelisk", params={"q": "zebrafish"})
        assert response.status_code == 403 and "may not view: tool_calls" in response.text


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path",
    [
        "/obelisk/obelisk_memories.json",
        "/obelisk/obelisk_overview.json",
        "/obelisk/obelisk_sessions.json",
        "/obelisk/memories_fts.json",
        "/obelisk/browse_messages.json",
    ],
)
async def test_stored_queries_and_views_over_hidden_tables_are_hidden(web_db, path):
    ds = await started(web_db, hiding("memories", "sessions"))
    response = await ds.client.get(path)
    assert response.status_code == 403
    assert "zebrafish" not in response.text.lower()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "hidden, derived",
    [("messages", ("session_docs", "session_docs_fts")), ("summaries", ("session_digests", "session_digests_fts")),
     ("messages", ("prompt_log", "prompt_log_fts", "browse_prompts")),
     ("titles", ("session_digests", "session_digests_fts"))],
)
async def test_tables_made_from_a_hidden_tables_text_are_hidden_with_it(web_db, hidden, derived):
    ds = await started(web_db, hiding(hidden))
    for table in derived:
        assert (await ds.client.get(f"/obelisk/{table}.json?_size=1")).status_code == 403, table
    listed = {t["name"] for t in (await ds.client.get("/obelisk.json")).json()["tables"]}
    assert not listed & {hidden, *derived}
    shown = await started(web_db, hiding("memories"))
    for table in derived:
        assert (await shown.client.get(f"/obelisk/{table}.json?_size=1")).status_code == 200, table


@pytest.mark.asyncio
async def test_the_menu_leads_to_our_pages_only_for_an_actor_who_may_view_the_database(web_db):
    ds = await started(web_db, {"databases": {"obelisk": {"allow": {"id": "alice"}}}})
    menu = lambda html: {href for href in re.findall(r'href="([^"]+)"', html) if href.startswith("/-/obelisk")}  # noqa: E731
    assert menu((await ds.client.get("/-/versions")).text) == set()
    alice = {"ds_actor": ds.client.actor_cookie({"id": "alice"})}
    assert menu((await ds.client.get("/-/versions", cookies=alice)).text) == {"/-/obelisk", "/-/obelisk/overview"}


@pytest.mark.asyncio
async def test_the_menu_leads_to_the_archive_being_looked_at_or_the_first_one_viewable(web_db, tmp_path):
    import shutil

    from datasette.app import Datasette

    second = tmp_path / "second.db"
    shutil.copy(web_db, second)
    ds = Datasette([str(web_db), str(second)], config={"databases": {"obelisk": {"allow": {"id": "alice"}}}})
    await ds.invoke_startup()
    menu = lambda html: sorted(h for h in re.findall(r'href="([^"]+)"', html) if h.startswith("/-/obelisk"))  # noqa: E731
    second_menu = ["/-/obelisk/overview?db=second", "/-/obelisk?db=second"]
    assert menu((await ds.client.get("/-/versions")).text) == second_menu  # the first one is private
    alice = {"ds_actor": ds.client.actor_cookie({"id": "alice"})}
    assert menu((await ds.client.get("/-/versions", cookies=alice)).text) == ["/-/obelisk", "/-/obelisk/overview"]
    assert menu((await ds.client.get("/second", cookies=alice)).text) == sorted(
        [*second_menu, "/-/obelisk/overview?db=second", "/-/obelisk?db=second"])  # with the database's own actions
    # Our pages, with no ?db=, work on the first archive the reader may view.
    assert (await ds.client.get("/-/obelisk/api/sessions?limit=1")).status_code == 200
    assert (await ds.client.get("/-/obelisk/api/sessions?limit=1&db=obelisk")).status_code == 403
    assert (await ds.client.get("/-/obelisk/overview")).status_code == 200


@pytest.mark.asyncio
async def test_stored_queries_over_visible_tables_still_run(web_db):
    ds = await started(web_db, hiding("memories"))
    assert (await ds.client.get("/obelisk/obelisk_sessions.json?_shape=array")).status_code == 200
    assert (await ds.client.get("/obelisk/browse_messages.json?_size=1")).status_code == 200
    listed = (await ds.client.get("/obelisk.json")).json()
    queries = {query["name"] for query in listed.get("queries", [])}
    assert "obelisk_memories" not in queries


@pytest.mark.asyncio
async def test_an_actor_the_allow_block_names_sees_everything(web_db):
    config = hiding("memories")
    config["databases"]["obelisk"]["tables"]["memories"] = {"allow": {"id": "alice"}}
    ds = await started(web_db, config)
    alice = {"ds_actor": ds.client.actor_cookie({"id": "alice"})}
    assert (await ds.client.get("/-/obelisk/api/memories", cookies=alice)).status_code == 200
    assert (await ds.client.get("/obelisk/obelisk_memories.json", cookies=alice)).status_code == 200
    assert (await ds.client.get("/-/obelisk/api/memories")).status_code == 403


@pytest.mark.asyncio
async def test_every_endpoint_with_no_table_hidden_reads_nothing_hidden(web_db):
    """No false 403s: shadow tables of FTS indexes count as their index."""
    ds = await started(web_db, {"plugins": {"datasette-obelisk": {"read_only": True}}})
    for path in ("/-/obelisk/api/search?q=zebrafish", "/-/obelisk/api/memories?query=zebrafish", "/-/obelisk/api/overview"):
        assert (await ds.client.get(path)).status_code == 200, path
    assert read_endpoints()


@pytest.mark.asyncio
async def test_visibility_is_asked_once_per_table_and_actor_then_remembered(web_db, monkeypatch):
    from datasette_obelisk.web import visibility

    ds = await started(web_db, hiding("memories"))
    asked = []
    allowed = ds.allowed

    async def counting(**kwargs):
        if kwargs["action"] == "view-table":
            asked.append(kwargs["resource"].child)
        return await allowed(**kwargs)

    monkeypatch.setattr(ds, "allowed", counting)
    for _ in range(3):
        assert (await ds.client.get("/-/obelisk/api/sessions?limit=1")).status_code == 200
    # Every table once, for the anonymous actor (is anything hidden at all?), then nothing.
    assert "sessions" in asked and len(asked) == len(set(asked))
    first = len(asked)
    later = visibility.time.monotonic() + visibility.VIEWABLE_SECONDS
    monkeypatch.setattr(visibility, "time", SimpleNamespace(monotonic=lambda: later))  # expired: asked again
    assert (await ds.client.get("/-/obelisk/api/sessions?limit=1")).status_code == 200
    assert len(asked) == 2 * first
    assert (await ds.client.get("/-/obelisk/api/memories")).json() == denied("memories")


async def served_then_archived(web_db, tmp_path):
    """A server of an empty database (``messages`` hidden) that then becomes the archive ``web_db``
    under it, as an ingest (or a migration) changes the schema under a server."""
    import sqlite3

    late = tmp_path / "obelisk.db"
    sqlite3.connect(late).close()
    ds = await started(late, hiding("messages"))
    assert (await ds.client.get("/obelisk/obelisk_search.json?q=zebrafish")).status_code == 404
    source, target = sqlite3.connect(web_db), sqlite3.connect(late)
    source.backup(target)
    source.close(), target.close()
    return ds


@pytest.mark.asyncio
async def test_a_database_that_becomes_an_archive_while_served_hides_what_it_should(web_db, tmp_path):
    ds = await served_then_archived(web_db, tmp_path)
    # (no wait: a database not set up as an archive is looked at on every check)
    for path in ("/obelisk/browse_messages.json?_search=zebrafish", "/obelisk/session_docs.json?_size=1",
                 "/obelisk/obelisk_search.json?q=zebrafish"):
        response = await ds.client.get(path)
        assert response.status_code == 403, path
        assert "zebrafish command" not in response.text.lower()
    assert (await ds.client.get("/obelisk/obelisk_sessions.json?_size=1")).status_code == 200  # set up now


@pytest.mark.asyncio
async def test_requests_arriving_while_a_database_is_set_up_wait_for_it(web_db, tmp_path):
    import asyncio

    ds = await served_then_archived(web_db, tmp_path)
    responses = await asyncio.gather(*(ds.client.get("/obelisk/browse_messages.json?_search=zebrafish") for _ in range(8)))
    assert [response.status_code for response in responses] == [403] * 8


@pytest.mark.asyncio
async def test_databases_that_are_no_archives_are_not_asked_their_schema_on_every_check(web_db, tmp_path, monkeypatch):
    import sqlite3

    from datasette.app import Datasette

    from datasette_obelisk.web import startup

    plain = []
    for n in range(3):
        plain.append(tmp_path / f"plain{n}.db")
        sqlite3.connect(plain[-1]).execute("CREATE TABLE t (x)").connection.close()
    ds = Datasette([str(web_db), *map(str, plain)])
    await ds.invoke_startup()
    await ds.client.get("/")  # (the first checks look at every file once)
    asked = []
    original = startup.schema_versions

    async def counting(datasette, names):
        asked.extend(names)
        return await original(datasette, names)

    monkeypatch.setattr(startup, "schema_versions", counting)
    monkeypatch.setattr(startup, "RECHECK_SECONDS", 3600)
    for path in ("/", "/plain0", "/obelisk"):
        assert (await ds.client.get(path)).status_code == 200
    assert asked == []
    sqlite3.connect(plain[1]).execute("CREATE TABLE u (y)").connection.close()  # written: looked at again
    await ds.client.get("/plain0")
    assert asked == ["plain1"]


@pytest.mark.asyncio
async def test_the_database_listing_leaves_out_the_index_of_a_hidden_table(web_db):
    """Our own checks (Datasette's rules alone) must not stay in the request's permission
    cache: there they made the view an FTS index reads look allowed, and the listing
    named messages_fts with the count of the hidden messages."""
    ds = await started(web_db, hiding("messages"))
    listed = {table["name"] for table in (await ds.client.get("/obelisk.json")).json()["tables"]}
    allowed = {r.child for r in (await ds.allowed_resources("view-table", None, parent="obelisk", limit=1000)).resources}
    assert "messages_fts" not in listed and "messages" not in listed
    assert listed <= allowed
    assert (await ds.client.get("/obelisk/messages_fts.json")).status_code == 403
