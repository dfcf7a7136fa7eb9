"""What issue 30 asked of the OpenAPI document, and the server behaviour that makes it true:
one enum per concept, every status the server sends declared with its headers, examples that
match their schemas, `servers`, `security: []` where no credential is sent; /docs "Try it out"
with a workspace key from the server's own origin; Service-Run and unknown query parameters
refused as the document says."""

from __future__ import annotations

import uuid
from collections import defaultdict

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from heddle.errors import ERROR_CODES

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def doc(server):
    with server.client() as c:
        return c.get("/openapi.json").json()


def operations(doc):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield path, method, op


def test_each_enum_is_declared_once(doc):
    where: dict[tuple, list[str]] = defaultdict(list)

    def walk(node, at):
        if isinstance(node, dict):
            if "enum" in node:
                where[tuple(node["enum"])].append(at)
            for key, value in node.items():
                walk(value, f"{at}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{at}/{i}")

    walk(doc, "#")
    assert {k: v for k, v in where.items() if len(v) > 1} == {}
    schemas = doc["components"]["schemas"]
    for name in ("RunState", "ToolCallStatus", "Interaction", "Risk", "Reliability", "OutcomeState", "IfBusy"):
        assert schemas[name]["type"] == "string" and schemas[name]["enum"], name
    ref = "#/components/schemas/RunState"
    assert schemas["Run"]["properties"]["state"]["$ref"] == ref
    assert schemas["RunRef"]["properties"]["state"]["$ref"] == ref
    assert "state" not in schemas["Trace"].get("properties", {}) or schemas["Trace"]["properties"]["state"]["$ref"] == ref
    call = schemas["ToolCall"]["properties"]
    assert {call[f]["$ref"].rsplit("/", 1)[1] for f in ("status", "interaction", "risk", "reliability")} == {
        "ToolCallStatus", "Interaction", "Risk", "Reliability"}
    from heddle.loom.states import CALL_STATUSES

    assert tuple(schemas["ToolCallStatus"]["enum"]) == CALL_STATUSES


def test_if_busy_is_optional(doc):
    body = doc["components"]["schemas"]["PostMessage"]
    assert body["required"] == ["content"] and body["properties"]["if_busy"]["default"] == "reject"


def test_servers_and_security(doc):
    assert doc["servers"] == [{"url": "/", "description": doc["servers"][0]["description"]}]
    for path in ("/healthz", "/readyz"):
        assert doc["paths"][path]["get"]["security"] == []
    for hook in doc["webhooks"].values():
        assert hook["post"]["security"] == []
    for path, method, op in operations(doc):
        if path.startswith("/v1/"):
            assert op["security"], (method, path)


def test_every_status_the_server_sends_is_declared(doc):
    headers = doc["components"]["headers"]
    assert set(headers) == {"Request-Id", "Retry-After", "Idempotent-Replayed"}
    for path, method, op in operations(doc):
        responses = op["responses"]
        assert responses["default"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorEnvelope")
        assert "405" in responses, (method, path)
        for status, response in responses.items():
            assert response["headers"]["Request-Id"] == {"$ref": "#/components/headers/Request-Id"}
            if status in ("429", "503"):
                assert response["headers"]["Retry-After"] == {"$ref": "#/components/headers/Retry-After"}
        if not path.startswith("/v1/"):
            continue
        assert {"400", "401", "405", "429", "431", "500", "503"} <= set(responses), (method, path)
        if "requestBody" in op:
            assert {"408", "413", "415"} <= set(responses), (method, path)
            assert "json_too_deep" in responses["400"]["description"]
        if any(p["name"] == "Idempotency-Key" for p in op.get("parameters", [])):
            for status in (s for s in responses if s.startswith("2")):
                assert "Idempotent-Replayed" in responses[status]["headers"], (method, path, status)
    declared = {code for _, _, op in operations(doc) for r in op["responses"].values()
                for code in ERROR_CODES if f"`{code}`" in r.get("description", "")}
    assert {"method_not_allowed", "request_timeout", "service_unavailable", "rate_limited"} <= declared
    assert [c["code"] for c in doc["info"]["x-error-codes"]] == list(ERROR_CODES)


def test_every_example_matches_its_schema(doc):
    registry = Registry().with_resource("urn:heddle", Resource.from_contents(
        {**doc, "$schema": "https://json-schema.org/draft/2020-12/schema"}))
    checked = 0
    for name, schema in doc["components"]["schemas"].items():
        for example in schema.get("examples", []):
            validator = Draft202012Validator({"$ref": f"urn:heddle#/components/schemas/{name}"}, registry=registry)
            errors = [e.message for e in validator.iter_errors(example)]
            assert not errors, (name, errors)
            checked += 1
    assert checked >= 10


def test_a_workspace_key_works_from_the_servers_own_pages(server, http, tenant):
    """/docs "Try it out": the browser sends `Origin: <this server>` with every POST."""
    own = {**tenant.headers(), "Origin": server.base_url}
    found = http.post("/v1/identify", json={"identifier": "DEUTDEFF"}, headers=own)
    assert found.status_code == 200, found.text
    thread = http.post("/v1/loom/threads", json={"agent": "agent_none"}, headers=own)  # past authentication
    assert thread.status_code == 404 and thread.json()["error"]["code"] == "agent_not_found", thread.text
    for origin in ("https://app.example.com", "null", server.base_url.replace("127.0.0.1", "localhost"),
                   server.base_url + "/docs", "ftp://" + server.base_url.split("://", 1)[1]):
        refused = http.post("/v1/identify", json={"identifier": "DEUTDEFF"}, headers={**own, "Origin": origin})
        assert refused.status_code == 403, origin
        assert refused.json()["error"]["code"] == "secret_key_in_browser"


def test_service_run_must_be_a_run_id(http, tenant):
    assert http.get("/v1/workspace", headers=tenant.headers(**{"Service-Run": str(uuid.uuid4())})).status_code == 200
    for bad in ("", "run-1", str(uuid.uuid4()).replace("-", ""), "x" * 36):
        r = http.get("/v1/workspace", headers=tenant.headers(**{"Service-Run": bad}))
        assert r.status_code == 400, bad
        assert r.json()["error"]["code"] == "invalid_request"
        assert r.json()["error"]["details"][0]["field"] == "Service-Run"


def test_an_unknown_query_parameter_is_refused(http, tenant):
    assert http.get("/v1/loom/threads", params={"limit": 5}, headers=tenant.headers()).status_code == 200
    r = http.get("/v1/loom/threads", params={"limt": 5}, headers=tenant.headers())
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
    assert r.json()["error"]["details"] == [{"location": "query", "field": "limt", "message": "unknown parameter"}]
    assert http.get("/v1/workspace?x=1", headers=tenant.headers()).status_code == 400


def test_try_it_out_defaults_are_meant_to_be_sent(doc):
    # Issue 41: /docs filled POST /v1/loom/threads with a made-up agent and `"subject_ref": "string"`.
    # Every JSON request body carries examples (Swagger UI fills in the first), each valid against
    # the body's schema, none sending an optional field for the sake of it.
    registry = Registry().with_resource("urn:heddle", Resource.from_contents(
        {**doc, "$schema": "https://json-schema.org/draft/2020-12/schema"}))
    bodies = 0
    for path, method, op in operations(doc):
        media = op.get("requestBody", {}).get("content", {}).get("application/json")
        if media is None:
            continue
        schema_ref = media["schema"]["$ref"]
        name = schema_ref.rsplit("/", 1)[1]
        examples = [e["value"] for e in media.get("examples", {}).values()]
        examples += doc["components"]["schemas"][name].get("examples", [])
        assert examples, (method, path)
        validator = Draft202012Validator({"$ref": f"urn:heddle{schema_ref}"}, registry=registry)
        for example in examples:
            assert not [e.message for e in validator.iter_errors(example)], (method, path, example)
            assert "string" not in str(example).lower(), (method, path, example)
        bodies += 1
    assert bodies >= 6
    thread = doc["paths"]["/v1/loom/threads"]["post"]["requestBody"]["content"]["application/json"]
    (first,) = thread["examples"].values()
    # the one id only the caller has, named as a placeholder rather than made up
    assert set(first["value"]) == {"agent"} and first["value"]["agent"].startswith("agent_replace")
    assert "heddle agent create" in first["description"]
    # An optional header with an example would be sent by "Try it out" (a made-up connection is 400).
    # Service-Subject keeps `web:alice`: any subject is accepted with the workspace key /docs
    # authorizes with, and without one a thread call is 400 `subject_required`.
    for path, method, op in operations(doc):
        for parameter in op.get("parameters", []):
            if parameter["in"] == "header" and not parameter.get("required") and parameter["name"] != "Service-Subject":
                assert "example" not in parameter and "examples" not in parameter, (method, path, parameter["name"])


def test_the_error_table_comes_after_the_operations(doc):
    # The overview points to it; the table itself is the last tag, after every operation's tag.
    assert "| code |" not in doc["info"]["description"] and "errors" in doc["info"]["description"]
    assert doc["tags"][-1]["name"] == "errors"
    assert all(f"`{code}`" in doc["tags"][-1]["description"] for code in ERROR_CODES)
    used = {tag for _, _, op in operations(doc) for tag in op.get("tags", [])}
    assert "errors" not in used and used <= {t["name"] for t in doc["tags"][:-1]}
