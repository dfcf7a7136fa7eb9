"""Idempotency-Key on POST /v1/loom/runs/{id}/outcome (a run really awaiting an outcome)."""

from __future__ import annotations

from support.loom import open_thread, post, wait_run

SERVER_SETTINGS = {"outbound_timeout": 1.0}


def test_outcome_replays_the_first_response(http, tenant, toolhost):
    h = tenant.headers("web:otto")
    thread = open_thread(http, h, tenant.agent)
    run_id = post(http, h, thread, 'call: transfer {"amount": 5}')["run_id"]
    run = wait_run(http, h, run_id)
    assert run["state"] == "awaiting_outcome", run
    [pending] = run["pending"]["tool_calls"]
    body = {"tool_call_id": pending["id"], "state": "occurred", "detail": {"bank_ref": "B7"}}
    keyed = {**h, "Idempotency-Key": "outcome-1"}
    first = http.post(f"/v1/loom/runs/{run_id}/outcome", json=body, headers=keyed)
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    wait_run(http, h, run_id, states=("closed", "failed"))
    # The replay is the first response (the run as it was then), not the run's state now.
    again = http.post(f"/v1/loom/runs/{run_id}/outcome", json=body, headers=keyed)
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json() and again.json()["data"]["state"] != "closed"
    other = http.post(f"/v1/loom/runs/{run_id}/outcome", json={**body, "state": "failed"}, headers=keyed)
    assert other.status_code == 409 and other.json()["error"]["code"] == "idempotency_key_reused"
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    assert trace["turns"][0]["tool_calls"][0]["outcome"]["detail"] == {"bank_ref": "B7"}
    assert len(toolhost.calls("/tools/transfer")) == 1
