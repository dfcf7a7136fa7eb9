"""Summaries and memory as a real OpenAI-compatible server sees them: llmock's request journal.

- the summary request (no tools), then the chat request carrying the summary and not the
  summarized messages;
- a fact stored by a `remember` call in the first request of another thread (another agent) of
  the same subject, and absent from another subject's;
- a fact deleted by the person absent from the next request; `forget` of another subject's id
  refused; a summarizer that fails leaves the run going with the cut history.
"""

from __future__ import annotations

import json

import httpx
import pytest
from llmock.scenarios import Match, Reply, ToolCall

from heddle.loom.providers.summary_request import SUMMARY_INSTRUCTIONS
from support.loom import open_thread, post, wait_run
from support.net import free_port
from support.server import LiveServer
from support.tenants import make_tenant

CHAT, SUMMARIZER = "chat-model", "summarizer-model"
FIRST = "My account is ACC-FIRST-1234 and I bank with Northwind."
SUMMARY = "The user's account is ACC-FIRST-1234 at Northwind."


def model_class(llmock, model: str, **extra) -> dict:
    return {"provider": "openai", "model": model, "base_url": llmock.base_url("openai"), "api_key": "sk-llmock",
            "max_retries": 0, "timeout": 5, "max_tokens": 64, "input_price_per_1k": 1, "output_price_per_1k": 1,
            "options": {"stream": False}, **extra}


@pytest.fixture
def remote(tmp_path, llmock):
    llmock.tool_mode("off")
    classes = json.dumps({
        "chat": model_class(llmock, CHAT, history_tokens=70),
        "cheap": model_class(llmock, SUMMARIZER),
        # Nothing listens there: every call fails at once (connection refused).
        "broken": {**model_class(llmock, "gone"), "base_url": f"http://127.0.0.1:{free_port()}/v1"}})
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}", model_classes=classes).start()
    tenant = make_tenant(server)
    names = ("chat", "cheap", "broken")
    agents = {
        "teller": tenant.add_agent({"name": "teller", "model_class": "chat", "instructions": "You are a teller.",
                                    "memory": {"remember": True, "summarize_with": "cheap"}}, classes=names),
        "advisor": tenant.add_agent({"name": "advisor", "model_class": "chat", "instructions": "You advise.",
                                     "memory": {"remember": True}}, classes=names),
        "forgetful": tenant.add_agent({"name": "forgetful", "model_class": "chat", "instructions": "Plain.",
                                       "memory": {"summarize_with": "broken"}}, classes=names),
    }
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        yield http, tenant, agents
    server.stop()


def chat_reply(llmock, text: str = "Okay.") -> None:
    llmock.add(Reply(text=text, match=Match(model=CHAT)))


def bodies(llmock, model: str) -> list[dict]:
    return [r.body for r in llmock.requests if r.body and r.body.get("model") == model]


def texts(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


def converse(http, h, thread, llmock, content: str) -> dict:
    chat_reply(llmock)
    run = wait_run(http, h, post(http, h, thread, content)["run_id"], states=("closed", "failed"))
    assert run["state"] == "closed", run
    return run


def test_the_summary_request_then_the_chat_request_with_the_summary_not_the_messages(remote, llmock):
    http, tenant, agents = remote
    llmock.add(Reply(text=SUMMARY, times=None, match=Match(model=SUMMARIZER)))
    h = tenant.headers("web:long")
    thread = open_thread(http, h, agents["teller"])
    converse(http, h, thread, llmock, FIRST)
    for i in range(6):
        converse(http, h, thread, llmock, f"Second question number {i}, about fees and limits.")
        if bodies(llmock, SUMMARIZER):
            break
    summary_requests = bodies(llmock, SUMMARIZER)
    assert len(summary_requests) == 1, "one span, one summary"
    request = summary_requests[0]
    assert "tools" not in request and request["messages"][0]["content"] == SUMMARY_INSTRUCTIONS
    assert FIRST in texts(request)  # the message that fell out is what was summarized
    after = bodies(llmock, CHAT)[-1]
    assert SUMMARY in texts(after) and FIRST not in texts(after)
    assert after["messages"][0]["content"] == "You are a teller."
    # The trace: the summary turn (what, the summary, its cost), then the turn that used it.
    trace = last_trace(http, h, thread)
    summary_turn, reply_turn = trace["turns"]
    assert summary_turn["purpose"] == "summary" and summary_turn["response"]["text"] == SUMMARY
    assert summary_turn["request"]["summarized"]["from_seq"] == 1 and summary_turn["cost_credits"] > 0
    assert reply_turn["purpose"] == "reply"
    assert reply_turn["request"]["history"]["summary"]["through_seq"] >= 1
    # The next run reuses the stored summary: no second summary request for the same span.
    converse(http, h, thread, llmock, "One more thing.")
    assert len(bodies(llmock, SUMMARIZER)) in (1, 2)
    spans = bodies(llmock, SUMMARIZER)
    if len(spans) == 2:  # a newer span fell out: the rolling summary folds the previous one in
        assert SUMMARY in texts(spans[1]) and FIRST not in texts(spans[1])
    # The full transcript is kept.
    messages = http.get(f"/v1/loom/threads/{thread}/messages", headers=h, params={"limit": 200}).json()["data"]
    assert messages["items"][0]["content"] == FIRST


def last_trace(http, h, thread) -> dict:
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h, params={"limit": 200}).json()["data"]["items"]
    run_id = items[-1]["run_id"]
    return http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]


def test_a_failing_summarizer_leaves_the_run_going_with_the_cut_history(remote, llmock):
    http, tenant, agents = remote
    h = tenant.headers("web:cut")
    thread = open_thread(http, h, agents["forgetful"])
    converse(http, h, thread, llmock, FIRST)
    for i in range(8):
        converse(http, h, thread, llmock, f"Another long question number {i} about fees.")
        history = last_trace(http, h, thread)["turns"][-1]["request"]["history"]
        if history.get("dropped_messages"):
            break
    assert history["summary"]["error"]["code"] == "model_error"
    assert "summarizer failed" in history["summary"]["error"]["message"]
    assert FIRST not in texts(bodies(llmock, CHAT)[-1])  # the cut, as before summaries


def test_a_remembered_fact_reaches_another_thread_of_the_subject_only(remote, llmock):
    http, tenant, agents = remote
    ann = tenant.headers("web:ann")
    llmock.add(Reply(tool_calls=(ToolCall("remember", {"fact": "Ann prefers French."}),), match=Match(model=CHAT)))
    chat_reply(llmock, "Noted.")
    thread = open_thread(http, ann, agents["teller"])
    run = wait_run(http, ann, post(http, ann, thread, "Please answer me in French from now on.")["run_id"],
                   states=("closed", "failed"))
    assert run["state"] == "closed", run
    offered = {t["function"]["name"] for t in bodies(llmock, CHAT)[-2]["tools"]}
    assert {"remember", "forget", "ask_user"} <= offered
    facts = http.get("/v1/loom/memories", headers=ann).json()["data"]["items"]
    assert [f["content"] for f in facts] == ["Ann prefers French."] and facts[0]["source"] == "tool"
    assert facts[0]["agent_id"] == agents["teller"]
    # Another agent of the workspace, another thread: its first request knows the fact, with its id.
    other = open_thread(http, ann, agents["advisor"])
    converse(http, ann, other, llmock, "Hello")
    first = bodies(llmock, CHAT)[-1]
    assert "Ann prefers French." in texts(first) and facts[0]["id"] in texts(first)
    trace = last_trace(http, ann, other)
    assert trace["turns"][0]["request"]["history"]["memory"]["facts_given"] == 1
    # Another subject's first request does not.
    bob = tenant.headers("web:bob")
    converse(http, bob, open_thread(http, bob, agents["advisor"]), llmock, "Hello")
    assert "Ann prefers French." not in texts(bodies(llmock, CHAT)[-1])
    # Bob's agent cannot forget Ann's fact, even by its id.
    llmock.add(Reply(tool_calls=(ToolCall("forget", {"id": facts[0]["id"]}),), match=Match(model=CHAT)))
    converse(http, bob, open_thread(http, bob, agents["teller"]), llmock, "forget that")
    tool_result = [m for m in bodies(llmock, CHAT)[-1]["messages"] if m["role"] == "tool"][-1]
    assert "not_found" in tool_result["content"]
    assert len(http.get("/v1/loom/memories", headers=ann).json()["data"]["items"]) == 1
    # Ann deletes it herself: her next request no longer has it.
    assert http.delete(f"/v1/loom/memories/{facts[0]['id']}", headers=ann).status_code == 200
    converse(http, ann, other, llmock, "Do you remember me?")
    assert "Ann prefers French." not in texts(bodies(llmock, CHAT)[-1])


def test_forget_by_the_model_and_a_fact_over_the_cap(remote, llmock):
    http, tenant, agents = remote
    h = tenant.headers("web:cleo")
    fact = http.post("/v1/loom/memories", json={"content": "Cleo's dog is Rex."}, headers=h).json()["data"]
    thread = open_thread(http, h, agents["teller"])
    llmock.add(Reply(tool_calls=(ToolCall("remember", {"fact": "z" * 501}),), match=Match(model=CHAT)))
    converse(http, h, thread, llmock, "remember a lot")
    tool_result = [m for m in bodies(llmock, CHAT)[-1]["messages"] if m["role"] == "tool"][-1]
    assert "invalid_arguments" in tool_result["content"] and "500" in tool_result["content"]
    llmock.add(Reply(tool_calls=(ToolCall("forget", {"id": fact["id"]}),), match=Match(model=CHAT)))
    converse(http, h, thread, llmock, "forget the dog")
    assert http.get("/v1/loom/memories", headers=h).json()["data"]["items"] == []
    before, after = bodies(llmock, CHAT)[-2:]  # the turn that called forget, and the one after its result
    assert any("Rex" in (m["content"] or "") for m in before["messages"] if m["role"] == "system")
    assert not any("Rex" in (m["content"] or "") for m in after["messages"] if m["role"] == "system")
