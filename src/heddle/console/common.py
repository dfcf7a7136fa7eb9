"""What every console handler needs: a read or write session, and the outbound URL policy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from heddle import process_services
from heddle.api.envelope import ok
from heddle.control.errors import OutboundPolicy

__all__ = ["ok", "policy", "reading", "writing", "success"]


@asynccontextmanager
async def reading(request: Request) -> AsyncIterator[AsyncSession]:
    async with process_services.database(request).session() as session:
        yield session


@asynccontextmanager
async def writing(request: Request) -> AsyncIterator[AsyncSession]:
    """One transaction: committed when the handler's block ends, rolled back on any error."""
    async with process_services.database(request).transaction() as session:
        yield session


def policy(request: Request, dev: bool) -> OutboundPolicy:
    allow = dev or process_services.settings(request).allow_private_outbound
    return OutboundPolicy(allow_private=allow, dev_hint='To save it for local development, send "dev": true.')


def success(data: Any) -> dict[str, Any]:
    return {"status": "success", "data": data}
