"""Institution directories imported by operators (`heddle identify import`).

Curated data ships inside the package; official full directories (FedACH, IFSC, ...) are
loaded into this table and take precedence over the curated rows for the same (rail, code).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, BigInteger, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from heddle.db.base import Base, UTCDateTime, utcnow


class DirectoryEntry(Base):
    __tablename__ = "identify_directory"
    __table_args__ = (UniqueConstraint("rail", "code"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    rail: Mapped[str] = mapped_column(String(20))
    code: Mapped[str] = mapped_column(String(40))
    name: Mapped[str] = mapped_column(String(300))
    type: Mapped[str] = mapped_column(String(40), default="bank")
    bic: Mapped[str | None] = mapped_column(String(11), nullable=True)
    city: Mapped[str | None] = mapped_column(String(120), nullable=True)
    country: Mapped[str] = mapped_column(String(2))
    reachable_rails: Mapped[list[Any]] = mapped_column(JSON, default=list)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    source: Mapped[str] = mapped_column(String(80))
    imported_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
