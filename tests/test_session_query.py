"""The session-query contract over the archive (seed 001), on real fixtures."""

import threading

import pytest

from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import copy_corpus, corpus_db, line, read_conn, toy  # noqa: F401

DAG = "dag_compact_after_rewind_preserved"
FORK = "claude_forked_session"
HEADER_KEYS = {"version", "id", "createdAt", "cwd", "source"}
RECORD_KEYS = {"sessionId", "seq", "id", "type", "time", "surface"}


def code_of(call):
    with pytest.raises(QueryError) as info:
        call()
    return info.value.code


@pytest.fixture
def sq(read_conn):
    return SessionQuery(read_conn)


# -- shapes --------------------------------------------------------------------


def test_session_records(sq):
    records = sq.listSessions()
    assert len(records) == 30  # small.jsonl: one inline sidechain session (u1 -> a1 -> u2, u2b, ...)
    record = next(r for r in records if r["header"]["id"] == FORK)
    assert record == {
        "header": {"version": 1, "id": FORK, "createdAt": 1765357200000, "cwd": "/home/testuser/fork-project", "source": "claude"},
        "live": True,
        "persisted": True,
    }
    created = [r["header"]["createdAt"] for r in records]
    assert created == sorted(created, reverse=True)  # newest first
    assert sq.list_sessions() == records


def test_read_session_returns_every_event_with_one_header(sq):
    snapshot = sq.readSession(FORK)
    assert set(snapshot) == {"session", "events"}
    assert set(snapshot["session"]) == HEADER_KEYS
    assert [e["seq"] for e in snapshot["events"]] == list(range(1, 15))
    call = snapshot["events"][7]
    assert set(call) == RECORD_KEYS | {"id", "visibility", "data"}
    assert (call["id"], call["type"], call["surface"]) == ("fa2b-fork", "assistant/message", "current")
    assert call["data"]["toolCalls"] == [{
        "id": "toolu_f002", "name": "Write",
        "input": {"file_path": "/home/testuser/fork-project/mergesort.py", "content": call["data"]["toolCalls"][0]["input"]["content"]},
    }]
    result = snapshot["events"][8]
    assert result["data"]["toolResults"] == [
        {"toolUseId": "toolu_f002", "outcome": "succeeded", "isError": False, "exitCode": None}
    ]


def test_event_records_map_rewinds_onto_surfaces(sq):
    # Lines 3-6 of the file answer "Let's go with QuickSort", a prompt the user
    # rewound: line 7 is a newer prompt under the same parent (fa1-fork).
    assert [(e["seq"], e["type"], e["surface"]) for e in sq.listEvents(FORK)] == [
        (1, "user/message", "current"), (2, "assistant/message", "current"),
        (3, "user/message", "shadowed"), (4, "assistant/message", "shadowed"),
        (5, "tool/result", "shadowed"), (6, "assistant/message", "shadowed"),
        (7, "user/message", "current"), (8, "assistant/message", "current"),
        (9, "tool/result", "current"), (10, "assistant/message", "current"),
        (11, "user/message", "current"), (12, "assistant/message", "current"),
        (13, "tool/result", "current"), (14, "assistant/message", "current"),
    ]
    assert sq.listEvents(FORK)[0] == {
        "sessionId": FORK, "seq": 1, "id": "fu1-fork", "type": "user/message", "time": 1765357200000, "surface": "current"}


def test_an_event_written_without_a_time_has_the_time_before_it(sq):
    # edge_cases line 11 has no timestamp (line 10: 11:03:01); the two bare
    # items of rollout-4444... have none, so they take the session's start.
    rollout = "codex:44444444-4444-4444-8444-444444444444"
    assert [(e["seq"], e["time"]) for e in sq.listEvents("edge_cases")][9:12] == [
        (10, 1749898981000), (11, 1749898981000), (12, 1749899010000),
    ]
    assert [e["time"] for e in sq.listEvents(rollout)] == [1767503167000, 1767503167000]
    # The time filter reads the same time.
    at = [{"kind": "time", "from": 1749898981000, "to": 1749898981000}]
    assert [e["seq"] for e in sq.filterEvents("edge_cases", at)] == [10, 11, 14]  # 14 was written at 11:03:01 too
    window = sq.readEvent({"sessionId": rollout, "seq": 1, "after": 1})
    assert [e["time"] for e in [window["target"], *window["events"]]] == [1767503167000] * 3


def test_an_event_whose_time_is_no_time_has_the_time_before_it(sq):
    # small.jsonl: 37 lines hold "[trimmed for fixture]" where their timestamp would be, from seq 19 on
    events = sq.listEvents("small")
    assert len(events) == 55
    assert {e["time"] for e in events[17:]} == {1765843220000}  # (seq 18's: 2025-12-16T00:00:20.000Z)
    whole = [{"kind": "time", "from": min(e["time"] for e in events), "to": 2**53}]
    assert [e["seq"] for e in sq.filterEvents("small", whole)] == list(range(1, 56))


def test_compaction_after_rewind(sq):
    # Reading the file: b1u/b1a were rewound (b2u is newer under a1); the
    # compaction (cb + summary cs) keeps b2a, b2u2, b2a2 and replaces the rest.
    events = sq.readSession(DAG)["events"]
    assert [(e["seq"], e["id"], e["type"], e["surface"], e["visibility"]) for e in events] == [
        (1, "u1", "user/message", "shadowed", "visible"),
        (2, "a1", "assistant/message", "shadowed", "visible"),
        (3, "b1u", "user/message", "shadowed", "inactive"),
        (4, "b1a", "assistant/message", "shadowed", "inactive"),
        (5, "b2u", "user/message", "shadowed", "visible"),
        (6, "b2a", "assistant/message", "current", "visible"),
        (7, "b2u2", "user/message", "current", "visible"),
        (8, "cb", "system/compact_boundary", "log-only", "visible"),
        (9, "cs", "compaction/summary", "current", "visible"),
        (10, "b2a2", "assistant/message", "current", "visible"),
        (11, "p1u", "user/message", "current", "visible"),
        (12, "p1a", "assistant/message", "current", "visible"),
    ]
    surface = sq.readSurface(DAG)
    assert surface["capturedThroughSeq"] == 12
    # Model-history order: the preserved segment (b2a..b2a2) follows the summary anchor cs.
    assert [e["id"] for e in surface["events"]] == ["cs", "b2a", "b2u2", "b2a2", "p1u", "p1a"]


def test_trace_event_follows_replacements(sq):
    rewound = sq.traceEvent({"sessionId": DAG, "seq": 3})
    assert {k: v for k, v in rewound.items() if k != "session"} == {
        "target": {"sessionId": DAG, "seq": 3, "id": "b1u", "type": "user/message", "time": 1751364120000,
                   "surface": "shadowed"},
        "replacedBy": 5, "replacedById": "b2u",
        "replacementChain": [5, 9], "replacementChainIds": ["b2u", "cs"],
        "replacedEventSeqs": [], "replacedEventIds": [],
        "sourceEventSeqs": [], "sourceEventIds": [],
        "derivedEventSeqs": [], "derivedEventIds": [],
    }
    summary = sq.trace_event({"sessionId": DAG, "seq": 9})
    assert "replacedBy" not in summary
    assert (summary["replacementChain"], summary["replacedEventSeqs"]) == ([], [1, 2, 5])
    # The compact boundary is log-only: it was never context, so nothing replaced it.
    boundary = sq.traceEvent({"sessionId": DAG, "seq": 8})
    assert {k: v for k, v in boundary.items() if k != "session"} == {
        "target": {"sessionId": DAG, "seq": 8, "id": "cb", "type": "system/compact_boundary", "time": 1751365800000,
                   "surface": "log-only"},
        "replacementChain": [], "replacementChainIds": [],
        "replacedEventSeqs": [], "replacedEventIds": [],
        "sourceEventSeqs": [], "sourceEventIds": [],
        "derivedEventSeqs": [], "derivedEventIds": [],
    }
    assert sq.traceEvent({"sessionId": DAG, "seq": 5})["replacedEventSeqs"] == [3, 4]
    assert sq.traceEvent({"sessionId": DAG, "seq": 12})["replacementChain"] == []


def test_trace_event_links_tool_calls_and_results(sq):
    assert sq.traceEvent({"sessionId": FORK, "seq": 9})["sourceEventSeqs"] == [8]
    assert sq.traceEvent({"sessionId": FORK, "seq": 8})["derivedEventSeqs"] == [9]
    abandoned = sq.traceEvent({"sessionId": FORK, "seq": 5})
    assert (abandoned["replacedBy"], abandoned["sourceEventSeqs"]) == (7, [4])
    assert sq.traceEvent({"sessionId": FORK, "seq": 7})["replacedEventSeqs"] == [3, 4, 5, 6]


def test_codex_compaction_shadows_what_it_replaced(tmp_path):
    db, _ = copy_corpus(tmp_path, "codex/kvsankar__agent-history/session_with_compaction.jsonl")
    from query_fixtures import connect

    sq = SessionQuery(connect(db))
    sid = "codex:compact-codex-001"
    events = sq.listEvents(sid)
    # Ten items precede the `compacted` line, which is event 11. It wrote no replacement
    # history: Codex rebuilds one with the prompts (events 1, 7 and 9) and the summary.
    prompts = {1, 7, 9}
    assert [e["surface"] for e in events[:10]] == ["current" if n in prompts else "shadowed" for n in range(1, 11)]
    assert (events[10]["type"], events[10]["surface"]) == ("compaction/summary", "current")
    assert [e["surface"] for e in events[11:17]] == ["current"] * 6
    assert (events[17]["type"], events[17]["surface"]) == ("event_msg/token_count", "log-only")
    assert sq.traceEvent({"sessionId": sid, "seq": 4})["replacementChain"] == [11]
    assert sq.traceEvent({"sessionId": sid, "seq": 11})["replacedEventSeqs"] == [2, 3, 4, 5, 6, 8, 10]
    assert [e["seq"] for e in sq.readSurface(sid)["events"]] == [1, 7, 9, *range(11, 18)]
    assert sq.traceEvent({"sessionId": sid, "seq": 5})["sourceEventSeqs"] == [4]


def test_read_event_window(sq):
    window = sq.readEvent({"sessionId": FORK, "seq": 8, "before": 1, "after": 2})
    assert set(window) == {"session", "target", "events", "startSeq", "endSeq"}
    assert (window["startSeq"], window["endSeq"]) == (7, 10)
    assert [e["seq"] for e in window["events"]] == [7, 8, 9, 10]
    assert window["target"] == window["events"][1]
    edge = sq.readEvent({"sessionId": FORK, "seq": 1, "before": 5})
    assert (edge["startSeq"], edge["endSeq"], len(edge["events"])) == (1, 1, 1)


def test_titles(sq):
    assert sq.readTitle(FORK) == {
        "title": "Help me implement a sorting algorithm", "messageSeqs": [1], "messageIds": ["fu1-fork"],
        "source": "fallback", "kind": "first_prompt", "eventSeq": 1, "eventId": "fu1-fork", "updatedAt": 1765357200000,
    }
    assert sq.readTitle("small:agent-sidechain-sys1") is None
    assert "title" not in sq.readTitleSnapshot("small:agent-sidechain-sys1")
    results = sq.readTitleSnapshots([FORK, "nope", FORK, DAG])
    assert [(r["sessionId"], r["status"]) for r in results] == [(FORK, "fulfilled"), ("nope", "rejected"), (DAG, "fulfilled")]
    assert results[1]["reason"]["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert results[0]["value"] == sq.readTitleSnapshot(FORK)
    assert results[2]["value"]["title"]["title"] == "Start"
    # A Codex rollout's first prompt is a bare `message` item (line 2, the session's first event; no time).
    legacy = sq.readTitle("codex:44444444-4444-4444-8444-444444444444")
    assert (legacy["title"], legacy["eventSeq"], legacy["messageSeqs"], legacy["updatedAt"]) == (
        "Open the synthetic legacy session.", 1, [1], None)


def test_trace_session(sq):
    child = "eb000000-0000-4000-8000-000000000001:agent-cccc333"
    parent = "eb000000-0000-4000-8000-000000000001"
    trace = sq.traceSession(child)
    assert (trace["complete"], trace["root"]["header"]["id"]) == (True, parent)
    assert [a["header"]["id"] for a in trace["ancestors"]] == [parent]
    assert trace["target"]["header"]["parentSession"] == parent
    down = sq.traceSession(parent)
    assert [(n["session"]["header"]["id"], n["descendants"]) for n in down["descendants"]] == [(child, [])]
    assert (down["complete"], down["root"]["header"]["id"], down["ancestors"]) == (True, parent, [])
    orphan = sq.traceSession("fa812bfe-b295-4cca-9c2f-fdf01028cb46:agent-a93ccab")
    assert (orphan["complete"], orphan["unresolvedParentId"], "root" in orphan) == (
        False, "fa812bfe-b295-4cca-9c2f-fdf01028cb46", False,
    )


def test_filter_sessions(sq):
    ids = lambda filters: [r["header"]["id"] for r in sq.filterSessions(filters)]  # noqa: E731
    assert ids([{"kind": "id", "values": [FORK, DAG, "nope"]}]) == [FORK, DAG]
    assert ids([{"kind": "cwd", "values": ["/home/testuser/fork-project"]}]) == [FORK]
    assert ids([{"kind": "parent", "values": ["eb000000-0000-4000-8000-000000000001"]}]) == [
        "eb000000-0000-4000-8000-000000000001:agent-cccc333"
    ]
    roots = ids([{"kind": "parent", "values": [None]}])
    assert FORK in roots and "eb000000-0000-4000-8000-000000000001:agent-cccc333" not in roots
    assert ids([{"kind": "created-at", "from": 1765357200000, "to": 1765357200000}]) == [FORK]
    assert ids([{"kind": "availability", "values": ["live"]}, {"kind": "id", "values": [FORK, DAG]}]) == [FORK, DAG]
    assert ids([{"kind": "availability", "values": ["persisted"]}, {"kind": "id", "values": [FORK]}]) == [FORK]
    assert ids([{"kind": "id", "values": [FORK, DAG]}, {"kind": "id", "values": [DAG]}]) == [DAG]


def test_empty_and_disjoint_lists_match_nothing(sq):
    ids = lambda filters: [r["header"]["id"] for r in sq.filterSessions(filters)]  # noqa: E731
    found = lambda filters: sq.searchSessions({"query": "the", "sessionFilters": filters})["items"]  # noqa: E731
    disjoint = [{"kind": "id", "values": [FORK]}, {"kind": "id", "values": [DAG]}]
    for kind in ("availability", "id", "cwd", "parent"):
        assert ids([{"kind": kind, "values": []}]) == []
        assert found([{"kind": kind, "values": []}]) == []
    assert ids(disjoint) == [] and found(disjoint) == []
    assert ids([{"kind": "availability", "values": ["live"]}, {"kind": "availability", "values": []}]) == []
    for kind in ("type", "surface"):
        assert sq.filterEvents(FORK, [{"kind": kind, "values": []}]) == []
        assert sq.searchSessions({"query": "the", "eventFilters": [{"kind": kind, "values": []}]})["items"] == []
        assert sq.searchEvents({"sessionId": FORK, "query": "the", "filters": [{"kind": kind, "values": []}]})["items"] == []
    # An empty list is a different request from no list: a cursor of one is refused by the other.
    cursor = sq.searchSessions({"query": "the", "limit": 2})["nextCursor"]
    request = {"query": "the", "limit": 2, "cursor": cursor, "sessionFilters": [{"kind": "availability", "values": []}]}
    assert code_of(lambda: sq.searchSessions(request)) == "SESSION_QUERY_INVALID_CURSOR"


def test_every_corpus_session_is_live_and_persisted(sq):
    records = sq.listSessions()
    assert len(records) == 30 and all(r["live"] and r["persisted"] for r in records)
    for values in (["live"], ["persisted"], ["live", "persisted"]):
        assert sq.filterSessions([{"kind": "availability", "values": values}]) == records


def test_filter_events(sq):
    seqs = lambda filters: [d["seq"] for d in sq.filterEvents(FORK, filters)]  # noqa: E731
    assert seqs([{"kind": "seq", "from": 2, "to": 4}]) == [2, 3, 4]
    assert seqs([{"kind": "type", "values": ["tool/result"]}]) == [5, 9, 13]
    assert seqs([{"kind": "surface", "values": ["shadowed"]}]) == [3, 4, 5, 6]
    assert seqs([{"kind": "time", "from": 1765357260000, "to": 1765357272000}]) == [7, 8, 9]
    assert seqs([{"kind": "text", "text": "MergeSort, instead"}]) == []
    assert seqs([{"kind": "text", "text": "try  MERGESORT\ninstead"}]) == [7]
    assert seqs([{"kind": "text", "text": "created"}, {"kind": "surface", "values": ["current"]}]) == [9, 10]
    document = sq.filterEvents(FORK, [{"kind": "seq", "from": 11, "to": 11}])[0]
    assert document == {
        "sessionId": FORK, "seq": 11, "id": "fu4b-fork", "type": "user/message", "time": 1765357290000,
        "surface": "current", "text": "Can you add type hints?",
    }
    boundary = sq.filterEvents(DAG, [{"kind": "type", "values": ["system/compact_boundary"]}])
    assert boundary[0]["text"] == ""  # structural events carry no semantic text


def test_search_sessions_contract_shape(sq):
    page = sq.searchSessions({"query": "mergesort stable"})
    assert set(page) == {"items"}
    hit = page["items"][0]
    assert set(hit) == {"header", "live", "persisted", "bestMatch"}
    assert hit["header"]["id"] == FORK
    assert set(hit["bestMatch"]) == RECORD_KEYS | {"id", "snippet", "snippetMatches"}
    snippet = hit["bestMatch"]["snippet"]
    assert [snippet[s:e].lower() for s, e in hit["bestMatch"]["snippetMatches"]][:2] in (
        ["mergesort", "stable"], ["stable", "mergesort"],
    )


def test_search_events_returns_header_without_hits(sq):
    page = sq.searchEvents({"sessionId": FORK, "query": "no such words anywhere"})
    assert page == {"session": sq.readSession(FORK)["session"], "items": []}
    found = sq.searchEvents({"sessionId": FORK, "query": "quicksort", "filters": [{"kind": "surface", "values": ["shadowed"]}]})
    assert [item["seq"] for item in found["items"]] == [3, 4, 6]


def test_search_finds_only_semantic_text_as_the_text_scan_does(sq, read_conn):
    from datasette_obelisk.query.search import search_sessions

    # seq 8 of DAG is the compact boundary (log-only), the only line saying
    # "Conversation compacted"; seq 105 of ef958aa1 an away_summary recap.
    for phrase, session, seq in (("Conversation compacted", DAG, 8), ("teammate experiment", "ef958aa1-0e93-49f0-bb71-150f63befcd1", 105)):
        assert sq.searchSessions({"query": phrase, "mode": "phrase"}) == {"items": []}
        assert sq.searchEvents({"sessionId": session, "query": phrase, "mode": "phrase"})["items"] == []
        assert sq.filterEvents(session, [{"kind": "text", "text": phrase}]) == []
        # The helper search, another face, still finds the line.
        page = search_sessions(read_conn, phrase, mode="phrase", include_meta=True)
        assert [(i["session"]["id"], i["best"]["seq"]) for i in page["items"]] == [(session, seq)]
    log_only = [{"kind": "surface", "values": ["log-only"]}]
    assert sq.searchEvents({"sessionId": DAG, "query": "compacted", "filters": log_only})["items"] == []
    assert [i["seq"] for i in sq.searchEvents({"sessionId": DAG, "query": "compacted"})["items"]] == [11]  # "After compaction"


def test_failure_and_status_details_are_semantic_text(sq):
    # small.jsonl line 20 (seq 4) is an api_refusal, line 31 (seq 8) an error with status 429.
    assert sq.filterEvents("small", [{"kind": "text", "text": "refusal"}]) == [{
        "sessionId": "small", "seq": 4, "id": "s3", "type": "system/api_refusal", "time": 1765843206000,
        "surface": "log-only",
        "text": "refusal\nRefused for policy reasons.",
    }]
    assert [(d["seq"], d["text"]) for d in sq.filterEvents("small", [{"kind": "text", "text": "STATUS 429"}])] == [
        (8, "[trimmed for fixture]\nstatus 429")
    ]
    found = sq.searchSessions({"query": "Refused for policy reasons", "mode": "phrase"})["items"]
    assert [(i["header"]["id"], i["bestMatch"]["seq"], i["bestMatch"]["type"]) for i in found] == [("small", 4, "system/api_refusal")]
    assert [i["seq"] for i in sq.searchEvents({"sessionId": "small", "query": "429"})["items"]] == [8]
    # Structural lines still contribute nothing, though the boundary stores "compacted".
    structural = sq.filterEvents("small", [{"kind": "type", "values": ["system/stop_hook_summary", "system/compact_boundary"]}])
    assert [(d["seq"], d["text"]) for d in structural] == [(1, ""), (5, ""), (27, "")]  # boundaries: lines 21, 51
    assert sq.searchEvents({"sessionId": "small", "query": "compacted"})["items"] == []


def test_a_background_task_s_status_is_semantic_text(sq):
    # small.jsonl line 72: a task_status attachment, "[status] description" as the task lists show it.
    found = sq.filterEvents("small", [{"kind": "type", "values": ["attachment/task_status"]}])
    assert [(d["seq"], d["text"]) for d in found] == [(44, "[[trimmed for fixture]] [trimmed for fixture]")]
    found = sq.searchEvents({"sessionId": "small", "query": "trimmed", "filters": [
        {"kind": "type", "values": ["attachment/task_status"]}]})["items"]
    assert [item["seq"] for item in found] == [44]


def test_blocking_hooks_failing_hooks_and_todo_lists_are_semantic_text(sq):
    # small.jsonl lines 57 and 73 (todo reminders, the first empty), 41, 67 and 71
    # (task reminders, the second empty), 75 and 79 (hook errors): the hook's name and
    # what it said, each todo as "[status] content", each task as "[status] subject: description".
    kinds = ["attachment/todo_reminder", "attachment/task_reminder", "attachment/hook_non_blocking_error",
             "attachment/hook_blocking_error"]
    trimmed = "[trimmed for fixture]"
    found = sq.filterEvents("small", [{"kind": "type", "values": kinds}])
    assert [(d["seq"], d["type"], d["text"]) for d in found] == [
        (18, "attachment/task_reminder", f"[pending] example: {trimmed}"),
        (32, "attachment/todo_reminder", ""),
        (39, "attachment/task_reminder", ""),
        (43, "attachment/task_reminder", "\n".join([f"[{trimmed}] {trimmed}: {trimmed}"] * 8)),
        (45, "attachment/todo_reminder", "\n".join([f"[{trimmed}] {trimmed}"] * 9)),
        (47, "attachment/hook_non_blocking_error", f"{trimmed}\n{trimmed}"),
        (49, "attachment/hook_blocking_error", f"{trimmed}\n{trimmed}"),
    ]


def test_search_paging_through_the_contract(sq):
    first = sq.searchSessions({"query": "the", "limit": 2})
    second = sq.searchSessions({"query": "the", "limit": 2, "cursor": first["nextCursor"]})
    everything = sq.searchSessions({"query": "the", "limit": 4})
    assert [i["header"]["id"] for i in first["items"] + second["items"]] == [i["header"]["id"] for i in everything["items"]]
    assert code_of(lambda: sq.searchSessions({"query": "a", "limit": 2, "cursor": first["nextCursor"]})) == (
        "SESSION_QUERY_INVALID_CURSOR"
    )


# -- errors --------------------------------------------------------------------


def test_options_given_where_there_are_none_or_unknown_keys_are_refused(sq):
    with pytest.raises(QueryError) as error:
        sq.listSessions({"limit": 2})  # listSessions(signal) takes no options
    assert (error.value.code, error.value.message) == (
        "SESSION_QUERY_INVALID_QUERY", "signal must be a threading.Event or have an 'aborted' attribute, not dict"
    )
    with pytest.raises(QueryError) as error:
        sq.searchSessions({"query": "hello", "bogus": 1, "filters": []})  # "filters" is searchEvents'
    assert (error.value.code, error.value.message) == (
        "SESSION_QUERY_INVALID_QUERY",
        "searchSessions has no bogus, filters; its request keys are cursor, eventFilters, limit, mode, query, sessionFilters",
    )
    assert code_of(lambda: sq.searchEvents({"sessionId": FORK, "query": "x", "eventFilters": []})) == "SESSION_QUERY_INVALID_QUERY"
    assert len(sq.listSessions(threading.Event())) == len(sq.listSessions())


def test_request_validation_errors(sq):
    assert code_of(lambda: sq.readSession("nope")) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(lambda: sq.readSession(None)) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(lambda: sq.readEvent({"sessionId": FORK, "seq": 99})) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(lambda: sq.traceEvent({"sessionId": FORK, "seq": 0})) == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert code_of(lambda: sq.readEvent({"sessionId": FORK, "seq": 1, "before": 51})) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(lambda: sq.readEvent({"sessionId": FORK, "seq": 1, "after": -1})) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(lambda: sq.readEvent({"sessionId": FORK, "seq": "1"})) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(lambda: sq.filterSessions([{"kind": "title", "values": []}])) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: sq.filterSessions([{"kind": "id", "values": FORK}])) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: sq.filterSessions([{"kind": "created-at", "from": 5, "to": 1}])) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: sq.filterEvents(FORK, [{"kind": "text", "text": "  "}])) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: sq.filterEvents(FORK, [{"kind": "surface", "values": ["hidden"]}])) == "SESSION_QUERY_INVALID_FILTER"
    misspelt = [{"kind": "created-at", "form": 5}]  # would otherwise be no bound at all
    with pytest.raises(QueryError) as error:
        sq.filterSessions(misspelt)
    assert (error.value.code, error.value.message) == (
        "SESSION_QUERY_INVALID_FILTER", "sessionFilters: a created-at clause has no form; its keys are from, kind, to"
    )
    extra = [{"kind": "id", "values": [FORK], "extra": 1}]
    assert code_of(lambda: sq.filterSessions(extra)) == "SESSION_QUERY_INVALID_FILTER"
    with pytest.raises(QueryError) as error:
        sq.filterEvents(FORK, [{"kind": "text", "text": "x", "values": [1]}])
    assert (error.value.code, error.value.message) == (
        "SESSION_QUERY_INVALID_FILTER", "filters: a text clause has no values; its keys are kind, text")
    assert code_of(lambda: sq.filterEvents(FORK, [{"kind": "seq", "from": 1, "until": 3}])) == "SESSION_QUERY_INVALID_FILTER"
    with pytest.raises(QueryError) as error:  # a text scan is one of filterEvents' kinds: the answer names it
        sq.filterEvents(FORK, [{"kind": "txt", "text": "x"}])
    assert (error.value.code, error.value.message) == (
        "SESSION_QUERY_INVALID_FILTER", "filters: unknown kind 'txt'; use one of seq, time, type, surface, text")
    text_filter = [{"kind": "text", "text": "x"}]
    assert code_of(lambda: sq.searchSessions({"query": "x", "eventFilters": text_filter})) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: sq.searchSessions({"query": "x", "limit": 0})) == "SESSION_QUERY_INVALID_LIMIT"
    assert code_of(lambda: sq.searchEvents({"sessionId": FORK, "query": "x", "limit": 101})) == "SESSION_QUERY_INVALID_LIMIT"
    assert code_of(lambda: sq.searchSessions({"query": "  "})) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: sq.searchSessions({"query": "a NOT b", "mode": "raw"})) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: sq.searchSessions({"query": "x", "cursor": "garbage"})) == "SESSION_QUERY_INVALID_CURSOR"
    assert code_of(lambda: sq.searchEvents({"sessionId": "nope", "query": "x"})) == "SESSION_QUERY_SESSION_NOT_FOUND"
    # A request without its session is a bad request, as over HTTP.
    assert code_of(lambda: sq.searchEvents({"query": "x"})) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: sq.searchEvents({"sessionId": 5, "query": "x"})) == "SESSION_QUERY_INVALID_QUERY"


UNREPRESENTABLE = (float("nan"), float("inf"), float("-inf"), 99999999999999999999999, -1e20, 2**63)


def test_range_bounds_must_be_finite_64_bit_numbers(sq):
    def invalid(call):
        return code_of(call) == "SESSION_QUERY_INVALID_FILTER"

    for value in UNREPRESENTABLE:
        for end in ("from", "to"):
            created = [{"kind": "created-at", end: value}]
            assert invalid(lambda: sq.filterSessions(created))
            assert invalid(lambda: sq.searchSessions({"query": "the", "sessionFilters": created}))
            for kind in ("seq", "time"):
                event = [{"kind": kind, end: value}]
                assert invalid(lambda: sq.filterEvents(FORK, event))
                assert invalid(lambda: sq.searchSessions({"query": "the", "eventFilters": event}))
                assert invalid(lambda: sq.searchEvents({"sessionId": FORK, "query": "the", "filters": event}))
    # The widest bounds SQLite holds are ranges like any other.
    assert [d["seq"] for d in sq.filterEvents(FORK, [{"kind": "seq", "from": 14, "to": 2**63 - 1}])] == [14]
    assert sq.filterSessions([{"kind": "created-at", "to": -(2**63 - 1)}]) == []
    assert sq.searchEvents({"sessionId": FORK, "query": "the", "filters": [{"kind": "time", "from": 9.2e18}]})["items"] == []



def test_a_fractional_bound_holds_only_the_milliseconds_inside_its_range(sq):
    # Times are whole milliseconds: FORK was created at 1765357200000, its first two events 10 s apart.
    def created(low, high):
        return [r["header"]["id"] for r in sq.filterSessions([{"kind": "created-at", "from": low, "to": high}])]

    assert created(1765357200000.5, 1765357200000.9) == []
    assert created(1765357199999.5, 1765357200000.5) == [FORK]
    assert [d["seq"] for d in sq.filterEvents(FORK, [{"kind": "time", "from": 1765357200000.5, "to": 1765357210000}])] == [2]
    assert [d["seq"] for d in sq.filterEvents(FORK, [{"kind": "time", "from": 1765357200000, "to": 1765357209999.5}])] == [1]
    late = [{"kind": "time", "from": 1765357200000.5, "to": 1765357200000.5}]
    assert sq.searchEvents({"sessionId": FORK, "query": "sorting", "filters": late})["items"] == []

def test_event_seqs_must_be_64_bit_integers(sq):
    for seq in (99999999999999999999999, -(2**63)):
        assert code_of(lambda: sq.readEvent({"sessionId": FORK, "seq": seq})) == "SESSION_QUERY_INVALID_WINDOW"
        assert code_of(lambda: sq.traceEvent({"sessionId": FORK, "seq": seq})) == "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(lambda: sq.readEvent({"sessionId": FORK, "seq": 2**63 - 1})) == "SESSION_QUERY_EVENT_NOT_FOUND"


def test_list_items_of_the_wrong_type_are_invalid(sq):
    def invalid(call):
        return code_of(call) == "SESSION_QUERY_INVALID_FILTER"

    for ids in ([[1]], [FORK, {"id": FORK}], [None], FORK):
        assert invalid(lambda: sq.readTitleSnapshots(ids))
    # Two clauses of one kind are intersected: their values must be strings first.
    twice = lambda kind, value: [{"kind": kind, "values": [value]}, {"kind": kind, "values": [value]}]  # noqa: E731
    for kind in ("id", "cwd", "parent", "availability"):
        assert invalid(lambda: sq.filterSessions(twice(kind, [1])))
        assert invalid(lambda: sq.searchSessions({"query": "x", "sessionFilters": twice(kind, {"a": 1})}))
    for kind in ("type", "surface"):
        assert invalid(lambda: sq.filterEvents(FORK, twice(kind, [1])))
        assert invalid(lambda: sq.searchEvents({"sessionId": FORK, "query": "x", "filters": twice(kind, {"a": 1})}))
    assert invalid(lambda: sq.filterSessions([{"kind": ["id"], "values": [FORK]}]))


def test_configuration_and_cancellation(read_conn):
    assert code_of(lambda: SessionQuery(read_conn, read_window_max=0)) == "SESSION_QUERY_INVALID_CONFIG"
    assert code_of(lambda: SessionQuery(read_conn, default_limit=50, max_limit=10)) == "SESSION_QUERY_INVALID_CONFIG"
    assert code_of(lambda: SessionQuery(read_conn, max_limit=101)) == "SESSION_QUERY_INVALID_CONFIG"  # search pages 100
    assert len(SessionQuery(read_conn, max_limit=100, default_limit=100).searchSessions({"query": "the"})["items"]) > 1
    disabled = SessionQuery(read_conn, search=False)
    assert code_of(lambda: disabled.searchSessions({"query": "x"})) == "SESSION_QUERY_SEARCH_DISABLED"
    assert disabled.readTitle(FORK)["title"] == "Help me implement a sorting algorithm"  # exact reads still work
    cancelled = threading.Event()
    cancelled.set()
    sq = SessionQuery(read_conn)
    assert code_of(lambda: sq.readSession(FORK, signal=cancelled)) == "SESSION_QUERY_ABORTED"
    assert code_of(lambda: sq.readTitleSnapshots([FORK, DAG], signal=cancelled)) == "SESSION_QUERY_ABORTED"
    assert code_of(lambda: sq.readTitleSnapshots([], signal=cancelled)) == "SESSION_QUERY_ABORTED"  # rejected whole

    class Signal:
        aborted = True

    assert code_of(lambda: sq.searchSessions({"query": "x"}, signal=Signal())) == "SESSION_QUERY_ABORTED"



def test_an_interrupted_batch_of_titles_is_rejected_whole(read_conn):
    # SQLite interrupted (over HTTP, the time limit; CLI scripts, their timeout) is
    # cancellation: it rejects the whole operation, not each id on its own.
    sq = SessionQuery(read_conn)
    read_conn.set_progress_handler(lambda: 1, 1)
    assert code_of(lambda: sq.readTitleSnapshot(FORK)) == "SESSION_QUERY_ABORTED"
    assert code_of(lambda: sq.readTitleSnapshots([FORK, DAG])) == "SESSION_QUERY_ABORTED"
    read_conn.set_progress_handler(None, 0)
    assert [(r["sessionId"], r["status"]) for r in sq.readTitleSnapshots([FORK, "nope"])] == [
        (FORK, "fulfilled"), ("nope", "rejected"),
    ]

@pytest.fixture
def pair(toy):
    toy.write("p", line("p1", "parent words", "2026-01-01T00:00:00Z"), line("p2", "more", "2026-01-01T00:01:00Z", parent="p1"))
    toy.write("c", line("c1", "child words", "2026-01-02T00:00:00Z"))
    toy.ingest()
    return toy


def test_search_and_text_scan_agree_on_log_only_events(toy):
    toy.write("s", *(line(f"l{n}", f"needle {n}", f"2026-01-01T00:0{n}:00Z") for n in range(1, 6)))
    toy.ingest()
    for uuid, type, subtype in (("l1", "event_msg", "error"), ("l2", "event_msg", "token_count"),
                                ("l3", "warning", None), ("l4", "system", "compact_boundary")):
        toy.sql("UPDATE messages SET surface = 'log-only', type = ?, subtype = ? WHERE uuid = ?", [type, subtype, uuid])
    sq = SessionQuery(toy.conn())
    scanned = [(d["seq"], d["type"]) for d in sq.filterEvents("s", [{"kind": "text", "text": "needle"}])]
    searched = sorted((i["seq"], i["type"]) for i in sq.searchEvents({"sessionId": "s", "query": "needle"})["items"])
    assert scanned == searched == [(1, "event_msg/error"), (3, "warning"), (5, "user/message")]


def test_a_log_without_times_is_created_at_0_in_headers_lists_and_filters(pair):
    pair.write("t", {"id": "t1", "text": "no time here"})
    pair.ingest()
    sq = SessionQuery(pair.conn())
    assert [(r["header"]["id"], r["header"]["createdAt"]) for r in sq.listSessions()] == [
        ("c", 1767312000000), ("p", 1767225600000), ("t", 0),
    ]
    assert [r["header"]["id"] for r in sq.filterSessions([{"kind": "created-at", "from": 0, "to": 0}])] == ["t"]
    assert [r["header"]["id"] for r in sq.filterSessions([{"kind": "created-at", "from": 1}])] == ["c", "p"]
    assert [e["time"] for e in sq.listEvents("t")] == [0]
    assert [e["seq"] for e in sq.filterEvents("t", [{"kind": "time", "to": 0}])] == [1]



def test_an_event_s_time_is_the_one_its_time_filter_matches(toy):
    # A fraction past the millisecond is rounded once, as the time filters round it
    # (half a millisecond up), for records, search hits and filters alike.
    toy.write("h", line("h1", "needle one", "2026-01-01T00:00:00.0005Z"),
              line("h2", "needle two", "2026-01-01T09:00:00.0025+09:00"))
    toy.ingest()
    sq = SessionQuery(toy.conn())
    assert [(e["seq"], e["time"]) for e in sq.listEvents("h")] == [(1, 1767225600001), (2, 1767225600003)]
    for seq, time in ((1, 1767225600001), (2, 1767225600003)):
        at = [{"kind": "time", "from": time, "to": time}]
        assert [(d["seq"], d["time"]) for d in sq.filterEvents("h", at)] == [(seq, time)]
        found = sq.searchEvents({"sessionId": "h", "query": "needle", "filters": at})["items"]
        assert [(hit["seq"], hit["time"]) for hit in found] == [(seq, time)]

def test_lineage_cycles_are_invalid(pair):
    pair.sql("UPDATE sessions SET parent_session_id = 'p' WHERE id = 'c'")
    pair.sql("UPDATE sessions SET parent_session_id = 'c' WHERE id = 'p'")
    assert code_of(lambda: SessionQuery(pair.conn()).traceSession("c")) == "SESSION_QUERY_INVALID_LINEAGE"


CONTINUED = (  # sessions c1 .. c<n>, each continuing the one before, the first continuing p
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
    "INSERT INTO sessions (id, source, parent_session_id, relationship, started_at) "
    "SELECT 'c' || i, 'toy', CASE i WHEN 1 THEN 'p' ELSE 'c' || (i - 1) END, 'continuation', "
    "strftime('%Y-%m-%dT%H:%M:%fZ', '2026-02-01', '+' || i || ' minutes') FROM n"
)


def test_a_lineage_deeper_than_python_recurses_is_traced(pair):
    """A session continued 1,500 times: its descendant forest is every generation, nested."""
    pair.sql("DELETE FROM sessions WHERE id = 'c'")
    pair.sql(CONTINUED, [1500])
    sq = SessionQuery(pair.conn())
    trace, depth = sq.traceSession("p"), 0
    node = {"descendants": trace["descendants"]}
    while node["descendants"]:
        [node] = node["descendants"]
        depth += 1
        assert node["session"]["header"]["id"] == f"c{depth}"
    assert depth == 1500 and trace["complete"] is True
    bottom = sq.traceSession("c1500")
    assert (len(bottom["ancestors"]), bottom["root"]["header"]["id"], bottom["descendants"]) == (1500, "p", [])


def test_broken_surfaces_are_invalid(pair):
    pair.sql("UPDATE messages SET replaced_by = 'p2' WHERE uuid = 'p1'")  # current, yet replaced
    sq = SessionQuery(pair.conn())
    assert code_of(lambda: sq.readSurface("p")) == "SESSION_QUERY_INVALID_SURFACE"
    pair.sql("UPDATE messages SET surface = 'shadowed', replaced_by = 'elsewhere' WHERE uuid = 'p1'")
    assert code_of(lambda: sq.traceEvent({"sessionId": "p", "seq": 1})) == "SESSION_QUERY_INVALID_SURFACE"
    pair.sql("UPDATE messages SET surface = 'shadowed', replaced_by = 'p1' WHERE uuid = 'p2'")
    pair.sql("UPDATE messages SET replaced_by = 'p2' WHERE uuid = 'p1'")
    assert code_of(lambda: sq.traceEvent({"sessionId": "p", "seq": 2})) == "SESSION_QUERY_INVALID_SURFACE"


def test_corrupt_and_conflicting_logs(pair):
    sq = SessionQuery(pair.conn())
    pair.sql("UPDATE messages SET seq = 1 WHERE uuid = 'p2'")
    assert code_of(lambda: sq.readSession("p")) == "SESSION_QUERY_CORRUPT_SESSION"
    pair.sql("UPDATE messages SET source = 'codex' WHERE uuid = 'c1'")
    assert code_of(lambda: sq.readSession("c")) == "SESSION_QUERY_SOURCE_CONFLICT"


def test_storage_failures(pair):
    sq = SessionQuery(pair.conn())
    pair.sql("ALTER TABLE tool_calls RENAME TO tool_calls_gone")
    assert code_of(lambda: sq.readSession("p")) == "SESSION_QUERY_PERSISTENCE_FAILED"
    pair.sql("DROP TABLE messages_fts")
    assert code_of(lambda: sq.searchSessions({"query": "words"})) == "SESSION_QUERY_INDEX_FAILED"


def test_an_archived_session_is_persisted_but_no_longer_live(pair):
    (pair.root / "c.jsonl").unlink()
    pair.ingest()
    sq = SessionQuery(pair.conn())
    assert [(r["header"]["id"], r["live"], r["persisted"]) for r in sq.listSessions()] == [
        ("c", False, True), ("p", True, True),
    ]
    ids = lambda *values: [r["header"]["id"] for r in sq.filterSessions(  # noqa: E731
        [{"kind": "availability", "values": v} for v in values]
    )]
    assert ids(["persisted"]) == ids(["live", "persisted"]) == ["c", "p"]
    assert ids(["live"]) == ids(["live"], ["persisted"]) == ["p"]
    found = sq.searchSessions({"query": "words", "sessionFilters": [{"kind": "availability", "values": ["persisted"]}]})
    assert [(i["header"]["id"], i["live"], i["persisted"]) for i in found["items"]] == [("c", False, True), ("p", True, True)]
    assert sq.readSession("c")["events"][0]["data"]["text"] == "child words"


# -- live-preferred answers ------------------------------------------------------


def test_refresh_tail_ingests_a_grown_log(pair):
    from datasette_obelisk.query.live import changed_files, refresh

    write = pair.write_conn()
    sources = pair.sources
    assert refresh(write, ["p"], sources=sources) == []
    path = pair.write("p", line("p3", "fresh words", "2026-01-01T00:02:00Z", parent="p2"), append=True)
    assert [row["path"] for row in changed_files(write, ["p"])] == [str(path)]
    assert changed_files(write, ["c"]) == []
    assert refresh(write, ["p"], sources=sources, enabled=False) == []
    assert [e["seq"] for e in SessionQuery(pair.conn()).listEvents("p")] == [1, 2]
    assert refresh(write, ["p"], sources=sources) == [str(path)]
    sq = SessionQuery(pair.conn())
    assert [e["seq"] for e in sq.listEvents("p")] == [1, 2, 3]
    assert [i["header"]["id"] for i in sq.searchSessions({"query": "fresh"})["items"]] == ["p"]
    assert refresh(write, None, sources=sources) == []


def test_refresh_leaves_vanished_files_to_the_archive(pair):
    from datasette_obelisk.query.live import refresh

    (pair.root / "c.jsonl").unlink()
    assert refresh(pair.write_conn(), None, sources=pair.sources) == []
    assert SessionQuery(pair.conn()).readSession("c")["events"][0]["data"]["text"] == "child words"


def test_a_lone_surrogate_in_a_request_is_an_invalid_query(sq):
    lone = "a\ud800"
    for call in (lambda: sq.readSession(lone), lambda: sq.readSurface(lone), lambda: sq.traceSession(lone),
                 lambda: sq.filterSessions([{"kind": "id", "values": [lone]}]),
                 lambda: sq.searchEvents({"sessionId": lone, "query": "x"}),
                 lambda: sq.readEvent({"sessionId": lone, "seq": 1})):
        assert code_of(call) == "SESSION_QUERY_INVALID_QUERY"
    assert sq.readTitleSnapshots([lone])[0]["reason"]["code"] == "SESSION_QUERY_INVALID_QUERY"


def test_an_archive_contradicting_itself_is_no_bad_request():
    damaged = ("CORRUPT_SESSION", "INVALID_LINEAGE", "INVALID_SURFACE", "SOURCE_CONFLICT")
    assert [QueryError(f"SESSION_QUERY_{name}", "x").status for name in damaged] == [500] * 4
    assert QueryError("SESSION_QUERY_INVALID_QUERY", "x").status == 400


def test_an_event_request_holds_only_its_own_keys(sq):
    window = "SESSION_QUERY_INVALID_WINDOW"
    assert code_of(lambda: sq.readEvent({"sessionId": FORK, "seq": 1, "bogus": 1})) == window
    assert code_of(lambda: sq.traceEvent({"sessionId": FORK, "seq": 1, "before": 1})) == window
    assert code_of(lambda: sq.readEvent({"seq": 1})) == code_of(lambda: sq.traceEvent({"sessionId": 3, "seq": 1})) == window
    assert sq.readEvent({"sessionId": FORK, "seq": 1, "before": 0, "after": 0})["target"]["seq"] == 1


def test_a_long_chain_of_replacements_is_checked_in_one_walk():
    """Every compaction replaces the summary before it: checking that no chain
    of replacements loops walks each event once, not each chain from every event
    (2,000 Codex compactions made traceEvent and readSurface take 1.6-1.9 s on
    6,000 events, four times what 1,000 took)."""
    from datasette_obelisk.query.session_query import _check_surface

    reads = 0

    class Event(dict):
        def __getitem__(self, key):
            nonlocal reads
            reads += key == "replaced_by"
            return super().__getitem__(key)

    n = 400
    events = [Event(uuid=f"e{i}", seq=i + 1, surface="shadowed" if i < n - 1 else "current",
                    replaced_by=f"e{i + 1}" if i < n - 1 else None) for i in range(n)]
    _check_surface(events)
    assert reads <= 6 * n, reads  # a walk from every event: n * n / 2
    events[-1] = Event(uuid=f"e{n - 1}", seq=n, surface="shadowed", replaced_by="e0")  # a loop is still found
    assert code_of(lambda: _check_surface(events)) == "SESSION_QUERY_INVALID_SURFACE"


def test_tracing_an_event_reads_the_replacements_not_the_whole_session(toy):
    """traceEvent reads its event, the events that name a replacement and those
    they name, not every event of the session: tracing the last line of a
    300,000-line session read all of them (3-8 s, 578 MB) for a 400-byte answer.
    Here it takes a small part of SQLite's steps for listing the session's events."""
    n = 2000
    toy.write("s", *(line(f"s-{i}", f"line {i}", f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z")
                     for i in range(n)))
    toy.ingest()
    conn = toy.conn()
    counted = [0]

    def steps(call):
        counted[0] = 0
        conn.set_progress_handler(lambda: counted.__setitem__(0, counted[0] + 1), 100)
        try:
            result = call()
        finally:
            conn.set_progress_handler(None, 0)
        return result, counted[0]

    sq = SessionQuery(conn)
    trace, tracing = steps(lambda: sq.traceEvent({"sessionId": "s", "seq": n}))
    events, listing = steps(lambda: sq.listEvents("s"))
    assert trace["target"]["seq"] == n and len(events) == n
    assert tracing * 4 < listing, (tracing, listing)


# -- cursors while the archive changes -------------------------------------------


def claude_log(project, session_id, *objects, append=False):
    """Write (or append to) a Claude Code log of ``objects``."""
    import json

    common = {"sessionId": session_id, "cwd": "/p", "version": "1.0.30"}
    with open(project / f"{session_id}.jsonl", "a" if append else "w") as fp:
        fp.writelines(json.dumps({**common, **o}) + "\n" for o in objects)


def prompt(uuid, text, time, parent=None):
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "timestamp": time,
            "message": {"role": "user", "content": text}}


def reply(uuid, text, time, parent):
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "timestamp": time,
            "message": {"role": "assistant", "id": f"m-{uuid}", "content": [{"type": "text", "text": text}]}}


def inline_agent_log(project, session_id, word):
    """A 1.0-era log whose agent's lines are inline (moved to a session of their own when derived)."""
    side = {"isSidechain": True}
    claude_log(
        project, session_id,
        prompt(f"{session_id}-u1", "Start", "2026-01-05T00:00:00Z"),
        {"type": "assistant", "uuid": f"{session_id}-a1", "parentUuid": f"{session_id}-u1",
         "timestamp": "2026-01-05T00:00:01Z", "message": {"role": "assistant", "id": "m1", "content": [
             {"type": "tool_use", "id": "t1", "name": "Task", "input": {"description": "Look", "prompt": f"Look {word}"}}]}},
        {**side, **prompt(f"{session_id}-x1", f"Look {word}", "2026-01-05T00:00:02Z")},
        {**side, **reply(f"{session_id}-x2", f"Found the {word}", "2026-01-05T00:00:03Z", f"{session_id}-x1")},
        {"type": "user", "uuid": f"{session_id}-u2", "parentUuid": f"{session_id}-a1", "timestamp": "2026-01-05T00:00:04Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Found"}]}},
    )


def test_a_search_cursor_goes_on_when_an_ingest_moves_the_inline_agent_lines_it_wrote(tmp_path):
    """An ingest writes an inline agent's lines in its parent's session, then moves them
    to a session of their own and renumbers the parent's: rows a cursor asked for
    before it never saw, so it goes on; one asked for before they moved goes stale."""
    from datasette_obelisk.store import derive
    from datasette_obelisk.store.ingest import ingest
    from query_fixtures import connect

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    for n in range(3):
        claude_log(project, f"old{n}", prompt(f"o{n}", f"alpha note {n}", f"2026-01-0{n + 1}T00:00:00Z"))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    sq = SessionQuery(connect(db))
    first = sq.searchSessions({"query": "alpha", "limit": 1})
    inline_agent_log(project, "new", "alpha")
    midway = []
    group = derive.group_inline_sidechains

    def grouping(conn, session_id, words=None):  # the lines are stored, not moved yet: a cursor may see them
        if not midway:
            midway.append(SessionQuery(connect(db)).searchSessions({"query": "alpha", "limit": 1}))
        return group(conn, session_id, words)

    derive.group_inline_sidechains = grouping
    try:
        ingest(db, {"claude": tmp_path / "claude"})
    finally:
        derive.group_inline_sidechains = group
    moved = connect(db).execute("SELECT session_id FROM messages WHERE uuid = 'new-x2'").fetchone()
    assert moved == ("new:agent-sidechain-newx1",)
    pages = [first]
    while pages[-1].get("nextCursor"):
        pages.append(sq.searchSessions({"query": "alpha", "limit": 1, "cursor": pages[-1]["nextCursor"]}))
    assert [item["header"]["id"] for page in pages for item in page["items"]] == ["old2", "old1", "old0"]
    assert code_of(lambda: sq.searchSessions({"query": "alpha", "limit": 1, "cursor": midway[0]["nextCursor"]})) == (
        "SESSION_QUERY_STALE_CURSOR"
    )


def test_an_event_cursor_filtered_by_surface_goes_stale_when_a_rewind_shadows_what_it_saw(tmp_path):
    """A rewind read after the first page shadows events it found current: going on would
    skip the current events ranked after them (or, filtered by shadowed, show them again)."""
    from datasette_obelisk.store.ingest import ingest
    from query_fixtures import connect

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    lines, parent = [], None
    for n in range(1, 5):
        lines += [prompt(f"u{n}", f"alpha {n}", f"2026-01-01T00:0{n}:00Z", parent),
                  reply(f"a{n}", "ok", f"2026-01-01T00:0{n}:30Z", f"u{n}")]
        parent = f"a{n}"
    claude_log(project, "s1", *lines)
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    sq = SessionQuery(connect(db))
    request = {"sessionId": "s1", "query": "alpha", "filters": [{"kind": "surface", "values": ["current"]}], "limit": 2}
    first = sq.searchEvents(request)
    assert [hit["seq"] for hit in first["items"]] == [7, 5]
    unfiltered = sq.searchEvents({"sessionId": "s1", "query": "ok", "limit": 2})
    claude_log(project, "s1", prompt("u5", "beta instead", "2026-01-01T00:09:00Z", "a1"), append=True)  # back to a1
    ingest(db, {"claude": tmp_path / "claude"})
    assert [hit["seq"] for hit in sq.searchEvents({**request, "limit": 10})["items"]] == [1]
    assert code_of(lambda: sq.searchEvents({**request, "cursor": first["nextCursor"]})) == "SESSION_QUERY_STALE_CURSOR"
    unfiltered_next = {"sessionId": "s1", "query": "ok", "limit": 2, "cursor": unfiltered["nextCursor"]}
    assert code_of(lambda: sq.searchEvents(unfiltered_next)) == (
        "SESSION_QUERY_STALE_CURSOR"  # (hits carry their surface: pages before and after the rewind would disagree)
    )
# -- references across an ingest that renumbers a session --------------------------


def renumbered_fork(tmp_path):
    """A Codex fork ingested before the log it forked from (it then keeps a copy of that log's
    lines), and a function that brings that log: the fork gives its copy up and its own lines
    move up (an ingest that renumbers the session)."""
    from test_codex_fork_ancestry import IDS, chain, place

    from datasette_obelisk.store.ingest import ingest

    logs, home, db = chain(), tmp_path / ".codex", tmp_path / "fork.db"

    def arrive(name):
        place(home, logs, name)
        ingest(db, {"codex": home})

    arrive("B")
    return db, "codex:" + IDS["B"], lambda: arrive("A")


def test_an_event_named_by_its_id_is_the_same_event_after_an_ingest_renumbers_its_session(tmp_path):
    """A search hit names its event by seq and id. The seq is a place in the log as it is now:
    after an ingest renumbered the session it holds another event. The id names the same event
    wherever it now is, or is SESSION_QUERY_EVENT_NOT_FOUND once the session no longer holds it."""
    from datasette_obelisk.query.readonly import connect_readonly

    db, fork, parent_arrives = renumbered_fork(tmp_path)
    with connect_readonly(db) as conn:
        hits = SessionQuery(conn).search_events({"sessionId": fork, "query": "own prompt"})["items"]
    held = {h["snippet"]: h for h in hits}
    assert sorted(held) == ["A's own prompt", "Answer to A's own prompt", "Answer to B's own prompt", "B's own prompt"]
    b_prompt, a_prompt = held["B's own prompt"], held["A's own prompt"]
    assert (a_prompt["seq"], b_prompt["seq"]) == (1, 5)
    parent_arrives()
    with connect_readonly(db) as conn:
        sq = SessionQuery(conn)
        # (seq 1, A's prompt when the hit was made, is B's prompt now: a seq alone moved)
        assert sq.read_event({"sessionId": fork, "seq": 1})["target"]["data"]["text"] == "B's own prompt"
        for request in ({"seq": b_prompt["seq"], "id": b_prompt["id"]}, {"id": b_prompt["id"]}):
            window = sq.read_event({"sessionId": fork, "before": 1, "after": 1, **request})
            assert (window["target"]["id"], window["target"]["seq"], window["target"]["data"]["text"]) == (
                b_prompt["id"], 1, "B's own prompt")
            assert (window["startSeq"], window["endSeq"]) == (1, 2)
            trace = sq.trace_event({"sessionId": fork, **request})
            assert trace["target"]["seq"] == 1 and trace["target"]["type"] == "user/message"
        answer = held["Answer to B's own prompt"]
        assert sq.read_event({"sessionId": fork, "seq": answer["seq"], "id": answer["id"]})["target"]["data"]["text"] == (
            "Answer to B's own prompt")
        # A's prompt was the fork's copy, given up: never the event now at its seq.
        for call in (sq.read_event, sq.trace_event):
            assert code_of(lambda: call({"sessionId": fork, "seq": a_prompt["seq"], "id": a_prompt["id"]})) == (
                "SESSION_QUERY_EVENT_NOT_FOUND")
        assert code_of(lambda: sq.read_event({"sessionId": fork, "id": ""})) == "SESSION_QUERY_INVALID_WINDOW"
        assert code_of(lambda: sq.read_event({"sessionId": fork, "id": 5})) == "SESSION_QUERY_INVALID_WINDOW"
        assert code_of(lambda: sq.trace_event({"sessionId": fork})) == "SESSION_QUERY_INVALID_WINDOW"
        # an event of another session is not this one's, and the answer says whose it is
        parent = sq.trace_session(fork)["ancestors"][0]["header"]["id"]
        [theirs] = sq.search_events({"sessionId": parent, "query": "A's own prompt", "mode": "phrase"})["items"][:1]
        with pytest.raises(QueryError) as info:
            sq.read_event({"sessionId": fork, "id": theirs["id"]})
        assert info.value.code == "SESSION_QUERY_EVENT_NOT_FOUND" and repr(parent) in str(info.value)
