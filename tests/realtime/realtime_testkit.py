"""Test helpers for realtime: a uvicorn server on the test's own event loop, a raw Pusher-protocol
WebSocket client, and an app serving the built-in realtime router."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from typing import Any

import uvicorn
from fastapi import FastAPI
from websockets.asyncio.client import ClientConnection, connect

from heddle.realtime.hub import RealtimeHub
from heddle.realtime.server import build_realtime_router
from support.net import free_port

# A thread id fixed, not random: parameters and test ids built from it must be the same in every
# pytest-xdist worker, or the workers collect different tests.
FIXED_ID = "7d444840-9dc0-11d1-b245-5ffdce74fad2"
FIXED_CHANNEL = f"private-thread-{FIXED_ID}"

APP_KEY = "test-app-key"
APP_SECRET = "test-app-secret-0123456789"


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: it shares the test runner's thread and loop."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


class LoopServer:
    """Serves an ASGI app with uvicorn on a loopback port, inside the running event loop, so a
    test can publish to the hub directly while real sockets talk to the server."""

    def __init__(self, app: Any, *, ws: str = "websockets-sansio", ws_max_size: int = 64 * 1024):
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, ws=ws, ws_max_size=ws_max_size,
                                lifespan="off", log_level="warning", access_log=False,
                                timeout_graceful_shutdown=5)
        self.server = _Server(config)
        self.task: asyncio.Task | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> LoopServer:
        self.task = asyncio.create_task(self.server.serve())
        for _ in range(1000):
            if self.server.started:
                return self
            if self.task.done():
                self.task.result()
                raise RuntimeError("uvicorn stopped during start-up")
            await asyncio.sleep(0.01)
        raise RuntimeError("uvicorn did not start in 10 s")

    async def __aexit__(self, *exc: object) -> None:
        self.server.should_exit = True
        assert self.task is not None
        await asyncio.wait_for(self.task, 15)


class SwappableApp:
    """An ASGI app that forwards to `self.app`, so one server can serve a fresh app per test."""

    def __init__(self) -> None:
        self.app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def realtime_app(hub: RealtimeHub, **router_options: Any) -> FastAPI:
    app = FastAPI()
    app.include_router(build_realtime_router(hub, app_key=APP_KEY, app_secret=APP_SECRET, **router_options))
    return app


def ws_url(port: int, key: str = APP_KEY, query: str = "protocol=7&client=js&version=8.6.0&flash=false") -> str:
    return f"ws://127.0.0.1:{port}/app/{key}" + (f"?{query}" if query else "")


class PusherSocket:
    """A raw Pusher-protocol client over a real WebSocket (the `websockets` library)."""

    def __init__(self, ws: ClientConnection):
        self.ws = ws
        self.socket_id: str = ""
        self.activity_timeout: int = 0

    @classmethod
    async def open(cls, port: int, *, handshake: bool = True, **connect_options: Any) -> PusherSocket:
        sock = cls(await connect(ws_url(port), **connect_options))
        if handshake:
            hello = await sock.recv()
            assert hello["event"] == "pusher:connection_established", hello
            sock.socket_id = hello["data"]["socket_id"]
            sock.activity_timeout = hello["data"]["activity_timeout"]
        return sock

    async def recv(self, timeout: float = 5) -> dict[str, Any]:
        """The next frame, with its `data` string decoded (and checked to be a string)."""
        frame = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        assert isinstance(frame["data"], str), frame
        frame["data"] = json.loads(frame["data"])
        return frame

    async def send(self, event: str, data: Any = None, **extra: Any) -> None:
        await self.ws.send(json.dumps({"event": event, "data": {} if data is None else data, **extra}))

    async def subscribe(self, channel: str, auth: str | None) -> dict[str, Any]:
        await self.send("pusher:subscribe", {"channel": channel, **({"auth": auth} if auth is not None else {})})
        return await self.recv()

    async def closed(self, timeout: float = 5) -> int | None:
        """Wait for the server to close the socket; its close code."""
        await asyncio.wait_for(self.ws.wait_closed(), timeout)
        return self.ws.close_code

    async def close(self) -> None:
        await self.ws.close()


def small_receive_buffer_socket(port: int, rcvbuf: int = 4096) -> socket.socket:
    """A connected TCP socket with a tiny receive buffer, so a client that stops reading pushes
    back on the server quickly."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock
