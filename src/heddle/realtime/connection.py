"""One subscriber connection: a bounded outbox drained by a single writer task.

Everything sent to a socket goes through `send()`, which never awaits: it appends to the
outbox or reports that the outbox is full. The writer task is the only code that awaits the
socket, so a client that stops reading stalls nothing but its own writer, and frames leave in
exactly the order they were queued.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from heddle.observability.logging import get_logger

log = get_logger(__name__)

SendText = Callable[[str], Awaitable[None]]
CloseSocket = Callable[[int, str], Awaitable[None]]


class Connection:
    def __init__(self, socket_id: str, send_text: SendText, close_socket: CloseSocket, *,
                 queue_size: int, send_timeout: float):
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.socket_id = socket_id
        self.channels: set[str] = set()
        self._send_text = send_text
        self._close_socket = close_socket
        self._queue_size = queue_size
        self._send_timeout = send_timeout
        self._outbox: deque[str] = deque()
        self._wakeup = asyncio.Event()
        self._close_request: tuple[int, str] | None = None
        self.close_code: int | None = None  # the code this side closed with, once it has
        self._writer = asyncio.create_task(self._write_loop(), name=f"realtime-writer-{socket_id}")

    @property
    def closing(self) -> bool:
        """True once a close was requested or the writer stopped: nothing more will be sent."""
        return self._close_request is not None or self._writer.done()

    @property
    def pending(self) -> int:
        return len(self._outbox)

    def send(self, text: str) -> bool:
        """Queue a frame; False when closing or when the outbox is full (the client is too slow)."""
        if self.closing or len(self._outbox) >= self._queue_size:
            return False
        self._outbox.append(text)
        self._wakeup.set()
        return True

    def close(self, code: int, reason: str, *, discard_pending: bool = False) -> None:
        """Ask the writer to close the socket after the queued frames (or instead of them)."""
        if self._close_request is not None:
            return
        if discard_pending:
            self._outbox.clear()
        self._close_request = (code, reason[:120])
        self._wakeup.set()

    async def wait_closed(self, timeout: float) -> None:
        """Wait for the writer to finish; cancel it if that takes longer than `timeout`."""
        try:
            await asyncio.wait_for(asyncio.shield(self._writer), timeout)
        except TimeoutError:
            await self.abort()

    async def abort(self) -> None:
        """Stop the writer now (the peer is gone, or it will not take our close frame)."""
        self._outbox.clear()
        if not self._writer.done():
            self._writer.cancel()
        try:
            await self._writer
        except asyncio.CancelledError:
            if not self._writer.cancelled():  # we were cancelled ourselves
                raise

    @property
    def writer(self) -> asyncio.Task[None]:
        return self._writer

    async def _write_loop(self) -> None:
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup.clear()
                while self._outbox:
                    async with asyncio.timeout(self._send_timeout):  # no extra task per frame
                        await self._send_text(self._outbox.popleft())
                if self._close_request is not None:
                    code, reason = self._close_request
                    self.close_code = code
                    async with asyncio.timeout(self._send_timeout):
                        await self._close_socket(code, reason)
                    return
        except TimeoutError:
            log.warning("realtime_send_timeout", socket_id=self.socket_id, timeout=self._send_timeout)
        except Exception as exc:  # the socket went away under us; the reader side cleans up
            log.debug("realtime_socket_gone", socket_id=self.socket_id, error=type(exc).__name__)
        finally:
            self._outbox.clear()
