"""A workspace's webhook endpoint, the deliveries owed to it and every attempt made."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class WebhookEndpoint(Base):
    """Where a workspace's run webhooks go, and the secret they are signed with."""

    __tablename__ = "webhook_endpoints"

    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    secret: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookDelivery(Base):
    """One event owed to a workspace; its `id` is the event id, the same on every attempt."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
        Index("ix_webhook_deliveries_workspace_created", "workspace_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # evt_…
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"))
    type: Mapped[str] = mapped_column(String(40))  # run.closed | run.failed | run.awaiting_*
    body: Mapped[dict[str, Any]] = mapped_column(JSON)  # {id, type, created_at, data}: what is POSTed
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending | delivered | failed
    attempt_count: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)


class WebhookAttempt(Base):
    """One POST of a delivery and what came of it."""

    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    delivery_id: Mapped[str] = mapped_column(ForeignKey("webhook_deliveries.id"), index=True)
    n: Mapped[int] = mapped_column(Integer)  # 1, 2, 3 … within the delivery
    url: Mapped[str] = mapped_column(Text)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)
    http_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
