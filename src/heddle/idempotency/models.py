"""The stored first response of each idempotency key, per workspace."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class IdempotencyRecord(Base):
    """One key of one workspace. The row is inserted at the start of the request's transaction
    (so a concurrent request with the same key waits on it) and filled with the response in
    that same transaction, so a committed row always holds the response of committed effects."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (Index("ix_idempotency_keys_created_at", "created_at"),)

    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # SHA-256 of method, path, subject and the canonical JSON body: "the same request".
    fingerprint: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    body: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
