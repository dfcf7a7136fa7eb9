"""`GET /v1/loom/realtime/config` and `POST /v1/loom/realtime/auth` (Pusher channel authorization):
loom's routes for realtime (they ask loom who may see a thread), over heddle/realtime's signing."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from heddle import process_services
from heddle.api.deps import loom_auth, loom_session
from heddle.api.operations import LOOM, operation, raw_request_body
from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.loom.queries import visible_thread
from heddle.realtime.schemas import ChannelAuthEnvelope, RealtimeAuthRequest, RealtimeConfig
from heddle.realtime.setup import Realtime
from heddle.realtime.signing import channel_auth, is_valid_socket_id, parse_thread_channel

router = APIRouter(prefix="/v1/loom/realtime", tags=["realtime"])


def _realtime(request: Request) -> Realtime:
    return process_services.of(request).realtime


@router.get("/config", summary="Public realtime settings for the client (never a secret)",
            **operation(RealtimeConfig, auth=LOOM, headers=("Service-Subject",)))
async def realtime_config(request: Request, auth: AuthContext = Depends(loom_auth)):
    return {"status": "success", "data": _realtime(request).public_config(auth.workspace.realtime_enabled)}


def _auth_body(request: Request, raw: bytes) -> tuple[str, str]:
    ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    try:
        if ctype == "application/x-www-form-urlencoded":
            form = {k: v[0] for k, v in parse_qs(raw.decode(), strict_parsing=False).items()}
        else:
            form = json.loads(raw or b"{}")
            if not isinstance(form, dict):
                raise ValueError
    except (ValueError, UnicodeDecodeError):
        raise HeddleError("invalid_request", "The body must be JSON or form-encoded with socket_id and "
                          "channel_name.") from None
    socket_id, channel = form.get("socket_id"), form.get("channel_name")
    problems = []
    if not isinstance(socket_id, str) or not is_valid_socket_id(socket_id):
        problems.append({"location": "body", "field": "socket_id", "message": "must look like 123.456"})
    if not isinstance(channel, str) or parse_thread_channel(channel) is None:
        problems.append({"location": "body", "field": "channel_name",
                         "message": "must be private-thread-<thread uuid>"})
    if problems:
        raise HeddleError("invalid_request", "Invalid realtime authorization request.", details=problems)
    return socket_id, channel


@router.post("/auth", summary="Authorize a pusher-js subscription to private-thread-<thread id>",
             description=("JSON or form-encoded (as pusher-js sends it) `socket_id` and `channel_name`. "
                          "The answer carries `auth` in `data` and, so that pusher-js's default authorizer "
                          "reads it, also at the top level."),
             **operation(None, envelope=ChannelAuthEnvelope, auth=LOOM, headers=("Service-Subject",), body=True,
                         errors=("subject_required", "forbidden", "realtime_disabled"),
                         request_body=raw_request_body(RealtimeAuthRequest, "application/x-www-form-urlencoded",
                                                       "application/json")))
async def realtime_auth(request: Request):
    # The whole body before any database session: a client that sends half a body must not
    # hold a pooled connection while it waits (the middleware has buffered it already; this
    # keeps the order right even without it). Authentication errors still come first.
    raw = await request.body()
    async with loom_session(request) as (auth, session):
        auth.require_subject()
        socket_id, channel = _auth_body(request, raw)
        realtime = _realtime(request)
        if not realtime.enabled(auth.workspace.realtime_enabled):
            raise HeddleError("realtime_disabled")
        try:
            await visible_thread(session, auth, str(parse_thread_channel(channel)))
        except HeddleError:
            raise HeddleError("forbidden", "This caller's subject does not own that thread.") from None
    signature = channel_auth(realtime.key, realtime.secret, socket_id, channel)
    return JSONResponse({"status": "success", "data": {"auth": signature}, "auth": signature})
