"""Every bad request gets the spec's error envelope, against the real server, on both databases."""

from __future__ import annotations

import json

import pytest

SERVER_SETTINGS = {"max_body_bytes": 4096}


def assert_error(resp, status: int, code: str):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["status"] == "error"
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert resp.headers.get("request-id")
    return body


def test_health_and_ready(http):
    assert http.get("/healthz").json() == {"status": "success", "data": {"ok": True, "version": "1.0.0"}}
    ready = http.get("/readyz")
    assert ready.status_code == 200 and ready.json()["data"]["database"] == "ok"


def test_request_id_is_returned_and_echoed(http):
    generated = http.get("/healthz").headers["request-id"]
    assert len(generated) == 32
    assert http.get("/healthz", headers={"Request-Id": "abc-123"}).headers["request-id"] == "abc-123"
    # a hostile request id is replaced, never reflected
    assert http.get("/healthz", headers={"Request-Id": "x" * 300}).headers["request-id"] != "x" * 300


@pytest.mark.parametrize("sent, kept", [
    ("0f8fad5b-d9cb-469f-a165-70867728950e", True),  # a UUID
    ("4bf92f3577b34da6a3ce929d0e0e4736", True),  # a W3C trace id
    ("lb-7f3a.req:42_x", True),
    ("x" * 64, True),
    ("x" * 65, False),  # longer than 64
    ("a b", False),  # outside the charset: space
    ("<script>", False),
    ("id/1", False),
    ("", False),
])
def test_a_valid_x_request_id_is_kept_and_an_invalid_one_ignored(http, sent, kept):
    echoed = http.get("/healthz", headers={"X-Request-Id": sent}).headers["request-id"]
    if kept:
        assert echoed == sent
    else:
        assert echoed != sent and len(echoed) == 32  # a fresh one


def test_request_id_wins_over_x_request_id(http):
    both = http.get("/healthz", headers={"Request-Id": "mine", "X-Request-Id": "proxy"})
    assert both.headers["request-id"] == "mine"
    invalid_first = http.get("/healthz", headers={"Request-Id": "not valid", "X-Request-Id": "proxy"})
    assert invalid_first.headers["request-id"] == "proxy"


def test_unknown_route_is_404_envelope(http):
    body = assert_error(http.get("/v1/nope"), 404, "not_found")
    assert "/v1/nope" in body["error"]["message"]


def test_wrong_method_is_405_envelope(http):
    assert_error(http.delete("/v1/workspace"), 405, "method_not_allowed")


def test_missing_credentials_is_401(http):
    assert_error(http.get("/v1/workspace"), 401, "unauthorized")


@pytest.mark.parametrize("header", [
    "Bearer", "Basic abc", "Bearer sk_live_short", "Bearer not-a-key", "Bearer sk_live_" + "a" * 43,
    "Bearer a b", "Bearer " + "x" * 9000,
])
def test_malformed_or_unknown_credentials_are_401(http, header):
    assert_error(http.get("/v1/workspace", headers={"Authorization": header}), 401, "unauthorized")


def test_relay_secret_works_and_is_never_echoed(http, tenant):
    resp = http.get("/v1/workspace", headers=tenant.headers())
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["id"] == tenant.workspace_id and data["key"] == {"id": tenant.key_id, "mode": "live"}
    assert data["balance_credits"] == 100
    assert tenant.secret not in resp.text


def test_test_mode_key_spends_the_same_workspace(http, tenant):
    key_id, secret = tenant.new_key("test")
    assert secret.startswith("sk_test_")
    data = http.get("/v1/workspace", headers={"Authorization": f"Bearer {secret}"}).json()["data"]
    assert data["id"] == tenant.workspace_id and data["key"]["mode"] == "test"


def test_revoked_key_is_401_on_the_next_request(http, tenant):
    key_id, secret = tenant.new_key()
    headers = {"Authorization": f"Bearer {secret}"}
    assert http.get("/v1/workspace", headers=headers).status_code == 200
    from heddle.workspaces import service as ws_service

    tenant.run(lambda s: ws_service.revoke_key(s, key_id))
    body = assert_error(http.get("/v1/workspace", headers=headers), 401, "unauthorized")
    assert "revoked" in body["error"]["message"]


def test_secret_from_a_browser_is_refused(http, tenant):
    resp = http.get("/v1/workspace", headers={**tenant.headers(), "Origin": "https://app.example.com"})
    assert_error(resp, 403, "secret_key_in_browser")


def test_oversized_body_is_413(http, tenant):
    body = json.dumps({"identifier": "x" * 10_000})
    resp = http.post("/v1/workspace", content=body, headers={**tenant.headers(), "Content-Type": "application/json"})
    assert_error(resp, 413, "payload_too_large")


def test_oversized_chunked_body_is_413(http, tenant):
    def chunks():
        for _ in range(10):
            yield b"x" * 1000

    # no Content-Length: the limit is enforced while the body streams in
    resp = http.post("/v1/identify", content=chunks(),
                     headers={**tenant.headers(subject=None), "Content-Type": "application/json"})
    assert "content-length" not in resp.request.headers
    assert_error(resp, 413, "payload_too_large")
    assert tenant.balance_micro() == tenant.ledger_sum()


def test_wrong_content_type_is_415(http, tenant):
    resp = http.post("/v1/workspace", content=b"a=b",
                     headers={**tenant.headers(), "Content-Type": "text/plain"})
    assert_error(resp, 415, "unsupported_media_type")


def test_openapi_document(http):
    doc = http.get("/openapi.json").json()
    assert doc["info"]["version"] == "1.0.0"
    codes = {c["code"] for c in doc["info"]["x-error-codes"]}
    assert {"invalid_request", "unauthorized", "insufficient_credits", "run_active"} <= codes
    paths = [p for p in doc["paths"] if p not in ("/healthz", "/readyz")]
    assert paths and all(p.startswith("/v1/") for p in paths)
    assert http.get("/docs").status_code == 200


def test_metrics_exposed(http):
    http.get("/healthz")
    text = http.get("/metrics").text
    assert "heddle_http_requests_total" in text


def test_request_log_records_v1_calls(server, http, tenant):
    http.get("/v1/workspace", headers=tenant.headers())
    http.get("/v1/workspace", headers={"Authorization": "Bearer sk_live_" + "z" * 43})
    server.flush_request_log()
    from sqlalchemy import select

    from heddle.observability.models import RequestLogEntry

    rows = tenant.run(lambda s: s.scalars(select(RequestLogEntry).where(
        RequestLogEntry.workspace_id == tenant.workspace_id)))
    rows = list(rows)
    assert len(rows) == 1
    row = rows[0]
    assert (row.method, row.path, row.status, row.key_id, row.auth_mode) == (
        "GET", "/v1/workspace", 200, tenant.key_id, "relay")
    assert row.latency_ms >= 0


def test_errors_doc_is_generated_from_the_table():
    from pathlib import Path

    from heddle.openapi import errors_document

    doc = Path(__file__).parents[2] / "docs" / "errors.md"
    assert doc.read_text() == errors_document(), "regenerate docs/errors.md from heddle.openapi.errors_document()"
