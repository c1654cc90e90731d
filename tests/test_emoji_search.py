"""Emoji are words: found alone, in a phrase, whatever their variation selector."""

import json
import sqlite3

import pytest
import sqlite_utils
from click.testing import CliRunner

from datasette_obelisk import cjk, emoji
from datasette_obelisk.cli import cli
from datasette_obelisk.query import obelisk
from datasette_obelisk.query.fts import match_documents, parse_query, tokens, words
from datasette_obelisk.query.history import history_search
from datasette_obelisk.query.memories import remember
from datasette_obelisk.query.search import search_sessions
from datasette_obelisk.store import redacting, session_index
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.store.migrations import migrations
from datasette_obelisk.web.sql_functions import fts_expression, snippet_text
from query_fixtures import line, toy  # noqa: F401
from web_fixtures import make_datasette

SEP = cjk.SEPARATOR
FAMILY = "👨\u200d👩\u200d👧"


def coded(char: str) -> str:
    return SEP + emoji.encode(char) + SEP


@pytest.fixture
def logs(toy):
    toy.write(
        "ship",
        line("s1", "✅ passed: 12 tests, 🚀 deployed", "2026-01-01T00:00:00Z", cwd="/w/ship"),
        line("s2", "build ❌ failed", "2026-01-01T00:01:00Z", role="assistant", type="assistant",
             tool="Bash", output="❌ error: no such file", outcome="failed"),
    )
    toy.write(
        "people",
        line("f1", f"the {FAMILY} emoji", "2026-01-02T00:00:00Z", cwd="/w/people"),
        line("f2", "👍🏽 looks good", "2026-01-02T00:01:00Z"),
        line("f3", "❤\ufe0f thanks", "2026-01-02T00:02:00Z"),
    )
    toy.write(
        "plain",
        line("p1", "tests passed without a mark", "2026-01-03T00:00:00Z", cwd="/w/plain"),
        line("p2", "passed ✅\ufe0f at last", "2026-01-03T00:01:00Z"),
        line("p3", "x🤖y wrote it, ❤ plain", "2026-01-03T00:02:00Z"),
    )
    toy.ingest()
    return toy


def found(conn, text, **options):
    return [hit["message"]["uuid"] for hit in obelisk.search(conn, text, options)]


def test_each_emoji_is_set_apart_as_a_character_unicode61_keeps():
    assert cjk.search_text("✅ done") == coded("✅") + " done"
    assert cjk.search_text("✅\ufe0f done") == coded("✅") + "\ufe0f done"  # (FE0F: a separator, kept)
    assert cjk.search_text("x🤖y") == "x" + coded("🤖") + "y"
    assert cjk.search_text("👍🏽") == coded("👍") + coded("🏽")
    assert cjk.search_text(FAMILY) == coded("👨") + "\u200d" + coded("👩") + "\u200d" + coded("👧")
    assert cjk.search_text("🇺🇸🇫🇷") == coded("🇺🇸") + coded("🇫🇷")  # (a flag is one word)
    assert cjk.search_text("数✅") == f"{SEP}数{SEP}" + coded("✅")
    assert cjk.search_text("1\ufe0f\u20e3 → café") is None  # (a keycap is its digit; → is punctuation)
    assert [ord(c) for c in emoji.encode("✅🚀")] == [0x10B000 + 0x2705, 0x10F000 + 0x680]
    for text in ["✅\ufe0f 数据 " + FAMILY, "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f!", "©2026 ™"]:
        assert cjk.unsplit(cjk.split(text)) == text
        assert cjk.before_emoji(cjk.split(text)) == text.replace("数据", f"{SEP}数{SEP}据{SEP}")


def test_an_emoji_is_a_word_of_the_query():
    assert words("deploy🚀done ✅\ufe0f") == ["deploy", "🚀", "done", "✅"]
    assert tokens(f"{FAMILY} 👍🏽 x🤖y") == ["👨", "👩", "👧", "👍", "🏽", "x", "🤖", "y"]
    query = parse_query("✅ passed", prefix=True)
    assert query.expression == f'"{coded("✅")}" AND "passed"*'
    assert query.terms == ("✅", "passed") and query.words == ("✅", "passed")
    ends_emoji = parse_query("passed ✅", prefix=True)  # an emoji is a whole word: no prefix
    assert ends_emoji.expression == f'"passed" AND "{coded("✅")}"' and ends_emoji.prefix_term is None
    assert parse_query('"✅ passed"').expression == f'"{coded("✅")} passed"'
    assert parse_query("✅\ufe0f").terms == parse_query("✅").terms == ("✅",)
    assert parse_query("🚀 !!").expression == f'"{coded("🚀")}"'
    assert parse_query("-> !! …").matches_nothing  # punctuation alone: nothing the index keeps
    assert fts_expression("-> …") == '""' and fts_expression("✅") == f'"{coded("✅")}"'
    assert parse_query("✅ OR 🚀", "raw").expression == f"{coded('✅')} OR {coded('🚀')}"


def test_the_helpers_find_exactly_the_messages_holding_an_emoji(logs):
    conn = logs.conn()
    assert found(conn, "✅") == ["p2", "s1"]  # newest first; with and without FE0F
    assert found(conn, "✅\ufe0f") == ["p2", "s1"]
    assert found(conn, "🚀") == ["s1"]
    assert found(conn, "❌") == ["s2"]
    assert found(conn, "❤") == ["f3", "p3"]  # (best first: the shorter text)
    assert found(conn, "❤\ufe0f") == ["f3", "p3"]
    assert found(conn, "🤖") == ["p3"]
    assert found(conn, "✅ passed") == ["p2", "s1"]  # every term, anywhere
    assert found(conn, '"✅ passed"') == ["s1"]  # the phrase, in order
    assert found(conn, "passed ✅", mode="phrase") == ["p2"]
    assert found(conn, "passed") == ["p2", "p1", "s1"]  # (the emoji widens nothing: p1 has none)
    assert found(conn, FAMILY) == ["f1"]
    assert found(conn, "👩") == ["f1"]  # (a pictograph of the sequence)
    assert found(conn, "👍") == ["f2"] and found(conn, "👍🏽") == ["f2"] and found(conn, "👍🏿") == []
    assert found(conn, "✅ 🚀 deployed") == ["s1"]


def test_grouped_search_marks_the_emoji_itself(logs):
    conn = logs.conn()
    page = search_sessions(conn, "✅")
    assert [item["session"]["id"] for item in page["items"]] == ["plain", "ship"]
    snippets = {hit["uuid"]: hit["snippet"] for item in page["items"] for hit in item["hits"]}
    assert snippets == {
        "s1": {"text": "✅ passed: 12 tests, 🚀 deployed", "matches": [[0, 1]]},
        "p2": {"text": "passed ✅\ufe0f at last", "matches": [[7, 8]]},
    }
    [item] = search_sessions(conn, FAMILY)["items"]
    [hit] = item["hits"]
    assert hit["snippet"] == {"text": f"the {FAMILY} emoji", "matches": [[4, 9]]}
    [item] = search_sessions(conn, "👍🏽")["items"]
    assert item["hits"][0]["snippet"] == {"text": "👍🏽 looks good", "matches": [[0, 2]]}


def test_history_search_finds_and_marks_emoji(logs):
    page = history_search(logs.conn(), {"query": "🚀"})
    assert [s["sessionId"] for s in page["sessions"]] == ["ship"]
    [marked] = match_documents(parse_query("🚀").expression, [("✅ ok, 🚀 deployed", "")], ["🚀"])
    assert marked == (0, ("✅ ok, \ufdd0🚀\ufdd1 deployed", ""))
    assert [s["sessionId"] for s in history_search(logs.conn(), {"query": "❤\ufe0f"})["sessions"]] == ["people", "plain"]


def test_the_snippet_function_centres_on_the_emoji():
    text = "lorem ipsum " * 100 + "then 🚀 shipped"
    assert snippet_text(text, "🚀", 40).endswith("then 🚀 shipped")
    assert snippet_text("go🚀now", "🚀", 40) == "go🚀now"


def test_failed_tool_output_is_searched_for_emoji(logs):
    conn = logs.conn()
    for query in ("❌", "❌ error", '"❌ error"'):
        assert conn.execute("SELECT rowid FROM tool_errors_fts WHERE tool_errors_fts MATCH ?",
                            [parse_query(query).expression]).fetchall() == [(1,)]
    assert conn.execute("SELECT rowid FROM tool_errors_fts WHERE tool_errors_fts MATCH ?",
                        [parse_query('"error ❌"').expression]).fetchall() == []


def test_the_cli_finds_emoji(logs):
    result = CliRunner().invoke(cli, ["search", "✅", "--db", str(logs.db), "--json"])
    assert result.exit_code == 0, result.output
    assert [hit["message"]["uuid"] for hit in json.loads(result.output)] == ["p2", "s1"]


async def served(db):
    ds = make_datasette(db)
    await ds.invoke_startup()
    return ds


@pytest.mark.asyncio
async def test_the_json_endpoints_find_emoji(logs):
    ds = await served(logs.db)
    response = await ds.client.get("/-/obelisk/api/search", params={"q": "🚀"})
    assert response.status_code == 200
    assert [hit["message"]["uuid"] for hit in response.json()] == ["s1"]
    response = await ds.client.get("/-/obelisk/api/session-query/sessions/search", params={"query": '"✅ passed"'})
    assert response.status_code == 200
    [item] = response.json()["items"]
    assert item["header"]["id"] == "ship"
    assert item["bestMatch"]["snippet"].startswith("✅ passed")
    response = await ds.client.get(f"/{logs.db.stem}/browse_messages.json",
                                   params={"_search": "❌", "_shape": "array", "_col": "uuid"})
    assert [row["uuid"] for row in response.json()] == ["s2"]


@pytest.mark.asyncio
async def test_the_search_page_marks_the_emoji_as_written(logs):
    html = (await (await served(logs.db)).client.get("/-/obelisk", params={"q": "✅ passed"})).text
    assert "<mark>✅</mark> <mark>passed</mark>: 12 tests, 🚀 deployed" in html
    assert "<mark>passed</mark> <mark>✅</mark>\ufe0f at last" in html
    assert "\ufffe" not in html and "\U0010d705" not in html and "No session can match" not in html


def older_database(tmp_path) -> tuple:
    """A database as the version before m058 made it: its path, and a connection to write to it."""
    path = tmp_path / "old.db"
    migrations.apply(sqlite_utils.Database(path), stop_before="m058_index_emoji_apart")
    return path, sqlite3.connect(path, isolation_level=None)


def test_an_older_database_indexes_its_emoji_apart(tmp_path, monkeypatch):
    path, conn = older_database(tmp_path)
    rows = [("u1", "✅ done"), ("u2", "数据✅"), ("u3", "x🤖y wrote"), ("u4", "plain café"), ("u5", "ascii")]
    for seq, (uuid, text) in enumerate(rows, 1):
        old = f"{SEP}数{SEP}据{SEP}✅" if uuid == "u2" else None  # (as the version before wrote it: CJK only)
        conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, text, search_text, file_id, line_no, "
                     "byte_offset, byte_length) VALUES (?, 's', ?, 'x', 'user', ?, ?, 1, ?, 0, 1)",
                     [uuid, seq, text, old, seq])
    conn.execute("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, content_length, "
                 "is_error, outcome, file_id) VALUES ('t1', 'u1', 's', '❌ boom', 6, 1, 'failed', 1)")
    conn.execute("INSERT INTO prompt_log (source, session_id, text) VALUES ('codex', 's', '🚀 ship it')")
    split = cjk.split
    monkeypatch.setattr(cjk, "split", lambda text: cjk.before_emoji(split(text)))  # the bags as written before
    session_index.update_session_documents(conn, ["s"])
    monkeypatch.undo()
    assert conn.execute("SELECT search_text FROM messages ORDER BY id").fetchall() == [
        (None,), (f"{SEP}数{SEP}据{SEP}✅",), (None,), (None,), (None,)]
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH '\"x🤖y\"'").fetchall() == [(3,)]
    conn.close()

    conn = open_db(path)
    assert conn.execute("SELECT search_text FROM messages ORDER BY id").fetchall() == [
        (coded("✅") + " done",), (f"{SEP}数{SEP}据{SEP}" + coded("✅"),), ("x" + coded("🤖") + "y wrote",),
        (None,), (None,)]
    assert conn.execute("SELECT search_content FROM tool_results").fetchall() == [(coded("❌") + " boom",)]
    assert conn.execute("SELECT search_text FROM prompt_log").fetchall() == [(coded("🚀") + " ship it",)]
    for table, query, rowids in [("messages_fts", "✅", [1, 2]), ("tool_errors_fts", "❌", [1]),
                                 ("prompt_log_fts", "🚀", [1]), ("session_docs_fts", "🤖", [1])]:
        expression = parse_query(query).expression
        assert [r for (r,) in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", [expression])] == rowids
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
    for table in ("messages_fts", "session_docs_fts"):  # the old tokens are gone
        assert conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH '\"x🤖y\"'").fetchall() == []
    assert conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'wrote'").fetchone() == (1,)
    assert found(conn, "✅") == ["u1", "u2"]
    assert found(conn, "数据") == ["u2"] and found(conn, "café") == ["u4"]


BOT = "11111111-1111-4111-8111-111111111111"


def claude_log(tmp_path, *extra: dict):
    """A Claude Code home with one session of a prompt, a reply and ``extra`` lines."""
    project = tmp_path / "claude" / "projects" / "-w-bot"
    project.mkdir(parents=True, exist_ok=True)
    at = {"sessionId": BOT, "cwd": "/w/bot"}
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z", **at,
         "message": {"role": "user", "content": "write the release notes"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-01T00:01:00Z", **at,
         "message": {"role": "assistant", "model": "claude", "content": [{"type": "text", "text": "done"}]}},
        *extra,
    ]
    (project / f"{BOT}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path / "claude"


def digest_found(conn, query: str) -> list[str]:
    return [s["sessionId"] for s in history_search(conn, {"query": query})["sessions"] if "digest" in s]


def test_a_title_and_a_summary_are_found_by_their_emoji_and_cjk_words(tmp_path):
    home = claude_log(
        tmp_path,
        {"type": "custom-title", "customTitle": "🤖 release bot 数据库", "sessionId": BOT},
        {"type": "system", "subtype": "away_summary", "uuid": "s1", "parentUuid": "a1", "sessionId": BOT,
         "timestamp": "2026-01-01T00:02:00Z", "content": "Shipped it ✅ at last"},
    )
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": home})
    conn = open_db(db)
    for query in ("🤖", "✅", "✅\ufe0f", "数据", '"🤖 release"', "shipped ✅ bot"):
        assert digest_found(conn, query) == [BOT], query
    for query in ("🚀", "🤖 launch", "数据库迁移"):
        assert digest_found(conn, query) == [], query
    [found_session] = history_search(conn, {"query": "🤖"})["sessions"]
    assert found_session["digest"]["title"] == "🤖 release bot 数据库"  # (as written)
    assert found_session["digest"]["summary"] == "Shipped it ✅ at last"
    assert conn.execute("SELECT search_title, search_summary FROM session_digests").fetchall() == [
        (coded("🤖") + f" release bot {SEP}数{SEP}据{SEP}库{SEP}", "Shipped it " + coded("✅") + " at last")]

    # renamed by the log: derivation writes the new form; renamed by hand: the form is cleared
    with open(home / "projects" / "-w-bot" / f"{BOT}.jsonl", "a") as log:
        log.write(json.dumps({"type": "custom-title", "customTitle": "🚀 launch", "sessionId": BOT}) + "\n")
    ingest(db, {"claude": home})
    assert digest_found(conn, "🚀") == [BOT] and digest_found(conn, "🤖") == []
    conn.execute("UPDATE sessions SET title = 'plain words'")
    assert conn.execute("SELECT title, search_title, search_summary IS NOT NULL FROM session_digests").fetchall() == [
        ("plain words", None, 1)]
    assert digest_found(conn, "words") == [BOT] and digest_found(conn, "🚀") == [] and digest_found(conn, "✅") == [BOT]
    conn.execute("INSERT INTO session_digests_fts (session_digests_fts, rank) VALUES ('integrity-check', 1)")


def test_a_memory_is_found_by_its_emoji(tmp_path, toy):
    toy.write("m", line("m1", "hello", "2026-01-01T00:00:00Z", cwd="/w/m"))
    toy.ingest()
    root = tmp_path / "notes"
    root.mkdir()
    for name in ("ci.md", "plain.md"):
        (root / name).write_text("# notes\n")
    conn = toy.write_conn()
    passed = remember(conn, {"path": str(root / "ci.md"), "summary": "CI is green ✅ on main"}, memory_roots=[root])
    remember(conn, {"path": str(root / "plain.md"), "summary": "CI is green on main"}, memory_roots=[root])
    [row] = obelisk.memories(conn, query="✅")
    assert row["id"] == passed["id"] and row["summary"] == "CI is green ✅ on main"
    assert [r["id"] for r in obelisk.memories(conn, query="✅\ufe0f green")] == [passed["id"]]
    assert len(obelisk.memories(conn, query="green")) == 2 and obelisk.memories(conn, query="🚀") == []
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")


def test_an_older_database_indexes_titles_summaries_and_memories_apart(tmp_path):
    path = tmp_path / "old.db"
    migrations.apply(sqlite_utils.Database(path), stop_before="m059_index_digests_and_memories_apart")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("INSERT INTO sessions (id, source, title) VALUES ('s1', 'x', '🤖 bot notes'), "
                 "('s2', 'x', '数据库 plan'), ('s3', 'x', 'plain title')")
    conn.execute("INSERT INTO summaries (id, session_id, timestamp, source, content, file_id) "
                 "VALUES ('sum1', 's3', '2026-01-01T00:00:00Z', 'away_summary', 'all ✅ done', 1)")
    conn.execute("INSERT INTO memories (id, path, summary, created_at) VALUES "
                 "('mem1', '/n/a.md', 'CI ✅ green', '2026-01-01T00:00:00.000Z'), "
                 "('mem2', '/n/b.md', 'CI green', '2026-01-01T00:00:00.000Z')")
    assert conn.execute("SELECT rowid FROM session_digests_fts WHERE session_digests_fts MATCH '\"🤖\"'").fetchall() == [
        (1,)]  # (unicode61 read 🤖 as a letter: the raw text)
    conn.close()

    conn = open_db(path)
    assert conn.execute("SELECT session_id, search_title, search_summary FROM session_digests ORDER BY id").fetchall() == [
        ("s1", coded("🤖") + " bot notes", None), ("s2", f"{SEP}数{SEP}据{SEP}库{SEP} plan", None),
        ("s3", None, "all " + coded("✅") + " done")]
    assert conn.execute("SELECT id, search_summary FROM memories ORDER BY pk").fetchall() == [
        ("mem1", "CI " + coded("✅") + " green"), ("mem2", None)]
    for table, query, rowids in [("session_digests_fts", "🤖", [1]), ("session_digests_fts", "数据", [2]),
                                 ("session_digests_fts", "✅", [3]), ("session_digests_fts", "plan", [2]),
                                 ("memories_fts", "✅", [1]), ("memories_fts", "green", [1, 2])]:
        expression = parse_query(query).expression
        assert [r for (r,) in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid",
                                           [expression])] == rowids, (table, query)
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
    assert conn.execute("SELECT rowid FROM session_digests_fts WHERE session_digests_fts MATCH '\"🤖\"'").fetchall() == []
    assert [m["id"] for m in obelisk.memories(conn, query="✅")] == ["mem1"]
    assert digest_found(conn, "🤖") == ["s1"] and digest_found(conn, "数据") == ["s2"]


class Hiding:
    """A redactor hiding one word."""

    def redact(self, text: str) -> str:
        return text.replace("hunter2", "[hidden]")


def test_a_title_redacted_in_place_is_searched_by_its_emoji_again(tmp_path):
    home = claude_log(tmp_path, {"type": "custom-title", "customTitle": "🤖 hunter2 数据", "sessionId": BOT})
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": home})
    conn = open_db(db)
    assert redacting.redact_stored_rows(conn, Hiding()) == 2  # (the title and its candidate)
    assert conn.execute("SELECT title, search_title FROM session_digests").fetchall() == [
        ("🤖 [hidden] 数据", coded("🤖") + f" [hidden] {SEP}数{SEP}据{SEP}")]
    assert digest_found(conn, "🤖") == [BOT] and digest_found(conn, "数据 hidden") == [BOT]
    assert digest_found(conn, "hunter2") == []
    conn.execute("INSERT INTO session_digests_fts (session_digests_fts, rank) VALUES ('integrity-check', 1)")
