"""The Anthropic provider against a fake Messages API server on a loopback port."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from llmfake_http import Failure, RawBody, Reply, Slow

from heddle.loom.providers.anthropic_provider import AnthropicProvider, build_request
from heddle.loom.providers.base import ChatMessage, ModelProviderError, ModelToolCall, ToolSpec

LOOKUP = ToolSpec("lookup_balance", "Look up an account balance",
                  {"type": "object", "properties": {"account": {"type": "string"}}})
NOTIFY = ToolSpec("notify", "Notify the user", {"type": "object"})


@pytest.fixture
async def provider(anthropic_class):
    provider = AnthropicProvider(anthropic_class)
    yield provider
    await provider.aclose()


async def test_plain_reply_with_a_separate_system_prompt(provider, anthropic_class, anthropic_api):
    messages = [
        ChatMessage("system", "You are terse."),
        ChatMessage("user", "hello there"),
    ]
    response = await provider.complete(anthropic_class, messages, [])
    assert response.text == "echo: hello there"
    assert response.tool_calls == () and response.stop_reason == "end_turn"
    assert (response.input_tokens, response.output_tokens) == (5, 3)
    sent = anthropic_api.script.requests[0]
    assert sent.body == {
        "model": "claude-fake", "max_tokens": 300, "system": "You are terse.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}],
    }
    assert sent.body == response.request
    assert sent.headers["anthropic-version"]
    assert response.response["id"].startswith("msg_")
    json.dumps(response.response)


async def test_tool_round_trip_merges_parallel_results_into_one_user_message(provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(Reply(
        text="Let me check both.",
        tool_calls=(("lookup_balance", {"account": "a"}), ("notify", {"text": "hi"})),
    ))
    history = [ChatMessage("system", "Be exact."), ChatMessage("user", "Balance, and tell me.")]
    first = await provider.complete(anthropic_class, history, [LOOKUP, NOTIFY])
    assert first.text == "Let me check both." and first.stop_reason == "tool_use"
    lookup, notify = first.tool_calls
    assert lookup == ModelToolCall(lookup.id, "lookup_balance", {"account": "a"})
    assert notify.name == "notify" and notify.arguments == {"text": "hi"}

    history += [
        ChatMessage("assistant", first.text, tool_calls=first.tool_calls),
        ChatMessage("tool", '{"balance": 42}', tool_call_id=lookup.id, name="lookup_balance"),
        ChatMessage("tool", '{"sent": true}', tool_call_id=notify.id, name="notify"),
    ]
    final = await provider.complete(anthropic_class, history, [LOOKUP, NOTIFY])
    assert final.text == 'tool said: {"balance": 42} | {"sent": true}'
    assert final.tool_calls == ()

    wire = anthropic_api.script.requests[1].body
    assert [m["role"] for m in wire["messages"]] == ["user", "assistant", "user"]
    assert wire["messages"][1]["content"][1] == {
        "type": "tool_use", "id": lookup.id, "name": "lookup_balance", "input": {"account": "a"},
    }
    assert wire["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": lookup.id, "content": '{"balance": 42}'},
        {"type": "tool_result", "tool_use_id": notify.id, "content": '{"sent": true}'},
    ]
    assert wire["tools"][0] == {
        "name": "lookup_balance", "description": "Look up an account balance",
        "input_schema": LOOKUP.parameters,
    }


async def test_a_missing_tool_result_is_refused_by_the_api_and_not_retried(provider, anthropic_class, anthropic_api):
    history = [
        ChatMessage("user", "go"),
        ChatMessage("assistant", tool_calls=(ModelToolCall("toolu_1", "notify", {}),)),
        ChatMessage("user", "never mind"),
    ]
    with pytest.raises(ModelProviderError) as failure:
        await provider.complete(anthropic_class, history, [NOTIFY])
    assert failure.value.status == 400 and not failure.value.retryable
    assert "without `tool_result` blocks immediately after: toolu_1" in str(failure.value)
    assert len(anthropic_api.script.requests) == 1


async def test_consecutive_user_messages_are_merged_and_empty_ones_dropped(provider, anthropic_class, anthropic_api):
    history = [ChatMessage("user", "one"), ChatMessage("user", ""), ChatMessage("user", "two")]
    response = await provider.complete(anthropic_class, history, [])
    assert response.text == "echo: one two"
    assert anthropic_api.script.requests[0].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    ]


@pytest.mark.parametrize("status, headers", [
    (429, {"retry-after": "0"}),
    (529, {}),
    (500, {}),
])
async def test_transient_failures_are_retried(provider, anthropic_class, anthropic_api, status, headers):
    anthropic_api.script.push(Failure(status, "try later", headers=headers))
    response = await provider.complete(anthropic_class, [ChatMessage("user", "ok")], [])
    assert response.text == "echo: ok"
    (failed, answered) = response.attempts
    code = "rate_limited" if status == 429 else "server_error"
    assert (failed.outcome, failed.status, failed.error_code, failed.error) == (
        "error", status, code, f"HTTP {status}: try later")
    assert answered.outcome == "ok" and answered.number == 2 and answered.duration_seconds > 0
    assert response.response["heddle_retries"] == [failed.as_dict()]  # the trace keeps them
    if status == 429:
        assert failed.retry_after == 0 and failed.waited_seconds == 0


async def test_overloaded_until_retries_run_out(provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(*[Failure(529, "Overloaded")] * 3)
    with pytest.raises(ModelProviderError) as failure:
        await provider.complete(anthropic_class, [ChatMessage("user", "ok")], [])
    assert failure.value.status == 529 and failure.value.retryable
    assert "HTTP 529: Overloaded" in str(failure.value) and "gave up after 3 attempts" in str(failure.value)
    assert len(anthropic_api.script.requests) == 3


async def test_a_400_fails_at_once(provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(Failure(400, "messages: bad"))
    with pytest.raises(ModelProviderError, match="HTTP 400: messages: bad"):
        await provider.complete(anthropic_class, [ChatMessage("user", "ok")], [])
    assert len(anthropic_api.script.requests) == 1


async def test_a_wrong_key_is_a_401_without_retry(anthropic_api, anthropic_class):
    wrong = replace(anthropic_class, api_key="sk-ant-wrong-000000")
    provider = AnthropicProvider(wrong)
    try:
        with pytest.raises(ModelProviderError) as failure:
            await provider.complete(wrong, [ChatMessage("user", "ok")], [])
    finally:
        await provider.aclose()
    assert failure.value.status == 401 and "sk-ant-wrong" not in str(failure.value)
    assert len(anthropic_api.script.requests) == 1


async def test_timeout_then_success(anthropic_api, anthropic_class):
    quick = replace(anthropic_class, timeout=0.3, max_retries=1)
    provider = AnthropicProvider(quick)
    anthropic_api.script.push(Slow(1.5))
    try:
        response = await provider.complete(quick, [ChatMessage("user", "late")], [])
    finally:
        await provider.aclose()
    assert response.text == "echo: late"
    assert response.response["heddle_retries"][0]["error"] == "request timed out after 0.3s"


async def test_timeout_without_retries_raises(anthropic_api, anthropic_class):
    quick = replace(anthropic_class, timeout=0.2, max_retries=0)
    provider = AnthropicProvider(quick)
    anthropic_api.script.push(Slow(1.5))
    try:
        with pytest.raises(ModelProviderError, match="timed out"):
            await provider.complete(quick, [ChatMessage("user", "late")], [])
    finally:
        await provider.aclose()


async def test_connection_refused(anthropic_class, unused_url):
    nowhere = replace(anthropic_class, base_url=unused_url, max_retries=1)
    provider = AnthropicProvider(nowhere)
    try:
        with pytest.raises(ModelProviderError, match="connection failed.*2 attempts"):
            await provider.complete(nowhere, [ChatMessage("user", "hi")], [])
    finally:
        await provider.aclose()


async def test_missing_usage_is_estimated(provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(Reply(text="a b c", omit_usage=True))
    response = await provider.complete(anthropic_class, [ChatMessage("user", "x y")], [])
    assert (response.input_tokens, response.output_tokens) == (2, 3)
    assert response.response["heddle_usage_estimated"] is True


@pytest.mark.parametrize("body, content_type, expected", [
    (b"upstream exploded", "text/plain", "not JSON"),
    (b'{"id": "msg_1", "type": "message", "content": "nope"}', "application/json", "no content list"),
    (b'{"content": [{"type": "tool_use", "name": "x", "input": {}}]}', "application/json", "without id"),
    (b'{"content": [{"type": "tool_use", "id": "t", "name": "x", "input": [1]}]}', "application/json",
     "not a JSON object"),
])
async def test_malformed_success_bodies_fail_cleanly(provider, anthropic_class, anthropic_api, body, content_type, expected):
    anthropic_api.script.push(RawBody(200, body, content_type))
    with pytest.raises(ModelProviderError, match=expected):
        await provider.complete(anthropic_class, [ChatMessage("user", "hi")], [])


def test_cache_tokens_count_as_input(anthropic_class):
    from heddle.loom.providers.anthropic_provider import parse_response

    body = {"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 5,
                      "cache_read_input_tokens": 100, "output_tokens": 1}}
    response = parse_response(body, {}, "c", [], [])
    assert (response.input_tokens, response.output_tokens) == (115, 1)


def test_request_building_rules(anthropic_class):
    tuned = replace(anthropic_class, options={"temperature": 0.5})
    payload = build_request(tuned, [
        ChatMessage("system", "A"), ChatMessage("user", "hi"), ChatMessage("system", "B"),
    ], [])
    assert payload["system"] == "A\n\nB" and payload["temperature"] == 0.5
    assert payload["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    with pytest.raises(ValueError, match="tool_call_id"):
        build_request(anthropic_class, [ChatMessage("tool", "{}")], [])


def test_an_api_key_is_required(anthropic_class):
    with pytest.raises(ValueError, match="needs an API key"):
        AnthropicProvider(replace(anthropic_class, api_key=None))
