"""The built-in `scripted` model: deterministic, no network, always present (docs/configuration.md).

It lets the whole service run, and be tested, with no model provider. After tool results it
summarises them and stops; otherwise it reads the latest user message:

- `ask: <question>`            -> calls `ask_user` with `{"question"}`
- `call: <tool> <json args>`   -> calls that tool (if the agent has it) with those arguments
- `fail: <reason>`             -> raises `ModelProviderError(reason)`
- a message with attachments   -> names each file, with the first words of a document's text
- text holding a BIC, IBAN, routing number, sort code, IFSC or NUBAN, when the agent has the
  `identify` tool           -> calls `identify` with `{"identifier"}`
- anything else                -> a short help text

`ask_user` is always callable: the engine offers it to every agent (see `base.ASK_USER_TOOL`).
Tokens are whitespace-split words (see `tokens.py`), so turns are priced like any model.
Given a stream sink, the reply's text is streamed word by word (each word with the
whitespace before it), the pieces adding up to the text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from heddle.loom.providers import output
from heddle.loom.providers.base import (
    ASK_USER_TOOL,
    ChatMessage,
    ModelClass,
    ModelProviderError,
    ModelResponse,
    ModelToolCall,
    StreamSink,
    ToolSpec,
)
from heddle.loom.providers.scripted_summaries import IDENTIFY_TOOL, summarise_tool_result
from heddle.loom.providers.streaming import word_pieces
from heddle.loom.providers.summary_request import is_summary_request, scripted_summary
from heddle.loom.providers.tokens import input_tokens, output_tokens

HELP_TEXT = (
    "I am the scripted model. Send `ask: <question>` and I ask you that question; "
    "`call: <tool> <json arguments>` and I call that tool; `fail: <reason>` and I fail; "
    "or an account or institution identifier (BIC, IBAN, routing number, sort code, IFSC, "
    "NUBAN) and I identify it."
)

_COMMAND = re.compile(r"\A\s*(ask|call|fail)\s*:(.*)\Z", re.IGNORECASE | re.DOTALL)
_TOOL_AND_ARGS = re.compile(r"\A\s*(\S+)(.*)\Z", re.DOTALL)

# Earliest match in the text wins; on a tie, the pattern listed first (the more specific one).
_IDENTIFIER_PATTERNS = (
    re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?\d{1,3}|[A-Z0-9]{1,3})?\b"),  # IBAN
    re.compile(r"\b[A-Z]{4}0[A-Z0-9]{6}\b"),  # IFSC
    re.compile(r"\b[A-Z]{6}[A-Z2-9][A-NP-Z0-9](?:[A-Z0-9]{3})?\b"),  # BIC
    re.compile(r"(?<![\d-])\d{2}-\d{2}-\d{2}(?![\d-])"),  # sort code
    re.compile(r"(?<![\d-])\d{9}(?![\d-])"),  # routing number
    re.compile(r"(?<![\d-])\d{10}(?![\d-])"),  # NUBAN
)


def find_identifier(text: str) -> str | None:
    """The first account or institution identifier in `text` (IBAN spaces removed), or None."""
    best: tuple[int, str] | None = None
    for pattern in _IDENTIFIER_PATTERNS:
        match = pattern.search(text)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), match.group(0).replace(" ", ""))
    return best[1] if best else None


@dataclass(frozen=True)
class _Reply:
    text: str | None = None
    tool_call: tuple[str, dict[str, Any]] | None = None  # (tool name, arguments)


class ScriptedProvider:
    """Stateless; one instance serves every scripted model class."""

    async def complete(
        self, model_class: ModelClass, messages: list[ChatMessage], tools: list[ToolSpec],
        stream: StreamSink | None = None,
    ) -> ModelResponse:
        reply = decide(messages, tools)
        schema = output.split(tools)[1]
        if schema is not None and reply.tool_call is None:  # a structured reply: the schema's example
            reply = _Reply(text=output.as_text(output.example(schema)))
        if stream is not None:
            for piece in word_pieces(reply.text):  # word by word, like a model writing
                await stream.delta(piece)
        tool_calls: tuple[ModelToolCall, ...] = ()
        if reply.tool_call is not None:
            prior = sum(len(m.tool_calls) for m in messages)
            name, arguments = reply.tool_call
            tool_calls = (ModelToolCall(id=f"call_{prior}", name=name, arguments=arguments),)
        stop_reason = "tool_use" if tool_calls else "end_turn"
        model = model_class.model or "scripted"
        return ModelResponse(
            text=reply.text,
            tool_calls=tool_calls,
            input_tokens=input_tokens(messages, tools),
            output_tokens=output_tokens(reply.text, tool_calls),
            request={
                "model": model,
                "messages": [_message_record(m) for m in messages],
                "tools": [tool.name for tool in tools],
            },
            response={
                "model": model,
                "text": reply.text,
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in tool_calls
                ],
                "stop_reason": stop_reason,
            },
            stop_reason=stop_reason,
        )

    async def aclose(self) -> None:
        """Nothing to release; present so the registry can close every provider alike."""


def decide(messages: list[ChatMessage], tools: list[ToolSpec]) -> _Reply:
    """The scripted model's whole policy: what to say or call next."""
    if is_summary_request(messages):  # a thread summary (loom/summaries.py): deterministic
        return _Reply(text=scripted_summary(messages))
    results = _trailing_tool_results(messages)
    if results:
        calls = {c.id: c for m in messages for c in m.tool_calls}
        summaries = [summarise_tool_result(m, calls.get(m.tool_call_id or "")) for m in results]
        return _Reply(text=" ".join(summaries))
    latest = next((m for m in reversed(messages) if m.role == "user"), None)
    text = latest.content or "" if latest is not None else ""
    command = _COMMAND.match(text)
    if command is None and latest is not None and latest.attachments:
        return _Reply(text=describe_attachments(latest))
    if command is None:
        return _identify_or_help(text, tools)
    verb, rest = command.group(1).lower(), command.group(2).strip()
    if verb == "fail":
        raise ModelProviderError(rest or "the scripted model was asked to fail")
    if verb == "ask":
        if not rest:
            return _Reply(text="`ask:` needs a question, for example `ask: What is your name?`")
        return _Reply(tool_call=(ASK_USER_TOOL, {"question": rest}))
    return _call(rest, tools)


def describe_attachments(message: ChatMessage) -> str:
    """The scripted answer to a message with files: each named, with what was seen of it."""
    seen = []
    for part in message.attachments:
        if part.kind == "image":
            seen.append(f"{part.name} (an image, {part.media_type})")
        else:
            words = part.data.split()
            gist = " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
            seen.append(f"{part.name} ({part.media_type}: \"{gist}\")" if words else f"{part.name} (no text)")
    said = f" You wrote: {_clip(message.content)}" if message.content else ""
    return f"I received {len(seen)} attachment{'s' if len(seen) != 1 else ''}: {'; '.join(seen)}.{said}"


def _trailing_tool_results(messages: list[ChatMessage]) -> list[ChatMessage]:
    end = len(messages)
    start = end
    while start > 0 and messages[start - 1].role == "tool":
        start -= 1
    return messages[start:end]


def _call(rest: str, tools: list[ToolSpec]) -> _Reply:
    parts = _TOOL_AND_ARGS.match(rest)
    if parts is None:
        return _Reply(text="`call:` needs a tool name, for example `call: send_transfer {\"amount\": 5}`")
    name, raw_args = parts.group(1), parts.group(2).strip()
    offered = {tool.name for tool in tools} | {ASK_USER_TOOL}
    if name not in offered:
        available = ", ".join(sorted(offered))
        return _Reply(text=f"I cannot call `{_clip(name)}`: this agent has no such tool. Available tools: {available}.")
    try:
        arguments = json.loads(raw_args) if raw_args else {}
    except ValueError as exc:
        return _Reply(text=f"I cannot call `{name}`: the arguments are not valid JSON ({exc}).")
    if not isinstance(arguments, dict):
        return _Reply(text=f"I cannot call `{name}`: the arguments must be a JSON object.")
    return _Reply(tool_call=(name, arguments))


def _identify_or_help(text: str, tools: list[ToolSpec]) -> _Reply:
    if any(tool.name == IDENTIFY_TOOL for tool in tools):
        identifier = find_identifier(text)
        if identifier is not None:
            return _Reply(tool_call=(IDENTIFY_TOOL, {"identifier": identifier}))
    return _Reply(text=HELP_TEXT)


def _clip(text: str, limit: int = 64) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message_record(message: ChatMessage) -> dict[str, Any]:
    record: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        record["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        record["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        record["name"] = message.name
    if message.attachments:  # references, never the bytes
        record["attachments"] = [{"id": p.attachment_id, "name": p.name, "kind": p.kind} for p in message.attachments]
    return record
