"""Model turns on the record, through a real server and llmock (a third-party OpenAI-compatible
server with fault injection): a call that fails after its retries is a `failed` turn with every
attempt and the run's error names the cause; a call that succeeds after retries lists its
attempts; a reply cut off at max_tokens is `truncated` (an answer with its text, or a failure
when its tool calls were dropped)."""

from __future__ import annotations

import json

import httpx
import pytest
from llmock.scenarios import Reply, ToolCall

from support.loom import open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant

ANSWER = "Your balance is 42 euros."


@pytest.fixture
def remote(tmp_path, llmock):
    classes = json.dumps({"remote": {
        "provider": "openai", "model": "gpt-4o-mini", "base_url": llmock.base_url("openai"), "api_key": "sk-llmock",
        "max_retries": 2, "timeout": 5, "max_tokens": 64, "input_price_per_1k": 1, "output_price_per_1k": 1,
        "options": {"retry_base_delay": 0.01, "retry_max_delay": 0.05, "retry_after_cap": 1.0}}})
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'turns.db'}", model_classes=classes).start()
    tenant = make_tenant(server)
    # No tool: a tool call the model asks for in a cut-off reply is dropped before any lookup.
    agent = tenant.add_agent({"name": "teller", "model_class": "remote", "instructions": "Answer.", "tools": []},
                             classes=("remote",))
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        yield http, tenant, agent
    server.stop()


def run_to_end(remote, content: str = "balance please") -> tuple[dict, dict]:
    http, tenant, agent = remote
    h = tenant.headers("web:turns")
    thread = open_thread(http, h, agent)
    run = wait_run(http, h, post(http, h, thread, content)["run_id"], states=("closed", "failed"))
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h)
    assert trace.status_code == 200, trace.text
    return run, trace.json()["data"]


def test_a_turn_that_fails_after_retries_is_on_the_record_with_every_attempt(remote, llmock):
    llmock.fail(503, retry_after=0.05, times=None)
    run, trace = run_to_end(remote)
    assert run["state"] == "failed" and run["error"]["code"] == "model_error"
    message = run["error"]["message"]
    assert "gave up after 3 attempts" in message and "server_error" in message and "503" in message
    (turn,) = trace["turns"]
    assert turn["status"] == "failed" and turn["truncated"] is False and turn["seq"] == 1
    assert turn["cost_credits"] == 0 and turn["input_tokens"] == turn["output_tokens"] == 0  # nothing billed
    assert turn["response"]["error"]["code"] == "server_error"
    assert [(a["attempt"], a["outcome"], a["error_code"], a["status"]) for a in turn["attempts"]] == [
        (n, "error", "server_error", 503) for n in (1, 2, 3)]
    first, second, last = turn["attempts"]
    assert first["retry_after"] == 0.05 and first["waited_seconds"] == 0.05  # Retry-After honoured
    assert last.get("waited_seconds") is None and all(a["duration_ms"] >= 0 for a in turn["attempts"])
    assert trace["cost_credits"] == 0


def test_a_turn_that_succeeds_after_retries_lists_its_attempts(remote, llmock):
    llmock.rate_limit(retry_after=0.1).reply(ANSWER)
    run, trace = run_to_end(remote)
    assert run["state"] == "closed" and run["latest_message"]["content"] == ANSWER
    (turn,) = trace["turns"]
    assert turn["status"] == "ok" and turn["truncated"] is False
    limited, answered = turn["attempts"]
    assert (limited["outcome"], limited["error_code"], limited["status"]) == ("error", "rate_limited", 429)
    assert limited["retry_after"] == limited["waited_seconds"] == 0.1
    assert answered["outcome"] == "ok" and answered["attempt"] == 2
    llmock.assert_resilient()


def test_a_reply_cut_off_with_text_closes_the_run_marked_truncated(remote, llmock):
    llmock.add(Reply(text="The report says that the", finish_reason="length"))
    run, trace = run_to_end(remote)
    assert run["state"] == "closed" and run["latest_message"]["content"] == "The report says that the"
    (turn,) = trace["turns"]
    assert turn["status"] == "truncated" and turn["truncated"] is True
    assert turn["response"]["choices"][0]["finish_reason"] == "length"
    assert turn["cost_credits"] > 0  # the provider counted its tokens: it is billed like any answer
    assert [a["outcome"] for a in turn["attempts"]] == ["ok"]


def test_a_reply_cut_off_in_its_tool_calls_fails_the_run(remote, llmock):
    llmock.add(Reply(tool_calls=(ToolCall("lookup_balance", {"account": "acc_1"}),), finish_reason="length"))
    run, trace = run_to_end(remote)
    assert run["state"] == "failed" and run["error"]["code"] == "model_error"
    assert "cut off at max_tokens (64)" in run["error"]["message"] and "'remote'" in run["error"]["message"]
    (turn,) = trace["turns"]
    assert turn["truncated"] is True and turn["tool_calls"] == []  # no host is called with cut-off arguments
    assert turn["response"]["heddle_dropped_tool_calls"] == 1
    assert turn["cost_credits"] > 0 and trace["cost_credits"] == turn["cost_credits"]

