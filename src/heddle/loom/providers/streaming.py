"""Streaming model replies through the official SDKs, and the `scripted` model's word pieces.

Each function reads one streamed reply, hands every text piece to the `StreamSink` as it
arrives, and returns the reply as the same JSON body the non-streaming API would have given:
for OpenAI merged chunk by chunk here as the SDK's `ChatCompletionStreamState` merges them
(`ChunkAccumulator`; the SDK's typed chunks were most of a streaming server's CPU, see
`stream_openai`), for Anthropic by the SDK's Messages stream. The providers' `parse_response`
then reads that body exactly as before, so tool calls, stop reasons and token counts do not
depend on whether the reply streamed.

Token counts stay exact: OpenAI-compatible servers are asked for `stream_options.include_usage`
(the final chunk carries `usage`); Anthropic reports input tokens in `message_start` and the
output total in `message_delta`. An OpenAI-compatible server that ignores `stream` and
answers with a whole JSON reply is read as such (its text is one piece). A server that sends
no usage is estimated as before and the turn is marked `heddle_usage_estimated`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import openai

from heddle.loom.providers.base import StreamSink

# After a reply's first piece, the model's stream is read at most once per window (stream_openai).
READ_WINDOW_SECONDS = 0.05

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
    """One Chat Completions reply, streamed; returns the accumulated `chat.completion` body.

    The SDK sends the request (authentication, timeouts, an error status raised as its
    `APIStatusError`), and the body is read here, one `data:` line at a time, each chunk
    decoded to a dict and merged into the reply (`ChunkAccumulator`). The SDK's typed chunks
    and its `ChatCompletionStreamState` cost about 0.9 ms a chunk, 60% of the embedded server's
    CPU while streaming (docs/operations.md, "Streaming under load"); a chunk read here costs a
    `json.loads` and a few dict updates.
    """
    reply = ChunkAccumulator()
    async with client.chat.completions.with_streaming_response.create(
            **as_sent(payload), stream=True, stream_options={"include_usage": True}) as response:
        if response.headers.get("content-type", "").startswith("application/json"):
            # A compatible server that ignores `stream` and answers the whole reply at once.
            body = json.loads(await response.read())
            if not isinstance(body, dict):
                raise ValueError("the response was not a JSON object")
            await _whole_text(body, sink)
            return body
        done = started = False
        async for batch in _sse_batches(response.http_response.aiter_bytes()):
            for data in batch:
                if done or data.startswith("[DONE]"):
                    # Read on to the end of the body (a server sends nothing after it): a response
                    # left unread closes its connection, and the next turn would open a new one.
                    done = True
                    continue
                chunk = json.loads(data)
                if isinstance(chunk, dict) and chunk.get("error"):  # as the SDK's stream raises it
                    error = chunk["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    raise openai.APIError(message if isinstance(message, str) and message
                                          else "An error occurred during streaming", response.http_request,
                                          body=error)
                text = reply.add(chunk)
                if text:
                    started = True
                    await sink.delta(text)
            if started and not done:
                # Coalesced at the read (issue 48): once the reply's first piece has gone out, what
                # the model sends within a window is read and handed on in one wake-up of this task.
                await asyncio.sleep(READ_WINDOW_SECONDS)
    if not reply.finished:
        raise StreamIncomplete("the stream ended without a finish_reason")
    return reply.body()


def as_sent(payload: dict[str, Any]) -> dict[str, Any]:
    """`chat.completions.create()` arguments that send `payload` (a wire body built by
    `openai_compat.build_request`) as it is: the model by name, the rest as `extra_body`, which
    the SDK merges into the JSON unchanged. Given as keyword arguments, the messages and tools
    would first go through the SDK's TypedDict transform, which walks every message and tool
    against its types to produce the same JSON: about 0.9 ms for six messages and two tools on
    this machine, growing with the conversation, on every model turn (issue 48)."""
    return {"model": payload["model"], "messages": [],
            "extra_body": {key: value for key, value in payload.items() if key != "model"}}


_LINE_END = re.compile(rb"\r\n|\r|\n")


async def _sse_batches(chunks: AsyncIterator[bytes]) -> AsyncIterator[list[str]]:
    """The `data` of each Server-Sent Event (its `data:` lines joined by newlines), a list per
    read of the body: everything that arrived by then, parsed in one go.

    Lines end with CRLF, LF or CR (the SSE grammar); a line is decoded once it is whole, so a
    character split across reads is never cut. httpx's own `aiter_lines` gives the same lines
    through two more generators and a text decoder per read (issue 48: read per piece, those
    layers were a tenth of a streaming run's CPU)."""
    data: list[str] = []
    pending = b""
    cr = False  # the last read ended with a CR: an LF that starts the next is the same line end
    async for chunk in chunks:
        if cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        cr = chunk.endswith(b"\r")
        pending += chunk
        lines = _LINE_END.split(pending)
        pending = lines.pop()
        batch: list[str] = []
        for raw in lines:
            if not raw:
                if data:
                    batch.append("\n".join(data))
                    data = []
            elif raw.startswith(b"data:"):
                data.append(_data_value(raw))
        if batch:
            yield batch
    if pending.startswith(b"data:"):
        data.append(_data_value(pending))
    if data:
        yield ["\n".join(data)]


def _data_value(line: bytes) -> str:
    """The value of a whole `data:` line (one space after the colon is not part of it)."""
    return line[6 if line.startswith(b"data: ") else 5:].decode("utf-8", "replace")


class ChunkAccumulator:
    """`chat.completion.chunk` dicts merged into one `chat.completion` body, the way the SDK's
    `ChatCompletionStreamState` merges them (`accumulate_delta`): strings appended, lists of
    objects merged by their `index`, other values replaced; `index` and `type` never appended."""

    def __init__(self) -> None:
        self.top: dict[str, Any] = {}
        self.choices: dict[int, dict[str, Any]] = {}
        self.finished = False

    def add(self, chunk: Any) -> str:
        """Merge one chunk; returns the text it adds to the first choice."""
        if not isinstance(chunk, dict):
            raise ValueError("a stream chunk was not a JSON object")
        text = ""
        for key, value in chunk.items():
            if key != "choices" and (value is not None or key not in self.top):
                self.top[key] = value
        for choice in chunk.get("choices") or ():
            index = choice.get("index", 0)
            into = self.choices.get(index)
            if into is None:
                into = self.choices[index] = {"index": index, "finish_reason": None, "logprobs": None,
                                              "message": {}}
            for key, value in choice.items():
                if key == "delta":
                    _accumulate(into["message"], value or {})
                elif key != "index" and value is not None:
                    into[key] = value
            if index == 0:
                if choice.get("finish_reason"):
                    self.finished = True
                content = (choice.get("delta") or {}).get("content")
                if isinstance(content, str):
                    text = content
        return text

    def body(self) -> dict[str, Any]:
        body = {**self.top, "object": "chat.completion",
                "choices": [self.choices[i] for i in sorted(self.choices)]}
        for choice in body["choices"]:
            message = choice["message"]
            message.setdefault("role", "assistant")
            message.setdefault("content", None)
            if message.get("content") == "" and message.get("tool_calls"):
                message["content"] = None  # the role chunk's "" when only tool calls followed
        return body


def _accumulate(into: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    for key, value in delta.items():
        had = into.get(key)
        if had is None or key in ("index", "type"):
            into[key] = value
        elif isinstance(had, str) and isinstance(value, str):
            into[key] = had + value
        elif isinstance(had, dict) and isinstance(value, dict):
            _accumulate(had, value)
        elif isinstance(had, list) and isinstance(value, list):
            for entry in value:
                at = entry.get("index") if isinstance(entry, dict) else None
                if at is None:
                    had.append(entry)
                elif at < len(had):
                    _accumulate(had[at], entry)
                else:
                    had.insert(at, entry)
        elif value is not None:
            into[key] = value
    return into


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
