"""Where thread events go: the built-in hub, hosted Pusher (or a compatible service), or nowhere.

Every publisher keeps the order of events per channel and never raises into the caller: the
events describe changes that are already committed, so a failed delivery is logged and
counted, and clients fall back to polling the run.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any, Literal, Protocol, runtime_checkable

import pusher
from pusher.requests import RequestsBackend
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from heddle.config import Settings
from heddle.observability.logging import get_logger
from heddle.realtime import protocol
from heddle.realtime.hub import RealtimeHub

log = get_logger(__name__)

RealtimeMode = Literal["builtin", "pusher", "off"]


@runtime_checkable
class EventPublisher(Protocol):
    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None: ...

    async def aclose(self) -> None: ...


class NullPublisher:
    """Realtime is off: events are dropped on purpose."""

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None:
        return None

    async def aclose(self) -> None:
        return None


class BuiltinPublisher:
    """Publishes to the in-process hub behind the built-in Pusher-protocol server."""

    def __init__(self, hub: RealtimeHub):
        self.hub = hub
        self.sent = 0  # exported as heddle_realtime_publishes_total (observability/metrics.py)
        self.failed = 0

    def listening(self, channel: str) -> bool:
        """Whether any socket of this process's hub subscribes to `channel` (the built-in
        server without a bus has no other): a stream of pieces may skip a channel nobody hears."""
        return self.hub.has_subscribers(channel)

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None:
        try:
            await self.hub.publish(channel, event, data)
            self.sent += 1
        except Exception as exc:
            self.failed += 1
            log.warning("realtime_publish_failed", channel=channel, event_name=event, error=type(exc).__name__,
                        detail=str(exc)[:200])

    async def aclose(self) -> None:
        return None


class RetryingRequestsBackend(RequestsBackend):
    """The library's default `requests` backend, with urllib3 retrying connection errors and 5xx
    answers (`backend=` is the library's extension point for the HTTP layer)."""

    def __init__(self, client: Any, retries: int = 2, **options: Any):
        super().__init__(client, **options)
        retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=0.2,
                      status_forcelist=(500, 502, 503, 504), allowed_methods=frozenset({"POST"}),
                      raise_on_status=False)
        self.session.mount(f"{client.scheme}://", HTTPAdapter(max_retries=retry))


class PusherPublisher:
    """Publishes through the official `pusher` library's HTTP Events API.

    The library is synchronous, so each `trigger` runs in a worker thread. Events go to one of
    `workers` ordered queues chosen by channel, so one channel's events are sent one at a time
    and in order while different channels proceed in parallel. A full queue drops the event
    (counted) instead of growing without bound. Connection errors and 5xx answers are retried
    `retries` times by urllib3; a retried event may arrive twice (each event is a full
    snapshot, so a duplicate is harmless).
    """

    def __init__(self, app_id: str, key: str, secret: str, cluster: str | None = None, host: str | None = None,
                 port: int | None = None, ssl: bool = True, timeout: float = 5.0, *, workers: int = 4,
                 max_pending: int = 10_000, retries: int = 2, drain_timeout: float = 10.0):
        if workers < 1 or max_pending < workers or retries < 0:
            raise ValueError("workers >= 1, max_pending >= workers and retries >= 0 are required")
        self._clients = [self._make_client(app_id, key, secret, cluster, host, port, ssl, timeout, retries)
                         for _ in range(workers)]
        self._queue_size = max_pending // workers
        self._queues: list[asyncio.Queue[tuple[str, str, str] | None]] = []
        self._workers: list[asyncio.Task[None]] = []
        self._closed = False
        self.drain_timeout = drain_timeout
        self.sent = 0
        self.failed = 0  # rejected by the API, unreachable, or not encodable
        self.dropped = 0  # queue full, or published after aclose()

    @staticmethod
    def _make_client(app_id, key, secret, cluster, host, port, ssl, timeout, retries) -> pusher.Pusher:
        return pusher.Pusher(app_id=app_id, key=key, secret=secret, cluster=cluster, host=host, port=port,
                             ssl=ssl, timeout=timeout, backend=RetryingRequestsBackend, retries=retries)

    def stats(self) -> dict[str, int]:
        return {"sent": self.sent, "failed": self.failed, "dropped": self.dropped,
                "pending": sum(q.qsize() for q in self._queues)}

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None:
        if self._closed:
            self.dropped += 1
            log.warning("realtime_publish_after_close", channel=channel, event_name=event)
            return
        try:
            if not isinstance(channel, str) or not isinstance(event, str):
                raise TypeError("channel and event must be strings")
            payload = protocol.encode_data(data)  # a snapshot: later changes to `data` don't leak in
        except (TypeError, ValueError) as exc:
            self.failed += 1
            log.warning("realtime_publish_failed", channel=channel, event_name=event, error=type(exc).__name__)
            return
        self._start()
        queue = self._queues[zlib.crc32(channel.encode("utf-8", "surrogatepass")) % len(self._queues)]
        try:
            queue.put_nowait((channel, event, payload))
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("realtime_publish_dropped", channel=channel, event_name=event, reason="queue full")

    def _start(self) -> None:
        if self._workers:
            return
        for i, client in enumerate(self._clients):
            queue: asyncio.Queue[tuple[str, str, str] | None] = asyncio.Queue(self._queue_size)
            self._queues.append(queue)
            self._workers.append(asyncio.create_task(self._work(client, queue), name=f"pusher-publisher-{i}"))

    async def _work(self, client: pusher.Pusher, queue: asyncio.Queue[tuple[str, str, str] | None]) -> None:
        while (item := await queue.get()) is not None:
            channel, event, payload = item
            try:
                await asyncio.to_thread(client.trigger, channel, event, payload)
                self.sent += 1
            except Exception as exc:
                self.failed += 1
                log.warning("realtime_publish_failed", channel=channel, event_name=event,
                            error=type(exc).__name__, detail=str(exc)[:200])
            finally:
                queue.task_done()
        queue.task_done()

    async def flush(self) -> None:
        """Wait until every queued event was sent or failed."""
        await asyncio.gather(*(queue.join() for queue in self._queues))

    async def aclose(self) -> None:
        """Send what is queued (up to `drain_timeout` seconds), then stop the workers."""
        if self._closed:
            return
        self._closed = True
        if not self._workers:
            return
        try:
            await asyncio.wait_for(self.flush(), self.drain_timeout)
        except TimeoutError:
            left = sum(q.qsize() for q in self._queues)
            self.dropped += left
            log.warning("realtime_publish_drain_timeout", dropped=left)
            for worker in self._workers:
                worker.cancel()
        else:
            for queue in self._queues:
                queue.put_nowait(None)
        await asyncio.gather(*self._workers, return_exceptions=True)


def build_publisher(mode: RealtimeMode, hub: RealtimeHub | None, settings: Settings) -> EventPublisher:
    """The publisher for `HEDDLE_REALTIME`; raises ValueError for a mode it cannot build."""
    if mode == "builtin":
        if hub is None:
            raise ValueError("realtime mode 'builtin' needs the RealtimeHub")
        return BuiltinPublisher(hub)
    if mode == "pusher":
        missing = [f"HEDDLE_{name.upper()}" for name in ("pusher_app_id", "pusher_key", "pusher_secret")
                   if not getattr(settings, name)]
        if missing:
            raise ValueError(f"HEDDLE_REALTIME=pusher needs {', '.join(missing)}")
        return PusherPublisher(settings.pusher_app_id, settings.pusher_key, settings.pusher_secret,
                               cluster=settings.pusher_cluster or None, host=settings.pusher_host or None,
                               port=settings.pusher_port, ssl=settings.pusher_ssl)
    if mode == "off":
        return NullPublisher()
    raise ValueError(f"unknown realtime mode {mode!r}; expected builtin, pusher or off")
