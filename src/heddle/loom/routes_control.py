"""HTTP routes of run control and thread lifecycle (CONTRACT section 12): thin handlers."""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Request

from heddle.api.deps import loom_session, services
from heddle.api.envelope import error_responses, ok
from heddle.idempotency.http import OPENAPI as IDEMPOTENCY_HEADER
from heddle.idempotency.http import commit_response, idempotent
from heddle.loom import approvals, control, erasure
from heddle.loom.effects import Effects
from heddle.loom.routes import AUTH_ERRORS, _apply_after_response
from heddle.loom.run_events import stage
from heddle.loom.schemas import PostApproval

router = APIRouter(prefix="/v1/loom", tags=["loom"])


@router.post("/runs/{run_id}/cancel", summary="Cancel a run (idempotent)",
             responses=error_responses(*AUTH_ERRORS, "not_found", "run_terminal", "idempotency_key_reused"),
             openapi_extra=IDEMPOTENCY_HEADER)
@idempotent
async def cancel_run(run_id: str, request: Request, background: BackgroundTasks):
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await control.cancel_run(session, auth, run_id, effects)
        await stage(session, effects)  # the SSE log and the run.failed webhook commit with the cancel
        response = await commit_response(session, request, ok(data))
    _apply_after_response(request, auth, effects, background)
    return response


@router.post("/runs/{run_id}/approval", summary="Approve or decline a tool call the run asks about",
             responses=error_responses(*AUTH_ERRORS, "not_found", "run_not_awaiting_approval"))
async def post_approval(run_id: str, body: PostApproval, request: Request, background: BackgroundTasks):
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await approvals.answer(session, auth, run_id, body.tool_call_id, body.approved, body.reason, effects)
        await stage(session, effects)
        await session.commit()
    _apply_after_response(request, auth, effects, background)
    return ok(data)


@router.get("/threads/{thread_id}", summary="A thread (with its current run and queue length)",
            responses=error_responses(*AUTH_ERRORS, "subject_required", "not_found"))
async def get_thread(thread_id: str, request: Request):
    async with loom_session(request) as (auth, session):
        return ok(await erasure.get_thread(session, auth, thread_id))


@router.delete("/threads/{thread_id}", summary="Erase a thread: its messages, runs, turns and tool calls",
               responses=error_responses(*AUTH_ERRORS, "subject_required", "not_found"))
async def delete_thread(thread_id: str, request: Request, background: BackgroundTasks):
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await erasure.delete_thread(session, auth, thread_id, effects)
        await session.commit()
    request.state.log_path = f"/v1/loom/threads/{erasure.ERASED}"  # the request log keeps no erased id
    _apply_after_response(request, auth, effects, background)
    return ok(data)


@router.delete("/subjects/{subject}", summary="Erase a person: every thread of the subject (relay key only)",
               responses=error_responses(*AUTH_ERRORS, "forbidden"))
async def delete_subject(subject: str, request: Request, background: BackgroundTasks):
    request.state.log_path = f"/v1/loom/subjects/{erasure.ERASED}"  # never log the person's id
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await erasure.delete_subject(session, auth, subject, effects)
        await session.commit()
    services(request).subject_tokens.invalidate(auth.workspace_id, data["subject"])
    _apply_after_response(request, auth, effects, background)
    return ok(data)
