"""A published archive: ``obelisk publish-config`` output served with ``--immutable``."""

from __future__ import annotations

import os
import sqlite3

import pytest
import yaml
from click.testing import CliRunner

from datasette_obelisk.cli import PUBLISH_HIDDEN_TABLES, cli, publish_settings
from web_fixtures import make_datasette, web_db  # noqa: F401 (fixture)


async def published(db):
    ds = make_datasette(None, config=publish_settings(), immutables=[str(db)])
    await ds.invoke_startup()
    return ds


@pytest.mark.asyncio
async def test_overview_never_uses_the_server_working_directory(web_db):
    ds = await published(web_db)
    response = await ds.client.get("/-/obelisk/api/overview")
    assert response.status_code == 200
    assert response.json()["current"] == {"cwd": None, "project": None}
    assert response.json()["current_project"] is None
    assert os.getcwd() not in response.text


@pytest.mark.asyncio
async def test_overview_takes_the_callers_cwd_or_project(web_db):
    ds = await published(web_db)
    by_cwd = (await ds.client.get("/-/obelisk/api/overview", params={"cwd": "/tmp/xss-project"})).json()
    assert by_cwd["current"]["cwd"] == "/tmp/xss-project"
    assert by_cwd["current"]["project"]["confidence"] == "exact"
    by_project = (await ds.client.get("/-/obelisk/api/overview", params={"project": "no-such-project"})).json()
    assert by_project["current"] == {
        "cwd": None,
        "project": {"project": "no-such-project", "project_path": None, "source": "opts", "confidence": "unknown"},
    }


@pytest.mark.asyncio
@pytest.mark.parametrize("table", PUBLISH_HIDDEN_TABLES)
async def test_bookkeeping_tables_are_hidden(web_db, table):
    ds = await published(web_db)
    response = await ds.client.get(f"/obelisk/{table}.json")
    assert response.status_code == 403
    assert response.json()["error"] == "You do not have permission to view this table"


@pytest.mark.asyncio
async def test_the_archive_still_serves_its_pages(web_db):
    ds = await published(web_db)
    for path in ("/-/obelisk", "/-/obelisk/overview", "/-/obelisk/memories", "/-/obelisk/files",
                 "/-/obelisk/api/search?q=zebrafish", "/-/obelisk/api/history/search?query=zebrafish",
                 "/obelisk/obelisk_search.json?q=zebrafish"):
        assert (await ds.client.get(path)).status_code == 200, path
    overview = (await ds.client.get("/-/obelisk/overview")).text
    assert "log files" not in overview
    uuid = sqlite3.connect(web_db).execute("SELECT uuid FROM messages LIMIT 1").fetchone()[0]
    raw = await ds.client.get("/-/obelisk/api/raw", params={"uuid": uuid})
    assert raw.status_code == 403
    assert raw.json()["error"]["message"] == "this reads tables you may not view: source_files (database 'obelisk')"


def test_publish_config_names_the_database_it_hides_tables_of(web_db, tmp_path):
    result = CliRunner().invoke(cli, ["publish-config", "--db", str(web_db)])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(result.stdout)
    assert config["databases"] == {"obelisk": {"tables": {t: {"allow": False} for t in PUBLISH_HIDDEN_TABLES}}}


def test_publish_config_refuses_a_database_that_is_not_obelisk(tmp_path):
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (a)").connection.close()
    result = CliRunner().invoke(cli, ["publish-config", "--db", str(plain)])
    assert result.exit_code == 1
    assert f"Error: OBELISK_NOT_FOUND: {plain} is not an obelisk database" in result.output
    tables = sqlite3.connect(plain).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("t",)]  # nothing was migrated into it


async def suggested_facets(ds) -> list:
    """The facets Datasette suggests on a searched messages page (its JSON, and whether the HTML shows any)."""
    response = await ds.client.get("/obelisk/messages.json", params={"_search": "the", "_extra": "suggested_facets"})
    assert response.status_code == 200, response.text[:300]
    html = (await ds.client.get("/obelisk/messages", params={"_search": "the"})).text
    assert ('class="suggested-facets"' in html) == bool(response.json()["suggested_facets"])
    return response.json()["suggested_facets"]


@pytest.mark.asyncio
async def test_publish_config_turns_facet_suggestions_off(web_db):
    """Each suggestion re-runs a table page's ?_search= once per column; facets asked for still work."""
    result = CliRunner().invoke(cli, ["publish-config", "--db", str(web_db)])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(result.stdout)
    assert config["settings"] == {
        "allow_download": False, "default_allow_sql": False, "allow_signed_tokens": False,
        "allow_csv_stream": False, "suggest_facets": False,
    }
    assert "  suggest_facets: false\n" in result.stdout
    assert await suggested_facets(await published(web_db)) == []
    unconfigured = make_datasette(None, immutables=[str(web_db)])
    await unconfigured.invoke_startup()
    assert {facet["name"] for facet in await suggested_facets(unconfigured)} >= {"role", "source"}
    ds = make_datasette(None, config=config, immutables=[str(web_db)])
    await ds.invoke_startup()
    asked = (await ds.client.get("/obelisk/messages.json", params={"_search": "the", "_facet": "role",
                                                                  "_extra": "facet_results,suggested_facets"})).json()
    assert asked["suggested_facets"] == [] and asked["facet_results"]["results"]["role"]["results"]


def test_every_internal_table_is_hidden_when_published():
    """The tables Datasette's pages hide as the plugin's internal state (derive_tallies,
    m046, among them) are hidden on a published instance too."""
    from datasette_obelisk.web.browse import TABLE_DEFAULTS

    internal = {name for name, settings in TABLE_DEFAULTS.items() if settings.get("hidden")} - {"_sqlite_migrations"}
    assert "derive_tallies" in internal
    assert internal <= set(PUBLISH_HIDDEN_TABLES)
