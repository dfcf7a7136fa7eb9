"""Direct mode: a token's `sub` is canonical too (NFC, nothing invisible, the same length limit)."""

from __future__ import annotations

import time
import unicodedata

from direct.direct_testkit import sign
from support.loom import SCRIPTED_AGENT


def token(tenant, key, sub: str) -> dict:
    now = int(time.time())
    return {"Authorization": "Bearer " + sign(key, {"iss": tenant.key_id, "sub": sub, "aud": ["service"],
                                                   "iat": now, "exp": now + 120})}


def test_nfd_and_nfc_sub_are_one_subject(http, direct_tenant, signing_keys):
    es = signing_keys["ES256"]
    agent = direct_tenant.add_agent(SCRIPTED_AGENT)
    nfc, nfd = unicodedata.normalize("NFC", "u_josé"), unicodedata.normalize("NFD", "u_josé")
    first = http.post("/v1/loom/threads", json={"agent": agent}, headers=token(direct_tenant, es, nfd))
    assert first.status_code == 201 and first.json()["data"]["subject"] == nfc
    again = http.post("/v1/loom/threads", json={"agent": agent}, headers=token(direct_tenant, es, nfc))
    assert again.status_code == 200 and again.json()["data"]["id"] == first.json()["data"]["id"]


def test_invisible_or_too_long_sub_is_refused(http, direct_tenant, signing_keys):
    es = signing_keys["ES256"]
    for sub in ("u_ali\u200bce", "u_alice ", "u" * 289):
        resp = http.get("/v1/loom/threads", headers=token(direct_tenant, es, sub))
        assert resp.status_code == 401 and "sub claim" in resp.json()["error"]["message"], resp.text
    assert http.get("/v1/loom/threads", headers=token(direct_tenant, es, "u" * 288)).status_code == 200
