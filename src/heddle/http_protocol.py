"""uvicorn's h11 protocol with one change: a response's head leaves with its body, in one write.

uvicorn writes the status line and headers as soon as the app sends `http.response.start`,
then the body as a second write: two system calls and, on a keep-alive connection, two TCP
segments for every JSON answer. On loopback and small VMs the kernel's side of a send is a
large share of a cheap request (a profile of `GET /v1/loom/runs/{id}` under load put about a
quarter of the request's CPU in those writes). So the head is held until the first body write
(normally the very next call, in the same turn of the event loop) and both go out together.
A head is never held past the current turn of the event loop (a streamed response whose
first chunk comes later, such as an event stream, still gets its head at once), and a close
flushes it first. WebSocket upgrades write straight through.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class _HeadHoldingTransport:
    """Delegates to the real transport; holds a response head until the next write."""

    __slots__ = ("inner", "_protocol", "_held")

    def __init__(self, inner: asyncio.Transport, protocol: H11Protocol):
        self.inner = inner
        self._protocol = protocol
        self._held = b""

    def write(self, data: bytes) -> None:
        if self._held:
            data, self._held = self._held + data, b""
        elif data.startswith(b"HTTP/1.") and self._protocol.conn.our_state is h11.SEND_BODY:
            self._held = data  # a response head (not a 100 Continue: that leaves h11 in SEND_RESPONSE)
            self._protocol.loop.call_soon(self.flush)
            return
        if data:
            self.inner.write(data)

    def flush(self) -> None:
        if self._held:
            data, self._held = self._held, b""
            if not self.inner.is_closing():
                self.inner.write(data)

    def close(self) -> None:
        self.flush()
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class CoalescingH11Protocol(H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_HeadHoldingTransport(transport, self))  # type: ignore[arg-type]

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self.flush_and_unwrap()
        super().handle_websocket_upgrade(event)

    def flush_and_unwrap(self) -> None:
        if isinstance(self.transport, _HeadHoldingTransport):
            self.transport.flush()
            self.transport = self.transport.inner
