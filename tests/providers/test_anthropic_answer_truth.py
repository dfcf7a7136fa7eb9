"""Truth of an Anthropic answer, against the fake Messages API (tests/providers/llmfake_anthropic.py)
speaking the real SSE events: an event stream that ends without `message_stop` (or without a
`stop_reason`) is retried, never an answer; `max_tokens` ends the turn with the text received;
429 honours Retry-After, 529 and timeouts are retried; every attempt is on the record."""

from __future__ import annotations

from dataclasses import replace

import pytest
from llmfake_http import Collector, Failure, Reply, Slow

from heddle.loom.providers.anthropic_provider import AnthropicProvider
from heddle.loom.providers.base import ChatMessage, ModelProviderError, ToolSpec

QUESTION = [ChatMessage("user", "balance please")]
LONG = "Your balance is 42 euros and your last payment went to ACME Ltd on Monday."
LOOKUP = ToolSpec("lookup_balance", "Look up an account balance",
                  {"type": "object", "properties": {"account": {"type": "string"}}})


@pytest.fixture
async def provider(anthropic_class, metrics):
    provider = AnthropicProvider(anthropic_class, metrics=metrics)
    yield provider
    await provider.aclose()


# message_start, ping, content_block_start, then one delta per word: 5 events carry two words;
# "served ok" ends ..., content_block_stop (5), message_delta (6), message_stop (7).
@pytest.mark.parametrize("cut, text", [(5, LONG), (7, "served ok")], ids=["mid-text", "before-message_stop"])
async def test_an_event_stream_ending_early_is_retried(provider, anthropic_class, anthropic_api, metrics, cut, text):
    anthropic_api.script.push(Reply(text=text, end_after=cut), Reply(text=text))
    sink = Collector()
    response = await provider.complete(anthropic_class, QUESTION, [], sink)
    first, second = response.attempts
    assert (first.outcome, first.error_code) == ("error", "stream_incomplete") and second.outcome == "ok"
    assert len(sink.attempts) == 2 and "".join(sink.attempts[-1]) == response.text == text
    assert response.stop_reason == "end_turn" and not response.truncated
    assert metrics.registry.get_sample_value("heddle_model_retries_total",
                                             {"model_class": "fake-claude", "reason": "stream_incomplete"}) == 1


async def test_an_event_stream_always_ending_early_is_a_retryable_failure(provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(*[Reply(text=LONG, end_after=4)] * 3)
    with pytest.raises(ModelProviderError) as failure:
        await provider.complete(anthropic_class, QUESTION, [], Collector())
    assert failure.value.retryable and failure.value.code == "stream_incomplete"
    assert [a.error_code for a in failure.value.attempts] == ["stream_incomplete"] * 3


@pytest.mark.parametrize("streamed", [True, False])
async def test_max_tokens_ends_the_turn_truncated(provider, anthropic_class, anthropic_api, metrics, streamed):
    anthropic_api.script.push(Reply(text="The report says that", stop_reason="max_tokens"))
    sink = Collector() if streamed else None
    response = await provider.complete(anthropic_class, QUESTION, [], sink)
    assert response.truncated and response.stop_reason == "max_tokens" and response.text == "The report says that"
    assert [a.outcome for a in response.attempts] == ["ok"]
    if streamed:
        assert "".join(sink.attempts[-1]) == response.text
    assert metrics.registry.get_sample_value("heddle_model_calls_total",
                                             {"model_class": "fake-claude", "outcome": "truncated"}) == 1


async def test_max_tokens_drops_a_tool_use_cut_short(provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(Reply(text="Let me look.", tool_calls=(("lookup_balance", {"account": "a"}),),
                                    stop_reason="max_tokens"))
    response = await provider.complete(anthropic_class, QUESTION, [LOOKUP], Collector())
    assert response.truncated and response.tool_calls == () and response.text == "Let me look."
    assert response.response["heddle_dropped_tool_calls"] == 1


@pytest.mark.parametrize("streamed", [True, False])
async def test_429_honours_retry_after_and_529_backs_off(anthropic_class, anthropic_api, streamed):
    model_class = replace(anthropic_class, options={**anthropic_class.options, "retry_after_cap": 1.0})
    provider = AnthropicProvider(model_class)
    anthropic_api.script.push(Failure(429, "slow down", headers={"retry-after": "0.2"}), Failure(529, "Overloaded"),
                              Reply(text="served"))
    try:
        response = await provider.complete(model_class, QUESTION, [], Collector() if streamed else None)
    finally:
        await provider.aclose()
    limited, overloaded, answered = response.attempts
    assert (limited.status, limited.error_code, limited.retry_after, limited.waited_seconds) == (
        429, "rate_limited", 0.2, 0.2)
    assert (overloaded.status, overloaded.error_code, overloaded.retry_after) == (529, "server_error", None)
    assert 0 < overloaded.waited_seconds <= 0.005 and answered.outcome == "ok" and response.text == "served"


async def test_a_timeout_is_an_attempt_on_the_record(anthropic_class, anthropic_api):
    model_class = replace(anthropic_class, timeout=0.3)
    provider = AnthropicProvider(model_class)
    anthropic_api.script.push(Slow(1.0), Reply(text="late"), Reply(text="on time"))
    try:
        response = await provider.complete(model_class, QUESTION, [], Collector())
    finally:
        await provider.aclose()
    timed_out, answered = response.attempts
    assert timed_out.error_code in ("timeout", "stream_broken") and 0.25 < timed_out.duration_seconds < 1.0
    assert answered.outcome == "ok" and response.text in ("late", "on time")
