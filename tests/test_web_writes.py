"""POST /-/obelisk/api/remember and /forget: who may write, and that a refusal writes nothing."""

from __future__ import annotations

import sqlite3

import pytest
from datasette.tokens import TokenRestrictions

from web_fixtures import copy_db, make_datasette, rows, web_db  # noqa: F401 (fixture)

REMEMBER = "/-/obelisk/api/remember"
FORGET = "/-/obelisk/api/forget"
SECRET = "test-secret-for-tokens"


@pytest.fixture
def memory_root(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "decision.md").write_text("# We chose SQLite\n")
    return root


@pytest.fixture
def db(web_db, tmp_path):
    return copy_db(web_db, tmp_path / "obelisk.db")


def plugin_config(memory_root, grant_alice: bool = True, **extra) -> dict:
    """Memory roots, and (by default) both actions granted to alice in config.

    A ``permissions`` block that names alice denies everyone else, root
    included (Datasette's rule), so root's own cases run without it.
    """
    config = {"plugins": {"datasette-obelisk": {"memory_roots": [str(memory_root)], **extra}}}
    if grant_alice:
        config["permissions"] = {"obelisk-remember": {"id": "alice"}, "obelisk-forget": {"id": "alice"}}
    return config


def config_for(memory_root, how: dict, **extra) -> dict:
    return plugin_config(memory_root, grant_alice=(how.get("actor") or {}).get("id") != "root", **extra)


async def started(db, config, **options):
    ds = make_datasette(db, config=config, secret=SECRET, **options)
    ds.root_enabled = True
    await ds.invoke_startup()
    return ds


def counts(db) -> tuple[int, int, int]:
    """(memories, archived memories, audit rows)."""
    return rows(
        db,
        "SELECT (SELECT COUNT(*) FROM memories), (SELECT COUNT(*) FROM memories WHERE deleted_at IS NOT NULL), "
        "(SELECT COUNT(*) FROM audit_log)",
    )[0]


def record(memory_root) -> dict:
    return {"path": str(memory_root / "decision.md"), "summary": "Why the archive is SQLite"}


async def token(ds, actor_id: str, *actions: str) -> dict:
    restrictions = TokenRestrictions()
    for action in actions:
        restrictions.allow_all(action)
    value = await ds.create_token(actor_id, restrictions=restrictions if actions else None)
    return {"Authorization": f"Bearer {value}"}


ROOT = {"id": "root"}
CROSS_SITE = {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}

REMEMBER_CASES = [
    # (name, how the request is made, expected status)
    ("anonymous", {}, 403),
    ("signed in, not granted", {"actor": {"id": "bob"}}, 403),
    ("granted in config", {"actor": {"id": "alice"}}, 200),
    ("root", {"actor": ROOT}, 200),
    ("root, same-origin browser", {"actor": ROOT, "headers": {"Sec-Fetch-Site": "same-origin"}}, 200),
    ("root, cross-site browser", {"actor": ROOT, "headers": CROSS_SITE}, 403),
    ("root, foreign Origin only", {"actor": ROOT, "headers": {"Origin": "https://evil.example"}}, 403),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("name,how,status", REMEMBER_CASES, ids=[c[0] for c in REMEMBER_CASES])
async def test_remember_permission_matrix(db, memory_root, name, how, status):
    ds = await started(db, config_for(memory_root, how))
    before = counts(db)
    response = await ds.client.post(REMEMBER, json=record(memory_root), **how)
    assert response.status_code == status, response.text
    if status == 200:
        body = response.json()
        assert body["path"] == str((memory_root / "decision.md").resolve())
        assert counts(db) == (before[0] + 1, before[1], before[2] + 1)
        actor_id = (how.get("actor") or {}).get("id")
        assert rows(db, "SELECT actor_id, action, memory_id, database_name FROM audit_log") == [
            (actor_id, "obelisk-remember", body["id"], "obelisk")
        ]
    else:
        assert counts(db) == before
        if "headers" not in how:  # CSRF refusals are Datasette's own HTML page
            assert response.json()["error"]["code"] == "OBELISK_PERMISSION_DENIED"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "actor_id,actions,status",
    [
        ("root", ["obelisk-remember", "view-table"], 200),
        ("alice", ["obelisk-remember", "view-table"], 200),
        ("root", ["obelisk-remember"], 403),  # an answer shows what it may not view
        ("root", [], 200),  # an unrestricted token acts as its actor
        ("root", ["view-instance"], 403),  # a token without the action
        ("root", ["obelisk-forget"], 403),
        ("bob", ["obelisk-remember"], 403),  # a token never grants more than its actor has
    ],
)
async def test_remember_with_api_tokens(db, memory_root, actor_id, actions, status):
    ds = await started(db, config_for(memory_root, {"actor": {"id": actor_id}}))
    before = counts(db)
    response = await ds.client.post(REMEMBER, json=record(memory_root), headers=await token(ds, actor_id, *actions))
    assert response.status_code == status, response.text
    assert counts(db)[0] == before[0] + (1 if status == 200 else 0)
    assert counts(db)[2] == before[2] + (1 if status == 200 else 0)


@pytest.mark.asyncio
async def test_token_with_cookie_from_another_site_is_refused(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    headers = {**await token(ds, "root", "obelisk-remember"), **CROSS_SITE}
    response = await ds.client.post(REMEMBER, json=record(memory_root), headers=headers, actor=ROOT)
    assert response.status_code == 403
    assert "CSRF" in response.text or "Sec-Fetch-Site" in response.text
    assert counts(db) == before


async def remembered(ds, memory_root) -> str:
    response = await ds.client.post(REMEMBER, json=record(memory_root), skip_permission_checks=True)
    assert response.status_code == 200, response.text
    return response.json()["id"]


FORGET_CASES = [
    ("anonymous", {}, 403),
    ("signed in, not granted", {"actor": {"id": "bob"}}, 403),
    ("granted in config", {"actor": {"id": "alice"}}, 200),
    ("root", {"actor": ROOT}, 200),
    ("root, cross-site browser", {"actor": ROOT, "headers": CROSS_SITE}, 403),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("name,how,status", FORGET_CASES, ids=[c[0] for c in FORGET_CASES])
async def test_forget_permission_matrix(db, memory_root, name, how, status):
    ds = await started(db, config_for(memory_root, how))
    memory_id = await remembered(ds, memory_root)
    before = counts(db)
    response = await ds.client.post(FORGET, json={"id": memory_id, "reason": "superseded"}, **how)
    assert response.status_code == status, response.text
    if status == 200:
        assert response.json()["deleted_reason"] == "superseded"
        assert counts(db) == (before[0], before[1] + 1, before[2] + 1)
        assert rows(db, "SELECT action, memory_id, reason FROM audit_log ORDER BY id DESC LIMIT 1") == [
            ("obelisk-forget", memory_id, "superseded")
        ]
    else:
        assert counts(db) == before


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "actor_id,actions,status",
    [("root", ["obelisk-forget", "view-table"], 200), ("root", ["obelisk-forget"], 403),
     ("root", ["obelisk-remember", "view-table"], 403), ("bob", ["obelisk-forget", "view-table"], 403)],
)
async def test_forget_with_api_tokens(db, memory_root, actor_id, actions, status):
    ds = await started(db, config_for(memory_root, {"actor": {"id": actor_id}}))
    memory_id = await remembered(ds, memory_root)
    before = counts(db)
    response = await ds.client.post(
        FORGET, json={"id": memory_id, "reason": "wrong"}, headers=await token(ds, actor_id, *actions)
    )
    assert response.status_code == status, response.text
    assert counts(db)[1] == before[1] + (1 if status == 200 else 0)


@pytest.mark.asyncio
@pytest.mark.parametrize("hidden", [
    {"allow": False},  # the whole instance
    {"databases": {"obelisk": {"tables": {"memories": {"allow": False}}}}},
    {"databases": {"obelisk": {"tables": {"sessions": {"allow": False}}}}},
])
async def test_a_writer_who_may_not_view_what_an_answer_shows_is_refused(db, memory_root, hidden):
    ds = await started(db, {**plugin_config(memory_root), **hidden})
    before = counts(db)
    session_id = rows(db, "SELECT id FROM sessions WHERE project IS NOT NULL LIMIT 1")[0][0]
    response = await ds.client.post(REMEMBER, json={**record(memory_root), "session_id": session_id}, actor={"id": "alice"})
    assert (response.status_code, response.json()["error"]["code"]) == (403, "OBELISK_PERMISSION_DENIED")
    assert "project" not in response.text
    assert counts(db) == before


@pytest.mark.asyncio
async def test_forget_twice_reports_already_deleted_and_audits_once(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    memory_id = await remembered(ds, memory_root)
    for _ in range(2):
        response = await ds.client.post(FORGET, json={"id": memory_id, "reason": "old"}, actor=ROOT)
        assert response.status_code == 200
    assert response.json()["already_deleted"] is True
    assert rows(db, "SELECT COUNT(*) FROM audit_log WHERE action = 'obelisk-forget'") == [(1,)]


@pytest.mark.asyncio
async def test_remember_twice_answers_the_same_memory_and_audits_once(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    first, again = [await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT) for _ in range(2)]
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == {**first.json(), "already_registered": True}
    assert counts(db) == (before[0] + 1, before[1], before[2] + 1)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body,status,code",
    [
        ({"summary": "no path"}, 400, "OBELISK_MEMORY_REFUSED"),
        ({"path": "/etc/passwd", "summary": "outside the root"}, 400, "OBELISK_MEMORY_REFUSED"),
        ({"path": "decision.md"}, 400, "OBELISK_INVALID_ARGUMENT"),
        ({"path": "decision.md", "summary": "x", "surprise": 1}, 400, "OBELISK_INVALID_ARGUMENT"),
        ({"path": "decision.md", "summary": "x", "anchors": "[" * 1000 + "]" * 1000}, 400, "OBELISK_INVALID_ARGUMENT"),
    ],
)
async def test_remember_rejects_bad_records_without_writing(db, memory_root, body, status, code):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    response = await ds.client.post(REMEMBER, json=body, actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert counts(db) == before


@pytest.mark.asyncio
async def test_relative_paths_resolve_inside_the_first_memory_root(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    response = await ds.client.post(REMEMBER, json={"path": "decision.md", "summary": "relative"}, actor=ROOT)
    assert response.status_code == 200, response.text
    assert response.json()["path"] == str((memory_root / "decision.md").resolve())


@pytest.mark.asyncio
async def test_nothing_is_writable_without_memory_roots(db, memory_root):
    config = plugin_config(memory_root, grant_alice=False)
    config["plugins"]["datasette-obelisk"] = {}
    ds = await started(db, config)
    before = counts(db)
    response = await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "OBELISK_MEMORY_REFUSED")
    assert counts(db) == before


@pytest.mark.asyncio
async def test_body_size_is_capped(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False, max_body_bytes=200))
    before = counts(db)
    body = {**record(memory_root), "summary": "x" * 500}
    response = await ds.client.post(REMEMBER, json=body, actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (413, "OBELISK_PAYLOAD_TOO_LARGE")
    assert counts(db) == before



@pytest.mark.asyncio
@pytest.mark.parametrize("form", [False, True])
async def test_datasettes_own_body_cap_holds_when_it_is_smaller(db, memory_root, form):
    """``--setting max_post_body_bytes`` caps every POST body of the instance, ours too."""
    ds = await started(db, plugin_config(memory_root, grant_alice=False), settings={"max_post_body_bytes": 200})
    before = counts(db)
    body = {**record(memory_root), "summary": "x" * 500}
    headers = {"Accept": "application/json"}
    sent = {"data": body} if form else {"json": body}
    response = await ds.client.post(REMEMBER, **sent, headers=headers, actor=ROOT)
    assert (response.status_code, response.json()["error"]) == (
        413, {"code": "OBELISK_PAYLOAD_TOO_LARGE", "message": "the request body is over 200 bytes"})
    assert counts(db) == before
    # Larger than ours, it leaves ours in force.
    ds = await started(db, plugin_config(memory_root, grant_alice=False, max_body_bytes=300),
                       settings={"max_post_body_bytes": 10_000})
    response = await ds.client.post(REMEMBER, **sent, headers=headers, actor=ROOT)
    assert (response.status_code, response.json()["error"]["message"]) == (413, "the request body is over 300 bytes")
    assert counts(db) == before

@pytest.mark.asyncio
@pytest.mark.parametrize("raw,code", [(b"not json", "OBELISK_INVALID_ARGUMENT"), (b"[1, 2]", "OBELISK_INVALID_ARGUMENT")])
async def test_bodies_must_be_json_objects(db, memory_root, raw, code):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    response = await ds.client.post(REMEMBER, content=raw, headers={"content-type": "application/json"}, actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (400, code)


@pytest.mark.asyncio
@pytest.mark.parametrize("endpoint,raw", [
    (FORGET, b'{"id": "\\ud800", "reason": "r"}'),  # a lone surrogate: not text UTF-8 can carry
    (REMEMBER, b'{"path": "decision.md", "summary": "s", "anchors": "' + b"[" * 5000 + b'"}'),
    (REMEMBER, b'{"path": "decision.md", "summary": "s", "anchors": ' + b"[" * 5000 + b"}"),
    (REMEMBER, b'{"path": "decision.md", "summary": "s", "anchors": ' + b"[" * 1000 + b"]" * 1000 + b"}"),
])
async def test_bodies_that_json_cannot_hold_are_refused(db, memory_root, endpoint, raw):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    response = await ds.client.post(endpoint, content=raw, headers={"content-type": "application/json"}, actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "OBELISK_INVALID_ARGUMENT")
    assert counts(db) == before


@pytest.mark.asyncio
async def test_form_posts_redirect_back_with_a_message(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    response = await ds.client.post(
        REMEMBER, data={"path": str(memory_root / "decision.md"), "summary": "from the form", "project": ""}, actor=ROOT
    )
    assert response.status_code == 302
    assert response.headers["location"] == "/-/obelisk/memories"
    assert rows(db, "SELECT summary FROM memories ORDER BY pk DESC LIMIT 1") == [("from the form",)]


@pytest.mark.asyncio
@pytest.mark.parametrize("referer,location", [
    ("http://localhost/-/obelisk/memories?q=widgets&db=obelisk", "/-/obelisk/memories?q=widgets&db=obelisk"),
    ("http://elsewhere.example/-/obelisk/memories?q=widgets", "/-/obelisk/memories?q=widgets"),  # path only
    ("http://localhost/-/obelisk/search?q=widgets", "/-/obelisk/memories"),  # not the memories page
    ("http://localhost/-/obelisk/memories", "/-/obelisk/memories"),
    (None, "/-/obelisk/memories"),
])
async def test_a_form_post_goes_back_to_the_memories_page_it_came_from(db, memory_root, referer, location):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    memory_id = await remembered(ds, memory_root)
    headers = {"referer": referer} if referer else {}
    response = await ds.client.post(FORGET, data={"id": memory_id, "reason": "obsolete"}, actor=ROOT, headers=headers)
    assert (response.status_code, response.headers["location"]) == (302, location)


@pytest.mark.asyncio
async def test_a_form_forgetting_an_archived_memory_says_so(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    memory_id = await remembered(ds, memory_root)
    said = []
    for reason in ("obsolete", "again"):  # the second from a page loaded before the first
        response = await ds.client.post(FORGET, data={"id": memory_id, "reason": reason}, actor=ROOT)
        assert response.status_code == 302
        said.append(ds.unsign(response.cookies["ds_messages"], "messages"))
    [(deleted_at,)] = rows(db, "SELECT deleted_at FROM memories WHERE id = ?", [memory_id])
    assert said == [
        [[f"Archived memory {memory_id}", ds.INFO]],
        [[f"Memory {memory_id} was already archived ({deleted_at}, reason: obsolete): nothing changed", ds.WARNING]],
    ]


@pytest.mark.asyncio
async def test_a_form_posted_twice_registers_once_and_says_so(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    path = str((memory_root / "decision.md").resolve())
    said = []
    for _ in range(2):  # a double click
        response = await ds.client.post(REMEMBER, data={"path": path, "summary": "twice", "project": ""}, actor=ROOT)
        assert response.status_code == 302
        said.append(ds.unsign(response.cookies["ds_messages"], "messages"))
    [(memory_id, created_at)] = rows(db, "SELECT id, created_at FROM memories WHERE summary = 'twice'")
    assert said == [
        [[f"Remembered {path} as {memory_id}", ds.INFO]],
        [[f"{path} was already remembered with these values as {memory_id} ({created_at}): nothing changed", ds.WARNING]],
    ]


@pytest.mark.asyncio
async def test_a_memory_links_its_source_session_only_when_it_is_stored(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    [(stored,)] = rows(db, "SELECT id FROM sessions ORDER BY id LIMIT 1")
    (memory_root / "other.md").write_text("# Other\n")
    for path, session_id in (("decision.md", stored), ("other.md", "no-such-session")):
        body = {"path": str(memory_root / path), "summary": path, "session_id": session_id}
        assert (await ds.client.post(REMEMBER, json=body, actor=ROOT)).status_code == 200
    html = (await ds.client.get("/-/obelisk/memories", actor=ROOT)).text
    assert f'<a href="/-/obelisk/session/{stored}">source session</a>' in html
    assert "no-such-session</a>" not in html and "source session no-such-session (not stored)" in html


@pytest.mark.asyncio
async def test_get_is_not_allowed_on_write_endpoints(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    for path in (REMEMBER, FORGET):
        response = await ds.client.get(path, actor=ROOT)
        assert response.status_code == 405
        assert response.headers["allow"] == "POST"


@pytest.mark.asyncio
async def test_writes_are_refused_when_the_audit_table_is_missing(db, memory_root):
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE audit_log")
    conn.commit()
    conn.close()
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = rows(db, "SELECT COUNT(*) FROM memories")
    response = await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "OBELISK_READ_ONLY")
    assert "obelisk ingest" in response.json()["error"]["message"]
    assert rows(db, "SELECT COUNT(*) FROM memories") == before


@pytest.mark.asyncio
async def test_immutable_databases_are_not_written(db, memory_root):
    ds = make_datasette(None, config=plugin_config(memory_root, grant_alice=False), immutables=[str(db)])
    ds.root_enabled = True
    await ds.invoke_startup()
    response = await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "OBELISK_READ_ONLY")


@pytest.mark.asyncio
async def test_a_database_a_newer_version_made_is_not_written(db, memory_root):
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('datasette_obelisk', 'm999_future', '')")
    conn.close()
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    response = await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "OBELISK_READ_ONLY")
    assert "newer datasette-obelisk (migration m999_future)" in response.json()["error"]["message"]
    assert counts(db) == before


@pytest.mark.asyncio
@pytest.mark.parametrize("form", [False, True])
async def test_a_database_file_sqlite_cannot_write_refuses_with_a_code(db, memory_root, form):
    # Served mutable, but SQLite refuses to write (as for a read-only file): the
    # same refusal as an immutable database, nothing written.
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    await ds.get_database().execute_write_fn(lambda conn: conn.execute("PRAGMA query_only = 1"), transaction=False)
    before = counts(db)
    if form:
        response = await ds.client.post(REMEMBER, data=record(memory_root), actor=ROOT)
        assert response.status_code == 400 and "the database file cannot be written" in response.text
    else:
        response = await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT)
        assert (response.status_code, response.json()["error"]["code"]) == (400, "OBELISK_READ_ONLY")
        assert response.json()["error"]["message"].startswith("the database file cannot be written: attempt to write")
    assert counts(db) == before


@pytest.mark.asyncio
async def test_read_only_instances_register_no_write_route(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False, read_only=True))
    before = counts(db)
    for path in (REMEMBER, FORGET):
        response = await ds.client.post(path, json=record(memory_root), actor=ROOT)
        assert response.status_code == 404
    assert counts(db) == before
    spec = (await ds.client.get("/-/obelisk/api/openapi.json")).json()
    assert not [path for path in spec["paths"] if path.endswith(("/remember", "/forget"))]
    page = await ds.client.get("/-/obelisk/memories", actor=ROOT)
    assert "Remember a file" not in page.text and "Forget</button>" not in page.text


@pytest.mark.asyncio
async def test_the_published_configuration_serves_read_only(db):
    from datasette_obelisk.cli import publish_settings

    ds = make_datasette(None, config=publish_settings(), immutables=[str(db)])
    ds.root_enabled = True
    await ds.invoke_startup()
    before = counts(db)
    for path in (REMEMBER, FORGET):
        assert (await ds.client.post(path, json={}, actor=ROOT)).status_code == 404
    assert counts(db) == before
    # Reads still work, stored queries included, though arbitrary SQL is off.
    assert (await ds.client.get("/-/obelisk/api/search", params={"q": "zebrafish"})).status_code == 200
    assert (await ds.client.get("/obelisk/obelisk_search.json", params={"q": "zebrafish"})).status_code == 200
    assert (await ds.client.get("/-/obelisk", params={"q": "zebrafish"})).status_code == 200


@pytest.mark.asyncio
async def test_the_published_configuration_refuses_sql_downloads_and_writes(db):
    from datasette_obelisk.cli import publish_settings

    ds = make_datasette(None, config=publish_settings(), immutables=[str(db)])
    ds.root_enabled = True
    await ds.invoke_startup()
    before = counts(db)
    assert (await ds.client.get("/obelisk/-/query.json", params={"sql": "select 1"})).status_code == 403
    assert (await ds.client.get("/obelisk.db")).status_code in (403, 404)
    writes = {
        "/obelisk/memories/-/insert": {"row": {"id": "m", "path": "/x", "summary": "s", "created_at": "t"}},
        "/obelisk/-/create": {"table": "x", "columns": [{"name": "a"}]},
        "/obelisk/memories/-/drop": {"confirm": True},
    }
    for path, body in writes.items():
        response = await ds.client.post(path, json=body, actor=ROOT)
        # Refused by permissions, or by Datasette itself for an immutable file.
        assert response.status_code in (400, 403, 404), (path, response.status_code)
        assert response.json()["ok"] is False
    assert (await ds.client.post("/-/create-token", data={}, actor=ROOT)).status_code in (403, 404)
    assert counts(db) == before
    tables = await ds.client.get("/obelisk.json")
    assert "x" not in [t["name"] for t in tables.json()["tables"]]


@pytest.mark.asyncio
async def test_forget_is_refused_too_without_memory_roots(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    memory_id = await remembered(ds, memory_root)
    config = plugin_config(memory_root, grant_alice=False)
    config["plugins"]["datasette-obelisk"] = {}
    ds = await started(db, config)
    before = counts(db)
    response = await ds.client.post(FORGET, json={"id": memory_id, "reason": "stale"}, actor=ROOT)
    assert response.status_code == 400
    assert response.json() == {
        "ok": False,
        "error": {"code": "OBELISK_MEMORY_REFUSED", "message": "no memory_roots are configured: nothing is writable"},
    }
    assert counts(db) == before


@pytest.mark.asyncio
async def test_remember_registers_markdown_files_only(db, memory_root):
    (memory_root / "b.txt").write_text("not markdown\n")
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    response = await ds.client.post(REMEMBER, json={"path": "b.txt", "summary": "a text file"}, actor=ROOT)
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "OBELISK_INVALID_ARGUMENT", "message": "remember(): path must name a markdown file (.md)",
    }
    assert counts(db) == before


@pytest.mark.asyncio
@pytest.mark.parametrize("path,content,kind,refused", [
    (REMEMBER, b'{"path": "b.txt", "path": "decision.md", "summary": "s"}', "application/json", "field path given"),
    (REMEMBER, b"path=b.txt&path=decision.md&summary=s", "application/x-www-form-urlencoded", "field path given"),
    (REMEMBER + "?summary=s", b'{"path": "decision.md", "summary": "s"}', "application/json", "unknown query parameter summary"),
    (REMEMBER + "?db=obelisk&db=obelisk", b'{"path": "decision.md", "summary": "s"}', "application/json", "parameter db given"),
])
async def test_a_field_given_twice_or_in_the_query_string_is_refused(db, memory_root, path, content, kind, refused):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    response = await ds.client.post(path, content=content, headers={"content-type": kind, "accept": "application/json"}, actor=ROOT)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "OBELISK_INVALID_ARGUMENT")
    assert response.json()["error"]["message"].startswith(refused)
    assert counts(db) == before


@pytest.mark.asyncio
async def test_forget_refuses_unknown_fields(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    memory_id = await remembered(ds, memory_root)
    before = counts(db)
    response = await ds.client.post(FORGET, json={"id": memory_id, "reason": "x", "surprise": 1}, actor=ROOT)
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "OBELISK_INVALID_ARGUMENT", "message": "forget(): unknown field(s) surprise"}
    assert counts(db) == before


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "plugin, message",
    [
        ({"read_only": "false"}, "datasette-obelisk: read_only must be true or false, not 'false'"),
        ({"max_body_bytes": 0}, "datasette-obelisk: max_body_bytes must be a whole number of bytes above 0, not 0"),
        ({"max_body_bytes": "64k"}, "datasette-obelisk: max_body_bytes must be a whole number of bytes above 0, not '64k'"),
        ({"memory_roots": [1]}, "datasette-obelisk: memory_roots must be a folder or a list of folders, not [1]"),
        ({"database": 3}, "datasette-obelisk: database must be a database name, not 3"),
        ({"database": "obelsik"}, "datasette-obelisk: database 'obelsik' is not served (served: obelisk)"),
        ({"readonly": True}, "datasette-obelisk: unknown key(s) readonly"),
    ],
)
async def test_invalid_plugin_configuration_stops_startup(db, plugin, message):
    from datasette_obelisk.web.config import ConfigError

    ds = make_datasette(db, {"plugins": {"datasette-obelisk": plugin}})
    with pytest.raises(ConfigError) as raised:
        await ds.invoke_startup()
    assert str(raised.value) == message


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "roots, refused",
    [
        (["~/notes"], "{home}/notes does not exist"),  # ~ is the server's home
        (["{root}", "{root}/decision.md"], "{root}/decision.md is not a folder"),
        ("{root}/gone", "{root}/gone does not exist"),
    ],
)
async def test_a_memory_root_that_is_not_an_existing_folder_stops_startup(db, memory_root, isolated_home, roots, refused):
    from datasette_obelisk.web.config import ConfigError

    names = {"home": isolated_home, "root": memory_root}
    given = roots.format(**names) if isinstance(roots, str) else [root.format(**names) for root in roots]
    ds = make_datasette(db, {"plugins": {"datasette-obelisk": {"memory_roots": given}}})
    with pytest.raises(ConfigError) as raised:
        await ds.invoke_startup()
    assert str(raised.value) == "datasette-obelisk: memory_roots " + refused.format(**names)


def test_datasette_serve_refuses_a_bad_configuration_with_one_line(db, tmp_path):
    from click.testing import CliRunner
    from datasette.cli import cli as datasette_cli

    config = tmp_path / "datasette.yaml"
    config.write_text(f"plugins:\n  datasette-obelisk:\n    memory_roots: [{tmp_path / 'gone'}]\n")
    result = CliRunner().invoke(datasette_cli, ["serve", str(db), "-c", str(config), "--get", "/"])
    assert result.exit_code == 1
    assert result.output == f"Error: datasette-obelisk: memory_roots {tmp_path / 'gone'} does not exist\n"
    (tmp_path / "gone").mkdir()
    served = CliRunner().invoke(datasette_cli, ["serve", str(db), "-c", str(config), "--get", "/-/obelisk/memories"])
    assert served.exit_code == 0 and "<h1>Memories</h1>" in served.output


@pytest.mark.asyncio
async def test_a_refused_form_post_shows_the_memories_page_with_the_error(db, memory_root):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    sent = {"path": "/etc/passwd", "summary": "outside <the> root", "project": "p&q", "anchors": '["a"]'}
    response = await ds.client.post(REMEMBER, data=sent, actor=ROOT)
    assert response.status_code == 400
    assert "location" not in response.headers
    assert response.headers["content-type"].startswith("text/html")
    assert '<p class="ob-error" role="alert"><code>OBELISK_MEMORY_REFUSED</code>' in response.text
    assert "<h1>Memories</h1>" in response.text
    # The form keeps what was typed, escaped.
    assert '<input name="path" required value="/etc/passwd">' in response.text
    assert '<textarea name="summary" rows="2" required>outside &lt;the&gt; root</textarea>' in response.text
    assert '<input name="project" value="p&amp;q">' in response.text
    assert 'value="[&#34;a&#34;]">' in response.text
    assert counts(db) == before


@pytest.mark.asyncio
@pytest.mark.parametrize("path", [REMEMBER, FORGET])
async def test_multipart_bodies_are_refused_with_415(db, memory_root, path):
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    response = await ds.client.post(
        path, files={"summary": (None, "secret-body-text")}, data={"path": "decision.md"}, actor=ROOT
    )
    assert response.status_code == 415
    assert response.json() == {
        "ok": False,
        "error": {
            "code": "OBELISK_UNSUPPORTED_MEDIA_TYPE",
            "message": "send application/json or application/x-www-form-urlencoded, not multipart/form-data",
        },
    }
    assert "secret-body-text" not in response.text
    assert counts(db) == before


@pytest.mark.asyncio
async def test_a_write_waiting_out_an_ingest_s_lock_is_a_timeout_with_nothing_written(db, memory_root, monkeypatch):
    from datasette_obelisk.web import writes

    monkeypatch.setattr(writes, "BUSY_TIMEOUT_MS", 200)
    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    before = counts(db)
    ingest = sqlite3.connect(db, isolation_level=None)
    ingest.execute("BEGIN IMMEDIATE")  # an ingest holding its transaction
    try:
        response = await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT)
    finally:
        ingest.execute("ROLLBACK")
        ingest.close()
    assert (response.status_code, response.json()["error"]["code"]) == (504, "OBELISK_TIMEOUT")
    assert response.json()["error"]["message"].startswith("another writer (an ingest) kept the database locked")
    assert counts(db) == before
    assert (await ds.client.post(REMEMBER, json=record(memory_root), actor=ROOT)).status_code == 200


@pytest.mark.asyncio
async def test_the_row_saying_no_memory_matches_spans_the_table_s_columns(db, memory_root):
    # Three columns for a reader, four (with Forget) for one who may forget: the row that says
    # nothing matched spans as many, no more (a cell spanning past the table's columns).
    import re

    ds = await started(db, plugin_config(memory_root, grant_alice=False))
    for actor, columns in ((None, 3), (ROOT, 4)):
        html = (await ds.client.get("/-/obelisk/memories?q=nosuchwombat", actor=actor)).text
        head = re.search(r"<thead><tr>(.*?)</tr></thead>", html).group(1)
        assert head.count("<th>") == columns, head
        assert f'<td colspan="{columns}" class="ob-empty">No memory matches' in html
