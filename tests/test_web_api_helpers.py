"""The helper endpoints over HTTP: whole threads, pages that say what remains."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from datasette_obelisk.query import obelisk
from web_fixtures import ds, web_db  # noqa: F401 (fixtures)

API = "/-/obelisk/api"
# 1,230 messages, 1,569 with meta rows (the 8 user items of its 4 context blocks are meta)
LONG_THREAD = "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9"


async def get(ds, path, status=200, **params):
    response = await ds.client.get(API + path, params=params)
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/json")
    return response


@pytest.mark.asyncio
async def test_thread_answers_the_whole_session(ds):
    response = await get(ds, "/thread", sessionId=LONG_THREAD)
    assert len(response.json()) == 1230
    assert response.headers["x-total-count"] == "1230" and "link" not in response.headers
    with_meta = await get(ds, "/thread", sessionId=LONG_THREAD, includeMeta="true")
    assert len(with_meta.json()) == 1569 and with_meta.headers["x-total-count"] == "1569"


@pytest.mark.asyncio
async def test_a_thread_page_links_to_the_next(ds):
    whole = (await get(ds, "/thread", sessionId=LONG_THREAD)).json()
    first = await get(ds, "/thread", sessionId=LONG_THREAD, limit="1000")
    assert first.json() == whole[:1000]
    assert first.headers["x-total-count"] == "1230"
    assert first.headers["link"] == (
        "</-/obelisk/api/thread?sessionId=codex%3A019c8a59-e9dd-71f0-9ae3-4079fe9726a9&limit=1000"
        f"&afterUuid={quote(whole[999]['uuid'], safe='')}>; "  # (the last message listed: the next page after it)
        'rel="next"'
    )
    second = await ds.client.get(first.headers["link"][1 : first.headers["link"].index(">")])
    assert second.json() == whole[1000:] and "link" not in second.headers


@pytest.mark.asyncio
async def test_a_thread_over_the_cap_is_refused_with_a_code(ds, monkeypatch):
    monkeypatch.setattr(obelisk, "MAX_THREAD", 1000)
    response = await get(ds, "/thread", 413, sessionId=LONG_THREAD)
    assert response.json() == {"ok": False, "error": {
        "code": "OBELISK_PAYLOAD_TOO_LARGE",
        "message": f"thread(): session {LONG_THREAD!r} has 1230 messages, more than the 1000 one call returns: "
                   "page through it with limit and offset",
    }}
    assert len((await get(ds, "/thread", sessionId=LONG_THREAD, limit="1000")).json()) == 1000


# -- recent, and paths no endpoint has -------------------------------------------


@pytest.mark.asyncio
async def test_recent_is_sessions_with_a_limit(ds):
    assert (await get(ds, "/recent")).json() == (await get(ds, "/sessions", limit="10")).json()
    two = (await get(ds, "/recent", n="2")).json()
    assert len(two) == 2 and two == (await get(ds, "/sessions", limit="2")).json()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "params, message",
    [
        ({"n": "0"}, "recent(): n must be an integer between 1 and 1000, not 0"),
        ({"n": "many"}, "n must be an integer, not 'many'"),
        ({"n": "５"}, "n must be an integer, not '５'"),  # Python's int() reads other scripts' digits
        ({"n": "1_0"}, "n must be an integer, not '1_0'"),
        ({"n": "9" * 20}, "n must be a 64-bit integer, not 99999999999999999999"),
        ({"n": "1" * 4301}, "n must be a 64-bit integer, not " + "1" * 39 + "…"),  # (past what int() reads)
        ({"n": "-" + "1" * 5000}, "n must be a 64-bit integer, not -" + "1" * 38 + "…"),
        ({"n": "0" * 5000 + "1001"}, "recent(): n must be an integer between 1 and 1000, not 1001"),
        ({"limit": "2"}, "unknown parameter limit; this endpoint takes db, n"),
    ],
)
async def test_recent_refuses_a_bad_n(ds, params, message):
    body = (await get(ds, "/recent", 400, **params)).json()
    assert body == {"ok": False, "error": {"code": "OBELISK_INVALID_ARGUMENT", "message": message}}


@pytest.mark.asyncio
@pytest.mark.parametrize("path, params", [("/sessions", {}), ("/search", {"q": "hello"}), ("/failures", {})])
async def test_an_unknown_source_is_a_400_naming_the_installed_ones(ds, path, params):
    body = (await get(ds, path, 400, source="claud", **params)).json()
    message = f"{path[1:]}(): unknown source claud; installed: claude, codex, gemini"
    assert body == {"ok": False, "error": {"code": "OBELISK_INVALID_ARGUMENT", "message": message}}
    assert (await get(ds, path, source="gemini", **params)).json() == []


@pytest.mark.asyncio
@pytest.mark.parametrize("path, params", [
    ("/sessions", {}), ("/search", {"q": "zebrafish"}), ("/failures", {}), ("/summaries", {}),
    ("/prompts", {}), ("/prompts/orphans", {}),
])
async def test_a_source_is_named_in_any_case(ds, path, params):
    exact = (await get(ds, path, source="claude", **params)).json()
    assert exact  # (the corpus has claude sessions, prompts and failures)
    for spelling in ("Claude", "CLAUDE"):
        assert (await get(ds, path, source=spelling, **params)).json() == exact
    assert (await get(ds, path, source="ALL", **params)).json() == (await get(ds, path, **params)).json()


@pytest.mark.asyncio
async def test_the_prompts_mode_is_read_in_any_case_as_the_search_mode(ds):
    exact = (await get(ds, "/prompts", query="the", mode="phrase")).json()
    assert exact and (await get(ds, "/prompts", query="the", mode="PHRASE")).json() == exact
    assert (await get(ds, "/prompts", query="the", mode="Terms")).json() == (await get(ds, "/prompts", query="the")).json()


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/nope", "/recent/2", "/session-query/nope", "/thread.json"])
@pytest.mark.parametrize("method", ["get", "post"])
async def test_a_path_no_endpoint_has_is_a_json_404(ds, path, method):
    response = await getattr(ds.client, method)(API + path)
    assert response.status_code == 404 and response.headers["content-type"].startswith("application/json")
    assert response.json() == {"ok": False, "error": {
        "code": "OBELISK_NOT_FOUND",
        "message": f"no endpoint {API}{path}; {API}/openapi.json lists them",
    }}


@pytest.mark.asyncio
async def test_the_api_root_serves_its_openapi_description(ds):
    root = await ds.client.get(API)
    assert root.status_code == 200 and root.json() == (await ds.client.get(f"{API}/openapi.json")).json()
    assert (await ds.client.get(f"{API}/")).headers["location"] == API


@pytest.mark.asyncio
async def test_a_trailing_slash_still_redirects(ds):
    response = await ds.client.get(f"{API}/sessions/")
    assert (response.status_code, response.headers["location"]) == (302, f"{API}/sessions")


@pytest.mark.asyncio
async def test_file_history_reads_another_spelling_of_the_path_as_the_path(ds):
    async def history(path):
        response = await ds.client.get(API + "/file-history", params={"path": path})
        assert response.status_code == 200, response.text[:500]
        return response.json()

    plain = await history("/home/testuser/fork-project/quicksort.py")
    assert plain != []
    for spelled in ("/home/testuser/fork-project/quicksort.py/", "/home//testuser/./fork-project/quicksort.py"):
        assert await history(spelled) == plain


# -- prompts: the prompt logs' prompts -------------------------------------------


@pytest.mark.asyncio
async def test_prompts_lists_the_prompt_logs_newest_first(ds):
    from web_fixtures import GONE_SESSION, XSS_SESSION

    found = (await get(ds, "/prompts")).json()
    assert [(p["session_id"], p["in_transcript"], p["line_no"]) for p in found] == [
        (GONE_SESSION, 0, 4), (GONE_SESSION, 0, 3), (GONE_SESSION, 0, 2), (XSS_SESSION, 1, 1)]
    assert found[0] == {
        "id": found[0]["id"], "source": "claude", "session_id": GONE_SESSION, "project": "/tmp/xss-project",
        "timestamp": "2026-03-01T11:02:00.000Z", "text": "commit the aquarium changes", "pasted_json": None,
        "in_transcript": 0, "file_path": found[0]["file_path"], "line_no": 4,
    }
    assert found[0]["file_path"].endswith("/history.jsonl")
    matching = (await get(ds, "/prompts", query="zebrafish")).json()
    assert sorted(p["line_no"] for p in matching) == [1, 2, 3]
    missing = (await get(ds, "/prompts", query="zebrafish", missing="true")).json()
    assert sorted(p["line_no"] for p in missing) == [2, 3]
    assert (await get(ds, "/prompts", sessionId=XSS_SESSION)).json() == found[3:]
    assert (await get(ds, "/prompts", source="codex")).json() == []
    assert (await get(ds, "/prompts", project="/tmp/xss%")).json() == found
    assert (await get(ds, "/prompts", query="zebrafish tank", mode="phrase")).json() == []
    assert len((await get(ds, "/prompts", query="zebrafish tank")).json()) == 2


@pytest.mark.asyncio
async def test_prompts_pages_with_limit_and_offset(ds):
    whole = (await get(ds, "/prompts")).json()
    assert (await get(ds, "/prompts", limit="2")).json() == whole[:2]
    assert (await get(ds, "/prompts", limit="2", offset="2")).json() == whole[2:]
    assert (await get(ds, "/prompts", offset="4")).json() == []


@pytest.mark.asyncio
async def test_prompt_orphans_are_the_sessions_known_only_from_the_prompt_logs(ds):
    from web_fixtures import GONE_SESSION

    assert (await get(ds, "/prompts/orphans")).json() == [{
        "session_id": GONE_SESSION, "source": "claude", "project": "/tmp/xss-project", "prompts": 3,
        "first_at": "2026-03-01T11:00:00.000Z", "last_at": "2026-03-01T11:02:00.000Z",
        "first_prompt": "feed the zebrafish before the tank test",
    }]
    assert (await get(ds, "/prompts/orphans", source="gemini")).json() == []
    assert (await get(ds, "/prompts/orphans", project="/elsewhere%")).json() == []


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path, params, message",
    [
        ("/prompts", {"limit": "0"}, "limit must be between 1 and 1000, not 0"),
        ("/prompts", {"limit": "1001"}, "limit must be between 1 and 1000, not 1001"),
        ("/prompts", {"offset": "-1"}, "offset must be between 0 and 4611686018427387903, not -1"),
        ("/prompts", {"missing": "maybe"}, "missing must be true or false, not 'maybe'"),
        ("/prompts", {"query": "   "}, "a search needs a query: the text is blank"),
        ("/prompts", {"source": "claud"}, "prompts(): unknown source claud; installed: claude, codex, gemini"),
        ("/prompts", {"orphans": "true"},
         "unknown parameter orphans; this endpoint takes db, limit, missing, mode, offset, project, query, "
         "sessionId, source"),
        ("/prompts", {"project": "_" * 10_001}, "prompts(): project is longer than 10,000 characters"),
        ("/prompts/orphans", {"project": "_" * 50_001}, "orphans(): project is longer than 10,000 characters"),
        ("/prompts/orphans", {"limit": "x"}, "limit must be an integer, not 'x'"),
        ("/prompts/orphans", {"source": "claud"}, "orphans(): unknown source claud; installed: claude, codex, gemini"),
    ],
)
async def test_prompts_refuse_bad_parameters_with_a_code(ds, path, params, message):
    body = (await get(ds, path, 400, **params)).json()
    assert body == {"ok": False, "error": {"code": "OBELISK_INVALID_ARGUMENT", "message": message}}


@pytest.mark.asyncio
@pytest.mark.parametrize("path, params, message", [
    ("/prompts", {"mode": "fuzzy", "query": "x"}, "mode must be one of terms, phrase, raw, not 'fuzzy'"),
    ("/prompts", {"mode": "Fuzzy"}, "mode must be one of terms, phrase, raw, not 'fuzzy'"),
    ("/prompts", {"query": "AND", "mode": "raw"}, "invalid FTS5 query 'AND': fts5: syntax error near \"AND\""),
    ("/search", {"q": "x", "mode": "fuzzy"}, "unknown query mode 'fuzzy'; use fts or one of terms, phrase, raw"),
    ("/search", {"q": "AND", "mode": "raw"}, "invalid FTS5 query 'AND': fts5: syntax error near \"AND\""),
])
async def test_a_search_mode_or_raw_text_refused_has_one_code_for_search_and_prompts(ds, path, params, message):
    body = (await get(ds, path, 400, **params)).json()
    assert body == {"ok": False, "error": {"code": "SESSION_QUERY_INVALID_QUERY", "message": message}}


@pytest.fixture(scope="module")
def chain_db(tmp_path_factory):
    """One Claude session whose messages c0 (the root) to c10001 form one parent chain."""
    import json

    from datasette_obelisk.store.ingest import ingest

    home = tmp_path_factory.mktemp("chain")
    folder = home / "projects" / "-w"
    folder.mkdir(parents=True)
    lines = [json.dumps({"type": "user", "uuid": f"c{n}", "parentUuid": f"c{n - 1}" if n else None, "sessionId": "s1",
                         "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": f"step {n}"}})
             for n in range(obelisk.MAX_CHAIN + 2)]
    (folder / "s1.jsonl").write_text("\n".join(lines) + "\n")
    ingest(home / "o.db", {"claude": home})
    return home / "o.db"


@pytest.mark.asyncio
async def test_a_trace_cut_at_the_ancestor_cap_says_so_on_its_first_message(chain_db):
    from web_fixtures import make_datasette

    from datasette_obelisk.query.readonly import connect_readonly

    conn = connect_readonly(chain_db)
    cut, whole = obelisk.trace(conn, "c10001"), obelisk.trace(conn, "c10000")
    conn.close()
    assert (len(cut), cut[0]["uuid"], cut[0]["chain_cut"], cut[-1]["uuid"]) == (10_001, "c1", True, "c10001")
    assert [m["uuid"] for m in cut if "chain_cut" in m] == ["c1"]
    assert (len(whole), whole[0]["uuid"], whole[-1]["uuid"]) == (10_001, "c0", "c10000")  # 10,000 above: the root
    assert [m["uuid"] for m in whole if "chain_cut" in m] == []
    ds = make_datasette(chain_db)
    await ds.invoke_startup()
    over_http = (await get(ds, "/trace", uuid="c10001")).json()
    assert over_http == cut and over_http[0]["chain_cut"] is True
    assert "chain_cut" not in (await get(ds, "/trace", uuid="c10000")).json()[0]


@pytest.mark.asyncio
async def test_a_context_parent_chain_cut_at_the_ancestor_cap_says_so_on_its_first_message(chain_db):
    from web_fixtures import make_datasette

    from datasette_obelisk.query.readonly import connect_readonly

    conn = connect_readonly(chain_db)
    cut, whole = obelisk.context(conn, "c10001")["parentChain"], obelisk.context(conn, "c10000")["parentChain"]
    conn.close()
    assert (len(cut), cut[0]["uuid"], cut[0]["chain_cut"], cut[-1]["uuid"]) == (10_000, "c1", True, "c10000")
    assert [m["uuid"] for m in cut if "chain_cut" in m] == ["c1"]
    assert (len(whole), whole[0]["uuid"], whole[-1]["uuid"]) == (10_000, "c0", "c9999")  # the root reached
    assert [m["uuid"] for m in whole if "chain_cut" in m] == []
    ds = make_datasette(chain_db)
    await ds.invoke_startup()
    over_http = (await get(ds, "/context", uuid="c10001")).json()["parentChain"]
    assert over_http == cut and over_http[0]["chain_cut"] is True
    assert "chain_cut" not in (await get(ds, "/context", uuid="c10000")).json()["parentChain"][0]
