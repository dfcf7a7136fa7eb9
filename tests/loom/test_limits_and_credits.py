"""Runs that cannot pay, or exceed their turn limit, end `failed` with a clear code."""

from __future__ import annotations

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.tenants import make_tenant

SERVER_SETTINGS = {"run_max_turns": 1}


def test_no_credits_fails_the_run(server, http):
    poor = make_tenant(server, credits=0)
    agent = poor.add_agent(SCRIPTED_AGENT)
    h = poor.headers()
    run = wait_run(http, h, post(http, h, open_thread(http, h, agent), "hello")["run_id"])
    assert run["state"] == "failed" and run["error"]["code"] == "insufficient_credits"
    assert run["cost_credits"] == 0 and poor.balance_micro() == 0 == poor.ledger_sum()


def test_max_turns_fails_the_run(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers()
    thread = open_thread(http, h, agent)
    run_id = post(http, h, thread, "ask: more?")["run_id"]
    assert wait_run(http, h, run_id)["state"] == "awaiting_input"
    post(http, h, thread, "yes")
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "failed" and run["error"]["code"] == "max_turns_exceeded"
    assert tenant.balance_micro() == tenant.ledger_sum()
