"""The SDK's httpx2 requests, signed and sent by Heddle's guarded httpx client, within bounds.

One `Bridge` serves one short MCP session (a tool list, or one call). Besides signing and
sending, it keeps the session inside its limits (heddle/outbound/mcp_limits.py): a deadline for
the whole session, bytes read in all (a tool list's, across its pages), and resumptions: a GET
with `Last-Event-ID` is the SDK resuming a request's stream, and each waits its backoff (never
the server's `retry: 0`) and counts against `max_resumptions`.

It also notes what the wire said, for the cause a failure reports: the latest failure and HTTP
refusal of a request that mattered (a POST, or a resumption: the optional GET event stream may
be refused, 405 is allowed by the spec, and says nothing about why a request failed), and for
the session's `tools/call` its status or the failure that kept its answer from arriving
(``sent`` false when no byte left).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable

import anyio
import httpx
import httpx2

from heddle.outbound.exchange import MAX_ERROR_MESSAGE, AttemptFailed, send_failure
from heddle.outbound.mcp_limits import DEADLINE_EXCEEDED, LIST_TOO_LARGE, TOO_MANY_RESUMPTIONS, McpLimits
from heddle.outbound.safe_http import ResponseTooLarge
from heddle.outbound.signing import SIGNATURE_HEADER, UniqueTimestamps, sign

# Dropped on the way from the SDK's client to Heddle's: the outbound client sets its own.
_HOP_HEADERS = {b"host", b"content-length", b"user-agent", b"accept-encoding", b"connection", b"transfer-encoding"}


def jsonrpc_method(body: bytes) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    return message.get("method") if isinstance(message, dict) else None


def describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    if inner:
        return describe(inner[0])
    return (str(exc) or type(exc).__name__)[:MAX_ERROR_MESSAGE]


class Bridge(httpx2.AsyncBaseTransport):
    def __init__(
        self,
        http: httpx.AsyncClient,
        secret: str,
        timestamps: UniqueTimestamps,
        limits: McpLimits,
        *,
        max_bytes: int = 0,
        on_limit: Callable[[str], None] = lambda code: None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._http, self._secret, self._timestamps = http, secret, timestamps
        self.limits, self._clock, self._on_limit = limits, clock, on_limit
        self.deadline = clock() + limits.deadline_seconds
        self.max_bytes = max_bytes  # 0 = only the outbound client's cap per response
        self.bytes_read = 0
        self.resumptions = 0
        self.failure: AttemptFailed | None = None  # the latest failure of a request that mattered
        self.refused: int | None = None  # the latest HTTP status >= 400 of one
        self.call_failure: AttemptFailed | None = None
        self.call_status: int | None = None
        self.limit: str | None = None  # the code of the bound that stopped the session

    def remaining(self) -> float:
        return max(0.0, self.deadline - self._clock())

    def _failed(self, failure: AttemptFailed, is_call: bool, counts: bool = True) -> AttemptFailed:
        if counts:
            self.failure = failure
        if is_call:
            self.call_failure = failure
        return failure

    def over(self, code: str, message: str, *, is_call: bool = False, sent: bool = True) -> AttemptFailed:
        """A bound stopped the session: noted once (metric), reported as the session's failure."""
        if self.limit is None:
            self.limit = code
            self._on_limit(code)
        return self._failed(AttemptFailed(code, message, sent=sent, retryable=False), is_call)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        is_call = request.method == "POST" and jsonrpc_method(body) == "tools/call"
        resuming = request.method == "GET" and "last-event-id" in request.headers
        is_call = is_call or (resuming and self.call_status is not None)  # resuming the call's stream
        counts = request.method != "GET" or resuming  # the optional listen stream does not
        if resuming:
            await self._before_resumption(is_call)
        if self.remaining() <= 0:
            failure = self.over(DEADLINE_EXCEEDED, f"the MCP session took longer than "
                                f"{self.limits.deadline_seconds:g} s", sent=False)
            raise httpx2.ConnectError(failure.error.message)
        headers = [(k, v) for k, v in request.headers.raw if k.lower() not in _HOP_HEADERS]
        try:
            outgoing = self._http.build_request(request.method, str(request.url), content=body or None, headers=headers)
            target = outgoing.url.raw_path.decode("ascii")
            t = self._timestamps.next(request.method, target, body)
            outgoing.headers[SIGNATURE_HEADER] = sign(self._secret, request.method, target, body, t)
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            self._failed(AttemptFailed("invalid_url", str(exc), sent=False, retryable=False), is_call, counts)
            raise httpx2.ConnectError(str(exc)) from None
        try:
            response = await self._http.send(outgoing, stream=True, follow_redirects=False)
        except httpx.TransportError as exc:
            failure = self._failed(send_failure(exc), is_call, counts)
            kind = httpx2.ConnectError if not failure.sent else httpx2.ReadError
            raise kind(failure.error.message) from None
        if is_call and request.method == "POST":
            self.call_status = response.status_code
        if response.status_code >= 400 and counts:
            self.refused = response.status_code
        return httpx2.Response(
            response.status_code,
            headers=response.headers.raw,
            stream=_Body(response, self, is_call, counts),
            request=request,
        )

    async def _before_resumption(self, is_call: bool) -> None:
        """Count a resumption and wait its backoff (within the deadline), or refuse it."""
        self.resumptions += 1
        if self.resumptions > self.limits.max_resumptions:
            failure = self.over(TOO_MANY_RESUMPTIONS, f"the server ended its stream {self.resumptions} times "
                                f"without an answer (at most {self.limits.max_resumptions} resumptions)",
                                is_call=is_call)
            raise httpx2.ReadError(failure.error.message)
        wait = self.limits.backoff(self.resumptions)
        if wait >= self.remaining():
            failure = self.over(DEADLINE_EXCEEDED, f"the MCP session took longer than "
                                f"{self.limits.deadline_seconds:g} s", is_call=is_call)
            raise httpx2.ReadError(failure.error.message)
        await anyio.sleep(wait)

    def count(self, size: int, is_call: bool) -> None:
        self.bytes_read += size
        if self.max_bytes and self.bytes_read > self.max_bytes:
            failure = self.over(LIST_TOO_LARGE, f"the server's tool list is larger than {self.max_bytes} bytes",
                                is_call=is_call)
            raise httpx2.ReadError(failure.error.message)


class _Body(httpx2.AsyncByteStream):
    """A response body read through the guarded client; a failure mid-way is noted (sent)."""

    def __init__(self, response: httpx.Response, bridge: Bridge, is_call: bool, counts: bool):
        self._response, self._bridge, self._is_call, self._counts = response, bridge, is_call, counts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                self._bridge.count(len(chunk), self._is_call)
                yield chunk
        except httpx.RequestError as exc:
            code = (
                "timeout"
                if isinstance(exc, httpx.TimeoutException)
                else "response_too_large"
                if isinstance(exc, ResponseTooLarge)
                else "connection_lost"
            )
            failure = AttemptFailed(code, f"reading the response: {describe(exc)}", sent=True)
            self._bridge._failed(failure, self._is_call, self._counts)
            raise httpx2.ReadError(failure.error.message) from None

    async def aclose(self) -> None:
        await self._response.aclose()
