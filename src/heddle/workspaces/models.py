"""Workspaces, their API keys and their connections (hosts of the caller's tools)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class Workspace(Base):
    __tablename__ = "workspaces"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    # Cached ledger sum, updated in the same transaction as every ledger row (see billing).
    balance_micro: Mapped[int] = mapped_column(BigInteger, default=0)
    jwks_uri: Mapped[str | None] = mapped_column(Text, nullable=True)
    jwks_json: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    allowed_origins: Mapped[list[Any]] = mapped_column(JSON, default=list)
    request_secret: Mapped[str] = mapped_column(String(200))
    mint_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    realtime_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Rate-limit rules in `limits` notation ("10/second;300/minute", or "off"); NULL = the server's.
    rate_limit_per_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    rate_limit_per_subject: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # Threads with no activity for this many days are erased by the pruner; None keeps all.
    retention_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class ApiKey(Base):
    """A workspace API key. The secret is shown once; only its SHA-256 is stored."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # key_…
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), index=True)
    mode: Mapped[str] = mapped_column(String(8))  # live | test
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    secret_hint: Mapped[str] = mapped_column(String(32))  # e.g. sk_live_…AbCd, for display
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class Connection(Base):
    __tablename__ = "connections"
    __table_args__ = (UniqueConstraint("workspace_id", "name"),)

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    workspace_id: Mapped[str] = mapped_column(ForeignKey("workspaces.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    base_url: Mapped[str] = mapped_column(Text)
    # `http`: Heddle's signed-HTTP tool calls (tool paths follow base_url); `mcp`: a Model Context
    # Protocol server over Streamable HTTP whose endpoint is base_url (heddle/outbound/mcp.py).
    kind: Mapped[str] = mapped_column(String(8), default="http", server_default="http")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
