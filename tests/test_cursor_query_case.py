"""A search cursor is bound to its query as the index reads it: a query spelt in other
ASCII case finds the same events (the tokenizer folds A-Z), so it takes the cursor; raw
FTS5 syntax, where ``OR`` is an operator and ``or`` a word, does not."""

from __future__ import annotations

import pytest

from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.fts import cursor_text
from datasette_obelisk.query.history import history_search
from datasette_obelisk.query.search import search_sessions
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import line, toy  # noqa: F401 (fixture)


def code_of(call) -> str:
    with pytest.raises(QueryError) as error:
        call()
    return error.value.code


def three_deltas(toy):
    for n in range(3):
        toy.write(f"t{n}", line(f"t{n}a", f"delta or note {n}", f"2026-01-0{n + 1}T00:00:00Z"),
                  line(f"t{n}b", f"delta again {n}", f"2026-01-0{n + 1}T00:00:01Z"))
    toy.ingest()
    return toy.conn()


def test_the_text_a_cursor_binds_folds_ascii_case_only_where_it_cannot_change_matches():
    assert [cursor_text("Delta OR Note", mode) for mode in ("terms", "phrase", "words", "raw")] == [
        "delta or note", "delta or note", "delta or note", "Delta OR Note"]
    assert cursor_text("DEL", "terms", prefix=True) == "DEL"
    assert cursor_text("STRASSE Ärger", "terms") == "strasse Ärger"  # (ß is not ss to the index)


@pytest.mark.parametrize("mode", ["terms", "phrase"])
def test_search_sessions_goes_on_with_the_query_in_another_case(toy, mode):
    sq = SessionQuery(three_deltas(toy))
    first = sq.search_sessions({"query": "Delta", "mode": mode, "limit": 1})
    second = sq.search_sessions({"query": "DELTA", "mode": mode, "limit": 1, "cursor": first["nextCursor"]})
    third = sq.search_sessions({"query": " delta ", "mode": mode, "limit": 1, "cursor": second["nextCursor"]})
    assert [item["header"]["id"] for page in (first, second, third) for item in page["items"]] == ["t2", "t1", "t0"]
    assert "nextCursor" not in third
    assert code_of(lambda: sq.search_sessions({"query": "deltas", "mode": mode, "limit": 1,
                                               "cursor": first["nextCursor"]})) == "SESSION_QUERY_INVALID_CURSOR"


def test_search_events_goes_on_with_the_query_in_another_case(toy):
    sq = SessionQuery(three_deltas(toy))
    first = sq.search_events({"sessionId": "t1", "query": "DELTA", "limit": 1})
    second = sq.search_events({"sessionId": "t1", "query": "delta", "limit": 1, "cursor": first["nextCursor"]})
    assert sorted(hit["seq"] for hit in first["items"] + second["items"]) == [1, 2]
    assert "nextCursor" not in second


def test_history_search_goes_on_with_the_query_in_another_case(toy):
    conn = three_deltas(toy)
    first = history_search(conn, query="Delta Again", limit=1)
    second = history_search(conn, query="delta again", limit=1, cursor=first["nextCursor"])
    third = history_search(conn, query="DELTA AGAIN", limit=1, cursor=second["nextCursor"])
    assert [s["sessionId"] for page in (first, second, third) for s in page["sessions"]] == ["t2", "t1", "t0"]


def test_a_raw_query_s_cursor_is_refused_for_its_operators_in_lower_case(toy):
    conn = three_deltas(toy)
    first = search_sessions(conn, "delta OR nothing", mode="raw", limit=1)
    assert first["next_cursor"]
    assert code_of(lambda: search_sessions(conn, "delta or nothing", mode="raw", limit=1,
                                           cursor=first["next_cursor"])) == "SESSION_QUERY_INVALID_CURSOR"
    second = search_sessions(conn, "delta OR nothing", mode="raw", limit=1, cursor=first["next_cursor"])
    assert [item["session"]["id"] for item in first["items"] + second["items"]] == ["t2", "t1"]
