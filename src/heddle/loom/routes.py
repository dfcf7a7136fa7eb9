"""HTTP routes of Loom: thin handlers over heddle.loom.service (writes) and heddle.loom.views (reads).

A write opens its unit of work (heddle/loom/write_request.py), calls the service and returns:
leaving the block stages, commits with the idempotent response, and runs the after-commit hooks.
"""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, BackgroundTasks, Query, Request

from heddle.api.deps import loom_session
from heddle.api.envelope import Page, ok
from heddle.api.operations import LOOM, UUIDPath, operation
from heddle.auth.subjects import canonical_subject
from heddle.idempotency.http import idempotent
from heddle.loom import service, views
from heddle.loom.attachments.rules import attachment_rules
from heddle.loom.schemas import (
    CreateThread,
    Message,
    MessageAccepted,
    PostMessage,
    PostOutcome,
    Run,
    Thread,
    Trace,
)
from heddle.loom.write_request import write_request

router = APIRouter(prefix="/v1/loom", tags=["loom"])

# Relay calls name their subject; on run, trace and outcome calls it narrows to that subject's runs.
SUBJECT = ("Service-Subject",)
AUTH_ERRORS = ("unauthorized", "secret_key_in_browser", "origin_not_allowed", "subject_header_with_token",
               "invalid_subject", "rate_limited")


@router.post("/threads", summary="Open (or reuse) the subject's thread with an agent",
             **operation(Thread, auth=LOOM, status_code=201, headers=(*SUBJECT, "Idempotency-Key"), body=True,
                         also={200: "The subject's existing thread for that agent"},
                         errors=("subject_required", "agent_not_found")))
@idempotent
async def create_thread(body: CreateThread, request: Request):
    async with write_request(request) as req:
        auth = req.auth
        # The Service-Subject header (relay) or the token's `sub` (direct) wins over subject_ref.
        if body.subject_ref and auth.mode == "relay" and auth.subject is None:
            auth = replace(auth, subject=canonical_subject(body.subject_ref, source="subject_ref"))
        data, created = await service.open_thread(req.session, auth, body.agent)
        return req.respond(ok(data, status_code=201 if created else 200))


@router.get("/threads", summary="The subject's threads, newest first",
            **operation(Page[Thread], auth=LOOM, headers=SUBJECT, errors=("subject_required",)))
async def list_threads(agent: str | None = Query(None, max_length=80), limit: int = Query(20, ge=1, le=100),
                       after: str | None = Query(None, max_length=500), *, request: Request):
    async with loom_session(request) as (auth, session):
        return {"status": "success", "data": await views.list_threads(session, auth, agent=agent, limit=limit,
                                                                       after=after)}


@router.post("/threads/{thread_id}/messages",
             summary="Post a user message: starts a run, or answers the run awaiting input",
             **operation(MessageAccepted, auth=LOOM, status_code=202, body=True,
                         headers=(*SUBJECT, "Service-Connection", "Idempotency-Key"),
                         errors=("subject_required", "not_found", "run_active", "connection_required",
                                 "connection_not_found", "too_many_attachments", "attachment_in_use",
                                 "model_cannot_see_images")))
@idempotent
async def post_message(thread_id: UUIDPath, body: PostMessage, request: Request, background: BackgroundTasks):
    async with write_request(request, background, ordered=True) as req:
        data = await service.post_message(req.work, req.auth, thread_id, body.content, body.if_busy,
                                          attachment_rules(request, body.attachments))
        return req.respond(ok(data, status_code=202))


@router.get("/threads/{thread_id}/messages", summary="A thread's messages, oldest first",
            **operation(Page[Message], auth=LOOM, headers=SUBJECT, errors=("subject_required", "not_found")))
async def list_messages(thread_id: UUIDPath, limit: int = Query(50, ge=1, le=200),
                        after: str | None = Query(None, max_length=500), *, request: Request):
    async with loom_session(request) as (auth, session):
        return {"status": "success",
                "data": await views.list_messages(session, auth, thread_id, limit=limit, after=after)}


@router.get("/runs/{run_id}", summary="A run", **operation(Run, auth=LOOM, headers=SUBJECT, errors=("not_found",)))
async def get_run(run_id: UUIDPath, request: Request):
    # The most polled endpoint: rendered here rather than re-validated against Envelope[Run]
    # (the same read model; tests/typed_api check the shapes), as every 202 of this module is.
    async with loom_session(request) as (auth, session):
        data = await views.get_run(session, auth, run_id)
    return ok(data)


@router.get("/runs/{run_id}/trace", summary="A run with its turns, tool calls and attributed API calls",
            **operation(Trace, auth=LOOM, headers=SUBJECT, errors=("not_found",)))
async def get_trace(run_id: UUIDPath, request: Request):
    async with loom_session(request) as (auth, session):
        return {"status": "success", "data": await views.get_trace(session, auth, run_id)}


@router.post("/runs/{run_id}/outcome", summary="Confirm the outcome of a tool call the run awaits",
             **operation(Run, auth=LOOM, headers=(*SUBJECT, "Idempotency-Key"), body=True,
                         errors=("not_found", "run_not_awaiting_outcome")))
@idempotent
async def post_outcome(run_id: UUIDPath, body: PostOutcome, request: Request, background: BackgroundTasks):
    async with write_request(request, background) as req:
        data = await service.post_outcome(req.work, req.auth, run_id, body.tool_call_id, body.state, body.detail)
        return req.respond(ok(data))
