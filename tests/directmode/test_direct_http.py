"""Every accepted and refused session token, answered through the real server."""

from __future__ import annotations

import time
import uuid

import pytest

from direct.direct_testkit import forge_hs256, sign, unsigned
from heddle.workspaces import service as ws_service
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run


def claims(tenant, **overrides):
    now = int(time.time())
    base = {"iss": tenant.key_id, "sub": "u_alice", "aud": ["service", "my-app"], "iat": now, "exp": now + 120}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def bearer(token: str, **extra) -> dict:
    return {"Authorization": f"Bearer {token}", **extra}


def assert_401(resp, reason: str):
    assert resp.status_code == 401, resp.text
    body = resp.json()
    assert body["error"]["code"] == "unauthorized"
    assert reason.lower() in body["error"]["message"].lower(), body["error"]["message"]


@pytest.mark.parametrize("alg", ["RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512"])
def test_every_allowed_algorithm(http, direct_tenant, signing_keys, alg):
    token = sign(signing_keys[alg], claims(direct_tenant))
    resp = http.get("/v1/loom/threads", headers=bearer(token))
    assert resp.status_code == 200, resp.text


def test_token_subject_owns_its_thread(http, direct_tenant, signing_keys):
    agent = direct_tenant.add_agent(SCRIPTED_AGENT)
    h = bearer(sign(signing_keys["ES256"], claims(direct_tenant, sub="u_dora")))
    thread = http.post("/v1/loom/threads", json={"agent": agent}, headers=h).json()["data"]
    assert thread["subject"] == "u_dora"
    run = wait_run(http, h, post(http, h, thread["id"], "hello")["run_id"])
    assert run["state"] == "closed"


def test_refused_tokens(http, direct_tenant, signing_keys):
    es, rs = signing_keys["ES256"], signing_keys["RS256"]
    t = direct_tenant
    now = int(time.time())
    cases = {
        "alg": forge_hs256(rs.public_pem, claims(t), rs.kid),                       # HS256 with the public key
        "none": unsigned(claims(t), es.kid),
        "kid": sign(es, claims(t), kid=None),                                      # missing kid
        "unknown": sign(es, claims(t), kid="nobody"),                              # unknown kid
        "audience": sign(es, claims(t, aud=["someone-else"])),
        "aud": sign(es, claims(t, aud=None)),
        "key_nope": sign(es, claims(t, iss="key_doesnotexist")),
        "secret": sign(es, claims(t, iss="sk_live_" + "a" * 43)),
        "expired": sign(es, claims(t, iat=now - 300, exp=now - 100)),
        "900": sign(es, claims(t, exp=now + 3600)),                                # too long-lived
        "not yet": sign(es, claims(t, nbf=now + 600)),
        "sub": sign(es, claims(t, sub=None)),
        "conn": sign(es, claims(t, conn="not-a-uuid")),
    }
    reasons = {"alg": "alg", "none": "alg", "kid": "kid", "unknown": "kid", "audience": "aud", "aud": "aud",
               "key_nope": "key", "secret": "secret", "expired": "expired", "900": "900", "not yet": "nbf",
               "sub": "sub", "conn": "conn"}
    for name, token in cases.items():
        resp = http.get("/v1/loom/threads", headers=bearer(token))
        assert resp.status_code == 401, (name, resp.text)
        assert resp.json()["error"]["code"] == "unauthorized"
        assert reasons[name] in resp.json()["error"]["message"].lower(), (name, resp.json()["error"]["message"])
        assert "sk_live_aaaa" not in resp.text  # a secret is never echoed
    good = sign(es, claims(t))
    head, body, sig = good.split(".")
    tampered = f"{head}.{body}.{sig[:-4]}{'AAAA' if not sig.endswith('AAAA') else 'BBBB'}"
    assert_401(http.get("/v1/loom/threads", headers=bearer(tampered)), "signature")


def test_revoked_key_and_unknown_connection(http, direct_tenant, signing_keys):
    es = signing_keys["ES256"]
    key_id, _ = direct_tenant.new_key()
    token = sign(es, claims(direct_tenant, iss=key_id))
    assert http.get("/v1/loom/threads", headers=bearer(token)).status_code == 200
    direct_tenant.run(lambda s: ws_service.revoke_key(s, key_id))
    assert_401(http.get("/v1/loom/threads", headers=bearer(token)), "revoked")
    other_conn = sign(es, claims(direct_tenant, conn=str(uuid.uuid4())))
    assert_401(http.get("/v1/loom/threads", headers=bearer(other_conn)), "conn")


def test_key_rotation_and_jwks_outage(http, direct_tenant, signing_keys, jwks_http):
    from direct.direct_testkit import make_signing_key

    es = signing_keys["ES256"]
    new = make_signing_key("ES256", f"rotated-{uuid.uuid4().hex[:6]}")
    assert http.get("/v1/loom/threads", headers=bearer(sign(es, claims(direct_tenant)))).status_code == 200
    assert_401(http.get("/v1/loom/threads", headers=bearer(sign(new, claims(direct_tenant)))), "kid")
    # publish the new key beside the old ones: both verify once the cache refreshes on the new kid
    jwks_http.publish(*(k.jwk for k in signing_keys.values()), new.jwk, path=direct_tenant.jwks_path)
    direct_tenant.server.services.jwks.invalidate()
    assert http.get("/v1/loom/threads", headers=bearer(sign(new, claims(direct_tenant)))).status_code == 200
    assert http.get("/v1/loom/threads", headers=bearer(sign(es, claims(direct_tenant)))).status_code == 200
    # the JWKS URI goes down: the still-valid cached copy keeps serving
    jwks_http.fail("status", status=503)
    try:
        assert http.get("/v1/loom/threads", headers=bearer(sign(es, claims(direct_tenant)))).status_code == 200
        # ...but with nothing cached, the token cannot be verified
        direct_tenant.server.services.jwks.invalidate()
        assert_401(http.get("/v1/loom/threads", headers=bearer(sign(es, claims(direct_tenant)))), "jwks")
    finally:
        jwks_http.recover()


def test_pasted_jwks(http, tenant, signing_keys):
    tenant.update(jwks_json={"keys": [signing_keys["PS256"].jwk]})
    assert http.get("/v1/loom/threads", headers=bearer(sign(signing_keys["PS256"], claims(tenant)))).status_code == 200
    assert_401(http.get("/v1/loom/threads", headers=bearer(sign(signing_keys["ES256"], claims(tenant)))), "kid")


def test_subject_header_with_token_is_refused(http, direct_tenant, signing_keys):
    resp = http.get("/v1/loom/threads", headers=bearer(sign(signing_keys["ES256"], claims(direct_tenant)),
                                                       **{"Service-Subject": "web:x"}))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "subject_header_with_token"


def test_identify_refuses_session_tokens(http, direct_tenant, signing_keys):
    resp = http.get("/v1/workspace", headers=bearer(sign(signing_keys["ES256"], claims(direct_tenant))))
    assert_401(resp, "workspace API key")


def test_origins_and_cors(http, direct_tenant, signing_keys):
    token = sign(signing_keys["ES256"], claims(direct_tenant))
    ok = http.get("/v1/loom/threads", headers=bearer(token, Origin="https://app.example.com"))
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "https://app.example.com" and ok.headers["vary"] == "Origin"
    bad = http.get("/v1/loom/threads", headers=bearer(token, Origin="https://evil.example.com"))
    assert bad.status_code == 403 and bad.json()["error"]["code"] == "origin_not_allowed"
    assert "access-control-allow-origin" not in bad.headers
    pre = http.options("/v1/loom/threads", headers={"Origin": "https://app.example.com",
                                                    "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "authorization,content-type"})
    assert pre.status_code == 204 and pre.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "*" not in pre.headers["access-control-allow-origin"]
    pre_bad = http.options("/v1/loom/threads", headers={"Origin": "https://evil.example.com",
                                                        "Access-Control-Request-Method": "POST"})
    assert pre_bad.status_code == 403 and "access-control-allow-origin" not in pre_bad.headers


def test_conn_claim_selects_the_connection(http, direct_tenant, signing_keys):
    async def make(s):
        return await ws_service.create_connection(s, direct_tenant.workspace_id, f"host{uuid.uuid4().hex[:6]}",
                                                  "http://127.0.0.1:9")

    conn = direct_tenant.run(make)
    agent = direct_tenant.add_agent({"name": "unpinned", "model_class": "scripted", "instructions": "", "tools": [
        {"name": "lookup", "description": "d", "path": "/tools/lookup"}]})
    es = signing_keys["ES256"]
    without = bearer(sign(es, claims(direct_tenant, sub="u_conn")))
    thread = open_thread(http, without, agent)
    resp = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hi"}, headers=without)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "connection_required"
    with_conn = bearer(sign(es, claims(direct_tenant, sub="u_conn", conn=str(conn.id))))
    run = post(http, with_conn, thread, "hello")["run"]
    assert run["connection"] == {"id": str(conn.id), "name": conn.name}
