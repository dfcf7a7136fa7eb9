"""The FastAPI side of the process's services: the app's lifespan builds the `Container`.

Handlers reach the container through `heddle.api.deps.services(request)`; the container
itself (heddle/container.py) has no FastAPI import and is built the same way by `heddle worker`.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI

from heddle.config import Settings
from heddle.container import Container, build_container
from heddle.loom.stream_limits import StreamLimits
from heddle.observability.logging import get_logger
from heddle.observability.metrics import Metrics
from heddle.realtime.setup import Realtime
from heddle.serving import eager_tasks, settle_heap


class AppServices:
    """What the app needs before start-up (metrics for the middleware, the realtime hub for its
    routes) and the container once the lifespan has built it."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.metrics = Metrics()
        self.realtime = Realtime(settings)
        # Open run event streams per key and subject: sockets of this API process, not of a worker.
        self.streams = StreamLimits(per_key=settings.sse_max_streams_per_key,
                                    per_subject=settings.sse_max_streams_per_subject,
                                    per_address=settings.sse_max_streams_per_address,
                                    total=settings.sse_streams_total(), metrics=self.metrics)
        self.container: Container | None = None
        self.settle_heap = False  # `heddle serve` sets it: serving.settle_heap() after start-up
        self.sqlite_lock: str | None = None  # heddle.db.sqlite_owner

    def get(self) -> Container:
        if self.container is None:
            raise RuntimeError("services not started")
        return self.container

    @asynccontextmanager
    async def lifespan(self, _app: FastAPI):
        from heddle.db import sqlite_owner

        # Before anything touches the file: a second server on it refuses to start.
        self.sqlite_lock = sqlite_owner.hold(self.settings.database_url)
        try:
            self.container = await build_container(self.settings, role="serve", metrics=self.metrics,
                                                   realtime=self.realtime)
            if self.settle_heap:
                get_logger(__name__).info("heap_settled", **settle_heap())
            try:
                with eager_tasks(self.settings.eager_tasks) as started:
                    if self.settings.eager_tasks:  # asked for: say whether this Python has them
                        get_logger(__name__).info("eager_tasks", started=started)
                    yield
            finally:
                await self.container.aclose()
        finally:
            sqlite_owner.release(self.sqlite_lock)
            self.sqlite_lock = None
