"""`wait()` follows the run's Server-Sent Events when a server offers them (docs/streaming-and-webhooks.md), and
polls when it does not. The stream comes from a real local HTTP server that speaks the
contract's format, since the events endpoint is not part of this build of the server."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from heddle.client import AsyncHeddle, Heddle
from support.net import bound_socket, wait_started

RUN_ID = "4b0d6c1e-6a53-4a53-9d0c-2f5a8f0e7c11"


def run_json(state: str) -> dict:
    return {"id": RUN_ID, "thread_id": "0f8b7a52-2d7e-4c1e-8a5e-1f3b9c6d2a40", "state": state,
            "terminal": state in ("closed", "failed"), "cost_credits": 0, "connection": None,
            "latest_message": None, "pending": None, "error": None,
            "created_at": "2026-01-01T12:00:00Z", "updated_at": "2026-01-01T12:00:00Z"}


class RunServer:
    """GET /v1/loom/runs/{id} always says `running`; /events (when offered) streams to `closed`."""

    def __init__(self, *, events: bool):
        self.gets, self.stream_headers = 0, []

        async def get_run(request: Request):
            self.gets += 1
            return JSONResponse({"status": "success", "data": run_json("running")})

        async def events_stream(request: Request):
            self.stream_headers.append(dict(request.headers))

            async def body():
                for seq, (name, data) in enumerate([
                    ("run.updated", run_json("running")),
                    ("message.delta", {"run_id": RUN_ID, "message_id": "m", "seq": 0, "delta": "Hel"}),
                    ("run.updated", {**run_json("closed"), "a_field_from_the_future": 1}),
                ], start=1):
                    await asyncio.sleep(0.05)
                    yield f"id: {seq}\nevent: {name}\ndata: {json.dumps(data)}\n\n"

            return StreamingResponse(body(), media_type="text/event-stream")

        routes = [Route("/v1/loom/runs/{run_id}", get_run)]
        if events:
            routes.append(Route("/v1/loom/runs/{run_id}/events", events_stream))
        sock = bound_socket()
        self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes), log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    def __enter__(self) -> RunServer:
        self.thread.start()
        wait_started(self.server, self.thread)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def test_wait_reads_the_event_stream():
    with RunServer(events=True) as srv, Heddle(srv.url, api_key="sk_test", subject="web:alice") as client:
        run = client.loom.wait(RUN_ID, until=("closed", "failed"), timeout=5)
    assert run.state == "closed" and run.terminal
    assert srv.gets == 1  # one look before subscribing, then only the stream
    [headers] = srv.stream_headers
    assert headers["accept"] == "text/event-stream" and headers["service-subject"] == "web:alice"
    assert headers["authorization"] == "Bearer sk_test"


async def test_async_wait_reads_the_event_stream():
    with RunServer(events=True) as srv:
        async with AsyncHeddle(srv.url, token="a.b.c") as client:
            run = await client.loom.wait(RUN_ID, until=("closed",), timeout=5)
    assert run.state == "closed" and srv.gets == 1


def test_wait_polls_a_server_without_the_stream():
    with RunServer(events=False) as srv, Heddle(srv.url, api_key="sk_test", subject="web:alice",
                                                 poll_interval=0.01) as client:
        with pytest.raises(TimeoutError):
            client.loom.wait(RUN_ID, until=("closed",), timeout=0.5)
        gets = srv.gets
        assert gets > 3  # it polled
        with pytest.raises(TimeoutError):
            client.loom.wait(RUN_ID, until=("closed",), timeout=0.1)
    assert srv.stream_headers == []
