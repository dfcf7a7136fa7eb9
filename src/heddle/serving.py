"""How `heddle serve` runs the app under uvicorn: one place, so tests serve it the same way.

The listening socket is bound first, by `listen()`, and handed to uvicorn (`Server.run(sockets=...)`).

The HTTP parser is httptools with a cap on an incomplete request head (httptools has no header
size limit of its own: a 16 MB header line was read and served). Heads up to the cap reach the
app, whose middleware answers 431 `headers_too_large` past `HEDDLE_MAX_HEADER_BYTES` (16 KiB);
beyond the cap the protocol answers a plain 400 and closes the connection, so no header is
ever buffered without bound. A head must also be complete within `HEDDLE_HEAD_TIMEOUT`
seconds (408, closed), and the open connections are capped in all and per client address
(`HEDDLE_MAX_CONNECTIONS`, `HEDDLE_MAX_CONNECTIONS_PER_ADDRESS`: 503, closed). A response's
head and body leave in one write (heddle/http_protocol.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import resource
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from heddle.config import Settings
from heddle.connection_limits import ConnectionLimits
from heddle.http_protocol import protocol_class

# The protocol-level ceiling: comfortably above the app's own limit, so that ordinary
# oversized heads get the envelope (431) and only absurd ones are cut off by the parser.
PARSER_HEAD_FACTOR = 4


def uvicorn_options(settings: Settings, metrics: Any = None) -> dict[str, Any]:
    """`metrics`: the app's Metrics, which then count open and refused connections."""
    limits = ConnectionLimits(max_total=settings.max_connections,
                              max_per_address=settings.max_connections_per_address, metrics=metrics)
    return {
        "host": settings.host,
        "port": settings.port,
        # uvicorn's httptools protocol with a head cap and deadline, connection caps, one write per response
        "http": protocol_class(max_head_bytes=settings.max_header_bytes * PARSER_HEAD_FACTOR,
                               head_timeout=settings.head_timeout, limits=limits),
        # 64 KiB WebSocket frames at most: the Pusher protocol's own limit is 10 KiB per message.
        "ws": "websockets-sansio",
        "ws_max_size": 64 * 1024,
        "log_level": settings.log_level.lower(),
        "access_log": False,  # heddle's middleware writes one line per request itself
        "lifespan": "on",
    }


# How often an idle server wakes for uvicorn's own upkeep (its date header); uvicorn wakes ten times
# a second to look at `should_exit`, which here wakes the server itself.
TICK_SECONDS = 1.0


class QuietServer(uvicorn.Server):
    """uvicorn's server, waking once a second when idle instead of ten times.

    uvicorn's main loop sleeps 0.1 s at a time to see whether it should stop, and on its tenth
    wake-up refreshes the `date` header. An idle `heddle serve` woke for nothing else as often:
    uvicorn's ticks were 10 of its 12 wake-ups a second, and each costs a process woken from
    idle under a millisecond of CPU on a quiet machine and up to about 10 ms on a small, busy
    virtual machine (docs/operations.md, "Idle wake-ups"). Here the loop waits on an event that
    setting `should_exit` sets, from a signal handler or another thread, so stopping is at once
    rather than within 0.1 s, and `on_tick` (the date header, `limit_max_requests`) runs once a
    second.
    """

    _wake: asyncio.Event | None = None
    _wake_loop: asyncio.AbstractEventLoop | None = None

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        if value and self._wake is not None and self._wake_loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits any more
                self._wake_loop.call_soon_threadsafe(self._wake.set)

    async def main_loop(self) -> None:
        self._wake_loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        while not await self.on_tick(0):  # tick 0: uvicorn's once-a-second upkeep, every time
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK_SECONDS):
                    await self._wake.wait()


# Net allocations between two collections of the youngest generation (Python's default: 700).
YOUNG_COLLECTION_EVERY = 20_000


def settle_heap() -> dict[str, int]:
    """Once start-up is done, in a server or worker process: collect what start-up left, then
    move every object alive now into the collector's permanent generation (`gc.freeze`).

    Start-up leaves about half a million objects (modules, the SDKs' and pydantic's classes,
    SQLAlchemy's mappers, the Identify registries) that live as long as the process. Without
    this, every full collection walks them all: under 100 streamed conversations nine full
    collections in 20 s held the event loop 200 ms each (330 ms at most), and every request,
    stream and run waited for them. Frozen, they are never walked again.

    What the process allocates afterwards is collected less often than Python's default (a
    young collection per 700 net allocations, `YOUNG_COLLECTION_EVERY`): a server allocates
    and frees thousands of objects per request, nearly all freed by reference counting, and
    under 100 streamed conversations the default made 40 young, 4 middle and one full
    collection a second, about 6% of the process's CPU; the full ones (every 4.5 s, 17-44 ms
    each) collected nothing. Past 20,000 the few objects still young have had time to die,
    so few are promoted: 15 young collections in a 20 s round, no older one (docs/operations.md,
    "Part seven"). Only for a process's entry points: a test process building many apps would
    keep their cycles for good. Returns what to log: the objects frozen and the new threshold."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])
    return {"frozen_objects": gc.get_freeze_count(), "young_collection_every": gc.get_threshold()[0]}


def start_tasks_eagerly(enabled: bool = True) -> Callable[[], None] | None:
    """With `HEDDLE_EAGER_TASKS`, once start-up is done, on Python 3.12 and later: every task
    this loop creates from now on runs its first step at once, inside the call that creates it
    (`asyncio.eager_task_factory`), instead of a turn of the loop later. Returns what puts the
    loop's previous factory back, or None where nothing was changed (not enabled, or Python 3.11).

    Under load a turn of the loop is long: at 100 streamed conversations their requests, run
    starts and stream ends arrive together, and a task created in that wave waited 30-90 ms for
    its first step. A message's way to its first token takes three such waits: uvicorn's task for
    the request, the run's task (`loom/executor.py`) and aiohttp's writer of the model request's
    body. Eager, each goes on until it first has to wait for I/O. Measured, the first token came
    sooner on one machine and no sooner on another (docs/operations.md, "Part eight"), so it is
    off unless asked for. Whatever creates a task must not assume the task has not run, or even
    ended, when `create_task` returns (docs/decisions.md, "Eager tasks")."""
    if not enabled or sys.version_info < (3, 12):
        return None
    loop = asyncio.get_running_loop()
    previous = loop.get_task_factory()
    loop.set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]  # 3.12+
    return lambda: loop.set_task_factory(previous)


@contextmanager
def eager_tasks(enabled: bool) -> Iterator[bool]:
    """`start_tasks_eagerly` for a process's serving life (`HEDDLE_EAGER_TASKS`): whether it
    took, and the loop's previous factory put back when the block ends."""
    restore = start_tasks_eagerly(enabled)
    try:
        yield restore is not None
    finally:
        if restore is not None:
            restore()


class PortUnavailable(RuntimeError):
    """The listening port cannot be bound (in use, not permitted, no such address)."""


def listen(host: str, port: int, port_file: str | None = None) -> socket.socket:
    """Bind the process's listening socket before anything else starts.

    `heddle serve` and `heddle worker` bind here, before the app, the database or the queue
    start, so that a taken port refuses the process in one line instead of leaving it running
    without a listener (uvicorn only binds after the app's start-up). Port 0 lets the kernel
    choose; `port_file` then tells whoever started the process which port it got (written
    atomically, so a reader never sees half a number).
    """
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        sock = socket.create_server((host, port), family=family, backlog=2048)
    except OverflowError as exc:  # a port outside 0-65535
        raise PortUnavailable(f"cannot listen on {host}:{port}: {exc}") from None
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)  # without asyncio's "(while attempting ...)"
        raise PortUnavailable(f"cannot listen on {host}:{port}: {reason}") from None
    if port_file:
        tmp = f"{port_file}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{sock.getsockname()[1]}\n")
        os.replace(tmp, port_file)
    return sock


def raise_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit, and return it.

    The connection caps are only worth anything below it: past it, accepting a connection,
    opening a database file or a socket to PostgreSQL fails for everyone alike. Many systems
    start processes at a soft limit of 1,024 with a far higher hard limit.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft
