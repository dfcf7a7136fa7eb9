"""`GET /v1/loom/runs/{id}/events`: the run's events as Server-Sent Events (see `sse.py`)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Header, Query, Request

from heddle.api.deps import loom_session, services
from heddle.api.operations import LOOM, UUIDPath, operation
from heddle.loom import queries as q
from heddle.loom.sse import RunEventStream, parse_event_id
from heddle.loom.stream_limits import CountedStreamingResponse

router = APIRouter(prefix="/v1/loom", tags=["loom"])

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@router.get("/runs/{run_id}/events",
            summary="The run's events as Server-Sent Events, resumable with Last-Event-ID",
            **operation(None, auth=LOOM, headers=("Service-Subject",), errors=("not_found", "rate_limited"),
                        event_stream=("`run.updated` (data: Run), `message.created` (data: Message) and "
                                      "`message.delta` events, each with `id:`; the stream ends after the "
                                      "run's terminal event")))
async def run_events(run_id: UUIDPath, request: Request,
                     last_event_id_header: str | None = Header(None, alias="Last-Event-ID", max_length=20),
                     last_event_id: str | None = Query(None, max_length=20,
                                                       description="For clients that cannot set the header"),
                     ):
    if last_event_id_header is not None:
        after = parse_event_id(last_event_id_header, "Last-Event-ID", "header")
    else:
        after = parse_event_id(last_event_id, "last_event_id", "query")
    svc = services(request)
    # One turn of the event loop first (issue 48): a client opens the stream right after its
    # POST's 202, while the run that POST started is still on its way to the model. On Python
    # 3.11 the model request leaves from a task of its own (aiohttp's body writer), queued
    # behind whatever is ready; yielding here puts this stream's reads and first write behind
    # the model requests of the runs that started meanwhile. Nothing is missed: the stream's
    # first read follows, and reads whatever was stored before it.
    await asyncio.sleep(0)
    # Access is checked like GET /runs/{id}; the stream's first read follows in the same
    # session, which is closed before streaming.
    async with loom_session(request) as (auth, session):
        run = await q.visible_run(session, auth, run_id)
        stream = RunEventStream(svc.database(), svc.run_events.signals, run.id, after,
                                heartbeat_seconds=svc.settings.sse_heartbeat_seconds,
                                poll_seconds=svc.settings.sse_poll_seconds)
        await stream.open(session, run.state)
    try:
        # Counted while open, per key and per subject: 429 past either cap (loom/stream_limits.py).
        release = request.app.state.services.streams.acquire(auth, request.client.host if request.client else None)
    except BaseException:
        stream.close()
        raise

    def ended() -> None:
        release()
        stream.close()  # a response cut off before its first event never started the generator

    return CountedStreamingResponse(stream.events(), media_type="text/event-stream", headers=SSE_HEADERS,
                                    release=ended)
