"""Every event-shaped answer of the session-query contract names its event by id, and an id
taken from one operation names the same event in every other, also after an ingest appends
lines, renumbers a session, or reads its log again."""

import pytest

from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import corpus_db, read_conn  # noqa: F401
from test_session_query import claude_log, prompt, renumbered_fork, reply

DAG = "dag_compact_after_rewind_preserved"
FORK = "claude_forked_session"
DAG_IDS = ["u1", "a1", "b1u", "b1a", "b2u", "b2a", "b2u2", "cb", "cs", "b2a2", "p1u", "p1a"]
FORK_IDS = [f"{name}-fork" for name in (
    "fu1", "fa1", "fu2a", "fa2a", "fu3a", "fa3a", "fu2b", "fa2b", "fu3b", "fa3b", "fu4b", "fa4b", "fu5b", "fa5b")]
RECORD_KEYS = ["sessionId", "seq", "id", "type", "time", "surface"]


@pytest.fixture
def sq(read_conn):
    return SessionQuery(read_conn)


def without_session(trace: dict) -> dict:
    return {key: value for key, value in trace.items() if key != "session"}


def trace_refs(trace: dict) -> list[tuple[int, str]]:
    """Every (seq, id) pair a trace names besides its target."""
    pairs = [(trace["replacedBy"], trace["replacedById"])] if "replacedBy" in trace else []
    for seqs, ids in (("replacementChain", "replacementChainIds"), ("replacedEventSeqs", "replacedEventIds"),
                      ("sourceEventSeqs", "sourceEventIds"), ("derivedEventSeqs", "derivedEventIds")):
        assert len(trace[seqs]) == len(trace[ids]), (seqs, trace)
        pairs += zip(trace[seqs], trace[ids])
    return pairs


# -- shapes ------------------------------------------------------------------------


def test_event_records_and_documents_carry_the_event_s_id(sq):
    records = sq.listEvents(FORK)
    assert [list(r) for r in records] == [RECORD_KEYS] * 14
    assert [(r["seq"], r["id"]) for r in records] == list(enumerate(FORK_IDS, 1))
    # the record is the full event's own fields, the id included
    assert records == [{key: e[key] for key in RECORD_KEYS} for e in sq.readSession(FORK)["events"]]
    assert sq.filterEvents(FORK, [{"kind": "seq", "from": 11, "to": 11}]) == [{
        "sessionId": FORK, "seq": 11, "id": "fu4b-fork", "type": "user/message", "time": 1765357290000,
        "surface": "current", "text": "Can you add type hints?",
    }]
    hit = sq.searchEvents({"sessionId": FORK, "query": "type hints", "mode": "phrase"})["items"][0]
    assert list(hit) == [*RECORD_KEYS, "snippet", "snippetMatches"] and hit["id"] == "fu4b-fork"
    best = sq.searchSessions({"query": "type hints", "mode": "phrase"})["items"][0]["bestMatch"]
    assert list(best) == list(hit) and best["id"] == "fu4b-fork"


def test_trace_event_names_its_target_and_every_event_it_links_by_id(sq):
    assert without_session(sq.traceEvent({"sessionId": DAG, "seq": 3})) == {
        "target": {"sessionId": DAG, "seq": 3, "id": "b1u", "type": "user/message", "time": 1751364120000,
                   "surface": "shadowed"},
        "replacedBy": 5,
        "replacedById": "b2u",
        "replacementChain": [5, 9],
        "replacementChainIds": ["b2u", "cs"],
        "replacedEventSeqs": [],
        "replacedEventIds": [],
        "sourceEventSeqs": [],
        "sourceEventIds": [],
        "derivedEventSeqs": [],
        "derivedEventIds": [],
    }
    summary = sq.traceEvent({"sessionId": DAG, "id": "cs"})
    assert (summary["target"]["seq"], summary["replacedEventSeqs"], summary["replacedEventIds"]) == (
        9, [1, 2, 5], ["u1", "a1", "b2u"])
    assert "replacedBy" not in summary and "replacedById" not in summary
    result = sq.traceEvent({"sessionId": FORK, "seq": 9})
    assert (result["sourceEventSeqs"], result["sourceEventIds"]) == ([8], ["fa2b-fork"])
    call = sq.traceEvent({"sessionId": FORK, "seq": 8})
    assert (call["derivedEventSeqs"], call["derivedEventIds"]) == ([9], ["fu3b-fork"])
    abandoned = sq.traceEvent({"sessionId": FORK, "seq": 5})
    assert (abandoned["replacedBy"], abandoned["replacedById"], abandoned["sourceEventIds"]) == (
        7, "fu2b-fork", ["fa2a-fork"])


def test_titles_and_surfaces_name_their_events_by_id(sq):
    assert sq.readTitle(FORK) == {
        "title": "Help me implement a sorting algorithm", "messageSeqs": [1], "messageIds": ["fu1-fork"],
        "source": "fallback", "kind": "first_prompt", "eventSeq": 1, "eventId": "fu1-fork", "updatedAt": 1765357200000,
    }
    surface = sq.readSurface(DAG)
    assert (surface["capturedThroughSeq"], surface["capturedThroughId"]) == (12, "p1a")


# -- round trips -----------------------------------------------------------------


def assert_round_trips(sq: SessionQuery, session_id: str) -> int:
    """Every id an operation returns, given to readEvent and traceEvent, names the event it came with.
    Returns how many links to other events the session's traces hold."""
    links = 0
    records = sq.listEvents(session_id)
    by_id = {r["id"]: r for r in records}
    assert len(by_id) == len(records)
    for record in records:
        window = sq.readEvent({"sessionId": session_id, "id": record["id"], "before": 1, "after": 1})
        assert {key: window["target"][key] for key in RECORD_KEYS} == record
        assert [e["id"] for e in window["events"]] == [r["id"] for r in records[max(record["seq"] - 2, 0):record["seq"] + 1]]
        trace = sq.traceEvent({"sessionId": session_id, "id": record["id"]})
        assert trace["target"] == record
        for seq, event_id in trace_refs(trace):
            assert by_id[event_id]["seq"] == seq
            assert sq.traceEvent({"sessionId": session_id, "id": event_id})["target"] == by_id[event_id]
            links += 1
    for document in sq.filterEvents(session_id, []):
        assert {key: document[key] for key in RECORD_KEYS} == by_id[document["id"]]
    for event in sq.readSession(session_id)["events"] + sq.readSurface(session_id)["events"]:
        assert {key: event[key] for key in RECORD_KEYS} == by_id[event["id"]]
    surface = sq.readSurface(session_id)
    if surface["capturedThroughId"] is not None:
        assert by_id[surface["capturedThroughId"]]["seq"] == surface["capturedThroughSeq"] == records[-1]["seq"]
    title = sq.readTitle(session_id)
    if title is not None:
        assert [by_id[i]["seq"] for i in title["messageIds"]] == title["messageSeqs"]
        assert by_id[title["eventId"]]["seq"] == title["eventSeq"]
    return links


def test_an_id_from_any_answer_names_the_same_event_in_every_other(sq):
    assert assert_round_trips(sq, DAG) == 17
    assert assert_round_trips(sq, FORK) == 18
    for hit in sq.searchEvents({"sessionId": FORK, "query": "mergesort"})["items"]:
        record = {key: hit[key] for key in RECORD_KEYS}
        assert sq.traceEvent({"sessionId": FORK, "id": hit["id"]})["target"] == record
        assert sq.readEvent({"sessionId": FORK, "id": hit["id"]})["target"]["seq"] == hit["seq"]


# -- after an ingest ----------------------------------------------------------------


def listed(db, session_id: str) -> list[dict]:
    with connect_readonly(db) as conn:
        return SessionQuery(conn).listEvents(session_id)


def traced(db, request: dict) -> dict:
    with connect_readonly(db) as conn:
        return without_session(SessionQuery(conn).traceEvent(request))


def test_ids_taken_before_an_ingest_renumbers_a_session_name_the_same_events_after_it(tmp_path):
    db, fork, parent_arrives = renumbered_fork(tmp_path)
    before = listed(db, fork)
    ids = [f"{fork}:{offset}" for offset in (867, 1153, 1333, 1526, 1881, 2167, 2348, 2542)]
    assert [r["id"] for r in before] == ids
    result_before = traced(db, {"sessionId": fork, "id": ids[6]})
    assert (result_before["target"]["seq"], result_before["sourceEventSeqs"], result_before["sourceEventIds"]) == (
        7, [6], [ids[5]])
    parent_arrives()
    after = listed(db, fork)
    # B's own lines moved up four places and kept their ids; the copy of A's is given up
    assert [(r["seq"], r["id"]) for r in after] == list(enumerate(ids[4:], 1))
    assert [{**r, "seq": r["seq"] + 4} for r in after] == before[4:]
    result_after = traced(db, {"sessionId": fork, "id": result_before["sourceEventIds"][0]})
    assert (result_after["target"]["seq"], result_after["derivedEventSeqs"], result_after["derivedEventIds"]) == (
        2, [3], [ids[6]])
    with connect_readonly(db) as conn:
        sq = SessionQuery(conn)
        assert assert_round_trips(sq, fork) == 2  # the call names its result, the result its call
        with pytest.raises(QueryError) as info:
            sq.traceEvent({"sessionId": fork, "id": ids[0]})
        assert info.value.code == "SESSION_QUERY_EVENT_NOT_FOUND"


def test_ids_stay_when_a_log_grows_and_when_it_is_read_again(tmp_path, monkeypatch):
    from datasette_obelisk.sources.claude_code import ClaudeCodeSource
    from datasette_obelisk.store.ingest import ingest

    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    claude_log(project, "s1", prompt("u1", "alpha", "2026-01-01T00:01:00Z"),
               reply("a1", "ok", "2026-01-01T00:01:30Z", "u1"))
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "claude"})
    first = listed(db, "s1")
    assert [(r["seq"], r["id"]) for r in first] == [(1, "u1"), (2, "a1")]
    # a line without a uuid of its own is named by its place in the file, which an append keeps
    claude_log(project, "s1", prompt("u2", "beta", "2026-01-01T00:02:00Z", "a1"),
               {**reply("a2", "done", "2026-01-01T00:02:30Z", "u2"), "uuid": None}, append=True)
    ingest(db, {"claude": tmp_path / "claude"})
    grown = listed(db, "s1")
    assert grown[:2] == first
    [unnamed] = [r["id"] for r in grown if r["id"] not in ("u1", "a1", "u2")]
    assert unnamed.startswith("s1:") and [r["id"] for r in grown] == ["u1", "a1", "u2", unnamed]
    trace = traced(db, {"sessionId": "s1", "id": unnamed})
    assert trace["target"] == grown[3]
    # a newer parser reads every log again from its start: the same ids, the same answers
    monkeypatch.setattr(ClaudeCodeSource, "parser_version", ClaudeCodeSource.parser_version + 1)
    assert ingest(db, {"claude": tmp_path / "claude"}).files_read == 1
    assert listed(db, "s1") == grown
    assert traced(db, {"sessionId": "s1", "id": unnamed}) == trace
    with connect_readonly(db) as conn:
        assert assert_round_trips(SessionQuery(conn), "s1") == 0


def test_history_entries_name_their_lines_by_the_same_ids(sq, read_conn):
    from datasette_obelisk.query.history import history_read

    entries = history_read(read_conn, {"sessionId": FORK, "limit": 100})["entries"]
    records = {r["id"]: r for r in sq.listEvents(FORK)}
    # the active conversation: the rewound branch (seqs 3-6) is no entry
    assert [(e["type"], e["id"], e["sourceIds"]) for e in entries] == [
        ("user", "fu1-fork", ["fu1-fork"]), ("assistant", "fa1-fork", ["fa1-fork"]),
        ("user", "fu2b-fork", ["fu2b-fork"]), ("assistant", "fa2b-fork", ["fa2b-fork"]),
        ("tool", "toolu_f002", ["fa2b-fork", "fu3b-fork"]),  # a tool entry: the call's id, its lines' ids
        ("assistant", "fa3b-fork", ["fa3b-fork"]), ("user", "fu4b-fork", ["fu4b-fork"]),
        ("assistant", "fa4b-fork", ["fa4b-fork"]), ("tool", "toolu_f003", ["fa4b-fork", "fu5b-fork"]),
        ("assistant", "fa5b-fork", ["fa5b-fork"]),
    ]
    for entry in entries:
        for event_id in entry["sourceIds"]:
            assert sq.traceEvent({"sessionId": FORK, "id": event_id})["target"] == records[event_id]


def test_a_paged_read_goes_on_after_an_event_named_by_its_id(tmp_path):
    """readSurface's capturedThroughId (or any event's id) starts a paged readSession after that
    event: what the log gained since, wherever the event now stands."""
    db, fork, parent_arrives = renumbered_fork(tmp_path)
    with connect_readonly(db) as conn:
        sq = SessionQuery(conn)
        ids = [r["id"] for r in sq.listEvents(fork)]
        first = sq.read_session_page(fork, 2, after_id=ids[4])  # after B's own prompt, seq 5 now
        assert [e["id"] for e in first["events"]] == ids[5:7]
        rest = sq.read_session_page(fork, 2, cursor=first["nextCursor"])
        assert [e["id"] for e in rest["events"]] == ids[7:] and "nextCursor" not in rest
        last = sq.readSurface(fork)["capturedThroughId"]
        assert sq.read_session_page(fork, 2, after_id=last) == {"session": first["session"], "events": []}
    parent_arrives()
    with connect_readonly(db) as conn:
        sq = SessionQuery(conn)
        # the prompt is seq 1 now: the same events follow it
        assert [e["id"] for e in sq.read_session_page(fork, 10, after_id=ids[4])["events"]] == ids[5:]
        for bad, code in (({"after_id": ids[0]}, "SESSION_QUERY_EVENT_NOT_FOUND"),  # the copy given up
                          ({"after_id": ""}, "SESSION_QUERY_INVALID_CURSOR"),
                          ({"after_id": ids[4], "cursor": first["nextCursor"]}, "SESSION_QUERY_INVALID_CURSOR")):
            with pytest.raises(QueryError) as info:
                sq.read_session_page(fork, 2, **bad)
            assert info.value.code == code, bad
