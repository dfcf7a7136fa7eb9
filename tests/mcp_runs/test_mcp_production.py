"""In production (no private outbound), an MCP server on a private address is never reached."""

from __future__ import annotations

from mcp_runs.mcp_runs_kit import connect
from support.loom import open_thread, post, wait_run

SERVER_SETTINGS = {"outbound_allow_private": False}


def test_a_private_mcp_server_is_refused_in_production(http, tenant, billing):
    # https, so that what refuses it is the address (plain http is refused in production too).
    connect(tenant, "vault", billing.server.url.replace("http://", "https://"))
    agent_id = tenant.add_agent({"name": "banker", "model_class": "scripted", "tools": [{"mcp": "vault"}]})
    # Direct mode (the caller's own session token): nothing but the MCP server is called.
    h = {"Authorization": f"Bearer {billing.mint.mint_token('u_alice')}"}
    thread = open_thread(http, h, agent_id)
    run_id = post(http, h, thread, 'call: get_balance {"account": "A-1"}')["run_id"]
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "failed" and run["error"]["code"] == "tools_unavailable", run
    message = run["error"]["message"]
    assert "could not list the tools of 'vault'" in message and "127.0.0.2" in message, message
    assert billing.seen.requests == [] and billing.mint.mints == 0
