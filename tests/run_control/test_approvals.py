"""`interaction: approve` tools: the run asks first; only approved calls reach the tool host."""

from __future__ import annotations

import pytest

from heddle.loom.agent_file import AgentFileError, parse_agent_file
from run_control.run_control_kit import EventListener


def _start(caller, content: str) -> tuple[str, str, dict]:
    thread = caller.thread()
    resp = caller.post(thread, content)
    assert resp.status_code == 202, resp.text
    run_id = resp.json()["data"]["run_id"]
    return thread, run_id, caller.wait(run_id)


def _approve(caller, run_id, call_id, approved, subject="web:alice", **extra):
    return caller.http.post(f"/v1/loom/runs/{run_id}/approval", headers=caller.headers(subject),
                            json={"tool_call_id": call_id, "approved": approved, **extra})


def test_approved_call_reaches_the_host_once(caller, toolhost, server):
    thread = caller.thread()
    with EventListener(server, caller.headers(), thread) as events:
        run_id = caller.post(thread, 'call: pay {"amount": 20}').json()["data"]["run_id"]
        run = caller.wait(run_id)
        assert run["state"] == "awaiting_input" and run["pending"]["type"] == "approval"
        [call] = run["pending"]["tool_calls"]
        assert call["name"] == "pay" and call["status"] == "awaiting_approval" and call["args"] == {"amount": 20}
        assert call["approval"]["required"] is True and call["approval"]["requested_at"].endswith("Z")
        assert toolhost.calls("/tools/pay") == []  # nothing reached the host yet
        events.wait_for(lambda n, d: n == "run.updated" and d["id"] == run_id
                        and (d.get("pending") or {}).get("type") == "approval")
        resp = _approve(caller, run_id, call["id"], True, reason="looks right")
        assert resp.status_code == 200, resp.text
        assert caller.wait(run_id, states=("closed", "failed"))["state"] == "closed"
        events.wait_for(lambda n, d: n == "run.updated" and d["id"] == run_id and d["state"] == "closed")
    assert len(toolhost.calls("/tools/pay")) == 1
    traced = caller.trace(run_id)["turns"][0]["tool_calls"][0]
    assert traced["status"] == "succeeded" and traced["result"] == {"paid": 20}
    approval = traced["approval"]
    assert approval["approved"] is True and approval["reason"] == "looks right" and approval["at"].endswith("Z")
    assert approval["by"]["mode"] == caller.mode and approval["by"]["subject"] == "web:alice"
    # a retry (even with another answer) keeps the first answer
    again = _approve(caller, run_id, call["id"], False)
    assert again.status_code == 200 and again.json()["data"]["state"] == "closed"
    assert caller.trace(run_id)["turns"][0]["tool_calls"][0]["approval"]["approved"] is True
    assert len(toolhost.calls("/tools/pay")) == 1


def test_declined_call_never_reaches_the_host(caller, toolhost):
    thread, run_id, run = _start(caller, 'call: pay {"amount": 900}')
    call_id = run["pending"]["tool_calls"][0]["id"]
    resp = _approve(caller, run_id, call_id, False, reason="too much")
    assert resp.status_code == 200
    run = caller.wait(run_id, states=("closed", "failed"))
    assert run["state"] == "closed"
    traced = caller.trace(run_id)["turns"][0]["tool_calls"][0]
    assert traced["status"] == "declined" and traced["result"]["declined"] is True
    assert traced["approval"]["approved"] is False and traced["approval"]["reason"] == "too much"
    assert toolhost.calls("/tools/pay") == []


def test_a_message_instead_declines_and_becomes_the_next_input(caller, toolhost):
    thread, run_id, run = _start(caller, 'call: pay {"amount": 5}')
    resp = caller.post(thread, "call: balance {}")
    assert resp.status_code == 202 and resp.json()["data"]["run_id"] == run_id  # same run resumes
    run = caller.wait(run_id, states=("closed", "failed"))
    assert run["state"] == "closed"
    trace = caller.trace(run_id)
    pay = trace["turns"][0]["tool_calls"][0]
    assert pay["status"] == "declined" and pay["approval"]["reason"] == "The user sent a message instead."
    assert pay["result"]["message_id"] == resp.json()["data"]["message_id"]
    # the message became the model's next input: it called balance in the same run
    assert [t["tool_calls"][0]["name"] for t in trace["turns"] if t["tool_calls"]] == ["pay", "balance"]
    assert trace["turns"][1]["request"]["messages"][-1] == {"role": "user", "content": "call: balance {}"}
    assert toolhost.calls("/tools/pay") == [] and len(toolhost.calls("/tools/balance")) == 1


def test_approval_rule_only_above_an_amount(caller, toolhost):
    thread, small, run = _start(caller, 'call: tip {"amount": 10}')
    assert run["state"] == "closed"  # 10 is not above 50: made without asking
    traced = caller.trace(small)["turns"][0]["tool_calls"][0]
    assert traced["status"] == "succeeded" and traced["approval"]["required"] is False
    assert traced["approval"]["rule"] == {"above": {"amount": 50.0}}
    big = caller.post(thread, 'call: tip {"amount": 80}').json()["data"]["run_id"]
    run = caller.wait(big)
    assert run["state"] == "awaiting_input" and run["pending"]["tool_calls"][0]["approval"]["why"] == \
        "amount 80 is above 50"
    missing = caller.post(thread, "call: tip {}", if_busy="interrupt").json()["data"]["run_id"]
    assert missing == big  # a message while approvals wait answers (declines) them
    assert len(toolhost.calls("/tools/pay")) == 1


def test_approval_refusals(caller, toolhost):
    thread, run_id, run = _start(caller, 'call: pay {"amount": 5}')
    call_id = run["pending"]["tool_calls"][0]["id"]
    other = _approve(caller, run_id, call_id, True, subject="web:mallory")
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    for body in ({"tool_call_id": call_id, "approved": "yes"}, {"tool_call_id": call_id},
                 {"tool_call_id": call_id, "approved": True, "extra": 1}):
        bad = caller.http.post(f"/v1/loom/runs/{run_id}/approval", json=body, headers=caller.headers())
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    assert _approve(caller, run_id, "00000000-0000-0000-0000-000000000000", True).status_code == 404
    assert caller.run(run_id)["state"] == "awaiting_input"
    # an ask_user call is not an approval
    bob = caller.thread("web:bob")
    asked = caller.post(bob, "ask: why?", subject="web:bob").json()["data"]["run_id"]
    caller.wait(asked, subject="web:bob")
    ask_id = caller.trace(asked, subject="web:bob")["turns"][0]["tool_calls"][0]["id"]
    wrong = _approve(caller, asked, ask_id, True, subject="web:bob")
    assert wrong.status_code == 409 and wrong.json()["error"]["code"] == "run_not_awaiting_approval"
    # cancelling declines the pending approval; nothing reaches the host
    assert caller.cancel(run_id).status_code == 200
    traced = caller.trace(run_id)["turns"][0]["tool_calls"][0]
    assert traced["status"] == "declined" and traced["approval"]["reason"] == "the run was cancelled"
    late = _approve(caller, run_id, call_id, True)
    assert late.status_code == 200 and late.json()["data"]["state"] == "failed"  # already answered: no-op
    assert toolhost.calls("/tools/pay") == []


def test_agent_file_rules_are_validated():
    base = "name: a\nmodel_class: scripted\ntools:\n  - name: pay\n    description: Pay\n    path: /pay\n"
    parse_agent_file(base + "    interaction: approve\n    approve_when: {above: {amount: 100}}\n")
    with pytest.raises(AgentFileError, match="approve_when needs interaction: approve"):
        parse_agent_file(base + "    approve_when: {above: {amount: 100}}\n")
    with pytest.raises(AgentFileError, match="approve_when"):
        parse_agent_file(base + "    interaction: approve\n    approve_when: {above: {}}\n")
