"""The real pusher-js on API process A gets every event of a run that a worker process executed;
a channel signature made by API process B is accepted on A (shared credentials)."""

from __future__ import annotations

import httpx
import pytest

from direct.direct_testkit import make_signing_key
from realtime.test_app_pusher_js import NodeClient, token
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from workers.procs import start

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.node]


def test_pusher_js_on_api_a_receives_every_event_of_a_run_a_worker_executed(
        deployment_env, tmp_path, tenant, pusher_js):
    api_a = start("serve", deployment_env, tmp_path)
    api_b = start("serve", deployment_env, tmp_path)
    worker = start("worker", deployment_env, tmp_path)
    try:
        for proc in (api_a, api_b, worker):
            proc.wait_healthy()
        key = make_signing_key("ES256", "browser-key")
        tenant.update(jwks_json={"keys": [key.jwk]})
        agent = tenant.add_agent({**SCRIPTED_AGENT, "name": "rt-helper"})
        alice = {"Authorization": f"Bearer {token(tenant, key, 'u_alice')}"}
        with httpx.Client(base_url=api_b.base_url, timeout=10) as http_b:
            thread = open_thread(http_b, alice, agent)
            config = http_b.get("/v1/loom/realtime/config", headers=alice).json()["data"]
            client = NodeClient(pusher_js, {
                "key": config["key"], "wsHost": "127.0.0.1", "wsPort": api_a.port,
                "authEndpoint": f"{api_b.base_url}/v1/loom/realtime/auth", "token": token(tenant, key, "u_alice"),
                "channels": [f"private-thread-{thread}"], "events": 10_000, "timeoutMs": 60000})
            try:
                assert client.next("subscribed", timeout=30)["channel"] == f"private-thread-{thread}"
                runs = []
                for text in ("hello", "DEUTDEFF"):  # the second calls the built-in identify tool
                    runs.append(post(http_b, alice, thread, text)["run_id"])
                    assert wait_run(http_b, alice, runs[-1], timeout=30)["state"] == "closed"
                events = []  # the whole-object events; the replies' message.delta pieces come between them
                while len(events) < 8:
                    event = client.next("event", timeout=30)
                    if event["event"] != "message.delta":
                        events.append(event)
            finally:
                client.close()
        assert [(e["event"], e["data"].get("role") or e["data"].get("state")) for e in events] == [
            ("message.created", "user"), ("run.updated", "running"),
            ("message.created", "assistant"), ("run.updated", "closed")] * 2
        assert [events[3]["data"]["id"], events[7]["data"]["id"]] == runs
    finally:
        for proc in (api_a, api_b, worker):
            proc.kill()
