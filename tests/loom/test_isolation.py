"""A subject never sees another subject's threads, messages or runs; workspaces never mix."""

from __future__ import annotations

import pytest

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.tenants import make_tenant


@pytest.fixture
def alice_run(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:alice")
    thread = open_thread(http, h, agent)
    run_id = post(http, h, thread, "ask: secret?")["run_id"]
    wait_run(http, h, run_id)
    return agent, thread, run_id


def test_other_subject_gets_404_everywhere(http, tenant, alice_run):
    agent, thread, run_id = alice_run
    bob = tenant.headers("web:bob")
    for method, path, body in [
        ("GET", f"/v1/loom/threads/{thread}/messages", None),
        ("POST", f"/v1/loom/threads/{thread}/messages", {"content": "hi"}),
        ("GET", f"/v1/loom/runs/{run_id}", None),
        ("GET", f"/v1/loom/runs/{run_id}/trace", None),
        ("POST", f"/v1/loom/runs/{run_id}/outcome", {"tool_call_id": thread, "state": "occurred"}),
    ]:
        r = http.request(method, path, json=body, headers=bob)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (method, path)
    assert http.get("/v1/loom/threads", headers=bob).json()["data"]["items"] == []
    # the same user id on another channel is another person
    assert http.get(f"/v1/loom/runs/{run_id}", headers=tenant.headers("sms:alice")).status_code == 404


def test_relay_without_subject_reads_workspace_runs(http, tenant, alice_run):
    _, _, run_id = alice_run
    r = http.get(f"/v1/loom/runs/{run_id}", headers=tenant.headers(subject=None))
    assert r.status_code == 200 and r.json()["data"]["id"] == run_id


def test_other_workspace_sees_nothing(server, http, alice_run):
    agent, thread, run_id = alice_run
    other = make_tenant(server)
    h = other.headers("web:alice")
    for path in (f"/v1/loom/runs/{run_id}", f"/v1/loom/runs/{run_id}/trace", f"/v1/loom/threads/{thread}/messages"):
        assert http.get(path, headers=h).status_code == 404
    assert http.get(f"/v1/loom/runs/{run_id}", headers=other.headers(subject=None)).status_code == 404
    r = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"
