"""POST /v1/loom/runs/{id}/cancel through HTTP, in both auth modes, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
import uuid

from llmfake_http import Reply, Slow

from run_control.run_control_kit import EventListener, wait_until


def _run_id(resp) -> str:
    assert resp.status_code == 202, resp.text
    return resp.json()["data"]["run_id"]


def test_cancel_during_a_slow_tool_call_records_the_call(caller, toolhost, server):
    thread = caller.thread()
    with EventListener(server, caller.headers(), thread) as events:
        run_id = _run_id(caller.post(thread, "call: slow {}"))
        toolhost.wait_for_call("/tools/slow")  # the call is in flight at the host
        resp = caller.cancel(run_id)
        assert resp.status_code == 200, resp.text
        run = resp.json()["data"]
        assert run["state"] == "failed" and run["terminal"] is True
        assert run["error"]["code"] == "cancelled"
        # the in-flight call keeps its reliability rules: it finishes and is recorded
        toolhost.release()
        wait_until(lambda: caller.trace(run_id)["turns"][0]["tool_calls"][0]["status"] == "succeeded",
                   what="the in-flight tool call to be recorded")
        events.wait_for(lambda n, d: n == "run.updated" and d["id"] == run_id and d["state"] == "failed")
    trace = caller.trace(run_id)
    [call] = trace["turns"][0]["tool_calls"]
    assert call["result"] == {"done": True} and call["name"] == "slow"
    assert trace["state"] == "failed" and trace["closed_at"] is not None
    assert len(trace["turns"]) == 1  # no model turn after the cancel
    cancelled = trace["control"]["cancelled"]
    assert cancelled["from_state"] == "running" and cancelled["at"].endswith("Z")
    assert cancelled["by"]["mode"] == caller.mode and cancelled["by"]["subject"] == "web:alice"
    assert len(toolhost.calls("/tools/slow")) == 1  # never re-sent
    time.sleep(0.2)
    before = caller.run(run_id)
    assert before["state"] == "failed"
    # a second cancel is a no-op 200
    again = caller.cancel(run_id)
    assert again.status_code == 200 and again.json()["data"] == before


def test_cancel_abandons_a_model_call_in_flight(caller, tenant, llm, server):
    agent = tenant.add_agent({"name": "slowpoke", "model_class": "slow", "instructions": "", "tools": []},
                             classes=("scripted", "slow", "tiny"))
    llm.push(Slow(8), Reply(text="too late"))
    thread = caller.thread(agent=agent)
    run_id = _run_id(caller.post(thread, "hello", ))
    wait_until(lambda: len(llm.requests) == 1, what="the model call")
    started = time.monotonic()
    resp = caller.cancel(run_id)
    assert resp.status_code == 200 and resp.json()["data"]["error"]["code"] == "cancelled"
    executor = server.services.executor
    wait_until(lambda: uuid.UUID(run_id) not in executor._tasks, timeout=3, what="the executor to let go")
    assert time.monotonic() - started < 3  # abandoned, not waited for (the model takes 8 s)
    trace = caller.trace(run_id)
    assert trace["turns"] == [] and trace["cost_credits"] == 0 and trace["latest_message"] is None


def test_cancel_waiting_runs(caller, toolhost):
    thread = caller.thread()
    asked = _run_id(caller.post(thread, "ask: what amount?"))
    assert caller.wait(asked)["state"] == "awaiting_input"
    resp = caller.cancel(asked)
    assert resp.status_code == 200 and resp.json()["data"]["pending"] is None
    [ask] = caller.trace(asked)["turns"][0]["tool_calls"]
    assert ask["status"] == "failed" and ask["result"]["error"]["code"] == "cancelled"
    # awaiting an outcome: the unconfirmed side effect stays awaiting its outcome, which is still recorded
    waiting = _run_id(caller.post(thread, "call: transfer {\"amount\": 5}"))
    run = caller.wait(waiting)
    assert run["state"] == "awaiting_outcome"
    call_id = run["pending"]["tool_calls"][0]["id"]
    assert caller.cancel(waiting).json()["data"]["state"] == "failed"
    outcome = caller.http.post(f"/v1/loom/runs/{waiting}/outcome", headers=caller.headers(),
                               json={"tool_call_id": call_id, "state": "occurred", "detail": {"ref": "B1"}})
    assert outcome.status_code == 200 and outcome.json()["data"]["state"] == "failed"
    call = caller.trace(waiting)["turns"][0]["tool_calls"][0]
    assert call["status"] == "resolved" and call["outcome"]["detail"] == {"ref": "B1"}
    # the thread is free again
    assert caller.wait(_run_id(caller.post(thread, "hi")))["state"] == "closed"


def test_cancel_refusals(caller, toolhost):
    thread = caller.thread()
    closed = _run_id(caller.post(thread, "hi"))
    assert caller.wait(closed)["state"] == "closed"
    resp = caller.cancel(closed)
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "run_terminal"
    assert resp.json()["error"]["details"]["state"] == "closed"
    failed = _run_id(caller.post(thread, "fail: boom"))
    assert caller.wait(failed)["state"] == "failed"
    assert caller.cancel(failed).json()["error"]["code"] == "run_terminal"
    # another subject can neither see nor cancel the run
    asked = _run_id(caller.post(thread, "ask: sure?"))
    caller.wait(asked)
    other = caller.cancel(asked, subject="web:mallory")
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    assert caller.run(asked)["state"] == "awaiting_input"
    assert caller.cancel(str(uuid.uuid4())).status_code == 404
    assert caller.cancel("not-a-uuid").status_code == 404
    unauth = caller.http.post(f"/v1/loom/runs/{asked}/cancel")
    assert unauth.status_code == 401 and unauth.json()["error"]["code"] == "unauthorized"


def test_relay_key_without_subject_cancels_any_run_of_its_workspace(http, tenant, toolhost):
    from support.tenants import make_tenant

    h = tenant.headers("web:bob")
    thread = http.post("/v1/loom/threads", json={"agent": tenant.agent}, headers=h).json()["data"]["id"]
    run_id = _run_id(http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "ask: ok?"}, headers=h))
    wait_until(lambda: http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["state"] == "awaiting_input")
    stranger = make_tenant(tenant.server)
    assert http.post(f"/v1/loom/runs/{run_id}/cancel", headers=stranger.headers(None)).status_code == 404
    resp = http.post(f"/v1/loom/runs/{run_id}/cancel", headers=tenant.headers(None))
    assert resp.status_code == 200 and resp.json()["data"]["error"]["code"] == "cancelled"


def test_cancel_between_attempts_stops_the_retries_and_records_them(caller, toolhost):
    thread = caller.thread()
    run_id = _run_id(caller.post(thread, "call: busy {}"))
    toolhost.wait_for_call("/tools/busy")  # first attempt answered 503; the retry waits 2 s
    assert caller.cancel(run_id).status_code == 200
    wait_until(lambda: caller.trace(run_id)["turns"][0]["tool_calls"][0]["status"] == "failed",
               what="the stopped retries to be recorded")
    [call] = caller.trace(run_id)["turns"][0]["tool_calls"]
    assert call["result"]["error"]["code"] == "cancelled"
    time.sleep(2.5)
    assert len(toolhost.calls("/tools/busy")) == 1  # never retried after the cancel
    assert caller.run(run_id)["state"] == "failed"
