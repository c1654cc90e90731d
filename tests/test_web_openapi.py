"""The OpenAPI document is true: every route is in it, and every answer fits it."""

from __future__ import annotations

import re

import pytest
import pytest_asyncio

from datasette_obelisk.web.api import UNKNOWN_PATH
from datasette_obelisk.web.routes import routes
from schema_check import errors
from web_fixtures import WORKFLOW_RUN, XSS_SESSION, ds, make_datasette, web_db  # noqa: F401 (fixtures)

API = "/-/obelisk/api"
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
}
SKIP_OPTIONAL = {"cursor"}  # only a cursor the endpoint returned is valid


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
    undocumented = (f"^{API}/openapi.json$", UNKNOWN_PATH)
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
async def test_every_documented_parameter_is_accepted(ds, spec):
    for path, operations in spec["paths"].items():
        operation = operations.get("get")
        if operation is None:
            continue
        base = EXAMPLES.get(api_path(path), {})
        for parameter in operation["parameters"]:
            name = parameter["name"]
            if parameter["in"] != "query" or parameter["required"] or name in SKIP_OPTIONAL or name == "db":
                continue
            kind = parameter["schema"].get("type")
            value = OPTIONAL_VALUES[kind] if kind in ("integer", "boolean") else OPTIONAL_VALUES.get(name, "x")
            response = await ds.client.get(concrete(path), params={**base, name: value})
            assert response.status_code == 200, (path, name, response.text[:300])


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


@pytest.mark.asyncio
async def test_every_documented_request_answers_what_its_schema_says(ds, spec):
    checked = 0
    for path, operation, params in documented_requests(spec):
        response = await ds.client.get(concrete(path), params=params)
        status = str(response.status_code)
        assert status in operation["responses"], (path, params, status, response.text[:300])
        schema = response_schema(operation, status)
        problems = [e.message for e in validator(spec, schema).iter_errors(response.json())]
        assert not problems, (path, params, problems[:5])
        checked += 1
    assert checked >= 80


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
