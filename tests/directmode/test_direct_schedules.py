"""Schedules in direct mode: a session token schedules in its own subject's threads only, and the
scheduled message fires there as that subject's (issue 45)."""

from __future__ import annotations

import datetime as dt
import time

from direct.direct_testkit import sign
from support.loom import SCRIPTED_AGENT, wait_run

SERVER_SETTINGS = {"schedule_poll_seconds": 0.2}


def token(tenant, keys, sub: str) -> dict:
    now = int(time.time())
    claims = {"iss": tenant.key_id, "sub": sub, "aud": ["service"], "iat": now, "exp": now + 120}
    return {"Authorization": f"Bearer {sign(keys['ES256'], claims)}"}


def test_a_direct_caller_schedules_in_its_own_thread_only(http, direct_tenant, signing_keys):
    agent = direct_tenant.add_agent(SCRIPTED_AGENT)
    dora, eve = token(direct_tenant, signing_keys, "u_dora"), token(direct_tenant, signing_keys, "u_eve")
    thread = http.post("/v1/loom/threads", json={"agent": agent}, headers=dora).json()["data"]["id"]
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=10)).isoformat()
    resp = http.post(f"/v1/loom/threads/{thread}/schedules", json={"content": "ping later", "at": soon}, headers=eve)
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
    resp = http.post(f"/v1/loom/threads/{thread}/schedules", json={"content": "ping later", "at": soon}, headers=dora)
    assert resp.status_code == 201, resp.text
    made = resp.json()["data"]
    assert http.delete(f"/v1/loom/schedules/{made['id']}", headers=eve).status_code == 404
    deadline = time.monotonic() + 45
    fired = []
    while time.monotonic() < deadline and not fired:
        items = http.get(f"/v1/loom/threads/{thread}/messages", headers=dora).json()["data"]["items"]
        fired = [m for m in items if m["scheduled"]]
        time.sleep(0.1)
    assert fired and fired[0]["scheduled"]["schedule_id"] == made["id"]
    run = wait_run(http, dora, fired[0]["run_id"])
    assert run["state"] == "closed" and run["origin"] == "schedule"
