"""Words inside Chinese, Japanese and Korean text are found, wherever one is searched."""

import json
import sqlite3

import pytest
import sqlite_utils
from click.testing import CliRunner

from datasette_obelisk import cjk
from datasette_obelisk.cli import cli
from datasette_obelisk.query import obelisk
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.fts import parse_query, tokens
from datasette_obelisk.query.history import history_search
from datasette_obelisk.query.search import search_sessions
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.migrations import migrations
from datasette_obelisk.store.redaction import Redactor
from datasette_obelisk.store.redacting import redact_stored_rows
from datasette_obelisk.store.session_index import update_session_documents
from query_fixtures import line, toy  # noqa: F401
from web_fixtures import make_datasette

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def logs(toy):
    toy.write(
        "zh",
        line("z1", "数据库迁移失败了，请检查日志", "2026-01-01T00:00:00Z", cwd="/w/zh"),
        line("z2", "我来运行迁移脚本", "2026-01-01T00:01:00Z", role="assistant", type="assistant",
             tool="Bash", output="错误：无法连接数据库服务器", outcome="failed"),
    )
    toy.write("ja", line("j1", "日本語のテキストを検索したい", "2026-01-02T00:00:00Z", cwd="/w/ja"))
    toy.write("ko", line("k1", "데이터베이스 마이그레이션을 확인하겠습니다", "2026-01-03T00:00:00Z", cwd="/w/ko"))
    toy.write("mixed", line("m1", "Python数据分析 with pandas", "2026-01-04T00:00:00Z", cwd="/w/en"))
    toy.ingest()
    return toy


def found(conn, text, **options):
    return [hit["message"]["uuid"] for hit in obelisk.search(conn, text, options)]


def test_split_sets_each_cjk_character_apart():
    assert cjk.split("ab数据c") == "ab\ufffe数\ufffe据\ufffec"
    assert cjk.search_text("plain ascii") is None
    assert cjk.search_text("café") is None
    assert cjk.search_text("テスト") == "\ufffeテ\ufffeス\ufffeト\ufffe"
    assert cjk.unsplit(cjk.split("数据 and 데이터")) == "数据 and 데이터"
    assert tokens("Python数据 마이") == ["python", "数", "据", "마", "이"]


def test_a_cjk_word_is_the_phrase_of_its_characters():
    # (as written too: the digests and memories read CJK text so)
    query = parse_query("迁移 failed", prefix=True)
    assert query.expression == '("迁移" OR "\ufffe迁\ufffe移\ufffe") AND "failed"*'
    assert query.candidates == '("迁移" OR "\ufffe迁\ufffe移\ufffe") AND "failed"*'
    assert query.words == ("迁移", "failed")
    ends_cjk = parse_query("failed 迁移", prefix=True)  # a CJK character is a whole word: no prefix
    assert ends_cjk.expression == '"failed" AND ("迁移" OR "\ufffe迁\ufffe移\ufffe")'
    assert ends_cjk.prefix_term is None
    mixed = parse_query("pandas数据", prefix=True)
    assert mixed.expression == '("pandas数据" OR "pandas\ufffe数\ufffe据\ufffe")'
    assert parse_query("数据python", prefix=True).expression == '("数据python"* OR "\ufffe数\ufffe据\ufffepython"*)'
    with pytest.raises(QueryError) as refused:
        parse_query("数据 AND", "raw")
    assert refused.value.message.startswith("invalid FTS5 query '数据 AND': ") and "\ufffe" not in refused.value.message
    assert parse_query("迁移 OR テスト", "raw").expression == "\ufffe迁\ufffe移\ufffe OR \ufffeテ\ufffeス\ufffeト\ufffe"


def test_the_helpers_find_words_inside_cjk_sentences(logs):
    conn = logs.conn()
    assert found(conn, "迁移") == ["z2", "z1"]  # newest first
    assert found(conn, "数据库") == ["z1"]
    assert found(conn, "检查日志") == ["z1"]
    assert found(conn, "テキスト") == ["j1"]
    assert found(conn, "検索") == ["j1"]
    assert found(conn, "마이그레이션") == ["k1"]  # inside 마이그레이션을
    assert found(conn, "数据") == ["m1", "z1"]  # also right after a Latin word
    assert found(conn, "python") == ["m1"]
    assert found(conn, "迁库") == []  # the characters, but not side by side
    assert sorted(found(conn, "数据 OR テキスト")) == ["j1", "m1", "z1"]  # FTS5 syntax, split alike
    assert found(conn, "迁移", mode="phrase") == ["z2", "z1"]


def test_grouped_search_marks_the_cjk_word(logs):
    page = search_sessions(logs.conn(), "迁移")
    assert [item["session"]["id"] for item in page["items"]] == ["zh"]
    snippets = {hit["uuid"]: hit["snippet"] for hit in page["items"][0]["hits"]}
    assert snippets == {
        "z1": {"text": "数据库迁移失败了，请检查日志", "matches": [[3, 5]]},
        "z2": {"text": "我来运行迁移脚本", "matches": [[4, 6]]},
    }
    assert [item["session"]["id"] for item in search_sessions(logs.conn(), "데이터베이스")["items"]] == ["ko"]


def test_history_search_finds_cjk_words(logs):
    page = history_search(logs.conn(), {"query": "テキスト"})
    assert [s["sessionId"] for s in page["sessions"]] == ["ja"]
    assert history_search(logs.conn(), {"query": "检查"})["sessions"][0]["sessionId"] == "zh"


def test_a_line_appended_later_is_found_too(logs):
    logs.write("zh", line("z3", "性能测试通过", "2026-01-01T00:02:00Z", role="assistant", type="assistant"),
               append=True)
    logs.ingest()
    conn = logs.write_conn()
    assert found(conn, "测试") == ["z3"]
    assert conn.execute("SELECT search_text FROM messages WHERE uuid = 'z3'").fetchone() == (cjk.split("性能测试通过"),)
    assert conn.execute("SELECT search_text FROM messages WHERE uuid = 'm1'").fetchone()[0] is not None
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE search_text IS NULL").fetchone() == (0,)
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.execute("INSERT INTO tool_errors_fts (tool_errors_fts, rank) VALUES ('integrity-check', 1)")


def test_the_cli_finds_cjk_words(logs):
    result = CliRunner().invoke(cli, ["search", "检查日志", "--db", str(logs.db), "--json"])
    assert result.exit_code == 0, result.output
    assert [hit["message"]["uuid"] for hit in json.loads(result.output)] == ["z1"]


@pytest.mark.asyncio
async def test_datasette_table_search_finds_cjk_words(logs):
    ds = make_datasette(logs.db)
    await ds.invoke_startup()
    name = logs.db.stem
    response = await ds.client.get(f"/{name}/browse_messages.json?_search=迁移&_shape=array&_col=uuid")
    assert response.status_code == 200
    assert sorted(row["uuid"] for row in response.json()) == ["z1", "z2"]
    response = await ds.client.get(f"/{name}/messages.json?_search=テキスト&_shape=array&_col=uuid")
    assert [row["uuid"] for row in response.json()] == ["j1"]
    response = await ds.client.get(f"/{name}/browse_tool_calls.json?_search=无法连接&_shape=array")
    assert [row["message_uuid"] for row in response.json()] == ["z2"]


def test_redaction_rewrites_the_indexed_text_too(logs):
    conn = open_db(logs.db)
    conn.execute("UPDATE messages SET text = ?, search_text = ? WHERE uuid = 'z1'",
                 [f"令牌 {TOKEN} 泄露", cjk.search_text(f"令牌 {TOKEN} 泄露")])
    assert redact_stored_rows(conn, Redactor(key=b"k" * 32)) == 1
    text, indexed = conn.execute("SELECT text, search_text FROM messages WHERE uuid = 'z1'").fetchone()
    assert TOKEN not in text and indexed == cjk.split(text)
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", [TOKEN.lower()]).fetchall() == []
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")


def older_database(tmp_path) -> tuple:
    """A database as the version before m036 made it: its path, and a connection to write to it."""
    path = tmp_path / "old.db"
    migrations.apply(sqlite_utils.Database(path), stop_before="m036_index_cjk_characters_apart")
    return path, sqlite3.connect(path, isolation_level=None)


def test_an_older_database_indexes_its_cjk_text_apart(tmp_path):
    path, conn = older_database(tmp_path)
    conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, text, file_id, line_no, byte_offset, "
                 "byte_length) VALUES ('u1', 's', 1, 'x', 'user', '数据库迁移失败了', 1, 1, 0, 1)")
    conn.execute("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, content_length, "
                 "is_error, outcome, file_id) VALUES ('t1', 'u1', 's', '无法连接', 4, 1, 'failed', 1)")
    update_session_documents(conn, ["s"])
    assert conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH '\"数据库迁移失败了\"'").fetchone() == (1,)
    conn.close()
    conn = open_db(path)
    assert conn.execute("SELECT search_text FROM messages").fetchall() == [(cjk.split("数据库迁移失败了"),)]
    for table, query in [("messages_fts", "迁移"), ("tool_errors_fts", "连接"), ("session_docs_fts", "败")]:
        assert conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", [cjk.split(f'"{query}"')]).fetchall() == [(1,)]
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
    assert found(conn, "迁移") == ["u1"]


def test_an_older_database_whose_cold_load_was_killed_is_brought_up_to_date(tmp_path):
    from datasette_obelisk.store import cold_load

    path, conn = older_database(tmp_path)
    conn.execute("BEGIN IMMEDIATE")
    assert cold_load.begin(conn)
    conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, text, file_id, line_no, byte_offset, "
                 "byte_length) VALUES ('u1', 's', 1, 'x', 'user', '数据库迁移失败了', 1, 1, 0, 1)")
    conn.execute("COMMIT")  # and killed: the load never finished
    conn.close()
    conn = open_db(path)
    assert not cold_load.active(conn)
    assert found(conn, "迁移") == ["u1"]
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == (1,)
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    triggers = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {"messages_ai", "messages_ad", "messages_au", "tool_results_ai"} <= triggers


def test_titles_summaries_and_memories_match_cjk_runs_as_written(logs, tmp_path):
    from datasette_obelisk.query.memories import remember

    logs.sql("UPDATE sessions SET title = '数据库迁移' WHERE id = 'ja'")
    conn = logs.write_conn()
    page = history_search(conn, {"query": "数据库迁移"})  # the digest of ja, the messages of zh
    assert [s["sessionId"] for s in page["sessions"]] == ["ja", "zh"]
    root = tmp_path / "notes"
    (root / "设计").mkdir(parents=True)
    (root / "设计" / "数据库.md").write_text("# notes\n")
    remember(conn, {"path": str(root / "设计" / "数据库.md"), "summary": "design notes"}, memory_roots=[root])
    assert [m["summary"] for m in obelisk.memories(conn, {"query": "设计"})] == ["design notes"]
    assert [m["summary"] for m in obelisk.memories(conn, {"query": "数据库 design"})] == ["design notes"]


@pytest.mark.asyncio
async def test_datasette_table_search_finds_cjk_runs_in_memories_too(logs, tmp_path):
    from datasette_obelisk.query.memories import remember

    root = tmp_path / "notes"
    (root / "设计").mkdir(parents=True)
    (root / "设计" / "a.md").write_text("# notes\n")
    remember(logs.write_conn(), {"path": str(root / "设计" / "a.md"), "summary": "design notes"}, memory_roots=[root])
    ds = make_datasette(logs.db)
    await ds.invoke_startup()
    response = await ds.client.get(f"/{logs.db.stem}/memories.json?_search=设计&_shape=array&_col=summary")
    assert [row["summary"] for row in response.json()] == ["design notes"]


def test_the_indexed_form_of_a_text_is_never_shown(logs):
    conn = logs.conn()
    context = obelisk.context(conn, "z1")
    assert "search_text" not in context["message"] and context["message"]["text"] == "数据库迁移失败了，请检查日志"
    assert all("search_text" not in row for row in obelisk.trace(conn, "z2"))
    [failure] = obelisk.failures(conn)
    assert "search_content" not in failure["result"] and failure["result"]["content"] == "错误：无法连接数据库服务器"
    from datasette_obelisk.web.schemas import table_columns

    assert "search_text" not in table_columns("messages") and "search_content" not in table_columns("tool_results")


def test_a_hit_is_shown_around_the_cjk_word_not_one_of_its_characters(toy):
    text = "请看标题。" + "我们的代码有很多的问题。" * 2000 + " 这次的目标是修复数据库迁移。"
    toy.write("long", line("l1", text, "2026-01-05T00:00:00Z"))
    toy.ingest()
    [hit] = obelisk.search(toy.conn(), "目标")
    assert "目标" in hit["message"]["text"]
    from datasette_obelisk.web.sql_functions import snippet_text

    assert "目标" in snippet_text(text, "目标", 80)


def test_a_long_text_without_spaces_is_counted_between_characters():
    from datasette_obelisk.store.session_index import SLICE_BYTES, count_words

    text = "数据" * (SLICE_BYTES // 3)  # 2 MB of UTF-8 and no space: read in slices
    words = count_words([text])
    assert "\ufffd" not in "".join(words) and sum(len(word) * n for word, n in words.items()) == len(text)


def test_a_database_not_yet_migrated_still_finds_cjk_runs_whole(tmp_path):
    # as an older version wrote it: CJK runs indexed whole, in the messages and the session bags
    from datasette_obelisk.store.db import connect

    path, conn = older_database(tmp_path)
    conn.execute("INSERT INTO sessions (id, source, started_at, ended_at, message_count) "
                 "VALUES ('s', 'x', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1)")
    conn.execute("INSERT INTO messages (uuid, session_id, seq, source, type, role, text, timestamp, file_id, line_no, "
                 "byte_offset, byte_length) VALUES ('u1', 's', 1, 'x', 'user', 'user', '构建失败：找不到模块 react', "
                 "'2026-01-01T00:00:00Z', 1, 1, 0, 1)")
    words = json.dumps({"react": 1, "找不到模块": 1, "构建失败": 1})
    conn.execute("INSERT INTO session_docs (id, session_id, first_id, last_id, messages, chars, meta_messages, "
                 "body_words, meta_words) VALUES (1, 's', 1, 1, 1, 19, 0, ?, '{}')", [words])
    conn.execute("INSERT INTO session_docs_fts (rowid, body, meta) VALUES (1, '构建失败 找不到模块 react', '')")
    conn.close()
    read = connect(path)
    assert found(read, "找不到模块") == ["u1"]
    assert [item["session"]["id"] for item in search_sessions(read, "找不到模块")["items"]] == ["s"]


def test_a_long_text_marks_the_whole_cjk_word():
    from datasette_obelisk.query.text import approximate_snippet

    result = approximate_snippet("在数据分析项目中" + "。" * 10 + "数据分开", ("数据分析",), width=40)
    assert [result["text"][s:e] for s, e in result["matches"]] == ["数据分析"]
    far = "마이그레잇 " + "가나다 " * 20_000 + "마이그레이션을 확인"
    result = approximate_snippet(far, ("마이그레이션",), width=60)
    assert [result["text"][s:e] for s, e in result["matches"]] == ["마이그레이션"]


def test_a_prefix_search_finds_a_word_after_cjk_characters(toy):
    toy.write("s1", line("a", "npm测试失败，请运行npm", "2026-01-01T00:00:00Z"))
    toy.ingest()
    for prefix in (False, True):
        assert [item["session"]["id"] for item in search_sessions(toy.conn(), "运行np" if prefix else "运行npm",
                                                                   prefix=prefix)["items"]] == ["s1"]


def test_a_word_whose_capital_lowers_to_a_letter_and_a_mark_is_found(toy):
    toy.write("tr", line("t1", "İstanbul ofisi için dağıtım", "2026-01-01T00:00:00Z"))
    toy.ingest()
    assert tokens("İstanbul") == ["i̇stanbul"]  # (FTS5 keeps the mark in the word, then folds it away)
    assert [s["sessionId"] for s in history_search(toy.conn(), {"query": "İstanbul"})["sessions"]] == ["tr"]


@pytest.mark.parametrize("text, prefix", [
    ("новый пользователей", "пользоват"), ("її мовою", "ї"), ("καλημέρα κόσμε", "καλη"), ("أهلا وسهلا", "أه"),
    ("नमस्ते दुनिया", "नम"), ("le café noir", "caf"), ("İstanbul ofisi", "ist"),
])
def test_a_prefix_search_finds_words_of_every_script(toy, text, prefix):
    toy.write("s1", line("a", text, "2026-01-01T00:00:00Z"))
    toy.ingest()
    assert [item["session"]["id"] for item in search_sessions(toy.conn(), prefix, prefix=True)["items"]] == ["s1"]


def test_a_term_of_marks_alone_is_no_term(toy):
    toy.write("s1", line("m1", "un café noir", "2026-01-01T00:00:00Z"))
    toy.ingest()
    assert parse_query("noir \u0301").expression == '"noir"'
    assert found(toy.conn(), "noir \u0301") == ["m1"]
