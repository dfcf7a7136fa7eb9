"""Operators (the people who run this Heddle), their one-time login links and their sessions.

Only hashes of login tokens and session ids are stored: a copy of the database lets nobody
sign in as an operator.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class Operator(Base):
    __tablename__ = "operators"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # op_…
    email: Mapped[str] = mapped_column(String(320))  # as given
    # The lower-cased email, unique: one operator per address whatever its case (both databases).
    email_key: Mapped[str] = mapped_column(String(320), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    disabled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)


class OperatorLoginToken(Base):
    __tablename__ = "operator_login_tokens"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256 hex of the token
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime, nullable=True)


class OperatorSession(Base):
    __tablename__ = "operator_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 hex of the cookie value
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
