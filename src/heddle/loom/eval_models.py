"""Stored eval results (heddle/loom/evals/): one row per `heddle eval run`, its cases inside.

A row keeps the agent version it measured, and with a baseline the version it was compared
with and the regressions it found, so the console's Evals page compares two versions case by
case without running anything again.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class EvalRun(Base):
    __tablename__ = "eval_runs"
    __table_args__ = (Index("ix_eval_runs_workspace_created", "workspace_id", "created_at"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"))
    agent_id: Mapped[str] = mapped_column(String(40))
    version: Mapped[int] = mapped_column(Integer)
    baseline_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    dataset: Mapped[str] = mapped_column(String(300))  # the file's name, as given
    passed: Mapped[int] = mapped_column(Integer)
    failed: Mapped[int] = mapped_column(Integer)
    regressions: Mapped[list[Any]] = mapped_column(JSON, default=list)  # case names
    cases: Mapped[list[Any]] = mapped_column(JSON, default=list)  # each case's result (and baseline's)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
