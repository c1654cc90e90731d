"""history.search / history.read (seed 003) over the archive."""

import json
import re
import sqlite3

import pytest

from datasette_obelisk.query import history as history_module
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.fts import TOKENIZER, match_documents, parse_query
from datasette_obelisk.query.history import History, history_read, history_search, searchable
from datasette_obelisk.query.search import search_sessions
from query_fixtures import connect, copy_corpus, corpus_db, line, read_conn, resigned, toy  # noqa: F401

# The corpus's 2.0.x agent file sidechain_agent.jsonl, read as the agent its lines name.
FLAT_AGENT = "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358:agent-e1c84ba5"
DESCRIPTOR_KEYS = {"sessionId", "attributes", "createdAt", "updatedAt", "snippets", "snippetMatches"}


def code_of(call):
    with pytest.raises(QueryError) as info:
        call()
    return info.value.code


@pytest.fixture
def logs(toy):
    toy.write(
        "s1",
        line("a1", "plan the database migration", "2026-01-01T00:00:00Z", cwd="/w/alpha"),
        line("a2", "running it", "2026-01-01T00:05:00Z", role="assistant", type="assistant",
             tool="Bash", output="migrated 3 tables", outcome="succeeded"),
        line("a3", "done", "2026-01-01T00:06:00Z", role="assistant", type="assistant"),
    )
    toy.write(
        "s2",
        line("b1", "database backups", "2026-01-02T00:00:00Z", cwd="/w/beta"),
        line("b2", "migration later", "2026-01-02T00:01:00Z", role="assistant", type="assistant"),
    )
    toy.write("s3", line("c1", "nothing related", "2026-01-03T00:00:00Z", cwd="/w/beta"))
    toy.ingest()
    toy.sql("UPDATE sessions SET title = 'Database work', repository = 'github.com/acme/app' WHERE id = 's3'")
    toy.sql(
        "INSERT INTO summaries (id, session_id, timestamp, source, content, message_uuid, file_id) "
        "VALUES ('sum1', 's3', '2026-01-03T00:00:00Z', 'away_summary', 'Talked about a migration plan', 'c1', 1)"
    )
    return toy


def session_ids(page):
    return [s["sessionId"] for s in page["sessions"]]


def test_search_shape_and_digest(logs):
    page = history_search(logs.conn(), {"query": "database migration"})
    assert set(page) == {"sessions"}
    assert session_ids(page) == ["s3", "s1"]  # s3's digest holds both terms; s2 never in one entry
    digest_hit, entry_hit = page["sessions"]
    assert set(digest_hit) == DESCRIPTOR_KEYS | {"digest"}
    assert digest_hit["digest"] == {
        "title": "Database work", "summary": "Talked about a migration plan", "updatedThroughEntryId": "c1",
    }
    assert digest_hit["attributes"] == {"source": "toy", "repository": "github.com/acme/app", "cwd": "/w/beta"}
    assert digest_hit["snippets"] == []  # no single entry of s3 holds both terms
    assert set(entry_hit) == DESCRIPTOR_KEYS
    assert (entry_hit["createdAt"], entry_hit["updatedAt"]) == (1767225600000, 1767225960000)
    assert entry_hit["snippets"] == ["plan the database migration"]
    assert entry_hit["snippetMatches"] == [[[9, 17], [18, 27]]]


def test_no_query_lists_recently_updated_sessions(logs):
    assert session_ids(history_search(logs.conn())) == ["s3", "s2", "s1"]
    assert session_ids(history_search(logs.conn(), limit=2)) == ["s3", "s2"]


def test_a_blank_query_is_no_query(logs):
    conn = logs.conn()
    recent = history_search(conn, limit=2)
    assert history_search(conn, {"query": ""}, limit=2) == history_search(conn, query=" \n ", limit=2) == recent
    follow = history_search(conn, query="", limit=2, cursor=recent["nextCursor"])
    assert session_ids(follow) == ["s1"]
    assert session_ids(history_search(conn, query="", attributes={"cwd": "/w/beta"})) == ["s3", "s2"]


def test_attributes_filter_exactly_or_by_substring(logs):
    conn = logs.conn()
    assert session_ids(history_search(conn, attributes={"cwd": "/w/beta"})) == ["s3", "s2"]
    assert session_ids(history_search(conn, attributes={"repository": {"contains": "acme/app"}})) == ["s3"]
    assert session_ids(history_search(conn, attributes={"repository": {"contains": "ACME"}})) == []
    assert session_ids(history_search(conn, attributes={"source": "toy", "cwd": {"contains": "alpha"}})) == ["s1"]
    assert session_ids(history_search(conn, attributes={"ticket": "X-1"})) == []
    assert session_ids(history_search(conn, query="database", attributes={"cwd": "/w/beta"})) == ["s3", "s2"]


def test_search_validation(logs):
    conn = logs.conn()
    assert code_of(lambda: history_search(conn, limit=0)) == "SESSION_QUERY_INVALID_LIMIT"
    assert code_of(lambda: history_search(conn, limit=76)) == "SESSION_QUERY_INVALID_LIMIT"
    assert code_of(lambda: history_search(conn, query=3)) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: history_search(conn, query="x" * 1001)) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: history_search(conn, attributes={"source": 3})) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: history_search(conn, attributes={"source": {"like": "x"}})) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: history_search(conn, attributes={f"k{n}": "v" for n in range(33)})) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: history_search(conn, attributes={"x" * 65: "v"})) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: history_search(conn, sort="newest")) == "OBELISK_INVALID_ARGUMENT"
    assert code_of(lambda: history_search(conn, cursor="nope")) == "SESSION_QUERY_INVALID_CURSOR"
    assert len(history_search(conn, limit=75)["sessions"]) == 3


def test_digests_match_whole_stemmed_terms_as_transcript_search_does(logs, read_conn):
    conn = logs.conn()
    assert session_ids(history_search(conn, query="works migrations")) == ["s3"]  # "Database work", "migration plan"
    assert session_ids(history_search(conn, query="migr")) == []
    assert session_ids(history_search(conn, query="datab")) == []
    for query in ("edges", "include"):
        found = history_search(read_conn, query=query, limit=75)["sessions"]
        assert found[0]["sessionId"] == "edge_cases" and found[0]["snippets"] == []
    for query in ("cov", "backgro", "prev"):
        assert [s["sessionId"] for s in history_search(read_conn, query=query, limit=75)["sessions"] if not s["snippets"]] == []


def test_a_digest_matches_the_summary_it_shows(logs):
    logs.sql(
        "INSERT INTO summaries (id, session_id, timestamp, source, content, message_uuid, file_id) "
        "VALUES ('sum0', 's3', '2026-01-02T00:00:00Z', 'away_summary', 'An older zeppelin summary', 'c1', 1)"
    )
    conn = logs.conn()
    assert session_ids(history_search(conn, query="zeppelin")) == []
    assert history_search(conn, query="plan")["sessions"][0]["digest"]["summary"] == "Talked about a migration plan"


def pages(call, cursor=None, **options):
    found = []
    while True:
        page = call(**options, **({"cursor": cursor} if cursor else {}))
        found.append(page)
        cursor = page.get("nextCursor")
        if cursor is None:
            return found


def test_search_pages_concatenate_across_digest_and_transcript_tiers(toy):
    for n in range(5):
        toy.write(f"t{n}", line(f"t{n}a", f"gamma topic {n}", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    toy.sql("UPDATE sessions SET title = 'gamma notes' WHERE id IN ('t1', 't3')")
    conn = toy.conn()
    full = session_ids(history_search(conn, query="gamma", limit=75))
    assert full[:2] == ["t3", "t1"] and sorted(full) == ["t0", "t1", "t2", "t3", "t4"]
    split = pages(lambda **o: history_search(conn, query="gamma", **o), limit=2)
    assert [len(p["sessions"]) for p in split] == [2, 2, 1]
    assert [s for p in split for s in session_ids(p)] == full


def test_search_cursor_is_bound_to_its_query_and_outlives_an_ingest(toy):
    """An agent pages through history while its own log is being ingested:
    the cursor carries on from where it was."""
    for n in range(3):
        toy.write(f"t{n}", line(f"t{n}a", f"delta {n}", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    first = history_search(toy.conn(), query="delta", limit=1)
    assert code_of(lambda: history_search(toy.conn(), query="other", limit=1, cursor=first["nextCursor"])) == (
        "SESSION_QUERY_INVALID_CURSOR"
    )
    toy.write("t9", line("t9a", "unrelated", "2026-02-01T00:00:00Z"))
    toy.ingest()
    second = history_search(toy.conn(), query="delta", limit=1, cursor=first["nextCursor"])
    third = history_search(toy.conn(), query="delta", limit=1, cursor=second["nextCursor"])
    assert session_ids(first) + session_ids(second) + session_ids(third) == ["t2", "t1", "t0"]
    assert "nextCursor" not in third
    conn = toy.conn()
    for position in ({"digest": 0, "search": None}, {"after": "x", "search": None}, {"after": ["x"], "search": None},
                     {"after": [1, "t2"], "search": None}, {"after": None, "search": -5},
                     {"after": None, "search": 2**63}, {"after": None}, [0, 0]):  # signed, but no position of ours
        forged = resigned(conn, first["nextCursor"], position)
        assert code_of(lambda: history_search(conn, query="delta", limit=1, cursor=forged)) == "SESSION_QUERY_INVALID_CURSOR"


@pytest.mark.parametrize("query", [None, "gamma"])
def test_a_session_changing_between_pages_shifts_no_other(toy, query):
    """Pages go on after the last session shown, in the order the first page
    read: one that grows meanwhile (a new search shows it first) keeps its
    place, is neither skipped nor shown twice, and shifts no other."""
    for n in range(6):
        toy.write(f"t{n}", line(f"t{n}a", f"gamma {n}", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    toy.sql("UPDATE sessions SET title = 'gamma notes'")  # every session a digest match too
    options = {"query": query} if query else {}
    first = history_search(toy.conn(), **options, limit=2)
    assert session_ids(first) == ["t5", "t4"]
    toy.write("t1", line("t1a", "gamma 1", "2026-01-01T00:00:00Z"), line("t1b", "more", "2026-03-01T00:00:00Z"))
    toy.ingest()
    toy.sql("UPDATE sessions SET title = 'gamma notes' WHERE id = 't1'")  # its log titled it again
    rest = pages(lambda **o: history_search(toy.conn(), **options, **o), limit=2, cursor=first["nextCursor"])
    assert [session_ids(page) for page in rest] == [["t3", "t2"], ["t1", "t0"]]
    assert session_ids(history_search(toy.conn(), **options, limit=1)) == ["t1"]


def test_a_session_ranked_among_the_transcript_matches_already_read_is_no_repeat(toy):
    """Sessions matched by an entry are ranked, not listed by time: a page goes on
    after the sessions already examined. One stored meanwhile that would rank among
    them is left out of the pages (it would push one of them onto the next page
    again); a new search pages through each once."""
    for n in range(6):
        toy.write(f"t{n}", line(f"t{n}a", f"gamma topic number {n} with some padding words", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    first = history_search(toy.conn(), query="gamma", limit=2)
    assert session_ids(first) == ["t5", "t4"] and "digest" not in first["sessions"][0]  # (matched by an entry)
    toy.write("u", line("ua", "unrelated", "2026-02-01T00:00:00Z"))
    toy.ingest()
    rest = pages(lambda **o: history_search(toy.conn(), query="gamma", **o), limit=2, cursor=first["nextCursor"])
    assert [session_ids(page) for page in rest] == [["t3", "t2"], ["t1", "t0"]]
    toy.write("t9", line("t9a", "gamma", "2026-01-09T00:00:00Z"))  # ranks first: short, all gamma
    toy.ingest()
    rest = pages(lambda **o: history_search(toy.conn(), query="gamma", **o), limit=2, cursor=first["nextCursor"])
    assert [session_ids(page) for page in rest] == [["t3", "t2"], ["t1", "t0"]]
    again = pages(lambda **o: history_search(toy.conn(), query="gamma", **o), limit=2)
    assert [s for page in again for s in session_ids(page)] == ["t9", "t5", "t4", "t3", "t2", "t1", "t0"]


def test_pages_go_on_past_sessions_with_blank_or_no_times(toy):
    for n in range(5):
        toy.write(f"t{n}", line(f"t{n}a", f"gamma {n}", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    toy.sql("UPDATE sessions SET ended_at = '' WHERE id IN ('t1', 't2')")  # as another tool might leave them
    toy.sql("UPDATE sessions SET ended_at = NULL, started_at = NULL WHERE id = 't3'")
    whole = session_ids(history_search(toy.conn(), limit=75))
    paged = [s for page in pages(lambda **o: history_search(toy.conn(), **o), limit=1) for s in session_ids(page)]
    assert paged == whole == ["t4", "t0", "t1", "t2", "t3"]


def test_digest_matches_page_past_sessions_with_blank_or_no_times(toy):
    """Digest matches are listed as the sessions without a query are: a session
    with no time at all comes once, after those with a blank one."""
    for n in range(5):
        toy.write(f"t{n}", line(f"t{n}a", f"gamma {n}", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    toy.sql("UPDATE sessions SET title = 'gamma notes'")  # every session a digest match
    toy.sql("UPDATE sessions SET ended_at = '' WHERE id IN ('t1', 't3')")  # as another tool might leave them
    toy.sql("UPDATE sessions SET ended_at = NULL, started_at = NULL WHERE id = 't2'")
    whole = session_ids(history_search(toy.conn(), query="gamma", limit=75))
    paged = [s for page in pages(lambda **o: history_search(toy.conn(), query="gamma", **o), limit=1)
             for s in session_ids(page)]
    assert paged == whole == ["t4", "t0", "t1", "t2", "t3"]
    assert all("digest" in s for s in history_search(toy.conn(), query="gamma", limit=75)["sessions"])


def test_sessions_of_equal_rank_come_once_each_page_by_page(toy):
    # The same text in each, written a minute apart: equal ranks, newest first.
    for n in range(60):
        toy.write(f"s{n:02}", line(f"s{n:02}a", "apple banana", f"2026-01-01T00:{n:02}:00Z"))
    toy.ingest()
    whole = session_ids(history_search(toy.conn(), query="apple banana", limit=75))
    paged = [s for p in pages(lambda **o: history_search(toy.conn(), query="apple banana", **o), limit=10) for s in session_ids(p)]
    assert whole == paged == [f"s{n:02}" for n in reversed(range(60))]
    grouped = [item["session"]["id"] for item in search_sessions(toy.conn(), "apple banana", limit=100)["items"]]
    assert grouped == whole


def test_a_page_with_a_cursor_is_never_empty(toy):
    """Candidates whose terms are in different entries are no match: a page
    looks past the usual number of candidates rather than come back empty."""
    for n in range(250):
        toy.write(f"s{n:03}", line(f"s{n:03}a", "apple", "2026-01-01T00:00:00Z"),
                  line(f"s{n:03}b", "banana", "2026-01-01T00:01:00Z"))
    toy.write("z", line("za", "apple banana", "2025-01-01T00:00:00Z"))
    toy.ingest()
    found = pages(lambda **o: history_search(toy.conn(), query="apple banana", **o), limit=10)
    assert [session_ids(p) for p in found] == [["z"]]


def test_punctuated_query_terms_need_not_be_adjacent(toy):
    toy.write("s", line("s1", "I need stable sorting here", "2026-01-01T00:00:00Z"))
    toy.ingest()
    for query in ("stable sorting", "sorting-stable", "sorting/stable", "stable-sorting"):
        assert session_ids(history_search(toy.conn(), query=query)) == ["s"], query


def test_an_emoji_is_a_term_of_the_query(toy):
    # SQLite's unicode61 tables predate many emoji: 🏗 (U+1F3D7) and 🤖 (U+1F916) are word
    # characters to it, while 🚀 (U+1F680) separates words; the indexes set each apart (cjk.py).
    toy.write("s", line("s1", "### 🏗️ Architecture", "2026-01-01T00:00:00Z"),
              line("s2", "🤖 Generated with Claude Code", "2026-01-01T00:01:00Z"))
    toy.write("t", line("t1", "Architecture review", "2026-01-02T00:00:00Z"))
    toy.ingest()
    conn = toy.conn()
    assert session_ids(history_search(conn, query="🏗")) == ["s"]
    assert session_ids(history_search(conn, query="🤖")) == ["s"]
    # every term must occur: the emoji is not dropped, widening the search to "architecture"
    assert session_ids(history_search(conn, query="🏗 Architecture")) == ["s"]
    assert session_ids(history_search(conn, query="Architecture")) == ["t", "s"]
    assert history_search(conn, query="🚀")["sessions"] == []  # (a word no session holds)
    assert [item["session"]["id"] for item in search_sessions(conn, "🤖")["items"]] == ["s"]  # (session-query's)
    assert parse_query("🏗", "words").terms == ("🏗",)
    assert parse_query("deploy🚀done", "words").terms == ("deploy", "🚀", "done")
    assert parse_query("x🤖y", "words").terms == ("x", "🤖", "y")


def entry_index(conn):
    """Every entry read returns, as search matches it, in an in-memory FTS5 table ``e(session, a, b)``."""
    index = sqlite3.connect(":memory:")
    index.execute(f"CREATE VIRTUAL TABLE e USING fts5(session UNINDEXED, a, b, tokenize='{TOKENIZER}')")
    for (session_id,) in conn.execute("SELECT id FROM sessions"):
        texts = [searchable(e) for e in read_everything(conn, session_id)[1]]
        index.executemany("INSERT INTO e VALUES (?, ?, ?)", [(session_id, *t) for t in texts])
    return index


def test_search_does_not_match_rewound_lines_or_compaction_summaries(read_conn):
    assert session_ids(history_search(read_conn, query="quicksort.py")) == []
    assert "dag_compact_after_rewind_preserved" not in session_ids(history_search(read_conn, query="First answer"))
    final = history_search(read_conn, query="Final answer", attributes={"source": "claude"})["sessions"]
    assert [s["snippets"] for s in final if s["sessionId"] == "dag_compact_after_rewind_preserved"] == [["Final answer"]]
    continued = history_search(read_conn, query="continued previous conversation")["sessions"]
    by_digest = next(s for s in continued if s["sessionId"] == "dag_compact_after_rewind_preserved")
    assert by_digest["digest"]["summary"].startswith("This session is being continued")
    assert by_digest["snippets"] == []  # the summary is the digest, not an entry


def test_search_matches_an_unanswered_call_read_returns(read_conn):
    found = history_search(read_conn, query="files_with_matches data-border-color")["sessions"]
    assert [(s["sessionId"], s["snippets"]) for s in found] == [
        (FLAT_AGENT, ["Grep data-border-color files_with_matches"]),
    ]
    codex = history_search(read_conn, query="df6be51a")["sessions"]
    assert [(s["sessionId"], s["snippets"]) for s in codex] == [
        ("codex:019c8a70-dda7-7f33-98ea-f30553347322", ["exec_command [REDACTED_ARGUMENTS len=456 sha=df6be51a]"]),
    ]


def test_a_tool_entry_matches_terms_spread_over_its_arguments_and_result(read_conn):
    found = {s["sessionId"]: s["snippets"] for s in history_search(read_conn, query="completes Generate", limit=75)["sessions"]}
    assert found["sidechain_main"] == [
        "Task general-purpose Research data-border-color usage and CSS class mat... Research how data-border-color "
        "is used in the code... Perfect! Now I have a complete understanding. Let ...",
    ]
    assert found["ef958aa1-0e93-49f0-bb71-150f63befcd1"]
    task = next(e for e in read_everything(read_conn, "sidechain_main")[1] if e["id"] == "toolu_01JA2mLseQCAW3MdwPE4qWEk")
    call, result = searchable(task)
    expression = parse_query("completes Generate").expression
    assert [len(match_documents(expression, [doc])) for doc in ((call, ""), (result, ""), (call, result))] == [0, 0, 1]


def test_a_long_document_is_marked_only_around_its_first_term(monkeypatch):
    from datasette_obelisk.query import fts

    monkeypatch.setattr(fts, "HIGHLIGHT_CHARS", 2_000)
    monkeypatch.setattr(fts, "WINDOW_BEFORE", 100)
    filler = "lorem ipsum " * 1_000  # 12,000 characters
    long = filler + "Webpackage compiled " + "webpack compiled " * 5_000
    query = parse_query("webpack compiled", "phrase")
    [(index, (marked, other))] = match_documents(query.expression, [("short", ""), (long, "")], query.terms)
    start = long.index("Webpackage") - 100
    assert (index, other) == (1, "")
    # cut between words: from the space before "lorem", to the space after the last whole word
    assert long[start : start + 4] == "sum "
    assert marked.replace(fts.MARK_START, "").replace(fts.MARK_END, "") == long[start + 3 : long.rindex(" ", 0, start + 2_000) + 1]
    assert marked.index(fts.MARK_START) == 97 + len("Webpackage compiled ")  # the first phrase: "webpackage" stems otherwise
    # A window in which the expression no longer matches is marked term by term.
    apart = filler + "webpack " + "x " * 5_000 + "compiled"
    [(_, (marked, _))] = match_documents(parse_query("webpack compiled").expression, [(apart, "")], ("webpack", "compiled"))
    assert marked.startswith(apart[len(filler) - 97 : len(filler)]) and marked.count(fts.MARK_START) == 1
    assert match_documents(query.expression, [(filler, "")], query.terms) == []


def test_a_long_document_is_matched_whole_only_when_its_window_cannot_settle_it(monkeypatch):
    from datasette_obelisk.query import fts

    monkeypatch.setattr(fts, "HIGHLIGHT_CHARS", 2_000)
    monkeypatch.setattr(fts, "WINDOW_BEFORE", 100)
    matched_lengths = []
    matching = fts._matching
    monkeypatch.setattr(fts, "_matching", lambda e, docs, **k: matched_lengths.append(max(len(d[0]) for d in docs) if docs else 0) or matching(e, docs, **k))
    filler = "lorem ipsum " * 1_000
    found = lambda query, doc: match_documents(parse_query(query).expression, [(doc, "")], parse_query(query).terms)  # noqa: E731
    # the window holds the term and is cut between words: no whole document is tokenized
    assert [n for n, _ in found("webpack", filler + "webpack " + filler)] == [0]
    assert matched_lengths[0] <= 2_000 and matched_lengths[1:] == [0]
    # a window that starts inside a long word could hold a word the document does not: it is checked whole
    matched_lengths.clear()
    unbroken = "a" * 5_000 + " webpack " + filler
    assert [n for n, _ in found("webpack", unbroken)] == [0] and matched_lengths[1:] == [len(unbroken)]
    # terms far apart: the whole document says yes
    assert [n for n, _ in found("webpack compiled", "webpack " + filler + "compiled")] == [0]


def test_first_word_start_finds_a_term_at_the_start_of_a_word_in_any_case():
    from datasette_obelisk.query.fts import first_word_start

    assert first_word_start("a rebuild, then Builds", ["builds"]) == 16  # "build" inside "rebuild" is no word start
    assert first_word_start("x_compiled Compiling", ["compiled"]) == 2  # "_" starts a word, as in the regex
    assert first_word_start("İstanbul compiled", ["compiled"]) == 9  # "İ" lower-cases to two characters
    assert first_word_start("İstanbul is big", ["istanbul"]) == 0 and first_word_start("the İstanbul trip", ["istanbul"]) == 4
    assert first_word_start("nothing here", ["compiled"]) is None and first_word_start("text", []) is None


def test_first_word_start_reads_words_one_by_one_when_finding_would_cost_more(monkeypatch):
    from datasette_obelisk.query import fts

    many = [f"{i:03x}x" for i in range(2_000)]  # more terms than are worth finding one by one
    assert fts.first_word_start("zzz 7cfx 1a0xy REBUILD", many) == 4
    assert fts.first_word_start("zzz 7cfx 1a0xy REBUILD", [*many, "rebuild"]) == 4
    assert fts.first_word_start("x_7CFx", many) == 2 and fts.first_word_start("İstanbul 7cfx", many) == 9
    inside = "xaaa" * 5_000 + " aaa"  # found inside words over and over
    assert fts.first_word_start(inside, ["aaa"]) == len(inside) - 3
    monkeypatch.setattr(fts, "MAX_WORD_STARTS", 3)  # what one call may cost is bounded
    assert fts.first_word_start("a b c 7cfx", many) is None
    assert fts.first_word_start("a b 7cfx", many) == 4


AUDIT_QUERIES = ["completes Generate", "Tools ide", "capture Later", "workflow attempt", "quicksort.py", "First answer", "Final answer", "teammates", "coverage", "edge", "todo", "session history"]


def test_search_finds_exactly_the_sessions_whose_entries_match_and_quotes_them(read_conn):
    index = entry_index(read_conn)
    words = sorted({w for (t,) in read_conn.execute("SELECT text FROM messages WHERE text_length < 400") for w in t.split()
                    if w.isalpha() and len(w) > 3})
    for query in AUDIT_QUERIES + words[:: max(1, len(words) // 40)]:
        expression = parse_query(query).expression
        found = history_search(read_conn, query=query, limit=75)["sessions"]
        assert {s["sessionId"] for s in found if s["snippets"]} == {
            row[0] for row in index.execute("SELECT DISTINCT session FROM e WHERE e MATCH ?", [expression])
        }, query
        for session in found:
            sources = [
                " ".join(f"{a}\n{b}".split())
                for a, b in index.execute("SELECT a, b FROM e WHERE session = ?", [session["sessionId"]])
            ]
            for text in session["snippets"]:
                assert any(text.strip("…") in source for source in sources), (query, text)


# -- read ------------------------------------------------------------------------


def test_read_entries(logs):
    page = history_read(logs.conn(), sessionId="s1")
    assert set(page) == {"session", "entries"}
    assert page["session"]["sessionId"] == "s1"
    assert page["entries"] == [
        {"id": "a1", "sourceIds": ["a1"], "type": "user", "timestamp": 1767225600000, "content": "plan the database migration"},
        {"id": "a2", "sourceIds": ["a2"], "type": "assistant", "timestamp": 1767225900000, "content": "running it"},
        {"id": "a2:call", "sourceIds": ["a2"], "type": "tool", "timestamp": 1767225900000, "name": "Bash",
         "arguments": {}, "result": "migrated 3 tables", "outcome": "succeeded"},
        {"id": "a3", "sourceIds": ["a3"], "type": "assistant", "timestamp": 1767225960000, "content": "done"},
    ]


def test_prose_that_names_its_call_or_quotes_its_input_keeps_its_words(toy, read_conn):
    """A Claude line's prose and calls are one text, each call on lines of its own
    (its name, then its input's strings): only those lines are cut from the entry."""
    toy.write(
        "s",
        line("a1", "I will call Bash now. Bash runs it.\nBash", "2026-01-01T00:00:00Z", role="assistant",
             type="assistant", tool="Bash", output="ok", outcome="succeeded"),
        line("a2", "Bash\nand then Bash\nBash", "2026-01-01T00:01:00Z", role="assistant", type="assistant",
             tool="Bash", output="ok", outcome="succeeded"),
    )
    toy.ingest()
    entries = history_read(toy.conn(), sessionId="s")["entries"]
    assert [(e["id"], e.get("content")) for e in entries] == [
        ("a1", "I will call Bash now. Bash runs it."), ("a1:call", None),
        ("a2", "Bash\nand then Bash"), ("a2:call", None),
    ]
    # The corpus: a text block saying what the call is named (its name and text trimmed alike).
    _, small = read_everything(read_conn, "small")
    assert [(e["type"], e["id"], e.get("content")) for e in small] == [
        ("assistant", "a-nested-1", "Listing the files."), ("tool", "toolu_stage0_1", None),
        ("user", "att-nested-7", "[trimmed for fixture]"),
        ("assistant", "[trimmed for fixture]@17030", "[trimmed for fixture]"),
        ("assistant", "[trimmed for fixture]@24012", "[trimmed for fixture]"),
        ("tool", "[trimmed for fixture]", None),
    ]


def test_read_pages_by_limit_and_cursor(logs):
    conn = logs.conn()
    full = history_read(conn, sessionId="s1")["entries"]
    split = pages(lambda **o: history_read(conn, sessionId="s1", **o), limit=1)
    assert [len(p["entries"]) for p in split] == [1, 1, 1, 1]
    assert [e for p in split for e in p["entries"]] == full
    cursor = split[0]["nextCursor"]
    assert code_of(lambda: history_read(conn, sessionId="s2", cursor=cursor)) == "SESSION_QUERY_INVALID_CURSOR"
    for position in ([10**30, 0], [-1, -1], [1, None], [1], "1,0", None):  # signed, but no position of ours
        forged = resigned(conn, cursor, position)
        assert code_of(lambda: history_read(conn, sessionId="s1", cursor=forged)) == "SESSION_QUERY_INVALID_CURSOR"


def test_read_pages_stop_at_the_byte_budget(logs, monkeypatch):
    monkeypatch.setattr(history_module, "READ_BUDGET_BYTES", 150)
    conn = logs.conn()
    split = pages(lambda **o: history_read(conn, sessionId="s1", **o), limit=100)
    assert [len(p["entries"]) for p in split] == [1, 1, 1, 1]
    assert "nextCursor" in split[0] and "nextCursor" not in split[-1]


def test_a_tool_call_without_a_result_is_a_cancelled_entry(logs):
    logs.sql("DELETE FROM tool_results")
    entries = history_read(logs.conn(), sessionId="s1")["entries"]
    assert (entries[2]["id"], entries[2]["outcome"], entries[2]["result"]) == ("a2:call", "cancelled", None)
    logs.sql("DELETE FROM messages WHERE uuid = 'a3'")
    page = history_read(logs.conn(), sessionId="s1")
    assert [(e["id"], e.get("outcome")) for e in page["entries"]] == [("a1", None), ("a2", None), ("a2:call", "cancelled")]
    assert "nextCursor" not in page


def read_everything(conn, session_id):
    found, cursor = [], None
    while True:
        page = history_read(conn, sessionId=session_id, limit=100, **({"cursor": cursor} if cursor else {}))
        found += page["entries"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return page["session"], found


def test_updated_through_names_the_last_entry_when_the_log_ends_on_an_unanswered_call(read_conn):
    session_id = "codex:019c8a70-dda7-7f33-98ea-f30553347322"
    session, entries = read_everything(read_conn, session_id)
    last = entries[-1]
    assert (last["id"], last["type"], last["outcome"], last["result"]) == (
        f"{session_id}:call_UtYwHmwWekzvq83m8Rb9K8jJ", "tool", "cancelled", None,
    )
    assert session["digest"]["updatedThroughEntryId"] == last["id"]
    _, sidechain = read_everything(read_conn, FLAT_AGENT)
    assert (sidechain[-1]["name"], sidechain[-1]["outcome"]) == ("Grep", "cancelled")


def test_updated_through_is_always_an_entry_read_returns(read_conn):
    digests = [s for s in history_search(read_conn, limit=75)["sessions"] if "digest" in s]
    assert len(digests) > 10
    for found in digests:
        _, entries = read_everything(read_conn, found["sessionId"])
        assert found["digest"]["updatedThroughEntryId"] in {e["id"] for e in entries}, found["sessionId"]
    small = history_search(read_conn, attributes={"source": "claude"}, limit=75)
    digest = next(s["digest"] for s in small["sessions"] if s["sessionId"] == "small")
    # The compaction summary's line is not in this session: the digest covers it all.
    assert digest["updatedThroughEntryId"] == read_everything(read_conn, "small")[1][-1]["id"]


def test_updated_through_a_summary_before_every_entry_is_the_first_entry(logs):
    logs.sql("UPDATE summaries SET message_uuid = 'a1', session_id = 's1' WHERE id = 'sum1'")
    logs.sql("UPDATE messages SET seq = -1 WHERE uuid = 'a1'")
    logs.sql("UPDATE messages SET is_meta = 1 WHERE uuid = 'a1'")
    digest = history_search(logs.conn(), query="migration plan")["sessions"][0]
    assert digest["sessionId"] == "s1" and digest["digest"]["updatedThroughEntryId"] == "a2"


def test_updated_through_a_line_with_text_and_a_call_is_the_call(logs):
    logs.sql("UPDATE summaries SET message_uuid = 'a2', session_id = 's1' WHERE id = 'sum1'")
    digest = history_search(logs.conn(), query="migration plan")["sessions"][0]
    assert digest["sessionId"] == "s1" and digest["digest"]["updatedThroughEntryId"] == "a2:call"


def test_an_entry_without_a_time_takes_the_last_time_before_it_on_every_page(logs):
    logs.sql("UPDATE messages SET timestamp = NULL WHERE uuid = 'a3'")
    conn = logs.conn()
    whole = history_read(conn, sessionId="s1")["entries"]
    split = [e for p in pages(lambda **o: history_read(conn, sessionId="s1", **o), limit=1) for e in p["entries"]]
    assert [e["timestamp"] for e in split] == [e["timestamp"] for e in whole] == [
        1767225600000, 1767225900000, 1767225900000, 1767225900000,
    ]
    logs.sql("UPDATE messages SET timestamp = NULL WHERE session_id = 's1'")
    assert {e["timestamp"] for e in history_read(logs.conn(), sessionId="s1")["entries"]} == {1767225600000}


def test_codex_lines_without_a_time_take_the_session_start(read_conn):
    page = history_read(read_conn, sessionId="codex:44444444-4444-4444-8444-444444444444")
    assert page["session"]["createdAt"] == 1767503167000
    assert [(e["type"], e["timestamp"]) for e in page["entries"]] == [("user", 1767503167000), ("assistant", 1767503167000)]


def test_read_validation(logs):
    conn = logs.conn()
    assert code_of(lambda: history_read(conn, sessionId="nope")) == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert code_of(lambda: history_read(conn, sessionId="")) == "OBELISK_INVALID_ARGUMENT"
    assert code_of(lambda: history_read(conn, sessionId="x" * 257)) == "OBELISK_INVALID_ARGUMENT"
    assert code_of(lambda: history_read(conn, {})) == "OBELISK_INVALID_ARGUMENT"
    assert code_of(lambda: history_read(conn, sessionId="s1", limit=101)) == "SESSION_QUERY_INVALID_LIMIT"
    assert code_of(lambda: history_read(conn, sessionId="s1", limit=0)) == "SESSION_QUERY_INVALID_LIMIT"
    assert code_of(lambda: history_read(conn, sessionId="s1", cursor="x")) == "SESSION_QUERY_INVALID_CURSOR"
    assert History(conn).read({"sessionId": "s1", "limit": 2})["entries"][1]["id"] == "a2"


def test_rewound_content_is_absent_and_compacted_content_kept(read_conn):
    # The file: b1u/b1a were rewound; the compaction replaced u1, a1, b2u in the
    # model's context but the transcript keeps them. The summary (cs) and the
    # boundary (cb) are not conversation entries.
    entries = history_read(read_conn, sessionId="dag_compact_after_rewind_preserved")["entries"]
    assert [(e["id"], e["type"], e["content"]) for e in entries] == [
        ("u1", "user", "Start"), ("a1", "assistant", "Ready"), ("b2u", "user", "Second attempt"),
        ("b2a", "assistant", "Second answer"), ("b2u2", "user", "Keep going"), ("b2a2", "assistant", "Kept going"),
        ("p1u", "user", "After compaction"), ("p1a", "assistant", "Final answer"),
    ]


def test_forked_session_reads_the_active_branch_with_tool_entries(read_conn):
    entries = history_read(read_conn, sessionId="claude_forked_session")["entries"]
    assert [(e["type"], e["id"]) for e in entries] == [
        ("user", "fu1-fork"), ("assistant", "fa1-fork"), ("user", "fu2b-fork"), ("assistant", "fa2b-fork"),
        ("tool", "toolu_f002"), ("assistant", "fa3b-fork"), ("user", "fu4b-fork"), ("assistant", "fa4b-fork"),
        ("tool", "toolu_f003"), ("assistant", "fa5b-fork"),
    ]
    assert entries[3]["content"] == "Good choice for stable sorting! Here's MergeSort:"
    write = entries[4]
    assert (write["name"], write["outcome"], write["result"], write["sourceIds"]) == (
        "Write", "succeeded", "File created successfully", ["fa2b-fork", "fu3b-fork"],
    )
    assert write["arguments"]["file_path"] == "/home/testuser/fork-project/mergesort.py"


def test_codex_compaction_keeps_the_original_entries(tmp_path):
    db, _ = copy_corpus(tmp_path, "codex/kvsankar__agent-history/session_with_compaction.jsonl")
    page = history_read(connect(db), sessionId="codex:compact-codex-001")
    assert [e["type"] for e in page["entries"]] == [
        "user", "assistant", "tool", "assistant", "user", "assistant", "user", "assistant",
        "user", "assistant", "tool", "assistant",
    ]
    assert page["entries"][0]["content"] == "Help me build the API endpoints"
    assert page["entries"][2]["arguments"] == {"command": "cat src/routes.py"}
    digest = page["session"]["digest"]
    assert digest["summary"].startswith("**Progress + Plan Status**")
    assert digest["updatedThroughEntryId"] == page["entries"][7]["id"]  # the last entry before the compaction


def test_entry_text_holding_the_match_marks_cannot_forge_a_match(toy):
    toy.write("s1", line("a1", "\ufdd0<b>forged</b>\ufdd1 findme", "2026-01-01T00:00:00Z"))
    toy.ingest()
    [hit] = history_search(toy.conn(), {"query": "findme"})["sessions"]
    assert (hit["snippets"], hit["snippetMatches"]) == (["\ufffd<b>forged</b>\ufffd findme"], [[[16, 22]]])


def test_a_lone_surrogate_in_an_argument_is_refused_with_a_code(logs):
    conn = logs.conn()
    assert code_of(lambda: history_search(conn, attributes={"cwd": "a\ud800"})) == "OBELISK_INVALID_ARGUMENT"
    assert code_of(lambda: history_read(conn, sessionId="a\ud800")) == "OBELISK_INVALID_ARGUMENT"
    assert code_of(lambda: history_search(conn, query="a\ud800")) == "SESSION_QUERY_INVALID_QUERY"


def test_a_tool_output_over_the_budget_comes_whole_on_a_page_of_its_own(toy, monkeypatch):
    big = "build output line\n" * 70_000  # 1.26 MB: more than a page's budget by itself
    toy.write(
        "s1",
        line("a1", "run the build", "2026-01-01T00:00:00Z"),
        line("a2", "building", "2026-01-01T00:01:00Z", role="assistant", type="assistant",
             tool="Bash", output=big, outcome="succeeded"),
        line("a3", "built", "2026-01-01T00:02:00Z", role="assistant", type="assistant"),
        line("a4", "then test", "2026-01-01T00:03:00Z", role="assistant", type="assistant",
             tool="Bash", output="3 passed", outcome="succeeded"),
    )
    toy.ingest()
    conn = toy.conn()
    encoded = []
    dumps = history_module.json.dumps

    def measuring(value, *args, **kwargs):
        text = dumps(value, *args, **kwargs)
        encoded.append(len(text))
        return text

    split = pages(lambda **o: history_read(conn, sessionId="s1", **o), limit=100)
    assert [[e["id"] for e in p["entries"]] for p in split] == [["a1", "a2"], ["a2:call"], ["a3", "a4", "a4:call"]]
    [call] = [e for p in split for e in p["entries"] if e["id"] == "a2:call"]
    assert call["result"] == big and call["outcome"] == "succeeded"  # machine-local: the whole output
    monkeypatch.setattr(history_module.json, "dumps", measuring)
    again = pages(lambda **o: history_read(conn, sessionId="s1", **o), limit=100)
    assert again == split
    assert max(encoded) < history_module.READ_BUDGET_BYTES  # an output that cannot fit is not encoded to learn so


def test_a_read_cursor_goes_on_after_its_line_when_an_ingest_renumbers_the_session(tmp_path):
    """A Codex fork read before the log it forked from arrives keeps a copy of that log's
    lines; once the log arrives the fork gives the copy up and its own lines move up.
    A cursor goes on after the line its page ended on, wherever that line now is, and
    one whose line is gone is stale: never an early end of the transcript."""
    from test_codex_fork_ancestry import IDS, chain, place

    from datasette_obelisk.query.readonly import connect_readonly
    from datasette_obelisk.store.ingest import ingest

    logs, home, db = chain(), tmp_path / ".codex", tmp_path / "fork.db"

    def arrive(name):
        place(home, logs, name)
        ingest(db, {"codex": home})

    fork = "codex:" + IDS["B"]
    arrive("B")
    with connect_readonly(db) as conn:
        before = [(e["type"], e.get("content") or e["name"]) for e in read_everything(conn, fork)[1]]
        first, fourth = (history_read(conn, sessionId=fork, limit=limit) for limit in (3, 4))
    assert before == [
        ("user", "A's own prompt"), ("tool", "shell"), ("assistant", "Answer to A's own prompt"),
        ("user", "B's own prompt"), ("tool", "shell"), ("assistant", "Answer to B's own prompt"),
    ]
    arrive("A")
    with connect_readonly(db) as conn:
        assert [e["content"] for e in read_everything(conn, fork)[1] if e["type"] != "tool"] == [
            "B's own prompt", "Answer to B's own prompt"]
        rest = history_read(conn, sessionId=fork, cursor=fourth["nextCursor"])
        assert [(e["type"], e.get("content") or e["name"]) for e in rest["entries"]] == [
            ("tool", "shell"), ("assistant", "Answer to B's own prompt")]
        assert "nextCursor" not in rest
        # the line the first page ended on was the copy's: where to go on is unknown
        assert code_of(lambda: history_read(conn, sessionId=fork, cursor=first["nextCursor"])) == "SESSION_QUERY_STALE_CURSOR"


def test_an_option_given_in_the_dict_and_as_a_keyword_is_refused(logs):
    conn = logs.conn()
    assert code_of(lambda: history_read(conn, {"sessionId": "s1"}, sessionId="s2")) == "OBELISK_INVALID_ARGUMENT"
    assert code_of(lambda: history_search(conn, {"limit": 1}, limit=2)) == "OBELISK_INVALID_ARGUMENT"
    assert [e["id"] for e in history_read(conn, {"limit": 1}, sessionId="s1")["entries"]] == ["a1"]


def test_a_read_cursor_after_a_line_of_a_long_uuid_goes_on_after_it_when_the_session_is_renumbered(toy):
    """A cursor carries the uuid of the line its page ended on, or the digest of a uuid too
    long for a cursor: never the seq alone, which an ingest that renumbers the session (lines
    moved to another session, closing the gap they leave: ``derive.renumber``) moves."""
    from datasette_obelisk.query.history import MAX_PLACE_UUID
    from datasette_obelisk.store.derive import renumber

    long_id = "L" * (MAX_PLACE_UUID + 100)
    toy.write(
        "s9",
        line("x1", "first question", "2026-01-01T00:00:00Z"),
        line(long_id, "an answer under a long id", "2026-01-01T00:01:00Z", role="assistant", type="assistant"),
        line("x3", "second question", "2026-01-01T00:02:00Z"),
        line("x4", "second answer", "2026-01-01T00:03:00Z", role="assistant", type="assistant"),
    )
    toy.ingest()
    conn = toy.conn()
    first = history_read(conn, sessionId="s9", limit=2)
    assert [e["content"] for e in first["entries"]] == ["first question", "an answer under a long id"]
    conn.close()
    # the first line moves out of the session (as an agent's lines do), the rest move up
    toy.sql("UPDATE messages SET session_id = 'elsewhere', seq = 1 WHERE uuid = 'x1'")
    write = sqlite3.connect(toy.db)
    renumber(write, "s9")
    write.commit()
    write.close()
    conn = toy.conn()
    rest = history_read(conn, sessionId="s9", cursor=first["nextCursor"])
    assert [e["content"] for e in rest["entries"]] == ["second question", "second answer"]
    # its line gone from the session: stale, never another place
    toy.sql("DELETE FROM messages WHERE uuid = ?", [long_id])
    assert code_of(lambda: history_read(conn, sessionId="s9", cursor=first["nextCursor"])) == "SESSION_QUERY_STALE_CURSOR"


def test_search_reads_the_text_of_a_session_s_candidate_lines_only_as_far_as_its_hits_go(toy):
    """A common word's candidate lines in a long session are ranked by their ids and
    lengths alone; their texts are read a batch at a time, shortest first, and the batch
    that gives the snippets is the last read (the whole set of candidates took past a
    second on a 300,000-line session)."""
    toy.write("long", *[line(f"l{n:03d}", "omega " + "word " * (n % 17), f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z")
                        for n in range(200)])
    toy.ingest()
    conn = toy.conn()
    statements = []
    conn.set_trace_callback(statements.append)
    page = history_search(conn, {"query": "omega", "limit": 1})
    assert session_ids(page) == ["long"]
    assert page["sessions"][0]["snippets"] == ["omega"] * 3  # (the shortest lines first)
    reading_text = [s for s in statements if "m.text," in s and "json_each" in s]
    assert len(reading_text) == 1, reading_text
    ids = json.loads(re.search(r"json_each\('(\[[^']*\])'\)", reading_text[0]).group(1))
    assert len(ids) == history_module.HIT_BATCH
