"""The OpenAI-compatible provider against llmock, a third-party OpenAI-compatible server with fault
injection that also grades the client (`assert_resilient`: no truncated stream accepted, no
Retry-After ignored, no retry storm). Every case leaves each attempt on the record."""

from __future__ import annotations

from dataclasses import replace

import pytest
from llmfake_http import Collector
from llmock.scenarios import Reply, ToolCall

from heddle.loom.providers.base import ChatMessage, ModelClass, ModelProviderError, ToolSpec
from heddle.loom.providers.openai_compat import OpenAICompatProvider
from heddle.observability.metrics import Metrics

QUESTION = [ChatMessage("user", "What is the balance of acc_1?")]
LOOKUP = ToolSpec("lookup_balance", "Look up an account balance",
                  {"type": "object", "properties": {"account": {"type": "string"}}, "required": ["account"]})
ANSWER = "Your balance is 42 euros and your last payment went to ACME Ltd on Monday."


@pytest.fixture
def mock_class(llmock) -> ModelClass:
    return ModelClass(
        name="mock", provider="openai", model="gpt-4o-mini", base_url=llmock.base_url("openai"), api_key="sk-llmock",
        timeout=5.0, max_retries=2,
        options={"retry_base_delay": 0.01, "retry_max_delay": 0.05, "retry_after_cap": 1.0},
    )


@pytest.fixture
async def provider(mock_class, metrics):
    provider = OpenAICompatProvider(mock_class, metrics=metrics)
    yield provider
    await provider.aclose()


@pytest.fixture
async def impatient(mock_class, metrics):
    """The same class with a 0.5 s timeout per attempt, for the timeout cases."""
    quick = replace(mock_class, timeout=0.5)
    provider = OpenAICompatProvider(quick, metrics=metrics)
    yield provider, quick
    await provider.aclose()


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_a_stream_cut_short_is_retried_never_an_answer(llmock, provider, mock_class, metrics):
    llmock.reply(ANSWER, times=2).truncate(after_chunks=3)
    sink = Collector()
    response = await provider.complete(mock_class, QUESTION, [], sink)
    first, second = response.attempts
    assert (first.outcome, first.error_code) == ("error", "stream_incomplete")
    assert second.outcome == "ok" and response.stop_reason == "stop" and not response.truncated
    assert len(sink.attempts) == 2 and "".join(sink.attempts[-1]) == response.text == ANSWER
    assert 0 < len(sink.attempts[0]) < len(sink.attempts[-1])  # the void attempt's pieces were superseded
    assert response.response["heddle_retries"] == [first.as_dict()]
    assert sample(metrics, "heddle_model_retries_total", model_class="mock", reason="stream_incomplete") == 1
    assert sample(metrics, "heddle_model_calls_total", model_class="mock", outcome="ok") == 1
    llmock.assert_resilient()


async def test_a_stream_always_cut_short_fails_with_every_attempt(llmock, provider, mock_class, metrics):
    llmock.truncate(after_chunks=2, times=None)
    with pytest.raises(ModelProviderError) as failure:
        await provider.complete(mock_class, QUESTION, [], Collector())
    error = failure.value
    assert error.retryable and error.code == "stream_incomplete" and "gave up after 3 attempts" in str(error)
    assert [(a.number, a.outcome, a.error_code) for a in error.attempts] == [
        (n, "error", "stream_incomplete") for n in (1, 2, 3)]
    assert sample(metrics, "heddle_model_calls_total", model_class="mock", outcome="error") == 1
    assert sample(metrics, "heddle_model_tokens_total", model_class="mock", direction="output") == 0  # never billed
    # (llmock's verdict cannot tell a client that gave up from one that used the last part.)


@pytest.mark.parametrize("streamed", [True, False])
async def test_length_ends_the_turn_with_the_text_received(llmock, provider, mock_class, metrics, streamed):
    llmock.add(Reply(text="The report says that the", finish_reason="length"))
    sink = Collector() if streamed else None
    response = await provider.complete(mock_class, QUESTION, [], sink)
    assert response.truncated and response.stop_reason == "length"
    assert response.text == "The report says that the" and response.output_tokens > 0
    assert [a.outcome for a in response.attempts] == ["ok"]
    if streamed:
        assert "".join(sink.attempts[-1]) == response.text and len(sink.attempts) == 1
    assert sample(metrics, "heddle_model_calls_total", model_class="mock", outcome="truncated") == 1


async def test_length_drops_tool_calls_cut_short(llmock, provider, mock_class):
    llmock.add(Reply(tool_calls=(ToolCall("lookup_balance", {"account": "acc_1"}),), finish_reason="length"))
    response = await provider.complete(mock_class, QUESTION, [LOOKUP], Collector())
    assert response.truncated and response.tool_calls == ()
    assert response.response["heddle_dropped_tool_calls"] == 1


@pytest.mark.parametrize("streamed", [True, False])
async def test_429_and_503_are_retried_honouring_retry_after(llmock, provider, mock_class, metrics, streamed):
    llmock.rate_limit(retry_after=0.2).fail(503, retry_after=0.1).reply(ANSWER)
    response = await provider.complete(mock_class, QUESTION, [], Collector() if streamed else None)
    limited, unavailable, answered = response.attempts
    assert (limited.status, limited.error_code, limited.retry_after, limited.waited_seconds) == (
        429, "rate_limited", 0.2, 0.2)
    assert (unavailable.status, unavailable.error_code) == (503, "server_error")
    assert (unavailable.retry_after, unavailable.waited_seconds) == (0.1, 0.1)
    assert answered.outcome == "ok" and response.text == ANSWER
    assert sample(metrics, "heddle_model_retries_total", model_class="mock", reason="rate_limited") == 1
    assert sample(metrics, "heddle_model_retries_total", model_class="mock", reason="server_error") == 1
    llmock.assert_resilient()


async def test_a_slow_answer_times_out_and_is_retried(llmock, impatient):
    provider, quick = impatient
    llmock.delay(1.5).reply(ANSWER)
    response = await provider.complete(quick, QUESTION, [])
    timed_out, answered = response.attempts
    assert (timed_out.error_code, timed_out.error) == ("timeout", "request timed out after 0.5s")
    assert 0.4 < timed_out.duration_seconds < 1.5 and answered.outcome == "ok"


async def test_a_stalled_stream_times_out_and_is_retried(llmock, impatient):
    provider, quick = impatient
    llmock.reply(ANSWER, times=2).stall(after_chunks=2, seconds=3)
    sink = Collector()
    response = await provider.complete(quick, QUESTION, [], sink)
    stalled, answered = response.attempts
    assert stalled.outcome == "error" and stalled.error_code in ("timeout", "stream_broken", "connection")
    assert answered.outcome == "ok" and "".join(sink.attempts[-1]) == ANSWER


async def test_tokens_and_time_to_first_token_by_model_class(llmock, provider, mock_class, metrics):
    llmock.reply(ANSWER).slow_first_token(0.2)
    response = await provider.complete(mock_class, QUESTION, [], Collector())
    assert sample(metrics, "heddle_model_tokens_total", model_class="mock", direction="input") == response.input_tokens
    assert sample(metrics, "heddle_model_tokens_total", model_class="mock", direction="output") == (
        response.output_tokens)
    assert sample(metrics, "heddle_model_time_to_first_token_seconds_count", model_class="mock") == 1
    assert sample(metrics, "heddle_model_time_to_first_token_seconds_sum", model_class="mock") >= 0.2
    assert sample(metrics, "heddle_model_call_duration_seconds_count", model_class="mock") == 1
