"""The worker's own small HTTP server: `/healthz`, `/readyz` and Prometheus `/metrics`.

A worker serves no API; this is for the orchestrator's probes and the scraper. Starlette comes
with FastAPI already; the container itself stays free of web frameworks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from heddle import __version__

if TYPE_CHECKING:
    from heddle.worker.run_worker import RunWorker


def health_app(worker: RunWorker) -> Starlette:
    async def healthz(_request: Request) -> JSONResponse:
        """Live while the procrastinate worker loop runs (503 while starting or stopping)."""
        ok = worker.running
        return JSONResponse({"status": "success" if ok else "error",
                             "data": {"ok": ok, "role": "worker", "version": __version__,
                                      "owner": worker.owner, "concurrency": worker.concurrency}},
                            status_code=200 if ok else 503)

    async def readyz(_request: Request) -> JSONResponse:
        try:
            async with worker.container.db.session() as session:
                await session.execute(text("SELECT 1"))
            depth = await worker.metrics.refresh()
        except Exception as exc:
            return JSONResponse({"status": "error", "error": {
                "code": "service_unavailable", "message": f"database not ready: {type(exc).__name__}",
                "details": {}}}, status_code=503)
        return JSONResponse({"status": "success", "data": {"ok": worker.running, "database": "ok",
                                                           "queue": depth}},
                            status_code=200 if worker.running else 503)

    async def metrics(_request: Request) -> Response:
        try:
            await worker.metrics.refresh()
        except Exception:  # still export the rest; the depth gauge keeps its last value
            pass
        return Response(generate_latest(worker.container.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return Starlette(routes=[Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics)])
