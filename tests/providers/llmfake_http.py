"""Shared pieces of the fake model APIs: a uvicorn server on a loopback port in a background
thread, and a thread-safe script of what the next requests should get (a reply, an HTTP
failure, a slow answer or a malformed body)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from support.net import wait_started


@dataclass(frozen=True)
class Reply:
    """What the fake model answers. `arguments_raw` overrides the JSON of every tool call."""

    text: str | None = None
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    arguments_raw: str | None = None
    omit_usage: bool = False
    chunk_delay: float = 0.0  # streaming: seconds between events
    break_after: int | None = None  # streaming: drop the connection after this many events
    end_after: int | None = None  # streaming: end the body cleanly after this many events
    stop_reason: str | None = None  # overrides the reply's stop reason (e.g. Anthropic "max_tokens")


def sse_response(events, reply: Reply):
    """Server-Sent Events as the model APIs stream them: `event:` (when named) and `data:` lines.

    `events` yields (event name or None, data text); `reply.chunk_delay` paces them,
    `reply.break_after` cuts the connection mid-stream and `reply.end_after` ends the body
    cleanly, early (no terminal event: what a proxy that gives up looks like).
    """
    from starlette.responses import StreamingResponse

    async def body():
        for index, (name, data) in enumerate(events):
            if reply.break_after is not None and index >= reply.break_after:
                raise ConnectionResetError("the fake model dropped the stream on purpose")
            if reply.end_after is not None and index >= reply.end_after:
                return
            if index and reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)
            yield (f"event: {name}\n" if name else "") + f"data: {data}\n\n"

    return StreamingResponse(body(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


def split_words(text: str | None) -> list[str]:
    """Text cut before each word (whitespace kept): the pieces join back to the text."""
    import re

    return re.findall(r"\s*\S+|\s+\Z", text) if text else []


@dataclass(frozen=True)
class Failure:
    status: int
    message: str = "failure injected by the test"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Slow:
    """Wait this long before handling the request normally (the client may time out first)."""

    seconds: float


@dataclass(frozen=True)
class RawBody:
    status: int
    body: bytes
    content_type: str


@dataclass
class Recorded:
    headers: dict[str, str]
    body: Any


class Script:
    """Behaviours for the next requests, consumed in order; requests are recorded as they come."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Reply | Failure | Slow | RawBody] = deque()
        self._requests: list[Recorded] = []
        self.generation = 0  # bumped by reset(): a request from an earlier test takes nothing after it

    def push(self, *behaviours: Reply | Failure | Slow | RawBody) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def pop(self, generation: int | None = None) -> Reply | Failure | Slow | RawBody | None:
        with self._lock:
            if generation is not None and generation != self.generation:
                return None
            return self._queue.popleft() if self._queue else None

    def record(self, request: Recorded) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def reset(self) -> None:
        with self._lock:
            self.generation += 1
            self._queue.clear()
            self._requests.clear()


async def read_json(request: Request, script: Script) -> tuple[Any, Reply | Failure | RawBody | None]:
    """Record the request, then play the script up to the first non-`Slow` behaviour."""
    raw = await request.body()
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = None
    script.record(Recorded(headers=dict(request.headers), body=body))
    generation = script.generation
    behaviour = script.pop()
    while isinstance(behaviour, Slow):
        await asyncio.sleep(behaviour.seconds)
        # A client that timed out is gone; once its test is over, the next test's script is not
        # this request's to take.
        behaviour = script.pop(generation)
    return body, behaviour


def raw_response(behaviour: RawBody) -> Response:
    return Response(behaviour.body, status_code=behaviour.status, media_type=behaviour.content_type)


def error_response(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(payload, status_code=status, headers=headers)


def words(text: str | None) -> int:
    return len(text.split()) if text else 0


class Collector:
    """A StreamSink that records what a provider streamed, attempt by attempt: `restart()`
    (before a retry) opens a new list, so `pieces` are those of the attempt that answered."""

    def __init__(self):
        self.attempts: list[list[str]] = [[]]

    async def delta(self, text: str) -> None:
        self.attempts[-1].append(text)

    async def restart(self) -> None:
        self.attempts.append([])

    @property
    def pieces(self) -> list[str]:
        return self.attempts[-1]


class ServerThread:
    """Serve an ASGI app with uvicorn on 127.0.0.1:`port` until `stop()`."""

    def __init__(self, app: Any, port: int):
        self.port = port
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        wait_started(self._server, self._thread, timeout=10)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
