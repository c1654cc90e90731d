"""The JSON API answers from the log as it is now, not as it was at the last ingest."""

import asyncio
import json
import os
import sqlite3
import threading

import pytest

from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.web import live as web_live
from web_fixtures import make_datasette


def line(uuid, parent, text):
    return json.dumps({
        "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
        "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": text},
    }) + "\n"


def change(db, *statements):
    """Run ``statements`` in one transaction, as an older version would have left the database."""
    conn = sqlite3.connect(db)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def ingested_log(tmp_path, monkeypatch):
    """A one-line session log, ingested; live refresh allowed on every request."""
    monkeypatch.setattr(web_live, "MIN_INTERVAL_SECONDS", 0)
    project = tmp_path / ".claude" / "projects" / "-w"
    project.mkdir(parents=True)
    log = project / "s1.jsonl"
    log.write_text(line("a", None, "first words"))
    db = tmp_path / "obelisk.db"
    ingest(db, {"claude": tmp_path / ".claude"})
    return log, db


@pytest.mark.asyncio
async def test_lines_appended_after_ingest_are_served(tmp_path, monkeypatch):
    log, db = ingested_log(tmp_path, monkeypatch)
    ds = make_datasette(db)
    await ds.invoke_startup()
    assert (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json() == []
    with open(log, "a") as fp:
        fp.write(line("b", "a", "a wombat wanders in"))
    found = (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json()
    assert [hit["message"]["uuid"] for hit in found] == ["b"]


@pytest.mark.asyncio
async def test_a_large_catch_up_goes_on_while_requests_answer_from_what_is_stored(tmp_path, monkeypatch):
    log, db = ingested_log(tmp_path, monkeypatch)
    monkeypatch.setattr(web_live, "INLINE_BYTES", 100)
    go_on = threading.Event()
    refresh = web_live.live.refresh

    def held_refresh(conn, **options):
        if options.get("max_bytes") is None:  # the catch-up
            go_on.wait(10)
        return refresh(conn, **options)

    monkeypatch.setattr(web_live.live, "refresh", held_refresh)
    ds = make_datasette(db)
    await ds.invoke_startup()
    with open(log, "a") as fp:
        fp.write(line("b", "a", "a wombat wanders in"))  # more than 100 bytes
    assert (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json() == []
    catching_up = web_live._catching_up[str(db)]
    assert (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json() == []  # not a second one
    go_on.set()
    assert await catching_up is True
    await asyncio.sleep(0)  # the done callback
    assert web_live._catching_up == {}
    found = (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json()
    assert [hit["message"]["uuid"] for hit in found] == ["b"]


@pytest.mark.asyncio
async def test_read_only_instances_do_not_write(tmp_path, monkeypatch):
    log, db = ingested_log(tmp_path, monkeypatch)
    ds = make_datasette(db, config={"plugins": {"datasette-obelisk": {"read_only": True}}})
    await ds.invoke_startup()
    with open(log, "a") as fp:
        fp.write(line("b", "a", "a wombat wanders in"))
    assert (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json() == []


@pytest.mark.asyncio
async def test_a_database_of_an_older_version_is_served_as_stored(tmp_path, monkeypatch):
    """Served after an upgrade and before any ingest: no refresh, no error."""
    log, db = ingested_log(tmp_path, monkeypatch)
    change(db, "ALTER TABLE source_files DROP COLUMN hints", "ALTER TABLE source_files DROP COLUMN priority",
           "DELETE FROM _sqlite_migrations WHERE name = 'm019_add_discovery_to_source_files'")
    with open(log, "a") as fp:
        fp.write(line("b", "a", "a wombat wanders in"))
    ds = make_datasette(db)
    await ds.invoke_startup()
    assert (await ds.client.get("/-/obelisk", params={"q": "first"})).status_code == 200
    assert (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json() == []
    ingest(db, {"claude": tmp_path / ".claude"})  # migrates, then reads the new line
    found = (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json()
    assert [hit["message"]["uuid"] for hit in found] == ["b"]


@pytest.mark.asyncio
async def test_what_an_older_database_lacks_is_a_clear_error(tmp_path, monkeypatch):
    # A database from before m013 has no session digests, which history search reads.
    _, db = ingested_log(tmp_path, monkeypatch)
    change(db, "DROP TABLE session_digests_fts")
    ds = make_datasette(db)
    await ds.invoke_startup()
    # On a database all migrations made, a missing table is a fault, not an old schema.
    assert (await ds.client.get("/-/obelisk/api/history/search", params={"query": "first"})).status_code == 500
    change(db, "DELETE FROM _sqlite_migrations WHERE name = (SELECT MAX(name) FROM _sqlite_migrations)")
    response = await ds.client.get("/-/obelisk/api/history/search", params={"query": "first"})
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "OBELISK_NOT_FOUND" and error["message"] == (
        "this database was written by an older datasette-obelisk (no such table: session_digests_fts): "
        "run `obelisk ingest --db obelisk.db` to bring it up to date")


@pytest.mark.asyncio
async def test_what_an_older_database_lacks_is_a_clear_error_where_a_helper_translates_sqlite_errors(
        tmp_path, monkeypatch):
    # failures() turns SQLite's errors into codes itself (OBELISK_INVALID_SQL): on a database
    # from before m040, whose tool results have no output_uuid, that is an old schema all the same.
    _, db = ingested_log(tmp_path, monkeypatch)
    change(db, "DROP TRIGGER IF EXISTS tool_results_au", "DROP INDEX IF EXISTS tool_results_output",
           "ALTER TABLE tool_results DROP COLUMN output_uuid",
           "DELETE FROM _sqlite_migrations WHERE name >= 'm040'")
    ds = make_datasette(db)
    await ds.invoke_startup()
    for path in ("/-/obelisk/failures", "/-/obelisk/api/failures"):
        response = await ds.client.get(path)
        assert response.status_code == 404
    assert response.json()["error"] == {
        "code": "OBELISK_NOT_FOUND",
        "message": "this database was written by an older datasette-obelisk (no such column: tr.output_uuid): "
                   "run `obelisk ingest --db obelisk.db` to bring it up to date",
    }


def test_a_document_or_a_compressed_log_is_counted_whole_and_a_grown_log_by_its_new_bytes():
    from datasette_obelisk.query.live import bytes_to_read

    def row(layout="jsonl", compression=None, size=1000, cursor=1000, size_now=1500, parser_version=3):
        return {"layout": layout, "compression": compression, "size": size, "cursor": cursor, "size_now": size_now,
                "source": "toy", "parser_version": parser_version}

    def to_read(*rows):
        return bytes_to_read(list(rows), {"toy": 3})

    assert to_read(row()) == 500  # appended to
    assert to_read(row(layout="document")) == 1500  # a Gemini chat, rewritten whole
    assert to_read(row(compression="zstd")) == 1500
    assert to_read(row(size_now=800)) == 800  # truncated: read again from its start
    assert to_read(row(parser_version=2)) == 1500  # a newer parser reads it again from its start
    assert to_read(row(), row(layout="document", size=10, cursor=10, size_now=20)) == 520


@pytest.mark.asyncio
async def test_a_database_deleted_while_served_is_not_made_again(tmp_path, monkeypatch):
    log, db = ingested_log(tmp_path, monkeypatch)
    ds = make_datasette(db)
    await ds.invoke_startup()
    db.unlink()
    await ds.client.get("/-/obelisk/api/sessions")
    assert not db.exists()


@pytest.mark.asyncio
async def test_a_database_naming_another_file_does_not_read_it_into_what_it_serves(tmp_path, monkeypatch):
    """A database names the paths it read and can be made anywhere: served, it must not read
    other files of the machine into itself (as /api/raw does not serve them)."""
    from datasette_obelisk.store.fingerprint import _hash

    log, db = ingested_log(tmp_path, monkeypatch)
    secret = tmp_path / "elsewhere" / "notes.jsonl"
    secret.parent.mkdir()
    secret.write_text(line("z", None, "the wombat password"))
    fifo = tmp_path / "elsewhere" / "pipe"
    os.mkfifo(fifo)
    empty, brace = _hash(b""), _hash(b"{")
    for forged in (
        f"UPDATE source_files SET path = '{secret}', size = 1, mtime_ns = 1",  # the fingerprint of another file
        f"UPDATE source_files SET path = '{secret}', size = 1, mtime_ns = 1, cursor = 0, "
        f"head_hash = '{empty}', tail_hash = '{empty}'",  # a fingerprint of nothing
        f"UPDATE source_files SET path = '{secret}', size = 1, mtime_ns = 1, head_hash = NULL, tail_hash = NULL",
        f"UPDATE source_files SET path = '{secret}', size = 1, mtime_ns = 1, cursor = 1, "
        f"head_hash = '{brace}', tail_hash = '{brace}'",  # a fingerprint of a byte any log starts with
        f"UPDATE source_files SET path = '{fifo}', size = 1, mtime_ns = 1",  # never blocks
    ):
        change(db, forged)
        ds = make_datasette(db)
        await ds.invoke_startup()
        response = await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})
        assert (response.status_code, response.json()) == (200, [])
        conn = sqlite3.connect(db)
        assert conn.execute("SELECT count(*) FROM messages WHERE text LIKE '%wombat%'").fetchone() == (0,)
        conn.close()


@pytest.mark.asyncio
async def test_a_log_rewritten_since_its_ingest_is_left_to_obelisk_ingest(tmp_path, monkeypatch):
    log, db = ingested_log(tmp_path, monkeypatch)
    log.write_text(line("a", None, "other first words") + line("b", "a", "a wombat wanders in"))
    ds = make_datasette(db)
    await ds.invoke_startup()
    assert (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json() == []
    ingest(db, {"claude": tmp_path / ".claude"})
    found = (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json()
    assert [hit["message"]["uuid"] for hit in found] == ["b"]


@pytest.mark.asyncio
async def test_a_log_whose_last_line_was_settled_without_its_break_is_still_read_as_it_grows(tmp_path, monkeypatch):
    log, db = ingested_log(tmp_path, monkeypatch)
    log.write_text(line("a", None, "first words").rstrip("\n"))
    ingest(db, {"claude": tmp_path / ".claude"})
    ds = make_datasette(db)
    await ds.invoke_startup()
    with open(log, "a") as fp:
        fp.write("\n" + line("b", "a", "a wombat wanders in"))
    found = (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json()
    assert [hit["message"]["uuid"] for hit in found] == ["b"]


@pytest.mark.asyncio
async def test_a_log_rewritten_in_the_agents_own_folder_is_read_again(tmp_path, monkeypatch):
    # (the logs of this machine's own agents are what the archive is for, fingerprint or not)
    log, db = ingested_log(tmp_path, monkeypatch)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / ".claude"))
    log.write_text(line("a", None, "other first words") + line("b", "a", "a wombat wanders in"))
    ds = make_datasette(db)
    await ds.invoke_startup()
    found = (await ds.client.get("/-/obelisk/api/search", params={"q": "wombat"})).json()
    assert [hit["message"]["uuid"] for hit in found] == ["b"]
    from datasette_obelisk.plugins import get_sources
    from datasette_obelisk.query.live import is_inside, own_folders

    assert is_inside(str(log), own_folders(get_sources()))
    # (a path that only names the folder on its way out of it is not inside)
    assert not is_inside(f"{tmp_path}/.claude/projects/../../elsewhere.jsonl", own_folders(get_sources()))


def test_a_settled_last_line_with_a_lone_surrogate_ends_a_line(tmp_path):
    # The reader settles an unterminated last line that load_json reads (an escaped lone
    # surrogate: a tool output clipped inside an emoji); the live refresh's fingerprint
    # check must take the cursor after it for a line's end too, or the log is never refreshed.
    from datasette_obelisk.query.live import ends_a_line

    path = tmp_path / "open.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": "\\ud83d"}')
    fd = os.open(path, os.O_RDONLY)
    try:
        assert ends_a_line(fd, path.stat().st_size)
        assert not ends_a_line(fd, path.stat().st_size - 1)
    finally:
        os.close(fd)
