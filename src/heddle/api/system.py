"""Operational endpoints outside /v1: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from heddle import __version__, process_services
from heddle.api.envelope import Envelope, ReadModel, error_responses, ok
from heddle.errors import HeddleError
from heddle.observability.metrics import process_metrics

router = APIRouter(tags=["operations"])


@router.get("/", summary="Where to start: the API reference and the OpenAPI document", include_in_schema=False)
async def root():
    return ok({"name": "Heddle", "version": __version__, "docs": "/docs", "redoc": "/redoc",
               "openapi": "/openapi.json", "api": "/v1", "health": "/healthz"})


class Health(ReadModel):
    ok: bool
    version: str | None = None
    database: str | None = None


@router.get("/healthz", summary="Liveness: the process is up", response_model=Envelope[Health],
            response_model_exclude_none=True, responses=error_responses("method_not_allowed"),
            openapi_extra={"security": []})
async def healthz():
    return {"status": "success", "data": {"ok": True, "version": __version__}}


@router.get("/readyz", summary="Readiness: the database answers", response_model=Envelope[Health],
            response_model_exclude_none=True, responses=error_responses("method_not_allowed", "service_unavailable"),
            openapi_extra={"security": []})
async def readyz(request: Request):
    try:
        async with process_services.database(request).session() as session:
            await session.execute(text("SELECT 1"))
    except Exception as exc:
        raise HeddleError("service_unavailable", f"database not ready: {type(exc).__name__}") from exc
    return {"status": "success", "data": {"ok": True, "database": "ok"}}


@router.get("/metrics", summary="Prometheus metrics", include_in_schema=False)
async def metrics(request: Request):
    return Response(generate_latest(process_metrics(request).registry), media_type=CONTENT_TYPE_LATEST)
