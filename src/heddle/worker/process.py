"""The `heddle worker` process: the container, the procrastinate worker and the health server."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import uvicorn

from heddle.config import Settings
from heddle.container import build_container
from heddle.observability.logging import get_logger
from heddle.serving import QuietServer, eager_tasks, settle_heap
from heddle.worker.health import health_app
from heddle.worker.run_worker import RunWorker

log = get_logger(__name__)


class _HealthServer(QuietServer):
    """uvicorn without its own signal handlers: procrastinate's handle SIGTERM/SIGINT and this
    server stops once the worker has shut down gracefully."""

    def capture_signals(self):
        return contextlib.nullcontext()


async def run_worker_process(settings: Settings, *, concurrency: int, health_socket: socket.socket | None,
                             shutdown_grace: float, heartbeat_seconds: float, stalled_seconds: float) -> None:
    container = await build_container(settings, role="worker")
    # start-up's objects, frozen: full collections stop walking them (heddle/serving.py)
    log.info("heap_settled", **settle_heap())
    health: _HealthServer | None = None
    health_task: asyncio.Task | None = None
    try:
        worker = RunWorker(container, concurrency=concurrency, shutdown_grace=shutdown_grace,
                           heartbeat_seconds=heartbeat_seconds, stalled_seconds=stalled_seconds)
        if health_socket is not None:  # bound by the caller, before anything started
            health = _HealthServer(uvicorn.Config(health_app(worker), log_level="warning", access_log=False,
                                                  lifespan="off"))
            health_task = asyncio.create_task(health.serve(sockets=[health_socket]), name="worker-health")
        with eager_tasks(settings.eager_tasks) as started:  # start-up is done
            if settings.eager_tasks:  # asked for: say whether this Python has them
                log.info("eager_tasks", started=started)
            log.info("worker_started", owner=worker.owner, concurrency=concurrency,
                     health_port=health_socket.getsockname()[1] if health_socket else None)
            await worker.run()
            log.info("worker_stopped", owner=worker.owner)
    finally:
        if health is not None and health_task is not None:
            health.should_exit = True
            await asyncio.gather(health_task, return_exceptions=True)
        await container.aclose()
