"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Talks through the official `openai` SDK with its own retries off (`max_retries=0`): retries are
ours (see `retry.py`). Decisions where compatible servers differ:

- Tool-call `arguments` must decode to a JSON object (an empty string counts as `{}`).
  Otherwise the turn fails with `ModelProviderError`: a payments tool is never called with
  arguments the model did not actually give.
- A tool call without an `id` gets a fresh `call_<random>` id, so the result can be matched.
- When the server omits `usage`, tokens are estimated by whitespace count and the recorded
  response says `"heddle_usage_estimated": true`, so a turn is never silently free.
- `finish_reason: "length"` (cut off at max_tokens) is a usable reply marked `truncated`: its
  text is kept and its tool calls are dropped (counted in `heddle_dropped_tool_calls`). A
  streamed reply that never sends a `finish_reason` is incomplete and retried (streaming.py).
- `max_tokens` is sent as `max_tokens` (what every compatible server reads) unless the class's
  option `max_tokens_param` is `"max_completion_tokens"` (OpenAI's reasoning models need it).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import openai

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
from heddle.loom.providers.streaming import as_sent, stream_openai
from heddle.loom.providers.tokens import input_tokens, output_tokens
from heddle.observability.metrics import Metrics

# Self-hosted servers (Ollama, llama.cpp, vLLM without --api-key) need no key, but the SDK
# refuses to start without one; this harmless value is what those servers document.
KEYLESS_API_KEY = "no-key-required"

# A pooled connection idle this long is closed by us rather than reused. The SDK's default (5 s)
# is also uvicorn's keep-alive (vLLM, llmock and most Python model servers): the server starts its
# timer when it has sent the reply, we start ours when we have read it, so a connection taken at
# 4.99 s is one the server is closing, and the request fails writing its body. One second under
# it leaves that race to a stalled event loop; `sdk_errors` retries what still hits it.
KEEPALIVE_SECONDS = 4.0


def _http_client() -> Any:
    """The SDK's aiohttp client with its connection limits, idle connections kept 4 s."""
    limits = openai.DEFAULT_CONNECTION_LIMITS
    return openai.DefaultAioHttpClient(limits=type(limits)(
        max_connections=limits.max_connections, max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=KEEPALIVE_SECONDS))

OPENAI_ERRORS = SdkErrorTypes(
    status=openai.APIStatusError,
    timeout=openai.APITimeoutError,
    connection=openai.APIConnectionError,
    base=openai.OpenAIError,
)


class OpenAICompatProvider(SdkProvider):
    """One SDK client for one model class's endpoint; `complete` may be called concurrently."""

    label = "openai"
    errors = OPENAI_ERRORS

    def __init__(self, model_class: ModelClass, *, client: openai.AsyncOpenAI | None = None,
                 metrics: Metrics | None = None):
        client = client or openai.AsyncOpenAI(
            base_url=model_class.base_url,
            api_key=model_class.api_key or KEYLESS_API_KEY,
            timeout=model_class.timeout,
            max_retries=0,
            http_client=_http_client(),
        )
        super().__init__(model_class, client, metrics)

    def _request(self, model_class, messages, tools):
        return build_request(model_class, messages, tools)

    def _parse(self, body, payload, class_name, messages, tools):
        return parse_response(body, payload, class_name, messages, tools)

    async def _stream(self, payload: dict[str, Any], sink: StreamSink) -> dict[str, Any]:
        return await stream_openai(self._client, payload, sink)

    def _send(self, payload: dict[str, Any]):
        return self._client.chat.completions.create(**as_sent(payload))


def build_request(
    model_class: ModelClass, messages: list[ChatMessage], tools: list[ToolSpec]
) -> dict[str, Any]:
    """The Chat Completions body for this turn; it is also what the trace stores as `request`."""
    tools, schema = output.split(tools)  # an output schema is a response_format here (providers/output.py)
    payload: dict[str, Any] = {
        "model": model_class.model,
        "messages": [_wire_message(index, m) for index, m in enumerate(messages)],
    }
    token_param = model_class.options.get("max_tokens_param", "max_tokens")
    payload[token_param] = model_class.max_tokens
    if "temperature" in model_class.options:
        payload["temperature"] = model_class.options["temperature"]
    if tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in tools
        ]
    if schema is not None:
        payload["response_format"] = output.response_format(schema)
    return payload


def _wire_message(index: int, message: ChatMessage) -> dict[str, Any]:
    if message.role == "user" and message.attachments:
        # Content parts: the text (with documents' text), then each image as a data URL.
        text = message.text_with_documents()
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        parts += [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in message.images]
        return {"role": "user", "content": parts}
    if message.role in ("system", "user"):
        return {"role": message.role, "content": message.content or ""}
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
        elif message.content is None:
            wire["content"] = ""
        return wire
    if message.role == "tool":
        if not message.tool_call_id:
            raise ValueError(f"messages[{index}]: a tool message needs tool_call_id")
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content or "",
        }
    raise ValueError(f"messages[{index}]: unknown role {message.role!r}")


def parse_response(
    body: dict[str, Any],
    request: dict[str, Any],
    class_name: str,
    messages: list[ChatMessage],
    tools: list[ToolSpec],
) -> ModelResponse:
    label = f"openai ({class_name})"
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelProviderError(f"{label}: the response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ModelProviderError(f"{label}: the first choice has no message")
    text = _content_text(message.get("content"))
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ModelProviderError(f"{label}: tool_calls is not a list")
    finish_reason = choices[0].get("finish_reason")
    stop_reason = finish_reason if isinstance(finish_reason, str) else None
    truncated = stop_reason in TRUNCATED_STOP_REASONS
    if truncated and raw_calls:  # a call cut off mid-arguments is never sent to a host
        body["heddle_dropped_tool_calls"] = len(raw_calls)
        raw_calls = []
    tool_calls = tuple(_tool_call(label, index, raw) for index, raw in enumerate(raw_calls))

    usage = body.get("usage")
    prompt = _token_count(usage, "prompt_tokens")
    completion = _token_count(usage, "completion_tokens")
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


def _content_text(content: object) -> str | None:
    """`content` is a string, null, or (some servers) a list of `{type: text, text}` parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        ]
        return "".join(parts) if parts else None
    return None


def _tool_call(label: str, index: int, raw: object) -> ModelToolCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        raise ModelProviderError(f"{label}: tool_calls[{index}] has no function name")
    call_id = raw.get("id") if isinstance(raw, dict) else None
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{uuid.uuid4().hex[:24]}"
    return ModelToolCall(id=call_id, name=name, arguments=_arguments(label, name, function.get("arguments")))


def _arguments(label: str, name: str, raw: object) -> dict[str, Any]:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):  # some compatible servers send the object itself
        return raw
    if isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except ValueError as exc:
            raise ModelProviderError(
                f"{label}: the model gave invalid JSON arguments for tool {name!r}: {exc}"
            ) from exc
        if isinstance(decoded, dict):
            return decoded
    raise ModelProviderError(f"{label}: the arguments for tool {name!r} are not a JSON object")


def _token_count(usage: object, key: str) -> int | None:
    if not isinstance(usage, dict):
        return None
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
