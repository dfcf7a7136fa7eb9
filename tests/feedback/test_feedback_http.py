"""Feedback on assistant messages through the real server: both modes, every refusal, the
event in the run's log, the webhook and the metric (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from direct.direct_testkit import sign
from directmode.conftest import direct_tenant, jwks_http, signing_keys  # noqa: F401 (fixtures)
from heddle.webhooks import service as webhook_service
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.sse import collect
from support.tenants import make_tenant
from webhooks.webhook_testkit import Receiver

SERVER_SETTINGS = {"webhook_retry_base_seconds": 0.2, "webhook_retry_max_seconds": 1.0, "webhook_poll_seconds": 0.1}


def answered(http, headers, agent) -> tuple[dict, dict, dict]:
    """A closed run's (user message, assistant message, run) in a fresh thread."""
    thread = open_thread(http, headers, agent)
    run = wait_run(http, headers, post(http, headers, thread, "hello")["run_id"])
    assert run["state"] == "closed", run
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=headers).json()["data"]["items"]
    user = next(m for m in items if m["role"] == "user")
    assistant = next(m for m in items if m["role"] == "assistant")
    return user, assistant, run


def feedback_counts(http) -> dict[tuple, float]:
    out = {}
    for family in text_string_to_metric_families(http.get("/metrics").text):
        for sample in family.samples:
            if sample.name == "heddle_feedback_total":
                assert set(sample.labels) == {"agent", "rating"}  # never a subject
                out[(sample.labels["agent"], sample.labels["rating"])] = sample.value
    return out


def error(resp, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["status"] == "error" and body["error"]["code"] == code, body
    return body["error"]


def test_relay_rate_replace_show_withdraw(server, http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:alice")
    user, answer, run = answered(http, h, agent)
    before = feedback_counts(http)
    url = f"/v1/loom/messages/{answer['id']}/feedback"

    resp = http.post(url, json={"rating": "down", "comment": "It named the wrong bank."}, headers=h)
    assert resp.status_code == 200, resp.text
    given = resp.json()["data"]
    assert given["rating"] == "down" and given["comment"] == "It named the wrong bank."
    assert given["run_id"] == run["id"] and given["agent"] == agent and given["agent_version"] == 1
    assert given["subject"] == "web:alice"

    # Shown on the message (the subject's own list) and in the run's trace.
    items = http.get(f"/v1/loom/threads/{answer['thread_id']}/messages", headers=h).json()["data"]["items"]
    shown = {m["id"]: m.get("feedback") for m in items}
    assert shown[answer["id"]]["rating"] == "down" and shown[user["id"]] is None
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    assert [(f["message_id"], f["rating"]) for f in trace["feedback"]] == [(answer["id"], "down")]

    # One per subject and message: a second rating replaces the first.
    resp = http.post(url, json={"rating": "up"}, headers=h)
    assert resp.status_code == 200 and resp.json()["data"]["rating"] == "up"
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    assert [(f["rating"], f["comment"]) for f in trace["feedback"]] == [("up", None)]

    after = feedback_counts(http)
    assert after[(agent, "down")] - before.get((agent, "down"), 0) == 1
    assert after[(agent, "up")] - before.get((agent, "up"), 0) == 1

    # The run's event log carries each change, after the run's end: the stream ends at the
    # terminal run.updated, and resuming from there gives what came after.
    events, _ = collect(http, f"/v1/loom/runs/{run['id']}/events", h)
    last = events[-1]["id"]
    events, ended = collect(http, f"/v1/loom/runs/{run['id']}/events", {**h, "Last-Event-ID": last})
    rated = [e["data"]["rating"] for e in events if e.get("event") == "message.feedback"]
    assert rated == ["down", "up"] and ended

    # Withdrawn: gone from the message and the trace; withdrawing again is 404.
    resp = http.delete(url, headers=h)
    assert resp.status_code == 200 and resp.json()["data"]["rating"] is None
    items = http.get(f"/v1/loom/threads/{answer['thread_id']}/messages", headers=h).json()["data"]["items"]
    assert all(m.get("feedback") is None for m in items)
    assert http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]["feedback"] == []
    error(http.delete(url, headers=h), 404, "not_found")


def test_refusals(server, http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:alice")
    user, answer, _run = answered(http, h, agent)
    url = f"/v1/loom/messages/{answer['id']}/feedback"

    error(http.post(url, json={"rating": "meh"}, headers=h), 400, "invalid_request")
    error(http.post(url, json={}, headers=h), 400, "invalid_request")
    error(http.post(url, json={"rating": "up", "stars": 5}, headers=h), 400, "invalid_request")
    error(http.post(url, json={"rating": "down", "comment": "x" * 2001}, headers=h), 400, "invalid_request")
    error(http.post(url, json={"rating": "down", "comment": "bad\u0000byte"}, headers=h), 400, "invalid_request")
    # A user's own message, another subject's, another workspace's, an unknown id: all 404.
    error(http.post(f"/v1/loom/messages/{user['id']}/feedback", json={"rating": "up"}, headers=h), 404, "not_found")
    error(http.post(url, json={"rating": "up"}, headers=tenant.headers("web:bob")), 404, "not_found")
    other = make_tenant(server)
    error(http.post(url, json={"rating": "up"}, headers=other.headers("web:alice")), 404, "not_found")
    error(http.post(f"/v1/loom/messages/{uuid.uuid4()}/feedback", json={"rating": "up"}, headers=h),
          404, "not_found")
    error(http.delete(url, headers=tenant.headers("web:bob")), 404, "not_found")
    error(http.post(url, json={"rating": "up"}, headers=tenant.headers(None)), 400, "subject_required")
    error(http.post(url, json={"rating": "up"}, headers={"Authorization": "Bearer nope"}), 401, "unauthorized")
    # Nothing was written by any refusal.
    trace = http.get(f"/v1/loom/runs/{answer['run_id']}/trace", headers=h).json()["data"]
    assert trace["feedback"] == []


def test_direct_mode_subject_rates_its_own_answers(server, http, direct_tenant, signing_keys):  # noqa: F811
    agent = direct_tenant.add_agent(SCRIPTED_AGENT)
    now = int(time.time())

    def token(sub):
        return {"Authorization": "Bearer " + sign(signing_keys["ES256"], {
            "iss": direct_tenant.key_id, "sub": sub, "aud": ["service"], "iat": now, "exp": now + 300})}

    dora, eve = token("u_dora"), token("u_eve")
    _user, answer, run = answered(http, dora, agent)
    url = f"/v1/loom/messages/{answer['id']}/feedback"
    error(http.post(url, json={"rating": "down"}, headers=eve), 404, "not_found")
    resp = http.post(url, json={"rating": "down", "comment": "Too vague."}, headers=dora)
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["subject"] == "u_dora"
    # The workspace's backend (relay) sees it in the trace too.
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=direct_tenant.headers(None)).json()["data"]
    assert [(f["subject"], f["rating"], f["comment"]) for f in trace["feedback"]] == [("u_dora", "down", "Too vague.")]
    assert http.delete(url, headers=dora).status_code == 200


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def test_webhook_message_feedback(server, http, tenant, receiver):
    tenant.run(lambda s: webhook_service.configure(s, tenant.workspace_id, url=receiver.url))
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:carol")
    _user, answer, run = answered(http, h, agent)
    receiver.wait_for(1)  # run.closed
    resp = http.post(f"/v1/loom/messages/{answer['id']}/feedback", json={"rating": "down", "comment": "No."},
                     headers=h)
    assert resp.status_code == 200, resp.text
    received = receiver.wait_for(2)
    events = [r.event for r in received]
    feedback = [e for e in events if e["type"] == "message.feedback"]
    assert len(feedback) == 1, events
    data = feedback[0]["data"]
    assert (data["message_id"], data["run_id"], data["rating"], data["comment"]) == (
        answer["id"], run["id"], "down", "No.")
    deliveries = http.get("/v1/webhooks/deliveries", headers=tenant.headers(None)).json()["data"]
    items = deliveries["items"] if isinstance(deliveries, dict) else deliveries
    assert any(d["type"] == "message.feedback" and d["run_id"] == run["id"] for d in items)


def test_python_client_helpers(server, http, tenant):
    from heddle.client import Heddle

    agent = tenant.add_agent(SCRIPTED_AGENT)
    with Heddle(server.base_url, api_key=tenant.secret) as client:
        run = client.loom.send(agent, "hello", subject="web:pyclient").wait()
        message_id = run.latest_message.id
        given = client.loom.feedback(message_id, "down", comment="Wrong.", subject="web:pyclient")
        assert (given.rating, given.comment, given.run_id) == ("down", "Wrong.", run.id)
        assert [f.rating for f in client.loom.get_trace(run.id, subject="web:pyclient").feedback] == ["down"]
        assert client.loom.withdraw_feedback(message_id, subject="web:pyclient").rating is None
