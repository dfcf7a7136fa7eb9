"""The in-process fan-out behind the built-in server: channels, connections, bounded queues.

`publish()` never blocks and never awaits a socket: it puts the encoded event on each
subscriber's bounded queue, and one writer task per connection drains it. A subscriber whose
queue is full is too slow; it is dropped (closed with 4100, "over capacity", so pusher-js
reconnects later) and can never stall the publisher or the other subscribers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from heddle.observability.logging import get_logger

log = get_logger(__name__)

SLOW_CLIENT_CLOSE_CODE = 4100


class Subscriber:
    def __init__(self, socket_id: str, send: Callable[[str], Awaitable[None]],
                 close: Callable[[int, str], Awaitable[None]], queue_size: int):
        self.socket_id = socket_id
        self._send = send
        self._close = close
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(queue_size)
        self.channels: set[str] = set()
        self.dropped = False
        self._writer = asyncio.create_task(self._write(), name=f"realtime-writer-{socket_id}")

    def offer(self, frame: str) -> bool:
        try:
            self.queue.put_nowait(frame)
            return True
        except asyncio.QueueFull:
            return False

    async def _write(self) -> None:
        try:
            while (frame := await self.queue.get()) is not None:
                await self._send(frame)
        except Exception:  # the socket went away; the reader side cleans up
            pass

    async def drop(self, code: int, reason: str) -> None:
        self.dropped = True
        self._writer.cancel()
        try:
            await self._close(code, reason)
        except Exception:
            pass

    async def stop(self) -> None:
        self._writer.cancel()
        try:
            await self._writer
        except (asyncio.CancelledError, Exception):
            pass


class RealtimeHub:
    def __init__(self, queue_size: int = 256):
        self.queue_size = queue_size
        self.channels: dict[str, set[Subscriber]] = {}
        self.connections: dict[str, Subscriber] = {}
        self.dropped_total = 0

    def connect(self, socket_id: str, send, close) -> Subscriber:
        sub = Subscriber(socket_id, send, close, self.queue_size)
        self.connections[socket_id] = sub
        return sub

    async def disconnect(self, sub: Subscriber) -> None:
        for channel in list(sub.channels):
            self.unsubscribe(sub, channel)
        self.connections.pop(sub.socket_id, None)
        await sub.stop()

    def subscribe(self, sub: Subscriber, channel: str) -> None:
        sub.channels.add(channel)
        self.channels.setdefault(channel, set()).add(sub)

    def unsubscribe(self, sub: Subscriber, channel: str) -> None:
        sub.channels.discard(channel)
        members = self.channels.get(channel)
        if members is not None:
            members.discard(sub)
            if not members:
                del self.channels[channel]

    def send_to(self, sub: Subscriber, event: str, data: Any, channel: str | None = None) -> None:
        frame = {"event": event, "data": data if isinstance(data, str) else json.dumps(data)}
        if channel:
            frame["channel"] = channel
        if not sub.offer(json.dumps(frame)):
            asyncio.ensure_future(self._drop(sub))

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> int:
        """Queue the event for every subscriber of `channel`; returns how many got it."""
        members = self.channels.get(channel)
        if not members:
            return 0
        frame = json.dumps({"event": event, "channel": channel, "data": json.dumps(data, default=str)})
        delivered = 0
        for sub in list(members):
            if sub.offer(frame):
                delivered += 1
            else:
                await self._drop(sub)
        return delivered

    async def _drop(self, sub: Subscriber) -> None:
        if sub.dropped:
            return
        self.dropped_total += 1
        log.warning("realtime_slow_client_dropped", socket_id=sub.socket_id)
        for channel in list(sub.channels):
            self.unsubscribe(sub, channel)
        self.connections.pop(sub.socket_id, None)
        await sub.drop(SLOW_CLIENT_CLOSE_CODE, "over capacity: client too slow")
