"""HTTP routes of run control and thread lifecycle (CONTRACT section 12): thin handlers."""

from __future__ import annotations

from fastapi import APIRouter, BackgroundTasks, Request

from heddle.api.deps import loom_session
from heddle.api.envelope import error_responses, ok
from heddle.loom import approvals, control
from heddle.loom.effects import Effects
from heddle.loom.routes import AUTH_ERRORS, _apply_after_response
from heddle.loom.schemas import PostApproval

router = APIRouter(prefix="/v1/loom", tags=["loom"])


@router.post("/runs/{run_id}/cancel", summary="Cancel a run (idempotent)",
             responses=error_responses(*AUTH_ERRORS, "not_found", "run_terminal"))
async def cancel_run(run_id: str, request: Request, background: BackgroundTasks):
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await control.cancel_run(session, auth, run_id, effects)
        await session.commit()
    _apply_after_response(request, auth, effects, background)
    return ok(data)


@router.post("/runs/{run_id}/approval", summary="Approve or decline a tool call the run asks about",
             responses=error_responses(*AUTH_ERRORS, "not_found", "run_not_awaiting_approval"))
async def post_approval(run_id: str, body: PostApproval, request: Request, background: BackgroundTasks):
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await approvals.answer(session, auth, run_id, body.tool_call_id, body.approved, body.reason, effects)
        await session.commit()
    _apply_after_response(request, auth, effects, background)
    return ok(data)
