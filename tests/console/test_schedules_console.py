"""The console's schedules: every schedule of a workspace (or one thread's), pause, resume, delete."""

from __future__ import annotations

import pytest

from support.console import expect_error
from support.loom import SCRIPTED_AGENT, open_thread
from support.tenants import make_tenant

SERVER_SETTINGS = {"schedule_poll_seconds": 0}


@pytest.fixture
def scheduled(server, http):
    tenant = make_tenant(server)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    made = []
    threads = []
    for subject in ("web:ann", "web:bob"):
        h = tenant.headers(subject)
        thread = open_thread(http, h, agent)
        threads.append(thread)
        resp = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h,
                         json={"content": f"for {subject}", "cron": "0 9 * * *", "timezone": "Europe/Paris"})
        made.append(resp.json()["data"]["id"])
    return tenant, threads, made


def test_operators_list_pause_resume_and_delete_a_workspaces_schedules(console, scheduled):
    tenant, (t_ann, t_bob), (s_ann, s_bob) = scheduled
    base = f"/workspaces/{tenant.workspace_id}/schedules"
    assert {s["id"] for s in console.data("GET", base)["items"]} == {s_ann, s_bob}
    assert [s["id"] for s in console.data("GET", base, params={"thread": t_bob})["items"]] == [s_bob]
    paused = console.data("POST", f"{base}/{s_ann}/pause")
    assert paused["state"] == "paused" and paused["paused_reason"] == "operator"
    resumed = console.data("POST", f"{base}/{s_ann}/resume")
    assert resumed["state"] == "active" and resumed["paused_reason"] is None and resumed["next_run_at"]
    assert console.data("DELETE", f"{base}/{s_bob}") == {"id": s_bob, "deleted": True}
    assert [s["id"] for s in console.data("GET", base)["items"]] == [s_ann]
    expect_error(console.request("DELETE", f"{base}/{s_bob}"), 404, "not_found")
    other = make_tenant(tenant.server)  # another workspace cannot reach it
    expect_error(console.request("POST", f"/workspaces/{other.workspace_id}/schedules/{s_ann}/pause"), 404, "not_found")
    expect_error(console.request("POST", f"{base}/not-a-uuid/pause"), 404, "not_found")
