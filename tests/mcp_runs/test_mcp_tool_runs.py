"""Runs calling the tools of a real MCP server: listing, calls, approvals, fates, list changes, clashes."""

from __future__ import annotations

import pytest

from heddle.control import agents as agents_control
from heddle.errors import HeddleError
from heddle.loom.agent_file import AgentFile
from mcp_runs.mcp_runs_kit import connect
from support.loom import open_thread, post, wait_run

SERVER_SETTINGS = {"tool_call_price_credits": 0.25}
AWAITING = ("closed", "failed", "awaiting_input", "awaiting_outcome")


def agent(tenant, *entries, name="banker"):
    return tenant.add_agent({"name": name, "model_class": "scripted", "instructions": "", "tools": list(entries)})


def start(http, tenant, agent_id, content, subject="web:alice"):
    h = tenant.headers(subject)
    thread = open_thread(http, h, agent_id)
    run_id = post(http, h, thread, content)["run_id"]
    return h, run_id, wait_run(http, h, run_id, states=AWAITING)


def trace_call(http, h, run_id):
    [call] = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"][0]["tool_calls"]
    return call


def test_listed_and_called_with_the_subjects_token_and_signature(http, tenant, billing):
    agent_id = agent(tenant, {"mcp": "billing"})
    h, run_id, run = start(http, tenant, agent_id, 'call: get_balance {"account": "A-1"}')
    assert run["state"] == "closed", run
    call = trace_call(http, h, run_id)
    assert call["kind"] == "mcp" and call["name"] == "get_balance" and call["args"] == {"account": "A-1"}
    assert call["status"] == "succeeded" and call["result"] == {"account": "A-1", "balance": 4200}
    # Settings from the annotations: read-only and idempotent.
    assert (call["interaction"], call["risk"], call["reliability"]) == ("auto", "low", "idempotent")
    assert call["cost_credits"] == 0.25
    assert billing.seen.calls == [("get_balance", {"account": "A-1"})]
    # Every request the server served passed its verifier: a valid signature and the subject's token.
    methods = {method for _, method, _ in billing.seen.requests}
    assert {"initialize", "tools/list", "tools/call"} <= methods
    assert {sub for *_, sub in billing.seen.requests} == {"web:alice"}
    # The list is cached: a second run lists nothing again (its tools/call session initializes).
    listed = len(billing.seen.rpc("tools/list"))
    start(http, tenant, agent_id, 'call: get_balance {"account": "A-2"}')
    assert len(billing.seen.rpc("tools/list")) == listed


def test_a_server_that_cannot_verify_the_signature_refuses_every_request(http, tenant, billing):
    # The workspace's request secret rotates; the server still holds the old one. Direct mode
    # (the caller's own token), so that no mint is asked: only the MCP server can refuse.
    tenant.update(rotate_request_secret=True)
    h = {"Authorization": f"Bearer {billing.mint.mint_token('u_alice')}"}
    thread = open_thread(http, h, agent(tenant, {"mcp": "billing"}))
    run_id = post(http, h, thread, 'call: get_balance {"account": "A-1"}')["run_id"]
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "failed" and run["error"]["code"] == "tools_unavailable", run
    assert "HTTP 401" in run["error"]["message"]
    assert billing.seen.requests == []  # the verifier answered before the MCP server saw anything


def test_destructive_tool_asks_for_approval_by_annotation(http, tenant, billing):
    agent_id = agent(tenant, {"mcp": "billing", "tools": ["send_transfer", "get_balance"]})
    h, run_id, run = start(http, tenant, agent_id, 'call: send_transfer {"amount": 5, "to": "B-2"}')
    assert run["state"] == "awaiting_input" and run["pending"]["type"] == "approval"
    [pending] = run["pending"]["tool_calls"]
    assert pending["kind"] == "mcp" and pending["risk"] == "high" and pending["reliability"] == "at_most_once"
    assert billing.seen.calls == []  # never reached before approval
    resp = http.post(
        f"/v1/loom/runs/{run_id}/approval", headers=h, json={"tool_call_id": pending["id"], "approved": True}
    )
    assert resp.status_code == 200, resp.text
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
    assert billing.seen.calls == [("send_transfer", {"amount": 5, "to": "B-2"})]
    assert trace_call(http, h, run_id)["result"] == {"transfer_id": "tr_1", "amount": 5}


def test_the_agent_files_approve_wins_and_a_denied_call_never_reaches_the_server(http, tenant, billing):
    agent_id = agent(tenant, {"mcp": "billing", "settings": {"get_balance": {"interaction": "approve"}}})
    h, run_id, run = start(http, tenant, agent_id, 'call: get_balance {"account": "A-1"}')
    [pending] = run["pending"]["tool_calls"]
    assert pending["interaction"] == "approve" and pending["reliability"] == "idempotent"
    resp = http.post(
        f"/v1/loom/runs/{run_id}/approval",
        headers=h,
        json={"tool_call_id": pending["id"], "approved": False, "reason": "not now"},
    )
    assert resp.status_code == 200, resp.text
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
    assert billing.seen.calls == [] and billing.seen.rpc("tools/call") == []


def test_is_error_goes_back_to_the_model(http, tenant, billing):
    h, run_id, run = start(http, tenant, agent(tenant, {"mcp": "billing"}), 'call: close_account {"account": "A-1"}')
    assert run["state"] == "closed"
    call = trace_call(http, h, run_id)
    assert call["status"] == "failed" and call["result"]["error"]["code"] == "tool_error"
    assert "has a balance" in call["result"]["error"]["message"]


def test_bad_arguments_are_refused_before_the_server(http, tenant, billing):
    h, run_id, _ = start(http, tenant, agent(tenant, {"mcp": "billing"}), 'call: get_balance {"account": 7}')
    call = trace_call(http, h, run_id)
    assert call["status"] == "failed" and call["result"]["error"]["code"] == "invalid_arguments"
    assert billing.seen.calls == []


def test_a_dropped_line_after_send_waits_for_an_outcome(http, tenant, billing):
    h, run_id, run = start(http, tenant, agent(tenant, {"mcp": "billing"}), 'call: drop_line {"note": "n"}')
    assert run["state"] == "awaiting_outcome", run
    [pending] = run["pending"]["tool_calls"]
    assert pending["reliability"] == "at_most_once"  # no idempotentHint: the safe reading
    call = trace_call(http, h, run_id)
    assert call["status"] == "awaiting_outcome" and call["result"]["error"]["code"] == "unknown_fate"
    assert billing.seen.calls == [("drop_line", {"note": "n"})]
    done = http.post(
        f"/v1/loom/runs/{run_id}/outcome",
        headers=h,
        json={"tool_call_id": pending["id"], "state": "occurred", "detail": {"ref": "x"}},
    )
    assert done.status_code == 200, done.text
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
    assert trace_call(http, h, run_id)["outcome"]["state"] == "occurred"
    assert len(billing.seen.calls) == 1  # never sent twice


def test_a_tool_list_change_is_picked_up(http, tenant, billing):
    agent_id = agent(tenant, {"mcp": "billing"})
    _, _, run = start(http, tenant, agent_id, "call: savings_rate {}")
    assert run["state"] == "closed" and billing.seen.rpc("tools/call") == []  # not offered yet
    _, _, run = start(http, tenant, agent_id, "call: open_savings {}")
    assert run["state"] == "closed"
    # The server said its list changed: the next run lists again and offers the new tool.
    h, run_id, run = start(http, tenant, agent_id, "call: savings_rate {}")
    assert run["state"] == "closed"
    # No structuredContent (the tool declares no output schema): its text content is the result.
    assert '"rate": 0.031' in trace_call(http, h, run_id)["result"]["content"]


def test_a_name_two_connections_offer_is_offered_by_neither_and_reported(http, tenant, billing):
    connect(tenant, "billing-copy", billing.server.url)
    agent_id = agent(tenant, {"mcp": "billing"}, {"mcp": "billing-copy"})
    h, run_id, run = start(http, tenant, agent_id, 'call: get_balance {"account": "A-1"}')
    assert run["state"] == "closed", run
    [turn] = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"]
    assert turn["tool_calls"] == [] and "no such tool" in turn["response"]["text"]
    clashes = [r for r in turn["request"]["refused_tools"] if r["name"] == "get_balance"]
    assert [(r["source"], r["reason"]) for r in clashes] == [
        ("tools.0 (mcp: billing)", "tool_name_clash"), ("tools.1 (mcp: billing-copy)", "tool_name_clash")]
    assert billing.seen.calls == []


def test_a_name_the_server_no_longer_lists_fails_the_run(http, tenant, billing):
    agent_id = agent(tenant, {"mcp": "billing", "tools": ["get_balance", "retired_tool"]})
    _, _, run = start(http, tenant, agent_id, 'call: get_balance {"account": "A-1"}')
    assert run["state"] == "failed" and run["error"]["code"] == "tools_unavailable"
    assert "retired_tool" in run["error"]["message"]


def save(tenant, tools):
    spec = AgentFile.model_validate({"name": "x", "model_class": "scripted", "tools": tools})
    return tenant.run(lambda s: agents_control.create(s, tenant.workspace_id, spec, ["scripted"], created_by=None))


@pytest.mark.parametrize(
    ("tools", "field", "words"),
    [
        ([{"mcp": "nowhere"}], "tools.0.mcp", "no connection 'nowhere'"),
        ([{"mcp": "plain"}], "tools.0.mcp", "is of kind http"),
    ],
)
def test_saving_refuses_a_connection_that_is_not_an_mcp_server(tenant, billing, tools, field, words):
    connect(tenant, "plain", "http://127.0.0.1:9/", kind="http")
    with pytest.raises(HeddleError) as refused:
        save(tenant, tools)
    assert refused.value.code == "invalid_request" and words in refused.value.message
    assert refused.value.details[0]["field"] == field


def test_saving_refuses_a_name_two_tools_would_have(tenant, billing):
    hosted = {"name": "get_balance", "description": "d", "path": "/b"}
    with pytest.raises(ValueError, match=r"'get_balance' is listed in tools.0 and tools.1"):
        save(tenant, [hosted, {"mcp": "billing", "tools": ["get_balance"]}])
    with pytest.raises(ValueError, match=r"settings: 'x' not in this entry's tools"):
        save(tenant, [{"mcp": "billing", "tools": ["get_balance"], "settings": {"x": {"risk": "high"}}}])
