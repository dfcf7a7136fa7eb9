"""A local server for Pusher's HTTP Events API (`POST /apps/{app_id}/events`) that checks every
request the way Pusher does, so the hosted publisher is tested against real signatures.

Pusher's scheme (auth_version 1.0): the query carries `auth_key`, `auth_timestamp`,
`auth_version`, `body_md5` and `auth_signature`, where `auth_signature` is the hex
HMAC-SHA256 under the app secret of `"POST\\n<path>\\n<query without auth_signature, keys sorted,
k=v joined by &>"`, `body_md5` is the hex MD5 of the body and the timestamp is within 600 s.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import time
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

TIMESTAMP_GRACE = 600
MAX_DATA_BYTES = 10_240
_CHANNEL = re.compile(r"[A-Za-z0-9_\-=@,.;]{1,164}")


class PusherEventsAPI:
    def __init__(self, app_id: str, key: str, secret: str):
        self.app_id, self.key, self.secret = app_id, key, secret
        self.events: list[dict[str, Any]] = []
        self.rejected: list[tuple[int, str]] = []
        self.fail_next = 0  # answer this many requests with 503 before accepting
        self.delay = 0.0  # seconds to wait before answering
        self.requests = 0
        self.app = Starlette(routes=[Route("/apps/{app_id}/events", self.events_endpoint, methods=["POST"])])

    def _refuse(self, status: int, message: str) -> PlainTextResponse:
        self.rejected.append((status, message))
        return PlainTextResponse(message, status_code=status)

    async def events_endpoint(self, request: Request):
        self.requests += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if request.path_params["app_id"] != self.app_id:
            return self._refuse(404, "Unknown app")
        body = await request.body()
        problem = self.check_signature(request.method, request.url.path, request.url.query, body)
        if problem:
            return self._refuse(401, problem)
        if self.fail_next > 0:
            self.fail_next -= 1
            return PlainTextResponse("Service unavailable", status_code=503)
        try:
            event = json.loads(body)
            name, channels, data = event["name"], event["channels"], event["data"]
        except (ValueError, KeyError, TypeError):
            return self._refuse(400, "Invalid JSON body")
        if not (isinstance(name, str) and 0 < len(name) <= 200):
            return self._refuse(400, "Invalid event name")
        if not (isinstance(channels, list) and 0 < len(channels) <= 100
                and all(isinstance(c, str) and _CHANNEL.fullmatch(c) for c in channels)):
            return self._refuse(400, "Invalid channels")
        if not isinstance(data, str):
            return self._refuse(400, "data must be a string")
        if len(data.encode()) > MAX_DATA_BYTES:
            return self._refuse(413, "Payload too large")
        self.events.append(event)
        return JSONResponse({})

    def check_signature(self, method: str, path: str, raw_query: str, body: bytes) -> str | None:
        """None when the request is signed correctly; otherwise why not."""
        try:
            pairs = parse_qsl(raw_query, keep_blank_values=True, strict_parsing=True)
        except ValueError:
            return "Malformed query string"
        params = dict(pairs)
        if len(params) != len(pairs):
            return "Repeated query parameter"
        required = {"auth_key", "auth_timestamp", "auth_version", "body_md5", "auth_signature"}
        if not required <= params.keys():
            return f"Missing {', '.join(sorted(required - params.keys()))}"
        if params["auth_key"] != self.key:
            return "Unknown auth_key"
        if params["auth_version"] != "1.0":
            return "Unsupported auth_version"
        if not params["auth_timestamp"].isdigit() or abs(time.time() - int(params["auth_timestamp"])) > \
                TIMESTAMP_GRACE:
            return "Timestamp expired"
        if not hmac.compare_digest(params["body_md5"], hashlib.md5(body).hexdigest()):
            return "body_md5 does not match the body"
        signed = "&".join(f"{k}={v}" for k, v in sorted(params.items()) if k != "auth_signature")
        expected = hmac.new(self.secret.encode(), f"{method}\n{path}\n{signed}".encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, params["auth_signature"]):
            return "Invalid signature"
        return None
