"""A real Heddle server on a loopback port, in a background thread, for HTTP tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx
import uvicorn

from heddle.app import create_app
from heddle.config import Settings
from heddle.serving import QuietServer, listen, uvicorn_options
from support.net import wait_started

T = TypeVar("T")


class LiveServer:
    """Starts `create_app(settings)` under uvicorn; `call()` runs a coroutine on its loop."""

    def __init__(self, **settings: Any):
        # Bound now, on a port the system picks, as `heddle serve` binds before its start-up:
        # nothing else can take the port while the app starts (free_port() left a window).
        self.socket = listen("127.0.0.1", 0)
        self.port = self.socket.getsockname()[1]
        settings.setdefault("log_level", "WARNING")
        settings.setdefault("outbound_allow_private", True)
        # Tests poll and hammer far above a person's rate; the rate-limit tests set their own.
        settings.setdefault("rate_limit_per_key", "off")
        settings.setdefault("rate_limit_per_subject", "off")
        settings.setdefault("rate_limit_auth_failures", "off")  # tests send bad credentials on purpose
        self.settings = Settings(host="127.0.0.1", port=self.port, **settings)
        self.app = create_app(self.settings)
        # The same uvicorn options as `heddle serve` (parser, header cap, WebSocket frame size).
        options = uvicorn_options(self.settings, self.app.state.services.metrics) | {"log_level": "warning"}
        config = uvicorn.Config(self.app, **options)
        self.server = QuietServer(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.base_url = f"http://127.0.0.1:{self.port}"

    @property
    def services(self):
        """The server's `Container` (built when it started)."""
        return self.app.state.services.get()

    def start(self) -> LiveServer:
        self.thread.start()
        wait_started(self.server, self.thread, timeout=120)  # generous: a loaded CI machine starts slowly
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run a coroutine on the server's own event loop (its DB engine lives there)."""
        loop = self.services.loop
        assert loop is not None
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    def flush_request_log(self) -> None:
        self.call(self.services.request_log.flush())

    def client(self, **kwargs: Any) -> httpx.Client:
        kwargs.setdefault("timeout", 10)
        return httpx.Client(base_url=self.base_url, **kwargs)
