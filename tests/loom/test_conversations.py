"""Threads, messages and runs through the real server, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run


@pytest.fixture
def agent(tenant):
    return tenant.add_agent(SCRIPTED_AGENT)


def test_thread_is_reused_per_subject_and_agent(http, tenant, agent):
    first = http.post("/v1/loom/threads", json={"agent": agent}, headers=tenant.headers("web:alice"))
    again = http.post("/v1/loom/threads", json={"agent": agent}, headers=tenant.headers("web:alice"))
    assert first.status_code == 201 and again.status_code == 200
    assert first.json()["data"]["id"] == again.json()["data"]["id"]
    data = first.json()["data"]
    assert data["agent"] == agent and data["subject"] == "web:alice" and data["created_at"].endswith("Z")
    # a different channel prefix is a different person
    other = http.post("/v1/loom/threads", json={"agent": agent}, headers=tenant.headers("whatsapp:alice"))
    assert other.status_code == 201 and other.json()["data"]["id"] != data["id"]


def test_subject_ref_when_no_header_and_header_wins(http, tenant, agent):
    h = tenant.headers(subject=None)
    r = http.post("/v1/loom/threads", json={"agent": agent, "subject_ref": "sms:42"}, headers=h)
    assert r.status_code == 201 and r.json()["data"]["subject"] == "sms:42"
    r = http.post("/v1/loom/threads", json={"agent": agent, "subject_ref": "sms:42"}, headers=tenant.headers("web:bob"))
    assert r.json()["data"]["subject"] == "web:bob"


@pytest.mark.parametrize(("body", "status", "code"), [
    ({}, 400, "invalid_request"),
    ({"agent": "nope"}, 400, "invalid_request"),
    ({"agent": "agent_doesnotexist"}, 404, "agent_not_found"),
    ({"agent": "agent_x", "extra": 1}, 400, "invalid_request"),
])
def test_create_thread_bad_input(http, tenant, body, status, code):
    r = http.post("/v1/loom/threads", json=body, headers=tenant.headers())
    assert r.status_code == status and r.json()["error"]["code"] == code


def test_relay_needs_a_subject(http, tenant, agent):
    r = http.post("/v1/loom/threads", json={"agent": agent}, headers=tenant.headers(subject=None))
    assert r.status_code == 400 and r.json()["error"]["code"] == "subject_required"
    r = http.get("/v1/loom/threads", headers=tenant.headers(subject=None))
    assert r.json()["error"]["code"] == "subject_required"


@pytest.mark.parametrize("subject", ["alice", "web:", ":alice", "Web:alice", "web:al ice", "web:" + "x" * 300])
def test_malformed_subject(http, tenant, agent, subject):
    r = http.post("/v1/loom/threads", json={"agent": agent}, headers=tenant.headers(subject))
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_subject"


def test_message_returns_202_and_run_closes(http, tenant, agent):
    h = tenant.headers()
    thread = open_thread(http, h, agent)
    data = post(http, h, thread, "hello there")
    assert data["run"]["state"] == "running" and data["run_id"] == data["run"]["id"]
    run = wait_run(http, h, data["run_id"])
    assert run["state"] == "closed" and run["terminal"] is True
    assert run["latest_message"]["role"] == "assistant" and run["latest_message"]["content"]
    assert run["cost_credits"] > 0
    messages = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]
    assert [m["role"] for m in messages["items"]] == ["user", "assistant"]
    assert messages["items"][0]["id"] == data["message_id"]


def test_ask_then_answer_resumes_the_same_run(http, tenant, agent):
    h = tenant.headers()
    thread = open_thread(http, h, agent)
    run_id = post(http, h, thread, "ask: which bank?")["run_id"]
    run = wait_run(http, h, run_id)
    assert run["state"] == "awaiting_input"
    assert run["pending"] == {"type": "input", "question": "which bank?"}
    answer = post(http, h, thread, "Chase")
    assert answer["run_id"] == run_id
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "closed" and run["latest_message"]["content"] == "You said: Chase"
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    assert [t["seq"] for t in trace["turns"]] == [1, 2]
    assert trace["turns"][0]["tool_calls"][0]["result"] == {"answer": "Chase"}
    assert trace["opened_at"] <= trace["closed_at"]


def test_fail_command_fails_the_run_with_model_error(http, tenant, agent):
    h = tenant.headers()
    run_id = post(http, h, open_thread(http, h, agent), "fail: provider exploded")["run_id"]
    run = wait_run(http, h, run_id)
    assert run["state"] == "failed" and run["terminal"]
    assert run["error"]["code"] == "model_error" and "provider exploded" in run["error"]["message"]


def test_new_message_after_close_starts_a_new_run(http, tenant, agent):
    h = tenant.headers()
    thread = open_thread(http, h, agent)
    first = post(http, h, thread, "hello")["run_id"]
    wait_run(http, h, first)
    second = post(http, h, thread, "hello again")["run_id"]
    assert second != first


def test_message_while_running_is_409_run_active(server, http, tenant):
    slow = tenant.add_agent({**SCRIPTED_AGENT, "name": "slowpoke"})
    h = tenant.headers("web:busy")
    thread = open_thread(http, h, slow)
    run_id = post(http, h, thread, "ask: hold on?")["run_id"]
    wait_run(http, h, run_id)  # awaiting_input: answering is allowed...
    post(http, h, thread, "yes")
    # ...but while it is running again, a further message is refused, nothing is lost
    r = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "again"}, headers=h)
    if r.status_code == 409:
        assert r.json()["error"]["code"] == "run_active" and r.json()["error"]["details"]["run_id"] == run_id
    else:  # the run had already closed: then the message must have started a new run
        assert r.status_code == 202 and r.json()["data"]["run_id"] != run_id


@pytest.mark.parametrize("content", ["", "x" * 32_001])
def test_message_bad_content(http, tenant, agent, content):
    h = tenant.headers()
    r = http.post(f"/v1/loom/threads/{open_thread(http, h, agent)}/messages", json={"content": content}, headers=h)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"


def test_unknown_ids_are_404(http, tenant):
    h = tenant.headers()
    for path in (f"/v1/loom/runs/{uuid.uuid4()}", f"/v1/loom/runs/{uuid.uuid4()}/trace", "/v1/loom/runs/not-a-uuid",
                 f"/v1/loom/threads/{uuid.uuid4()}/messages"):
        r = http.get(path, headers=h)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path


def test_trace_requires_credentials(http, tenant, agent):
    h = tenant.headers()
    run_id = post(http, h, open_thread(http, h, agent), "hi")["run_id"]
    r = http.get(f"/v1/loom/runs/{run_id}/trace")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"


def test_pagination_of_threads_and_messages(http, tenant):
    h = tenant.headers("web:pager")
    agents = [tenant.add_agent({**SCRIPTED_AGENT, "name": f"a{i}"}) for i in range(5)]
    for a in agents:
        open_thread(http, h, a)
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"after": cursor} if cursor else {})}
        page = http.get("/v1/loom/threads", params=params, headers=h).json()["data"]
        seen += [t["agent"] for t in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == list(reversed(agents))  # newest first, each exactly once
    only = http.get("/v1/loom/threads", params={"agent": agents[0]}, headers=h).json()["data"]["items"]
    assert [t["agent"] for t in only] == [agents[0]]
    bad = http.get("/v1/loom/threads", params={"after": "garbage!"}, headers=h)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    assert http.get("/v1/loom/threads", params={"limit": 0}, headers=h).status_code == 400
    thread = open_thread(http, h, agents[0])
    run = post(http, h, thread, "ask: one?")["run_id"]
    wait_run(http, h, run)
    post(http, h, thread, "two")
    wait_run(http, h, run, states=("closed",))
    first = http.get(f"/v1/loom/threads/{thread}/messages", params={"limit": 3}, headers=h).json()["data"]
    rest = http.get(f"/v1/loom/threads/{thread}/messages", params={"after": first["next_cursor"]}, headers=h).json()["data"]
    assert len(first["items"]) == 3 and len(rest["items"]) == 1 and rest["next_cursor"] is None


def test_run_cost_equals_turns_and_ledger(http, tenant, agent):
    h = tenant.headers("web:costs")
    before = tenant.balance_micro()
    run_id = post(http, h, open_thread(http, h, agent), "ask: cost?")["run_id"]
    wait_run(http, h, run_id)
    post(http, h, open_thread(http, h, agent), "ok")
    wait_run(http, h, run_id, states=("closed",))
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    from heddle.money import to_micro

    turn_micro = sum(to_micro(t["cost_credits"]) for t in trace["turns"])
    call_micro = sum(to_micro(c["cost_credits"]) for t in trace["turns"] for c in t["tool_calls"])
    assert to_micro(trace["cost_credits"]) == turn_micro + call_micro > 0
    assert before - tenant.balance_micro() == to_micro(trace["cost_credits"])
    assert tenant.balance_micro() == tenant.ledger_sum()
    for t in trace["turns"]:
        assert t["input_tokens"] > 0 and t["output_tokens"] > 0 and t["model_class"] == "scripted"
