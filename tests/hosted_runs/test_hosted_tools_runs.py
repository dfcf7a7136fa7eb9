"""Runs calling hosted tools end to end: signatures, tokens, retries, outcomes, mint flow."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

from support.loom import open_thread, post, wait_run

SERVER_SETTINGS = {"outbound_timeout": 1.0}


def independent_signature(secret: str, t: str, method: str, path: str, body: bytes) -> str:
    """Written from the spec's text, not from heddle's code."""
    digest = base64.b64encode(hashlib.sha256(body).digest()).decode() if body else ""
    return hmac.new(secret.encode(), f"{t}.{method}.{path}.{digest}".encode(), hashlib.sha256).hexdigest()


def run_tool(http, tenant, content: str, subject: str = "web:alice"):
    h = tenant.headers(subject)
    thread = open_thread(http, h, tenant.agent)
    data = post(http, h, thread, content)
    return h, thread, data["run_id"], wait_run(http, h, data["run_id"])


def tool_call(http, h, run_id, n=0):
    return http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"][0]["tool_calls"][n]


def test_auto_tool_relay_with_mint(http, tenant, toolhost):
    h, thread, run_id, run = run_tool(http, tenant, "call: balance {}")
    assert run["state"] == "closed", run
    assert run["connection"]["name"] == "bank"
    call = tool_call(http, h, run_id)
    assert call["status"] == "succeeded" and call["result"] == {"balance": 10, "currency": "USD"}
    assert call["interaction"] == "auto" and call["reliability"] == "idempotent" and len(call.get("result")) == 2
    assert toolhost.mints == 1
    [req] = toolhost.calls("/tools/balance")
    assert req.body == {"tool": "balance", "tool_call_id": call["id"], "run_id": run_id, "thread_id": thread,
                        "subject": "web:alice", "args": {}}
    assert req.headers["idempotency-key"] == call["id"]
    assert req.claims["sub"] == "web:alice" and "my-app" in req.claims["aud"]
    sig = dict(p.split("=", 1) for p in req.headers["service-signature"].split(","))
    expected = independent_signature(toolhost.request_secret, sig["t"], "POST", "/tools/balance", req.raw)
    assert sig["v1"] == expected and abs(int(sig["t"]) - time.time()) < 60
    # the minted token is cached: a second run for the same subject does not mint again
    run_tool(http, tenant, "call: balance {}", subject="web:alice")
    assert toolhost.mints == 1


def test_confirm_tool_waits_for_outcome(http, tenant, toolhost):
    h, thread, run_id, run = run_tool(http, tenant, 'call: transfer {"amount": 5}')
    assert run["state"] == "awaiting_outcome" and not run["terminal"]
    [pending] = run["pending"]["tool_calls"]
    assert pending["status"] == "awaiting_outcome" and pending["patch_ref"].startswith("tr_")
    assert pending["risk"] == "high" and pending["reliability"] == "at_most_once"
    # nothing may interleave while the side effect is unconfirmed
    busy = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hello?"}, headers=h)
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "run_active"
    bad = http.post(f"/v1/loom/runs/{run_id}/outcome", json={"tool_call_id": "nope", "state": "occurred"}, headers=h)
    assert bad.status_code == 404
    bad = http.post(f"/v1/loom/runs/{run_id}/outcome", json={"tool_call_id": pending["id"], "state": "maybe"}, headers=h)
    assert bad.status_code == 400
    done = http.post(f"/v1/loom/runs/{run_id}/outcome", headers=h,
                     json={"tool_call_id": pending["id"], "state": "occurred", "detail": {"bank_ref": "B1"}})
    assert done.status_code == 200
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "closed" and "occurred" in run["latest_message"]["content"]
    call = tool_call(http, h, run_id)
    assert call["status"] == "resolved" and call["outcome"]["state"] == "occurred"
    assert call["outcome"]["detail"] == {"bank_ref": "B1"} and call["outcome"]["created_at"].endswith("Z")
    # a retried outcome is a no-op that keeps the first one
    again = http.post(f"/v1/loom/runs/{run_id}/outcome", headers=h,
                      json={"tool_call_id": pending["id"], "state": "failed", "detail": {"x": 1}})
    assert again.status_code == 200 and again.json()["data"]["state"] == "closed"
    assert tool_call(http, h, run_id)["outcome"]["state"] == "occurred"
    assert len(toolhost.calls("/tools/transfer")) == 1


def test_outcome_on_a_run_not_awaiting_is_409(http, tenant, toolhost):
    h, thread, run_id, run = run_tool(http, tenant, "ask: sure?")
    call = tool_call(http, h, run_id)  # the ask_user call: not awaiting an outcome
    resp = http.post(f"/v1/loom/runs/{run_id}/outcome", json={"tool_call_id": call["id"], "state": "occurred"},
                     headers=h)
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "run_not_awaiting_outcome"


def test_idempotent_tool_is_retried_after_503(http, tenant, toolhost):
    h, thread, run_id, run = run_tool(http, tenant, "call: flaky {}")
    assert run["state"] == "closed"
    call = tool_call(http, h, run_id)
    assert call["status"] == "succeeded" and call["result"] == {"ok": True}
    reqs = toolhost.calls("/tools/flaky")
    assert len(reqs) == 2 and len({r.headers["idempotency-key"] for r in reqs}) == 1
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    attempts = trace["turns"][0]["tool_calls"][0]
    assert attempts["status"] == "succeeded"


def test_at_most_once_timeout_goes_to_awaiting_outcome(http, tenant, toolhost):
    h, thread, run_id, run = run_tool(http, tenant, "call: slow {}")
    assert run["state"] == "awaiting_outcome", run
    [pending] = run["pending"]["tool_calls"]
    assert pending["name"] == "slow" and pending["result"]["error"]["code"] in ("timeout", "unknown_fate")
    assert len(toolhost.calls("/tools/slow")) == 1  # never retried
    resp = http.post(f"/v1/loom/runs/{run_id}/outcome", json={"tool_call_id": pending["id"], "state": "failed"},
                     headers=h)
    assert resp.status_code == 200
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"


def test_mint_failure_fails_the_tool_call_not_the_service(http, tenant, toolhost):
    toolhost.mint_status = 500
    h, thread, run_id, run = run_tool(http, tenant, "call: balance {}", subject="web:nomint")
    assert run["state"] == "closed"
    call = tool_call(http, h, run_id)
    assert call["status"] == "failed" and call["result"]["error"]["code"] == "mint_failed"
    assert toolhost.calls("/tools/balance") == []


def test_no_mint_url_is_a_clear_tool_error(http, tenant, toolhost):
    tenant.update(mint_url="")
    h, thread, run_id, run = run_tool(http, tenant, "call: balance {}", subject="web:nomint2")
    call = tool_call(http, h, run_id)
    assert call["status"] == "failed" and call["result"]["error"]["code"] == "mint_not_configured"
