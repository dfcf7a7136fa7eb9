"""Per-key and per-subject rate limits through the real server: 429 `rate_limited` with
Retry-After, workspace overrides, and buckets that do not leak into each other."""

from __future__ import annotations

import time

import pytest

from support.loom import SCRIPTED_AGENT
from support.tenants import make_tenant

# Small server defaults so the tests reach them quickly; the windows are short so they refill.
SERVER_SETTINGS = {"rate_limit_per_key": "8/2second", "rate_limit_per_subject": "3/2second"}


def limited(resp, scope: str) -> int:
    assert resp.status_code == 429, resp.text
    error = resp.json()["error"]
    assert error["code"] == "rate_limited" and error["details"]["scope"] == scope
    retry_after = int(resp.headers["retry-after"])
    assert 1 <= retry_after <= 2 and error["details"]["retry_after"] == retry_after
    return retry_after


def test_per_subject_limit_then_refill(http, server):
    tenant = make_tenant(server)
    statuses = [http.get("/v1/loom/threads", headers=tenant.headers("web:sue")).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    retry_after = limited(http.get("/v1/loom/threads", headers=tenant.headers("web:sue")), "subject")
    # another subject of the same key has its own bucket
    assert http.get("/v1/loom/threads", headers=tenant.headers("web:tom")).status_code == 200
    time.sleep(retry_after + 0.1)
    assert http.get("/v1/loom/threads", headers=tenant.headers("web:sue")).status_code == 200


def test_per_key_limit_covers_every_endpoint_and_not_other_keys(http, server):
    tenant = make_tenant(server)
    _, other_secret = tenant.new_key()
    results = []
    for i in range(8):
        path = "/v1/workspace" if i % 2 else "/v1/loom/threads"
        results.append(http.get(path, headers=tenant.headers(f"web:u{i}")).status_code)
    assert results == [200] * 8
    limited(http.post("/v1/identify", json={"identifier": "DEUTDEFF"}, headers=tenant.headers(None)), "key")
    # a refused request is not billed and not counted against the subject
    assert tenant.balance_micro() == tenant.ledger_sum() == 100_000_000
    assert http.get("/v1/workspace", headers={"Authorization": f"Bearer {other_secret}"}).status_code == 200
    # another workspace is untouched
    assert http.get("/v1/workspace", headers=make_tenant(server).headers(None)).status_code == 200


def test_workspace_override_and_off(http, server):
    tenant = make_tenant(server)
    tenant.update(rate_limit_per_subject="1/2second")
    assert http.get("/v1/loom/threads", headers=tenant.headers("web:ann")).status_code == 200
    limited(http.get("/v1/loom/threads", headers=tenant.headers("web:ann")), "subject")
    tenant.update(rate_limit_per_subject="off", rate_limit_per_key="off")
    for _ in range(12):  # above both server defaults
        assert http.get("/v1/loom/threads", headers=tenant.headers("web:bea")).status_code == 200
    tenant.update(rate_limit_per_subject="default", rate_limit_per_key="default")
    codes = [http.get("/v1/loom/threads", headers=tenant.headers("web:cid")).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]


def test_direct_mode_subject_counts_too(http, server):
    """A session token's `sub` has the same per-subject bucket (and its issuing key the per-key one)."""
    from direct.direct_testkit import make_signing_key, sign

    tenant = make_tenant(server)
    key = make_signing_key("ES256", "rl")
    tenant.update(jwks_json={"keys": [key.jwk]})
    now = int(time.time())
    token = sign(key, {"iss": tenant.key_id, "sub": "u_dan", "aud": ["service"], "iat": now, "exp": now + 120})
    h = {"Authorization": f"Bearer {token}"}
    assert [http.get("/v1/loom/threads", headers=h).status_code for _ in range(3)] == [200, 200, 200]
    limited(http.get("/v1/loom/threads", headers=h), "subject")


def test_message_posts_are_limited_per_subject(http, server):
    tenant = make_tenant(server)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:eve")
    thread = http.post("/v1/loom/threads", json={"agent": agent}, headers=h).json()["data"]["id"]
    first = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hi"}, headers=h)
    assert first.status_code == 202
    http.get("/v1/loom/threads", headers=h)
    limited(http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "again"}, headers=h), "subject")


@pytest.mark.parametrize("rule", ["lots", "0/second", "10/fortnight"])
def test_bad_rule_is_refused_when_saved(server, rule):
    tenant = make_tenant(server)
    with pytest.raises(ValueError, match="rate limit"):
        tenant.update(rate_limit_per_key=rule)


def test_openapi_lists_429(http):
    paths = http.get("/openapi.json").json()["paths"]
    for path, method in (("/v1/identify", "post"), ("/v1/workspace", "get"), ("/v1/loom/threads", "post"),
                         ("/v1/loom/realtime/auth", "post")):
        assert "429" in paths[path][method]["responses"], path
