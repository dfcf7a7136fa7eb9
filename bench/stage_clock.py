"""Run `heddle serve` with a clock on each stage of a message's way to its first token.

Used by bench/streaming_stages.py as `BENCH_WRAP` (bench/common.py runs the server as
`python stage_clock.py -m heddle serve ...`). It wraps, in the server process only:

- uvicorn's `HttpToolsProtocol.on_headers_complete`: when a request's head was read from the
  socket (its task, which runs the app, starts a turn of the event loop later);
- the request middleware: when `POST .../messages` reaches it and when its 202 is sent (with
  the run id the body names), and when `GET .../runs/{id}/events` reaches it;
- `RunEngine.execute`: when the run's task starts (the run id is kept in a context variable,
  so the stages below, which run in that task, know their run);
- the OpenAI-compatible provider's `stream_openai`: the SDK call and the reply's first piece;
- the SDK's streamed response: when the model's response headers were read;
- aiohttp's `ClientRequest.write_bytes`: when the request's body starts to be written (on
  Python 3.11 from a task of its own, one turn of the event loop after the SDK call);
- aiohttp's `TCPConnector._create_connection`: each new connection to the model, and how long
  it took;
- the SSE stream's `RunEventStream._frames`: when the run's first `message.delta` frame is
  made, right before the stream writes it to the client's socket.

The times (`time.monotonic()`, one clock for the whole process) are written to `STAGES_OUT`
when the server is stopped (SIGTERM). Every wrapped name is checked before any is wrapped:
a library or a module of ours that moved makes the server fail to start here, not measure
nothing (tests/scale/test_bench_stages.py checks them).
"""

from __future__ import annotations

import contextvars
import json
import os
import runpy
import signal
import sys
import time

import aiohttp.client_reqrep
import aiohttp.connector
import openai._response
import uvicorn.protocols.http.httptools_impl

import heddle.api.middleware
import heddle.loom.engine
import heddle.loom.providers.openai_compat
import heddle.loom.providers.streaming
import heddle.loom.sse
from heddle.runs_vocabulary import DELTA_EVENT

ROWS: list[tuple] = []
_RUN = contextvars.ContextVar("stage_clock_run", default=None)


# What is wrapped: (where it is looked up, its name).
TARGETS = (
    (uvicorn.protocols.http.httptools_impl.HttpToolsProtocol, "on_headers_complete"),
    (heddle.api.middleware.RequestContextMiddleware, "__call__"),
    (heddle.loom.engine.RunEngine, "execute"),
    (heddle.loom.providers.streaming, "stream_openai"),
    (heddle.loom.providers.openai_compat, "stream_openai"),
    (openai._response.AsyncResponseContextManager, "__aenter__"),
    (aiohttp.client_reqrep.ClientRequest, "write_bytes"),
    (aiohttp.connector.TCPConnector, "_create_connection"),
    (heddle.loom.sse.RunEventStream, "_frames"),
)


def missing() -> list[str]:
    """The wrapped names that are not where this module looks for them (none, or it is out of date)."""
    return [f"{owner.__name__}.{name}" for owner, name in TARGETS if getattr(owner, name, None) is None]


def install() -> None:
    """Wrap every stage, in this process, for good (the server's process: call once)."""
    gone = missing()
    if gone:
        raise RuntimeError(f"stage_clock: {', '.join(gone)} moved; update bench/stage_clock.py")
    protocol = uvicorn.protocols.http.httptools_impl.HttpToolsProtocol
    headers_complete = protocol.on_headers_complete

    def timed_headers(self):
        self.scope["stage_clock_read"] = time.monotonic()
        return headers_complete(self)

    protocol.on_headers_complete = timed_headers

    middleware = heddle.api.middleware.RequestContextMiddleware
    serve = middleware.__call__

    async def call(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].endswith("/messages"):
            arrived = time.monotonic()

            async def timed_send(message):
                if message["type"] == "http.response.body" and b'"run_id"' in message.get("body", b""):
                    run_id = json.loads(message["body"])["data"]["run_id"]
                    ROWS.append(("posted", run_id, arrived, time.monotonic(), scope.get("stage_clock_read", arrived)))
                await send(message)

            return await serve(self, scope, receive, timed_send)
        if scope["type"] == "http" and scope["path"].endswith("/events"):
            ROWS.append(("stream", scope["path"].rsplit("/", 2)[-2], time.monotonic()))
        return await serve(self, scope, receive, send)

    middleware.__call__ = call

    engine = heddle.loom.engine.RunEngine
    execute = engine.execute

    async def timed_execute(self, run_id, fence):
        ROWS.append(("started", str(run_id), time.monotonic()))
        _RUN.set(str(run_id))
        return await execute(self, run_id, fence)

    engine.execute = timed_execute

    stream = heddle.loom.providers.streaming.stream_openai

    async def timed_stream(client, payload, sink):
        called, first = time.monotonic(), []

        class FirstPiece:  # the provider's sink, with the first piece's time kept
            def __getattr__(self, name):
                return getattr(sink, name)

            async def delta(self, text):
                if not first:
                    first.append(time.monotonic())
                await sink.delta(text)

        try:
            return await stream(client, payload, FirstPiece())
        finally:
            ROWS.append(("model", _RUN.get(), called, first[0] if first else None))

    heddle.loom.providers.openai_compat.stream_openai = timed_stream  # where the provider looks it up

    manager = openai._response.AsyncResponseContextManager
    enter = manager.__aenter__

    async def timed_enter(self):
        response = await enter(self)
        ROWS.append(("headers", _RUN.get(), time.monotonic()))
        return response

    manager.__aenter__ = timed_enter

    request = aiohttp.client_reqrep.ClientRequest
    write_bytes = request.write_bytes

    async def timed_write(self, *args, **kwargs):
        ROWS.append(("body", _RUN.get(), time.monotonic()))
        return await write_bytes(self, *args, **kwargs)

    request.write_bytes = timed_write

    connector = aiohttp.connector.TCPConnector
    connect = connector._create_connection

    async def timed_connect(self, *args, **kwargs):
        began = time.monotonic()
        try:
            return await connect(self, *args, **kwargs)
        finally:
            ROWS.append(("connection", _RUN.get(), began, time.monotonic()))

    connector._create_connection = timed_connect

    sse = heddle.loom.sse.RunEventStream
    frames = sse._frames

    def timed_frames(self, rows, out):
        if not getattr(self, "_clock_sent", False) and any(event.name == DELTA_EVENT for event in rows):
            self._clock_sent = True
            ROWS.append(("sent", str(self.run_id), time.monotonic()))
        return frames(self, rows, out)

    sse._frames = timed_frames


def _dump(*_args) -> None:
    with open(os.environ["STAGES_OUT"], "w") as out:
        for row in ROWS:
            out.write(json.dumps(row) + "\n")
    os._exit(0)


if __name__ == "__main__":
    install()
    signal.signal(signal.SIGTERM, _dump)
    sys.argv = ["heddle", *sys.argv[3:]]  # given `-m heddle serve ...`
    runpy.run_module("heddle", run_name="__main__", alter_sys=True)
