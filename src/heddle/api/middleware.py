"""Pure-ASGI middleware around every request.

Assigns the request id (returned as `Request-Id`), enforces the body size limit (413) and the
JSON content type (415), and, once the response is sent, records metrics and queues the
request-log row for /v1 calls. Handlers publish who called through `scope["state"]`.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable

import structlog
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heddle.errors import HeddleError
from heddle.ids import parse_uuid
from heddle.observability.metrics import Metrics
from heddle.observability.request_log import LoggedRequest, RequestLogWriter

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_BODY_METHODS = {"POST", "PUT", "PATCH"}
# pusher-js posts channel authorization form-encoded.
FORM_PATHS = {"/v1/loom/realtime/auth"}


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", ()):
        if k == name:
            return v.decode("latin-1")
    return None


class _BodyTooLarge(StarletteHTTPException):
    """Raised from `receive`; an HTTPException so FastAPI's body parsing re-raises it as is."""

    def __init__(self, limit: int):
        super().__init__(413, f"The request body exceeds {limit} bytes.")


async def _send_error(send: Send, err: HeddleError, request_id: str) -> None:
    body = json.dumps(err.envelope()).encode()
    await send({"type": "http.response.start", "status": err.status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"request-id", request_id.encode()),
    ]})
    await send({"type": "http.response.body", "body": body})


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, metrics: Metrics,
                 request_log: Callable[[], RequestLogWriter | None]):
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.request_log = request_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        incoming = _header(scope, b"request-id")
        request_id = incoming if incoming and _REQUEST_ID.match(incoming) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        method, path = scope["method"], scope["path"]
        status_holder: dict = {"status": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                status_holder["started"] = True
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"request-id"]
                headers.append((b"request-id", request_id.encode()))
                message["headers"] = headers
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                # Latency ends when the response is sent, not after background tasks (Loom's
                # effects run after the 202 in this same call).
                status_holder["sent_at"] = time.perf_counter()
            await send(message)

        try:
            refusal = self._refuse(scope, method, path)
            if refusal is not None:
                await _send_error(send_wrapper, refusal, request_id)
                return
            await self.app(scope, self._limited(receive), send_wrapper)
        except _BodyTooLarge:
            if status_holder.get("started"):
                raise
            await _send_error(send_wrapper, HeddleError("payload_too_large", self._too_large()), request_id)
        finally:
            self._record(scope, state, method, path, status_holder["status"], request_id, started,
                         status_holder.get("sent_at"))

    def _too_large(self) -> str:
        return f"The request body exceeds {self.max_body_bytes} bytes."

    def _refuse(self, scope: Scope, method: str, path: str) -> HeddleError | None:
        length = _header(scope, b"content-length")
        if length is not None:
            if not length.isdigit():
                return HeddleError("invalid_request", "Content-Length is not a number.")
            if int(length) > self.max_body_bytes:
                return HeddleError("payload_too_large", self._too_large())
        has_body = (length is not None and int(length) > 0) or _header(scope, b"transfer-encoding")
        if method in _BODY_METHODS and has_body:
            ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
            allowed = {"application/json"}
            if path in FORM_PATHS:
                allowed.add("application/x-www-form-urlencoded")
            if ctype not in allowed:
                return HeddleError(
                    "unsupported_media_type",
                    f"Content-Type must be {' or '.join(sorted(allowed))}, not {ctype or 'missing'}.",
                )
        return None

    def _limited(self, receive: Receive) -> Receive:
        seen = 0
        limit = self.max_body_bytes

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _BodyTooLarge(limit)
            return message

        return limited

    def _record(self, scope: Scope, state: dict, method: str, path: str, status: int,
                request_id: str, started: float, sent_at: float | None = None) -> None:
        elapsed = (sent_at or time.perf_counter()) - started
        route = scope.get("route")
        route_path = getattr(route, "path", None) or ("unmatched" if status == 404 else path)
        self.metrics.requests.labels(method, route_path, str(status)).inc()
        self.metrics.latency.labels(method, route_path).observe(elapsed)
        writer = self.request_log()
        if writer is None or not path.startswith("/v1/"):
            return
        path = state.get("log_path", path)  # a handler that erased what the path names (loom/erasure.py)
        run_header = _header(scope, b"service-run")
        writer.submit(LoggedRequest(
            request_id=request_id, method=method, path=path, status=status,
            latency_ms=elapsed * 1000, workspace_id=state.get("workspace_id"),
            key_id=state.get("key_id"), auth_mode=state.get("auth_mode"),
            run_id=parse_uuid(run_header) if run_header else None,
        ))
