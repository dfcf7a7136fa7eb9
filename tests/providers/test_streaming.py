"""Streaming replies: the SDK adapters against fake servers that speak the real SSE formats,
and the scripted model word by word. The pieces add up to the text; tokens stay exact."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llmfake_http import Collector, Failure, Reply

from heddle.loom.providers.anthropic_provider import AnthropicProvider
from heddle.loom.providers.base import ChatMessage, ModelProviderError, ToolSpec
from heddle.loom.providers.openai_compat import OpenAICompatProvider
from heddle.loom.providers.registry import cost_micro, default_scripted_class
from heddle.loom.providers.scripted import HELP_TEXT, ScriptedProvider
from heddle.loom.providers.streaming import READ_WINDOW_SECONDS, _sse_batches

LOOKUP = ToolSpec("lookup_balance", "Look up an account balance",
                  {"type": "object", "properties": {"account": {"type": "string"}}})
LONG = "Your balance is 42 euros and  your last payment\nwent to ACME Ltd on Monday."


@pytest.fixture
async def openai_provider(openai_class):
    provider = OpenAICompatProvider(openai_class)
    yield provider
    await provider.aclose()


@pytest.fixture
async def anthropic_provider(anthropic_class):
    provider = AnthropicProvider(anthropic_class)
    yield provider
    await provider.aclose()


async def test_openai_streams_pieces_that_add_up_with_exact_usage(openai_provider, openai_class, openai_api):
    messages = [ChatMessage("system", "Be brief."), ChatMessage("user", "balance please")]
    openai_api.script.push(Reply(text=LONG), Reply(text=LONG))
    sink = Collector()
    streamed = await openai_provider.complete(openai_class, messages, [], sink)
    whole = await openai_provider.complete(openai_class, messages, [])  # the same reply, not streamed
    assert len(sink.pieces) == len(LONG.split()) and "".join(sink.pieces) == LONG == streamed.text
    assert (streamed.input_tokens, streamed.output_tokens) == (whole.input_tokens, whole.output_tokens) == (4, len(LONG.split()))
    assert cost_micro(openai_class, streamed.input_tokens, streamed.output_tokens) == cost_micro(
        openai_class, whole.input_tokens, whole.output_tokens)
    assert "heddle_usage_estimated" not in streamed.response and streamed.response["heddle_streamed"] is True
    assert streamed.stop_reason == "stop" and streamed.response["choices"][0]["message"]["content"] == LONG
    sent = openai_api.script.requests[0].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert "stream" not in openai_api.script.requests[1].body


async def test_openai_streamed_tool_calls_are_accumulated(openai_provider, openai_class, openai_api):
    args = {"account": "acc_1", "note": "a longer argument so it arrives in several pieces"}
    openai_api.script.push(Reply(tool_calls=(("lookup_balance", args), ("lookup_balance", {"account": "b"}))))
    sink = Collector()
    response = await openai_provider.complete(openai_class, [ChatMessage("user", "hi")], [LOOKUP], sink)
    assert sink.pieces == [] and response.text is None and response.stop_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("lookup_balance", args), ("lookup_balance", {"account": "b"})]
    assert response.tool_calls[0].id.startswith("call_fake") and response.tool_calls[0].id.endswith("_0")
    assert response.output_tokens > 0 and "heddle_usage_estimated" not in response.response


async def test_openai_stream_broken_midway_is_retried_from_scratch(openai_provider, openai_class, openai_api):
    openai_api.script.push(Reply(text=LONG, break_after=4), Reply(text=LONG))
    sink = Collector()
    response = await openai_provider.complete(openai_class, [ChatMessage("user", "hi")], [], sink)
    assert len(sink.attempts) == 2 and 0 < len(sink.attempts[0]) < len(LONG.split())
    assert "".join(sink.pieces) == LONG == response.text
    (failure,) = response.response["heddle_retries"]  # the SDK's connection error, or ours
    assert failure["error"].startswith(("connection failed", "the stream broke off"))


async def test_openai_stream_refused_then_served(openai_provider, openai_class, openai_api):
    openai_api.script.push(Failure(503), Reply(text="fine now"))
    sink = Collector()
    response = await openai_provider.complete(openai_class, [ChatMessage("user", "hi")], [], sink)
    assert response.text == "fine now" and "".join(sink.pieces) == "fine now"
    assert response.response["heddle_retries"][0]["status"] == 503


async def test_openai_stream_failure_is_a_model_error(openai_provider, openai_class, openai_api):
    openai_api.script.push(Failure(400, "bad request"))
    with pytest.raises(ModelProviderError, match="HTTP 400"):
        await openai_provider.complete(openai_class, [ChatMessage("user", "hi")], [], Collector())


async def test_openai_usage_missing_from_stream_is_estimated(openai_provider, openai_class, openai_api):
    openai_api.script.push(Reply(text="three little words", omit_usage=True))
    response = await openai_provider.complete(openai_class, [ChatMessage("user", "hi there")], [], Collector())
    assert response.output_tokens == 3 and response.response["heddle_usage_estimated"] is True


async def test_openai_class_option_turns_streaming_off(openai_class, openai_api):
    quiet = replace(openai_class, options={**openai_class.options, "stream": False})
    provider = OpenAICompatProvider(quiet)
    try:
        sink = Collector()
        response = await provider.complete(quiet, [ChatMessage("user", "hello")], [], sink)
    finally:
        await provider.aclose()
    assert response.text == "echo: hello" and sink.pieces == []
    assert "stream" not in openai_api.script.requests[0].body


async def test_anthropic_streams_pieces_with_exact_usage(anthropic_provider, anthropic_class, anthropic_api):
    messages = [ChatMessage("system", "Be brief."), ChatMessage("user", "balance please")]
    anthropic_api.script.push(Reply(text=LONG), Reply(text=LONG))
    sink = Collector()
    streamed = await anthropic_provider.complete(anthropic_class, messages, [], sink)
    whole = await anthropic_provider.complete(anthropic_class, messages, [])
    assert "".join(sink.pieces) == LONG == streamed.text and len(sink.pieces) == len(LONG.split())
    assert (streamed.input_tokens, streamed.output_tokens) == (whole.input_tokens, whole.output_tokens) == (4, len(LONG.split()))
    assert streamed.stop_reason == "end_turn" and "heddle_usage_estimated" not in streamed.response
    assert anthropic_api.script.requests[0].body["stream"] is True


async def test_anthropic_streamed_tool_use(anthropic_provider, anthropic_class, anthropic_api):
    args = {"account": "acc_1", "note": "long enough to come in several json pieces"}
    anthropic_api.script.push(Reply(text="Let me look.", tool_calls=(("lookup_balance", args),)))
    sink = Collector()
    response = await anthropic_provider.complete(anthropic_class, [ChatMessage("user", "hi")], [LOOKUP], sink)
    assert "".join(sink.pieces) == "Let me look." == response.text
    (call,) = response.tool_calls
    assert call.id.startswith("toolu_fake") and (call.name, call.arguments) == ("lookup_balance", args)
    assert response.stop_reason == "tool_use" and response.output_tokens == 3 + len(args) + 1  # as the fake counts


async def test_anthropic_overloaded_then_streamed(anthropic_provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(Failure(529), Reply(text="served"))
    sink = Collector()
    response = await anthropic_provider.complete(anthropic_class, [ChatMessage("user", "hi")], [], sink)
    assert response.text == "served" == "".join(sink.pieces)
    assert response.response["heddle_retries"][0]["status"] == 529


async def test_anthropic_stream_broken_midway_is_retried(anthropic_provider, anthropic_class, anthropic_api):
    anthropic_api.script.push(Reply(text=LONG, break_after=6), Reply(text=LONG))
    sink = Collector()
    response = await anthropic_provider.complete(anthropic_class, [ChatMessage("user", "hi")], [], sink)
    assert len(sink.attempts) == 2 and "".join(sink.pieces) == LONG == response.text


async def test_scripted_streams_word_by_word():
    sink = Collector()
    response = await ScriptedProvider().complete(default_scripted_class(), [ChatMessage("user", "hi")], [], sink)
    assert response.text == HELP_TEXT == "".join(sink.pieces)
    assert len(sink.pieces) == len(HELP_TEXT.split()) == response.output_tokens


def test_the_stream_option_is_a_strict_boolean():
    from heddle.loom.providers.registry import ModelConfigError, parse_model_classes

    classes = parse_model_classes('{"local": {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1",'
                                  ' "options": {"stream": false}}}')
    assert classes["local"].options == {"stream": False}
    with pytest.raises(ModelConfigError, match="stream"):
        parse_model_classes('{"local": {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1",'
                            ' "options": {"stream": "no"}}}')


class Stamped(Collector):
    """A Collector that notes when each piece arrived."""

    def __init__(self):
        super().__init__()
        self.at: list[float] = []

    async def delta(self, text: str) -> None:
        self.at.append(time.monotonic())
        await super().delta(text)


async def test_openai_pieces_after_the_first_are_read_a_window_at_a_time(openai_provider, openai_class, openai_api):
    """Coalesced at the read (issue 48): the first piece is handed on as it arrives; then the
    model's stream is read once per window, and what came meanwhile goes on together, every
    piece still its own, in order."""
    text = " ".join(f"w{n}" for n in range(30))
    openai_api.script.push(Reply(text=text, chunk_delay=0.005))  # ~150 ms of pieces
    sink = Stamped()
    reply = await openai_provider.complete(openai_class, [ChatMessage("user", "hi")], [], sink)
    assert "".join(sink.pieces) == text == reply.text and len(sink.pieces) == 30
    # Pieces handed on in the same wake-up share a time; a wake-up per piece would give 30.
    wakeups = 1 + sum(1 for a, b in zip(sink.at, sink.at[1:]) if b - a > READ_WINDOW_SECONDS / 2)
    assert wakeups <= 30 // 3, sink.at
    assert sink.at[1] - sink.at[0] >= READ_WINDOW_SECONDS * 0.9  # the second piece waited out the window


def _sse_body(events: list[str], newline: bytes) -> bytes:
    return b"".join(b": comment" + newline + b"data: " + e.encode().replace(b"\n", newline + b"data: ")
                    + newline + newline for e in events)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
                               max_size=12), min_size=1, max_size=6),
       newline=st.sampled_from([b"\n", b"\r\n", b"\r"]), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_sse_data_is_the_same_however_the_body_is_cut(events, newline, cuts):
    """`_sse_batches` gives each event's data whatever the reads' boundaries (inside a CRLF, or
    inside a character's UTF-8 bytes), for LF, CRLF and CR line ends."""
    body = _sse_body(events, newline)
    points = sorted({c % (len(body) + 1) for c in cuts})
    assert _parsed([body[a:b] for a, b in zip([0, *points], [*points, len(body)]) if b > a]) == events


def test_multi_line_data_and_an_unended_last_event():
    assert _parsed([b"data: a\ndata: b\n\nevent: x\ndata:c"]) == ["a\nb", "c"]


def _parsed(reads: list[bytes]) -> list[str]:
    """Each event's data, as `_sse_batches` gives it for a body read in `reads`."""
    async def chunks():
        for read in reads:
            yield read

    async def parse():
        return [data async for batch in _sse_batches(chunks()) for data in batch]

    return asyncio.run(parse())
