"""The console's playground (draft and saved versions as a named test subject, runs of origin
playground: traced, charged, filterable, out of the overview), its live events and approvals,
and the Feedback and Evals pages' API."""

from __future__ import annotations

import time

from support.console import expect_error
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.sse import parse

APPROVE_TOOL = {"name": "send_money", "description": "Send money", "connection": None, "path": "/send",
                "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}},
                "interaction": "approve", "base_url": "http://127.0.0.1:9/"}


def settle(console, ws: str, run_id: str, states=("closed", "failed", "awaiting_input")) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        run = console.data("GET", f"/workspaces/{ws}/runs/{run_id}")["run"]
        if run["state"] in states:
            return run
        time.sleep(0.05)
    raise AssertionError(run)


def test_playground_draft_and_saved_versions(server, console, tenant, http):
    ws = tenant.workspace_id
    agent = tenant.add_agent(SCRIPTED_AGENT)
    before = tenant.balance_micro()
    url = f"/workspaces/{ws}/agents/{agent}/playground"
    # A draft (the editor's unsaved text) without the identify tool: the run executes the draft.
    draft = {"yaml": "name: helper\nmodel_class: scripted\ninstructions: Draft.\ntools: []\n"}
    sent = console.data("POST", url, 202, json={"subject": "ada", "content": "who is DEUTDEFF?", "draft": draft})
    assert sent["subject"] == "playground:ada" and sent["version"] <= 0
    run = settle(console, ws, sent["run_id"])
    detail = console.data("GET", f"/workspaces/{ws}/runs/{sent['run_id']}")
    assert detail["run"]["origin"] == "playground" and detail["agent"]["version"] == sent["version"]
    assert all(not t["tool_calls"] for t in detail["trace"]["turns"])  # the draft has no tools
    # The agent itself did not change, and the draft is not one of its versions.
    shown = console.data("GET", f"/workspaces/{ws}/agents/{agent}")
    assert shown["version"] == 1 and [v["version"] for v in shown["versions"]] == [1]

    # The saved version 1 calls identify; the same test subject's thread goes on.
    sent2 = console.data("POST", url, 202, json={"subject": "ada", "content": "who is DEUTDEFF?", "version": 1})
    assert sent2["thread_id"] == sent["thread_id"] and sent2["version"] == 1
    settle(console, ws, sent2["run_id"])
    trace = console.data("GET", f"/workspaces/{ws}/runs/{sent2['run_id']}")["trace"]
    assert [c["name"] for t in trace["turns"] for c in t["tool_calls"]] == ["identify"]
    assert tenant.balance_micro() < before  # charged like any run
    assert run["state"] == "closed"

    # The live events (SSE, the operator's session): the run's log up to its end.
    with console.http.stream("GET", f"/console/api/workspaces/{ws}/playground/runs/{sent2['run_id']}/events",
                             headers=console.headers("GET")) as resp:
        assert resp.status_code == 200
        events = [e for e in parse(resp.iter_lines()) if "event" in e]
    assert events[-1]["event"] == "run.updated" and events[-1]["data"]["terminal"]

    # Filterable, and not in the overview's figures of users' runs.
    ours = console.data("GET", f"/workspaces/{ws}/runs?origin=playground")["items"]
    assert {r["id"] for r in ours} == {sent["run_id"], sent2["run_id"]}
    h = tenant.headers("web:real")
    wait_run(http, h, post(http, h, open_thread(http, h, agent), "hello")["run_id"])
    api_runs = console.data("GET", f"/workspaces/{ws}/runs?origin=api")["items"]
    assert len(api_runs) == 1
    overview = console.data("GET", f"/workspaces/{ws}/overview")
    assert overview["runs"] == {"total": 1, "by_state": {"closed": 1}}  # the user's run only


def test_playground_refusals_and_questions(server, console, tenant):
    ws = tenant.workspace_id
    agent = tenant.add_agent(SCRIPTED_AGENT)
    url = f"/workspaces/{ws}/agents/{agent}/playground"
    expect_error(console.post(url, json={"subject": "ada", "content": "hi", "version": 9}), 404, "not_found")
    expect_error(console.post(url, json={"subject": "ada", "content": "hi", "draft": {"yaml": "name: x\n"}}),
                 400, "invalid_request")
    expect_error(console.post(url, json={"subject": "bad\u200bname", "content": "hi"}), 400, "invalid_subject")
    expect_error(console.post(url, json={"subject": "ada", "content": ""}), 400, "invalid_request")
    expect_error(console.post(f"/workspaces/{ws}/agents/agent_nosuch/playground",
                              json={"subject": "ada", "content": "hi"}), 404, "not_found")
    # A question is answered in place by the next message.
    asked = console.data("POST", url, 202, json={"subject": "q", "content": "ask: Your name?"})
    assert settle(console, ws, asked["run_id"])["state"] == "awaiting_input"
    answered = console.data("POST", url, 202, json={"subject": "q", "content": "Ada"})
    assert answered["run_id"] == asked["run_id"]
    assert settle(console, ws, asked["run_id"], ("closed", "failed"))["state"] == "closed"
    # Only playground runs take approvals here.
    expect_error(console.post(f"/workspaces/{ws}/playground/runs/{asked['run_id']}x/approval",
                              json={"tool_call_id": "x", "approved": True}), 404, "not_found")


def test_feedback_and_evals_pages_api(server, console, tenant, http):
    ws = tenant.workspace_id
    agent = tenant.add_agent(SCRIPTED_AGENT)
    for subject, rating in (("web:u1", "up"), ("web:u2", "down")):
        h = tenant.headers(subject)
        run = wait_run(http, h, post(http, h, open_thread(http, h, agent), "hello")["run_id"])
        resp = http.post(f"/v1/loom/messages/{run['latest_message']['id']}/feedback",
                         json={"rating": rating, "comment": subject}, headers=h)
        assert resp.status_code == 200
    items = console.data("GET", f"/workspaces/{ws}/feedback")["items"]
    assert [i["rating"] for i in items] == ["down", "up"]  # down-rated first
    assert items[0]["trace"] == f"/console/w/{ws}/runs/{items[0]['run_id']}" and items[0]["answer"]
    assert [i["rating"] for i in console.data("GET", f"/workspaces/{ws}/feedback?agent={agent}&version=1")["items"]] \
        == ["down", "up"]
    assert console.data("GET", f"/workspaces/{ws}/feedback?version=2")["items"] == []
    expect_error(console.get(f"/workspaces/{ws}/feedback?rating=meh"), 400, "invalid_request")
    assert console.data("GET", f"/workspaces/{ws}/evals")["items"] == []
    expect_error(console.get(f"/workspaces/{ws}/evals/not-an-id"), 404, "not_found")
