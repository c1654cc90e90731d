"""The HTML pages: they render, they link to each other, and transcript text is only ever text."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import sqlite3
from pathlib import Path
from html import escape as html_escape, unescape
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from query_fixtures import copy_corpus
from web_fixtures import IMG, SCRIPT, XSS_SESSION, ds, make_datasette, rows, web_db  # noqa: F401 (fixtures)

FORKED = "claude_forked_session"  # a rewind: two prompts under one parent
COMPACTED = "dag_compact_after_rewind_preserved"
WITH_SUBAGENTS = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
SAMPLE = "sample_session"


async def page(ds, url: str, status: int = 200, **params) -> str:
    response = await ds.client.get(url, **({"params": params} if params else {}))
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("text/html")
    return response.text


def assert_no_payload(html: str) -> None:
    """The payloads appear only escaped: no live tag, no handler attribute."""
    assert "<script>window.__pwned" not in html
    assert "<img src=x" not in html
    assert not re.search(r"<[^>]+onerror=", html)


def links(html: str) -> list[str]:
    return [unescape(href) for href in re.findall(r'href="([^"]+)"', html)]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "url,params",
    [
        ("/-/obelisk", {}),
        ("/-/obelisk", {"q": "zebrafish"}),
        ("/-/obelisk", {"q": "pwned"}),
        (f"/-/obelisk/session/{XSS_SESSION}", {}),
        (f"/-/obelisk/session/{XSS_SESSION}", {"shadowed": "1", "meta": "1", "log": "1"}),
        (f"/-/obelisk/session/{XSS_SESSION}/lineage", {"seq": "4"}),
        (f"/-/obelisk/event/{XSS_SESSION}/4", {}),
        ("/-/obelisk/failures", {}),
        ("/-/obelisk/files", {}),
        ("/-/obelisk/memories", {}),
        ("/-/obelisk/overview", {}),
    ],
)
async def test_payloads_render_as_text(ds, url, params):
    html = await page(ds, url, **params)
    assert_no_payload(html)


@pytest.mark.asyncio
async def test_transcript_shows_the_payload_escaped(ds):
    html = await page(ds, f"/-/obelisk/session/{XSS_SESSION}")
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=" in html
    assert unescape(html).count(SCRIPT) >= 2 and IMG in unescape(html)


@pytest.mark.asyncio
async def test_transcript_links_the_session_s_pull_requests(ds):
    html = await page(ds, "/-/obelisk/session/small")
    assert '<a href="https://example.invalid/org/repo/pull/1" rel="noopener noreferrer">org/repo#1</a>' in html
    assert "<span>effort [trimmed for fixture]</span>" in html  # what its last assistant line says
    # Only a web address becomes a link; the repository is text.
    html = await page(ds, f"/-/obelisk/session/{XSS_SESSION}")
    assert '<a href="#" rel="noopener noreferrer">&lt;script&gt;window.__pwned = 1&lt;/script&gt;#7</a>' in html


@pytest.mark.asyncio
async def test_row_pages_link_to_the_transcript(ds, web_db):
    [(pr,)] = rows(web_db, "SELECT id FROM pull_requests WHERE session_id = 'small'")
    [(summary, session)] = rows(web_db, "SELECT id, session_id FROM summaries ORDER BY id LIMIT 1")
    for url, session_id in ((f"/obelisk/pull_requests/{pr}", "small"), (f"/obelisk/summaries/{summary}", session)):
        assert f'href="/-/obelisk/session/{session_id}?db=obelisk"' in await page(ds, url), url


@pytest.mark.asyncio
async def test_search_page_groups_highlights_and_facets(ds):
    html = await page(ds, "/-/obelisk", q="zebrafish")
    assert f"/-/obelisk/session/{XSS_SESSION}" in html
    assert "<mark>zebrafish</mark>" in html
    facet_links = [href for href in links(html) if "tool=" in href or "source=" in href or "branch=" in href]
    assert "?q=zebrafish&source=claude" in facet_links
    assert any("branch=xss-branch" in href for href in facet_links)


@pytest.mark.asyncio
async def test_a_facet_shows_eight_values_and_links_to_the_rest(ds):
    def facet(html, name):
        return re.findall(rf'data-facet="{name}" title="([^"]*)"', html)

    html = await page(ds, "/-/obelisk", q="the")
    projects = facet(html, "project")
    assert len(projects) == 8 and 'href="?q=the&amp;more=project#facets"' in html
    more = await page(ds, "/-/obelisk", q="the", more="project")
    assert len(facet(more, "project")) > 8 and facet(more, "project")[:8] == projects
    assert len(facet(more, "tool")) == 8 and 'href="?q=the#facets">Fewer<' in more
    chosen = await page(ds, "/-/obelisk", q="the", project=projects[0])
    assert facet(chosen, "project") == projects  # the other projects stay there to add
    ninth = facet(more, "project")[8]
    beyond = await page(ds, "/-/obelisk", q="the", project=ninth)
    assert facet(beyond, "project") == [*projects, ninth]  # a chosen value is listed, past the first 8 too


@pytest.mark.asyncio
async def test_a_source_no_one_has_is_refused_on_the_search_page_as_in_the_api(ds):
    response = await ds.client.get("/-/obelisk", params={"q": "the", "source": "nosuch"})
    assert response.status_code == 400 and "OBELISK_INVALID_ARGUMENT" in response.text and "nosuch" in response.text
    api = await ds.client.get("/-/obelisk/api/search", params={"q": "the", "source": "nosuch"})
    assert (api.status_code, api.json()["error"]["code"]) == (400, "OBELISK_INVALID_ARGUMENT")
    assert (await ds.client.get("/-/obelisk", params={"q": "the", "source": "claude"})).status_code == 200
    recent = await page(ds, "/-/obelisk", 400, source="nosuch")  # with no query too
    assert "unknown source nosuch" in recent and 'name="q"' in recent


@pytest.mark.asyncio
@pytest.mark.parametrize("params", [{"q": "the"}, {}])
async def test_an_unknown_role_is_refused_on_the_search_page_as_an_unknown_source(ds, params):
    html = await page(ds, "/-/obelisk", 400, role="asistant", **params)
    assert ('<p class="ob-error"><code>OBELISK_INVALID_ARGUMENT</code> unknown role asistant; '
            "the roles are user, assistant, system, developer, tool</p>") in html
    assert 'name="q"' in html  # (the form, to correct it in place)
    assert "role must not be blank" in await page(ds, "/-/obelisk", 400, role=" ", **params)
    # a role in capitals is the role it names, as a source is
    assert await page(ds, "/-/obelisk", role="Assistant", **params) == await page(ds, "/-/obelisk", role="assistant", **params)


@pytest.mark.asyncio
async def test_a_role_a_source_plugin_stores_is_a_role_the_search_page_takes(web_db, tmp_path):
    from web_fixtures import copy_db

    db = copy_db(web_db, tmp_path / "narrator.db")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE messages SET role = 'narrator' WHERE uuid = 'xss-u1'")
    conn.close()
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    html = await page(datasette, "/-/obelisk", role="narrator")
    assert re.findall(r'href="/-/obelisk/session/([^"?#]+)"', html) == [XSS_SESSION]
    assert "unknown role Narrator" in await page(datasette, "/-/obelisk", 400, role="Narrator")  # (its own spelling only)


@pytest.mark.asyncio
@pytest.mark.parametrize("path, params", [("/-/obelisk", {"q": "the"}), ("/-/obelisk", {}), ("/-/obelisk/failures", {})])
async def test_a_blank_source_is_refused_as_blank_on_the_pages(ds, path, params):
    html = await page(ds, path, 400, source=" ", **params)
    assert '<p class="ob-error"><code>OBELISK_INVALID_ARGUMENT</code> source must not be blank</p>' in html


@pytest.mark.asyncio
@pytest.mark.parametrize("path, params", [("/-/obelisk", {"q": "zebrafish"}), ("/-/obelisk", {}),
                                          ("/-/obelisk/failures", {})])
async def test_a_source_in_capitals_is_the_source_it_names_on_the_pages(ds, path, params):
    exact = await page(ds, path, source="claude", **params)
    assert f"/-/obelisk/session/{XSS_SESSION}" in exact
    assert await page(ds, path, source="Claude", **params) == exact


@pytest.mark.asyncio
async def test_the_search_page_reads_its_mode_in_any_case_as_the_api(ds):
    exact = await page(ds, "/-/obelisk", q="the zebrafish", mode="phrase")
    assert await page(ds, "/-/obelisk", q="the zebrafish", mode="PHRASE") == exact


@pytest.mark.asyncio
async def test_a_refused_failures_filter_is_shown_with_its_form(ds):
    html = await page(ds, "/-/obelisk/failures", 400, source="nosuch", project="billing")
    assert "OBELISK_INVALID_ARGUMENT" in html and "unknown source nosuch" in html
    assert '<form class="ob-search" action="/-/obelisk/failures"' in html
    assert 'value="billing"' in html and "<option>claude</option>" in html
    blank = await page(ds, "/-/obelisk/failures", 400, sessionId=" ")  # refused as the helpers refuse it
    assert "OBELISK_INVALID_ARGUMENT" in blank
    assert "OBELISK_NOT_FOUND" in await page(ds, "/-/obelisk/failures", 404, sessionId="no-such-session")


@pytest.mark.asyncio
async def test_a_query_of_nothing_the_index_keeps_says_so(ds):
    html = await page(ds, "/-/obelisk", q="-> !! …")
    assert ("No session can match: the query holds no word the index keeps: it is only punctuation or symbols "
            "such as <code>-&gt;</code> or <code>…</code>") in html
    assert "No session can match" not in await page(ds, "/-/obelisk", q="nosuchwordanywhere")
    assert "No session can match" not in await page(ds, "/-/obelisk", q="🚀 !!")  # (an emoji is a word)


@pytest.mark.asyncio
async def test_search_page_takes_a_raw_prefix(ds):
    html = await page(ds, "/-/obelisk", q="zebra*", mode="raw")
    assert f"/-/obelisk/session/{XSS_SESSION}" in html
    assert "<mark>zebrafish</mark>" in html


@pytest.mark.asyncio
async def test_search_page_names_the_number_of_matches_its_facets_count(ds, monkeypatch):
    from datasette_obelisk.query import search_facets

    counted = "<p class=\"ob-muted\">Counts are sessions with a match{}.</p>"
    assert counted.format("") in await page(ds, "/-/obelisk", q="the")
    monkeypatch.setattr(search_facets, "HIT_SAMPLE", 3)
    assert counted.format(" (first 3 matches)") in await page(ds, "/-/obelisk", q="the")
    monkeypatch.setattr(search_facets, "HIT_SAMPLE", 1_000)  # fewer matches than that: no note
    html = await page(ds, "/-/obelisk", q="zebrafish")
    assert counted.format("") in html and "1,000" not in html


@pytest.mark.asyncio
async def test_search_page_answers_when_its_facets_cannot_be_counted_in_time(ds, monkeypatch):
    # The counts beside a page stop at FACET_SECONDS: a facet whose count is stopped says
    # it was not counted (its chosen value still there to take back), and the page lists
    # its sessions all the same. Nothing is kept of a stopped count.
    from datasette_obelisk.query import readonly, search_facets

    def facet(html, name):
        return re.findall(rf'data-facet="{name}" title="([^"]*)"', html)

    counted = await page(ds, "/-/obelisk", q="the")
    tool = facet(counted, "tool")[0]
    sessions = re.findall(r'href="(/-/obelisk/session/[^"?#]*)', counted)
    assert "Not counted in time" not in counted and sessions
    search_facets._kept.clear()
    monkeypatch.setattr(readonly, "PROGRESS_STEPS", 1)
    monkeypatch.setattr(search_facets, "FACET_SECONDS", -1.0)
    html = await page(ds, "/-/obelisk", q="the", tool=tool)
    assert html.count("Not counted in time") == 7
    assert facet(html, "tool") == [tool] and facet(html, "project") == []
    assert re.findall(r'href="(/-/obelisk/session/[^"?#]*)', html)
    html = await page(ds, "/-/obelisk", q="the")
    assert html.count("Not counted in time") == 7
    assert re.findall(r'href="(/-/obelisk/session/[^"?#]*)', html) == sessions
    monkeypatch.setattr(search_facets, "FACET_SECONDS", 10.0)
    assert await page(ds, "/-/obelisk", q="the") == counted


@pytest.mark.asyncio
async def test_search_page_says_how_many_sessions_match_and_has_one_outline(ds, web_db):
    html = await page(ds, "/-/obelisk", q="zebrafish")
    assert '<p class="ob-meta ob-count">1 session matches</p>' in html
    assert re.findall(r"<h1[^>]*>(.*?)</h1>", html) == ["Search: zebrafish"]
    headings = [int(level) for level in re.findall(r"<h([1-6])", html)]
    assert headings[0] == 1 and all(b - a <= 1 for a, b in zip(headings, headings[1:]))  # no level skipped
    every = await page(ds, "/-/obelisk", q="the")
    [counted] = re.findall(r'<p class="ob-meta ob-count">([\d,]+) sessions match</p>', every)
    conn = sqlite3.connect(web_db)
    sessions = conn.execute(
        "SELECT COUNT(DISTINCT m.session_id) FROM messages_fts f JOIN messages m ON m.id = f.rowid "
        "WHERE messages_fts MATCH 'the' AND m.is_meta = 0").fetchone()[0]
    conn.close()
    assert int(counted.replace(",", "")) == sessions
    start = await page(ds, "/-/obelisk")  # before a query: recent sessions, and the way to every one
    assert [int(level) for level in re.findall(r"<h([1-6])", start)][:3] == [1, 2, 3]
    assert "/obelisk/obelisk_sessions?limit=1000" in links(start)
    one_source = await page(ds, "/-/obelisk", source="claude")
    [every] = [link for link in links(one_source) if "obelisk_sessions" in link]
    assert every == "/obelisk/obelisk_sessions?source=claude&limit=1000"
    listed = (await ds.client.get(every.replace("obelisk_sessions", "obelisk_sessions.json") + "&_shape=array")).json()
    assert listed and {row["source"] for row in listed} == {"claude"}


@pytest.mark.asyncio
async def test_search_page_marks_hits_the_model_no_longer_saw(ds):
    # kvsankar's forked session: the QuickSort branch (lines 3-6) was rewound.
    html = await page(ds, "/-/obelisk", q="quicksort")
    after = html.split('href="/-/obelisk/session/claude_forked_session"')[1]
    snippets = re.search(r'<ul class="ob-snippets">(.*?)</ul>', after, re.S).group(1).split("</li>")[:-1]
    assert ["(rewound or compacted away)" in snippet for snippet in snippets] == [True, True, True]


@pytest.mark.asyncio
async def test_search_page_days_are_utc_days_its_date_filter_finds(tmp_path):
    # A message written at 23:30 -05:00 is on the next UTC day; a placeholder time is on none.
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "late", "timestamp": "2026-03-05T23:30:00.000-05:00",
         "message": {"role": "user", "content": "latenightword"}},
        {"type": "user", "uuid": "u2", "sessionId": "late", "timestamp": "[trimmed]",
         "message": {"role": "user", "content": "latenightword again"}},
    ]
    folder = tmp_path / "claude" / "projects" / "-tmp-late"
    folder.mkdir(parents=True)
    (folder / "late.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    from datasette_obelisk.store.ingest import ingest

    ingest(tmp_path / "late.db", {"claude": tmp_path / "claude"})
    datasette = make_datasette(tmp_path / "late.db")
    await datasette.invoke_startup()
    html = await page(datasette, "/-/obelisk", q="latenightword")
    days = [link for link in links(html) if "from=" in link]
    assert days == ["?q=latenightword&from=2026-03-06&to=2026-03-06"]
    assert "/-/obelisk/session/late" in await page(datasette, "/-/obelisk" + unescape(days[0]))


@pytest.mark.asyncio
async def test_the_sessions_card_links_a_list_of_every_session_it_counts(tmp_path):
    # More sessions than the stored query lists by default (50): the card's link lists them all.
    folder = tmp_path / "claude" / "projects" / "-tmp-many"
    folder.mkdir(parents=True)
    for n in range(60):
        line = {"type": "user", "uuid": f"u{n}", "sessionId": f"many-{n:02d}", "timestamp": f"2026-03-05T10:{n:02d}:00.000Z",
                "message": {"role": "user", "content": f"session number {n}"}}
        (folder / f"many-{n:02d}.jsonl").write_text(json.dumps(line) + "\n")
    from datasette_obelisk.store.ingest import ingest

    ingest(tmp_path / "many.db", {"claude": tmp_path / "claude"})
    datasette = make_datasette(tmp_path / "many.db")
    await datasette.invoke_startup()
    html = await page(datasette, "/-/obelisk/overview")
    [(link, count)] = re.findall(r'<a class="ob-card" href="([^"]+)"><div class="value">([\d,]+)</div><div class="label">sessions<', html)
    path, _, query = unescape(link).partition("?")
    listed = (await datasette.client.get(f"{path}.json?{query}&_shape=array")).json()
    assert int(count) == len({row["id"] for row in listed}) == 60


@pytest.mark.asyncio
async def test_the_failures_project_filter_finds_part_of_a_name(ds):
    count = lambda html: re.search(r'<p class="ob-muted">(?:The newest [\d,]+ of )?([\d,]+)[ .]', html).group(1)  # noqa: E731
    typed = await page(ds, "/-/obelisk/failures", project="daaain")
    assert count(typed) == count(await page(ds, "/-/obelisk/failures", project="%daaain%")) == "1"
    assert count(await page(ds, "/-/obelisk/failures", project="daaain__claude-code-log")) == "1"
    none = await page(ds, "/-/obelisk/failures", project="no-such-project")
    assert "No failed tool calls match these filters." in none and "<label>Project <input" in none


@pytest.mark.asyncio
async def test_the_event_page_names_its_session_and_labels_events_one_way(ds):
    html = await page(ds, f"/-/obelisk/event/{XSS_SESSION}/4")
    title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
    assert title.startswith("Event #4 of ") and XSS_SESSION not in title
    neighbours = {seq: label for label, seq in re.findall(r'<div class="ob-entry-head"><span>([^ ]+) · .*?#(\d+)</a>', html)}
    chain = re.findall(r'#(\d+)</a> <span class="ob-muted">([^<]+)</span>', html.split("<h2>Parent chain</h2>")[1])
    shared = [(seq, label) for seq, label in chain if seq in neighbours]
    assert len(shared) >= 2 and all(neighbours[seq] == label for seq, label in shared)
    assert {label for _, label in chain} <= {"user/message", "assistant/message", "tool/call", "tool/result"}


@pytest.mark.asyncio
async def test_search_filters_are_chips_that_remove_themselves(ds):
    html = await page(ds, "/-/obelisk", q="pwned", source="claude", tool="Bash")
    assert 'class="ob-chip"' in html and "Source: claude" in html and "Tool: Bash" in html
    assert "?q=pwned&tool=Bash" in links(html)  # the chip that removes source=claude
    assert f"/-/obelisk/session/{XSS_SESSION}" in html
    assert "No session matches" in await page(ds, "/-/obelisk", q="zebrafish", source="codex")


@pytest.mark.asyncio
async def test_search_results_name_the_parent_of_a_subagent(ds):
    html = await page(ds, "/-/obelisk", q="coverage gaps")
    notes = re.findall(r'<span class="ob-parent">(.*?)</span>', html)
    assert notes == [
        'Explore subagent of <a href="/-/obelisk/session/eb000000-0000-4000-8000-000000000001">'
        "Spawn a coverage analysis agent in the background and wait for the result.</a>"
    ]
    # The compaction agent of fa812bfe…: its parent's own log is not in the corpus, so no note.
    html = await page(ds, "/-/obelisk", q="detailed summary conversation")
    assert "/-/obelisk/session/fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-acompact-70d8e7" in html
    assert 'class="ob-parent"' not in html


@pytest.mark.asyncio
@pytest.mark.parametrize("kind, notice", [
    (None, None),
    ("load", "A first ingest is still loading: searches miss the messages it has not indexed yet."),
    ("reload", "The logs are being read again (a new parser or new redaction rules): searches find nothing "
               "until that ingest ends and indexes every message."),
], ids=["none", "load", "reload"])
async def test_search_and_overview_say_when_an_ingest_defers_indexing(tmp_path, web_db, kind, notice):
    db = tmp_path / "obelisk.db"
    shutil.copy(web_db, db)
    if kind:
        conn = sqlite3.connect(db)
        conn.execute("INSERT INTO obelisk_state (key, value) VALUES ('cold_load', ?)",
                     [json.dumps({"schema": [], "messages": 0, "tool_results": 0, **({"reload": True} if kind == "reload" else {})})])
        conn.commit()
        conn.close()
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    for url, params in (("/-/obelisk", {"q": "zebrafish"}), ("/-/obelisk/overview", {})):
        html = await page(datasette, url, **params)
        notices = re.findall(r'<p class="ob-notice" role="status">(.*?)</p>', html)
        assert notices == ([notice] if notice else [])


@pytest.mark.asyncio
async def test_search_page_cursor_paging(ds):
    first = await page(ds, "/-/obelisk", q="the")
    next_links = re.findall(r'<a rel="next" href="([^"]+)"', first)
    assert next_links
    second = await page(ds, "/-/obelisk" + unescape(next_links[0]))
    sessions = lambda html: set(re.findall(r'<h3><a href="/-/obelisk/session/([^"]+)"', html))  # noqa: E731
    assert sessions(first) and sessions(second) and not sessions(first) & sessions(second)
    assert "« First page" in second


def write_sessions(folder, names, text: str, hour: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, name in enumerate(names):
        line = {"type": "user", "uuid": f"u-{name}", "sessionId": name, "timestamp": f"2026-03-05T{hour:02d}:{n:02d}:00.000Z",
                "message": {"role": "user", "content": text}}
        (folder / f"{name}.jsonl").write_text(json.dumps(line) + "\n")


async def served_sessions(tmp_path, names, text: str, hour: int):
    """``names`` written as one-line sessions saying ``text``, ingested and served:
    ``(datasette, folder)``."""
    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-tmp-paging"
    write_sessions(folder, names, text, hour)
    ingest(tmp_path / "paging.db", {"claude": tmp_path / "claude"})
    datasette = make_datasette(tmp_path / "paging.db")
    await datasette.invoke_startup()
    return datasette, folder


def listed(html: str) -> list[str]:
    """The sessions a search page lists, in order."""
    return [unquote(href) for href in re.findall(r'<h3><a href="/-/obelisk/session/([^"]+)"', html)]


async def zanzibar_paging(tmp_path, ranking: str):
    """30 sessions saying "zanzibar" once, served, and the first page of a search for it (20 of
    them, ``raw``: every match ranked): ``(datasette, asked, folder, old, first, following)``."""
    asked = {"q": "zanzibar", **({"mode": "raw"} if ranking == "raw" else {})}
    old = [f"old-{n:02d}" for n in range(30)]
    datasette, folder = await served_sessions(
        tmp_path, old, "the zanzibar harbour was quiet today while we refactored the parser module", 10)
    first = await page(datasette, "/-/obelisk", **asked)
    assert len(listed(first)) == 20 and set(listed(first)) <= set(old)
    [following] = [unescape(link) for link in re.findall(r'<a rel="next" href="([^"]+)"', first)]
    return datasette, asked, folder, old, first, following


@pytest.mark.asyncio
@pytest.mark.parametrize("ranking", ["messages", "bags", "raw"])
async def test_search_pages_list_each_session_once_while_sessions_are_added(tmp_path, monkeypatch, ranking):
    # Sessions stored after a search's first page (here ranked above every older one) are not
    # on its later pages: those list exactly the rest of the sessions there were, and say
    # how many new ones match, with a link to start over.
    from datasette_obelisk.query import search
    from datasette_obelisk.store.ingest import ingest

    if ranking == "bags":  # ranked by the session bags, not by every matching message
        monkeypatch.setattr(search, "EXACT_MAX", 0)
    datasette, asked, folder, old, first, following = await zanzibar_paging(tmp_path, ranking)
    shown = listed(first)

    new = [f"new-{n:02d}" for n in range(15)]
    write_sessions(folder, new, "zanzibar zanzibar zanzibar", 11)
    ingest(tmp_path / "paging.db", {"claude": tmp_path / "claude"})
    assert set(listed(await page(datasette, "/-/obelisk", **asked))) == set(new) | set(shown[:5])

    second = await page(datasette, "/-/obelisk" + following)
    assert sorted(listed(second)) == sorted(set(old) - set(shown))
    assert 'rel="next"' not in second
    notices = re.findall(r'<p class="ob-notice ob-added" role="status">(.*?)</p>', second)
    again = "?q=zanzibar&amp;mode=raw" if ranking == "raw" else "?q=zanzibar"
    assert notices == ["15 new sessions match since this search started; these pages list only the sessions "
                       f'there were then: <a href="{again}">start over</a>.']
    assert "ob-added" not in first
    # the cursor is as opaque as before: edited or of another shape, it is refused
    cursor = parse_qs(urlsplit(following).query)["cursor"][0]
    body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    from datasette_obelisk.query.cursors import encode_cursor

    conn = sqlite3.connect(tmp_path / "paging.db")
    for pos in ([20], [20, -1], ["20", 1], [20, 1, 1], {"p": 20}, None):
        forged = encode_cursor(conn, "sessions", body["fp"], body["gen"], pos)
        assert "SESSION_QUERY_INVALID_CURSOR" in await page(datasette, "/-/obelisk", 400, **asked, cursor=forged)
    conn.close()
    edited = dict(body, pos={**body["pos"], "bound": body["pos"]["bound"] + 15})
    tampered = base64.urlsafe_b64encode(json.dumps(edited).encode()).decode().rstrip("=")
    assert "SESSION_QUERY_INVALID_CURSOR" in await page(datasette, "/-/obelisk", 400, **asked, cursor=tampered)


@pytest.mark.asyncio
@pytest.mark.parametrize("ranking", ["messages", "bags", "raw"])
async def test_search_pages_list_each_session_once_while_sessions_grow(tmp_path, monkeypatch, ranking):
    # A session the first page did not show that gains matching lines meanwhile (here enough
    # to rank it first) moves neither itself nor the sessions after it: the later pages list
    # exactly the rest of the sessions, none of the first page's again. (Ranked by the session
    # bags, a frequent word's, its grown bag ranks it anew: it is placed where it was.)
    from datasette_obelisk.query import search
    from datasette_obelisk.store.ingest import ingest

    if ranking == "bags":
        monkeypatch.setattr(search, "EXACT_MAX", 0)
    datasette, asked, folder, old, first, following = await zanzibar_paging(tmp_path, ranking)
    shown = listed(first)

    grown = sorted(set(old) - set(shown))[0]
    line = {"type": "user", "uuid": f"u-{grown}-2", "parentUuid": f"u-{grown}", "sessionId": grown,
            "timestamp": "2026-03-05T12:00:00.000Z", "message": {"role": "user", "content": "zanzibar " * 12}}
    with open(folder / f"{grown}.jsonl", "a") as log:
        log.write(json.dumps(line) + "\n")
    ingest(tmp_path / "paging.db", {"claude": tmp_path / "claude"})
    assert listed(await page(datasette, "/-/obelisk", **asked))[0] == grown  # (a new search ranks it first)

    second = await page(datasette, "/-/obelisk" + following)
    assert sorted(listed(second)) == sorted(set(old) - set(shown))


@pytest.mark.asyncio
async def test_recent_session_pages_keep_the_first_page_s_order_while_sessions_grow(tmp_path):
    # Before a query the page lists sessions by their last activity. A session the first page
    # did not list that gets a line meanwhile (a new list shows it first), one it listed that
    # does, and a session stored since: the next pages list exactly the rest, in the first
    # page's order, none twice.
    from datasette_obelisk.store.ingest import ingest

    old = [f"old-{n:02d}" for n in range(12)]
    datasette, folder = await served_sessions(tmp_path, old, "a quiet harbour", 10)
    newest_first = old[::-1]
    first = await page(datasette, "/-/obelisk", limit="5")
    assert listed(first) == newest_first[:5]

    def append(name: str, minute: int) -> None:
        line = {"type": "user", "uuid": f"u-{name}-{minute}", "parentUuid": f"u-{name}", "sessionId": name,
                "timestamp": f"2026-03-06T12:{minute:02d}:00.000Z", "message": {"role": "user", "content": "more"}}
        with open(folder / f"{name}.jsonl", "a") as log:
            log.write(json.dumps(line) + "\n")

    append(newest_first[7], 1)
    append(newest_first[1], 2)
    write_sessions(folder, ["new-00"], "a new one", 13)
    ingest(tmp_path / "paging.db", {"claude": tmp_path / "claude"})
    assert listed(await page(datasette, "/-/obelisk", limit="3")) == [newest_first[1], newest_first[7], "new-00"]
    pages = [first]
    while following := re.findall(r'<a rel="next" href="([^"]+)"', pages[-1]):
        pages.append(await page(datasette, "/-/obelisk" + unescape(following[0])))
        if len(pages) == 2:
            append(newest_first[11], 3)  # grows between the second page and the third
            ingest(tmp_path / "paging.db", {"claude": tmp_path / "claude"})
    assert [listed(html) for html in pages] == [newest_first[:5], newest_first[5:10], newest_first[10:]]


@pytest.mark.asyncio
async def test_search_reports_bad_input_without_crashing(ds):
    html = await page(ds, "/-/obelisk", 400, q="AND (", mode="raw", source="claude")
    assert "SESSION_QUERY_INVALID_QUERY" in html
    form = re.search(r'<form class="ob-search" action="/-/obelisk" method="get" role="search" data-ob-sync>(.*?)</form>', html, re.S)
    assert form, "the error page keeps the search form"
    assert '<input type="search" name="q" value="AND (" ' in form.group(1)
    assert '<input type="radio" name="mode" value="raw" checked>' in form.group(1)
    assert '<input type="hidden" name="source" value="claude">' in form.group(1)
    dated = await page(ds, "/-/obelisk", 400, q="zebrafish", **{"from": "yesterday"})
    assert '<input type="search" name="q" value="zebrafish" ' in dated
    assert "from must be a day written YYYY-MM-DD, not &#39;yesterday&#39;" in dated
    # (ten characters that date.fromisoformat reads too: an ISO week day, a basic date with a tail)
    for bad in ("2026-02-30", "2026-3-1", "20260301", "2026-W01-1", "20260301xx", "２０２６-03-01"):
        assert "must be a day written YYYY-MM-DD" in await page(ds, "/-/obelisk", 400, q="zebrafish", to=bad)
    assert "must be a day" in await page(ds, "/-/obelisk", 400, **{"from": "bad"})  # with no query too
    assert 'name="q"' not in await page(ds, "/-/obelisk/session/no-such-session", 404)
    await page(ds, "/-/obelisk", q='foo-bar "c++ /x.py')


@pytest.mark.asyncio
async def test_transcript_folds_tool_calls_with_outcome_and_preview(ds):
    html = await page(ds, f"/-/obelisk/session/{XSS_SESSION}")
    tool = re.search(r'<details class="ob-tool" id="tool-toolu_xss1">\s*<summary[^>]*>(.*?)</summary>', html, re.S)
    assert tool and "Bash" in tool.group(1) and "failed" in tool.group(1) and "echo" in tool.group(1)
    # the result line is folded into its call: no entry of its own, its anchor on the call
    assert not re.search(r'<li[^>]*id="m4"', html) and html.count('id="m4"') == 1 and '<summary id="m4">' in html
    assert "/-/obelisk/api/raw?uuid=xss-a1&limit=10000000" in links(html)
    assert f"/-/obelisk/session/{XSS_SESSION}/lineage" in links(html)


@pytest.mark.asyncio
async def test_transcript_folds_tool_calls_on_mixed_lines(ds):
    html = await page(ds, f"/-/obelisk/session/{FORKED}")
    entry = re.search(r'<li class="ob-entry role-assistant kind-tool surface-current" id="m8">(.*?)</li>', html, re.S)
    assert entry, "line 8 (text and a Write call) is a tool entry"
    body = entry.group(1)
    assert re.findall(r'<div class="ob-text">(.*?)</div>', body, re.S) == ["Good choice for stable sorting! Here&#39;s MergeSort:"]
    summary = re.search(r'<details class="ob-tool" id="tool-toolu_f002">\s*<summary[^>]*>(.*?)</summary>', body, re.S).group(1)
    assert '<span class="name">Write</span>' in summary and '<span class="ob-outcome succeeded">succeeded</span>' in summary
    assert '<span class="preview">/home/testuser/fork-project/mergesort.py</span>' in summary
    assert "File created successfully" in body and not re.search(r'<li[^>]*id="m9"', html)  # the result line is folded into the call
    shadowed = await page(ds, f"/-/obelisk/session/{FORKED}", shadowed="1")
    assert [c for c in ("toolu_f001", "toolu_f002", "toolu_f003") if f'id="tool-{c}"' in shadowed] == [
        "toolu_f001", "toolu_f002", "toolu_f003"
    ]


def tool_links(html: str) -> list[str]:
    return [href for href in links(html) if "#tool-" in href]


async def anchors_on(ds, url: str, seen: dict) -> set[str]:
    if url not in seen:
        seen[url] = set(re.findall(r'id="([^"]+)"', unescape(await page(ds, url))))
    return seen[url]


@pytest.mark.asyncio
async def test_every_tool_link_from_files_and_failures_reaches_its_anchor(ds, web_db):
    paths = [path for (path,) in rows(web_db, "SELECT DISTINCT path FROM tool_call_files ORDER BY path")]
    sources = [await page(ds, "/-/obelisk/files", path=path) for path in paths]
    sources.append(await page(ds, "/-/obelisk/failures", limit="1000"))
    checked, seen = [], {}
    for href in (href for html in sources for href in tool_links(html)):
        target = urlsplit(href)
        anchor = unquote(target.fragment)
        assert anchor in await anchors_on(ds, f"{target.path}?{target.query}", seen), href
        checked.append(anchor)
    assert {"tool-toolu_f001", "tool-toolu_f002", "tool-toolu_f003", "tool-toolu_xss1"} <= set(checked)
    quicksort = await page(ds, "/-/obelisk/files", path="/home/testuser/fork-project/quicksort.py")
    # each names its call, not the page it is on now (the page then shows a rewound branch for the first)
    assert tool_links(quicksort) == [f"/-/obelisk/session/{FORKED}?call=toolu_f001#tool-toolu_f001"]
    mergesort = await page(ds, "/-/obelisk/files", path="/home/testuser/fork-project/mergesort.py")
    assert tool_links(mergesort) == [f"/-/obelisk/session/{FORKED}?call=toolu_f00{n}#tool-toolu_f00{n}" for n in (2, 3)]


@pytest.mark.asyncio
async def test_transcript_rewinds_compactions_and_subagents(ds, web_db):
    forked = await page(ds, f"/-/obelisk/session/{FORKED}")
    assert "on a rewound branch" in forked
    # "show" opens the page that starts with the branch, also without JavaScript
    first = re.search(r"on a rewound branch \(#(\d+)", forked).group(1)
    assert f'/-/obelisk/session/{FORKED}?start={first}&amp;shadowed=1#m{first}">show</a>' in forked
    assert "on a rewound branch" not in await page(ds, f"/-/obelisk/session/{FORKED}", shadowed="1")
    assert "· rewound" in await page(ds, f"/-/obelisk/session/{FORKED}", shadowed="1")
    compacted = await page(ds, f"/-/obelisk/session/{COMPACTED}")
    # one marker for the boundary (#8) and the summary right after it (#9), which has the anchor of its own
    assert compacted.count("Context compacted here") == 1
    assert re.search(r'<li class="ob-marker" id="m8">⟲ Context compacted here <a href="[^"]+/8\?id=[^"]+">#8</a> — the summary '
                     r'that replaced it: <a href="[^"]+/9\?id=[^"]+">#9</a></li>\s*<li class="ob-entry role-user" id="m9">'
                     r'<details><summary>Compaction summary</summary>', compacted)
    assert "Conversation compacted" not in compacted  # (the boundary's own words are no summary)
    # a page that opens with the summary (its boundary ends the page before) adds no second marker
    from datasette_obelisk.web import pages

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pages, "TRANSCRIPT_PAGE", 8)
        first = await page(ds, f"/-/obelisk/session/{COMPACTED}")
        second = await page(ds, f"/-/obelisk/session/{COMPACTED}", start="9")
    assert first.count("Context compacted here") == 1 and "Context compacted here" not in second
    assert '<li class="ob-entry role-user" id="m9"><details><summary>Compaction summary</summary>' in second
    # thinking whose text the log does not keep (Claude Code 2.1.x keeps its signature alone): said so, no empty fold
    [(empty_thinking,)] = rows(web_db, "SELECT COUNT(*) FROM messages WHERE session_id = ? AND content_type = 'thinking' "
                                       "AND text = '' AND visibility = 'visible'", [WITH_SUBAGENTS])
    agents = await page(ds, f"/-/obelisk/session/{WITH_SUBAGENTS}")
    assert empty_thinking and agents.count("(the log does not record this thinking)") == empty_thinking
    assert not re.search(r"<summary class=\"ob-muted\">Thinking</summary>\s*</details>", agents)


UNARCHIVED_AGENTS = {
    WITH_SUBAGENTS: ["a4ca7529859c158c2", "a52886dc180afb356", "a6aa8ad077d9ea083", "ab1e6e141221a29ab", "aef063ba534d73153"],
}


def unarchived_agents(html: str) -> list[str]:
    return sorted(re.findall(r'<div class="ob-child ob-unarchived" data-agent-id="([^"]+)">', html))


async def session_links_resolve(ds, html: str) -> list[str]:
    """The sessions ``html`` links to; each must be a page, not a 404."""
    targets = sorted({urlsplit(h).path for h in links(html) if h.startswith("/-/obelisk/session/")})
    for target in targets:
        await page(ds, target)
    return targets


@pytest.mark.asyncio
async def test_subagents_link_only_when_their_session_is_stored(ds):
    transcript = await page(ds, f"/-/obelisk/session/{WITH_SUBAGENTS}")
    assert re.search(
        rf'Subagent \(general-purpose\):\s*<a href="/-/obelisk/session/{WITH_SUBAGENTS}:agent-a36efb2a1231c41e2">', transcript
    )
    for session, agents in UNARCHIVED_AGENTS.items():
        transcript = await page(ds, f"/-/obelisk/session/{session}")
        lineage = await page(ds, f"/-/obelisk/session/{session}/lineage")
        assert unarchived_agents(transcript) == unarchived_agents(lineage) == agents
        for agent in agents:
            assert f"/-/obelisk/session/{session}:agent-{agent}" not in await session_links_resolve(ds, transcript + lineage)
    # A 2.0 agent file under a fixture name is linked by its lines.
    event = await page(ds, "/-/obelisk/event/sidechain_main/1")
    assert unarchived_agents(event) == [] and "not archived" not in event
    agent = "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358:agent-e1c84ba5"
    assert f"/-/obelisk/session/{agent}" in await session_links_resolve(ds, event)


@pytest.mark.asyncio
async def test_lineage_shows_the_forest_and_event_chains(ds):
    child = f"{WITH_SUBAGENTS}:agent-a36efb2a1231c41e2"
    html = await page(ds, f"/-/obelisk/session/{child}/lineage")
    assert f"/-/obelisk/session/{WITH_SUBAGENTS}" in links(html)
    assert '<li class="current">' in html and "subagent" in html
    event = await page(ds, f"/-/obelisk/session/{XSS_SESSION}/lineage", seq="4")
    assert "Parent chain" in event and "Replacement chain" in event
    # (each link names its event by its id too: the same event after an ingest renumbers the session)
    assert [f"/-/obelisk/event/{XSS_SESSION}/{n}?id={uuid}" in links(event)
            for n, uuid in ((1, "xss-u1"), (2, "xss-a1"), (3, "xss-a2"))] == [True] * 3


@pytest.mark.asyncio
async def test_event_page(ds):
    html = await page(ds, f"/-/obelisk/event/{XSS_SESSION}/3")
    assert "tool/call" in html and f"/-/obelisk/session/{XSS_SESSION}/lineage?seq=3&id=xss-a2#event" in links(html)
    await page(ds, f"/-/obelisk/event/{XSS_SESSION}/99", 404)
    await page(ds, f"/-/obelisk/event/{XSS_SESSION}/x", 400)


@pytest.mark.asyncio
async def test_files_failures_memories_overview(ds, web_db):
    files = await page(ds, "/-/obelisk/files", contains="types")
    assert "/-/obelisk/files?path=%2Fpath%2Fto%2FDemo%2Ftypes%2Findex.ts" in files
    # A plain substring in any case, of any length: no LIKE wildcards, no pattern limit.
    assert "%2Findex.ts" in await page(ds, "/-/obelisk/files", contains="DEMO/Types/")
    assert "%2Findex.ts" not in await page(ds, "/-/obelisk/files", contains="Demo%index")
    assert "%2Findex.ts" not in await page(ds, "/-/obelisk/files", contains="x" * 60_000)
    history = await page(ds, "/-/obelisk/files", path="/path/to/Demo/types/index.ts")
    assert "Write" in history and "#tool-" in history
    assert "Every tool call that touched this path" in history and "Calls 1–" not in history and "Later calls" not in history
    failures = await page(ds, "/-/obelisk/failures")
    assert "The zebrafish command failed." in failures
    # What came next says what kind of message each is, beside its role.
    roles = set(re.findall(r'<span class="role">([^<]*)</span>', await page(ds, "/-/obelisk/failures", limit="1000")))
    assert {"assistant", "user", "assistant · tool use", "user · tool result"} <= roles
    memories = await page(ds, "/-/obelisk/memories", q="zebrafish")
    assert "How zebrafish commands fail" in memories and "Remember a file" not in memories
    overview = await page(ds, "/-/obelisk/overview")
    assert overview.count('<svg class="chart"') == 3 and "Sessions started per" in overview
    assert "claude" in overview and "codex" in overview
    [(last,)] = rows(web_db, "SELECT max(ingested_at) FROM source_files")
    assert (
        f"Last ingest {last[:16].replace('T', ' ')} UTC, from 29 log files; "  # (one of them the prompt log)
        '<a href="/obelisk/ingest_errors">4 lines could not be read</a>.'
    ) in overview
    assert ('<a href="/obelisk/browse_prompts?in_transcript=0">1 session</a> known only from the agents\' '
            "prompt logs") in overview


@pytest.mark.asyncio
async def test_the_overview_source_links_list_that_sources_recent_sessions(ds, web_db):
    overview = await page(ds, "/-/obelisk/overview")
    assert "/-/obelisk?source=codex" in links(overview)
    recent = await page(ds, "/-/obelisk", source="codex")
    listed = [unquote(href.rsplit("/", 1)[1]) for href in links(recent) if href.startswith("/-/obelisk/session/")]
    top_level = rows(web_db, "SELECT id FROM sessions WHERE source = 'codex' AND COALESCE(relationship, '') "
                             "NOT IN ('subagent', 'workflow') ORDER BY ended_at DESC LIMIT 15")
    assert listed == [session_id for (session_id,) in top_level] and len(listed) > 3
    assert "No session matches these filters." in await page(ds, "/-/obelisk", source="codex", project="nowhere")
    # The overview counts the sessions its links list: agents whose parent is stored are not among them.
    counted = dict(re.findall(r'<a href="/-/obelisk\?source=(\w+)[^"]*">\w+</a></td><td class="num">([\d,]+)<', overview))
    for source, count in counted.items():
        listed = (await ds.client.get(f"/obelisk/obelisk_sessions.json?source={source}&limit=1000&_shape=array")).json()
        assert int(count.replace(",", "")) == len(listed), source
    assert set(counted) >= {"claude", "codex"}
    by_project = re.findall(r'<a href="/-/obelisk\?project=([^&"]+)&amp;source=(\w+)[^"]*">[^<]*</a></td><td>\w+</td><td class="num">([\d,]+)<', overview)
    assert len(by_project) > 5
    for project, source, count in by_project:
        listed = await page(ds, "/-/obelisk", project=unquote(project), source=source, limit="1000")
        assert len({href for href in links(listed) if href.startswith("/-/obelisk/session/") and "/lineage" not in href
                    and "#" not in href}) == int(count.replace(",", "")), (project, source)


def entry_seqs(entry: dict) -> list[int]:
    """The lines a transcript entry shows: its own, and a compaction's summary right after it."""
    summary = entry.get("summary")
    return [entry["message"]["seq"], *([summary["seq"]] if summary and summary is not entry["message"] else [])]


@pytest.mark.parametrize("limit", [2, 3, 5])
def test_a_transcript_read_page_by_page_lists_what_one_page_lists(web_db, limit):
    """A tool result whose call is on an earlier page is shown with that call,
    not again as a loose message at the top of the next page."""
    from datasette_obelisk.query import transcript

    conn = sqlite3.connect(web_db)
    conn.row_factory = sqlite3.Row

    def seqs(page):
        return [seq for e in page["entries"] if "message" in e for seq in entry_seqs(e)]

    split = 0
    for (session_id,) in conn.execute("SELECT id FROM sessions ORDER BY id").fetchall():
        whole = seqs(transcript.transcript(conn, session_id, limit=5000))
        paged, starts, start = [], [], 1
        while start:
            page_ = transcript.transcript(conn, session_id, start=start, limit=limit)
            assert page_["previous_start"] == (starts[-1] if starts else None), session_id  # back the same way
            paged += seqs(page_)
            starts.append(start)
            start = page_["next_start"]
        assert paged == whole, session_id
        split += len(whole) > limit
    assert split > 10


@pytest.mark.asyncio
async def test_a_transcript_page_links_back_and_its_toggles_keep_it(ds, web_db, monkeypatch):
    from datasette_obelisk.web import pages

    monkeypatch.setattr(pages, "TRANSCRIPT_PAGE", 50)
    session = "ef958aa1-0e93-49f0-bb71-150f63befcd1"  # 162 lines, seq 1..162
    # (the output of a call on an earlier line is shown with it: not a line of its own on a page)
    outputs = {seq for (seq,) in rows(
        web_db, "SELECT rm.seq FROM tool_results r JOIN tool_calls c ON c.id = r.tool_use_id "
        "JOIN messages rm ON rm.uuid = r.message_uuid JOIN messages cm ON cm.uuid = c.message_uuid "
        "WHERE rm.session_id = ? AND cm.session_id = ? AND rm.content_type = 'tool_result' AND cm.seq < rm.seq",
        [session, session])}
    previous = [seq for seq in range(1, 120) if seq not in outputs][-50]
    assert 1 < previous < 70
    hrefs = [unescape(href) for href in links(await page(ds, f"/-/obelisk/session/{session}", start="120"))]
    base = f"/-/obelisk/session/{session}?"
    assert f"{base}start={previous}" in hrefs and f"{base}start=170" not in hrefs  # previous: 50 lines before 120
    assert f"{base}start=120&meta=1" in hrefs and f"{base}start=120&log=1" in hrefs
    assert f"{base}start=120&shadowed=1" not in hrefs  # (no rewound branch to show)
    forked = [unescape(href) for href in links(await page(ds, f"/-/obelisk/session/{FORKED}", start="3"))]
    assert f"/-/obelisk/session/{FORKED}?start=3&shadowed=1" in forked
    second = [unescape(href) for href in links(await page(ds, f"/-/obelisk/session/{session}", start="40"))]
    assert f"{base}start=1" not in second and base[:-1] in second  # the page before starts the transcript


@pytest.mark.asyncio
async def test_a_transcript_page_names_the_lines_it_shows_in_its_title(ds, web_db, monkeypatch):
    from datasette_obelisk.web import pages
    from datasette_obelisk.web.template_helpers import TemplateHelpers

    monkeypatch.setattr(pages, "TRANSCRIPT_PAGE", 50)
    session = "ef958aa1-0e93-49f0-bb71-150f63befcd1"  # 162 lines, seq 1..162
    [(title,)] = rows(web_db, "SELECT title FROM sessions WHERE id = ?", [session])
    title = TemplateHelpers.in_title(title, 80)  # (cut short: a long title)

    def window_title(html):
        return unescape(re.search(r"<title>(.*?)</title>", html, re.S).group(1))

    first = await page(ds, f"/-/obelisk/session/{session}")
    later = await page(ds, f"/-/obelisk/session/{session}", start="120")
    next_start = int(re.search(r'rel="next" href="[^"]*start=(\d+)', first).group(1))
    assert window_title(first) == f"{title} — lines 1–{next_start - 1} · Obelisk"
    assert 'rel="next"' not in later  # (the last page: its last line is the session's)
    assert window_title(later) == f"{title} — lines 120–162 · Obelisk"
    monkeypatch.setattr(pages, "TRANSCRIPT_PAGE", 500)  # one page: the title alone
    assert window_title(await page(ds, f"/-/obelisk/session/{session}")) == f"{title} · Obelisk"


@pytest.mark.asyncio
async def test_a_transcript_page_past_the_end_names_the_session_s_last_line(ds):
    session = "ef958aa1-0e93-49f0-bb71-150f63befcd1"  # 162 lines, seq 1..162
    past = await page(ds, f"/-/obelisk/session/{session}", start="1000")
    assert re.findall(r'<li class="ob-empty">(.*?)</li>', past) == ["No line from #1,000: the session's last line is #162."]
    assert f"/-/obelisk/session/{session}" in [unescape(href) for href in links(past)]  # « From the start
    last = await page(ds, f"/-/obelisk/session/{session}", start="120")
    assert re.findall(r'<li class="ob-empty">(.*?)</li>', last) == [] and "lines 120–162" in last


def empty_item(html: str) -> tuple[str, list[str]]:
    """The text of a transcript's one ``ob-empty`` entry and the links it holds."""
    [item] = re.findall(r'<li class="ob-empty">(.*?)</li>', html, re.S)
    return unescape(re.sub(r"<[^>]+>", "", item)), links(item)


@pytest.mark.asyncio
async def test_a_page_starting_at_a_hidden_last_line_says_what_it_is(ds):
    session = "ef958aa1-0e93-49f0-bb71-150f63befcd1"  # 162 lines, #162 injected
    text, hrefs = empty_item(await page(ds, f"/-/obelisk/session/{session}", start="162"))
    assert text == ("No line from #162 is shown in this view: #162 is an injected line, the session's last line. "
                    "Show injected lines or go back to the lines before it.")
    assert hrefs == [f"/-/obelisk/session/{session}?start=162&meta=1", f"/-/obelisk/session/{session}"]
    shown = await page(ds, f"/-/obelisk/session/{session}", start="162", meta="1")
    assert 'id="m162"' in shown and 'class="ob-empty"' not in shown
    text, hrefs = empty_item(await page(ds, "/-/obelisk/session/small", start="55", shadowed="1"))
    assert text == ("No line from #55 is shown in this view: #55 is a log-only line, the session's last line. "
                    "Show log-only lines or go back to the lines before it.")
    assert hrefs == ["/-/obelisk/session/small?start=55&shadowed=1&log=1", "/-/obelisk/session/small?shadowed=1"]


def hidden_tail(folder) -> Path:
    """A Claude session of a prompt and its answer, then a log-only line, an injected
    prompt and another log-only line."""
    session = "hidden-tail-0001"
    base = {"sessionId": session, "cwd": "/tmp/tail", "version": "2.1.0", "gitBranch": "main"}
    records = [
        {"type": "user", "message": {"role": "user", "content": "list the files"}},
        {"type": "assistant", "message": {"role": "assistant", "model": "claude-test", "content": [{"type": "text", "text": "Done."}]}},
        {"type": "system", "subtype": "turn_duration", "durationMs": 1200, "isMeta": False},
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "<local-command-caveat>Caveat</local-command-caveat>"}},
        {"type": "system", "subtype": "turn_duration", "durationMs": 900, "isMeta": False},
    ]
    lines = [json.dumps({**base, **record, "uuid": f"tail-{n}", "parentUuid": f"tail-{n - 1}" if n else None,
                         "timestamp": f"2026-03-01T10:00:{n:02d}.000Z"}) for n, record in enumerate(records)]
    logs = folder / "claude" / "projects" / "-tmp-tail"
    logs.mkdir(parents=True)
    (logs / f"{session}.jsonl").write_text("\n".join(lines) + "\n")
    from datasette_obelisk.store.ingest import ingest

    ingest(folder / "tail.db", {"claude": folder / "claude"})
    return folder / "tail.db"


@pytest.mark.asyncio
async def test_a_page_of_hidden_lines_counts_them_by_the_view_that_shows_them(tmp_path):
    datasette = make_datasette(hidden_tail(tmp_path))
    url = "/-/obelisk/session/hidden-tail-0001"
    assert re.findall(r'id="m(\d+)"', await page(datasette, url)) == ["1", "2"]
    text, hrefs = empty_item(await page(datasette, url, start="3"))
    assert text == ("No line from #3 is shown in this view: #3–#5 are 2 log-only lines and 1 injected line, "
                    "the session's last lines. Show log-only and injected lines or go back to the lines before it.")
    assert hrefs == [f"{url}?start=3&meta=1&log=1", url]
    text, hrefs = empty_item(await page(datasette, url, start="5", meta="1"))  # (the view's options kept)
    assert text == ("No line from #5 is shown in this view: #5 is a log-only line, the session's last line. "
                    "Show log-only lines or go back to the lines before it.")
    assert hrefs == [f"{url}?start=5&meta=1&log=1", f"{url}?meta=1"]


def test_every_message_s_transcript_link_reaches_its_anchor(web_db):
    """The event page's "In the transcript": the page holding the message,
    with the options that list it, at ``#m<seq>`` or its call's ``#tool-``."""
    from datasette_obelisk.query import transcript

    conn = sqlite3.connect(web_db)
    conn.row_factory = sqlite3.Row
    reached, kinds = 0, set()
    for session_id, seq in conn.execute("SELECT session_id, seq FROM messages ORDER BY session_id, seq").fetchall():
        where = transcript.message_anchor(conn, session_id, seq, limit=3)
        if where is None:
            continue
        shown = transcript.transcript(conn, session_id, start=where["start"] or 1, limit=3, rewound=where["rewound"],
                                      meta=where["meta"], log=where["log"])
        anchors = {f"m{seq}" for e in shown["entries"] if "message" in e for seq in entry_seqs(e)}
        anchors |= {f"tool-{c['id']}" for e in shown["entries"] if e["kind"] == "tool" for c in e["calls"]}
        assert where["anchor"] in anchors, (session_id, seq, where)
        reached += 1
        kinds.add(where["anchor"].split("-")[0][0] + str(bool(where["start"])))
    assert reached > 2000 and kinds == {"mTrue", "mFalse", "tTrue", "tFalse"}


@pytest.mark.asyncio
async def test_files_and_failures_say_how_many_there_are_and_page(ds, web_db, monkeypatch):
    from datasette_obelisk.web import pages

    monkeypatch.setattr(pages, "FILES_PAGE", 2)
    [(paths,)] = rows(web_db, "SELECT COUNT(DISTINCT path) FROM tool_call_files")
    first = await page(ds, "/-/obelisk/files")
    assert f"Paths 1–2 of {paths:,}, most touched first." in first
    assert "/-/obelisk/files?offset=2" in links(first)
    second = await page(ds, "/-/obelisk/files", offset="2")
    assert f"Paths 3–4 of {paths:,}" in second and "/-/obelisk/files" in links(second)
    listed = set(re.findall(r'files\?path=([^"&]+)"', first)) | set(re.findall(r'files\?path=([^"&]+)"', second))
    assert len(listed) == 4

    [(failed,)] = rows(web_db, "SELECT COUNT(*) FROM tool_results WHERE outcome = 'failed' OR is_error = 1")
    some = await page(ds, "/-/obelisk/failures", limit="2")
    assert f"The newest 2 of {failed:,}." in some and some.count('<li class="ob-result">') == 2
    assert "/-/obelisk/failures?limit=202" in links(some)
    [(claude,)] = rows(web_db, "SELECT COUNT(*) FROM tool_results tr JOIN sessions s ON s.id = tr.session_id "
                               "WHERE (outcome = 'failed' OR is_error = 1) AND s.source = 'claude'")
    assert f"of {claude:,}." in await page(ds, "/-/obelisk/failures", limit="1", source="claude")
    # A source no stored session has: the menu still shows it chosen, so the form keeps it.
    assert not rows(web_db, "SELECT 1 FROM sessions WHERE source = 'gemini'")
    assert "<option selected>gemini</option>" in await page(ds, "/-/obelisk/failures", source="gemini")
    # One session's failures say so, with a chip that lifts the filter; a session not stored is not found.
    [(title, in_session)] = rows(web_db, "SELECT s.title, COUNT(*) FROM tool_results tr JOIN sessions s "
                                         "ON s.id = tr.session_id WHERE (outcome = 'failed' OR is_error = 1) AND s.id = ?",
                                 [XSS_SESSION])
    one = await page(ds, "/-/obelisk/failures", sessionId=XSS_SESSION, source="claude")
    assert one.count('<li class="ob-result">') == in_session > 0
    [chip] = re.findall(r'<a class="ob-chip" href="([^"]+)"[^>]*>([^<]+)</a>', one)
    assert (chip[0], html.unescape(chip[1])) == ("/-/obelisk/failures?source=claude", f"Session: {title} ✕")
    assert "<script>" not in chip[1]
    missing = await ds.client.get("/-/obelisk/failures", params={"sessionId": "no-such-session"})
    assert missing.status_code == 404 and "no session &#39;no-such-session&#39;" in missing.text


def test_a_path_was_last_touched_at_its_latest_instant_whatever_the_offsets(tmp_path):
    from datasette_obelisk.query import dashboard
    from datasette_obelisk.query.readonly import connect_readonly
    from datasette_obelisk.store.ingest import ingest

    head = {"sessionId": "offsets", "cwd": "/tmp/off"}

    def read_at(n, at):
        return {**head, "type": "assistant", "uuid": f"a{n}", "parentUuid": None, "timestamp": at, "message": {
            "role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
                                              "input": {"file_path": "/tmp/off/a.py"}}]}}

    folder = tmp_path / "claude" / "projects" / "-tmp-off"
    folder.mkdir(parents=True)
    # 10:00 at +05:00 is 05:00 UTC: the later call is the one at 06:00Z.
    lines = [read_at(1, "2026-03-02T10:00:00.000+05:00"), read_at(2, "2026-03-02T06:00:00.000Z")]
    (folder / "offsets.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    found = dashboard.touched_files(connect_readonly(tmp_path / "o.db"))
    assert found == {"files": [{"path": "/tmp/off/a.py", "calls": 2, "sessions": 1,
                                "last_at": "2026-03-02T06:00:00.000Z"}], "total": 1}


@pytest.mark.asyncio
async def test_the_history_of_a_path_says_how_many_calls_there_are_and_pages(tmp_path):
    # The list of paths counts every call; a path's history lists 1,000 a page, oldest first, and says so.
    from datasette_obelisk.store.ingest import ingest

    head = {"sessionId": "hot-file-session", "cwd": "/tmp/hot"}
    lines = [{**head, "type": "user", "uuid": "hot-0", "parentUuid": None, "timestamp": "2026-03-02T10:00:00.000Z",
              "message": {"role": "user", "content": "read it again and again"}}]
    for n in range(1, 1002):
        lines.append({**head, "type": "assistant", "uuid": f"hot-{n}", "parentUuid": f"hot-{n - 1}",
                      "timestamp": f"2026-03-02T{10 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                      "message": {"role": "assistant", "content": [
                          {"type": "tool_use", "id": f"toolu_hot{n}", "name": "Read", "input": {"file_path": "/tmp/hot/a.py"}}]}})
    folder = tmp_path / "claude" / "projects" / "-tmp-hot"
    folder.mkdir(parents=True)
    (folder / "hot-file-session.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    ingest(tmp_path / "hot.db", {"claude": tmp_path / "claude"})
    ds = make_datasette(tmp_path / "hot.db")
    await ds.invoke_startup()
    listed = await page(ds, "/-/obelisk/files")
    assert '<td class="num">1,001</td>' in listed
    history = await page(ds, "/-/obelisk/files", path="/tmp/hot/a.py")
    assert "Calls 1–1,000 of the 1,001 tool calls that touched this path" in history
    assert history.count("<td><details>") == 1000 and "toolu_hot1000" in history and "toolu_hot1001" not in history
    assert "Earlier calls" not in history and "offset=1000" in history and "Later calls" in history
    later = await page(ds, "/-/obelisk/files", path="/tmp/hot/a.py", offset="1000")
    assert "Calls 1,001–1,001 of the 1,001 tool calls that touched this path" in later
    assert later.count("<td><details>") == 1 and "toolu_hot1001" in later and "toolu_hot1000" not in later
    assert "Earlier calls" in later and "Later calls" not in later
    past = await page(ds, "/-/obelisk/files", path="/tmp/hot/a.py", offset="5000")
    assert "No calls past the 1,001 that touched this path" in past
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.readonly import connect_readonly

    conn = connect_readonly(tmp_path / "hot.db")
    assert [h["toolCall"]["id"] for h in obelisk.file_history(conn, "/tmp/hot/a.py", {"limit": 2, "offset": 999})] == [
        "toolu_hot1000", "toolu_hot1001"]


@pytest.mark.asyncio
async def test_the_memories_page_says_how_many_memories_it_leaves_out(web_db, tmp_path):
    # The overview counts every memory; the page lists 200 (the newest, or those recalled best) and says so.
    from web_fixtures import copy_db

    from datasette_obelisk.query.memories import remember

    db = copy_db(web_db, tmp_path / "memories.db")
    notes = tmp_path / "notes"
    notes.mkdir()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        for n in range(201):
            (notes / f"note-{n}.md").write_text(f"# Note {n}\n")
            remember(conn, {"path": str(notes / f"note-{n}.md"), "summary": f"Wombat note {n}"}, memory_roots=[notes])
    finally:
        conn.close()
    [(active,)] = rows(db, "SELECT COUNT(*) FROM memories WHERE deleted_at IS NULL")
    assert active == 202  # the corpus's zebrafish memory too
    ds = make_datasette(db)
    await ds.invoke_startup()
    assert '<div class="value">202</div><div class="label">memories' in await page(ds, "/-/obelisk/overview")
    listed = await page(ds, "/-/obelisk/memories")
    assert "The newest 200 of 202 memories" in listed and listed.count("<tr>\n    <td><strong>") == 200
    recalled = await page(ds, "/-/obelisk/memories", q="wombat")
    assert "The 200 that match “wombat” best, of 201." in recalled
    few = await page(ds, "/-/obelisk/memories", q="zebrafish")
    assert "How zebrafish commands fail" in few and " best, of " not in few and "The newest" not in few


HUGE = "99999999999999999999999"
INT64_PAST = str(2**63)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "url,params,message",
    [
        (f"/-/obelisk/event/{SAMPLE}/{INT64_PAST}", {}, f"seq must be a 64-bit integer, not {INT64_PAST}"),
        (f"/-/obelisk/event/{SAMPLE}/-{INT64_PAST}1", {}, "seq must be a 64-bit integer"),
        (f"/-/obelisk/session/{SAMPLE}", {"start": HUGE}, f"start must be between 1 and {2**63 - 1}, not {HUGE}"),
        (f"/-/obelisk/session/{SAMPLE}", {"start": "0"}, f"start must be between 1 and {2**63 - 1}, not 0"),
        (f"/-/obelisk/session/{SAMPLE}/lineage", {"seq": HUGE}, "seq must be a 64-bit integer"),
        ("/-/obelisk/failures", {"limit": HUGE}, "limit must be a 64-bit integer"),
    ],
)
async def test_out_of_range_integers_are_a_400_page(ds, url, params, message):
    html = await page(ds, url, 400, **params)
    assert "<h1>Cannot show this</h1>" in html and message in html


@pytest.mark.asyncio
async def test_integer_bounds_are_inclusive(ds):
    await page(ds, f"/-/obelisk/event/{SAMPLE}/{2**63 - 1}", 404)
    response = await ds.client.get(f"/-/obelisk/api/session-query/event/{SAMPLE}/{INT64_PAST}")
    assert response.status_code == 400 and response.json()["error"]["code"] == "SESSION_QUERY_INVALID_WINDOW"


def numbers(cells: list[str]) -> list[int]:
    return [int(cell.replace(",", "")) for cell in cells]


@pytest.mark.asyncio
async def test_overview_counts_one_thing_per_label(ds, web_db):
    html = await page(ds, "/-/obelisk/overview")
    cards = dict((label, int(value.replace(",", ""))) for value, label in re.findall(
        r'<div class="value">([\d,]+)</div><div class="label">([^<]+)</div>', html))
    [(conversation,)] = rows(web_db, "SELECT SUM(message_count) FROM sessions")
    [(every_line,)] = rows(web_db, "SELECT COUNT(*) FROM messages")
    assert cards["conversation messages"] == conversation != every_line
    source_table, project_table = re.findall(r"<h2>By (?:source|project)</h2>\s*<div class=\"ob-scroll\"><table.*?</table>", html, re.S)
    assert sum(numbers(re.findall(r'</td><td class="num">[\d,]+</td><td class="num">([\d,]+)</td>', source_table))) == conversation
    assert sum(numbers(re.findall(r'<td class="num">[\d,]+</td><td class="num">([\d,]+)</td><td>', project_table))) == conversation
    chart = re.search(r"<svg[^>]*><title>Conversation messages per \w+, by source</title>.*?</svg>", html, re.S).group(0)
    charted = sum(numbers(re.findall(r"<title>\S+ \S+: (\d+)</title>", chart)))
    undated = re.search(r"([\d,]+) conversation messages? without a date (?:is|are) not charted", html)
    assert charted + (int(undated.group(1)) if undated else 0) == conversation
    # sessions as the card counts them (and lists them where it links): agents of stored sessions are no sessions
    from datasette_obelisk.query.dashboard import TOP_LEVEL

    chart = re.search(r"<svg[^>]*><title>Sessions started per \w+, by source</title>.*?</svg>", html, re.S).group(0)
    [(dated,)] = rows(web_db, f"SELECT COUNT(*) FROM sessions s WHERE {TOP_LEVEL} AND date(started_at) IS NOT NULL")
    [(every_session,)] = rows(web_db, "SELECT COUNT(*) FROM sessions")
    assert sum(numbers(re.findall(r"<title>\S+ \S+: (\d+)</title>", chart))) == dated <= cards["sessions"] < every_session
    assert re.search(r'<a class="ob-card" href="/[^"]*/obelisk_sessions\?limit=1000"><div class="value">[\d,]+</div><div class="label">sessions<', html)
    failures = await page(ds, "/-/obelisk/failures", limit="1000")
    listed = failures.count('<li class="ob-result">')
    blocked = failures.count('<span class="ob-outcome blocked">blocked</span>')  # (amber, as on a transcript)
    assert blocked and cards[f"failed tool calls ({blocked} blocked)"] == listed
    tools = re.search(r"<h2>Tools</h2>.*?</table>", html, re.S).group(0)
    [(names, calls, failed)] = rows(web_db, "SELECT COUNT(DISTINCT name), COUNT(*), (SELECT COUNT(*) FROM tool_results r "
                                            "JOIN tool_calls c ON c.id = r.tool_use_id WHERE outcome = 'failed' OR is_error = 1) "
                                            "FROM tool_calls")
    assert names > 15 and f"{names - 15} other tools</a>" in tools  # the table says what it leaves out
    assert sum(numbers(re.findall(r'<td class="num">([\d,]+)</td><td class="num">\d+</td></tr>', tools))) == calls
    # every failure: of a call, and one failed result in the corpus names no call it made
    assert failed == listed - 1 and '(call not in the logs)</a></td><td class="num">–</td><td class="num">1</td>' in tools
    assert sum(numbers(re.findall(r'<td class="num">(\d+)</td></tr>', tools))) == listed
    [(no_project,)] = rows(web_db, "SELECT COUNT(*) FROM sessions WHERE project IS NULL")
    if no_project:  # (no page lists the sessions of no project: not a link)
        assert "<tr><td>(none)</td>" in project_table


def test_overview_activity_reads_the_messages_once(web_db):
    """The chart's days, its first and last, dated and undated messages come from one pass over the
    conversation messages' own index (m044), not over the table, whose texts stand before the columns read."""
    from datasette_obelisk.query import dashboard

    conn = sqlite3.connect(web_db)
    statements = []
    conn.set_trace_callback(statements.append)
    dashboard.activity(conn)
    conn.set_trace_callback(None)
    plans = [" | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)) for sql in statements]
    conn.close()
    assert [plan for plan in plans if "messages" in plan] == [
        "SCAN messages USING INDEX messages_conversation | USE TEMP B-TREE FOR GROUP BY"
    ]


@pytest.mark.parametrize("timestamp", ["0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59Z",
                                       "2026-02-31T10:00:00.000Z"])
def test_overview_activity_leaves_out_days_outside_the_calendar(tmp_path, timestamp):
    from datasette_obelisk.query import dashboard
    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-p"
    folder.mkdir(parents=True)
    lines = [{"type": "user", "uuid": uuid, "sessionId": "s1", "timestamp": at, "message": {"role": "user", "content": "hi"}}
             for uuid, at in (("u1", timestamp), ("u2", "2026-05-01T10:00:00.000Z"))]
    (folder / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(tmp_path / "o.db")
    found = dashboard.activity(conn)
    conn.close()
    assert (found["buckets"], found["messages"]) == (["2026-05-01"], {"claude": [1]})


def test_overview_activity_counts_utc_days_as_session_times_are(tmp_path):
    # Both lines at 01:00 +05:00 on 2 May: 20:00 UTC on 1 May, the session's start as stored.
    from datasette_obelisk.query import dashboard
    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-p"
    folder.mkdir(parents=True)
    lines = [{"type": role, "uuid": f"u{n}", "sessionId": "s1", "timestamp": "2026-05-02T01:00:00+05:00",
              "message": {"role": role, "content": "hello" if role == "user" else [{"type": "text", "text": "hi"}]}}
             for n, role in enumerate(("user", "assistant"))]
    (folder / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(tmp_path / "o.db")
    found = dashboard.activity(conn)
    conn.close()
    assert (found["buckets"], found["sessions"], found["messages"]) == (["2026-05-01"], {"claude": [1]}, {"claude": [2]})


@pytest.mark.asyncio
async def test_unknown_session_is_a_404_page(ds):
    html = await page(ds, "/-/obelisk/session/no-such-session", 404)
    assert "OBELISK_NOT_FOUND" in html


@pytest.mark.asyncio
async def test_datasette_pages_link_to_ours(ds):
    home = await page(ds, "/")
    assert "/-/obelisk" in links(home)
    row = await page(ds, f"/obelisk/sessions/{XSS_SESSION}")
    assert f"/-/obelisk/session/{XSS_SESSION}?db=obelisk" in links(row)
    assert f"/-/obelisk/session/{XSS_SESSION}/lineage?db=obelisk" in links(row)
    sessions_table = await page(ds, "/obelisk/sessions")
    assert "/-/obelisk?db=obelisk" in links(sessions_table)
    searched = await page(ds, "/obelisk/messages", _search="zebrafish")
    assert "/-/obelisk?db=obelisk&q=zebrafish" in links(searched)  # the table's search carries over
    database = await page(ds, "/obelisk")
    assert "/-/obelisk/overview?db=obelisk" in links(database)


@pytest.mark.asyncio
async def test_pages_keep_the_database_in_their_links(ds):
    html = await page(ds, f"/-/obelisk/session/{XSS_SESSION}", db="obelisk")
    menu = {"/-/obelisk", "/-/obelisk/overview"}  # Datasette's global menu, the same on every page
    ours = [href for href in links(html) if href.startswith("/-/obelisk") and href not in menu]
    assert ours and all("db=obelisk" in href for href in ours)


@pytest.mark.asyncio
async def test_search_date_range(ds):
    inside = await page(ds, "/-/obelisk", q="zebrafish", **{"from": "2026-03-01", "to": "2026-03-01"})
    assert f"/-/obelisk/session/{XSS_SESSION}" in inside and "Date: 2026-03-01" in inside
    outside = await page(ds, "/-/obelisk", q="zebrafish", **{"from": "2026-03-02"})
    assert "No session matches" in outside
    await page(ds, "/-/obelisk", 400, q="zebrafish", **{"from": "yesterday"})


@pytest.mark.asyncio
async def test_several_databases(web_db, tmp_path):
    import sqlite_utils

    from datasette.app import Datasette

    from web_fixtures import copy_db

    plain = tmp_path / "plain.db"
    sqlite_utils.Database(plain)["things"].insert({"id": 1})
    second = copy_db(web_db, tmp_path / "second.db")
    ds = Datasette([str(plain), str(web_db), str(second)])
    await ds.invoke_startup()
    assert "Obelisk overview" not in await page(ds, "/plain")
    html = await page(ds, f"/-/obelisk/session/{XSS_SESSION}", db="second")
    assert f"/-/obelisk/session/{XSS_SESSION}/lineage?db=second" in links(html)
    await page(ds, "/-/obelisk", 404, db="plain")
    assert await ds.get_query("second", "obelisk_search") is not None
    assert await ds.get_query("plain", "obelisk_search") is None


def test_tool_anchors_name_the_transcript_page_that_shows_the_call(web_db):
    from datasette_obelisk.query import transcript

    conn = sqlite3.connect(web_db)
    try:
        anchors = transcript.tool_anchors(conn, ["toolu_f001", "toolu_f002", "no-such-call"], limit=5)
        later = transcript.transcript(conn, FORKED, start=7, limit=5)["entries"]
    finally:
        conn.close()
    plain = {"start": None, "rewound": False, "meta": False, "log": False}
    # (the first page holds #1-#6: the output at #5 is shown with its call at #4, not counted)
    assert anchors == {"toolu_f001": {**plain, "rewound": True}, "toolu_f002": {**plain, "start": 7}}
    assert [c["id"] for e in later if e["kind"] == "tool" for c in e["calls"]] == ["toolu_f002", "toolu_f003"]


SMALL = "claude-code/jazzyalex__agent-sessions/small.jsonl"
FLAGS = [(), ("log",), ("meta",), ("log", "meta")]


def raw_lines(relative: str) -> dict[int, dict]:
    from query_fixtures import CORPUS

    lines = (CORPUS / relative).read_text().splitlines()
    return {n: json.loads(line) for n, line in enumerate(lines, 1) if line.strip()}


def blocks(line: dict, kind: str) -> list[dict]:
    content = (line.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind] if isinstance(content, list) else []


def not_a_person_s(line: dict) -> bool:
    """A prompt another sender wrote in the user's name: its ``origin`` is not a person's
    (tool results carry the origin of the prompt they answer)."""
    origin = line.get("origin")
    return (line["type"] == "user" and isinstance(origin, dict) and origin.get("kind") != "human"
            and not blocks(line, "tool_result"))


def listed_from_raw(raw: dict, stored: list[tuple[int, int]], flags: tuple) -> list[int]:
    """The seqs a transcript lists, from the raw lines alone: a compaction always; a line that is
    not a user or assistant message with ?log=1; an isMeta message with ?meta=1; a line of only
    tool results answering this session's calls never (it is folded into the call)."""
    calls = {b["id"] for _, n in stored for b in blocks(raw[n], "tool_use") if b.get("id")}
    listed = []
    for seq, n in stored:
        line = raw[n]
        results = blocks(line, "tool_result")
        queued = line.get("attachment") if line["type"] == "attachment" else None
        if line.get("subtype") == "compact_boundary" or line.get("isCompactSummary"):
            listed.append(seq)
        elif queued and queued.get("type") == "queued_command" and queued.get("commandMode") == "prompt":
            listed.append(seq)  # a prompt typed while the agent worked
        elif line["type"] not in ("user", "assistant"):
            listed += [seq] if "log" in flags else []
        elif (line.get("isMeta") is True or not_a_person_s(line)) and "meta" not in flags:
            continue
        elif not (results and len(results) == len(line["message"]["content"]) and all(b.get("tool_use_id") in calls for b in results)):
            listed.append(seq)
    return listed


@pytest.mark.asyncio
async def test_log_shows_structural_lines_and_meta_injected_ones(tmp_path):
    db, _ = copy_corpus(tmp_path, SMALL)
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    raw = raw_lines(SMALL)
    shown = {}
    for session in ("small", "small:agent-sidechain-sys1"):  # small.jsonl holds both
        stored = rows(db, "SELECT seq, line_no FROM messages WHERE session_id = ? ORDER BY seq", [session])
        for flags in FLAGS:
            html = await page(datasette, f"/-/obelisk/session/{session}", **{flag: "1" for flag in flags})
            shown[session, flags] = [int(n) for n in re.findall(r'<li class="ob-[a-z]+[^"]*" id="m(\d+)"', html)]
            assert shown[session, flags] == listed_from_raw(raw, stored, flags), (session, flags)
    # The log-only lines but the two compact boundaries, which are shown anyway.
    structural = len(rows(db, "SELECT 1 FROM messages WHERE session_id = 'small' AND surface = 'log-only'")) - 2
    # small: the compact boundaries (raw lines 21 and 51), the Bash call of line 29 (its result,
    # line 30, folded), the answers of lines 47, 50 and 55, the thinking of line 65, the prompt
    # queued on line 39, and with ?meta=1 those of lines 49 and 60 (another sender's, by their
    # origins); every other stored line is structural, none injected.
    assert [len(shown["small", flags]) for flags in FLAGS] == [8, 8 + structural, 10, 10 + structural]
    # the sidechain: prompt 7, answers 8, 18, 19, summary 22; session_start 1 and hook attachment 4
    # are structural; the isMeta tool results 9 and 10 answer no stored call.
    assert [len(shown["small:agent-sidechain-sys1", flags]) for flags in FLAGS] == [5, 7, 7, 9]


LONG = "long-chain-session"
CHAIN = 60  # messages in one parent chain, more than a page lists
BIG_TEXT = 50_000  # characters of the last answer, more than a page shows


@pytest.fixture
def long_chain(tmp_path):
    """A Datasette over one Claude session whose messages form one chain, the last one long."""
    from datasette_obelisk.query.transcript import RESULT_CHARS
    from datasette_obelisk.store.ingest import ingest

    assert BIG_TEXT > RESULT_CHARS
    lines = []
    for n in range(1, CHAIN + 1):
        role = "user" if n % 2 else "assistant"
        text = "x" * BIG_TEXT if n == CHAIN else f"step {n}"
        lines.append(json.dumps({
            "type": role, "uuid": f"chain-{n}", "parentUuid": f"chain-{n - 1}" if n > 1 else None,
            "sessionId": LONG, "timestamp": f"2026-03-02T10:{n // 60:02d}:{n % 60:02d}.000Z", "cwd": "/tmp/long",
            "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
        }))
    folder = tmp_path / "claude" / "projects" / "-tmp-long"
    folder.mkdir(parents=True)
    (folder / f"{LONG}.jsonl").write_text("\n".join(lines) + "\n")
    ingest(tmp_path / "long.db", {"claude": tmp_path / "claude"})
    return make_datasette(tmp_path / "long.db")


def event_links(html: str) -> list[int]:
    return [int(n) for n in re.findall(rf'href="/-/obelisk/event/{LONG}/(\d+)(?:\?id=[^"]*)?"', html)]


@pytest.mark.asyncio
async def test_a_long_parent_chain_lists_its_root_and_the_nearest_fifty(long_chain):
    from datasette_obelisk.query.lineage import CHAIN_SHOWN

    await long_chain.invoke_startup()
    seqs = {n: row[0] for n, row in enumerate(rows(long_chain.databases["long"].path, "SELECT seq FROM messages ORDER BY seq"), 1)}
    last = seqs[CHAIN]
    shown = [seqs[1]] + [seqs[n] for n in range(CHAIN - CHAIN_SHOWN + 1, CHAIN + 1)]
    omitted = f"… {CHAIN - 1 - CHAIN_SHOWN} more of the {CHAIN} messages in the chain"
    event = await page(long_chain, f"/-/obelisk/event/{LONG}/{last}")
    chain = event.split("<h2>Parent chain</h2>")[1]
    assert event_links(chain) == shown and omitted in chain
    lineage = await page(long_chain, f"/-/obelisk/session/{LONG}/lineage", seq=str(last))
    assert event_links(lineage.split("Parent chain (root first)")[1].split("Replacement chain")[0]) == shown
    assert omitted in lineage
    short = await page(long_chain, f"/-/obelisk/event/{LONG}/{seqs[CHAIN_SHOWN + 1]}")
    assert event_links(short.split("<h2>Parent chain</h2>")[1]) == [seqs[n] for n in range(1, CHAIN_SHOWN + 2)]
    assert "messages in the chain" not in short


@pytest.mark.asyncio
async def test_a_parent_chain_longer_than_the_walk_says_it_goes_on_above(long_chain, monkeypatch):
    from datasette_obelisk.query import obelisk
    from datasette_obelisk.query.lineage import CHAIN_SHOWN

    await long_chain.invoke_startup()
    monkeypatch.setattr(obelisk, "MAX_CHAIN", CHAIN - 5)  # the walk stops 4 messages below the root
    last = rows(long_chain.databases["long"].path, "SELECT seq FROM messages ORDER BY seq DESC LIMIT 1")[0][0]
    chain = (await page(long_chain, f"/-/obelisk/event/{LONG}/{last}")).split("<h2>Parent chain</h2>")[1]
    walked = CHAIN - 4
    assert "… the chain goes on above: it is longer than the {:,} messages walked from this one".format(walked) in chain
    assert f"… {walked - 1 - CHAIN_SHOWN} more of the {walked} messages walked" in chain


@pytest.mark.asyncio
async def test_pages_show_the_start_of_a_long_text_and_link_the_rest(long_chain):
    from datasette_obelisk.query.transcript import RESULT_CHARS

    await long_chain.invoke_startup()
    last = rows(long_chain.databases["long"].path, "SELECT seq FROM messages ORDER BY seq DESC LIMIT 1")[0][0]
    note = f"… {BIG_TEXT - RESULT_CHARS:,} more characters (see"
    for url in (f"/-/obelisk/event/{LONG}/{last}", f"/-/obelisk/session/{LONG}"):
        html = await page(long_chain, url)
        assert "x" * RESULT_CHARS in html and "x" * (RESULT_CHARS + 1) not in html, url
        assert html.count(note) == 1, url
        assert "/-/obelisk/api/raw?uuid=chain-60&limit=10000000" in links(html), url
    line = (await long_chain.client.get("/-/obelisk/api/raw?uuid=chain-60&limit=10000000")).json()
    assert not line["hasMore"] and "x" * BIG_TEXT in line["text"]  # the link shows the rest, whole


@pytest.mark.asyncio
async def test_pages_link_no_raw_line_where_the_log_files_are_hidden(long_chain):
    # A published archive hides source_files, so /api/raw refuses: no page links to it.
    from datasette_obelisk.query.transcript import RESULT_CHARS

    path = long_chain.databases["long"].path
    hidden = make_datasette(path, {"databases": {"long": {"tables": {"source_files": {"allow": False}}}}})
    await hidden.invoke_startup()
    last = rows(path, "SELECT seq FROM messages ORDER BY seq DESC LIMIT 1")[0][0]
    for url in (f"/-/obelisk/event/{LONG}/{last}", f"/-/obelisk/session/{LONG}"):
        html = await page(hidden, url)
        assert html.count(f"… {BIG_TEXT - RESULT_CHARS:,} more characters</span>") == 1, url
        assert not [link for link in links(html) if "/api/raw" in link], url
        assert "Raw log line" not in html and ">raw</a>" not in html, url
    assert (await hidden.client.get("/-/obelisk/api/raw?uuid=chain-60")).status_code == 403


@pytest.mark.asyncio
async def test_pages_link_no_raw_line_once_the_log_is_gone(long_chain, tmp_path):
    from datasette_obelisk.query.transcript import RESULT_CHARS
    from datasette_obelisk.store.ingest import ingest

    (tmp_path / "claude" / "projects" / "-tmp-long" / f"{LONG}.jsonl").unlink()
    ingest(tmp_path / "long.db", {"claude": tmp_path / "claude"})
    await long_chain.invoke_startup()
    last = rows(tmp_path / "long.db", "SELECT seq FROM messages ORDER BY seq DESC LIMIT 1")[0][0]
    for url in (f"/-/obelisk/event/{LONG}/{last}", f"/-/obelisk/session/{LONG}"):
        html = await page(long_chain, url)
        assert html.count(f"… {BIG_TEXT - RESULT_CHARS:,} more characters</span>") == 1, url
        assert not [link for link in links(html) if "/api/raw" in link], url
    assert "archived (source log gone)" in html


BIG_CALL = "big-call-session"
BIG_INPUT = 50_000  # characters of a tool call's input, more than a page shows
WRITTEN = "/tmp/big/notes.txt"


@pytest.fixture
def big_call(tmp_path):
    """A Datasette over one Claude session whose Write call (it failed) has a 50,000-character input."""
    from datasette_obelisk.store.ingest import ingest

    call = {"file_path": WRITTEN, "content": ""}
    call["content"] = "y" * (BIG_INPUT - len(json.dumps(call, separators=(",", ":"))))  # stored compact
    head = {"sessionId": BIG_CALL, "cwd": "/tmp/big"}
    lines = [
        {**head, "type": "user", "uuid": "big-1", "parentUuid": None, "timestamp": "2026-03-02T10:00:00.000Z",
         "message": {"role": "user", "content": "write it"}},
        {**head, "type": "assistant", "uuid": "big-2", "parentUuid": "big-1", "timestamp": "2026-03-02T10:00:01.000Z",
         "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_big", "name": "Write", "input": call}]}},
        {**head, "type": "user", "uuid": "big-3", "parentUuid": "big-2", "timestamp": "2026-03-02T10:00:02.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big", "content": "disk full", "is_error": True}]}},
    ]
    folder = tmp_path / "claude" / "projects" / "-tmp-big"
    folder.mkdir(parents=True)
    (folder / f"{BIG_CALL}.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    ingest(tmp_path / "big.db", {"claude": tmp_path / "claude"})
    return make_datasette(tmp_path / "big.db")


def shown_cut(value: str, tag: str, css: str, uuid: str) -> str:
    """How a page shows a text longer than RESULT_CHARS: its start, then how much more and a link to the raw line."""
    from markupsafe import escape

    from datasette_obelisk.query.transcript import RESULT_CHARS

    return (f'<{tag} class="{css}">{escape(value[:RESULT_CHARS])}<span class="ob-muted ob-more"> … '
            f'{len(value) - RESULT_CHARS:,} more characters (see <a href="/-/obelisk/api/raw?uuid={uuid}&amp;limit=10000000">raw</a>)</span></{tag}>')


def longest_run(html: str) -> int:
    return max(len(run) for run in re.findall("y+", html))


@pytest.mark.asyncio
async def test_pages_show_the_start_of_a_long_tool_input_and_link_the_rest(big_call):
    from datasette_obelisk.query.transcript import RESULT_CHARS

    await big_call.invoke_startup()
    db = big_call.databases["big"].path
    [(input_json, text, seq)] = rows(db, "SELECT c.input_json, m.text, m.seq FROM tool_calls c JOIN messages m ON m.uuid = c.message_uuid")
    assert len(input_json) == BIG_INPUT
    pretty = json.dumps(json.loads(input_json), indent=2, ensure_ascii=False)  # as the pages lay an input out
    expected = shown_cut(pretty, "pre", "ob-pre", "big-2")
    assert len(pretty) - RESULT_CHARS == 30_009  # laid out with newlines and indents: "… 30,009 more characters"
    for url, params in ((f"/-/obelisk/session/{BIG_CALL}", {}), ("/-/obelisk/files", {"path": WRITTEN}),
                        ("/-/obelisk/failures", {})):
        html = await page(big_call, url, **params)
        assert html.count(expected) == 1, url
        assert longest_run(html) == RESULT_CHARS - len(pretty.split("y")[0]), url
    # The event page shows the call's line as its text (the tool's name and the strings of its input), cut the same way.
    event = await page(big_call, f"/-/obelisk/event/{BIG_CALL}/{seq}")
    assert event.count(shown_cut(text, "div", "ob-text", "big-2")) == 1
    assert len(text) > RESULT_CHARS and longest_run(event) < RESULT_CHARS


BIG_RESULTS = "big-result-session"
BIG_OUTPUT = 50_000  # characters of each tool result's output, more than a page shows
READ_PATH = "/tmp/big/data.txt"


def big_output(letter: str) -> str:
    """50,000 characters, "é" among them: the pages and SQLite count characters, not bytes."""
    return (letter + "é") * (BIG_OUTPUT // 2)


@pytest.fixture
def big_results(tmp_path):
    """A Datasette over one Claude session with two 50,000-character tool results, and the lines of its log.

    The Read's output succeeded, so ``tool_results.content`` keeps only its start (the whole is
    its line's text); the Bash's failed and is kept whole.
    """
    from datasette_obelisk.store.ingest import ingest

    head = {"sessionId": BIG_RESULTS, "cwd": "/tmp/big"}
    lines = [
        {**head, "type": "user", "uuid": "res-1", "parentUuid": None, "timestamp": "2026-03-02T10:00:00.000Z",
         "message": {"role": "user", "content": "read it, then build"}},
        {**head, "type": "assistant", "uuid": "res-2", "parentUuid": "res-1", "timestamp": "2026-03-02T10:00:01.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": READ_PATH}}]}},
        {**head, "type": "user", "uuid": "res-3", "parentUuid": "res-2", "timestamp": "2026-03-02T10:00:02.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_read", "content": big_output("r")}]}},
        {**head, "type": "assistant", "uuid": "res-4", "parentUuid": "res-3", "timestamp": "2026-03-02T10:00:03.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_make", "name": "Bash", "input": {"command": "make"}}]}},
        {**head, "type": "user", "uuid": "res-5", "parentUuid": "res-4", "timestamp": "2026-03-02T10:00:04.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_make", "content": big_output("f"), "is_error": True}]}},
    ]
    folder = tmp_path / "claude" / "projects" / "-tmp-big"
    folder.mkdir(parents=True)
    written = [json.dumps(line) for line in lines]
    (folder / f"{BIG_RESULTS}.jsonl").write_text("\n".join(written) + "\n")
    ingest(tmp_path / "results.db", {"claude": tmp_path / "claude"})
    return make_datasette(tmp_path / "results.db"), dict(zip((line["uuid"] for line in lines), written))


def shown_result(output: str, limit: int, uuid: str) -> str:
    """How a page shows a tool result's output longer than ``limit``: its start, how many more characters, the raw line."""
    from markupsafe import escape

    return (f'<pre class="ob-pre">{escape(output[:limit])}<span class="ob-muted ob-more"> … '
            f'{len(output) - limit:,} more characters (see <a href="/-/obelisk/api/raw?uuid={uuid}&amp;limit=10000000">raw</a>)</span></pre>')


@pytest.mark.asyncio
async def test_pages_show_the_start_of_a_long_tool_result_and_link_the_rest(big_results):
    from datasette_obelisk.query.transcript import RESULT_CHARS
    from datasette_obelisk.query.obelisk import MAX_TEXT
    from datasette_obelisk.web.pages import FAILURE_RESULT_CHARS

    ds, written = big_results
    await ds.invoke_startup()
    db = ds.databases["results"].path
    stored = dict((uuid, (outcome, length, stored)) for uuid, outcome, length, stored in rows(
        db, "SELECT message_uuid, outcome, content_length, length(content) FROM tool_results"))
    assert stored == {"res-3": ("succeeded", BIG_OUTPUT, 10_000), "res-5": ("failed", BIG_OUTPUT, BIG_OUTPUT)}
    seqs = dict(rows(db, "SELECT uuid, seq FROM messages"))
    read, failed = big_output("r"), big_output("f")
    assert RESULT_CHARS == 20_000 and FAILURE_RESULT_CHARS == 2_000
    assert FAILURE_RESULT_CHARS <= MAX_TEXT  # the preview never reaches failures()' own cut
    in_full = {"res-3": shown_result(read, RESULT_CHARS, "res-3"), "res-5": shown_result(failed, RESULT_CHARS, "res-5")}
    assert "… 30,000 more characters (see <a" in in_full["res-3"]

    # The transcript and the event page of either result (its window holds both) show 20,000 characters of each.
    for url in (f"/-/obelisk/session/{BIG_RESULTS}", f"/-/obelisk/event/{BIG_RESULTS}/{seqs['res-3']}",
                f"/-/obelisk/event/{BIG_RESULTS}/{seqs['res-5']}"):
        html = await page(ds, url)
        for uuid, expected in in_full.items():
            assert html.count(expected) == 1, (url, uuid)
        for output in (read, failed):
            assert output[: RESULT_CHARS + 1] not in html, url

    # The failures page lists the failed one only, with a 2,000-character preview.
    html = await page(ds, "/-/obelisk/failures")
    preview = shown_result(failed, FAILURE_RESULT_CHARS, "res-5")
    assert "… 48,000 more characters (see <a" in preview
    assert html.count(preview) == 1
    assert failed[: FAILURE_RESULT_CHARS + 1] not in html and read[:100] not in html

    # The files page lists the Read call with its input, not its output.
    html = await page(ds, "/-/obelisk/files", path=READ_PATH)
    assert "toolu_read" in html and read[:100] not in html

    # Each note's link answers with the result's line of the log.
    for uuid in in_full:
        response = await ds.client.get("/-/obelisk/api/raw", params={"uuid": uuid})
        assert response.status_code == 200
        answer = response.json()
        assert answer["totalLength"] == len(written[uuid]) and written[uuid].startswith(answer["text"])
        assert answer["text"].startswith('{"sessionId": "big-result-session"') and "toolu_" in answer["text"]


def archive(tmp_path, session: str, db: str) -> None:
    """``session``'s log deleted, then ingested again: its session is archived."""
    from datasette_obelisk.store.ingest import ingest

    (tmp_path / "claude" / "projects" / "-tmp-big" / f"{session}.jsonl").unlink()
    ingest(tmp_path / db, {"claude": tmp_path / "claude"})
    assert rows(tmp_path / db, "SELECT availability FROM sessions") == [("archived",)]


@pytest.mark.asyncio
async def test_the_failures_page_links_no_raw_output_once_the_log_is_gone(big_results, tmp_path):
    # As on the transcript and the event page: an archived session has no raw line
    # to show (/api/raw answers 404), so a long output is cut without a link to it.
    from datasette_obelisk.web.pages import FAILURE_RESULT_CHARS

    ds, _ = big_results
    archive(tmp_path, BIG_RESULTS, "results.db")
    await ds.invoke_startup()
    html = await page(ds, "/-/obelisk/failures")
    assert html.count(f"… {BIG_OUTPUT - FAILURE_RESULT_CHARS:,} more characters</span>") == 1
    assert not [link for link in links(html) if "/api/raw" in link]
    assert (await ds.client.get("/-/obelisk/api/raw", params={"uuid": "res-5"})).status_code == 404


@pytest.mark.asyncio
async def test_failures_and_files_link_no_raw_input_once_the_log_is_gone(big_call, tmp_path):
    archive(tmp_path, BIG_CALL, "big.db")
    await big_call.invoke_startup()
    for url, params in (("/-/obelisk/failures", {}), ("/-/obelisk/files", {"path": WRITTEN})):
        html = await page(big_call, url, **params)
        assert html.count("… 30,009 more characters</span>") == 1, url
        assert not [link for link in links(html) if "/api/raw" in link], url


@pytest.mark.asyncio
async def test_the_event_page_shows_an_output_its_lines_text_holds_once(tmp_path):
    from datasette_obelisk.store.ingest import ingest

    head = {"sessionId": "mixed-session", "cwd": "/tmp/mixed"}
    lines = [
        {**head, "type": "assistant", "uuid": "mix-1", "parentUuid": None, "timestamp": "2026-03-02T10:00:01.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_mix", "name": "Bash", "input": {"command": "uptime"}}]}},
        {**head, "type": "user", "uuid": "mix-2", "parentUuid": "mix-1", "timestamp": "2026-03-02T10:00:02.000Z",
         "message": {"role": "user", "content": [
             {"type": "text", "text": "Here is what the kraken said:"},
             {"type": "tool_result", "tool_use_id": "toolu_mix", "content": "kraken load average 0.42"}]}},
        {**head, "type": "user", "uuid": "mix-3", "parentUuid": "mix-2", "timestamp": "2026-03-02T10:00:03.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_other", "content": "only a squid output"}]}},
    ]
    folder = tmp_path / "claude" / "projects" / "-tmp-mixed"
    folder.mkdir(parents=True)
    (folder / "mixed-session.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "mixed.db", {"claude": tmp_path / "claude"})
    ds = make_datasette(tmp_path / "mixed.db")
    assert rows(tmp_path / "mixed.db", "SELECT uuid, content_type, text FROM messages ORDER BY seq")[1:] == [
        ("mix-2", "mixed", "Here is what the kraken said:\nkraken load average 0.42"),
        ("mix-3", "tool_result", "only a squid output"),
    ]
    html = (await page(ds, "/-/obelisk/event/mixed-session/2")).split("<h2>Parent chain</h2>")[0]
    assert html.count("kraken load average 0.42") == 1 and html.count("Here is what the kraken said:") == 1
    assert html.count("Its output is in the text above.") == 1
    assert html.count("only a squid output") == 1  # a line of results only: shown once, under its result


@pytest.mark.asyncio
async def test_reasoning_a_line_opens_with_is_folded_apart_from_what_it_says(ds):
    # small.jsonl line 8: thinking "Reasoning goes here.", text "I'll list files.", a bash call.
    html = await page(ds, "/-/obelisk/session/small:agent-sidechain-sys1", shadowed="1", meta="1")
    entry = html[html.index('id="m4"'):]
    entry = entry[: entry.index("</li>")]
    assert re.search(r'<details><summary class="ob-muted">Thinking</summary>.*Reasoning goes here\..*</details>', entry, re.S)
    after = entry[entry.index("</details>") + len("</details>"):]
    assert "I&#39;ll list files." in after and "Reasoning goes here" not in after


@pytest.mark.asyncio
@pytest.mark.parametrize("url,params", [
    ("/-/obelisk", {"q": "the"}), ("/-/obelisk", {"q": "the OR a*", "mode": "raw"}), ("/-/obelisk/failures", {}),
])
async def test_a_page_past_the_time_limit_is_a_504_saying_which_limit(ds, monkeypatch, url, params):
    setting = ds.setting
    monkeypatch.setattr(ds, "setting", lambda name: 1 if name == "sql_time_limit_ms" else setting(name))
    html = await page(ds, url, 504, **params)
    assert "OBELISK_TIMEOUT" in html and "datasette serve --setting sql_time_limit_ms 10000" in html
    monkeypatch.undo()
    await page(ds, url, **params)


@pytest.mark.asyncio
async def test_counts_read_as_words_and_untimed_lines_show_no_empty_time(ds):
    lineage = await page(ds, "/-/obelisk/session/sidechain_main/lineage")
    assert " · 1 message" in lineage and "1 messages" not in lineage
    assert "1 direct child" in lineage
    transcript = await page(ds, "/-/obelisk/session/edge_cases")
    assert "#11</a> · <a href" in transcript and " ·  · " not in transcript


@pytest.mark.asyncio
async def test_files_past_the_last_page_say_so(ds):
    html = await page(ds, "/-/obelisk/files", offset="999999")
    assert re.search(r"No paths past the [\d,]+ paths: <a href=\"/-/obelisk/files\">back to the first page</a>", html)
    assert "Paths 1,000,000" not in html
    # the way back is the first page: no pager leads to another page past the end
    assert "ob-pager" not in html and "offset=" not in html


@pytest.mark.asyncio
async def test_a_log_only_line_of_token_counts_says_what_it_is(ds, web_db):
    [(session, seq, subtype, tokens)] = rows(web_db, (
        "SELECT session_id, seq, COALESCE(subtype, type), input_tokens FROM messages WHERE surface = 'log-only' "
        "AND COALESCE(text, '') = '' AND input_tokens > 0 ORDER BY session_id, seq LIMIT 1"))
    html = await page(ds, f"/-/obelisk/session/{session}", start=str(seq), log="1")
    entry = re.search(rf'<li class="ob-entry[^"]*" id="m{seq}">(.*?)</li>', html, re.S).group(1)
    assert f" · {subtype}" in entry.split("</span>")[0] and "injected" not in entry
    assert re.search(rf'<p class="ob-meta ob-tokens">Tokens: {tokens:,} in', entry)


@pytest.mark.asyncio
async def test_an_event_shows_a_replys_thinking_apart(ds, web_db):
    [(session, seq, text, chars)] = rows(web_db, (
        "SELECT session_id, seq, text, json_extract(meta_json, '$.thinking_chars') FROM messages "
        "WHERE json_extract(meta_json, '$.thinking_chars') > 0 AND length(text) > json_extract(meta_json, '$.thinking_chars') "
        "ORDER BY session_id, seq LIMIT 1"))
    html = await page(ds, f"/-/obelisk/event/{session}/{seq}")
    thinking, answer = text[:chars], text[chars:].lstrip("\n")
    folded = re.search(r'<details><summary class="ob-muted">Thinking</summary>(.*?)</details>(.*?)</li>', html, re.S)
    assert folded and unescape(thinking) in unescape(folded.group(1)) and answer in unescape(folded.group(2))


@pytest.mark.asyncio
@pytest.mark.parametrize("path, args", [
    ("/obelisk/messages", {"_search": "zebrafish"}),
    ("/obelisk/browse_messages", {"_search": "zebrafish"}),  # a view
    ("/obelisk/browse_messages", {"_search_text": "zebrafish"}),
])
async def test_the_search_action_of_a_table_or_view_takes_its_search_along(ds, path, args):
    html = await page(ds, path, **args)
    assert "/-/obelisk?db=obelisk&amp;q=zebrafish" in html


@pytest.mark.asyncio
@pytest.mark.parametrize("path, args, target", [
    ("/obelisk/memories", {"_search": "zebrafish"}, "/-/obelisk/memories?db=obelisk&q=zebrafish"),
    ("/obelisk/tool_calls", {"file_path": "/w/app.py"}, "/-/obelisk/files?db=obelisk&path=%2Fw%2Fapp.py"),
    ("/obelisk/tool_calls", {"file_path__exact": "/w/app.py"}, "/-/obelisk/files?db=obelisk&path=%2Fw%2Fapp.py"),
    ("/obelisk/browse_tool_calls", {"file_path": "/w/app.py"}, "/-/obelisk/files?db=obelisk&path=%2Fw%2Fapp.py"),
    ("/obelisk/tool_call_files", {"path": "/w/app.py"}, "/-/obelisk/files?db=obelisk&path=%2Fw%2Fapp.py"),
])
async def test_the_action_of_a_filtered_table_opens_the_page_for_that_filter(ds, path, args, target):
    """A memories search is the memories page's recall; one file's tool calls are its file history."""
    assert target in links(await page(ds, path, **args))


@pytest.mark.asyncio
async def test_the_failures_page_marks_a_failure_on_a_rewound_branch(tmp_path):
    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-w"
    folder.mkdir(parents=True)

    def line(uuid, parent, role, content, second):
        return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
                "timestamp": f"2026-01-01T00:00:{second:02}Z", "message": {"role": role, "content": content}}

    def failing(n, parent, second):
        return [line(f"c{n}", parent, "assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Bash",
                                                     "input": {"command": f"make target{n}"}}], second),
                line(f"r{n}", f"c{n}", "user", [{"type": "tool_result", "tool_use_id": f"t{n}", "is_error": True,
                                                  "content": f"make: *** target{n} Error 2"}], second + 1)]

    lines = [line("u1", None, "user", "build it", 1), *failing(1, "u1", 2),  # abandoned: the prompt after it is rewound
             line("u2", "r1", "user", "with make", 4), *failing(2, "u2", 5),
             line("u3", "r1", "user", "never mind", 7), line("a3", "u3", "assistant", "ok", 8)]
    (folder / "s1.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    datasette = make_datasette(tmp_path / "o.db")
    await datasette.invoke_startup()
    items = re.findall(r'<li class="ob-result">(.*?)</li>\s*(?=<li class="ob-result">|</ol>)', await page(datasette, "/-/obelisk/failures"), re.S)
    marked = {re.search(r"make target(\d)", item).group(1): "rewound away" in item for item in items}
    assert marked == {"2": True, "1": False}


@pytest.mark.asyncio
async def test_times_are_shown_in_utc_whatever_offset_a_log_wrote():
    from datasette_obelisk.web.template_helpers import TemplateHelpers

    assert [TemplateHelpers.when(t) for t in ("2025-12-24T10:00:00.000+02:00", "2025-12-24T23:30:00-05:00",
                                             "2025-12-24T10:00:00Z", "yesterday", None)] == [
        "2025-12-24 08:00", "2025-12-25 04:30", "2025-12-24 10:00", "yesterday", ""]


@pytest.mark.asyncio
async def test_a_long_title_is_cut_short_in_the_window_title(tmp_path):
    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-w"
    folder.mkdir(parents=True)
    prompt = "refactor " * 50
    (folder / "s1.jsonl").write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00Z",
                                                 "message": {"role": "user", "content": prompt}}) + "\n")
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    datasette = make_datasette(tmp_path / "o.db")
    await datasette.invoke_startup()
    title = re.search(r"<title>(.*?)</title>", await page(datasette, "/-/obelisk/session/s1"), re.S).group(1)
    assert title.endswith("… · Obelisk") and len(title) == 80 + len(" · Obelisk")


@pytest.mark.asyncio
async def test_thinking_the_log_does_not_record_says_so(tmp_path):
    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-p"
    folder.mkdir(parents=True)
    head = {"sessionId": "s1", "cwd": "/p"}
    lines = [
        {**head, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-05-01T10:00:00Z",
         "message": {"role": "user", "content": "think hard"}},
        {**head, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-05-01T10:00:01Z",
         "message": {"role": "assistant", "id": "m1", "content": [{"type": "thinking", "thinking": "", "signature": "x"}]}},
        {**head, "type": "assistant", "uuid": "a2", "parentUuid": "a1", "timestamp": "2026-05-01T10:00:02Z",
         "message": {"role": "assistant", "id": "m1", "content": [{"type": "redacted_thinking", "data": "AAAA"}]}},
        {**head, "type": "assistant", "uuid": "a3", "parentUuid": "a2", "timestamp": "2026-05-01T10:00:03Z",
         "message": {"role": "assistant", "id": "m1", "content": [{"type": "text", "text": "done"}]}},
    ]
    (folder / "s1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    assert rows(tmp_path / "o.db", "SELECT uuid, content_type, text FROM messages WHERE uuid IN ('a1', 'a2') ORDER BY seq") == [
        ("a1", "thinking", ""), ("a2", "redacted_thinking", "")]
    ds = make_datasette(tmp_path / "o.db")
    transcript_page = await page(ds, "/-/obelisk/session/s1")
    assert transcript_page.count("(the log does not record this thinking)") == 2
    for seq in (2, 3):
        assert "(the log does not record this thinking)" in await page(ds, f"/-/obelisk/event/s1/{seq}")


@pytest.mark.parametrize("between", ["attachment", "meta"])
def test_a_summary_opening_a_page_after_hidden_lines_adds_no_marker(tmp_path, between):
    from datasette_obelisk.query import transcript
    from datasette_obelisk.store.ingest import ingest

    head = {"cwd": "/tmp", "sessionId": "s", "version": "2.1.0"}

    def said(kind, uuid, parent, text, ts, **extra):
        content = [{"type": "text", "text": text}]
        message = {"role": kind, "content": content, **({"id": f"m{uuid}"} if kind == "assistant" else {})}
        return {**head, "type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": ts, "message": message, **extra}

    lines = [said("user", "u1", None, "Start", "2025-07-01T10:00:00Z"), said("assistant", "a1", "u1", "Ready", "2025-07-01T10:01:00Z"),
             {**head, "type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": None,
              "logicalParentUuid": "a1", "timestamp": "2025-07-01T10:30:00Z", "content": "Conversation compacted"}]
    if between == "attachment":  # (Claude Code writes these right after a compaction)
        lines.append({**head, "type": "attachment", "uuid": "at", "parentUuid": "cb", "timestamp": "2025-07-01T10:30:00.5Z",
                      "attachment": {"type": "compact_file_reference", "filename": "/tmp/a.py", "displayPath": "a.py"}})
    else:
        lines.append(said("user", "at", "cb", "<system-reminder>x</system-reminder>", "2025-07-01T10:30:00.5Z", isMeta=True))
    lines += [said("user", "cs", "cb", "This session is being continued... Summary: plan.", "2025-07-01T10:30:01Z",
                   isCompactSummary=True), said("assistant", "a2", "cs", "After", "2025-07-01T10:31:00Z")]
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)
    (project / "s.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    conn = sqlite3.connect(tmp_path / "o.db")
    conn.row_factory = sqlite3.Row
    seqs = dict(conn.execute("SELECT uuid, seq FROM messages WHERE session_id = 's'").fetchall())

    def markers(page_):
        return [e["message"]["seq"] for e in page_["entries"] if e["kind"] == "compaction" and not e.get("continued")]

    assert markers(transcript.transcript(conn, "s")) == [seqs["cb"]]
    for end in (seqs["cb"], seqs["at"]):  # a page ends with the boundary, or with the hidden line after it
        first = transcript.transcript(conn, "s", limit=end)
        rest = transcript.transcript(conn, "s", start=end + 1, limit=5)
        assert markers(first) + markers(rest) == [seqs["cb"]], end
    shown = {"log": True} if between == "attachment" else {"meta": True}  # the line between shown: a marker of its own
    assert markers(transcript.transcript(conn, "s", start=seqs["cs"], **shown)) == [seqs["cs"]]


@pytest.mark.asyncio
async def test_a_message_another_agent_sent_names_its_sender_and_injected_lines_are_marked(tmp_path):
    from datasette_obelisk.store.ingest import ingest

    thread = "019a4000-0000-7000-8000-000000000001"
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "01"
    day.mkdir(parents=True)
    lines = [
        {"type": "session_meta", "payload": {"id": thread, "cwd": "/w/p"}},
        {"type": "inter_agent_communication", "payload": {
            "author": "/root", "recipient": "/root/worker", "other_recipients": [],
            "content": "Audit the parser <b>now</b>", "trigger_turn": True}},
        {"type": "event_msg", "payload": {"type": "agent_message", "message": "Noted."}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": '<hook_prompt hook_run_id="stop:0">Run the linter too.</hook_prompt>'}]}},
    ]
    (day / f"rollout-2026-11-01T10-00-00-{thread}.jsonl").write_text(
        "".join(json.dumps({"timestamp": f"2026-11-01T10:00:0{i}.000Z", **line}) + "\n" for i, line in enumerate(lines)))
    db = tmp_path / "o.db"
    ingest(db, {"codex": tmp_path / "codex"})
    html = await page(make_datasette(db), f"/-/obelisk/session/codex:{thread}")
    heads = re.findall(r'<div class="ob-entry-head">\s*<span>([^<]*)</span>', html)
    assert heads == ["user", "assistant"]  # (the injected line is hidden)
    assert "[/root → /root/worker]\nAudit the parser &lt;b&gt;now&lt;/b&gt;" in html
    # The event page says which lines are injected.
    html = await page(make_datasette(db), f"/-/obelisk/event/codex:{thread}/1")
    heads = re.findall(r'<div class="ob-entry-head"><span>([^<]*)</span>', html)
    assert heads == ["user/message · current", "assistant/message · current",
                     "user/message · current · injected"]


@pytest.mark.asyncio
@pytest.mark.parametrize("column, value, title, link", [
    ("tag", "a&b", "Sessions with this tag", ("sessions?tag=a%26b", "#a&amp;b")),
    ("team_name", "alpha & co", "Sessions of this agent team", ("sessions?team_name=alpha+%26+co", "team alpha &amp; co")),
])
async def test_a_session_s_tag_and_agent_team_link_to_the_sessions_that_share_it(tmp_path, column, value, title, link):
    db, _ = copy_corpus(tmp_path, SMALL)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(f"UPDATE sessions SET {column} = ? WHERE id = 'small'", [value])
    conn.close()
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    html = await page(datasette, "/-/obelisk/session/small")
    assert re.findall(rf'<a href="([^"]*)" title="{title}">([^<]*)</a>', html) == [(f"/{db.stem}/{link[0]}", link[1])]
    assert title not in await page(datasette, "/-/obelisk/session/small:agent-sidechain-sys1")


@pytest.mark.asyncio
async def test_a_codex_thread_imported_from_a_claude_code_session_links_to_it_and_back(tmp_path):
    from datasette_obelisk.store.ingest import ingest

    session, thread = "aaaaaaaa-1111-4111-8111-111111111111", "019fd000-0000-7000-8000-000000000001"
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    (project / f"{session}.jsonl").write_text(json.dumps({
        "type": "user", "uuid": "u1", "sessionId": session, "cwd": "/w", "timestamp": "2026-11-25T10:00:00.000Z",
        "message": {"role": "user", "content": "Fix the login"}}) + "\n")
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "25"
    day.mkdir(parents=True)
    (day / f"rollout-2026-11-25T10-00-00-{thread}.jsonl").write_text("".join(json.dumps(
        {"timestamp": "2026-11-25T10:00:00.000Z", "type": kind, "payload": payload}) + "\n" for kind, payload in [
        ("session_meta", {"id": thread, "timestamp": "2026-11-25T10:00:00.000Z", "cwd": "/w"}),
        ("event_msg", {"type": "task_started", "turn_id": "external-import-turn-1"}),
        ("event_msg", {"type": "user_message", "message": "Fix the login"}),
        ("event_msg", {"type": "agent_message", "message": "<EXTERNAL SESSION IMPORTED>"}),
        ("event_msg", {"type": "task_complete", "turn_id": "external-import-turn-1"}),
    ]))
    (tmp_path / "codex" / "external_agent_session_imports.json").write_text(json.dumps({"records": [
        {"source_path": str(project / f"{session}.jsonl"), "content_sha256": "0" * 64,
         "imported_thread_id": thread, "imported_at": 1795600000}]}))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude", "codex": tmp_path / "codex"})
    datasette = make_datasette(tmp_path / "o.db")
    await datasette.invoke_startup()
    html = await page(datasette, f"/-/obelisk/session/codex:{thread}")
    assert f'<p class="ob-meta">import of <a href="/-/obelisk/session/{session}">Fix the login</a></p>' in html
    html = await page(datasette, f"/-/obelisk/session/{session}")
    assert re.findall(r'<li><a href="([^"]*)">([^<]*)</a> <span class="ob-muted">([^<]*)</span></li>', html) == [
        (f"/-/obelisk/session/codex:{thread}", "Fix the login", "import · 1 message")]


@pytest.mark.asyncio
async def test_a_session_page_says_what_claude_code_reported_of_it(tmp_path):
    # small.jsonl names a worktree (its last worktree-state, trimmed); the cost, the
    # lines changed and the model's ending come from lines this copy is given.
    db, _ = copy_corpus(tmp_path, SMALL)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET worktree_branch = 'wt<1>', worktree_base_branch = 'main', cost_usd = 1.8449, "
                     "lines_added = 1214, lines_removed = 61, ended_by_model = 1 WHERE id = 'small'")
        conn.execute("UPDATE sessions SET cost_usd = 0.04213, lines_added = 0, lines_removed = 0 "
                     "WHERE id = 'small:agent-sidechain-sys1'")
    conn.close()
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    html = await page(datasette, "/-/obelisk/session/small")
    assert '<span title="[trimmed for fixture]">worktree wt&lt;1&gt; from main</span>' in html
    assert '<span title="The cost Claude Code estimated">$1.84</span>' in html
    assert '<span title="The lines of code Claude Code counted">+1,214 −61 lines</span>' in html
    assert "<span>ended by the model</span>" in html
    html = await page(datasette, "/-/obelisk/session/small:agent-sidechain-sys1")
    assert '<span title="The cost Claude Code estimated">$0.0421</span>' in html
    assert "+0 −0 lines" in html
    assert "worktree" not in html.split('<div class="ob-toolbar">')[0] and "ended by the model" not in html


def test_a_transcript_page_far_into_a_session_reads_only_its_own_lines(tmp_path):
    """Which of a page's tool results answer a call on an earlier page is asked
    from the page's results: reading every line before the page made the page at
    line 299,600 of a 300,000-line session take 0.9 s (0.05 s at its start)."""
    from datasette_obelisk.query import transcript
    from datasette_obelisk.store.db import open_db

    conn = open_db(tmp_path / "o.db")
    sql = transcript.EARLIER_CALLS_SQL.format(marks="?, ?")
    plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, ["s", 299_600, "a", "b"])]
    searches = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    assert searches[0].startswith("SEARCH r USING INDEX tool_results_message (message_uuid=?)"), plan
    assert "SEARCH m USING INDEX sqlite_autoindex_messages_1 (uuid=?)" in searches, plan


@pytest.mark.asyncio
async def test_a_session_whose_log_has_no_times_shows_no_empty_date(tmp_path):
    """A log without timestamps: no empty date between the separators of a result's line,
    nor an empty range (' →  UTC') on its transcript, nor on its failures."""
    from datasette_obelisk.store.ingest import ingest

    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    lines = [
        {"type": "user", "uuid": "t1", "parentUuid": None, "sessionId": "timeless", "cwd": "/w",
         "message": {"role": "user", "content": "timeless wombat question"}},
        {"type": "assistant", "uuid": "t2", "parentUuid": "t1", "sessionId": "timeless", "cwd": "/w",
         "message": {"role": "assistant", "model": "claude-test", "content": [
             {"type": "tool_use", "id": "toolu_t", "name": "Bash", "input": {"command": "false"}}]}},
        {"type": "user", "uuid": "t3", "parentUuid": "t2", "sessionId": "timeless", "cwd": "/w",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_t", "content": "wombat failed", "is_error": True}]}},
    ]
    (project / "timeless.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    for url, params in (("/-/obelisk", {}), ("/-/obelisk", {"q": "wombat"}), ("/-/obelisk/failures", {}),
                        ("/-/obelisk/session/timeless", {})):
        html = await page(datasette, url, **params)
        assert "timeless" in html, url
        metas = re.findall(r'<div class="ob-meta">(.*?)</div>', html, re.S)
        assert metas and not any("<span></span>" in meta or "<span> → " in meta for meta in metas), (url, metas)


@pytest.mark.asyncio
async def test_an_unknown_database_page_names_the_served_ones_and_links_out_of_it(ds):
    """?db= naming no archive: the 404 says which ones there are, and its links (the tabs,
    the search form) leave the unknown name behind instead of answering this 404 again."""
    html = await page(ds, "/-/obelisk/overview", 404, db="nope")
    assert "no obelisk database named &#39;nope&#39;; this instance serves &#39;obelisk&#39;" in html
    assert "nope" not in "".join(links(html)) and 'value="nope"' not in html
    assert "/-/obelisk/overview" in links(html)


@pytest.mark.asyncio
async def test_a_failure_that_answers_no_stored_call_links_to_where_its_result_is_shown(ds):
    """small.jsonl's sidechain holds a blocked result whose call is not in the log: the failures page
    links to that result on its transcript (an injected line there), not to the transcript's start."""
    html = await page(ds, "/-/obelisk/failures", sessionId="small:agent-sidechain-sys1")
    item = re.search(r'<h2>Tool result <span class="ob-outcome blocked">.*?</li>', html, re.S)
    assert item, "the orphan result is listed"
    link = next(link for link in links(item.group(0)) if link.startswith("/-/obelisk/session/"))
    assert "message=" in link  # (the result by its id: where the transcript shows it when the link is followed)
    response = await ds.client.get(link)
    assert response.status_code == 302, response.text[:300]
    target = response.headers["location"]
    path, _, anchor = target.partition("#")
    assert anchor.startswith("m"), target
    assert f'id="{anchor}"' in await page(ds, path)



@pytest.mark.asyncio
async def test_a_session_named_a_dot_segment_is_linked_so_a_browser_keeps_it(tmp_path):
    """A Claude Code log named ``..jsonl`` or ``...jsonl`` is session ``.`` or ``..``:
    a link to ``/-/obelisk/session/..`` is ``/-/obelisk/`` to a browser (RFC 3986
    removes dot segments), so the session could not be opened from any page."""
    from datasette_obelisk.store.ingest import ingest

    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    for name in (".", ".."):
        line = {"type": "user", "uuid": f"u{len(name)}", "parentUuid": None, "sessionId": name, "cwd": "/w",
                "timestamp": "2026-03-01T10:00:00Z", "message": {"role": "user", "content": f"dotted zebrafish {len(name)}"}}
        (project / f"{name}.jsonl").write_text(json.dumps(line) + "\n")
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    listing = await page(datasette, "/-/obelisk", q="zebrafish")
    links = {href for href in re.findall(r'href="([^"]*/session/[^"/?]*)"', listing)}
    assert links == {"/-/obelisk/session/%2E", "/-/obelisk/session/%2E%2E"}, links
    for name, href in ((".", "/-/obelisk/session/%2E"), ("..", "/-/obelisk/session/%2E%2E")):
        assert f"dotted zebrafish {len(name)}" in await page(datasette, href)
        await page(datasette, href + "/lineage")


@pytest.mark.asyncio
async def test_sessions_of_a_branch_and_days_are_paged_on_the_page_with_them(ds, web_db):
    # The stored query takes the day a session started and the session's own branch, where the
    # page takes any session active on those days with a message on the branch: the page lists
    # them itself, a page at a time, and links no list of other sessions.
    conn = sqlite3.connect(web_db)
    branch, day = conn.execute(
        "SELECT git_branch, substr(started_at, 1, 10) FROM sessions WHERE parent_session_id IS NULL "
        "AND git_branch IS NOT NULL AND git_branch != '' AND started_at LIKE '____-__-__T%' "
        "ORDER BY started_at LIMIT 1").fetchone()
    conn.close()
    html = await page(ds, "/-/obelisk", branch=branch, **{"from": day, "to": day})
    assert not [link for link in links(html) if "obelisk_sessions" in link]
    assert f"Branch: {html_escape(branch)}" in html and f"Date: {day}" in html
    assert re.findall(r'<h3><a href="/-/obelisk/session/([^"]+)"', html)
    # a cursor this list did not give is refused, not a server error
    await page(ds, "/-/obelisk", 400, branch=branch, cursor="bogus")
    response = await ds.client.get("/-/obelisk?source=claude&source=codex")
    [following] = [link for link in links(response.text) if "cursor=" in link]
    cursor = parse_qs(urlsplit(following).query)["cursor"][0]
    await page(ds, "/-/obelisk", 400, branch=branch, cursor=cursor)  # another list's
    await page(ds, "/-/obelisk", 400, q="the", cursor=cursor)  # not a search's


def many_failures_db(tmp_path, counts: dict[str, int]):
    """A Claude archive whose session in project ``-w-<name>`` makes ``count`` calls that fail
    (``make target<n>``), ten a second (ties broken as the failures list breaks them)."""
    from datetime import datetime, timedelta, timezone

    from datasette_obelisk.store.ingest import ingest

    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    n = 0
    for name, count in counts.items():
        folder = tmp_path / "claude" / "projects" / f"-w-{name}"
        folder.mkdir(parents=True)
        lines, parent = [], None
        for _ in range(count):
            n += 1
            at = (start + timedelta(seconds=n // 10)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            for uuid, role, content in (
                (f"c{n}", "assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": f"make target{n}"}}]),
                (f"r{n}", "user", [{"type": "tool_result", "tool_use_id": f"t{n}", "is_error": True, "content": f"target{n} Error 2"}]),
            ):
                lines.append({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": name, "timestamp": at,
                              "message": {"role": role, "content": content}})
                parent = uuid
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    return tmp_path / "o.db"


def listed_failures(html: str) -> list[int]:
    items = re.findall(r'<li class="ob-result">(.*?)</li>\s*(?=<li class="ob-result">|</ol>)', html, re.S)
    return [int(re.search(r"make target(\d+)", item).group(1)) for item in items]


@pytest.mark.asyncio
async def test_the_failures_page_pages_past_the_newest_thousand_with_its_filters(tmp_path):
    # More failures than a page can list (1,000 at most): the page after the last one shown lists
    # the rest, newest first, under the same filters, however many there are.
    db = many_failures_db(tmp_path, {"alpha": 1030, "beta": 25})
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    alpha = set(range(1, 1031))

    first = await page(datasette, "/-/obelisk/failures", project="alpha", limit="1000")
    assert "The newest 1,000 of 1,030." in first
    [following] = [unescape(link) for link in re.findall(r'<a rel="next" href="([^"]+)"', first)]
    query = parse_qs(urlsplit(following).query)
    assert query["project"] == ["alpha"] and query["limit"] == ["1000"]
    second = await page(datasette, following)
    assert "Failures 1,001–1,030 of 1,030, newest first." in second and 'rel="next"' not in second
    shown = listed_failures(first) + listed_failures(second)
    assert shown == sorted(alpha, reverse=True)

    # every failure, fifty a page, as failures() lists the newest (ties included)
    url, every = "/-/obelisk/failures", []
    while url:
        html = await page(datasette, url)
        every += listed_failures(html)
        url = next((unescape(m) for m in re.findall(r'<a rel="next" href="([^"]+)"', html)), None)
    assert every == list(range(1055, 0, -1))
    conn = sqlite3.connect(db)
    from datasette_obelisk.query import obelisk

    assert [int(f["toolCall"]["id"][1:]) for f in obelisk.failures(conn, {"limit": 50})] == every[:50]
    conn.close()

    # a cursor this list did not give is refused, not a server error
    await page(datasette, "/-/obelisk/failures", 400, cursor="bogus")
    cursor = query["cursor"][0]
    await page(datasette, "/-/obelisk/failures", 400, project="beta", cursor=cursor)


def many_sessions_db(tmp_path, count: int):
    """An archive of ``count`` top-level sessions, half Claude's, half Codex's: one ingested (for
    the schema), the rest written straight into it."""
    from datetime import datetime, timedelta, timezone

    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-tmp-many"
    folder.mkdir(parents=True)
    line = {"type": "user", "uuid": "u0", "sessionId": "many-0000", "timestamp": "2026-03-05T10:00:00.000Z",
            "message": {"role": "user", "content": "session number 0"}}
    (folder / "many-0000.jsonl").write_text(json.dumps(line) + "\n")
    db = tmp_path / "many.db"
    ingest(db, {"claude": tmp_path / "claude"})
    start = datetime(2026, 3, 5, 10, tzinfo=timezone.utc)
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany(
            "INSERT INTO sessions (id, source, title, project, started_at, ended_at, message_count) VALUES (?, ?, ?, ?, ?, ?, 1)",
            [(f"many-{n:04d}", "codex" if n % 2 else "claude", f"session number {n}", "-tmp-many",
              at, at) for n in range(1, count) for at in [(start + timedelta(minutes=n // 3)).strftime("%Y-%m-%dT%H:%M:%S.000Z")]],
        )
    conn.close()
    return db


async def every_listed(datasette, link: str) -> list[str]:
    """The sessions a link to a list of sessions lists: the stored query's rows, or page after
    page of the search page's sessions."""
    from urllib.parse import urljoin

    path, _, query = unescape(link).partition("?")
    if path.endswith("/obelisk_sessions"):
        return [row["id"] for row in (await datasette.client.get(f"{path}.json?{query}&_shape=array")).json()]
    assert path == "/-/obelisk", link
    listed, url = [], unescape(link)
    while url:
        html = await page(datasette, url)
        listed += [unquote(s) for s in re.findall(r'<h3><a href="/-/obelisk/session/([^"]+)"', html)]
        url = next((urljoin(url, unescape(m)) for m in re.findall(r'<a rel="next" href="([^"]+)"', html)), None)
    return listed


@pytest.mark.asyncio
async def test_the_sessions_card_and_every_session_link_list_more_than_a_thousand_sessions(tmp_path):
    # More sessions than the obelisk_sessions stored query lists at once (1,000): the overview's
    # card and the search page's "Every session" link lead to a list of every one of them.
    db = many_sessions_db(tmp_path, 1050)
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    every = {f"many-{n:04d}" for n in range(1050)}
    html = await page(datasette, "/-/obelisk/overview")
    [(link, count)] = re.findall(r'<a class="ob-card" href="([^"]+)"><div class="value">([\d,]+)</div><div class="label">sessions<', html)
    listed = await every_listed(datasette, link)
    assert count == "1,050" and len(listed) == len(set(listed)) and set(listed) == every
    for source, wanted in (("", every), ("codex", {s for s in every if int(s[5:]) % 2})):
        html = await page(datasette, "/-/obelisk", **({"source": source} if source else {}))
        # (the link when the page shows one, else the page's own pager: both list every one)
        shown = [link for link in links(html) if "obelisk_sessions" in link]
        listed = await every_listed(datasette, shown[0] if shown else "/-/obelisk" + (f"?source={source}" if source else ""))
        assert len(listed) == len(set(listed)) and set(listed) == wanted, source


@pytest.mark.asyncio
async def test_sessions_listed_before_a_query_take_a_page_size(ds, web_db):
    # 15 sessions a page by default; ``limit`` (1 to 1,000, as other pages' limits) lists that
    # many a page, and the pager's links keep it, so every session is listed once at any size.
    from datasette_obelisk.query.obelisk import TOP_LEVEL

    conn = sqlite3.connect(web_db)
    every = {row[0] for row in conn.execute(f"SELECT s.id FROM sessions s WHERE {TOP_LEVEL}")}
    conn.close()
    assert len(every) > 15
    assert len(listed(await page(ds, "/-/obelisk"))) == 15
    whole = await page(ds, "/-/obelisk", limit="1000")
    assert set(listed(whole)) == every and 'rel="next"' not in whole
    seen: list[str] = []
    url, params = "/-/obelisk", {"limit": "4"}
    while True:
        html = await page(ds, url, **params)
        found = listed(html)
        assert 1 <= len(found) <= 4
        seen += found
        nexts = re.findall(r'<a rel="next" href="([^"]+)"', html)
        if not nexts:
            break
        url, params = "/-/obelisk" + unescape(nexts[0]), {}  # (the page's links are its query strings)
        assert parse_qs(urlsplit(url).query)["limit"] == ["4"]  # the next page keeps the size
    assert len(seen) == len(set(seen)) and set(seen) == every
    # the page sizes offered link this list at that size
    offered = [link for link in links(await page(ds, "/-/obelisk", limit="4")) if "limit=50" in link]
    assert offered and len(listed(await page(ds, "/-/obelisk" + offered[0]))) == min(50, len(every))
    # a cursor a page of one size gave goes on at another (it marks a place, not a page)
    first = await page(ds, "/-/obelisk", limit="4")
    cursor = parse_qs(urlsplit(unescape(re.findall(r'<a rel="next" href="([^"]+)"', first)[0])).query)["cursor"][0]
    assert listed(await page(ds, "/-/obelisk", limit="8", cursor=cursor))[:4] == seen[4:8]
    # out of bounds, or no number: refused with the form kept, as other pages' limits
    for bad in ("0", "1001", "many", "-3"):
        refused = await page(ds, "/-/obelisk", 400, limit=bad)
        assert "OBELISK_INVALID_ARGUMENT" in refused and "limit must be" in refused and 'name="q"' in refused
        # with a query too: the links keep it for the list the form goes back to
        refused = await page(ds, "/-/obelisk", 400, limit=bad, q="alpha")
        assert "OBELISK_INVALID_ARGUMENT" in refused and "limit must be" in refused and 'value="alpha"' in refused


@pytest.mark.asyncio
async def test_terminal_escape_sequences_are_left_out_of_every_page(tmp_path):
    """Colours, a window title and a hyperlink a command wrote for a terminal: a page shows
    the words only (a browser draws ESC as a box), wherever the text is shown, even when
    a long text is cut short right after an ESC [ or an attribute ends with an ESC."""
    from datasette_obelisk.query.transcript import RESULT_CHARS
    from datasette_obelisk.store.ingest import ingest

    session = "ansi-session-0001"
    red = "\x1b]0;npm test\x07\x1b[1;31merror:\x1b[0m zebrafish \x1b[38;5;196m<b>\x1b[0m\x1b(B"
    cut = "x" * (RESULT_CHARS - 1) + "\x1b[36m" + "y" * 10  # (the page shows the first RESULT_CHARS)
    output = "\x1b[?25l\x1b[2K\x1b[1G\x1b]8;;https://example.invalid/a?b=1&c=2\x1b\\docs\x1b]8;;\x1b\\ failed\x1b"
    lines = [
        {"type": "user", "uuid": "a1", "parentUuid": None, "message": {"role": "user", "content": red}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "a1",
         "message": {"role": "assistant", "model": "m", "content": [{"type": "text", "text": cut}]}},
        {"type": "assistant", "uuid": "a3", "parentUuid": "a2", "message": {"role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": "toolu_ansi1", "name": "Bash", "input": {"command": "npm test"}}]}},
        {"type": "user", "uuid": "a4", "parentUuid": "a3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_ansi1", "content": output, "is_error": True}]}},
    ]
    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    (project / f"{session}.jsonl").write_text("".join(
        json.dumps({**line, "sessionId": session, "cwd": "/w", "timestamp": f"2026-03-01T10:00:0{n}Z"}) + "\n"
        for n, line in enumerate(lines)))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    datasette = make_datasette(db)
    await datasette.invoke_startup()

    transcript = await page(datasette, f"/-/obelisk/session/{session}")
    assert "<h1>error: zebrafish &lt;b&gt;</h1>" in transcript
    assert "<title>error: zebrafish &lt;b&gt; · Obelisk</title>" in transcript
    assert '<div class="ob-text">' + "x" * (RESULT_CHARS - 1) + '<span class="ob-muted ob-more"> … 14 more characters' in transcript
    assert "<pre class=\"ob-pre\">docs failed</pre>" in transcript
    for url, params in ((f"/-/obelisk/session/{session}", {}), ("/-/obelisk", {"q": "zebrafish"}),
                        (f"/-/obelisk/event/{session}/4", {}), (f"/-/obelisk/session/{session}/lineage", {"seq": "1"}),
                        ("/-/obelisk/failures", {}), ("/-/obelisk/session/%1B%5B31mnope", {})):
        html = await page(datasette, url, status=404 if "nope" in url else 200, **params)
        assert "\x1b" not in html, url
        assert "[0m" not in html and "[1;31m" not in html and "]0;" not in html, url
    # (the raw log line and the JSON keep what the log holds)
    raw = (await datasette.client.get(f"/-/obelisk/api/session-query/event/{session}/1")).json()
    assert raw["target"]["data"]["text"] == red


@pytest.mark.asyncio
async def test_search_results_are_headed_under_the_results_heading(ds):
    # In the outline a screen reader walks, each session found sits under "Results" as each
    # facet sits under "Refine" (and each recent session under "Recent sessions"), not beside it.
    html = await page(ds, "/-/obelisk", q="the")
    outline = [(int(level), re.sub(r"<[^>]+>", "", text)) for level, text in re.findall(r"<h([1-6])[^>]*>(.*?)</h\1>", html, re.S)]
    results, refine = outline.index((2, "Results")), outline.index((2, "Refine"))
    found = outline[results + 1:refine]
    assert len(found) == html.count('<li class="ob-result">') > 1
    assert {level for level, _ in found} == {3}, found[:3]


def with_sessions(web_db, tmp_path, count: int, parent_of: str) -> str:
    """A copy of the web database with sessions lin-1 .. lin-<count> (``parent_of`` the
    parent of lin-i, SQL; :root the sample session), each of them with a title."""
    db = tmp_path / "lineage.db"
    shutil.copy(web_db, db)
    conn = sqlite3.connect(db)
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count) "
        "INSERT INTO sessions (id, source, parent_session_id, relationship, started_at, title, message_count) "
        f"SELECT 'lin-' || i, 'claude', {parent_of}, 'continuation', "
        "strftime('%Y-%m-%dT%H:%M:%fZ', '2026-04-01', '+' || i || ' minutes'), 'Title of ' || i, 0 FROM n",
        {"count": count, "root": SAMPLE},
    )
    conn.commit()
    conn.close()
    return db


def forest_of(html: str) -> str:
    start = html.index('<ul class="ob-tree"')
    depth = 0
    for tag in re.finditer(r"<(/?)ul\b", html[start:]):
        depth += -1 if tag.group(1) else 1
        if not depth:
            return html[start:start + tag.end()]
    raise AssertionError("the forest's list is not closed")


@pytest.mark.asyncio
async def test_the_lineage_page_of_a_session_continued_a_thousand_times(web_db, tmp_path):
    """Every generation is listed, each with its title, the first nested in one another
    (a RecursionError, a 500 page, before); the tree's markup stays balanced."""
    ds = make_datasette(with_sessions(web_db, tmp_path, 1000, "CASE i WHEN 1 THEN :root ELSE 'lin-' || (i - 1) END"))
    for current in ("lin-1000", "lin-3", SAMPLE):
        forest = forest_of(await page(ds, f"/-/obelisk/session/{current}/lineage"))
        assert forest.count("<li") == forest.count("</li>") == 1001
        assert [f"/-/obelisk/session/lin-{i}" in links(forest) for i in (1, 500, 1000)] == [True] * 3
        assert forest.count(">Title of ") == 1000 and forest.count('<li class="current">') == 1
        assert forest.index(">Title of 99<") < forest.index(">Title of 100<") < forest.index(">Title of 1000<")
        assert forest.count("<ul") == forest.count("</ul") > 50


@pytest.mark.asyncio
async def test_the_lineage_page_of_a_session_with_two_thousand_children_describes_every_one(web_db, tmp_path):
    """Each of 2,000 children has its title and message count, not only the first 1,000."""
    ds = make_datasette(with_sessions(web_db, tmp_path, 2000, ":root"))
    forest = forest_of(await page(ds, f"/-/obelisk/session/{SAMPLE}/lineage"))
    assert forest.count("<li") == forest.count("</li>") == 2001
    assert forest.count(">Title of ") == 2000 and forest.count(" · 0 messages") == 2000


def tool_output_past_a_page_db(tmp_path, lines: int = 502):
    """A Claude session of ``lines`` lines whose #500 calls a tool and #501 is its output."""
    from datasette_obelisk.store.ingest import ingest

    project = tmp_path / "claude" / "projects" / "-w"
    project.mkdir(parents=True)
    written, parent = [], None
    for n in range(1, lines + 1):
        role = "user" if n % 2 else "assistant"
        content = f"line {n} of the wombat session"
        if n == 500:
            content = [{"type": "tool_use", "id": "toolu_edge", "name": "Bash", "input": {"command": "ls"}}]
        elif n == 501:
            content = [{"type": "tool_result", "tool_use_id": "toolu_edge", "content": "edge output"}]
        written.append({"type": role, "uuid": f"u{n}", "parentUuid": parent, "sessionId": "edge", "cwd": "/w",
                        "timestamp": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
                        "message": {"role": role, "content": content, **({"model": "claude-test"} if role == "assistant" else {})}})
        parent = f"u{n}"
    (project / "edge.jsonl").write_text("".join(json.dumps(line) + "\n" for line in written))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / "claude"})
    return db


@pytest.mark.asyncio
async def test_the_next_transcript_page_starts_past_the_output_shown_with_its_call(tmp_path):
    """A page that ends with a tool call shows its output with it: the next page starts after that
    output, not at it, and the page before that one is the page it came from."""
    datasette = make_datasette(tool_output_past_a_page_db(tmp_path))
    await datasette.invoke_startup()
    first = await page(datasette, "/-/obelisk/session/edge")
    assert 'id="tool-toolu_edge"' in first and "edge output" in first
    assert "Continue from #502 »" in first and "/-/obelisk/session/edge?start=502" in links(first)
    second = await page(datasette, "/-/obelisk/session/edge", start="502")
    assert "is the output of a tool call" not in second and 'id="m502"' in second
    assert "edge output" not in second and "Previous" not in second  # the page before: the first one
    assert "/-/obelisk/session/edge" in links(second)


@pytest.mark.asyncio
async def test_a_transcript_offers_a_view_toggle_only_when_the_session_has_lines_it_shows(ds, web_db, tmp_path):
    from datasette_obelisk.query import transcript

    plain = make_datasette(tool_output_past_a_page_db(tmp_path, lines=3))  # prompts and answers only
    await plain.invoke_startup()
    html = await page(plain, "/-/obelisk/session/edge")
    assert "data-toggle" not in html and "rewound branches" not in html and "injected lines" not in html
    assert "log-only lines" not in html
    # an option that is on can be taken back, lines or none
    on = await page(plain, "/-/obelisk/session/edge", meta="1", log="1", shadowed="1")
    assert all(f"Hide {what}" in on for what in ("rewound branches", "injected lines", "log-only lines"))
    # a session with lines of each kind offers each, named alike both ways
    both = await page(ds, f"/-/obelisk/session/{FORKED}") + await page(ds, f"/-/obelisk/session/{FORKED}", shadowed="1")
    assert "Show rewound branches" in both and "Hide rewound branches" in both and "shadowed (rewound)" not in both
    # each is offered where it shows more: the whole transcript lists more lines with it than without
    conn = sqlite3.connect(web_db)
    conn.row_factory = sqlite3.Row

    def listed(session_id, **options):
        shown = transcript.transcript(conn, session_id, limit=5000, **options)["entries"]
        return sum(len(entry_seqs(e)) if "message" in e else e["count"] for e in shown)

    offered = 0
    for (session_id,) in conn.execute("SELECT id FROM sessions ORDER BY id").fetchall():
        holds = transcript.transcript(conn, session_id, limit=1)["holds"]
        everything = listed(session_id, rewound=True, meta=True, log=True)
        folded = transcript.transcript(conn, session_id, limit=5000, meta=True, log=True)["entries"]
        assert holds["rewound"] == any(e["kind"] == "rewound" for e in folded), session_id
        assert holds["meta"] == (listed(session_id, rewound=True, log=True) < everything), session_id
        assert holds["log"] == (listed(session_id, rewound=True, meta=True) < everything), session_id
        offered += sum(holds.values())
    assert offered > 10


@pytest.mark.asyncio
async def test_a_link_to_a_tool_call_the_session_does_not_have_says_so(ds):
    """``?call=`` naming no call of this session (a call of another, a mistyped id) shows the
    page asked for, saying the call is not there, instead of silently showing the first page."""
    base = f"/-/obelisk/session/{FORKED}"
    found = await page(ds, base, call="toolu_f002")
    assert 'id="tool-toolu_f002"' in found and "has no tool call" not in found
    for call in ("no-such-call", "<b>toolu_elsewhere</b>"):
        missing = await page(ds, base, call=call)
        assert f"This session has no tool call “{html_escape(call)}”: the transcript from its start." in missing, call
        assert "<b>toolu_elsewhere" not in missing and 'id="m1"' in missing
    later = await page(ds, base, call="no-such-call", start="7")
    assert "This session has no tool call “no-such-call”: the transcript from #7." in later


@pytest.mark.asyncio
async def test_an_event_link_shows_the_same_event_after_an_ingest_renumbers_its_session(tmp_path):
    """The search page links an event by its seq and its id; after an ingest moved the event
    (a Codex fork giving up its copy of its parent's lines), the link shows that event where it
    now is, its JSON too, and a link to an event the session gave up is a 404, never another event."""
    from urllib.parse import quote

    from test_session_query import renumbered_fork

    db, fork, parent_arrives = renumbered_fork(tmp_path)
    ds = make_datasette(db)
    await ds.invoke_startup()
    found = await page(ds, "/-/obelisk", q="own prompt")
    event_links = {}
    for link in links(found):
        path, _, query = link.partition("?")
        if path.startswith("/-/obelisk/event/"):
            event_links[int(path.rsplit("/", 1)[1])] = link
    assert sorted(event_links)[:2] == [1, 5]  # (A's prompt, copied, and B's own)
    b_prompt, a_prompt = event_links[5], event_links[1]
    assert "B's own prompt" in unescape(await page(ds, b_prompt)) and "A's own prompt" in unescape(await page(ds, a_prompt))
    parent_arrives()
    moved = unescape(await page(ds, b_prompt))
    assert "Event #1 " in moved and "B's own prompt" in moved and "A's own prompt" not in moved
    assert f"/-/obelisk/event/{quote(fork, safe=':@')}/1?id=" in moved
    await page(ds, a_prompt, 404)  # (seq 1 now holds B's prompt: not what the link named)
    event_id = parse_qs(urlsplit(b_prompt).query)["id"][0]
    response = await ds.client.get(f"/-/obelisk/api/session-query/event/{quote(fork, safe=':@')}/5", params={"id": event_id})
    assert response.status_code == 200
    assert (response.json()["target"]["seq"], response.json()["target"]["data"]["text"]) == (1, "B's own prompt")
    lineage = await page(ds, f"/-/obelisk/session/{quote(fork, safe=':@')}/lineage", seq="5", id=event_id)
    assert "Event #1 " in lineage


@pytest.mark.asyncio
async def test_a_transcript_link_to_a_message_reaches_it_after_an_ingest_renumbers_its_session(tmp_path):
    """"In the transcript" names the message by its id (``?message=``), and the session page sends
    it to where the transcript shows that message when the link is followed: after an ingest
    renumbered the session, the same message at its new place; a message the session gave up
    is said to be missing, never the line that took its place."""
    from urllib.parse import quote

    from test_session_query import renumbered_fork

    db, fork, parent_arrives = renumbered_fork(tmp_path)
    ds = make_datasette(db)
    await ds.invoke_startup()
    quoted = quote(fork, safe=":@")

    async def in_transcript(seq):
        html = await page(ds, f"/-/obelisk/event/{quoted}/{seq}")
        return unescape(re.search(r'<a href="([^"]+)">In the transcript</a>', html).group(1))

    b_prompt, a_prompt = await in_transcript(5), await in_transcript(1)  # (B's own prompt, A's copied)
    assert "message=" in b_prompt and "#" not in b_prompt
    parent_arrives()
    assert rows(db, "SELECT seq FROM messages WHERE session_id = ? AND text = ?", [fork, "B's own prompt"]) == [(1,)]
    response = await ds.client.get(b_prompt)
    assert response.status_code == 302
    assert response.headers["location"] == f"/-/obelisk/session/{quoted}#m1"
    assert 'id="m1"' in await page(ds, f"/-/obelisk/session/{quoted}")
    missing = unescape(await page(ds, a_prompt))
    assert "This session's transcript has no message" in missing and parse_qs(urlsplit(a_prompt).query)["message"][0] in missing


@pytest.mark.asyncio
async def test_the_transcript_json_link_answers_a_session_too_long_to_read_whole(ds, monkeypatch):
    # readSession refuses a session past READ_SESSION_MAX events (413): the transcript's
    # JSON link reads it a page at a time, the page naming the next.
    from datasette_obelisk.web import api_contracts

    monkeypatch.setattr(api_contracts, "READ_SESSION_MAX", 2)
    html_text = await page(ds, f"/-/obelisk/session/{XSS_SESSION}")
    link = unescape(re.search(r'<a href="([^"]+)">JSON</a>', html_text).group(1))
    assert link == f"/-/obelisk/api/session-query/session/{XSS_SESSION}?limit=1000"
    response = await ds.client.get(link)
    assert response.status_code == 200
    found = response.json()
    assert found["session"]["id"] == XSS_SESSION and len(found["events"]) == 5 and "nextCursor" not in found


# -- prompts of sessions whose transcripts are gone --------------------------------


def gone_prompts_note(html: str) -> str | None:
    found = re.search(r'<p class="ob-muted ob-gone-prompts">.*?</p>', html, re.S)
    return found and found.group(0)


async def linked_prompts(ds, note: str) -> list[dict]:
    (href,) = links(note)
    path, _, query = href.partition("?")
    response = await ds.client.get(f"{path}.json?{query}&_shape=array")
    assert response.status_code == 200, response.text[:500]
    return response.json()


@pytest.mark.asyncio
async def test_search_says_how_many_prompts_of_gone_transcripts_match_and_links_to_them(ds):
    note = gone_prompts_note(await page(ds, "/-/obelisk", q="zebrafish"))
    assert "2 prompts from sessions whose transcripts are gone match" in note
    assert links(note) == ["/obelisk/browse_prompts?_search=%22zebrafish%22&_searchmode=raw&in_transcript=0"
                           "&_sort_desc=timestamp"]
    listed = await linked_prompts(ds, note)
    assert [(p["session_id"], p["line_no"], p["in_transcript"]) for p in listed] == [
        ("gone-session-0001", 3, 0), ("gone-session-0001", 2, 0)]
    assert SCRIPT not in note  # (the note carries no prompt text)
    # a query only a gone session's prompt holds: no session matches, the note still says so
    only = await page(ds, "/-/obelisk", q="aquarium")
    assert "No session matches" in only
    assert "1 prompt from sessions whose transcripts are gone matches" in gone_prompts_note(only)
    assert [p["text"] for p in await linked_prompts(ds, gone_prompts_note(only))] == ["commit the aquarium changes"]
    # a phrase the gone prompts do not hold as a phrase, and a query only held prompts match: no note
    assert gone_prompts_note(await page(ds, "/-/obelisk", q="zebrafish tank", mode="phrase")) is None
    assert gone_prompts_note(await page(ds, "/-/obelisk", q="render safely")) is None
    two_words = gone_prompts_note(await page(ds, "/-/obelisk", q='"tank test" zebrafish'))
    assert "2 prompts" in two_words and len(await linked_prompts(ds, two_words)) == 2


@pytest.mark.asyncio
async def test_the_gone_prompts_note_links_the_searched_database(web_db, tmp_path):
    from datasette.database import Database

    from web_fixtures import copy_db

    second = copy_db(web_db, tmp_path / "second.db")
    several = make_datasette(None)
    for path in (web_db, second):
        several.add_database(Database(several, path=str(path)))
    await several.invoke_startup()
    note = gone_prompts_note(await page(several, "/-/obelisk", q="zebrafish", db="second"))
    assert links(note)[0].startswith("/second/browse_prompts?")
    assert len(await linked_prompts(several, note)) == 2


@pytest.mark.asyncio
async def test_no_gone_prompts_note_where_the_messages_are_hidden(web_db):
    hidden = make_datasette(web_db, {"databases": {"obelisk": {"tables": {"prompt_log": {"allow": False}}}}})
    await hidden.invoke_startup()
    html = await page(hidden, "/-/obelisk", q="zebrafish")
    assert "<mark>zebrafish</mark>" in html and gone_prompts_note(html) is None


@pytest.mark.asyncio
async def test_an_error_page_keeps_the_database_in_its_crumbs(ds):
    """A page that cannot be shown (an unknown session, a refused query) still names the
    database it was asked of, as the pages it was reached from do; an unknown database is
    named nowhere."""
    crumb = '<a href="/obelisk">obelisk</a>'
    assert crumb in await page(ds, "/-/obelisk")
    assert crumb in await page(ds, "/-/obelisk/session/no-such-session", 404)
    assert crumb in await page(ds, "/-/obelisk", 400, q="AND (", mode="raw")
    missing = await page(ds, "/-/obelisk", 404, db="nope")
    assert '<a href="/nope">' not in missing and crumb not in missing


@pytest.mark.asyncio
async def test_the_first_page_of_failures_is_linked_by_its_own_address(ds):
    """« First page » names the page a reader reached from the menu, not that address with
    an empty query (which a browser keeps apart: it would not show as visited). The page's
    filters not given are undefined in its template: they add nothing to an address."""
    from jinja2 import Undefined

    from datasette_obelisk.web.urls import obelisk_url

    shown = await page(ds, "/-/obelisk/failures", limit="1")
    later = unescape(re.search(r'<a rel="next" href="([^"]*)"', shown).group(1))
    assert re.findall(r'<a href="([^"]*)">« First page</a>', await page(ds, later)) == ["/-/obelisk/failures?limit=1"]
    assert obelisk_url(ds, "/failures", limit=None, source=Undefined(), project=Undefined()) == "/-/obelisk/failures"
    assert obelisk_url(ds, "/failures", limit=2, source=Undefined()) == "/-/obelisk/failures?limit=2"


@pytest.mark.asyncio
async def test_a_long_query_is_clipped_in_the_title_as_a_session_title_is(ds):
    """A tab or a bookmark shows the start of a long query, not all of its (up to 1,000) characters."""
    words = " ".join(f"word{n}" for n in range(100))  # (some 700 characters)
    title = unescape(re.search(r"<title>(.*?)</title>", await page(ds, "/-/obelisk", q=words), re.S).group(1))
    assert title == words[:79] + "… · Search · Obelisk"
    assert "<title>zebrafish · Search · Obelisk</title>" in await page(ds, "/-/obelisk", q="zebrafish")


@pytest.mark.asyncio
async def test_a_refused_cursor_links_the_same_page_from_its_start(ds):
    """A page link whose cursor is refused (the index changed since, or it is no cursor the page
    gave) offers the same page, its filters kept, from the start."""
    def restart(html: str) -> list[str]:
        return re.findall(r'<a href="([^"]*)">Start again from the first page</a>', html)

    search = await page(ds, "/-/obelisk", 400, q="the", source="claude", cursor="bogus")
    assert "SESSION_QUERY_INVALID_CURSOR" in search and restart(search) == ["?q=the&amp;source=claude"]
    recent = await page(ds, "/-/obelisk", 400, limit="200", cursor="bogus")
    assert restart(recent) == ["?limit=200"]
    failures = await page(ds, "/-/obelisk/failures", 400, project="beta", cursor="bogus")
    assert restart(failures) == ["?project=beta"]
    assert restart(await page(ds, "/-/obelisk", 400, cursor="bogus")) == ["?"]
    # (refused for something else, the page has no such link: the same filters would be refused again)
    assert restart(await page(ds, "/-/obelisk/failures", 400, limit="0")) == []


@pytest.mark.asyncio
async def test_the_window_title_says_what_the_page_shows(ds):
    def title(html: str) -> str:
        return unescape(re.search(r"<title>(.*?)</title>", html, re.S).group(1)).strip()

    failures = await page(ds, "/-/obelisk/failures", sessionId="fe5e1c67-53e7-4862-81ae-d0e013e3270b")
    assert title(failures) == "Failures of /orchestrator create TODO app by Next.js · Obelisk"
    assert title(await page(ds, "/-/obelisk/failures")) == "Failures · Obelisk"
    # a page with nothing to show says so, as its heading does
    missing = await page(ds, "/-/obelisk/session/no-such-session", 404)
    assert title(missing) == "Not found · Obelisk" and "<h1>Not found</h1>" in missing
    refused = await page(ds, "/-/obelisk/failures", 400, limit="0")
    assert title(refused) == "Error · Obelisk" and "<h1>Cannot show this</h1>" in refused


@pytest.mark.asyncio
async def test_lists_without_a_column_heading_say_their_times_are_utc(ds):
    """Search results, recent sessions, failures and the lineage tree write "UTC" after a time,
    as the transcript's header and the tables' headings do: it is no reader's local time."""
    shown = {
        "results": await page(ds, "/-/obelisk", q="zebrafish"),
        "recent": await page(ds, "/-/obelisk", project="-tmp-xss-project"),
        "failures": await page(ds, "/-/obelisk/failures", sessionId=XSS_SESSION),
        "lineage": await page(ds, f"/-/obelisk/session/{XSS_SESSION}/lineage"),
    }
    times = {name: re.findall(r"(?:started )?2026-03-01 10:00(?: UTC)?", text) for name, text in shown.items()}
    assert times == {"results": ["2026-03-01 10:00 UTC"], "recent": ["2026-03-01 10:00 UTC"],
                     "failures": ["2026-03-01 10:00 UTC"], "lineage": ["started 2026-03-01 10:00 UTC"]}


def test_a_time_a_log_wrote_in_no_known_form_is_not_called_utc():
    from datasette_obelisk.web.template_helpers import TemplateHelpers

    assert [TemplateHelpers.when_utc(t) for t in ("2025-12-24T23:30:00-05:00", "yesterday", None)] == [
        "2025-12-25 04:30 UTC", "yesterday", ""]


@pytest.mark.asyncio
async def test_counts_past_a_thousand_are_written_with_separators(tmp_path):
    """A facet's count and a path's calls read as the totals beside them do: 1,001, not 1001."""
    from datasette_obelisk.store.ingest import ingest

    folder = tmp_path / "claude" / "projects" / "-w"
    folder.mkdir(parents=True)

    def line(uuid, parent, kind, content, n, session="big"):
        return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": session, "cwd": "/w",
                           "timestamp": f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
                           "message": {"role": kind, "content": content}}) + "\n"

    for n in range(1000):  # a thousand more sessions matching "walrus"
        (folder / f"s{n}.jsonl").write_text(line(f"s{n}-u", None, "user", "walrus", n, session=f"s{n}"))
    lines, parent = [line("u0", None, "user", "walrus: read notes.md, again and again", 0)], "u0"
    for n in range(1001):  # 1,001 reads of one file
        lines += [line(f"a{n}", parent, "assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Read",
                                                       "input": {"file_path": "/w/notes.md"}}], 1 + 2 * n),
                  line(f"r{n}", f"a{n}", "user", [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "notes"}],
                       2 + 2 * n)]
        parent = f"r{n}"
    (folder / "big.jsonl").write_text("".join(lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    datasette = make_datasette(tmp_path / "o.db")
    await datasette.invoke_startup()

    search = await page(datasette, "/-/obelisk", q="walrus")
    assert re.search(r'data-facet="source"[^>]*>claude</a> <span class="count">([^<]*)</span>', search).group(1) == "1,001"
    files = await page(datasette, "/-/obelisk/files")
    assert re.search(r'notes\.md</a></td><td class="num">([^<]*)</td><td class="num">([^<]*)</td>', files).groups() == ("1,001", "1")


@pytest.mark.asyncio
async def test_a_recall_or_a_files_filter_is_named_in_the_window_title(ds):
    """As a search's words are: a tab or a history entry tells one recall or filter from another."""
    def title(html):
        return unescape(re.search(r"<title>(.*?)</title>", html, re.S).group(1))

    assert title(await page(ds, "/-/obelisk/memories", q="schema\u202emigration")) == "schemamigration · Memories · Obelisk"
    assert title(await page(ds, "/-/obelisk/memories")) == "Memories · Obelisk"
    assert title(await page(ds, "/-/obelisk/files", contains="page.tsx")) == "page.tsx · Files · Obelisk"
    assert title(await page(ds, "/-/obelisk/files")) == "Files · Obelisk"


@pytest.mark.asyncio
async def test_an_event_page_names_its_session_and_its_time(ds):
    """A search's snippet links an event: its page links the session it is part of, by title,
    and says when it was written (it said neither but in the window title)."""
    html = await page(ds, f"/-/obelisk/event/{XSS_SESSION}/2")
    meta = re.search(r'</h1>\s*<p class="ob-meta">(.*?)</p>', html, re.S).group(1)
    found = re.fullmatch(rf'<span>in <a href="/-/obelisk/session/{XSS_SESSION}">(.*?)</a></span><span>(.*?)</span>', meta)
    assert found and unescape(found.group(1)).startswith("Render this safely: <script>") and found.group(2) == "2026-03-01 10:00 UTC"
    assert_no_payload(html)


@pytest.mark.asyncio
async def test_a_session_s_workflows_count_their_agents_in_words(tmp_path, web_db):
    db = tmp_path / "copy.db"
    shutil.copy(web_db, db)
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO workflows (run_id, session_id, timestamp, agent_count, status, workflow_name) VALUES (?, ?, ?, ?, ?, ?)",
            [("wf_one", SAMPLE, "2026-01-01T00:00:01Z", 1, "completed", "one agent"),
             ("wf_many", SAMPLE, "2026-01-01T00:00:02Z", 1200, "running", "many agents"),
             ("wf_unknown", SAMPLE, "2026-01-01T00:00:03Z", None, None, "nothing known")])
    datasette = make_datasette(db)
    await datasette.invoke_startup()
    html = await page(datasette, f"/-/obelisk/session/{SAMPLE}")
    said = re.findall(r'>(one agent|many agents|nothing known)</a> <span class="ob-muted">([^<]*)</span>', html)
    assert said == [("one agent", "completed · 1 agent"), ("many agents", "running · 1,200 agents"), ("nothing known", "")]
