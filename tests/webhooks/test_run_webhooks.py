"""Run webhooks end to end: the real server, the CLI, and a real receiver on a loopback port.

The receiver checks `Service-Signature` with its own implementation, written here from the
spec's steps for verifying calls the service makes (not with Heddle's code).
"""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from heddle.cli.main import app as cli
from heddle.webhookhost import verify_webhook
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from webhooks.webhook_testkit import Receiver, spec_verify

SERVER_SETTINGS = {"webhook_retry_base_seconds": 0.2, "webhook_retry_max_seconds": 1.0, "webhook_poll_seconds": 0.1}


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def heddle(server, *args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--database-url", server.settings.database_url, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # stderr names the database


def cli_fails(server, *args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--database-url", server.settings.database_url, "--json"])
    assert result.exit_code != 0
    return json.loads(result.stdout)  # stderr names the database


def delivery_metrics(http) -> dict[str, float]:
    """This server's webhook families from /metrics (the module's server is shared: compare deltas)."""
    from prometheus_client.parser import text_string_to_metric_families

    values = {}
    for family in text_string_to_metric_families(http.get("/metrics").text):
        for sample in family.samples:
            if sample.name == "heddle_webhook_deliveries_total":
                values[sample.labels["outcome"]] = sample.value
            elif sample.name == "heddle_webhook_delivery_lag_seconds_count":
                values["lag_count"] = sample.value
    return values


def test_a_receiver_failing_twice_gets_the_third_attempt_with_the_same_event(server, http, tenant, receiver):
    before = delivery_metrics(http)
    settings = heddle(server, "workspace", "update", tenant.workspace_id, "--webhook-url", receiver.url)
    secret = settings["webhook_secret"]
    assert settings["webhook_url"] == receiver.url and secret.startswith("whsec_")
    receiver.statuses = [500, 503]
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:hooks")
    run_id = post(http, h, open_thread(http, h, agent), "hello")["run_id"]
    run = wait_run(http, h, run_id, states=("closed",))
    attempts = receiver.wait_for(3)
    time.sleep(0.5)
    assert len(receiver.received) == 3  # delivered once it succeeded: no fourth POST
    events = [a.event for a in attempts]
    assert {e["id"] for e in events} == {events[0]["id"]} and events[0]["id"].startswith("evt_")
    assert {a.headers["Service-Event-Id"] for a in attempts} == {events[0]["id"]}
    assert all(e == events[0] for e in events)  # the very same event each time
    assert events[0]["type"] == "run.closed" and events[0]["data"] == run
    assert set(events[0]) == {"id", "type", "created_at", "data"}
    for a in attempts:
        assert a.path == "/hooks/heddle?source=test"
        assert spec_verify(a.headers.get("Service-Signature"), "POST", a.path, a.body, secret, a.at)
        assert not spec_verify(a.headers.get("Service-Signature"), "POST", a.path, a.body + b" ", secret, a.at)
        assert not spec_verify(a.headers.get("Service-Signature"), "POST", a.path, a.body, tenant.secret, a.at)
        # The helper shipped for callers agrees.
        assert verify_webhook(body=a.body, headers=a.headers, path=a.path, webhook_secret=secret,
                              now=a.at)["id"] == events[0]["id"]
    assert attempts[1].at - attempts[0].at >= 0.1 and attempts[2].at - attempts[1].at >= 0.2  # backoff grows

    log = heddle(server, "webhook", "deliveries", tenant.workspace_id)
    (delivery,) = log["items"]
    assert delivery["id"] == events[0]["id"] and delivery["state"] == "delivered" and delivery["run_id"] == run_id
    assert delivery["attempt_count"] == 3 and delivery["delivered_at"] and delivery["next_attempt_at"] is None
    assert [a["http_status"] for a in delivery["attempts"]] == [500, 503, 200]
    assert [a["n"] for a in delivery["attempts"]] == [1, 2, 3]
    assert "receiver says no" in delivery["attempts"][0]["error"] and delivery["attempts"][2]["error"] is None
    after = delivery_metrics(http)  # two retries, one delivery, its lag observed once
    assert {k: after.get(k, 0) - before.get(k, 0) for k in ("retry", "delivered", "failed", "lag_count")} == {
        "retry": 2, "delivered": 1, "failed": 0, "lag_count": 1}


def test_each_waiting_and_ending_state_is_one_webhook(server, http, tenant, receiver):
    heddle(server, "workspace", "update", tenant.workspace_id, "--webhook-url", receiver.url)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:states")
    thread = open_thread(http, h, agent)
    asked = post(http, h, thread, "ask: What is your name?")["run_id"]
    wait_run(http, h, asked, states=("awaiting_input",))
    post(http, h, thread, "Ada")
    wait_run(http, h, asked, states=("closed",))
    failed = post(http, h, thread, "fail: upstream is down")["run_id"]
    wait_run(http, h, failed, states=("failed",))
    received = receiver.wait_for(3)
    time.sleep(0.4)
    events = sorted((r.event for r in received), key=lambda e: e["created_at"])
    assert len(received) == 3
    assert [(e["type"], e["data"]["id"]) for e in events] == [
        ("run.awaiting_input", asked), ("run.closed", asked), ("run.failed", failed)]
    assert events[0]["data"]["pending"] == {"type": "input", "question": "What is your name?"}
    assert events[2]["data"]["error"]["code"] == "model_error"
    assert len({e["id"] for e in events}) == 3
    from heddle.loom.schemas import Run
    from heddle.webhooks.schemas import WebhookEvent  # the body published under OpenAPI `webhooks`

    # The envelope as published, and its `data` as the Run schema it refers to.
    assert all(Run.model_validate(WebhookEvent.model_validate(e).data).id for e in events)


def test_the_cli_sets_rotates_masks_and_removes_the_webhook(server, tenant, receiver):
    ws = tenant.workspace_id
    first = heddle(server, "workspace", "update", ws, "--webhook-url", receiver.url)
    moved = heddle(server, "workspace", "update", ws, "--webhook-url", receiver.url + "&v=2")
    assert moved["webhook_secret"] == first["webhook_secret"]  # changing the URL keeps the secret
    rotated = heddle(server, "workspace", "update", ws, "--rotate-webhook-secret")
    assert rotated["webhook_secret"] != first["webhook_secret"] and rotated["webhook_url"].endswith("&v=2")
    shown = heddle(server, "workspace", "show", ws)
    assert shown["webhook_url"] == rotated["webhook_url"] and "…" in shown["webhook_secret"]
    assert rotated["webhook_secret"] not in json.dumps(shown)
    for bad in ("ftp://example.com/hook", "https://user:pw@example.com/hook", "not a url"):
        assert "webhook_url" in cli_fails(server, "workspace", "update", ws, "--webhook-url", bad)["error"]["message"]
    removed = heddle(server, "workspace", "update", ws, "--webhook-url", "")
    assert removed["webhook_url"] is None and removed["webhook_secret"] is None
    assert "no webhook URL" in cli_fails(server, "workspace", "update", ws, "--rotate-webhook-secret")["error"]["message"]
    assert cli_fails(server, "webhook", "deliveries", "ws_nope")["error"]["code"] == "not_found"
    assert cli_fails(server, "webhook", "deliveries", ws, "--state", "lost")["error"]["code"] == "invalid_argument"
    assert heddle(server, "webhook", "deliveries", ws)["items"] == []


def test_no_webhook_without_a_url(server, http, tenant, receiver):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:quiet")
    run_id = post(http, h, open_thread(http, h, agent), "hello")["run_id"]
    wait_run(http, h, run_id, states=("closed",))
    time.sleep(0.3)
    assert receiver.received == [] and heddle(server, "webhook", "deliveries", tenant.workspace_id)["items"] == []
