"""How many event streams (`GET /v1/loom/runs/{id}/events`, and `GET /mcp`) one key, one subject,
one address and the whole process hold.

A stream is cheap per request but lives for minutes, wakes at every poll and holds a socket: one
key opened 3,000 idle streams, which cost 0.8 CPU-s per second, and another workspace's
`GET /v1/loom/runs/{id}` went from p50 3 ms to 378 ms. The request rate limits cannot see that
(3,000 requests spread over a minute are within them), so streams are counted while open: past
`HEDDLE_SSE_MAX_STREAMS_PER_KEY` for one API key (its secret, or the session tokens it issued) or
`HEDDLE_SSE_MAX_STREAMS_PER_SUBJECT` for one subject of a workspace, a new stream is 429
`rate_limited` with `details.scope` `streams_per_key` or `streams_per_subject` until one ends.

Issue 40 added `GET /mcp` (the MCP endpoint's optional event stream), counted here with the run
event streams, and two more caps: `HEDDLE_SSE_MAX_STREAMS_PER_ADDRESS` for one client address
(`streams_per_address`) and `HEDDLE_SSE_MAX_STREAMS_TOTAL` for the process
(`streams_total`; by default half of `HEDDLE_MAX_CONNECTIONS`), so that streams, which each hold a
connection for minutes, never take the connections other workspaces' requests need: 300 streams
of one key made another workspace's requests 503 with `HEDDLE_MAX_CONNECTIONS=300`.

Counted per process, in memory (an open stream is a socket of this process): with N API
processes behind a load balancer, a key may hold up to N times the cap.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.observability.metrics import Metrics

RETRY_AFTER = 5  # seconds: streams end when their run does, or when their client leaves


class StreamLimits:
    def __init__(self, *, per_key: int, per_subject: int, per_address: int = 0, total: int = 0,
                 metrics: Metrics | None = None):
        self.per_key = per_key  # 0 = no cap
        self.per_subject = per_subject
        self.per_address = per_address
        self.total = total
        self.by_key: Counter[str] = Counter()
        self.by_subject: Counter[tuple[str, str]] = Counter()
        self.by_address: Counter[str] = Counter()
        self.open = 0
        self.metrics = metrics

    def acquire(self, auth: AuthContext, address: str | None = None) -> Callable[[], None]:
        """Count a stream in for its key, subject and client address; the function that counts it
        out (once).

        Raises 429 `rate_limited` when any is at its cap, or the process is."""
        key = auth.key_id
        subject = (auth.workspace_id, auth.subject) if auth.subject else None
        if self.total and self.open >= self.total:
            raise self._refusal("streams_total", f"this server holds {self.total} open event streams")
        if self.per_key and self.by_key[key] >= self.per_key:
            raise self._refusal("streams_per_key", f"this API key holds {self.per_key} open event streams")
        if subject is not None and self.per_subject and self.by_subject[subject] >= self.per_subject:
            raise self._refusal("streams_per_subject", f"this subject holds {self.per_subject} open event streams")
        if address is not None and self.per_address and self.by_address[address] >= self.per_address:
            raise self._refusal("streams_per_address", f"this address holds {self.per_address} open event streams")
        self.by_key[key] += 1
        if subject is not None:
            self.by_subject[subject] += 1
        if address is not None:
            self.by_address[address] += 1
        self.open += 1
        self._gauge(1)
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            _decrement(self.by_key, key)
            if subject is not None:
                _decrement(self.by_subject, subject)
            if address is not None:
                _decrement(self.by_address, address)
            self.open -= 1
            self._gauge(-1)

        return release

    def _gauge(self, change: int) -> None:
        if self.metrics is not None:
            self.metrics.streams_open.inc(change)

    def _refusal(self, scope: str, why: str) -> HeddleError:
        if self.metrics is not None:
            self.metrics.streams_refused.labels(scope).inc()
        return HeddleError("rate_limited", f"Too many open event streams: {why}. Close one, or retry after "
                           f"{RETRY_AFTER} s.", details={"scope": scope, "retry_after": RETRY_AFTER},
                           headers={"Retry-After": str(RETRY_AFTER)})


def _decrement(counter: Counter, key) -> None:
    left = counter[key] - 1
    if left > 0:
        counter[key] = left
    else:
        del counter[key]


class CountedStreamingResponse(StreamingResponse):
    """A streaming response that counts its stream out when it ends, however it ends (the run's
    last event, the client leaving, or the server stopping): an async generator abandoned at a
    `yield` runs its `finally` only when the garbage collector gets to it, so the count is
    released here instead."""

    def __init__(self, *args, release: Callable[[], None], **kwargs):
        super().__init__(*args, **kwargs)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()
