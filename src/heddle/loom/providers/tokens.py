"""Whitespace token counts: the `scripted` model's tokenizer, and the fallback estimate when an
OpenAI-compatible server omits `usage` (so that a turn is never silently free)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from heddle.loom.providers.base import ChatMessage, ModelToolCall, ToolSpec


def count_words(text: str | None) -> int:
    return len(text.split()) if text else 0


def input_tokens(messages: Iterable[ChatMessage], tools: Iterable[ToolSpec]) -> int:
    """Words in every message's content and tool calls, plus each tool's name and description."""
    total = 0
    for message in messages:
        total += count_words(message.content)
        total += output_tokens(None, message.tool_calls)
    for tool in tools:
        total += count_words(tool.name) + count_words(tool.description)
    return total


def output_tokens(text: str | None, tool_calls: Iterable[ModelToolCall]) -> int:
    """Words in the reply text, plus each tool call's name and its arguments as JSON text."""
    total = count_words(text)
    for call in tool_calls:
        total += count_words(call.name)
        total += count_words(json.dumps(call.arguments, ensure_ascii=False, separators=(", ", ": ")))
    return total
