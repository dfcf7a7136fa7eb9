"""Where thread events go: the built-in hub, a hosted Pusher-compatible service, or nowhere.

Each publisher keeps the order of events per channel and never raises into the caller: a
failed delivery is logged and counted, and the run it describes carries on.
"""

from __future__ import annotations

import asyncio
from typing import Any

from heddle.observability.logging import get_logger
from heddle.realtime.hub import RealtimeHub

log = get_logger(__name__)


class BuiltinPublisher:
    def __init__(self, hub: RealtimeHub):
        self.hub = hub

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None:
        await self.hub.publish(channel, event, data)

    async def aclose(self) -> None:
        return None


class PusherPublisher:
    """Publishes through the official `pusher` library (Pusher Channels or a compatible server).

    The library is synchronous, so one worker task sends events in order from a queue, each
    `trigger` in a thread; a slow or failing provider never blocks a request or a run.
    """

    def __init__(self, *, app_id: str, key: str, secret: str, cluster: str | None = None,
                 host: str | None = None, port: int | None = None, ssl: bool = True, timeout: float = 5,
                 max_queue: int = 10_000):
        import pusher

        kwargs: dict[str, Any] = {"app_id": app_id, "key": key, "secret": secret, "ssl": ssl, "timeout": timeout}
        if host:
            kwargs["host"] = host
            if port:
                kwargs["port"] = port
        elif cluster:
            kwargs["cluster"] = cluster
        self.client = pusher.Pusher(**kwargs)
        self.queue: asyncio.Queue[tuple[str, str, dict] | None] = asyncio.Queue(max_queue)
        self.failures = 0
        self.sent = 0
        self._worker: asyncio.Task | None = None

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None:
        if self._worker is None:
            self._worker = asyncio.create_task(self._run(), name="pusher-publisher")
        try:
            self.queue.put_nowait((channel, event, data))
        except asyncio.QueueFull:
            self.failures += 1
            log.warning("realtime_publish_dropped", channel=channel, event_name=event)

    async def _run(self) -> None:
        while (item := await self.queue.get()) is not None:
            channel, event, data = item
            try:
                await asyncio.to_thread(self.client.trigger, channel, event, data)
                self.sent += 1
            except Exception as exc:
                self.failures += 1
                log.warning("realtime_publish_failed", channel=channel, event_name=event, error=type(exc).__name__)
            finally:
                self.queue.task_done()

    async def flush(self) -> None:
        if self._worker is not None:
            await self.queue.join()

    async def aclose(self) -> None:
        if self._worker is not None:
            await self.flush()
            self.queue.put_nowait(None)
            await self._worker
