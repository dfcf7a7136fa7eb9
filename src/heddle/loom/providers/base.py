"""The neutral chat format the run engine speaks, and the interface every model provider implements.

The engine builds a list of `ChatMessage` from the thread and the run's trace, hands it to a
provider with the agent's tools, and gets back one `ModelResponse` per model turn. Providers
translate to and from their wire format (OpenAI Chat Completions, Anthropic Messages, or the
built-in `scripted` model) and never touch the database. Given a `StreamSink`, a provider
streams: it hands each piece of the reply's text to the sink as it arrives, and still returns
the whole `ModelResponse` (text, tool calls, exact token counts) at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]

# The engine offers this tool to every agent: calling it pauses the run in `awaiting_input`
# with `question`; the user's next message becomes the tool result `{"answer": "..."}`.
ASK_USER_TOOL = "ask_user"


@dataclass(frozen=True)
class ModelToolCall:
    id: str  # provider's id for the call, echoed back in the tool result message
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class AttachmentPart:
    """A file sent with a user message (loom/attachments/to_model.py): an image (`data` is its
    base64) for a model class with vision, or a document's text (`data` is the text)."""

    kind: Literal["image", "text"]
    attachment_id: str
    name: str
    media_type: str
    data: str

    def header(self) -> str:
        """The file's line in the message text: its name, type and id (a tool may take the id)."""
        what = "Image" if self.kind == "image" else "Attachment"
        return f"[{what} {self.name} ({self.media_type}), id {self.attachment_id}]"

    def text_block(self) -> str:
        """How a document goes to every model: as text, under its header."""
        return f"{self.header()}\n{self.data}"

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str | None = None
    tool_calls: tuple[ModelToolCall, ...] = ()  # assistant only
    tool_call_id: str | None = None  # tool only: which call this result answers
    name: str | None = None  # tool only: the tool's name
    attachments: tuple[AttachmentPart, ...] = ()  # user only: its files, in the order sent

    def text_with_documents(self) -> str:
        """The content followed by each document attachment's text (images are parts of their own)."""
        blocks = [self.content] if self.content else []
        blocks += [part.header() for part in self.attachments if part.kind == "image"]
        blocks += [part.text_block() for part in self.attachments if part.kind == "text"]
        return "\n\n".join(blocks)

    @property
    def images(self) -> tuple[AttachmentPart, ...]:
        return tuple(part for part in self.attachments if part.kind == "image")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object


# Earlier thread messages given to a model, in (estimated) tokens, unless its class says otherwise.
DEFAULT_HISTORY_TOKENS = 8000


@dataclass(frozen=True)
class ModelClass:
    """A configured model class: which provider, which model, and its credit prices."""

    name: str
    provider: Literal["scripted", "openai", "anthropic"]
    model: str = ""
    base_url: str | None = None
    api_key: str | None = None
    input_price_per_1k: float = 0.0  # credits per 1,000 input tokens
    output_price_per_1k: float = 0.0  # credits per 1,000 output tokens
    max_tokens: int = 1024
    timeout: float = 60.0
    max_retries: int = 3
    history_tokens: int = DEFAULT_HISTORY_TOKENS
    options: dict[str, Any] = field(default_factory=dict)
    vision: bool = False  # takes images (attachments as image parts; loom/attachments/to_model.py)


# Finish reasons that mean "the model was cut off by max_tokens" (OpenAI `length`, Anthropic
# `max_tokens`): the turn ends with the text received and `truncated` set.
TRUNCATED_STOP_REASONS = frozenset({"length", "max_tokens"})


@dataclass(frozen=True)
class ModelAttempt:
    """One HTTP attempt of a model call, as the trace records it.

    `outcome` is "ok" or "error"; `error_code` is a short stable word for an error (`http_429`,
    `timeout`, `connection`, `stream_incomplete`, `stream_broken`, `unusable`); `status` is the
    HTTP status of a refused attempt; `retry_after` is what the server asked for and
    `waited_seconds` the pause actually taken before the next attempt (Retry-After, capped).
    """

    number: int
    outcome: Literal["ok", "error"]
    duration_seconds: float
    error_code: str | None = None
    error: str | None = None
    status: int | None = None
    retry_after: float | None = None
    waited_seconds: float | None = None

    def as_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"attempt": self.number, "outcome": self.outcome,
                                  "duration_ms": round(self.duration_seconds * 1000, 3)}
        optional = {"error_code": self.error_code, "error": self.error, "status": self.status,
                    "retry_after": self.retry_after, "waited_seconds": self.waited_seconds}
        record.update({key: value for key, value in optional.items() if value is not None})
        return record


@dataclass(frozen=True)
class ModelResponse:
    text: str | None
    tool_calls: tuple[ModelToolCall, ...]
    input_tokens: int
    output_tokens: int
    request: dict[str, Any]  # what was sent, as stored in the trace (no secrets)
    response: dict[str, Any]  # what came back, as stored in the trace
    stop_reason: str | None = None
    # Cut off at max_tokens: `text` is what arrived and tool calls were dropped (an argument
    # object cut short is never sent to a host). The engine applies the agent's rule.
    truncated: bool = False
    attempts: tuple[ModelAttempt, ...] = ()  # every attempt of this call, the last one "ok"


class ModelProviderError(Exception):
    """The provider failed after its retries; the run ends `failed` with `model_error`.

    `code` is the last attempt's error code (see `ModelAttempt`); `attempts` holds every
    attempt made, for the trace of the failed turn.
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None,
                 code: str | None = None, attempts: tuple[ModelAttempt, ...] = ()):
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.code = code
        self.attempts = attempts


class StreamSink(Protocol):
    """Where a provider sends its reply's text as it is generated (see `heddle.loom.deltas`).

    The pieces of one attempt add up to the reply's `text`. `restart()` is called before a
    retry after a failed attempt: the pieces sent so far are void (the engine's sink tells its
    subscribers so) and the next attempt's pieces start again from the beginning of the reply.
    """

    async def delta(self, text: str) -> None: ...

    async def restart(self) -> None: ...
