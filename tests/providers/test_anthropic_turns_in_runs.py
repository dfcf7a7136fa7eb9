"""The Anthropic provider's turns as a run records them, through a real server and the fake
Messages API: 529 ("overloaded") on every attempt is a `failed` turn with each attempt and a run
failed `model_error` naming the cause; `stop_reason: max_tokens` with text is a `truncated`
answer; an event stream cut short then answered lists both attempts."""

from __future__ import annotations

import json

import httpx
import pytest
from llmfake_http import Failure, Reply

from support.loom import open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant

pytestmark = pytest.mark.slow


@pytest.fixture
def claude_run(tmp_path, anthropic_api):
    classes = json.dumps({"claude": {
        "provider": "anthropic", "model": "claude-fake", "base_url": anthropic_api.url, "api_key": anthropic_api.api_key,
        "max_retries": 2, "timeout": 5, "max_tokens": 300, "input_price_per_1k": 3, "output_price_per_1k": 15,
        "options": {"retry_base_delay": 0.01, "retry_max_delay": 0.05, "retry_after_cap": 1.0}}})
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'claude.db'}", model_classes=classes).start()
    tenant = make_tenant(server)
    agent = tenant.add_agent({"name": "claude-teller", "model_class": "claude", "instructions": "Answer.",
                              "tools": []}, classes=("claude",))
    http = httpx.Client(base_url=server.base_url, timeout=10)

    def run() -> tuple[dict, dict]:
        h = tenant.headers("web:claude")
        ended = wait_run(http, h, post(http, h, open_thread(http, h, agent), "balance please")["run_id"],
                         states=("closed", "failed"))
        return ended, http.get(f"/v1/loom/runs/{ended['id']}/trace", headers=h).json()["data"]

    yield run
    http.close()
    server.stop()


def test_overloaded_on_every_attempt_is_a_failed_turn(claude_run, anthropic_api):
    anthropic_api.script.push(*[Failure(529, "Overloaded")] * 3)
    run, trace = claude_run()
    assert run["state"] == "failed" and run["error"]["code"] == "model_error"
    assert "gave up after 3 attempts" in run["error"]["message"] and "server_error" in run["error"]["message"]
    (turn,) = trace["turns"]
    assert turn["status"] == "failed" and turn["cost_credits"] == 0
    assert [(a["status"], a["error_code"]) for a in turn["attempts"]] == [(529, "server_error")] * 3


def test_max_tokens_with_text_is_a_truncated_answer(claude_run, anthropic_api):
    anthropic_api.script.push(Reply(text="The report says that", stop_reason="max_tokens"))
    run, trace = claude_run()
    assert run["state"] == "closed" and run["latest_message"]["content"] == "The report says that"
    (turn,) = trace["turns"]
    assert turn["status"] == "truncated" and turn["truncated"] is True and turn["cost_credits"] > 0


def test_an_event_stream_cut_short_then_answered_lists_both_attempts(claude_run, anthropic_api):
    text = "Your balance is 42 euros and your last payment went to ACME Ltd on Monday."
    anthropic_api.script.push(Reply(text=text, end_after=5), Reply(text=text))
    run, trace = claude_run()
    assert run["state"] == "closed" and run["latest_message"]["content"] == text
    (turn,) = trace["turns"]
    assert turn["status"] == "ok"
    assert [(a["outcome"], a["error_code"]) for a in turn["attempts"]] == [("error", "stream_incomplete"), ("ok", None)]
