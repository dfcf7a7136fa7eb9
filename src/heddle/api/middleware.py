"""Pure-ASGI middleware around every request.

Assigns the request id (returned as `Request-Id`; a valid incoming `Request-Id` or `X-Request-Id`
is kept), opens the request's server span (observability/tracing.py), enforces the limits of heddle.api.limits
(headers 431, body size 413 and time 408, JSON depth), the JSON content type (415) and the
NUL rule (heddle/text.py: 400 for a U+0000 in the path, query or body), reads
the whole body before the app runs (so no handler holds a database connection while a client
is still sending), and, once the response is sent, records metrics and queues the request-log
row for /v1 calls. Handlers publish who called through `scope["state"]`.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heddle import text
from heddle.api.headers import header as _header
from heddle.api.limits import header_problem, json_too_deep, read_body, replay
from heddle.errors import HeddleError
from heddle.ids import parse_uuid
from heddle.observability import tracing
from heddle.observability.metrics import Metrics
from heddle.observability.request_log import LoggedRequest, RequestLogWriter

UNMATCHED = "unmatched"  # the route label of a request no route handled (or refused before routing)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_access = structlog.get_logger("heddle.access")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_BODY_METHODS = {"POST", "PUT", "PATCH"}
# pusher-js posts channel authorization form-encoded.
FORM_PATHS = {"/v1/loom/realtime/auth"}
# Uploads (loom/attachments/upload.py): multipart, and their body is streamed by the route, not
# read here; a declared Content-Length past the file cap (plus the multipart framing) is still
# refused here, before a byte is read.
STREAMED_UPLOADS = re.compile(r"^/v1/loom/threads/[^/]+/attachments$")
UPLOAD_OVERHEAD_BYTES = 16 * 1024


async def _send_error(send: Send, err: HeddleError, request_id: str, *, close: bool = False) -> None:
    body = json.dumps(err.envelope()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"request-id", request_id.encode())]
    if close:  # the rest of the body was never read: this connection cannot carry another request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": err.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def incoming_request_id(scope: Scope) -> str | None:
    """The caller's request id (`Request-Id`, else `X-Request-Id`) when valid: 1-64 characters
    of letters, digits and `._:-` (a UUID, a W3C trace id, a proxy's hex id all fit). Anything
    else is ignored, so a log line or header never carries what a client smuggled in."""
    for name in (b"request-id", b"x-request-id"):
        value = _header(scope, name)
        if value and _REQUEST_ID.match(value):
            return value
    return None


def _trace_headers(scope: Scope) -> dict[str, str] | None:
    parent = _header(scope, b"traceparent")
    if parent is None:
        return None
    state = _header(scope, b"tracestate")
    return {"traceparent": parent, **({"tracestate": state} if state else {})}


def _has_body(scope: Scope) -> bool:
    length = _header(scope, b"content-length")
    return (length is not None and length != "0") or _header(scope, b"transfer-encoding") is not None


def _is_json(scope: Scope) -> bool:
    return (_header(scope, b"content-type") or "").split(";")[0].strip().lower() == "application/json"


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, metrics: Metrics,
                 request_log: Callable[[], RequestLogWriter | None], max_header_bytes: int = 16 * 1024,
                 max_header_count: int = 100, max_json_depth: int = 64, body_timeout: float = 30.0,
                 access_log: bool = True, max_upload_bytes: int = 10 * 1024 * 1024):
        self.app = app
        self.max_upload_bytes = max_upload_bytes
        self.max_body_bytes = max_body_bytes
        self.max_header_bytes = max_header_bytes
        self.max_header_count = max_header_count
        self.max_json_depth = max_json_depth
        self.body_timeout = body_timeout
        self.access_log = access_log
        self.metrics = metrics
        self.request_log = request_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = incoming_request_id(scope) or uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        method = scope["method"]
        method_label = method if method in _METHODS else "OTHER"
        structlog.contextvars.clear_contextvars()
        status_holder: dict = {"status": 500}
        if not tracing.enabled():  # the common case costs one check, not a span's bookkeeping
            structlog.contextvars.bind_contextvars(request_id=request_id)
            await self._serve(scope, receive, send, state, request_id, started, status_holder)
            return
        # One server span per request, a child of the caller's W3C `traceparent` when it sent one.
        with tracing.span(method_label, {"http.request.method": method_label, "url.path": scope["path"][:200],
                                         "heddle.request_id": request_id}, kind="server",
                          parent_headers=_trace_headers(scope)) as span:
            structlog.contextvars.bind_contextvars(request_id=request_id, trace_id=tracing.current_trace_id())
            await self._serve(scope, receive, send, state, request_id, started, status_holder)
            status = status_holder["status"]
            route = getattr(scope.get("route"), "path", None)
            span.rename(f"{method_label} {route}" if route else method_label)
            span.update({"http.route": route, "http.response.status_code": status})
            if status >= 500:
                span.fail(str(status))

    async def _serve(self, scope: Scope, receive: Receive, send: Send, state: dict, request_id: str,
                     started: float, status_holder: dict) -> None:
        """Run the request through the checks and the app; `status_holder` gets the status sent."""
        method, path = scope["method"], scope["path"]

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
            if method == "POST" and STREAMED_UPLOADS.match(path):
                refusal = self._refuse_upload(scope)
                if refusal is not None:
                    await _send_error(send_wrapper, refusal, request_id, close=True)
                    return
                await self.app(scope, receive, send_wrapper)
                return
            refusal = self._refuse(scope, method, path)
            if refusal is not None:
                await _send_error(send_wrapper, refusal, request_id)
                return
            body = None
            if _has_body(scope):
                try:
                    body = await read_body(receive, limit=self.max_body_bytes, timeout=self.body_timeout)
                except HeddleError as err:
                    await _send_error(send_wrapper, err, request_id, close=True)
                    return
                if body is None:  # the client hung up mid-body: nobody to answer
                    status_holder["status"] = 499
                    return
                if _is_json(scope) and json_too_deep(body, self.max_json_depth):
                    await _send_error(send_wrapper, HeddleError(
                        "json_too_deep", f"The JSON body nests deeper than {self.max_json_depth} levels."),
                        request_id)
                    return
                receive = replay(body, receive)
            # U+0000 anywhere the caller sent text: 400 on either database (heddle/text.py)
            nul = text.refusal(path=path, query_string=scope.get("query_string", b""), body=body,
                               json_body=_is_json(scope))
            if nul is not None:
                await _send_error(send_wrapper, nul, request_id)
                return
            await self.app(scope, receive, send_wrapper)
        finally:
            self._record(scope, state, method, path, status_holder["status"], request_id, started,
                         status_holder.get("sent_at"))

    def _too_large(self) -> str:
        return f"The request body exceeds {self.max_body_bytes} bytes."

    def _refuse_upload(self, scope: Scope) -> HeddleError | None:
        """An upload's head: its headers, its declared length against the file cap, multipart."""
        problem = header_problem(scope.get("headers", []), max_bytes=self.max_header_bytes,
                                 max_count=self.max_header_count)
        if problem is not None:
            return problem
        length = _header(scope, b"content-length")
        if length is not None and not length.isdigit():
            return HeddleError("invalid_request", "Content-Length is not a number.")
        if length is not None and int(length) > self.max_upload_bytes + UPLOAD_OVERHEAD_BYTES:
            return HeddleError("attachment_too_large", f"The upload declares {length} bytes; a file may have at "
                               f"most {self.max_upload_bytes} (HEDDLE_ATTACHMENT_MAX_BYTES).",
                               details={"max_bytes": self.max_upload_bytes})
        ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if ctype != "multipart/form-data":
            return HeddleError("unsupported_media_type",
                               f"An upload's Content-Type must be multipart/form-data, not {ctype or 'missing'}.")
        return None

    def _refuse(self, scope: Scope, method: str, path: str) -> HeddleError | None:
        too_large = header_problem(scope.get("headers", []), max_bytes=self.max_header_bytes,
                                   max_count=self.max_header_count)
        if too_large is not None:
            return too_large
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
            if path in FORM_PATHS or path.startswith("/console/login/"):  # the login page's form
                allowed.add("application/x-www-form-urlencoded")
            if STREAMED_UPLOADS.match(path):  # another method than POST: routed, to be answered 405
                allowed.add("multipart/form-data")
            if ctype not in allowed:
                return HeddleError(
                    "unsupported_media_type",
                    f"Content-Type must be {' or '.join(sorted(allowed))}, not {ctype or 'missing'}.",
                )
        return None

    def _record(self, scope: Scope, state: dict, method: str, path: str, status: int,
                request_id: str, started: float, sent_at: float | None = None) -> None:
        elapsed = (sent_at or time.perf_counter()) - started
        # Labels come from route templates and a fixed set of methods only: a raw path or
        # method as a label would let any client create series without bound.
        route = scope.get("route")
        route_path = getattr(route, "path", None) or UNMATCHED
        method_label = method if method in _METHODS else "OTHER"
        self.metrics.requests.labels(method_label, route_path, str(status)).inc()
        self.metrics.latency.labels(method_label, route_path).observe(elapsed)
        if self.access_log:
            _access.info("request", method=method_label, path=path[:200], route=route_path, status=status,
                         ms=round(elapsed * 1000, 2), workspace_id=state.get("workspace_id"))
        writer = self.request_log()
        # Only calls whose caller was identified are logged: the log serves traces and
        # workspace owners, and an unauthenticated flood must not grow a table. Those calls
        # are still counted in /metrics and in the access log.
        if writer is None or not (path.startswith("/v1/") or path == "/mcp") or state.get("workspace_id") is None:
            return
        path = state.get("log_path", path)  # a handler that erased what the path names (loom/erasure.py)
        run_header = _header(scope, b"service-run")
        writer.submit(LoggedRequest(
            request_id=request_id, method=method, path=path, status=status,
            latency_ms=elapsed * 1000, workspace_id=state.get("workspace_id"),
            key_id=state.get("key_id"), auth_mode=state.get("auth_mode"),
            run_id=parse_uuid(run_header) if run_header else None,
        ))
