"""Loom's stored objects: agents, threads, messages, runs, turns and tool calls.

All run state lives here (never only in memory) so that any process can resume a run.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    Uuid,
)
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class Agent(Base):
    __tablename__ = "agents"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # agent_…
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    model_class: Mapped[str] = mapped_column(String(100))
    instructions: Mapped[str] = mapped_column(Text, default="")
    tools: Mapped[list[Any]] = mapped_column(JSON, default=list)  # validated ToolDefinition dicts
    # The agent file's `memory:` section ({"remember": bool, "summarize_with": class or None}).
    memory: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # `output: {schema}` of the agent file: every answer is a JSON object valid against it (None: text)
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # `a2a:` of the agent file ({publish, description}): published over A2A when publish is true.
    a2a: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The current version: the columns above are a copy of agent_versions' row for it, so reads
    # of an agent need no join. Every edit adds a version (heddle/control/agents.py).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class AgentVersion(Base):
    """One definition an agent had. Never changed once written: a run executes the version it
    recorded when it started (`runs.agent_version`), even if the agent is edited meanwhile."""

    __tablename__ = "agent_versions"

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(200))
    model_class: Mapped[str] = mapped_column(String(100))
    instructions: Mapped[str] = mapped_column(Text, default="")
    tools: Mapped[list[Any]] = mapped_column(JSON, default=list)
    memory: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # as agents.memory
    output_schema: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # as Agent.output_schema
    created_by: Mapped[str | None] = mapped_column(String(320), nullable=True)  # "cli" or an operator's email
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Thread(Base):
    __tablename__ = "threads"
    __table_args__ = (
        UniqueConstraint("workspace_id", "agent_id", "subject"),
        Index("ix_threads_workspace_subject_created", "workspace_id", "subject", "created_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"))
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"))
    subject: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("thread_id", "seq"),
        # A run's latest answer is read on every run render; without this it scans all messages.
        Index("ix_messages_run_id_seq", "run_id", "seq"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    thread_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("threads.id"))
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    seq: Mapped[int] = mapped_column(Integer)  # order within the thread
    role: Mapped[str] = mapped_column(String(16))  # user | assistant
    content: Mapped[str] = mapped_column(Text)
    # The metadata of the message's attachments (loom/attachments/), copied when the message is
    # posted so that every read of a message (list, trace, events, history) has it without a join.
    attachments: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    # A message a schedule posted (loom/schedule_firing.py): which schedule, who made it, when it
    # was due and how late it fired. None for a message a caller posted.
    scheduled: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    # A structured reply (the agent's `output.schema`): the object, whose JSON text is `content`.
    data: Mapped[Any | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_thread_id_created_at", "thread_id", "created_at"),
        Index("ix_runs_state", "state"),
        # The console's runs page: a workspace's runs newest first, and those changed since.
        Index("ix_runs_workspace_created", "workspace_id", "created_at"),
        Index("ix_runs_workspace_updated", "workspace_id", "updated_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    thread_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("threads.id"))
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), index=True)
    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"))
    agent_version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")  # what it executes
    subject: Mapped[str] = mapped_column(String(300))
    state: Mapped[str] = mapped_column(String(20))
    connection_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    auth_mode: Mapped[str] = mapped_column(String(8), default="relay")  # relay | direct
    key_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    # Direct mode: the session token that posted the message, usable for tool calls until it
    # expires (then the run mints one). Never returned by the API.
    session_token: Mapped[str | None] = mapped_column(Text, nullable=True)
    session_token_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    pending_question: Mapped[str | None] = mapped_column(Text, nullable=True)
    error_code: Mapped[str | None] = mapped_column(String(40), nullable=True)
    error_message: Mapped[str | None] = mapped_column(Text, nullable=True)
    cost_micro: Mapped[int] = mapped_column(BigInteger, default=0)
    turn_count: Mapped[int] = mapped_column(Integer, default=0)
    # Executor bookkeeping: which process is executing the run and until when it holds it.
    lease_owner: Mapped[str | None] = mapped_column(String(80), nullable=True)
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Fencing token (heddle/loom/lease.py): grows on every claim, and every write an executor
    # makes is conditional on it, so an executor that lost the run can no longer change it.
    fence: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # Run control shown in the trace (loom/cancellation.py): who cancelled or interrupted it and
    # when, when it was queued and started. None for a run nobody steered.
    control: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The W3C `traceparent` of the request that created the run: whichever process executes it
    # (a worker) puts the run's span in that trace (observability/tracing.py, run_span).
    traceparent: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # What started the run: one of runs_vocabulary.RUN_ORIGINS (`api` for a posted message).
    origin: Mapped[str] = mapped_column(String(16), default="api", server_default="api")
    # The caller's own front-end tools offered for this run (AG-UI `tools`: loom/tools/client.py),
    # each `{name, description, parameters}`; None for a run without any.
    client_tools: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    opened_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    closed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class Turn(Base):
    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("run_id", "seq"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id"))
    seq: Mapped[int] = mapped_column(Integer)
    model_class: Mapped[str] = mapped_column(String(100))
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_micro: Mapped[int] = mapped_column(BigInteger, default=0)
    request: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    response: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    # ok | truncated (cut off at max_tokens) | failed (no usable reply after the retries); NULL
    # for turns stored before 0012, which were all `ok`.
    status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    attempts: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)  # ModelAttempt.as_dict() each
    # NULL: a turn of the run's conversation; `summary`: a turn that wrote a thread summary
    # (loom/summaries.py), charged like any turn and shown in the trace.
    purpose: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class ToolCall(Base):
    __tablename__ = "tool_calls"
    __table_args__ = (Index("ix_tool_calls_run_id_seq", "run_id", "seq"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id"))
    turn_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("turns.id"))
    seq: Mapped[int] = mapped_column(Integer)  # order within the run
    model_call_id: Mapped[str] = mapped_column(String(200))  # the provider's id for the call
    name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(16))  # builtin | hosted | ask
    connection_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    patch_ref: Mapped[str | None] = mapped_column(String(200), nullable=True)
    interaction: Mapped[str] = mapped_column(String(16), default="auto")
    status: Mapped[str] = mapped_column(String(20), default="pending")
    args: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    risk: Mapped[str] = mapped_column(String(8), default="low")
    reliability: Mapped[str] = mapped_column(String(16), default="idempotent")
    cost_micro: Mapped[int] = mapped_column(BigInteger, default=0)
    attempts: Mapped[list[Any]] = mapped_column(JSON, default=list)  # every HTTP attempt
    outcome_state: Mapped[str | None] = mapped_column(String(10), nullable=True)
    outcome_detail: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    outcome_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # `interaction: approve`: whether approval was needed, and who answered, when, and why.
    approval: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    fed_back: Mapped[bool] = mapped_column(Boolean, default=False)  # result given to the model
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class QueuedMessage(Base):
    """A message posted with `if_busy: enqueue` while its thread was busy.

    Its run exists already (state `queued`); the message joins the thread's messages, with
    the next `seq`, only when that run leaves the queue, so the conversation order stays the
    order in which runs actually ran. The autoincrement `id` is the queue order.
    """

    __tablename__ = "queued_messages"
    __table_args__ = (Index("ix_queued_messages_thread_id_id", "thread_id", "id"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    thread_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("threads.id"))
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id"), unique=True)
    message_id: Mapped[uuid.UUID] = mapped_column(Uuid)  # the id the 202 returned
    content: Mapped[str] = mapped_column(Text)
    attachments: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)  # as Message.attachments
    scheduled: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)  # as Message
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunEventRow(Base):
    """A stored row of a run's event log (heddle/loom/event_log.py); `seq` is its SSE id. The
    event itself, typed, is heddle/loom/run_event.py's `RunEvent`."""

    __tablename__ = "run_events"

    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    # run.updated | message.created | message.delta | message.deltas (packed pieces: runs_vocabulary.pack)
    event: Mapped[str] = mapped_column(String(40))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Attachment(Base):
    """A file uploaded to a thread (loom/attachments/): its metadata; the bytes are its chunks.

    It belongs to one thread and subject, and to one message at most (`message_id`, set when a
    message names it). Erased with its thread (loom/erasure.py)."""

    __tablename__ = "attachments"
    __table_args__ = (
        Index("ix_attachments_thread_id", "thread_id"),
        Index("ix_attachments_workspace_id", "workspace_id"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"))
    thread_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("threads.id"))
    subject: Mapped[str] = mapped_column(String(300))
    message_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    name: Mapped[str] = mapped_column(String(300))
    content_type: Mapped[str] = mapped_column(String(100))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    # What inspecting the bytes found: width/height of an image, pages and text_layer of a PDF.
    info: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    text: Mapped[str | None] = mapped_column(Text, nullable=True)  # a PDF's text (capped)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class AttachmentChunk(Base):
    """One piece (at most loom/attachments/store.CHUNK_BYTES) of an attachment's bytes, in order."""

    __tablename__ = "attachment_chunks"

    attachment_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("attachments.id", ondelete="CASCADE"),
                                                     primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class Schedule(Base):
    """A message to post to a thread later: once (`at`) or on a cron's ticks (loom/schedules.py).

    `next_run_at` is when it is next due (None once it has ended); the firing loop
    (loom/schedule_firing.py) claims due rows under a row lock (`FOR UPDATE SKIP LOCKED` on
    PostgreSQL), posts the message and moves `next_run_at` on in one transaction, so a schedule
    fires once per due time whichever process claims it. The creator's mode, key and connection
    are kept so the run it starts is the one a posted message would start.
    """

    __tablename__ = "schedules"
    __table_args__ = (
        Index("ix_schedules_due", "state", "next_run_at"),
        Index("ix_schedules_thread", "thread_id", "created_at"),
        Index("ix_schedules_workspace_created", "workspace_id", "created_at"),
        Index("ix_schedules_workspace_subject", "workspace_id", "subject"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"))
    thread_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("threads.id"))
    subject: Mapped[str] = mapped_column(String(300))
    content: Mapped[str] = mapped_column(Text)
    at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)  # a one-off
    cron: Mapped[str | None] = mapped_column(String(120), nullable=True)  # five fields
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    ends_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    max_runs: Mapped[int | None] = mapped_column(Integer, nullable=True)
    runs: Mapped[int] = mapped_column(Integer, default=0)  # times fired
    state: Mapped[str] = mapped_column(String(12), default="active")  # active | paused | ended
    # paused by `operator` / the `caller`, or `insufficient_credits` (resumed when credits return)
    paused_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    next_run_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_by: Mapped[str] = mapped_column(String(16), default="caller")  # caller | agent
    created_by_run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    auth_mode: Mapped[str] = mapped_column(String(8), default="relay")
    key_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    connection_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    last_run_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    last_late_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_error: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
