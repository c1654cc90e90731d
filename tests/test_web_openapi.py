"""The OpenAPI document is true: every route is in it, and every answer fits it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import pytest_asyncio

from datasette_obelisk.web.api import DESCRIPTION_PATH, UNKNOWN_PATH
from datasette_obelisk.web.routes import routes
from schema_check import errors
from web_fixtures import WORKFLOW_RUN, XSS_SESSION, copy_db, ds, make_datasette, web_db  # noqa: F401 (fixtures)

API = "/-/obelisk/api"
ROOT = {"id": "root"}
# What each path needs to answer 200 from the test database.
EXAMPLES = {
    "/search": {"q": "zebrafish"},
    "/context": {"uuid": "xss-a1"},
    "/trace": {"uuid": "xss-a2"},
    "/thread": {"sessionId": XSS_SESSION},
    "/raw": {"uuid": "xss-a1"},
    "/workflow-tree": {"runId": WORKFLOW_RUN},
    "/file-history": {"path": "/path/to/Demo/types/index.ts"},
    "/session-query/sessions/search": {"query": "zebrafish"},
    "/session-query/events/search": {"sessionId": XSS_SESSION, "query": "zebrafish"},
    "/session-query/titles": {"ids": f'["{XSS_SESSION}", "no-such-session"]'},
    "/history/search": {"query": "zebrafish"},
    "/history/read": {"sessionId": XSS_SESSION},
}
PATH_VALUES = {"session_id": XSS_SESSION, "seq": "2"}
# A value for each optional parameter, to prove the endpoint accepts it.
OPTIONAL_VALUES = {
    "integer": "1",
    "boolean": "true",
    "mode": "terms",
    "project": "%",
    "source": "claude",
    "after": "2000-01-01",
    "before": "2100-01-01",
    "branch": "xss-branch",
    "cwd": "%",
    "sessionId": XSS_SESSION,
    "sessions": f'["{XSS_SESSION}"]',
    "filters": "[]",
    "sessionFilters": "[]",
    "eventFilters": "[]",
    "attributes": "{}",
    "query": "zebrafish",
    "id": "xss-u1",  # (an event's id: the session's first prompt)
    "afterUuid": "xss-u1",  # (a thread goes on after the session's first prompt)
    "afterId": "xss-u1",  # (a readSession page after the session's first prompt)
}
SKIP_OPTIONAL = {"cursor"}  # only a cursor the endpoint returned is valid
# Further values of documented parameters, for answers whose optional fields they bring out.
MORE_VALUES = {
    "/session-query/session/{session_id}/events": [{"filters": '[{"kind": "text", "text": "zebrafish"}]'}],
    "/session-query/sessions": [{"filters": '[{"kind": "availability", "values": ["persisted"]}]'}],
}


@pytest_asyncio.fixture
async def spec(ds):
    response = await ds.client.get(f"{API}/openapi.json")
    assert response.status_code == 200
    return response.json()


def api_path(path: str) -> str:
    return path[len(API):]


def concrete(path: str) -> str:
    return re.sub(r"{(\w+)}", lambda m: PATH_VALUES[m.group(1)], path)


def response_schema(operation: dict, status: str) -> dict:
    return operation["responses"][status]["content"]["application/json"]["schema"]


@pytest.mark.asyncio
async def test_every_route_is_described_and_every_description_is_routed(ds, spec):
    described = [re.sub(r"{(\w+)}", r"(?P<\1>[^/]+)", "^" + path + "$") for path in spec["paths"]]
    registered = [pattern for pattern, _ in routes(ds) if pattern.startswith("^" + API)]
    undocumented = (DESCRIPTION_PATH, UNKNOWN_PATH)
    assert sorted(described) == sorted(p for p in registered if p not in undocumented)
    assert spec["openapi"].startswith("3.1")


@pytest.mark.asyncio
async def test_every_get_answers_in_the_documented_shape(ds, spec):
    components = spec["components"]["schemas"]
    checked = 0
    for path, operations in spec["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        response = await ds.client.get(concrete(path), params=EXAMPLES.get(api_path(path), {}))
        assert response.status_code == 200, (path, response.text[:300])
        problems = errors(response.json(), response_schema(operation, "200"), components)
        assert not problems, (path, problems[:5])
        checked += 1
    assert checked >= 25


@pytest.mark.asyncio
async def test_every_integer_parameter_documents_the_bounds_and_default_it_has(ds, spec):
    """An agent reads a parameter's limits from the description: the documented
    minimum and maximum are the values the endpoint accepts at the edges and
    refuses past them, and the documented default answers as no value does."""
    checked = 0
    for path, operations in spec["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        example = EXAMPLES.get(api_path(path), {})
        for param in operation["parameters"]:
            schema, name = param["schema"], param["name"]
            if param["in"] != "query" or schema["type"] != "integer":
                continue
            assert {"minimum", "maximum"} <= set(schema), (path, name, schema)
            for value, status in ((schema["minimum"], 200), (schema["maximum"], 200),
                                  (schema["minimum"] - 1, 400), (schema["maximum"] + 1, 400)):
                response = await ds.client.get(concrete(path), params={**example, name: str(value)})
                assert response.status_code == status, (path, name, value, response.text[:200])
            if "default" in schema:
                given = await ds.client.get(concrete(path), params={**example, name: str(schema["default"])})
                assert given.json() == (await ds.client.get(concrete(path), params=example)).json(), (path, name)
            checked += 1
    assert checked >= 20


@pytest.mark.asyncio
async def test_errors_fit_the_error_schema(ds, spec):
    components = spec["components"]["schemas"]
    for path, operations in spec["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        required = [p["name"] for p in operation["parameters"] if p["in"] == "query" and p["required"]]
        url = concrete(path).replace(XSS_SESSION, "no-such-session")
        response = await ds.client.get(url, params={name: "" for name in required} if required else {"nonsense": "1"})
        assert response.status_code in (400, 404), (path, response.status_code, response.text[:200])
        assert not errors(response.json(), components["Error"], components), (path, response.text[:200])
        assert str(response.status_code) in operation["responses"]


@pytest.mark.asyncio
async def test_the_description_follows_base_url(web_db):
    ds = make_datasette(web_db, settings={"base_url": "/prefix/"})
    await ds.invoke_startup()
    spec = (await ds.client.get(f"{API}/openapi.json")).json()
    assert all(path.startswith("/prefix/-/obelisk/api/") for path in spec["paths"])


def validator(spec: dict, schema: dict):
    from jsonschema import Draft202012Validator

    return Draft202012Validator({**schema, "components": spec["components"]})


def documented_requests(spec: dict):
    """(path, operation, params): each GET path with its example, then with each optional parameter."""
    for path, operations in spec["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        base = EXAMPLES.get(api_path(path), {})
        yield path, operation, base
        for parameter in operation["parameters"]:
            name = parameter["name"]
            if parameter["in"] != "query" or parameter["required"] or name in SKIP_OPTIONAL or name == "db":
                continue
            kind = parameter["schema"].get("type")
            value = OPTIONAL_VALUES[kind] if kind in ("integer", "boolean") else OPTIONAL_VALUES.get(name, "x")
            yield path, operation, {**base, name: value}
        for params in MORE_VALUES.get(api_path(path).replace(XSS_SESSION, "{session_id}"), []):
            yield path, operation, {**base, **params}


@pytest.mark.asyncio
async def test_every_documented_request_answers_what_its_schema_says(ds, spec):
    checked = 0
    for path, operation, params in documented_requests(spec):
        response = await ds.client.get(concrete(path), params=params)
        assert response.status_code == 200, (path, params, response.text[:300])
        schema = response_schema(operation, "200")
        problems = [e.message for e in validator(spec, schema).iter_errors(response.json())]
        assert not problems, (path, params, problems[:5])
        checked += 1
    assert checked >= 80


def object_schemas(schema):
    """``schema`` and every schema nested in it that describes an object."""
    if not isinstance(schema, dict):
        return
    kinds = schema.get("type")
    if "properties" in schema or "object" in (kinds if isinstance(kinds, list) else [kinds]):
        yield schema
    for sub in schema.get("properties", {}).values():
        yield from object_schemas(sub)
    for key in ("items", "additionalProperties"):
        yield from object_schemas(schema.get(key))
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            yield from object_schemas(sub)


def response_schemas(spec: dict):
    """(where, schema) for every JSON answer the document describes, and every component."""
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                for media, content in answer.get("content", {}).items():
                    yield (path, method, status, media), content["schema"]
    yield from spec["components"]["schemas"].items()


@pytest.mark.asyncio
async def test_every_object_schema_is_closed(spec):
    """Each object lists its keys (additionalProperties false); only a described payload is free-form."""
    for where, schema in response_schemas(spec):
        for found in object_schemas(schema):
            closed = found.get("additionalProperties")
            assert closed is False or (closed is True and found.get("description")), (where, found)


@pytest.mark.asyncio
async def test_an_unlisted_field_fails_both_checks(ds, spec):
    operation = spec["paths"][f"{API}/session-query/session/{{session_id}}/events"]["get"]
    schema = response_schema(operation, "200")
    answer = (await ds.client.get(concrete(f"{API}/session-query/session/{{session_id}}/events"))).json()
    assert not errors(answer, schema, spec["components"]["schemas"])
    answer[0]["text"] = "documented: only with filters"
    answer[1]["surprise"] = 1
    assert [e.message for e in validator(spec, schema).iter_errors(answer)] == [
        "Additional properties are not allowed ('surprise' was unexpected)"
    ]
    assert errors(answer, schema, spec["components"]["schemas"]) == ["$[1]: unlisted 'surprise'"]


@pytest.mark.asyncio
async def test_filtered_events_carry_their_text_and_hits_their_match_offsets(ds, spec):
    events = await ds.client.get(
        concrete(f"{API}/session-query/session/{{session_id}}/events"), params=MORE_VALUES[
            "/session-query/session/{session_id}/events"][0]
    )
    assert events.json() and all("zebrafish" in event["text"].lower() for event in events.json())
    hits = (await ds.client.get(f"{API}/session-query/events/search", params=EXAMPLES["/session-query/events/search"])).json()
    start, end = hits["items"][0]["snippetMatches"][0]
    assert hits["items"][0]["snippet"][start:end].lower() == "zebrafish"


HIDDEN = ("messages", "sessions", "workflows", "memories")  # every endpoint reads one of them


@pytest.mark.asyncio
async def test_every_get_answers_wrong_methods_and_hidden_tables_as_documented(web_db, ds, spec):
    hidden = make_datasette(web_db, {"databases": {"obelisk": {"tables": {t: {"allow": False} for t in HIDDEN}}}})
    await hidden.invoke_startup()
    components = spec["components"]["schemas"]
    for path, operations in spec["paths"].items():
        if "get" not in operations:
            continue
        params = EXAMPLES.get(api_path(path), {})
        answers = {
            "405": (await ds.client.post(concrete(path), params=params), "OBELISK_METHOD_NOT_ALLOWED"),
            "403": (await hidden.client.get(concrete(path), params=params), "OBELISK_PERMISSION_DENIED"),
        }
        for status, (response, code) in answers.items():
            assert (str(response.status_code), response.json()["error"]["code"]) == (status, code), path
            assert not errors(response.json(), response_schema(operations["get"], status), components), path


@pytest.mark.asyncio
async def test_message_rows_are_documented_column_by_column(ds, spec):
    message = spec["components"]["schemas"]["Message"]
    assert message["additionalProperties"] is False
    assert {"id", "uuid", "seq", "visibility", "replaced_by", "meta_json"} <= set(message["required"])
    assert message["properties"]["seq"] == {"type": "integer"}
    assert message["properties"]["role"] == {"type": ["string", "null"]}
    thread = (await ds.client.get(f"{API}/thread", params={"sessionId": XSS_SESSION})).json()
    assert set(thread[0]) == set(message["properties"])


@pytest.mark.asyncio
async def test_seq_is_an_integer_path_parameter(spec):
    for path, operations in spec["paths"].items():
        for parameter in operations.get("get", {}).get("parameters", []):
            if parameter["in"] == "path":
                assert parameter["schema"] == {"type": "integer" if parameter["name"] == "seq" else "string"}, path


@pytest.mark.asyncio
async def test_every_get_documents_denied_and_wrong_method(spec):
    for path, operations in spec["paths"].items():
        if "get" in operations:
            assert {"400", "403", "404", "405"} <= set(operations["get"]["responses"]), path
        if "post" in operations:
            assert {"302", "403", "405", "413", "415"} <= set(operations["post"]["responses"]), path


@pytest.mark.asyncio
async def test_a_missing_required_session_id_is_a_bad_request(ds):
    response = await ds.client.get(f"{API}/session-query/events/search", params={"query": "file"})
    assert response.status_code == 400
    assert response.json() == {
        "ok": False,
        "error": {"code": "SESSION_QUERY_INVALID_QUERY", "message": "missing required parameter 'sessionId'"},
    }


@pytest_asyncio.fixture
async def writable(web_db, tmp_path):
    """(datasette with a memory root and root enabled, a remember record)."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "decision.md").write_text("# We chose SQLite\n")
    config = {"plugins": {"datasette-obelisk": {"memory_roots": [str(root)]}}}
    ds = make_datasette(copy_db(web_db, tmp_path / "obelisk.db"), config=config)
    ds.root_enabled = True
    await ds.invoke_startup()
    return ds, {"path": str(root / "decision.md"), "summary": "Why SQLite", "anchors": ["sqlite"]}


@pytest.mark.asyncio
async def test_write_answers_fit_their_documented_schemas(writable):
    """remember, forget, forget again (already_deleted), and a body that is not JSON nor a form (415)."""
    ds, record = writable
    spec = (await ds.client.get(f"{API}/openapi.json")).json()
    remember, forget = (spec["paths"][f"{API}/{name}"]["post"] for name in ("remember", "forget"))
    memory = await ds.client.post(f"{API}/remember", json=record, actor=ROOT)
    archive = {"id": memory.json()["id"], "reason": "superseded"}
    answers = [(remember, memory)] + [
        (forget, await ds.client.post(f"{API}/forget", json=archive, actor=ROOT)) for _ in range(2)
    ]
    plain = {"content-type": "text/plain"}
    answers.append((remember, await ds.client.post(f"{API}/remember", content=b"x", headers=plain, actor=ROOT)))
    assert [response.status_code for _, response in answers] == [200, 200, 200, 415]
    assert answers[2][1].json()["already_deleted"] is True
    for operation, response in answers:
        schema = response_schema(operation, str(response.status_code))
        assert not [e.message for e in validator(spec, schema).iter_errors(response.json())], response.text


@pytest.mark.asyncio
async def test_form_posts_are_answered_as_documented(writable):
    ds, record = writable
    remember = (await ds.client.get(f"{API}/openapi.json")).json()["paths"][f"{API}/remember"]["post"]
    redirect = await ds.client.post(f"{API}/remember", data={**record, "anchors": ""}, actor=ROOT)
    assert redirect.status_code == 302 and "Location" in remember["responses"]["302"]["headers"]
    refused = await ds.client.post(f"{API}/remember", data={"path": "/etc/passwd", "summary": "x"}, actor=ROOT)
    assert refused.headers["content-type"].startswith("text/html")
    assert "text/html" in remember["responses"][str(refused.status_code)]["content"]


def test_starting_datasette_does_not_build_the_schemas(web_db):
    """The migrations run into a scratch database only when the OpenAPI document is first asked for."""
    script = f"""
import asyncio
from datasette.app import Datasette
from datasette_obelisk.web import schemas

async def main():
    ds = Datasette([{str(web_db)!r}])
    await ds.invoke_startup()
    assert (await ds.client.get("/-/obelisk/api/sessions")).status_code == 200
    print(schemas.migrated_columns.cache_info().misses)
    for _ in range(2):
        assert (await ds.client.get("/-/obelisk/api/openapi.json")).status_code == 200
    print(schemas.migrated_columns.cache_info().misses)

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "1"]


# Requests whose SQL runs well past a millisecond on the test database: one per way a timeout is reported.
SLOW = {
    "/search": ({"q": "the"}, "OBELISK_TIMEOUT"),  # the helpers translate the interruption
    "/history/search": ({"query": "the"}, "OBELISK_TIMEOUT"),  # the endpoint translates it
    "/session-query/sessions/search": ({"query": "the"}, "SESSION_QUERY_ABORTED"),  # the contract's own code
}


@pytest.mark.asyncio
async def test_a_request_past_the_time_limit_is_a_documented_504(ds, spec, monkeypatch):
    setting = ds.setting
    monkeypatch.setattr(ds, "setting", lambda name: 1 if name == "sql_time_limit_ms" else setting(name))
    for path, (params, code) in SLOW.items():
        response = await ds.client.get(API + path, params=params)
        assert (response.status_code, response.json()["error"]["code"]) == (504, code), (path, response.text[:200])
        assert response.json()["error"]["message"] == (
            "stopped after 1 ms, Datasette's sql_time_limit_ms; a large archive may need more: "
            "datasette serve --setting sql_time_limit_ms 10000"
        )
        operation = spec["paths"][API + path]["get"]
        assert code in operation["responses"]["504"]["description"]
        assert not [e.message for e in validator(spec, response_schema(operation, "504")).iter_errors(response.json())]
    monkeypatch.undo()
    for path, (params, _) in SLOW.items():
        assert (await ds.client.get(API + path, params=params)).status_code == 200, path


@pytest.mark.asyncio
async def test_every_get_documents_its_timeout(spec):
    for path, operations in spec["paths"].items():
        if "get" in operations:
            code = "SESSION_QUERY_ABORTED" if "/session-query/" in path else "OBELISK_TIMEOUT"
            assert operations["get"]["responses"]["504"]["description"].startswith(code), path


@pytest.mark.asyncio
async def test_a_private_instance_does_not_describe_its_api(web_db):
    private = make_datasette(web_db, {"allow": {"id": "root"}})
    await private.invoke_startup()
    for path in (f"{API}/openapi.json", API):
        response = await private.client.get(path)
        assert (response.status_code, response.json()["error"]["code"]) == (403, "OBELISK_PERMISSION_DENIED")
        assert (await private.client.get(path, actor=ROOT)).json()["openapi"] == "3.1.0"


@pytest.mark.asyncio
async def test_with_cors_every_answer_carries_the_cors_headers(web_db, ds):
    cors = make_datasette(web_db, cors=True)
    await cors.invoke_startup()
    for path in (f"{API}/sessions", f"{API}/openapi.json", f"{API}/nope", "/-/obelisk/overview"):
        response = await cors.client.get(path)
        assert response.headers["access-control-allow-origin"] == "*", path
        assert "Authorization" in response.headers["access-control-allow-headers"], path
        assert "access-control-allow-origin" not in (await ds.client.get(path)).headers, path
    assert (await cors.client.get(f"{API}/sessions")).headers["access-control-expose-headers"] == "Link, X-Total-Count"
    preflight = await cors.client.options(f"{API}/remember")
    assert (preflight.status_code, preflight.headers["access-control-allow-methods"]) == (200, "GET, POST, HEAD, OPTIONS")
    assert (await ds.client.options(f"{API}/sessions")).status_code == 405


@pytest.mark.asyncio
async def test_the_documented_thread_limit_is_the_bound_thread_enforces_when_asked(ds, monkeypatch):
    """/thread's ``limit`` maximum is ``MAX_THREAD`` as thread() reads it when called, not the
    value it had when the endpoints were first imported (a test lowering it while they were
    left it documented for every later test)."""
    import datasette_obelisk.web.api_helpers  # noqa: F401 (the endpoints, imported before the value changes)
    from datasette_obelisk.query import obelisk

    def documented(spec) -> int:
        [param] = [p for p in spec["paths"][f"{API}/thread"]["get"]["parameters"] if p["name"] == "limit"]
        return param["schema"]["maximum"]

    real = obelisk.MAX_THREAD
    monkeypatch.setattr(obelisk, "MAX_THREAD", 7)
    assert documented((await ds.client.get(f"{API}/openapi.json")).json()) == 7
    monkeypatch.undo()
    assert documented((await ds.client.get(f"{API}/openapi.json")).json()) == real
