"""HTTP routes of schedules (issue 45): thin handlers over heddle.loom.schedules.

A schedule belongs to a thread and so to its subject: relay calls name the subject
(Service-Subject), a direct caller (session token) reaches only their own threads; anyone
else's thread or schedule is 404, as for messages.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from heddle.api.deps import loom_session, services
from heddle.api.envelope import ok
from heddle.api.operations import LOOM, UUIDPath, operation
from heddle.idempotency.http import idempotent
from heddle.loom import schedules
from heddle.loom.routes import SUBJECT
from heddle.loom.schedule_schemas import CreateSchedule, Schedule, ScheduleDeleted, ScheduleList
from heddle.loom.write_request import write_request

router = APIRouter(prefix="/v1/loom", tags=["loom"])


def caps(request: Request) -> schedules.Caps:
    s = services(request).settings
    return schedules.Caps(per_thread=s.schedules_max_per_thread, per_subject=s.schedules_max_per_subject)


@router.post("/threads/{thread_id}/schedules", summary="Schedule a message to the thread: once (`at`) or on a cron",
             **operation(Schedule, auth=LOOM, status_code=201, body=True,
                         headers=(*SUBJECT, "Service-Connection", "Idempotency-Key"),
                         errors=("subject_required", "not_found", "invalid_schedule", "too_many_schedules",
                                 "connection_not_found")))
@idempotent
async def create_schedule(thread_id: UUIDPath, body: CreateSchedule, request: Request):
    async with write_request(request) as req:
        data = await schedules.create(req.session, req.auth, thread_id, content=body.content, at=body.at,
                                      cron=body.cron, timezone=body.timezone, ends_at=body.ends_at,
                                      max_runs=body.max_runs, caps=caps(request))
        return req.respond(ok(data, status_code=201))


@router.get("/threads/{thread_id}/schedules", summary="A thread's schedules, oldest first",
            **operation(ScheduleList, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def list_schedules(thread_id: UUIDPath, request: Request):
    async with loom_session(request) as (auth, session):
        return {"status": "success", "data": {"items": await schedules.list_for_thread(session, auth, thread_id)}}


@router.delete("/schedules/{schedule_id}", summary="Cancel a schedule: it never fires again",
               **operation(ScheduleDeleted, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def delete_schedule(schedule_id: UUIDPath, request: Request):
    async with write_request(request) as req:
        data = await schedules.cancel(req.session, req.auth, schedule_id)
        return req.respond(ok(data))
