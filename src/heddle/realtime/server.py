"""The built-in realtime server: the Pusher Channels protocol (version 7) over WebSockets.

pusher-js connects to `ws://<host>:<port>/app/<key>?protocol=7&client=js&version=…` (its
`wsHost`/`wsPort` options). WebSocket framing is uvicorn's and Starlette's; this module speaks
only the protocol on top:

* handshake: unknown key -> 4001; protocol missing -> 4008, not a number -> 4006, not 7 -> 4007;
  otherwise `pusher:connection_established` with a fresh socket id;
* `pusher:ping` -> `pusher:pong`; after `activity_timeout` seconds without a client message
  the server pings, and closes with 4201 when nothing arrives within `pong_timeout`;
* `pusher:subscribe` to `private-thread-<uuid>` with an `auth` signed for this socket ->
  `pusher_internal:subscription_succeeded`; a bad signature -> `pusher:subscription_error`
  (401); any other channel (public, presence, other private) -> `pusher:subscription_error`
  (403); a name Pusher would not accept -> `pusher:error`. Nothing else is subscribed;
* `pusher:unsubscribe`; client events (`client-*`) and other events -> `pusher:error`;
* invalid JSON, non-protocol messages or binary frames -> `pusher:error` 4200 and close 4200;
  a message over 10 KiB -> `pusher:error` 4009 and close 4009;
* over a cap of `admission.py` (per client address, or sockets not yet subscribed) or the hub's
  total -> `pusher:error` 4100 and close 4100.
"""

from __future__ import annotations

import asyncio
import contextlib
import math

from fastapi import APIRouter, WebSocket

from heddle.observability.logging import get_logger
from heddle.realtime import protocol
from heddle.realtime.admission import Admission, Ticket
from heddle.realtime.connection import Connection
from heddle.realtime.hub import HubFull, RealtimeHub
from heddle.realtime.signing import is_valid_channel_name, parse_thread_channel, verify_channel_auth

log = get_logger(__name__)


class PusherEndpoint:
    """The `/app/{key}` WebSocket endpoint; one instance serves every connection."""

    def __init__(self, hub: RealtimeHub, *, app_key: str, app_secret: str, activity_timeout: float = 120,
                 pong_timeout: float = 30, max_message_bytes: int = protocol.MAX_CLIENT_MESSAGE_BYTES,
                 close_timeout: float = 5, admission: Admission | None = None):
        if not app_key or not app_secret:
            raise ValueError("app_key and app_secret must not be empty")
        if activity_timeout <= 0 or pong_timeout <= 0 or close_timeout <= 0 or max_message_bytes < 1:
            raise ValueError("timeouts and limits must be positive")
        self.hub = hub
        self.app_key = app_key
        self.app_secret = app_secret
        self.activity_timeout = activity_timeout
        self.pong_timeout = pong_timeout
        self.max_message_bytes = max_message_bytes
        self.close_timeout = close_timeout
        self.admission = admission
        self._tickets: dict[str, Ticket] = {}  # socket id -> its admission, until it closes
        # Pusher advertises whole seconds; the server itself keeps the exact value.
        self.advertised_activity_timeout = max(1, math.ceil(activity_timeout))

    async def handle(self, websocket: WebSocket, key: str) -> None:
        refusal = self._handshake_refusal(key, websocket.query_params.get("protocol"))
        await websocket.accept()
        if refusal is not None:
            await self._refuse(websocket, *refusal)
            return
        ticket = None
        if self.admission is not None:
            admitted = self.admission.admit(websocket.client.host if websocket.client else None)
            if isinstance(admitted, tuple):
                log.info("realtime_refused", code=admitted[0], reason=admitted[1])
                await self._refuse(websocket, *admitted)
                return
            ticket = admitted
        try:
            conn = self.hub.open(websocket.send_text, websocket.close)
        except HubFull:
            if ticket is not None:
                self.admission.leave(ticket)
            log.warning("realtime_over_capacity", max_connections=self.hub.max_connections)
            await self._refuse(websocket, protocol.OVER_CAPACITY, "Over capacity")
            return
        if ticket is not None:
            self._tickets[conn.socket_id] = ticket
        conn.send(protocol.connection_established(conn.socket_id, self.advertised_activity_timeout))
        reader = asyncio.create_task(self._read(websocket, conn), name=f"realtime-reader-{conn.socket_id}")
        try:
            await asyncio.wait({reader, conn.writer}, return_when=asyncio.FIRST_COMPLETED)
            if reader.done() and reader.result() is False:
                # We asked to close: let the writer send what is queued and the close frame.
                await conn.wait_closed(self.close_timeout)
        finally:
            self.hub.forget(conn)
            if ticket is not None:
                self.admission.leave(self._tickets.pop(conn.socket_id, ticket))
            if not reader.done():
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            await conn.abort()

    # -- handshake ---------------------------------------------------------------------------

    def _handshake_refusal(self, key: str, version: str | None) -> tuple[int, str] | None:
        if key != self.app_key:
            return protocol.APP_DOES_NOT_EXIST, "Application does not exist"
        if version is None or version == "":
            return protocol.NO_PROTOCOL_VERSION, "No protocol version supplied"
        if not (version.isascii() and version.isdigit() and len(version) <= 4):
            return protocol.INVALID_VERSION_FORMAT, "Invalid version string format"
        if int(version) != protocol.PROTOCOL_VERSION:
            return protocol.UNSUPPORTED_PROTOCOL, f"Unsupported protocol version; use {protocol.PROTOCOL_VERSION}"
        return None

    async def _refuse(self, websocket: WebSocket, code: int, message: str) -> None:
        try:
            async with asyncio.timeout(self.close_timeout):
                await websocket.send_text(protocol.error(code, message))
                await websocket.close(code=code, reason=message)
        except Exception as exc:  # the client left first
            log.debug("realtime_refusal_not_delivered", code=code, error=type(exc).__name__)

    # -- reading -----------------------------------------------------------------------------

    async def _read(self, websocket: WebSocket, conn: Connection) -> bool:
        """Handle client messages; True when the peer disconnected, False when we close."""
        awaiting_pong = False
        while not conn.closing:
            timeout = self.pong_timeout if awaiting_pong else self.activity_timeout
            try:
                async with asyncio.timeout(timeout):
                    message = await websocket.receive()
            except TimeoutError:
                if awaiting_pong:
                    self._fail(conn, protocol.PONG_NOT_RECEIVED, "Pong reply not received")
                else:
                    self._reply(conn, protocol.PING)
                    awaiting_pong = True
                continue
            if message["type"] == "websocket.disconnect":
                return True
            awaiting_pong = False  # any message shows the client is alive
            text = message.get("text")
            if text is None:
                self._fail(conn, protocol.INVALID_MESSAGE, "Binary frames are not supported")
            elif len(text) > self.max_message_bytes or len(text.encode("utf-8", "surrogatepass")) > \
                    self.max_message_bytes:
                self._fail(conn, protocol.MESSAGE_TOO_LARGE, f"Message larger than {self.max_message_bytes} bytes")
            else:
                self._handle(conn, text)
        return False

    def _handle(self, conn: Connection, text: str) -> None:
        try:
            message = protocol.parse_client_message(text)
        except protocol.MalformedMessage as exc:
            self._fail(conn, protocol.INVALID_MESSAGE, f"Invalid message format: {exc}")
            return
        event = message.event
        if event == "pusher:ping":
            self._reply(conn, protocol.PONG)
        elif event == "pusher:pong":
            pass
        elif event == "pusher:subscribe":
            self._subscribe(conn, message.data)
        elif event == "pusher:unsubscribe":
            channel = message.data.get("channel")
            if isinstance(channel, str):
                self.hub.unsubscribe(conn, channel)
            else:
                self._fail(conn, protocol.INVALID_MESSAGE, "Invalid message format: pusher:unsubscribe needs a channel")
        elif event.startswith("client-"):
            self._reply(conn, protocol.error(None, "Client events are not supported on this server"))
        else:
            self._reply(conn, protocol.error(None, "Unsupported event"))

    def _subscribe(self, conn: Connection, data: dict) -> None:
        channel = data.get("channel")
        if not isinstance(channel, str):
            self._fail(conn, protocol.INVALID_MESSAGE, "Invalid message format: pusher:subscribe needs a channel")
        elif not is_valid_channel_name(channel):
            self._reply(conn, protocol.error(None, "Invalid channel name"))
        elif parse_thread_channel(channel) is None:
            self._reply(conn, protocol.subscription_error(
                channel, 403, "Only private-thread-<thread uuid> channels are served here"))
        elif not verify_channel_auth(self.app_key, self.app_secret, conn.socket_id, channel, data.get("auth")):
            self._reply(conn, protocol.subscription_error(
                channel, 401, "Invalid signature: authorize this socket and channel through the auth endpoint"))
        elif not self.hub.subscribe(conn, channel):
            self._reply(conn, protocol.subscription_error(
                channel, 429, f"At most {self.hub.max_channels_per_connection} channels per connection"))
        else:
            ticket = self._tickets.get(conn.socket_id)
            if ticket is not None:  # a valid signature: no longer an unauthenticated socket
                self.admission.authenticated(ticket)
            # No await between subscribing and queuing this: no event can overtake it.
            self._reply(conn, protocol.subscription_succeeded(channel))

    # -- writing -----------------------------------------------------------------------------

    def _reply(self, conn: Connection, text: str) -> None:
        if not conn.send(text):
            self.hub.drop_slow(conn)

    def _fail(self, conn: Connection, code: int, message: str) -> None:
        """Send `pusher:error` with `code`, then close the connection with the same code."""
        self._reply(conn, protocol.error(code, message))
        conn.close(code, message)


def build_realtime_router(hub: RealtimeHub, *, app_key: str, app_secret: str, activity_timeout: float = 120,
                          pong_timeout: float = 30, max_message_bytes: int = protocol.MAX_CLIENT_MESSAGE_BYTES,
                          path: str = "/app/{key}", admission: Admission | None = None) -> APIRouter:
    """An APIRouter with the Pusher-protocol WebSocket endpoint, to mount into the main app."""
    endpoint = PusherEndpoint(hub, app_key=app_key, app_secret=app_secret, activity_timeout=activity_timeout,
                              pong_timeout=pong_timeout, max_message_bytes=max_message_bytes,
                              admission=admission)
    router = APIRouter()
    router.add_api_websocket_route(path, endpoint.handle, name="realtime_pusher")
    return router
