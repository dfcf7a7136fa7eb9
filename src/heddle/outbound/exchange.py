"""One signed POST to the caller's backend, and what is known about its fate.

Tool calls and mint requests share this: the request is built first, then signed over the
exact bytes and request target that go on the wire. A failure is reported with ``sent``:
False only when no byte of the request can have left (refused destination, connect error or
timeout, pool timeout), which is what makes an at-most-once call safe to call failed.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from heddle.outbound.safe_http import DestinationRefused, ResponseRefused, ResponseTooLarge
from heddle.outbound.signing import SIGNATURE_HEADER, UNIQUE_TIMESTAMPS, UniqueTimestamps, sign

MAX_ERROR_MESSAGE = 300


@dataclass(frozen=True)
class OutboundError:
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message[:MAX_ERROR_MESSAGE]}


class AttemptFailed(Exception):
    """No HTTP response was received."""

    def __init__(self, code: str, message: str, *, sent: bool, retryable: bool = True):
        super().__init__(f"{code}: {message}")
        self.error = OutboundError(code, message)
        self.sent = sent
        self.retryable = retryable


@dataclass
class Reply:
    """An HTTP response; ``body_error`` is set when its body could not be accepted."""

    status: int
    headers: httpx.Headers
    body: bytes
    body_error: OutboundError | None = None


@dataclass
class AttemptLog:
    """One dict per HTTP attempt, for the run's trace."""

    entries: list[dict[str, Any]] = field(default_factory=list)

    def start(self) -> tuple[dict[str, Any], float]:
        entry: dict[str, Any] = {
            "n": len(self.entries) + 1,
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"),
        }
        self.entries.append(entry)
        return entry, time.monotonic()

    @staticmethod
    def finish(entry: dict[str, Any], started: float, *, http_status: int | None = None,
               error: OutboundError | None = None) -> None:
        entry["duration_ms"] = round((time.monotonic() - started) * 1000)
        if http_status is not None:
            entry["http_status"] = http_status
        if error is not None:
            entry["error"] = error.as_dict()


def encode_json(payload: Any) -> bytes:
    """Compact UTF-8 JSON; NaN and Infinity are refused (they are not JSON)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_json_object(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON object, or None when it is not one."""
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


async def post_signed(client: httpx.AsyncClient, url: str, *, body: bytes, request_secret: str,
                      headers: dict[str, str],
                      timestamps: UniqueTimestamps = UNIQUE_TIMESTAMPS) -> Reply:
    """POST ``body`` to ``url`` with a `Service-Signature`; never follows a redirect."""
    try:
        request = client.build_request("POST", url, content=body, headers=headers)
        target = request.url.raw_path.decode("ascii")
        t = timestamps.next("POST", target, body)
        request.headers[SIGNATURE_HEADER] = sign(request_secret, "POST", target, body, t)
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise AttemptFailed("invalid_url", f"cannot build the request: {exc}", sent=False,
                            retryable=False) from None
    try:
        response = await client.send(request, stream=True, follow_redirects=False)
    except httpx.TransportError as exc:
        raise send_failure(exc) from None
    try:
        data = await response.aread()
        return Reply(response.status_code, response.headers, data)
    except ResponseTooLarge as exc:
        return Reply(response.status_code, response.headers, b"",
                     OutboundError("response_too_large", str(exc)))
    except ResponseRefused as exc:
        return Reply(response.status_code, response.headers, b"",
                     OutboundError("invalid_response", str(exc)))
    except httpx.TimeoutException as exc:
        raise AttemptFailed("timeout", f"reading the response: {_describe(exc)}", sent=True) from None
    except httpx.TransportError as exc:
        raise AttemptFailed("connection_lost", f"reading the response: {_describe(exc)}",
                            sent=True) from None
    finally:
        await response.aclose()


def send_failure(exc: httpx.TransportError) -> AttemptFailed:
    """What a transport error while sending a request says about its fate: ``sent`` is False
    only when no byte can have left (refused destination, connect error or timeout, pool
    timeout). The guarded transport (safe_http) raises these; MCP calls share the judgement."""
    if isinstance(exc, DestinationRefused):
        return AttemptFailed("destination_refused", str(exc), sent=False, retryable=False)
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return AttemptFailed("connect_timeout", _describe(exc), sent=False)
    if isinstance(exc, httpx.ConnectError):
        return AttemptFailed("connect_failed", _describe(exc), sent=False)
    if isinstance(exc, httpx.UnsupportedProtocol):
        return AttemptFailed("invalid_url", _describe(exc), sent=False, retryable=False)
    if isinstance(exc, httpx.TimeoutException):
        return AttemptFailed("timeout", _describe(exc), sent=True)
    return AttemptFailed("connection_lost", _describe(exc), sent=True)


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def host_error_message(reply: Reply) -> str:
    """A short description of a non-2xx answer, with the host's own message when it gave one."""
    text = f"the host answered HTTP {reply.status}"
    doc = decode_json_object(reply.body) if reply.body else None
    if doc is not None:
        error = doc.get("error")
        message = error.get("message") if isinstance(error, dict) else doc.get("message")
        if isinstance(message, str) and message.strip():
            text += f": {message.strip()[:200]}"
    return text
