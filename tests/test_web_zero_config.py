"""`obelisk ingest` then `datasette obelisk.db`, nothing else: every page and endpoint answers."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from web_fixtures import CORPUS, make_datasette

WORD = "TypeScript"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    db = tmp_path_factory.mktemp("zero") / "obelisk.db"
    result = CliRunner().invoke(
        cli,
        ["ingest", "--db", str(db), "--claude-dir", str(CORPUS / "claude-code"),
         "--codex-dir", str(CORPUS / "codex"), "--gemini-dir", str(CORPUS / "gemini")],
    )
    assert result.exit_code in (0, 1), result.output  # 1: the corpus has deliberately broken lines
    return db


@pytest.mark.asyncio
async def test_every_page_and_endpoint_answers(ingested):
    ds = make_datasette(ingested)
    session = (await ds.client.get("/-/obelisk/api/sessions", params={"limit": "1"})).json()[0]["id"]
    for url in (
        "/-/obelisk", "/-/obelisk/overview", "/-/obelisk/files", "/-/obelisk/failures", "/-/obelisk/memories",
        f"/-/obelisk/session/{session}", f"/-/obelisk/session/{session}/lineage", f"/-/obelisk/event/{session}/1",
        "/-/obelisk/api/openapi.json", "/obelisk/browse_messages", "/obelisk/obelisk_sessions",
    ):
        response = await ds.client.get(url)
        assert response.status_code == 200, url


@pytest.mark.asyncio
async def test_search_finds_sessions_right_after_ingest(ingested):
    ds = make_datasette(ingested)
    helper = (await ds.client.get("/-/obelisk/api/search", params={"q": WORD})).json()
    assert helper
    grouped = (await ds.client.get("/-/obelisk/api/session-query/sessions/search", params={"query": WORD})).json()
    assert grouped["items"], "grouped search found nothing: is the session index maintained by ingest?"
    page = await ds.client.get("/-/obelisk", params={"q": WORD})
    assert "<mark>" in page.text


@pytest.mark.asyncio
async def test_an_ingest_of_no_logs_serves_an_empty_overview(tmp_path):
    (tmp_path / "logs").mkdir()
    db = tmp_path / "obelisk.db"
    assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--claude-dir", str(tmp_path / "logs")]).exit_code == 0
    response = await make_datasette(db).client.get("/-/obelisk/overview")
    assert response.status_code == 200
    assert "No log file has been ingested yet." in response.text
    assert "No sessions yet." in response.text
    assert "svg class=\"chart" not in response.text and "<table" not in response.text  # no empty charts or tables
