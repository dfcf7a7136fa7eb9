"""A webhook whose destination the outbound policy refuses fails at once, with the reason, and
the reason shows in the API (GET /v1/webhooks/deliveries) and the console API. The real server,
with private destinations not allowed (as in production)."""

from __future__ import annotations

import time

import pytest

from heddle.webhooks import service as webhook_service
from support.console import Console, new_operator
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'h.db'}",
                        outbound_allow_private=False, webhook_poll_seconds=0.1).start()
    yield server
    server.stop()


def test_a_refused_destination_fails_the_delivery_at_once_with_its_reason(live):
    tenant = make_tenant(live)
    # Loopback: refused by the SSRF policy at every attempt, so retrying for 72 h is pointless.
    tenant.run(lambda s: webhook_service.configure(s, tenant.workspace_id, url="https://127.0.0.1:9/hook"))
    h = tenant.headers("web:a")
    with live.client() as http:
        run_id = post(http, h, open_thread(http, h, tenant.add_agent(SCRIPTED_AGENT)), "hello")["run_id"]
        assert wait_run(http, h, run_id)["state"] == "closed"
        key_only = {"Authorization": h["Authorization"]}
        deadline = time.monotonic() + 10
        while True:
            page = http.get("/v1/webhooks/deliveries", headers=key_only).json()["data"]
            if page["items"] and page["items"][0]["attempt_count"] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        [delivery] = page["items"]
        assert delivery["type"] == "run.closed" and delivery["run_id"] == run_id
        assert delivery["state"] == "failed" and delivery["next_attempt_at"] is None
        assert delivery["attempt_count"] == 1 and delivery["last_error"].startswith("destination_refused")
        assert delivery["attempts"][0]["error"] == delivery["last_error"]
        failed = http.get("/v1/webhooks/deliveries?state=failed&limit=5", headers=key_only).json()["data"]
        assert [d["id"] for d in failed["items"]] == [delivery["id"]]
        assert http.get("/v1/webhooks/deliveries?state=nope", headers=key_only).status_code == 400
        assert http.get("/v1/webhooks/deliveries").status_code == 401
    # the console shows the same reason
    console = Console(live)
    try:
        _, url = new_operator(live, "webhooks@example.com")
        console.sign_in(url)
        items = console.data("GET", f"/workspaces/{tenant.workspace_id}/webhook-deliveries")["items"]
        assert items[0]["state"] == "failed" and items[0]["last_error"].startswith("destination_refused")
    finally:
        console.close()
