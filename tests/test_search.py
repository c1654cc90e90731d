"""Safe FTS5 expressions, grouped and within-session search, snippets, cursors."""

import base64
import functools
import json

import pytest

from datasette_obelisk import cjk
from datasette_obelisk.query import search as search_module
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.fts import parse_query, tokens, validate_raw
from datasette_obelisk.query.search import search_events, search_sessions
from datasette_obelisk.query.text import approximate_snippet, literal_pattern, middle_truncate, snippet
from query_fixtures import connect, corpus_db, generated_db, line, read_conn, resigned, toy  # noqa: F401

AWKWARD = [
    "foo-bar", "c++", '"quotes', "/src/x.py", "don't", "😀", "fix 😀", "数据库 迁移", "AND OR NOT",
    "NEAR(a b)", "x*", "^start", "col:value", "(unbalanced", "'single'", "a\tb\nc", "émigré café",
    "\x00nul", "-", "***", "foo AND", 'say "hi" twice',
]


GRIN = cjk.split("😀")


def code_of(call):
    with pytest.raises(QueryError) as info:
        call()
    return info.value.code


# -- fts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expression,candidates",
    [
        ("foo-bar", '"foo-bar"', '"foo" AND "bar"'),
        ("c++", '"c++"', '"c"'),
        ('"quotes', '"""quotes"', '"quotes"'),
        ("/src/x.py", '"/src/x.py"', '"src" AND "x" AND "py"'),
        ("don't", '"don\'t"', '"don" AND "t"'),
        ("😀", f'"{GRIN}"', f'"{GRIN}"'),  # (an emoji is a word: set apart, as the indexes write it)
        ("fix 😀", f'"fix" AND "{GRIN}"', f'"fix" AND "{GRIN}"'),
        ("数据库 迁移", '("数据库" OR "\ufffe数\ufffe据\ufffe库\ufffe") AND ("迁移" OR "\ufffe迁\ufffe移\ufffe")',
         '("数据库" OR "\ufffe数\ufffe据\ufffe库\ufffe") AND ("迁移" OR "\ufffe迁\ufffe移\ufffe")'),
        ("AND OR NOT", '"AND" AND "OR" AND "NOT"', '"and" AND "or" AND "not"'),
        ("  database   migration ", '"database" AND "migration"', '"database" AND "migration"'),
        ('"npm test" fix', '"npm test" AND "fix"', '"npm" AND "test" AND "fix"'),  # quotes that pair make a phrase
        ('x"y z"w', '"x" AND "y z" AND "w"', '"x" AND "y" AND "z" AND "w"'),
        ('"" fix', '"fix"', '"fix"'),
    ],
)
def test_terms_mode_quotes_every_term(text, expression, candidates):
    query = parse_query(text)
    assert (query.expression, query.candidates) == (expression, candidates)


def test_words_mode_needs_every_token_anywhere():
    query = parse_query("sorting-stable c++", "words")
    assert (query.expression, query.candidates) == ('"sorting" AND "stable" AND "c"', '"sorting" AND "stable" AND "c"')


def test_phrase_and_prefix_expressions():
    assert parse_query("foo-bar baz", mode="phrase").expression == '"foo-bar baz"'
    assert parse_query("database migr", prefix=True).expression == '"database" AND "migr"*'
    assert parse_query("database migr", prefix=True).candidates == '"database" AND "migr"*'
    assert parse_query("run the migr", mode="phrase", prefix=True).expression == '"run the migr"*'
    assert parse_query("foo-ba", prefix=True).expanded(["bar", "baz"]) == '("foo bar" OR "foo baz")'
    assert parse_query("x ba", prefix=True).expanded([]) is None


def test_tokens_split_like_unicode61():
    assert tokens("Foo_bar-BAZ 數據 café/x.py 😀 don't") == [
        "foo", "bar", "baz", "數", "據", "café", "x", "py", "😀", "don", "t"]


@pytest.mark.parametrize("text", AWKWARD)
@pytest.mark.parametrize("mode", ["terms", "phrase"])
@pytest.mark.parametrize("prefix", [False, True])
def test_awkward_text_never_raises(read_conn, text, mode, prefix):
    query = parse_query(text, mode, prefix)
    if query.expression is not None:
        read_conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", [query.expression]).fetchone()
        read_conn.execute(
            "SELECT COUNT(*) FROM session_docs_fts WHERE session_docs_fts MATCH ?", [query.candidates]
        ).fetchone()
    page = search_sessions(read_conn, text, mode=mode, prefix=prefix)
    assert set(page) == {"items", "next_cursor", "generation"}
    assert set(search_events(read_conn, "claude_forked_session", text, mode=mode, prefix=prefix)) == {
        "session", "items", "next_cursor", "generation",
    }


def test_text_without_indexable_characters_matches_nothing(read_conn):
    assert parse_query("-> !! …").expression is None
    assert search_sessions(read_conn, "-> !! …")["items"] == []


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\x00"])
def test_blank_query_is_invalid(read_conn, text):
    assert code_of(lambda: parse_query(text)) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: search_sessions(read_conn, text)) == "SESSION_QUERY_INVALID_QUERY"


def test_a_lone_surrogate_is_an_invalid_query(read_conn):
    for call in (lambda: parse_query("ab\ud800"), lambda: search_sessions(read_conn, "x\udcff y")):
        with pytest.raises(QueryError) as error:
            call()
        assert error.value.code == "SESSION_QUERY_INVALID_QUERY"


def test_other_invalid_queries():
    assert code_of(lambda: parse_query("x" * 1001)) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: parse_query("x", mode="fuzzy")) == "SESSION_QUERY_INVALID_QUERY"
    assert code_of(lambda: parse_query(42)) == "SESSION_QUERY_INVALID_QUERY"


@pytest.mark.parametrize("expression", ["foo AND", '"unterminated', "NEAR(", "nosuchcolumn: foo", "(a OR"])
def test_raw_syntax_errors_are_invalid_query(expression):
    assert code_of(lambda: parse_query(expression, mode="raw")) == "SESSION_QUERY_INVALID_QUERY"


def test_raw_expressions_pass_through():
    query = parse_query('text: (alpha OR "beta gamma") NOT delta', mode="raw")
    assert (query.expression, query.candidates) == ('text: (alpha OR "beta gamma") NOT delta', None)
    validate_raw("content: boom", columns=("content",))
    assert code_of(lambda: validate_raw("text: boom", columns=("content",))) == "SESSION_QUERY_INVALID_QUERY"


# -- text helpers --------------------------------------------------------------


def test_snippet_centres_the_first_match_and_reports_offsets():
    marked = "word " * 100 + "\ufdd0Needle\ufdd1 in   the\n\nhaystack " + "tail " * 100
    result = snippet(marked, width=60)
    assert result == {"text": "…word word word word Needle in the haystack tail tail tail ta…", "matches": [[21, 27]]}
    assert result["text"][21:27] == "Needle"


def test_snippet_of_short_text_is_whole():
    assert snippet("<b>x</b> \ufdd0y\ufdd1") == {"text": "<b>x</b> y", "matches": [[9, 10]]}


def test_approximate_snippet_finds_word_starts():
    result = approximate_snippet("nothing here. Migrations ran; remigration not", ["migration"], width=60)
    assert result == {"text": "nothing here. Migrations ran; remigration not", "matches": [[14, 24]]}


def test_an_approximate_snippet_never_starts_inside_a_word():
    # the window opens 2 * 60 characters before the real match: right inside "haystackneedle"
    text = "lorem " * 30 + "haystackneedle" + "." * (2 * 60 - 6) + "needle here"
    result = approximate_snippet(text, ["needle"], width=60)
    assert result["text"][result["matches"][0][0]:][:11] == "needle here"
    assert len(result["matches"]) == 1


def test_literal_pattern_is_case_insensitive_and_whitespace_flexible():
    pattern = literal_pattern("Hello  (world)")
    assert pattern.search("say hello\n\t(WORLD) now")
    assert not pattern.search("hello world")


def test_middle_truncate_says_how_much_was_cut():
    assert middle_truncate("abc", 10) == "abc"
    cut = middle_truncate("x" * 100, 40)
    assert cut == "x" * 9 + "\n…82 chars truncated…\n" + "x" * 9  # the seed's excerpt() arithmetic
    assert len(cut) == 40


# -- grouped search ------------------------------------------------------------


@pytest.fixture
def logs(toy):
    toy.write(
        "s1",
        line("a1", "The database migration failed", "2026-01-01T00:00:00Z", cwd="/p/one"),
        line("a2", "I will fix the database migration now. The migration script was broken.",
             "2026-01-01T00:01:00Z", role="assistant", type="assistant", parent="a1"),
    )
    toy.write(
        "s2",
        line("b1", "database tuning", "2026-02-01T00:00:00Z", cwd="/p/two"),
        line("b2", "migration of the cache", "2026-02-01T00:01:00Z", role="assistant", type="assistant"),
    )
    toy.write("s3", line("c1", "A <b>database</b> migration, again", "2026-03-01T00:00:00Z", cwd="/p/two"))
    toy.ingest()
    return toy


def ids(page):
    return [item["session"]["id"] for item in page["items"]]


def test_grouped_search_shape(logs):
    page = search_sessions(logs.conn(), "database migration")
    assert set(page) == {"items", "next_cursor", "generation"}
    assert ids(page) == ["s1", "s3"]  # s1 says both words more often
    item = page["items"][0]
    assert set(item) == {"session", "score", "best", "hits"}
    assert item["best"] == item["hits"][0]
    assert [(h["uuid"], h["seq"]) for h in item["hits"]] == [("a1", 1), ("a2", 2)]
    assert item["best"] == {
        "id": 1, "uuid": "a1", "session_id": "s1", "seq": 1, "type": "user/message", "raw_type": "user",
        "role": "user", "content_type": "text", "timestamp": "2026-01-01T00:00:00Z", "time": 1767225600000,
        "surface": "current", "visibility": "visible", "is_meta": False, "score": item["best"]["score"],
        "snippet": {"text": "The database migration failed", "matches": [[4, 12], [13, 22]]},
    }
    assert item["hits"][0]["score"] > item["hits"][1]["score"]
    assert page["next_cursor"] is None


def test_a_prefix_finds_words_as_fts5_reads_them(toy):
    # The session index splits on ASCII separators and keeps accents; FTS5 folds and splits on all.
    toy.write("s1", line("a", "un café et un résumé", "2026-01-01T00:00:00Z"))
    toy.write("s2", line("b", "a plain cafe here", "2026-01-02T00:00:00Z"))
    toy.write("s3", line("c", "alpha\u2014omegaword", "2026-01-03T00:00:00Z"))
    toy.write("s4", line("d", "re\u0301sume\u0301 draft in \u0130stanbul", "2026-01-04T00:00:00Z"))  # decomposed; dotted I
    # FTS5 folds no ligature, full-width letter or superscript: they are words as written.
    toy.write("s5", line("e", "alpha\u2014\ufb01nal w\u2014\uff43\uff41\uff46e q\u2014x\u00b2y", "2026-01-05T00:00:00Z"))
    toy.ingest()
    found = lambda text: sorted(ids(search_sessions(toy.conn(), text, prefix=True)))  # noqa: E731
    assert found("cafe") == found("café") == found("caf") == ["s1", "s2"]
    assert found("resum") == ["s1", "s4"] and found("ist") == ["s4"]
    assert found("omega") == ["s3"] and found("alpha omega") == ["s3"]
    assert found("\ufb01n") == found("\uff43\uff41\uff46") == found("x\u00b2") == ["s5"]
    for text in ("cafe", "café", "resum", "omega", "alpha omega", "ist", "\ufb01n", "\uff43\uff41\uff46", "x\u00b2"):
        expression = search_module.parse_query(text, "terms", True).expression
        fts = toy.conn().execute(
            "SELECT DISTINCT m.session_id FROM messages_fts f JOIN messages m ON m.id = f.rowid "
            "WHERE messages_fts MATCH ? ORDER BY 1", [expression]).fetchall()
        assert [row[0] for row in fts] == found(text), text


def test_every_term_must_match_in_one_event(logs):
    # s2 has both words, but never in the same message.
    assert "s2" not in ids(search_sessions(logs.conn(), "database migration"))
    # Ranked by their strongest event: s2's short "database tuning" beats s3's longer line.
    assert ids(search_sessions(logs.conn(), "database")) == ["s1", "s2", "s3"]


def test_snippets_are_plain_text_with_offsets(logs):
    best = search_sessions(logs.conn(), "database migration", session_ids=["s3"])["items"][0]["best"]
    assert best["snippet"] == {"text": "A <b>database</b> migration, again", "matches": [[5, 13], [18, 27]]}


def test_phrase_and_prefix_modes(logs):
    assert ids(search_sessions(logs.conn(), "database migration", mode="phrase")) == ["s1"]
    assert ids(search_sessions(logs.conn(), "databa", prefix=True)) == ["s1", "s3", "s2"]
    hits = search_sessions(logs.conn(), "the migr", prefix=True)["items"]
    assert {item["session"]["id"]: item["best"]["uuid"] for item in hits} == {"s1": "a2", "s2": "b2"}


def test_raw_mode_ranks_all_matches(logs):
    page = search_sessions(logs.conn(), "database NOT migration", mode="raw")
    assert ids(page) == ["s2"]
    assert page["items"][0]["best"]["uuid"] == "b1"


def fts5_statements(conn) -> list[str]:
    """The statements ``conn`` runs that match ``messages_fts``, as it runs them."""
    found: list[str] = []
    conn.set_trace_callback(lambda sql: found.append(sql) if "messages_fts MATCH" in sql else None)
    return found


def test_a_raw_prefix_is_matched_once_per_search_not_per_session(logs):
    conn = logs.conn()
    statements = fts5_statements(conn)
    page = search_sessions(conn, "migr*", mode="raw")
    assert [(i["session"]["id"], [(h["uuid"], h["score"], h["snippet"]) for h in i["hits"]]) for i in page["items"]] == [
        ("s2", [("b2", 0.928164, {"text": "migration of the cache", "matches": [[0, 9]]})]),
        ("s1", [
            ("a2", 1.229737, {"text": "I will fix the database migration now. The migration script was broken.",
                              "matches": [[24, 33], [43, 52]]}),
            ("a1", 1.207464, {"text": "The database migration failed", "matches": [[13, 22]]}),
        ]),
        ("s3", [("c1", 1.0, {"text": "A <b>database</b> migration, again", "matches": [[18, 27]]})]),
    ]
    assert len(statements) == 3  # the ranking, the matches, the snippets
    statements.clear()
    hits = search_events(conn, "s1", "migr*", mode="raw")["items"]
    assert [(h["uuid"], h["snippet"]) for h in hits] == [(h["uuid"], h["snippet"]) for h in page["items"][1]["hits"]]
    assert len(statements) == 2  # the session's matches, the snippets


def test_a_raw_prefix_confirms_the_first_matches_of_a_session_s_id_range(toy, monkeypatch):
    # s1's ids span s2's line: the matches read once are cut where FTS5 would cut them.
    toy.write("s1", line("a1", "migrate the first table please", "2026-01-01T00:00:00Z"),
              line("a2", "a long line about how we migrate the second table later today", "2026-01-01T00:01:00Z"))
    toy.ingest()
    toy.write("s2", line("b1", "migrate elsewhere", "2026-01-02T00:00:00Z"))
    toy.ingest()
    toy.write("s1", line("a3", "migrated", "2026-01-03T00:00:00Z"), append=True)
    toy.ingest()
    found = lambda: [(i["session"]["id"], [h["uuid"] for h in i["hits"]])  # noqa: E731
                     for i in search_sessions(toy.conn(), "migr*", mode="raw")["items"]]
    assert found() == [("s1", ["a3", "a1", "a2"]), ("s2", ["b1"])]
    monkeypatch.setattr(search_module, "SCAN_MAX", 2)  # s1's range holds a1, a2, b1, a3: a3 is not read
    assert found() == [("s1", ["a1", "a2"]), ("s2", ["b1"])]


@pytest.mark.parametrize("expression", [
    "t*", "fil* OR err*", "the NOT te*", "NEAR(fil* the, 3)", '"src" AND test*', "text: (re* OR upd*)", "^the*",
    "file OR error", '"the file"',
])
@pytest.mark.parametrize("roles", [None, ["user"]])
def test_raw_searches_find_what_fts5_finds_session_by_session(generated_db, monkeypatch, expression, roles):
    """Reading a prefix's matches once changes nothing: the same pages, hits, scores and snippets
    as asking FTS5 again for each session and each snippet."""
    conn = connect(generated_db)

    def results():
        pages = all_pages(lambda **o: search_sessions(conn, expression, mode="raw", roles=roles, **o), limit=4)
        items = [item for page in pages for item in page["items"]]
        events = [search_events(conn, item["session"]["id"], expression, mode="raw", roles=roles)["items"]
                  for item in items[:5]]
        return items, events

    items, events = results()
    assert items and all(item["hits"] for item in items)
    assert [item["session"]["id"] for item in items] == ids(
        search_sessions(conn, expression, mode="raw", roles=roles, limit=100, snippets=0)
    )
    monkeypatch.setattr(search_module, "merges_prefixes", lambda expression: False)
    assert results() == (items, events)


def test_few_and_many_match_paths_find_the_same_sessions_and_best_events(logs, monkeypatch):
    """Many matches rank sessions by their bags (approximate), few by their best event (exact)."""
    few = search_sessions(logs.conn(), "database")
    monkeypatch.setattr(search_module, "EXACT_MAX", 0)
    assert isinstance(search_module._finder(logs.conn(), parse_query("database"), search_module.Filters()), search_module._ManyMatches)
    many = search_sessions(logs.conn(), "database")
    assert ids(many) == ["s1", "s3", "s2"] and ids(few) == ["s1", "s2", "s3"]
    hits = lambda page: {i["session"]["id"]: i["hits"] for i in page["items"]}  # noqa: E731
    assert hits(many) == hits(few)
    assert [i["score"] for i in few["items"]] == [i["best"]["score"] for i in few["items"]]


def test_a_page_that_has_found_nothing_looks_further_before_giving_up(toy, monkeypatch):
    # Twelve sessions hold both words, but never in one message: their bags promise what their
    # events do not. Only "both" (ranked after them: the words once each) has a match.
    for n in range(12):
        toy.write(f"s{n:02}", line(f"s{n:02}a", "splitalpha " * 20, "2026-01-01T00:00:00Z"),
                  line(f"s{n:02}b", "splitbeta " * 20, "2026-01-01T00:01:00Z"))
    toy.write("both", line("both-a", "splitalpha splitbeta and many other words " * 3, "2026-01-01T00:02:00Z"))
    toy.ingest()
    monkeypatch.setattr(search_module, "EXACT_MAX", 0)  # rank by the bags
    monkeypatch.setattr(search_module, "MAX_CANDIDATES", 5)
    monkeypatch.setattr(search_module, "MAX_EMPTY_CANDIDATES", 50)
    page = search_sessions(toy.conn(), "splitalpha splitbeta", limit=3)
    assert (ids(page), page["next_cursor"]) == (["both"], None)
    monkeypatch.setattr(search_module, "MAX_EMPTY_CANDIDATES", 8)  # it gives up first: the next page goes on
    pages = all_pages(lambda **o: search_sessions(toy.conn(), "splitalpha splitbeta", **o), limit=3)
    assert [ids(p) for p in pages] == [[], ["both"]]


def test_few_events_an_event_filter_keeps_of_a_frequent_word_are_ranked_exactly(toy, monkeypatch):
    """A frequent word under an event filter the bags know nothing of (a seq range) that keeps
    few of its matches: they are read once and ranked exactly, not found by confirming every
    session the bags name, one query each, until a page gives up with nothing."""
    for n in range(12):  # "common" in every one of their lines, all before seq 4
        toy.write(f"s{n:02}", *[line(f"s{n:02}{k}", "common words here", f"2026-01-01T00:0{k}:00Z") for k in range(3)])
    toy.write("late", *[line(f"late{k}", "common" if k == 4 else "other words", f"2026-01-02T00:0{k}:00Z")
                        for k in range(6)])
    toy.ingest()
    conn = toy.conn()
    (seq,) = conn.execute("SELECT seq FROM messages WHERE uuid = 'late4'").fetchone()
    monkeypatch.setattr(search_module, "EXACT_MAX", 3)  # "common" matches 37 messages: many
    monkeypatch.setattr(search_module, "MAX_CANDIDATES", 2)
    monkeypatch.setattr(search_module, "MAX_EMPTY_CANDIDATES", 4)
    late = search_module.Filters.build(seq_from=seq)
    assert isinstance(search_module._finder(conn, parse_query("common"), late), search_module._FewMatches)
    page = search_sessions(conn, "common", filters=late)
    assert (ids(page), page["next_cursor"]) == (["late"], None)
    assert page["items"][0]["best"]["id"] == search_events(conn, "late", "common", filters=late)["items"][0]["id"]
    # Past FILTERED_SCAN_MAX matches the bags rank, as they do for a time range (its sessions' spans narrow them).
    day = search_module.Filters.build(time_from="2026-01-02T00:00:00Z")
    assert isinstance(search_module._finder(conn, parse_query("common"), day), search_module._ManyMatches)
    monkeypatch.setattr(search_module, "FILTERED_SCAN_MAX", 10)
    assert isinstance(search_module._finder(conn, parse_query("common"), late), search_module._ManyMatches)


def test_sessions_of_equal_rank_page_once_each_newest_first(toy):
    for n in range(60):  # the same text a minute apart: equal ranks
        toy.write(f"s{n:02}", line(f"s{n:02}a", "apple banana", f"2026-01-01T00:{n:02}:00Z"))
    toy.ingest()
    found, cursor = [], None
    while True:
        page = search_sessions(toy.conn(), "apple banana", limit=7, cursor=cursor)
        found += ids(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert found == [f"s{n:02}" for n in reversed(range(60))]


def test_facet_narrowing_finds_every_session_whatever_the_sample(toy, monkeypatch):
    """Tool and model values narrow the search before ranking, not among the
    first sampled matches: with a sample of 2, s3's match was never seen."""
    from datasette_obelisk.query import search_facets

    for n in range(1, 4):
        toy.write(f"s{n}", line(f"s{n}a", "needle here", f"2026-01-0{n}T00:00:00Z",
                                **({"tool": "Grep"} if n == 3 else {})))
    toy.ingest()
    toy.sql("UPDATE messages SET model = 'm-x' WHERE uuid = 's3a'")
    monkeypatch.setattr(search_facets, "HIT_SAMPLE", 2)
    for narrowing in ({"tool": ["Grep"]}, {"model": ["m-x"]}, {"tool": ["Grep"], "model": ["m-x"]}):
        assert ids(search_facets.faceted_search(toy.conn(), "needle", narrowing=narrowing)["page"]) == ["s3"]
    assert ids(search_facets.faceted_search(toy.conn(), "needle", narrowing={"tool": ["Grep"], "model": ["other"]})["page"]) == []


def test_a_facet_with_a_choice_is_counted_without_it_and_every_other_filter_applies(toy):
    from datasette_obelisk.query.search_facets import faceted_search

    toy.write("s1", line("s1a", "needle", "2026-01-01T00:00:00Z", tool="Grep"))
    toy.write("s2", line("s2a", "needle", "2026-01-02T00:00:00Z", tool="Read"))
    toy.write("s3", line("s3a", "needle", "2026-01-02T01:00:00Z", tool="Read"))
    toy.ingest()
    toy.sql("UPDATE messages SET model = 'm-x' WHERE uuid = 's2a'")

    def counts(result, name):
        return {f["value"]: f["count"] for f in result["facets"][name]}

    chosen = faceted_search(toy.conn(), "needle", narrowing={"tool": ["Grep"]})
    assert ids(chosen["page"]) == ["s1"]
    assert counts(chosen, "tool") == {"Grep": 1, "Read": 2}  # the others stay there to add
    assert counts(chosen, "model") == {} and counts(chosen, "day") == {"2026-01-01": 1}
    day = faceted_search(toy.conn(), "needle", time_from="2026-01-02T00:00:00.000Z", time_to="2026-01-02T23:59:59.999Z")
    assert ids(day["page"]) == ["s3", "s2"]
    assert counts(day, "day") == {"2026-01-01": 1, "2026-01-02": 2}
    assert counts(day, "tool") == {"Read": 2} and counts(day, "model") == {"m-x": 1}
    both = faceted_search(toy.conn(), "needle", narrowing={"tool": ["Read"], "model": ["m-x"]})
    assert (ids(both["page"]), counts(both, "tool"), counts(both, "model")) == (["s2"], {"Read": 1}, {"m-x": 1})
    assert counts(faceted_search(toy.conn(), "needle", per_facet=1), "tool") == {"Read": 2}


def test_the_search_page_cursor_outlives_an_ingest(toy):
    """The web page's next link keeps working while agents write."""
    from datasette_obelisk.query.search_facets import faceted_search

    for n in range(3):
        toy.write(f"s{n}", line(f"s{n}a", "needle", f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    first = faceted_search(toy.conn(), "needle", limit=2)["page"]
    toy.write("s9", line("s9a", "unrelated", "2026-02-01T00:00:00Z"))
    toy.ingest()
    second = faceted_search(toy.conn(), "needle", limit=2, cursor=first["next_cursor"])["page"]
    assert ids(first) + ids(second) == ["s2", "s1", "s0"]
    assert code_of(lambda: search_sessions(toy.conn(), "needle", limit=2, cursor=first["next_cursor"])) == (
        "SESSION_QUERY_STALE_CURSOR"  # the session-query contract's search stays bound
    )


def test_the_search_page_cursor_ranks_the_sessions_its_first_page_ranked(toy, monkeypatch):
    """A session stored while the first page ranks (an ingest committing meanwhile) is
    not ranked by the next pages either: it would shift them, showing one again."""
    from datasette_obelisk.query.search_facets import faceted_search

    for n in range(4):
        toy.write(f"s{n}", line(f"s{n}a", "needle " + "pad " * n, f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    rank = search_module._Candidates.page

    def ranking_while_an_ingest_commits(self, *args, **kwargs):
        found = rank(self, *args, **kwargs)
        monkeypatch.setattr(search_module._Candidates, "page", rank)
        toy.write("late", line("late1", "needle", "2026-02-01T00:00:00Z"))  # would rank first
        toy.ingest()
        return found

    monkeypatch.setattr(search_module._Candidates, "page", ranking_while_an_ingest_commits)
    first = faceted_search(toy.conn(), "needle", limit=2)["page"]
    second = faceted_search(toy.conn(), "needle", limit=2, cursor=first["next_cursor"])["page"]
    assert ids(first) + ids(second) == ["s3", "s2", "s1", "s0"]
    assert second["added"] == 1


def test_the_role_of_a_tool_s_output_is_tool(read_conn):
    """Claude Code logs tool output as user lines: the role facet and filter
    call those ``tool``, so "user" means what the user wrote."""
    from datasette_obelisk.query.search_facets import faceted_search

    def hit_types(role):
        page = faceted_search(read_conn, "error", limit=100, roles=[role])["page"]
        return {hit["type"] for item in page["items"] for hit in item["hits"]}

    assert hit_types("tool") == {"tool/result"}
    assert "tool/result" not in hit_types("user") and "user/message" in hit_types("user")
    roles = {f["value"] for f in faceted_search(read_conn, "error")["facets"]["role"]}
    assert {"tool", "user", "assistant"} <= roles


def test_filters_apply_before_ranking(logs):
    conn = logs.conn()
    assert ids(search_sessions(conn, "database", cwds=["/p/two"])) == ["s2", "s3"]
    assert ids(search_sessions(conn, "database", session_ids=["s1", "s2"])) == ["s1", "s2"]
    assert ids(search_sessions(conn, "database", sources=["claude"])) == []
    assert ids(search_sessions(conn, "database", parents=[None])) == ["s1", "s2", "s3"]
    assert ids(search_sessions(conn, "database", created_from="2026-01-15T00:00:00Z")) == ["s2", "s3"]
    assert ids(search_sessions(conn, "migration", types=["assistant/message"])) == ["s1", "s2"]
    assert ids(search_sessions(conn, "migration", roles=["user"])) == ["s1", "s3"]
    page = search_sessions(conn, "migration", time_from=1767225660000, time_to=1767225660000)
    assert [(i["session"]["id"], i["best"]["uuid"]) for i in page["items"]] == [("s1", "a2")]
    assert ids(search_sessions(conn, "database", surfaces=["shadowed"])) == []
    assert code_of(lambda: search_sessions(conn, "x", surfaces=["gone"])) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: search_sessions(conn, "x", availability=["offline"])) == "SESSION_QUERY_INVALID_FILTER"
    assert code_of(lambda: search_sessions(conn, "x", time_from=5, time_to=1)) == "SESSION_QUERY_INVALID_FILTER"


def test_an_empty_list_matches_nothing(logs):
    lists = ("sources", "projects", "cwds", "session_ids", "parents", "availability", "types", "roles", "surfaces")
    for name in lists:
        assert ids(search_sessions(logs.conn(), "database", **{name: []})) == [], name


def test_meta_lines_are_searched_only_when_asked(logs):
    logs.sql("UPDATE messages SET is_meta = 1 WHERE uuid = 'c1'")
    write = logs.write_conn()
    from datasette_obelisk.store.session_index import rebuild_session_documents

    rebuild_session_documents(write)
    assert ids(search_sessions(logs.conn(), "database migration")) == ["s1"]
    assert ids(search_sessions(logs.conn(), "database migration", include_meta=True)) == ["s1", "s3"]


@pytest.mark.parametrize("limit", [0, 101, "5", True, 2.5])
def test_invalid_limits(logs, limit):
    assert code_of(lambda: search_sessions(logs.conn(), "database", limit=limit)) == "SESSION_QUERY_INVALID_LIMIT"
    assert code_of(lambda: search_events(logs.conn(), "s1", "database", limit=limit)) == "SESSION_QUERY_INVALID_LIMIT"


# -- cursors -------------------------------------------------------------------


@pytest.fixture
def many(toy):
    for n in range(7):
        toy.write(f"m{n}", line(f"m{n}a", f"alpha note {n}" + " pad" * n, f"2026-01-0{n + 1}T00:00:00Z"))
    toy.ingest()
    return toy


def all_pages(call, **options):
    pages, cursor = [], None
    while True:
        page = call(cursor=cursor, **options)
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return pages


def test_pages_concatenate_to_the_full_result(many):
    conn = many.conn()
    full = ids(search_sessions(conn, "alpha", limit=100))
    assert len(full) == 7
    pages = all_pages(lambda **o: search_sessions(conn, "alpha", **o), limit=3)
    assert [len(p["items"]) for p in pages] == [3, 3, 1]
    assert [i for p in pages for i in ids(p)] == full


def test_event_pages_concatenate(toy):
    toy.write("one", *[line(f"e{n}", f"beta {n}", f"2026-01-01T00:0{n}:00Z") for n in range(5)])
    toy.ingest()
    conn = toy.conn()
    full = [h["uuid"] for h in search_events(conn, "one", "beta")["items"]]
    pages = all_pages(lambda **o: search_events(conn, "one", "beta", **o), limit=2)
    assert [h["uuid"] for p in pages for h in p["items"]] == full
    assert len(full) == 5


def test_a_session_cursor_goes_on_while_logs_grow(many):
    """Page 2 carries on the ranking page 1 saw: lines added since (to a session
    ranked later, to one shown already, a new session) move or repeat nothing."""
    full = ids(search_sessions(many.conn(), "alpha", limit=100))
    assert full == ["m6", "m5", "m4", "m3", "m2", "m1", "m0"]
    first = search_sessions(many.conn(), "alpha", limit=3)
    assert ids(first) == ["m6", "m5", "m4"]
    many.write("m1", line("late1", "alpha", "2026-02-01T00:00:00Z"), append=True)  # would rank it first
    many.write("m6", line("late6", "alpha again", "2026-02-01T00:00:00Z"), append=True)
    many.write("new", line("new1", "alpha", "2026-02-02T00:00:00Z"))
    many.write("other", line("other1", "unrelated words", "2026-02-02T00:00:00Z"))
    many.ingest()
    now = ids(search_sessions(many.conn(), "alpha", limit=100))
    assert "m1" in now[:3] and "new" in now and len(now) == 8  # as it ranks now
    second = search_sessions(many.conn(), "alpha", limit=3, cursor=first["next_cursor"])
    assert ids(second) == ["m3", "m2", "m1"]
    assert [item["best"]["uuid"] for item in second["items"]] == ["m3a", "m2a", "m1a"]  # not the line added
    third = search_sessions(many.conn(), "alpha", limit=3, cursor=second["next_cursor"])
    assert (ids(third), third["next_cursor"]) == (["m0"], None)


def test_a_cursor_of_a_position_alone_is_stale_not_invalid(many):
    """Cursors from before snapshots held a position only: search again."""
    from query_fixtures import resigned

    first = search_sessions(many.conn(), "alpha", limit=3)
    assert code_of(lambda: search_sessions(many.conn(), "alpha", limit=3, cursor=resigned(many.conn(), first["next_cursor"], 3))) == (
        "SESSION_QUERY_STALE_CURSOR"
    )


def test_a_session_cursor_goes_stale_when_lines_are_rewritten(many):
    """A log read again (its rows deleted and stored anew, under new ids) is no growth."""
    first = search_sessions(many.conn(), "alpha", limit=3)
    many.sql("UPDATE source_files SET parser_version = NULL WHERE path LIKE '%m1.jsonl'")
    many.ingest()
    assert code_of(lambda: search_sessions(many.conn(), "alpha", limit=3, cursor=first["next_cursor"])) == (
        "SESSION_QUERY_STALE_CURSOR"
    )


@pytest.mark.parametrize("follow_changes", [False, True])
def test_session_pages_ranked_by_bags_list_the_first_page_s_result_while_sessions_grow(many, monkeypatch, follow_changes):
    """Ranked by the session bags (best bm25 first, as with many matches), a session's bag
    counts what was added to it: a session the first page ranked later that grows enough to
    rank among its sessions, and one it showed that grows and falls behind, are placed where
    the first page ranked them. The pages list exactly the first page's result, once each."""
    monkeypatch.setattr(search_module, "EXACT_MAX", 0)  # rank by the session bags
    search = functools.partial(search_sessions, query="alpha", limit=3, follow_changes=follow_changes)
    full = ids(search(many.conn(), limit=100))
    first = search(many.conn())
    assert ids(first) == full[:3] and len(full) == 7
    later, shown = full[-1], full[0]
    many.write(later, *[line(f"late{n}", "alpha alpha alpha", "2026-02-01T00:00:00Z") for n in range(5)], append=True)
    many.write(shown, *[line(f"pad{n}", "pad " * 400, "2026-02-01T00:00:00Z") for n in range(5)], append=True)
    many.write("new", line("new1", "alpha", "2026-02-02T00:00:00Z"))
    many.ingest()
    now = ids(search(many.conn(), limit=100))
    assert now.index(later) < 3 and now.index(shown) >= 3 and "new" in now  # as a new search ranks them
    second = search(many.conn(), cursor=first["next_cursor"])
    many.write(full[4], line("later4", "alpha alpha", "2026-02-03T00:00:00Z"), append=True)  # grows between pages 2 and 3
    many.ingest()
    third = search(many.conn(), cursor=second["next_cursor"])
    assert third["next_cursor"] is None
    assert sorted(ids(second) + ids(third)) == sorted(full[3:])
    assert [i["best"]["uuid"] for p in (second, third) for i in p["items"] if i["session"]["id"] == later] == [f"{later}a"]


def test_event_cursors_go_on_while_their_session_grows(toy):
    toy.write("one", *[line(f"e{n}", f"beta {n}", f"2026-01-01T00:0{n}:00Z") for n in range(5)])
    toy.write("other", line("o1", "beta elsewhere", "2026-01-02T00:00:00Z"))
    toy.ingest()
    full = [h["uuid"] for h in search_events(toy.conn(), "one", "beta")["items"]]
    first = search_events(toy.conn(), "one", "beta", limit=2)
    assert [h["uuid"] for h in first["items"]] == full[:2]
    toy.write("other", line("o2", "more beta", "2026-01-03T00:00:00Z"), append=True)
    toy.write("one", line("e9", "beta", "2026-01-04T00:00:00Z"), append=True)  # would rank first
    toy.ingest()
    assert [h["uuid"] for h in search_events(toy.conn(), "one", "beta", limit=1)["items"]] == ["e9"]
    second = search_events(toy.conn(), "one", "beta", limit=2, cursor=first["next_cursor"])
    third = search_events(toy.conn(), "one", "beta", limit=2, cursor=second["next_cursor"])
    assert [h["uuid"] for h in second["items"] + third["items"]] == full[2:]
    assert third["next_cursor"] is None
    toy.sql("UPDATE source_files SET parser_version = NULL WHERE path LIKE '%one.jsonl'")  # read again
    toy.ingest()
    assert code_of(lambda: search_events(toy.conn(), "one", "beta", limit=2, cursor=first["next_cursor"])) == (
        "SESSION_QUERY_STALE_CURSOR"
    )


def test_event_cursors_keep_the_weights_their_first_page_ranked_with(toy):
    """A query of several terms weighs each by how many sessions hold it
    (query/ranking.py): sessions added elsewhere can reorder this session's
    events; a page carried on in the new order would repeat one event and
    never show another, so later pages rank with the first page's weights."""
    toy.write("one", line("e1", "alpha alpha alpha beta", "2026-01-01T00:00:00Z"),
              line("e2", "beta beta beta alpha", "2026-01-01T00:01:00Z"))
    for n in range(3):
        toy.write(f"b{n}", line(f"b{n}", "beta words", "2026-01-02T00:00:00Z"))
    toy.ingest()
    first = search_events(toy.conn(), "one", "alpha beta", limit=1)
    assert [h["uuid"] for h in first["items"]] == ["e1"]
    for n in range(6):
        toy.write(f"a{n}", line(f"a{n}", "alpha words", "2026-01-03T00:00:00Z"))
    toy.ingest()
    assert [h["uuid"] for h in search_events(toy.conn(), "one", "alpha beta", limit=2)["items"]] == ["e2", "e1"]
    second = search_events(toy.conn(), "one", "alpha beta", limit=1, cursor=first["next_cursor"])
    assert ([h["uuid"] for h in second["items"]], second["next_cursor"]) == (["e2"], None)


def tampered(cursor: str, **changes) -> str:
    body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    body.update(changes)
    return base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")


def test_a_cursor_is_invalid_for_another_request_or_when_edited(many):
    conn = many.conn()
    cursor = search_sessions(conn, "alpha", limit=3)["next_cursor"]
    for call in (
        lambda: search_sessions(conn, "note", limit=3, cursor=cursor),
        lambda: search_sessions(conn, "alpha", limit=4, cursor=cursor),
        lambda: search_sessions(conn, "alpha", limit=3, cursor=cursor, cwds=["/x"]),
        lambda: search_sessions(conn, "alpha", limit=3, cursor=tampered(cursor, pos=1)),
        lambda: search_sessions(conn, "alpha", limit=3, cursor=cursor[:-2]),
        lambda: search_sessions(conn, "alpha", limit=3, cursor="not a cursor"),
        lambda: search_events(conn, "m1", "alpha", limit=3, cursor=cursor),
    ):
        assert code_of(call) == "SESSION_QUERY_INVALID_CURSOR"
    for position in (-1, 2**63, 2**62, 1.5, True, "3", [3], None):  # signed, but no position of ours
        forged = resigned(conn, cursor, position)
        assert code_of(lambda: search_sessions(conn, "alpha", limit=3, cursor=forged)) == "SESSION_QUERY_INVALID_CURSOR"
    assert len(search_sessions(conn, "alpha", limit=3, cursor=cursor)["items"]) == 3


# -- within one session --------------------------------------------------------


def test_event_search_returns_the_header_without_hits(logs):
    page = search_events(logs.conn(), "s2", "nothing matches this")
    assert page["items"] == [] and page["next_cursor"] is None
    assert page["session"]["id"] == "s2"


def test_event_search_ranks_within_the_session(logs):
    page = search_events(logs.conn(), "s1", "migration")
    assert [(h["uuid"], h["snippet"]["text"]) for h in page["items"]] == [
        ("a2", "I will fix the database migration now. The migration script was broken."),
        ("a1", "The database migration failed"),
    ]


def test_the_snippet_of_a_huge_text_is_around_its_match_however_far_in(toy):
    """A text too long for FTS5 to mark is read around the first place one of the
    terms occurs, not from its start: the snippet shows the match, as the contract
    says ("a plain text excerpt selected around the match")."""
    filler = "lorem ipsum dolor sit amet " * 40_000  # over a million characters
    toy.write("s", line("s1", "a short start", "2026-01-01T00:00:00Z"),
              line("s2", filler + "Quixotic ending here", "2026-01-01T00:01:00Z", role="assistant", type="assistant"))
    toy.ingest()
    conn = toy.conn()
    expected = {"text": "…" + filler[-220:] + "Quixotic ending here", "matches": [[221, 229], [230, 236]]}
    assert [hit["snippet"] for hit in search_events(conn, "s", "quixotic ending")["items"]] == [expected]
    assert [item["best"]["snippet"] for item in search_sessions(conn, "quixotic ending")["items"]] == [expected]
    start = search_events(conn, "s", "lorem")["items"][0]["snippet"]  # a match at the start: read from there
    assert start["text"].startswith("lorem ipsum") and start["matches"][0] == [0, 5]


def test_event_search_of_an_unknown_session(logs):
    assert code_of(lambda: search_events(logs.conn(), "nope", "x")) == "SESSION_QUERY_SESSION_NOT_FOUND"


def test_corpus_search_finds_claude_and_codex(read_conn):
    page = search_sessions(read_conn, "quicksort")
    assert ids(page) == ["claude_forked_session"]
    assert page["items"][0]["best"]["type"] in ("assistant/message", "tool/call", "user/message", "tool/result")


@pytest.mark.parametrize("query", ["the", "file error", "test", "src/"])
def test_generated_corpus_pages_hold_each_session_once_with_real_hits(generated_db, query):
    conn = connect(generated_db)
    pages = all_pages(lambda **o: search_sessions(conn, query, **o), limit=4)
    found = [i for p in pages for i in ids(p)]
    assert found and len(found) == len(set(found))
    assert found == ids(search_sessions(conn, query, limit=100))
    expression = parse_query(query).expression
    for page in pages:
        for item in page["items"]:
            assert len(item["hits"]) <= 3
            for hit in item["hits"]:
                assert hit["session_id"] == item["session"]["id"] and not hit["is_meta"]
                assert conn.execute(
                    "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ? AND rowid = ?", [expression, hit["id"]]
                ).fetchone()[0] == 1
    matching = {
        row[0] for row in conn.execute(
            "SELECT DISTINCT m.session_id FROM messages_fts f JOIN messages m ON m.id = f.rowid "
            "WHERE messages_fts MATCH ? AND m.is_meta = 0 AND m.visibility != 'hidden'", [expression],
        )
    }
    assert set(found) == matching


def test_few_matches_rank_sessions_by_their_strongest_event(generated_db):
    """The contract's ranking, exactly, whenever a query matches at most EXACT_MAX messages:
    sessions by their best event's score, and each best is the session's own top event."""
    conn = connect(generated_db)
    conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, messages_fts, row)")
    words = [w for (w,) in conn.execute(
        "SELECT term FROM temp.vocab WHERE doc BETWEEN 20 AND ? AND term GLOB '[a-z]*' "
        "ORDER BY doc DESC, term LIMIT 12", [search_module.EXACT_MAX],
    )]
    assert len(words) == 12
    for word in words:
        page = search_sessions(conn, word, limit=100)
        scores = [item["best"]["score"] for item in page["items"]]
        assert len(scores) > 1 and scores == sorted(scores, reverse=True), word
        assert [item["score"] for item in page["items"]] == scores
        for item in page["items"]:
            top = search_events(conn, item["session"]["id"], word, limit=1)["items"][0]
            assert (item["best"]["id"], item["best"]["score"]) == (top["id"], top["score"]), word


# -- the session index -----------------------------------------------------------


def documents(toy):
    conn = toy.conn()
    return {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT session_id, first_id, last_id, messages, chars, meta_messages, body_words, meta_words "
            "FROM session_docs ORDER BY session_id"
        )
    }


def test_session_documents_grow_incrementally_and_match_a_rebuild(toy):
    from datasette_obelisk.store.session_index import bag, count_words, rebuild_session_documents

    toy.write("g", line("g1", "Alpha beta, alpha!", "2026-01-01T00:00:00Z"))
    toy.ingest()
    assert json.loads(documents(toy)["g"][5]) == {"alpha": 2, "beta": 1}
    toy.write("g", line("g2", "beta gamma/δέλτα", "2026-01-01T00:01:00Z"), append=True)
    toy.ingest()
    grown = documents(toy)
    assert json.loads(grown["g"][5]) == {"alpha": 2, "beta": 2, "gamma": 1, "δέλτα": 1}
    assert grown["g"][:5] == (1, 2, 2, 34, 0)
    terms = ("alpha", "beta", "gamma", "δέλτα")
    matching = [toy.conn().execute("SELECT rowid, rank FROM session_docs_fts WHERE session_docs_fts MATCH ?", [t]).fetchall() for t in terms]
    write = toy.write_conn()
    rebuild_session_documents(write)
    assert documents(toy) == grown
    rebuilt = [toy.conn().execute("SELECT 1, rank FROM session_docs_fts WHERE session_docs_fts MATCH ?", [t]).fetchall() for t in terms]
    assert [[r[1] for r in m] for m in matching] == [[r[1] for r in m] for m in rebuilt]  # same bm25 as a fresh index
    assert count_words(["Foo_bar x.PY Émigré"]) == {"foo": 1, "bar": 1, "x": 1, "py": 1, "émigré": 1}
    assert sorted(bag({"a": 1, "b": 2, "c": 1000}).split()) == ["a", "b", "b"] + ["c"] * 8
    assert bag({"a": 1, "b": 2, "c": 1000, "d": 255, "e": 256}) == "a b c d e b" + " c" * 7 + " d" * 7 + " e" * 7


def test_session_documents_recount_when_rows_change(toy):
    toy.write("h", line("h1", "one two", "2026-01-01T00:00:00Z"), line("h2", "three", "2026-01-01T00:01:00Z"))
    toy.ingest()
    toy.write("h", line("h1", "four", "2026-01-01T00:00:00Z"))  # rewritten: the old file gone, its rows archived
    toy.ingest()
    assert json.loads(documents(toy)["h"][5]) == {"one": 1, "two": 1, "three": 1, "four": 1}
    assert ids(search_sessions(toy.conn(), "three")) == ["h"]
    bags = lambda word: toy.conn().execute(  # noqa: E731
        "SELECT COUNT(*) FROM session_docs_fts WHERE session_docs_fts MATCH ?", [word]
    ).fetchone()[0]
    assert [bags(word) for word in ("one", "two", "three", "four")] == [1, 1, 1, 1]  # one bag, the old one deleted
    (toy.root / "h.jsonl").unlink()
    toy.sql("DELETE FROM messages")
    from datasette_obelisk.store.session_index import update_session_documents

    assert update_session_documents(toy.write_conn(), ["h"]) == 1
    assert documents(toy) == {}


def test_a_session_read_again_with_the_same_words_keeps_its_indexed_bag(toy):
    from datasette_obelisk.store.session_index import rebuild_session_documents

    toy.write("k", line("k1", "kept words", "2026-01-01T00:00:00Z"), line("k2", "kept again", "2026-01-01T00:01:00Z"))
    toy.ingest()
    toy.write("z", line("z1", "other words", "2026-01-02T00:00:00Z"))
    toy.ingest()
    before = documents(toy)
    toy.sql("UPDATE source_files SET parser_version = NULL WHERE path LIKE '%/k.jsonl'")  # a newer parser
    toy.ingest()
    after = documents(toy)
    assert after["k"] == before["k"]  # (its rows, the same messages, under their ids: ``stable_ids``)
    assert after["z"] == before["z"]
    doc_id = toy.conn().execute("SELECT id FROM session_docs WHERE session_id = 'k'").fetchone()[0]
    assert toy.conn().execute("SELECT rowid FROM session_docs_fts WHERE session_docs_fts MATCH 'kept'").fetchall() == [
        (doc_id,)]
    assert ids(search_sessions(toy.conn(), "kept")) == ["k"]
    rebuild_session_documents(toy.write_conn())
    assert documents(toy) == after


def test_a_line_appended_to_a_long_session_updates_its_document_without_reading_every_row(toy, monkeypatch):
    """The document's counts grow by the rows appended: whether the rows it counted are
    still those is asked of the index (the rows after it, its first and last id), not by
    adding up the session's rows again up to its last id (a live 300,000-line session
    did that on every line appended)."""
    from datasette_obelisk.store import session_index
    from datasette_obelisk.store.session_index import rebuild_session_documents, session_stats, stats_up_to

    toy.write("long", *[line(f"l{n}", f"long words {n % 7}", "2026-01-01T00:00:00Z") for n in range(300)])
    toy.ingest()
    read_up_to = []
    real = session_index.session_stats
    monkeypatch.setattr(session_index, "session_stats",
                        lambda conn, sid, up_to=None: read_up_to.append(up_to) or real(conn, sid, up_to))
    toy.write("long", line("l300", "long words appended", "2026-01-01T00:01:00Z"), append=True)
    toy.ingest()
    assert read_up_to == []  # (nothing summed up to the old last id)
    grown = documents(toy)
    assert grown["long"][2] == 301 and "appended" in grown["long"][5]
    rebuild_session_documents(toy.write_conn())
    assert documents(toy) == grown
    conn = toy.conn()
    stats = session_stats(conn, "long")
    for up_to in (0, stats[0], stats[0] + 150, stats[1] - 1, stats[1], stats[1] + 5):
        assert stats_up_to(conn, "long", stats, up_to) == session_stats(conn, "long", up_to)
    steps = []
    conn.set_progress_handler(lambda: steps.append(1), 10)
    stats_up_to(conn, "long", stats, stats[1] - 1)
    by_index = len(steps)
    steps.clear()
    session_stats(conn, "long", stats[1] - 1)
    assert by_index * 10 < len(steps)  # a few index entries, not every row


def test_facet_counts_are_kept_until_the_generation_changes(toy):
    """The next page of a search reuses its facet counts; an ingest that changes data recounts."""
    from datasette_obelisk.query.search_facets import facet_counts
    from datasette_obelisk.web.table_reads import TableReads

    toy.write("f1", line("f1a", "kept facet words", "2026-01-01T00:00:00Z"))
    toy.ingest()
    conn = toy.conn()
    statements = []
    conn.set_trace_callback(statements.append)

    def counting() -> tuple[dict, int, set]:
        statements.clear()
        reads = TableReads()
        counts = reads.recording(lambda c: facet_counts(c, "facet"))(conn)
        return counts, len([s for s in statements if "messages_fts MATCH" in s]), reads.tables

    first, ran, read = counting()
    assert first["facets"]["source"] == [{"value": "toy", "count": 1}] and ran == 1
    assert {"messages", "sessions", "tool_calls", "tool_results"} <= read
    first["facets"]["source"].clear()  # the caller's copy: the kept counts stay whole
    again, ran, read_again = counting()
    assert again["facets"]["source"] == [{"value": "toy", "count": 1}] and ran == 0
    # Prepared, not run: whoever records reads still sees every table (FTS5's own tables stand for their index).
    assert read_again == {table for table in read if "_fts_" not in table}
    toy.write("f2", line("f2a", "another facet", "2026-01-02T00:00:00Z"))
    toy.ingest()
    grown, ran, _ = counting()
    assert grown["facets"]["source"] == [{"value": "toy", "count": 2}] and ran == 1


def test_facet_counts_read_each_sessions_combinations_once(toy, monkeypatch):
    """Matches that share every facet value come back as one row with their number."""
    from datasette_obelisk.query import search_facets

    toy.write("g1", *[line(f"g1-{n}", "grouped words", "2026-01-01T00:00:00Z") for n in range(5)],
              line("g1-tool", "grouped call", "2026-01-01T00:01:00Z", tool="Bash"))
    toy.write("g2", line("g2-1", "grouped too", "2026-01-02T00:00:00Z", role="assistant"))
    toy.ingest()
    conn = toy.conn()
    statements = []
    conn.set_trace_callback(statements.append)
    counts = search_facets.facet_counts(conn, "grouped")
    [counting] = [s for s in statements if "messages_fts MATCH" in s]
    # (session, combination, matches): g1's five plain lines are one row; its tool line and g2's answer one each.
    assert sorted((row[0], row[-1]) for row in conn.execute(counting)) == [("g1", 1), ("g1", 5), ("g2", 1)]
    assert counts["facets"]["role"] == [{"value": "assistant", "count": 1}, {"value": "user", "count": 1}]
    assert counts["facets"]["tool"] == [{"value": "Bash", "count": 1}] and counts["sampled"] is False
    monkeypatch.setattr(search_facets, "HIT_SAMPLE", 6)  # the first six matches: g1's
    sampled = search_facets.facet_counts(conn, "grouped")
    assert sampled["sampled"] is True and sampled["facets"]["role"] == [{"value": "user", "count": 1}]



@pytest.mark.parametrize("chosen, name", [({"narrowing": {"branch": ["main"]}}, "branch"),
                                          ({"narrowing": {"tool": ["Bash"]}}, "tool"),
                                          ({"sources": ["toy"]}, "source"),
                                          ({"time_from": "2026-01-01T00:00:00.000Z"}, "day")])
def test_a_chosen_facet_is_counted_again_for_its_own_values_alone(toy, chosen, name):
    """A facet with a choice is recounted without it (to list its other values): that
    second pass groups by that facet's value alone, not by every facet's (the tool
    one a lookup per match), which the first pass has counted already."""
    from datasette_obelisk.query import search_facets

    toy.write("c1", line("c1a", "chosen words", "2026-01-01T00:00:00Z"),
              line("c1b", "chosen call", "2026-01-01T00:01:00Z", tool="Bash"))
    toy.ingest()
    conn = toy.conn()
    statements = []
    conn.set_trace_callback(statements.append)
    search_facets._kept.clear()
    result = search_facets.faceted_search(conn, "chosen", **chosen)
    grouped = [s.split("GROUP BY session_id, ")[1].split(", ") for s in statements
               if "messages_fts MATCH" in s and "GROUP BY session_id, " in s]
    assert sorted(grouped, key=len) == [[name], list(search_facets.FACETS)]
    if name != "branch":  # (the toy's lines name none: that choice keeps no match)
        assert result["facets"][name] and result["facets"]["role"]  # its own values; the others', from the first pass


def test_log_text_holding_the_match_marks_cannot_forge_a_match(toy):
    forged = "\ufdd0<b>forged</b>\ufdd1 findme"
    toy.write("s1", line("a1", forged, "2026-01-01T00:00:00Z"))
    toy.ingest()
    best = search_sessions(toy.conn(), "findme")["items"][0]["best"]
    assert best["snippet"] == {"text": "\ufffd<b>forged</b>\ufffd findme", "matches": [[16, 22]]}
    assert search_events(toy.conn(), "s1", "findme")["items"][0]["snippet"] == best["snippet"]


def test_event_search_of_a_session_whose_document_is_not_written_yet(logs):
    """Messages are searchable once committed; the session's document comes when it is derived."""
    scored = search_events(logs.conn(), "s1", "database")["items"]
    logs.sql("DELETE FROM session_docs WHERE session_id = 's1'")
    items = search_events(logs.conn(), "s1", "database")["items"]
    assert [(i["uuid"], i["score"]) for i in items] == [(i["uuid"], i["score"]) for i in scored]


@pytest.mark.parametrize("expression,merges", [
    ("t*", True), ('"run the"*', True), ("NEAR(file* read)", True), ('"a*b"', False), ('"say ""hi*"""', False),
    ('"a*b" OR c*', True), ("plain words", False),
])
def test_a_star_inside_quotes_is_no_prefix(expression, merges):
    assert search_module.merges_prefixes(expression) is merges


def test_a_facet_count_stopped_by_its_own_time_leaves_the_request_s_deadline_in_place(toy, monkeypatch):
    """A count past its ``until`` is uncounted, and the connection's deadline holds again
    after it; a count past the request's own deadline stops the request."""
    import sqlite3
    import time

    from datasette_obelisk.query import readonly, search_facets

    toy.write("f1", line("f1a", "stopped facet words", "2026-01-01T00:00:00Z"))
    toy.ingest()
    conn = toy.conn()
    monkeypatch.setattr(readonly, "PROGRESS_STEPS", 1)
    search_facets._kept.clear()
    readonly.set_deadline(conn, 60)
    try:
        stopped = search_facets.facet_counts(conn, "facet", until=time.monotonic() - 1)
        assert stopped["uncounted"] == list(search_facets.FACETS) and stopped["facets"]["source"] == []
        assert search_facets.facet_counts(conn, "facet", until=time.monotonic() + 60)["uncounted"] == []
        readonly.set_deadline(conn, -1)
        search_facets._kept.clear()
        with pytest.raises(sqlite3.OperationalError):
            search_facets.facet_counts(conn, "facet", until=time.monotonic() - 1)
    finally:
        readonly.set_deadline(conn, None)


def test_word_counts_are_each_word_lower_cased_alone_however_texts_are_grouped():
    """Short texts are counted together and every word lower-cased in one call: the
    counts are those of each word decoded and lower-cased by itself (Greek final
    sigma, words that fold into one, a lone surrogate, texts past a slice)."""
    from collections import Counter

    from datasette_obelisk.store.session_index import _FOLD, SHORT_TEXT, SLICE_BYTES, count_words

    def each_word(texts):
        counts = Counter()
        for text in texts:
            for word in text.encode("utf-8", "replace").translate(_FOLD).split():
                counts[word.decode("utf-8").lower()] += 1
        return counts

    texts = [
        "ΟΔΟΣ ΣΑΣ Σ ΑΣ.ΒΣ", "Émigré émigré ÉMIGRÉ", "İstanbul ISTANBUL", "x\ud800y Straße STRASSE",
        "ǅungla ǄUNGLA ǆungla", "漢字テキスト 😀x", "",
        "Alpha " * (SHORT_TEXT // 6 + 1), "ΣΟΦΟΣ beta " * (SLICE_BYTES // 10), "tail ΌΡΟΣ",
    ] + ["word%d ΛΟΓΟΣ" % (i % 50) for i in range(SLICE_BYTES // 40)]
    counted = count_words(texts)
    assert counted == each_word(texts)
    assert counted["σας"] == 1 and counted["σ"] == 1 and counted["οδος"] == 1 and counted["émigré"] == 3
    assert counted["λογος"] == SLICE_BYTES // 40 and counted["σοφος"] == SLICE_BYTES // 10
    assert count_words([]) == {} and count_words(["", " .,"]) == {}
