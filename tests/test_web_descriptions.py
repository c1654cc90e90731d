"""Table and column descriptions on Datasette's pages, with no metadata, under any database name."""

from __future__ import annotations

import sqlite3

import pytest

from datasette_obelisk.web.descriptions import COLUMNS, TABLES
from web_fixtures import copy_db, make_datasette, web_db  # noqa: F401 (fixture)


async def table_json(ds, path: str) -> dict:
    response = await ds.client.get(path + ".json?_extra=metadata,display_columns&_size=0")
    assert response.status_code == 200, response.text[:300]
    return response.json()


def column_descriptions(body: dict) -> dict:
    return {column["name"]: column.get("description") for column in body["display_columns"]}


@pytest.mark.asyncio
async def test_every_table_and_column_described_exists_in_the_schema(web_db):
    conn = sqlite3.connect(f"file:{web_db}?mode=ro", uri=True)
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert set(TABLES) <= names
    for table, columns in COLUMNS.items():
        assert table in TABLES
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        assert set(columns) <= have, table
    conn.close()


@pytest.mark.asyncio
async def test_a_database_of_any_name_is_described_with_no_metadata(web_db, tmp_path):
    ds = make_datasette(copy_db(web_db, tmp_path / "archive.db"))
    await ds.invoke_startup()
    body = await table_json(ds, "/archive/tool_calls")
    assert body["metadata"]["description"] == TABLES["tool_calls"]
    body = await table_json(ds, "/archive/subagents")
    assert body["metadata"]["description"] == TABLES["subagents"]
    assert column_descriptions(body)["duration_ms"] == "How long it ran, in milliseconds."
    assert column_descriptions(body)["agent_type"] is None
    body = await table_json(ds, "/archive/sessions")
    assert column_descriptions(body)["cost_usd"] == (
        "Claude Code's estimate of the session's cost, in US dollars, as /cost shows it.")
    body = await table_json(ds, "/archive/browse_messages")
    assert body["metadata"]["description"] == TABLES["browse_messages"]
    html = (await ds.client.get("/archive/source_files")).text
    assert TABLES["source_files"] in html
    assert 'data-column-description="Size when last read, in bytes."' in html


@pytest.mark.asyncio
async def test_the_users_metadata_wins(web_db):
    metadata = {"databases": {"obelisk": {"tables": {"subagents": {
        "description": "Our agents", "columns": {"duration_ms": "Wall time"}}}}}}
    ds = make_datasette(web_db, metadata=metadata)
    await ds.invoke_startup()
    body = await table_json(ds, "/obelisk/subagents")
    assert body["metadata"]["description"] == "Our agents"
    assert column_descriptions(body)["duration_ms"] == "Wall time"
    assert column_descriptions(body)["total_tokens"] == "Tokens it used."


async def started(web_db, internal, **options):
    ds = make_datasette(web_db, internal=str(internal), **options)
    await ds.invoke_startup()
    return ds


@pytest.mark.asyncio
async def test_a_kept_internal_database_takes_the_packages_new_text(web_db, tmp_path, monkeypatch):
    internal = tmp_path / "internal.db"
    ds = await started(web_db, internal)
    assert (await table_json(ds, "/obelisk/tool_calls"))["metadata"]["description"] == TABLES["tool_calls"]
    monkeypatch.setitem(TABLES, "tool_calls", "Calls, described anew.")
    monkeypatch.setitem(COLUMNS["subagents"], "duration_ms", "Run time, in milliseconds.")
    monkeypatch.delitem(COLUMNS["subagents"], "total_tokens")
    ds = await started(web_db, internal)
    assert (await table_json(ds, "/obelisk/tool_calls"))["metadata"]["description"] == "Calls, described anew."
    descriptions = column_descriptions(await table_json(ds, "/obelisk/subagents"))
    assert descriptions["duration_ms"] == "Run time, in milliseconds."
    assert descriptions["total_tokens"] is None  # a text the package no longer gives is taken away


@pytest.mark.asyncio
async def test_a_description_the_owner_set_is_kept_when_the_packages_text_changes(web_db, tmp_path, monkeypatch):
    internal = tmp_path / "internal.db"
    metadata = {"databases": {"obelisk": {"tables": {"subagents": {
        "description": "Our agents", "columns": {"duration_ms": "Wall time"}}}}}}
    await started(web_db, internal, metadata=metadata)
    ds = await started(web_db, internal)  # the owner's text stays in the kept internal database
    await ds.set_resource_metadata("obelisk", "tool_calls", "description", "Set through the API")
    await ds.set_column_metadata("obelisk", "subagents", "total_tokens", "description", "Tokens, all told")
    monkeypatch.setitem(TABLES, "subagents", "Agents, described anew.")
    monkeypatch.setitem(TABLES, "tool_calls", "Calls, described anew.")
    monkeypatch.setitem(COLUMNS["subagents"], "duration_ms", "Run time, in milliseconds.")
    monkeypatch.setitem(COLUMNS["subagents"], "total_tokens", "Tokens it used, anew.")
    monkeypatch.setitem(TABLES, "workflows", "Workflows, described anew.")
    ds = await started(web_db, internal)
    body = await table_json(ds, "/obelisk/subagents")
    assert body["metadata"]["description"] == "Our agents"
    descriptions = column_descriptions(body)
    assert (descriptions["duration_ms"], descriptions["total_tokens"]) == ("Wall time", "Tokens, all told")
    assert (await table_json(ds, "/obelisk/tool_calls"))["metadata"]["description"] == "Set through the API"
    assert (await table_json(ds, "/obelisk/workflows"))["metadata"]["description"] == "Workflows, described anew."
    monkeypatch.delitem(TABLES, "tool_calls")
    ds = await started(web_db, internal)
    assert (await table_json(ds, "/obelisk/tool_calls"))["metadata"]["description"] == "Set through the API"
