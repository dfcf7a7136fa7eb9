"""CORS for browsers in direct mode: only origins a workspace allows, never a wildcard.

A preflight carries no credentials, so it is answered for an origin that at least one
workspace allows; the real request is then checked against the token's own workspace
(403 `origin_not_allowed`). Responses to an allowed origin carry
`Access-Control-Allow-Origin: <that origin>` and `Vary: Origin`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from heddle.api.headers import header as _header
from heddle.errors import HeddleError

# DELETE: a widget withdrawing its feedback, or a person deleting a remembered fact.
ALLOW_METHODS = "GET, POST, DELETE, OPTIONS"
ALLOW_HEADERS = "Authorization, Content-Type, Service-Run, Request-Id, Idempotency-Key"
# A browser's retry logic needs to see a replay and how long a 429 asks it to wait.
EXPOSE_HEADERS = "Request-Id, Idempotent-Replayed, Retry-After"
MAX_AGE = "600"


class CorsMiddleware:
    def __init__(self, app: ASGIApp, origin_allowed: Callable[[str], Awaitable[bool]]):
        self.app = app
        self.origin_allowed = origin_allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = _header(scope, b"origin") if scope["type"] == "http" else None
        if origin is None or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        allowed = len(origin) <= 300 and await self.origin_allowed(origin)
        preflight = scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method")
        if preflight:
            await self._preflight(send, origin, allowed)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start" and allowed:
                headers = list(message.get("headers", []))
                headers += [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin"),
                            (b"access-control-expose-headers", EXPOSE_HEADERS.encode())]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_cors)

    async def _preflight(self, send: Send, origin: str, allowed: bool) -> None:
        if not allowed:
            err = HeddleError("origin_not_allowed", f"Origin {origin!r} is not allowed by any workspace.")
            body = json.dumps(err.envelope()).encode()
            await send({"type": "http.response.start", "status": 403, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                (b"vary", b"Origin")]})
            await send({"type": "http.response.body", "body": body})
            return
        await send({"type": "http.response.start", "status": 204, "headers": [
            (b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin"),
            (b"access-control-allow-methods", ALLOW_METHODS.encode()),
            (b"access-control-allow-headers", ALLOW_HEADERS.encode()),
            (b"access-control-max-age", MAX_AGE.encode())]})
        await send({"type": "http.response.body", "body": b""})
