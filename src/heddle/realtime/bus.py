"""Thread events across processes: PostgreSQL LISTEN/NOTIFY or Redis pub/sub.

With `HEDDLE_EVENT_BUS=postgres|redis`, every process publishes its events to the bus (never
straight to its own hub), and every process that serves the built-in realtime server relays
what the bus delivers into its hub. So an API process's sockets see the events a worker
published, and each process sees its own events through the same ordered path.

Order per thread: a publisher awaits each send before the next (one run executes a thread at a
time, and it publishes in order), PostgreSQL delivers notifications in commit order and Redis
delivers one client's messages in order; the relay hands them to the hub one at a time.

On PostgreSQL a run's stored events (`run.updated`, `message.created` and its streamed pieces,
every row of `run_events`) are not sent from here: the transaction that stores them sends them
(migration 0010's trigger, for connections that carry `database_settings()`), so an event costs
no transaction of its own and arrives in commit order with the change it describes. A row of
several streamed pieces arrives as one message and is relayed as the pieces it holds. The
publisher sends the rest (a thread's deletion), each on its own.

Events are at most once: a relay whose connection drops reconnects with back-off, and events
sent meanwhile are lost to its sockets (clients fall back to reading the run, as with any
realtime hiccup). Nothing here is a queue; the bus libraries do the delivery.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from heddle.observability.logging import get_logger
from heddle.realtime import protocol
from heddle.realtime.hub import RealtimeHub
from heddle.runs_vocabulary import unpack

log = get_logger(__name__)

Handler = Callable[[str], Awaitable[None]]

# PostgreSQL refuses NOTIFY payloads of 8000 bytes or more; larger events go in parts sent in
# one transaction (delivered together and in order) and are joined by the listener.
PG_PART_BYTES = 7000
RECONNECT_DELAYS = (0.1, 0.5, 1.0, 2.0, 5.0)
# The listener checks its connection this often with a cheap query (each one a transaction; an
# idle deployment's commits are budgeted, tests/scale/test_pg_commits.py).
LISTEN_CHECK_SECONDS = 30.0
APPLICATION = {"application_name": "heddle-bus"}  # as pg_stat_activity shows these connections


class EventBus(Protocol):
    async def send(self, message: str) -> None: ...

    async def listen(self, handler: Handler, ready: asyncio.Event) -> None:
        """Deliver every message to `handler` in order, reconnecting forever; set `ready` once
        subscribed. Returns only when cancelled."""

    async def aclose(self) -> None: ...


def encode_event(channel: str, event: str, data: dict[str, Any]) -> str:
    # ASCII-only JSON (as the hub sends it), so characters == bytes for the part size.
    return json.dumps({"c": channel, "e": event, "d": json.loads(protocol.encode_data(data))},
                      separators=(",", ":"))


def decode_events(message: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The events of one bus message: one, or each piece of a stored row of streamed pieces."""
    return [(channel, event, data) for channel, event, data, _seq in decode_stored(message)]


def decode_stored(message: str) -> list[tuple[str, str, dict[str, Any], int | None]]:
    """`decode_events` with each event's place in its run's stored log: a `run_events` row
    sent by migration 0019's trigger carries its `seq` (a packed row's is its last piece's);
    None for a message without one (sent by a publisher, or by 0010's trigger)."""
    doc = json.loads(message)
    if not isinstance(doc, dict):
        raise ValueError("not an event")
    channel = str(doc.get("c"))
    events = unpack(str(doc.get("e")), doc.get("d"))  # a packed row's pieces (heddle/runs_vocabulary.py)
    if not all(isinstance(data, dict) for _, data in events):
        raise ValueError("not an event")
    last = doc.get("s")
    if not isinstance(last, int) or isinstance(last, bool):
        return [(channel, event, data, None) for event, data in events]
    first = last - len(events) + 1
    return [(channel, event, data, first + i) for i, (event, data) in enumerate(events)]


def database_settings(kind: str, channel: str) -> dict[str, str]:
    """Session parameters of a process's database connections on this bus: on PostgreSQL, the
    channel that migration 0010's trigger announces stored run events on."""
    return {"heddle.event_bus_channel": channel} if kind == "postgres" else {}


async def _no_reset(_conn) -> None:
    return None


async def _backoff(attempt: int) -> None:
    await asyncio.sleep(RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)])


class PostgresBus:
    """LISTEN/NOTIFY on the deployment's own database, through asyncpg."""

    def __init__(self, dsn: str, channel: str):
        self.dsn = dsn
        self.channel = channel
        self._pool = None
        self._pool_lock = asyncio.Lock()

    async def _get_pool(self):
        import asyncpg

        async with self._pool_lock:
            if self._pool is None:
                # reset=None: asyncpg's default reset runs `pg_advisory_unlock_all(); CLOSE ALL;
                # UNLISTEN *; RESET ALL` (a transaction) on every release; these connections
                # only ever send NOTIFY, so there is nothing to reset.
                self._pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=4, reset=_no_reset,
                                                       server_settings=APPLICATION)
            return self._pool

    async def send(self, message: str) -> None:
        pool = await self._get_pool()
        if len(message) < PG_PART_BYTES:
            await pool.execute("SELECT pg_notify($1, $2)", self.channel, message)
            return
        parts = [message[i:i + PG_PART_BYTES] for i in range(0, len(message), PG_PART_BYTES)]
        tag = secrets.token_hex(6)
        async with pool.acquire() as conn, conn.transaction():
            for i, part in enumerate(parts):
                await conn.execute("SELECT pg_notify($1, $2)", self.channel, f"~{tag}:{i}:{len(parts)}:{part}")

    async def listen(self, handler: Handler, ready: asyncio.Event) -> None:
        import asyncpg

        queue: asyncio.Queue[str] = asyncio.Queue()
        partial: dict[str, list[str]] = {}

        def on_notify(_conn, _pid, _channel, payload: str) -> None:
            if not payload.startswith("~"):
                queue.put_nowait(payload)
                return
            tag, i, n, part = payload[1:].split(":", 3)
            parts = partial.setdefault(tag, [])
            if int(i) != len(parts):  # a part went missing (cannot happen in one transaction)
                partial.pop(tag, None)
                return
            parts.append(part)
            if len(parts) == int(n):
                queue.put_nowait("".join(partial.pop(tag)))

        async def consume() -> None:
            while True:
                await handler(await queue.get())

        consumer = asyncio.create_task(consume(), name="event-bus-postgres-consumer")
        attempt = 0
        try:
            while True:
                conn = None
                try:
                    conn = await asyncpg.connect(self.dsn, server_settings=APPLICATION)
                    await conn.add_listener(self.channel, on_notify)
                    attempt = 0
                    ready.set()
                    while not conn.is_closed():  # a cheap query notices a dead connection
                        await asyncio.sleep(LISTEN_CHECK_SECONDS)
                        await asyncio.wait_for(conn.execute("SELECT 1"), 5)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
                    log.warning("event_bus_reconnect", bus="postgres", error=type(exc).__name__)
                finally:
                    if conn is not None and not conn.is_closed():
                        conn.terminate()
                partial.clear()
                await _backoff(attempt)
                attempt += 1
        finally:
            consumer.cancel()

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()


class RedisBus:
    """Redis pub/sub through the `redis` library's asyncio client."""

    def __init__(self, url: str, channel: str):
        import redis.asyncio as redis

        self.url = url
        self.channel = channel
        self._client = redis.Redis.from_url(url)

    async def send(self, message: str) -> None:
        await self._client.publish(self.channel, message)

    async def listen(self, handler: Handler, ready: asyncio.Event) -> None:
        import redis.asyncio as redis
        from redis.exceptions import RedisError

        attempt = 0
        while True:
            client = redis.Redis.from_url(self.url)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                attempt = 0
                ready.set()
                async for item in pubsub.listen():
                    if item.get("type") == "message":
                        data = item["data"]
                        await handler(data.decode() if isinstance(data, bytes) else data)
            except (OSError, RedisError) as exc:
                log.warning("event_bus_reconnect", bus="redis", error=type(exc).__name__)
            finally:
                await pubsub.aclose()
                await client.aclose()
            await _backoff(attempt)
            attempt += 1

    async def aclose(self) -> None:
        await self._client.aclose()


class BusPublisher:
    """The EventPublisher of a process on a shared bus. Never raises: the events describe
    committed changes, so a failed send is logged and counted, as the other publishers do."""

    def __init__(self, bus: EventBus, *, sent_by_database: Callable[[str, dict[str, Any]], bool] | None = None):
        self.bus = bus
        # On PostgreSQL: True for the events the storing transaction sends (see the module
        # docstring); publishing those again would deliver them twice.
        self.sent_by_database = sent_by_database
        self.sent = 0
        self.by_database = 0  # events left to the storing transaction
        self.failed = 0

    async def publish(self, channel: str, event: str, data: dict[str, Any]) -> None:
        if self.sent_by_database is not None and self.sent_by_database(event, data):
            self.by_database += 1
            return
        try:
            await self.bus.send(encode_event(channel, event, data))
            self.sent += 1
        except Exception as exc:
            self.failed += 1
            log.warning("realtime_publish_failed", channel=channel, event_name=event, error=type(exc).__name__,
                        detail=str(exc)[:200])

    async def aclose(self) -> None:
        await self.bus.aclose()


Observer = Callable[[str, str, dict[str, Any]], None]
# Told each event with its seq in the run's stored log, or None when the message has none.
LogObserver = Callable[[str, dict[str, Any], int | None], None]


class BusRelay:
    """Feeds what the bus delivers into this process's hub, in order, and tells `observers`
    (such as the run event streams, which then read what another process stored)."""

    def __init__(self, bus: EventBus, hub: RealtimeHub, *, ready_timeout: float = 10.0):
        self.bus = bus
        self.hub = hub
        self.ready_timeout = ready_timeout
        self.relayed = 0
        self.observers: list[Observer] = []
        # Such as the run event streams: fed the event itself when it carries its seq, else
        # woken to read what another process stored (heddle/loom/event_signals.py).
        self.log_observers: list[LogObserver] = []
        self._task: asyncio.Task | None = None

    async def _deliver(self, message: str) -> None:
        try:
            for channel, event, data, seq in decode_stored(message):
                # Checked where it was published: with nobody here on the channel (most events
                # of an API process), there is nothing to encode or send.
                if self.hub.has_subscribers(channel):
                    await self.hub.publish(channel, event, data)
                self.relayed += 1
                for observe in self.observers:
                    observe(channel, event, data)
                for fed in self.log_observers:
                    fed(event, data, seq)
        except Exception as exc:  # one bad message must not stop the relay
            log.warning("event_bus_message_dropped", error=type(exc).__name__, detail=str(exc)[:200])

    async def start(self) -> None:
        """Subscribe before returning, so no event published after start-up is missed."""
        ready = asyncio.Event()
        self._task = asyncio.create_task(self.bus.listen(self._deliver, ready), name="event-bus-relay")
        try:
            await asyncio.wait_for(ready.wait(), self.ready_timeout)
        except TimeoutError:
            await self.aclose()
            raise RuntimeError(f"the event bus did not accept a subscription in {self.ready_timeout:g} s; "
                               "is it reachable (HEDDLE_EVENT_BUS, HEDDLE_REDIS_URL)?") from None

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None


def postgres_dsn(database_url: str) -> str:
    """The asyncpg DSN of a SQLAlchemy `postgresql+asyncpg://` URL."""
    from sqlalchemy.engine import make_url

    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


def build_bus(kind: str, *, database_url: str, redis_url: str, channel: str) -> EventBus:
    if kind == "postgres":
        return PostgresBus(postgres_dsn(database_url), channel)
    if kind == "redis":
        return RedisBus(redis_url, channel)
    raise ValueError(f"no shared event bus {kind!r}; expected postgres or redis")
