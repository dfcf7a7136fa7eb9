"""HTTP routes of run control and thread lifecycle (CONTRACT section 12): thin handlers."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, BackgroundTasks, Request

from heddle.api.deps import loom_session, services
from heddle.api.envelope import ok
from heddle.api.operations import LOOM, WORKSPACE_KEY, SubjectPath, UUIDPath, operation
from heddle.idempotency.http import commit_response, idempotent
from heddle.loom import approvals, cancellation, erasure
from heddle.loom.routes import SUBJECT, after_commit, run_work
from heddle.loom.schemas import PostApproval, Run, SubjectDeleted, ThreadDeleted, ThreadDetail

router = APIRouter(prefix="/v1/loom", tags=["loom"])
FLUSH_WAIT_SECONDS = 2.0


@router.post("/runs/{run_id}/cancel", summary="Cancel a run (idempotent)",
             **operation(Run, auth=LOOM, headers=(*SUBJECT, "Idempotency-Key"),
                         errors=("not_found", "run_terminal")))
@idempotent
async def cancel_run(run_id: UUIDPath, request: Request, background: BackgroundTasks):
    async with loom_session(request, write=True) as (auth, session):
        work = run_work(request, auth, session)
        data = await cancellation.cancel_run(work, auth, run_id)
        await work.stage()  # the SSE log and the run.failed webhook commit with the cancel
        response = await commit_response(session, request, ok(data))
    await after_commit(request, work, background)
    return response


@router.post("/runs/{run_id}/approval", summary="Approve or decline a tool call the run asks about",
             **operation(Run, auth=LOOM, headers=SUBJECT, body=True,
                         errors=("not_found", "run_not_awaiting_approval")))
async def post_approval(run_id: UUIDPath, body: PostApproval, request: Request, background: BackgroundTasks):
    async with loom_session(request, write=True) as (auth, session):
        work = run_work(request, auth, session)
        data = await approvals.answer(work, auth, run_id, body.tool_call_id, body.approved, body.reason)
        await work.stage()
        await session.commit()
    await after_commit(request, work, background)
    return ok(data)


@router.get("/threads/{thread_id}", summary="A thread (with its current run and queue length)",
            **operation(ThreadDetail, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def get_thread(thread_id: UUIDPath, request: Request):
    async with loom_session(request) as (auth, session):
        return {"status": "success", "data": await erasure.get_thread(session, auth, thread_id)}


@router.delete("/threads/{thread_id}", summary="Erase a thread: its messages, runs, turns and tool calls",
               **operation(ThreadDeleted, auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def delete_thread(thread_id: UUIDPath, request: Request, background: BackgroundTasks):
    await _flush_request_log(request)
    async with loom_session(request, write=True) as (auth, session):
        work = run_work(request, auth, session)
        data = await erasure.delete_thread(work, auth, thread_id)
        await session.commit()
    request.state.log_path = f"/v1/loom/threads/{erasure.ERASED}"  # the request log keeps no erased id
    await after_commit(request, work, background)
    return ok(data)


@router.delete("/subjects/{subject}", summary="Erase a person: every thread of the subject (relay key only)",
               **operation(SubjectDeleted, auth=WORKSPACE_KEY, errors=("forbidden", "invalid_subject")))
async def delete_subject(subject: SubjectPath, request: Request, background: BackgroundTasks):
    request.state.log_path = f"/v1/loom/subjects/{erasure.ERASED}"  # never log the person's id
    await _flush_request_log(request)
    async with loom_session(request, write=True) as (auth, session):
        work = run_work(request, auth, session)
        data = await erasure.delete_subject(work, auth, subject)
        await session.commit()
    services(request).subject_tokens.invalidate(auth.workspace_id, data["subject"])
    await after_commit(request, work, background)
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
