"""Request bodies and read models of the schedule endpoints (loom/routes_schedules.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from typing_extensions import TypeAliasType

from heddle.api.envelope import NullableTimestamp, ReadModel, Timestamp, UUIDStr

ScheduleState = TypeAliasType("ScheduleState", Literal["active", "paused", "ended"])

_EXAMPLE = {
    "id": "5b7c0d1e-2222-4a2b-9c3d-4e5f6a7b8c9d", "thread_id": "0b6a7c1d-5a4e-4f1b-8a49-2c1d3e4f5a6b",
    "subject": "web:u_123", "content": "Check my transfer again", "at": None, "cron": "0 9 * * 1",
    "timezone": "Europe/Berlin", "ends_at": None, "max_runs": 10, "runs": 0, "state": "active",
    "paused_reason": None, "next_run_at": "2026-12-07T08:00:00Z",
    "created_by": {"kind": "caller", "run_id": None}, "last_run": None, "last_error": None,
    "created_at": "2026-12-01T12:00:00Z"}


# Who made a schedule: the thread's subject through the API, or the agent (schedule_followup).
ScheduleAuthor = TypeAliasType("ScheduleAuthor", Literal["caller", "agent"])


class CreateSchedule(BaseModel):
    """`content` later: once at `at`, or on each tick of `cron` in `timezone` until `ends_at` or `max_runs`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"content": "Check my transfer again", "at": "2030-01-01T09:00:00+01:00"},
        {"content": "Weekly statement summary", "cron": "0 9 * * 1", "timezone": "Europe/Berlin", "max_runs": 10}]})
    content: Annotated[str, Field(min_length=1, max_length=32_000)]
    at: AwareDatetime | None = None  # RFC 3339 with its offset, in the future
    cron: Annotated[str, Field(min_length=1, max_length=120)] | None = None  # five fields
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = None  # IANA; UTC when left out
    ends_at: AwareDatetime | None = None
    max_runs: Annotated[int, Field(ge=1, le=100_000)] | None = None


class ScheduleCreator(ReadModel):
    kind: ScheduleAuthor
    run_id: UUIDStr | None = None  # the run whose `schedule_followup` call made it


class ScheduleLastRun(ReadModel):
    at: Timestamp
    run_id: UUIDStr | None
    late_seconds: float | None


class ScheduleError(ReadModel):
    code: str
    message: str


class Schedule(ReadModel):
    """A message the thread receives later (issue 45)."""

    model_config = ConfigDict(json_schema_extra={"examples": [_EXAMPLE]})
    id: UUIDStr
    thread_id: UUIDStr
    subject: str
    content: str
    at: NullableTimestamp
    cron: str | None
    timezone: str
    ends_at: NullableTimestamp
    max_runs: int | None
    runs: int
    state: ScheduleState
    paused_reason: str | None  # operator | insufficient_credits
    next_run_at: NullableTimestamp
    created_by: ScheduleCreator
    last_run: ScheduleLastRun | None
    last_error: ScheduleError | None  # the last firing could not post (e.g. connection_required)
    created_at: Timestamp


class ScheduleList(ReadModel):
    items: list[Schedule]


class ScheduleDeleted(Schedule):
    model_config = ConfigDict(json_schema_extra={"examples": [{**_EXAMPLE, "deleted": True}]})
    deleted: bool
