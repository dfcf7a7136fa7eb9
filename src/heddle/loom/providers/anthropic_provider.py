"""Anthropic's Messages API, through the official `anthropic` SDK (its own retries off).

Conversion from the neutral chat format:
- every `system` message goes into the separate `system` prompt (joined by blank lines);
- assistant tool calls become `tool_use` blocks; tool results become `tool_result` blocks in a
  user message, and consecutive messages of the same role are merged into one, because the API
  wants strictly alternating roles with all results of a turn in a single user message;
- empty texts are dropped (the API refuses empty text blocks).
The reply's text blocks are joined by newlines; `tool_use` blocks become tool calls. Usage
counts cache reads and writes as input tokens, since they are input the model consumed.
`stop_reason: "max_tokens"` is a usable reply marked `truncated` (text kept, `tool_use` blocks
dropped); a streamed reply without `message_stop` and a `stop_reason` is incomplete and retried.
"""

from __future__ import annotations

from typing import Any

import anthropic

from heddle.loom.providers import output
from heddle.loom.providers.base import (
    TRUNCATED_STOP_REASONS,
    ChatMessage,
    ModelClass,
    ModelProviderError,
    ModelResponse,
    ModelToolCall,
    StreamSink,
    ToolSpec,
)
from heddle.loom.providers.sdk_errors import SdkErrorTypes
from heddle.loom.providers.sdk_provider import SdkProvider
from heddle.loom.providers.streaming import stream_anthropic
from heddle.loom.providers.tokens import input_tokens, output_tokens
from heddle.observability.metrics import Metrics

ANTHROPIC_ERRORS = SdkErrorTypes(
    status=anthropic.APIStatusError,
    timeout=anthropic.APITimeoutError,
    connection=anthropic.APIConnectionError,
    base=anthropic.AnthropicError,
)

_INPUT_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class AnthropicProvider(SdkProvider):
    """One SDK client for one model class's endpoint; `complete` may be called concurrently."""

    label = "anthropic"
    errors = ANTHROPIC_ERRORS

    def __init__(self, model_class: ModelClass, *, client: anthropic.AsyncAnthropic | None = None,
                 metrics: Metrics | None = None):
        if client is None and not model_class.api_key:
            raise ValueError(f"model class {model_class.name!r}: the anthropic provider needs an API key")
        client = client or anthropic.AsyncAnthropic(
            base_url=model_class.base_url,
            api_key=model_class.api_key,
            timeout=model_class.timeout,
            max_retries=0,
        )
        super().__init__(model_class, client, metrics)

    def _request(self, model_class, messages, tools):
        return build_request(model_class, messages, tools)

    def _parse(self, body, payload, class_name, messages, tools):
        return parse_response(body, payload, class_name, messages, tools)

    async def _stream(self, payload: dict[str, Any], sink: StreamSink) -> dict[str, Any]:
        return await stream_anthropic(self._client, payload, sink)

    def _send(self, payload: dict[str, Any]):
        return self._client.messages.create(**payload)


def build_request(
    model_class: ModelClass, messages: list[ChatMessage], tools: list[ToolSpec]
) -> dict[str, Any]:
    """The Messages API body for this turn; it is also what the trace stores as `request`."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        role, blocks = _blocks(index, message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    payload: dict[str, Any] = {
        "model": model_class.model,
        "max_tokens": model_class.max_tokens,
        "messages": turns,
    }
    if system:
        payload["system"] = system
    if "temperature" in model_class.options:
        payload["temperature"] = model_class.options["temperature"]
    if tools:
        payload["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in tools
        ]
        if output.split(tools)[1] is not None:  # the reply's shape is a tool the model must end with
            payload["tool_choice"] = {"type": "any"}
    return payload


def _blocks(index: int, message: ChatMessage) -> tuple[str, list[dict[str, Any]]]:
    text = [{"type": "text", "text": message.content}] if message.content else []
    if message.role == "user":
        # Images first, as Anthropic advises, then the text (with documents' text).
        images = [{"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}
                  for image in message.images]
        body = message.text_with_documents()
        return "user", images + ([{"type": "text", "text": body}] if body else [])
    if message.role == "assistant":
        uses = [
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            for call in message.tool_calls
        ]
        return "assistant", text + uses
    if message.role == "tool":
        if not message.tool_call_id:
            raise ValueError(f"messages[{index}]: a tool message needs tool_call_id")
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.content:
            result["content"] = message.content
        return "user", [result]
    raise ValueError(f"messages[{index}]: unknown role {message.role!r}")


def parse_response(
    body: dict[str, Any],
    request: dict[str, Any],
    class_name: str,
    messages: list[ChatMessage],
    tools: list[ToolSpec],
) -> ModelResponse:
    label = f"anthropic ({class_name})"
    content = body.get("content")
    if not isinstance(content, list):
        raise ModelProviderError(f"{label}: the response has no content list")
    stop_reason = body.get("stop_reason")
    stop_reason = stop_reason if isinstance(stop_reason, str) else None
    truncated = stop_reason in TRUNCATED_STOP_REASONS
    texts: list[str] = []
    calls: list[ModelToolCall] = []
    dropped = 0
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            raise ModelProviderError(f"{label}: content[{index}] is not an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            if block["text"]:
                texts.append(block["text"])
        elif block.get("type") == "tool_use" and truncated:
            dropped += 1  # a call cut off mid-input is never sent to a host
        elif block.get("type") == "tool_use":
            calls.append(_tool_use(label, index, block))
    if dropped:
        body["heddle_dropped_tool_calls"] = dropped
    shaped = [c for c in calls if c.name == output.OUTPUT_TOOL]
    if shaped:  # the structured reply: its input is the answer, as JSON text (providers/output.py)
        if len(calls) > len(shaped):
            body["heddle_dropped_tool_calls"] = len(calls) - len(shaped)
        texts, calls = [output.as_text(shaped[-1].arguments)], []
    text = "\n".join(texts) if texts else None
    tool_calls = tuple(calls)

    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    counted_input = [_count(usage.get(key)) for key in _INPUT_USAGE_KEYS]
    prompt = sum(n for n in counted_input if n is not None) if counted_input[0] is not None else None
    completion = _count(usage.get("output_tokens"))
    if prompt is None or completion is None:
        prompt = input_tokens(messages, tools) if prompt is None else prompt
        completion = output_tokens(text, tool_calls) if completion is None else completion
        body["heddle_usage_estimated"] = True
    return ModelResponse(
        text=text,
        tool_calls=tool_calls,
        input_tokens=prompt,
        output_tokens=completion,
        request=request,
        response=body,
        stop_reason=stop_reason,
        truncated=truncated,
    )


def _tool_use(label: str, index: int, block: dict[str, Any]) -> ModelToolCall:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise ModelProviderError(f"{label}: content[{index}] is a tool_use without id or name")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ModelProviderError(f"{label}: the input for tool {name!r} is not a JSON object")
    return ModelToolCall(id=call_id, name=name, arguments=arguments)


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
