"""A run's detail lists each state it entered, in order (the console's trace timeline shows them)."""

from __future__ import annotations

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.tenants import make_tenant


def test_run_detail_lists_the_states_the_run_entered(server, http, console):
    tenant = make_tenant(server)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:dora")
    thread = open_thread(http, h, agent)
    run_id = post(http, h, thread, "ask: What is your name?")["run_id"]
    assert wait_run(http, h, run_id)["state"] == "awaiting_input"
    post(http, h, thread, "Ada")
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"

    detail = console.data("GET", f"/workspaces/{tenant.workspace_id}/runs/{run_id}")
    changes = detail["state_changes"]
    assert [c["state"] for c in changes] == ["running", "awaiting_input", "running", "closed"]
    assert [c["at"] for c in changes] == sorted(c["at"] for c in changes)
    assert [c["seq"] for c in changes] == sorted({c["seq"] for c in changes})
