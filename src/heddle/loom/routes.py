"""HTTP routes of Loom: thin handlers over heddle.loom.service."""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, BackgroundTasks, Query, Request

from heddle.api.deps import loom_session, services
from heddle.api.envelope import error_responses, ok
from heddle.auth.context import AuthContext, validate_subject
from heddle.loom import service
from heddle.loom.effects import Effects
from heddle.loom.schemas import CreateThread, PostMessage, PostOutcome

router = APIRouter(prefix="/v1/loom", tags=["loom"])

AUTH_ERRORS = ("unauthorized", "secret_key_in_browser", "origin_not_allowed", "subject_header_with_token",
               "invalid_subject")


async def _apply_after_response(request: Request, auth: AuthContext, effects: Effects, background: BackgroundTasks):
    """Events and run starts go out after the response is sent, so the 202 never waits for
    the engine's first steps (they share this event loop). The commit has happened already."""
    svc = services(request)
    if svc.settings.executor == "queue":
        # A worker may take the run up the moment the commit is visible: publish this request's
        # events before answering, so they reach the bus ahead of the worker's first ones.
        await effects.apply(svc.events, svc.executor, auth.workspace.realtime_enabled)
        return
    background.add_task(effects.apply, svc.events, svc.executor, auth.workspace.realtime_enabled)


@router.post("/threads", status_code=201, summary="Open (or reuse) the subject's thread with an agent",
             responses={200: {"description": "The subject's existing thread for that agent"},
                        **error_responses(*AUTH_ERRORS, "subject_required", "agent_not_found")})
async def create_thread(body: CreateThread, request: Request):
    async with loom_session(request, write=True) as (auth, session):
        # The Service-Subject header (relay) or the token's `sub` (direct) wins over subject_ref.
        if body.subject_ref and auth.mode == "relay" and auth.subject is None:
            auth = replace(auth, subject=validate_subject(body.subject_ref))
        data, created = await service.open_thread(session, auth, body.agent)
        await session.commit()
    return ok(data, status_code=201 if created else 200)


@router.get("/threads", summary="The subject's threads, newest first",
            responses=error_responses(*AUTH_ERRORS, "subject_required"))
async def list_threads(agent: str | None = Query(None, max_length=80), limit: int = Query(20, ge=1, le=100),
                       after: str | None = Query(None, max_length=500), *, request: Request):
    async with loom_session(request) as (auth, session):
        return ok(await service.list_threads(session, auth, agent=agent, limit=limit, after=after))


@router.post("/threads/{thread_id}/messages", status_code=202,
             summary="Post a user message: starts a run, or answers the run awaiting input",
             responses=error_responses(*AUTH_ERRORS, "subject_required", "not_found", "run_active",
                                       "connection_required", "connection_not_found"))
async def post_message(thread_id: str, body: PostMessage, request: Request, background: BackgroundTasks):
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await service.post_message(session, auth, thread_id, body.content, effects)
        await session.commit()
    await _apply_after_response(request, auth, effects, background)
    return ok(data, status_code=202)


@router.get("/threads/{thread_id}/messages", summary="A thread's messages, oldest first",
            responses=error_responses(*AUTH_ERRORS, "subject_required", "not_found"))
async def list_messages(thread_id: str, limit: int = Query(50, ge=1, le=200),
                        after: str | None = Query(None, max_length=500), *, request: Request):
    async with loom_session(request) as (auth, session):
        return ok(await service.list_messages(session, auth, thread_id, limit=limit, after=after))


@router.get("/runs/{run_id}", summary="A run", responses=error_responses(*AUTH_ERRORS, "not_found"))
async def get_run(run_id: str, request: Request):
    async with loom_session(request) as (auth, session):
        return ok(await service.get_run(session, auth, run_id))


@router.get("/runs/{run_id}/trace", summary="A run with its turns, tool calls and attributed API calls",
            responses=error_responses(*AUTH_ERRORS, "not_found"))
async def get_trace(run_id: str, request: Request):
    async with loom_session(request) as (auth, session):
        return ok(await service.get_trace(session, auth, run_id))


@router.post("/runs/{run_id}/outcome", summary="Confirm the outcome of a tool call the run awaits",
             responses=error_responses(*AUTH_ERRORS, "not_found", "run_not_awaiting_outcome"))
async def post_outcome(run_id: str, body: PostOutcome, request: Request, background: BackgroundTasks):
    effects = Effects()
    async with loom_session(request, write=True) as (auth, session):
        data = await service.post_outcome(session, auth, run_id, body.tool_call_id, body.state, body.detail, effects)
        await session.commit()
    await _apply_after_response(request, auth, effects, background)
    return ok(data)
