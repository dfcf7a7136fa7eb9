"""Schedules as operators see them (every subject of a workspace): list, pause or resume, delete.

The schedules themselves are loom's (heddle.loom.schedules); this is the control plane's view,
called by the console API.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from heddle.control.errors import not_found
from heddle.control.workspaces import workspace
from heddle.loom import schedules as loom_schedules


def _id(value: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise not_found(what, value) from None


async def list_schedules(session: AsyncSession, workspace_id: str, *, thread_id: str | None = None) -> dict[str, Any]:
    await workspace(session, workspace_id)
    thread = _id(thread_id, "thread") if thread_id else None
    return {"items": await loom_schedules.list_for_workspace(session, workspace_id, thread_id=thread)}


async def set_paused(session: AsyncSession, workspace_id: str, schedule_id: str, paused: bool) -> dict[str, Any]:
    await workspace(session, workspace_id)
    return await loom_schedules.set_paused(session, workspace_id, _id(schedule_id, "schedule"), paused)


async def delete_schedule(session: AsyncSession, workspace_id: str, schedule_id: str) -> dict[str, Any]:
    await workspace(session, workspace_id)
    if not await loom_schedules.delete_one(session, workspace_id, _id(schedule_id, "schedule")):
        raise not_found("schedule", schedule_id)
    return {"id": schedule_id, "deleted": True}
