"""Request bodies and read models (response `data`, event payloads) of the Loom endpoints."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from typing_extensions import TypeAliasType

from heddle.api.envelope import Credits, NullableTimestamp, ReadModel, Timestamp, UUIDStr
from heddle.loom.feedback_schemas import Feedback, MessageRating
from heddle.loom.schedule_schemas import ScheduleAuthor
from heddle.runs_vocabulary import CALL_STATUSES

AgentId = Annotated[str, StringConstraints(pattern=r"^agent_[a-z0-9]{1,60}$")]

# --- the enums of the Loom API, each declared once -------------------------------------------------
# A TypeAliasType is published as one named component (`#/components/schemas/RunState`) that
# every schema carrying it references, so a generated client gets one enum per concept instead
# of one per field (`RunState`, not `RunState`, `RunRefState` and `TraceState`). The values stay
# plain strings in Python.
RunState = TypeAliasType(
    "RunState", Literal["queued", "running", "awaiting_input", "awaiting_outcome", "closed", "failed"])
ToolCallStatus = TypeAliasType("ToolCallStatus", Literal[CALL_STATUSES])  # heddle.runs_vocabulary
Interaction = TypeAliasType("Interaction", Literal["auto", "confirm", "approve"])
Risk = TypeAliasType("Risk", Literal["low", "medium", "high"])
Reliability = TypeAliasType("Reliability", Literal["idempotent", "at_most_once"])
OutcomeState = TypeAliasType("OutcomeState", Literal["occurred", "failed"])
MessageRole = TypeAliasType("MessageRole", Literal["user", "assistant"])
IfBusy = TypeAliasType("IfBusy", Literal["reject", "enqueue", "interrupt"])


class CreateThread(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: AgentId
    # Only a bound on the work: the subject rules (length after NFC included) are checked by
    # heddle.auth.subjects.canonical_subject, so both sources give the same 400 invalid_subject.
    subject_ref: Annotated[str, Field(min_length=1, max_length=2048)] | None = None


class PostMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Empty only when the message has attachments (checked below).
    content: Annotated[str, Field(max_length=32_000)]
    # What to do while the thread's run is busy (docs/run-control.md, "Busy threads"): 409, wait, or cancel it.
    if_busy: IfBusy = "reject"
    attachments: Annotated[list[Annotated[str, Field(min_length=1, max_length=64)]], Field(
        max_length=100, description="Ids of files uploaded to this thread (POST /threads/{id}/attachments), "
        "each unused so far; at most HEDDLE_ATTACHMENTS_PER_MESSAGE.")] = []

    @model_validator(mode="after")
    def _something_to_say(self) -> PostMessage:
        if not self.content and not self.attachments:
            raise ValueError("content must not be empty unless the message has attachments")
        return self


class PostOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: Annotated[str, Field(min_length=1, max_length=64)]
    state: OutcomeState
    detail: dict[str, Any] | None = None


class PostApproval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: Annotated[str, Field(min_length=1, max_length=64)]
    approved: Annotated[bool, Field(strict=True)]
    reason: Annotated[str, Field(max_length=2000)] | None = None

# --- read models: the `data` of Loom responses and the payloads of thread events -----------------
# The dicts built in heddle.loom.serializers are validated against these classes on the way out
# (response_model on the routes, `payload()` for events), so these are the one definition.

_RUN_ID = "4b0d6c1e-6a53-4a53-9d0c-2f5a8f0e7c11"
_THREAD_ID = "0f8b7a52-2d7e-4c1e-8a5e-1f3b9c6d2a40"


class Thread(ReadModel):
    """A subject's conversation with one agent."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": _THREAD_ID, "agent": "agent_3k9x2m", "subject": "web:alice", "created_at": "2026-01-01T12:00:00Z"}]})
    id: UUIDStr
    agent: str = Field(description="The agent's public id, `agent_…`.")
    subject: str = Field(description="`<channel>:<channel_user_id>`: Service-Subject (relay) or `sub` (direct).")
    created_at: Timestamp


class AttachmentInfo(ReadModel):
    """A file uploaded to a thread (POST /v1/loom/threads/{id}/attachments); its bytes are at
    GET /v1/loom/attachments/{id}/content."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": "5e2a1c3b-7d4f-4e6a-9b8c-1d2e3f4a5b6c", "name": "transfer.png", "content_type": "image/png",
        "size": 48213, "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "width": 1170, "height": 2532, "created_at": "2026-01-01T12:00:00Z"}]})
    id: UUIDStr
    name: str = Field(description="The client's file name made safe: last path segment, no control "
                                  "characters, at most 255 characters.")
    content_type: str = Field(description="Decided by the bytes: image/png, image/jpeg, image/gif, image/webp, "
                                          "application/pdf, text/plain, text/csv, text/markdown, application/json.")
    size: int = Field(description="Bytes.")
    sha256: str = Field(description="Hex SHA-256 of the bytes.")
    width: int | None = Field(None, description="An image's width in pixels.")
    height: int | None = Field(None, description="An image's height in pixels.")
    pages: int | None = Field(None, description="A PDF's pages.")
    text_layer: bool | None = Field(None, description="A PDF: false when it has no text to read (a scan).")
    text_chars: int | None = Field(None, description="A PDF: characters of text read from it (capped by "
                                                     "HEDDLE_ATTACHMENT_PDF_MAX_CHARS), what a model is sent.")
    message_id: UUIDStr | None = Field(None, description="The message that sent it (on GET only; null while unused).")
    thread_id: UUIDStr | None = Field(None, description="Its thread (on GET and on upload).")
    created_at: Timestamp


class ScheduledMark(ReadModel):
    """How a message a schedule posted is marked: which schedule, who made it, how late it fired."""

    schedule_id: UUIDStr
    created_by: ScheduleAuthor  # the thread's subject (the API) or the agent (schedule_followup)
    created_by_run_id: UUIDStr | None = None  # the run whose tool call made it
    due_at: Timestamp
    fired_at: Timestamp
    late_seconds: float
    late: bool  # fired more than a minute after it was due (the service was down, or out of credits)
    fired_by: str | None = None  # the process that fired it (host:pid:nonce)


class Message(ReadModel):
    """One message of a thread; payload of the `message.created` event."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": "7c1d2e3f-1111-4a2b-9c3d-4e5f6a7b8c9d", "thread_id": _THREAD_ID, "run_id": _RUN_ID,
        "role": "assistant", "content": "021000021 is JPMorgan Chase Bank (routing_number).",
        "created_at": "2026-01-01T12:00:01Z"}]})
    id: UUIDStr
    thread_id: UUIDStr
    run_id: UUIDStr | None
    role: MessageRole
    content: str
    attachments: list[AttachmentInfo] = Field(default=[], description="The files sent with the message.")
    # A structured reply (the agent file's `output.schema`): the object; `content` is its JSON text.
    data: dict[str, Any] | None = None
    scheduled: ScheduledMark | None = None  # posted by a schedule (loom/schedule_firing.py)
    created_at: Timestamp
    feedback: MessageRating | None = Field(None, description=(
        "The subject's own rating of an assistant message (in the thread's message list only)."))


class Outcome(ReadModel):
    """What the caller reported for a `confirm` tool call (or an at-most-once call of unknown fate)."""

    state: OutcomeState
    detail: dict[str, Any]
    created_at: NullableTimestamp


class ToolCallApproval(ReadModel):
    """`interaction: approve`: whether approval was needed, and who answered, when and why."""

    required: bool | None = None
    why: str | None = None
    rule: Any = None
    requested_at: NullableTimestamp = None
    approved: bool | None = None
    by: dict[str, Any] | None = Field(None, description="Who answered: `{mode, key_id, subject}`.")
    at: NullableTimestamp = None
    reason: str | None = None


class ToolCall(ReadModel):
    """One tool call made by a run."""

    id: UUIDStr
    name: str
    kind: str = Field(description="What carried the call out: `hosted` (a signed-HTTP tool), `mcp` (a tool of "
                                  "an MCP server), `identify`, `ask` (ask_user), `unknown` (no such tool).")
    patch_ref: str | None = Field(description="The tool host's own reference for the side effect it started.")
    interaction: Interaction = Field(description="`confirm`: the run awaits an outcome; `approve`: it awaits "
                                                 "the caller's approval before the call.")
    status: ToolCallStatus
    args: dict[str, Any]
    result: Any = Field(description="The tool's result (an object), null until it answers.")
    risk: Risk
    reliability: Reliability
    cost_credits: Credits
    outcome: Outcome | None
    approval: ToolCallApproval | None = Field(None, description="Present for `interaction: approve` tools.")
    nul_replaced: int = Field(0, description="How many U+0000 characters in the tool host's answer were "
                              "replaced by U+FFFD before it was stored (PostgreSQL cannot hold them).")


class ConnectionRef(ReadModel):
    id: UUIDStr
    name: str


class RunError(ReadModel):
    code: str = Field(description="A run error code (see `x-run-error-codes`).", examples=["model_error"])
    message: str


class InputPending(ReadModel):
    type: Literal["input"]
    question: str | None = Field(description="The question the agent asked the user.")


class OutcomePending(ReadModel):
    type: Literal["outcome"]
    tool_calls: list[ToolCall] = Field(description="The calls whose outcome the run awaits.")


class ApprovalPending(ReadModel):
    type: Literal["approval"]
    tool_calls: list[ToolCall] = Field(description="The calls that wait for the caller's approval.")


Pending = Annotated[InputPending | OutcomePending | ApprovalPending, Field(discriminator="type")]

RUN_EXAMPLE = {
    "id": _RUN_ID, "thread_id": _THREAD_ID, "state": "awaiting_input", "origin": "api", "terminal": False,
    "cost_credits": 0.25,
    "connection": None, "latest_message": None, "pending": {"type": "input", "question": "Which account?"},
    "error": None, "created_at": "2026-01-01T12:00:00Z", "updated_at": "2026-01-01T12:00:01Z"}


class Run(ReadModel):
    """One turn of the agent; payload of the `run.updated` event."""

    model_config = ConfigDict(json_schema_extra={"examples": [RUN_EXAMPLE]})
    id: UUIDStr
    thread_id: UUIDStr
    state: RunState
    origin: str = Field(default="api", description=(
        "What started the run: `api` (a posted message), `schedule`, `playground`, `eval`, `agui` or `a2a`."))
    terminal: bool = Field(description="True when the run will not change again (`closed` or `failed`).")
    cost_credits: Credits
    connection: ConnectionRef | None = Field(description="The host used for customer tools, when resolved.")
    latest_message: Message | None = Field(description="The run's latest assistant message.")
    pending: Pending | None = Field(description="What the run waits for (awaiting_input / awaiting_outcome).")
    error: RunError | None = Field(description="Why the run failed (state `failed`).")
    created_at: Timestamp
    updated_at: Timestamp


class ModelAttempt(ReadModel):
    """One HTTP attempt of a model call."""

    attempt: int = Field(description="1 for the first attempt.")
    outcome: Literal["ok", "error"]
    duration_ms: float | int
    error_code: str | None = Field(None, description="`rate_limited`, `server_error`, `refused`, `timeout`, "
                                                     "`connection`, `stream_broken`, `stream_incomplete` or "
                                                     "`unusable`.")
    error: str | None = Field(None, description="What went wrong, free of secrets.")
    status: int | None = Field(None, description="The HTTP status of a refused attempt.")
    retry_after: float | None = Field(None, description="Seconds the server asked to wait (Retry-After).")
    waited_seconds: float | None = Field(None, description="The pause actually taken before the next attempt.")


class Turn(ReadModel):
    """One model turn of a run."""

    seq: int
    model_class: str
    input_tokens: int
    output_tokens: int
    cost_credits: Credits
    request: dict[str, Any]
    response: dict[str, Any]
    status: Literal["ok", "truncated", "failed"] = Field(
        description="`ok`; `truncated`: the reply stopped at the model class's max_tokens; `failed`: no usable "
                    "reply after the retries (the run failed `model_error`; `response.error` says why).")
    truncated: bool = Field(description="The reply was cut off at max_tokens (`status: truncated`).")
    attempts: list[ModelAttempt] = Field(description="Every HTTP attempt of the model call, the last one "
                                                     "answered or failed for good (empty for the scripted model).")
    purpose: Literal["reply", "summary"] = Field(
        "reply", description="`summary`: the turn wrote a thread summary (`request.summarized` says which "
                             "messages, `response.text` is the summary; docs/memory.md).")
    tool_calls: list[ToolCall]
    created_at: Timestamp


class ApiCall(ReadModel):
    """A data-plane call attributed to the run (Service-Run header, or made by its built-in tools)."""

    request_id: str
    method: str
    path: str
    status: int
    latency_ms: float | int
    auth_mode: str | None
    created_at: Timestamp


class Trace(Run):
    """A run with its turns, tool calls and attributed API calls."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        **RUN_EXAMPLE, "state": "closed", "terminal": True, "pending": None,
        "opened_at": "2026-01-01T12:00:00Z", "closed_at": "2026-01-01T12:00:02Z",
        "turns": [], "api_calls": [], "api_calls_total": 0, "control": {}}]})
    opened_at: Timestamp
    closed_at: NullableTimestamp
    turns: list[Turn]
    api_calls: list[ApiCall] = Field(description="Newest first, at most 50.")
    api_calls_total: int = Field(description="Every attributed call; may exceed the length of `api_calls`.")
    control: dict[str, Any] = Field(description="Run control: queued/started, cancelled or interrupted, by whom "
                                                "and when (see docs/run-control.md).")
    feedback: list[Feedback] = Field(default_factory=list, description=(
        "End users' ratings of the run's answers (POST /v1/loom/messages/{message_id}/feedback)."))


class MessageAccepted(ReadModel):
    """The 202 answer to a posted message: the run it started or resumed (not the reply)."""

    run_id: UUIDStr
    message_id: UUIDStr
    run: Run
    queued: bool | None = Field(None, description="`if_busy: enqueue`: the run waits for the active one.")
    queue_position: int | None = None


class RunRef(ReadModel):
    id: UUIDStr
    state: RunState


class ThreadDetail(Thread):
    """GET /threads/{id}: the Thread, its current run and its queue."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "id": _THREAD_ID, "agent": "agent_3k9x2m", "subject": "web:alice", "created_at": "2026-01-01T12:00:00Z",
        "latest_run": {"id": _RUN_ID, "state": "awaiting_input"}, "queued_messages": 0,
        "last_message_at": "2026-01-01T12:00:01Z"}]})
    latest_run: RunRef | None
    queued_messages: int
    last_message_at: NullableTimestamp


class Erased(ReadModel):
    threads: int
    messages: int
    runs: int
    turns: int
    tool_calls: int
    ledger_entries_cut: int
    attachments: int = Field(0, description="Files erased with the threads (metadata and bytes).")
    summaries: int = Field(0, description="Thread summaries erased with the threads (docs/memory.md).")
    memories: int = Field(0, description="Facts remembered about the subject (erasing a subject only).")


class ThreadDeleted(ReadModel):
    id: UUIDStr
    deleted: bool
    erased: Erased


class SubjectDeleted(ReadModel):
    subject: str
    deleted: bool
    erased: Erased
