"""A browser (direct mode, allowed origin) can send Idempotency-Key and read the replay marker."""

from __future__ import annotations

import time

from direct.direct_testkit import sign
from support.loom import SCRIPTED_AGENT

ORIGIN = "https://app.example.com"


def test_browser_retry_with_idempotency_key(http, direct_tenant, signing_keys):
    pre = http.options("/v1/loom/threads", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                                                    "Access-Control-Request-Headers": "authorization, idempotency-key"})
    assert pre.status_code == 204
    assert "idempotency-key" in pre.headers["access-control-allow-headers"].lower()
    agent = direct_tenant.add_agent(SCRIPTED_AGENT)
    now = int(time.time())
    token = sign(signing_keys["ES256"], {"iss": direct_tenant.key_id, "sub": "u_web", "aud": ["service"],
                                         "iat": now, "exp": now + 120})
    h = {"Authorization": f"Bearer {token}", "Origin": ORIGIN, "Idempotency-Key": "browser-1"}
    first = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    again = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    assert first.status_code == again.status_code == 201 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    exposed = again.headers["access-control-expose-headers"].lower()
    assert "idempotent-replayed" in exposed and "retry-after" in exposed
