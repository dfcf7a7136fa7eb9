"""HTTP routes of run control and thread lifecycle (docs/run-control.md): thin
handlers, each write in its own unit of work (heddle/loom/write_request.py)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, BackgroundTasks, Request

from heddle.api.deps import loom_session, services
from heddle.api.envelope import ok
from heddle.api.operations import LOOM, WORKSPACE_KEY, SubjectPath, UUIDPath, operation
from heddle.idempotency.http import idempotent
from heddle.loom import approvals, cancellation, erasure
from heddle.loom.routes import SUBJECT
from heddle.loom.schemas import PostApproval, Run, SubjectDeleted, ThreadDeleted, ThreadDetail
from heddle.loom.write_request import write_request

router = APIRouter(prefix="/v1/loom", tags=["loom"])
FLUSH_WAIT_SECONDS = 2.0


@router.post("/runs/{run_id}/cancel", summary="Cancel a run (idempotent)",
             **operation(Run, auth=LOOM, headers=(*SUBJECT, "Idempotency-Key"),
                         errors=("not_found", "run_terminal")))
@idempotent
async def cancel_run(run_id: UUIDPath, request: Request, background: BackgroundTasks):
    async with write_request(request, background) as req:  # the SSE log and run.failed webhook commit with it
        data = await cancellation.cancel_run(req.work, req.auth, run_id)
        return req.respond(ok(data))


@router.post("/runs/{run_id}/approval", summary="Approve or decline a tool call the run asks about",
             **operation(Run, auth=LOOM, headers=SUBJECT, body=True,
                         errors=("not_found", "run_not_awaiting_approval")))
async def post_approval(run_id: UUIDPath, body: PostApproval, request: Request, background: BackgroundTasks):
    async with write_request(request, background) as req:
        data = await approvals.answer(req.work, req.auth, run_id, body.tool_call_id, body.approved, body.reason)
        return req.respond(ok(data))


@router.get("/threads/{thread_id}", summary="A thread (with its current run and queue length)",
            **operation(ThreadDetail, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def get_thread(thread_id: UUIDPath, request: Request):
    async with loom_session(request) as (auth, session):
        return {"status": "success", "data": await erasure.get_thread(session, auth, thread_id)}


@router.delete("/threads/{thread_id}", summary="Erase a thread: its messages, runs, turns and tool calls",
               **operation(ThreadDeleted, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def delete_thread(thread_id: UUIDPath, request: Request, background: BackgroundTasks):
    await _flush_request_log(request)
    async with write_request(request, background) as req:
        data = await erasure.delete_thread(req.work, req.auth, thread_id)
        request.state.log_path = f"/v1/loom/threads/{erasure.ERASED}"  # the request log keeps no erased id
        return req.respond(ok(data))


@router.delete("/subjects/{subject}", summary="Erase a person: every thread of the subject (relay key only)",
               **operation(SubjectDeleted, auth=WORKSPACE_KEY, errors=("forbidden", "invalid_subject")))
async def delete_subject(subject: SubjectPath, request: Request, background: BackgroundTasks):
    request.state.log_path = f"/v1/loom/subjects/{erasure.ERASED}"  # never log the person's id
    await _flush_request_log(request)
    async with write_request(request, background) as req:
        data = await erasure.delete_subject(req.work, req.auth, subject)
    services(request).subject_tokens.invalidate(req.auth.workspace_id, data["subject"])  # once committed
    return ok(data)


async def _flush_request_log(request: Request) -> None:
    """Write this process's queued request-log rows first, so the erasure redacts them too
    (rows are batched off the request path; one queued before the erase would keep the id)."""
    writer = services(request).request_log
    if writer is not None:
        try:  # bounded: under steady traffic the queue is never quite empty
            await asyncio.wait_for(writer.flush(), FLUSH_WAIT_SECONDS)
        except TimeoutError:
            pass
