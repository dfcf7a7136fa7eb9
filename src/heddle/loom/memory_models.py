"""Memory's stored objects: the rolling summaries of long threads, and the facts an agent keeps
about a subject (docs/memory.md).

A summary covers a thread's messages from its first up to `through_seq`; a newer one replaces
an older one in what the model is given (the older rows stay: the trace names the one a turn
used). Nothing of the transcript is deleted by summarizing. A memory is one fact about a
subject of a workspace, shared by the workspace's agents that remember.
"""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class ThreadSummary(Base):
    __tablename__ = "thread_summaries"
    # Never twice for the same span: a second writer of one span fails on this and reads the first.
    __table_args__ = (UniqueConstraint("thread_id", "through_seq", name="uq_thread_summaries_thread_through"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    thread_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("threads.id"))
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"))
    through_seq: Mapped[int] = mapped_column(Integer)  # covers the thread's messages with seq <= this
    messages: Mapped[int] = mapped_column(Integer)  # how many messages it covers in all
    content: Mapped[str] = mapped_column(Text)
    model_class: Mapped[str] = mapped_column(String(100))
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)  # the run whose turn wrote it
    turn_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Memory(Base):
    __tablename__ = "memories"
    __table_args__ = (Index("ix_memories_workspace_subject_created", "workspace_id", "subject", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"))
    subject: Mapped[str] = mapped_column(String(300))
    content: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(8))  # tool (a `remember` call) | api (POST /v1/loom/memories)
    agent_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    # The `remember` call that stored it: a retried or resumed call finds its fact, never a second one.
    tool_call_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True, unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
