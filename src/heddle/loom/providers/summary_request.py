"""The request that asks a model for a thread summary, and the `scripted` model's own summary.

Heddle summarizes the part of a long thread that no longer fits a model class's
`history_tokens` budget (heddle/loom/summaries.py). The request is two messages and no tools:
these instructions, then the previous summary (if any) and the messages to fold into it, one a
line with its position in the thread. The scripted model recognises the instructions and
answers with a deterministic summary (the first words of each message; the oldest and newest kept when
it grows long), so the behaviour shows with no model key.
"""

from __future__ import annotations

from collections.abc import Sequence

from heddle.loom.providers.base import ChatMessage

SUMMARY_INSTRUCTIONS = (
    "You summarize the earlier part of a conversation between a user and an assistant, so that the "
    "assistant can go on without the full transcript. Keep every fact the user gave (names, accounts, "
    "numbers, preferences, decisions) and what was agreed or left open. Fold the previous summary, if "
    "any, into the new one. Answer with the summary only, in plain sentences, at most 300 words."
)
SCRIPTED_WORDS_PER_MESSAGE = 16
SCRIPTED_MAX_WORDS = 300


def summary_request(previous: str | None, lines: Sequence[tuple[int, str, str]]) -> list[ChatMessage]:
    """The summarizer's messages: `lines` are the messages to fold in, as (seq, role, content)."""
    parts = [f"Previous summary:\n{previous}\n"] if previous else []
    parts.append("Messages to summarize:")
    parts += [f"[{seq}] {role}: {content}" for seq, role, content in lines]
    return [ChatMessage(role="system", content=SUMMARY_INSTRUCTIONS),
            ChatMessage(role="user", content="\n".join(parts))]


def is_summary_request(messages: Sequence[ChatMessage]) -> bool:
    return bool(messages) and messages[0].role == "system" and messages[0].content == SUMMARY_INSTRUCTIONS


def scripted_summary(messages: Sequence[ChatMessage]) -> str:
    """What the scripted model answers to a summary request: the previous summary, then `role:
    first words` of each message; past SCRIPTED_MAX_WORDS words the middle is left out."""
    text = messages[-1].content or ""
    previous, _, listed = text.partition("Messages to summarize:")
    previous = previous.removeprefix("Previous summary:").strip()
    pieces: list[str] = [previous] if previous else []
    for line in listed.strip().splitlines():
        head, sep, content = line.partition(": ")
        if not sep or "] " not in head:
            continue
        role = head.split("] ", 1)[1]
        words = content.split()
        more = " ..." if len(words) > SCRIPTED_WORDS_PER_MESSAGE else ""
        clipped = " ".join(words[:SCRIPTED_WORDS_PER_MESSAGE]) + more
        pieces.append(f"{role}: {clipped}")
    words = " | ".join(pieces).split()
    if len(words) > SCRIPTED_MAX_WORDS:  # the oldest and the newest half, the middle left out
        half = SCRIPTED_MAX_WORDS // 2
        words = [*words[:half], "...", *words[-half + 1:]]
    return " ".join(words)
