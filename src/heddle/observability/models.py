"""The request log of data-plane calls, read by traces (`api_calls`) and operators."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import BigInteger, Float, Index, Integer, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class RequestLogEntry(Base):
    __tablename__ = "request_log"
    __table_args__ = (
        Index("ix_request_log_run_id_id", "run_id", "id"),
        Index("ix_request_log_workspace_id_id", "workspace_id", "id"),
        Index("ix_request_log_created_at", "created_at"),  # retention pruning
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    request_id: Mapped[str] = mapped_column(String(64))
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(String(500))
    status: Mapped[int] = mapped_column(Integer)
    latency_ms: Mapped[float] = mapped_column(Float)
    workspace_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    key_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    auth_mode: Mapped[str | None] = mapped_column(String(8), nullable=True)  # relay | direct | internal
    run_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
