"""The built-in `schedule_followup` tool: the agent promises "I'll check again tomorrow" and keeps it.

Offered to an agent whose file says `schedules: true` (stored as the tools entry
`{builtin: schedule_followup}`). A call makes a one-off schedule of the run's own thread
(loom/schedules.py), made by the agent (`created_by: agent`, the run's id), under the same caps
per thread and per subject as the API's, in a transaction fenced by the run's executor (an
executor that lost the run makes nothing). A call made again after a crash finds the schedule
it made before (same run, content and time) rather than making a second one.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from heddle.db.base import Database, utcnow
from heddle.errors import HeddleError
from heddle.loom import rows, schedule_rules
from heddle.loom.lease import Fence
from heddle.loom.models import Run, Schedule, Thread, ToolCall
from heddle.loom.providers.base import ToolSpec
from heddle.loom.schedules import Caps, add_schedule
from heddle.loom.states import CALL_SUCCEEDED
from heddle.loom.tools.base import ToolExecution, failed
from heddle.loom.unit_of_work import RunWork
from heddle.timeutil import iso

NAME = "schedule_followup"
ENTRY = {"builtin": NAME}  # what `schedules: true` adds to the agent's stored tools
MAX_CONTENT = 2000

SCHEDULE_SPEC = ToolSpec(
    name=NAME,
    description=("Schedule a follow-up in this conversation: at the given time, `content` is posted to the "
                 "thread as a message and you answer it then. Use it to keep a promise such as checking "
                 "again tomorrow. `at` is an RFC 3339 time with its offset, in the future."),
    parameters={"type": "object", "properties": {
        "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT,
                    "description": "What you will be asked then, e.g. 'Check transfer T-123 again'."},
        "at": {"type": "string", "description": "When, RFC 3339 with offset, e.g. 2026-12-01T09:00:00+01:00."}},
        "required": ["content", "at"], "additionalProperties": False},
)


class ScheduleTool:
    """`schedules: true` in the agent file."""

    kind = "schedule"

    def __init__(self, db: Database, caps: Caps):
        self.db, self.caps = db, caps

    def declares(self, tool: dict[str, Any]) -> str | None:
        return NAME if tool.get("builtin") == NAME else None

    def spec(self, tool: dict[str, Any]) -> ToolSpec:
        return SCHEDULE_SPEC

    def definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {"kind": self.kind, "builtin": NAME}

    def unknown_fate(self, call: ToolCall) -> bool:
        return False  # made again, it finds the schedule it made (see the module docstring)

    def stopped(self, call: ToolCall) -> dict[str, Any] | None:
        return None

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        args = call.args or {}
        content, at_text = args.get("content"), args.get("at")
        if not isinstance(content, str) or not content.strip() or len(content) > MAX_CONTENT or "\x00" in content:
            return failed("invalid_request", f"`content` must be 1 to {MAX_CONTENT} characters of text.")
        try:
            at = dt.datetime.fromisoformat(at_text) if isinstance(at_text, str) else None
        except ValueError:
            at = None
        if at is None:
            return failed("invalid_schedule", "`at` is not an RFC 3339 time (e.g. 2026-12-01T09:00:00+01:00).")
        try:
            when = schedule_rules.check(at=at, cron=None, timezone=None, ends_at=None, max_runs=None, now=utcnow())
            async with self.db.transaction() as session:
                await RunWork(session, fence=fence).hold()  # first: a stale executor makes nothing
                await rows.lock_thread(session, run.thread_id)
                schedule = await session.scalar(select(Schedule).where(
                    Schedule.created_by_run_id == run.id, Schedule.content == content, Schedule.at == when.at))
                if schedule is None:
                    thread = await session.get(Thread, run.thread_id)
                    schedule = await add_schedule(
                        session, thread, content=content, when=when, caps=self.caps, created_by="agent",
                        auth_mode=run.auth_mode, key_id=run.key_id, connection_id=run.connection_id, run_id=run.id)
                result = {"schedule_id": str(schedule.id), "at": iso(schedule.at), "content": schedule.content}
        except HeddleError as exc:
            return failed(exc.code, exc.message)
        return ToolExecution(status=CALL_SUCCEEDED, result=result)
