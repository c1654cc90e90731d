"""A branch or model no match of a search has is named beside the results (with one it
spells in another case), not refused: no index holds them, and telling whether any message
has one would read every message."""

from __future__ import annotations

import pytest

from datasette_obelisk.query import search_facets
from query_fixtures import line, toy  # noqa: F401 (fixture)


def two_sessions(toy):
    toy.write("s1", line("s1a", "needle one", "2026-01-01T00:00:00Z"))
    toy.write("s2", line("s2a", "needle two", "2026-01-02T00:00:00Z"))
    toy.ingest()
    toy.sql("UPDATE messages SET model = 'Opus-4', git_branch = 'main' WHERE uuid = 's1a'")
    toy.sql("UPDATE messages SET model = 'sonnet', git_branch = 'feature/Auth' WHERE uuid = 's2a'")
    return toy.conn()


def test_the_facet_count_names_the_chosen_values_no_match_has(toy):
    conn = two_sessions(toy)
    found = search_facets.faceted_search(conn, "needle", narrowing={"model": ["opus-4", "sonnet"], "branch": ["nowhere"]})
    assert found["page"]["items"] == []
    # (the models are counted under branch nowhere, which no match has: nothing is said of them)
    assert found["unmatched"] == [{"facet": "branch", "value": "nowhere", "spelt": []}]
    spelt = search_facets.faceted_search(conn, "needle", narrowing={"model": ["opus-4", "sonnet"]})
    assert [item["session"]["id"] for item in spelt["page"]["items"]] == ["s2"]
    assert spelt["unmatched"] == [{"facet": "model", "value": "opus-4", "spelt": ["Opus-4"]}]
    kept = search_facets.faceted_search(conn, "needle", narrowing={"model": ["sonnet"], "branch": ["feature/Auth"]})
    assert [item["session"]["id"] for item in kept["page"]["items"]] == ["s2"] and kept["unmatched"] == []
    # (a value the other filters leave no match of is named too: no match of this search has it)
    other = search_facets.faceted_search(conn, "one", narrowing={"branch": ["feature/Auth"]})
    assert other["unmatched"] == [{"facet": "branch", "value": "feature/Auth", "spelt": []}]


@pytest.mark.asyncio
async def test_the_search_page_notes_a_branch_or_model_no_match_has(toy):
    from web_fixtures import make_datasette

    two_sessions(toy)
    ds = make_datasette(toy.db)
    await ds.invoke_startup()
    response = await ds.client.get("/-/obelisk", params={"q": "needle", "model": "Opus-4", "branch": ["main", "nowhere"]})
    assert response.status_code == 200
    assert "/-/obelisk/session/s1" in response.text and "/-/obelisk/session/s2" not in response.text
    assert response.text.count("ob-unmatched") == 1
    assert ('<p class="ob-notice ob-unmatched" role="status">No match of this search has the branch <code>nowhere</code> '
            "(a branch is matched exactly, as written).</p>") in response.text
    model = await ds.client.get("/-/obelisk", params={"q": "needle", "model": "opus-4"})
    assert model.status_code == 200 and '<p class="ob-empty">No session matches.</p>' in model.text
    assert ('<p class="ob-notice ob-unmatched" role="status">No match of this search has the model <code>opus-4</code> '
            "(a model is matched exactly, as written): did you mean <code>Opus-4</code>?</p>") in model.text
    exact = await ds.client.get("/-/obelisk", params={"q": "needle", "model": "Opus-4", "branch": "main"})
    assert "/-/obelisk/session/s1" in exact.text and "/-/obelisk/session/s2" not in exact.text
    assert "ob-unmatched" not in exact.text


@pytest.mark.asyncio
async def test_an_empty_list_of_sessions_offers_a_branch_or_model_a_session_spells_in_another_case(toy):
    from web_fixtures import make_datasette

    two_sessions(toy)
    toy.sql("UPDATE sessions SET model = 'Opus-4', git_branch = 'main' WHERE id = 's1'")
    ds = make_datasette(toy.db)
    await ds.invoke_startup()
    response = await ds.client.get("/-/obelisk", params={"model": "opus-4", "branch": ["MAIN", "nowhere"]})
    assert response.status_code == 200 and '<p class="ob-empty">No session matches these filters.</p>' in response.text
    assert response.text.count("ob-unmatched") == 2
    assert ('<p class="ob-notice ob-unmatched" role="status">No session is listed for the branch <code>MAIN</code> '
            "(a branch is matched exactly, as written): did you mean <code>main</code>?</p>") in response.text
    assert ('<p class="ob-notice ob-unmatched" role="status">No session is listed for the model <code>opus-4</code> '
            "(a model is matched exactly, as written): did you mean <code>Opus-4</code>?</p>") in response.text
    listed = await ds.client.get("/-/obelisk", params={"model": "Opus-4", "branch": "main"})
    assert "/-/obelisk/session/s1" in listed.text and "ob-unmatched" not in listed.text
