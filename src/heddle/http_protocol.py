"""uvicorn's httptools protocol with two changes: a cap on a request head, and a response's
head sent with its body in one write.

- **Head cap.** httptools buffers a header line until it ends, with no limit of its own (a
  16 MB header line was read and served). This protocol counts the bytes of a request head as
  they arrive; a head still incomplete past `max_head_bytes` gets a plain 400 and the
  connection is closed unread, so no head is buffered without bound. Heads under the cap reach
  the app, whose middleware answers 431 `headers_too_large` past `HEDDLE_MAX_HEADER_BYTES`.
  (Heddle used h11 for its built-in cap; httptools is a C parser and measurably cheaper per
  request: docs/decisions.md, "httptools with a head cap".)
- **One write per response.** uvicorn writes the status line and headers as soon as the app
  sends `http.response.start`, then the body as a second write: two system calls and, on a
  keep-alive connection, two TCP segments for every JSON answer. On loopback and small VMs the
  kernel's side of a send is a large share of a cheap request. So a head is held until the
  next write (normally the body, in the same turn of the event loop) and both go out together.
  A head is never held past the current turn of the event loop (a streamed response whose
  first chunk comes later, such as an event stream, still gets its head at once), and a close
  flushes it first. WebSocket upgrades write straight through.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DEFAULT_MAX_HEAD_BYTES = 64 * 1024


class _HeadHoldingTransport:
    """Delegates to the real transport; holds a response head until the next write."""

    __slots__ = ("inner", "_loop", "_held")

    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self.inner = inner
        self._loop = loop
        self._held = b""

    def write(self, data: bytes) -> None:
        if self._held:
            data, self._held = self._held + data, b""
        elif data.startswith(b"HTTP/1.") and data.endswith(b"\r\n\r\n"):
            # A response head (or a 100 Continue, or a body that happens to look like one:
            # holding those for one turn of the loop changes when they leave, never their order).
            self._held = data
            self._loop.call_soon(self.flush)
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


class HeddleHttpProtocol(HttpToolsProtocol):
    max_head_bytes = DEFAULT_MAX_HEAD_BYTES

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._in_head = False
        self._head_bytes = 0
        super().connection_made(_HeadHoldingTransport(transport, self.loop))  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        # Counted before the parser saw the bytes, checked after: a head that completed within
        # this chunk (with a body behind it) is never refused for the body's bytes.
        if self._in_head and self._head_bytes > self.max_head_bytes and not self.transport.is_closing():
            self.logger.warning("Request head too large.")
            self.send_400_response("Request head too large.")

    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def handle_websocket_upgrade(self) -> None:
        self.flush_and_unwrap()
        super().handle_websocket_upgrade()

    def flush_and_unwrap(self) -> None:
        if isinstance(self.transport, _HeadHoldingTransport):
            self.transport.flush()
            self.transport = self.transport.inner


def protocol_with_head_cap(max_head_bytes: int) -> type[HeddleHttpProtocol]:
    """The protocol class uvicorn instantiates per connection, with its head cap set."""
    return type("HeddleHttpProtocol", (HeddleHttpProtocol,), {"max_head_bytes": max_head_bytes})
