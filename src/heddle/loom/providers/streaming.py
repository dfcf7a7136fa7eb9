"""Streaming model replies through the official SDKs, and the `scripted` model's word pieces.

Each function reads one streamed reply, hands every text piece to the `StreamSink` as it
arrives, and returns the reply as the same JSON body the non-streaming API would have given,
accumulated by the SDK's own helpers (`ChatCompletionStreamState` for OpenAI, the Messages
stream for Anthropic). The providers' `parse_response` then reads that body exactly as before,
so tool calls, stop reasons and token counts do not depend on whether the reply streamed.

Token counts stay exact: OpenAI-compatible servers are asked for `stream_options.include_usage`
(the final chunk carries `usage`); Anthropic reports input tokens in `message_start` and the
output total in `message_delta`. An OpenAI-compatible server that ignores `stream` and
answers with a whole JSON reply is read as such (its text is one piece). A server that sends
no usage is estimated as before and the turn is marked `heddle_usage_estimated`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from openai.lib.streaming.chat import ChatCompletionStreamState

from heddle.loom.providers.base import StreamSink

_PIECE = re.compile(r"\s*\S+|\s+\Z")


def word_pieces(text: str | None) -> list[str]:
    """`text` cut before each word, whitespace kept, so that the pieces join back to `text`."""
    return _PIECE.findall(text) if text else []


class StreamInterrupted(Exception):
    """The connection broke or timed out while a streamed reply was being read (retryable)."""


class StreamIncomplete(Exception):
    """The stream ended cleanly but without its terminal event: no `finish_reason` (OpenAI), no
    `stop_reason`/`message_stop` (Anthropic). The SDKs raise nothing for it; the reply is only
    a part, so it is retried and never billed as an answer."""


def is_transport_error(exc: BaseException) -> bool:
    """An HTTP transport failure raised mid-stream (the SDKs do not wrap those in their errors)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TransportError", "TimeoutException", "StreamError", "RemoteProtocolError"})


async def stream_openai(client: Any, payload: dict[str, Any], sink: StreamSink) -> dict[str, Any]:
    """One Chat Completions reply, streamed; returns the accumulated `chat.completion` body."""
    state = ChatCompletionStreamState()
    finished = False
    stream = await client.chat.completions.create(**payload, stream=True,
                                                  stream_options={"include_usage": True})
    async with stream:
        if stream.response.headers.get("content-type", "").startswith("application/json"):
            # A compatible server that ignores `stream` and answers the whole reply at once.
            body = json.loads(await stream.response.aread())
            if not isinstance(body, dict):
                raise ValueError("the response was not a JSON object")
            await _whole_text(body, sink)
            return body
        async for chunk in stream:
            state.handle_chunk(chunk)
            for choice in chunk.choices or ():
                if choice.index == 0 and choice.finish_reason:
                    finished = True
                if choice.index == 0 and choice.delta is not None and choice.delta.content:
                    await sink.delta(choice.delta.content)
    if not finished:
        raise StreamIncomplete("the stream ended without a finish_reason")
    # The snapshot, not `get_final_completion()`: that helper parses for structured outputs
    # and raises on `finish_reason: "length"`, which is a usable (truncated) reply here.
    body = state.current_completion_snapshot.to_dict(mode="json", warnings=False)
    body["object"] = "chat.completion"
    for choice in body.get("choices") or ():  # the accumulator's own fields, not the API's
        message = choice.get("message") or {}
        message.pop("parsed", None)
        if message.get("content") == "" and message.get("tool_calls"):
            message["content"] = None  # the role chunk's "" when only tool calls followed
        for call in message.get("tool_calls") or ():
            (call.get("function") or {}).pop("parsed_arguments", None)
    return body


async def _whole_text(body: dict[str, Any], sink: StreamSink) -> None:
    choices = body.get("choices")
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str) and content:
        await sink.delta(content)


async def stream_anthropic(client: Any, payload: dict[str, Any], sink: StreamSink) -> dict[str, Any]:
    """One Messages reply, streamed; returns the accumulated `message` body.

    The whole reply's text is its text blocks joined by newlines (see `parse_response`), so a
    newline piece is sent before the first text of every text block after the first.
    """
    texts_seen = 0
    current_has_text = False
    stopped = False
    async with client.messages.stream(**payload) as stream:
        async for event in stream:
            if event.type == "message_stop":
                stopped = True
            elif event.type == "content_block_start":
                current_has_text = False
            elif (event.type == "content_block_delta" and event.delta.type == "text_delta"
                  and event.delta.text):
                if not current_has_text:
                    current_has_text = True
                    texts_seen += 1
                    if texts_seen > 1:
                        await sink.delta("\n")
                await sink.delta(event.delta.text)
        if not stopped:
            raise StreamIncomplete("the stream ended without message_stop")
        message = await stream.get_final_message()
    body = message.to_dict(mode="json", warnings=False)
    if not body.get("stop_reason"):
        raise StreamIncomplete("the stream ended without a stop_reason")
    for block in body.get("content") or ():
        block.pop("parsed_output", None)
    return body
