"""A confirm tool's run owes `run.awaiting_outcome`, then `run.closed`; its event stream shows
the wait and ends after the outcome closes it."""

from __future__ import annotations

import time

from support.loom import open_thread, post, wait_run
from support.sse import collect
from webhooks.webhook_testkit import Receiver, spec_verify

SERVER_SETTINGS = {"outbound_timeout": 1.0, "webhook_retry_base_seconds": 0.2, "webhook_poll_seconds": 0.1}


def test_awaiting_outcome_and_closed_webhooks(http, tenant, toolhost):
    from heddle.webhooks import service as webhook_service

    receiver = Receiver()
    try:
        endpoint = tenant.run(lambda s: webhook_service.configure(s, tenant.workspace_id, url=receiver.url))
        h = tenant.headers("web:alice")
        run_id = post(http, h, open_thread(http, h, tenant.agent), 'call: transfer {"amount": 5}')["run_id"]
        run = wait_run(http, h, run_id)
        assert run["state"] == "awaiting_outcome"
        (waiting,) = receiver.wait_for(1)
        assert waiting.event["type"] == "run.awaiting_outcome" and waiting.event["data"]["id"] == run_id
        assert waiting.event["data"]["pending"]["type"] == "outcome"
        assert spec_verify(waiting.headers["Service-Signature"], "POST", waiting.path, waiting.body,
                           endpoint.secret, waiting.at)
        call = run["pending"]["tool_calls"][0]
        done = http.post(f"/v1/loom/runs/{run_id}/outcome", headers=h,
                         json={"tool_call_id": call["id"], "state": "occurred"})
        assert done.status_code == 200
        wait_run(http, h, run_id, states=("closed",))
        closed = receiver.wait_for(2)[1]
        assert closed.event["type"] == "run.closed" and closed.event["id"] != waiting.event["id"]
        time.sleep(0.3)
        assert len(receiver.received) == 2
        events, ended = collect(http, f"/v1/loom/runs/{run_id}/events", h)
        assert ended
        states = [e["data"]["state"] for e in events if e["event"] == "run.updated"]
        assert states == ["running", "awaiting_outcome", "running", "closed"]
    finally:
        receiver.close()
