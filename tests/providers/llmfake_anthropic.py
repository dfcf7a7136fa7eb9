"""A fake Anthropic Messages API: `POST /v1/messages`, validated like the real one.

It checks the key (`x-api-key`, or `Authorization: Bearer`, which the SDK sends) and the
`anthropic-version` header; `model`, `max_tokens` and `messages` are required; roles must be
`user`/`assistant`, alternate, and start with `user`; text blocks must be non-empty; every
`tool_use` must be answered by a `tool_result` in the very next user message (results first)
and every `tool_result` must answer a `tool_use` of the previous message. Responses and errors
use the real shapes (`{"type": "error", "error": {"type", "message"}}`; 529 is
`overloaded_error`). Without a scripted `Reply`, the model echoes the last text it was sent.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
from typing import Any

from llmfake_http import (
    Failure,
    RawBody,
    Reply,
    Script,
    error_response,
    raw_response,
    read_json,
    split_words,
    sse_response,
    words,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

ALLOWED_FIELDS = {
    "model", "max_tokens", "messages", "system", "tools", "tool_choice", "temperature",
    "top_p", "top_k", "stop_sequences", "metadata", "stream",
}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
ERROR_TYPES = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}


class Invalid(Exception):
    pass


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    kind = ERROR_TYPES.get(status, "api_error")
    payload = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}
    return error_response(status, payload, headers)


def validate(body: Any) -> None:
    if not isinstance(body, dict):
        raise Invalid("The request body is not valid JSON.")
    unknown = sorted(set(body) - ALLOWED_FIELDS)
    if unknown:
        raise Invalid(f"{unknown[0]}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise Invalid("model: Field required")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise Invalid("max_tokens: Field required (an integer >= 1)")
    if "system" in body and not isinstance(body["system"], str | list):
        raise Invalid("system: Input should be a valid string")
    if "tools" in body:
        _validate_tools(body["tools"])
    _validate_messages(body.get("messages"))


def _validate_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise Invalid("tools: Input should be a valid list")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not TOOL_NAME.match(tool["name"]):
            raise Invalid(f"tools.{index}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise Invalid(f"tools.{index}.input_schema: Input schema must have type 'object'")


def _blocks(where: str, content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        if not content:
            raise Invalid(f"{where}: text content blocks must be non-empty")
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise Invalid(f"{where}: all messages must have non-empty content")
    for position, block in enumerate(content):
        if not isinstance(block, dict) or "type" not in block:
            raise Invalid(f"{where}.{position}: Input should be a valid content block")
        if block["type"] == "text" and (not isinstance(block.get("text"), str) or not block["text"]):
            raise Invalid(f"{where}.{position}: text content blocks must be non-empty")
        if block["type"] == "image":
            _validate_image(f"{where}.{position}", block.get("source"))
    return content


def _validate_image(where: str, source: Any) -> None:
    """An `image` block as the Messages API takes it: a base64 source of a supported type."""
    if not isinstance(source, dict) or source.get("type") != "base64":
        raise Invalid(f"{where}.source: Input should be a valid base64 image source")
    if source.get("media_type") not in ("image/jpeg", "image/png", "image/gif", "image/webp"):
        raise Invalid(f"{where}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' "
                      "or 'image/webp'")
    try:
        base64.b64decode(source.get("data") or "", validate=True)
    except (ValueError, TypeError):
        raise Invalid(f"{where}.source.data: invalid base64 data") from None


def _validate_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise Invalid("messages: at least one message is required")
    previous_uses: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages.{index}"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise Invalid(f'{where}.role: Input should be "user" or "assistant"')
        if index == 0 and role != "user":
            raise Invalid('messages: first message must use the "user" role')
        if index > 0 and messages[index - 1].get("role") == role:
            raise Invalid(f'messages: roles must alternate between "user" and "assistant" ({where})')
        blocks = _blocks(f"{where}.content", message.get("content"))
        if role == "assistant":
            previous_uses = _tool_uses(where, blocks)
            continue
        results = [b.get("tool_use_id") for b in blocks if b["type"] == "tool_result"]
        if any(b["type"] == "tool_result" for b in blocks[len(results):]):
            raise Invalid(f"{where}.content: tool_result blocks must come before any other content")
        unexpected = [r for r in results if r not in previous_uses]
        if unexpected:
            raise Invalid(f"{where}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                          f"{unexpected[0]}. Each `tool_result` block must have a corresponding "
                          "`tool_use` block in the previous message.")
        missing = sorted(previous_uses - set(results))
        if missing:
            raise Invalid(f"messages.{index - 1}: `tool_use` ids were found without `tool_result` "
                          f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                          "must have a corresponding `tool_result` block in the next message.")
        previous_uses = set()
    if previous_uses:
        raise Invalid("messages: the final assistant message has `tool_use` blocks without results")


def _tool_uses(where: str, blocks: list[dict[str, Any]]) -> set[str]:
    ids = set()
    for position, block in enumerate(blocks):
        if block["type"] != "tool_use":
            continue
        if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
            raise Invalid(f"{where}.content.{position}: tool_use needs id and name")
        if not isinstance(block.get("input"), dict):
            raise Invalid(f"{where}.content.{position}.input: Input should be a valid dictionary")
        ids.add(block["id"])
    return ids


def _text_of(block: dict[str, Any]) -> str:
    if block.get("type") == "text":
        return block["text"]
    if block.get("type") == "tool_result":
        content = block.get("content", "")
        return content if isinstance(content, str) else ""
    return ""


def _default_reply(messages: list[dict[str, Any]]) -> Reply:
    content = messages[-1]["content"]
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    if any(b.get("type") == "tool_result" for b in blocks):
        return Reply(text="tool said: " + " | ".join(_text_of(b) for b in blocks if b["type"] == "tool_result"))
    return Reply(text="echo: " + " ".join(_text_of(b) for b in blocks))


def _prompt_words(body: dict[str, Any]) -> int:
    total = words(body["system"]) if isinstance(body.get("system"), str) else 0
    for message in body["messages"]:
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        total += sum(words(_text_of(b)) for b in blocks)
    return total


def create_app(script: Script, api_key: str) -> Starlette:
    counter = itertools.count(1)

    async def messages(request: Request) -> Response:
        body, behaviour = await read_json(request, script)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        if api_key not in (request.headers.get("x-api-key"), bearer):
            return _error(401, "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return _error(400, "anthropic-version: header is required")
        if isinstance(behaviour, Failure):
            return _error(behaviour.status, behaviour.message, behaviour.headers)
        try:
            validate(body)
        except Invalid as exc:
            return _error(400, str(exc))
        if isinstance(behaviour, RawBody):
            return raw_response(behaviour)
        reply = behaviour if isinstance(behaviour, Reply) else _default_reply(body["messages"])
        if body.get("stream") is True:
            return sse_response(_events(_message(next(counter), body, reply)), reply)
        return JSONResponse(_message(next(counter), body, reply))

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])


def _message(number: int, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": f"toolu_fake{number}_{position}", "name": name, "input": arguments}
        for position, (name, arguments) in enumerate(reply.tool_calls)
    ]
    output = words(reply.text) + sum(len(a) + 1 for _, a in reply.tool_calls)
    result: dict[str, Any] = {
        "id": f"msg_fake{number}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None,
    }
    if not reply.omit_usage:
        result["usage"] = {"input_tokens": _prompt_words(body), "output_tokens": output}
    return result


def _events(message: dict[str, Any]):
    """The message as the Messages API streams it: `message_start` (input tokens), per block
    `content_block_start` / deltas (`text_delta` word by word, `input_json_delta` in pieces) /
    `content_block_stop`, a `ping`, `message_delta` (stop reason, output tokens), `message_stop`."""
    def event(name: str, data: dict[str, Any]) -> tuple[str, str]:
        return name, json.dumps({"type": name, **data})

    usage = message.get("usage")
    start = {**message, "content": [], "stop_reason": None}
    if usage is not None:
        start["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": 1}
    else:
        start.pop("usage", None)
    yield event("message_start", {"message": start})
    yield event("ping", {})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            for piece in split_words(block["text"]):
                yield event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
        else:
            yield event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            arguments = json.dumps(block["input"])
            for start_at in range(0, len(arguments), 7):
                yield event("content_block_delta", {"index": index, "delta": {
                    "type": "input_json_delta", "partial_json": arguments[start_at:start_at + 7]}})
        yield event("content_block_stop", {"index": index})
    delta_usage = {"output_tokens": usage["output_tokens"]} if usage is not None else {"output_tokens": 0}
    yield event("message_delta", {"delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                  "usage": delta_usage})
    yield event("message_stop", {})
