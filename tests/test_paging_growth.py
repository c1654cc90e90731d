"""Paging while logs grow: the pages of every paged list, read while lines are appended
between them, are exactly what the list was when its first page was read, once each."""

import pytest

from datasette_obelisk.query import search as search_module
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.filters import Filters
from datasette_obelisk.query.history import history_read, history_search
from datasette_obelisk.query.obelisk import recent_in
from datasette_obelisk.query.search import search_events, search_sessions
from datasette_obelisk.query.session_query import SessionQuery
from query_fixtures import line, toy  # noqa: F401


@pytest.fixture
def ten(toy):
    """Sessions t0..t9 saying "gamma" among other words, t9 the latest to end."""
    for n in range(10):
        toy.write(f"t{n}", line(f"t{n}a", f"gamma topic {n} " + "pad " * n, f"2026-01-{n + 1:02d}T00:00:00Z"),
                  line(f"t{n}b", f"reply {n}", f"2026-01-{n + 1:02d}T01:00:00Z"))
    toy.ingest()
    return toy


def grow(logs, *session_ids, text="gamma gamma gamma", day="2026-03-01"):
    """A line appended to each session (a new search would list or rank them first), and a new session."""
    for n, session_id in enumerate(session_ids):
        logs.write(session_id, line(f"{session_id}-late{day}", text, f"{day}T0{n}:00:00Z"), append=True)
    logs.write(f"new{day}", line(f"new{day}a", text, f"{day}T09:00:00Z"))
    logs.ingest()


def paged(call, next_key: str, grown: list[tuple], logs, **options) -> tuple[list[dict], list]:
    """Every page of ``call``, growing ``grown[n]`` before page ``n + 2``: the pages, and the first
    page's cursor."""
    first = call(**options)
    found, cursor, more = [first], first.get(next_key), list(grown)
    options.pop("cursor", None)
    while cursor is not None:
        if more:
            grow(logs, *more.pop(0), day=f"2026-03-{len(found) + 1:02d}")
        page = call(**options, cursor=cursor)
        found.append(page)
        cursor = page.get(next_key)
    return found


def test_recent_sessions_page_as_the_first_page_listed_them(ten):
    """The search page before a query: sessions newest first; one that gets a line
    after it was listed, or before, keeps its place; sessions stored since are not listed."""
    full = [s["id"] for s in recent_in(ten.conn(), Filters.build(), 100)["items"]]
    assert full == [f"t{n}" for n in range(9, -1, -1)]
    pages = paged(lambda **o: recent_in(ten.conn(), Filters.build(), 3, o.get("cursor")), "next_cursor",
                  [("t2", "t8"), ("t1",)], ten)
    assert [[s["id"] for s in page["items"]] for page in pages] == [
        ["t9", "t8", "t7"], ["t6", "t5", "t4"], ["t3", "t2", "t1"], ["t0"]]
    assert [s["id"] for s in recent_in(ten.conn(), Filters.build(), 3)["items"]] == ["new2026-03-03", "t1", "new2026-03-02"]


@pytest.mark.parametrize("query", [None, "gamma"])
def test_history_search_pages_as_the_first_page_found_them(ten, query):
    options = {"query": query} if query else {}
    full = [s["sessionId"] for s in history_search(ten.conn(), **options, limit=75)["sessions"]]
    assert sorted(full) == [f"t{n}" for n in range(10)]
    pages = paged(lambda **o: history_search(ten.conn(), **o), "nextCursor", [(full[-1], full[0]), (full[-2],)],
                  ten, **options, limit=3)
    listed = [s["sessionId"] for page in pages for s in page["sessions"]]
    assert sorted(listed) == sorted(full) and len(listed) == len(set(listed)) and listed[:3] == full[:3]
    if query is None:  # listed by time: in the first page's order
        assert listed == full
    assert all("late" not in snippet for page in pages for s in page["sessions"] for snippet in s["snippets"])


@pytest.mark.parametrize("follow_changes", [False, True])
@pytest.mark.parametrize("ranking", ["bags", "messages"])
def test_grouped_search_pages_as_the_first_page_ranked_them(ten, monkeypatch, ranking, follow_changes):
    """The contract's search and the search page's (``follow_changes``): sessions the first
    page ranked later and one it showed grow (a new search ranks them anew), a session is
    stored; the pages list the first page's ranking, each session once, none by a line added."""
    if ranking == "bags":
        monkeypatch.setattr(search_module, "EXACT_MAX", 0)
    full = [i["session"]["id"] for i in search_sessions(ten.conn(), "gamma", limit=100)["items"]]
    assert sorted(full) == [f"t{n}" for n in range(10)]
    pages = paged(lambda **o: search_sessions(ten.conn(), "gamma", **o), "next_cursor",
                  [(full[-1], full[0], full[5]), (full[-2],)], ten, limit=3, follow_changes=follow_changes)
    listed = [i["session"]["id"] for page in pages for i in page["items"]]
    assert sorted(listed) == sorted(full) and len(listed) == len(set(listed)) and listed[:3] == full[:3]
    assert not any("late" in i["best"]["uuid"] for page in pages for i in page["items"])
    now = [i["session"]["id"] for i in search_sessions(ten.conn(), "gamma", limit=100)["items"]]
    assert now != full and len(now) == 12  # (ranked anew, and the sessions stored since)


def test_event_search_pages_as_the_first_page_ranked_them(toy):
    toy.write("one", *[line(f"e{n}", "delta " + "pad " * n, f"2026-01-01T00:{n:02d}:00Z") for n in range(8)])
    toy.ingest()
    full = [h["uuid"] for h in search_events(toy.conn(), "one", "delta", limit=100)["items"]]
    pages = paged(lambda **o: search_events(toy.conn(), "one", "delta", **o), "next_cursor",
                  [("one",), ("one",)], toy, limit=3)
    assert [h["uuid"] for page in pages for h in page["items"]] == full


def test_read_session_pages_are_the_log_the_first_page_read(ten):
    sq = lambda: SessionQuery(ten.conn())  # noqa: E731
    for n in range(3, 8):
        ten.write("t3", line(f"t3-{n}", f"more {n}", f"2026-01-04T0{n}:00:00Z"), append=True)
    ten.ingest()
    full = [e["id"] for e in sq().read_session_page("t3", 100)["events"]]
    assert len(full) == 7
    pages = paged(lambda **o: sq().read_session_page("t3", 3, o.get("cursor")), "nextCursor", [("t3",), ("t3",)], ten)
    assert [e["id"] for page in pages for e in page["events"]] == full
    assert len(pages) == 3 and "nextCursor" not in pages[-1]


def test_history_read_pages_are_the_transcript_the_first_page_read(ten):
    for n in range(3, 8):
        ten.write("t3", line(f"t3-{n}", f"more {n}", f"2026-01-04T0{n}:00:00Z"), append=True)
    ten.ingest()
    full = [e["id"] for e in history_read(ten.conn(), sessionId="t3", limit=100)["entries"]]
    assert len(full) == 7
    pages = paged(lambda **o: history_read(ten.conn(), sessionId="t3", **o), "nextCursor", [("t3",), ("t3",)],
                  ten, limit=3)
    assert [e["id"] for page in pages for e in page["entries"]] == full


@pytest.mark.parametrize("ranking", ["bags", "messages"])
def test_only_grown_sessions_a_search_ranks_count_against_the_sessions_it_places(toy, monkeypatch, ranking):
    """Sessions grown since the first page that the query does not match are nowhere in its
    ranking: however many there are, the pages go on. More than ``GROWN_MAX`` that it ranks
    cannot all be placed: stale, never a session shown twice or skipped."""
    from datasette_obelisk.query.snapshots import GROWN_MAX

    if ranking == "bags":
        monkeypatch.setattr(search_module, "EXACT_MAX", 0)
    count = GROWN_MAX + 2
    for n in range(count):
        toy.write(f"g{n:02d}", line(f"g{n:02d}a", f"gamma {n} " + "pad " * n, f"2026-01-01T00:{n:02d}:00Z"))
        toy.write(f"o{n:02d}", line(f"o{n:02d}a", "other words", f"2026-01-01T00:{n:02d}:00Z"))
    toy.ingest()
    full = [i["session"]["id"] for i in search_sessions(toy.conn(), "gamma", limit=100)["items"]]
    first = search_sessions(toy.conn(), "gamma", limit=4)
    for n in range(count):
        toy.write(f"o{n:02d}", line(f"o{n:02d}b", "still other words", "2026-02-01T00:00:00Z"), append=True)
    toy.ingest()
    rest = paged(lambda **o: search_sessions(toy.conn(), "gamma", **o), "next_cursor", [], toy,
                 limit=4, cursor=first["next_cursor"])
    assert [i["session"]["id"] for page in [first, *rest] for i in page["items"]] == full
    for n in range(count):
        toy.write(f"g{n:02d}", line(f"g{n:02d}b", "gamma again", "2026-02-01T00:00:00Z"), append=True)
    toy.ingest()
    with pytest.raises(QueryError) as info:
        search_sessions(toy.conn(), "gamma", limit=4, cursor=first["next_cursor"])
    assert info.value.code == "SESSION_QUERY_STALE_CURSOR"


def test_seen_sets_are_told_apart_from_the_ranking_now():
    from datasette_obelisk.query.snapshots import GROWN_MAX, SeenSet

    seen = SeenSet(["a", "b", "g"]).digest
    assert seen == SeenSet(["g", "a", "b"]).digest != SeenSet(["a", "b", "c"]).digest
    # g, ranked third then, now ranks last; n, begun since, ranks among the others
    assert SeenSet.resume(["a", "n", "b", "c", "d", "g"], 3, seen, {"g", "n"}) == ({"a", "b", "g"}, 3)
    # g, not ranked before the page then, now ranks first: the page goes on after c, g before it
    assert SeenSet.resume(["g", "a", "b", "c", "d"], 3, SeenSet("abc").digest, {"g"}) == ({"a", "b", "c"}, 4)
    assert SeenSet.resume(["b", "a", "c", "d"], 2, SeenSet("ab").digest, set()) == ({"a", "b"}, 2)
    assert SeenSet.resume(["a", "c", "b", "d"], 2, SeenSet("ab").digest, set()) is None  # moved otherwise
    grown = {f"m{n}" for n in range(GROWN_MAX + 1)}
    assert SeenSet.resume(["a", "b", *sorted(grown)], 2, SeenSet("ab").digest, grown) is None
