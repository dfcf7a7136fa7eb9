"""Idempotency-Key on POST /v1/loom/runs/{id}/cancel (the run-control route uses @idempotent)."""

from __future__ import annotations

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run


def test_cancel_replays_and_refuses_the_key_for_another_run(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:cal")
    thread = open_thread(http, h, agent)
    run_id = post(http, h, thread, "ask: which account?")["run_id"]
    assert wait_run(http, h, run_id)["state"] == "awaiting_input"
    keyed = {**h, "Idempotency-Key": "cancel-1"}
    first = http.post(f"/v1/loom/runs/{run_id}/cancel", headers=keyed)
    assert first.status_code == 200 and first.json()["data"]["error"]["code"] == "cancelled"
    again = http.post(f"/v1/loom/runs/{run_id}/cancel", headers=keyed)
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    # the same key for another run's cancel is another request
    other_thread = open_thread(http, tenant.headers("web:cal2"), agent)
    other_run = post(http, tenant.headers("web:cal2"), other_thread, "ask: sure?")["run_id"]
    wait_run(http, tenant.headers("web:cal2"), other_run)
    reused = http.post(f"/v1/loom/runs/{other_run}/cancel", headers={**tenant.headers("web:cal2"),
                                                                   "Idempotency-Key": "cancel-1"})
    assert reused.status_code == 409 and reused.json()["error"]["code"] == "idempotency_key_reused"
    assert http.get(f"/v1/loom/runs/{other_run}", headers=tenant.headers("web:cal2")).json()["data"]["state"] \
        == "awaiting_input"
