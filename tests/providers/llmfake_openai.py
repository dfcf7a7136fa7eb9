"""A fake OpenAI Chat Completions API: `POST /v1/chat/completions`, validated like the real one.

It checks the bearer key, the body's fields and types, tool definitions, and the tool-call
protocol (every assistant `tool_calls` id answered by a following `tool` message; no `tool`
message without a preceding call), and answers with the real response shape and `usage`.
Errors use the real envelope `{"error": {"message", "type", "param", "code"}}`.
Without a scripted `Reply`, the model echoes the last user text, or the last tool result.
"""

from __future__ import annotations

import itertools
import json
import re
import time
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
    "model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens",
    "temperature", "top_p", "stop", "n", "user", "seed", "parallel_tool_calls", "stream", "stream_options",
}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class Invalid(Exception):
    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


def _error(status: int, message: str, kind: str, code: str | None = None, param: str | None = None,
           headers: dict[str, str] | None = None) -> Response:
    payload = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return error_response(status, payload, headers)


def validate(body: Any) -> None:
    if not isinstance(body, dict):
        raise Invalid("We could not parse the JSON body of your request.")
    unknown = sorted(set(body) - ALLOWED_FIELDS)
    if unknown:
        raise Invalid(f"Unrecognized request argument supplied: {unknown[0]}", unknown[0])
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise Invalid("you must provide a model parameter", "model")
    for key in ("max_tokens", "max_completion_tokens"):
        if key in body and (not isinstance(body[key], int) or isinstance(body[key], bool) or body[key] < 1):
            raise Invalid(f"Invalid '{key}': expected an integer >= 1.", key)
    if "tools" in body:
        _validate_tools(body["tools"])
    _validate_messages(body.get("messages"))


def _validate_tools(tools: Any) -> None:
    if not isinstance(tools, list) or not tools:
        raise Invalid("[] is too short - 'tools'", "tools")
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            raise Invalid(f"Invalid value at 'tools[{index}]': expected a function tool.", f"tools[{index}]")
        if not isinstance(function.get("name"), str) or not TOOL_NAME.match(function["name"]):
            raise Invalid(f"Invalid 'tools[{index}].function.name': string does not match pattern.",
                          f"tools[{index}].function.name")
        if "parameters" in function and not isinstance(function["parameters"], dict):
            raise Invalid(f"Invalid 'tools[{index}].function.parameters': expected an object.")


def _validate_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise Invalid("[] is too short - 'messages'", "messages")
    pending: list[str] = []  # tool_call ids still waiting for their tool message
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise Invalid(f"Invalid type for '{where}': expected an object.", where)
        role = message.get("role")
        if pending and role != "tool":
            raise Invalid(
                "An assistant message with 'tool_calls' must be followed by tool messages responding "
                f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(pending)}", where)
        if role in ("system", "user", "developer"):
            if not isinstance(message.get("content"), str | list):
                raise Invalid(f"Invalid type for '{where}.content': expected a string.", f"{where}.content")
        elif role == "assistant":
            pending = _validate_assistant(where, message)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise Invalid(f"Missing required parameter: '{where}.tool_call_id'.", f"{where}.tool_call_id")
            if call_id not in pending:
                raise Invalid("Invalid parameter: messages with role 'tool' must be a response to a "
                              "preceeding message with 'tool_calls'.", f"{where}.role")
            if not isinstance(message.get("content"), str | list):
                raise Invalid(f"Invalid type for '{where}.content': expected a string.", f"{where}.content")
            pending.remove(call_id)
        else:
            raise Invalid(f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                          "'user', 'tool', and 'developer'.", f"{where}.role")
    if pending:
        raise Invalid("An assistant message with 'tool_calls' must be followed by tool messages "
                      f"responding to each 'tool_call_id': {', '.join(pending)}", "messages")


def _validate_assistant(where: str, message: dict[str, Any]) -> list[str]:
    calls = message.get("tool_calls")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise Invalid(f"Invalid type for '{where}.content': expected a string or null.", f"{where}.content")
    if calls is None:
        if content is None:
            raise Invalid(f"Invalid value for '{where}.content': expected a string, got null.", f"{where}.content")
        return []
    if not isinstance(calls, list) or not calls:
        raise Invalid(f"Invalid '{where}.tool_calls': empty array.", f"{where}.tool_calls")
    ids = []
    for position, call in enumerate(calls):
        at = f"{where}.tool_calls[{position}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or call.get("type") != "function":
            raise Invalid(f"Missing required parameter: '{at}.id'.", f"{at}.id")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise Invalid(f"Missing required parameter: '{at}.function.name'.", f"{at}.function")
        if not isinstance(function.get("arguments"), str):
            raise Invalid(f"Invalid type for '{at}.function.arguments': expected a string.", f"{at}.function.arguments")
        ids.append(call["id"])
    return ids


def _default_reply(messages: list[dict[str, Any]]) -> Reply:
    last = messages[-1]
    if last.get("role") == "tool":
        return Reply(text=f"tool said: {last.get('content')}")
    return Reply(text=f"echo: {last.get('content')}")


def create_app(script: Script, api_key: str) -> Starlette:
    counter = itertools.count(1)

    async def chat_completions(request: Request) -> Response:
        body, behaviour = await read_json(request, script)
        if request.headers.get("authorization") != f"Bearer {api_key}":
            presented = request.headers.get("authorization", "").removeprefix("Bearer ")
            return _error(401, f"Incorrect API key provided: {presented}. You can find your API key "
                          "at the dashboard.", "invalid_request_error", "invalid_api_key")
        if isinstance(behaviour, Failure):
            kind = "rate_limit_exceeded" if behaviour.status == 429 else "server_error"
            return _error(behaviour.status, behaviour.message, kind, headers=behaviour.headers)
        try:
            validate(body)
        except Invalid as exc:
            return _error(400, str(exc), "invalid_request_error", param=exc.param)
        if isinstance(behaviour, RawBody):
            return raw_response(behaviour)
        reply = behaviour if isinstance(behaviour, Reply) else _default_reply(body["messages"])
        if body.get("stream") is True:
            return sse_response(_chunks(_completion(next(counter), body, reply), body, reply), reply)
        return JSONResponse(_completion(next(counter), body, reply))

    return Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])


def _completion(number: int, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    tool_calls = [
        {
            "id": f"call_fake{number}_{position}",
            "type": "function",
            "function": {"name": name, "arguments": reply.arguments_raw if reply.arguments_raw is not None
                         else json.dumps(arguments)},
        }
        for position, (name, arguments) in enumerate(reply.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt = sum(words(m.get("content")) for m in body["messages"] if isinstance(m.get("content"), str))
    completion = words(reply.text) + sum(words(c["function"]["arguments"]) + 1 for c in tool_calls)
    result: dict[str, Any] = {
        "id": f"chatcmpl-fake{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "system_fingerprint": "fp_fake",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": "tool_calls" if tool_calls else "stop",
        }],
    }
    if not reply.omit_usage:
        result["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}
    return result


def _chunks(completion: dict[str, Any], body: dict[str, Any], reply: Reply):
    """The completion as `chat.completion.chunk` events, as the API streams it: a role chunk,
    the content word by word, each tool call's name then its arguments in pieces, a chunk with
    `finish_reason`, a `usage` chunk with no choices (only with `stream_options.include_usage`),
    then `[DONE]`."""
    base = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"], "system_fingerprint": "fp_fake"}
    choice = completion["choices"][0]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
        return None, json.dumps({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                      "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in split_words(choice["message"]["content"]):
        yield chunk({"content": piece})
    for index, call in enumerate(choice["message"].get("tool_calls") or ()):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"], "arguments": ""}}]})
        arguments = call["function"]["arguments"]
        for start in range(0, len(arguments), 7):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[start:start + 7]}}]})
    yield chunk({}, choice["finish_reason"])
    if "usage" in completion and (body.get("stream_options") or {}).get("include_usage"):
        yield None, json.dumps({**base, "choices": [], "usage": completion["usage"]})
    yield None, "[DONE]"
