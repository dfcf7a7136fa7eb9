"""uvicorn's httptools protocol with four changes: a cap on a request head's size, a deadline for
it, caps on open connections, and a response's head sent with its body in one write.

- **Head cap.** httptools buffers a header line until it ends, with no limit of its own (a
  16 MB header line was read and served). This protocol counts the bytes of a request head as
  they arrive; a head still incomplete past `max_head_bytes` gets a plain 400 and the
  connection is closed unread, so no head is buffered without bound. Heads under the cap reach
  the app, whose middleware answers 431 `headers_too_large` past `HEDDLE_MAX_HEADER_BYTES`.
  (Heddle used h11 for its built-in cap; httptools is a C parser and measurably cheaper per
  request: docs/decisions.md, "httptools with a head cap".)
- **Head deadline.** uvicorn arms no timer while a head is incomplete (its keep-alive timer is
  cancelled by the first byte), so 200 sockets that sent `GET /healthz HTTP/1.1\r\nHost: x\r\n`
  and stalled were all still open after 72 s. A connection must complete its first head within
  `head_timeout` seconds of connecting, and every later head within `head_timeout` of its first
  byte (idle time between requests is uvicorn's keep-alive timeout). A head that started gets
  408 `request_timeout` with `Connection: close`; a connection that sent nothing is just closed.
- **Connection caps.** `ConnectionLimits` (heddle/connection_limits.py) counts connections in,
  in all and per client address; one over a cap is answered 503 `service_unavailable` with
  `Connection: close`, once its head arrives (or after a second), and closed. Answers that close
  the connection close it lingering: the write side is shut first and what the client still
  sends is read and discarded for a moment, so the kernel does not reset the connection (and
  destroy the answer) because unread bytes were left when it closed.
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
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from heddle.connection_limits import ConnectionLimits
from heddle.errors import HeddleError

DEFAULT_MAX_HEAD_BYTES = 64 * 1024
DEFAULT_HEAD_TIMEOUT = 10.0
REFUSAL_WAIT = 1.0  # how long a refused connection may take to send its head before it is answered
LINGER = 1.0  # after a closing answer, how long the client's further bytes are read and dropped
_REASONS = {408: b"Request Timeout", 503: b"Service Unavailable"}
_REFUSALS = {
    "total": "The server holds as many connections as it may; retry shortly.",
    "address": "Too many open connections from this address; close some or retry shortly.",
}


def error_response(err: HeddleError, headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    """A whole HTTP/1.1 answer with the error envelope, for the protocol's own refusals (no app)."""
    body = json.dumps(err.envelope()).encode()
    lines = [b"HTTP/1.1 %d %s" % (err.status, _REASONS[err.status]), b"content-type: application/json",
             b"content-length: %d" % len(body), b"connection: close",
             *(f"{name}: {value}".encode() for name, value in headers)]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


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
    head_timeout = DEFAULT_HEAD_TIMEOUT
    limits: ConnectionLimits | None = None  # None: no connection caps

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._in_head = False
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._counted = False
        self._refused: str | None = None
        self._lingering = False
        super().connection_made(_HeadHoldingTransport(transport, self.loop))  # type: ignore[arg-type]
        self._address = self.client[0] if self.client else None
        if self.limits is not None:
            self._refused = self.limits.admit(self._address)
            if self._refused is not None:
                # Not one of the server's connections: nothing to wait for at shutdown.
                self.connections.discard(self)
                self._head_timer = self.loop.call_later(min(REFUSAL_WAIT, self.head_timeout), self._refuse)
                return
            self._counted = True
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        self._uncount()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # a closing answer was sent: the rest is read and dropped
        if self._refused is not None:
            self._refuse()
            return
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
        self._arm_head_timer()
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._cancel_head_timer()
        super().on_headers_complete()

    def handle_websocket_upgrade(self) -> None:
        self.flush_and_unwrap()
        self._uncount()  # the realtime server counts WebSocket connections itself
        super().handle_websocket_upgrade()

    def flush_and_unwrap(self) -> None:
        if isinstance(self.transport, _HeadHoldingTransport):
            self.transport.flush()
            self.transport = self.transport.inner

    # -- the head deadline and the caps ------------------------------------------------------

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _uncount(self) -> None:
        if self._counted and self.limits is not None:
            self._counted = False
            self.limits.release(self._address)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self._lingering:
            return
        if self.limits is not None:
            self.limits.timed_out()
        if not self._in_head:  # connected and sent nothing: no request to answer
            self.transport.close()
            return
        self.logger.info("Request head not complete in time.")
        self._answer_and_close(error_response(HeddleError(
            "request_timeout", f"The request head was not complete within {self.head_timeout:g} s.")))

    def _refuse(self) -> None:
        self._cancel_head_timer()
        if self._lingering or self.transport.is_closing():
            return
        reason = self._refused or "total"
        self._answer_and_close(error_response(HeddleError("service_unavailable", _REFUSALS[reason]),
                                              (("retry-after", "1"),)))

    def _answer_and_close(self, answer: bytes) -> None:
        """Send a closing answer, shut the write side, drop what still arrives, close soon."""
        self._lingering = True
        transport = self.transport.inner if isinstance(self.transport, _HeadHoldingTransport) else self.transport
        transport.write(answer)
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(LINGER, transport.close)


def protocol_class(*, max_head_bytes: int, head_timeout: float = DEFAULT_HEAD_TIMEOUT,
                   limits: ConnectionLimits | None = None) -> type[HeddleHttpProtocol]:
    """The protocol class uvicorn instantiates per connection, with its limits set."""
    return type("HeddleHttpProtocol", (HeddleHttpProtocol,),
                {"max_head_bytes": max_head_bytes, "head_timeout": head_timeout, "limits": limits})
