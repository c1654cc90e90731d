"""The read-only JSON endpoints: answers, error codes and cursor paging over HTTP."""

from __future__ import annotations

import base64
import json
import sqlite3

import pytest

from web_fixtures import WORKFLOW_RUN, XSS_SESSION, copy_db, ds, make_datasette, web_db  # noqa: F401 (fixtures)

API = "/-/obelisk/api"
SQ = f"{API}/session-query"

# Cursors as this service writes them (base64 JSON), but with a MAC that is not ASCII, or a
# scope holding a lone surrogate.
FORGED_CURSOR_MAC = base64.urlsafe_b64encode(
    b'{"v":1,"scope":"x","fp":"x","gen":0,"pos":0,"mac":"\\u00e9"}').decode().rstrip("=")
FORGED_CURSOR_SCOPE = base64.urlsafe_b64encode(
    b'{"v":1,"scope":"\\ud800","fp":"x","gen":0,"pos":0,"mac":"x"}').decode().rstrip("=")


async def get(ds, _url, status=200, **params):
    response = await ds.client.get(_url, params=params)
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


async def error(ds, _url, status, code, **params):
    body = await get(ds, _url, status, **params)
    assert body["ok"] is False and body["error"]["code"] == code, body
    return body["error"]["message"]


# -- the Obelisk helpers ------------------------------------------------------


@pytest.mark.asyncio
async def test_search_finds_the_session_and_honours_filters(ds):
    hits = await get(ds, f"{API}/search", q="zebrafish")
    assert {hit["session"]["id"] for hit in hits} == {XSS_SESSION}
    assert all(hit["message"]["source"] == "claude" for hit in hits)
    assert await get(ds, f"{API}/search", q="zebrafish", source="codex") == []
    assert len(await get(ds, f"{API}/search", q="zebrafish", limit=1)) == 1
    # Ordinary text with FTS punctuation never errors.
    await get(ds, f"{API}/search", q='foo-bar "unbalanced c++ /x.py')


@pytest.mark.asyncio
@pytest.mark.parametrize("path, params", [("/search", {"q": "the"}), ("/sessions", {}), ("/prompts", {})])
async def test_a_blank_source_is_refused_as_blank(ds, path, params):
    message = await error(ds, f"{API}{path}", 400, "OBELISK_INVALID_ARGUMENT", source=" ", **params)
    assert message == f"{path[1:]}(): source must not be blank"  # (the helper answering the path)


@pytest.mark.asyncio
async def test_context_trace_thread_and_raw(ds):
    context = await get(ds, f"{API}/context", uuid="xss-a2")
    assert [m["uuid"] for m in context["parentChain"]] == ["xss-u1", "xss-a1"]
    assert context["session"]["id"] == XSS_SESSION
    assert [m["uuid"] for m in await get(ds, f"{API}/trace", uuid="xss-a2")] == ["xss-u1", "xss-a1", "xss-a2"]
    thread = await get(ds, f"{API}/thread", sessionId=XSS_SESSION)
    assert [m["seq"] for m in thread] == [1, 2, 3, 4, 5]
    raw = await get(ds, f"{API}/raw", uuid="xss-a1", limit=20)
    assert raw["text"].startswith('{"type"') and raw["hasMore"] is True and raw["limit"] == 20


@pytest.mark.asyncio
async def test_lists(ds):
    sessions = await get(ds, f"{API}/sessions", source="codex")
    assert sessions and {s["source"] for s in sessions} == {"codex"}
    assert [s["id"] for s in await get(ds, f"{API}/sessions", sessions=f'["{XSS_SESSION}"]')] == [XSS_SESSION]
    memories = await get(ds, f"{API}/memories", query="zebrafish")
    assert [m["summary"] for m in memories] == ["How zebrafish commands fail"]
    failures = await get(ds, f"{API}/failures", sessionId=XSS_SESSION)
    assert len(failures) == 1 and failures[0]["toolCall"]["name"] == "Bash"
    assert [m["uuid"] for m in failures[0]["nextMessages"]] == ["xss-a3"]
    tree = await get(ds, f"{API}/workflow-tree", runId=WORKFLOW_RUN)
    assert tree["result"] == {"ok": True} and [a["agent_id"] for a in tree["agents"]] == ["wf-agent-1"]
    assert [w["run_id"] for w in await get(ds, f"{API}/workflows", sessionId=XSS_SESSION)] == [WORKFLOW_RUN]
    overview = await get(ds, f"{API}/overview")
    assert {s["source"] for s in overview["totals"]["sources"]} >= {"claude", "codex"}
    history = await get(ds, f"{API}/file-history", path="/path/to/Demo/types/index.ts")
    assert history and {h["toolCall"]["name"] for h in history} >= {"Write"}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,params", [("/context", {"uuid": "no-such-uuid"}), ("/raw", {"uuid": "no-such-uuid"}),
                    ("/workflow-tree", {"runId": "no-such-run"})],
)
async def test_what_a_helper_does_not_find_is_null_as_the_contract_says(ds, path, params):
    response = await ds.client.get(API + path, params=params)
    assert (response.status_code, response.text) == (200, "null")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,params,status,code",
    [
        ("/search", {}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/search", {"q": "x", "limit": "many"}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/search", {"q": ["x", "y"]}, 400, "OBELISK_INVALID_ARGUMENT"),  # which one?
        ("/search", {"q": "x", "limit": "0"}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/search", {"q": "x", "includeMeta": "perhaps"}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/search", {"q": "x", "mode": "raw"}, 200, None),
        ("/search", {"q": "AND (", "mode": "raw"}, 400, "SESSION_QUERY_INVALID_QUERY"),
        ("/sessions", {"surprise": "1"}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/sessions", {"sessions": "not json"}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/trace", {}, 400, "OBELISK_INVALID_ARGUMENT"),
        # A session id (or uuid) that is only whitespace names none: refused, as in Python and the CLI.
        ("/thread", {"sessionId": " "}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/trace", {"uuid": "\t"}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/search", {"q": "x", "sessionId": "  "}, 400, "OBELISK_INVALID_ARGUMENT"),
        ("/sessions", {"db": "nope"}, 404, "OBELISK_NOT_FOUND"),
    ],
)
async def test_helper_errors(ds, path, params, status, code):
    body = await get(ds, API + path, status, **params)
    if code:
        assert body["error"]["code"] == code


@pytest.mark.asyncio
async def test_read_endpoints_refuse_other_methods(ds):
    response = await ds.client.post(f"{API}/sessions", json={})
    assert response.status_code == 405 and response.headers["allow"] == "GET"
    assert response.json()["error"]["code"] == "OBELISK_METHOD_NOT_ALLOWED"


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["put", "post", "delete"])
async def test_the_openapi_description_refuses_other_methods(ds, method):
    response = await getattr(ds.client, method)(f"{API}/openapi.json")
    assert response.status_code == 405 and response.headers["allow"] == "GET"
    assert response.json()["error"]["code"] == "OBELISK_METHOD_NOT_ALLOWED"


@pytest.mark.asyncio
async def test_a_database_the_actor_may_not_view_is_refused(web_db):
    ds = make_datasette(web_db, config={"databases": {"obelisk": {"allow": {"id": "root"}}}})
    await ds.invoke_startup()
    await error(ds, f"{API}/sessions", 403, "OBELISK_PERMISSION_DENIED")
    response = await ds.client.get(f"{API}/sessions", actor={"id": "root"})
    assert response.status_code == 200


# -- the session-query contract -------------------------------------------------


@pytest.mark.asyncio
async def test_read_session_answers_a_session_too_long_to_build_whole_in_pages(ds, monkeypatch):
    # Past READ_SESSION_MAX events, readSession is refused at once (413), from a count,
    # before any event is built; with limit it answers a page and a cursor, and the pages
    # together are the whole log. A session within the cap is answered whole, as before.
    from datasette_obelisk.query import session_query
    from datasette_obelisk.web import api_contracts

    whole = await get(ds, f"{SQ}/session/{XSS_SESSION}")
    monkeypatch.setattr(api_contracts, "READ_SESSION_MAX", 4)
    built = []
    full_event = session_query.full_event
    monkeypatch.setattr(session_query, "full_event", lambda *a: built.append(a) or full_event(*a))
    message = await error(ds, f"{SQ}/session/{XSS_SESSION}", 413, "OBELISK_PAYLOAD_TOO_LARGE")
    assert "has 5 events, more than the 4" in message and built == []
    first = await get(ds, f"{SQ}/session/{XSS_SESSION}", limit=2)
    assert first["session"] == whole["session"] and first["events"] == whole["events"][:2] and len(built) == 2
    second = await get(ds, f"{SQ}/session/{XSS_SESSION}", limit=2, cursor=first["nextCursor"])
    last = await get(ds, f"{SQ}/session/{XSS_SESSION}", limit=2, cursor=second["nextCursor"])
    assert second["events"] + last["events"] == whole["events"][2:] and "nextCursor" not in last
    await error(ds, f"{SQ}/session/{XSS_SESSION}", 400, "SESSION_QUERY_INVALID_CURSOR", limit=3, cursor=first["nextCursor"])
    await error(ds, f"{SQ}/session/{XSS_SESSION}", 400, "SESSION_QUERY_INVALID_LIMIT", cursor=first["nextCursor"])
    await error(ds, f"{SQ}/session/{XSS_SESSION}", 400, "SESSION_QUERY_INVALID_LIMIT", limit=1001)


@pytest.mark.asyncio
async def test_surface_and_event_lists_too_long_to_build_are_refused_from_a_count(ds, monkeypatch):
    # readSurface past READ_SESSION_MAX events, listEvents past LIST_EVENTS_MAX records and
    # filterEvents past READ_SESSION_MAX events meeting its metadata clauses are refused
    # (413) before any event is read; a seq range lists the events in parts.
    from datasette_obelisk.web import api_contracts

    surface = await get(ds, f"{SQ}/session/{XSS_SESSION}/surface")
    records = await get(ds, f"{SQ}/session/{XSS_SESSION}/events")
    scanned = await get(ds, f"{SQ}/session/{XSS_SESSION}/events", filters='[{"kind": "text", "text": "e"}]')
    monkeypatch.setattr(api_contracts, "READ_SESSION_MAX", 2)
    monkeypatch.setattr(api_contracts, "LIST_EVENTS_MAX", 2)
    monkeypatch.setattr(api_contracts.SessionQuery, "_events", lambda *a, **k: pytest.fail("events read"))
    assert "has 5 events, more than the 2" in await error(
        ds, f"{SQ}/session/{XSS_SESSION}/surface", 413, "OBELISK_PAYLOAD_TOO_LARGE")
    assert "has 5 events, more than the 2" in await error(
        ds, f"{SQ}/session/{XSS_SESSION}/events", 413, "OBELISK_PAYLOAD_TOO_LARGE")
    assert "has 3 events meeting the filters' metadata clauses, more than the 2" in await error(
        ds, f"{SQ}/session/{XSS_SESSION}/events", 413, "OBELISK_PAYLOAD_TOO_LARGE",
        filters='[{"kind": "seq", "from": 2, "to": 4}, {"kind": "text", "text": "e"}]')
    monkeypatch.undo()
    monkeypatch.setattr(api_contracts, "READ_SESSION_MAX", 2)
    parts = [await get(ds, f"{SQ}/session/{XSS_SESSION}/events",
                       filters=f'[{{"kind": "seq", "from": {n}, "to": {n + 1}}}, {{"kind": "text", "text": "e"}}]')
             for n in (1, 3, 5)]
    assert [e for part in parts for e in part] == scanned
    monkeypatch.undo()
    assert await get(ds, f"{SQ}/session/{XSS_SESSION}/surface") == surface
    assert await get(ds, f"{SQ}/session/{XSS_SESSION}/events") == records


@pytest.mark.asyncio
async def test_session_query_reads(ds):
    records = await get(ds, f"{SQ}/sessions")
    assert XSS_SESSION in {r["header"]["id"] for r in records}
    only = await get(ds, f"{SQ}/sessions", filters=f'[{{"kind": "id", "values": ["{XSS_SESSION}"]}}]')
    assert [r["header"]["id"] for r in only] == [XSS_SESSION]
    log = await get(ds, f"{SQ}/session/{XSS_SESSION}")
    assert [e["seq"] for e in log["events"]] == [1, 2, 3, 4, 5]
    surface = await get(ds, f"{SQ}/session/{XSS_SESSION}/surface")
    assert surface["capturedThroughSeq"] == 5
    events = await get(ds, f"{SQ}/session/{XSS_SESSION}/events", filters='[{"kind": "type", "values": ["tool/call"]}]')
    assert [e["seq"] for e in events] == [3]
    trace = await get(ds, f"{SQ}/session/{XSS_SESSION}/trace")
    assert trace["complete"] is True and trace["root"]["header"]["id"] == XSS_SESSION
    window = await get(ds, f"{SQ}/event/{XSS_SESSION}/3", before=1, after=1)
    assert (window["startSeq"], window["endSeq"], window["target"]["seq"]) == (2, 4, 3)
    event_trace = await get(ds, f"{SQ}/event/{XSS_SESSION}/4/trace")
    assert event_trace["sourceEventSeqs"] == [3]


@pytest.mark.asyncio
async def test_every_event_answer_over_http_names_its_event_by_an_id_the_others_take(ds):
    ids = ["xss-u1", "xss-a1", "xss-a2", "xss-u2", "xss-a3"]
    records = await get(ds, f"{SQ}/session/{XSS_SESSION}/events")
    assert [(r["seq"], r["id"]) for r in records] == list(enumerate(ids, 1))
    surface = await get(ds, f"{SQ}/session/{XSS_SESSION}/surface")
    assert (surface["capturedThroughSeq"], surface["capturedThroughId"]) == (5, "xss-a3")
    title = (await get(ds, f"{SQ}/session/{XSS_SESSION}/title"))["title"]
    assert (title["eventSeq"], title["eventId"], title["messageIds"]) == (1, "xss-u1", ["xss-u1"])
    [hit] = (await get(ds, f"{SQ}/events/search", sessionId=XSS_SESSION, query="command failed"))["items"]
    assert (hit["seq"], hit["id"]) == (5, "xss-a3")
    for record in records:
        # the path's seq is only where the event was: the id decides
        trace = await get(ds, f"{SQ}/event/{XSS_SESSION}/99/trace", id=record["id"])
        assert trace["target"] == record
        window = await get(ds, f"{SQ}/event/{XSS_SESSION}/1", id=record["id"])
        assert (window["target"]["id"], window["startSeq"]) == (record["id"], record["seq"])
    result = await get(ds, f"{SQ}/event/{XSS_SESSION}/1/trace", id="xss-u2")
    assert (result["sourceEventSeqs"], result["sourceEventIds"]) == ([3], ["xss-a2"])
    call = await get(ds, f"{SQ}/event/{XSS_SESSION}/1/trace", id=result["sourceEventIds"][0])
    assert (call["target"]["seq"], call["derivedEventSeqs"], call["derivedEventIds"]) == (3, [4], ["xss-u2"])
    await error(ds, f"{SQ}/event/{XSS_SESSION}/1/trace", 404, "SESSION_QUERY_EVENT_NOT_FOUND", id="no-such-event")
    # a paged readSession goes on after an event named by its id
    after = await get(ds, f"{SQ}/session/{XSS_SESSION}", afterId=result["sourceEventIds"][0])
    assert [e["id"] for e in after["events"]] == ["xss-u2", "xss-a3"] and "nextCursor" not in after
    first = await get(ds, f"{SQ}/session/{XSS_SESSION}", afterId="xss-u1", limit=2)
    assert [e["id"] for e in first["events"]] == ["xss-a1", "xss-a2"]
    rest = await get(ds, f"{SQ}/session/{XSS_SESSION}", limit=2, cursor=first["nextCursor"])
    assert [e["id"] for e in rest["events"]] == ["xss-u2", "xss-a3"]
    assert (await get(ds, f"{SQ}/session/{XSS_SESSION}", afterId=surface["capturedThroughId"]))["events"] == []
    await error(ds, f"{SQ}/session/{XSS_SESSION}", 404, "SESSION_QUERY_EVENT_NOT_FOUND", afterId="no-such-event")
    await error(ds, f"{SQ}/session/{XSS_SESSION}", 400, "SESSION_QUERY_INVALID_CURSOR", afterId="xss-u1", limit=2,
                cursor=first["nextCursor"])


@pytest.mark.asyncio
async def test_session_query_titles(ds, web_db):
    from datasette_obelisk.query.readonly import connect_readonly
    from datasette_obelisk.query.session_query import SessionQuery

    with connect_readonly(web_db) as conn:
        service = SessionQuery(conn)
        one = service.read_title_snapshot(XSS_SESSION)
        several = service.read_title_snapshots([XSS_SESSION, "nope", XSS_SESSION])
    assert await get(ds, f"{SQ}/session/{XSS_SESSION}/title") == one and "title" in one
    assert await get(ds, f"{SQ}/titles", ids=f'["{XSS_SESSION}", "nope", "{XSS_SESSION}"]') == several
    assert [r["status"] for r in several] == ["fulfilled", "rejected"]
    await error(ds, f"{SQ}/session/nope/title", 404, "SESSION_QUERY_SESSION_NOT_FOUND")
    await error(ds, f"{SQ}/titles", 400, "SESSION_QUERY_INVALID_QUERY")
    await error(ds, f"{SQ}/titles", 400, "SESSION_QUERY_INVALID_FILTER", ids='"one id"')
    await error(ds, f"{SQ}/titles", 400, "SESSION_QUERY_INVALID_FILTER", ids='{"a": 1}')
    await error(ds, f"{SQ}/titles", 400, "SESSION_QUERY_INVALID_FILTER", ids=json.dumps(["x"] * 1001))


@pytest.mark.asyncio
async def test_session_ids_with_colons_and_slashes_in_paths(ds):
    records = await get(ds, f"{SQ}/sessions")
    codex = next(r["header"]["id"] for r in records if r["header"]["id"].startswith("codex:"))
    assert (await get(ds, f"{SQ}/session/{codex}/trace"))["target"]["header"]["id"] == codex
    encoded = codex.replace(":", "%3A")
    assert (await get(ds, f"{SQ}/session/{encoded}/trace"))["target"]["header"]["id"] == codex


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,params,status,code",
    [
        ("/session/no-such-session", {}, 404, "SESSION_QUERY_SESSION_NOT_FOUND"),
        (f"/event/{XSS_SESSION}/99", {}, 404, "SESSION_QUERY_EVENT_NOT_FOUND"),
        (f"/event/{XSS_SESSION}/x", {}, 400, "SESSION_QUERY_INVALID_WINDOW"),
        (f"/event/{XSS_SESSION}/2", {"before": "1000"}, 400, "SESSION_QUERY_INVALID_WINDOW"),
        ("/sessions/search", {}, 400, "SESSION_QUERY_INVALID_QUERY"),
        ("/sessions/search", {"query": "x", "mode": "raw"}, 400, "SESSION_QUERY_INVALID_QUERY"),
        ("/sessions/search", {"query": "x", "limit": "0"}, 400, "SESSION_QUERY_INVALID_LIMIT"),
        ("/sessions/search", {"query": "x", "limit": "ten"}, 400, "SESSION_QUERY_INVALID_LIMIT"),
        ("/sessions/search", {"query": "x", "cursor": "garbage"}, 400, "SESSION_QUERY_INVALID_CURSOR"),
        ("/sessions/search", {"query": "x", "sessionFilters": "{bad"}, 400, "SESSION_QUERY_INVALID_FILTER"),
        ("/sessions/search", {"query": "x", "sessionFilters": '[{"kind": "nope"}]'}, 400, "SESSION_QUERY_INVALID_FILTER"),
        ("/events/search", {"sessionId": "no-such-session", "query": "x"}, 404, "SESSION_QUERY_SESSION_NOT_FOUND"),
        # JSON parameters nested past any use, or holding a lone surrogate (an escape UTF-8 cannot carry)
        ("/sessions", {"filters": "[" * 5000}, 400, "SESSION_QUERY_INVALID_FILTER"),
        ("/sessions/search", {"query": "x", "eventFilters": "[" * 5000}, 400, "SESSION_QUERY_INVALID_FILTER"),
        ("/sessions", {"filters": '[{"kind": "cwd", "values": ["\\ud800"]}]'}, 400, "SESSION_QUERY_INVALID_FILTER"),
        # a JSON object naming a key twice, as a parameter given twice: which one was meant?
        ("/sessions", {"filters": '[{"kind": "availability", "values": ["live"], "values": ["persisted"]}]'}, 400,
         "SESSION_QUERY_INVALID_FILTER"),
        ("/sessions/search", {"query": "x", "eventFilters": '[{"kind": "seq", "from": 1, "from": 5}]'}, 400,
         "SESSION_QUERY_INVALID_FILTER"),
        # a cursor whose fields are not what this service writes, MAC included
        ("/sessions/search", {"query": "x", "cursor": FORGED_CURSOR_MAC}, 400, "SESSION_QUERY_INVALID_CURSOR"),
        ("/sessions/search", {"query": "x", "cursor": FORGED_CURSOR_SCOPE}, 400, "SESSION_QUERY_INVALID_CURSOR"),
        # a parameter the endpoint does not take, or one given twice: still the contract's own code
        ("/sessions", {"limit": "5"}, 400, "SESSION_QUERY_INVALID_QUERY"),
        ("/titles", {"ids": ['["a"]', '["b"]']}, 400, "SESSION_QUERY_INVALID_QUERY"),
        (f"/event/{XSS_SESSION}/3", {"bogus": "1"}, 400, "SESSION_QUERY_INVALID_QUERY"),
    ],
)
async def test_session_query_errors(ds, path, params, status, code):
    await error(ds, SQ + path, status, code, **params)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,params",
    [
        ("/sessions", {"filters": '[{"kind":"created-at","from":NaN}]'}),
        ("/sessions", {"filters": '[{"kind":"created-at","to":Infinity}]'}),
        ("/sessions/search", {"query": "the", "sessionFilters": '[{"kind":"created-at","from":-Infinity}]'}),
        ("/sessions/search", {"query": "the", "eventFilters": '[{"kind":"seq","from":99999999999999999999999}]'}),
        (f"/session/{XSS_SESSION}/events", {"filters": '[{"kind":"time","from":-1e20}]'}),
        (f"/session/{XSS_SESSION}/events", {"filters": '[{"kind":"seq","to":NaN}]'}),
        ("/events/search", {"sessionId": XSS_SESSION, "query": "the", "filters": '[{"kind":"time","to":1e300}]'}),
    ],
)
async def test_unrepresentable_filter_numbers_are_invalid_filters(ds, path, params):
    await error(ds, SQ + path, 400, "SESSION_QUERY_INVALID_FILTER", **params)


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/event/{}/99999999999999999999999", "/event/{}/-99999999999999999999999/trace"])
async def test_unrepresentable_event_seqs_are_invalid_windows(ds, path):
    await error(ds, SQ + path.format(XSS_SESSION), 400, "SESSION_QUERY_INVALID_WINDOW")


async def every_page(ds, _url, **params) -> list[dict]:
    """Follow nextCursor to the end; each page asks with the identical request."""
    pages = []
    cursor = None
    while True:
        page = await get(ds, _url, **params, **({"cursor": cursor} if cursor else {}))
        pages.append(page)
        cursor = page.get("nextCursor")  # the session-query and history contracts name it alike
        if not cursor:
            return pages
        assert len(pages) < 100


@pytest.mark.asyncio
async def test_cursor_paging_of_session_search(ds):
    whole = await get(ds, f"{SQ}/sessions/search", query="the", limit=100)
    assert "nextCursor" not in whole
    pages = await every_page(ds, f"{SQ}/sessions/search", query="the", limit=3)
    assert len(pages) > 2
    assert all(len(page["items"]) <= 3 for page in pages)
    paged = [item["header"]["id"] for page in pages for item in page["items"]]
    assert paged == [item["header"]["id"] for item in whole["items"]]
    assert len(set(paged)) == len(paged)


@pytest.mark.asyncio
async def test_cursor_paging_of_event_search(ds):
    session = (await get(ds, f"{SQ}/sessions/search", query="the", limit=1))["items"][0]["header"]["id"]
    whole = await get(ds, f"{SQ}/events/search", sessionId=session, query="the", limit=100)
    pages = await every_page(ds, f"{SQ}/events/search", sessionId=session, query="the", limit=2)
    assert [(h["seq"]) for p in pages for h in p["items"]] == [h["seq"] for h in whole["items"]]
    assert all(page["session"]["id"] == session for page in pages)


@pytest.mark.asyncio
async def test_a_cursor_belongs_to_its_request_and_outlives_growth_not_rewrites(web_db, tmp_path):
    db = copy_db(web_db, tmp_path / "obelisk.db")
    ds = make_datasette(db)
    both = await get(ds, f"{SQ}/sessions/search", query="the", limit=4)
    first = await get(ds, f"{SQ}/sessions/search", query="the", limit=2)
    cursor = first["nextCursor"]
    await error(ds, f"{SQ}/sessions/search", 400, "SESSION_QUERY_INVALID_CURSOR", query="file", limit=2, cursor=cursor)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE obelisk_state SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")  # grown
    conn.commit()
    second = await get(ds, f"{SQ}/sessions/search", query="the", limit=2, cursor=cursor)
    assert [i["header"]["id"] for i in first["items"] + second["items"]] == [i["header"]["id"] for i in both["items"]]
    conn.execute("DELETE FROM messages WHERE id = (SELECT MAX(id) FROM messages)")  # a message gone
    conn.commit()
    conn.close()
    await error(ds, f"{SQ}/sessions/search", 400, "SESSION_QUERY_STALE_CURSOR", query="the", limit=2, cursor=cursor)


# -- the history contract ------------------------------------------------------

HISTORY = f"{API}/history"


@pytest.mark.asyncio
async def test_a_damaged_archive_is_a_json_error_not_a_500_page(web_db, tmp_path):
    db = copy_db(web_db, tmp_path / "obelisk.db")
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'messages'").fetchone()[0]
    conn.close()
    with open(db, "r+b") as fp:  # SQLite finds the messages table malformed
        fp.seek((root - 1) * page_size)
        fp.write(b"\xff" * 64)
    ds = make_datasette(db)
    # As every other helper endpoint answers it (thread, context...)
    await error(ds, f"{API}/search", 400, "OBELISK_INVALID_SQL", q="zebrafish")
    await error(ds, f"{API}/thread", 400, "OBELISK_INVALID_SQL", sessionId=XSS_SESSION)
    # As the session-query endpoints answer it: the archive could not be read
    await error(ds, f"{SQ}/sessions/search", 500, "SESSION_QUERY_INDEX_FAILED", query="zebrafish")
    await error(ds, f"{HISTORY}/search", 500, "SESSION_QUERY_PERSISTENCE_FAILED", query="zebrafish")
    await error(ds, f"{HISTORY}/search", 500, "SESSION_QUERY_PERSISTENCE_FAILED")
    await error(ds, f"{HISTORY}/read", 500, "SESSION_QUERY_PERSISTENCE_FAILED", sessionId=XSS_SESSION)


@pytest.mark.asyncio
async def test_history_search_and_read(ds):
    found = await get(ds, f"{HISTORY}/search", query="zebrafish")
    assert [s["sessionId"] for s in found["sessions"]] == [XSS_SESSION]
    session = found["sessions"][0]
    assert session["attributes"]["source"] == "claude" and session["snippets"]
    assert session["updatedAt"] >= session["createdAt"]
    narrowed = await get(ds, f"{HISTORY}/search", query="zebrafish", attributes='{"source": "codex"}')
    assert narrowed["sessions"] == []
    contains = await get(ds, f"{HISTORY}/search", attributes='{"branch": {"contains": "xss"}}')
    assert [s["sessionId"] for s in contains["sessions"]] == [XSS_SESSION]
    read = await get(ds, f"{HISTORY}/read", sessionId=XSS_SESSION)
    kinds = [entry["type"] for entry in read["entries"]]
    assert kinds == ["user", "assistant", "tool", "assistant"]
    tool = read["entries"][2]
    assert (tool["name"], tool["outcome"]) == ("Bash", "failed")
    assert "nextCursor" not in read


@pytest.mark.asyncio
async def test_history_blank_query_lists_recent_sessions_as_in_python(ds):
    recent = await get(ds, f"{HISTORY}/search", limit=5)
    assert await get(ds, f"{HISTORY}/search", limit=5, query="") == recent
    assert await get(ds, f"{HISTORY}/search", limit=5, query="  ") == recent


@pytest.mark.asyncio
async def test_history_paging(ds):
    recent = await get(ds, f"{HISTORY}/search", limit=75)
    pages = await every_page(ds, f"{HISTORY}/search", limit=4)
    assert len(pages) > 2
    assert [s["sessionId"] for p in pages for s in p["sessions"]] == [s["sessionId"] for s in recent["sessions"]]
    whole = await get(ds, f"{HISTORY}/read", sessionId=XSS_SESSION, limit=100)
    entries = await every_page(ds, f"{HISTORY}/read", sessionId=XSS_SESSION, limit=1)
    assert [e["id"] for p in entries for e in p["entries"]] == [e["id"] for e in whole["entries"]]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,params,status,code",
    [
        ("/read", {"sessionId": "no-such-session"}, 404, "SESSION_QUERY_SESSION_NOT_FOUND"),
        ("/read", {}, 400, None),
        ("/read", {"sessionId": XSS_SESSION, "limit": "101"}, 400, "SESSION_QUERY_INVALID_LIMIT"),
        ("/read", {"sessionId": XSS_SESSION, "cursor": "nope"}, 400, "SESSION_QUERY_INVALID_CURSOR"),
        ("/search", {"limit": "76"}, 400, "SESSION_QUERY_INVALID_LIMIT"),
        ("/search", {"limit": "x"}, 400, "SESSION_QUERY_INVALID_LIMIT"),
        ("/search", {"attributes": "{nope"}, 400, "SESSION_QUERY_INVALID_FILTER"),
        ("/search", {"cursor": "nope"}, 400, "SESSION_QUERY_INVALID_CURSOR"),
        ("/search", {"cursor": FORGED_CURSOR_MAC}, 400, "SESSION_QUERY_INVALID_CURSOR"),
        ("/read", {"sessionId": XSS_SESSION, "cursor": FORGED_CURSOR_SCOPE}, 400, "SESSION_QUERY_INVALID_CURSOR"),
        ("/search", {"attributes": '{"repository": "\\ud800"}'}, 400, "SESSION_QUERY_INVALID_FILTER"),
        ("/search", {"attributes": "{" * 5000}, 400, "SESSION_QUERY_INVALID_FILTER"),
        ("/search", {"attributes": '{"source": "codex", "source": "claude"}'}, 400, "SESSION_QUERY_INVALID_FILTER"),
    ],
)
async def test_history_errors(ds, path, params, status, code):
    body = await get(ds, HISTORY + path, status, **params)
    assert body["ok"] is False and (code is None or body["error"]["code"] == code), body


def test_a_request_reads_one_snapshot_while_an_ingest_commits(tmp_path):
    from datasette_obelisk.web.handlers import time_limited

    path = tmp_path / "live.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("CREATE TABLE t (id INTEGER)")
    writer.execute("INSERT INTO t VALUES (1)")
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def work(conn):
        first = conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]
        writer.execute("DELETE FROM t")  # an ingest commits between two statements of one answer
        return first, conn.execute("SELECT COUNT(*) FROM t").fetchone()[0]

    assert time_limited(work, 1000)(reader) == (1, 1)
    assert not reader.in_transaction
    assert reader.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0


@pytest.mark.asyncio
async def test_an_empty_parameter_is_not_given_and_an_unknown_session_has_nothing(ds):
    assert await get(ds, f"{SQ}/sessions/search", query="zebrafish", cursor="") == await get(
        ds, f"{SQ}/sessions/search", query="zebrafish")
    assert await get(ds, f"{API}/history/search", cursor="", limit="") == await get(ds, f"{API}/history/search")
    for path, params in [
        ("/search", {"q": "zebrafish"}), ("/thread", {}), ("/failures", {}), ("/summaries", {}), ("/sessions", {}),
    ]:
        assert await get(ds, f"{API}{path}", sessionId="no-such-session", **params) == []


@pytest.mark.asyncio
async def test_a_lineage_deeper_than_the_json_module_nests_is_answered(web_db, tmp_path):
    """traceSession of a session continued 1,200 times: 2,400 levels of JSON, more than
    ``json.dumps`` recurses, is still the contract's answer (a 500 page before)."""
    db = copy_db(web_db, tmp_path / "deep.db")
    conn = sqlite3.connect(db)
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) "
        "INSERT INTO sessions (id, source, parent_session_id, relationship, started_at) "
        "SELECT 'deep-' || i, 'claude', CASE i WHEN 1 THEN ? ELSE 'deep-' || (i - 1) END, 'continuation', "
        "strftime('%Y-%m-%dT%H:%M:%fZ', '2026-04-01', '+' || i || ' minutes') FROM n",
        [XSS_SESSION],
    )
    conn.commit()
    conn.close()
    ds = make_datasette(db)
    response = await ds.client.get(f"{SQ}/session/{XSS_SESSION}/trace")
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    body = response.text
    assert body.startswith('{"target": {"header": {"version": 1, "id": "xss-session-0001"')
    assert body.count('"descendants": [') == 1201 and body.count('"id": "deep-') == 1200
    assert body.count('"complete": true') == 1 and "]}]}]}]}]}" in body  # (nested, not flattened)


@pytest.mark.asyncio
@pytest.mark.parametrize("endpoint", ["history", "session-query"])
async def test_json_pages_list_what_the_first_page_saw_while_sessions_grow(tmp_path, monkeypatch, endpoint):
    """Over HTTP as in Python: history.search without a query (newest first) and the
    contract's searchSessions (ranked by the session bags), a line appended to a session
    not yet listed (a new request lists it first) and a session stored between pages:
    the pages list the first page's sessions, each once."""
    from datasette_obelisk.query import search
    from datasette_obelisk.store.ingest import ingest

    monkeypatch.setattr(search, "EXACT_MAX", 0)

    folder = tmp_path / "claude" / "projects" / "-tmp-grow"
    folder.mkdir(parents=True)

    def write(name: str, uuid: str, when: str, text: str, mode: str = "w") -> None:
        line = {"type": "user", "uuid": uuid, "sessionId": name, "timestamp": when,
                "message": {"role": "user", "content": text}}
        with open(folder / f"{name}.jsonl", mode) as log:
            log.write(json.dumps(line) + "\n")

    names = [f"grow-{n:02d}" for n in range(8)]
    for n, name in enumerate(names):
        write(name, f"u-{name}", f"2026-03-05T10:{n:02d}:00.000Z", "kestrel " + "pad " * n)
    ingest(tmp_path / "grow.db", {"claude": tmp_path / "claude"})
    datasette = make_datasette(tmp_path / "grow.db")
    await datasette.invoke_startup()
    if endpoint == "history":
        url, params, items, key = f"{API}/history/search", {}, "sessions", "sessionId"
    else:
        url, params, items, key = f"{SQ}/sessions/search", {"query": "kestrel"}, "items", None

    def ids(body):
        return [item[key] if key else item["header"]["id"] for item in body[items]]

    full = ids(await get(datasette, url, **params, limit="50"))
    assert sorted(full) == names
    first = await get(datasette, url, **params, limit="3")
    write(full[-1], f"u-{full[-1]}-late", "2026-03-06T10:00:00.000Z", "kestrel kestrel kestrel", "a")
    write("grow-new", "u-grow-new", "2026-03-06T11:00:00.000Z", "kestrel")
    ingest(tmp_path / "grow.db", {"claude": tmp_path / "claude"})
    now = ids(await get(datasette, url, **params, limit="50"))
    assert now.index(full[-1]) < 3 and "grow-new" in now  # (a new request lists it on its first page)
    pages, cursor = [first], first["nextCursor"]
    while cursor:
        pages.append(await get(datasette, url, **params, limit="3", cursor=cursor))
        cursor = pages[-1].get("nextCursor")
    listed = [session for body in pages for session in ids(body)]
    assert sorted(listed) == sorted(full) and len(listed) == len(full) and listed[:3] == full[:3]
    if endpoint == "history":  # (listed by time: in the first page's order; ranked, a grown session
        assert listed == full  # comes where it ranks now among the sessions not yet listed)


def empty_parameter_cases():
    """Every parameter of every read endpoint, with the values that make a request answer
    (its required parameters; a known session in its path)."""
    from datasette_obelisk.web.api import read_endpoints

    known = {"sessionId": XSS_SESSION, "session_id": XSS_SESSION, "q": "zebrafish", "query": "zebrafish",
             "uuid": "xss-u1", "path": "/tmp/xss-project/a.py", "runId": WORKFLOW_RUN, "seq": "1",
             "ids": json.dumps([XSS_SESSION])}
    for endpoint in read_endpoints():
        path = endpoint.path
        for name in endpoint.path_params:
            path = path.replace("{" + name + "}", known[name])
        required = {p.name: known[p.name] for p in endpoint.params if p.required}
        for param in endpoint.params:
            yield pytest.param(endpoint, path, required, param, id=f"{endpoint.path}?{param.name}=")


@pytest.mark.asyncio
@pytest.mark.parametrize("endpoint, path, required, param", list(empty_parameter_cases()))
async def test_a_parameter_given_empty_is_not_given_on_every_endpoint(ds, endpoint, path, required, param):
    """As docs/web.md says (a form's blank field): an optional one is left out, a required one is missing."""
    empty = await ds.client.get(API + path, params={**required, param.name: ""})
    if param.required:
        code = "SESSION_QUERY_INVALID_QUERY" if endpoint.tag == "session-query" else "OBELISK_INVALID_ARGUMENT"
        assert (empty.status_code, empty.json()["error"]["code"]) == (400, code)
    else:
        absent = await ds.client.get(API + path, params=required)
        assert (empty.status_code, empty.text) == (absent.status_code, absent.text)


@pytest.mark.asyncio
@pytest.mark.parametrize("path, params", [
    ("/search", {"q": "zebrafish"}), ("/sessions", {}), ("/summaries", {}), ("/memories", {}), ("/subagents", {}),
    ("/workflows", {}), ("/file-history", {"path": "/tmp/xss-project/a.py"}), ("/failures", {}), ("/prompts", {}),
])
async def test_a_blank_session_id_is_refused_by_every_endpoint_it_narrows(ds, path, params):
    body = await get(ds, f"{API}{path}", 400, sessionId="  ", **params)
    helper = {"/file-history": "fileHistory"}.get(path, path[1:])
    assert body["error"] == {"code": "OBELISK_INVALID_ARGUMENT",
                             "message": f"{helper}(): sessionId must not be empty or only whitespace"}
