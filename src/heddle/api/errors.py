"""Exception handlers: every error, including the framework's own, leaves as the envelope."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from heddle.errors import HeddleError
from heddle.observability.logging import get_logger

log = get_logger(__name__)

_STATUS_CODES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large",
                 415: "unsupported_media_type", 401: "unauthorized", 403: "forbidden"}


def _response(request: Request, err: HeddleError) -> JSONResponse:
    headers = dict(err.headers or {})
    request_id = getattr(request.state, "request_id", None)
    if request_id:
        headers["Request-Id"] = request_id
    return JSONResponse(err.envelope(), status_code=err.status, headers=headers)


def _field_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    details = []
    for e in exc.errors():
        loc = list(e.get("loc", ()))
        where = str(loc.pop(0)) if loc else "body"
        details.append({
            "location": where,
            "field": ".".join(str(p) for p in loc) or None,
            "message": e.get("msg", "invalid"),
            "type": e.get("type"),
        })
    return details


def invalid_request(exc: RequestValidationError) -> HeddleError:
    """400 invalid_request naming each bad field (also the /mcp tools' argument errors)."""
    details = _field_errors(exc)
    if any(d["type"] == "json_invalid" for d in details):
        message = "The request body is not valid JSON."
    else:
        fields = ", ".join(sorted({d["field"] or d["location"] for d in details}))
        message = f"Invalid request: check {fields}."
    return HeddleError("invalid_request", message, details=details)


def allowed_methods(request: Request) -> str:
    """Every method some route serves at this path (Starlette's 405 names only the first route's).

    Probes each method against the router (FastAPI nests included routers, so the routes
    themselves are not a flat list to read).
    """
    methods = {"OPTIONS"}
    routes = request.app.router.routes
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        probe = {**request.scope, "method": method}
        if any(route.matches(probe)[0] is Match.FULL for route in routes):
            methods.add(method)
    return ", ".join(sorted(methods))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(HeddleError)
    async def _heddle(request: Request, exc: HeddleError):
        return _response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        return _response(request, invalid_request(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        code = _STATUS_CODES.get(exc.status_code)
        if code is None:
            code = "invalid_request" if exc.status_code < 500 else "internal_error"
        message = exc.detail if isinstance(exc.detail, str) and exc.status_code != 404 else None
        if exc.status_code == 404:
            message = f"No route {request.method} {request.url.path}."
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            allow = allowed_methods(request)
            if request.method == "OPTIONS":  # not a CORS preflight (the CORS middleware answers those)
                return Response(status_code=204, headers={"Allow": allow})
            message = f"Method {request.method} is not allowed on {request.url.path}."
            headers = {**(headers or {}), "Allow": allow}
        err = HeddleError(code, message, status=exc.status_code, headers=headers)
        return _response(request, err)

    # Starlette answers an unhandled exception with this handler and then raises it again, and
    # uvicorn closes the connection when an exception leaves the app: these answers say so
    # (`Connection: close`), or a keep-alive client's next request would meet a closed socket.
    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        if database_unreachable(exc):  # a dependency, not a bug: the caller may retry
            log.warning("database_unavailable", path=request.url.path, error=type(exc).__name__,
                        detail=str(exc)[:200], request_id=getattr(request.state, "request_id", None))
            return _response(request, HeddleError(
                "service_unavailable", "The database is not accepting connections right now; retry shortly.",
                headers={"Retry-After": "1", "Connection": "close"}))
        log.exception("unhandled_error", path=request.url.path,
                      request_id=getattr(request.state, "request_id", None))
        return _response(request, HeddleError("internal_error", headers={"Connection": "close"}))


def database_unreachable(exc: BaseException) -> bool:
    """No connection could be had: the pool's wait ran out, or the server refused or dropped
    the connection (too many clients, restarting) before or while a statement ran."""
    if isinstance(exc, sa_exc.TimeoutError):
        return True
    return isinstance(exc, sa_exc.DBAPIError) and (exc.statement is None or exc.connection_invalidated)
