"""The OpenAI-compatible provider against a fake Chat Completions server on a loopback port."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace

import pytest
from llmfake_http import Failure, RawBody, Reply, Slow

from heddle.loom.providers.base import ChatMessage, ModelProviderError, ToolSpec
from heddle.loom.providers.openai_compat import OpenAICompatProvider, build_request

LOOKUP = ToolSpec("lookup_balance", "Look up an account balance",
                  {"type": "object", "properties": {"account": {"type": "string"}}})


@pytest.fixture
async def provider(openai_class):
    provider = OpenAICompatProvider(openai_class)
    yield provider
    await provider.aclose()


async def test_plain_reply(provider, openai_class, openai_api):
    messages = [ChatMessage("system", "You are terse."), ChatMessage("user", "hello there")]
    response = await provider.complete(openai_class, messages, [])
    assert response.text == "echo: hello there"
    assert response.tool_calls == ()
    assert (response.input_tokens, response.output_tokens) == (5, 3)  # counted by the server
    assert response.stop_reason == "stop"
    assert response.request["model"] == "gpt-fake" and response.request["max_tokens"] == 256
    assert "tools" not in response.request  # an empty tools array is refused by the API
    assert response.response["id"].startswith("chatcmpl-")
    assert "heddle_retries" not in response.response
    sent = openai_api.script.requests[0]
    assert sent.headers["authorization"] == f"Bearer {openai_api.api_key}"
    assert sent.body == response.request
    json.dumps(response.request), json.dumps(response.response)


async def test_tool_call_round_trip(provider, openai_class, openai_api):
    openai_api.script.push(Reply(tool_calls=(("lookup_balance", {"account": "acc_1"}),)))
    history = [ChatMessage("user", "What is my balance?")]
    first = await provider.complete(openai_class, history, [LOOKUP])
    assert first.text is None and first.stop_reason == "tool_calls"
    (call,) = first.tool_calls
    assert call.name == "lookup_balance" and call.arguments == {"account": "acc_1"}

    history += [
        ChatMessage("assistant", tool_calls=first.tool_calls),
        ChatMessage("tool", '{"balance": 42}', tool_call_id=call.id, name=call.name),
    ]
    final = await provider.complete(openai_class, history, [LOOKUP])
    assert final.text == 'tool said: {"balance": 42}' and final.tool_calls == ()

    wire = openai_api.script.requests[1].body["messages"]
    assert wire[1] == {"role": "assistant", "content": None, "tool_calls": [{
        "id": call.id, "type": "function",
        "function": {"name": "lookup_balance", "arguments": '{"account": "acc_1"}'},
    }]}
    assert wire[2] == {"role": "tool", "tool_call_id": call.id, "content": '{"balance": 42}'}
    assert openai_api.script.requests[1].body["tools"][0]["function"]["name"] == "lookup_balance"


async def test_a_tool_message_for_an_unknown_call_is_a_400_and_not_retried(provider, openai_class, openai_api):
    history = [ChatMessage("user", "hi"), ChatMessage("tool", "{}", tool_call_id="call_nobody")]
    with pytest.raises(ModelProviderError) as failure:
        await provider.complete(openai_class, history, [])
    assert failure.value.status == 400 and failure.value.retryable is False
    assert "must be a response to a preceeding message with 'tool_calls'" in str(failure.value)
    assert len(openai_api.script.requests) == 1


async def test_retries_429_and_5xx_then_succeeds(provider, openai_class, openai_api):
    openai_api.script.push(
        Failure(429, "Rate limit reached", headers={"retry-after-ms": "3"}),
        Failure(503, "The engine is currently overloaded"),
    )
    response = await provider.complete(openai_class, [ChatMessage("user", "ok")], [])
    assert response.text == "echo: ok"
    assert len(openai_api.script.requests) == 3
    retries = response.response["heddle_retries"]
    assert [r["status"] for r in retries] == [429, 503]
    assert retries[0]["waited_seconds"] == 0.003  # the server's Retry-After, not our backoff
    assert "Rate limit reached" in retries[0]["error"]


async def test_retry_after_is_capped(provider, openai_class, openai_api):
    openai_api.script.push(Failure(429, "slow down", headers={"retry-after": "3600"}))
    started = time.monotonic()
    response = await provider.complete(openai_class, [ChatMessage("user", "ok")], [])
    assert time.monotonic() - started < 2
    assert response.response["heddle_retries"][0]["waited_seconds"] == 0.05  # retry_after_cap


async def test_retries_exhausted_raise_with_the_status(provider, openai_class, openai_api):
    openai_api.script.push(*[Failure(500, "boom")] * 3)
    with pytest.raises(ModelProviderError) as failure:
        await provider.complete(openai_class, [ChatMessage("user", "ok")], [])
    assert failure.value.status == 500 and failure.value.retryable is True
    assert "HTTP 500: boom" in str(failure.value) and "3 attempts" in str(failure.value)
    assert len(openai_api.script.requests) == 3  # 1 + max_retries (2)


async def test_a_400_fails_at_once(provider, openai_class, openai_api):
    openai_api.script.push(Failure(400, "Invalid 'messages': bad"))
    with pytest.raises(ModelProviderError) as failure:
        await provider.complete(openai_class, [ChatMessage("user", "ok")], [])
    assert failure.value.status == 400 and not failure.value.retryable
    assert len(openai_api.script.requests) == 1


async def test_a_wrong_key_fails_at_once_and_the_key_is_never_shown(openai_api, openai_class):
    wrong = replace(openai_class, api_key="sk-wrong-key-000000000000")
    provider = OpenAICompatProvider(wrong)
    try:
        with pytest.raises(ModelProviderError) as failure:
            await provider.complete(wrong, [ChatMessage("user", "ok")], [])
    finally:
        await provider.aclose()
    assert failure.value.status == 401
    assert "Incorrect API key provided" in str(failure.value)  # the server echoed the key ...
    assert "sk-wrong-key" not in str(failure.value)  # ... and we masked it
    assert len(openai_api.script.requests) == 1


async def test_timeout_is_retried_then_succeeds(openai_api, openai_class):
    quick = replace(openai_class, timeout=0.3, max_retries=1)
    provider = OpenAICompatProvider(quick)
    openai_api.script.push(Slow(1.5))
    try:
        response = await provider.complete(quick, [ChatMessage("user", "late")], [])
    finally:
        await provider.aclose()
    assert response.text == "echo: late"
    assert response.response["heddle_retries"][0]["error"] == "request timed out after 0.3s"


async def test_timeout_without_retries_raises(openai_api, openai_class):
    quick = replace(openai_class, timeout=0.2, max_retries=0)
    provider = OpenAICompatProvider(quick)
    openai_api.script.push(Slow(1.5))
    try:
        with pytest.raises(ModelProviderError, match="timed out") as failure:
            await provider.complete(quick, [ChatMessage("user", "late")], [])
    finally:
        await provider.aclose()
    assert failure.value.retryable is True and failure.value.status is None


async def test_connection_refused_is_retried_then_raises(openai_class, unused_url):
    nowhere = replace(openai_class, base_url=f"{unused_url}/v1")
    provider = OpenAICompatProvider(nowhere)
    try:
        with pytest.raises(ModelProviderError, match="connection failed") as failure:
            await provider.complete(nowhere, [ChatMessage("user", "hi")], [])
    finally:
        await provider.aclose()
    assert "3 attempts" in str(failure.value)


async def test_invalid_json_arguments_fail_the_turn(provider, openai_class, openai_api):
    openai_api.script.push(Reply(tool_calls=(("lookup_balance", {}),), arguments_raw='{"account": '))
    with pytest.raises(ModelProviderError, match="invalid JSON arguments for tool 'lookup_balance'"):
        await provider.complete(openai_class, [ChatMessage("user", "hi")], [LOOKUP])


async def test_non_object_arguments_fail_the_turn(provider, openai_class, openai_api):
    openai_api.script.push(Reply(tool_calls=(("lookup_balance", {}),), arguments_raw="[1]"))
    with pytest.raises(ModelProviderError, match="not a JSON object"):
        await provider.complete(openai_class, [ChatMessage("user", "hi")], [LOOKUP])


async def test_empty_arguments_mean_an_empty_object(provider, openai_class, openai_api):
    openai_api.script.push(Reply(tool_calls=(("lookup_balance", {}),), arguments_raw=""))
    response = await provider.complete(openai_class, [ChatMessage("user", "hi")], [LOOKUP])
    assert response.tool_calls[0].arguments == {}


async def test_missing_usage_is_estimated_and_flagged(provider, openai_class, openai_api):
    openai_api.script.push(Reply(text="three little words", omit_usage=True))
    response = await provider.complete(openai_class, [ChatMessage("user", "one two")], [])
    assert (response.input_tokens, response.output_tokens) == (2, 3)
    assert response.response["heddle_usage_estimated"] is True


@pytest.mark.parametrize("body, content_type, expected", [
    (b"<html>Bad gateway</html>", "text/html", "not JSON"),
    (b'{"id": "x", "choices": []}', "application/json", "no choices"),
    (b'{"choices": [{"index": 0, "message": "nope"}]}', "application/json", "no message"),
])
async def test_malformed_success_bodies_fail_cleanly(provider, openai_class, openai_api, body, content_type, expected):
    openai_api.script.push(RawBody(200, body, content_type))
    with pytest.raises(ModelProviderError, match=expected):
        await provider.complete(openai_class, [ChatMessage("user", "hi")], [])


def test_request_options(openai_class):
    tuned = replace(openai_class, options={"max_tokens_param": "max_completion_tokens", "temperature": 0.2})
    payload = build_request(tuned, [ChatMessage("assistant", None)], [])
    assert payload["max_completion_tokens"] == 256 and "max_tokens" not in payload
    assert payload["temperature"] == 0.2
    assert payload["messages"] == [{"role": "assistant", "content": ""}]


def test_a_tool_message_without_call_id_is_a_programming_error(openai_class):
    with pytest.raises(ValueError, match=r"messages\[1\]: a tool message needs tool_call_id"):
        build_request(openai_class, [ChatMessage("user", "x"), ChatMessage("tool", "{}")], [])


async def test_concurrent_turns_share_one_client(provider, openai_class, openai_api):
    replies = await asyncio.gather(*(
        provider.complete(openai_class, [ChatMessage("user", f"n{i}")], []) for i in range(8)
    ))
    assert sorted(r.text for r in replies) == sorted(f"echo: n{i}" for i in range(8))


async def test_parallel_tool_calls_keep_the_server_ids(provider, openai_class, openai_api):
    openai_api.script.push(Reply(tool_calls=(("lookup_balance", {"account": "a"}), ("lookup_balance", {"account": "b"}))))
    response = await provider.complete(openai_class, [ChatMessage("user", "both")], [LOOKUP])
    first, second = response.tool_calls
    assert first.id.startswith("call_fake") and second.id.startswith("call_fake") and first.id != second.id
    assert [c.arguments for c in response.tool_calls] == [{"account": "a"}, {"account": "b"}]
    assert response.response["choices"][0]["message"]["tool_calls"][1]["id"] == second.id
