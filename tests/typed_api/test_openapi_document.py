"""The OpenAPI document as an integrator's tools read it: valid 3.1, typed, secured, with every
Heddle header and error; /docs and /redoc work offline; OPTIONS and 405 name every method."""

from __future__ import annotations

import re

import pytest
from openapi_spec_validator import validate

from heddle.errors import ERROR_CODES

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def doc(server):
    with server.client() as c:
        return c.get("/openapi.json").json()


def v1_operations(doc):
    for path, item in doc["paths"].items():
        if path.startswith("/v1/"):
            for method, op in item.items():
                yield path, method, op


def test_valid_openapi_31_version_1_0_0(doc):
    validate(doc)
    assert doc["openapi"].startswith("3.1") and doc["info"]["version"] == "1.0.0"
    hooks = doc["webhooks"]  # what Heddle POSTs to a workspace's webhook URL
    assert set(hooks) == {"run.closed", "run.failed", "run.awaiting_input", "run.awaiting_outcome",
                          "message.feedback", "memory.created", "memory.deleted"}
    event = doc["components"]["schemas"]["WebhookEvent"]
    # A run's webhooks carry the Run, message.feedback the Feedback, memory.* the Memory.
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in event["properties"]["data"]["oneOf"]] == [
        "Run", "Feedback", "Memory"]


def test_no_422_anywhere_and_invalid_input_is_400(doc):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            # Only Heddle's own 422 codes (attachments), never FastAPI's validation answer.
            assert op["responses"].get("422", {}).get("description", "Error codes:").startswith("Error codes:"), (
                method, path)
            assert "HTTPValidationError" not in str(op["responses"].get("422")), (method, path)
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, method, op in v1_operations(doc):
        assert "invalid_request" in op["responses"]["400"]["description"], (method, path)


def resolve(doc, schema):
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def test_every_v1_operation_has_a_typed_success_body(doc):
    for path, method, op in v1_operations(doc):
        ok = [s for s in op["responses"] if s.startswith("2")]
        assert ok, (method, path)
        for status in ok:
            if "text/event-stream" in op["responses"][status]["content"]:
                continue  # GET /runs/{id}/events: Server-Sent Events, each event's data a Run or Message
            if "application/octet-stream" in op["responses"][status]["content"]:
                continue  # GET /attachments/{id}/content: the file's bytes
            if path.startswith("/v1/a2a/"):
                continue  # A2A's own JSON (agent card, JSON-RPC responses), not Heddle's envelope
            envelope = resolve(doc, op["responses"][status]["content"]["application/json"]["schema"])
            assert envelope["properties"]["status"]["const"] == "success"
            data = resolve(doc, envelope["properties"]["data"])
            assert data.get("properties"), f"{method} {path} {status}: untyped data"


def test_security_per_operation(doc):
    schemes = doc["components"]["securitySchemes"]
    assert schemes["workspaceKey"]["scheme"] == "bearer" and schemes["sessionToken"]["bearerFormat"] == "JWT"
    for path, method, op in v1_operations(doc):
        names = {name for req in op["security"] for name in req}
        if path.startswith("/v1/loom/subjects/"):  # erasure of a person: relay key only
            assert names == {"workspaceKey"}, (method, path)
        elif path.startswith(("/v1/loom/", "/v1/agui/", "/v1/a2a/")):  # Loom's auth (AG-UI, A2A: docs/interop.md)
            assert names == {"workspaceKey", "sessionToken"}, (method, path)
        else:
            assert names == {"workspaceKey"}, (method, path)


def test_headers_declared(doc):
    for path, method, op in v1_operations(doc):
        headers = {p["name"] for p in op.get("parameters", []) if p["in"] == "header"}
        assert "Service-Run" in headers, (method, path)
        if path.startswith("/v1/loom/") and not path.startswith("/v1/loom/subjects/"):
            assert "Service-Subject" in headers, (method, path)
        for response in op["responses"].values():
            assert "Request-Id" in response["headers"]
        idempotent = ("/v1/identify", "/v1/loom/threads", "/v1/loom/threads/{thread_id}/messages",
                      "/v1/loom/runs/{run_id}/outcome", "/v1/loom/runs/{run_id}/cancel")
        if "idempotency_key_reused" in ERROR_CODES and method == "post" and path in idempotent:
            assert "Idempotency-Key" in headers, (method, path)
    messages = doc["paths"]["/v1/loom/threads/{thread_id}/messages"]["post"]
    assert "Service-Connection" in {p["name"] for p in messages["parameters"]}


def test_error_responses_carry_their_codes(doc):
    for path, method, op in v1_operations(doc):
        responses = op["responses"]
        assert "unauthorized" in responses["401"]["description"], (method, path)
        for status, response in responses.items():
            if status[0] in "45":
                ref = response["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorEnvelope")
                for code in re.findall(r"`(\w+)`", response["description"]):
                    assert ERROR_CODES[code].status == int(status), (method, path, code)
        if "requestBody" in op:
            assert {"413", "415"} <= set(responses), (method, path)
    post = doc["paths"]["/v1/loom/threads/{thread_id}/messages"]["post"]["responses"]
    assert "run_active" in post["409"]["description"]
    assert "agent_not_found" in doc["paths"]["/v1/loom/threads"]["post"]["responses"]["404"]["description"]
    assert "insufficient_credits" in doc["paths"]["/v1/identify"]["post"]["responses"]["402"]["description"]
    if "rate_limited" in ERROR_CODES:
        assert all("429" in op["responses"] for _, _, op in v1_operations(doc))


def test_request_bodies_and_examples(doc):
    auth = doc["paths"]["/v1/loom/realtime/auth"]["post"]["requestBody"]["content"]
    assert set(auth) == {"application/json", "application/x-www-form-urlencoded"}
    body = resolve(doc, auth["application/x-www-form-urlencoded"]["schema"])
    assert set(body["required"]) == {"socket_id", "channel_name"}
    for name in ("Thread", "Message", "Run", "Trace", "IdentifyResult", "Workspace", "IdentifyRequest"):
        assert doc["components"]["schemas"][name]["examples"], name
    run = doc["components"]["schemas"]["Run"]
    assert resolve(doc, run["properties"]["state"])["enum"] == [
        "queued", "running", "awaiting_input", "awaiting_outcome", "closed", "failed"]
    assert {"terminal", "latest_message", "pending", "error", "connection"} <= set(run["required"])


def test_docs_and_redoc_need_no_cdn(server):
    with server.client() as c:
        for page in ("/docs", "/redoc"):
            html = c.get(page)
            assert html.status_code == 200 and "text/html" in html.headers["content-type"]
            urls = re.findall(r"""(?:src|href)=["']?([^"' >]+)""", html.text) + re.findall(r"url: '([^']+)'", html.text)
            assert urls and all(u.startswith("/") for u in urls), urls
            assert "http://" not in html.text and "https://" not in html.text.replace("https://github", "")
            for url in urls:
                if url.startswith("/_assets/"):
                    asset = c.get(url)
                    assert asset.status_code == 200 and len(asset.content) > 500, url
            assert "default-src 'self'" in html.headers["content-security-policy"]
        for bundle in ("/_assets/redoc/redoc.standalone.js", "/_assets/swagger-ui/swagger-ui-bundle.js"):
            assert not re.search(r"https://(cdn|fonts|unpkg)[.\w]*/", c.get(bundle).text), bundle
        assert c.get("/_assets/swagger-ui/LICENSE").status_code == 200
        assert c.get("/_assets/redoc/LICENSE").status_code == 200


def test_options_and_405_name_every_method(http, tenant):
    r = http.options("/v1/loom/threads")
    assert r.status_code == 204 and r.headers["allow"] == "GET, OPTIONS, POST"
    r = http.put("/v1/loom/threads", json={}, headers=tenant.headers())
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"
    assert r.headers["allow"] == "GET, OPTIONS, POST"
    r = http.delete("/v1/identify", headers=tenant.headers())
    assert r.status_code == 405 and r.headers["allow"] == "OPTIONS, POST"
    assert http.options("/v1/nothing-here").status_code == 404


def test_error_bodies_match_the_error_envelope_model(http, tenant):
    from heddle.api.envelope import ErrorEnvelope

    answers = [
        http.get("/v1/workspace"),                                                   # 401
        http.get("/v1/nothing", headers=tenant.headers()),                           # 404 route
        http.put("/v1/identify", headers=tenant.headers()),                          # 405
        http.post("/v1/identify", json={"identifier": ""}, headers=tenant.headers()),  # 400 fields
        http.post("/v1/identify", content=b"x", headers={**tenant.headers(), "Content-Type": "text/plain"}),
        http.get(f"/v1/loom/runs/{'0' * 8}-0000-0000-0000-{'0' * 12}", headers=tenant.headers()),
    ]
    assert [r.status_code for r in answers] == [401, 404, 405, 400, 415, 404]
    for r in answers:
        body = ErrorEnvelope.model_validate(r.json())
        assert body.error.code and body.error.message and r.headers["request-id"]
    assert ErrorEnvelope.model_validate(answers[3].json()).error.details[0]["field"] == "identifier"
