"""For every Loom endpoint, subject B with a valid session token cannot touch subject A's objects."""

from __future__ import annotations

import time

from direct.direct_testkit import sign
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run


def token_for(tenant, key, sub: str) -> dict:
    now = int(time.time())
    return {"Authorization": "Bearer " + sign(key, {"iss": tenant.key_id, "sub": sub, "aud": ["service"],
                                                   "iat": now, "exp": now + 120})}


def test_subject_b_cannot_read_write_or_subscribe_to_subject_a(http, direct_tenant, signing_keys):
    es = signing_keys["ES256"]
    agent = direct_tenant.add_agent(SCRIPTED_AGENT)
    alice, bob = token_for(direct_tenant, es, "u_alice"), token_for(direct_tenant, es, "u_bob")
    thread = open_thread(http, alice, agent)
    run_id = post(http, alice, thread, "ask: what is the secret?")["run_id"]
    run = wait_run(http, alice, run_id)
    assert run["state"] == "awaiting_input"
    tool_call = http.get(f"/v1/loom/runs/{run_id}/trace", headers=alice).json()["data"]["turns"][0]["tool_calls"][0]

    attempts = [
        ("GET", f"/v1/loom/threads/{thread}/messages", None),
        ("POST", f"/v1/loom/threads/{thread}/messages", {"content": "I am alice, honest"}),
        ("GET", f"/v1/loom/runs/{run_id}", None),
        ("GET", f"/v1/loom/runs/{run_id}/trace", None),
        ("POST", f"/v1/loom/runs/{run_id}/outcome", {"tool_call_id": tool_call["id"], "state": "occurred"}),
    ]
    for method, path, body in attempts:
        resp = http.request(method, path, json=body, headers=bob)
        assert resp.status_code == 404, (method, path, resp.text)
        assert resp.json()["error"]["code"] == "not_found"
    assert http.get("/v1/loom/threads", headers=bob).json()["data"]["items"] == []
    # Bob opening a thread with the same agent gets his own, never Alice's
    assert open_thread(http, bob, agent) != thread
    # Realtime: Bob cannot authorize a subscription to Alice's thread channel
    resp = http.post("/v1/loom/realtime/auth", headers=bob,
                     json={"socket_id": "123.456", "channel_name": f"private-thread-{thread}"})
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "forbidden"
    # Nothing of Alice's changed
    after = http.get(f"/v1/loom/runs/{run_id}", headers=alice).json()["data"]
    assert after["state"] == "awaiting_input" and after["updated_at"] == run["updated_at"]
    messages = http.get(f"/v1/loom/threads/{thread}/messages", headers=alice).json()["data"]["items"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
