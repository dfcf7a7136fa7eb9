"""Limits applied to a request before the application sees it: headers, body size and time,
JSON nesting depth.

The body is read completely here, before routing, dependencies or handlers run. That is what
keeps a slow or stalled client from starving everyone else: a handler checks a database
connection out (or, on SQLite, the write lock) only once its request is complete, so a client
that sends half a body and waits holds one small task in this layer and nothing shared. The
body is bounded in size (413) and in time (408), then handed to the app as one message.
"""

from __future__ import annotations

import asyncio
import re

from starlette.types import Message, Receive

from heddle.errors import HeddleError

# A JSON string (escapes included) or a bracket; brackets inside strings are skipped with their string.
_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_OPEN = (ord("["), ord("{"))
_CLOSE = (ord("]"), ord("}"))


def header_problem(headers: list[tuple[bytes, bytes]], *, max_bytes: int, max_count: int) -> HeddleError | None:
    """431 when the headers are too many or too large in all (name, value, ': ' and CRLF each)."""
    if len(headers) > max_count:
        return HeddleError("headers_too_large", f"The request has {len(headers)} headers; at most "
                           f"{max_count} are accepted.")
    total = sum(len(k) + len(v) + 4 for k, v in headers)
    if total > max_bytes:
        return HeddleError("headers_too_large", f"The request headers are {total} bytes in all; at most "
                           f"{max_bytes} are accepted.")
    return None


def json_too_deep(body: bytes, limit: int) -> bool:
    """True when the JSON text nests arrays/objects more than `limit` levels deep.

    Cheap for ordinary bodies: fewer opening brackets than the limit cannot nest past it, which
    is decided by two C-level counts. Otherwise one regex pass that stops at the first level
    too deep, so a megabyte of `[` costs the first `limit` brackets only.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKENS.finditer(body):
        char = body[match.start()]
        if char in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif char in _CLOSE:
            depth -= 1
    return False


async def read_body(receive: Receive, *, limit: int, timeout: float) -> bytes | None:
    """The whole request body; None when the client hung up before sending it.

    Raises HeddleError: 413 past `limit` bytes, 408 when it is not complete within `timeout`.
    """
    chunks: list[bytes] = []
    seen = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                seen += len(chunk)
                if seen > limit:
                    raise HeddleError("payload_too_large", f"The request body exceeds {limit} bytes.")
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
    except TimeoutError:
        raise HeddleError("request_timeout", f"The request body was not complete within {timeout:g} s.") from None


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the buffered body once, then the client's own events (disconnect)."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
