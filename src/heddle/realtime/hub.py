"""The in-process fan-out behind the built-in server: connections, channels, publishing.

`publish()` never awaits a socket: it encodes the event once and queues it on each
subscriber's bounded outbox. A subscriber whose outbox is full is too slow; it is dropped
(closed with 4100, so pusher-js reconnects after a back-off) and can never stall the publisher
or the other subscribers. Events on one channel reach each subscriber in publish order.

The hub belongs to one event loop: call it from the loop that serves the WebSockets.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from heddle.observability.logging import get_logger
from heddle.realtime import protocol
from heddle.realtime.connection import CloseSocket, Connection, SendText
from heddle.realtime.signing import is_valid_channel_name

log = get_logger(__name__)


class HubFull(Exception):
    """The hub already holds `max_connections` connections."""


class RealtimeHub:
    def __init__(self, *, queue_size: int = 256, send_timeout: float = 10.0, max_connections: int = 10_000,
                 max_channels_per_connection: int = 100, max_event_bytes: int = 256 * 1024):
        if queue_size < 1 or max_connections < 1 or max_channels_per_connection < 1 or max_event_bytes < 1:
            raise ValueError("hub limits must be positive")
        if send_timeout <= 0:
            raise ValueError("send_timeout must be positive")
        self.queue_size = queue_size
        self.send_timeout = send_timeout
        self.max_connections = max_connections
        self.max_channels_per_connection = max_channels_per_connection
        self.max_event_bytes = max_event_bytes
        self._connections: dict[str, Connection] = {}
        self._channels: dict[str, set[Connection]] = {}
        self.published_total = 0
        self.dropped_total = 0  # subscribers closed for being too slow

    # -- state -------------------------------------------------------------------------------

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def channel_count(self) -> int:
        return len(self._channels)

    def subscriber_count(self, channel: str) -> int:
        return len(self._channels.get(channel, ()))

    def stats(self) -> dict[str, int]:
        return {"connections": self.connection_count, "channels": self.channel_count,
                "published_total": self.published_total, "dropped_total": self.dropped_total}

    # -- connections -------------------------------------------------------------------------

    def open(self, send_text: SendText, close_socket: CloseSocket) -> Connection:
        """Register a socket under a fresh, unguessable socket id; raises HubFull at the limit."""
        if len(self._connections) >= self.max_connections:
            raise HubFull
        socket_id = _new_socket_id()
        while socket_id in self._connections:
            socket_id = _new_socket_id()
        conn = Connection(socket_id, send_text, close_socket, queue_size=self.queue_size,
                          send_timeout=self.send_timeout)
        self._connections[socket_id] = conn
        return conn

    def forget(self, conn: Connection) -> None:
        """Remove a connection and all its subscriptions (idempotent)."""
        for channel in list(conn.channels):
            self.unsubscribe(conn, channel)
        if self._connections.get(conn.socket_id) is conn:
            del self._connections[conn.socket_id]

    def subscribe(self, conn: Connection, channel: str) -> bool:
        """Add a subscription; False when the connection already holds its maximum."""
        if channel in conn.channels:
            return True
        if len(conn.channels) >= self.max_channels_per_connection:
            return False
        conn.channels.add(channel)
        self._channels.setdefault(channel, set()).add(conn)
        return True

    def unsubscribe(self, conn: Connection, channel: str) -> None:
        conn.channels.discard(channel)
        members = self._channels.get(channel)
        if members is not None:
            members.discard(conn)
            if not members:
                del self._channels[channel]

    # -- publishing --------------------------------------------------------------------------

    def has_subscribers(self, channel: str) -> bool:
        return bool(self._channels.get(channel))

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> int:
        """Queue `event` for every subscriber of `channel`; returns how many got it queued.

        Raises ValueError/TypeError for an invalid channel or event name, or data that is not a
        JSON object within `max_event_bytes`.
        """
        if not is_valid_channel_name(channel):
            raise ValueError("invalid channel name")
        if not protocol.is_valid_event_name(event):
            raise ValueError("invalid event name")
        payload = protocol.encode_data(data)
        if len(payload) > self.max_event_bytes:  # ASCII-only, so characters == bytes
            raise ValueError(f"event data is {len(payload)} bytes; the limit is {self.max_event_bytes}")
        self.published_total += 1
        members = self._channels.get(channel)
        if not members:
            return 0
        text = protocol.frame(event, payload, channel)
        delivered = 0
        for conn in list(members):
            if conn.send(text):
                delivered += 1
            else:
                self.drop_slow(conn)
        return delivered

    def drop_slow(self, conn: Connection) -> None:
        """Close a subscriber that cannot keep up; its backlog is discarded, not delivered late."""
        if conn.closing:
            self.forget(conn)
            return
        self.dropped_total += 1
        log.warning("realtime_slow_subscriber_dropped", socket_id=conn.socket_id, pending=conn.pending)
        conn.close(protocol.OVER_CAPACITY, "Over capacity: client too slow", discard_pending=True)
        self.forget(conn)

    async def aclose(self, timeout: float = 5.0) -> None:
        """Close every connection (4200, so clients reconnect to the next server) and wait."""
        conns = list(self._connections.values())
        for conn in conns:
            conn.close(protocol.SERVER_CLOSING, "Server shutting down")
            self.forget(conn)
        if conns:
            await asyncio.gather(*(conn.wait_closed(timeout) for conn in conns))


def _new_socket_id() -> str:
    return f"{secrets.randbelow(10**9)}.{secrets.randbelow(10**9)}"
