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
from support.processes import serve_process
from support.server import LiveServer
from support.sse import collect
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


@pytest.mark.slow
def test_a_retried_stream_resets_its_text_on_the_sse_stream_of_a_real_server(tmp_path, llmock):
    """`heddle serve` as a subprocess: llmock cuts the first stream short (no finish_reason),
    the retry answers. The run's SSE stream shows the void attempt's pieces, then a
    `message.delta` with `reset: true` for that attempt, then the good attempt's pieces, which
    add up to the final message."""
    classes = json.dumps({"remote": {
        "provider": "openai", "model": "gpt-4o-mini", "base_url": llmock.base_url("openai"), "api_key": "sk-llmock",
        "max_retries": 1, "timeout": 5, "options": {"retry_base_delay": 0.01, "retry_max_delay": 0.05}}})
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'reset.db'}"
    seed = LiveServer(database_url=db_url, model_classes=classes).start()  # migrates and seeds
    tenant = make_tenant(seed)
    agent = tenant.add_agent({"name": "teller", "model_class": "remote", "instructions": "Answer.", "tools": []},
                             classes=("remote",))
    seed.stop()
    good = "Your balance is 42 euros and your last payment went to ACME Ltd on Monday."
    llmock.reply(good, times=2).truncate(after_chunks=3)
    proc, base = serve_process(db_url, env={"HEDDLE_MODEL_CLASSES": classes,
                                            "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off"})
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            h = tenant.headers("web:reset")
            run_id = post(http, h, open_thread(http, h, agent), "balance please")["run_id"]
            events, ended = collect(http, f"/v1/loom/runs/{run_id}/events", h)
    finally:
        proc.terminate()
        proc.wait(10)
    assert ended
    deltas = [e["data"] for e in events if e["event"] == "message.delta"]
    (reset_at,) = [i for i, d in enumerate(deltas) if d.get("reset")]
    void, reset, kept = deltas[:reset_at], deltas[reset_at], deltas[reset_at + 1:]
    assert void and {d["message_id"] for d in void} == {reset["message_id"]}  # the void attempt, retracted
    assert reset["delta"] == "" and reset["seq"] == len(void) and reset["run_id"] == run_id
    (created,) = [e["data"] for e in events if e["event"] == "message.created" and e["data"]["role"] == "assistant"]
    assert {d["message_id"] for d in kept} == {created["id"]} != {reset["message_id"]}
    assert [d["seq"] for d in kept] == list(range(len(kept)))
    assert "".join(d["delta"] for d in kept) == created["content"] == good
    assert events[-1]["event"] == "run.updated" and events[-1]["data"]["state"] == "closed"
